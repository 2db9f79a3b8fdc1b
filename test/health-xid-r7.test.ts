/**
 * Round 7: the NVLink5 Xids 144-150 read as NVIDIA's "XID 144-150 Decode" sheet reads them (components/catalog/xid-nvlink5.ts,
 * its rows in test/fixtures/health/xid-nvlink5-decode.tsv). The lines are leptonai/gpud's kmsg test lines
 * (components/accelerator/nvidia/xid at commit 4a8de33a3f02e207f39e9023d67125592d599731: health_state_test.go, kmsg_test.go),
 * each graded through gradeHealthDir in a node folder of its own (dmesg.txt only, the xid component required).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { NVLINK5_DECODE, decodeNvlink5, fitsPattern } from "../components/catalog/xid-nvlink5";
import { xidInfo, xidNeedsOwner } from "../components/catalog/xid";

const B200 = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p6-b200.48xlarge"; });
const log = (line: string) => grade({ "dmesg.txt": `[171167.620236] ${line}\n` }, only(B200, ["xid"]));

test("the NVLink5 decode table carries every row of the sheet's fixture, in order", () => {
    const rows = fs.readFileSync(path.join(__dirname, "fixtures/health/xid-nvlink5-decode.tsv"), "utf8").split("\n").filter((l) => /^\d/.test(l)).map((l) => l.split("\t"));
    assert.equal(rows.length, 95);
    assert.equal(NVLINK5_DECODE.length, rows.length);
    rows.forEach(([xid, unit, v1, v2, status, immediate, , a1, a2, action2], i) => {
        const [x, u, p1, p2, s, r, a] = NVLINK5_DECODE[i];
        assert.deepEqual([x, u, p1, p2, s, r], [Number(xid), unit, v1, v2, status, immediate], `row ${i + 1}`);
        assert.deepEqual(a ?? ["", "", ""], [a1, a2, action2], `row ${i + 1} action 2`);
    });
    // patterns: bit 31 first
    assert.equal(fitsPattern("------100101----------0111000110", 0x025001c6), true);
    assert.equal(fitsPattern("------100101----------0111000110", 0x025001c7), false);
    assert.equal(fitsPattern("------000000----------0111000110", 0x025001c6), false);
    assert.equal(fitsPattern("------100110----------0111000110", 0x026001c6), true);
});

test("Xid 149 NETIR_LINK_EVT printed Fatal: link-down reason 0x26 and 0x28 are IGNORE in the sheet (a note); 0x25, 0x21, 0x04 need a reset (before: all failing)", () => {
    // gpud health_state_test.go, "NETIR_LINK_EVT with software subcode" (subcode 38 = 0x26: the sheet's IGNORE row)
    const sw = "NVRM: Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)";
    assert.equal(decodeNvlink5(149, sw)?.resolution, "IGNORE");
    assert.deepEqual(summary(log(sw)), { verdict: "healthy", findings: [], notChecked: [] });
    // reason 0x28 (the sheet: IGNORE, INVESTIGATE_HOST): the same line with bits 25:20 = 101000, **constructed**
    assert.equal(xidNeedsOwner(149, sw.replace("0x026001c6", "0x028001c6")), false);
    // "with peer device subcode" (37 = 0x25: RESET_GPU, INVESTIGATE_PEER_DEVICE)
    const peer = sw.replace("0x026001c6", "0x025001c6");
    assert.equal(decodeNvlink5(149, peer)?.resolution, "RESET_GPU");
    assert.equal(log(peer).verdict, "failing");
    // kmsg_test.go: two spaces and three between the words, reason 0x21; the 0x04 line of health_state_test.go's comment
    assert.equal(log("NVRM: Xid (PCI:0009:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)").verdict, "failing");
    assert.equal(xidNeedsOwner(149, "NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"), true);
    // "NETIR" (the NETIR/NETIR_INT row, V1 pattern): RESET_GPU
    assert.equal(decodeNvlink5(149, "NVRM: Xid (PCI:0019:01:00): 149, NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)")?.resolution, "RESET_GPU");
});

test("Xid 145 lines decode by sub component, IntrInfo and error status; the pid=/name= form is read; a line no row decides keeps the severity word", () => {
    // RLW_REMAP status 0x1: XID_154_EVAL (the Xid 154 line, if any, decides): a note
    assert.equal(decodeNvlink5(145, "NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Nonfatal XC0 i0 Link 00 (0x00000004 0x00000001 0x00000000 0x00000000)")?.resolution, "XID_154_EVAL");
    // RLW_REMAP status 0x40: RESET_GPU
    assert.equal(log("NVRM: Xid (PCI:0000:04:00): 145, RLW_REMAP Fatal XC0 i0 Link 00 (0x00000004 0x00000040 0x00000000 0x00000000)").verdict, "failing");
    // R550+ lines with pid and name before the sub component (RLW_SRC_TRACK status 0x8: XID_154_EVAL)
    const pid = "NVRM: Xid (PCI:0008:01:00): 145, pid=11436, name=cache_mgr_main, RLW_SRC_TRACK Nonfatal XC1 i0 Link 03 (0x040868e2 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)";
    assert.equal(decodeNvlink5(145, pid)?.unit, "RLW_SRC_TRACK");
    assert.deepEqual(summary(log(pid)), { verdict: "healthy", findings: [], notChecked: [] });
    // RLW_SRC_TRACK IntrInfo 0x7 (V2 subcode 0000111), status 0x1: RESET_GPU, as its word says
    const fatal = "NVRM: Xid (PCI:0000:04:00): 145, RLW_SRC_TRACK Fatal XC0 i0 Link 00 (0x00000007 0x00000001 0x00000000 0x00000000)";
    assert.equal(decodeNvlink5(145, fatal)?.resolution, "RESET_GPU");
    assert.equal(log(fatal).verdict, "failing");
    // a status the sheet has no row for (0x00000400): undecided, the word decides as before
    assert.equal(decodeNvlink5(145, fatal.replace("0x00000001 0x0", "0x00000400 0x0")), undefined);
    assert.equal(log(fatal.replace("0x00000001 0x0", "0x00000400 0x0")).verdict, "failing");
    // RLW_RXPIPE (V2 IntrInfo ...0000110, status 0x1): IGNORE; with the action-2 bit (V2 bit 7) RESET_GPU though the line
    // says Nonfatal. **constructed** from the sheet's rows in the form of the lines above
    const rx = (intr: string) => `NVRM: Xid (PCI:0000:04:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 00 (${intr} 0x00000001 0x00000000 0x00000000)`;
    assert.equal(log(rx("0x00000006")).verdict, "healthy");
    assert.equal(decodeNvlink5(145, rx("0x00000086"))?.resolution, "RESET_GPU");
    assert.equal(log(rx("0x00000086")).verdict, "failing");
    // a sub component the sheet does not name: the word decides
    assert.equal(decodeNvlink5(146, "NVRM: Xid (PCI:0000:04:00): 146, TLW_NEW Nonfatal XC0 i0 Link 00 (0x00000009 0x00000001)"), undefined);
    assert.equal(xidNeedsOwner(146, "NVRM: Xid (PCI:0000:04:00): 146, TLW_NEW Nonfatal XC0 i0 Link 00 (0x00000009 0x00000001)"), false);
});

test("an RLW_RXPIPE line of a GB200 node as gpud's PR quotes it (leptonai/gpud#1174): status 0x8, the sheet's IGNORE row: a note", () => {
    const line = "NVRM: Xid (PCI:0018:01:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)";
    assert.equal(decodeNvlink5(145, line)?.resolution, "IGNORE");
    assert.deepEqual(summary(log(line)), { verdict: "healthy", findings: [], notChecked: [] });
});

test("Xids the 595 driver defines past the catalog (173-176, nverror.h) are notes named by the driver's mnemonic; other unknown codes stay plain notes", () => {
    assert.equal(xidInfo(173).grade, "note");
    assert.equal(xidInfo(173).meaning, "not in NVIDIA's Xid catalog as the kit carries it; the driver's C2C_FATAL_LINK_FAILURE");
    assert.equal(xidInfo(175).meaning, "not in NVIDIA's Xid catalog as the kit carries it; the driver's MEMORY_SUBSYSTEM_ERROR");
    assert.equal(xidInfo(177).meaning, "not in NVIDIA's Xid catalog as the kit carries it");
    // constructed line in the catalog's Xid form: a note, the node healthy
    const h = log("NVRM: Xid (PCI:0000:04:00): 175, pid='<unknown>', name=<unknown>, Memory subsystem error");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.match(h.notes.join("\n"), /Xid 175 \(not in NVIDIA's Xid catalog as the kit carries it; the driver's MEMORY_SUBSYSTEM_ERROR\) on GPU 0000:04:00: NVIDIA's catalog says nothing \(not listed\); not graded/);
});
