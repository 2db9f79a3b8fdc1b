/**
 * Slurm's validation gate, offline (no host): which nodes join the partition and with which drain reason
 * (components/slurm/gate.ts gateNodes/gateVars), as `rdmakit nccl-report --slurm-gate` decides it from a published
 * two-node nccl-tests log (test/fixtures/nccl-ref 01, 2x p4d over EFA) and per-node preflight results; the srun launch
 * of the all-node runs (components/validate/srun.ts) and its variables; the gate line the component reads back.
 * The gate on a real slurmctld, and the srun launch across two real slurmd: test/hosts/slurm.ts. Runs in about 10 s.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawnSync } from "child_process";
import { gateNodes, gateVars, VALIDATION_RESERVATION } from "../components/slurm/gate";
import { runNcclReport, SLURM_GATE_FILE } from "../components/validate/cli";
import { parseGateLine, validateArgs, validationVars, type ValidationRunArgs } from "../components/validate/component";
import { srunCommand } from "../components/validate/srun";

const ROOT = path.resolve(__dirname, "..");
const LOG = path.join(ROOT, "test", "fixtures", "nccl-ref", "01-efa-p4d-eks-allreduce-oldformat.log");
// the published run's shape: 2 nodes x 8 GPUs over EFA, 43.8 GB/s at 4 GiB
const EXPECT = JSON.stringify({ all: { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa", requireGdr: true, source: "test" } });

/** A run folder: the all-node log as validate.yml fetches it, each node's preflight result as main.yml writes it. */
function runDir(preflight: Record<string, Array<{ check: string; ok: boolean; seen: string }>>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-gate-"));
    fs.mkdirSync(path.join(dir, "nccl"));
    fs.mkdirSync(path.join(dir, "preflight"));
    fs.copyFileSync(LOG, path.join(dir, "nccl", "all-fixed.log"));
    for (const [host, checks] of Object.entries(preflight)) {
        fs.writeFileSync(path.join(dir, "preflight", `${host}.json`), JSON.stringify({ host, checks: checks.map((c) => ({ expected: "x", ...c })) }));
    }
    fs.writeFileSync(path.join(dir, "nodes.json"), JSON.stringify({ nccl_validate_hosts: [{ name: "gpu-a", address: "10.0.0.1" }, { name: "gpu-b", address: "10.0.0.2" }] }));
    return dir;
}

function report(dir: string, extra: Record<string, string> = {}) {
    return runNcclReport([path.join(dir, "nccl", "all-fixed.log")], {
        expect: EXPECT, fabric: "efa", nodes: "2", gpusPerNode: "8", preflight: path.join(dir, "preflight"), out: dir,
        slurmGate: path.join(dir, "nodes.json"), ...extra,
    });
}

test("nccl-report --slurm-gate: a node failing its preflight is drained with the check named, the other joins; the report names the launcher", () => {
    const ok = { check: "memlock", ok: true, seen: "unlimited" };
    const dir = runDir({ "gpu-a": [ok], "gpu-b": [{ check: "gpu-count", ok: true, seen: "8 GPUs" }, { check: "memlock", ok: false, seen: "8192" }] });
    const r = report(dir, { launcher: "srun --mpi=pmix from head01" });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^ {2}ok {3}all-fixed\.log: all_reduce_perf \(16 ranks on 2 nodes\)/m);
    assert.match(r.stdout, /all-node run launched by: srun --mpi=pmix from head01/);
    assert.match(r.stdout, /Slurm gate: 1 of 2 node\(s\) join the partition; drained: 1\n {4}drain gpu-b: preflight memlock: seen 8192/);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, SLURM_GATE_FILE), "utf8")), {
        slurm_gate_resume: ["gpu-a"], slurm_gate_drain: [{ node: "gpu-b", reason: "rdmakit: preflight memlock: seen 8192" }],
        slurm_gate_reservation: VALIDATION_RESERVATION,
    });
    assert.equal(JSON.parse(fs.readFileSync(path.join(dir, "nccl-report.json"), "utf8")).launcher, "srun --mpi=pmix from head01");
});

test("nccl-report --slurm-gate: every check passed, both nodes join; the all-node run failing keeps both out", () => {
    const ok = [{ check: "memlock", ok: true, seen: "unlimited" }];
    const pass = runDir({ "gpu-a": ok, "gpu-b": ok });
    assert.equal(report(pass).code, 0);
    assert.deepEqual(JSON.parse(fs.readFileSync(path.join(pass, SLURM_GATE_FILE), "utf8")).slurm_gate_resume, ["gpu-a", "gpu-b"]);
    // the same published run against a floor it did not reach (50 GB/s): no node blamed, none joins
    const slow = runDir({ "gpu-a": ok, "gpu-b": ok });
    const r = report(slow, { expect: EXPECT.replace('"minBusbwGBps":40', '"minBusbwGBps":50') });
    assert.equal(r.code, 1);
    const drain = JSON.parse(fs.readFileSync(path.join(slow, SLURM_GATE_FILE), "utf8")).slurm_gate_drain as Array<{ node: string; reason: string }>;
    assert.deepEqual(drain.map((d) => d.node), ["gpu-a", "gpu-b"]);
    for (const d of drain) assert.match(d.reason, /^rdmakit: the all-node nccl-tests run failed: /);
});

test("nccl-report --slurm-gate refuses bad input before writing anything: no --out, a node list that is not one, a launcher with shell characters", () => {
    const dir = runDir({});
    assert.match(runNcclReport([path.join(dir, "nccl", "all-fixed.log")], { expect: EXPECT, slurmGate: path.join(dir, "nodes.json") }).stderr, /--slurm-gate needs --out/);
    fs.writeFileSync(path.join(dir, "bad.json"), JSON.stringify(["gpu-a", "x;reboot"]));
    assert.match(report(dir, { slurmGate: path.join(dir, "bad.json") }).stderr, /"x;reboot" is not a node name/);
    const r = report(dir, { launcher: "srun $(reboot)" });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--launcher "srun \$\(reboot\)": allowed are letters, digits/);
    assert.ok(!fs.existsSync(path.join(dir, SLURM_GATE_FILE)));
});

test("gateNodes: the first failure is the reason, component first; missing results keep a node out", () => {
    const pre = (host: string) => ({ host, checks: [{ check: "memlock", ok: true, seen: "unlimited" }] });
    const nodes = ["n1", "n2", "n3", "n4", "n5", "n6"];
    const got = gateNodes({
        nodes, preflight: nodes.filter((n) => n !== "n6").map(pre),
        health: [{ node: "n2", verdict: "failing", findings: [{ component: "pcie", message: "GPU 3 at x8" }] }], healthBad: ["n2"],
        single: new Map([["n1", { pass: true }], ["n2", { pass: true }], ["n3", { pass: false, why: "busbw: 120 GB/s" }], ["n4", { pass: true }], ["n5", { pass: true }]]),
        slow: [{ host: "n4", reason: "31% below the others" }], suspects: [], allNodes: { pass: true },
    });
    assert.deepEqual(gateVars(got).slurm_gate_drain, [
        { node: "n2", reason: "rdmakit health: pcie GPU 3 at x8" },
        { node: "n3", reason: "rdmakit: nccl-tests single-node run failed: busbw: 120 GB/s" },
        { node: "n4", reason: "rdmakit: slow, 31% below the others" },
        { node: "n6", reason: "rdmakit: no preflight result from this node" },
    ]);
    assert.deepEqual(gateVars(got).slurm_gate_resume, ["n1", "n5"]);
    // the run stopped before the preflight results: nobody joins
    assert.ok(gateNodes({ nodes: ["n1"] }).every((n) => !n.ok && /no preflight results/.test(n.why!)));
    // a reason the scontrol argument and the plan file carry safely: no tab, newline, quote; at most 200 characters
    const [bad] = gateVars([{ name: "n1", ok: false, why: `health: xid "79"\tfallen\noff ${"x".repeat(300)}` }]).slurm_gate_drain;
    assert.ok(!/[\t\n"]/.test(bad.reason) && bad.reason.length === 200 && bad.reason.startsWith("rdmakit health: xid 79 fallen off"), bad.reason);
});

const ARGS: ValidationRunArgs = {
    stack: "dev", fabric: "aws-efa", hosts: ["gpu-001", "gpu-002", "gpu-003"], gpusPerNode: 8, ncclEnv: { FI_PROVIDER: "efa" },
    nccltestsDir: "/opt/nccl-tests/build", mpiHome: "/opt/amazon/openmpi", fixedBytes: 1 << 30, sweepMaxBytes: 1 << 30, timeoutSeconds: 1200,
    expectations: { all: { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa", requireGdr: true, source: "test" } },
    preflight: { gpus: 8, rdmaDevices: 32, gpudirect: "either", nvswitch: true },
    slurm: { head: "dev-head", partition: "gpu", mpi: "pmix" },
};

test("with Slurm the all-node runs are srun --mpi=pmix lines in the validation's reservation, the same test and environment as mpirun's", () => {
    const v = validationVars(ARGS, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "out/dev/nccl");
    const s = v.nccl_validate_slurm!;
    assert.equal(s.head, "dev-head");
    assert.equal(s.nodes, "gpu-[001-003]");
    assert.equal(s.launcher, "srun --mpi=pmix from dev-head");
    assert.match(s.fixed_cmd, /^timeout -k 30 1260 env .*FI_PROVIDER=efa .*NCCL_TESTS_MIN_BW=44\.444 .*srun --mpi=pmix --reservation=rdmakit-validate --partition=gpu '--nodelist=gpu-\[001-003\]' --nodes=3 --ntasks-per-node=8 --gres=gpu:8 --exclusive --cpu-bind=none --kill-on-bad-exit=1 --time=20 --job-name=rdmakit-validate \/opt\/nccl-tests\/build\/all_reduce_perf -b 1073741824 -e 1073741824 /);
    // the mpirun line runs the same binary with the same arguments
    assert.ok(v.nccl_validate_all_fixed_cmd.endsWith(s.fixed_cmd.slice(s.fixed_cmd.indexOf("/opt/nccl-tests/build/all_reduce_perf"))));
    assert.match(s.sweep_cmd, /all_reduce_perf -b 8 -e 1073741824 -f 2/);
    assert.equal(validationVars({ ...ARGS, slurm: undefined }, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "o").nccl_validate_slurm, undefined);
    assert.deepEqual(srunCommand({ slurm: ARGS.slurm!, nodes: ["a"], gpusPerNode: 1, env: {}, binary: "/x", args: [], timeoutSeconds: 1 }).argv.filter((a) => a.startsWith("--time")), ["--time=1"]);
});

test("validateArgs: the head node is no GPU node, partition and plugin are plain words", () => {
    const paths = (slurm: ValidationRunArgs["slurm"]) => validateArgs({ ...ARGS, slurm }).map((i) => i.path);
    assert.deepEqual(paths({ head: "gpu-001", partition: "gpu", mpi: "pmix" }), ["slurm.head"]);
    assert.deepEqual(paths({ head: "h;x", partition: "gpu main", mpi: "pmix --x" }), ["slurm.head", "slurm.partition", "slurm.mpi"]);
});

test("parseGateLine: the last gate line, node names and cleaned reasons only; none when the gate did not run", () => {
    assert.equal(parseGateLine("rdmakit-result: {}\n"), null);
    const line = `rdmakit-gate: ${JSON.stringify({ slurm_gate_resume: ["a", 3], slurm_gate_drain: [{ node: "b", reason: `x\u001b[31m${"y".repeat(300)}` }, { node: 1 }] })}`;
    const got = parseGateLine(`noise\n${line}\n`)!;
    assert.deepEqual(got.resumed, ["a"]);
    assert.equal(got.drained.length, 1);
    assert.ok(got.drained[0].reason.length === 200 && !got.drained[0].reason.includes("\u001b"));
    assert.equal(parseGateLine("rdmakit-gate: {not json"), null);
});

const GATE_SH = path.join(ROOT, "playbooks", "roles", "nccl_validate", "files", "slurm-gate.sh");
const RES_START = "2026-12-05T07:30:00";

/**
 * slurm-gate.sh with stand-ins for sinfo (printing `drained`, `node|reason timestamp|reason` as `-o '%n|%H|%E'` prints
 * them) and scontrol (logging each call; `show reservation` prints the reservation begun at RES_START when it exists).
 */
function gateScript(drained: string, plan: string, reservation = true): { code: number | null; calls: string[]; out: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-gatesh-"));
    fs.writeFileSync(path.join(dir, "drained"), drained);
    fs.writeFileSync(path.join(dir, "plan"), plan);
    fs.writeFileSync(path.join(dir, "sinfo"), `#!/bin/sh\ncat ${dir}/drained\n`, { mode: 0o755 });
    // the line as Slurm 22.05 prints it (src/api/reservation_info.c: "ReservationName=%s StartTime=%s EndTime=%s ...")
    const show = `echo 'ReservationName=${VALIDATION_RESERVATION} StartTime=${RES_START} EndTime=Unknown Duration=UNLIMITED'; exit 0`;
    fs.writeFileSync(path.join(dir, "scontrol"), `#!/bin/sh\nif [ "$1" = show ]; then ${reservation ? show : "exit 1"}; fi\n` +
        `for a in "$@"; do printf '[%s]' "$a"; done >>${dir}/calls; echo >>${dir}/calls\n`, { mode: 0o755 });
    const r = spawnSync("sh", [GATE_SH, VALIDATION_RESERVATION, path.join(dir, "plan")],
        { encoding: "utf8", env: { PATH: `${dir}:${process.env.PATH}` } });
    const calls = fs.existsSync(path.join(dir, "calls")) ? fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n") : [];
    fs.rmSync(dir, { recursive: true, force: true });
    return { code: r.status, calls, out: r.stdout };
}

test("slurm-gate.sh: resumes what rdmakit drained, drains the failed with the reason as one argument, keeps an operator's drain, ends the reservation", () => {
    // nothing drained now (the validation's reservation resumed them): the failed node is drained, no resume is needed
    const none = gateScript("", "resume\tgpu-a\ndrain\tgpu-b\trdmakit: preflight memlock: seen 8192\n");
    assert.equal(none.code, 0);
    assert.deepEqual(none.calls, ["[update][NodeName=gpu-b][State=DRAIN][Reason=rdmakit: preflight memlock: seen 8192]", "[delete][ReservationName=rdmakit-validate]"]);
    // drained by rdmakit (not validated yet) and by an operator: only rdmakit's come back
    const mixed = gateScript("gpu-a|2026-12-05T07:00:00|rdmakit: not validated yet\ngpu-b|2026-12-05T07:00:00|operator: cable swap\ngpu-c|2026-12-05T07:00:00|rdmakit health: pcie GPU 3 at x8\n",
        "resume\tgpu-a\nresume\tgpu-b\nresume\tgpu-c\ndrain\tgpu-d\trdmakit: slow, 31% below the others\n", false);
    assert.deepEqual(mixed.calls, ["[update][NodeName=gpu-a,gpu-c][State=RESUME]", "[update][NodeName=gpu-d][State=DRAIN][Reason=rdmakit: slow, 31% below the others]"]);
    assert.match(mixed.out, /kept \(drained by an operator\): gpu-b/);
});

// Found by the trust review (w9): a node's own preflight `seen` text reaches the drain reason, and slurm-gate.json is
// handed to Ansible as extra variables (-e @file), which Ansible templates when the gate's plan file is rendered on the
// controller: `{{ lookup(...) }}` in it ran a command on the controller (quotes are stripped, but Jinja needs none:
// `dict(id=1)|first` is the string "id"). source: docs.ansible.com playbook_guide/playbooks_advanced_syntax.html
// ("Unsafe or raw strings"); Jinja "Template Designer Documentation" (delimiters `{{`, `{%`, `{#`).
test("a node's preflight text carrying a Jinja payload is drained as text: the real slurm-gate.yml runs no lookup on the controller", (t) => {
    if (spawnSync("sh", ["-c", "command -v ansible-playbook"]).status !== 0) return t.skip("ansible-playbook is not installed: the gate's play was not run");
    const dir = runDir({});
    const marker = path.join(dir, "pwned");
    // `touch <marker>` without a quote: the command from an environment variable this test sets, its name from dict()
    const payload = "{{ lookup(dict(pipe=1)|first, lookup(dict(env=1)|first, dict(RDMAKIT_T9=1)|first)) }}";
    fs.writeFileSync(path.join(dir, "preflight", "gpu-b.json"), JSON.stringify({ host: "gpu-b", checks: [{ check: "memlock", expected: "unlimited", ok: false, seen: payload }] }));
    fs.writeFileSync(path.join(dir, "preflight", "gpu-a.json"), JSON.stringify({ host: "gpu-a", checks: [{ check: "memlock", expected: "unlimited", ok: true, seen: "unlimited" }] }));
    assert.equal(report(dir).code, 1);
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "sinfo"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
    fs.writeFileSync(path.join(bin, "scontrol"), `#!/bin/sh\nfor a in "$@"; do printf '[%s]' "$a"; done >>${dir}/calls; echo >>${dir}/calls\n`, { mode: 0o755 });
    const r = spawnSync("ansible-playbook", ["-i", "head01,", "-c", "local", path.join(ROOT, "playbooks", "slurm-gate.yml"),
        "-e", `@${path.join(dir, SLURM_GATE_FILE)}`, "-e", "slurm_gate_head=head01", "-e", `slurm_gate_applied_file=${path.join(dir, "applied")}`,
        "-e", `nccl_validate_remote_dir=${path.join(dir, "remote")}`, "-e", "ansible_user=root", "-e", `ansible_python_interpreter=${spawnSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).stdout.trim()}`],
    { encoding: "utf8", cwd: path.join(ROOT, "playbooks"), env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, RDMAKIT_T9: `touch ${marker}`, ANSIBLE_NOCOLOR: "1" } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    assert.ok(!fs.existsSync(marker), "the node's payload ran a command on the controller");
    const calls = fs.readFileSync(path.join(dir, "calls"), "utf8");
    assert.match(calls, /\[NodeName=gpu-b\]\[State=DRAIN\]\[Reason=rdmakit: preflight memlock: seen [^\]]*lookup\(dict\(pipe=1\)/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("slurm-gate.sh: a node rdmakit drained after the validation's reservation began (the health program, mid-run) stays drained", () => {
    // gpu-a: drained before the reservation (an earlier gate; the hold resumed it, so this is a stale line) comes back;
    // gpu-b: the health program drained it at 07:41, during the run, after the captures the gate judged: kept
    const drained = "gpu-a|2026-12-05T07:10:00|rdmakit: not validated yet\ngpu-b|2026-12-05T07:41:07|rdmakit health: xid Xid 79 on GPU 0000:9b:00\n";
    const g = gateScript(drained, "resume\tgpu-a\nresume\tgpu-b\n");
    assert.equal(g.code, 0);
    assert.deepEqual(g.calls, ["[update][NodeName=gpu-a][State=RESUME]", "[delete][ReservationName=rdmakit-validate]"]);
    assert.match(g.out, /kept \(drained during the validation: rdmakit health: xid Xid 79 on GPU 0000:9b:00\): gpu-b/);
    // without the reservation (gone already) there is no run to compare with: every rdmakit drain is resumed as before
    const gone = gateScript(drained, "resume\tgpu-a\nresume\tgpu-b\n", false);
    assert.deepEqual(gone.calls, ["[update][NodeName=gpu-a,gpu-b][State=RESUME]"]);
});
