/**
 * Issue 33: the health gate grades as NVIDIA's own catalog does. The Xid table is checked against the catalog's rows
 * (test/fixtures/health/xid-catalog.tsv, its source in its header); each finding's case uses a published line, its
 * source beside it, on the healthy H100 node of test/health.test.ts. Wall time of this file: ~3 s.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parse as parseYaml } from "yaml";
import { XID_CATALOG, xidInfo, xidNeedsOwner } from "../components/catalog/xid";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { healthExpectation } from "../components/health/expect";
import { gradeNode, shortBdf } from "../components/health/grade";
import { parseDcgmJson, parseDcgmText } from "../components/health/dcgm";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";
import { parseDmesg } from "../components/health/dmesg";
import { isTransient, type HealthExpectation, type NodeHealth } from "../components/health/types";

const ROOT = path.resolve(__dirname, "..");
const CAP = path.join(__dirname, "fixtures/health/captures");
const cap = (name: string): string => fs.readFileSync(path.join(CAP, name), "utf8");
const raw = (parseYaml(fs.readFileSync(path.join(ROOT, "examples/azure-h100.yaml"), "utf8")) as { config: Record<string, any> }).config["rdmakit:cluster"];
const H100: HealthExpectation = healthExpectation(planCluster(parseClusterSpec(raw)));
const SMI = cap("nvidia-smi-q.h100-565.57.01.txt");
const node = (files: Record<string, string> = {}): Record<string, string> => ({
    "nvidia-smi-q.txt": SMI, "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.h100x8-constructed.txt"),
    "dcgmi-diag.txt": cap("dcgmi-diag.h100-3.3.8-pass.txt"), "lspci-vv.txt": cap("lspci-vv.h100-gpud.txt"),
    "ibstat.txt": cap("ibstat.h100-ib-400.txt"), "dmesg.txt": cap("dmesg.kmsg-clean.txt"),
    "rdma-devices.txt": cap("rdma-devices.h100-gpud-constructed.txt"), ...files,
});
const withLog = (lines: string): NodeHealth => gradeNode("n", node({ "dmesg.txt": lines }), H100);
/** the nvidia-smi capture with one field of the GPU at 18:00 changed (the first GPU section) */
const smiWith = (from: RegExp, to: string): string => SMI.replace(from, to);

test("the Xid table carries NVIDIA's immediate resolution for every code of the catalog fixture", () => {
    const rows = fs.readFileSync(path.join(__dirname, "fixtures/health/xid-catalog.tsv"), "utf8").split("\n").filter((l) => /^\d/.test(l)).map((l) => l.split("\t"));
    assert.equal(rows.length, 172);
    for (const [code, , immediate] of rows) assert.equal(XID_CATALOG[Number(code)]?.resolution, immediate, `Xid ${code}`);
    assert.equal(Object.keys(XID_CATALOG).length, rows.length);
    // the list of "restart the app" / "ignore" codes in use: notes, never a failing node
    for (const c of [8, 11, 25, 32, 37, 38, 39, 40, 41, 44, 60, 63, 70, 71, 72, 75, 76, 77, 80, 82, 83, 84, 85, 86, 88, 89, 92, 93, 96, 100, 107, 121, 126, 135, 137, 139, 141, 157, 160, 161]) {
        assert.equal(xidNeedsOwner(c, ""), false, `Xid ${c}`);
    }
    for (const c of [48, 62, 64, 74, 79, 95, 119, 120, 140, 143]) assert.equal(xidNeedsOwner(c, ""), true, `Xid ${c}`);
    // a code newer than the table: a note (unknown is not a fault), named as not in the catalog
    assert.equal(xidInfo(250).grade, "note");
});

test("finding 1: Xid 32 and Xid 63 are notes; Xid 94 reads RST:/D-RST:; Xid 154 reads the new action; NVLink5 reads Fatal/Nonfatal", () => {
    // issue 33's evidence line; Xid 32 is RESTART_APP in the catalog
    const x32 = withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 32, Channel ID 00000009 intr 00800000\n");
    assert.equal(x32.verdict, "healthy");
    assert.match(x32.notes.join("\n"), /Xid 32 .* restart app; not graded/);
    // source: stas00/ml-engineering compute/accelerator/nvidia/debug.md (a published Xid 63 line); the GPU's Remapped Rows
    // "Pending : No" in the capture, and Xid 63 is IGNORE in the catalog
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 63, pid=1896, Row Remapper: New row marked for remapping, reset gpu to activate.\n").verdict, "healthy");
    // Xid 94's form in open-gpu-kernel-modules kern_gpu_ga100.c ("%s: %s (0x%x). RST: %s, D-RST: %s"), line of issue 33
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 94, pid=7062, Contained: CE User Channel (0x9). RST: No, D-RST: No\n").verdict, "healthy");
    const reset = withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 94, pid=7062, Contained: CE User Channel (0x9). RST: Yes, D-RST: No\n");
    assert.deepEqual(reset.findings.map((f) => [f.component, f.persistence]), [["xid", "transient"]]);
    // Xid 154 as issue 33 / the R550 driver word it
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)\n").verdict, "healthy");
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 154, GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)\n").verdict, "failing");
    // leptonai/gpud components/accelerator/nvidia/xid kmsg tests: NVLink5 lines name their severity
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 144, SAW_MVB Nonfatal XC0 i0 Link 00 (0x00000001 0x00000008 0x00000000 0x00000000)\n").verdict, "healthy");
    assert.equal(withLog("[ 100.000000] NVRM: Xid (PCI:0000:18:00): 145, RLW_REMAP Fatal XC0 i0 Link 00 (0x00000004 0x00000040 0x00000000 0x00000000)\n").verdict, "failing");
});

test("finding 1: an Xid past the window fails only while the GPU's state still asks for action (persistent then)", () => {
    // Xid 79 (RESTART_BM) 3 hours before the log's last line, GPU 18:00 now clean: a note
    const old = "[ 100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n[11000.000000] eth0: link becomes ready\n";
    const clean = withLog(old);
    assert.equal(clean.verdict, "healthy");
    assert.match(clean.notes.join("\n"), /Xid 79 .* 182 min before the log's last line, past the 120 min window/);
    // the same log with "Reset Required : Yes" on that GPU (R510+ field): failing, persistent, the state line named
    const stuck = gradeNode("n", node({ "dmesg.txt": old, "nvidia-smi-q.txt": smiWith(/Reset Required( +): No/, "Reset Required$1: Yes") }), H100);
    const xid = stuck.findings.find((f) => f.component === "xid")!;
    assert.equal(xid.persistence, "persistent");
    assert.equal(isTransient(xid), false);
    assert.match(xid.message, /still asks for action \(Reset Required\s+: Yes\)/);
    // a window from the spec's field: 240 minutes keeps it failing, transient
    const wide = gradeNode("n", node({ "dmesg.txt": old }), { ...H100, xidWindowMinutes: 240 });
    assert.equal(wide.findings[0]?.persistence, "transient");
    assert.equal(isTransient(wide.findings[0]), true);
});

test("finding 8: MIG-attributed Xids are read with their GPU instance", () => {
    // issue 33's line; the form nvErrorLog prints under MIG
    const r = parseDmesg("[ 100.000000] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7062, Contained: CE User Channel (0x9). RST: Yes, D-RST: No\n");
    assert.deepEqual(r.xids.map((x) => [x.pci, x.gpuInstance, x.code]), [["0000:01:00", "GPU-I:05", 94]]);
});

test("finding 2: a correctable AER line on a ConnectX is a note; an uncorrected one fails the NIC (transient)", () => {
    // issue 33's line, drivers/pci/pcie/aer.c aer_print_error form
    const c = withLog("[ 100.000000] mlx5_core 0000:1a:00.0: AER: PCIe Bus Error: severity=Correctable, type=Physical Layer, (Receiver ID)\n");
    assert.equal(c.verdict, "healthy");
    assert.match(c.notes.join("\n"), /1 corrected PCIe AER error line/);
    const u = withLog("[ 100.000000] mlx5_core 0000:1a:00.0: AER: PCIe Bus Error: severity=Uncorrected (Non-Fatal), type=Transaction Layer, (Requester ID)\n");
    assert.deepEqual(u.findings.map((f) => [f.component, f.persistence]), [["nic", "transient"]]);
    // kernels before 4.19 print it without "AER: " and with the id: the same grade
    const old = withLog("[ 100.000000] mlx5_core 0000:1a:00.0: PCIe Bus Error: severity=Uncorrected (Fatal), type=Inaccessible, id=1a00(Unregistered Agent ID)\n");
    assert.deepEqual(old.findings.map((f) => [f.component, f.message]), [["nic", "uncorrected PCIe error on mlx5_core 0000:1a:00.0"]]);
    assert.equal(withLog("[ 100.000000] mlx5_core 0000:1a:00.0: PCIe Bus Error: severity=Corrected, type=Physical Layer, id=1a00(Receiver ID)\n").verdict, "healthy");
});

test("finding 9: a kernel line saying \"Operation not permitted\" does not hide the Xid 79 after it", () => {
    const h = withLog("[ 90.000000] audit: apparmor=\"DENIED\" operation=\"open\" Operation not permitted\n[ 100.000000] NVRM: Xid (PCI:0000:18:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => f.component), ["xid"]);
});

test("finding 4: an NVML version mismatch with the library's version line is a failing gpu finding, not an unreadable file", () => {
    const h = gradeNode("n", node({ "nvidia-smi-nvlink.txt": "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 570.211\n" }), H100);
    assert.equal(h.unreadable.length, 0);
    assert.ok(h.findings.some((f) => f.component === "gpu" && /version mismatch; NVML library version: 570.211/.test(f.evidence ?? "")));
});

test("finding 5: ECC disabled fails the GPU with its ECC Mode line", () => {
    const h = gradeNode("n", node({ "nvidia-smi-q.txt": smiWith(/(ECC Mode\n\s+Current\s+): Enabled/, "$1: Disabled") }), H100);
    assert.deepEqual(h.findings.map((f) => [f.component, f.evidence]), [["ecc", "ECC Mode Current : Disabled"]]);
});

test("finding 6: Azure's per-GPU PCI domains stay apart", () => {
    // AzNHC test/data/orig_nvsmi8_output.txt: eight GPUs, eight domains, one key each
    const azure = parseNvidiaSmiQ(cap("nvidia-smi-q.azure-8gpu-domains-aznhc.txt"));
    assert.equal(new Set(azure.gpus.map((g) => shortBdf(g.busId))).size, 8);
    assert.notEqual(shortBdf("00000001:00:00.0"), shortBdf("00000002:00:00.0"));
    assert.equal(shortBdf("00000001:00:00.0"), shortBdf("0001:00:00.0"));
    assert.equal(shortBdf("00000000:19:00.0"), shortBdf("19:00.0"));
    assert.equal(shortBdf("0000:19:00"), shortBdf("19:00.0"));
});

test("finding 7: dcgmi -j with a runtime_error is not checked, as the text form's Error line is", () => {
    // the document shape dcgmi/Diag.cpp writes when the diagnostic cannot start
    const r = parseDcgmJson(JSON.stringify({ "DCGM Diagnostic": { runtime_error: "Unable to create the DCGM diagnostic: The GPU is in use" } }));
    assert.deepEqual(r, { tests: [], error: "Unable to create the DCGM diagnostic: The GPU is in use" });
    // -j output under the text form's name is refused by name, not read as a table
    assert.throws(() => parseDcgmText(JSON.stringify({ "DCGM Diagnostic": { test_categories: [] } })), /is JSON \(dcgmi diag -j\): the kit reads that form from dcgmi-diag\.json/);
    const h = gradeNode("n", node({ "dcgmi-diag.json": JSON.stringify({ "DCGM Diagnostic": { runtime_error: "x" } }) }), { ...H100, require: ["gpu", "dcgm"] });
    assert.equal(h.verdict, "incomplete");
});

test("finding 10: an A100 40GB is not an A100 80GB; HW Slowdown alone is a note; R580 repair pending fails", () => {
    // the H100 capture (81559 MiB) against a model of the same name with more memory fails; against less, it passes
    const h = gradeNode("n", node(), { ...H100, gpuMemoryGiB: 141 });
    assert.ok(h.findings.some((f) => f.component === "gpu" && /has 81559 MiB of memory, H100-80GB has 141 GiB/.test(f.message)));
    assert.equal(gradeNode("n", node(), { ...H100, gpuMemoryGiB: 40 }).verdict, "healthy");
    assert.equal(H100.gpuMemoryGiB, 80);
    const slow = gradeNode("n", node({ "nvidia-smi-q.txt": smiWith(/(HW Slowdown\s+): Not Active/, "$1: Active") }), H100);
    assert.equal(slow.verdict, "healthy");
    assert.match(slow.notes.join("\n"), /HW Slowdown\s+: Active without a cause named/);
    // R580 field names as a published 580.142 capture prints them under "ECC Errors"
    const repair = gradeNode("n", node({ "nvidia-smi-q.txt": smiWith(/(\n {4}Retired Pages)/, "\n        TPC Repair Pending                : GPU requires reset$1") }), H100);
    assert.ok(repair.findings.some((f) => f.component === "ecc" && /TPC Repair Pending\s+: GPU requires reset/.test(f.evidence ?? "")));
});

test("finding 3: a RoCE rail missing is named, never made up by other Ethernet ports", () => {
    const roceRaw = (parseYaml(fs.readFileSync(path.join(ROOT, "examples/roce-h100.yaml"), "utf8")) as { config: Record<string, any> }).config["rdmakit:cluster"];
    // the real RoCE capture's eight 400G rails (test/health.test.ts), one renamed: the capture's other Ethernet ports stay
    const text = cap("ibstat.h100-roce-400.txt");
    for (const h of roceRaw.roce.hosts) h.railNics = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_missing"];
    const exp = healthExpectation(planCluster(parseClusterSpec(roceRaw)));
    const h = gradeNode("n", node({ "ibstat.txt": text }), exp);
    assert.ok(h.findings.some((f) => f.component === "nic" && /mlx5_missing missing/.test(f.message)), JSON.stringify(h.findings));
});

test("finding 11/12: cluster.validation.health is checked by name and reaches the plan, the grade and the role", async () => {
    const { validationVars } = await import("../components/validate/component");
    const { validationArgsFromPlan } = await import("../components/validate/fromPlan");
    const bad = structuredClone(raw);
    bad.validation = { health: { require: ["gpu", "disk"], dcgmLevel: 5 } };
    assert.throws(() => parseClusterSpec(bad), (e: Error) => /cluster\.validation\.health\.require\[1\]: is not one of the allowed values \(got "disk"\); allowed: gpu, ecc, pcie, nvlink, nic, xid, nvswitch, dcgm, clocks/.test(e.message)
        && /cluster\.validation\.health\.dcgmLevel: is too large \(got 5\)/.test(e.message));
    const good = structuredClone(raw);
    good.validation = { health: { require: ["gpu", "dcgm"], xidWindowMinutes: 30, dcgmLevel: 3 } };
    const plan = planCluster(parseClusterSpec(good));
    const exp = healthExpectation(plan);
    assert.deepEqual([exp.require, exp.xidWindowMinutes, exp.dcgmLevel], [["gpu", "dcgm"], 30, 3]);
    const args = validationArgsFromPlan(plan, "dev");
    assert.equal(validationVars(args, args.hosts.map((_, i) => `10.0.0.${i + 1}`), "out/dev/nccl").node_health_dcgm_level, 3);
    // the defaults
    const d = healthExpectation(planCluster(parseClusterSpec(raw)));
    assert.deepEqual([d.require, d.xidWindowMinutes, d.dcgmLevel], [["gpu", "ecc", "pcie", "nvlink", "nic", "xid", "nvswitch", "clocks"], 120, 2]);
});

test("kernel-log forms: journalctl short-precise, dmesg -x and dmesg -r carry their times; a GPU past the stack's count with every NVLink down fails", () => {
    // journalctl(1) "-o short-precise"; dmesg(1) "-x" (--decode) and "-r" (--raw); the Xid line of dmesg.h100-xid119.txt
    const xid = "NVRM: Xid (PCI:0000:9b:00): 119, pid=2024380, name=nvidia-smi, Timeout after 6s of waiting for RPC response from GPU4 GSP!";
    for (const [form, first, last] of [
        ["short-precise", `Feb 23 16:24:18.123456 host kernel: ${xid}`, "Feb 23 19:24:18.000001 host kernel: eth0: link becomes ready"],
        ["-x", `kern  :err   : [  100.000000] ${xid}`, "kern  :info  : [11000.000000] eth0: link becomes ready"],
        ["-r", `<3>[  100.000000] ${xid}`, "<6>[11000.000000] eth0: link becomes ready"],
    ] as const) {
        const r = parseDmesg(`${first}\n${last}\n`);
        assert.ok(r.xids[0]?.time, form);
        const h = withLog(`${first}\n${last}\n`);
        assert.equal(h.verdict, "healthy", `${form}: ${JSON.stringify(h.findings)}`);
        assert.match(h.notes.join("\n"), /Xid 119 .*past the 120 min window/, form);
    }
    // leptonai/gpud#1085's line under a GPU index past the stack's eight
    const nv = gradeNode("n", node({ "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.h100x8-constructed.txt") + "GPU 9: NVIDIA H100 80GB HBM3 (UUID: GPU-x)\nNVML: Unable to retrieve NVLink information as all links are inActive\n" }), H100);
    assert.ok(nv.findings.some((f) => f.message === "GPU 9: every NVLink link is down"));
});
