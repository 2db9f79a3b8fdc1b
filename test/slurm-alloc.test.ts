// What a job gets on a node the kit configured: Debian 12's real slurmctld and slurmd 22.05.8 on this machine, with
// the roce-h100 example's rendered slurm.conf and gres.conf (test/slurm/slurm-node-run.sh; .ci/run installs slurmctld,
// slurmd, munge). Only what a test machine cannot have is replaced: this machine is controller and node, jobs are
// tracked by process (no cgroup delegation here), the health program and task prolog are not installed, and slurmd
// reports the node line's figures (SlurmdParameters=config_overrides). Bound: about 15 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { defCpuPerGpu, NOT_VALIDATED_REASON, slurmFiles } from "../components/slurm/render";
import type { SlurmPlan } from "../components/plan/scheduler";

const ROOT = path.resolve(__dirname, "..");
const example = (name: string) => (parse(fs.readFileSync(path.join(ROOT, "examples", `${name}.yaml`), "utf8")) as { config: Record<string, any> }).config["rdmakit:cluster"];

test("DefCpuPerGPU: the node's cores shared over its GPUs, whole cores, none without GPUs or with fewer cores than GPUs", () => {
    const s = (cpus: number, threadsPerCore: number | undefined, gpus: number) => ({ node: { cpus, threadsPerCore, gpus } }) as unknown as SlurmPlan;
    assert.equal(defCpuPerGpu(s(224, 2, 8)), 28);
    assert.equal(defCpuPerGpu(s(192, 2, 8)), 24);
    // 56 CPUs of two threads over 8 GPUs: 3 cores each (6 CPUs), never 7 (4 cores: 32 cores for 8 GPUs on a 28-core node)
    assert.equal(defCpuPerGpu(s(56, 2, 8)), 6);
    // CPUs alone on the line (Azure's catalog): each CPU is a core to Slurm
    assert.equal(defCpuPerGpu(s(96, undefined, 8)), 12);
    assert.equal(defCpuPerGpu(s(96, 2, 0)), 0);
    assert.equal(defCpuPerGpu(s(8, 2, 8)), 0);
    const plan = planCluster(parseClusterSpec(example("roce-h100")));
    assert.match(slurmFiles(plan)["slurm.conf"], /^DefCpuPerGPU=28$/m);
    const none = planCluster(parseClusterSpec({ ...example("roce-h100"), scheduler: { ...example("roce-h100").scheduler, node: { cpus: 4, sockets: 1, coresPerSocket: 2, threadsPerCore: 2, realMemory: 8192 } } }));
    assert.doesNotMatch(slurmFiles(none)["slurm.conf"], /DefCpuPerGPU/);
});

test("a node drained before its first slurmd start registers drained; a job asking for GPUs gets their share of the node's CPUs; a slurmctld restart keeps a resumed node in and an operator's reason (real slurmctld/slurmd)", { timeout: 90_000 }, () => {
    try {
        execFileSync("slurmd", ["-V"], { stdio: "pipe" });
    } catch {
        assert.fail("slurmd is not installed: .ci/run installs slurmctld slurmd munge libpmix2 (README's test command)");
    }
    const plan = planCluster(parseClusterSpec(example("roce-h100")));
    const s = plan.scheduler as SlurmPlan;
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "slurm-alloc-"));
    try {
        const port = 20000 + Math.floor(Math.random() * 9000);
        const files = slurmFiles(plan, undefined, {
            controllerHost: "localhost", slurmctldPort: port, slurmUser: "root", mungeSocket: path.join(dir, "munge/sock"),
            paths: { stateSave: path.join(dir, "state"), slurmdSpool: path.join(dir, "spool"), ctldPid: path.join(dir, "ctld.pid"), slurmdPid: path.join(dir, "d.pid"), ctldLog: path.join(dir, "ctld.file.log"), slurmdLog: path.join(dir, "d.file.log") },
        });
        const node = s.nodeNames[0];
        const line = files["slurm.conf"].split("\n").find((l) => l.startsWith("NodeName="))!;
        const conf = files["slurm.conf"]
            .replace(/^SlurmdPort=.*$/m, `SlurmdPort=${port + 1}`)
            .replace(/^ProctrackType=.*$/m, "ProctrackType=proctrack/linuxproc")
            .replace(/^TaskPlugin=.*$/m, "TaskPlugin=task/none")
            .replace(/^(HealthCheck\w+|TaskProlog|TopologyPlugin)=.*\n/gm, "")
            .replace(line, line.replace(/^NodeName=\S+ NodeAddr=\S+/, `NodeName=${node} NodeAddr=127.0.0.1`)) + "SlurmdParameters=config_overrides\n";
        // no State on the line: the saved state wins at every slurmctld start
        assert.match(conf, new RegExp(`^NodeName=${node} NodeAddr=127\\.0\\.0\\.1 CPUs=224 .*Gres=gpu:8$`, "m"));
        fs.writeFileSync(path.join(dir, "slurm.conf"), conf);
        fs.writeFileSync(path.join(dir, "gres.conf"), files["gres.conf"].replace("/dev/nvidia", path.join(dir, "dev/nvidia")));
        fs.writeFileSync(path.join(dir, "cgroup.conf"), files["cgroup.conf"]);
        fs.writeFileSync(path.join(dir, "gpus"), "1\n2\n8\n");
        fs.writeFileSync(path.join(dir, "reason"), NOT_VALIDATED_REASON);
        try {
            execFileSync("timeout", ["80", path.join(ROOT, "test/slurm/slurm-node-run.sh"), dir, node], { stdio: "pipe" });
        } catch (e) {
            assert.fail(`slurm-node-run.sh: ${(e as { stderr?: Buffer }).stderr?.toString() ?? e}`);
        }
        const out = (f: string) => fs.readFileSync(path.join(dir, "out", f), "utf8");
        // --gres=gpu:N with one task and no CPUs named: N x DefCpuPerGPU CPUs, the whole node for 8 (one core without it)
        const per = defCpuPerGpu(s);
        assert.equal(out("alloc"), [1, 2, 8].map((g) => `gpus=${g} cpus=${g * per}\n`).join(""));
        assert.equal(8 * per, s.node.cpus);
        // before any slurmd the node is slurmctld's name only, undrained; the role drains it before its slurmd first
        // starts (tasks/predrain.yml), and it registers drained: no job reaches it before the validation gate
        assert.match(out("before-slurmd"), new RegExp(`^${node}\\|(unk|down)\\*?\\|`));
        assert.doesNotMatch(out("before-slurmd"), /drain/);
        assert.match(out("predrained"), new RegExp(`^${node}\\|drain\\*?\\|${NOT_VALIDATED_REASON}\n$`));
        assert.equal(out("registered"), `${node}|drain|${NOT_VALIDATED_REASON}\n`);
        assert.equal(out("before-restart"), `${node}|idle|none\n`);
        // a line of no State takes its node's state from the state file at every slurmctld start
        // (src/slurmctld/node_mgr.c load_all_node_state, the IS_NODE_UNKNOWN(node_ptr) branch, slurm-22-05-8-1 ..
        // slurm-25-11-7-1; slurm.conf(5) State): the resumed node stays in after a restart ...
        assert.equal(out("after-restart"), `${node}|idle|none\n`);
        // ... and an operator's drain keeps its reason (the saved one, as the line gives none)
        assert.equal(out("operator-drain"), `${node}|drain|bad DIMM, RMA\n`);
        assert.equal(out("operator-after-restart"), `${node}|drain|bad DIMM, RMA\n`);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
