/**
 * cluster.validation.maxFailedNodes, the pure parts (components/validate/select.ts): which nodes fail, the rule that
 * leaves them out or stops, the variables the rest of the run takes (mpirun's and srun's launches filled in for the
 * others, pair rounds of the others), the spec's bound, and the report naming the left-out node. Offline: seconds (loading the plan).
 * The playbook run itself: test/validate-script.test.ts "maxFailedNodes ...".
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { validationVars } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { dropOverride, failedNodes, selectMain, selectNodes, unavailableNodes } from "../components/validate/select";
import { fillNp } from "../components/validate/commands";
import { fillSrunNodes } from "../components/validate/srun";
import { runNcclReport } from "../components/validate/cli";
import { gateNodes } from "../components/slurm/gate";
import type { NodeHealth } from "../components/health/types";
import type { PreflightReport } from "../components/validate/preflight";

const ROOT = path.resolve(__dirname, "..");

function p5(nodes: number, validation: Record<string, unknown> = {}, extra: Record<string, unknown> = {}) {
    const raw = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"];
    return { ...raw, nodes, validation: { ...raw.validation, ...validation }, ...extra };
}

const ok = (host: string) => ({ host, checks: [{ check: "memlock", expected: "unlimited", seen: "unlimited", ok: true }] });
const healthy = (node: string): NodeHealth => ({ node, verdict: "healthy", findings: [], notChecked: [], unreadable: [], notes: [] });

test("the spec: maxFailedNodes defaults to 0 and must leave two validated nodes for the all-node runs", () => {
    assert.equal(parseClusterSpec(p5(4)).validation.maxFailedNodes, 0);
    assert.equal(planCluster(parseClusterSpec(p5(4, { maxFailedNodes: 2 }))).validation.maxFailedNodes, 2);
    assert.throws(() => parseClusterSpec(p5(4, { maxFailedNodes: 3 })), (e: Error) =>
        /cluster\.validation\.maxFailedNodes/.test(e.message) && /3/.test(e.message) && /0 to 2/.test(e.message));
    // counted after cluster.ansible.exclude: 4 nodes, one excluded, leave at most 1
    assert.throws(() => parseClusterSpec(p5(4, { maxFailedNodes: 2 }, { ansible: { exclude: ["p5-demo-003"] } })), /0 to 1/);
    assert.throws(() => parseClusterSpec(p5(2, { maxFailedNodes: 1 })), /fewer than three validated nodes/);
    assert.throws(() => parseClusterSpec(p5(4, { maxFailedNodes: -1 })), /maxFailedNodes/);
});

test("failed nodes: a failed check, a missing result, a health grade other than healthy; each with what it failed", () => {
    const pre: PreflightReport = {
        nodes: [ok("a"), { host: "b", checks: [{ check: "gpu-count", expected: "8 GPUs", seen: "7 GPUs", ok: false }] }, ok("d")],
        badNodes: ["b"],
    };
    const sick: NodeHealth = {
        ...healthy("d"), verdict: "failing",
        findings: [{ component: "xid", message: "Xid 79 (GPU has fallen off the bus) on 0000:18:00.0", persistence: "persistent" } as NodeHealth["findings"][number]],
    };
    const failed = failedNodes(["a", "b", "c", "d"], pre, [healthy("a"), healthy("b"), sick]);
    assert.deepEqual(failed, [
        { node: "b", kind: "preflight", why: "preflight gpu-count: expected 8 GPUs; seen 7 GPUs" },
        { node: "c", kind: "preflight", why: "preflight: no result (its per-node plays did not finish)" },
        { node: "d", kind: "health", why: "health xid: Xid 79 (GPU has fallen off the bus) on 0000:18:00.0" },
    ]);
    // the rule
    assert.deepEqual(selectNodes([], 0), { action: "all" });
    assert.deepEqual(selectNodes(failed, 3), { action: "drop", dropped: failed });
    assert.equal(selectNodes(failed, 2).action, "stop", "more than the tolerance with a failed preflight: stop, as without one");
    assert.equal(selectNodes(failed.slice(2), 0).action, "all", "failed health alone, beyond the tolerance: graded with the run, as without one");
});

test("the variables for the others: mpirun's rank count and hostfile, srun's node list, pair rounds; the incast off", () => {
    const plan = planCluster(parseClusterSpec(p5(5, { maxFailedNodes: 2 }, {
        scheduler: { type: "slurm", controller: { name: "head01" } },
    })));
    const args = validationArgsFromPlan(plan, "dev");
    const ips = ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4", "10.0.0.5"];
    const vars = validationVars(args, ips, "nccl");
    const t = vars.nccl_validate_drop_templates!;
    // one source: the templates filled for every node are the launches the plan renders
    assert.equal(fillNp(t.fixed_cmd, 40), vars.nccl_validate_all_fixed_cmd);
    assert.equal(fillNp(t.sweep_cmd, 40), vars.nccl_validate_all_sweep_cmd);
    assert.equal(fillSrunNodes(t.srun_fixed_cmd!, args.hosts), vars.nccl_validate_slurm!.fixed_cmd);
    assert.equal(fillSrunNodes(t.srun_sweep_cmd!, args.hosts), vars.nccl_validate_slurm!.sweep_cmd);

    const [, second, , fourth] = args.hosts;
    const o = dropOverride(vars, [second, fourth]);
    assert.deepEqual(o.nccl_validate_dropped, [second, fourth]);
    assert.deepEqual(o.nccl_validate_hosts.map((h) => h.address), ["10.0.0.1", "10.0.0.3", "10.0.0.5"]);
    assert.match(o.nccl_validate_all_fixed_cmd, / -np 24 --hostfile /);
    assert.match(o.nccl_validate_all_sweep_cmd, / -np 24 --hostfile /);
    const others = args.hosts.filter((h) => h !== second && h !== fourth);
    assert.ok(o.nccl_validate_slurm!.fixed_cmd.includes(` --nodelist=${others.join(",")} --nodes=3 `), o.nccl_validate_slurm!.fixed_cmd);
    assert.ok(o.nccl_validate_slurm!.sweep_cmd.includes(` --nodelist=${others.join(",")} --nodes=3 `));
    assert.equal(o.nccl_validate_slurm!.nodes, vars.nccl_validate_slurm!.nodes, "the reservation still holds every node until the gate");
    for (const round of o.nccl_validate_pair_rounds) for (const [a, b] of round) assert.ok(a < others.length && b < others.length && a !== b);
    assert.equal(o.nccl_validate_incast, null);
    // without a tolerance and without Slurm the variables carry no templates, and nothing can be left out; under Slurm
    // they do whatever the tolerance (the nodes Slurm cannot give the run are left out: unavailableNodes)
    const none = validationVars(validationArgsFromPlan(planCluster(parseClusterSpec(p5(5, {}, { scheduler: { type: "none" } }))), "dev"), ips, "nccl");
    assert.equal(none.nccl_validate_drop_templates, undefined);
    assert.throws(() => dropOverride(none, [second]), /nccl_validate_drop_templates/);
    const slurmOnly = validationVars(validationArgsFromPlan(planCluster(parseClusterSpec(p5(5))), "dev"), ips, "nccl");
    assert.ok(slurmOnly.nccl_validate_drop_templates?.srun_fixed_cmd?.includes("--nodelist=@NODELIST@"));
});

test("select.ts as the script runs it: writes the override within the tolerance, stops beyond it, refuses a bad input", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-select-"));
    try {
        const plan = planCluster(parseClusterSpec(p5(3, { maxFailedNodes: 1 })));
        const args = validationArgsFromPlan(plan, "dev");
        const varsFile = path.join(dir, "vars.json");
        fs.writeFileSync(varsFile, JSON.stringify(validationVars(args, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "nccl")));
        const pre = path.join(dir, "preflight");
        fs.mkdirSync(pre);
        const [a, b, c] = args.hosts;
        for (const h of [a, b]) fs.writeFileSync(path.join(pre, `${h}.json`), JSON.stringify(ok(h)));
        // what a node writes may say anything: one line of it, clipped
        fs.writeFileSync(path.join(pre, `${c}.json`), JSON.stringify({ host: c, checks: [{ check: "memlock", expected: "unlimited", seen: "8192\n\u001b[2Jx".padEnd(400, "y"), ok: false }] }));
        const out = path.join(dir, "override.json");
        const lines: string[] = [];
        assert.equal(selectMain([varsFile, pre, path.join(dir, "health"), out], { RDMAKIT_MAX_FAILED_NODES: "1" }, (l) => lines.push(l)), 0);
        assert.deepEqual(JSON.parse(fs.readFileSync(out, "utf8")).nccl_validate_dropped, [c]);
        assert.equal(lines.length, 1);
        assert.match(lines[0], new RegExp(`^left out of the all-node runs \\(cluster.validation.maxFailedNodes 1\\): ${c}: preflight memlock: expected unlimited; seen 8192  \\[2Jxy+$`));
        assert.ok(lines[0].length < 320);

        // the report: the left-out node named with its check, the all-node logs graded as runs of the others
        const report = runNcclReport([], { preflight: pre, dropped: out, fabric: "efa", nodes: "3", gpusPerNode: "8" });
        assert.equal(report.code, 0, report.stdout + report.stderr);
        assert.match(report.stdout, new RegExp(`left out of the all-node runs \\(cluster.validation.maxFailedNodes\\): 1 node\\(s\\)`));
        assert.match(report.stdout, new RegExp(`out  preflight: 2 of 3 node\\(s\\) pass; bad node\\(s\\): ${c}`));
        assert.equal(runNcclReport([], { preflight: pre, dropped: out, fabric: "efa", nodes: "2", gpusPerNode: "8" }).code, 2, "fewer than two left");
        // without --dropped the same results fail the report
        assert.equal(runNcclReport([], { preflight: pre }).code, 1);

        fs.rmSync(out);
        lines.length = 0;
        fs.rmSync(path.join(pre, `${b}.json`));
        assert.equal(selectMain([varsFile, pre, path.join(dir, "health"), out], { RDMAKIT_MAX_FAILED_NODES: "1" }, (l) => lines.push(l)), 1);
        assert.ok(!fs.existsSync(out));
        assert.match(lines.join("\n"), /2 node\(s\) failed, more than cluster.validation.maxFailedNodes 1: stopping before nccl-tests/);
        assert.equal(selectMain([varsFile, pre, "h", out], { RDMAKIT_MAX_FAILED_NODES: "x" }, () => undefined), 2);
        assert.equal(selectMain([path.join(dir, "nope.json"), pre, "h", out], { RDMAKIT_MAX_FAILED_NODES: "1" }, () => undefined), 2);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

// `sinfo -h -R -o '%n|%t|%E'` lines as the head node prints them, constructed from sinfo(1) (-R: "reasons nodes are in
// the down, drained, fail or failing state"; %t the compact state with its NODE STATE CODES suffix; %E the reason)
test("under Slurm the nodes it cannot give the run (an operator's drain, down, not responding) are left out whatever the tolerance; rdmakit's own drains are not", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-select-slurm-"));
    try {
        const plan = planCluster(parseClusterSpec(p5(4)));
        const args = validationArgsFromPlan(plan, "dev");
        const [a, b, c, d] = args.hosts;
        assert.deepEqual(unavailableNodes([
            `${a}|drain$|rdmakit: not validated yet`, // rdmakit's drain inside the validation's own MAINT reservation: resumed by the hold
            `${b}|drain|operator: PSU swap`, `${c}|drng|rdmakit health: xid Xid 79`, `${d}|down*|Not responding`,
            "other-host|down|not ours", "garbage line", `${a}|drain|second line for a node: ignored`,
        ].join("\n"), args.hosts).map((n) => [n.node, n.why]), [[b, "Slurm: drain, operator: PSU swap"], [d, "Slurm: down*, Not responding"]]);
        assert.deepEqual(unavailableNodes(`${c}|drain*|rdmakit: not validated yet\n${a}|fail|rdmakit: x\n`, args.hosts).map((n) => n.node), [a, c]);
        // a replaced host DOWN with rdmakit's reason whose slurmd answers: the hold resumes it (not left out); not answering: out
        assert.deepEqual(unavailableNodes(`${b}|down|rdmakit: not validated yet\n${d}|down*|rdmakit: not validated yet\n`, args.hosts).map((n) => n.node), [d]);

        const varsFile = path.join(dir, "vars.json");
        fs.writeFileSync(varsFile, JSON.stringify(validationVars(args, ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"], "nccl")));
        const states = path.join(dir, "sinfo.txt");
        fs.writeFileSync(states, `${b}|drain|operator: PSU swap\n${d}|down*|Not responding\n${c}|drain|rdmakit: not validated yet\n`);
        const out = path.join(dir, "override.json");
        const lines: string[] = [];
        // no tolerance (0): only what Slurm says leaves nodes out; the nodes' own results are not read (an unreadable
        // one left by the per-node plays is the report's to refuse, as without Slurm)
        const early = path.join(dir, "early-preflight");
        fs.mkdirSync(early);
        fs.writeFileSync(path.join(early, `${a}.json`), "{not json");
        assert.equal(selectMain([varsFile, early, path.join(dir, "health"), out], { RDMAKIT_SLURM_STATES: states }, (l) => lines.push(l)), 0);
        const o = JSON.parse(fs.readFileSync(out, "utf8"));
        assert.deepEqual(o.nccl_validate_dropped, [b, d]);
        assert.deepEqual(o.nccl_validate_dropped_why, { [b]: "Slurm: drain, operator: PSU swap", [d]: "Slurm: down*, Not responding" });
        assert.ok(o.nccl_validate_slurm.fixed_cmd.includes(` --nodelist=${[a, c].join(",")} --nodes=2 `), o.nccl_validate_slurm.fixed_cmd);
        assert.deepEqual(lines, [
            `left out of the all-node runs (Slurm cannot give it to the run): ${b}: Slurm: drain, operator: PSU swap`,
            `left out of the all-node runs (Slurm cannot give it to the run): ${d}: Slurm: down*, Not responding`,
        ]);
        // the report names them with what Slurm said; the gate keeps them out with it (an operator's drain keeps its own)
        const pre = path.join(dir, "preflight");
        fs.mkdirSync(pre);
        for (const h of [a, c]) fs.writeFileSync(path.join(pre, `${h}.json`), JSON.stringify(ok(h)));
        const report = runNcclReport([], { preflight: pre, dropped: out, fabric: "efa", nodes: "4", gpusPerNode: "8" });
        assert.equal(report.code, 0, report.stdout + report.stderr);
        assert.match(report.stdout, /left out of the all-node runs \(Slurm cannot give them to the run\): 2 node\(s\)/);
        assert.ok(report.stdout.includes(`    ${b}: Slurm: drain, operator: PSU swap\n`), report.stdout);
        const gate = gateNodes({ nodes: args.hosts, preflight: [ok(a), ok(c)], allNodes: { pass: true }, leftOut: new Map([[b, "Slurm: drain, operator: PSU swap"]]) });
        assert.deepEqual(gate.map((n) => [n.name, n.ok, n.why]), [[a, true, undefined], [b, false, "left out of the validation (Slurm: drain, operator: PSU swap)"],
            [c, true, undefined], [d, false, "no preflight result from this node"]]);
        // fewer than two left: stopped before nccl-tests
        fs.writeFileSync(states, `${b}|drain|operator\n${c}|down|x\n${d}|maint|y\n`);
        lines.length = 0;
        fs.rmSync(out);
        assert.equal(selectMain([varsFile, pre, path.join(dir, "health"), out], { RDMAKIT_SLURM_STATES: states }, (l) => lines.push(l)), 1);
        assert.match(lines.join("\n"), /3 of 4 node\(s\) left out .*: fewer than two remain for the all-node runs; stopping before nccl-tests/);
        assert.ok(!fs.existsSync(out));
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
