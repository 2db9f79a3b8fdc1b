/**
 * `rdmakit nccl-report` spawned as a user runs it (exit codes 0 / 1 / 2, JSON, chart, --out), plus the report's
 * SVG and PNG on the real fixtures.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { renderChartSvg } from "../components/validate/report";
import { svgToPng } from "../components/validate/png";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.resolve(__dirname, "..");
const FIX = path.join(ROOT, "test/fixtures/nccl");
const SOCKET = path.join(FIX, "aws-do-eks-karpenter-socket.log");
const EFA = path.join(FIX, "aws-do-eks-karpenter-efa.log");

function cli(...args: string[]) {
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin/rdmakit.ts"), "nccl-report", ...args], { cwd: ROOT, encoding: "utf8" });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

const MOC = path.join(FIX, "moc-roce-h100-2node-allreduce.log");
const SHARP = path.join(FIX, "nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log");

test("a two-node run graded without --fabric is NOT JUDGED (exit 1), saying what was left out and why", () => {
    // 1 GPU per node over RoCE without GPUDirect RDMA (busbw 14.97 GB/s): complete and correct, and no PASS
    const r = cli(MOC);
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /^nccl-tests validation: NOT JUDGED — busbw 14\.97 GB\/s/);
    assert.doesNotMatch(r.stdout, /PASS/);
    assert.match(r.stdout, /not judged: fabric: moc-roce-h100-2node-allreduce\.log ran across nodes, but without --fabric/);
    assert.match(r.stderr, /not graded: bandwidth: no --expect/);
    assert.equal(JSON.parse(cli(MOC, "--json").stdout).pass, false);
    // judged, it fails for what it is: no GPUDirect RDMA
    const judged = cli(MOC, "--fabric", "roce");
    assert.equal(judged.code, 1);
    assert.match(judged.stdout, /^nccl-tests validation: FAIL/);
    assert.match(judged.stdout, /x gpudirect/);
});

test("exit 0 when judged: --fabric ib proves the transport of a 2 x 8 InfiniBand run, and --expect grades it", () => {
    const r = cli(SHARP, "--fabric", "ib", "--expect", "40");
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /^nccl-tests validation: PASS/);
    assert.doesNotMatch(r.stdout + r.stderr, /not judged|not graded/);
});

test("exit 1: a socket fallback graded against an instance type names the fix", () => {
    const r = cli(SOCKET, "--expect", "p5.48xlarge");
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /FAIL/);
    assert.match(r.stdout, /x socket-fallback .*seen 1 line\(s\) show NCCL on sockets/);
    assert.match(r.stdout, /line 2: \[1,0\]<stdout>:test-nccl-worker-0:22:22 \[0\] NCCL INFO Using network Socket/);
    assert.match(r.stdout, /NCCL_NET=Libfabric/);
});

test("exit 1 on a GB/s floor above the graded figure, 0 below it", () => {
    assert.equal(cli(SHARP, "--fabric", "ib", "--expect", "45").code, 1);
    assert.equal(cli(SHARP, "--fabric", "ib", "--expect", "40").code, 0);
});

test("exit 2: not an nccl-tests log, a missing file, an unknown --expect name", () => {
    const notLog = cli(path.join(FIX, "aws-do-eks-karpenter-efa.source.md"));
    assert.equal(notLog.code, 2);
    assert.match(notLog.stderr, /not an nccl-tests log/);
    assert.equal(cli(path.join(FIX, "missing.log")).code, 2);
    const unknown = cli(EFA, "--expect", "p99.huge");
    assert.equal(unknown.code, 2);
    assert.match(unknown.stderr, /unknown instance type or VM size "p99.huge"/);
    assert.equal(cli(EFA, "--no-such-flag").code, 2);
});

test("--json prints the report with every verdict", () => {
    const r = cli(SOCKET, EFA, "--json", "--expect", "2.5");
    assert.equal(r.code, 1);
    const j = JSON.parse(r.stdout);
    assert.equal(j.pass, false);
    assert.deepEqual(j.logs.map((l: any) => [l.name, l.pass]), [["aws-do-eks-karpenter-socket.log", false], ["aws-do-eks-karpenter-efa.log", true]]);
    assert.deepEqual(j.failed.map((f: any) => f.check), ["socket-fallback", "busbw"]);
    assert.equal(j.expectations["aws-do-eks-karpenter-efa.log"].minBusbwGBps, 2.5);
});

test("--expect JSON and the playbook's file names: single-node and pair logs feed the slow-node search", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "nccl-report-"));
    // four nodes; the pairs through node c are the socket-fallback log, the others the EFA log
    const pairs: Array<[string, string, string]> = [["1", "a", "c"], ["1", "b", "d"], ["2", "c", "b"], ["2", "d", "a"]];
    for (const [r, a, b] of pairs) fs.copyFileSync(a === "c" || b === "c" ? SOCKET : EFA, path.join(dir, `pair-r${r}-${a}+${b}.log`));
    const exp = { minBusbwGBps: 2.5, gradeFromBytes: 1073741824, transport: "any", requireGdr: false, source: "test" };
    const out = path.join(dir, "out");
    const r = cli(...fs.readdirSync(dir).filter((f) => f.endsWith(".log")).map((f) => path.join(dir, f)),
        "--expect", JSON.stringify({ pair: exp }), "--out", out, "--result-line");
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /slow node\(s\): c\n/);
    const last = r.stdout.trim().split("\n").at(-1) as string;
    const { at, ...result } = JSON.parse(last.replace(/^rdmakit-result: /, "")) as { at: string };
    // when the report was made: the stack's operating state shows its age (components/day2/state.ts)
    assert.ok(Math.abs(Date.parse(at) - Date.now()) < 60_000, at);
    assert.deepEqual(result, { pass: false, busbwGBps: null, sizeBytes: null, slowNodes: ["c"], badNodes: [], failedNodes: [] });
    for (const f of ["nccl-report.json", "nccl-summary.txt", "nccl-busbw.svg"]) assert.ok(fs.existsSync(path.join(out, f)), f);
    assert.equal(JSON.parse(fs.readFileSync(path.join(out, "nccl-report.json"), "utf8")).slowNodes.slow[0].host, "c");
});

test("chart: log2 x axis, one path per placement, the expected line; PNG when the renderer is installed", () => {
    const parsed = parseNcclLog(fs.readFileSync(EFA, "utf8"), { name: "efa" });
    const exp = { minBusbwGBps: 2.5, expectedBusbwGBps: 2.83, gradeFromBytes: 1073741824, transport: "any" as const, requireGdr: false, source: "test" };
    const svg = renderChartSvg([{ name: "efa", parsed }], exp);
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.equal((svg.match(/<path d="M/g) ?? []).length, 2, "out-of-place and in-place");
    // sizes 0 are left out (log2); 4 B .. 1 GiB gives 29 points per placement
    assert.equal((svg.match(/<circle /g) ?? []).length, 29);
    assert.match(svg, /stroke="#d62728" stroke-width="2" stroke-dasharray="8 5"/);
    assert.match(svg, /minimum 2.5 GB\/s from 1 GiB, typical 2.83 GB\/s/);
    // 4 B .. 1 GiB spans 28 powers of two: a label every 4th power
    for (const label of ["16B", "256B", "4K", "64K", "1M", "16M", "256M"]) assert.ok(svg.includes(`>${label}<`), label);
    const png = svgToPng(svg);
    let hasRenderer = true;
    try {
        require.resolve("@resvg/resvg-js");
    } catch {
        hasRenderer = false;
    }
    if (hasRenderer) {
        assert.ok(png && png.subarray(1, 4).toString() === "PNG");
        fs.mkdirSync(path.join(ROOT, "out/test"), { recursive: true });
        fs.writeFileSync(path.join(ROOT, "out/test/nccl-busbw-efa.png"), png);
    } else {
        assert.equal(png, null);
    }
});
