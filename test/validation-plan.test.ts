/**
 * Plan → validation runs → grade, end to end and offline. For every bundled example and a p4d.24xlarge variant
 * (A100-40GB: the sweep is capped at 8 GiB by GPU memory), the playbook variables are built exactly as `pulumi up`
 * builds them (validationArgsFromPlan → validationVars), and every fixed-size run must hold the sizes the plan grades.
 * Then real published logs are graded against the plan's expectations the way VALIDATE_SCRIPT grades them
 * (nccl-report with the same --expect JSON and the playbook's log names): a healthy p5 node passes.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { planCluster, type FabricPlan } from "../components/plan";
import { pairRuns, renderHostfile, validationVars } from "../components/validate/component";
import { AZURE_HOPPER_BASELINE_TUNING, validationArgsFromPlan } from "../components/validate/fromPlan";
import { runNcclReport } from "../components/validate/cli";
import { planArtifacts } from "../components/artifacts";

const ROOT = path.resolve(__dirname, "..");
const REF = path.join(ROOT, "test", "fixtures", "nccl-ref");
const GiB = 1024 ** 3;

function cluster(example: string): any {
    return parseYaml(fs.readFileSync(path.join(ROOT, "examples", example), "utf8")).config["rdmakit:cluster"];
}

const cases: Array<{ name: string; raw: any }> = fs.readdirSync(path.join(ROOT, "examples"))
    .filter((f) => f.endsWith(".yaml")).sort()
    .map((f) => ({ name: f, raw: cluster(f) }));
{
    const p4d = cluster("aws-p5.yaml");
    p4d.aws.instanceType = "p4d.24xlarge";
    cases.push({ name: "aws-p5.yaml as p4d.24xlarge", raw: p4d });
}

/** The addresses mpirun would get: the hosts' own on bare metal, stand-ins on clouds (they decide no size). */
function addresses(plan: FabricPlan, raw: any): string[] {
    return plan.roce ? raw.roce.hosts.map((h: any) => h.address) : plan.validation.hostNames.map((_, i) => `10.0.1.${10 + i}`);
}

/** `-b X -e Y` of an nccl-tests command line. */
function sizes(cmd: string): { b: number; e: number } {
    const m = / -b (\d+) -e (\d+) /.exec(cmd);
    assert.ok(m, `no -b/-e in ${cmd}`);
    return { b: Number(m[1]), e: Number(m[2]) };
}

test("the bundled examples are all here (three fabrics)", () => {
    assert.deepEqual(cases.map((c) => c.name), ["aws-p5.yaml", "azure-h100.yaml", "roce-h100.yaml", "aws-p5.yaml as p4d.24xlarge"]);
});

for (const c of cases) {
    test(`${c.name}: every fixed run at plan.validation.fixedBytes, the sweep to plan.validation.maxBytes`, () => {
        const plan = planCluster(parseClusterSpec(c.raw));
        const v = plan.validation;
        const vars = validationVars(validationArgsFromPlan(plan, "dev"), addresses(plan, c.raw), "/out/dev/nccl");
        const F = v.fixedBytes;

        assert.ok(F >= v.singleNode.gradeFromBytes, `fixed ${F} < single-node grade size ${v.singleNode.gradeFromBytes}`);
        assert.ok(F >= v.allNodes.gradeFromBytes, `fixed ${F} < all-node grade size ${v.allNodes.gradeFromBytes}`);
        assert.ok(F <= v.maxBytes, `fixed ${F} > sweep max ${v.maxBytes}`);

        const fixed = [
            ["single", vars.nccl_validate_single_cmd],
            ["all-fixed", vars.nccl_validate_all_fixed_cmd],
            ["pair template", vars.nccl_validate_pair_cmd],
            ...pairRuns(vars).flat().map((p) => [p.log, p.cmd]),
        ];
        assert.ok(fixed.length >= 3 || plan.nodes.count < 3, "pairs are planned");
        for (const [what, cmd] of fixed) assert.deepEqual(sizes(cmd), { b: F, e: F }, what);

        const sweep = sizes(vars.nccl_validate_all_sweep_cmd);
        assert.deepEqual(sweep, { b: 8, e: v.maxBytes });
        // the sweep doubles from 8 (-f 2) while <= -e (NVIDIA/nccl-tests src/common.cu): its last size must be -e
        let last = 8;
        while (last * 2 <= sweep.e) last *= 2;
        assert.equal(last, v.maxBytes, "the sweep reaches maxBytes");
        assert.match(vars.nccl_validate_all_sweep_cmd, / -f 2 /);

        // the forced network and the plan's environment, each once; on the Hopper ND v5 sizes also Microsoft's tuning
        // of the baseline the all-node floor comes from (fromPlan.ts AZURE_HOPPER_BASELINE_TUNING)
        const hopper = /^Standard_ND96isrf?_H(?:100|200)_v5$/.test(plan.azure?.vmSize ?? "");
        if (plan.fabric === "azure-ib") assert.equal(hopper, plan.azure?.vmSize === "Standard_ND96isr_H100_v5" || /H200/.test(plan.azure?.vmSize ?? ""));
        const env = { ...plan.ncclEnv, ...(hopper ? AZURE_HOPPER_BASELINE_TUNING : {}), ...v.forcedNet };
        if (hopper) for (const kv of ["NCCL_MIN_NCHANNELS=32", "NCCL_PXN_DISABLE=1", "NCCL_IB_QPS_PER_CONNECTION=4"]) assert.ok(vars.nccl_validate_all_fixed_cmd.includes(` ${kv} `), kv);
        for (const [k, val] of Object.entries(env)) {
            const cmd = vars.nccl_validate_all_fixed_cmd;
            assert.equal(cmd.split(` -x ${k} `).length - 1, 1, `${k} exported once`);
            assert.ok(cmd.includes(`${k}=${val}`) || cmd.includes(`'${k}=${val}'`), `${k}=${val} set`);
        }
    });
}

test("p4d.24xlarge: A100-40GB caps the sweep and the fixed runs at 8 GiB", () => {
    const plan = planCluster(parseClusterSpec(cases[3].raw));
    assert.equal(plan.nodes.gpuModel, "A100-40GB");
    assert.equal(plan.validation.maxBytes, 8 * GiB);
    assert.equal(plan.validation.fixedBytes, 8 * GiB);
});

test("rdmakit plan writes the commands pulumi up runs (same arguments, same function)", () => {
    const raw = cluster("aws-p5.yaml");
    const spec = parseClusterSpec(raw);
    const plan = planCluster(spec);
    const art = planArtifacts({ stack: "aws-p5", spec, plan, resources: [], invokes: [], hasSecretKey: true });
    const vars = validationVars(validationArgsFromPlan(plan, "aws-p5"), plan.validation.hostNames.map((_, i) => `unknown-until-apply-${i}`), "/x");
    const text = art.files["nccl-commands.sh"];
    for (const k of ["nccl_validate_single_cmd", "nccl_validate_all_fixed_cmd", "nccl_validate_all_sweep_cmd"] as const) {
        assert.ok(text.split("\n").includes(vars[k]), `${k} in nccl-commands.sh`);
    }
    // every pair with its own addresses filled in, under the line naming it
    const pairs = pairRuns(vars).flat();
    assert.equal(pairs.length, 4);
    for (const p of pairs) assert.ok(text.includes(`# ${p.a} + ${p.b} -> ${p.log}\n${p.cmd}\n`), p.log);
    assert.ok(!text.includes("@PAIR_"), "no placeholder left");
    // what the old artifact missed: the all-node floor and the single-node run at the 16 GiB it is graded at
    assert.match(text, / NCCL_TESTS_MIN_BW=317\.333 /);
    assert.equal(art.files.hostfile, renderHostfile(vars));
    assert.equal(art.files.hostfile, plan.validation.hostNames.map((_, i) => `unknown-until-apply-${i} slots=8\n`).join(""));
    assert.ok(!art.checks.some((c) => !c.ok && c.mandatory), JSON.stringify(art.checks.filter((c) => !c.ok)));
});

/** nccl-report as VALIDATE_SCRIPT runs it: the playbook's log names, --expect with the plan's expectations. */
function gradeAsPulumiUp(plan: FabricPlan, logs: Record<string, string>) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-vplan-"));
    const files = Object.entries(logs).map(([name, ref]) => {
        fs.copyFileSync(path.join(REF, ref), path.join(dir, name));
        return path.join(dir, name);
    });
    const args = validationArgsFromPlan(plan, "dev");
    const expect = JSON.stringify({ all: args.expectations.all, single: args.expectations.single, pair: args.expectations.pair });
    try {
        return runNcclReport(files, { expect, resultLine: true });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("a healthy p5 node passes its single-node grade: log 05 (AWS Batch, 1 x p5, rows to 16 GiB)", () => {
    const plan = planCluster(parseClusterSpec(cluster("aws-p5.yaml")));
    assert.equal(plan.validation.singleNode.gradeFromBytes, 16 * GiB, "the single-node figure is published at 16 GiB");
    const host = plan.validation.hostNames[0];
    const r = gradeAsPulumiUp(plan, { [`single-${host}.log`]: "05-nvlink-p5-1node-awsbatch-allreduce.log" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /rdmakit-result: \{"pass":true/);
    // graded at 16 GiB, the size the run holds; at 8 GiB (the old fixed size) nothing would be graded
    assert.match(r.stdout, /17179869184|16 GiB/);
});

test("the same node fails when its log stops below the single-node grade size (what the old fixed size produced)", () => {
    // log 15 is a single-node run whose largest row is 8 GiB; against the p5 single-node expectation (from 16 GiB)
    // no row is graded, so it cannot pass: the plan's fixedBytes exists to avoid exactly this
    const plan = planCluster(parseClusterSpec(cluster("aws-p5.yaml")));
    const host = plan.validation.hostNames[0];
    const r = gradeAsPulumiUp(plan, { [`single-${host}.log`]: "15-nvswitch-dgx2-broadcast-oldformat.log" });
    assert.equal(r.code, 1, r.stdout);
    assert.match(r.stdout, /largest size is 8 GiB: nothing to grade/);
});

test("a healthy 2-node p5 cluster passes its all-node grade: log 06 (2 x p5 over EFA, rows to 16 GiB)", () => {
    const raw = cluster("aws-p5.yaml");
    raw.nodes = 2;
    const plan = planCluster(parseClusterSpec(raw));
    assert.ok(plan.validation.allNodes.gradeFromBytes <= 16 * GiB);
    const r = gradeAsPulumiUp(plan, { "all-fixed.log": "06-efa-p5-2node-tagged-fragments-allreduce.log" });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /rdmakit-result: \{"pass":true/);
});

test("a plan whose runs could not pass makes `rdmakit plan` fail a mandatory check instead of writing the commands", () => {
    const spec = parseClusterSpec(cluster("aws-p5.yaml"));
    const plan = planCluster(spec);
    // a sweep end the doubling from 8 bytes never reaches (e.g. cluster.validation.maxBytes: 12 GiB)
    plan.validation.maxBytes = 12 * GiB;
    plan.validation.fixedBytes = 12 * GiB;
    const art = planArtifacts({ stack: "aws-p5", spec, plan, resources: [], invokes: [], hasSecretKey: true });
    assert.equal(art.files["nccl-commands.sh"], undefined);
    const check = art.checks.find((c) => c.name === "the validation runs can be built from the plan");
    assert.deepEqual({ ok: check?.ok, mandatory: check?.mandatory }, { ok: false, mandatory: true });
    assert.match(check?.detail ?? "", /sweepMaxBytes: must be a power of two >= 8/);
});
