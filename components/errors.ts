import type * as pulumi from "@pulumi/pulumi";
import { redactSecrets } from "./redact";

export { redactSecrets };

/**
 * One problem found in user input. `path` is the dotted field path as the user wrote it
 * (`cluster.aws.instanceType`), `value` what they gave, `allowed` what would be accepted.
 */
export interface SpecIssue {
    path: string;
    message: string;
    value?: unknown;
    allowed?: string;
}

/** Renders a value for an error message without ever echoing long or secret-looking data. */
export function showValue(value: unknown): string {
    if (value === undefined) return "(missing)";
    if (typeof value === "number" || typeof value === "boolean" || value === null) return String(value);
    // redacted before it is cut, so a cut never leaves part of a key that the whole would have hidden
    const text = redactSecrets(typeof value === "string" ? value : JSON.stringify(value) ?? String(value));
    const json = typeof value === "string" ? JSON.stringify(text) : text;
    return json.length > 80 ? json.slice(0, 77) + "..." : json;
}

/** One line per issue: `cluster.nodes: must be at least 1 (got 0); allowed: an integer >= 1`. */
export function formatIssue(issue: SpecIssue): string {
    const got = issue.value === undefined ? "" : ` (got ${showValue(issue.value)})`;
    const allowed = issue.allowed ? `; allowed: ${issue.allowed}` : "";
    return redactSecrets(`${issue.path}: ${issue.message}${got}${allowed}`);
}

/** Thrown when input is invalid; carries every issue so the user fixes them all in one go. */
export class SpecError extends Error {
    constructor(public readonly issues: SpecIssue[], context = "invalid cluster spec") {
        super(redactSecrets(`${context}: ${issues.length} problem${issues.length === 1 ? "" : "s"}\n` +
            issues.map((i) => "  - " + formatIssue(i)).join("\n")));
        this.name = "SpecError";
    }
}

/** The same issues as Pulumi's InputPropertiesError, so the engine shows each property path. */
export function toInputPropertiesError(err: SpecError): pulumi.InputPropertiesError {
    // loaded here, not at the top: the offline verbs that only read a spec (health, slurm-config, switch-config) never
    // pay for the SDK (about 1 s of CPU per command)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { InputPropertiesError } = require("@pulumi/pulumi") as typeof import("@pulumi/pulumi");
    return new InputPropertiesError({
        message: redactSecrets(err.message),
        errors: err.issues.map((i) => ({ propertyPath: i.path, reason: formatIssue(i) })),
    });
}

/**
 * The error as the user should read it. The SDK prefixes `error serializing property "<k>": ` to the message of an
 * error every time it passes through an input, mutating the one error object so that it is reported once
 * (pulumi/pulumi:sdk/nodejs/runtime/rpc.ts serializeProperty); a refusal that every child awaits would carry one
 * prefix per child. The message stays the refusal itself.
 */
export function keepMessage<E extends Error>(err: E): E {
    const message = err.message;
    Object.defineProperty(err, "message", { get: () => message, set: () => undefined, configurable: true });
    return err;
}
