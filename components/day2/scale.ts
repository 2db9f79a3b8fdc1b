/**
 * A change of `nodes` on a running cluster, decided from the operating state (pure):
 * - grow (8 → 16): provision and validate only the new nodes (their health gate and single-node runs), then one
 *   all-node run with every node, so the fabric is proven at the new size;
 * - shrink (16 → 8): the nodes that go are chosen first (nodes already drained or failing on evidence, then the last
 *   ones), drained in the scheduler, and only once they are idle does the cloud release them.
 *
 * How the cloud releases exactly the chosen nodes: on AWS, scale-in protection. Every node is protected from scale
 * in; the chosen ones lose their protection after they are drained, then the desired capacity is lowered, and the
 * group can terminate only unprotected instances. ("Instance scale-in protection ... the Auto Scaling group can't
 * terminate the required number of instances until their instance scale-in protection settings are disabled";
 * https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-instance-protection.html; API
 * SetInstanceProtection, IAM autoscaling:SetInstanceProtection.) Chosen over a termination lifecycle hook because a
 * hook holds whichever instance the group's termination policy picked (and only up to its heartbeat timeout),
 * while protection lets the kit pick the drained nodes and wait for the scheduler as long as a job runs. On Azure the
 * chosen instances are deleted by id (VirtualMachineScaleSets_DeleteInstances), which lowers the capacity to match.
 */
import type { OperatingState } from "./state";

export type ScalePlan =
    | { kind: "none" }
    | { kind: "grow"; add: number; provisionOnly: "new-nodes"; validate: ["health+single-node on the new nodes", "one all-node run"] }
    | {
        kind: "shrink";
        remove: Array<{ node: string; instanceId?: string; why: string }>;
        steps: string[];
    };

/** The plan for going from the state's nodes to `want`. Pure. */
export function planScaleChange(state: OperatingState, want: number): ScalePlan {
    if (!Number.isInteger(want) || want < 1) throw new Error(`nodes must be a whole number >= 1, got ${want}`);
    const have = state.nodes.length;
    if (want === have) return { kind: "none" };
    if (want > have) return { kind: "grow", add: want - have, provisionOnly: "new-nodes", validate: ["health+single-node on the new nodes", "one all-node run"] };
    const failing = (n: OperatingState["nodes"][number]): boolean =>
        !!n.drained || n.health?.verdict === "failing" || n.health?.verdict === "unreadable" || n.nccl === "FAIL";
    // drained or failing first (fewest working nodes lost), then from the end of the placement order
    const order = [...state.nodes.filter(failing), ...state.nodes.filter((n) => !failing(n)).reverse()];
    const remove = order.slice(0, have - want).map((n) => ({
        node: n.name, ...(n.instanceId ? { instanceId: n.instanceId } : {}),
        why: n.drained ? `already drained (${n.drained.reason})` : failing(n) ? "fails on evidence" : "last in placement order",
    }));
    const names = remove.map((r) => r.node).join(", ");
    const ids = remove.map((r) => r.instanceId ?? r.node).join(" ");
    const release = state.group?.cloud === "aws"
        ? [`aws autoscaling set-instance-protection --no-protected-from-scale-in --auto-scaling-group-name ${state.group.autoScalingGroup} --instance-ids ${ids}`,
            `pulumi up with nodes: ${want} (the desired capacity; the group can terminate only the unprotected instances)`]
        : state.group?.cloud === "azure"
            ? [`delete instances ${ids} of scale set ${state.group.scaleSet} (capacity becomes ${want})`, `pulumi up with nodes: ${want}`]
            : [`take ${names} out of roce.hosts, then pulumi up`];
    const steps = state.scheduler.type === "none"
        ? [`no scheduler: make sure no job runs on ${names}`, ...release]
        : [`drain ${names} (reason: rdmakit scale-in)`, `wait until ${names} run no job (DRAINED, not DRAINING)`, ...release];
    return { kind: "shrink", remove, steps };
}
