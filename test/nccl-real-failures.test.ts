/**
 * Real failed, aborted and cut nccl-tests logs through the parser, the grader and `nccl-report`'s entry point
 * (runNcclReport, as `rdmakit nccl-report` calls it), and the refusals of what is no nccl-tests log. Sources and the
 * figures read by hand: the .source.md sidecars in test/fixtures/nccl. Lines made here are marked as such.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { isNcclTestsLog, notLogReason, parseNcclLog } from "../components/validate/parse";
import { gradeLog, largestPoint } from "../components/validate/grade";
import { scanTransport } from "../components/validate/transport";
import { runNcclReport } from "../components/validate/cli";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const file = (f: string): string => path.join(FIX, f);
const read = (f: string): string => fs.readFileSync(file(f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };

function completed(name: string) {
    const g = gradeLog(parseNcclLog(read(name), { name }), ANY);
    return g.runs[0].verdicts.find((v) => v.check === "completed");
}

test("nccl-tests#338: a CUDA failure at '# Using devices' is a failed run on host gpu, not 'not an nccl-tests log'", () => {
    const p = parseNcclLog(read("nccl-tests-338-cuda-failure-at-devices.log"));
    assert.ok(isNcclTestsLog(p));
    assert.equal(p.runs.length, 1);
    assert.deepEqual(p.runs[0].failures.map((f) => f.line), [2, 3]);
    const v = completed("nccl-tests-338-cuda-failure-at-devices.log");
    assert.equal(v?.ok, false);
    assert.match(v?.seen ?? "", /^aborted on gpu: gpu: Test CUDA failure common\.cu:1030 'system not yet initialized'/);
    const r = runNcclReport([file("nccl-tests-338-cuda-failure-at-devices.log")], {});
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /^nccl-tests validation: FAIL/);
});

test("nccl-tests#287: aborted after the header on GENOA-06; the cause is the WARN just before the failure, not the first WARN", () => {
    const v = completed("nccl-tests-287-cuda-failure-after-header.log");
    assert.equal(v?.ok, false);
    assert.match(v?.seen ?? "", /^aborted on GENOA-06: GENOA-06: Test NCCL failure common\.cu:392 'unhandled cuda error/);
    assert.match(v?.seen ?? "", /NCCL WARN \(line 67\): Cuda failure 1 'invalid argument'$/);
    assert.deepEqual(v?.evidence?.map((e) => e.line).slice(0, 2), [67, 72]);
    // one host: NCCL's `Using network Socket` needed no NIC, so it is no socket fallback
    const r = runNcclReport([file("nccl-tests-287-cuda-failure-after-header.log")], { expect: "1" });
    assert.equal(r.code, 1);
    assert.doesNotMatch(r.stdout, /socket-fallback/);
    assert.match(r.stdout, /x completed .*aborted on GENOA-06/);
});

test("nccl-tests#219: two hosts, the failure names fengyun, before any column header", () => {
    const p = parseNcclLog(read("nccl-tests-219-failure-before-table-2node.log"));
    assert.equal(p.runs[0].nRanks, 4);
    assert.deepEqual(p.runs[0].hosts, ["fengyun416", "fengyun"]);
    assert.equal(p.runs[0].rows.length, 0);
    assert.match(completed("nccl-tests-219-failure-before-table-2node.log")?.seen ?? "", /^aborted on fengyun: fengyun: Test NCCL failure common\.cu:959 'internal error/);
});

test("nccl-tests#321: RoCE through a vendor RDMA plugin with PXN (`v6/0(2)/GDRDMA/Shared`) is proven; the cut table is truncated", () => {
    const p = parseNcclLog(read("nccl-tests-321-roce-rdma-plugin-pxn-cut.log"));
    const run = p.runs[0];
    assert.equal(run.collective, "alltoall_perf");
    assert.equal(run.collectiveFrom, "command");
    assert.equal(run.rows.length, 13);
    assert.deepEqual(largestPoint(run), { sizeBytes: 4294967296, outOfPlace: 50.25, inPlace: 50.37 });
    assert.equal(p.transport.netChannels.count, 32);
    assert.equal(p.transport.netChannelsWithoutGdr.count, 0);
    assert.deepEqual(p.transport.ibChannelDevices, { 0: 16, 1: 16 });
    const r = runNcclReport([file("nccl-tests-321-roce-rdma-plugin-pxn-cut.log")], { fabric: "roce", nodes: "2", gpusPerNode: "2", expect: "40" });
    assert.equal(r.code, 1);
    for (const ok of ["multi-node", "net-transport", "gpudirect", "socket-fallback"]) assert.doesNotMatch(r.stdout, new RegExp(`x ${ok} `), ok);
    assert.match(r.stdout, /x completed .*seen truncated: the log ends mid-table after 13 row\(s\) \(last 4 GiB at line 86\) without its footer/);
    assert.match(r.stdout, /expected run finished with its footer \('# Out of bounds values' and '# Avg bus bandwidth'\)/);
});

test("a real log cut mid-row: the partial row is no row, and the run is truncated, never a pass", () => {
    const lines = read("nccl-tests-321-roce-rdma-plugin-pxn-cut.log").split("\n");
    // cut inside the 64 MiB row (line 80): the first 40 characters of it, as a killed job or a paste leaves it
    const cut = [...lines.slice(0, 79), lines[79].slice(0, 40)].join("\n");
    const run = parseNcclLog(cut).runs[0];
    assert.equal(run.rows.length, 6);
    assert.equal(run.rows[5].sizeBytes, 33554432);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nccl-cut-"));
    fs.writeFileSync(path.join(dir, "cut.log"), cut);
    const r = runNcclReport([path.join(dir, "cut.log")], { fabric: "roce", expect: "1" });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /truncated: the log ends mid-table after 6 row\(s\) \(last 32 MiB at line 79\)/);
});

test("refusals name the file and what was expected: an empty file, perftest output, a text with no run", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nccl-refuse-"));
    fs.writeFileSync(path.join(dir, "empty.log"), "");
    const empty = runNcclReport([path.join(dir, "empty.log")], {});
    assert.equal(empty.code, 2);
    assert.match(empty.stderr, /empty\.log: is empty: expected nccl-tests' printed output: the '# nThread \.\. nGpus \.\.' parameter line/);
    // ib_write_bw's real output (test/fixtures/incast/README.md: linux-rdma/perftest#273)
    const perftest = path.resolve(__dirname, "fixtures/incast/perftest-write-bw-gbits.txt");
    const bw = runNcclReport([perftest], {});
    assert.equal(bw.code, 2);
    assert.match(bw.stderr, /perftest-write-bw-gbits\.txt: is perftest output \(ib_write_bw .*\), not nccl-tests: expected nccl-tests' printed output/);
    assert.match(notLogReason(read("nccl-tests-338-cuda-failure-at-devices.source.md")), /^not an nccl-tests log .*: expected .*'# Avg bus bandwidth' footer$/);
    // whitespace only is empty too
    assert.match(notLogReason("\n\n  \n"), /^is empty/);
});

test("'# Avg bus bandwidth : x FAILED' (NCCL_TESTS_MIN_BW) fails the run; OK passes", () => {
    // made here: the real footer of nccl_N2_G1_cnode4-005_cnode4-011.log with the suffix nccl-tests adds when
    // NCCL_TESTS_MIN_BW is set (src/util.cu writeResultFooter: `%g %s`, FAILED below 0.9 x the floor)
    const text = read("nccl_N2_G1_cnode4-005_cnode4-011.log");
    const grade = (suffix: string) => gradeLog(parseNcclLog(text.replace(/(# Avg bus bandwidth\s*: 22\.9403)\s*$/m, `$1 ${suffix}`)), ANY);
    const failed = grade("FAILED");
    const v = failed.runs[1].verdicts.find((x) => x.check === "min-bw");
    assert.equal(v?.ok, false);
    assert.match(v?.seen ?? "", /Avg bus bandwidth\s*: 22\.9403 FAILED/);
    assert.equal(failed.pass, false);
    assert.equal(grade("OK").pass, true);
    assert.equal(grade("OK").runs[1].verdicts.some((x) => x.check === "min-bw"), false);
});

test("NCCL WARN prefixes give hosts; 'Assigned NET plugin' names the network; 'GPU Direct RDMA Disabled' is quoted as the cause", () => {
    // a real WARN line (nccl-tests#287, line 67): `host:pid:tid [dev] file:line NCCL WARN` (src/debug.cc)
    const warn = read("nccl-tests-287-cuda-failure-after-header.log").split("\n")[66];
    assert.deepEqual(scanTransport([warn]).ncclHosts, ["GENOA-06"]);
    // made here in NCCL 2.27+'s shape (src/plugin/net.cc: "Assigned NET plugin %s to comm") with a real prefix
    const assigned = scanTransport(["GENOA-06:4766:4780 [0] NCCL INFO Assigned NET plugin Socket to comm"]);
    assert.deepEqual(assigned.networks, ["Socket"]);
    assert.equal(assigned.socket.count, 1);
    // made here: NCCL's reason line (src/transport/net_ib.cc, NCCL <= 2.18: "NET/IB : GPU Direct RDMA Disabled for HCA %d
    // '%s' (no module)") put before the real channel lines of NVIDIA/nccl#1412, whose NET channels have no /GDRDMA
    const text = "swat1-04:2017630:2017697 [7] NCCL INFO NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)\n" + read("nccl-1412-ib-no-gdrdma.log");
    const g = gradeLog(parseNcclLog(text), { ...ANY, transport: "ib", requireGdr: true });
    const gdr = g.verdicts.find((v) => v.check === "gpudirect");
    assert.equal(gdr?.ok, false);
    assert.match(gdr?.seen ?? "", /NCCL says: NET\/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' \(no module\)$/);
    assert.equal(gdr?.evidence?.[0].line, 1);
});

test("a failure before any header, then a retry in the same file without a version line: two runs, the failed one and the retry (two real logs joined here, as a retry appends to one file)", () => {
    const joined = read("nccl-tests-338-cuda-failure-at-devices.log") + read("moc-roce-h100-2node-allreduce.log");
    const p = parseNcclLog(joined, { name: "retry.log" });
    assert.equal(p.runs.length, 2);
    assert.deepEqual(p.runs.map((r) => [r.failures.length, r.rows.length, r.hosts]), [
        [2, 0, []],
        [0, parseNcclLog(read("moc-roce-h100-2node-allreduce.log")).runs[0].rows.length, ["MOC-R4PCC04U37", "MOC-R4PCC04U35"]],
    ]);
    // the file fails on its first run, naming the host that failed; the retry is graded on its own rows
    const g = gradeLog(p, ANY);
    assert.equal(g.pass, false);
    assert.match(g.runs[0].verdicts.find((v) => v.check === "completed")?.seen ?? "", /^aborted on gpu: gpu: Test CUDA failure/);
    assert.equal(g.runs[1].pass, true);
});
