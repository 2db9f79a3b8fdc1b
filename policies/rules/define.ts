/**
 * How every rdmakit policy is built: metadata CrossGuard shows (description, remediation, severity, url, level),
 * an optional config schema, and a validator that gets its config with the schema's defaults applied and a
 * {@link Findings} to report into. The validator never decides "cannot be verified" by throwing half-way: it says so
 * through Findings, which raises it once at the end (support.ts).
 */
import type {
    EnforcementLevel, PolicyConfigSchema, ResourceValidationArgs, ResourceValidationPolicy, Severity, StackValidationArgs, StackValidationPolicy,
} from "@pulumi/policy";
import { configOf, Findings } from "../support";

export interface PolicyMeta {
    /** `<fabric>-<what>-<rule>`, kebab-case */
    name: string;
    description: string;
    remediationSteps: string;
    severity: Severity;
    /** the public page the rule rests on */
    url: string;
    enforcementLevel: EnforcementLevel;
    configSchema?: PolicyConfigSchema;
}

export function resourcePolicy<C = Record<string, never>>(
    meta: PolicyMeta, validate: (args: ResourceValidationArgs, f: Findings, config: C) => void,
): ResourceValidationPolicy {
    return {
        ...meta,
        validateResource: (args, report) => {
            const f = new Findings(report);
            validate(args, f, configOf<C>(meta.configSchema, args.getConfig()));
            f.done();
        },
    };
}

export function stackPolicy<C = Record<string, never>>(
    meta: PolicyMeta, validate: (args: StackValidationArgs, f: Findings, config: C) => void,
): StackValidationPolicy {
    return {
        ...meta,
        validateStack: (args, report) => {
            const f = new Findings(report);
            validate(args, f, configOf<C>(meta.configSchema, args.getConfig()));
            f.done();
        },
    };
}
