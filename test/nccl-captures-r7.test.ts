/**
 * Round 7 of the nccl-tests grader: what the launcher says when a job ends early (Open MPI 5 / PRRTE, Open MPI 4 /
 * ORTE, Slurm), read for the node a process died on and why; NCCL's result string for the hint; real logs of one node
 * failing NCCL init under PRRTE (argonne-lcf/alcf-nccl-tests, Sophia) and of wrong data (NVIDIA/nccl-tests#37). Their
 * sources are in the .source.md sidecars. The node-death logs are built here: the first all_reduce run of the real
 * xxrjun-cluster01-smoke-n2g1.log cut after its third row, then the launcher's lines in the words of the help texts
 * launcher.ts cites (PRRTE help-prun.txt / help-errmgr-base.txt, Slurm src/srun/launch.c, slurmstepd/req.c).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import { launcherEvent, launcherReport } from "../components/validate/launcher";
import { scanTransport } from "../components/validate/transport";
import { proveFabric } from "../components/validate/fabric";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const verdict = (g: ReturnType<typeof gradeLog>, check: string, i = 0) => g.runs[i].verdicts.find((v) => v.check === check);
const fileVerdict = (g: ReturnType<typeof gradeLog>, check: string) => g.verdicts.find((v) => v.check === check);

test("alcf-nccl-tests Sophia: one node fails NCCL init under Open MPI 5; the node and PRRTE's first failed process are named", () => {
    const name = "alcf-sophia-n2g8-allreduce-gpu13-init-failure-prrte.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.nRanks, 16);
    assert.deepEqual(run.hosts, ["sophia-gpu-09", "sophia-gpu-13"]);
    assert.equal(run.rows.length, 0);
    // PRRTE's notice is the launcher's part of this run's end (before: its `detected ..` line was no launcher line at all)
    assert.ok(run.failures.some((f) => f.text.startsWith("prterun detected that one or more processes exited")));
    const g = gradeLog(p, ANY);
    const done = verdict(g, "completed");
    assert.equal(done?.ok, false);
    assert.match(done!.seen, /^aborted on sophia-gpu-13: sophia-gpu-13: Test NCCL failure common\.cu:1012 'unhandled system error/);
    assert.match(done!.seen, /the launcher: sophia-gpu-13: process rank 11 was the first to exit non-zero \(exit code 3\)$/);
    assert.match(done!.hint ?? "", /system call failed inside NCCL on the node named/);
    assert.doesNotMatch(done!.hint ?? "", /peer process died/);
    const r = runNcclReport([file(name)], {});
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x completed .*aborted on sophia-gpu-13/);
});

test("alcf-nccl-tests Sophia: the failing node is read from the log, also when it holds rank 0", () => {
    const name = "alcf-sophia-n2g8-allreduce-gpu04-init-failure-prrte.log";
    const g = gradeLog(parseNcclLog(read(name), { name }), ANY);
    const done = verdict(g, "completed");
    assert.match(done!.seen, /^aborted on sophia-gpu-04: /);
    assert.match(done!.seen, /the launcher: sophia-gpu-04: process rank 7 was the first to exit non-zero \(exit code 3\)$/);
    assert.equal(g.pass, false);
});

test("NVIDIA/nccl-tests#37: wrong data at 4 GiB in the 2019 layout fails correctness; the hint names an NCCL bug too", () => {
    const name = "nccl-tests-37-allgather-4gib-wrong-data-2019layout.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.collective, "all_gather_perf");
    assert.equal(run.collectiveFrom, "command");
    assert.equal(run.checkColumn, "error");
    assert.deepEqual(run.rows.map((r) => [r.sizeBytes, r.outOfPlace.busbwGBps, r.outOfPlace.maxError, r.inPlace?.maxError]), [[4294967296, 129.05, 1, 1]]);
    assert.deepEqual(run.outOfBounds && [run.outOfBounds.count, run.outOfBounds.ok], [2, false]);
    assert.equal(run.avgBusbwGBps, 128.942);
    const c = verdict(gradeLog(p, ANY), "correctness");
    assert.equal(c?.ok, false);
    assert.equal(c?.seen, "Out of bounds values: 2 FAILED");
    assert.match(c?.hint ?? "", /NCCL bug at some sizes \(NVIDIA\/nccl-tests#37/);
    assert.equal(runNcclReport([file(name)], {}).code, 1);
});

/** The first run of a real log, cut after its third row (a job that did not finish), then `tail`. */
function cutRun(tail: string[]): string {
    const lines = read("xxrjun-cluster01-smoke-n2g1.log").split("\n");
    return [...lines.slice(0, 14), ...tail].join("\n") + "\n";
}
const DASHES = "--------------------------------------------------------------------------";

test("a node killed mid-table (PRRTE's two-line notice) fails naming that node and the signal, not a survivor", () => {
    const log = cutRun([DASHES, "prterun noticed that process rank 1 with PID 945256 on node cnode3-003 exited on", "signal 9 (Killed).", DASHES]);
    const p = parseNcclLog(log, { name: "killed.log" });
    const run = p.runs[0];
    assert.equal(run.rows.length, 3);
    // the two lines are read as one, at the line of the first
    assert.deepEqual(run.failures, [{ line: 16, text: "prterun noticed that process rank 1 with PID 945256 on node cnode3-003 exited on signal 9 (Killed)." }]);
    const done = verdict(gradeLog(p, ANY), "completed");
    assert.match(done!.seen, /^aborted on cnode3-003 after 3 row\(s\): prterun noticed/);
    assert.match(done!.seen, /the launcher: cnode3-003: process rank 1 exited on signal 9 \(Killed\)$/);
    assert.match(done!.hint ?? "", /a process on cnode3-003 died .*OOM/);
});

test("a node lost (PRTE lost its daemon): the lost node goes first, before the survivor that printed the NCCL failure", () => {
    const log = cutRun([
        "cnode3-002: Test NCCL failure common.cu:1012 'remote process exited or there was a network error / '",
        " .. cnode3-002 pid 2201134: Test failure common.cu:891",
        DASHES, "PRTE has lost communication with a remote daemon.", "",
        "  HNP daemon   : [prterun-cnode3-002-2201000@0,0] on node cnode3-002",
        "  Remote daemon: [prterun-cnode3-002-2201000@0,1] on node cnode3-003", "",
        "This is usually due to either a failure of the TCP network", DASHES,
    ]);
    const done = verdict(gradeLog(parseNcclLog(log, { name: "lost.log" }), ANY), "completed");
    assert.match(done!.seen, /^aborted on cnode3-003, cnode3-002 after 3 row\(s\): cnode3-002: Test NCCL failure/);
    assert.match(done!.seen, /the launcher: cnode3-003: the launcher lost its daemon on this node/);
    assert.match(done!.hint ?? "", /^cnode3-003 went down or dropped off the network/);
});

test("a clean footer, then Open MPI 5 reports a process that exited non-zero: no longer a pass", () => {
    const lines = read("xxrjun-cluster01-smoke-n2g1.log").split("\n").slice(0, 21);
    const log = [...lines, DASHES, "prterun detected that one or more processes exited with non-zero status,",
        "thus causing the job to be terminated. The first process to do so was:", "",
        "   Process name: [prterun-cnode3-002-2201000@1,1]", "   Exit code:    3", DASHES].join("\n") + "\n";
    const g = gradeLog(parseNcclLog(log, { name: "exit.log" }), ANY);
    assert.equal(verdict(g, "completed")?.ok, true);
    const l = fileVerdict(g, "launcher");
    assert.equal(l?.ok, false);
    // the help text's own layout puts `Exit code:` on a line of its own (the Sophia logs have both on one line)
    assert.equal(l?.seen, "prterun detected that one or more processes exited with non-zero status, (cnode3-003: process rank 1 was the first to exit non-zero)");
    assert.equal(g.pass, false);
});

test("Slurm: a node failure names the node; a time limit names the cause and no node", () => {
    const failed = cutRun(["srun: error: Node failure on cnode3-003",
        "slurmstepd: error: *** STEP 4242.0 ON cnode3-002 CANCELLED AT 2025-11-20T10:00:00 DUE TO NODE FAILURE, SEE SLURMCTLD LOG FOR DETAILS ***"]);
    const d1 = verdict(gradeLog(parseNcclLog(failed, { name: "nf.log" }), ANY), "completed");
    assert.match(d1!.seen, /^aborted on cnode3-003 after 3 row\(s\): srun: error: Node failure on cnode3-003/);
    assert.match(d1!.seen, /the launcher: cnode3-003: Slurm reports a node failure; Slurm cancelled the job: node failure$/);
    assert.match(d1!.hint ?? "", /^cnode3-003 went down/);
    const timed = cutRun(["slurmstepd: error: *** JOB 4242 ON cnode3-002 CANCELLED AT 2025-11-20T10:00:00 DUE TO TIME LIMIT ***"]);
    const d2 = verdict(gradeLog(parseNcclLog(timed, { name: "tl.log" }), ANY), "completed");
    assert.match(d2!.seen, /^aborted after 3 row\(s\): slurmstepd: .*; the launcher: Slurm cancelled the job: time limit$/);
    assert.match(d2!.hint ?? "", /time limit ended the job/);
});

test("nccl-tests' own -T timeout and NCCL's result strings each get their own hint", () => {
    // NVIDIA/nccl-tests v2.19.6 src/common.cu:523 `%s: Test timeout (%ds) %s:%d`, then the TESTCHECK trace (src/common.h:86)
    const timeout = cutRun(["cnode3-002: Test timeout (60s) common.cu:523", " .. cnode3-002 pid 2201134: Test failure common.cu:891"]);
    const d = verdict(gradeLog(parseNcclLog(timeout, { name: "t.log" }), ANY), "completed");
    assert.match(d!.seen, /^aborted on cnode3-002 after 3 row\(s\): cnode3-002: Test timeout \(60s\)/);
    assert.match(d!.hint ?? "", /did not finish within the -T limit/);
    const invalid = cutRun(["cnode3-003: Test NCCL failure common.cu:1012 'invalid usage (run with NCCL_DEBUG=WARN for details) / '"]);
    assert.match(verdict(gradeLog(parseNcclLog(invalid, { name: "u.log" }), ANY), "completed")!.hint ?? "", /refused its arguments or environment/);
});

test("launcherEvent reads each launcher's form and nothing else; bounded and linear on hostile lines", () => {
    // Open MPI 4 (ORTE) prints the notice on one line; `mpiexec` and `orterun` are the same program
    assert.deepEqual(launcherEvent("mpirun noticed that process rank 1 with PID 0 on node fv-az1542-52 exited on signal 6 (Aborted)."),
        { node: "fv-az1542-52", mpiRank: 1, cause: "process rank 1 exited on signal 6 (Aborted)" });
    assert.equal(launcherEvent("orterun noticed that process rank 0 with PID 5085 on node dcbz exited on signal 6 (Aborted).")?.node, "dcbz");
    assert.equal(launcherEvent("mpiexec has exited due to process rank 3 with PID 77 on node n2 calling \"abort\". This may have")?.cause,
        "process rank 3 exited calling abort");
    assert.deepEqual(launcherEvent("   Process name: [[12167,1],10]"), { node: null, mpiRank: 10, cause: "process rank 10 was the first to exit non-zero" });
    // Slurm src/srun/launch.c `%s: %s %s: %s%s` with a hostlist and a task range
    assert.deepEqual(launcherEvent("srun: error: nid[003981-003982]: tasks 0-2: Segmentation fault (core dumped)"),
        { node: "nid[003981-003982]", mpiRank: null, cause: "tasks 0-2: Segmentation fault (core dumped)" });
    for (const noise of ["srun: Job step aborted: Waiting up to 32 seconds for job step to finish.", "  HNP daemon   : [x@0,0] on node a",
        "nid001: Test NCCL failure common.cu:1012 'remote process exited or there was a network error / '", ""]) {
        assert.equal(launcherEvent(noise), null, noise);
    }
    const hostile = "srun: error: " + "a".repeat(200_000) + ": task 1: " + " ".repeat(100_000);
    const started = Date.now();
    launcherEvent(hostile);
    launcherEvent("mpirun noticed that process rank 1 with PID 0 on node " + "x".repeat(200_000));
    assert.ok(Date.now() - started < 500);
    // a report names each node once and is bounded whatever the log repeats
    const many = Array.from({ length: 5000 }, (_, i) => ({ text: `srun: error: n${i}: task ${i}: Killed` }));
    const rep = launcherReport(many);
    assert.equal(rep?.nodes.length, 50);
    assert.equal(launcherReport([{ text: "no launcher here" }]), null);
});

test("NCCL 2.21-2.28 transport lines, made from their format strings, are read as before", () => {
    const t = scanTransport([
        // v2.21.5-1 src/graph/paths.cc:419; v2.26.2-1 :448 adds ` mode %s`; v2.21.5-1 src/graph/topo.cc:720
        "h1:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 1b000 / HCA 0 (distance 4 <= 5), read 0",
        "h1:1:2 [0] NCCL INFO GPU Direct RDMA Enabled for GPU 3 / HCA 1 (distance 4 <= 5), read 1 mode Default",
        "h1:1:2 [0] NCCL INFO NET/IB : GPU Direct RDMA Enabled for HCA 0 'mlx5_0'",
        // v2.26.2-1 src/transport/net.cc:217-223 `via NET/%s/%d%s%s%s`: /GDRDMA, (PCI) on C2C systems, /Shared
        "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA(PCI)/Shared",
        "h2:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0(8)/GDRDMA",
        // v2.21.5-1 src/transport/coll_net.cc:167 `CollNet %02d/%1d : %d [send] via COLLNET/%s/%d%s`: SHARP's own channels
        "h1:1:2 [0] NCCL INFO CollNet 00/0 : 0 [send] via COLLNET/IBext/0/GDRDMA",
        // aws/aws-ofi-nccl 2daf7d30 src/nccl_ofi_net.cpp:644 `NET/OFI Selected provider is %s, fabric is %s (found %d nics)`
        "h3:1:2 [0] NCCL INFO NET/OFI Selected provider is efa, fabric is efa-direct (found 16 nics)",
    ]);
    assert.equal(t.netChannels.count, 2);
    assert.equal(t.netChannelsWithoutGdr.count, 0);
    assert.deepEqual(t.ibChannelDevices, { 0: 2 });
    assert.deepEqual(t.ofiProviders, ["efa"]);
    assert.equal(t.gdrDisabled.count, 0);
});

test("NVIDIA/nccl-tests#373: NCCL 2.20-2.23's merged-NIC device list is read as devices and virtual devices, by position", () => {
    const name = "nccl-tests-373-ibext-merged-nics-nccl-lines.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 0);
    const t = p.transport;
    assert.deepEqual(t.ibDevices, ["mlx5_2:1/RoCE", "mlx5_3:1/RoCE", "mlx5_0:1/RoCE", "mlx5_1:1/RoCE"]);
    assert.deepEqual(t.ibVirtualDevices, { 0: ["mlx5_2", "mlx5_3"], 1: ["mlx5_0", "mlx5_1"] });
    assert.deepEqual(t.ibChannelDevices, { 1: 4 });
    const v = proveFabric(p, { fabric: "roce" });
    const net = v.find((x) => x.check === "net-transport");
    // before: the list was read as one device named `={[0]`, "devices ={[0] are not RoCE"
    assert.equal(net?.ok, true, net?.seen);
    assert.match(net!.seen, /devices: mlx5_2:1\/RoCE mlx5_3:1\/RoCE mlx5_0:1\/RoCE mlx5_1:1\/RoCE/);
    const gdr = v.find((x) => x.check === "gpudirect");
    assert.equal(gdr?.ok, false);
    assert.match(gdr!.seen, /^0 of 4 NET channel line\(s\) with \/GDRDMA/);
    assert.equal(proveFabric(p, { fabric: "ib" }).find((x) => x.check === "net-transport")?.ok, false);
});

test("a lone device after a merged one is the next net device, whatever physical index it prints", () => {
    // v2.21.5-1 src/transport/net_ib.cc:521-533: ` [%d]={[%d] %s:%d/%s, ..}` by net device, ` [%d]%s:%d/%s` by physical device
    const t = scanTransport([
        "h1:1:2 [0] NCCL INFO NET/IB : Using [0]={[0] mlx5_0:1/IB, [1] mlx5_1:1/IB} [2]mlx5_2:1/RoCE [RO]; OOB ib0:10.0.0.1<0>",
        "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/1/GDRDMA",
        "h2:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 8[0] [receive] via NET/IB/0/GDRDMA",
    ]);
    assert.deepEqual(t.ibDeviceByIndex, { 1: "mlx5_2:1/RoCE" });
    assert.deepEqual(t.ibVirtualDevices, { 0: ["mlx5_0", "mlx5_1"] });
    const log = parseNcclLog(read("xxrjun-cluster01-smoke-n2g1.log"));
    const net = proveFabric({ ...log, transport: t }, { fabric: "ib" }).find((x) => x.check === "net-transport");
    assert.equal(net?.ok, false);
    assert.match(net!.seen, /channels on mlx5_2:1\/RoCE, not IB/);
});

test("only channel lines count as paths inside a node, not every line that names NVLS", () => {
    const t = scanTransport([
        // NVIDIA/nccl v2.28.3-1 src/transport/nvls.cc:200, :214; aws-ofi-nccl's line as in test/fixtures/nccl-ref/06-*
        "h1:1:2 [0] NCCL INFO NVLS multicast support is not available on dev 0 (NVLS_NCHANNELS 0)",
        "h1:1:2 [0] NCCL INFO NET/OFI Setting NCCL_NVLS_CHUNKSIZE to 512KiB",
        "h1:1:2 [0] NCCL INFO Connected NVLS tree",
        "h1:1:2 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] via P2P/CUMEM/read",
    ]);
    assert.deepEqual(t.localChannels.lines.map((l) => l.line), [3, 4]);
});

test("the rule of dashes around a launcher notice is not NCCL's bare last error (nccl-tests v2.13.4 .. v2.17.2)", () => {
    // the v2.16.7 .. v2.17.2 shape of test/nccl-captures-r6.test.ts (src/common.cu main), the empty bare line lost, then
    // PRRTE's notice as in test/fixtures/nccl/alcf-sophia-*
    const lines = read("xxrjun-cluster01-smoke-n2g1.log").split("\n").slice(1, 20);
    const p = parseNcclLog([...lines, DASHES, "prterun detected that one or more processes exited with non-zero status,",
        "   Process name: [prterun-cnode3-002-2201000@1,1] Exit code:    3", DASHES].join("\n"));
    assert.equal(p.runs[0].lastError, null);
    assert.equal(p.launcherErrors.length, 2);
    assert.match(fileVerdict(gradeLog(p, ANY), "launcher")!.seen, /\(cnode3-003: process rank 1 was the first to exit non-zero \(exit code 3\)\)$/);
});

test("xxrjun 2511: every failure says the peer went away; the silent side of the broken connection is named, no culprit", () => {
    const name = "xxrjun-2511-n2g1-alltoall-peer-exited.log";
    const done = verdict(gradeLog(parseNcclLog(read(name), { name }), ANY), "completed");
    assert.match(done!.seen, /^aborted on cnode2-016: cnode2-016: Test NCCL failure alltoall\.cu:274 'remote process exited or there was a network error/);
    assert.match(done!.seen, /; no failure line from cnode2-005$/);
    assert.match(done!.hint ?? "", /connection between cnode2-016 and cnode2-005 .* one log cannot tell which side failed/);
    // a failure that is the node's own (not a peer gone) names no silent side
    const sophia = "alcf-sophia-n2g8-allreduce-gpu13-init-failure-prrte.log";
    assert.doesNotMatch(verdict(gradeLog(parseNcclLog(read(sophia), { name: sophia }), ANY), "completed")!.seen, /no failure line from/);
});

test("MPICH / Intel MPI Hydra's box names the node and how its process ended", () => {
    const EQ = "===================================================================================";
    // pmodels/mpich src/pm/hydra/mpiexec/pmiserv_cb.c:335-346
    const mpich = cutRun(["", EQ, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "=   PID 945256 RUNNING AT cnode3-003",
        "=   EXIT CODE: 139", "=   CLEANING UP REMAINING PROCESSES", "=   YOU CAN IGNORE THE BELOW CLEANUP MESSAGES", EQ]);
    const d1 = verdict(gradeLog(parseNcclLog(mpich, { name: "mpich.log" }), ANY), "completed");
    assert.match(d1!.seen, /^aborted on cnode3-003 after 3 row\(s\): = {3}BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES/);
    assert.match(d1!.seen, /the launcher: cnode3-003: a process terminated badly: exit code 139$/);
    // Intel MPI's form, as quoted in bsc-performance-tools/extrae#101
    const intel = cutRun([EQ, "=   BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES", "=   RANK 1 PID 945256 RUNNING AT cnode3-003",
        "=   KILLED BY SIGNAL: 9 (Killed)", EQ]);
    const d2 = verdict(gradeLog(parseNcclLog(intel, { name: "impi.log" }), ANY), "completed");
    assert.match(d2!.seen, /the launcher: cnode3-003: process rank 1 terminated badly: killed by signal 9 \(Killed\)$/);
    assert.match(d2!.hint ?? "", /a process on cnode3-003 died/);
    // a stray detail line amends nothing
    assert.equal(launcherReport([{ text: "=   KILLED BY SIGNAL: 9 (Killed)" }]), null);
});
