import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as jsYaml from "js-yaml";
import { CORE_SCHEMA, load as loadYaml } from "js-yaml";
import * as YAML from "yaml";
import { fabricIssues, providerRegionIssues } from "./checks";
import { SpecError } from "./errors";
import { checkConsistency, formatViolation } from "./roce/consistency";
import { renderSwitchConfigs } from "./roce/render";
import { withDependencies } from "./record";
import { FabricPlan, planCluster } from "./plan";
import { ClusterSpec, keyByConfigText, leaveClusterConfig, parseClusterSpec, plainDataKey } from "./spec";

/**
 * `rdmakit plan`: the `pulumi up` program (index.ts) run on Pulumi's mock engine in preview mode, offline.
 * Nothing here decides anything about the fabric: it reads the stack file, lets the program register its
 * resources, and records what it registered. Values only the cloud knows stay unknown.
 */

export const UNKNOWN = "(known after apply)";

export interface RecordedResource {
    type: string;
    name: string;
    custom: boolean;
    inputs: unknown;
    urn?: string;
    /** the parent's URN */
    parent?: string;
    /** URNs the resource depends on */
    dependencies?: string[];
    /** input property → URNs of the resources its value came from (what policies follow at preview) */
    propertyDependencies?: Record<string, string[]>;
}

export interface RecordedInvoke {
    token: string;
    args: unknown;
}

export interface StackFile {
    /** the raw `rdmakit:cluster` value */
    cluster: unknown;
    /** true when `rdmakit:sshPrivateKey` is present as a Pulumi secret (`secure:`) */
    hasSecretKey: boolean;
    /** the AWS provider's region (`aws:region`), when the stack sets it */
    awsRegion?: string;
}

/**
 * A stack file's YAML as data. js-yaml with its core schema (YAML 1.2 core: no timestamps) reads a 2,048-host stack
 * file several times faster than `yaml`, which builds a node for every token; a file js-yaml refuses is read by
 * `yaml`, so a file `yaml` reads still works and one it refuses fails with its message, as before. The two differ only
 * on plain scalars js-yaml takes as numbers where `yaml` keeps strings (`1_000`, `0b101`), as the Pulumi CLI's own
 * reader (Go yaml.v3) takes them too. Both apply merge keys (`<<: *defaults`, plain `<<` only) as the Pulumi CLI's
 * reader does, at any depth, `config:` included (gopkg.in/yaml.v3 v3.0.1 decode.go merge/mapping: the mapping's own
 * keys win, then each merged mapping in order, an earlier one winning); a merge of anything but mappings is refused.
 */
export function parseStackYaml(text: string): unknown {
    try {
        return loadYaml(text, { schema: STACK_SCHEMA });
    } catch {
        return YAML.parse(text, { merge: true });
    }
}
// js-yaml 4 exports its types (index.js `types.merge`, the `<<` key of DEFAULT_SCHEMA); @types/js-yaml leaves them out
const STACK_SCHEMA = CORE_SCHEMA.extend({ implicit: [(jsYaml as unknown as { types: { merge: jsYaml.Type } }).types.merge] });

/** The config keys that hold SSH private keys: refused in plain text, here and by the program (index.ts). */
export const PRIVATE_KEY_CONFIG = ["rdmakit:sshPrivateKey", "rdmakit:switchSshPrivateKey"] as const;

/** Reads a Pulumi.<stack>.yaml; refuses a private key in plain text without echoing it. */
export function readStackFile(file: string): StackFile {
    const text = fs.readFileSync(file, "utf8");
    let doc: any;
    try {
        doc = parseStackYaml(text);
    } catch (e) {
        throw new SpecError([{ path: file, message: `cannot be read as a Pulumi stack settings file: ${(e as Error).message}` }], "invalid stack file");
    }
    const config = doc?.config;
    if (!config || typeof config !== "object") {
        throw new SpecError([{ path: `${file}: config`, message: "is missing", allowed: "a `config:` mapping with the key rdmakit:cluster" }], "invalid stack file");
    }
    if (config["rdmakit:cluster"] === undefined) {
        // a key without its namespace is refused by Pulumi itself ("configuration keys should be of the form
        // `<namespace>:<name>`": pulumi/pulumi sdk/go/common/resource/config/key.go ParseKey); the spec's key is rdmakit's
        const bare = config.cluster !== undefined ? " (a key `cluster:` is there: write it `rdmakit:cluster:`)" : "";
        throw new SpecError([{ path: `${file}: config.rdmakit:cluster`, message: `is missing${bare}`, allowed: "the cluster spec (see examples/)" }], "invalid stack file");
    }
    const key = config["rdmakit:sshPrivateKey"];
    // both private keys the kit reads: the nodes' and, on bare metal, the switches' (docs/keys.md)
    const plain = PRIVATE_KEY_CONFIG.filter((k) => config[k] !== undefined && !(typeof config[k] === "object" && config[k] !== null && "secure" in config[k]));
    if (plain.length > 0) {
        throw new SpecError(plain.map((k) => ({
            path: `${file}: config.${k}`, value: "(hidden)",
            message: "is stored in plain text",
            allowed: `a Pulumi secret: pulumi config set --secret ${k} < ${k.endsWith("switchSshPrivateKey") ? "<the switches' key file>" : "~/.ssh/id_ed25519"}`,
        })), "invalid stack file");
    }
    const awsRegion = typeof config["aws:region"] === "string" ? config["aws:region"] : undefined;
    return { cluster: config["rdmakit:cluster"], hasSecretKey: key !== undefined, awsRegion };
}

/** The spec is valid but its QoS plan breaks consistency rules (components/roce/consistency.ts): `rdmakit plan` exits 1. */
export class RuleBreakError extends Error {
    constructor(public readonly violations: string[]) {
        super(`the QoS plan breaks ${violations.length} consistency rule(s):\n` + violations.map((v) => `  - ${v}`).join("\n"));
        this.name = "RuleBreakError";
    }
}

/**
 * The program refused its input (a spec check it makes itself, e.g. `ansible.exclude` against the node names): the
 * components throw InputPropertiesError, which index.ts hands the engine as a RunError (its message alone). `rdmakit
 * plan` says it as it says a bad spec found before the program: exit 2, the stack file named.
 */
export class ProgramInputError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "ProgramInputError";
    }
}

/** A refusal of the program's input as ProgramInputError; anything else as it is. */
function asProgramInputError(e: unknown): unknown {
    return pulumi.RunError.isInstance(e) || pulumi.InputPropertiesError.isInstance(e) ? new ProgramInputError((e as Error).message) : e;
}

/** Replaces Pulumi's unknown sentinel (preview) with a readable marker, recursively. */
export function showUnknowns(value: unknown): unknown {
    if (value === pulumi.runtime.unknownValue) return UNKNOWN;
    if (Array.isArray(value)) return value.map(showUnknowns);
    if (value && typeof value === "object") {
        // the mock engine hands unknown inputs to newResource as { __pulumiUnknown: true }
        if ((value as any).__pulumiUnknown === true && Object.keys(value).length === 1) return UNKNOWN;
        const sig = (value as any)["4dabf18193072939515e22adb298388d"];
        if (sig === "1b47061264138c4ac30d75fd1eb44270") return "[secret]"; // a secret value: never shown
        if (sig === "5cf8f73096256a8f31e491e813e4eb8e") return `(resource ${String((value as any).urn ?? "")})`;
        return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, showUnknowns(v)]));
    }
    return value;
}

export interface OfflineResult {
    stack: string;
    spec: ClusterSpec;
    plan: FabricPlan;
    resources: RecordedResource[];
    invokes: RecordedInvoke[];
    /** whether the stack file holds rdmakit:sshPrivateKey (as a secret) */
    hasSecretKey: boolean;
}

/**
 * Runs `programPath` (index.ts) under mocks with the given stack file as config. The spec is checked first,
 * so an invalid spec ends here with every problem listed and no resource registered.
 */
export async function runProgramOffline(stackFile: string, stack: string, programPath: string): Promise<OfflineResult> {
    return withDependencies(() => runUnderMocks(stackFile, stack, programPath));
}

async function runUnderMocks(stackFile: string, stack: string, programPath: string): Promise<OfflineResult> {
    const { cluster, hasSecretKey, awsRegion } = readStackFile(stackFile);
    const regionIssues = providerRegionIssues(cluster, awsRegion);
    // the cluster as JSON, the config text the program reads (below); for plain data also the parse cache's key (the
    // object, read here and changed by nobody, is keyed by it without a second walk), and the object is left for the
    // program with it, so the program neither parses the text again nor walks the object (spec.ts leaveClusterConfig)
    const clusterText = plainDataKey(cluster);
    const keyed = clusterText !== undefined && typeof cluster === "object" && cluster !== null ? cluster : undefined;
    if (keyed) keyByConfigText(keyed, clusterText!);
    let spec: ClusterSpec;
    try {
        spec = parseClusterSpec(cluster);
    } catch (e) {
        if (e instanceof SpecError && regionIssues.length > 0) throw new SpecError([...e.issues, ...regionIssues]);
        throw e;
    }
    const plan = planCluster(spec);
    const issues = [...fabricIssues(spec, plan), ...regionIssues];
    if (issues.length > 0) throw new SpecError(issues);
    // a QoS plan that breaks a consistency rule is a failed check (exit 1), not bad input: RoceCluster refuses it, so
    // it is asked here, before the program runs, with the same functions
    if (plan.roce) {
        const broken = checkConsistency(plan.roce.qos, renderSwitchConfigs(plan.roce.qos));
        if (broken.length > 0) throw new RuleBreakError(broken.map(formatViolation));
    }

    const resources: RecordedResource[] = [];
    const invokes: RecordedInvoke[] = [];
    await pulumi.runtime.setMocks(
        {
            newResource(args: pulumi.runtime.MockResourceArgs) {
                resources.push({ type: args.type, name: args.name, custom: args.custom ?? true, inputs: args.inputs });
                // A read of the reservation the nodes launch into: offline, it is taken to be as the spec declares it,
                // and pulumi up checks it against EC2 (components/aws/cloud.ts gradeReservation).
                if (args.type === "aws:ec2/capacityReservation:CapacityReservation" && args.id) return { id: args.id, state: declaredReservation(spec) };
                // Only the inputs are known before the cloud answers; every computed output stays unknown.
                return { id: undefined, state: { ...args.inputs } };
            },
            call(args: pulumi.runtime.MockCallArgs) {
                invokes.push({ token: args.token, args: args.inputs });
                return offlineInvokeResult(args.token, spec);
            },
        },
        "rdmakit",
        stack,
        true,
    );
    // the cluster object, for index.ts to take when its config holds this text (spec.ts takeClusterConfig)
    if (keyed) leaveClusterConfig(keyed, clusterText!);
    // The key's value never matters offline (it only reaches the Ansible command's secret environment), so a
    // placeholder secret stands in, and the plan shows the provisioning steps even before the key is set.
    pulumi.runtime.setAllConfig(
        { "rdmakit:cluster": clusterText ?? JSON.stringify(cluster), "rdmakit:sshPrivateKey": "offline-placeholder-not-a-key" },
        ["rdmakit:sshPrivateKey"],
    );

    const failures: unknown[] = [];
    const onRejection = (e: unknown) => failures.push(e);
    process.on("unhandledRejection", onRejection);
    // The Node SDK takes a stack trace for every promise it makes (@pulumi/pulumi runtime/debuggable.js), and with
    // source maps on (tsx) each one is mapped frame by frame: seconds on a fabric of hundreds of switch commands.
    // Nothing offline reads those traces, so they stay unmapped while the program runs.
    // The trace itself is a string of ten frames made for each of those promises (half of what a switch command
    // costs); with stackTraceLimit 0 it is empty. The CLI prints an error's message, never its stack.
    // The SDK also asks for a full stack trace of its own (Error.stackTraceLimit set to Infinity, every frame parsed and
    // made a file URL) for each resource's source position (@pulumi/pulumi 3.248.0 resource.js Resource.callsites), and
    // sends it in the registration; the mock engine reads no position (runtime/mocks.js), so offline there is none.
    // (a static method the SDK's types mark private)
    const sdkResource = pulumi.Resource as unknown as { callsites: () => unknown[] };
    const callsites = sdkResource.callsites;
    sdkResource.callsites = () => [];
    const restorePromiseTags = untagSdkPromises();
    const restoreResponseText = unprintedResponses();
    const maps = process.sourceMapsEnabled;
    const frames = Error.stackTraceLimit;
    process.setSourceMapsEnabled(false);
    Error.stackTraceLimit = 0;
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        require(path.resolve(programPath));
        await pulumi.runtime.disconnect();
    } catch (e) {
        throw asProgramInputError(e);
    } finally {
        Error.stackTraceLimit = frames;
        process.setSourceMapsEnabled(maps);
        sdkResource.callsites = callsites;
        restorePromiseTags();
        restoreResponseText();
        process.off("unhandledRejection", onRejection);
    }
    if (failures.length > 0) throw asProgramInputError(failures[0]);
    return { stack, spec, plan, resources, invokes, hasSecretKey };
}

/** The SDK's promise bookkeeping (@pulumi/pulumi 3.248.0 runtime/debuggable.js, runtime/state.js; marked internal). */
interface SdkDebuggable {
    debugPromiseLeaks: boolean;
    debuggablePromise: <T>(p: Promise<T>, ctx: unknown) => Promise<T>;
}
interface SdkState { getStore: () => { leakCandidates: Set<Promise<unknown>> } }

/**
 * The SDK tags every promise it makes for its report of promises left unsettled at exit (@pulumi/pulumi 3.248.0
 * runtime/debuggable.js debuggablePromise: an id, a context text and a stack trace, each set with
 * Object.defineProperty, and the promise kept among the store's leak candidates until it settles). A command resource
 * makes 64 such promises (four for each of its 16 properties, runtime/rpc.js transferProperties), ~27,000 on a
 * 2,048-host fabric, and the tags are most of their cost. The report reads the tags only when PULUMI_DEBUG_PROMISE_LEAKS
 * is set (debuggable.js leakedPromises: otherwise it says how many are left), so without it, while the program runs
 * offline, the promises go untagged: the same chain (then, catch), the same leak candidates, the same `promise` on a
 * rejection's error, and the first promise through the SDK's own function, which schedules the report at exit.
 * Returns what puts the SDK's function back. With the variable set, or an SDK without these, nothing changes.
 */
function untagSdkPromises(): () => void {
    /* eslint-disable @typescript-eslint/no-require-imports -- the SDK's internal modules, read where they are used */
    const debuggable = require("@pulumi/pulumi/runtime/debuggable") as Partial<SdkDebuggable>;
    const state = require("@pulumi/pulumi/runtime/state") as Partial<SdkState>;
    /* eslint-enable @typescript-eslint/no-require-imports */
    const tagged = debuggable.debuggablePromise;
    const getStore = state.getStore;
    if (debuggable.debugPromiseLeaks !== false || typeof tagged !== "function" || typeof getStore !== "function") return () => {};
    let first = true;
    debuggable.debuggablePromise = <T>(p: Promise<T>, ctx: unknown): Promise<T> => {
        if (first) {
            first = false;
            return tagged(p, ctx);
        }
        const store = getStore();
        store.leakCandidates.add(p);
        return p.then((value) => {
            store.leakCandidates.delete(p);
            return value;
        }).catch((err: unknown) => {
            store.leakCandidates.delete(p);
            markRejected(err, p);
            throw err;
        });
    };
    return () => {
        debuggable.debuggablePromise = tagged;
    };
}

/**
 * The SDK writes each resource's registration response into a debug line (@pulumi/pulumi 3.248.0 runtime/resource.js:
 * `RegisterResource RPC finished: …, resp: ${innerResponse}`), and the text of a protobuf message is all its fields
 * (google-protobuf jspb.Message toString: the message as an array, as text): every resource's inputs again, 3.6 MB at
 * 2,048 hosts. With no engine, as on the mock engine, log.debug drops the line unless the SDK's excessiveDebugOutput is
 * on (log/index.js; runtime/settings.js sets it false), so while the program runs offline that message's text is a
 * name. Returns what puts the message's own text back.
 */
function unprintedResponses(): () => void {
    /* eslint-disable @typescript-eslint/no-require-imports -- the SDK's internal modules, read where they are used */
    const settings = require("@pulumi/pulumi/runtime/settings") as { excessiveDebugOutput?: boolean };
    const resourceProto = require("@pulumi/pulumi/proto/resource_pb") as { RegisterResourceResponse?: { prototype: object } };
    /* eslint-enable @typescript-eslint/no-require-imports */
    const proto = resourceProto.RegisterResourceResponse?.prototype;
    if (settings.excessiveDebugOutput !== false || !proto || Object.prototype.hasOwnProperty.call(proto, "toString")) return () => {};
    Object.defineProperty(proto, "toString", { value: () => "RegisterResourceResponse", configurable: true, writable: true });
    return () => {
        delete (proto as { toString?: unknown }).toString;
    };
}

/** The rejected promise on its error, as the SDK's strict-mode code sets it (a primitive cannot take it: TypeError). */
function markRejected(err: unknown, p: Promise<unknown>): void {
    "use strict";
    (err as { promise?: unknown }).promise = p;
}

/** The reservation as the spec declares it (zone, type, count), for the offline read. */
function declaredReservation(spec: ClusterSpec): Record<string, unknown> {
    const a = spec.aws;
    const r = a?.capacityBlock ?? a?.capacityReservation;
    return a && r ? { availabilityZone: a.availabilityZone, instanceType: a.instanceType, instanceCount: r.instanceCount } : {};
}

/**
 * Results for the invokes the program makes, offline: every field the cloud would fill in is unknown, so
 * nothing is made up. Invokes the kit does not know return an empty result.
 */
function offlineInvokeResult(token: string, spec: ClusterSpec): Record<string, unknown> {
    const unknown = pulumi.runtime.unknownValue;
    switch (token) {
        // the Capacity Block, taken to be as the spec declares it; its state and end only EC2 knows
        case "aws:ec2/getCapacityBlockReservation:getCapacityBlockReservation":
            return { ...declaredReservation(spec), state: unknown, startDate: unknown, endDate: unknown };
        case "aws:ec2/getAmi:getAmi":
            return { id: unknown, name: unknown, imageId: unknown };
        case "aws:ec2/getInstances:getInstances":
            return { ids: unknown, privateIps: unknown, publicIps: unknown };
        // the questions AwsEfaCluster asks before creating anything (components/aws/cloud.ts): unknown here, so
        // they pass offline and the plan lists them as checks that run at pulumi up
        case "aws:ec2/getInstanceType:getInstanceType":
            return { maximumNetworkCards: unknown, efaMaximumInterfaces: unknown, efaSupported: unknown, defaultVcpus: unknown, networkCards: unknown };
        case "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings":
            return { instanceTypes: unknown };
        case "aws:servicequotas/getServiceQuota:getServiceQuota":
            return { value: unknown };
        // access: ssm in a VPC of your own: the subnet's route table and the Session Manager endpoints (aws/ssm-reach.ts)
        case "aws:ec2/getRouteTables:getRouteTables":
            return { ids: unknown };
        case "aws:ec2/getVpcEndpoint:getVpcEndpoint":
            return { state: unknown, privateDnsEnabled: unknown };
        default:
            return {};
    }
}

/** Resource counts by type token, sorted by type. */
export function countByType(resources: RecordedResource[]): Array<[string, number]> {
    const counts = new Map<string, number>();
    for (const r of resources) counts.set(r.type, (counts.get(r.type) ?? 0) + 1);
    return [...counts.entries()].sort(([a], [b]) => a.localeCompare(b));
}

const GiBytes = 1024 ** 3;

function sizeText(bytes: number): string {
    return bytes >= GiBytes ? `${bytes / GiBytes} GiB` : `${bytes / 1024 ** 2} MiB`;
}

/** The NCCL environment and the validation thresholds of a plan, as `rdmakit plan` prints them (with --program too). */
export function formatNcclAndThresholds(p: FabricPlan): string[] {
    const lines: string[] = ["", "NCCL environment:"];
    for (const [k, v] of Object.entries(p.ncclEnv)) lines.push(`  ${k}=${v}`);
    lines.push(`  (validation adds ${Object.entries(p.validation.forcedNet).map(([k, v]) => `${k}=${v}`).join(" ")} so a fallback to sockets fails)`);
    lines.push("", "validation (nccl-tests all_reduce_perf):");
    if (!p.validation.enabled) lines.push("  disabled (cluster.validation.enabled: false)");
    for (const [label, e] of [["per node", p.validation.singleNode], [`all ${p.nodes.count} nodes`, p.validation.allNodes]] as const) {
        const want = e.minBusbwGBps > 0 ? `busbw >= ${e.minBusbwGBps} GB/s from ${sizeText(e.gradeFromBytes)}` : "no bandwidth floor";
        lines.push(`  ${label.padEnd(12)} ${want}; transport ${e.transport}${e.requireGdr ? " with GPUDirect RDMA" : ""}`);
        lines.push(`  ${"".padEnd(12)} source: ${e.source}`);
    }
    return lines;
}

/** The human summary `rdmakit plan` prints. Pure. */
export function formatPlanSummary(r: OfflineResult, extra: string[] = []): string {
    const p = r.plan;
    const lines: string[] = [];
    lines.push(`rdmakit plan — stack ${r.stack} (${p.cluster})`, "");
    lines.push(`fabric      ${p.fabric}`);
    lines.push(`nodes       ${p.nodes.count} × ${p.nodes.hostType}  (${p.nodes.gpusPerNode} × ${p.nodes.gpuModel} each, ${p.nodes.totalGpus} GPUs)`);
    if (p.nodes.names) lines.push(`hosts       ${p.nodes.names.join(", ")}`);
    lines.push(`rdma/node   ${p.nics.perNode.length} × ${p.nics.perNode[0]?.kind ?? "?"}, ${p.nics.rdmaGbpsPerNode} Gb/s, GPUDirect RDMA ${p.nics.gpuDirectRdma ? "yes" : "no"}`);
    lines.push(`ssh user    ${p.sshUser}`);
    if (p.aws) {
        lines.push("", "network interfaces per node (launch template):");
        for (const i of p.aws.interfaces) lines.push(`  card ${String(i.networkCardIndex).padStart(2)}  device ${i.deviceIndex}  ${i.interfaceType}`);
        lines.push(`placement   ${p.aws.placement.kind}${"reservationId" in p.aws.placement ? ` ${p.aws.placement.reservationId}` : ""}`);
    }
    if (p.azure) {
        lines.push("", `scale set   ${p.azure.vmSize}, image ${p.azure.image.publisher}:${p.azure.image.offer}:${p.azure.image.sku}:${p.azure.image.version}, partition limit ${p.azure.partitionLimit}`);
        lines.push(`HCAs        ${p.nics.perNode.map((n) => n.name).join(" ")}`);
    }
    if (p.roce) lines.push("", `rails       ${p.nics.perNode.map((n) => `${n.name}@${n.rateGbps ?? "?"}G`).join(" ")}`);
    lines.push("", "resources:");
    for (const [type, n] of countByType(r.resources)) lines.push(`  ${String(n).padStart(3)}  ${type}`);
    lines.push(`  ${String(r.resources.length).padStart(3)}  total`);
    lines.push(...formatNcclAndThresholds(p));
    if (r.spec.fabric === "aws-efa") {
        lines.push("", "asked of AWS at pulumi up, before anything is created (not checked offline):");
        // loaded for its fabric only: the module loads @pulumi/aws, an optional peer (components/peer.ts)
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { awsCloudCheckList } = require("./aws/cloud") as typeof import("./aws/cloud");
        for (const c of awsCloudCheckList(r.spec)) lines.push(`  - ${c}`);
    }
    if (r.spec.fabric === "azure-ib") {
        lines.push("", "asked of Azure at pulumi up, before anything is created (not checked offline):");
        // loaded for its fabric only: the module loads @pulumi/azure-native, an optional peer (components/peer.ts)
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const { azureCloudCheckList } = require("./azure/cloud") as typeof import("./azure/cloud");
        for (const c of azureCloudCheckList(r.spec)) lines.push(`  - ${c}`);
    }
    lines.push(...extra);
    return lines.join("\n");
}
