/**
 * The last step of the Slurm host scenario (test/hosts/slurm.ts), on its booted hosts: a node the health program
 * drained is replaced and let back in by the repair path itself. The state the scenario left (sln2 drained by
 * slurmd's health program for an inactive NVLink link, read from the head's `sinfo -R`) goes through the repair
 * decision (components/day2/repair.ts, the function `rdmakit status`, `repair --dry-run` and `repair` share) with
 * `cluster.repair: replace`, and `executeRepairs` (components/day2/execute.ts) carries it out with these hosts as its
 * cloud and cluster:
 *  - the cloud's replacement: sln2's container is stopped and a fresh one booted from the bare base under the same
 *    name and address (new host keys, a new nspawn process: the "instance id"); the old pin refuses it, so the kit's
 *    known_hosts is written again with the new key, as the stack writes it at every deployment;
 *  - provisioning: the node-local software step limited to that one node (the fan-out's RDMAKIT_RETRY_NODES, as
 *    `pulumi up` limits a run), the cluster's munge key on the node's own session; slurmd registers, still drained;
 *  - the proof: the health gate on the new node (slurmd's own rdmakit-slurm-health, grading a healthy capture) and a
 *    pairwise nccl-tests run with the node that passed, launched from the head by srun in the validation's
 *    reservation (the stand-in all_reduce_perf of the scenario), graded by the real nccl-report;
 *  - Slurm RESUME through the gate's play (slurm-gate.yml) for the node the proof passed, which ends the reservation.
 * Asserted: the outcome is "rejoined" with both machine ids; sinfo shows both nodes idle; the other node and the head
 * were never visited by the software step (their node logs and dpkg logs unchanged). Added time: about 100-150 s
 * (a container boot, the slurm role's apt installs on one node, one srun pair run), bounded below by the calls'
 * timeouts (the role run 600 s, each playbook 300 s, waits 60 s).
 */
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { decisionFor } from "../../components/day2/repair";
import { executeRepairs, type CloudOps, type NodeOps } from "../../components/day2/execute";
import { scontrolLine } from "../../components/day2/live";
import { operatingState } from "../../components/day2/state";
import { SINFO_REASONS, VALIDATION_RESERVATION, gateVars, parseDrainStates } from "../../components/slurm/gate";
import { validationVars } from "../../components/validate/component";
import { runNcclReport, SLURM_GATE_FILE } from "../../components/validate/cli";
import { nodeLog, type NodeLocalResult } from "../fixtures/node-local-run";

const run = promisify(execFile);

export interface ReplaceHosts {
    harness: string;
    cache: string;
    runDir: string;
    key: string;
    hosts: Array<{ name: string; address: string; role: string }>;
    ports: number[];
    tree: (i: number) => string;
    ssh: (i: number, cmd: string, timeout?: number) => Promise<string>;
    /** the node-local software step (the slurm role), with more environment */
    roleRun: (log: string, env?: NodeJS.ProcessEnv) => Promise<NodeLocalResult>;
    /** the scenario's inventory text */
    inventory: string;
    captures: string;
    publishedLog: string;
    standInAllReduce: string;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `f` once a second until `done` holds or `seconds` pass; the last value. */
async function until<T>(f: () => Promise<T>, done: (v: T) => boolean, seconds: number): Promise<T> {
    let v = await f();
    for (let k = 0; k < seconds && !done(v); k++) {
        await sleep(1000);
        v = await f();
    }
    return v;
}

export async function replacedNodeRejoins(t: TestContext, h: ReplaceHosts): Promise<void> {
    const started = Date.now();
    const ctl = (cmd: string) => h.ssh(0, cmd);
    const nodes = ["sln1", "sln2"];
    const [peer, bad] = [1, 2];
    // the "instance id": the container's nspawn process, a new one for a fresh container (the machine id is not: nspawn
    // derives it from the machine's name)
    const machineId = async (i: number) => `nspawn-${fs.readFileSync(path.join(h.runDir, `${h.hosts[i].name}.pid`), "utf8").trim()}`;
    const oldId = await machineId(bad);
    const peerId = await machineId(peer);
    // what the software step left on the node that stays and on the head: compared after the repair
    const untouched = (i: number) => [nodeLog(h.tree(i)), fs.readFileSync(path.join(h.tree(i), "var", "log", "dpkg.log"), "utf8")];
    const before = [untouched(0), untouched(peer)];

    // the state as the stack would hold it: sln2's health finding (persistent: the node's current state shows the
    // link down), the scheduler's drains read from the head as `rdmakit check` reads them
    const drains = parseDrainStates(await ctl(SINFO_REASONS), nodes);
    assert.deepEqual(drains.map((d) => d.node), ["sln2"], "the scenario's health program drained sln2");
    const state = operatingState({
        stack: "slt", fabric: "azure-ib", sshUser: "root", repair: "replace", spec: {},
        group: { cloud: "azure", resourceGroup: "slt-rg", scaleSet: "slt-vmss" },
        nodes: [{ name: "sln1", address: h.hosts[peer].address, instanceId: peerId }, { name: "sln2", address: h.hosts[bad].address, instanceId: oldId }],
        validation: {
            pass: false, failedNodes: [], health: [
                { node: "sln1", verdict: "healthy", findings: [] },
                { node: "sln2", verdict: "failing", findings: [{ component: "nvlink", message: "GPU 3 link 3 inactive", persistence: "persistent" }] },
            ],
        },
        scheduler: { type: "slurm", drained: drains.map((d) => ({ node: d.node, reason: d.reason })) },
    });
    state.nodes[0].nccl = "ok";
    const decision = decisionFor(state);
    assert.deepEqual(decision.actions.map((a) => [a.kind, a.node]), [["replace", "sln2"]]);
    assert.equal(decision.actions[0].kind === "replace" && decision.actions[0].drainFirst, false, "already drained by the health program");

    const knownHosts = path.join(h.runDir, "known_hosts");
    // the software step pinned the old machine's key on first contact (the inventory's accept-new)
    await run("ssh-keygen", ["-F", `[${h.hosts[bad].address}]:${h.ports[bad]}`, "-f", knownHosts]);
    const hostSsh = (i: number, extra: string[]) => run("ssh", ["-o", "BatchMode=yes", "-o", "LogLevel=ERROR", ...extra, "-i", h.key,
        "-p", String(h.ports[i]), `root@${h.hosts[i].address}`, "true"], { timeout: 30_000 });
    const cloud: CloudOps = {
        async replace(instanceId) {
            assert.equal(instanceId, oldId);
            // test-host speed only: the apt lists and downloaded packages of the machine it replaces are kept aside and
            // put in the fresh tree, as a site's package mirror would serve them; every package is installed afresh
            const apt = path.join(h.runDir, "apt-carry");
            await run("sh", ["-c", `rm -rf "$1" && mkdir -p "$1/debs" && cp -a "$2/var/lib/apt/lists" "$1/lists" && find "$2/var/cache/apt/archives" -maxdepth 1 -name "*.deb" -exec cp -t "$1/debs/" {} +`, "sh", apt, h.tree(bad)]);
            await run(h.harness, ["down", h.runDir, h.hosts[bad].name]);
            await run(h.harness, ["up", h.cache, h.runDir, h.hosts[bad].name, String(h.ports[bad]), `${h.key}.pub`, h.hosts[bad].address]);
            await run("sh", ["-c", `rm -rf "$2/var/lib/apt/lists" && cp -a "$1/lists" "$2/var/lib/apt/lists" && find "$1/debs" -name "*.deb" -exec cp -t "$2/var/cache/apt/archives/" {} +`, "sh", apt, h.tree(bad)]);
        },
        async waitForReplacement(old, known) {
            const id = await machineId(bad);
            assert.ok(!known.includes(id) && id !== old, `a new machine: ${id}`);
            // the image's part (as in the scenario's boot): the gpu files gres.conf names
            await h.ssh(bad, "mkdir -p /var/lib/rdmakit-test && mknod -m 0666 /dev/rdmakit-test-gpu0 c 1 3 && mknod -m 0666 /dev/rdmakit-test-gpu1 c 1 3");
            return { instanceId: id, address: h.hosts[bad].address };
        },
    };

    let gateFile = "";
    let provisioned: NodeLocalResult | undefined;
    const log = path.join(h.runDir, "out", "ansible-slurm-replace.log");
    const rdir = path.join(h.runDir, "out", "repair");
    const playbook = (args: string[]) => run("ansible-playbook", ["-i", path.join(rdir, "inventory.yml"), "--private-key", h.key, ...args], {
        cwd: path.resolve(__dirname, "..", ".."), timeout: 300_000, maxBuffer: 1 << 24,
        env: { ...process.env, ANSIBLE_CONFIG: path.resolve(__dirname, "..", "..", "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" },
    }).then((r) => ({ code: 0, out: r.stdout }), (e: { code?: number; stdout?: string; stderr?: string }) => ({ code: e.code ?? -1, out: `${e.stdout ?? ""}${e.stderr ?? ""}` }));
    const cluster: NodeOps = {
        // root in the containers, which have no sudo: the line rdmakit repair sends, run as root
        drain: async (node, reason) => { await ctl(scontrolLine(node, { drain: reason }).replace(/^sudo -n /, "")); },
        async provision(node, address) {
            const i = h.hosts.findIndex((x) => x.name === node);
            // the pinned key no longer matches: the fresh host is refused until the deployment pins its new key
            await assert.rejects(hostSsh(i, ["-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${knownHosts}`]), /Host key verification failed|IDENTIFICATION HAS CHANGED/);
            await run("ssh-keygen", ["-R", `[${address}]:${h.ports[i]}`, "-f", knownHosts]);
            const pub = fs.readFileSync(path.join(h.tree(i), "etc", "ssh", "ssh_host_ed25519_key.pub"), "utf8").split(" ").slice(0, 2).join(" ");
            fs.appendFileSync(knownHosts, `[${address}]:${h.ports[i]} ${pub}\n`);
            provisioned = await h.roleRun(log, { RDMAKIT_RETRY_NODES: node, RDMAKIT_RETRY_ATTEMPT: "1", RDMAKIT_RETRY_HOSTS: String(h.hosts.length) });
            if (provisioned.status !== 0) return { ok: false, why: `the software step exited ${provisioned.status}` };
            // the new slurmd registered: drained still (the drain outlives the machine), no longer not responding
            const st = await until(() => ctl(`sinfo -h -N -n ${node} -o %t`), (s) => s === "drain", 60);
            return st === "drain" ? { ok: true } : { ok: false, why: `sinfo says ${st}` };
        },
        async prove(node, pair) {
            const i = h.hosts.findIndex((x) => x.name === node);
            // the health gate: slurmd's own health program on the new node, over a healthy capture (an A100's NVLink
            // links all up, test/fixtures/health/captures); the old node failed it on the V100 capture with links down
            const lib = path.join(h.tree(i), "var", "lib", "rdmakit-test");
            fs.copyFileSync(path.join(h.captures, "nvidia-smi-q.titanv-560.35.03.txt"), path.join(lib, "q.txt"));
            fs.copyFileSync(path.join(h.captures, "nvidia-smi-nvlink.a100-gpud.txt"), path.join(lib, "nvlink.txt"));
            fs.writeFileSync(path.join(h.tree(i), "usr", "local", "bin", "nvidia-smi"),
                "#!/bin/sh\ncase \"$1\" in -q) cat /var/lib/rdmakit-test/q.txt ;; nvlink) cat /var/lib/rdmakit-test/nvlink.txt ;; esac\n", { mode: 0o755 });
            const health = await h.ssh(i, "/usr/local/sbin/rdmakit-slurm-health --dry-run; echo rc=$?");
            if (health !== "ok\nrc=0") return { ok: false, why: `health gate: ${health}` };
            // the pairwise run: the new node and the one that passed, launched from the head by srun
            fs.mkdirSync(path.join(h.tree(i), "opt", "rdmakit-test", "nccl"), { recursive: true });
            fs.copyFileSync(h.publishedLog, path.join(lib, "all_reduce.log"));
            fs.writeFileSync(path.join(h.tree(i), "opt", "rdmakit-test", "nccl", "all_reduce_perf"), h.standInAllReduce, { mode: 0o755 });
            for (const k of [peer, bad]) fs.rmSync(path.join(h.tree(k), "var", "lib", "rdmakit-test", "ranks.txt"), { force: true });
            const pairNodes = [pair, node].sort();
            const expectation = { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa" as const, requireGdr: true, source: "test" };
            fs.mkdirSync(path.join(rdir, "nccl"), { recursive: true });
            const vars = validationVars({
                stack: "slt", group: "all", fabric: "aws-efa", hosts: pairNodes, gpusPerNode: 1, ncclEnv: { NCCL_SOCKET_IFNAME: "=lo" },
                nccltestsDir: "/opt/rdmakit-test/nccl", mpiHome: "/usr", fixedBytes: 1 << 30, sweepMaxBytes: 1 << 30, timeoutSeconds: 120,
                expectations: { all: expectation }, preflight: { gpus: 1, rdmaDevices: 0, gpudirect: "none", nvswitch: false },
                slurm: { head: "slc", partition: "gpu", mpi: "pmix" },
            }, pairNodes.map((n) => h.hosts.find((x) => x.name === n)!.address), path.join(rdir, "nccl"));
            const varsFile = path.join(rdir, "vars.json");
            fs.writeFileSync(varsFile, JSON.stringify(vars));
            fs.writeFileSync(path.join(rdir, "inventory.yml"), h.inventory);
            const all = await playbook(["playbooks/validate.yml", "-e", `@${varsFile}`, "--tags", "nccl_all"]);
            if (all.code !== 0) return { ok: false, why: `pairwise run: ${all.out.slice(-2000)}` };
            const ranks = [peer, bad].flatMap((k) => fs.readFileSync(path.join(h.tree(k), "var", "lib", "rdmakit-test", "ranks.txt"), "utf8").trim().split("\n"));
            assert.deepEqual(ranks.map((l) => l.split(" job=")[0]).sort(), ["sln1 rank=0 of 2", "sln1 rank=0 of 2", "sln2 rank=1 of 2", "sln2 rank=1 of 2"]);
            const report = runNcclReport(["all-fixed.log", "all-sweep.log"].map((f) => path.join(rdir, "nccl", f)), {
                expect: JSON.stringify({ all: expectation }), fabric: "efa", nodes: "2", gpusPerNode: "8", out: rdir, slurmGate: varsFile,
                launcher: fs.readFileSync(path.join(rdir, "launcher.txt"), "utf8").trim(),
            });
            gateFile = path.join(rdir, SLURM_GATE_FILE);
            return report.code === 0 ? { ok: true } : { ok: false, why: `nccl-report exit ${report.code}: ${report.stdout.slice(-1500)}` };
        },
        // Slurm RESUME through the gate's own play for the node the proof passed, which also ends the reservation. Not the
        // report's gate file: it fails closed without preflight results, which no container can pass (no GPU)
        async resume(node) {
            fs.writeFileSync(gateFile, JSON.stringify(gateVars([{ name: node, ok: true }])));
            const gate = await playbook(["playbooks/slurm-gate.yml", "-e", `@${gateFile}`, "-e", "slurm_gate_head=slc", "-e", `slurm_gate_applied_file=${path.join(rdir, "applied.txt")}`]);
            assert.equal(gate.code, 0, gate.out.slice(-3000));
        },
    };

    const r = await executeRepairs(decision, state, { cloud, nodes: cluster, canDrain: true }, () => "2026-01-01T00:00:00Z");
    const newId = await machineId(bad);
    assert.deepEqual(r.outcomes, [{ node: "sln2", outcome: "rejoined", from: oldId, to: newId }], JSON.stringify({ r, log: provisioned?.stderr }));
    assert.deepEqual(r.replaced.map((x) => [x.node, x.fromInstance]), [["sln2", oldId]]);
    const idle = await until(() => ctl("sinfo -h -N -o '%N %t'"), (s) => s === "sln1 idle\nsln2 idle", 30);
    assert.equal(idle, "sln1 idle\nsln2 idle");
    assert.match(await ctl(`scontrol show reservation ${VALIDATION_RESERVATION} 2>&1 || true`), /not found|No reservations/i);
    assert.deepEqual((await ctl("srun -N2 -t 1 hostname")).split("\n").sort(), nodes);
    // the software step visited the new node only: its recap names sln2 alone; the head and sln1 kept their logs
    const text = fs.readFileSync(log, "utf8");
    assert.match(text, /^sln2 +: ok=\d+ +changed=[1-9]\d* +unreachable=0 +failed=0/m, text.slice(-3000));
    assert.doesNotMatch(text, /^(slc|sln1) +: ok=/m);
    assert.match(nodeLog(h.tree(bad)), /slurm/i);
    // the fresh host was drained by the role before its slurmd first started (roles/slurm/tasks/predrain.yml: its
    // record held an rdmakit drain, which the role replaces with "not validated yet"; an operator's would stay)
    const predrain = nodeLog(h.tree(bad)).split(/^TASK \[/m).find((b) => b.startsWith("slurm : Drain this node before its slurmd first starts]"));
    assert.match(predrain ?? "(no such task)", /^changed: \[sln2\]/m, "the role drained the new host before starting its slurmd");
    assert.deepEqual([untouched(0), untouched(peer)], before, "the head and sln1 were not visited again");
    t.diagnostic(`replacement step ${((Date.now() - started) / 1000).toFixed(0)} s`);
}
