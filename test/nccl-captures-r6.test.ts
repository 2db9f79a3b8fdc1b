/**
 * Round 6 of the nccl-tests grader: ROCm/rccl-tests logs (a real two-node run from ROCm/ROCm#5571 and the forms its
 * src/common.cu and newest util.cu print: colon parameter lines, `*`-marked error cells, one-placement tables, `algo proto
 * nchannels` columns, its own version lines), NCCL's last error as the bare line nccl-tests v2.13.4 .. v2.17.2 print
 * after the footer, and rank lines a log cut short. Constructed logs are built here from the format strings named at
 * each; the real one's source is in its .source.md sidecar.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog, nodesOf, wrongRows } from "../components/validate/grade";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const verdict = (g: ReturnType<typeof gradeLog>, check: string, i = 0) => g.runs[i].verdicts.find((v) => v.check === check);

test("ROCm/ROCm#5571: a real rccl-tests two-node run is read as rccl-tests, same grammar, and graded", () => {
    const name = "rocm-5571-rccl-tests-r9700-2node-allreduce.log";
    const p = parseNcclLog(read(name), { name });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.tool, "rccl-tests");
    assert.equal(run.version, "develop:33cc4df");
    assert.equal(run.collective, "all_reduce_perf");
    assert.equal(run.nRanks, 2);
    assert.deepEqual(run.hosts, ["corona", "bootes"]);
    assert.equal(run.rows.length, 25);
    assert.deepEqual([run.rows[24].sizeBytes, run.rows[24].outOfPlace.busbwGBps, run.rows[24].inPlace?.busbwGBps], [134217728, 10.77, 10.77]);
    assert.equal(run.avgBusbwGBps, 3.51213);
    assert.equal(run.completed, true);
    assert.equal(run.lastError, null);
    const g = gradeLog(p, ANY);
    assert.equal(verdict(g, "completed")?.ok, true);
    assert.equal(verdict(g, "correctness")?.ok, true);
    const r = runNcclReport([file(name)], { fabric: "roce", nodes: "2", gpusPerNode: "1", expect: "40" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /FAIL rocm-5571-[^:]*: rccl-tests all_reduce_perf \(2 ranks on 2 nodes\)/);
    assert.match(r.stdout, /x net-transport .*seen no NCCL INFO lines/);
    assert.match(r.stdout, /x busbw .*seen largest size is 128 MiB: nothing to grade/);
});

// ROCm/rccl-tests src/common.cu at 924521f .. 6e9e059 (2019-06 .. 2020-03): `# nThread: %d nGpus: %d minBytes: %ld ..`,
// rows `  %7s  %6.2f  %6.2f  %5.0le%s` with "*" when the delta is over the threshold, the asterisk note, the footer
const RCCL_2019 = [
    "# nThread: 1 nGpus: 2 minBytes: 1048576 maxBytes: 2097152 step: 2(factor) warmupIters: 5 iters: 20 validation: 1 ",
    "#",
    "# Using devices",
    "#   Rank  0 Pid  41001 on     mi100a device  0 [0x03] Device 738c",
    "#   Rank  1 Pid  41001 on     mi100a device  1 [0x23] Device 738c",
    "#",
    "#                                                     out-of-place                       in-place          ",
    "#       size         count    type   redop     time   algbw   busbw  error     time   algbw   busbw  error",
    "#        (B)    (elements)                     (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    "     1048576        262144   float     sum    41.20   25.45   25.45  0e+00    41.02   25.56   25.56  0e+00",
    "     2097152        524288   float     sum    70.33   29.82   29.82  1e+00*    69.90   30.00   30.00  0e+00",
    "# Errors with asterisks indicate errors that have exceeded the maximum threshold.",
    "# Out of bounds values : 1 FAILED",
    "# Avg bus bandwidth    : 27.7075 ",
    "#",
];

test("rccl-tests 2019-2020: the colon parameter line is read and a `*`-marked error cell is a wrong row, not a lost row", () => {
    const p = parseNcclLog(RCCL_2019.join("\n"));
    const run = p.runs[0];
    assert.equal(run.tool, "rccl-tests");
    assert.equal(run.params.nGpus, 2);
    assert.equal(run.params.maxBytes, 2097152);
    assert.equal(run.params.warmupIters, 5);
    assert.equal(run.params.iters, 20);
    assert.equal(run.rows.length, 2, "the row whose error cell ends in * is kept");
    assert.equal(run.rows[1].outOfPlace.maxError, 1);
    assert.equal(run.rows[1].outOfPlace.overThreshold, true);
    assert.deepEqual(wrongRows(run).map((r) => r.sizeBytes), [2097152]);
    const c = verdict(gradeLog(p, ANY), "correctness");
    assert.equal(c?.ok, false);
    assert.match(c?.seen ?? "", /error marked \* \(over the threshold\) at 2 MiB/);
});

// ROCm/rccl-tests src/common.cu at ae3e635 (2024-09): `-O 0` prints the in-place banner and header alone, rows
// `%12li  %12li  %8s  %6s  %6s` then one `  %7s  %6.2f  %6.2f  %5g`; `# Testing %lu cycle.` between stress cycles
const RCCL_INPLACE = [
    "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 2147483648 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "#",
    "rccl-tests: Version develop:ae3e635",
    "# Using devices",
    "#   Rank  0 Pid   7085 on      nodeA device  0 [0000:05:00.0] AMD Instinct MI300X",
    "#   Rank  1 Pid   7086 on      nodeB device  0 [0000:05:00.0] AMD Instinct MI300X",
    "#",
    "#                                                              in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       ",
    "  1073741824     268435456     float     sum      -1    22410   47.91   47.91      0",
    "  2147483648     536870912     float     sum      -1    44734   48.01   48.01      0",
    "# Testing 2 cycle.",
    "  1073741824     268435456     float     sum      -1    22514   47.69   47.69      0",
    "  2147483648     536870912     float     sum      -1    44670   48.08   48.08      0",
    "# Errors with asterisks indicate errors that have exceeded the maximum threshold.",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 47.9225 ",
    "#",
    "",
];

test("rccl-tests -O 0: a table of the in-place half alone is read (0 rows before); stress cycles repeat rows", () => {
    const p = parseNcclLog(RCCL_INPLACE.join("\n"));
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.tool, "rccl-tests");
    assert.equal(run.rows.length, 4);
    for (const row of run.rows) {
        assert.equal(row.outOfPlace.busbwGBps, null, "no out-of-place half was run");
        assert.ok((row.inPlace?.busbwGBps ?? 0) > 47);
        assert.equal(row.inPlace?.wrong, 0);
    }
    assert.equal(run.lastError, null, "the empty line after the footer is the empty last error");
    const g = gradeLog(p, { ...ANY, minBusbwGBps: 40, gradeFromBytes: 1 << 30 });
    assert.equal(verdict(g, "busbw")?.ok, true);
    assert.match(verdict(g, "busbw")?.seen ?? "", /^47\.69 GB\/s .*out-of-place n\/a, in-place 47\.69/);
    assert.equal(g.pass, true);
});

// ROCm/rocm-systems projects/rccl-tests/src/util.cu (2026): `# rccl-tests version %s-%s rccl-headers=%d rccl-library=%d`,
// `algo proto nchannels` after the placements and `%8s  %8s  %10d` words ending each row, `# error: %s` (writeErrors)
const RCCL_2026 = [
    "# rccl-tests version 2.18.2-d3fa1e6 rccl-headers=22703 rccl-library=22703",
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 8 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0 unalign: 0",
    "#",
    "# Using devices",
    ...[0, 1, 2, 3, 4, 5, 6, 7].map((i) => `#  Rank  ${i} Group  0 Pid   9632 on   GPU-6403 device  ${i} [0000:${(16 * i + 10).toString(16)}:00] AMD Instinct MI355X`),
    "#",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong                             algo      proto      nchannels ",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)                                                          ",
    "  1073741824     268435456     float     sum      -1   4889.6  219.60  384.30       0   4886.2  219.75  384.56       0    RING    SIMPLE          64",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 384.43 ",
    "#",
    "# Collective test concluded: all_reduce_perf",
    "#",
    "# error: NUMA auto balancing enabled which can lead to variability in the RCCL performance! Disable by \"sudo sysctl kernel.numa_balancing=0\"",
];

test("rccl-tests' newest util.cu: its version line, `algo proto nchannels` words after the figures, `# error:` shown with the run", () => {
    const p = parseNcclLog(RCCL_2026.join("\n"));
    const run = p.runs[0];
    assert.equal(run.tool, "rccl-tests");
    assert.equal(run.version, "2.18.2-d3fa1e6");
    assert.equal(run.nRanks, 8);
    assert.equal(run.rows.length, 1);
    assert.deepEqual([run.rows[0].outOfPlace.busbwGBps, run.rows[0].inPlace?.busbwGBps, run.rows[0].inPlace?.wrong], [384.3, 384.56, 0]);
    assert.match(run.lastError?.text ?? "", /^NUMA auto balancing enabled/);
    const g = gradeLog(p, ANY);
    assert.equal(verdict(g, "completed")?.ok, true);
    // NCCL's last error is shown with the finished run; a WARN of a run whose data and figures pass fails nothing
    assert.equal(verdict(g, "nccl-error"), undefined);
    assert.match(verdict(g, "completed")?.seen ?? "", /; NCCL's last error \(line 24\): NUMA auto balancing enabled/);
    assert.equal(g.pass, true);
});

// nccl-tests v2.16.7 .. v2.17.2 (src/common.cu main): `Group` rank lines, no version line, the footer, `#`, `# Collective
// test concluded: %s`, then `PRINT("%s\n", ncclGetLastError(NULL))`
const V2172 = [
    "# Collective test starting: all_reduce_perf",
    "# nThread 1 nGpus 1 minBytes 1073741824 maxBytes 1073741824 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0",
    "#",
    "# Using devices",
    "#  Rank  0 Group  0 Pid  15784 on    node001 device  0 [0x1b] NVIDIA H100 80GB HBM3",
    "#  Rank  1 Group  0 Pid  15785 on    node002 device  0 [0x1b] NVIDIA H100 80GB HBM3",
    "#",
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
    "  1073741824     268435456     float     sum      -1    22410   47.91   47.91      0    22414   47.90   47.90      0",
    "# Out of bounds values : 0 OK",
    "# Avg bus bandwidth    : 47.905 ",
    "#",
    "# Collective test concluded: all_reduce_perf",
];

test("nccl-tests v2.13.4 .. v2.17.2: NCCL's last error printed bare after the footer is read and shown with the run", () => {
    const text = [...V2172, "node001:15784:15790 [0] NCCL INFO comm 0x55 rank 0 nranks 2 - Destroy COMPLETE",
        "NET/IB : Got async event : port error"].join("\n");
    const p = parseNcclLog(text);
    assert.equal(p.runs.length, 1);
    assert.deepEqual(p.runs[0].lastError, { line: 17, text: "NET/IB : Got async event : port error" });
    assert.deepEqual(p.launcherErrors, []);
    const g = gradeLog(p, ANY);
    assert.equal(verdict(g, "completed")?.ok, true);
    assert.match(verdict(g, "completed")?.seen ?? "", /NCCL's last error \(line 17\): NET\/IB : Got async event : port error/);
    // the footer, a clean data check and the figures decide: the WARN is shown, not graded
    assert.equal(g.pass, true);
});

test("the bare last error: an empty one, a prompt after an excerpt, other eras and other processes' lines are no error", () => {
    const lastError = (lines: string[]) => parseNcclLog(lines.join("\n")).runs[0].lastError;
    // the empty form, then whatever the shell printed next
    assert.equal(lastError([...V2172, "", "real\t0m31.2s", "all done"]), null);
    // an excerpt whose author dropped the empty line: a prompt or the next command is no error text
    assert.equal(lastError([...V2172, "root@node001:~/nccl-tests# exit"]), null);
    assert.equal(lastError([...V2172, "$ ./build/all_gather_perf -b 8 -e 1G"]), null);
    // v2.13.0 .. v2.13.3 (no `Group`: d313d20 added it with the bare line) print nothing there
    assert.equal(lastError([...V2172.map((l) => l.replace(" Group  0", "")), "some later output"]), null);
    // v2.17.4+ open with a version line and print `# error:` instead
    assert.equal(lastError(["# nccl-tests version 2.17.6 nccl-headers=22807 nccl-library=22807", ...V2172, "some later output"]), null);
    // libfabric's and NCCL's lines from other processes come between; the bare line is still read after them
    assert.equal(lastError([...V2172, "libfabric:1680522:1726870670::cxi:ep_data:cxip_rxc_dump_counters():435<info> x", "unhandled cuda error"])?.text,
        "unhandled cuda error");
    // bounded, control characters out
    assert.equal(lastError([...V2172, `\u001b[31m${"e".repeat(5000)}`])?.text.length, 400);
});

test("real v2.13.4 .. v2.17.2 logs end on the empty bare line: no last error is made up (alcf-polaris, moc-roce, nersc)", () => {
    for (const name of ["alcf-polaris-nccl221-2node-allreduce.log", "moc-roce-h100-2node-allreduce.log", "nersc-perlmutter-shifter-ofi-cxi-gdrdma.log"]) {
        const p = parseNcclLog(read(name), { name });
        assert.ok(p.runs.length > 0, name);
        for (const run of p.runs) assert.equal(run.lastError, null, name);
        assert.equal(gradeLog(p, ANY).runs.every((r) => r.verdicts.every((v) => !v.seen.includes("last error"))), true, name);
    }
});

test("a rank line cut short ends the rank list as a cut log: named, no rank count or nodes read off it", () => {
    const head = V2172.slice(0, 5);
    // the log stops inside the second rank line
    for (const cut of ["#  Rank  1 Group  0 Pid  15785 on    node0", "#  Ra", "#  Rank  1", "#  Rank  1 Group  0 Pid  15785 on    node002 device  0 [0x1"]) {
        const p = parseNcclLog([...head, cut].join("\n"));
        const run = p.runs[0];
        assert.deepEqual(run.cutRankLine, { line: 6, text: cut }, cut);
        assert.equal(run.nRanks, null, cut);
        assert.equal(nodesOf(run), null, cut);
        const c = verdict(gradeLog(p, ANY), "completed");
        assert.equal(c?.ok, false);
        assert.match(c?.seen ?? "", /^truncated: the log is cut inside the rank list \(line 6: '# {2}R/);
        assert.equal(verdict(gradeLog(p, ANY), "log-cut"), undefined, "named once, by the truncated verdict");
    }
    // a line cut in the middle of an otherwise whole log: the run is read, the cut is named, nodes are not counted
    const mid = parseNcclLog([...head, "#  Rank  1 Group  0 Pi", ...V2172.slice(6)].join("\n"));
    assert.equal(mid.runs.length, 1);
    assert.equal(mid.runs[0].rows.length, 1);
    assert.equal(nodesOf(mid.runs[0]), null);
    // all_reduce busbw = algbw x 2(n-1)/n: 47.91 = 47.91 x 1 gives n = 2 from the figures, not from the cut list
    assert.equal(mid.runs[0].nRanks, 2);
    assert.equal(mid.runs[0].nRanksFrom, "busbw-factor");
    const gm = gradeLog(mid, ANY);
    assert.equal(verdict(gm, "completed")?.ok, true);
    assert.equal(verdict(gm, "log-cut")?.ok, false);
    assert.match(verdict(gm, "log-cut")?.seen ?? "", /^the rank list is cut at line 6 \('# {2}Rank {2}1 Group {2}0 Pi'\)/);
    assert.equal(gm.pass, false, "a damaged capture is not passed");
    // whole rank lines and `# Reducing maxBytes ..` are not cuts
    const whole = parseNcclLog([...V2172.slice(0, 7), "# Reducing maxBytes to 26549638485 due to memory limitation", ...V2172.slice(7)].join("\n"));
    assert.equal(whole.runs[0].cutRankLine, null);
    assert.equal(whole.runs[0].nRanks, 2);
});

test("hostile lines: rccl-tests' banner and `# error:` with long runs of blanks are read in linear time", () => {
    const blanks = " ".repeat(200_000);
    const t0 = process.hrtime.bigint();
    const p = parseNcclLog([RCCL_INPLACE[0], "#", `rccl-tests: Version a${blanks}b`, ...RCCL_INPLACE.slice(3, 19), `# error: x${blanks}y`].join("\n"));
    const ms = Number(process.hrtime.bigint() - t0) / 1e6;
    assert.ok(ms < 1000, `${ms} ms`);
    assert.equal(p.runs[0].version?.length, 200);
    assert.equal(p.runs[0].lastError?.text.length, 400);
});
