import * as pulumi from "@pulumi/pulumi";

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

// PEM armour (RFC 7468 §2: `-----BEGIN <label>-----` … `-----END <label>-----`), which PKCS#1/PKCS#8 keys and
// OpenSSH's own private key format share (openssh-portable PROTOCOL.key: "-----BEGIN OPENSSH PRIVATE KEY-----").
// A block cut short (no END line) is hidden to the end of the text.
const PEM_BLOCK = /-----BEGIN [^\r\n]*?-----[\s\S]*?(?:-----END [^\r\n]*?-----|$)/g;
// A base64 run of 40+ characters (30+ bytes: an Ed25519 seed is 32, a PKCS#8 Ed25519 key 48 bytes) with upper case,
// lower case and a digit, which file paths and words rarely have and random key bytes almost always do.
const BASE64_RUN = /[A-Za-z0-9+/]{40,}={0,2}/g;
// A hex run of 64+ characters: a raw 32-byte key written in hex.
const HEX_RUN = /\b[0-9A-Fa-f]{64,}\b/g;
const REDACTED = "[redacted: looks like key material]";

/**
 * The text with everything that looks like private key material replaced: PEM/OpenSSH armoured blocks, long base64
 * bodies, long hex runs (and the short tail line of a base64 body that follows one). Every path that echoes user input
 * (showValue, SpecError, InputPropertiesError, the CLI's last-resort error line) goes through it.
 */
export function redactSecrets(text: string): string {
    return text
        .replace(PEM_BLOCK, REDACTED)
        .replace(BASE64_RUN, (run) => (/[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run) ? REDACTED : run))
        .replace(HEX_RUN, REDACTED)
        // the last, shorter line of a multi-line body (64 characters a line, RFC 7468 §2)
        .replace(/(\[redacted: looks like key material\](?:\\n|\s)+)[A-Za-z0-9+/]+={0,2}/g, "$1" + REDACTED)
        .replace(/\[redacted: looks like key material\](?:(?:\\n|\s)+\[redacted: looks like key material\])+/g, REDACTED);
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
    return new pulumi.InputPropertiesError({
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
