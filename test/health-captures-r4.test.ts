/**
 * Round 4 of the capture hunt (test/fixtures/health/README.md, "Round 4"): NVLink status of single GPUs as AzNHC keeps
 * them, a whole HGX H100 `lspci -vvv` (PLX/Broadcom switch ports trained below their capability), ibstat on Azure VMs
 * where it stops at the Accelerated Networking VF, fi_info of libfabric 2.x (efa-direct), `ls -l(a)` listings of
 * /sys/class/infiniband, and kernel logs of a healthy H100 boot and of a GPU the driver cannot initialise. Each is graded
 * the way `rdmakit health` reads a node: a node folder holding the capture under the grader's file name, through
 * gradeHealthDir, with only the components that capture answers required.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { gunzipSync } from "node:zlib";
import { CAPTURES, cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDmesg } from "../components/health/dmesg";
import { parseFiInfo } from "../components/health/ibstat";
import { parseRdmaDevices } from "../components/health/rdma-devices";

const A100 = stack("examples/azure-h100.yaml", (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
const H100 = stack("examples/azure-h100.yaml");


test("a healthy H100 node's boot log (driver 550.90.07, four NVSwitches opened, NVRM and nvidia-peermem noise) grades healthy", () => {
    const text = cap("dmesg.h100-550-boot-nvrm-noise-gpud-iso.txt");
    // the noise is there: the driver's banner, the switches opened over and over, the modules' taint lines
    assert.match(text, /NVRM: loading NVIDIA UNIX x86_64 Kernel Module {2}550\.90\.07/);
    assert.ok((text.match(/nvidia-nvswitch\d: open \(major=510\)/g) ?? []).length >= 20);
    const r = parseDmesg(text);
    assert.deepEqual([r.xids.length, r.sxids.length, r.lost.length, r.refused.length, r.mlx5Errors.length], [0, 0, 0, 0, 0]);
    const h = grade({ "dmesg.txt": text }, only(stack("examples/roce-h100.yaml"), ["xid", "nvswitch"]));
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
});

test("a GPU the driver cannot initialise (RmInitAdapter failed, journalctl form; NVIDIA/gpu-operator#1146) fails gpu, transient, on its newest line", () => {
    const h = grade({ "dmesg.txt": cap("dmesg.rminitadapter-syslog-gpuop1146.txt") }, only(A100, ["xid"]));
    assert.deepEqual(summary(h), {
        verdict: "failing",
        findings: [["gpu", "GPU 0000:0a:00.0 lost by the driver (fallen off the bus or not initialised; what Xid 79 reports), 0 min before the log's last line (window 120 min)"]],
        notChecked: [],
    });
    assert.equal(h.findings[0].persistence, "transient");
    assert.match(h.findings[0].evidence ?? "", /\[ 1188\.283575\] NVRM: GPU 0000:0a:00\.0: RmInitAdapter failed! \(0x24:0x72:1568\)$/);
});

test("the whole lspci -vvv of an HGX H100 (927 KB; 16 switch and root ports trained below their capability) grades healthy; a rail's link downgraded in it fails", () => {
    const whole = gunzipSync(fs.readFileSync(path.join(CAPTURES, "lspci-vv.h100-gpud-whole.txt.gz"))).toString("utf8");
    assert.equal(whole.length, 927146);
    // the downgraded links belong to bridges and a memory controller, none to a GPU or a ConnectX
    assert.equal((whole.match(/\(downgraded\)/g) ?? []).length, 16);
    const files = {
        "lspci-vv.txt": whole,
        "rdma-devices.txt": cap("rdma-devices.h100-gpud-constructed.txt"),
        "ibstat.txt": cap("ibstat.h100-ib-400.txt"),
    };
    const h = grade(files, only(H100, ["pcie"]));
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    // the same file with rail mlx5_0's ConnectX-7 (1a:00.0) trained at Gen4 x8: found among the 517 devices
    const sick = whole.replace(/(\n1a:00\.0 Ethernet controller: Mellanox[\s\S]*?LnkSta:\t)Speed 32GT\/s \(ok\), Width x16 \(ok\)/, "$1Speed 16GT/s (downgraded), Width x8 (downgraded)");
    assert.notEqual(sick, whole);
    assert.deepEqual(summary(grade({ ...files, "lspci-vv.txt": sick }, only(H100, ["pcie"]))).findings, [
        ["pcie", "RDMA NIC 1a:00.0 (ConnectX-7) link trained at 16GT/s x8, capable of 32GT/s x16 (rail mlx5_0)"],
    ]);
});

test("a card trained at what the port above it can do is set by its slot (a note); below that port's capability it fails", () => {
    // constructed from the whole HGX H100 capture: rail mlx5_0's ConnectX-7 (1a:00.0) sits below switch port 17:02.0
    const whole = gunzipSync(fs.readFileSync(path.join(CAPTURES, "lspci-vv.h100-gpud-whole.txt.gz"))).toString("utf8");
    const files = { "rdma-devices.txt": cap("rdma-devices.h100-gpud-constructed.txt"), "ibstat.txt": cap("ibstat.h100-ib-400.txt") };
    const card = (text: string, sta: string) => text.replace(/(\n1a:00\.0 Ethernet controller: Mellanox[\s\S]*?LnkSta:\t)Speed 32GT\/s \(ok\), Width x16 \(ok\)/, `$1${sta}`);
    const port = (text: string, lnkCap: string) => text.replace(/(\n17:02\.0 PCI bridge:[\s\S]*?LnkCap:\tPort #2, )Speed 32GT\/s, Width x16/, `$1${lnkCap}`);
    const gen4 = card(whole, "Speed 16GT/s (downgraded), Width x16 (ok)");
    assert.notEqual(gen4, whole);
    // a Gen4 port above a Gen5 card: trained at the port's best, by design
    const slot = grade({ ...files, "lspci-vv.txt": port(gen4, "Speed 16GT/s, Width x16") }, only(H100, ["pcie"]));
    assert.deepEqual(summary(slot), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(slot.notes.includes("RDMA NIC 1a:00.0 (ConnectX-7): trained at 16GT/s x16, capable of 32GT/s x16; the port above it (17:02.0) can do 16GT/s x16, so the slot sets the link (not graded)"), slot.notes.join("\n"));
    // the same card below a Gen5 port: the link lost speed on its own
    assert.deepEqual(summary(grade({ ...files, "lspci-vv.txt": gen4 }, only(H100, ["pcie"]))).findings, [
        ["pcie", "RDMA NIC 1a:00.0 (ConnectX-7) link trained at 16GT/s x16, capable of 32GT/s x16 (rail mlx5_0)"],
    ]);
    // an x8 port: x8 is the slot's; Gen4 below that Gen5 x8 port is still the link's own fault
    const x8 = card(whole, "Speed 32GT/s (ok), Width x8 (downgraded)");
    assert.deepEqual(summary(grade({ ...files, "lspci-vv.txt": port(x8, "Speed 32GT/s, Width x8") }, only(H100, ["pcie"]))).findings, []);
    const both = card(whole, "Speed 16GT/s (downgraded), Width x8 (downgraded)");
    assert.deepEqual(summary(grade({ ...files, "lspci-vv.txt": port(both, "Speed 32GT/s, Width x8") }, only(H100, ["pcie"]))).findings, [
        ["pcie", "RDMA NIC 1a:00.0 (ConnectX-7) link trained at 16GT/s x8, capable of 32GT/s x16 (rail mlx5_0)"],
    ]);
});

test("nvidia-smi nvlink --status of one A100 as AzNHC keeps it: 12 links at 25 GB/s pass; \"all links are inactive\" fails nvlink", () => {
    const one = only({ ...A100, gpus: 1 }, ["nvlink"]);
    const good = grade({ "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.a100-gpu7-aznhc.txt") }, one);
    assert.deepEqual(summary(good), { verdict: "healthy", findings: [], notChecked: [] });
    const bad = grade({ "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.a100-gpu6-all-inactive-aznhc.txt") }, one);
    assert.deepEqual(summary(bad), { verdict: "failing", findings: [["nvlink", "GPU 6: every NVLink link is down"]], notChecked: [] });
    assert.equal(bad.findings[0].evidence, "NVML: Unable to retrieve NVLink information as all links are inactive");
});

test("ibstat on an Azure A100 VM that stops at mlx5_8 after eight Active HDR ports (leptonai/gpud) is healthy; stopped at mlx5_an0 before any (Azure/azhpc-images#213) is not checked, never failing", () => {
    const nic = only(A100, ["nic"]);
    const after = grade({ "ibstat.txt": cap("ibstat.a100-ibpanic.txt") }, nic);
    assert.deepEqual(summary(after), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(after.notes.some((n) => /^ibstat stopped at mlx5_8, which is no RDMA rail of the stack/.test(n)), after.notes.join("\n"));

    const an0 = cap("ibstat.azure-a100-an0-ibpanic-azhpcimages213.txt");
    const before = grade({ "ibstat.txt": an0 }, nic);
    assert.deepEqual(summary(before), { verdict: "incomplete", findings: [], notChecked: ["nic"] });
    assert.match(before.notChecked[0].reason, /^0 InfiniBand RDMA device\(s\), expected 8, and ibstat stopped at mlx5_an0 before listing the rest/);
    // constructed in memory: the same panic naming one of the stack's own HCAs is a rail that could not be read
    const rail = grade({ "ibstat.txt": an0.replace("mlx5_an0", "mlx5_ib3") }, nic);
    assert.equal(rail.verdict, "failing");
    assert.deepEqual(rail.findings.map((f) => [f.message, f.evidence]), [
        ["ibstat could not read a device", "ibpanic: [769778] main: stat of IB device 'mlx5_ib3' failed: No such file or directory"],
        ["0 InfiniBand RDMA device(s), expected 8", undefined],
    ]);
});

test("ibstat mlx5_ib0 with its port Initializing (Azure/azhpc-diagnostics#59, pasted without indentation) fails nic on that port", () => {
    const one = only({ ...A100, nics: { ...A100.nics, names: ["mlx5_ib0"], count: 1 } }, ["nic"]);
    const h = grade({ "ibstat.txt": cap("ibstat.azure-a100-ib0-initializing-azhpcdiag59.txt") }, one);
    assert.deepEqual(summary(h), { verdict: "failing", findings: [["nic", "mlx5_ib0 port 1 is Initializing, expected Active"]], notChecked: [] });
    assert.equal(h.findings[0].evidence, "mlx5_ib0 port 1: State: Initializing");
});

test("fi_info -p efa of libfabric 2.x (efa-direct and efa fabrics for one device; gnosia93/training-on-eks) counts one EFA device", () => {
    const text = cap("fi_info.efa-direct-201-training-on-eks.txt");
    assert.deepEqual(parseFiInfo(text).devices, ["rdmap47s0"]);
    const g6e = only(stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "g6e.8xlarge"; c.aws.allowNoGpuDirect = true; }), ["nic"]);
    assert.equal(g6e.nics.count, 1);
    assert.deepEqual(summary(grade({ "fi_info.txt": text }, g6e)), { verdict: "healthy", findings: [], notChecked: [] });
    // on a p5.48xlarge, one device of 32 fails
    assert.deepEqual(summary(grade({ "fi_info.txt": text }, only(stack("examples/aws-p5.yaml"), ["nic"]))).findings, [["nic", "1 EFA device(s), expected 32 (p5.48xlarge)"]]);
});

test("ls -la /sys/class/infiniband/ (SELinux dots, the folder's . and ..; an EFA node) and ls -l of rxe0 by its path with a trailing / are read", () => {
    const la = cap("rdma-devices.efa-ls-la-training-on-eks.txt");
    assert.deepEqual([...parseRdmaDevices(la).devices], [["rdmap0s29", "0000:00:1d.0"]]);
    const rxe = cap("rdma-devices.rxe0-linux-a9d2e9ae.txt");
    assert.deepEqual([...parseRdmaDevices(rxe).devices], [["rxe0", undefined]]);
    // graded beside the gpud node's lspci on the RoCE stack: read, not refused (the rails are not on these functions)
    const roce = only(stack("examples/roce-h100.yaml"), ["pcie"]);
    for (const text of [la, rxe]) {
        const h = grade({ "rdma-devices.txt": text, "lspci-vv.txt": cap("lspci-vv.h100-gpud.txt") }, roce);
        assert.deepEqual(h.unreadable, []);
        assert.equal(h.verdict, "healthy");
    }
    // a directory line other than "." and ".." is still no ls -l line of the class
    assert.throws(() => parseRdmaDevices(la.replace(/ \.\.$/m, " mlx5_0")), /is not an ls -l line of \/sys\/class\/infiniband/);
    // a target that does not end in the device's own name is still refused
    assert.throws(() => parseRdmaDevices(rxe.replace("infiniband/rxe0/", "infiniband/rxe1/")), /does not link rxe0 to a \.\.\.\/infiniband\/rxe0 folder/);
});

test("rdma-core v54+ warns and goes on (\"ibwarn: ... stat of IB device 'mlx5_an0' failed\"): a non-rail is a note and the HCAs after it are graded; a rail warned about fails", () => {
    // constructed in memory: ibstat.c since rdma-core commit 703b52c6e prints IBWARN("stat of IB device '%s' failed")
    // where older releases panic, then lists the other devices; here the warning of the azhpc-images#213 capture in that
    // form, followed by the eight HCAs of the gpud Azure A100 capture (its own panic line left out)
    const warn = "ibwarn: [769778] main: stat of IB device 'mlx5_an0' failed\n";
    const hcas = cap("ibstat.a100-ibpanic.txt").replace(/^ibpanic:.*\n/m, "");
    const nic = only(A100, ["nic"]);
    const h = grade({ "ibstat.txt": warn + hcas }, nic);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => /^ibstat could not read mlx5_an0, which is no RDMA rail of the stack/.test(n)), h.notes.join("\n"));
    const rail = grade({ "ibstat.txt": warn.replace("mlx5_an0", "mlx5_ib0") + hcas }, nic);
    assert.deepEqual(rail.findings.map((f) => [f.message, f.evidence]), [["ibstat could not read a device", "ibwarn: [769778] main: stat of IB device 'mlx5_ib0' failed"]]);
    // any other ibwarn line is still debug output
    assert.equal(grade({ "ibstat.txt": "ibwarn: [1] main: umad_init: something\n" + hcas }, nic).verdict, "healthy");
});

test("ibstat of two ConnectX-6 Dx RoCE ports Down/Disabled (8-space indents; deepseek-ai/3FS#39) fails nic on each named rail", () => {
    const roce = stack("examples/roce-h100.yaml");
    const two = only({ ...roce, nics: { ...roce.nics, names: ["mlx5_0", "mlx5_1"], count: 2 } }, ["nic"]);
    const h = grade({ "ibstat.txt": cap("ibstat.cx6dx-roce-down-3fs39.txt") }, two);
    assert.deepEqual(summary(h), {
        verdict: "failing",
        findings: [["nic", "mlx5_0 port 1 is Down, expected Active"], ["nic", "mlx5_1 port 1 is Down, expected Active"]],
        notChecked: [],
    });
    assert.deepEqual(h.findings.map((f) => f.evidence), ["mlx5_0 port 1: State: Down", "mlx5_1 port 1: State: Down"]);
});

test("the role's capture (ibstat -l, then ibstat <ca>) on a pre-v54 Azure VM: mlx5_an0's panic ends only its own ibstat, so a rail missing after it fails", () => {
    // constructed in memory, as the role's loop writes it where rdma-core panics (before v54.0): ibstat -l lists
    // mlx5_an0 before mlx5_ib0..7 (libibumad umad_sort_ca_device_list, strcmp order since v30.0, commit b51b4cef6),
    // `ibstat mlx5_an0` panics (azhpc-images#213's line) and each `ibstat <ca>` after it prints that device's block
    // (infiniband-diags/ibstat.c main: a device argument stats that device only); the blocks are the gpud Azure A100
    // HCAs renamed mlx5_0..7 -> mlx5_ib0..7, the names of that VM with Accelerated Networking (azhpc-images#213)
    const gpud = cap("ibstat.a100-ibpanic.txt").replace(/^ibpanic:.*\n/m, "");
    const blocks = gpud.replace(/^CA 'mlx5_(\d)'$/gm, "CA 'mlx5_ib$1'").split(/(?=^CA ')/m);
    assert.equal(blocks.length, 8);
    const an0 = cap("ibstat.azure-a100-an0-ibpanic-azhpcimages213.txt");
    const nic = only(A100, ["nic"]);
    const all = grade({ "ibstat.txt": an0 + blocks.join("") }, nic);
    assert.deepEqual(summary(all), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(all.notes.some((n) => /^ibstat could not read mlx5_an0, which is no RDMA rail of the stack/.test(n)), all.notes.join("\n"));
    const seven = grade({ "ibstat.txt": an0 + blocks.slice(0, 7).join("") }, nic);
    assert.deepEqual(summary(seven), { verdict: "failing", findings: [["nic", "RDMA device(s) mlx5_ib7 missing: 7 of the 8 expected are listed"]], notChecked: [] });
    // rails named mlx5_0..7 sort before mlx5_an0: a plain ibstat that panicked there had listed them all, so one of
    // them absent is missing in either reading (the gpud capture less its last HCA, the panic renamed mlx5_an0)
    const early = only({ ...A100, nics: { ...A100.nics, names: ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"] } }, ["nic"]);
    const plain = gpud.split(/(?=^CA ')/m).slice(0, 7).join("") + an0;
    assert.deepEqual(summary(grade({ "ibstat.txt": plain }, early)).findings, [["nic", "RDMA device(s) mlx5_7 missing: 7 of the 8 expected are listed"]]);
    // the azhpc-images#213 capture alone (nothing listed after the panic) stays not checked
    assert.equal(grade({ "ibstat.txt": an0 }, nic).verdict, "incomplete");
});
