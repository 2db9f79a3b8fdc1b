/**
 * What a node sends back is untrusted (issue 34 finding 7): no capture may make a parser's cost grow faster than its
 * size. Each parser gets a line of 200k spaces (the old nvidia-smi parser took ~63 s on one: `/\s+$/` and its
 * key/value regex backtracked quadratically), and a ~4 MB file of 4000-character lines built against each regex that
 * used to backtrack; each call must end (parsed, or refused by name) within BOUND_MS. Wall time of this file: ~2 s.
 */
import { test } from "node:test";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { formatHealth, gradeHealthDir } from "../components/health/report";
import { stack } from "./fixtures/health/stacks";
import assert from "node:assert/strict";
import { parseDcgmJson, parseDcgmText } from "../components/health/dcgm";
import { parseDmesg } from "../components/health/dmesg";
import { parseFiInfo, parseIbstat } from "../components/health/ibstat";
import { parseLspci } from "../components/health/lspci";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";
import { parseNvlinkStatus } from "../components/health/nvlink";
import { MAX_FILE_CHARS, MAX_LINE_CHARS } from "../components/health/text";
import { parseRdmaDevices } from "../components/health/rdma-devices";
import { HealthParseError } from "../components/health/types";
import { parseNcclLog } from "../components/validate/parse";

// generous for a shared 2-core machine: linear parsing of 4 MB takes well under a second
const BOUND_MS = 3000;

const PARSERS: Record<string, (t: string) => unknown> = {
    "nvidia-smi -q": parseNvidiaSmiQ, "nvlink --status": parseNvlinkStatus, "dcgmi diag": parseDcgmText, "dcgmi diag -j": parseDcgmJson,
    "lspci -vv": parseLspci, "ls -l /sys/class/infiniband": parseRdmaDevices, ibstat: parseIbstat, "fi_info": parseFiInfo, dmesg: parseDmesg, "nccl-tests log": (t) => parseNcclLog(t),
};

/** one line each, long enough to take minutes against a quadratic regex */
const LONG_LINES: Record<string, string> = {
    spaces: " ".repeat(200_000),
    "spaces then a letter": " ".repeat(200_000) + "x",
    "tabs then a letter": "\t".repeat(200_000) + "x",
    "a hash, spaces, a letter": "#" + " ".repeat(200_000) + "x",
    "equals signs": "=".repeat(200_000),
};

/** ~4 MB of lines just under the line cap, each against one formerly quadratic pattern */
function bigFile(): string {
    const n = MAX_LINE_CHARS - 100;
    const kinds = [
        "[ 1.0] " + " ".repeat(n) + "x",
        "    " + "\t".repeat(n) + "x",
        "[ 1.0] mlx5_core 0000:1a:00.0: " + "mlx5_core:".repeat(n / 10),
        "[ 1.0] mlx5_core 0000:1a:00.0: " + "cmd_work_handler".repeat(n / 16),
        "=".repeat(n),
        "#" + " ".repeat(n) + "x",
        "|" + " |".repeat(n / 2),
    ];
    const lines: string[] = [];
    for (let i = 0; lines.length * n < 4_000_000; i++) lines.push(kinds[i % kinds.length]);
    return lines.join("\n") + "\n";
}

function timed(parse: (t: string) => unknown, text: string): { ms: number; error?: unknown } {
    const t0 = performance.now();
    try {
        parse(text);
        return { ms: performance.now() - t0 };
    } catch (e) {
        return { ms: performance.now() - t0, error: e };
    }
}

test("a line of 200k spaces (and its variants) costs every parser milliseconds, and the health parsers refuse it by name", { timeout: 120_000 }, () => {
    for (const [tool, parse] of Object.entries(PARSERS)) {
        for (const [what, line] of Object.entries(LONG_LINES)) {
            const r = timed(parse, `${line}\n`);
            assert.ok(r.ms < BOUND_MS, `${tool} on ${what}: ${Math.round(r.ms)} ms`);
            if (r.error !== undefined) assert.ok(r.error instanceof HealthParseError, `${tool} on ${what}: ${String(r.error)}`);
            if (tool !== "nccl-tests log" && tool !== "dcgmi diag -j") {
                assert.ok(r.error instanceof HealthParseError && /line 1 is 2000\d\d characters long; no line .* longer than 4096/.test(r.error.message), `${tool} on ${what}: ${String(r.error)}`);
            }
        }
    }
});

test("a ~4 MB capture of adversarial lines under the line cap is parsed or refused within the bound", { timeout: 120_000 }, () => {
    const text = bigFile();
    assert.ok(text.length > 3_900_000);
    for (const [tool, parse] of Object.entries(PARSERS)) {
        const r = timed(parse, text);
        assert.ok(r.ms < BOUND_MS, `${tool}: ${Math.round(r.ms)} ms on ${text.length} characters`);
        if (r.error !== undefined) assert.ok(r.error instanceof HealthParseError, `${tool}: ${String(r.error)}`);
    }
});

test("a capture above the file cap is refused without being read line by line, and a huge file is not read at all", () => {
    const huge = "x".repeat(MAX_FILE_CHARS + 1);
    for (const parse of [parseNvidiaSmiQ, parseDmesg, parseLspci, parseDcgmJson]) {
        const r = timed(parse, huge);
        assert.ok(r.error instanceof HealthParseError && /characters long; no capture the kit reads is longer/.test(r.error.message), String(r.error));
    }
    // a sparse 1 TiB dmesg.txt in a node folder: refused from its size, before any read
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-health-huge-"));
    try {
        fs.mkdirSync(path.join(dir, "n1"));
        fs.closeSync(fs.openSync(path.join(dir, "n1", "dmesg.txt"), "w"));
        fs.truncateSync(path.join(dir, "n1", "dmesg.txt"), 2 ** 40);
        const t0 = performance.now();
        const [h] = gradeHealthDir(dir, { hostType: "bare metal", gpus: 0, gpuModel: "none", nvidia: false, nvswitch: false, fabric: "roce", nics: { names: [], count: 0, linkLayer: "Ethernet" } });
        assert.ok(performance.now() - t0 < BOUND_MS);
        assert.equal(h.verdict, "unreadable");
        assert.match(h.unreadable.map((u) => `${u.file} ${u.reason}`).join("\n"), /dmesg\.txt is 1099511627776 bytes; no capture the kit reads is larger/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

// Found in session 6: every (GPU, Xid) pair of a dmesg was a finding, so a 33 MB log naming 65k PCI addresses made an
// 8.5 MB health report for one node. Each pair is still graded; the report lists the first few, persistent ones first.
test("a dmesg naming thousands of GPUs lists the first findings and counts the rest in a note the report shows", { timeout: 120_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-health-many-"));
    try {
        fs.mkdirSync(path.join(dir, "n1"));
        const lines: string[] = [];
        const codes = [13, 31, 43, 48, 63, 64, 74, 79, 92, 94, 95];
        for (let k = 0; k < 20_000; k++) {
            const bdf = `0000:${(k & 255).toString(16).padStart(2, "0")}:${((k >> 8) & 255).toString(16).padStart(2, "0")}.0`;
            lines.push(`[${(k / 10).toFixed(6)}] NVRM: Xid (PCI:${bdf}): ${codes[k % codes.length]}, pid=${k}, name=p${k}, Ch ${k}`);
        }
        fs.writeFileSync(path.join(dir, "n1", "dmesg.txt"), lines.join("\n") + "\n");
        const [h] = gradeHealthDir(dir, stack("examples/aws-p5.yaml"));
        assert.equal(h.verdict, "failing");
        assert.ok(h.findings.length <= 40, `${h.findings.length} findings listed`);
        assert.match(h.notes[0], /^\d+ more finding\(s\) \(xid \d+\)( and \d+ more note\(s\))? on this node not listed one by one/);
        const text = formatHealth([h], "head");
        assert.ok(text.length < 40_000, `a ${text.length}-character report`);
        assert.match(text, /note {4}\d+ more finding\(s\)/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

// Found in review 10: the cap kept the first 40 findings in the grader's order, so the NVSwitch finding of a log that
// also names thousands of GPUs (graded after the Xids) was never listed, only counted.
test("the finding cap lists every component's first finding: an NVSwitch SXid after 20k Xid lines is listed, and the note names what is counted", { timeout: 120_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-health-many-sx-"));
    try {
        fs.mkdirSync(path.join(dir, "n1"));
        const lines: string[] = [];
        for (let k = 0; k < 20_000; k++) {
            const bdf = `0000:${(k & 255).toString(16).padStart(2, "0")}:${((k >> 8) & 255).toString(16).padStart(2, "0")}.0`;
            lines.push(`[${(k / 10).toFixed(6)}] NVRM: Xid (PCI:${bdf}): ${[48, 79, 94, 95][k % 4]}, pid=${k}, name=p${k}, Ch ${k}`);
        }
        // constructed: the line form of the published fatal capture (test/health-sxid.test.ts), at the log's end
        lines.push("[ 2001.000000] nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up");
        fs.writeFileSync(path.join(dir, "n1", "dmesg.txt"), lines.join("\n") + "\n");
        const [h] = gradeHealthDir(dir, stack("examples/aws-p5.yaml"));
        assert.ok(h.findings.length <= 40, `${h.findings.length} findings listed`);
        assert.deepEqual([...new Set(h.findings.map((f) => f.component))].sort(), ["nvswitch", "xid"]);
        assert.match(h.notes[0], /^\d+ more finding\(s\) \(xid \d+\)/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});
