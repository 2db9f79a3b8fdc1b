/**
 * Round 5 of the nccl-tests grader against real logs (sources in each fixture's .source.md sidecar, byte for byte):
 * a 10-node, 80-GPU Slurm job running five collectives (xxrjun/nccl-tests-cluster, 2026), its single-node and smoke
 * runs, two pair jobs that died on "remote process exited or there was a network error", two ALCF two-node runs
 * (Sirius alltoall, Polaris all_reduce at 3 GB/s), an author-edited DGX Spark table that keeps only four columns,
 * coreweave/nccl-tests README excerpts (GB200 NVL72 racks, H100 SHARP) and NERSC Perlmutter runs through aws-ofi-nccl on
 * Slingshot (cxi) in podman (fails) and shifter (GPUDirect), NVIDIA DeepOps' 2019-layout tables and an aws-samples p5en
 * excerpt; plus two forms built from the v2.19.6 format strings.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog, failureHost, isNcclTestsLog, notLogReason } from "../components/validate/parse";
import { gradeLog, nodesOf } from "../components/validate/grade";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const completed = (g: ReturnType<typeof gradeLog>, i: number) => g.runs[i].verdicts.find((v) => v.check === "completed");

test("xxrjun 2511 pair cnode2-005+016: the peer's 'remote process exited' before any row fails the run on cnode2-016", () => {
    const name = "xxrjun-2511-n2g1-alltoall-peer-exited.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.collective, "alltoall_perf");
    assert.equal(run.version, "2.17.6");
    assert.equal(run.nRanks, 2);
    assert.deepEqual(run.hosts, ["cnode2-005", "cnode2-016"]);
    assert.equal(run.rows.length, 0);
    assert.equal(run.failures[0].line, 12);
    assert.equal(failureHost(run.failures[0].text), "cnode2-016");
    const g = gradeLog(p, ANY);
    assert.equal(completed(g, 0)?.ok, false);
    assert.match(completed(g, 0)?.seen ?? "", /^aborted on cnode2-016: .*Test NCCL failure alltoall\.cu:274 'remote process exited or there was a network error/);
    assert.equal(g.pass, false);
    const r = runNcclReport([file(name)], { fabric: "ib", nodes: "2", gpusPerNode: "1" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x completed .*aborted on cnode2-016/);
});

test("xxrjun 2511 pair cnode2-002+008 x4 GPUs: two runs (alltoall, sendrecv) each abort before the table, both named", () => {
    const name = "xxrjun-2511-n2g4-failures-before-table.log";
    const p = parseNcclLog(read(name), { name });
    assert.deepEqual(p.runs.map((r) => r.collective), ["alltoall_perf", "sendrecv_perf"]);
    for (const run of p.runs) {
        assert.equal(run.nRanks, 8);
        assert.deepEqual(run.hosts, ["cnode2-002", "cnode2-008"]);
        assert.equal(run.rows.length, 0);
        assert.equal(run.avgBusbwGBps, null);
    }
    assert.equal(p.runs[0].failures[0].line, 14);
    assert.equal(p.runs[1].failures[0].line, 33);
    const g = gradeLog(p, ANY);
    for (const i of [0, 1]) {
        assert.equal(completed(g, i)?.ok, false);
        assert.match(completed(g, i)?.seen ?? "", /^aborted on cnode2-002: .*common\.cu:1279 'remote process exited or there was a network error/);
    }
    assert.equal(g.pass, false);
});

test("xxrjun cluster01: a 10-node x 8 GPU job of five collectives is read whole; without NCCL INFO lines IB is not proven", () => {
    const name = "xxrjun-cluster01-10node-five-collectives.log";
    const p = parseNcclLog(read(name), { name });
    assert.deepEqual(p.runs.map((r) => r.collective),
        ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "sendrecv_perf"]);
    assert.deepEqual(p.runs.map((r) => r.avgBusbwGBps), [265.631, 218.677, 216.683, 47.1472, 15.1671]);
    for (const run of p.runs) {
        assert.equal(run.version, "2.17.8");
        assert.equal(run.nRanks, 80);
        assert.equal(run.hosts.length, 10);
        assert.equal(run.rows.length, 10);
        assert.deepEqual(run.outOfBounds?.count, 0);
    }
    // -e 64G was cut by nccl-tests ('# Reducing maxBytes to 26549638485 due to memory limitation', line 87): the
    // table stops at 16 GiB and that row is the one graded
    const big = p.runs[0].rows[p.runs[0].rows.length - 1];
    assert.equal(big.sizeBytes, 17179869184);
    assert.equal(big.outOfPlace.busbwGBps, 320.54);
    const r = runNcclReport([file(name)], { fabric: "ib", nodes: "10", gpusPerNode: "8", expect: "300" });
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stdout, /x multi-node/);
    assert.match(r.stdout, /x net-transport .*no NCCL INFO lines: the transport is not shown/);
    // 300 GB/s is an all_reduce figure; sendrecv's 15 GB/s at 16 GiB fails it, alltoall's 50 GB/s too
    assert.match(r.stdout, /x busbw \[xxrjun-cluster01-10node-five-collectives\.log run 5 \(sendrecv_perf\)\]/);
});

test("xxrjun cluster01 single node x 8 H100: five collectives pass a 300 GB/s floor; the same log is no 2-node IB proof", () => {
    const name = "xxrjun-cluster01-n1g8-single-node.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 5);
    assert.deepEqual(p.runs.map((r) => r.hosts), Array(5).fill(["cnode3-002"]));
    const pass = runNcclReport([file(name)], { expect: "300" });
    assert.equal(pass.code, 0);
    assert.match(pass.stdout, /^nccl-tests validation: PASS/);
    const fab = runNcclReport([file(name)], { fabric: "ib", nodes: "2", gpusPerNode: "8", expect: "300" });
    assert.equal(fab.code, 1);
    assert.match(fab.stdout, /x multi-node/);
});

test("xxrjun cluster01 smoke pair: sizes stop at 512 MiB, so a GB/s floor has nothing to grade and does not pass", () => {
    const name = "xxrjun-cluster01-smoke-n2g1.log";
    const p = parseNcclLog(read(name), { name });
    assert.deepEqual(p.runs.map((r) => r.avgBusbwGBps), [43.6076, 42.9182]);
    assert.deepEqual(p.runs.map((r) => r.rows.length), [5, 5]);
    const r = runNcclReport([file(name)], { expect: "1" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x busbw .*largest size is 512 MiB: nothing to grade/);
});

test("ALCF Sirius 2 nodes x 4 A100 alltoall (no version line): the test comes from the file name, 2.49 GB/s at 1 GiB", () => {
    const name = "alcf-sirius-2node-alltoall.log";
    const p = parseNcclLog(read(name), { name });
    const run = p.runs[0];
    assert.equal(run.collective, "alltoall_perf");
    assert.equal(run.version, null);
    assert.equal(run.nRanks, 8);
    assert.deepEqual(run.hosts, ["x3200c0s31b1n0", "x3200c0s37b1n0"]);
    assert.equal(run.rows.length, 29);
    assert.equal(run.avgBusbwGBps, 1.04547);
    const r = runNcclReport([file(name)], { fabric: "ib", nodes: "2", gpusPerNode: "4" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x net-transport/);
    assert.match(r.stdout, /at 1 GiB: 2\.49 GB\/s \/ 2\.48 GB\/s/);
});

test("ALCF Polaris 2 nodes x 4 A100 all_reduce with NCCL 2.21 at 3.1 GB/s fails a Slingshot-class floor", () => {
    const name = "alcf-polaris-nccl221-2node-allreduce.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs[0].collective, "all_reduce_perf");
    assert.equal(p.runs[0].avgBusbwGBps, 1.16285);
    const r = runNcclReport([file(name)], { expect: "20" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x busbw .*seen 3\.1 GB\/s/);
});

test("DGX Spark table cut to 'size time algbw busbw' by its author is refused by name as an edited excerpt, never graded", () => {
    const name = "spark-roce-allgather-edited-columns.log";
    const text = read(name);
    assert.equal(isNcclTestsLog(parseNcclLog(text, { name })), false);
    assert.match(notLogReason(text), /^has a result table headed 'size time algbw busbw', which is no column layout nccl-tests prints/);
    const r = runNcclReport([file(name)], { expect: "1" });
    assert.equal(r.code, 2);
    assert.match(r.stdout + r.stderr, /an edited excerpt, not read/);
    // a real header is never taken for an edited one
    assert.doesNotMatch(notLogReason("#       size         count      type   redop    root     time   algbw   busbw  #wrong\n"), /edited/);
});

test("coreweave GB200 excerpts that keep only the last rank line: the rank count holds, the hosts are not the job's", () => {
    for (const [name, ranks, host, avg] of [
        ["coreweave-gb200-1rack-last-rank-line.log", 72, "slurm-gb200-207-171", 745.53],
        ["coreweave-gb200-2rack-last-rank-line.log", 144, "slurm-gb200-207-171", 688.487],
        ["coreweave-gb200-20rack-last-rank-line.log", 1440, "slurm-gb200-218-073", 297.808],
    ] as const) {
        const p = parseNcclLog(read(name), { name });
        const run = p.runs[0];
        assert.equal(run.collective, "all_reduce_perf", name);
        assert.equal(run.nRanks, ranks, name);
        assert.deepEqual(run.hosts, [host], name);
        assert.equal(run.ranksElided, true, `${name}: Rank ${ranks - 1} alone is an excerpt of the list`);
        assert.equal(nodesOf(run), null, name);
        assert.equal(run.avgBusbwGBps, avg, name);
        assert.equal(run.completed, true, name);
        const r = runNcclReport([file(name)], { fabric: "roce", nodes: String(ranks / 4), gpusPerNode: "4" });
        assert.equal(r.code, 1, name);
        assert.match(r.stdout, /x multi-node .*hosts not shown: the rank list is incomplete/, name);
        assert.doesNotMatch(r.stdout, /only slurm-gb200/, name);
        assert.doesNotMatch(r.stdout, /on 1 node/, name);
    }
    // a whole list is still counted: ranks 0..n-1 once each
    const whole = parseNcclLog(read("xxrjun-cluster01-10node-five-collectives.log"));
    assert.equal(whole.runs[0].ranksElided, false);
});

test("coreweave H100 SHARP job: the rank list is '...', 96 ranks come from busbw/algbw, 386.56 GB/s at 8 GiB", () => {
    const name = "coreweave-h100-sharp-allreduce-elided.log";
    const p = parseNcclLog(read(name), { name });
    const run = p.runs[0];
    assert.equal(run.collective, "all_reduce_perf");
    assert.equal(run.nRanksFrom, "busbw-factor");
    assert.equal(run.nRanks, 96);
    assert.equal(run.rows.length, 5);
    assert.equal(run.avgBusbwGBps, 373.187);
    const g = gradeLog(p, { ...ANY, minBusbwGBps: 300, gradeFromBytes: 1 << 30 });
    assert.equal(g.pass, true);
    assert.match(g.runs[0].verdicts.find((v) => v.check === "busbw")?.seen ?? "", /^363\.59 GB\/s \(lowest of 4 sizes 1 GiB\.\.8 GiB/);
});

test("NERSC Perlmutter in podman: AWS Libfabric on cxi fails to register memory, both nodes abort; the WARN is named", () => {
    const name = "nersc-perlmutter-podman-ofi-cxi-failure.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.nRanks, 8);
    assert.deepEqual([...run.hosts].sort(), ["nid003981", "nid004048"]);
    assert.equal(run.rows.length, 0);
    assert.deepEqual(p.transport.networks, ["AWS Libfabric"]);
    const g = gradeLog(p, ANY);
    const done = completed(g, 0);
    assert.equal(done?.ok, false);
    assert.match(done?.seen ?? "", /^aborted on nid004048, nid003981: .*common\.cu:1012 'unhandled system error/);
    assert.match(done?.seen ?? "", /NCCL WARN \(line 3195\): NET\/OFI Unable to register memory/);
    // Slingshot is no fabric the kit builds: graded as EFA it is named as the cxi provider, not passed
    const r = runNcclReport([file(name)], { fabric: "efa", nodes: "2", gpusPerNode: "4" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x net-transport .*OFI provider cxi, not efa/);
});

test("NERSC Perlmutter in shifter: the same job runs, every channel via NET/AWS Libfabric/GDRDMA, 74.3 GB/s at 4 GiB", () => {
    const name = "nersc-perlmutter-shifter-ofi-cxi-gdrdma.log";
    const p = parseNcclLog(read(name), { name });
    const run = p.runs[0];
    assert.equal(run.nRanks, 8);
    assert.equal(run.hosts.length, 2);
    assert.equal(run.completed, true);
    assert.ok(p.transport.netChannels.count > 0);
    assert.equal(p.transport.netChannelsWithoutGdr.count, 0);
    assert.equal(p.transport.socket.count, 0);
    const g = gradeLog(p, { ...ANY, minBusbwGBps: 20, gradeFromBytes: 1 << 30, requireGdr: true });
    assert.equal(g.verdicts.find((v) => v.check === "gpudirect")?.ok, true);
    assert.equal(g.pass, true);
    const r = runNcclReport([file(name)], { fabric: "efa", nodes: "2", gpusPerNode: "4" });
    assert.match(r.stdout, /x net-transport .*OFI provider cxi, not efa/);
    assert.doesNotMatch(r.stdout, /x (?:gpudirect|multi-node)/);
});

// constructed from NVIDIA/nccl-tests v2.19.6 format strings: src/util.cu writeBenchmarkLinePreamble ("%12li  %12li  %8s
// %6s  %6s"), writeBenchmarkLineBody ("  %7s  %6s  %6s  %6g" / "    N/A"), src/alltoallv.cu AlltoAllvPrintRankBandwidths
// and src/hypercube.cu HyperCubeRunTest; the figures are made up
const HEAD = (test: string, nGpus: number): string[] => [
    "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807", `# Collective test starting: ${test}`,
    `# nThread 1 nGpus ${nGpus} minBytes 1048576 maxBytes 1048576 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0`,
    "#", "# Using devices",
    ...Array.from({ length: nGpus }, (_, i) => `#  Rank ${String(i).padStart(2)} Group  0 Pid  15784 on      nodeA device ${String(i).padStart(2)} [0000:1b:00] NVIDIA H100 80GB HBM3`),
    "#",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
];
const FOOT = (test: string, avg: string): string[] =>
    ["# Out of bounds values : 0 OK", `# Avg bus bandwidth    : ${avg} `, "#", `# Collective test concluded: ${test}`, "#"];

test("alltoallv_perf with NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1: the summary glued to the row's pieces is cut off, the row read", () => {
    const sum = "# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=generated nranks=2 total_bytes=1048576 spread=0.500 time_usec=30.61";
    const rank = (r: number) => `#   rank=${r} send_bytes=524288 recv_bytes=524288 alg_bw=17.13 bus_bw=8.56`;
    const text = [...HEAD("alltoallv_perf", 2),
        "     1048576        131072     float    none      -1" + sum, rank(0), rank(1),
        "    30.61   34.26   17.13       0" + sum, rank(0), rank(1),
        "    29.90   35.07   17.53    N/A",
        ...FOOT("alltoallv_perf", "17.33")].join("\n");
    const run = parseNcclLog(text).runs[0];
    assert.equal(run.collective, "alltoallv_perf");
    assert.equal(run.rows.length, 1);
    assert.equal(run.rows[0].line, 12, "the row is numbered by its first piece");
    assert.deepEqual(run.rows[0].outOfPlace, { timeUs: 30.61, algbwGBps: 34.26, busbwGBps: 17.13, wrong: 0, maxError: null });
    assert.equal(run.rows[0].inPlace?.busbwGBps, 17.53);
    assert.equal(run.rows[0].inPlace?.wrong, null);
    assert.equal(run.completed, true);
    // a summary line of its own is a comment, and the `#   rank=` lines are no rank list
    assert.deepEqual(run.hosts, ["nodeA"]);
    assert.equal(run.nRanks, 2);
});

test("hypercube_perf on 3 ranks skips itself ('nRanks 3 is not a power of 2'): named as nothing measured, not as a cut log", () => {
    const text = [...HEAD("hypercube_perf", 3), "nRanks 3 is not a power of 2, skipping", ...FOOT("hypercube_perf", "-nan")].join("\n");
    const p = parseNcclLog(text);
    const run = p.runs[0];
    assert.equal(run.rows.length, 0);
    assert.equal(run.avgBusbwGBps, null, "-nan is no figure");
    assert.deepEqual(run.skipped, { line: 13, text: "nRanks 3 is not a power of 2, skipping" });
    const g = gradeLog(p, ANY);
    assert.equal(completed(g, 0)?.ok, false);
    assert.equal(completed(g, 0)?.seen, "skipped by nccl-tests, nothing measured: nRanks 3 is not a power of 2, skipping");
    assert.doesNotMatch(completed(g, 0)?.seen ?? "", /truncated/);
    assert.equal(g.pass, false);
});

test("NVIDIA DeepOps tables (2019-2022 `error` layout, no rank list): all_reduce and the rank count come from busbw/algbw", () => {
    for (const [name, ranks, rows, avg, top] of [
        ["deepops-dgx-a100-k8s-ib-allreduce-2019layout.log", 16, 30, 53.7098, 188.53],
        ["deepops-k8s-sriov-roce-allreduce-2019layout.log", 16, 29, 7.76739, 22.92],
        ["deepops-slurm-4x-dgx-a100-allreduce-2019layout.log", 32, 13, 113.289, 191.05],
    ] as const) {
        const p = parseNcclLog(read(name), { name });
        const run = p.runs[0];
        assert.equal(run.collective, "all_reduce_perf", name);
        assert.equal(run.collectiveFrom, "busbw-factor", name);
        assert.equal(run.layout, "2019", name);
        assert.equal(run.checkColumn, "error", name);
        assert.equal(run.nRanks, ranks, name);
        assert.equal(run.nRanksFrom, "busbw-factor", name);
        assert.equal(run.rows.length, rows, name);
        assert.equal(run.avgBusbwGBps, avg, name);
        const last = run.rows[run.rows.length - 1].outOfPlace;
        assert.equal(last.busbwGBps, top, name);
        assert.equal(last.wrong, null, `${name}: the error column is a max relative delta, not a count`);
        assert.ok((last.maxError ?? 1) <= 1e-6, name);
        assert.equal(gradeLog(p, ANY).runs[0].verdicts.find((v) => v.check === "correctness")?.ok, true, name);
    }
    const ib = runNcclReport([file("deepops-dgx-a100-k8s-ib-allreduce-2019layout.log")], { fabric: "ib", nodes: "2", gpusPerNode: "8", expect: "150" });
    assert.equal(ib.code, 1);
    assert.match(ib.stdout, /x multi-node .*no host printed/);
    assert.doesNotMatch(ib.stdout, /x busbw/);
    assert.doesNotMatch(ib.stdout, /nRanks 16 \(busbw\/algbw\)/, "16 = 2 x 8 ranks is what was asked");
});

test("aws p5en 16-node excerpt with `...` for the middle rows: 128 ranks from busbw/algbw, the 16 GiB row graded", () => {
    const name = "aws-p5en-16node-allreduce-rows-elided.log";
    const p = parseNcclLog(read(name), { name });
    const run = p.runs[0];
    assert.equal(run.nRanks, 128);
    assert.deepEqual(run.rows.map((r) => r.sizeBytes), [8, 16, 17179869184]);
    const g = gradeLog(p, { ...ANY, minBusbwGBps: 300, gradeFromBytes: 16 * 1024 ** 3 });
    assert.equal(g.pass, true);
    assert.match(g.runs[0].verdicts.find((v) => v.check === "busbw")?.seen ?? "", /^369\.64 GB\/s/);
});
