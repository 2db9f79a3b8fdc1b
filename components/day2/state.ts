/**
 * The cluster's operating state as one stack output, `rdmakitState`: what a second machine needs on day 2 (the
 * nodes and their addresses, the way in, the pinned host keys, the last verdicts, failed and drained nodes, the
 * scheduler's summary) and nothing secret. Pure: built by `operatingState` from what the components resolved, read
 * back by `parseOperatingState` (a stack output is data another run wrote: checked and bounded before use).
 *
 * Size: issue 37 allows about 2 KB of state per node. The host keys are per node group (one key for every node,
 * components/provision/hostkeys.ts), so they are stored once, not per node; each node keeps at most
 * MAX_FINDINGS health findings of at most MAX_TEXT characters each.
 */

import * as fs from "node:fs";
import * as path from "node:path";
import { redactSecrets } from "../redact";
import type { Replacement } from "./repair";
import { MAX_REPLACEMENTS } from "./names";

/** The shape's version: a reader refuses a newer one rather than misreading it. */
export const STATE_VERSION = 1;
export const STATE_OUTPUT = "rdmakitState";
export const MAX_FINDINGS = 4;
export const MAX_TEXT = 160;
/** The most of one text cleanText reads (it keeps at most a few hundred characters of it). */
const MAX_CLEAN_INPUT = 2 * 1024;

export type Fabric = "aws-efa" | "azure-ib" | "roce";
export type RepairPolicy = "report" | "drain" | "replace";
export type HealthVerdict = "healthy" | "failing" | "incomplete" | "unreadable";

export interface FindingState {
    component: string;
    message: string;
    /** the node's own output line that shows it (untrusted: clipped and stripped of control characters) */
    evidence?: string;
    /** the health gate's word on it (components/health/types.ts Persistence): only "persistent" may replace a node */
    persistence?: "persistent" | "transient";
}

export interface NodeState {
    name: string;
    /** the address ssh reaches (the private address; through Session Manager, `instanceId` is the target) */
    address: string;
    instanceId?: string;
    /** the health gate's verdict of the last validation run, with its findings */
    health?: { verdict: HealthVerdict; findings: FindingState[] };
    /** the node's nccl-tests verdict in the last validation run: ok, FAIL (its own run), slow (slow-node search) */
    nccl?: "ok" | "FAIL" | "slow";
    /** the node-software step left it failed: the first failing task */
    softwareFailed?: string;
    /** left out of the runs by cluster.ansible.exclude */
    excluded?: boolean;
    /** drained in the scheduler (or by the repair policy), with the reason */
    drained?: { reason: string; at?: string };
}

/**
 * The Slurm head node (slurmctld, the login node): `rdmakit ssh` reaches it and `rdmakit status` shows it. Not a GPU
 * node: it is not in `nodes`, so no validation, health grade or repair ever takes it.
 */
export interface HeadState {
    name: string;
    /** the address ssh reaches (through Session Manager, `instanceId` is the target) */
    address: string;
    instanceId?: string;
    /** its login user (scheduler.controller.sshUser, or the nodes' user) */
    user: string;
    /** its own pinned host key (public): the stack's (clouds) or scheduler.controller.hostKey (bare metal) */
    hostKey?: string;
}

export interface OperatingState {
    version: typeof STATE_VERSION;
    stack: string;
    fabric: Fabric;
    sshUser: string;
    /** the cloud's group the nodes belong to (what a repair acts on); absent on bare metal */
    group?: { cloud: "aws"; region: string; autoScalingGroup: string } | { cloud: "azure"; resourceGroup: string; scaleSet: string };
    /** the way in: a bastion / jump host (address, user, its pinned key) or AWS Session Manager */
    entry?: { kind: "bastion"; address: string; user: string; hostKey?: string } | { kind: "ssm"; region: string };
    /** the node group's pinned SSH host key (public), when the stack made one; bare metal pins none */
    nodeHostKey?: string;
    repair: RepairPolicy;
    /** the last validation run: its verdict and when it ran */
    validation?: { verdict: "PASS" | "FAIL"; at?: string; busbwGBps?: number };
    scheduler: { type: "none" } | { type: "slurm"; drained: Array<{ node: string; reason: string }> };
    /** with Slurm: the head node */
    head?: HeadState;
    nodes: NodeState[];
    /**
     * The last MAX_REPLACEMENTS replacements (names.ts): node, time, old and new instance id. A node failing on the
     * instance that replaced its last one is reported, not replaced again (repair.ts).
     */
    replacements?: Replacement[];
    /**
     * The stack's `rdmakit:cluster` as deployed (plain config: the spec's schema refuses key material), so a checkout
     * without the stack file plans the same tests and thresholds (`rdmakit check --stack`, `health --stack`).
     */
    spec: unknown;
}

/**
 * Drops control characters (a node's line could carry terminal escapes), hides what looks like key material (a
 * node's output is untrusted and lands in every checkout's view of the stack) and clips. Pure.
 */
export function cleanText(s: unknown, max = MAX_TEXT): string {
    // only the head is cleaned: at most 2 KiB, several times any clip here, so the cost of one text does not grow with
    // what a node sent (2,000 nodes' findings with 100 KB texts took 35 s). Key material that starts in the kept part
    // is still hidden up to the cut (redact.ts: PEM_BLOCK runs to the text's end without its END line, BASE64_RUN
    // needs 40 characters).
    const raw = String(s ?? "");
    const head = raw.length > MAX_CLEAN_INPUT ? raw.slice(0, MAX_CLEAN_INPUT) : raw;
    // eslint-disable-next-line no-control-regex
    const t = redactSecrets(head.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ")).trim();
    return t.length > max ? t.slice(0, max - 1) + "…" : t;
}

/** What the validation step's result line says per node (components/validate/cli.ts `--result-line`). */
export interface ValidationNodes {
    pass: boolean;
    at?: string;
    busbwGBps?: number | null;
    slowNodes?: string[];
    badNodes?: string[];
    /** nodes whose own nccl-tests run failed */
    failedNodes?: string[];
    health?: Array<{ node: string; verdict: HealthVerdict; findings: FindingState[] }>;
}

export interface StateInputs {
    stack: string;
    fabric: Fabric;
    sshUser: string;
    nodes: Array<{ name: string; address: string; instanceId?: string }>;
    group?: OperatingState["group"];
    entry?: OperatingState["entry"];
    nodeHostKey?: string;
    repair: RepairPolicy;
    validation?: ValidationNodes | null;
    softwareFailed?: Array<{ name: string; task?: string }>;
    excluded?: string[];
    scheduler?: OperatingState["scheduler"];
    head?: HeadState;
    replacements?: Replacement[];
    spec: unknown;
}

/** The public part of a key line: `type base64` (a comment may name a person or a host; it is dropped). */
function publicKey(line: string | undefined): string | undefined {
    if (!line) return undefined;
    const m = /^(ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) ([A-Za-z0-9+/]+={0,2})(?:\s|$)/.exec(line.trim());
    if (!m) throw new Error(`not an SSH public key line: ${cleanText(line, 40)}`);
    return `${m[1]} ${m[2]}`;
}

/** The operating state from what the stack resolved. Pure. */
export function operatingState(i: StateInputs): OperatingState {
    const v = i.validation ?? undefined;
    const health = new Map((v?.health ?? []).map((h) => [h.node, h]));
    const failed = new Map((i.softwareFailed ?? []).map((f) => [f.name, f.task ?? "failed"]));
    const drained = new Map(i.scheduler?.type === "slurm" ? i.scheduler.drained.map((d) => [d.node, d.reason]) : []);
    const nodes = i.nodes.map((n): NodeState => {
        const h = health.get(n.name);
        const nccl = !v ? undefined : v.failedNodes?.includes(n.name) ? "FAIL" : v.slowNodes?.includes(n.name) ? "slow" : "ok";
        return {
            name: n.name, address: n.address, ...(n.instanceId ? { instanceId: n.instanceId } : {}),
            ...(h ? { health: { verdict: h.verdict, findings: h.findings.slice(0, MAX_FINDINGS).map(cleanFinding) } } : {}),
            ...(nccl && !i.excluded?.includes(n.name) ? { nccl } : {}),
            ...(failed.has(n.name) ? { softwareFailed: cleanText(failed.get(n.name)) } : {}),
            ...(i.excluded?.includes(n.name) ? { excluded: true } : {}),
            ...(drained.has(n.name) ? { drained: { reason: cleanText(drained.get(n.name)) } } : {}),
        };
    });
    return {
        version: STATE_VERSION, stack: i.stack, fabric: i.fabric, sshUser: i.sshUser,
        ...(i.group ? { group: i.group } : {}),
        ...(i.entry ? { entry: i.entry.kind === "bastion" ? { ...i.entry, ...(i.entry.hostKey ? { hostKey: publicKey(i.entry.hostKey) } : {}) } : i.entry } : {}),
        ...(i.nodeHostKey ? { nodeHostKey: publicKey(i.nodeHostKey) } : {}),
        repair: i.repair,
        ...(v ? { validation: { verdict: v.pass ? "PASS" : "FAIL", ...(v.at ? { at: v.at } : {}), ...(typeof v.busbwGBps === "number" ? { busbwGBps: v.busbwGBps } : {}) } } : {}),
        scheduler: i.scheduler ?? { type: "none" },
        ...(i.head ? { head: headState(i.head) } : {}),
        nodes,
        ...(i.replacements?.length ? { replacements: i.replacements.slice(-MAX_REPLACEMENTS).map((r) => ({ ...r })) } : {}),
        spec: i.spec,
    };
}

function headState(h: HeadState): HeadState {
    return {
        name: h.name, address: h.address, ...(h.instanceId ? { instanceId: h.instanceId } : {}), user: h.user,
        ...(h.hostKey ? { hostKey: publicKey(h.hostKey) } : {}),
    };
}

function cleanFinding(f: FindingState): FindingState {
    return {
        component: cleanText(f.component, 16), message: cleanText(f.message), ...(f.evidence ? { evidence: cleanText(f.evidence) } : {}),
        ...(f.persistence === "persistent" || f.persistence === "transient" ? { persistence: f.persistence } : {}),
    };
}

/** A stack output that is not a state this reader knows: what was found, and what to do. */
export class StateError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "StateError";
    }
}

const NAME = /^[A-Za-z0-9._-]{1,253}$/;
const ADDRESS = /^[A-Za-z0-9._:-]{1,253}$/;

/**
 * The most JSON text of an operating state read as text: the largest cluster the spec takes (65,531 nodes, spec.ts
 * MAX_NODES) at ~1.5 KB a node, as the object form (a TypeScript program's export) is read at any size. Under
 * read.ts's 256 MiB for all of `pulumi stack output --json`, this text JSON-escaped in it included.
 */
export const MAX_STATE_TEXT = 96 * 1024 * 1024;

/**
 * The operating state as exported: the object (a TypeScript program exports `cluster.state`) or its JSON text (a
 * program in another language exports `cluster.operating_state`, a string: the package schema's type). Text over
 * MAX_STATE_TEXT or not JSON is refused, naming the output.
 */
export function stateValue(value: unknown, where: string): unknown {
    if (typeof value !== "string") return value;
    if (value.length > MAX_STATE_TEXT) throw new StateError(`${where}: ${STATE_OUTPUT} is ${value.length} characters of text, over the ${MAX_STATE_TEXT} this rdmakit reads`);
    try {
        return JSON.parse(value);
    } catch (e) {
        throw new StateError(`${where}: ${STATE_OUTPUT} is text that is not JSON (${cleanText((e as Error).message, 120)})`);
    }
}

/**
 * The state a stack output holds, checked: the version, and every name and address one that ssh takes as a single
 * word (they become ssh arguments). Throws StateError naming the field.
 */
export function parseOperatingState(value: unknown, where: string): OperatingState {
    const s = stateValue(value, where) as OperatingState;
    if (typeof s !== "object" || s === null) throw new StateError(`${where}: no ${STATE_OUTPUT} output (a stack made before rdmakit kept its state in the stack: run pulumi up once)`);
    if (s.version !== STATE_VERSION) throw new StateError(`${where}: ${STATE_OUTPUT}.version is ${JSON.stringify(s.version)}; this rdmakit reads version ${STATE_VERSION} (update rdmakit)`);
    if (!["aws-efa", "azure-ib", "roce"].includes(s.fabric)) throw new StateError(`${where}: ${STATE_OUTPUT}.fabric ${JSON.stringify(s.fabric)} is not aws-efa, azure-ib or roce`);
    if (typeof s.sshUser !== "string" || !NAME.test(s.sshUser)) throw new StateError(`${where}: ${STATE_OUTPUT}.sshUser is not a user name`);
    if (!Array.isArray(s.nodes)) throw new StateError(`${where}: ${STATE_OUTPUT}.nodes is not a list`);
    s.nodes.forEach((n, k) => {
        if (!NAME.test(String(n?.name))) throw new StateError(`${where}: ${STATE_OUTPUT}.nodes[${k}].name ${JSON.stringify(cleanText(n?.name, 40))} is not a node name`);
        if (!ADDRESS.test(String(n.address))) throw new StateError(`${where}: ${STATE_OUTPUT}.nodes[${k}].address ${JSON.stringify(cleanText(n.address, 40))} is not an address`);
        if (n.instanceId !== undefined && !NAME.test(String(n.instanceId))) throw new StateError(`${where}: ${STATE_OUTPUT}.nodes[${k}].instanceId is not an instance id`);
    });
    if (s.replacements !== undefined && (!Array.isArray(s.replacements) || s.replacements.length > MAX_REPLACEMENTS ||
        !s.replacements.every((r) => NAME.test(String(r?.node)) && typeof r.at === "string" && [r.fromInstance, r.toInstance].every((x) => x === undefined || NAME.test(String(x)))))) {
        throw new StateError(`${where}: ${STATE_OUTPUT}.replacements is not a list of at most ${MAX_REPLACEMENTS} replacements (node, at, fromInstance, toInstance)`);
    }
    if (s.entry?.kind === "bastion" && (!ADDRESS.test(String(s.entry.address)) || !NAME.test(String(s.entry.user)))) {
        throw new StateError(`${where}: ${STATE_OUTPUT}.entry is not an address and user`);
    }
    if (s.entry?.kind === "ssm" && !/^[a-z]{2}(-gov)?-[a-z]+-\d$/.test(String(s.entry.region))) throw new StateError(`${where}: ${STATE_OUTPUT}.entry.region is not an AWS region`);
    if (s.nodeHostKey !== undefined) publicKeyOr(s.nodeHostKey, `${where}: ${STATE_OUTPUT}.nodeHostKey`);
    if (s.head !== undefined) {
        const h = s.head;
        if (typeof h !== "object" || h === null || !NAME.test(String(h.name)) || !ADDRESS.test(String(h.address)) || !NAME.test(String(h.user)) ||
            (h.instanceId !== undefined && !NAME.test(String(h.instanceId)))) {
            throw new StateError(`${where}: ${STATE_OUTPUT}.head is not a name, address and user (and instance id)`);
        }
        if (s.nodes.some((n) => n.name === h.name)) throw new StateError(`${where}: ${STATE_OUTPUT}.head.name ${JSON.stringify(h.name)} is also a node's name`);
        if (h.hostKey !== undefined) publicKeyOr(h.hostKey, `${where}: ${STATE_OUTPUT}.head.hostKey`);
    }
    if (s.entry?.kind === "bastion" && s.entry.hostKey !== undefined) publicKeyOr(s.entry.hostKey, `${where}: ${STATE_OUTPUT}.entry.hostKey`);
    // the texts a node put there are cleaned again as they are read: a state.json or a stack output changed after
    // pulumi up wrote it is no more trusted than the node (a 5 MB finding with terminal escapes was printed as it was)
    const verdicts: readonly string[] = ["healthy", "failing", "incomplete", "unreadable"];
    const nodes = s.nodes.map((n): NodeState => {
        const h = n.health;
        if (h !== undefined && (typeof h !== "object" || h === null || !verdicts.includes(h.verdict) || !Array.isArray(h.findings))) {
            throw new StateError(`${where}: ${STATE_OUTPUT} node ${n.name}: health is not a verdict (${verdicts.join(", ")}) with a list of findings`);
        }
        return {
            name: n.name, address: n.address, ...(n.instanceId !== undefined ? { instanceId: n.instanceId } : {}),
            ...(h ? { health: { verdict: h.verdict, findings: h.findings.slice(0, MAX_FINDINGS).map((f) => cleanFinding(f ?? {} as FindingState)) } } : {}),
            ...(n.nccl === "ok" || n.nccl === "FAIL" || n.nccl === "slow" ? { nccl: n.nccl } : {}),
            ...(n.softwareFailed !== undefined ? { softwareFailed: cleanText(n.softwareFailed) } : {}),
            ...(n.excluded === true ? { excluded: true } : {}),
            ...(n.drained ? { drained: { reason: cleanText(n.drained.reason), ...(n.drained.at !== undefined ? { at: cleanText(n.drained.at, 40) } : {}) } } : {}),
        };
    });
    const scheduler = s.scheduler?.type === "slurm" && Array.isArray(s.scheduler.drained)
        ? { type: "slurm" as const, drained: s.scheduler.drained.map((d) => ({ node: cleanText(d?.node, 253), reason: cleanText(d?.reason) })) }
        : s.scheduler;
    return { ...s, stack: cleanText(s.stack, 253), nodes, scheduler };
}

function publicKeyOr(line: string, where: string): void {
    try {
        publicKey(line);
    } catch {
        throw new StateError(`${where} is not an SSH public key line`);
    }
}

/** `cluster.repair`, or its default: drain where a scheduler can drain the node, report where none can. Pure. */
export function repairPolicyOf(repair: RepairPolicy | undefined, hasScheduler: boolean): RepairPolicy {
    return repair ?? (hasScheduler ? "drain" : "report");
}

/** The file `--out <dir>` reads: `<dir>/state.json`. */
export const STATE_FILE = "state.json";

/** Writes the state beside the stack's other files (out/<stack>/), as the stack output has it. */
export function writeStateFile(state: OperatingState, dir: string): void {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(path.join(dir, STATE_FILE), JSON.stringify(state, null, 2) + "\n");
}
