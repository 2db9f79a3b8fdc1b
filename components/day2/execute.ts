/**
 * Carrying out a repair decision (repair.ts): per node, drain, replace through the cloud, wait for the new instance,
 * provision it, prove it (health gate + a pairwise nccl-tests run against a node that passed) and only then let it
 * back in. Every side effect is an injected operation, so the order and the refusals are tested against recorded
 * cloud answers (test/day2-repair.test.ts); cloud.ts holds the AWS and Azure operations.
 *
 * A replacement that fails its proof stays drained and is reported, never replaced again in the same run, and is
 * recorded (`Replacement`) so the next decision reports it rather than looping.
 */
import type { OperatingState } from "./state";
import type { RepairAction, RepairDecision, Replacement } from "./repair";

/** The cloud's side: replace one instance and wait until its replacement is in service. */
export interface CloudOps {
    /** starts the replacement of `instanceId` (AWS: mark it Unhealthy; Azure: delete it and restore the capacity) */
    replace(instanceId: string): Promise<void>;
    /** resolves to the new instance (not in `known`) once it is in service, or rejects after the wait */
    waitForReplacement(oldId: string, known: string[]): Promise<{ instanceId: string; address: string }>;
}

/** The cluster's side. */
export interface NodeOps {
    drain(node: string, reason: string): Promise<void>;
    resume(node: string): Promise<void>;
    /** node software on the new instance (`instanceId`, reached at `address`) */
    provision(node: string, address: string, instanceId: string): Promise<{ ok: boolean; why?: string }>;
    /** health gate on `node` and a pairwise nccl-tests run between it and `peer` */
    prove(node: string, peer: string): Promise<{ ok: boolean; why?: string }>;
}

export type Outcome =
    | { node: string; outcome: "rejoined"; from: string; to: string }
    | { node: string; outcome: "failed-after-replacement"; from: string; to: string; why: string }
    | { node: string; outcome: "replacement-failed"; from: string; why: string }
    | { node: string; outcome: "drained"; reason: string }
    | { node: string; outcome: "reported"; reason: string; why: string };

/** A node that passed both health and its own nccl-tests run, to pair the replacement with. */
export function passingPeer(state: OperatingState, except: string[]): string | undefined {
    return state.nodes.find((n) => !except.includes(n.name) && !n.excluded && !n.drained && n.health?.verdict === "healthy" && n.nccl === "ok")?.name;
}

/** Runs the decision. `now` stamps the replacement records. */
export async function executeRepairs(
    decision: RepairDecision, state: OperatingState, ops: { cloud?: CloudOps; nodes: NodeOps; canDrain: boolean }, now: () => string = () => new Date().toISOString(),
): Promise<{ outcomes: Outcome[]; replaced: Replacement[] }> {
    const outcomes: Outcome[] = [];
    const replaced: Replacement[] = [];
    const failingNodes = decision.actions.map((a) => a.node);
    let known = state.nodes.map((n) => n.instanceId).filter((x): x is string => !!x);
    for (const a of decision.actions) {
        if (a.kind === "report") { outcomes.push({ node: a.node, outcome: "reported", reason: a.reason, why: a.why }); continue; }
        if (a.kind === "drain") {
            await ops.nodes.drain(a.node, drainReason(a));
            outcomes.push({ node: a.node, outcome: "drained", reason: a.reason });
            continue;
        }
        const peer = passingPeer(state, failingNodes);
        if (!ops.cloud || !peer) {
            if (ops.canDrain) await ops.nodes.drain(a.node, drainReason(a));
            outcomes.push({ node: a.node, outcome: "reported", reason: a.reason, why: !ops.cloud ? "no cloud to replace it through" : "no passing node to prove a replacement against" });
            continue;
        }
        if (a.drainFirst) await ops.nodes.drain(a.node, drainReason(a));
        let fresh: { instanceId: string; address: string };
        try {
            await ops.cloud.replace(a.instanceId);
            fresh = await ops.cloud.waitForReplacement(a.instanceId, known);
        } catch (e) {
            outcomes.push({ node: a.node, outcome: "replacement-failed", from: a.instanceId, why: (e as Error).message });
            continue;
        }
        known = [...known, fresh.instanceId];
        replaced.push({ node: a.node, at: now(), fromInstance: a.instanceId });
        const provisioned = await ops.nodes.provision(a.node, fresh.address, fresh.instanceId);
        const proof = provisioned.ok ? await ops.nodes.prove(a.node, peer) : provisioned;
        if (!proof.ok) {
            // stays drained (a scheduler drains a node that was never resumed); reported, and recorded so no loop
            if (ops.canDrain) await ops.nodes.drain(a.node, `rdmakit: replacement ${fresh.instanceId} failed its proof`);
            outcomes.push({ node: a.node, outcome: "failed-after-replacement", from: a.instanceId, to: fresh.instanceId, why: proof.why ?? "failed" });
            continue;
        }
        if (ops.canDrain) await ops.nodes.resume(a.node);
        outcomes.push({ node: a.node, outcome: "rejoined", from: a.instanceId, to: fresh.instanceId });
    }
    return { outcomes, replaced };
}

function drainReason(a: RepairAction): string {
    // Slurm keeps the reason as given; short and on one line (what `sinfo -R` shows)
    return `rdmakit: ${a.reason}`.replace(/\s+/g, " ").slice(0, 120);
}
