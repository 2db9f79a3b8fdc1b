/**
 * Round 8 of the capture hunt (test/fixtures/health/README.md, "Round 8"): the NIC, PCIe and NVLink readers against
 * other people's captures. ibstat of a ConnectX-3 and of a host without any RDMA device, ibv_devinfo (plain and -v),
 * the other tools people paste for ibstat (rdma link, ibv_devinfo -l), gpud's pull-request pastes of Down ports,
 * fi_info of libfabric 1.21 on an hpc6a, an lspci -vv of a ConnectX-7 trained at Gen4 x8 with a virtual function
 * beside it, and nvidia-smi nvlink of PCIe A100 and H100 pairs (bridged, six links inactive by design) and its -R form.
 * Each is graded the way `rdmakit health` reads a node: a node folder holding the capture under the grader's file
 * name, through gradeHealthDir, with only the components it answers required.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseIbstat, parseFiInfo } from "../components/health/ibstat";
import { parseLspci } from "../components/health/lspci";
import type { HealthExpectation } from "../components/health/types";

const IB = stack("examples/azure-h100.yaml");
const A100 = stack("examples/azure-h100.yaml", (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
const ROCE = stack("examples/roce-h100.yaml");
// the same bare-metal stack with two GPUs and two rails a host: no NVSwitch (components/plan/software.ts roceHgx)
const ROCE2 = stack("examples/roce-h100.yaml", (c) => {
    for (const h of c.roce.hosts) {
        h.gpu.count = 2;
        h.railNics = h.railNics.slice(0, 2);
        h.railNetdevs = h.railNetdevs.slice(0, 2);
        h.railPorts = h.railPorts.slice(0, 2);
    }
});
const G6E = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "g6e.8xlarge"; c.aws.allowNoGpuDirect = true; });
/** an InfiniBand stack whose rails are the named devices */
const ibRails = (names: string[], rateGbps?: number): HealthExpectation => ({ ...IB, nics: { ...IB.nics, names, count: names.length, rateGbps } });
const nic = (file: string, exp: HealthExpectation) => grade({ "ibstat.txt": cap(file) }, only(exp, ["nic"]));
const nvlink = (file: string, exp: HealthExpectation) => grade({ "nvidia-smi-nvlink.txt": cap(file) }, only(exp, ["nvlink"]));

test("ibstat of a ConnectX-3 (mlx4_0, MT4099) Active at 40 in an Apptainer container: read, healthy as the one rail", () => {
    const r = parseIbstat(cap("ibstat.cx3-mlx4-active-apptainer.txt"));
    assert.deepEqual(r.cas.map((c) => [c.name, c.type, c.ports.map((p) => [p.state, p.physicalState, p.rate, p.linkLayer])]), [
        ["mlx4_0", "MT4099", [["Active", "LinkUp", 40, "InfiniBand"]]],
    ]);
    assert.deepEqual(summary(nic("ibstat.cx3-mlx4-active-apptainer.txt", ibRails(["mlx4_0"], 40))), { verdict: "healthy", findings: [], notChecked: [] });
    // the same port expected at HDR fails on its rate
    assert.deepEqual(summary(nic("ibstat.cx3-mlx4-active-apptainer.txt", ibRails(["mlx4_0"], 200))).findings, [["nic", "mlx4_0 port 1 at 40 Gb/s, expected 200 Gb/s"]]);
});

test("ibstat on a host with no RDMA device panics on libibumad's default name mthca0: failing with no device, not 'not checked' (before: not checked)", () => {
    const h = nic("ibstat.no-device-mthca0-ibpanic-apptainer.txt", IB);
    assert.deepEqual(summary(h), { verdict: "failing", findings: [["nic", "no RDMA device: ibstat found none, expected 8"]], notChecked: [] });
    assert.equal(h.findings[0].evidence, "ibpanic: [2137592] main: stat of IB device 'mthca0' failed: No such file or directory");
    // the same panic after listed devices is a device ibstat could not read, graded as before (a note: no rail)
    const after = grade({ "ibstat.txt": `${cap("ibstat.cx3-mlx4-active-apptainer.txt")}${cap("ibstat.no-device-mthca0-ibpanic-apptainer.txt")}` }, only(ibRails(["mlx4_0"], 40), ["nic"]));
    assert.equal(after.verdict, "healthy");
    assert.ok(after.notes.some((n) => n.startsWith("ibstat stopped at mthca0, which is no RDMA rail")), after.notes.join("\n"));
});

test("ibv_devinfo of two dual-port ConnectX-3 (mlx4_1, mlx4_0) is read as the ports' state: each port 2 PORT_DOWN beside an Active port 1 is an uncabled port, a note (before: unreadable)", () => {
    const r = parseIbstat(cap("ibv_devinfo.mlx4-two-hcas-port2-down-heioy.txt"));
    assert.equal(r.tool, "ibv_devinfo");
    assert.deepEqual(r.cas.map((c) => [c.name, c.ports.map((p) => [p.port, p.state, p.linkLayer, p.rate])]), [
        ["mlx4_1", [[1, "Active", "InfiniBand", undefined], [2, "Down", "InfiniBand", undefined]]],
        ["mlx4_0", [[1, "Active", "InfiniBand", undefined], [2, "Down", "InfiniBand", undefined]]],
    ]);
    const rails = ibRails(["mlx4_0", "mlx4_1"]);
    // each card is one rail with one port cabled (test/health-review15.test.ts): healthy, the Down ports named in a note
    const h2 = nic("ibv_devinfo.mlx4-two-hcas-port2-down-heioy.txt", rails);
    assert.deepEqual(summary(h2), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h2.notes.some((n) => n.startsWith("mlx4_1 port 2, mlx4_0 port 2 Down beside an Active port of the same device")), h2.notes.join("\n"));
    // without -v ibv_devinfo prints no rate: where the stack expects one, the active ports' rate is not checked, never passed
    const h = grade({ "ibstat.txt": cap("ibv_devinfo.mlx4-two-hcas-port2-down-heioy.txt") }, only({ ...rails, nics: { ...rails.nics, rateGbps: 40 } }, ["nic"]));
    assert.deepEqual(h.notChecked.map((n) => n.reason), ["mlx4_1 port 1, mlx4_0 port 1 show no rate (ibv_devinfo prints active_width and active_speed only with -v): the link rate is not checked"]);
});

test("ibv_devinfo -v of mlx4_1 port 2: PORT_DOWN, POLLING, 4X at 2.5 Gbps read as Down / Polling / rate 10: failing", () => {
    const r = parseIbstat(cap("ibv_devinfo-v.mlx4-port2-polling-heioy.txt"));
    assert.deepEqual(r.cas.map((c) => [c.name, c.ports.map((p) => [p.port, p.state, p.physicalState, p.rate, p.linkLayer])]), [["mlx4_1", [[2, "Down", "Polling", 10, "InfiniBand"]]]]);
    assert.deepEqual(summary(nic("ibv_devinfo-v.mlx4-port2-polling-heioy.txt", ibRails(["mlx4_1"], 40))), { verdict: "failing", findings: [["nic", "mlx4_1 port 2 is Down, expected Active"]], notChecked: [] });
    // the same port set Active in memory (its two state lines changed): rate 4X x 2.5 = 10 is below the expected 40, so it fails on the rate
    const up = cap("ibv_devinfo-v.mlx4-port2-polling-heioy.txt").replace("PORT_DOWN (1)", "PORT_ACTIVE (4)").replace("POLLING (2)", "LINK_UP (5)");
    assert.deepEqual(summary(grade({ "ibstat.txt": up }, only(ibRails(["mlx4_1"], 40), ["nic"]))).findings, [["nic", "mlx4_1 port 2 at 10 Gb/s, expected 40 Gb/s"]]);
});

test("ibstatus of an A100 VM (nine ports, Active/LinkUp, mlx5_0 ... mlx5_8 at 200 Gb/sec HDR) is read as ibstat: healthy as the eight IB HCAs; a port DOWN fails (before: unreadable)", () => {
    const text = cap("ibstatus.a100-9-ports-gpud.txt");
    const r = parseIbstat(text);
    assert.equal(r.tool, "ibstatus");
    assert.equal(r.cas.length, 9);
    assert.deepEqual(r.cas[0].ports.map((p) => [p.port, p.state, p.physicalState, p.rate, p.linkLayer]), [[1, "Active", "LinkUp", 200, "InfiniBand"]]);
    assert.deepEqual(summary(nic("ibstatus.a100-9-ports-gpud.txt", A100)), { verdict: "healthy", findings: [], notChecked: [] });
    // one port's sysfs state DOWN / phys state Polling (the kernel's "1: DOWN", "2: Polling" forms), changed in memory
    const down = text.replace(/(Infiniband device 'mlx5_3' port 1 status:\n(?:.*\n){3})\s+state:\s+4: ACTIVE\n\s+phys state:\s+5: LinkUp/, "$1        state:           1: DOWN\n        phys state:      2: Polling");
    assert.notEqual(down, text);
    assert.deepEqual(summary(grade({ "ibstat.txt": down }, only(A100, ["nic"]))).findings, [["nic", "mlx5_3 port 1 is Down, expected Active"]]);
    // ibstatus's fatal() where /sys/class/infiniband cannot be entered, and ibv_devinfo's "No IB devices found"
    // (libibverbs/examples/devinfo.c): no RDMA device, failing
    for (const [none, tool] of [["Fatal error:  No devices\n", "ibstatus"], ["No IB devices found\n", "ibv_devinfo"]]) {
        assert.deepEqual(summary(grade({ "ibstat.txt": none }, only(A100, ["nic"]))).findings, [["nic", `no RDMA device: ${tool} found none, expected 8`]], none);
    }
});

test("the other tools pasted for ibstat or the RDMA device listing are refused by name: rdma link, ibv_devinfo -l (before: 'not ibstat output', 'not an ls -l line')", () => {
    const cases: Array<[string, string]> = [
        ["rdma-link.cx5-two-ports-active-daocloud.txt", "is rdma link output"],
        ["ibv_devinfo-l.two-hcas-heioy.txt", "is ibv_devinfo -l (device names only) output"],
    ];
    for (const [file, said] of cases) {
        const h = nic(file, ROCE);
        assert.equal(h.verdict, "unreadable", file);
        assert.ok(h.unreadable[0].reason.startsWith(said), h.unreadable[0].reason);
        assert.deepEqual(h.findings, [], file);
    }
    // rdma link in rdma-devices.txt names no PCI function: refused there too, and no NIC link is graded
    const h = grade({ "rdma-devices.txt": cap("rdma-link.cx5-two-ports-active-daocloud.txt"), "lspci-vv.txt": cap("lspci-vv.h100-gpud.txt") }, only(ROCE, ["pcie"]));
    assert.equal(h.verdict, "unreadable");
    assert.deepEqual(h.unreadable.map((u) => u.reason), ["is rdma link output (\"link mlx5_0/1 state ACTIVE physical_state LINK_UP netdev enp4s0f0np0\"), which names no PCI function: the kit reads ls -l /sys/class/infiniband/"]);
});

test("leptonai/gpud pull requests' ibstat pastes: a ConnectX-7 Down/Polling at rate 10 fails; a ConnectX-6 Dx Down/Disabled cut after its physical state fails; a paste opening with '...' is refused", () => {
    assert.deepEqual(summary(nic("ibstat.cx7-down-polling-rate10-elided-gpud482.txt", ibRails(["mlx5_10"], 400))).findings, [["nic", "mlx5_10 port 1 is Down, expected Active"]]);
    // #99 stops after "Physical state": one device, so nothing says a line is missing; its State is read
    const r = parseIbstat(cap("ibstat.cx6dx-down-disabled-cut-gpud99.txt"));
    assert.equal(r.cut, undefined);
    const roce8 = { ...ROCE, nics: { ...ROCE.nics, names: ["mlx5_8"], count: 1 } };
    assert.deepEqual(summary(nic("ibstat.cx6dx-down-disabled-cut-gpud99.txt", roce8)).findings, [["nic", "mlx5_8 port 1 is Down, expected Active"]]);
    const h = nic("ibstat.elided-head-mlx5_7-ibpanic-mlx5_8-gpud752.txt", IB);
    assert.deepEqual(h.unreadable.map((u) => u.reason), ["holds a \"...\" line (someone's elision): an excerpt, not ibstat's whole output"]);
    // without the elision line (and the blank after it) the rest is read: mlx5_7 Active, mlx5_8 could not be read
    const rest = cap("ibstat.elided-head-mlx5_7-ibpanic-mlx5_8-gpud752.txt").replace("...\n\n", "");
    assert.deepEqual(summary(grade({ "ibstat.txt": rest }, only(ibRails(["mlx5_7", "mlx5_8"]), ["nic"]))).findings, [
        ["nic", "ibstat could not read a device"], ["nic", "RDMA device(s) mlx5_8 missing: 1 of the 2 expected are listed"],
    ]);
});

test("ibstat's single-port form (ibstat <ca> <port>: \"CA: '<name>'\" and the port unindented, ibstat.c ca_stat) is read", () => {
    // built from the ConnectX-3 capture in the form ibstat.c prints for `ibstat mlx4_0 1`
    const lines = cap("ibstat.cx3-mlx4-active-apptainer.txt").split("\n");
    const single = ["CA: 'mlx4_0'", ...lines.slice(7).map((l) => l.trim())].join("\n");
    const r = parseIbstat(single);
    assert.deepEqual(r.cas.map((c) => [c.name, c.ports.map((p) => [p.port, p.state, p.rate])]), [["mlx4_0", [[1, "Active", 40]]]]);
    // rdma-core 9a645e432 (2026) prints "Effective speed: %g" after Rate: below the rate it is a note, never a failure
    const eff = cap("ibstat.cx3-mlx4-active-apptainer.txt").replace("Rate: 40\n", "Rate: 40\n                    Effective speed: 25.6\n");
    assert.notEqual(eff, cap("ibstat.cx3-mlx4-active-apptainer.txt"));
    const h = grade({ "ibstat.txt": eff }, only(ibRails(["mlx4_0"], 40), ["nic"]));
    assert.equal(h.verdict, "healthy");
    assert.ok(h.notes.includes("mlx4_0 port 1: effective speed 25.6 Gb/s below its rate 40 (mlx4_0 port 1: Effective speed: 25.6)"), h.notes.join("\n"));
});

test("ibstat -s (every device's head, no port: ibstat.c short_format) is refused by name, not read as cut short", () => {
    // built from the gpud A100 capture's device heads (the lines before each "Port 1:")
    const heads = cap("ibstat.a100-ib-200.txt").split("\n").filter((l) => !/^\t\t|^\tPort \d+:/.test(l)).join("\n");
    assert.ok(heads.includes("CA 'mlx5_1'") && !heads.includes("Port 1:"));
    const h = grade({ "ibstat.txt": heads }, only(A100, ["nic"]));
    assert.equal(h.verdict, "unreadable");
    assert.match(h.unreadable[0].reason, /^is ibstat -s \(9 devices, no "Port N:" section\)/);
});

test("fi_info of libfabric 1.21 (version 121.0) on an hpc6a: one EFA device, rdmap0s31, as RDM and DGRAM", () => {
    const r = parseFiInfo(cap("fi_info.hpc6a-121-rdm-dgrm-perfstudy.txt"));
    assert.deepEqual(r.devices, ["rdmap0s31"]);
    assert.deepEqual(summary(grade({ "fi_info.txt": cap("fi_info.hpc6a-121-rdm-dgrm-perfstudy.txt") }, only(G6E, ["nic"]))), { verdict: "healthy", findings: [], notChecked: [] });
    assert.deepEqual(summary(grade({ "fi_info.txt": cap("fi_info.hpc6a-121-rdm-dgrm-perfstudy.txt") }, only(stack("examples/aws-p5.yaml"), ["nic"]))).findings, [["nic", "1 EFA device(s), expected 32 (p5.48xlarge)"]]);
});

test("fi_info --version and fi_info -l in fi_info.txt are refused by name, never read as 'no EFA device' (before: unreadable without the tool's name; --version without its api line: failing)", () => {
    // constructed from libfabric util/info.c (main: "%s: %s" of argv[0] and PACKAGE_VERSION, "libfabric: %s",
    // "libfabric api: %d.%d"; print_providers: "%s:" and "    version: %d.%d"), the versions of the hpc6a capture
    const version = "/opt/amazon/efa/bin/fi_info: 1.21.0amzn1.0\nlibfabric: 1.21.0amzn1.0\nlibfabric api: 1.21\n";
    const v = grade({ "fi_info.txt": version }, only(G6E, ["nic"]));
    assert.deepEqual([v.verdict, v.findings.length], ["unreadable", 0]);
    assert.match(v.unreadable[0].reason, /^is fi_info --version/);
    // the two lines without the path and the api line: before, both were read as libfabric errors and failed the node
    const bare = grade({ "fi_info.txt": "fi_info: 1.21.0\nlibfabric: 1.21.0\n" }, only(G6E, ["nic"]));
    assert.deepEqual(bare.unreadable.map((u) => u.reason), ["is fi_info --version (\"fi_info: 1.21.0\"), not fi_info -p efa"]);
    const list = grade({ "fi_info.txt": "efa:\n    version: 121.0\nshm:\n    version: 200.0\n" }, only(G6E, ["nic"]));
    assert.deepEqual([list.verdict, list.findings.length], ["unreadable", 0]);
    assert.match(list.unreadable[0].reason, /^is fi_info -l \(the providers list/);
    // libfabric's own "fi_getinfo: -61" stays the answer of a node without EFA: failing
    assert.equal(grade({ "fi_info.txt": cap("fi_info.no-efa.txt") }, only(G6E, ["nic"])).verdict, "failing");
});

test("lspci -vv of a ConnectX-7 PF at 16GT/s x8 of 32GT/s x16 and its VF at 'Speed unknown, Width x0': the rail fails, the VF is never graded", () => {
    const text = cap("lspci-vv.cx7-pf-gen4x8-vf-unknown-kvm-clg.txt");
    const r = parseLspci(text);
    assert.deepEqual(r.devices.map((d) => [d.bdf, d.kind, d.virtualFunction, d.sta?.gts, d.sta?.width]), [
        ["b1:00.1", "nic", false, 16, 8], ["b1:00.2", "nic", true, undefined, 0],
    ]);
    const exp = only({ ...ROCE, gpus: 0, nics: { ...ROCE.nics, names: ["mlx5_1"], count: 1 } }, ["pcie"]);
    // no map of RDMA devices to functions: which function is a rail is unknown, so not checked
    assert.deepEqual(summary(grade({ "lspci-vv.txt": text }, exp)), { verdict: "incomplete", findings: [], notChecked: ["pcie"] });
    // constructed: one ls -l line placing mlx5_1 on the PF (the path the lspci -t in the same mail shows: b0:04.0 → b1:00.1)
    const map = "lrwxrwxrwx 1 root root 0 Jul 28 11:00 mlx5_1 -> ../../devices/pci0000:b0/0000:b0:04.0/0000:b1:00.1/infiniband/mlx5_1\n";
    const h = grade({ "lspci-vv.txt": text, "rdma-devices.txt": map }, exp);
    assert.deepEqual(summary(h), { verdict: "failing", findings: [["pcie", "RDMA NIC b1:00.1 (ConnectX-7) link trained at 16GT/s x8, capable of 32GT/s x16 (rail mlx5_1)"]], notChecked: [] });
    // the VF's LnkSta put in the PF's place: a PF that answers config reads has its link up (they cross it), so x0 is a
    // register that is not its own link's: not checked, never failing (test/health-review15.test.ts)
    const down = text.replace("LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)", "LnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)");
    assert.notEqual(down, text);
    assert.deepEqual(summary(grade({ "lspci-vv.txt": down, "rdma-devices.txt": map }, exp)), { verdict: "incomplete", findings: [], notChecked: ["pcie"] });
    // a rate this pciutils cannot name (pciutils 3.7 prints "unknown" for 64GT/s, ls-caps.c before commit 5bdf63b):
    // its own "(downgraded)" marker decides (built from the PF's lines: LnkCap unknown, LnkSta 32GT/s downgraded, x16)
    const gen6 = text.replace("LnkCap:\tPort #0, Speed 32GT/s, Width x16", "LnkCap:\tPort #0, Speed unknown, Width x16")
        .replace("LnkSta:\tSpeed 16GT/s (downgraded), Width x8 (downgraded)", "LnkSta:\tSpeed 32GT/s (downgraded), Width x16");
    assert.deepEqual(summary(grade({ "lspci-vv.txt": gen6, "rdma-devices.txt": map }, exp)).findings, [["pcie", "RDMA NIC b1:00.1 (ConnectX-7) link trained at 32GT/s x16, capable of an unknown rate x16 (rail mlx5_1)"]]);
    // both unknown and no marker: pciutils found the codes equal, the link is at its capability
    const gen6full = gen6.replace("LnkSta:\tSpeed 32GT/s (downgraded), Width x16", "LnkSta:\tSpeed unknown, Width x16");
    assert.deepEqual(summary(grade({ "lspci-vv.txt": gen6full, "rdma-devices.txt": map }, exp)), { verdict: "healthy", findings: [], notChecked: [] });
    // an uncorrectable AER bit set on the rail is a note
    const aer = text.replace("UESta:\tDLP- SDES- TLP-", "UESta:\tDLP- SDES- TLP+");
    assert.notEqual(aer, text);
    assert.ok(grade({ "lspci-vv.txt": aer, "rdma-devices.txt": map }, exp).notes.some((n) => n.includes("AER shows an uncorrectable error logged")));
});

test("nvidia-smi nvlink -s of two H100 PCIe (bridged: links 4, 5, 10, 11, 16, 17 inactive by design): healthy without NVSwitch; not checked, never failing, where the stack expects an NVSwitch board (before: failing)", () => {
    const file = "nvidia-smi-nvlink.h100-pcie-x2-12-of-18-bridged-hpe.txt";
    // a stack of two-GPU hosts has no NVSwitch: NVLink is not graded
    assert.deepEqual(summary(nvlink(file, ROCE2)), { verdict: "healthy", findings: [], notChecked: [] });
    const two = { ...ROCE, gpus: 2 };
    const h = nvlink(file, two);
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["nvlink"] });
    assert.equal(h.notChecked[0].reason, "GPU 0, 1: NVIDIA H100 PCIe, a PCIe board whose NVLink runs over bridges (some links inactive by design), while the stack expects H100-80GB on an NVSwitch board: its NVLink links are not graded");
    // a bridged link trained slow still fails
    const slow = cap(file).replace("Link 1: 26.562 GB/s", "Link 1: 1.562 GB/s");
    assert.deepEqual(summary(grade({ "nvidia-smi-nvlink.txt": slow }, only(two, ["nvlink"]))).findings, [["nvlink", "GPU 0: 1 NVLink link(s) below 26.562 GB/s (link 1 1.562)"]]);
    // the SXM board's name on the same lines is graded as before: six links down fail
    const sxm = cap(file).replaceAll("NVIDIA H100 PCIe", "NVIDIA H100 80GB HBM3");
    assert.deepEqual(summary(grade({ "nvidia-smi-nvlink.txt": sxm }, only(two, ["nvlink"]))).findings, [
        ["nvlink", "GPU 0: 6 NVLink link(s) inactive (4, 5, 10, 11, 16, 17)"], ["nvlink", "GPU 1: 6 NVLink link(s) inactive (4, 5, 10, 11, 16, 17)"],
    ]);
});

test("nvidia-smi nvlink -s of two A100 PCIe without a bridge ('all links are inActive'): not graded without NVSwitch; not checked on an NVSwitch stack (before: failing)", () => {
    const file = "nvidia-smi-nvlink.a100-pcie-x2-no-bridge-all-inactive-hpe.txt";
    assert.deepEqual(summary(nvlink(file, ROCE2)), { verdict: "healthy", findings: [], notChecked: [] });
    assert.deepEqual(summary(nvlink(file, { ...A100, gpus: 2 })), { verdict: "incomplete", findings: [], notChecked: ["nvlink"] });
    // the SXM4 name on the same lines: every link down fails, as it did
    const sxm = cap(file).replaceAll("NVIDIA A100-PCIE-40GB", "NVIDIA A100-SXM4-80GB");
    assert.deepEqual(summary(grade({ "nvidia-smi-nvlink.txt": sxm }, only({ ...A100, gpus: 2 }, ["nvlink"]))).findings, [
        ["nvlink", "GPU 0: every NVLink link is down"], ["nvlink", "GPU 1: every NVLink link is down"],
    ]);
});

test("nvidia-smi nvlink -R (remote devices) in the NVLink file is refused by name (before: 'neither <N> GB/s nor <inactive>')", () => {
    const h = nvlink("nvidia-smi-nvlink-R.h100-pcie-x2-remote-hpe.txt", ROCE);
    assert.equal(h.verdict, "unreadable");
    assert.equal(h.unreadable[0].reason, "is nvidia-smi nvlink -R (remote devices) output (\"Link 0: Remote Device 00000000:D5:00.0: Link 0\"), not nvidia-smi nvlink --status");
    // nvidia-smi nvlink -c's "Link N, P2P ..." form, built from the capture's first line
    const c = grade({ "nvidia-smi-nvlink.txt": "GPU 0: NVIDIA H100 PCIe (UUID: GPU-6968dfc2-d444-d92c-c36b-6abe53445cb9)\n\t Link 0, P2P is supported: true\n" }, only(ROCE, ["nvlink"]));
    assert.match(c.unreadable[0].reason, /^is nvidia-smi nvlink -c \(capabilities\) output/);
});
