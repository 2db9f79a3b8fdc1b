// `rdmakit scale` (components/day2/scale-live.ts, cli.ts runScale): a shrink drains the chosen nodes, waits until
// sinfo says they run no job, and only then releases them (AWS: scale-in protection off, at most 50 ids a call;
// Azure: those instances deleted); a drain that does not finish releases nothing. ssh (scontrol, sinfo) and the
// cloud CLIs are recorded stubs. Bound: < 2 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { operatingState, type StateInputs } from "../components/day2/state";
import { runScale } from "../components/day2/cli";
import { drainedStates, releaseCalls } from "../components/day2/scale-live";
import { COMPUTE_API_VERSION } from "../components/day2/cloud";

function state(over: Partial<StateInputs> = {}) {
    return operatingState({
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "drain", spec: {},
        nodes: Array.from({ length: 8 }, (_, i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId: `i-0${i}` })),
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: "train-nodes" },
        scheduler: { type: "slurm", drained: [] }, ...over,
    });
}

function setup(s: ReturnType<typeof state>, sinfo: string[]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-scale-"));
    fs.mkdirSync(path.join(dir, "out"));
    fs.writeFileSync(path.join(dir, "out", "state.json"), JSON.stringify(s));
    fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\nprintf '{"rdmakitState":'; cat "${dir}/out/state.json"; printf '}'\n`, { mode: 0o755 });
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
    const ssh: string[] = [];
    const calls: string[][] = [];
    let polls = 0;
    const deps = {
        cwd: dir, env, interactive: false, intervalMs: 1, sleep: async () => undefined,
        ssh: async (node: string, line: string) => {
            ssh.push(`${node}: ${line}`);
            return line.startsWith("sinfo") ? { ok: true, stdout: sinfo[Math.min(polls++, sinfo.length - 1)] } : { ok: true };
        },
        run: async (argv: string[]) => { calls.push(argv); return undefined; },
    };
    return { dir, deps, ssh, calls, done: () => fs.rmSync(dir, { recursive: true, force: true }) };
}

test("8 → 6 on AWS: the chosen nodes drained, waited for while DRAINING, then their protection taken off; pulumi up is what comes next", async () => {
    const t = setup(state(), ["gpu-7 draining\ngpu-6 drained", "gpu-7 drained\ngpu-6 drained*\n"]);
    const r = await runScale({ stack: "prod", nodes: "6", yes: true, drainMinutes: "5" }, t.deps);
    assert.equal(r.code, 0, r.stdout);
    assert.deepEqual(t.ssh, [
        "gpu-0: sudo -n scontrol update NodeName=gpu-7 State=DRAIN Reason='rdmakit scale-in'",
        "gpu-0: sudo -n scontrol update NodeName=gpu-6 State=DRAIN Reason='rdmakit scale-in'",
        "gpu-0: sinfo -h -N -n gpu-7,gpu-6 -o '%N %T'", "gpu-0: sinfo -h -N -n gpu-7,gpu-6 -o '%N %T'",
    ]);
    assert.deepEqual(t.calls, [["aws", "autoscaling", "set-instance-protection", "--no-protected-from-scale-in", "--auto-scaling-group-name", "train-nodes",
        "--instance-ids", "i-07", "i-06", "--region", "us-east-2", "--output", "json"]]);
    assert.match(r.stdout ?? "", /now set cluster\.nodes: 6 in Pulumi\.prod\.yaml and run pulumi up --stack prod \(the group terminates only the released nodes\)/);
    t.done();
});

test("a node that keeps running a job past --drain-minutes: nothing is released, exit 1", async () => {
    const t = setup(state(), ["gpu-7 draining\ngpu-6 drained"]);
    const r = await runScale({ stack: "prod", nodes: "6", yes: true, drainMinutes: "1" }, { ...t.deps, intervalMs: 20_000 });
    assert.equal(r.code, 1);
    assert.match(r.stdout ?? "", /still running jobs after 1 min: gpu-7 \(draining\); nothing was released/);
    assert.deepEqual(t.calls, []);
    t.done();
});

test("not from a terminal without --yes: refused, nothing drained; --dry-run and growing only print", async () => {
    const t = setup(state(), ["gpu-7 drained"]);
    const refused = await runScale({ stack: "prod", nodes: "7" }, t.deps);
    assert.equal(refused.code, 2);
    assert.deepEqual([t.ssh, t.calls], [[], []]);
    const dry = await runScale({ out: "out", nodes: "7", dryRun: true }, t.deps);
    assert.equal(dry.code, 0);
    assert.match(dry.stdout ?? "", /^scale 8 → 7: gpu-7 \(last in placement order\) go\n {2}drain gpu-7/);
    const grow = await runScale({ stack: "prod", nodes: "16" }, t.deps);
    assert.equal(grow.code, 0);
    assert.match(grow.stdout ?? "", /set cluster\.nodes: 16 in Pulumi\.prod\.yaml and run pulumi up --stack prod; the 8 new node\(s\)/);
    assert.equal((await runScale({ stack: "prod", nodes: "0" }, t.deps)).code, 2);
    assert.deepEqual([t.ssh, t.calls], [[], []]);
    t.done();
});

test("Azure: the drained instances deleted by id; AWS calls batched by 50; sinfo's output only counts for the nodes asked", () => {
    const az = state({ fabric: "azure-ib", group: { cloud: "azure", resourceGroup: "rg-train", scaleSet: "train-nodes" } });
    assert.deepEqual(releaseCalls(az, ["6", "7"]), [["az", "rest", "--method", "post", "--url",
        `https://management.azure.com/subscriptions/{subscriptionId}/resourceGroups/rg-train/providers/Microsoft.Compute/virtualMachineScaleSets/train-nodes/delete?api-version=${COMPUTE_API_VERSION}`,
        "--body", '{"instanceIds":["6","7"]}']]);
    const many = Array.from({ length: 120 }, (_, i) => `i-${i}`);
    assert.deepEqual(releaseCalls(state(), many).map((c) => c.filter((a) => a.startsWith("i-")).length), [50, 50, 20]);
    const m = drainedStates("gpu-7 drained~\ngpu-9 drained\n\u001b[31mgpu-6 draining\ngpu-6 mixed\n", ["gpu-6", "gpu-7"]);
    assert.deepEqual([...m], [["gpu-7", "drained"], ["gpu-6", "mixed"]]);
    // %T's long names with "_" (slurm_protocol_defs.c node_state_string): a powered-down node is read, not ignored
    assert.deepEqual([...drainedStates("gpu-6 POWERED_DOWN\ngpu-7 IDLE+DRAIN~\n", ["gpu-6", "gpu-7"])], [["gpu-6", "powered_down"], ["gpu-7", "idle+drain"]]);
});
