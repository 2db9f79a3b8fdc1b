/**
 * Parser and grader on the sixteen real logs of test/fixtures/nccl-ref (SOURCES.md: where each comes from). Every figure asserted
 * comes from the log's sidecar JSON.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog, largestPoint, nodesOf, wrongRows } from "../components/validate/grade";
import type { Expectation, NcclRun, ParsedLog } from "../components/validate/types";

const REF = path.join(__dirname, "fixtures", "nccl-ref");

interface Sidecar {
    source: string;
    test: string;
    nodes: number;
    gpus_total: number;
    fabric: string | null;
    avg_busbw_gbps: number | null;
    max_size_bytes: number;
    busbw_at_max_size_outofplace: number;
    busbw_at_max_size_inplace: number;
    wrong_total: number | null;
    errors: string | null;
}

const files = fs.readdirSync(REF).filter((f) => f.endsWith(".log")).sort();

/** The run the sidecar describes: the last run that printed rows (17: the sendrecv after the aborted alltoall). */
function mainRun(p: ParsedLog): NcclRun {
    const r = [...p.runs].reverse().find((x) => x.rows.length > 0);
    assert.ok(r, `${p.name}: no run with rows`);
    return r;
}

function load(f: string): { parsed: ParsedLog; side: Sidecar } {
    const parsed = parseNcclLog(fs.readFileSync(path.join(REF, f), "utf8"), { name: f });
    const side = JSON.parse(fs.readFileSync(path.join(REF, f.replace(/\.log$/, ".json")), "utf8")) as Sidecar;
    return { parsed, side };
}

test("the reference folder holds the sixteen logs with sidecars", () => {
    assert.equal(files.length, 16);
    for (const f of files) assert.ok(fs.existsSync(path.join(REF, f.replace(/\.log$/, ".json"))), f);
});

for (const f of files) {
    test(`parse ${f} matches its sidecar`, () => {
        const { parsed, side } = load(f);
        const run = mainRun(parsed);
        assert.equal(run.collective, side.test, "collective");
        assert.equal(run.nRanks, side.gpus_total, "ranks");
        if (run.ranks.length > 0 && !run.ranksElided) assert.equal(nodesOf(run), side.nodes, "nodes from the rank lines");
        assert.equal(run.avgBusbwGBps, side.avg_busbw_gbps, "# Avg bus bandwidth");
        const lp = largestPoint(run);
        assert.ok(lp);
        assert.equal(lp.sizeBytes, side.max_size_bytes, "largest size");
        assert.equal(lp.outOfPlace, side.busbw_at_max_size_outofplace, "busbw at largest size, out-of-place");
        assert.equal(lp.inPlace, side.busbw_at_max_size_inplace, "busbw at largest size, in-place");
        // the sidecar counts rows with a non-zero #wrong; null where the layout has no #wrong column
        if (side.wrong_total === null) assert.notEqual(run.checkColumn, "#wrong");
        else assert.equal(wrongRows(run).length, side.wrong_total, "rows with #wrong > 0");
        // a sidecar without an Avg figure describes an excerpt that stops before the footer
        assert.equal(run.completed, side.avg_busbw_gbps !== null, "completed");
        // every row of every run is a real row: sizes never decrease within a run
        for (const r of parsed.runs) {
            for (let i = 1; i < r.rows.length; i++) assert.ok(r.rows[i].sizeBytes >= r.rows[i - 1].sizeBytes, `${f}: row order at line ${r.rows[i].line}`);
        }
    });

    test(`grade ${f}: busbw graded at the largest size, not the average`, () => {
        const { parsed, side } = load(f);
        const mean = (side.busbw_at_max_size_outofplace + side.busbw_at_max_size_inplace) / 2;
        const at = (min: number): Expectation => ({ minBusbwGBps: min, gradeFromBytes: side.max_size_bytes, transport: "any", requireGdr: false, source: "sidecar" });
        const busbw = (min: number) => {
            const g = gradeLog(parsed, at(min));
            const run = g.runs[parsed.runs.indexOf(mainRun(parsed))];
            return run.verdicts.find((v) => v.check === "busbw");
        };
        const low = busbw(mean * 0.99);
        assert.ok(low?.ok, `${f}: just under the largest-size figure passes: ${low?.seen}`);
        const high = busbw(mean * 1.01);
        assert.equal(high?.ok, false, `${f}: just over the largest-size figure fails`);
        if (side.avg_busbw_gbps !== null && side.avg_busbw_gbps < mean * 0.99) {
            // a threshold between the printed average and the large-size figure passes: the average is no grade
            assert.ok(busbw((side.avg_busbw_gbps + mean) / 2)?.ok);
        }
    });
}

const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };
const EFA_GDR: Expectation = { ...ANY, transport: "efa", requireGdr: true };

test("14: wrong values fail correctness with the footer count", () => {
    const { parsed } = load("14-nvswitch-dgx2-allgather-oldformat-failed.log");
    const g = gradeLog(parsed, ANY);
    const v = g.runs[0].verdicts.find((x) => x.check === "correctness");
    assert.equal(v?.ok, false);
    assert.match(v?.seen ?? "", /Out of bounds values: 4 FAILED/);
    assert.equal(g.pass, false);
    // the old `error` column is a max delta, kept as such: 1e+00 at the two largest sizes
    const run = parsed.runs[0];
    assert.deepEqual(run.rows.filter((r) => (r.outOfPlace.maxError ?? 0) >= 1).map((r) => r.sizeBytes), [4294967280, 8589934560]);
});

test("17: the aborted alltoall fails with the failure line, the sendrecv completes", () => {
    const { parsed } = load("17-h100-2node-alltoall-abort-then-sendrecv.log");
    assert.deepEqual(parsed.runs.map((r) => [r.collective, r.completed, r.rows.length]), [["alltoall_perf", false, 0], ["sendrecv_perf", true, 10]]);
    const g = gradeLog(parsed, ANY);
    const c = g.runs[0].verdicts.find((v) => v.check === "completed");
    assert.equal(c?.ok, false);
    assert.match(c?.seen ?? "", /remote process exited or there was a network error/);
    assert.equal(c?.evidence?.[0].line, 18);
    assert.equal(g.runs[1].pass, true);
    assert.equal(g.pass, false);
    // `1.6e+07` in the time column
    assert.equal(parsed.runs[1].rows.at(-1)?.outOfPlace.timeUs, 1.6e7);
});

test("04: an excerpt without footer is not a completed run", () => {
    const { parsed } = load("04-efa-p5-2node-srun-prefix-allreduce.log");
    const g = gradeLog(parsed, ANY);
    assert.equal(g.runs[0].verdicts.find((v) => v.check === "completed")?.ok, false);
    assert.equal(g.runs[0].verdicts.find((v) => v.check === "correctness")?.ok, false);
});

test("EFA logs: transport and GPUDirect evidence with line numbers", () => {
    for (const f of ["01-efa-p4d-eks-allreduce-oldformat.log", "06-efa-p5-2node-tagged-fragments-allreduce.log"]) {
        const { parsed } = load(f);
        const g = gradeLog(parsed, EFA_GDR);
        for (const check of ["transport", "gpudirect", "socket-fallback"]) {
            const v = g.verdicts.find((x) => x.check === check);
            assert.equal(v?.ok, true, `${f} ${check}: ${v?.seen}`);
        }
        const gdr = g.verdicts.find((x) => x.check === "gpudirect");
        const line = gdr?.evidence?.[0];
        assert.ok(line);
        const raw = fs.readFileSync(path.join(REF, f), "utf8").split("\n")[line.line - 1];
        assert.match(raw, /GDRDMA/);
    }
    // p3dn (V100) has no GPUDirect over EFA: channels go via NET/AWS Libfabric/N without /GDRDMA
    for (const f of ["02-efa-p3dn-nccl246-allreduce.log", "03-efa-p3dn-8node-64gpu-allreduce.log"]) {
        const { parsed } = load(f);
        const g = gradeLog(parsed, EFA_GDR);
        assert.equal(g.verdicts.find((x) => x.check === "transport")?.ok, true, f);
        assert.equal(g.verdicts.find((x) => x.check === "gpudirect")?.ok, false, f);
        // NCCL 2.4's bootstrap line `NET/Socket : Using [0]eth0` is not a socket fallback
        assert.equal(g.verdicts.find((x) => x.check === "socket-fallback")?.ok, true, f);
    }
});

test("IB expectation on an EFA log fails the transport check", () => {
    const { parsed } = load("06-efa-p5-2node-tagged-fragments-allreduce.log");
    const g = gradeLog(parsed, { ...ANY, transport: "ib" });
    const v = g.verdicts.find((x) => x.check === "transport");
    assert.equal(v?.ok, false);
    assert.match(v?.hint ?? "", /NCCL_NET=IB/);
});

test("multi-node log without NCCL INFO lines cannot prove its transport", () => {
    const { parsed } = load("07-slingshot-gh200-ofi-allreduce.log");
    const g = gradeLog(parsed, EFA_GDR);
    assert.equal(g.verdicts.find((x) => x.check === "nccl-debug")?.ok, false);
    // the same log with no transport requirement passes
    assert.equal(gradeLog(parsed, ANY).pass, true);
});

test("single-node log needs no network evidence", () => {
    const { parsed } = load("14-nvswitch-dgx2-allgather-oldformat-failed.log");
    const g = gradeLog(parsed, EFA_GDR);
    assert.deepEqual(g.verdicts.filter((v) => ["transport", "gpudirect", "nccl-debug"].includes(v.check)), []);
});
