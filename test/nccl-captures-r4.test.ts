/**
 * Round 4 of the nccl-tests grader against real logs and the tool's full output grammar (test/fixtures/nccl-ref/FORMAT.md
 * §6): real logs from NVIDIA/nccl-tests#293 and #355 (sources in their .source.md sidecars), and lines built here from
 * the format strings of NVIDIA/nccl-tests@a0b82b2 (v2.19.6) src/util.cu and src/common.cu, each marked as constructed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog, testOfProgram, failureHost } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import { scanTransport } from "../components/validate/transport";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const IB_GDR: Expectation = { ...ANY, transport: "ib", requireGdr: true };

test("nccl-tests#355: a CUDA failure printed after the first row's preamble fails the run on node0, nothing graded", () => {
    const p = parseNcclLog(read("nccl-tests-355-alltoall-cuda-failure-in-row.log"));
    const run = p.runs[0];
    assert.equal(p.runs.length, 1);
    assert.equal(run.collective, "alltoall_perf");
    assert.equal(run.version, "2.17.6");
    assert.equal(run.nRanks, 16);
    assert.deepEqual(run.hosts, ["node0", "node1"]);
    assert.equal(run.rows.length, 0);
    assert.equal(run.failures[0].line, 27);
    // the host is read from the head line itself, which starts with the row's preamble
    assert.equal(failureHost(run.failures[0].text), "node0");
    const g = gradeLog(p, ANY);
    const done = g.runs[0].verdicts.find((v) => v.check === "completed");
    assert.equal(done?.ok, false);
    assert.match(done?.seen ?? "", /^aborted on node0: .*Test CUDA failure common\.cu:389 'an illegal memory access was encountered'/);
    assert.equal(g.pass, false);
});

test("nccl-tests#293: HDR InfiniBand through HPC-X's IBext_v8 with GPUDirect is proven, and 6.44 GB/s fails an HDR floor", () => {
    const name = "nccl-tests-293-hdr-ib-sharp-plugin-gdr-level-sys.log";
    const p = parseNcclLog(read(name), { name });
    const run = p.runs[0];
    assert.equal(run.rows.length, 28);
    assert.deepEqual(run.hosts, ["test1", "test2"]);
    assert.equal(run.avgBusbwGBps, 2.36313);
    assert.deepEqual(run.outOfBounds, { count: 0, ok: true, line: 91 });
    assert.deepEqual(p.transport.networks, ["IBext_v8"]);
    assert.equal(p.transport.gdrDisabled.count, 0, "NCCL_NET_GDR_LEVEL=SYS does not turn GPUDirect off");
    const g = gradeLog(p, { ...IB_GDR, minBusbwGBps: 20, gradeFromBytes: 1 << 30 });
    const by = (c: string) => [...g.verdicts, ...g.runs[0].verdicts].find((v) => v.check === c);
    assert.equal(by("transport")?.ok, true);
    assert.equal(by("gpudirect")?.ok, true);
    assert.equal(by("socket-fallback")?.ok, true);
    assert.equal(by("correctness")?.ok, true);
    assert.equal(by("busbw")?.ok, false);
    assert.match(by("busbw")?.seen ?? "", /^6\.44 GB\/s/);
    // through the command: the IB fabric is proven on two nodes, the bandwidth is not
    const r = runNcclReport([file(name)], { fabric: "ib", nodes: "2", gpusPerNode: "1", expect: "20" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x busbw .*seen 6\.44 GB\/s/);
    assert.doesNotMatch(r.stdout, /x (?:net-transport|gpudirect|multi-node)/);
});

test("nccl-tests#293 without NCCL_NET_GDR_LEVEL: every channel lacks /GDRDMA, and the cut paste is no finished run", () => {
    const name = "nccl-tests-293-hdr-ib-no-gdrdma-cut.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.transport.netChannels.count, 8);
    assert.equal(p.transport.netChannelsWithoutGdr.count, 8);
    const g = gradeLog(p, IB_GDR);
    const gdr = g.verdicts.find((v) => v.check === "gpudirect");
    assert.equal(gdr?.ok, false);
    assert.match(gdr?.seen ?? "", /^0 NET channel line\(s\) with \/GDRDMA, 8 without/);
    assert.match(g.runs[0].verdicts.find((v) => v.check === "completed")?.seen ?? "", /^truncated: no result rows and no footer/);
});

// constructed from v2.19.6 src/util.cu format strings (FORMAT.md §6)
const DEVICES = [
    "# nccl-tests version 2.19.6 nccl-headers=22807 nccl-library=22807",
    "# Collective test starting: all_gather_perf_mpi",
    "# nThread 1 nGpus 1 minBytes 1048576 maxBytes 2097152 step: 2(factor) warmup iters: 1 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
    "#",
    "# Using devices",
    "#  Rank  0 Group  0 Pid  15784 on      nodeA device  0 [0000:1b:00] NVIDIA H100 80GB HBM3",
    "#  Rank  1 Group  0 Pid  15785 on      nodeB device  0 [0000:1b:00] NVIDIA H100 80GB HBM3",
];
const TABLE = [
    "#",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)         ",
    "     1048576        131072     float    none      -1    30.61   34.26   17.13       0    29.90   35.07   17.53       0",
    "     2097152        262144     float    none      -1    50.12   41.84   20.92       3    49.80   42.11   21.06       0",
];

test("a build's NAME_SUFFIX (`all_gather_perf_mpi`) names all_gather_perf, so its busbw factor and rank count apply", () => {
    assert.equal(testOfProgram("all_gather_perf_mpi"), "all_gather_perf");
    assert.equal(testOfProgram("reduce_scatter_perf"), "reduce_scatter_perf");
    assert.equal(testOfProgram("my_bench"), "my_bench");
    const p = parseNcclLog([...DEVICES, ...TABLE, "# Out of bounds values : 1 FAILED", "# Avg bus bandwidth    : 19.16 ", "#",
        "# Collective test concluded: all_gather_perf_mpi", "#"].join("\n"));
    assert.equal(p.runs[0].collective, "all_gather_perf");
    assert.equal(p.runs[0].rows.length, 2);
});

test("v2.17.3+: the exit trace after a FAILED footer is the run's own, not a launcher error; `# error:` is shown", () => {
    const text = [...DEVICES, ...TABLE, "# Out of bounds values : 1 FAILED", "# Avg bus bandwidth    : 19.16 ", "#",
        "# Collective test concluded: all_gather_perf_mpi", "#", "# error: remote process exited or there was a network error",
        " .. nodeA pid 15784: Test failure common.cu:1454", " .. nodeB pid 15785: Test failure common.cu:1454"].join("\n");
    const p = parseNcclLog(text);
    assert.deepEqual(p.launcherErrors, []);
    assert.equal(p.runs.length, 1);
    assert.deepEqual(p.runs[0].afterFooter.map((l) => l.line), [20, 21]);
    assert.equal(p.runs[0].lastError?.text, "remote process exited or there was a network error");
    const g = gradeLog(p, ANY);
    const v = g.runs[0].verdicts;
    assert.equal(v.find((x) => x.check === "correctness")?.ok, false);
    assert.equal(v.find((x) => x.check === "exit"), undefined, "the trace is the FAILED footer's exit status");
    assert.match(v.find((x) => x.check === "completed")?.seen ?? "", /NCCL's last error \(line 19\): remote process exited/);
    assert.equal(g.verdicts.find((x) => x.check === "launcher"), undefined);
});

test("an exit trace after a clean footer is another process's failed results check; a new process's failure head after it stays a launcher error", () => {
    const ok = [...DEVICES, ...TABLE.slice(0, 5), "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 17.33 ", "#",
        "# Collective test concluded: all_gather_perf_mpi", "#"];
    const g = gradeLog(parseNcclLog([...ok, " .. nodeA pid 15784: Test failure common.cu:1454"].join("\n")), ANY);
    const exit = g.runs[0].verdicts.find((x) => x.check === "exit");
    assert.equal(exit?.ok, false);
    assert.match(exit?.seen ?? "", /failed after its footer: \.\. nodeA pid 15784/);
    // the teardown (frees, ncclCommDestroy) runs before the footer (src/common.cu run(), v2.17.3..v2.19.6): after a
    // clean one only a process's own results check fails, which is what the hint must send the user to
    assert.match(exit?.hint ?? "", /NCCL_TESTS_MIN_BW/);
    assert.doesNotMatch(exit?.hint ?? "", /tearing down/);
    const p = parseNcclLog([...ok, "nodeB: Test NCCL failure common.cu:1011 'unhandled system error'",
        " .. nodeB pid 99: Test failure common.cu:1200"].join("\n"));
    assert.deepEqual(p.runs[0].afterFooter, []);
    assert.equal(p.launcherErrors.length, 2);
});

test("-I 1 per-iteration columns and a 2048-byte rank list cut with `...` are read (src/util.cu writeResultHeader, MAX_LINE)", () => {
    const perIter = [
        DEVICES[0], "# Collective test starting: all_reduce_perf", DEVICES[2],
        "# Per-Iteration Report: CUDA event timing; i_* uses max over process rows ", "#", "# Using devices",
        "#  Rank  0 Group  0 Pid  15784 on      nodeA device  0 [0000:1b:00] NVIDIA H100 80GB HBM3",
        "#  Rank  1 Group  0 Pid  15784 on      nodeA device  1 [0000:2b:00] NVIDIA H1...", "#",
        "#                                                         out-of-place (+ per-iteration)                                in-place (+ per-iteration)",
        "#       size         count      type   redop    root     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%     time   algbw   busbw  #wrong    i_min    i_max    i_p99    i_cv%  ",
        "     1048576        262144     float     sum      -1    39.61   26.47   26.47       0    38.00    41.20    41.00     1.20    38.85   26.99   26.99       0    38.00    40.00    39.90     1.10",
        "# Out of bounds values : 0 OK", "# Avg bus bandwidth    : 26.73 ",
    ].join("\n");
    const run = parseNcclLog(perIter).runs[0];
    assert.equal(run.rows.length, 1);
    assert.equal(run.rows[0].inPlace?.busbwGBps, 26.99);
    assert.equal(run.rows[0].outOfPlace.wrong, 0);
    assert.equal(run.ranksElided, true);
    assert.equal(run.completed, true);
});

test("NCCL_NET_GDR_LEVEL=LOC and aws-ofi-nccl's `disabling GDR` are named as why GPUDirect is off (NCCL paths.cc, ofiutils.cpp)", () => {
    const t = scanTransport([
        "h1:1:2 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to LOC",
        "h1:1:2 [0] NCCL INFO NCCL_NET_GDR_LEVEL set by environment to SYS",
        "h1:1:2 [0] NCCL INFO NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR",
    ]);
    assert.deepEqual(t.gdrDisabled.lines.map((l) => l.line), [1, 3]);
});
