/**
 * Review of health round 9 (lspci all-ones config space, PCIe ACS on bare metal) against the vendors' words, with real
 * captures the round did not use (test/fixtures/health/README.md, "Review 16"). Each is graded the way `rdmakit health`
 * reads a node: a node folder holding the capture under the grader's file name, through gradeHealthDir.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import { CAPTURES, cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseLspci } from "../components/health/lspci";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import type { Expectation } from "../components/validate/types";

const ROCE = stack("examples/roce-h100.yaml");
const WHOLE = () => gunzipSync(fs.readFileSync(path.join(CAPTURES, "lspci-vv.h100-gpud-whole.txt.gz"))).toString("utf8");
const h100 = (lspci: string) => ({ "lspci-vv.txt": lspci, "rdma-devices.txt": cap("rdma-devices.h100-gpud-constructed.txt") });
/** one line of a device's block replaced, the block found by its device line */
const inBlock = (text: string, bdf: string, from: RegExp, to: string): string => {
    const start = text.indexOf(`\n${bdf} `) + 1;
    const end = text.indexOf("\n\n", start);
    const out = text.slice(0, start) + text.slice(start, end).replace(from, to) + text.slice(end);
    assert.notEqual(out, text, `${bdf}: ${from}`);
    return out;
};
/** a device's whole block taken out (its device line to the blank line after it) */
const without = (text: string, bdf: string): string => {
    const start = text.indexOf(`\n${bdf} `) + 1;
    assert.ok(start > 0, bdf);
    return text.slice(0, start) + text.slice(text.indexOf("\n\n", start) + 2);
};
// the redirect line of the capture's own PMC-Sierra storage-switch ports (NVIDIA/nccl#304 quotes the same line as the
// state that broke GPUDirect on a PLX switch)
const ON = "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-";

test("a non-root lspci -vv of an H100 (fastfetch-cli/fastfetch#1658, 'Capabilities: <access denied>') is never failing: pcie not checked", () => {
    const text = cap("lspci-vv.h100-nonroot-fastfetch1658-excerpt.txt");
    const r = parseLspci(text);
    assert.deepEqual(r.devices.map((d) => [d.bdf, d.kind, d.accessDenied, d.offBus, d.sta]), [["3b:00.0", "gpu", true, undefined, undefined]]);
    const h = grade({ "lspci-vv.txt": text }, only({ ...ROCE, gpus: 1 }, ["pcie"]));
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["pcie"] });
});

test("an SR-IOV VF's -xxx dump row starts ff ff ff ff by design (pciutils#154): not off the bus; a row all ff still is", () => {
    // constructed: a dump row under GPU 19:00.0 whose ID bytes read ffff as a VF's do, its other bytes readable
    const vfRow = "00: ff ff ff ff 06 04 10 00 a1 00 02 03 00 00 00 00";
    const vf = inBlock(cap("lspci-vv.h100-gpud.txt"), "19:00.0", /\n\tKernel driver in use: nvidia/, `\n\tKernel driver in use: nvidia\n${vfRow}`);
    assert.equal(parseLspci(vf).devices.find((d) => d.bdf === "19:00.0")!.offBus, undefined);
    assert.deepEqual(summary(grade(h100(vf), only(ROCE, ["pcie"]))), { verdict: "healthy", findings: [], notChecked: [] });
    const dead = vf.replace(vfRow, "00: ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff");
    assert.deepEqual(summary(grade(h100(dead), only(ROCE, ["gpu"]))).findings.map((x) => x[0]), ["gpu"]);
});

test("ACS redirect: the message names the port, its ACS Control register, what lasts a reboot, and the peers it cuts off", () => {
    const h = grade(h100(inBlock(WHOLE(), "17:01.0", /ACSCtl:\t[^\n]*/, ON)), only(ROCE, ["pcie"]));
    assert.deepEqual(h.findings.map((x) => x.component), ["pcie"]);
    const m = h.findings[0].message;
    assert.match(m, /^PCIe ACS redirects peer-to-peer requests at switch port 17:01\.0 above GPU 19:00\.0 \(ReqRedir\+\): GPUDirect P2P and RDMA traffic between them and RDMA NIC 1a:00\.0 \(rail mlx5_0\)/);
    assert.match(m, /iommu=pt too/);
    assert.match(m, /pci=disable_acs_redir=17:01\.0/);
    assert.match(m, /setpci -s 17:01\.0 ECAP_ACS\+0x6\.w=0000 \(that port's ACS Control register\) clears it only until the next reboot$/);
});

test("ACS redirect above the only GPU or rail of its switch is a note: NCCL's traffic from it crosses the root complex anyway (before: failing)", () => {
    // constructed: the GPU's switch (upstream port 16:00.0) with its rails taken out, the redirect on the GPU's port
    let alone = inBlock(WHOLE(), "17:01.0", /ACSCtl:\t[^\n]*/, ON);
    for (const bdf of ["1a:00.0", "1b:00.0", "1b:00.1"]) alone = without(alone, bdf);
    const h = grade(h100(alone), only(ROCE, ["pcie"]));
    assert.deepEqual(h.findings.filter((x) => x.component === "pcie" && /ACS/.test(x.message)), []);
    assert.ok(h.notes.some((n) => n.startsWith("PCIe ACS redirect at switch port 17:01.0 above GPU 19:00.0, but no other GPU or rail sits below switch 16:00.0")), h.notes.join("\n"));
});

test("ACS redirect with DirectTrans+ is a note only where the rails below have ATS on (NVIDIA: 'ATS must be enabled on the NIC'); ATS off fails (before: a note)", () => {
    const dt = ON.replace("DirectTrans-", "DirectTrans+");
    const base = inBlock(WHOLE(), "17:02.0", /ACSCtl:\t[^\n]*/, dt);
    // the capture's ConnectX-7 lists no ATS capability (ATS_ENABLED false hides it): untranslated requests are redirected
    const off = grade(h100(base), only(ROCE, ["pcie"]));
    assert.deepEqual(off.findings.map((x) => x.component), ["pcie"]);
    assert.match(off.findings[0].message, /\(DirectTrans\+ passes only ATS-translated requests, and ATS is off at RDMA NIC 1a:00\.0 \(rail mlx5_0\)/);
    // constructed: the ATS capability as NVIDIA's appendix shows it once enabled (ls-ecaps.c cap_ats form), on rail mlx5_0
    const on = inBlock(base, "1a:00.0", /\n\tKernel driver in use:/, "\n\tCapabilities: [480 v1] Address Translation Service (ATS)\n\t\tATSCap:\tInvalidate Queue Depth: 00\n\t\tATSCtl:\tEnable+, Smallest Translation Unit: 00\n\tKernel driver in use:");
    assert.equal(parseLspci(on).devices.find((d) => d.bdf === "1a:00.0")!.ats, true);
    const hOn = grade(h100(on), only(ROCE, ["pcie"]));
    assert.deepEqual(summary(hOn).findings, []);
    assert.ok(hOn.notes.some((n) => n.startsWith("PCIe ACS redirect at switch port 17:02.0 above RDMA NIC 1a:00.0 (rail mlx5_0) with Direct Translated P2P on and ATS on")), hOn.notes.join("\n"));
    // ATSCtl Enable- (capability present, off) fails as the absent one does
    const minus = on.replace("ATSCtl:\tEnable+", "ATSCtl:\tEnable-");
    assert.equal(parseLspci(minus).devices.find((d) => d.bdf === "1a:00.0")!.ats, false);
    assert.deepEqual(summary(grade(h100(minus), only(ROCE, ["pcie"]))).findings.map((x) => x[0]), ["pcie"]);
});

// nccl-report on real rccl-tests logs the round did not use (test/fixtures/nccl/hisohara-*.source.md)
const NCCL = path.resolve(__dirname, "fixtures/nccl");
const floor = (min: number): Expectation => ({ minBusbwGBps: min, gradeFromBytes: 1 << 30, transport: "any", requireGdr: false, source: "test" });

test("hisohara/ai-scripts rccl-tests logs (MI300X, one node with Group rank lines; two nodes without Group, RCCL's version lines): read, completed, correct, graded on busbw", () => {
    for (const [name, ranks, hosts, rows, avg] of [
        ["hisohara-aiscripts-rccl-tests-mi300x-1node-allreduce.log", 8, ["1942ef50-8240-449e-82ca-4ce7993f70b4-78bfb5d4f4-4z9xh"], 31, 110.464],
        ["hisohara-aiscripts-rccl-tests-mi300x-2node-allreduce.log", 16, ["gpu-53", "gpu-56"], 32, 92.3318],
    ] as const) {
        const p = parseNcclLog(fs.readFileSync(path.join(NCCL, name), "utf8"), { name });
        assert.equal(p.runs.length, 1, name);
        const run = p.runs[0];
        assert.deepEqual([run.tool, run.collective, run.nRanks, run.hosts, run.rows.length, run.avgBusbwGBps, run.completed, run.lastError, run.cutRankLine],
            ["rccl-tests", "all_reduce_perf", ranks, [...hosts], rows, avg, true, null, null], name);
        const ok = gradeLog(p, floor(300)).runs[0];
        assert.deepEqual(ok.verdicts.map((v) => [v.check, v.ok]), [["completed", true], ["correctness", true], ["busbw", true]], name);
        assert.equal(ok.pass, true, name);
        // a floor above the run's best (357.46 GB/s at 16 GiB on two nodes) fails on busbw alone
        const low = gradeLog(p, floor(400)).runs[0];
        assert.deepEqual(low.verdicts.filter((v) => !v.ok).map((v) => v.check), ["busbw"], name);
    }
});
