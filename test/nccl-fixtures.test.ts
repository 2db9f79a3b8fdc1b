/**
 * Parser, transport evidence and grader on the project's own fixtures (test/fixtures/nccl, real published logs,
 * sources in the .source.md sidecars). Edge cases are built by re-cutting those real lines, never by new numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog, isNcclTestsLog, stripLauncherPrefix } from "../components/validate/parse";
import { gradeLog, largestPoint } from "../components/validate/grade";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const read = (f: string): string => fs.readFileSync(path.join(FIX, f), "utf8");
const GiB = 1024 ** 3;
const EFA: Expectation = { minBusbwGBps: 0, gradeFromBytes: GiB, transport: "efa", requireGdr: false, source: "test" };

test("every fixture has a source sidecar with a URL", () => {
    const logs = fs.readdirSync(FIX).filter((f) => f.endsWith(".log"));
    assert.ok(logs.length >= 3);
    for (const f of logs) {
        const side = path.join(FIX, f.replace(/\.log$/, ".source.md"));
        assert.ok(fs.existsSync(side), `${f} has no .source.md`);
        // a file pinned to a commit, or a GitHub issue / pull request thread (a comment's text does not change by commit)
        assert.match(fs.readFileSync(side, "utf8"), /https:\/\/github\.com\/(?:\S+\/blob\/[0-9a-f]{40}\/|[\w.-]+\/[\w.-]+\/(?:issues|pull)\/\d+)/,
            `${f}: source must pin a commit or name the issue`);
    }
});

test("socket fallback: parsed, and graded as a failure with the evidence line", () => {
    const text = read("aws-do-eks-karpenter-socket.log");
    const p = parseNcclLog(text, { name: "socket" });
    assert.equal(p.runs.length, 1);
    const run = p.runs[0];
    assert.equal(run.rows.length, 31);
    assert.equal(run.avgBusbwGBps, 0.733914);
    // no test name printed, busbw == algbw (2 ranks) and no command line: the collective cannot be told
    assert.equal(run.collective, null);
    assert.equal(parseNcclLog(text, { name: "all_reduce-socket.log" }).runs[0].collective, "all_reduce_perf");
    assert.deepEqual(largestPoint(run), { sizeBytes: 1073741824, outOfPlace: 2.0, inPlace: 1.98 });
    assert.deepEqual(p.transport.networks, ["Socket"]);
    const g = gradeLog(p, EFA);
    const sock = g.verdicts.find((v) => v.check === "socket-fallback");
    assert.equal(sock?.ok, false);
    assert.equal(sock?.evidence?.[0].line, 2);
    assert.match(sock?.hint ?? "", /NCCL_NET/);
    assert.match(sock?.hint ?? "", /100_ofinccl\.conf/);
    assert.equal(g.verdicts.find((v) => v.check === "transport")?.ok, false);
    assert.equal(g.pass, false);
});

test("EFA run: transport proven, GPUDirect not (no channel lines in the excerpt)", () => {
    const p = parseNcclLog(read("aws-do-eks-karpenter-efa.log"), { name: "efa" });
    assert.deepEqual(p.transport.ofiProviders, ["efa"]);
    assert.deepEqual(p.transport.networks, ["AWS Libfabric"]);
    const g = gradeLog(p, EFA);
    const t = g.verdicts.find((v) => v.check === "transport");
    assert.equal(t?.ok, true, t?.seen);
    assert.deepEqual(t?.evidence?.map((e) => e.line), [2, 3]);
    assert.equal(g.pass, true);
    const gdr = gradeLog(p, { ...EFA, requireGdr: true }).verdicts.find((v) => v.check === "gpudirect");
    assert.equal(gdr?.ok, false);
    assert.match(gdr?.seen ?? "", /no `via NET/);
});

test("two complete runs in one file, N/A cells, hosts from the rank lines", () => {
    const p = parseNcclLog(read("nccl_N2_G1_cnode4-005_cnode4-011.log"), { name: "pair" });
    assert.deepEqual(p.runs.map((r) => r.collective), ["alltoall_perf", "sendrecv_perf"]);
    assert.deepEqual(p.runs.map((r) => r.avgBusbwGBps), [22.4385, 22.9403]);
    for (const r of p.runs) {
        assert.deepEqual(r.hosts, ["cnode4-005", "cnode4-011"]);
        assert.equal(r.nRanks, 2);
        assert.equal(r.rows.length, 10);
        assert.ok(r.completed);
        assert.equal(r.layout, "2022");
        assert.ok(r.rows.every((x) => x.inPlace?.wrong === null && x.outOfPlace.wrong === 0), "in-place #wrong is N/A");
        assert.equal(r.rows[0].type, "double");
        assert.equal(r.params.maxBytes, 17179869184);
    }
    assert.deepEqual(largestPoint(p.runs[1]), { sizeBytes: 17179869184, outOfPlace: 23.88, inPlace: 23.9 });
    assert.ok(isNcclTestsLog(p));
    assert.equal(gradeLog(p, { ...EFA, transport: "any" }).pass, true);
});

test("launcher prefixes are stripped, including a tag repeated mid-row", () => {
    assert.deepEqual(stripLauncherPrefix("[1,0]<stdout>:# Out of bounds values : 0 OK"), { text: "# Out of bounds values : 0 OK", source: "[1,0]<stdout>:" });
    assert.equal(stripLauncherPrefix("12: # Avg bus bandwidth : 1").text, "# Avg bus bandwidth : 1");
    // a host name that starts with digits is not an srun label
    assert.equal(stripLauncherPrefix("10.0.0.1:25:25 [0] NCCL INFO x").source, "");
});

/** Re-cuts the real socket log the way other launchers print it. */
function recut(transform: (row: string, i: number) => string): string {
    return read("aws-do-eks-karpenter-socket.log").split("\n").map((l, i) => transform(l, i)).join("\n");
}

test("the same rows survive srun labels, tags mid-row and rows written in pieces", () => {
    const base = parseNcclLog(read("aws-do-eks-karpenter-socket.log")).runs[0];
    const rowRe = /^(\[1,0\]<stdout>:)(\s+\d+\s+\d+\s+\S+\s+\S+\s+\S+)(\s+\S+\s+\S+\s+\S+\s+\S+)(.*)$/;
    const variants: Record<string, string> = {
        srun: recut((l) => l.replace(/^\[1,0\]<stdout>:/, "0: ")),
        midRowTags: recut((l) => l.replace(rowRe, "$1$2$1$3$1$4")),
        piecesOnLines: recut((l) => l.replace(rowRe, "$1$2\n$1$3\n$1$4")),
        debugBetweenPieces: recut((l) => l.replace(rowRe, "$1$2\n[1,1]<stdout>:test-nccl-worker-0:22:22 [0] NCCL INFO Using network Socket\n$1$3$4")),
        noPrefix: recut((l) => l.replace(/^\[1,0\]<stdout>:/, "")),
    };
    for (const [name, text] of Object.entries(variants)) {
        const run = parseNcclLog(text).runs[0];
        assert.equal(run.rows.length, base.rows.length, name);
        assert.deepEqual(run.rows.map((r) => [r.sizeBytes, r.outOfPlace, r.inPlace]), base.rows.map((r) => [r.sizeBytes, r.outOfPlace, r.inPlace]), name);
        assert.equal(run.avgBusbwGBps, base.avgBusbwGBps, name);
    }
});

test("a log cut after the header or mid-table is incomplete", () => {
    const lines = read("nccl_N2_G1_cnode4-005_cnode4-011.log").split("\n");
    const afterHeader = lines.slice(0, 10).join("\n");
    const r1 = parseNcclLog(afterHeader).runs;
    assert.equal(r1.length, 1);
    assert.equal(r1[0].rows.length, 0);
    assert.equal(r1[0].completed, false);
    assert.ok(isNcclTestsLog(parseNcclLog(afterHeader)));
    const midTable = lines.slice(0, 15).join("\n");
    const r2 = parseNcclLog(midTable).runs[0];
    assert.equal(r2.rows.length, 5);
    assert.equal(r2.completed, false);
    const g = gradeLog(parseNcclLog(midTable), { ...EFA, transport: "any" });
    assert.equal(g.runs[0].verdicts.find((v) => v.check === "completed")?.ok, false);
});

test("text that is not nccl-tests output", () => {
    for (const text of ["", read("aws-do-eks-karpenter-socket.source.md"), fs.readFileSync(path.resolve(__dirname, "../package.json"), "utf8")]) {
        assert.equal(isNcclTestsLog(parseNcclLog(text)), false);
    }
});
