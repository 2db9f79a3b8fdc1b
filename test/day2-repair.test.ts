// The repair policy carried out against recorded AWS and Azure answers in the APIs' response shapes
// (test/fixtures/aws/autoscaling-answers.ts: DescribeAutoScalingGroups; EC2 DescribeInstances' Reservations[].Instances[];
// test/fixtures/azure/arm-answers.ts: the scale set's NICs; VirtualMachineScaleSetVMs - List's value[]), the cluster's
// side (drain, provision, prove, resume) recorded. Bound: ~2 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { type StateInputs, operatingState } from "../components/day2/state";
import { decideRepairs, type Classify } from "../components/day2/repair";
import { executeRepairs, type NodeOps } from "../components/day2/execute";
import { awsCloudOps, azureCloudOps, COMPUTE_API_VERSION } from "../components/day2/cloud";
import { GROUP, groupAnswer } from "./fixtures/aws/autoscaling-answers";
import { SUBSCRIPTION, vmssNics } from "./fixtures/azure/arm-answers";

const classify: Classify = (f) => (f.component === "ecc" || f.component === "xid" ? "persistent" : f.component === "clocks" ? "transient" : "unknown");
const ids = ["i-0aaa0000000000001", "i-0aaa0000000000002", "i-0aaa0000000000003", "i-0aaa0000000000004"];
const NEW = "i-0bbb0000000000009";

function state(over: Partial<StateInputs> = {}, bad: Record<string, { component: string; message: string }> = { "gpu-1": { component: "ecc", message: "GPU 3 row remapping failed" } }) {
    return operatingState({
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {},
        nodes: ids.map((instanceId, i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId })),
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: GROUP },
        scheduler: { type: "slurm", drained: [] },
        validation: {
            pass: false, failedNodes: [],
            health: ids.map((_, i) => (bad[`gpu-${i}`]
                ? { node: `gpu-${i}`, verdict: "failing" as const, findings: [bad[`gpu-${i}`]] }
                : { node: `gpu-${i}`, verdict: "healthy" as const, findings: [] })),
        },
        ...over,
    });
}

function nodeOps(proof: { ok: boolean; why?: string } = { ok: true }) {
    const calls: string[] = [];
    const ops: NodeOps = {
        drain: async (n, r) => { calls.push(`drain ${n} (${r})`); },
        resume: async (n) => { calls.push(`resume ${n}`); },
        provision: async (n, a) => { calls.push(`provision ${n} ${a}`); return { ok: true }; },
        prove: async (n, p) => { calls.push(`prove ${n} vs ${p}`); return proof; },
    };
    return { ops, calls };
}

/** The AWS CLI as recorded: the group while the old instance terminates, then with its replacement in service. */
function awsCli() {
    const argvs: string[][] = [];
    let describes = 0;
    const run = async (argv: string[]): Promise<unknown> => {
        argvs.push(argv);
        const verb = argv.slice(1, 3).join(" ");
        if (verb === "autoscaling set-instance-health") return undefined; // prints nothing on success
        if (verb === "autoscaling describe-auto-scaling-groups") {
            describes++;
            return describes === 1
                ? groupAnswer([[ids[0], "InService", "Healthy"], [ids[1], "Terminating", "Unhealthy"], [ids[2], "InService", "Healthy"], [ids[3], "InService", "Healthy"], [NEW, "Pending", "Healthy"]])
                : groupAnswer([[ids[0], "InService", "Healthy"], [ids[2], "InService", "Healthy"], [ids[3], "InService", "Healthy"], [NEW, "InService", "Healthy"]]);
        }
        if (verb === "ec2 describe-instances") {
            return { Reservations: [{ ReservationId: "r-0123456789abcdef0", OwnerId: "123456789012", Instances: [{ InstanceId: NEW, InstanceType: "p5.48xlarge", PrivateIpAddress: "10.0.0.99", State: { Code: 16, Name: "running" } }] }] };
        }
        throw new Error(`unexpected ${argv.join(" ")}`);
    };
    return { run, argvs };
}
const fast = { intervalMs: 1, timeoutMs: 50, sleep: async () => undefined };
const decide = (s: ReturnType<typeof state>, cap = 1, history: Array<{ node: string; at: string }> = []) => decideRepairs(s, { policy: "replace", cap, classify, history });

test("AWS: a node failing health is drained, marked Unhealthy, its replacement provisioned, proven against a passing node, resumed", async () => {
    const s = state();
    const cli = awsCli();
    const { ops, calls } = nodeOps();
    const r = await executeRepairs(decide(s), s, { cloud: awsCloudOps({ region: "us-east-2", autoScalingGroup: GROUP }, cli.run, fast), nodes: ops, canDrain: true }, () => "2026-12-05T04:00:00Z");
    assert.deepEqual(r.outcomes, [{ node: "gpu-1", outcome: "rejoined", from: ids[1], to: NEW }]);
    assert.deepEqual(calls, ["drain gpu-1 (rdmakit: health failing)", "provision gpu-1 10.0.0.99", "prove gpu-1 vs gpu-0", "resume gpu-1"]);
    assert.deepEqual(cli.argvs[0], ["aws", "autoscaling", "set-instance-health", "--instance-id", ids[1], "--health-status", "Unhealthy", "--no-should-respect-grace-period", "--region", "us-east-2", "--output", "json"]);
    assert.equal(cli.argvs.filter((a) => a[2] === "describe-auto-scaling-groups").length, 2, "waited while the replacement was Pending");
    assert.deepEqual(r.replaced, [{ node: "gpu-1", at: "2026-12-05T04:00:00Z", fromInstance: ids[1] }]);
});

test("a transient finding is not replaced: no cloud call", async () => {
    const s = state({}, { "gpu-2": { component: "clocks", message: "GPU 0 clocks are held down" } });
    const cli = awsCli();
    const { ops, calls } = nodeOps();
    const d = decide(s);
    const r = await executeRepairs(d, s, { cloud: awsCloudOps({ region: "us-east-2", autoScalingGroup: GROUP }, cli.run, fast), nodes: ops, canDrain: true });
    assert.deepEqual(cli.argvs, []);
    assert.deepEqual(r.outcomes, [{ node: "gpu-2", outcome: "drained", reason: "health failing" }]);
    assert.deepEqual(calls, ["drain gpu-2 (rdmakit: health failing)"]);
});

test("a replacement that fails its proof stays drained and is reported; the next decision reports it, no loop", async () => {
    const s = state();
    const cli = awsCli();
    const { ops, calls } = nodeOps({ ok: false, why: "pair gpu-1+gpu-0 busbw 12.1 GB/s under 80.0" });
    const r = await executeRepairs(decide(s), s, { cloud: awsCloudOps({ region: "us-east-2", autoScalingGroup: GROUP }, cli.run, fast), nodes: ops, canDrain: true }, () => "2026-12-05T04:00:00Z");
    assert.deepEqual(r.outcomes, [{ node: "gpu-1", outcome: "failed-after-replacement", from: ids[1], to: NEW, why: "pair gpu-1+gpu-0 busbw 12.1 GB/s under 80.0" }]);
    assert.ok(!calls.some((c) => c.startsWith("resume")), "never resumed");
    assert.equal(calls.at(-1), `drain gpu-1 (rdmakit: replacement ${NEW} failed its proof)`);
    // the same node failing again at the next run: reported, not replaced
    const next = decide(state({ nodes: ids.map((id, i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId: i === 1 ? NEW : id })) }), 1, r.replaced);
    assert.deepEqual(next.actions.map((a) => a.kind), ["report"]);
});

test("the cap: two nodes fail on persistent findings, one is replaced in this run, the other drained", async () => {
    const s = state({}, { "gpu-1": { component: "ecc", message: "row remapping failed" }, "gpu-3": { component: "xid", message: "Xid 79: GPU has fallen off the bus" } });
    const cli = awsCli();
    const { ops } = nodeOps();
    const r = await executeRepairs(decide(s, 1), s, { cloud: awsCloudOps({ region: "us-east-2", autoScalingGroup: GROUP }, cli.run, fast), nodes: ops, canDrain: true });
    assert.equal(cli.argvs.filter((a) => a[2] === "set-instance-health").length, 1);
    assert.deepEqual(r.outcomes.map((o) => [o.node, o.outcome]), [["gpu-1", "rejoined"], ["gpu-3", "drained"]]);
});

test("a replacement that never comes is reported with the wait, the node left drained", async () => {
    const s = state();
    const stuck = async (argv: string[]): Promise<unknown> => (argv[2] === "describe-auto-scaling-groups"
        ? groupAnswer([[ids[0], "InService", "Healthy"], [ids[2], "InService", "Healthy"], [ids[3], "InService", "Healthy"]]) : undefined);
    const { ops, calls } = nodeOps();
    const r = await executeRepairs(decide(s), s, { cloud: awsCloudOps({ region: "us-east-2", autoScalingGroup: GROUP }, stuck, fast), nodes: ops, canDrain: true });
    assert.equal(r.outcomes[0].outcome, "replacement-failed");
    assert.match((r.outcomes[0] as { why: string }).why, /a replacement for i-0aaa0000000000002 in train-nodes-4f2a: not there after 0 s/);
    assert.deepEqual(calls, ["drain gpu-1 (rdmakit: health failing)"]);
});

test("Azure: the instance deleted, the capacity set back, the new VM found with its address, proven, resumed", async () => {
    const rg = "rg-train", vmss = "train-nodes";
    const s = state({ fabric: "azure-ib", group: { cloud: "azure", resourceGroup: rg, scaleSet: vmss }, nodes: ["0", "1", "2", "3"].map((instanceId, i) => ({ name: `gpu-${i}`, address: `10.1.0.${4 + i}`, instanceId })) });
    const argvs: string[][] = [];
    const vmBase = `/subscriptions/${SUBSCRIPTION}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachineScaleSets/${vmss}/virtualMachines`;
    // VirtualMachineScaleSetVMs - List: value[] of {name, id, instanceId, properties.provisioningState, ...}
    const vm = (n: string, state = "Succeeded") => ({ name: `${vmss}_${n}`, id: `${vmBase}/${n}`, instanceId: n, type: "Microsoft.Compute/virtualMachineScaleSets/virtualMachines", location: "eastus", sku: { name: "Standard_ND96isr_H100_v5", tier: "Standard" }, properties: { latestModelApplied: true, provisioningState: state } });
    let lists = 0;
    const run = async (argv: string[]): Promise<unknown> => {
        argvs.push(argv);
        const url = argv[argv.indexOf("--url") + 1];
        if (argv[3] !== "get") return undefined;
        if (url.includes("/virtualMachines?")) return { value: ++lists === 1 ? [vm("0"), vm("2"), vm("3"), vm("4", "Creating")] : [vm("0"), vm("2"), vm("3"), vm("4")] };
        if (url.includes("/virtualMachines/4/networkInterfaces")) return { value: vmssNics(rg, vmss, ["", "", "", "", "10.1.0.20"]).slice(4) };
        throw new Error(`unexpected ${url}`);
    };
    const { ops, calls } = nodeOps();
    const r = await executeRepairs(decide(s), s, { cloud: azureCloudOps({ resourceGroup: rg, scaleSet: vmss }, 4, run, fast), nodes: ops, canDrain: true });
    assert.deepEqual(r.outcomes, [{ node: "gpu-1", outcome: "rejoined", from: "1", to: "4" }]);
    const base = `https://management.azure.com/subscriptions/{subscriptionId}/resourceGroups/${rg}/providers/Microsoft.Compute/virtualMachineScaleSets/${vmss}`;
    assert.deepEqual(argvs[0], ["az", "rest", "--method", "post", "--url", `${base}/delete?api-version=${COMPUTE_API_VERSION}`, "--body", '{"instanceIds":["1"]}']);
    assert.deepEqual(argvs[1], ["az", "rest", "--method", "patch", "--url", `${base}?api-version=${COMPUTE_API_VERSION}`, "--body", '{"sku":{"capacity":4}}']);
    assert.deepEqual(calls, ["drain gpu-1 (rdmakit: health failing)", "provision gpu-1 10.1.0.20", "prove gpu-1 vs gpu-0", "resume gpu-1"]);
});

test("bare metal: the failing node drained with the reason, nothing replaced", async () => {
    const s = state({ fabric: "roce", group: undefined });
    const { ops, calls } = nodeOps();
    const r = await executeRepairs(decide(s), s, { nodes: ops, canDrain: true });
    assert.deepEqual(r.outcomes, [{ node: "gpu-1", outcome: "drained", reason: "health failing" }]);
    assert.deepEqual(calls, ["drain gpu-1 (rdmakit: health failing)"]);
    assert.deepEqual(decide(s).actions[0].evidence, ["ecc: GPU 3 row remapping failed"]);
});

test("scale: 8 → 16 provisions only the new nodes plus one all-node run; 16 → 8 drains the chosen nodes before the cloud releases them", async () => {
    const { planScaleChange } = await import("../components/day2/scale");
    const eight = operatingState({
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "drain", spec: {},
        nodes: Array.from({ length: 8 }, (_, i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId: `i-0${i}` })),
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: GROUP }, scheduler: { type: "slurm", drained: [{ node: "gpu-2", reason: "rdmakit: health failing" }] },
    });
    assert.deepEqual(planScaleChange(eight, 16), { kind: "grow", add: 8, provisionOnly: "new-nodes", validate: ["health+single-node on the new nodes", "one all-node run"] });
    assert.deepEqual(planScaleChange(eight, 8), { kind: "none" });
    const shrink = planScaleChange(eight, 5);
    assert.equal(shrink.kind, "shrink");
    if (shrink.kind !== "shrink") return;
    assert.deepEqual(shrink.remove.map((r) => r.node), ["gpu-2", "gpu-7", "gpu-6"], "the drained node first, then the last ones");
    assert.deepEqual(shrink.steps, [
        "drain gpu-2, gpu-7, gpu-6 (reason: rdmakit scale-in)",
        "wait until gpu-2, gpu-7, gpu-6 run no job (DRAINED, not DRAINING)",
        `aws autoscaling set-instance-protection --no-protected-from-scale-in --auto-scaling-group-name ${GROUP} --instance-ids i-02 i-07 i-06`,
        "pulumi up with nodes: 5 (the desired capacity; the group can terminate only the unprotected instances)",
    ]);
    assert.throws(() => planScaleChange(eight, 0), /nodes must be a whole number >= 1, got 0/);
});
