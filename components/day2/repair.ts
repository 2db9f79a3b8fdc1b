/**
 * The repair policy as one pure decision: the operating state (findings per node), what was replaced before, the
 * policy and the cap → what to do with each failing node. `rdmakit status` shows it, `rdmakit repair --dry-run`
 * prints it, `rdmakit repair` carries it out (execute.ts); one function, so what is shown is what is done.
 *
 * Rules:
 * - Evidence first: a node is failing when its health verdict is failing/unreadable or its own nccl-tests run failed;
 *   a slow node (pair search) or a software failure is drained/reported, never replaced (the pair or the playbook
 *   may be at fault, not the hardware).
 * - Never replace on a transient finding: replace only when every finding is known persistent (the health issue's
 *   classification, passed in as `classify`); unknown is not persistent.
 * - A node that fails on the instance that replaced its last one is reported, not replaced again (no loop).
 * - At most `cap` replacements per run; the rest are drained and reported as over the cap.
 * - Bare metal cannot be replaced: drained (when a scheduler can) and reported with the evidence.
 * - With `replace`, a node is drained first where a scheduler can, so no job lands on it while it is replaced.
 */
import type { FindingState, NodeState, OperatingState, RepairPolicy } from "./state";
import { classifyFinding } from "./persistence";

export type Persistence = "transient" | "persistent" | "unknown";
/** Whether a finding would go away by itself (a reset, a reboot) or condemns the hardware. */
export type Classify = (f: FindingState) => Persistence;

/** A node replaced before, and when: the instance it had and the one it got. */
export interface Replacement { node: string; at: string; fromInstance?: string; toInstance?: string }

export type RepairAction =
    | { kind: "replace"; node: string; instanceId: string; drainFirst: boolean; reason: string; evidence: string[] }
    | { kind: "drain"; node: string; reason: string; evidence: string[] }
    | { kind: "report"; node: string; reason: string; evidence: string[]; why: string };

export interface RepairDecision { policy: RepairPolicy; cap: number; actions: RepairAction[] }

export interface RepairInputs {
    policy: RepairPolicy;
    /** most replacements in one run */
    cap: number;
    classify: Classify;
    history: Replacement[];
}

/** The default cap: one node per run, so one bad decision costs one node (raised with --max-replacements). */
export const DEFAULT_REPAIR_CAP = 1;

interface Failing { node: NodeState; reason: string; evidence: string[]; replaceable: boolean; why?: string }

function failingOf(n: NodeState, classify: Classify): Failing | undefined {
    if (n.excluded) return undefined;
    const findings = n.health?.findings ?? [];
    const evidence = findings.map((f) => `${f.component}: ${f.message}${f.evidence ? ` [${f.evidence}]` : ""}`);
    if (n.health && (n.health.verdict === "failing" || n.health.verdict === "unreadable")) {
        const kinds = findings.map(classify);
        const replaceable = kinds.length > 0 && kinds.every((k) => k === "persistent");
        const why = kinds.some((k) => k === "transient") ? "a transient finding: check again (rdmakit check --nodes) before replacing"
            : replaceable ? undefined : "no finding is known to be persistent";
        return { node: n, reason: `health ${n.health.verdict}`, evidence, replaceable, ...(why ? { why } : {}) };
    }
    if (n.nccl === "FAIL") return { node: n, reason: "its own nccl-tests run failed", evidence, replaceable: false, why: "nccl-tests alone does not say which part is at fault" };
    if (n.nccl === "slow") return { node: n, reason: "slow in the pairwise nccl-tests search", evidence, replaceable: false, why: "slow in pairs: the link or the peer may be at fault" };
    if (n.softwareFailed) return { node: n, reason: `node software failed at ${n.softwareFailed}`, evidence, replaceable: false, why: "a failed playbook step is retried by the next pulumi up" };
    return undefined;
}

/** The decision. Pure. */
export function decideRepairs(state: OperatingState, inp: RepairInputs): RepairDecision {
    if (!Number.isInteger(inp.cap) || inp.cap < 0) throw new Error(`the replacement cap must be a whole number >= 0, got ${inp.cap}`);
    const canDrain = state.scheduler.type !== "none";
    const cloud = state.group !== undefined && state.fabric !== "roce";
    // the node's current instance is a replacement (or, for a record without the new instance, the node was replaced)
    const replacedBefore = (n: NodeState): Replacement | undefined =>
        [...inp.history].reverse().find((h) => h.node === n.name && (h.toInstance === undefined || h.toInstance === n.instanceId));
    const actions: RepairAction[] = [];
    let replacing = 0;
    for (const n of state.nodes) {
        const f = failingOf(n, inp.classify);
        if (!f) continue;
        const base = { node: n.name, reason: f.reason, evidence: f.evidence };
        const drainOr = (why: string): RepairAction => (canDrain && inp.policy !== "report" && !n.drained
            ? { kind: "drain", ...base }
            : { kind: "report", ...base, why: canDrain || inp.policy === "report" ? why : `${why}; no scheduler to drain it in` });
        if (inp.policy === "report") { actions.push({ kind: "report", ...base, why: "cluster.repair is report" }); continue; }
        if (inp.policy === "drain") { actions.push(drainOr("cluster.repair is drain")); continue; }
        // replace
        const before = replacedBefore(n);
        if (!cloud) { actions.push(drainOr("bare metal: no replacement, a person repairs it")); continue; }
        if (before) { actions.push({ kind: "report", ...base, why: `failed again after its replacement at ${before.at}: not replaced in a loop` }); continue; }
        if (!f.replaceable) { actions.push(drainOr(f.why ?? "not replaceable")); continue; }
        if (!n.instanceId) { actions.push(drainOr("the stack has no instance id for it")); continue; }
        if (replacing >= inp.cap) { actions.push(drainOr(`over the cap of ${inp.cap} replacement(s) per run`)); continue; }
        replacing++;
        actions.push({ kind: "replace", ...base, instanceId: n.instanceId, drainFirst: canDrain && !n.drained });
    }
    return { policy: inp.policy, cap: inp.cap, actions };
}

/**
 * The decision of the stack's own policy on its state: what `pulumi up` prints and records at the end of a deployment
 * (cluster.ts) and what `rdmakit status`, `repair --dry-run` and `repair` take (cli.ts), from the same state, with the
 * health gate's classification and the replacements the state keeps. Pure.
 */
export function decisionFor(state: OperatingState, cap = DEFAULT_REPAIR_CAP): RepairDecision {
    return decideRepairs(state, { policy: state.repair, cap, classify: classifyFinding, history: state.replacements ?? [] });
}

/** One line per action, as `rdmakit status` and `repair --dry-run` print them. Pure. */
export function formatDecision(d: RepairDecision, state: OperatingState): string {
    if (d.actions.length === 0) return `repair (${d.policy}): nothing to do, no node fails on evidence\n`;
    const lines = [`repair (${d.policy}, at most ${d.cap} replacement(s) per run):`];
    for (const a of d.actions) {
        if (a.kind === "replace") {
            const how = state.group?.cloud === "aws"
                ? `mark ${a.instanceId} Unhealthy in Auto Scaling group ${state.group.autoScalingGroup} (autoscaling:SetInstanceHealth)`
                : state.group?.cloud === "azure" ? `delete scale set ${state.group.scaleSet} instance ${a.instanceId} and restore the capacity` : "replace";
            lines.push(`  replace ${a.node}: ${a.reason}; ${a.drainFirst ? "drain, " : ""}${how}, wait for the new instance, provision it, ` +
                "health gate + pairwise nccl-tests against a passing node, then resume it");
        } else if (a.kind === "drain") {
            lines.push(`  drain   ${a.node}: ${a.reason}`);
        } else {
            lines.push(`  report  ${a.node}: ${a.reason} (${a.why})`);
        }
        for (const e of a.evidence) lines.push(`            ${e}`);
    }
    return lines.join("\n") + "\n";
}
