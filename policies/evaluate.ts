/**
 * The policies without the engine: runs every policy's validateResource / validateStack over resources recorded by
 * the offline program run (components/offline.ts), building the same arguments the policy server builds
 * (pulumi/pulumi-policy:sdk/nodejs/policy/server.ts makeAnalyzeRpcFun / makeAnalyzeStackRpcFun): properties behind the
 * unknown-checking proxy with secrets unwrapped, parent, dependencies and propertyDependencies resolved to resources,
 * `notApplicable` that throws. Outcomes follow the server too: a policy that touches an unknown value "can't run
 * during preview" (the server reports that as advisory), not-applicable is not a failure.
 *
 * Never imports policies/index.ts (its PolicyPack constructor starts a gRPC server).
 */
import type {
    EnforcementLevel, Policies, PolicyResource, ResourceValidationArgs, ResourceValidationPolicy, StackValidationPolicy,
} from "@pulumi/policy";
// the proxy module alone (policies/proxy.ts says why)
import { unknownCheckingProxy, UnknownValueError } from "./proxy";
import type { RecordedResource } from "../components/offline";
import { RDMAKIT_POLICIES } from "./rules";
import { schemaDefaults } from "./support";

/** Pulumi's unknown string sentinel. source: @pulumi/pulumi runtime/rpc.ts unknownValue (pulumi-runtime.md §1.5) */
const UNKNOWN_SENTINEL = "04da6b54-80e4-46f7-96ec-b56ff0331ba9";

/** A recorded resource, plus what the engine knows about its place in the stack when the recording has it. */
/** A resource the program registered, with the URN and dependencies the offline run recorded. */
export type PolicySubject = RecordedResource;

export interface PolicyViolation {
    urn: string;
    name?: string;
    message: string;
}

export interface PolicyVerdict {
    policy: string;
    description: string;
    enforcementLevel: EnforcementLevel;
    /** no violation and nothing left undecided */
    ok: boolean;
    violations: PolicyViolation[];
    /** set when the policy applies to nothing in the stack */
    notApplicable?: string;
    /** "can't run during preview" reasons: a value the policy needed is only known after apply */
    undecided: string[];
}

export interface EvaluateOptions {
    /** @default RDMAKIT_POLICIES */
    policies?: Policies;
    /** @default "offline" */
    stack?: string;
    /** @default "rdmakit" */
    project?: string;
    /**
     * per-policy config, as a `--policy-pack-config` file gives it: a level, or properties with an optional
     * `enforcementLevel`; the schema's defaults fill in the rest, as the engine does
     */
    config?: Record<string, EnforcementLevel | ({ enforcementLevel?: EnforcementLevel } & Record<string, unknown>)>;
}

/**
 * What the offline `notApplicable` throws: a resource policy says it once for nearly every resource of a stack (at
 * 2,048 RoCE hosts, ~10,000 times a plan), and nothing reads where it was thrown nor why (a not-applicable verdict
 * says only that the policy applies to nothing), so one object, made once without a stack trace, is thrown each time.
 */
class NotApplicable extends Error {
    constructor() {
        const frames = Error.stackTraceLimit;
        Error.stackTraceLimit = 0;
        try {
            super("not applicable");
        } finally {
            Error.stackTraceLimit = frames;
        }
    }
}
const NOT_APPLICABLE = new NotApplicable();

const SECRET_SIG = "1b47061264138c4ac30d75fd1eb44270";
const RESOURCE_SIG = "5cf8f73096256a8f31e491e813e4eb8e";
const SIG_KEY = "4dabf18193072939515e22adb298388d";

/**
 * Recorded inputs → what the policy server hands a policy: unknowns as Pulumi's unknown sentinel (the proxy throws on
 * them), secrets unwrapped (the server deserializes with proxySecrets=false), resource references as their URN.
 * source: @pulumi/pulumi runtime/rpc.ts (specialSigKey, specialSecretSig, specialResourceSig, unknownValue);
 * components/offline.ts showUnknowns (the mock engine's `{ __pulumiUnknown: true }`).
 */
export function policyProps(value: unknown): unknown {
    if (value === UNKNOWN_SENTINEL) return UNKNOWN_SENTINEL;
    if (Array.isArray(value)) return value.map(policyProps);
    if (value && typeof value === "object") {
        const o = value as Record<string, unknown>;
        if (o.__pulumiUnknown === true && Object.keys(o).length === 1) return UNKNOWN_SENTINEL;
        if (o[SIG_KEY] === SECRET_SIG) return policyProps(o.value);
        if (o[SIG_KEY] === RESOURCE_SIG) return String(o.urn ?? "");
        return Object.fromEntries(Object.entries(o).map(([k, v]) => [k, policyProps(v)]));
    }
    return value;
}

function urnOf(r: PolicySubject, stack: string, project: string): string {
    return r.urn ?? `urn:pulumi:${stack}::${project}::${r.type}::${r.name}`;
}

function typeMatches(type: string, resourceClass: unknown): boolean {
    return (resourceClass as { __pulumiType?: string } | undefined)?.__pulumiType === type;
}

/** The policy resources of the stack, cross-linked like the server links them (parent, dependencies by URN). */
function policyResources(resources: PolicySubject[], stack: string, project: string): PolicyResource[] {
    const out = resources.map((r): PolicyResource => {
        const props = unknownCheckingProxy(policyProps(r.inputs ?? {}));
        return {
            type: r.type,
            props,
            urn: urnOf(r, stack, project),
            name: r.name,
            opts: {
                protect: false, ignoreChanges: [], aliases: [], additionalSecretOutputs: [],
                customTimeouts: { createSeconds: 0, updateSeconds: 0, deleteSeconds: 0 },
                ...(r.parent ? { parent: r.parent } : {}),
            },
            dependencies: [],
            propertyDependencies: {},
            isType: (cls) => typeMatches(r.type, cls),
            asType: (cls) => (typeMatches(r.type, cls) ? props : undefined),
        };
    });
    const byUrn = new Map(out.map((p) => [p.urn, p]));
    const resolve = (urns: string[] | undefined) => (urns ?? []).map((u) => byUrn.get(u)).filter((p): p is PolicyResource => p !== undefined);
    resources.forEach((r, i) => {
        const p = out[i];
        if (r.parent && byUrn.has(r.parent)) p.parent = byUrn.get(r.parent);
        p.dependencies = resolve(r.dependencies);
        for (const [k, urns] of Object.entries(r.propertyDependencies ?? {})) p.propertyDependencies[k] = resolve(urns);
    });
    return out;
}

const isStackPolicy = (p: ResourceValidationPolicy | StackValidationPolicy): p is StackValidationPolicy => "validateStack" in p && p.validateStack !== undefined;

/** Runs a validator; a returned promise is refused (planArtifacts is synchronous and every rdmakit rule is). */
function runSync(policy: string, f: () => unknown): void {
    const result = f();
    if (result && typeof (result as Promise<unknown>).then === "function") {
        throw new Error(`policy ${policy}: asynchronous validators are not supported by the offline evaluator`);
    }
}

/**
 * Outcome of one validator call, classified the way the policy server classifies it. Pulumi's unknown-checking proxy
 * throws an UnknownValueError for each unknown value a rule reads (offline, every value known only after apply), and
 * capturing each one's stack trace was most of the evaluator's time (the AWS example's 17 policies: 31 ms an
 * evaluation, 11 ms without). So validators run without stack traces; the rules are pure, so one that fails with any
 * other error runs again with traces on, and the error of that run (with its stack) is the one reported.
 */
function attempt(policy: string, f: () => unknown, verdict: PolicyVerdict): "ran" | "not-applicable" {
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    try {
        runSync(policy, f);
        return "ran";
    } catch (e) {
        if (e instanceof NotApplicable) return "not-applicable";
        if (e instanceof UnknownValueError) {
            verdict.undecided.push((e as Error).message);
            return "ran";
        }
        let failure = e;
        Error.stackTraceLimit = limit;
        try {
            runSync(policy, f);
        } catch (again) {
            failure = again;
        }
        throw new Error(`policy ${policy} failed: ${(failure as Error).message}`, { cause: failure });
    } finally {
        Error.stackTraceLimit = limit;
    }
}

/**
 * A resource validator's `report`, for one subject. Made by a function (not a named arrow in the loop: the loader
 * names each such arrow where it is made, a property definition that was 6 ms of the 6,400 made at 2,048 hosts).
 */
function reporter(verdict: PolicyVerdict, s: PolicyResource): (message: string) => void {
    return (message) => verdict.violations.push({ urn: s.urn, name: s.name, message });
}

/**
 * Evaluates every policy over the recorded resources. Pure apart from the policies themselves (which are pure);
 * one verdict per policy, in the policy list's order. Disabled policies are left out.
 */
export function evaluatePolicies(resources: PolicySubject[], options: EvaluateOptions = {}): PolicyVerdict[] {
    const stack = options.stack ?? "offline";
    const project = options.project ?? "rdmakit";
    const subjects = policyResources(resources, stack, project);
    const notApplicable = (): never => {
        throw NOT_APPLICABLE;
    };
    const verdicts: PolicyVerdict[] = [];
    for (const policy of options.policies ?? RDMAKIT_POLICIES) {
        // the server's order: the config's level, the policy's, the pack's (advisory); remediate still firing is mandatory
        const given = options.config?.[policy.name];
        const { enforcementLevel: configured, ...properties } = typeof given === "string" ? { enforcementLevel: given } : given ?? {};
        let level: EnforcementLevel = configured ?? policy.enforcementLevel ?? "advisory";
        if (level === "disabled") continue;
        if (level === "remediate") level = "mandatory";
        const verdict: PolicyVerdict = { policy: policy.name, description: policy.description, enforcementLevel: level, ok: true, violations: [], undecided: [] };
        const config = { ...schemaDefaults(policy.configSchema), ...properties };
        const getConfig = <T extends object>() => config as T;
        const stackTags = new Map<string, string>();

        if (isStackPolicy(policy)) {
            const report = (message: string, urn?: string) => {
                verdict.violations.push({ urn: urn ?? "", name: subjects.find((s) => s.urn === urn)?.name, message });
            };
            const outcome = attempt(policy.name, () => policy.validateStack({ resources: subjects, getConfig, stackTags, notApplicable }, report), verdict);
            if (outcome === "not-applicable") verdict.notApplicable = "applies to nothing in this stack";
        } else {
            const validators = policy.validateResource === undefined ? [] : Array.isArray(policy.validateResource) ? policy.validateResource : [policy.validateResource];
            let applied = 0;
            for (const s of subjects) {
                const report = reporter(verdict, s);
                const args: ResourceValidationArgs = {
                    type: s.type, props: s.props, urn: s.urn, name: s.name, opts: s.opts, stackTags,
                    isType: s.isType, asType: s.asType as ResourceValidationArgs["asType"], getConfig, notApplicable,
                };
                for (const validate of validators) {
                    if (attempt(policy.name, () => validate(args, report), verdict) === "ran") applied++;
                }
            }
            if (applied === 0) verdict.notApplicable = "applies to nothing in this stack";
        }
        verdict.ok = verdict.violations.length === 0 && verdict.undecided.length === 0;
        verdicts.push(verdict);
    }
    return verdicts;
}

/** Violations shown in one line; the rest are counted. */
export const DETAIL_MAX = 5;

/** One line for a verdict's problems: violations first, then what could not be decided. */
export function verdictDetail(v: PolicyVerdict): string | undefined {
    if (v.violations.length > 0) {
        const shown = v.violations.slice(0, DETAIL_MAX).map((x) => x.message).join("; ");
        return v.violations.length > DETAIL_MAX ? `${shown}; … and ${v.violations.length - DETAIL_MAX} more` : shown;
    }
    if (v.undecided.length > 0) return `can't run during preview: ${[...new Set(v.undecided)].join("; ")}`;
    return undefined;
}
