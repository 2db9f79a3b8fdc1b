// The repair policy at `pulumi up` and at `rdmakit repair --dry-run` is one decision: RdmaCluster on Pulumi's mock
// engine with the clouds' recorded answers (test/fixtures/cluster-answers.ts: EC2 DescribeInstances and ARM shapes,
// sources there) and a validation run whose result line names a failing node; what the deployment prints is what
// `repair --dry-run` prints from the state it exported. Bound: four deployments on the mock engine, ~10 s (30 s on a
// loaded 2-core machine).
import { commandStdout, clusterCall, clusterResource } from "./fixtures/cluster-answers";
import { topologyAnswer } from "./fixtures/aws/ec2-topology";
import { armFetch, b2sSku, h100Sku, usages, vmssNics } from "./fixtures/azure/arm-answers";
import { before, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { readFileSync } from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type * as ClusterModule from "../components/cluster";
import type { ClusterSpecInput } from "../components/types";
import { RESULT_PREFIX, type ValidationResult } from "../components/validate/component";
import { type OperatingState, writeStateFile } from "../components/day2/state";
import { runRepair, runStatus } from "../components/day2/cli";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";

const NODE_IPS = ["10.0.0.21", "10.0.0.22", "10.0.0.23", "10.0.0.24"];
const IDS = NODE_IPS.map((_, i) => `i-0aaa${String(i).padStart(13, "0")}`);
let mod: typeof ClusterModule;
const warned: string[] = [];

before(async () => {
    globalThis.fetch = armFetch({
        skus: [h100Sku(), b2sSku()], usages: usages(0, 960),
        nics: (vmss) => vmssNics("demo", vmss, ["10.10.0.7", "10.10.0.4", "10.10.0.5", "10.10.0.6"]),
    }).impl;
    await pulumi.runtime.setMocks({ newResource: clusterResource, call: (args) => clusterCall(args, { ids: IDS, privateIps: NODE_IPS }) }, "rdmakit", "test", false);
    // what the deployment prints (pulumi.log goes to the engine; here to this list)
    const log = pulumi.log as { warn: (msg: string) => Promise<void> };
    log.warn = async (msg: string) => { warned.push(msg); };
    mod = await import("../components/cluster");
});

function example(name: string, over: Record<string, unknown> = {}): Record<string, unknown> {
    return { ...parseYaml(readFileSync(path.join(__dirname, "..", "examples", name), "utf8")).config["rdmakit:cluster"], ...over };
}

const unwrap = <T>(o: pulumi.Output<T>): Promise<T> => new Promise((resolve) => o.apply(resolve));

/** One deployment whose validation run printed `result`: the state it exported and what it printed. */
async function up(spec: Record<string, unknown>, result: ValidationResult): Promise<{ state: OperatingState; printed: string[] }> {
    warned.length = 0;
    commandStdout.set("demo-validation-nccl", `nccl-report summary\n${RESULT_PREFIX}${JSON.stringify(result)}\n`);
    // the nodes' EC2 instance topology as the read at up prints it (the AWS CLI's shape, test/fixtures/aws/ec2-topology.ts)
    commandStdout.set("demo-aws-ec2-topology", JSON.stringify(topologyAnswer(IDS.map((id) => ({ id, leaf: "nn-3333333333example" })))));
    try {
        const c = new mod.RdmaCluster("demo", { spec: spec as unknown as ClusterSpecInput, sshPrivateKey: pulumi.secret("not-a-real-key") });
        const state = await unwrap(c.state);
        await new Promise((r) => setTimeout(r, 50));
        // the repair policy's words (other warnings, e.g. a capacity note, are not the policy's)
        return { state, printed: warned.filter((m) => m.startsWith("repair (")) };
    } finally {
        commandStdout.clear();
    }
}

/** `rdmakit repair --dry-run --out` and `rdmakit status --out` on that state, as another checkout reads it. */
async function dryRun(state: OperatingState): Promise<{ repair: string; status: string; code: number }> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-up-"));
    try {
        writeStateFile(state, dir);
        const r = await runRepair({ out: dir, dryRun: true });
        assert.equal(r.code, 0, r.stderr);
        const s = runStatus({ out: dir });
        return { repair: r.stdout ?? "", status: s.stdout ?? "", code: s.code };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

const failing = (names: string[], persistence: "persistent" | "transient"): ValidationResult => ({
    pass: false, busbwGBps: 350, sizeBytes: 1 << 30, slowNodes: [], failedNodes: [], at: "2026-12-05T01:00:00.000Z",
    health: names.map((node, i) => i === 1
        ? { node, verdict: "failing" as const, findings: [{ component: "xid", message: "Xid 79: GPU has fallen off the bus", evidence: "NVRM: Xid (PCI:0000:53:00): 79", persistence }] }
        : { node, verdict: "healthy" as const, findings: [] }),
});

test("replace, a persistent finding: pulumi up prints the decision rdmakit repair --dry-run prints from its state, and how to carry it out", async () => {
    const names = planCluster(parseClusterSpec(example("aws-p5.yaml"))).validation.hostNames;
    const { state, printed } = await up(example("aws-p5.yaml", { repair: "replace" }), failing(names, "persistent"));
    assert.equal(state.repair, "replace");
    const d = await dryRun(state);
    assert.equal(printed.length, 1, printed.join("\n---\n"));
    assert.ok(printed[0].startsWith(d.repair), `pulumi up:\n${printed[0]}\nrepair --dry-run:\n${d.repair}`);
    assert.equal(printed[0].slice(d.repair.length), `carry it out: rdmakit repair --stack test --yes (or look first: rdmakit repair --stack test --dry-run)\n`);
    assert.match(d.repair, new RegExp(`replace ${names[1]}: health failing; drain, mark ${IDS[1]} Unhealthy in Auto Scaling group \\S+ \\(autoscaling:SetInstanceHealth\\)`));
    assert.ok(d.status.includes(d.repair.trimEnd()), "rdmakit status shows the same decision");
    assert.equal(d.code, 1);
});

test("replace, a transient finding: neither pulumi up nor repair --dry-run replaces; both say why", async () => {
    const names = planCluster(parseClusterSpec(example("aws-p5.yaml"))).validation.hostNames;
    const { state, printed } = await up(example("aws-p5.yaml", { repair: "replace" }), failing(names, "transient"));
    const d = await dryRun(state);
    assert.ok(printed[0].startsWith(d.repair));
    assert.doesNotMatch(d.repair, /replace \S+:/);
    assert.match(d.repair, new RegExp(`(drain|report) +${names[1]}: health failing`));
});

test("no cluster.repair: drain where Slurm runs (the aws example has it), report where no scheduler does; nothing failing prints nothing", async () => {
    const slurm = await up(example("aws-p5.yaml"), { pass: true, busbwGBps: 360, sizeBytes: 1 << 30, slowNodes: [] });
    assert.equal(slurm.state.scheduler.type, "slurm");
    assert.equal(slurm.state.repair, "drain");
    assert.deepEqual(slurm.printed, []);
    const plain = example("aws-p5.yaml", { scheduler: { type: "none" } });
    const none = await up(plain, failing(planCluster(parseClusterSpec(plain)).validation.hostNames, "persistent"));
    assert.equal(none.state.scheduler.type, "none");
    assert.equal(none.state.repair, "report");
    const d = await dryRun(none.state);
    assert.equal(none.printed.join(""), d.repair, "report only: nothing to carry out");
});
