/**
 * NVSwitch SXids in the kernel log, graded as NVIDIA's Fabric Manager guide says: the SXid table is checked against
 * the guide's rows (test/fixtures/health/sxid-catalog.tsv, its source in its header); the parser and the grade run on
 * published kernel logs (test/fixtures/health/README.md, "NVSwitch SXid captures"), healthy and sick, on the healthy H100
 * node of test/health.test.ts. Lines in other prefix forms are made in memory from the published ones (only the prefix
 * changes), as said where it is done.
 */
import { test } from "node:test";
import { cap, stack } from "./fixtures/health/stacks";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { SXID_CATALOG, sxidInfo, sxidNeedsOwner, type SxidTable } from "../components/catalog/sxid";
import { gradeNode } from "../components/health/grade";
import { parseDmesg } from "../components/health/dmesg";
import { DEFAULT_HEALTH_REQUIRE, type Component, type HealthExpectation, type NodeHealth } from "../components/health/types";

const H100 = stack("examples/azure-h100.yaml");
const only = (exp: HealthExpectation, require: Component[]): HealthExpectation => ({ ...exp, require });
const SMI = cap("nvidia-smi-q.h100-565.57.01.txt");
/** the healthy H100 node of test/health.test.ts with another kernel log */
const node = (dmesg: string): Record<string, string> => ({
    "nvidia-smi-q.txt": SMI, "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.h100x8-constructed.txt"),
    "dcgmi-diag.txt": cap("dcgmi-diag.h100-3.3.8-pass.txt"), "lspci-vv.txt": cap("lspci-vv.h100-gpud.txt"),
    "ibstat.txt": cap("ibstat.h100-ib-400.txt"), "dmesg.txt": dmesg, "rdma-devices.txt": cap("rdma-devices.h100-gpud-constructed.txt"),
});
const withLog = (dmesg: string): NodeHealth => gradeNode("n", node(dmesg), H100);
const sxidNotes = (h: NodeHealth): string[] => h.notes.filter((n) => n.startsWith("SXid "));
const FATAL = cap("dmesg.hgx-xid79-sxid20034-fatal-gpud.txt");

test("the SXid table carries the Fabric Manager guide's table, name and recovery for every row of the catalog fixture", () => {
    const rows = fs.readFileSync(path.join(__dirname, "fixtures/health/sxid-catalog.tsv"), "utf8").split("\n").filter((l) => /^\d/.test(l)).map((l) => l.split("\t"));
    assert.equal(rows.length, 92);
    const tables: Record<string, SxidTable> = { "D.4 non-fatal": "non-fatal", "D.5 fatal": "fatal", "D.6 always fatal": "always-fatal", "D.7 other notable": "notable" };
    for (const [code, table, name, recovery, note] of rows) {
        const info = SXID_CATALOG[Number(code)];
        assert.deepEqual([info?.table, info?.meaning, info?.recovery ?? ""], [tables[table], name, recovery], `SXid ${code}`);
        // fatal: D.5 and D.6, and a D.7 row whose description says it is fatal to the fabric
        const fatal = table === "D.5 fatal" || table === "D.6 always fatal" || (table === "D.7 other notable" && /\bit is fatal to the fabric/.test(note));
        assert.equal(info.fatal, fatal, `SXid ${code}`);
    }
    assert.equal(Object.keys(SXID_CATALOG).length, rows.length);
    assert.deepEqual(Object.values(SXID_CATALOG).filter((i) => i.table === "notable" && i.fatal).map((i) => i.code), [10003]);
    // a number the guide does not list: a note naming it unknown, with its unit by the driver's numbering where it has one
    assert.deepEqual([sxidInfo(28006).fatal, sxidInfo(28006).table, sxidInfo(28006).meaning], [false, undefined, "not in the Fabric Manager guide's SXid tables; the driver's OSFP thermal unit"]);
    assert.equal(sxidInfo(99999).meaning, "not in the Fabric Manager guide's SXid tables");
});

test("the driver's word can only lower the guide's severity: Non-fatal/Correctable on a fatal code is a note, Fatal on a non-fatal or unknown code is one too", () => {
    for (const code of [20034, 12020, 22012, 10003]) {
        assert.equal(sxidNeedsOwner(code, "fatal"), true, `${code}`);
        assert.equal(sxidNeedsOwner(code, undefined), true, `${code}`);
        assert.equal(sxidNeedsOwner(code, "non-fatal"), false, `${code}`);
        assert.equal(sxidNeedsOwner(code, "correctable"), false, `${code}`);
    }
    for (const code of [22013, 12028, 11012, 10001, 10004, 20009, 28006]) assert.equal(sxidNeedsOwner(code, "fatal"), false, `${code}`);
});

test("the published fatal capture (20034 LTSSM Fault Up on three NVSwitches beside a GPU's Xid 79) fails the node on nvswitch, one finding a switch", () => {
    const r = parseDmesg(FATAL);
    assert.equal(r.sxids.length, 8);
    assert.deepEqual(r.sxids.slice(0, 4).map((e) => [e.device, e.pci, e.code, e.severity, e.link]), [
        ["nvswitch1", "0000:06:00.0", 20034, "fatal", 48],
        ["nvswitch0", "0000:05:00.0", 20034, "fatal", 63],
        ["nvswitch2", "0000:07:00.0", 20034, "fatal", undefined],
        ["nvswitch0", "0000:05:00.0", 20034, undefined, undefined],
    ]);
    const h = withLog(FATAL);
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => [f.component, f.persistence]), [["xid", "transient"], ["nvswitch", "transient"], ["nvswitch", "transient"], ["nvswitch", "transient"]]);
    const sw = h.findings.filter((f) => f.component === "nvswitch");
    assert.deepEqual(sw.map((f) => /on NVSwitch (\S+) \((\w+)\)/.exec(f.message)?.slice(1, 3).join(" ")), ["0000:06:00.0 nvswitch1", "0000:05:00.0 nvswitch0", "0000:07:00.0 nvswitch2"]);
    assert.equal(sw[1].message, "SXid 20034 (LTSSM Fault Up) on NVSwitch 0000:05:00.0 (nvswitch0), links 62, 63, 4 line(s): the Fabric Manager guide lists it fatal " +
        "(recovery: Restart the guest VM to see if the associated NVSwitch comes back up.); the driver logged it fatal, 0 min before the log's last line (window 120 min)");
    // the newest line that shows it fatal is the evidence (the Severity 1 line of link 62)
    assert.equal(sw[1].evidence, "[6781753.409792] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 20034, Severity 1 Engine instance 62 Sub-engine instance 00");
    // without NVSwitch SXid grading the capture would fail on the Xid alone: the SXid lines are no lost GPU and no Xid
    assert.deepEqual(r.xids.map((x) => x.code), [79]);
    assert.deepEqual(r.lost.map((l) => l.pci), ["0000:91:00.0"]);
});

test("published healthy logs (22013 Minion DLREQ at boot, 12028 non-posted PRIV logged Non-fatal, a 12028 Data line alone) pass with notes", () => {
    const cases: Record<string, { lines: number; note: RegExp }> = {
        "dmesg.nvswitch-22013-nonfatal-lambda.txt": { lines: 12, note: /^SXid 22013 \(Minion Link DLREQ interrupt\) on NVSwitch 0000:0a:00\.0 \(nvswitch3\), links 50, 51, 54, 55, 12 line\(s\): the Fabric Manager guide lists it non-fatal .*; the driver logged it non-fatal; not graded$/ },
        "dmesg.h100-570-nvswitch-22013-boot-nvtrust124.txt": { lines: 8, note: /^SXid 22013 .* on NVSwitch 0000:04:00\.0 \(nvswitch3\), links 44, 45, 46, 8 line\(s\): .*the driver logged it non-fatal; not graded$/ },
        "dmesg.nvswitch-12028-data-iso-gpud338.txt": { lines: 1, note: /^SXid 12028 \(egress nonposted PRIV error\) on NVSwitch 0000:84:00\.0 \(nvswitch1\), 1 line\(s\): the Fabric Manager guide lists it non-fatal \(recovery: Restart Guest VM\.\); no line of it carries the driver's severity word; not graded$/ },
        "dmesg.nvswitch-12028-xid94-137-ctime-sulao.txt": { lines: 4, note: /^SXid 12028 .* on NVSwitch 0000:07:00\.0 \(nvswitch2\), link 62, 2 line\(s\): .*the driver logged it non-fatal; not graded$/ },
    };
    for (const [name, want] of Object.entries(cases)) {
        const r = parseDmesg(cap(name));
        assert.equal(r.sxids.length, want.lines, name);
        const h = withLog(cap(name));
        assert.equal(h.verdict, "healthy", `${name}: ${JSON.stringify(h.findings)}`);
        assert.ok(sxidNotes(h).some((n) => want.note.test(n)), `${name}: ${sxidNotes(h).join("\n")}`);
    }
    // the dmesg -T capture: three switches, one note each; its Xid 94 (RST: No) and Xid 137 lines stay notes too
    const sulao = withLog(cap("dmesg.nvswitch-12028-xid94-137-ctime-sulao.txt"));
    assert.equal(sxidNotes(sulao).length, 3);
    assert.ok(sulao.notes.some((n) => /^Xid 137 /.test(n)) && sulao.notes.some((n) => /^Xid 94 /.test(n)));
    // a switch whose Data line comes before its Non-fatal line (nvtrust#124) is one event, read by its word
    assert.deepEqual(parseDmesg(cap("dmesg.h100-570-nvswitch-22013-boot-nvtrust124.txt")).sxids.slice(0, 3).map((e) => e.severity), [undefined, "non-fatal", "non-fatal"]);
});

test("every kernel-log form dmesg.ts reads carries the SXid, its switch, word and time (prefixes swapped in memory on the published lines)", () => {
    // the capture's own lines stripped of "[seconds] " and given each other prefix; the messages are unchanged
    const messages = FATAL.split("\n").filter((l) => l.includes("SXid")).map((l) => l.replace(/^\[[ \d.]+\] /, ""));
    const forms: Record<string, (m: string, i: number) => string> = {
        "dmesg": (m, i) => `[ 6781753.40${i}000] ${m}`,
        "dmesg -T": (m, i) => `[Sat Jan 25 10:34:5${i} 2025] ${m}`,
        "dmesg --time-format iso": (m, i) => `2025-01-25T10:34:5${i},859532+00:00 ${m}`,
        "dmesg -x --time-format iso": (m, i) => `kern  :err   : 2025-01-25T10:34:5${i},859532+00:00 ${m}`,
        "syslog / journalctl -k": (m, i) => `Jan 25 10:34:5${i} hgx-node kernel: ${m}`,
        "syslog with the kernel's time": (m, i) => `Jan 25 10:34:5${i} hgx-node kernel: [6781753.40${i}000] ${m}`,
        "/dev/kmsg": (m, i) => `3,${100 + i},678175340${i}000,-;${m}`,
        "dmesg -r": (m, i) => `<3>[6781753.40${i}000] ${m}`,
    };
    for (const [form, make] of Object.entries(forms)) {
        const text = messages.map(make).join("\n") + "\n";
        const r = parseDmesg(text);
        assert.deepEqual(r.sxids.map((e) => [e.pci, e.code, e.severity]), parseDmesg(FATAL).sxids.map((e) => [e.pci, e.code, e.severity]), form);
        assert.ok(r.sxids.every((e) => e.time !== undefined), form);
        const h = gradeNode("n", { "dmesg.txt": text }, only(H100, ["xid", "nvswitch"]));
        assert.deepEqual(h.findings.map((f) => [f.component, f.persistence]), Array(3).fill(["nvswitch", "transient"]), form);
    }
    // lines with no prefix at all (a grep of messages) are read, and fail as lines without a time
    const bare = gradeNode("n", { "dmesg.txt": messages.join("\n") }, only(H100, ["xid", "nvswitch"]));
    assert.equal(bare.verdict, "failing");
    assert.ok(bare.findings.every((f) => /\(the line has no time: cannot show it is old\)$/.test(f.message)));
});

test("the Xid window applies: a fatal SXid more than 120 min before the log's last line is a note; a Data line alone of a fatal code fails", () => {
    const old = "Jan 25 08:00:00 hgx-node kernel: nvidia-nvswitch1: SXid (PCI:0000:06:00.0): 20034, Fatal, Link 48 LTSSM Fault Up\n" +
        "Jan 25 10:34:54 hgx-node kernel: mlx5_core 0000:1a:00.0: mlx5_ib_query_port: link up\n";
    const h = gradeNode("n", { "dmesg.txt": old }, only(H100, ["xid", "nvswitch"]));
    assert.deepEqual(h.findings, []);
    assert.match(h.notes.join("\n"), /^SXid 20034 .*the driver logged it fatal: 155 min before the log's last line, past the 120 min window; not graded$/m);
    const windowed = gradeNode("n", { "dmesg.txt": old }, { ...only(H100, ["xid", "nvswitch"]), xidWindowMinutes: 180 });
    assert.equal(windowed.findings[0].component, "nvswitch");
    // the capture's Data line of nvswitch0 alone carries no word: the guide's table (D.5) decides
    const data = FATAL.split("\n").find((l) => l.includes("20034, Data"))!;
    const d = gradeNode("n", { "dmesg.txt": data }, only(H100, ["xid", "nvswitch"]));
    assert.equal(d.findings.length, 1);
    assert.match(d.findings[0].message, /no line of it carries the driver's severity word, 0 min before/);
});

test("the same switch and code logged Non-fatal (the driver's uncontained branch), or an unknown code logged Fatal, are notes", () => {
    // constructed from the driver's format (intr_nvswitch.h NVSWITCH_REPORT_CONTAIN logs a D.6 code "Non-fatal, Link %02d %s"
    // when the error was not contained; intr_ls10.c names 12020 "egress sequence ID error")
    const uncontained = "[  100.000000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12020, Non-fatal, Link 04 egress sequence ID error\n" +
        "[  100.000100] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12020, Severity 0 Engine instance 04 Sub-engine instance 00\n" +
        "[  100.000200] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12020, Data {0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000, 0x00000000}\n";
    const u = gradeNode("n", { "dmesg.txt": uncontained }, only(H100, ["xid", "nvswitch"]));
    assert.deepEqual(u.findings, []);
    assert.match(u.notes[0], /^SXid 12020 \(egress sequence ID error\) .* lists it always fatal .*; the driver logged it non-fatal; not graded$/);
    // a Fatal line of the same code on another link of the same switch makes it fatal: the worst word decides
    const mixed = gradeNode("n", { "dmesg.txt": uncontained + "[  100.100000] nvidia-nvswitch0: SXid (PCI:0000:05:00.0): 12020, Fatal, Link 05 egress sequence ID error\n" }, only(H100, ["xid", "nvswitch"]));
    assert.deepEqual(mixed.findings.map((f) => [f.component, f.evidence?.endsWith("Fatal, Link 05 egress sequence ID error")]), [["nvswitch", true]]);
    // a number the guide does not list, even logged "Fatal" (the published 20034 line with its number changed): a note naming it unknown
    const unknown = FATAL.split("\n")[5].replace("20034, Fatal", "25001, Fatal");
    const n = gradeNode("n", { "dmesg.txt": unknown }, only(H100, ["xid", "nvswitch"]));
    assert.equal(n.verdict, "healthy");
    assert.match(n.notes[0], /^SXid 25001 \(not in the Fabric Manager guide's SXid tables; the driver's NVLIPT_LNK unit\) .*: the Fabric Manager guide gives no severity for it \(unknown\); the driver logged it fatal; not graded$/);
});

test("nvswitch is required by default; where the kernel log is missing, refused or empty it is not checked on NVSwitch boards only", () => {
    assert.ok(DEFAULT_HEALTH_REQUIRE.includes("nvswitch"));
    const missing = gradeNode("n", {}, only(H100, ["xid", "nvswitch"]));
    assert.deepEqual(missing.notChecked.map((c) => c.component), ["xid", "nvswitch"]);
    assert.match(missing.notChecked[1].reason, /^dmesg\.txt is missing: no NVSwitch SXid could be read$/);
    const denied = gradeNode("n", { "dmesg.txt": cap("dmesg.gke-denied.txt") }, only(H100, ["xid", "nvswitch"]));
    assert.deepEqual(denied.notChecked.map((c) => c.component), ["xid", "nvswitch"]);
    assert.deepEqual(gradeNode("n", { "dmesg.txt": "" }, only(H100, ["xid", "nvswitch"])).notChecked.map((c) => c.component), ["xid", "nvswitch"]);
    // a board without NVSwitch (g6e: PCIe L40S) has no SXid to check
    const pcie = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "g6e.8xlarge"; c.aws.allowNoGpuDirect = true; });
    assert.equal(pcie.nvswitch, false);
    assert.deepEqual(gradeNode("n", {}, only(pcie, ["xid", "nvswitch"])).notChecked.map((c) => c.component), ["xid"]);
});

test("a log with many switches and codes is bounded: 20 findings and 20 notes listed, the rest counted, none dropped unseen", () => {
    // the published fatal line on 25 made-up buses, and the published 22013 line on 25 more
    const fatal = FATAL.split("\n")[5];
    const benign = cap("dmesg.nvswitch-22013-nonfatal-lambda.txt").split("\n")[0];
    const bus = (i: number): string => (0x40 + i).toString(16);
    const text = Array.from({ length: 25 }, (_, i) => fatal.replace("0000:06:00.0", `0000:${bus(i)}:00.0`))
        .concat(Array.from({ length: 25 }, (_, i) => benign.replace("0000:0a:00.0", `0000:${bus(i)}:00.0`))).join("\n");
    const h = gradeNode("n", { "dmesg.txt": text }, only(H100, ["xid", "nvswitch"]));
    assert.equal(h.findings.length, 20);
    assert.equal(sxidNotes(h).length, 20);
    assert.ok(h.notes.includes("10 more NVSwitch SXid (switch, code) pair(s) in the log not listed one by one (the first 20 findings and 20 notes are)"));
});
