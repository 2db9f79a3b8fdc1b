/**
 * Round 3 of the capture hunt, nccl-tests logs (sources and the figures read by hand in the .source.md sidecars of
 * test/fixtures/nccl): a 256- and a 128-rank all_reduce whose rank count the log does not print, headerless max/min
 * rows, a one-GPU alltoall, and an EFA run through mpirun's tags with the author's elisions. Each through the parser,
 * the grader and `nccl-report`'s entry point (runNcclReport).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const checks = (f: string) => Object.fromEntries(gradeLog(parseNcclLog(read(f), { name: f }), ANY).runs[0].verdicts.map((v) => [v.check, [v.ok, v.seen]]));

test("nccl-tests#78: a 256-rank all_reduce cut mid-row: six rows, cut short, -c 0 named; no rank count made up from busbw/algbw", () => {
    const run = parseNcclLog(read("nccl-tests-78-256gpu-allreduce-cut.log")).runs[0];
    assert.deepEqual([run.collective, run.collectiveFrom, run.layout, run.rows.length, run.completed], ["all_reduce_perf", "command", "2019", 6, false]);
    // 71.55 / 35.92 at 1 GiB, each printed to two decimals, fits 236..261 ranks: the log does not say (it was 248 before)
    assert.deepEqual([run.nRanks, run.nRanksFrom], [null, null]);
    const c = checks("nccl-tests-78-256gpu-allreduce-cut.log");
    assert.deepEqual(c.completed, [false, "truncated: the log ends mid-table after 6 row(s) (last 1 GiB at line 13) without its footer"]);
    assert.deepEqual(c.correctness, [false, "correctness checking off: every error cell is N/A"]);
    const r = runNcclReport([file("nccl-tests-78-256gpu-allreduce-cut.log")], {});
    assert.equal(r.code, 1);
    assert.match(r.stdout, /FAIL nccl-tests-78-256gpu-allreduce-cut\.log: all_reduce_perf, graded busbw/);
    assert.doesNotMatch(r.stdout, /248 ranks/);
});

test("nccl-tests#176: 128-rank all_reduce with error 1e-06 in every row: read as rounding (no wrong count), cut short, no rank count made up", () => {
    const run = parseNcclLog(read("nccl-tests-176-128gpu-error-column-cut.log")).runs[0];
    assert.deepEqual([run.layout, run.checkColumn, run.rows.length], ["2019", "error", 6]);
    assert.deepEqual(run.rows.map((x) => [x.outOfPlace.maxError, x.outOfPlace.wrong, x.inPlace?.maxError]), Array(6).fill([1e-6, null, 1e-6]));
    assert.deepEqual([run.collective, run.collectiveFrom, run.nRanks], ["all_reduce_perf", "busbw-factor", null]);
    const c = checks("nccl-tests-176-128gpu-error-column-cut.log");
    assert.equal(c.completed[0], false);
    assert.deepEqual(c.correctness, [false, "no 'Out of bounds values' line: correctness unknown"]);
});

test("nccl-tests#167: headerless max/min rows: read from the row shape, 16 ranks the only count every row allows, cut short", () => {
    const run = parseNcclLog(read("nccl-tests-167-max-min-rows-headerless.log")).runs[0];
    assert.deepEqual([run.columnsFrom, run.rows.length, run.collective, run.collectiveFrom], ["row-shape", 11, "all_reduce_perf", "busbw-factor"]);
    assert.deepEqual([...new Set(run.rows.map((x) => x.redop))], ["max", "min"]);
    assert.ok(run.rows.every((x) => x.outOfPlace.wrong === 0 && x.inPlace?.wrong === 0));
    assert.deepEqual([run.nRanks, run.nRanksFrom], [16, "busbw-factor"]);
    // any single row alone fits 15..17: only all of them together leave one count
    assert.equal(parseNcclLog(read("nccl-tests-167-max-min-rows-headerless.log").split("\n")[0]).runs[0].nRanks, null);
    assert.equal(checks("nccl-tests-167-max-min-rows-headerless.log").completed[0], false);
});

test("nccl-tests#287: alltoall on one RTX 5090: completed and correct, one rank; busbw 0 is one rank's factor", () => {
    const run = parseNcclLog(read("nccl-tests-287-alltoall-1gpu-rtx5090.log")).runs[0];
    assert.deepEqual([run.nRanks, run.hosts, run.ranks[0].busId, run.rows.length, run.avgBusbwGBps, run.completed], [1, ["GENOA-01"], "0x01", 1, 0, true]);
    assert.deepEqual([run.rows[0].redop, run.rows[0].outOfPlace.wrong, run.rows[0].inPlace?.wrong], ["none", 0, null]);
    const c = checks("nccl-tests-287-alltoall-1gpu-rtx5090.log");
    assert.deepEqual([c.completed[0], c.correctness], [true, [true, "Out of bounds values: 0 OK"]]);
    const r = runNcclReport([file("nccl-tests-287-alltoall-1gpu-rtx5090.log")], {});
    assert.equal(r.code, 0, r.stdout);
    assert.match(r.stdout, /alltoall_perf \(1 ranks on 1 node\)/);
});

test("EFA all_reduce through mpirun tags with the author's '...' (terraform-aws-eks-blueprints): EFA seen, the footer's check elided so not a pass", () => {
    const log = parseNcclLog(read("eks-blueprints-efa-g5-tagged-elided.log"));
    const run = log.runs[0];
    assert.deepEqual([run.rows.length, run.layout, run.avgBusbwGBps, run.outOfBounds], [5, "2022", 1.15327, null]);
    assert.deepEqual(log.transport.ofiProviders, ["efa"]);
    // busbw = algbw: all_reduce on two ranks, but nothing names the test, so no count is claimed from it
    assert.deepEqual([run.collective, run.nRanks], [null, null]);
    const c = checks("eks-blueprints-efa-g5-tagged-elided.log");
    assert.deepEqual(c.correctness, [false, "no 'Out of bounds values' line: correctness unknown"]);
    const r = runNcclReport([file("eks-blueprints-efa-g5-tagged-elided.log")], {});
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x correctness .*no 'Out of bounds values' line/);
});
