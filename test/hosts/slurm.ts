/**
 * Slurm on three Debian nspawn test hosts (test/hosts/testhost.sh): a head node (slc) and two nodes (sln1, sln2),
 * Debian 12's own slurmctld, slurmd and munge installed BY THE ROLE (playbooks/roles/slurm) through the node-local
 * path exactly as `pulumi up` runs it (test/fixtures/node-local-run.ts: the fan-out, the bundle, one session per host),
 * the hosts apt-get from the Debian mirror. One boot, several assertions:
 *  - the munge key, carried on each host's own session stdin (RDMAKIT_MUNGE_KEY), is /etc/munge/munge.key 0400
 *    munge:munge and the same on every host, its staged copy gone, and in no file on this machine after the run;
 *  - the nodes register drained ("rdmakit: not validated yet": each drains itself before its first slurmd start, the
 *    role's tasks/predrain.yml, as the node lines give no State, as the plan's) and join when the
 *    gate's commands (components/slurm/gate.ts) resume them: sinfo shows both idle; `srun -N2 hostname` runs on both; an MPI allreduce built against Debian's Open MPI
 *    runs across both with `srun --mpi=pmix_v4`; the task prolog's environment reaches the job step;
 *  - `scontrol show topology` shows the switches of topology.conf; gres: two gpu files per node accepted by slurmctld
 *    and slurmd, handed to a job as CUDA_VISIBLE_DEVICES;
 *  - validation through Slurm: the real preflight play on the nodes (the head left out), then validate.yml's all-node
 *    runs launched from the head by `srun --mpi=pmix` in the root-only reservation (a stand-in all_reduce_perf that
 *    runs only under a PMIx server prints a published two-node log: test/fixtures/nccl-ref 01), graded by the real
 *    nccl-report, which names the launcher and decides the gate; slurm-gate.yml drains both nodes with the preflight
 *    check named, ends the reservation, later resumes rdmakit's drains and keeps an operator's (about 150 s loaded);
 *  - a second run changes nothing;
 *  - a stand-in nvidia-smi printing a real failing capture (test/fixtures/health, V100 links 3 and 5 inactive) makes
 *    slurmd's HealthCheckProgram drain that node with the component in the reason, and the head's sinfo -R, read as
 *    `rdmakit check` reads it (playbooks/slurm-states.yml), shows it;
 *  - that node replaced by a fresh container under its name and let back in by the repair path (test/hosts/
 *    slurm-replace.ts; measured 100 s and 146 s of the scenario's 495 s and 621 s on a loaded 2-core machine).
 * Test-host deviations, each because a container cannot do it: all hosts share the host's network, so each slurmd
 * has its own port (NodeName Port=) and slurmctld another than 6817; no cgroup plugins (the containers' cgroup tree
 * is not Slurm's to split: proctrack/linuxproc, task/affinity); /home over NFS is off (no nfsd in a container); the
 * gpu files are character devices the test makes (1:3), not /dev/nvidia*.
 * Own loopback block 127.0.32.x and machine names slc, sln1, sln2: no other test uses them. Runs in test/ansible-hosts.test.ts beside the site.yml scenarios; measured 285 s before the teardown (hosts up 46 s, the role's first run ~170 s of apt installs), on a
 * loaded 2-core machine. The fabric is azure-ib only so
 * that no roce_host variables are needed: under --tags slurm, every role of the node-stack play still checks its arguments.
 */
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { promisify } from "node:util";
import { renderInventory } from "../../components/provision/inventory";
import { serveKeyLocally } from "../../components/provision/keysocket";
import { nodeLocalSetup, runNodeLocal } from "../fixtures/node-local-run";
import { freePort } from "../fixtures/ports";
import { SINFO_REASONS, VALIDATION_RESERVATION, formatDrainStates, gateCommands, gateVars, parseDrainStates } from "../../components/slurm/gate";
import { NOT_VALIDATED_REASON } from "../../components/slurm/render";
import { validationVars } from "../../components/validate/component";
import { runNcclReport, SLURM_GATE_FILE } from "../../components/validate/cli";
import { replacedNodeRejoins } from "./slurm-replace";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "..", "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
const CAPTURES = path.join(ROOT, "test", "fixtures", "health", "captures");
// a published two-node nccl-tests log (2x p4d.24xlarge over EFA, 16 ranks; test/fixtures/nccl-ref/SOURCES.md)
const PUBLISHED_LOG = path.join(ROOT, "test", "fixtures", "nccl-ref", "01-efa-p4d-eks-allreduce-oldformat.log");
// The stand-in for nccl-tests' all_reduce_perf on the nodes (no GPUs here): it refuses to run unless a PMIx server
// started it (PMIX_RANK, set by Slurm's PMIx plugin for every task), records where it ran, and rank 0 prints the
// published log, as the real binary's rank 0 prints the table.
const STAND_IN_ALL_REDUCE = `#!/bin/sh
[ -n "\${PMIX_RANK:-}" ] || { echo "not started by a PMIx server (srun --mpi=pmix)" >&2; exit 3; }
echo "$(hostname) rank=$PMIX_RANK of \${SLURM_NTASKS:-?} job=\${SLURM_JOB_ID:-?} NCCL_DEBUG=\${NCCL_DEBUG:-} $*" >>/var/lib/rdmakit-test/ranks.txt
if [ "$PMIX_RANK" = 0 ]; then cat /var/lib/rdmakit-test/all_reduce.log; fi
`;
const HOSTS = [
    { name: "slc", address: "127.0.32.1", role: "controller" },
    { name: "sln1", address: "127.0.32.2", role: "node", slurmdPort: 6920 },
    { name: "sln2", address: "127.0.32.3", role: "node", slurmdPort: 6921 },
];
const CTLD_PORT = 6917;

/** The cluster's files for these hosts (the shapes of components/slurm/render.ts, with the deviations above). */
function slurmFiles(): Record<string, string> {
    const nodes = HOSTS.filter((h) => h.role === "node");
    return {
        "slurm.conf": [
            "ClusterName=rdmakit-slt",
            `SlurmctldHost=slc(${HOSTS[0].address})`,
            `SlurmctldPort=${CTLD_PORT}`,
            "AuthType=auth/munge",
            "SlurmUser=slurm",
            "StateSaveLocation=/var/lib/slurm/slurmctld",
            "SlurmdSpoolDir=/var/lib/slurm/slurmd",
            "ProctrackType=proctrack/linuxproc",
            "TaskPlugin=task/affinity",
            "SelectType=select/cons_tres",
            "SelectTypeParameters=CR_Core",
            "GresTypes=gpu",
            "MpiDefault=pmix_v4",
            "TopologyPlugin=topology/tree",
            "PropagateResourceLimitsExcept=MEMLOCK",
            "HealthCheckProgram=/usr/local/sbin/rdmakit-slurm-health",
            "HealthCheckInterval=5",
            "TaskProlog=/etc/slurm/rdmakit-task-prolog",
            "ReturnToService=1",
            "SlurmctldTimeout=30",
            "SlurmdTimeout=60",
            ...nodes.map((n) => `NodeName=${n.name} NodeAddr=${n.address} Port=${n.slurmdPort} CPUs=1 RealMemory=100 Gres=gpu:2`),
            `PartitionName=gpu Nodes=${nodes.map((n) => n.name).join(",")} Default=YES MaxTime=INFINITE State=UP`,
            "",
        ].join("\n"),
        "gres.conf": "Name=gpu File=/dev/rdmakit-test-gpu[0-1]\n",
        "cgroup.conf": "CgroupPlugin=autodetect\n",
        // two leaves under one spine: what a rail-optimised plan with one host per leaf group derives
        "topology.conf": "SwitchName=leaf1 Nodes=sln1\nSwitchName=leaf2 Nodes=sln2\nSwitchName=spine1 Switches=leaf1,leaf2\n",
    };
}

// An allreduce over MPI_COMM_WORLD: each rank adds its rank + 1; every rank prints the sum and its host.
const ALLREDUCE_C = `#include <mpi.h>
#include <stdio.h>
int main(int argc, char **argv) {
    int rank, size, sum = 0, len; char host[MPI_MAX_PROCESSOR_NAME];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank); MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Get_processor_name(host, &len);
    int mine = rank + 1;
    MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    printf("rank %d of %d on %s: sum %d\\n", rank, size, host, sum);
    MPI_Finalize();
    return 0;
}
`;

/** Every file under `dir` that holds `needle` (bytes), or its base64 text; symlinks and other hosts' trees left out. */
function filesHolding(dir: string, needles: Buffer[], skipDirs: Set<string>): string[] {
    const found: string[] = [];
    const walk = (d: string) => {
        let entries: fs.Dirent[];
        try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
        for (const e of entries) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) { if (!skipDirs.has(p)) walk(p); continue; }
            if (!e.isFile()) continue;
            let data: Buffer;
            try { data = fs.readFileSync(p); } catch { continue; }
            if (needles.some((n) => data.includes(n))) found.push(p);
        }
    };
    walk(dir);
    return found;
}

/** The Slurm scenario: test/ansible-hosts.test.ts runs it beside the site.yml ones, in one test slot. */
export async function slurmHostsScenario(t: TestContext): Promise<void> {
    const started = Date.now();
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, "slt-"));
    // the three trees go at once (each holds Slurm, Open MPI and a compiler: removing them one by one took minutes)
    t.after(async () => {
        await Promise.all(HOSTS.map((h) => run(HARNESS, ["down", runDir, h.name]).catch(() => undefined)));
        if (!process.env.RDMAKIT_KEEP_TESTHOSTS) fs.rmSync(runDir, { recursive: true, force: true });
    });
    const key = path.join(runDir, "id");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
    const ports = await Promise.all(HOSTS.map(() => freePort()));
    const ssh = async (i: number, cmd: string, timeout = 120_000) => (await run("ssh", ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
        "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", "-i", key, "-p", String(ports[i]), `root@${HOSTS[i].address}`, cmd],
    { timeout, maxBuffer: 1 << 22 })).stdout.trim();
    const tree = (i: number) => path.join(runDir, HOSTS[i].name);
    await Promise.all(HOSTS.map((h, i) => run(HARNESS, ["up", CACHE, runDir, h.name, String(ports[i]), `${key}.pub`, h.address])));

    // the gpu "devices" of each node: character devices (1:3, /dev/null's numbers, the only kind a container may make)
    // at the File= paths of gres.conf, since a container has no /dev/nvidia*; slurmd refuses plain files
    for (const i of [1, 2]) {
        fs.mkdirSync(path.join(tree(i), "var", "lib", "rdmakit-test"), { recursive: true });
        await ssh(i, "mknod -m 0666 /dev/rdmakit-test-gpu0 c 1 3 && mknod -m 0666 /dev/rdmakit-test-gpu1 c 1 3");
    }
    const setup = nodeLocalSetup(path.join(runDir, "out"));
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    t.after(() => served.close());
    const inventory = renderInventory({
        hosts: HOSTS.map((h, i) => ({ name: h.name, address: h.address, user: "root", port: ports[i], vars: { slurm_role: h.role } })),
        vars: {
            rdmakit_fabric: "azure-ib", rdmakit_require_hardware: false, rdmakit_gpu_count: 0, rdmakit_rdma_device_count: 0,
            slurm_enabled: true, slurm_head_in_inventory: true, slurm_files: slurmFiles(), slurm_controller_address: HOSTS[0].address, slurm_not_validated_reason: NOT_VALIDATED_REASON,
            slurm_job_env: { NCCL_IB_TC: "106", NCCL_SOCKET_IFNAME: "=lo" }, slurm_home_nfs: false,
        },
        knownHostsFile: path.join(runDir, "known_hosts"),
    });
    const munge = randomBytes(1024);
    const roleRun = (log: string, more: NodeJS.ProcessEnv = {}) => runNodeLocal(setup, { inventory, extraVars: {}, log, key: served.env,
        env: { ANSIBLE_RUN_TAGS: "slurm", RDMAKIT_MUNGE_KEY: munge.toString("base64"), RDMAKIT_FANOUT_CPU_FILE: path.join(runDir, "out", "fanout-cpu"), ...more } });
    const ctl = (cmd: string) => ssh(0, cmd);

    t.diagnostic(`hosts up ${((Date.now() - started) / 1000).toFixed(0)} s`);
    const first = await roleRun(path.join(runDir, "out", "ansible-slurm.log"));
    assert.equal(first.status, 0, first.stdout + first.stderr + fs.readFileSync(path.join(runDir, "out", "ansible-slurm.log"), "utf8").slice(-6000));
    const roleSeconds = (Date.now() - started) / 1000;
    // Open MPI and a compiler on the nodes, after the role ran (apt's lock is the role's while it runs; not the role's: what a user's image would add)
    const mpiReady = Promise.all([1, 2].map((i) => ssh(i, "apt-get -o DPkg::Lock::Timeout=300 update -qq && DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq " +
        "--no-install-recommends libopenmpi-dev openmpi-bin gcc libc6-dev >/dev/null", 300_000)));

    await t.test("the munge key: 0400 munge:munge and the same on every host, its staged copy gone, no file here holds it", async () => {
        for (const i of [0, 1, 2]) {
            assert.equal(await ssh(i, "stat -c '%a %U %G' /etc/munge/munge.key"), "400 munge munge", HOSTS[i].name);
            assert.ok(fs.readFileSync(path.join(tree(i), "etc", "munge", "munge.key")).equals(munge), `${HOSTS[i].name} holds the cluster's key`);
            assert.equal(await ssh(i, "test -e /run/rdmakit/munge.key && echo staged || echo gone"), "gone");
        }
        // munge itself: a credential made on the head decodes on each node
        for (const i of [1, 2]) assert.match(await ssh(i, `munge -n -s ${HOSTS[0].address} >/dev/null; echo ok`), /ok/);
        // this machine: the run's folder (the hosts' trees apart), the temporary folder, the working tree
        const needles = [munge.subarray(0, 48), Buffer.from(munge.toString("base64").slice(0, 64))];
        // the hosts' own disks are left out wherever the clone lies (a clone under /tmp puts them below the temporary folder)
        const hostTrees = new Set(HOSTS.map((_, i) => tree(i)));
        const held = [
            ...filesHolding(runDir, needles, hostTrees),
            ...filesHolding(os.tmpdir(), needles, hostTrees),
            ...filesHolding(path.join(ROOT, "out"), needles, new Set()),
        ];
        assert.deepEqual(held, []);
    });

    await t.test("sinfo shows both nodes idle; srun -N2 hostname runs on both; the task prolog's environment reaches the step", async () => {
        // before the gate: registered, drained by the role before each slurmd first started (tasks/predrain.yml), no jobs
        const nodes = ["sln1", "sln2"];
        let before: ReturnType<typeof parseDrainStates> = [];
        for (let k = 0; k < 60; k++) {
            before = parseDrainStates(await ctl(SINFO_REASONS), nodes);
            if (before.length === 2 && before.every((d) => d.state === "drain")) break;
            await new Promise((r) => setTimeout(r, 1000));
        }
        assert.deepEqual(before, nodes.map((node) => ({ node, state: "drain", reason: "rdmakit: not validated yet" })));
        // the gate passed both: the head resumes them
        for (const c of gateCommands(nodes.map((name) => ({ name, ok: true })))) await ctl(c);
        let idle = "";
        for (let k = 0; k < 60; k++) {
            idle = await ctl("sinfo -h -N -o '%N %t'");
            if (idle === "sln1 idle\nsln2 idle") break;
            await new Promise((r) => setTimeout(r, 1000));
        }
        assert.equal(idle, "sln1 idle\nsln2 idle");
        assert.deepEqual((await ctl("srun -N2 -t 1 hostname")).split("\n").sort(), ["sln1", "sln2"]);
        // memlock: slurmd's unit asks for infinity; the job gets slurmd's limit, not the submitting shell's (lowered to 64
        // here). A container cannot rise above the hard limit nspawn inherits from this machine (8192 KiB here), so
        // "unlimited" itself is left to real hosts; that slurmd's limit, not srun's, reaches the job is proven here.
        for (const i of [1, 2]) assert.equal(await ssh(i, "systemctl show slurmd -p LimitMEMLOCK --value"), "infinity");
        const slurmdLimit = await ssh(1, "grep 'Max locked memory' /proc/$(cat /run/slurmd.pid 2>/dev/null || pgrep -xo slurmd)/limits | awk '{print $4}'");
        const kib = slurmdLimit === "unlimited" ? "unlimited" : String(Number(slurmdLimit) / 1024);
        assert.notEqual(kib, "64");
        assert.deepEqual((await ctl("ulimit -l 64; srun -N2 -t 1 sh -c 'echo $(hostname) $NCCL_IB_TC $NCCL_SOCKET_IFNAME $(ulimit -l)'")).split("\n").sort(),
            [`sln1 106 =lo ${kib}`, `sln2 106 =lo ${kib}`]);
    });

    await t.test("scontrol show topology: the leaves and the spine; gres: two gpus per node handed to a job", async () => {
        const topo = await ctl("scontrol show topology");
        assert.match(topo, /SwitchName=leaf1 Level=0 LinkSpeed=\d+ Nodes=sln1/);
        assert.match(topo, /SwitchName=leaf2 Level=0 LinkSpeed=\d+ Nodes=sln2/);
        assert.match(topo, /SwitchName=spine1 Level=1 LinkSpeed=\d+ Nodes=sln\[1-2\] Switches=leaf1,leaf2/);
        assert.match(await ctl("scontrol show node sln1"), /Gres=gpu:2/);
        assert.equal(await ctl("srun -N1 -w sln2 --gres=gpu:2 -t 1 sh -c 'echo $CUDA_VISIBLE_DEVICES'"), "0,1");
    });

    await t.test("an MPI allreduce built against Debian's Open MPI runs across both nodes under srun --mpi=pmix_v4", async () => {
        await mpiReady;
        for (const i of [1, 2]) {
            await ssh(i, `mkdir -p /opt/rdmakit-test && cat >/opt/rdmakit-test/allreduce.c <<'EOF'\n${ALLREDUCE_C}EOF\nmpicc -o /opt/rdmakit-test/allreduce /opt/rdmakit-test/allreduce.c`);
        }
        assert.match(await ctl("srun --mpi=list 2>&1"), /pmix_v4/);
        const out = await ctl("srun -N2 -n2 --mpi=pmix_v4 -t 1 /opt/rdmakit-test/allreduce");
        assert.deepEqual(out.split("\n").sort(), ["rank 0 of 2 on sln1: sum 3", "rank 1 of 2 on sln2: sum 3"]);
    });

    await t.test("validation through Slurm: srun --mpi=pmix from the head launches the all-node runs in a root-only reservation; the gate drains and resumes", async () => {
        const nodes = ["sln1", "sln2"];
        // a fresh cluster: both nodes drained as the role drains them before their first slurmd start
        await ctl(`scontrol update NodeName='sln[1-2]' State=DRAIN Reason="rdmakit: not validated yet"`);
        for (const i of [1, 2]) {
            fs.mkdirSync(path.join(tree(i), "opt", "rdmakit-test", "nccl"), { recursive: true });
            fs.copyFileSync(PUBLISHED_LOG, path.join(tree(i), "var", "lib", "rdmakit-test", "all_reduce.log"));
            fs.writeFileSync(path.join(tree(i), "opt", "rdmakit-test", "nccl", "all_reduce_perf"), STAND_IN_ALL_REDUCE, { mode: 0o755 });
            fs.rmSync(path.join(tree(i), "var", "lib", "rdmakit-test", "ranks.txt"), { force: true });
        }
        // the published run's own shape: 40 GB/s floor from 1 GiB over EFA (it reached 43.8 GB/s at 4 GiB)
        const expectation = { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa" as const, requireGdr: true, source: "test" };
        const vdir = path.join(runDir, "out", "validate");
        fs.mkdirSync(path.join(vdir, "nccl"), { recursive: true });
        const vars = validationVars({
            stack: "slt", group: "all", fabric: "aws-efa", hosts: nodes, gpusPerNode: 1, ncclEnv: { NCCL_SOCKET_IFNAME: "=lo" },
            nccltestsDir: "/opt/rdmakit-test/nccl", mpiHome: "/usr", fixedBytes: 1 << 30, sweepMaxBytes: 1 << 30, timeoutSeconds: 120,
            expectations: { all: expectation },
            preflight: { gpus: 1, rdmaDevices: 0, gpudirect: "none", nvswitch: false },
            slurm: { head: "slc", partition: "gpu", mpi: "pmix" },
        }, HOSTS.slice(1).map((h) => h.address), path.join(vdir, "nccl"));
        const varsFile = path.join(vdir, "vars.json");
        fs.writeFileSync(varsFile, JSON.stringify(vars));
        fs.writeFileSync(path.join(vdir, "inventory.yml"), inventory);
        const playbook = (args: string[]) => run("ansible-playbook", ["-i", path.join(vdir, "inventory.yml"), "--private-key", key, ...args],
            { cwd: ROOT, timeout: 300_000, maxBuffer: 1 << 24, env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } })
            .then((r) => ({ code: 0, out: r.stdout }), (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }));
        // the real preflight play: these containers have no GPU and memlock below unlimited, so every node fails it
        const pre = await playbook(["playbooks/validate.yml", "-e", `@${varsFile}`, "--tags", "preflight"]);
        assert.notEqual(pre.code, 0, pre.out.slice(-3000));
        assert.deepEqual(fs.readdirSync(path.join(vdir, "preflight")).sort(), ["sln1.json", "sln2.json"], "the head node is no GPU node: no preflight there");
        // the all-node runs: launched from the head node by srun
        const all = await playbook(["playbooks/validate.yml", "-e", `@${varsFile}`, "--tags", "nccl_all"]);
        assert.equal(all.code, 0, all.out.slice(-4000));
        assert.match(vars.nccl_validate_slurm!.fixed_cmd, / srun --mpi=pmix --reservation=rdmakit-validate --partition=gpu '--nodelist=sln\[1-2\]' --nodes=2 --ntasks-per-node=1 /);
        const ranks = [1, 2].flatMap((i) => fs.readFileSync(path.join(tree(i), "var", "lib", "rdmakit-test", "ranks.txt"), "utf8").trim().split("\n"));
        // two runs (fixed size, sweep), each one rank on each node, ranks 0 and 1 of 2, the NCCL environment exported
        assert.deepEqual(ranks.map((l) => l.split(" job=")[0]).sort(), ["sln1 rank=0 of 2", "sln1 rank=0 of 2", "sln2 rank=1 of 2", "sln2 rank=1 of 2"]);
        assert.ok(ranks.every((l) => l.includes("NCCL_DEBUG=INFO")), ranks.join("\n"));
        assert.equal(fs.readFileSync(path.join(vdir, "nccl", "all-fixed.log"), "utf8"), fs.readFileSync(PUBLISHED_LOG, "utf8"));
        assert.equal(fs.readFileSync(path.join(vdir, "launcher.txt"), "utf8"), "srun --mpi=pmix from slc\n");
        // until the gate, the nodes are held for root: the reservation is there, a user's job gets none of them
        assert.match(await ctl(`scontrol show reservation ${VALIDATION_RESERVATION}`), /Nodes=sln\[1-2\][\s\S]*Users=root/);
        assert.match(await ctl("runuser -u nobody -- srun -N1 --immediate=5 -t 1 true 2>&1; echo rc=$?"), /(Unable to allocate resources|Immediate execution impossible)[\s\S]*rc=[1-9]/);

        // graded by the real grader as pulumi up grades it; the report names the launcher and decides the gate
        const report = runNcclReport(["all-fixed.log", "all-sweep.log"].map((f) => path.join(vdir, "nccl", f)), {
            expect: JSON.stringify({ all: expectation }),
            fabric: "efa", nodes: "2", gpusPerNode: "8", preflight: path.join(vdir, "preflight"), out: vdir, slurmGate: varsFile,
            launcher: fs.readFileSync(path.join(vdir, "launcher.txt"), "utf8").trim(),
        });
        assert.equal(report.code, 1, report.stdout + report.stderr);
        t.diagnostic(`nccl-report:\n${report.stdout.split("\nrdmakit-result")[0]}`);
        assert.match(report.stdout, /^ {2}ok {3}all-fixed\.log: all_reduce_perf \(16 ranks on 2 nodes\)/m);
        assert.match(report.stdout, /all-node run launched by: srun --mpi=pmix from slc/);
        assert.match(report.stdout, /Slurm gate: 0 of 2 node\(s\) join the partition; drained: 2/);
        const gateFile = path.join(vdir, SLURM_GATE_FILE);
        const gate = await playbook(["playbooks/slurm-gate.yml", "-e", `@${gateFile}`, "-e", "slurm_gate_head=slc", "-e", `slurm_gate_applied_file=${path.join(vdir, "applied.txt")}`]);
        assert.equal(gate.code, 0, gate.out.slice(-4000));
        t.diagnostic(`sinfo -R after the gate:\n${await ctl("sinfo -R")}`);
        const drained = parseDrainStates(await ctl(SINFO_REASONS), nodes);
        assert.deepEqual(drained.map((d) => d.node), nodes);
        for (const d of drained) assert.match(d.reason, /^rdmakit: preflight gpu-count: seen nvidia-smi failed/, d.reason);
        assert.match(await ctl(`scontrol show reservation ${VALIDATION_RESERVATION} 2>&1 || true`), /not found|No reservations/i);

        // a later gate that passes both: an operator's drain stays, the rest rejoin; then the operator resumes it
        await ctl(`scontrol update NodeName=sln2 State=DRAIN Reason="operator: cable swap"`);
        fs.writeFileSync(gateFile, JSON.stringify(gateVars(nodes.map((name) => ({ name, ok: true })))));
        const pass = await playbook(["playbooks/slurm-gate.yml", "-e", `@${gateFile}`, "-e", "slurm_gate_head=slc", "-e", `slurm_gate_applied_file=${path.join(vdir, "applied.txt")}`]);
        assert.equal(pass.code, 0, pass.out.slice(-4000));
        assert.match(fs.readFileSync(path.join(vdir, "applied.txt"), "utf8"), /kept \(drained by an operator\): sln2/);
        assert.deepEqual(parseDrainStates(await ctl(SINFO_REASONS), nodes), [{ node: "sln2", state: "drain", reason: "operator: cable swap" }]);
        await ctl("scontrol update NodeName=sln2 State=RESUME");
        let idle = "";
        for (let k = 0; k < 30 && idle !== "sln1 idle\nsln2 idle"; k++) {
            idle = await ctl("sinfo -h -N -o '%N %t'");
            if (idle !== "sln1 idle\nsln2 idle") await new Promise((r) => setTimeout(r, 1000));
        }
        assert.equal(idle, "sln1 idle\nsln2 idle");
    });

    await t.test("a second run changes nothing", async () => {
        const again = await roleRun(path.join(runDir, "out", "ansible-slurm-2.log"));
        assert.equal(again.status, 0, again.stdout + again.stderr);
        const text = fs.readFileSync(path.join(runDir, "out", "ansible-slurm-2.log"), "utf8");
        for (const h of HOSTS) assert.match(text, new RegExp(`^${h.name} +: ok=\\d+ +changed=0 +unreachable=0 +failed=0`, "m"), text.slice(-4000));
    });

    await t.test("a stand-in nvidia-smi printing a failing capture: slurmd's health program drains that node, naming nvlink", async () => {
        const standIn = path.join(tree(2), "usr", "local", "bin", "nvidia-smi");
        fs.copyFileSync(path.join(CAPTURES, "nvidia-smi-q.titanv-560.35.03.txt"), path.join(tree(2), "var", "lib", "rdmakit-test", "q.txt"));
        fs.copyFileSync(path.join(CAPTURES, "nvidia-smi-nvlink.v100-inactive.txt"), path.join(tree(2), "var", "lib", "rdmakit-test", "nvlink.txt"));
        fs.writeFileSync(standIn, "#!/bin/sh\ncase \"$1\" in -q) cat /var/lib/rdmakit-test/q.txt ;; nvlink) cat /var/lib/rdmakit-test/nvlink.txt ;; esac\n", { mode: 0o755 });
        let reasons: ReturnType<typeof parseDrainStates> = [];
        for (let k = 0; k < 40; k++) {
            reasons = parseDrainStates(await ctl(SINFO_REASONS), ["sln1", "sln2"]);
            if (reasons.length > 0) break;
            await new Promise((r) => setTimeout(r, 1000));
        }
        assert.deepEqual(reasons, [{ node: "sln2", state: "drain", reason: "rdmakit health: nvlink GPU 3 link 3 inactive" }]);
        assert.match(await ctl("sinfo -h -N -o '%N %t'"), /^sln1 idle$/m);
        // what rdmakit check prints of it: the head node's sinfo -R read by playbooks/slurm-states.yml, as check runs it
        const statesFile = path.join(runDir, "out", "slurm-states.txt");
        const read = await run("ansible-playbook", ["-i", path.join(runDir, "out", "validate", "inventory.yml"), "--private-key", key, "playbooks/slurm-states.yml",
            "-e", "slurm_states_head=slc", "-e", `slurm_states_file=${statesFile}`],
        { cwd: ROOT, timeout: 120_000, env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg") } });
        assert.match(read.stdout, /slc +: ok=2 +changed=\d +unreachable=0 +failed=0/);
        assert.equal(formatDrainStates(fs.readFileSync(statesFile, "utf8"), ["sln1", "sln2"], "slc"),
            "Slurm (sinfo -R on slc): 1 of 2 node(s) drained or down\n  sln2  drain   rdmakit health: nvlink GPU 3 link 3 inactive\n");
    });
    const fanoutCpu = fs.readFileSync(path.join(runDir, "out", "fanout-cpu"), "utf8").trim();

    await t.test("a replaced node: a fresh sln2 under the same name and address is provisioned alone, proven against sln1 and resumed", (st) =>
        replacedNodeRejoins(st, {
            harness: HARNESS, cache: CACHE, runDir, key, hosts: HOSTS, ports, tree, ssh, roleRun, inventory, captures: CAPTURES,
            publishedLog: PUBLISHED_LOG, standInAllReduce: STAND_IN_ALL_REDUCE,
        }));
    t.diagnostic(`fan-out CPU of the last run (3 hosts, Slurm) ${fanoutCpu} s`);
    t.diagnostic(`role run ${roleSeconds.toFixed(0)} s, whole test ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
