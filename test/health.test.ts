/**
 * The node health gate on real captures (test/fixtures/health/README.md says where each comes from). A healthy node
 * is laid out from healthy captures of HGX H100 machines; each failing case swaps in one real capture of a failure
 * and must fail on exactly that component, with the capture's own line as evidence.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawnSync } from "child_process";
import { parse as parseYaml } from "yaml";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { expectationFromStackFile, runHealth } from "../components/health/cli";
import { healthExpectation } from "../components/health/expect";
import { gradeNode } from "../components/health/grade";
import { parseDcgmJson, parseDcgmText } from "../components/health/dcgm";
import { parseDmesg } from "../components/health/dmesg";
import { parseFiInfo, parseIbstat } from "../components/health/ibstat";
import { parseLspci } from "../components/health/lspci";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";
import { parseNvlinkStatus } from "../components/health/nvlink";
import { functionKey, parseRdmaDevices } from "../components/health/rdma-devices";
import { HealthParseError, type HealthExpectation, type NodeHealth } from "../components/health/types";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.resolve(__dirname, "..");
const CAP = path.join(__dirname, "fixtures/health/captures");
const cap = (name: string): string => fs.readFileSync(path.join(CAP, name), "utf8");
const AZURE_H100 = path.join(ROOT, "examples/azure-h100.yaml");
const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

/** A healthy HGX H100 node with InfiniBand: every file a healthy capture (one constructed from real lines, see README). */
const HEALTHY: Record<string, string> = {
    "nvidia-smi-q.txt": "nvidia-smi-q.h100-565.57.01.txt",
    "nvidia-smi-nvlink.txt": "nvidia-smi-nvlink.h100x8-constructed.txt",
    "dcgmi-diag.txt": "dcgmi-diag.h100-3.3.8-pass.txt",
    "lspci-vv.txt": "lspci-vv.h100-gpud.txt",
    "ibstat.txt": "ibstat.h100-ib-400.txt",
    "dmesg.txt": "dmesg.kmsg-clean.txt",
    "rdma-devices.txt": "rdma-devices.h100-gpud-constructed.txt",
};

function node(swap: Record<string, string | null> = {}): Record<string, string> {
    const files: Record<string, string> = {};
    for (const [name, capture] of Object.entries({ ...HEALTHY, ...swap })) if (capture !== null) files[name] = cap(capture);
    return files;
}

function stackExpectation(file: string, edit?: (cluster: any) => void): HealthExpectation {
    const raw = (parseYaml(fs.readFileSync(file, "utf8")) as { config: Record<string, any> }).config["rdmakit:cluster"];
    edit?.(raw);
    return healthExpectation(planCluster(parseClusterSpec(raw)));
}
const H100 = stackExpectation(AZURE_H100);

function layOut(nodes: Record<string, Record<string, string | null>>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-health-"));
    dirs.push(dir);
    for (const [name, swap] of Object.entries(nodes)) {
        fs.mkdirSync(path.join(dir, name));
        for (const [file, text] of Object.entries(node(swap))) fs.writeFileSync(path.join(dir, name, file), text);
    }
    return dir;
}

const components = (h: NodeHealth): string[] => [...new Set(h.findings.map((f) => f.component))].sort();

test("the healthy captures grade healthy against the ND H100 v5 stack, with nothing left unchecked", () => {
    const h = gradeNode("n", node(), H100);
    assert.deepEqual(h.findings, []);
    assert.deepEqual(h.notChecked, []);
    assert.deepEqual(h.unreadable, []);
    assert.equal(h.verdict, "healthy");
});

test("rdmakit health: two nodes, one with a ConnectX-7 trained at Gen4 x8, exits 1 naming that node, component and lspci line", () => {
    const dir = layOut({ "node-000": {}, "node-001": { "lspci-vv.txt": "lspci-vv.h100-gpud-nic-downgraded.txt" } });
    const r = runHealth({ config: AZURE_H100, from: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^node-000\s+healthy$/m);
    assert.match(r.stdout, /^node-001\s+FAILING$/m);
    assert.match(r.stdout, /pcie\s+RDMA NIC 1a:00\.0 \(ConnectX-7\) link trained at 16GT\/s x8, capable of 32GT\/s x16/);
    assert.match(r.stdout, /lspci-vv\.txt: 1a:00\.0 LnkSta: Speed 16GT\/s \(downgraded\), Width x8 \(downgraded\)/);
    assert.match(r.stdout, /failing: node-001 \(pcie\)$/m);
    assert.doesNotMatch(r.stdout, /failing: .*node-000/);
    const json = JSON.parse(runHealth({ config: AZURE_H100, from: dir, json: true }).stdout) as { nodes: NodeHealth[] };
    assert.deepEqual(json.nodes.map((n) => [n.node, n.verdict]), [["node-000", "healthy"], ["node-001", "failing"]]);
});

test("rdmakit health exits 0 when every node is healthy, 2 on a file that is not the tool's output, 1 with a tool missing", () => {
    assert.equal(runHealth({ config: AZURE_H100, from: layOut({ a: {}, b: {} }) }).code, 0);

    // the plain `nvidia-smi` table where `nvidia-smi -q` belongs
    const garbage = runHealth({ config: AZURE_H100, from: layOut({ a: {}, b: { "nvidia-smi-q.txt": "nvidia-smi.h100-table-565.57.01.txt" } }) });
    assert.equal(garbage.code, 2);
    assert.match(garbage.stdout, /^b\s+UNREADABLE$/m);
    assert.match(garbage.stdout, /unreadable\s+nvidia-smi-q\.txt is not nvidia-smi -q output/);

    const missing = runHealth({ config: AZURE_H100, from: layOut({ a: {}, b: { "ibstat.txt": null } }) });
    assert.equal(missing.code, 1);
    assert.match(missing.stdout, /^b\s+not checked$/m);
    assert.match(missing.stdout, /nic\s+not checked: ibstat\.txt is missing/);
    assert.doesNotMatch(missing.stdout, /failing:/);
    // finding 11, one rule printed: DCGM is not required by default (a note), and is once the spec requires it
    const noDcgm = layOut({ a: {}, b: { "dcgmi-diag.txt": null } });
    const relaxed = runHealth({ config: AZURE_H100, from: noDcgm });
    assert.equal(relaxed.code, 0, relaxed.stdout);
    assert.match(relaxed.stdout, /^rule: a node passes with no finding, every file readable, and gpu, ecc, pcie, nvlink, nic, xid, nvswitch, clocks checked \(dcgm not required/m);
    assert.match(relaxed.stdout, /note {4}dcgm not checked \(not required\): dcgmi-diag\.txt is missing/);
    const doc = parseYaml(fs.readFileSync(AZURE_H100, "utf8")) as { config: Record<string, any> };
    doc.config["rdmakit:cluster"].validation = { ...doc.config["rdmakit:cluster"].validation, health: { require: ["gpu", "ecc", "pcie", "nvlink", "nic", "xid", "clocks", "dcgm"] } };
    const strictFile = path.join(noDcgm, "..", `${path.basename(noDcgm)}-stack.yaml`);
    fs.writeFileSync(strictFile, JSON.stringify(doc));
    dirs.push(strictFile);
    const strict = runHealth({ config: strictFile, from: noDcgm });
    assert.equal(strict.code, 1);
    assert.match(strict.stdout, /dcgm\s+not checked: dcgmi-diag\.txt is missing/);
});

test("the installed command wires the verb and its exit status (one process, a garbage file: 2)", { timeout: 60_000 }, () => {
    const dir = layOut({ a: { "lspci-vv.txt": "dmesg.kmsg-clean.txt" } });
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin/rdmakit.ts"), "health", "--config", AZURE_H100, "--from", dir], { encoding: "utf8", cwd: ROOT });
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stdout, /lspci-vv\.txt line "6,3964,206764307,-;nvidia-nvswitch2: open \(major=510\)" is neither an lspci device line/);
});

test("usage errors exit 2 with what to give", () => {
    assert.match(runHealth({ from: "." }).stderr, /give --config FILE/);
    assert.match(runHealth({ config: AZURE_H100 }).stderr, /give --from DIR/);
    assert.match(runHealth({ config: AZURE_H100, from: "does-not-exist" }).stderr, /--from does-not-exist: not a folder/);
    assert.match(String(expectationFromStackFile(path.join(ROOT, "package.json"))), /has no config\.rdmakit:cluster/);
});

test("gpu: a node with one TITAN V where eight H100 belong fails on count and model", () => {
    const h = gradeNode("n", node({ "nvidia-smi-q.txt": "nvidia-smi-q.titanv-560.35.03.txt" }), H100);
    assert.ok(h.findings.some((f) => f.component === "gpu" && f.message === "1 GPU(s), expected 8 (Standard_ND96isr_H100_v5)" && f.evidence === "Attached GPUs : 1"));
    assert.ok(h.findings.some((f) => f.component === "gpu" && /is a NVIDIA TITAN V, expected H100-80GB/.test(f.message)));
    // its link at Gen1 in P8 is the idle GPU's power saving, not a fault
    assert.ok(h.notes.some((n) => /PCIe Gen1 of Gen3 in P8/.test(n)));
    assert.ok(!h.findings.some((f) => /Gen1/.test(f.message)));
});

test("gpu: a capture cut after one of eight GPUs is not checked for the others, never healthy", () => {
    const h = gradeNode("n", node({ "nvidia-smi-q.txt": "nvidia-smi-q.h100-535.183.01-cut-short.txt" }), H100);
    assert.equal(h.verdict, "incomplete");
    assert.match(h.notChecked[0].reason, /holds 1 of the 8 attached GPUs/);
});

test("ecc: a pending row remap (A100, driver 510 field names) fails with the Remapped Rows line", () => {
    const smi = parseNvidiaSmiQ(cap("nvidia-smi-q.a100-510-remap-pending-excerpt.txt"));
    assert.equal(smi.driverVersion, "510.73.08");
    assert.equal(smi.gpus[0].busId, "00000000:10:1C.0");
    assert.deepEqual(smi.gpus[0].uncorrectable, []);
    const exp = stackExpectation(AZURE_H100, (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
    const h = gradeNode("n", node({ "nvidia-smi-q.txt": "nvidia-smi-q.a100-510-remap-pending-excerpt.txt" }), exp);
    const ecc = h.findings.filter((f) => f.component === "ecc");
    assert.equal(ecc.length, 1);
    assert.match(ecc[0].message, /row remapping pending/);
    assert.equal(ecc[0].evidence, "Pending                           : Yes");
});

test("clocks: HW Power Brake on all eight GPUs (535.161.08) and SW Thermal on one (535.183.01) name those GPUs only", () => {
    const all = gradeNode("n", node({ "nvidia-smi-q.txt": "nvidia-smi-q.h100-535.161.08-powerbrake.txt" }), H100);
    assert.deepEqual(components(all), ["clocks"]);
    assert.equal(all.findings.length, 8);
    assert.ok(all.findings.every((f) => f.evidence === "HW Power Brake Slowdown       : Active"));
    const one = gradeNode("n", node({ "nvidia-smi-q.txt": "nvidia-smi-q.h100-535.183.01-one-gpu-throttled.txt" }), H100);
    assert.deepEqual([...new Set(one.findings.map((f) => f.message))], ["GPU 00000000:75:00.0 clocks are held down"]);
    assert.deepEqual(one.findings.map((f) => f.evidence?.replace(/\s+/g, " ")).sort(), ["HW Power Brake Slowdown : Active", "SW Thermal Slowdown : Active"]);
});

test("nvlink: inactive links (V100), all links down (B200), 12 links where H100 has 18 (A100) fail; the A100 on its own stack passes", () => {
    const v100 = gradeNode("n", node({ "nvidia-smi-nvlink.txt": "nvidia-smi-nvlink.v100-inactive.txt" }), H100);
    assert.ok(v100.findings.some((f) => f.message === "GPU 3: 2 NVLink link(s) inactive (3, 5)" && f.evidence === "Link 3: <inactive>"));
    const b200 = gradeNode("n", node({ "nvidia-smi-nvlink.txt": "nvidia-smi-nvlink.b200-all-inactive.txt" }), H100);
    assert.ok(b200.findings.some((f) => f.message === "GPU 2: every NVLink link is down"));
    const a100 = gradeNode("n", node({ "nvidia-smi-nvlink.txt": "nvidia-smi-nvlink.a100-gpud.txt" }), H100);
    assert.equal(a100.findings.filter((f) => /12 NVLink links listed, H100-80GB has 18/.test(f.message)).length, 8);
    const a100Stack = stackExpectation(AZURE_H100, (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
    assert.deepEqual(gradeNode("n", node({ "nvidia-smi-nvlink.txt": "nvidia-smi-nvlink.a100-gpud.txt" }), a100Stack).findings.filter((f) => f.component === "nvlink"), []);
});

test("nvlink: a link trained at a fraction of the others' speed fails", () => {
    const text = cap("nvidia-smi-nvlink.h100x8-constructed.txt").replace("Link 10: 26.562 GB/s", "Link 10: 1.562 GB/s");
    const h = gradeNode("n", { ...node(), "nvidia-smi-nvlink.txt": text }, H100);
    assert.deepEqual(components(h), ["nvlink"]);
    assert.match(h.findings[0].message, /GPU 0: 1 NVLink link\(s\) below 26\.562 GB\/s \(link 10 1\.562\)/);
});

test("dcgm: Fail - All (2.4.6) and Fail - GPU: 0 (r2) fail with their text; a run that did not happen (4.4.0) is not checked", () => {
    const pcie = gradeNode("n", node({ "dcgmi-diag.txt": "dcgmi-diag.a100-2.4.6-pcie-fail.txt" }), H100);
    assert.deepEqual(components(pcie), ["dcgm"]);
    assert.match(pcie.findings[0].evidence ?? "", /^PCIe: Fail - All; Warning: GPU 0GPU 0's NvLink link 0 is currently down/);
    const mem = gradeNode("n", node({ "dcgmi-diag.txt": "dcgmi-diag.gpu-memory-fail.txt" }), H100);
    assert.equal(mem.findings[0].message, 'DCGM test "GPU Memory" failed');
    // an Error row with no test above it is the diagnostic's own failure
    const remap = gradeNode("n", node({ "dcgmi-diag.txt": "dcgmi-diag.row-remap-error.txt" }), H100);
    assert.deepEqual(components(remap), ["dcgm"]);
    assert.equal(remap.findings[0].evidence, "Error: GPU 3 has uncorrectable memory errors and row remappings are pending");
    const err = gradeNode("n", node({ "dcgmi-diag.txt": "dcgmi-diag.4.4.0-error.txt" }), { ...H100, require: ["gpu", "dcgm"] });
    assert.equal(err.verdict, "incomplete");
    assert.match(err.notChecked[0].reason, /dcgmi did not run the diagnostic: Error: Unable to complete diagnostic/);
    // not required (the default): a note
    const errNote = gradeNode("n", node({ "dcgmi-diag.txt": "dcgmi-diag.4.4.0-error.txt" }), H100);
    assert.equal(errNote.verdict, "healthy");
    assert.match(errNote.notes.join("\n"), /dcgm not checked \(not required\): dcgmi did not run the diagnostic/);
    const pass = parseDcgmText(cap("dcgmi-diag.h100-3.3.8-pass.txt"));
    assert.deepEqual(pass.tests.map((t) => t.name), ["Denylist", "NVML Library", "CUDA Main Library", "Permissions and OS Blocks",
        "Persistence Mode", "Environment Variables", "Page Retirement/Row Remap", "Graphics Processes", "Inforom", "PCIe", "GPU Memory"]);
    assert.ok(pass.tests.every((t) => t.status === "pass"));
});

test("dcgm -j: DCGM 3.x and 4.x JSON (the field names cluster-health-scanner reads; documents constructed)", () => {
    // constructed from the field names in GoogleCloudPlatform/cluster-health-scanner src/gpu_healthcheck/gpu_healthcheck.py
    const v4 = JSON.stringify({ "DCGM Diagnostic": { test_categories: [{ category: "Hardware", tests: [{ name: "memory", results: [
        { entity_id: 0, status: "Pass" }, { entity_id: 3, status: "Fail", warnings: [{ warning: "GPU 3 has uncorrectable memory errors and row remappings are pending" }] }] }] }] } });
    const r = parseDcgmJson(v4);
    assert.equal(r.tests[0].status, "fail");
    assert.equal(r.tests[0].evidence[0], "Hardware/memory GPU 3: Fail - GPU 3 has uncorrectable memory errors and row remappings are pending");
    const v3 = JSON.stringify({ "DCGM GPU Diagnostic": { test_categories: [{ category: "Deployment", tests: [{ name: "Denylist", results: [{ status: "Pass" }] }] }] } });
    assert.equal(parseDcgmJson(v3).tests[0].status, "pass");
    assert.throws(() => parseDcgmJson('{"version": "4.1"}'), /not dcgmi diag -j output/);
    assert.throws(() => parseDcgmJson("Successfully ran diagnostic"), HealthParseError);
    // the node reads -j output by its own name
    const h = gradeNode("n", { ...node({ "dcgmi-diag.txt": null }), "dcgmi-diag.json": v4 }, H100);
    assert.deepEqual(components(h), ["dcgm"]);
});

test("pcie: the GPU model's catalog link: an H100 stack fed a Gen4-capable GPU fails; idle GPUs' lower speed is a note", () => {
    const lspci = parseLspci(cap("lspci-vv.h100-gpud.txt"));
    assert.deepEqual(lspci.devices.map((d) => d.kind).filter((k) => k === "gpu").length, 8);
    assert.equal(lspci.devices.filter((d) => d.kind === "nic").length, 12);
    assert.ok(lspci.devices.every((d) => d.cap?.gts && d.sta?.width));
    // the real lspci of an A100-class slot speaks 16GT/s: graded against the H100 catalog entry it fails on capability
    const gen4 = cap("lspci-vv.h100-gpud.txt").replace(/(19:00\.0 3D controller[\s\S]*?LnkCap:\tPort #0, Speed )32GT\/s/, "$116GT/s");
    const h = gradeNode("n", { ...node(), "lspci-vv.txt": gen4 }, H100);
    assert.ok(h.findings.some((f) => f.component === "pcie" && /GPU 19:00\.0 capable of Gen4 x16 only; H100-80GB is Gen5 x16/.test(f.message)));
});

test("nic: InfiniBand at 200 where 400 belongs fails; an ibpanic past the expected rails is a note; RoCE rails by name: all Active passes, Disabled and Polling fail", () => {
    const ib = gradeNode("n", node({ "ibstat.txt": "ibstat.a100-ibpanic.txt" }), H100);
    // ibstat listed the eight InfiniBand HCAs, then stopped at mlx5_8, no rail of the stack (round 4: Azure/azhpc-images#213)
    assert.ok(!ib.findings.some((f) => /ibpanic/.test(f.evidence ?? "")));
    assert.ok(ib.notes.some((n) => /^ibstat stopped at mlx5_8, which is no RDMA rail of the stack/.test(n)), ib.notes.join("\n"));
    assert.equal(ib.findings.filter((f) => /at 200 Gb\/s, expected 400 Gb\/s/.test(f.message)).length, 8);

    // examples/roce-h100.yaml with the rail names of the real RoCE capture (its 400G ports)
    const rails = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"];
    const roce = stackExpectation(path.join(ROOT, "examples/roce-h100.yaml"), (c) => { for (const h of c.roce.hosts) h.railNics = rails; });
    const ok = gradeNode("n", node({ "ibstat.txt": "ibstat.h100-roce-400.txt" }), roce);
    assert.deepEqual(ok.findings.filter((f) => f.component === "nic"), []);
    const bad = gradeNode("n", node({ "ibstat.txt": "ibstat.h100-roce-polling.txt" }), roce);
    assert.deepEqual(bad.findings.filter((f) => f.component === "nic").map((f) => f.evidence), [
        "mlx5_11 port 1: State: Down", "mlx5_5 port 1: State: Down",
    ]);
    // the InfiniBand node graded as RoCE: no Ethernet rail of those names is up
    assert.ok(gradeNode("n", node(), roce).findings.some((f) => f.component === "nic"));
});

test("nic: EFA devices from fi_info -p efa: four on a p4d pass; one or none where p4d.24xlarge has four fails", () => {
    const fi = parseFiInfo(cap("fi_info.efa-libfabric-5689.txt"));
    assert.deepEqual(fi.devices, ["efa_0"]);
    const aws = stackExpectation(path.join(ROOT, "examples/aws-p5.yaml"), (c) => { c.aws.instanceType = "p4d.24xlarge"; });
    const h = gradeNode("n", { ...node({ "ibstat.txt": null }), "fi_info.txt": cap("fi_info.efa-libfabric-5689.txt") }, aws);
    assert.ok(h.findings.some((f) => f.component === "nic" && f.message === "1 EFA device(s), expected 4 (p4d.24xlarge)"));
    assert.deepEqual(parseFiInfo("fi_getinfo: -61 (No data available)\n").devices, []);
    // four devices on a p4de (the same four EFA as p4d) pass; none fails with libfabric's own line
    const four = gradeNode("n", { ...node({ "ibstat.txt": null }), "fi_info.txt": cap("fi_info.p4de-4efa.txt") }, aws);
    assert.deepEqual(four.findings.filter((f) => f.component === "nic"), []);
    assert.deepEqual(parseFiInfo(cap("fi_info.p4de-4efa.txt")).devices, ["rdmap16s27", "rdmap32s27", "rdmap144s27", "rdmap160s27"]);
    const none = gradeNode("n", { ...node({ "ibstat.txt": null }), "fi_info.txt": cap("fi_info.no-efa.txt") }, aws);
    assert.ok(none.findings.some((f) => f.component === "nic" && f.message === "0 EFA device(s), expected 4 (p4d.24xlarge)" && f.evidence === "fi_getinfo: -61"));
    // no ibstat.txt is asked of an EFA node
    assert.ok(!four.notChecked.some((n) => n.file === "ibstat.txt"));
    assert.throws(() => parseFiInfo("---\nfi_info:\n    caps: [ FI_MSG ]\n"), /fi_info -v/);
});

test("xid: Xid 119 fails with NVIDIA's meaning; an application's Xid 31 (old form, syslog prefix) is a note; a denied dmesg is not checked", () => {
    const h = gradeNode("n", node({ "dmesg.txt": "dmesg.h100-xid119.txt" }), H100);
    assert.deepEqual(components(h), ["xid"]);
    assert.match(h.findings[0].message, /^Xid 119 \(GSP RPC Timeout\) on GPU 0000:9b:00, 0 min before the log's last line/);
    assert.equal(h.findings[0].persistence, "transient");
    // source: https://pastebin.com/NGng33SB (a kernel log line as posted)
    const app = parseDmesg("Nov 22 18:29:55 hostname kernel: [ 966.503025] NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120, intr 10000000\n");
    assert.deepEqual(app.xids.map((x) => [x.pci, x.code]), [["0000:01:00", 31]]);
    const g = gradeNode("n", { ...node(), "dmesg.txt": "Nov 22 18:29:55 hostname kernel: [ 966.503025] NVRM: Xid (0000:01:00): 31, Ch 0000000b, engmask 00000120, intr 10000000\n" }, H100);
    assert.equal(g.verdict, "healthy");
    assert.ok(g.notes.some((n) => /Xid 31 \(GPU memory page fault\).*not graded/.test(n)), g.notes.join("\n"));
    const denied = gradeNode("n", node({ "dmesg.txt": "dmesg.gke-denied.txt" }), H100);
    assert.equal(denied.verdict, "incomplete");
    assert.match(denied.notChecked[0].reason, /Operation not permitted/);
});

test("parsers refuse what they cannot read, naming what they expected", () => {
    assert.throws(() => parseNvidiaSmiQ("<?xml version=\"1.0\" ?>\n<nvidia_smi_log>"), /nvidia-smi -q -x \(XML\)/);
    assert.throws(() => parseNvlinkStatus("GPU 0: NVIDIA H100 80GB HBM3\n Link 0: up\n"), /neither "<N> GB\/s" nor "<inactive>"/);
    assert.throws(() => parseIbstat("hello world\n"), /before any "CA '<name>'" line/);
    assert.throws(() => parseLspci("\n\n"), /lists no PCI device/);
    assert.throws(() => parseDmesg("just some text\nand more\n"), /no line in a kernel-log form/);
    assert.throws(() => parseDcgmText("random\n"), /not dcgmi diag output/);
    // an empty nvlink output is a machine without NVLink; on an NVSwitch stack that fails, it is not unreadable
    assert.deepEqual(parseNvlinkStatus("").gpus, []);
    const h = gradeNode("n", { ...node(), "nvidia-smi-nvlink.txt": "" }, H100);
    assert.ok(h.findings.some((f) => f.message === "NVLink status for 0 GPU(s), expected 8 on an NVSwitch board"));
});

test("a folder with a binary file is unreadable (exit 2), not a missing file", () => {
    const dir = layOut({ a: {} });
    fs.writeFileSync(path.join(dir, "a", "ibstat.txt"), Buffer.from([0x7f, 0x45, 0x4c, 0x46, 0, 0, 1]));
    const r = runHealth({ config: AZURE_H100, from: dir });
    assert.equal(r.code, 2);
    assert.match(r.stdout, /ibstat\.txt holds NUL bytes/);
});

test("nccl-report --health: each node's health verdict beside its nccl-tests verdict; a failing node is a bad node in the result line", async () => {
    const { runNcclReport } = await import("../components/validate/cli");
    const { parseResultLine } = await import("../components/validate/component");
    const dir = layOut({ "h100-demo-000": {}, "h100-demo-001": { "lspci-vv.txt": "lspci-vv.h100-gpud-nic-downgraded.txt" }, "h100-demo-002": { "ibstat.txt": null } });
    const r = runNcclReport([], { health: dir, healthExpect: JSON.stringify(H100), resultLine: true });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    // one rule with `rdmakit health` (finding 11): a required component not checked makes a bad node in the gate too
    assert.match(r.stdout, /FAIL node health: 1 of 3 node\(s\) healthy; bad node\(s\): h100-demo-001, h100-demo-002/);
    assert.match(r.stdout, /^ {4}rule: a node passes with no finding/m);
    assert.match(r.stdout, /h100-demo-000\s+health healthy\s+nccl-tests -$/m);
    assert.match(r.stdout, /h100-demo-001\s+health FAILING\s+nccl-tests -\s+pcie: RDMA NIC 1a:00\.0 \(ConnectX-7\) link trained at 16GT\/s x8/);
    assert.match(r.stdout, /h100-demo-002\s+health not checked\s+nccl-tests -\s+not checked: pcie, nic$/m);
    assert.deepEqual(parseResultLine(r.stdout)?.badNodes, ["h100-demo-001", "h100-demo-002"]);
    assert.match(runNcclReport([], { health: dir }).stderr, /--health needs --health-expect/);
    assert.match(runNcclReport([], { health: dir, healthExpect: "{}" }).stderr, /not a HealthExpectation/);
});

test("the tools' own warnings and failures are read as such: pcilib lines, an NVML version mismatch, dmesg -H", () => {
    const lspci = "pcilib: sysfs_read_vpd: read failed: Input/output error\n" + cap("lspci-vv.h100-gpud.txt");
    assert.equal(parseLspci(lspci).devices.length, 20);
    // nvidia-smi's message after a driver upgrade without a reboot (NVIDIA/gpu-operator and NVIDIA forum threads)
    const nv = gradeNode("n", { ...node(), "nvidia-smi-nvlink.txt": "Failed to initialize NVML: Driver/library version mismatch\n" }, H100);
    assert.ok(nv.findings.some((f) => f.component === "gpu" && f.evidence === "Failed to initialize NVML: Driver/library version mismatch"));
    assert.equal(nv.unreadable.length, 0);
    // constructed: dmesg -H's prefixes on the driver's Xid 79 message as NVIDIA's Xid catalog words it
    const human = parseDmesg("[Feb23 16:24] NVRM: Xid (PCI:0000:9b:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n[  +0.000004] NVRM: GPU 0000:9b:00.0: GPU has fallen off the bus.\n");
    assert.deepEqual(human.xids.map((x) => x.code), [79]);
});

// Which Mellanox function is a rail (issue 33, finding 10): the gpud HGX H100 has 8 ConnectX-7 rails and 2 dual-port
// ConnectX-6 Dx front-end cards (buses 1b, 9d); lspci names models only, /sys/class/infiniband places each RDMA device.
test("the constructed /sys/class/infiniband listing agrees with the published ibdev2netdev of the same layout", () => {
    const placed = parseRdmaDevices(cap("rdma-devices.h100-gpud-constructed.txt")).devices;
    const published = [...cap("ibdev2netdev.h100-imbue-ai.txt").matchAll(/^(mlx5_\d+)\s+port\s+1\s+==>\s+(?:ib|en)p(\d+)s(\d+)(?:f(\d+))?/gm)];
    assert.equal(published.length, 12);
    for (const [, name, bus, slot, fn] of published) {
        const bdf = `0000:${Number(bus).toString(16).padStart(2, "0")}:${Number(slot).toString(16).padStart(2, "0")}.${fn ?? 0}`;
        assert.equal(placed.get(name), bdf, name);
    }
    // and with the gpud captures: every Mellanox function of the lspci holds one device, the ConnectX-6 Dx ones the Ethernet ports of ibstat
    const nics = parseLspci(cap("lspci-vv.h100-gpud.txt")).devices.filter((d) => d.kind === "nic");
    const byFn = new Map([...placed].map(([n, b]) => [functionKey(b!), n]));
    assert.deepEqual(nics.map((d) => byFn.has(functionKey(d.bdf))), nics.map(() => true));
    const ethernet = parseIbstat(cap("ibstat.h100-ib-400.txt")).cas.filter((c) => c.ports.some((p) => p.linkLayer === "Ethernet")).map((c) => c.name).sort();
    assert.deepEqual(nics.filter((d) => /ConnectX-6 Dx/.test(d.line)).map((d) => byFn.get(functionKey(d.bdf))).sort(), ethernet);
});

test("a non-rail ConnectX-6 Dx trained at Gen3 x8 is a note, not a failing node; the same on a ConnectX-7 rail fails naming the rail", () => {
    const storage = gradeNode("n", node({ "lspci-vv.txt": "lspci-vv.h100-gpud-storage-nic-downgraded.txt" }), H100);
    assert.deepEqual(storage.findings, []);
    assert.equal(storage.verdict, "healthy");
    assert.ok(storage.notes.includes("Mellanox functions that are no RDMA rail of the stack, their PCIe links not graded: " +
        "1b:00.0 (ConnectX-6 Dx, mlx5_1); 1b:00.1 (ConnectX-6 Dx, mlx5_2); 9d:00.0 (ConnectX-6 Dx, mlx5_7); 9d:00.1 (ConnectX-6 Dx, mlx5_8)"), storage.notes.join("\n"));
    const rail = gradeNode("n", node({ "lspci-vv.txt": "lspci-vv.h100-gpud-nic-downgraded.txt" }), H100);
    assert.deepEqual(rail.findings.map((f) => [f.component, f.message]), [["pcie", "RDMA NIC 1a:00.0 (ConnectX-7) link trained at 16GT/s x8, capable of 32GT/s x16 (rail mlx5_0)"]]);
    // RoCE: the rails are the spec's names; the 100G ConnectX-6 Dx ports (mlx5_1, 2, 7, 8) are not among them
    const rails = ["mlx5_0", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_9", "mlx5_10", "mlx5_11"];
    const roce = stackExpectation(path.join(ROOT, "examples/roce-h100.yaml"), (c) => { for (const h of c.roce.hosts) h.railNics = rails; });
    const r = gradeNode("n", node({ "ibstat.txt": "ibstat.h100-roce-400.txt", "lspci-vv.txt": "lspci-vv.h100-gpud-storage-nic-downgraded.txt" }), roce);
    assert.equal(r.verdict, "healthy", JSON.stringify(r.findings));
    assert.ok(r.notes.some((n) => n.endsWith("1b:00.0 (ConnectX-6 Dx, mlx5_1); 1b:00.1 (ConnectX-6 Dx, mlx5_2); 9d:00.0 (ConnectX-6 Dx, mlx5_7); 9d:00.1 (ConnectX-6 Dx, mlx5_8)")), r.notes.join("\n"));
});

test("without the /sys/class/infiniband listing no NIC link is graded (not checked, named); a listing that is not one is unreadable", () => {
    const none = gradeNode("n", node({ "rdma-devices.txt": null, "lspci-vv.txt": "lspci-vv.h100-gpud-nic-downgraded.txt" }), H100);
    assert.deepEqual(none.findings, [], "a rail's link is not guessed from the model");
    assert.equal(none.verdict, "incomplete");
    assert.match(none.notChecked.map((n) => `${n.component} ${n.file}: ${n.reason}`).join("\n"), /^pcie rdma-devices\.txt: rdma-devices\.txt is missing \(ls -l \/sys\/class\/infiniband\/\): which Mellanox functions are RDMA rails is unknown/);
    // the GPUs' links are still graded without it
    const gen4 = cap("lspci-vv.h100-gpud.txt").replace(/(19:00\.0 3D controller[\s\S]*?LnkCap:\tPort #0, Speed )32GT\/s/, "$116GT/s");
    assert.ok(gradeNode("n", { ...node({ "rdma-devices.txt": null }), "lspci-vv.txt": gen4 }, H100).findings.some((f) => f.component === "pcie" && /^GPU 19:00\.0/.test(f.message)));
    const garbage = gradeNode("n", { ...node(), "rdma-devices.txt": cap("ibstat.h100-ib-400.txt") }, H100);
    assert.equal(garbage.verdict, "unreadable");
    assert.match(garbage.unreadable[0].reason, /is not an ls -l line of \/sys\/class\/infiniband/);
    // ibstat lists the rails, the listing says the kernel has no RDMA device: the captures disagree, nothing is guessed
    const disagree = gradeNode("n", { ...node({ "lspci-vv.txt": "lspci-vv.h100-gpud-nic-downgraded.txt" }), "rdma-devices.txt": "ls: cannot access '/sys/class/infiniband/': No such file or directory\n" }, H100);
    assert.deepEqual(disagree.findings, []);
    assert.match(disagree.notChecked.map((n) => n.reason).join("\n"), /places no PCI function for mlx5_0, mlx5_10, mlx5_11, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_9, which ibstat\.txt lists/);
});

test("the /sys/class/infiniband listing: functions by address, software devices on none, several devices on one function", () => {
    const r = parseRdmaDevices([
        "total 0",
        "lrwxrwxrwx 1 root root 0 Jun  5 10:00 mlx5_0 -> ../../devices/pci0000:00/0000:00:01.0/0000:0b:00.0/infiniband/mlx5_0",
        "lrwxrwxrwx 1 root root 0 Jun  5 10:00 smi1 -> ../../devices/pci0000:00/0000:00:01.0/0000:0b:00.0/infiniband/smi1",
        "lrwxrwxrwx 1 root root 0 Jun  5 10:00 rxe0 -> ../../devices/virtual/infiniband/rxe0",
    ].join("\n"));
    assert.deepEqual([...r.devices], [["mlx5_0", "0000:0b:00.0"], ["smi1", "0000:0b:00.0"], ["rxe0", undefined]]);
    assert.equal(functionKey("1a:00.0"), functionKey("0000:1a:00.0"));
    assert.notEqual(functionKey("0001:00:00.0"), functionKey("0000:00:00.0"));
    assert.throws(() => parseRdmaDevices("mlx5_0 -> ../../devices/pci0000:00/0000:1a:00.0/infiniband/mlx5_1\n"), /does not link mlx5_0 to a \.\.\.\/infiniband\/mlx5_0 folder/);
    assert.throws(() => parseRdmaDevices("total 0\n"), /lists no RDMA device/);
});

test("more captures from others' machines (README: leptonai/gpud testdata): the sick one named with its component, the healthy ones unnamed", () => {
    // `dmesg --time-format iso` on an H100 node: Xid 48 (double bit ECC error) on 0000:19:00, then its Xid 63 (a row
    // marked for remapping) and Xid 94 (contained, `RST: No, D-RST: No`) lines; the node's nvidia-smi here shows no
    // pending remap, so the Xid 48 fails it as transient (check again), the 63 and 94 are notes
    const dbe = gradeNode("n", node({ "dmesg.txt": "dmesg.h100-iso-xid48-63-94.txt" }), H100);
    assert.equal(dbe.verdict, "failing");
    assert.deepEqual(dbe.findings.map((f) => [f.component, f.persistence]), [["xid", "transient"]]);
    assert.match(dbe.findings[0].message, /^Xid 48 \(Double Bit ECC Error\) on GPU 0000:19:00/);
    assert.match(dbe.findings[0].evidence ?? "", /^2024-11-15T12:02:03,470068\+00:00 NVRM: Xid \(PCI:0000:19:00\): 48, /);
    assert.ok(dbe.notes.some((n) => /^Xid 94 .*restart app/.test(n)) && dbe.notes.some((n) => /^Xid 63 .*ignore/.test(n)));
    // `dmesg -x` (kern :warn : prefixes) with 636 Xid 13 and 43 lines of one application's faults: NVIDIA says restart
    // the app, or ignore; the node stays healthy
    const storm = gradeNode("n", node({ "dmesg.txt": "dmesg.xid13-43-storm.txt" }), H100);
    assert.equal(storm.verdict, "healthy", JSON.stringify(storm.findings));
    // `<level>[seconds]` records of a 550 driver's boot: "module verification failed", a ConnectX port's "Cable unplugged"
    // at boot, PCIe bandwidth lines: no finding
    assert.equal(gradeNode("n", node({ "dmesg.txt": "dmesg.syslog-prefix-550.txt" }), H100).verdict, "healthy");
    // ibstat of another HGX H100: 8 InfiniBand ports Active at 400 and a bonded Ethernet device: the NICs pass
    const ib = gradeNode("n", node({ "ibstat.txt": "ibstat.h100-ib-400-bond.txt", "rdma-devices.txt": null }), H100);
    assert.ok(!ib.findings.some((f) => f.component === "nic") && !ib.notChecked.some((c) => c.component === "nic"), JSON.stringify(ib));
});

test("nvidia-smi -q's grammar: CRLF line ends, trailing spaces, [N/A] and Unknown Error values read as the plain capture", () => {
    const plain = gradeNode("n", node(), H100);
    const text = cap("nvidia-smi-q.h100-565.57.01.txt");
    const variants: Record<string, string> = {
        crlf: text.replace(/\n/g, "\r\n"),
        trailing: text.replace(/\n/g, "   \n"),
        bracketed: text.replace(/: N\/A$/gm, ": [N/A]"),
        unknown: text.replace(/^(\s+ECC Object\s+: ).*$/m, "$1Unknown Error"),
    };
    for (const [what, smi] of Object.entries(variants)) {
        const h = gradeNode("n", { ...node(), "nvidia-smi-q.txt": smi }, H100);
        assert.deepEqual({ verdict: h.verdict, findings: h.findings, notChecked: h.notChecked, unreadable: h.unreadable },
            { verdict: plain.verdict, findings: plain.findings, notChecked: plain.notChecked, unreadable: plain.unreadable }, what);
    }
});

test("nvidia-smi -q: a GPU whose PCIe link runs narrower than its Max fails pcie in P0; in an idle P-state it is a note", () => {
    // constructed from the real capture: the second GPU's "Link Width > Current" 16x -> 8x, its P-state P0 or P8
    const text = cap("nvidia-smi-q.h100-565.57.01.txt");
    const sections = text.split(/(?=^GPU [0-9A-F]{8}:)/m);
    const second = (state: string) => sections[2].replace(/(Link Width\n\s+Max\s+: 16x\n\s+Current\s+: )16x/, "$18x").replace(/(Performance State\s+: )P0/, `$1${state}`);
    assert.notEqual(second("P0"), sections[2]);
    const withSecond = (state: string) => [...sections.slice(0, 2), second(state), ...sections.slice(3)].join("");
    const busy = gradeNode("n", { ...node(), "nvidia-smi-q.txt": withSecond("P0") }, H100);
    assert.deepEqual(components(busy), ["pcie"]);
    assert.match(busy.findings[0].message, /PCIe link at x8 in P0, capable of x16/);
    assert.match(busy.findings[0].message, new RegExp(/^GPU [0-9A-F:.]+/.exec(sections[2])![0].slice(4).replace(/[.:]/g, "."), "i"));
    const idle = gradeNode("n", { ...node(), "nvidia-smi-q.txt": withSecond("P8") }, H100);
    assert.equal(idle.verdict, "healthy", JSON.stringify(idle.findings));
    assert.ok(idle.notes.some((n) => /PCIe x8 of x16 in P8/.test(n)), JSON.stringify(idle.notes));
});

test("lspci -vv: a GPU's LnkSta narrower than its LnkCap fails pcie in P0 and is a note in an idle P-state, as nvidia-smi's width", () => {
    // constructed from the real captures of one machine (lspci-vv.h100-gpud.txt and the 535.161.08 nvidia-smi -q, bus ids
    // 19 ... db): 19:00.0's "LnkSta: Speed 32GT/s (ok), Width x16 (ok)" -> "Width x8 (downgraded)"; its P-state P0 or P8
    const lspci = cap("lspci-vv.h100-gpud.txt").replace("LnkSta:\tSpeed 32GT/s (ok), Width x16 (ok)", "LnkSta:\tSpeed 32GT/s (ok), Width x8 (downgraded)");
    assert.notEqual(lspci, cap("lspci-vv.h100-gpud.txt"));
    const smi = cap("nvidia-smi-q.h100-535.161.08-powerbrake.txt");
    const first = smi.indexOf("GPU 00000000:19:00.0"), next = smi.indexOf("\nGPU ", first + 1);
    const inState = (ps: string) => smi.slice(0, first) + smi.slice(first, next).replace(/(Performance State\s+: )P0/, `$1${ps}`) + smi.slice(next);
    assert.notEqual(inState("P8"), smi);
    const pcie = (ps: string) => gradeNode("n", { ...node(), "lspci-vv.txt": lspci, "nvidia-smi-q.txt": inState(ps) }, H100);
    const busy = pcie("P0");
    assert.deepEqual(busy.findings.filter((f) => f.component === "pcie").map((f) => f.message), ["GPU 19:00.0 link trained at 32GT/s x8, capable of 32GT/s x16"]);
    const idle = pcie("P8");
    assert.deepEqual(idle.findings.filter((f) => f.component === "pcie"), [], JSON.stringify(idle.findings));
    assert.ok(idle.notes.some((n) => /^GPU 19:00\.0: x8 of x16 while P8 \(idle GPUs may lower/.test(n)), JSON.stringify(idle.notes));
});

test("dcgmi diag -j as DCGM 3.1.0 printed it (NVIDIA's own test of real output): a warning line before the document, null entries between tests", () => {
    const swap = { "dcgmi-diag.txt": null, "dcgmi-diag.json": "dcgmi-diag.3.1.0-warning-nulls.json" };
    const ok = gradeNode("n", node(swap), H100);
    assert.equal(ok.verdict, "healthy", JSON.stringify(ok));
    assert.ok(!ok.notChecked.some((c) => c.component === "dcgm") && !ok.notes.some((n) => /^dcgm not checked/.test(n)), "the tests were read");
    const report = parseDcgmJson(cap("dcgmi-diag.3.1.0-warning-nulls.json"));
    assert.deepEqual(report.tests.map((t) => t.name), ["Deployment/Denylist", "Deployment/NVML Library", "Deployment/CUDA Main Library",
        "Deployment/Permissions and OS-related Blocks", "Deployment/Persistence Mode", "Deployment/Environmental Variables",
        "Deployment/Page Retirement/Row Remap", "Deployment/Graphics Processes", "Deployment/Inforom", "Custom/software"]);
    // the same document with one GPU failing a test: that test fails the node on dcgm
    const failed = cap("dcgmi-diag.3.1.0-warning-nulls.json").replace(/("gpu_ids" : 3,\n\t+"status" : )"PASS"/, '$1"FAIL"');
    assert.notEqual(failed, cap("dcgmi-diag.3.1.0-warning-nulls.json"));
    const sick = gradeNode("n", { ...node(swap), "dcgmi-diag.json": failed }, H100);
    assert.deepEqual(components(sick), ["dcgm"]);
    assert.match(sick.findings[0].message + (sick.findings[0].evidence ?? ""), /Custom\/software/);
    // constructed: an "Error:" line ahead of a document without results is the diagnostic's answer (not checked), not
    // an unreadable file; text that is no document at all still is
    assert.deepEqual(parseDcgmJson('Error: Unable to run diagnostic on unsupported GPU 0.\n{"DCGM GPU Diagnostic":{"version":"4.2.3"}}\n'),
        { tests: [], error: "Error: Unable to run diagnostic on unsupported GPU 0." });
    assert.throws(() => parseDcgmJson("WARNING: something\nno document here\n"), HealthParseError);
    // the same document with one result DCGM did not run ("Not Run", dcgmi/Diag.cpp): a skip, not a pass and not a
    // failure; every result "Not Run": nothing was tested, so dcgm is not checked; a word dcgmi never prints is refused
    const one = cap("dcgmi-diag.3.1.0-warning-nulls.json").replace(/("gpu_ids" : 3,\n\t+"status" : )"PASS"/, '$1"Not Run"');
    assert.equal(parseDcgmJson(one).tests.find((t) => t.name === "Custom/software")?.status, "pass");
    const none = cap("dcgmi-diag.3.1.0-warning-nulls.json").replace(/"status" : "PASS"/g, '"status" : "Not Run"');
    assert.ok(parseDcgmJson(none).tests.every((t) => t.status === "skip"));
    const idle = gradeNode("n", { ...node(swap), "dcgmi-diag.json": none }, { ...H100, require: [...(H100.require ?? []), "dcgm"] });
    assert.match(idle.notChecked.find((c) => c.component === "dcgm")?.reason ?? idle.notes.join("\n"), /every test was skipped or not run/);
    assert.notEqual(idle.verdict, "healthy");
    const odd = cap("dcgmi-diag.3.1.0-warning-nulls.json").replace(/"status" : "PASS"/, '"status" : "Unknown"');
    assert.throws(() => parseDcgmJson(odd), /has the result "Unknown", not one of dcgmi's Pass, Fail, Warn, Skip, Not Run/);
    assert.deepEqual(parseDcgmText("| Diagnostic | Result |\n| Denylist | Pass |\n| PCIe | Not Run |\n").tests.map((t) => [t.name, t.status]), [["Denylist", "pass"], ["PCIe", "skip"]]);
});
