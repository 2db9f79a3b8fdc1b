/**
 * More captures from other people's machines (test/fixtures/health/README.md, "Added for the capture hunt"): healthy
 * nodes of kinds the first set lacked (H200, L40S, GH200, an A100 InfiniBand node), sick ones (a GPU fallen off the bus
 * with and without its Xid, an InfiniBand port down), outputs of the wrong command (plain lspci), and each cut short or
 * garbled: a healthy node stays unnamed, a sick one is named with its component, and what cannot be read is refused.
 */
import { test } from "node:test";
import { cap, stack } from "./fixtures/health/stacks";
import assert from "node:assert/strict";
import { gradeNode } from "../components/health/grade";
import { parseDmesg } from "../components/health/dmesg";
import { parseIbstat } from "../components/health/ibstat";
import { parseLspci } from "../components/health/lspci";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";
import type { Component, HealthExpectation, NodeHealth } from "../components/health/types";

const H100 = stack("examples/azure-h100.yaml");
const A100 = stack("examples/azure-h100.yaml", (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
const summary = (h: NodeHealth) => ({ verdict: h.verdict, findings: h.findings.map((f) => [f.component, f.message]), notChecked: h.notChecked.map((n) => n.component) });
/** One tool's file graded alone: only the components it answers are required, so nothing else is "not checked". */
const only = (exp: HealthExpectation, require: Component[]): HealthExpectation => ({ ...exp, require });

test("nvidia-smi -q of a healthy H200 (550.90.12, Fabric Completed/Success) grades healthy on a one-GPU H200 expectation", () => {
    const exp = only({ ...stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p5e.48xlarge"; }), gpus: 1 }, ["gpu", "ecc", "clocks"]);
    const h = gradeNode("n", { "nvidia-smi-q.txt": cap("nvidia-smi-q.h200-550.90.12.txt") }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    const gpu = parseNvidiaSmiQ(cap("nvidia-smi-q.h200-550.90.12.txt")).gpus[0];
    assert.deepEqual([gpu.productName, gpu.memoryMiB, gpu.fabric?.state, gpu.fabric?.status, gpu.complete], ["NVIDIA H200", 143771, "Completed", "Success", true]);
    // the same capture on the eight-GPU p5e stack fails on the count, naming the line
    assert.deepEqual(gradeNode("n", { "nvidia-smi-q.txt": cap("nvidia-smi-q.h200-550.90.12.txt") }, { ...exp, gpus: 8 }).findings.map((f) => f.evidence), ["Attached GPUs : 1"]);
});

test("nvidia-smi -q cut inside a GPU section is not checked, never healthy; an -x document is refused", () => {
    const exp = only({ ...stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p5e.48xlarge"; }), gpus: 1 }, ["gpu", "ecc", "clocks"]);
    const whole = cap("nvidia-smi-q.h200-550.90.12.txt");
    for (const at of ["    ECC Errors\n", "    Remapped Rows\n", "    Fabric\n"]) {
        const h = gradeNode("n", { "nvidia-smi-q.txt": whole.slice(0, whole.indexOf(at)) }, exp);
        assert.equal(h.verdict, "incomplete", at);
        assert.match(h.notChecked[0].reason, /nvidia-smi-q\.txt: the section of GPU 00000000:03:00\.0 ends before its "Processes" field/, at);
    }
    assert.equal(gradeNode("n", { "nvidia-smi-q.txt": "<?xml version=\"1.0\" ?>\n<nvidia_smi_log>\n" }, exp).verdict, "unreadable");
});

test("nvidia-smi -q of an L40S (550.127.05) grades healthy on g6e.8xlarge; its Gen1 link in P8 is a note", () => {
    const exp = only(stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "g6e.8xlarge"; c.aws.allowNoGpuDirect = true; }), ["gpu", "ecc", "clocks"]);
    assert.equal(exp.gpuModel, "L40S");
    const h = gradeNode("n", { "nvidia-smi-q.txt": cap("nvidia-smi-q.l40s-550.127.05.txt") }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => /PCIe Gen1 of Gen4 in P8/.test(n)), h.notes.join("\n"));
});

test("nvidia-smi -q of a GH200 with one row remapped after an uncorrectable error: repaired, a note, not a failing node", () => {
    const exp = only({ ...H100, gpus: 1, gpuModel: "GH200", gpuMemoryGiB: undefined, gpuPcie: undefined }, ["gpu", "ecc", "clocks"]);
    const h = gradeNode("n", { "nvidia-smi-q.txt": cap("nvidia-smi-q.gh200-550.127.05-remapped.txt") }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => /Uncorrectable Error\s+: 1 row\(s\) remapped/.test(n)), h.notes.join("\n"));
    assert.ok(h.notes.some((n) => /Aggregate DRAM Uncorrectable\s+: 1 \(lifetime DRAM count/.test(n)), h.notes.join("\n"));
    // the pending form of the same field fails, with the line
    const pending = cap("nvidia-smi-q.gh200-550.127.05-remapped.txt").replace(/(Remapped Rows\n(?:.*\n){2}\s+Pending\s+: )No/, "$1Yes");
    assert.deepEqual(gradeNode("n", { "nvidia-smi-q.txt": pending }, exp).findings.map((f) => f.component), ["ecc"]);
});

test("nvidia-smi -q of driver 470 (\"Clocks Throttle Reasons : N/A\" as a value, no Remapped Rows): read, the model named", () => {
    const smi = parseNvidiaSmiQ(cap("nvidia-smi-q.gtx680-470.256.02.txt"));
    assert.equal(smi.driverVersion, "470.256.02");
    assert.deepEqual([smi.gpus[0].slowdowns, smi.gpus[0].uncorrectable, smi.gpus[0].complete], [[], [], true]);
    const h = gradeNode("n", { "nvidia-smi-q.txt": cap("nvidia-smi-q.gtx680-470.256.02.txt") }, only({ ...H100, gpus: 1 }, ["gpu", "ecc", "clocks"]));
    assert.deepEqual(h.findings.map((f) => [f.component, f.evidence]), [["gpu", "Product Name : NVIDIA GeForce GTX 680"]]);
});

test("plain lspci (a GB200 tray; lspci -nn on an A10 VM) is refused by name: read as -vv it would show no link and pass", () => {
    for (const name of ["lspci.gb200-gpud-plain.txt", "lspci.a10-gpud-plain-nn.txt"]) {
        assert.throws(() => parseLspci(cap(name)), /device line\(s\) and no detail under any: plain lspci, not lspci -vv/, name);
        const h = gradeNode("n", { "lspci-vv.txt": cap(name) }, only(H100, ["pcie"]));
        assert.equal(h.verdict, "unreadable", name);
        assert.match(h.unreadable[0].reason, /plain lspci, not lspci -vv/);
    }
    // a GPU block that lost its link lines (a hypervisor hiding the Express capability, or an edit) is not checked
    const noLink = cap("lspci-vv.h100-gpud.txt").replace(/(19:00\.0 3D controller[\s\S]*?)\tLnkCap:[^\n]*\n([\s\S]*?)\tLnkSta:[^\n]*\n/, "$1$2");
    assert.notEqual(noLink, cap("lspci-vv.h100-gpud.txt"));
    const h = gradeNode("n", { "lspci-vv.txt": noLink }, only({ ...H100, fabric: "aws-efa" }, ["pcie"]));
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["pcie"] });
    assert.match(h.notChecked[0].reason, /^GPU 19:00\.0 shows no LnkCap width/);
});

test("a GPU fallen off the bus: the Xid 79 capture fails on xid; the driver's probe-time message with no Xid fails on gpu (dmesg and syslog forms)", () => {
    const exp = only(H100, ["xid", "gpu"]);
    const xid = gradeNode("n", { "dmesg.txt": cap("dmesg.h100-525-xid79.txt") }, exp);
    assert.deepEqual(summary(xid).findings, [["xid", "Xid 79 (GPU has fallen off the bus) on GPU 0000:5d:00, 0 min before the log's last line (window 120 min)"]]);
    // the "NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus." line after the Xid is the same event, not a second finding
    assert.equal(parseDmesg(cap("dmesg.h100-525-xid79.txt")).lost.length, 1);
    for (const name of ["dmesg.h100-525-probe-fallen-off.txt", "dmesg.h100-525-syslog-probe-fallen-off.txt"]) {
        const r = parseDmesg(cap(name));
        assert.deepEqual(r.xids, [], name);
        assert.deepEqual(r.lost.map((l) => l.pci), ["0000:5d:00.0", "0000:5d:00.0"], name);
        const h = gradeNode("n", { "dmesg.txt": cap(name) }, exp);
        assert.equal(h.verdict, "failing", name);
        assert.deepEqual(h.findings.map((f) => [f.component, f.persistence]), [["gpu", "transient"]], name);
        assert.match(h.findings[0].message, /^GPU 0000:5d:00\.0 lost by the driver/);
        assert.match(h.findings[0].evidence ?? "", /nvidia: probe of 0000:5d:00\.0 failed with error -1$/);
    }
    // the three-line form alone (dmesg indents the second and third without a prefix): the first line names the GPU and
    // gives the event its time (round 7)
    const three = cap("dmesg.h100-525-probe-fallen-off.txt").split("\n").slice(0, 3).join("\n");
    assert.deepEqual(parseDmesg(three).lost.map((l) => [l.pci, l.time?.s]), [["0000:5d:00.0", 14387.209961]]);
    assert.deepEqual(gradeNode("n", { "dmesg.txt": three }, exp).findings.map((f) => [f.component, f.persistence]), [["gpu", "transient"]]);
    // the kernel's later form of the driver core's refusal (drivers/base/dd.c): "<dev>: probe with driver <drv> failed"
    assert.deepEqual(parseDmesg("[  12.000001] nvidia 0000:05:00.0: probe with driver nvidia failed with error -1\n").lost.map((l) => l.pci), ["0000:05:00.0"]);
    // another driver's probe failure, or the phrase in a message about no GPU, is no lost GPU
    assert.deepEqual(parseDmesg("[  12.000001] ahci: probe of 0000:00:17.0 failed with error -12\n[  12.5] NVRM: fallen off the bus and is not responding to commands.\n").lost, []);
});

test("kernel logs stripped of their prefixes (garbled) are refused, not read as clean", () => {
    const garbled = cap("dmesg.h100-525-probe-fallen-off.txt").replace(/^\[[ \d.]+\] /gm, "");
    const h = gradeNode("n", { "dmesg.txt": garbled }, only(H100, ["xid"]));
    assert.equal(h.verdict, "unreadable");
    assert.match(h.unreadable[0].reason, /has no line in a kernel-log form/);
});

test("ibstat: an A100 node's eight InfiniBand ports at 200 pass on its stack; an InfiniBand port Down/Polling fails naming the port", () => {
    const a100 = gradeNode("n", { "ibstat.txt": cap("ibstat.a100-ib-200.txt") }, only(A100, ["nic"]));
    assert.deepEqual(summary(a100), { verdict: "healthy", findings: [], notChecked: [] });
    assert.equal(parseIbstat(cap("ibstat.a100-ib-200.txt")).cut, undefined);
    const down = gradeNode("n", { "ibstat.txt": cap("ibstat.mlx4-ib-port-down-linux-rdma.txt") }, only(H100, ["nic"]));
    assert.deepEqual(summary(down).findings, [
        ["nic", "1 InfiniBand RDMA device(s), expected 8"],
        ["nic", "mlx4_0 port 1 is Down, expected Active"],
    ]);
    assert.equal(down.findings[1].evidence, "mlx4_0 port 1: State: Down");
});

test("ibstat cut inside a device is not checked (that device and the count), never read as a missing or a down port", () => {
    const whole = cap("ibstat.a100-ib-200.txt");
    const lastCa = whole.lastIndexOf("CA '");
    const cuts: Record<string, string> = {
        "no port section": whole.slice(0, whole.indexOf("Port 1:", lastCa)),
        "no State line": whole.slice(0, whole.indexOf("State:", lastCa)),
        "no Link layer line": whole.slice(0, whole.indexOf("Link layer:", lastCa)),
    };
    for (const [what, text] of Object.entries(cuts)) {
        const h = gradeNode("n", { "ibstat.txt": text }, only(A100, ["nic"]));
        assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["nic"] }, what);
        assert.match(h.notChecked[0].reason, /^ibstat\.txt stops inside a device \(mlx5_8 /, what);
    }
    // text that is no ibstat at all is unreadable
    assert.equal(gradeNode("n", { "ibstat.txt": cap("lspci.a10-gpud-plain-nn.txt") }, only(A100, ["nic"])).verdict, "unreadable");
});

test("Xid 45 lines that name their cause (\"caused by previous Xid 149/145\", NVLink5) fail the four GPUs on xid; the 45s stay notes", () => {
    const h = gradeNode("n", { "dmesg.txt": cap("dmesg.xid45-caused-by-nvlink5-ogkm1150.txt") }, only(H100, ["xid"]));
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => [f.component, f.persistence, /^Xid (\d+) .* on GPU (\S+) \(named by an Xid 45 line/.exec(f.message)?.slice(1, 3).join(" ")]).sort(), [
        ["xid", "transient", "145 0000:97:00"], ["xid", "transient", "145 0000:ba:00"], ["xid", "transient", "145 0000:ed:00"], ["xid", "transient", "149 0000:dc:00"],
    ]);
    assert.equal(h.notes.filter((n) => /^Xid 45 /.test(n)).length, 4);
    // where the log still holds the named Xid's own line, that line decides (a Nonfatal NVLink5 Xid is a note)
    const own = "[  10.000000] NVRM: Xid (PCI:0000:ed:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)\n" +
        "[  10.500000] NVRM: Xid (PCI:0000:ed:00): 45, pid=1818992, name=python3, Ch 0000000c caused by previous Xid 145\n";
    assert.deepEqual(gradeNode("n", { "dmesg.txt": own }, only(H100, ["xid"])).findings, []);
});
