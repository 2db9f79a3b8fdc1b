/**
 * Review of round 12's health-gate changes against DCGM's own sources (NVIDIA/DCGM): a Deployment failure is not hidden
 * by the GPU tests DCGM then skips; DCGM_FR_INTERNAL makes a test "not checked" only where no entity is named failing,
 * in the 3.x table's "Fail - GPU: 0" / "Fail - All" rows and in -j output alike.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDcgmJson, parseDcgmText } from "../components/health/dcgm";
import { parseDmesg } from "../components/health/dmesg";
import { MAX_LINE_CHARS } from "../components/health/text";
import { HealthParseError } from "../components/health/types";
import { xidNeedsOwner } from "../components/catalog/xid";
import { decodeNvlink5 } from "../components/catalog/xid-nvlink5";

const H100 = stack("examples/azure-h100.yaml");
const dcgmText = (text: string) => grade({ "dcgmi-diag.txt": text }, only(H100, ["dcgm"]));

test("a Deployment test that failed is graded even when DCGM then skipped every GPU test (was: only not checked)", () => {
    // constructed from the real DCGM 3.3.9 capture (gnosia93/slurm-on-aws) by setting its Page Retirement/Row Remap row to
    // Fail with DCGM_FR_PENDING_ROW_REMAP_MSG (dcgmlib/dcgm_errors.h at v3.3.9) below it: DCGM skips the later tests
    // after such a failure (nvvs TestFramework skipRest at v3.3.9; EntitySet::UpdateSkippedEntities in 4.x)
    const real = cap("dcgmi-diag.3.3.9-rtxpro6000-skipped-twice-slurm-on-aws.txt");
    const text = real.replace(
        "| Page Retirement/Row Remap | Pass                                           |\n",
        "| Page Retirement/Row Remap | Fail                                           |\n| Error                     | GPU 0 had memory errors and row remappings are |\n|                           |  pending                                       |\n",
    );
    assert.notEqual(text, real);
    const h = dcgmText(text);
    assert.equal(h.verdict, "failing");
    assert.deepEqual(summary(h).findings, [["dcgm", "DCGM test \"Page Retirement/Row Remap\" failed"]]);
    assert.deepEqual(summary(h).notChecked, ["dcgm"]);
    assert.match(h.findings[0].evidence ?? "", /Error: GPU 0 had memory errors and row remappings/);
    // the real capture itself (every Deployment test passed) stays not checked, with no finding
    assert.deepEqual(summary(dcgmText(real)), { verdict: "incomplete", findings: [], notChecked: ["dcgm"] });
});

test("DCGM 3.x rows that name GPUs failing (\"Fail - GPU: 0\", \"Fail - GPUs: 0, 1\", \"Fail - All\") keep an internal-error test failing", () => {
    // the 3.x per-test row as dcgmi/Diag.cpp at v3.3.9 prints it; constructed around the DCGM_FR_INTERNAL text of NVIDIA/DCGM#253
    const table = (row: string, extra = ""): string => [
        "+---------------------------+------------------------------------------------+",
        "| Diagnostic                | Result                                         |",
        "+===========================+================================================+",
        "|-----  Deployment  --------+------------------------------------------------|",
        "| Denylist                  | Pass                                           |",
        "+-----  Integration  -------+------------------------------------------------+",
        `| PCIe                      | ${row.padEnd(47)}|`,
        ...(extra ? [`|                           | ${extra.padEnd(47)}|`] : []),
        "| Warning                   | There was an internal error during the test:   |",
        "|                           | 'A child process (152) exited with non-zero st |",
        "|                           | atus 1'                                        |",
        "+---------------------------+------------------------------------------------+",
        "",
    ].join("\n");
    for (const [row, extra] of [["Fail - GPU: 0", ""], ["Fail - GPUs: 0, 1", ""], ["Fail - All", ""], ["Pass - GPU: 1", "Fail - GPU: 0"]]) {
        const t = table(row, extra);
        assert.equal(parseDcgmText(t).tests.find((x) => x.name === "PCIe")?.status, "fail", row);
        assert.equal(dcgmText(t).verdict, "failing", row);
    }
    // no GPU named failing (a bare "Fail", as DCGM 4.x prints the test's own row): not checked
    assert.equal(parseDcgmText(table("Fail")).tests.find((x) => x.name === "PCIe")?.status, "internal");
});

test("dcgmi diag -j of DCGM 4.x: the internal error sits in test_summary while every GPU passed: not checked (was: failing); a GPU result Fail keeps it failing", () => {
    // constructed in the shape dcgmi/Diag.cpp (HelperJsonAddResult, HelperJsonAddTestSummary) writes: entity results carry
    // only the errors tied to their entity; the test_summary (entity DCGM_FE_NONE) carries every error and the test's result
    const warning = "There was an internal error during the test: 'A child process (152) exited with non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics.";
    const doc = (gpu0: "Pass" | "Fail", summaryWarning: string): string => JSON.stringify({ "DCGM Diagnostic": { test_categories: [{ category: "Integration", tests: [{
        name: "pcie",
        results: [
            { entity_group: "GPU", entity_group_id: 1, entity_id: 0, status: gpu0, ...(gpu0 === "Fail" ? { warnings: [{ error_category: 0, error_id: 44, error_severity: 4, warning }] } : {}) },
            { entity_group: "GPU", entity_group_id: 1, entity_id: 1, status: "Pass" },
        ],
        test_summary: { status: "Fail", warnings: [{ error_category: 0, error_id: 44, error_severity: 4, warning: summaryWarning }] },
    }] }] } });
    const passed = doc("Pass", warning);
    assert.equal(parseDcgmJson(passed).tests[0].status, "internal");
    const h = grade({ "dcgmi-diag.json": passed }, only(H100, ["dcgm"]));
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["dcgm"] });
    assert.match(h.notChecked[0].reason, /There was an internal error during the test/);
    // GPU 0 named failing (its result Fail), even by the internal error alone: failing, as the table's "GPU0: Fail"
    assert.equal(parseDcgmJson(doc("Fail", warning)).tests[0].status, "fail");
    // a reason of the GPU's own in the summary: failing
    assert.equal(parseDcgmJson(doc("Pass", "GPU 0 is running at PCI link generation 3, which is below the minimum allowed link generation of 4")).tests[0].status, "fail");
});

test("round 12's new patterns (talosctl prefix, lower-case month, GSP Timeout banner, NVLink5 decode line, DCGM entity and reason cells) stay linear on ~1 MiB of near-misses", { timeout: 120_000 }, () => {
    // generous for a shared 2-core machine (as test/health-adversarial.test.ts): each input is parsed in a few ms
    const BOUND_MS = 3000;
    const n = MAX_LINE_CHARS - 100;
    const fill = (unit: string): string => unit.repeat(Math.ceil(n / unit.length)).slice(0, n);
    const file = (line: string): string => `[    1.000000] NVRM: loaded\n${Array(260).fill(line).join("\n")}\n`;
    const inputs: Array<[string, (t: string) => unknown, string]> = [
        ["talosctl prefix", parseDmesg, file(fill("a: kern:        a:"))],
        ["talosctl time", parseDmesg, file(`node-1: kern:        warning: [2026-04-22T21:27:51.${fill("9")}`)],
        ["lower-case month", parseDmesg, file(`sep 03 13:25:15.${fill("1")}`)],
        ["GSP banner stars", parseDmesg, file(`[    1.0] NVRM: _kgspLogXid119: ${fill("*")}GSP Timeout`)],
        ["GSP banner heads", parseDmesg, file(`[    1.0] ${fill("NVRM: GPU1 _kgspLogRpcTimeout: ***** GSP Timeou")} GSP Timeout`)],
        ["Xid 149 parentheses", parseDmesg, file(`[    1.0] NVRM: Xid (PCI:0000:04:00): 149, A ${fill("( 0x1 ")}`)],
        ["Xid 145 pid/name", parseDmesg, file(`[    1.0] NVRM: Xid (PCI:0000:04:00): 145, ${fill("145, pid=a, name=b, ")}`)],
        ["DCGM entity cells", parseDcgmText, `| Diagnostic | Result |\n| pcie | Fail |\n${Array(260).fill(`| | ${fill("GPU 0 : ")} |`).join("\n")}\n`],
        ["DCGM reason heads", parseDcgmText, `| Diagnostic | Result |\n| pcie | Fail |\n${Array(260).fill(`| Warning: ${fill("GPU0")} | x |`).join("\n")}\n`],
    ];
    for (const [what, parse, text] of inputs) {
        assert.ok(text.length > 1_000_000, what);
        const t0 = performance.now();
        try { parse(text); } catch (e) { assert.ok(e instanceof HealthParseError, `${what}: ${String(e)}`); }
        assert.ok(performance.now() - t0 < BOUND_MS, `${what}: ${Math.round(performance.now() - t0)} ms`);
    }
    // the decode reads only the line's first 400 characters
    const t0 = performance.now();
    assert.equal(xidNeedsOwner(149, `149, ${" ".repeat(1 << 20)}`), true);
    assert.equal(decodeNvlink5(145, `145, ${"pid=x, name=y, ".repeat(70_000)}`), undefined);
    assert.ok(performance.now() - t0 < BOUND_MS);
});
