/**
 * Layout variants of published nccl-tests output: launcher tags glued inside rows, `#` stripped, several collectives
 * and several runs per file, and columns an author removed. Every number comes from a real log (fixture sidecars,
 * test/fixtures/nccl-ref/SOURCES.md); a removed column is made by cutting it out of real lines, never by new numbers.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { isNcclTestsLog, notLogReason, parseNcclLog } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import { buildReport, formatText } from "../components/validate/report";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const REF = path.join(__dirname, "fixtures", "nccl-ref");
const read = (f: string): string => fs.readFileSync(path.join(FIX, f), "utf8");
const ANY: Expectation = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "test" };

test("MPICH -prepend-rank tags, three per row and glued to numbers: every row read, no header reported", () => {
    const p = parseNcclLog(read("nccl-1453-hydra-prefix-split-rows.log"));
    assert.equal(p.runs.length, 1);
    const r = p.runs[0];
    assert.equal(r.rows.length, 10);
    assert.equal(r.columnsFrom, "row-shape");
    assert.deepEqual(r.rows.map((x) => x.sizeBytes), [1, 2, 4, 8, 16, 32, 64, 128, 256, 512].map((m) => m * 1024 * 1024));
    // 32 MiB: `-1[0]    2180.1   15.39   29.50      0[0]    2285.2   14.68   28.14      0`
    assert.deepEqual([r.rows[5].outOfPlace.busbwGBps, r.rows[5].outOfPlace.wrong, r.rows[5].inPlace?.busbwGBps], [29.5, 0, 28.14]);
    assert.equal(r.rows[6].outOfPlace.busbwGBps, 5.27);
    // busbw/algbw = 1.92 → all_reduce over n = 2/(2-1.92) ≈ 25 ranks: a factor, not a fact the log printed
    assert.equal(r.collectiveFrom, "busbw-factor");
    const text = formatText(buildReport([{ name: "x.log", kind: "other", hosts: [], parsed: p, grade: gradeLog(p, ANY) }]), [
        { name: "x.log", kind: "other", hosts: [], parsed: p, grade: gradeLog(p, ANY) }]);
    assert.match(text, /no column header: columns read from the row shape/);
});

test("a column removed by the author is reported as missing and the rest is read, not dropped or filled in", () => {
    // the published pair log (nccl_N2_G1...), with its in-place #wrong column cut from the header and every row
    const lines = read("nccl_N2_G1_cnode4-005_cnode4-011.log").split("\n");
    const cut = lines.map((l) => {
        if (/^#\s+size\s+count/.test(l)) return l.replace(/\s+#wrong\s*$/, "");
        if (/^\s+\d+\s+\d+\s+double/.test(l)) return l.replace(/\s+\S+\s*$/, "");
        return l;
    }).join("\n");
    const whole = parseNcclLog(lines.join("\n"));
    const p = parseNcclLog(cut);
    assert.equal(p.runs.length, 2);
    for (const [i, r] of p.runs.entries()) {
        assert.deepEqual(r.missingColumns, ["in-place #wrong"]);
        assert.equal(r.rows.length, whole.runs[i].rows.length, "no row dropped");
        assert.deepEqual(r.rows.map((x) => x.inPlace?.busbwGBps), whole.runs[i].rows.map((x) => x.inPlace?.busbwGBps));
        assert.ok(r.rows.every((x) => x.inPlace?.wrong === null), "the missing cells stay unknown");
        assert.ok(r.rows.every((x) => x.outOfPlace.wrong === 0));
    }
    const g = gradeLog(p, ANY);
    const entry = { name: "cut.log", kind: "other" as const, hosts: [], parsed: p, grade: g };
    assert.match(formatText(buildReport([entry]), [entry]), /columns missing from the log: in-place #wrong \(not filled in\)/);
    assert.equal(JSON.parse(JSON.stringify(buildReport([entry]))).logs[0].runs[0].missingColumns[0], "in-place #wrong");
});

test("a header without busbw: the run reports it and grades nothing rather than guessing", () => {
    const lines = read("nccl_N2_G1_cnode4-005_cnode4-011.log").split("\n");
    // drop the busbw column (the 8th and 12th fields of each row, the name from the header) from the real lines
    const dropBusbw = (l: string): string => {
        if (/^#\s+size\s+count/.test(l)) return l.replace(/\s+busbw/g, "");
        if (/^\s+\d+\s+\d+\s+double/.test(l)) {
            const t = l.trim().split(/\s+/);
            return "  " + t.filter((_, i) => i !== 7 && i !== 11).join("  ");
        }
        return l;
    };
    const p = parseNcclLog(lines.map(dropBusbw).join("\n"));
    const r = p.runs[0];
    assert.deepEqual(r.missingColumns, ["out-of-place busbw", "in-place busbw"]);
    assert.equal(r.rows.length, 10);
    assert.ok(r.rows.every((x) => x.outOfPlace.busbwGBps === null && x.outOfPlace.algbwGBps !== null));
    const bw = gradeLog(p, { ...ANY, minBusbwGBps: 1, gradeFromBytes: 1 }).runs[0].verdicts.find((v) => v.check === "busbw");
    assert.equal(bw?.ok, false);
});

test("several collectives and several runs per file; `#` stripped from the rank lines", () => {
    const two = parseNcclLog(read("nccl_N2_G1_cnode4-005_cnode4-011.log"));
    assert.deepEqual(two.runs.map((r) => [r.collective, r.rows.length, r.avgBusbwGBps]), [["alltoall_perf", 10, 22.4385], ["sendrecv_perf", 10, 22.9403]]);
    const stripped = parseNcclLog(read("nccl-tests-254-separate-rank0.log"));
    assert.equal(stripped.runs[0].ranks.length, 12);
    assert.deepEqual(stripped.runs[0].hosts, ["dgx01", "dgx02"]);
    // 11: the first lines lost their `#`; 17: an aborted alltoall, then a complete sendrecv
    const gcp = parseNcclLog(fs.readFileSync(path.join(REF, "11-gcp-a3mega-h100-stripped-hash-allreduce.log"), "utf8"));
    assert.equal(gcp.runs.at(-1)?.params.nThread, 1);
    assert.equal(gcp.runs.at(-1)?.avgBusbwGBps, 70.742);
    const ab = parseNcclLog(fs.readFileSync(path.join(REF, "17-h100-2node-alltoall-abort-then-sendrecv.log"), "utf8"));
    assert.deepEqual(ab.runs.map((r) => [r.collective, r.completed]), [["alltoall_perf", false], ["sendrecv_perf", true]]);
});

test("-S 1 timestamps (nccl-tests src/util.cu writeTimestamp): the header's timestamp column and each row's date are not result cells", () => {
    // constructed from the published pair log: the header gains `timestamp`, the units line the format, and every row
    // the "%21s" of "%Y-%m-%d %H:%M:%S" that writeTimestamp prints after the in-place placement; no number is changed
    const plain = read("nccl_N2_G1_cnode4-005_cnode4-011.log");
    const stamped = plain.split("\n").map((l) => {
        if (/^#\s+size\s+count\s+type/.test(l)) return `${l.trimEnd()} ${"timestamp".padStart(19)}`;
        if (/^#\s+\(B\)\s+\(elements\)/.test(l)) return `${l.trimEnd()} ${"%Y-%m-%d %H:%M:%S".padStart(19)}`;
        return /^\s+\d+\s+\d+\s+[a-z]/.test(l) ? `${l.trimEnd()}${"2025-11-24 10:00:00".padStart(21)}` : l;
    }).join("\n");
    assert.notEqual(stamped, plain);
    const want = parseNcclLog(plain).runs.map((r) => r.rows.map((x) => [x.sizeBytes, x.outOfPlace, x.inPlace]));
    const got = parseNcclLog(stamped).runs;
    assert.ok(want[0].length > 0);
    assert.deepEqual(got.map((r) => r.rows.map((x) => [x.sizeBytes, x.outOfPlace, x.inPlace])), want);
    assert.deepEqual(got[0].missingColumns, []);
    assert.equal(gradeLog(parseNcclLog(stamped), ANY).pass, gradeLog(parseNcclLog(plain), ANY).pass);
});

test("nccl-tests' -J JSON document is refused by name, not read as an empty log", () => {
    // constructed with the keys src/util.cu writes, in its order (jsonOutputInit, then the results list); values made up
    const doc = JSON.stringify({ version: 3, start_time: "2026-07-09 12:00:00", args: ["all_reduce_perf", "-J", "out.json"], env: [],
        nccl_version: 22807, results: [{ size: 1048576, count: 262144, type: "float", redop: "sum", root: -1 }] }, null, 2);
    assert.equal(isNcclTestsLog(parseNcclLog(doc)), false);
    assert.match(notLogReason(doc), /-J\/--output_file JSON document, not its printed log/);
    assert.match(notLogReason("hello\n"), /^not an nccl-tests log/);
});
