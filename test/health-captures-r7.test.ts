/**
 * Round 7 of the capture hunt (test/fixtures/health/README.md, "Round 7"): kernel logs with Xids from issue trackers the
 * earlier rounds did not use (akash-network/support, chia-gigahorse, tinygrad, NVIDIA/NVSentinel, NVIDIA/nvidia-docker,
 * NVIDIA/open-gpu-kernel-modules, CachyOS/linux-cachyos), consumer GPUs among them, and `nvidia-smi -q` excerpts of
 * R450 and R610. Each is graded the way `rdmakit health` reads a node: a node folder holding the capture under the
 * grader's file name, through gradeHealthDir, with only the components it answers required.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDmesg } from "../components/health/dmesg";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";

const H100 = stack("examples/azure-h100.yaml");
const xidOnly = (file: string) => grade({ "dmesg.txt": cap(file) }, only(H100, ["xid"]));
const GEFORCE = { ...H100, gpuMemoryGiB: undefined, gpuPcie: undefined, nvswitch: false, nvlinkLinks: 0, gpus: 1 };

test("Xids that NVIDIA says restart the app or ignore, on three GPUs of a 535 VM (dmesg -T | grep NVRM, akash-network/support#244): healthy, each a note", () => {
    const r = parseDmesg(cap("dmesg.535-xid43-31-94-ctime-grep-akash244.txt"));
    assert.deepEqual(r.xids.map((x) => [x.pci, x.code, x.time?.kind]), [["0000:00:05", 43, "wall"], ["0000:00:05", 43, "wall"], ["0000:00:07", 31, "wall"], ["0000:00:08", 94, "wall"]]);
    const h = xidOnly("dmesg.535-xid43-31-94-ctime-grep-akash244.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    const notes = h.notes.join("\n");
    assert.match(notes, /Xid 94 \(Contained memory error\) on GPU 0000:00:08: NVIDIA's catalog says restart app; not graded/);
    assert.match(notes, /Xid 31 .* on GPU 0000:00:07: NVIDIA's catalog says restart app/);
    assert.match(notes, /Xid 43 .* on GPU 0000:00:05: NVIDIA's catalog says ignore/);
});

test("Xid 31 twice on an RTX 4090 (535, the GPU's UUID and board serial lines before it; tinygrad/tinygrad#6947): healthy, notes", () => {
    const h = xidOnly("dmesg.rtx4090-535-xid31-board-serial-tinygrad6947.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.match(h.notes.join("\n"), /Xid 31 \(GPU memory page fault\) on GPU 0000:01:00/);
});

test("Xid 62 with pid='<unknown>' then a run of Xid 45 (chia-gigahorse#301): failing on Xid 62 alone (RESET_GPU), the 45s are its aftermath", () => {
    const r = parseDmesg(cap("dmesg.xid31-62-45-unknown-pid-chia301.txt"));
    assert.deepEqual(r.xids.map((x) => x.code), [31, 62, 45, 45, 45, 45, 45, 45, 45, 45]);
    const h = xidOnly("dmesg.xid31-62-45-unknown-pid-chia301.txt");
    assert.deepEqual(summary(h).findings, [["xid", "Xid 62 (Internal micro-controller halt) on GPU 0000:0a:00, 0 min before the log's last line (window 120 min)"]]);
    assert.equal(h.findings[0].persistence, "transient");
});

test("Xid 119 (GSP RPC timeout) again and again on one GPU, dmesg -T of a 525 host (NVIDIA/nvidia-docker#1648): failing, one finding", () => {
    const h = xidOnly("dmesg.525-xid119-gsp-rpc-ctime-nvdocker1648.txt");
    assert.deepEqual(summary(h).findings, [["xid", "Xid 119 (GSP RPC Timeout) on GPU 0000:61:00, 0 min before the log's last line (window 120 min)"]]);
});

test("a GPU fallen off the bus without an Xid, its message's lines indented (NVIDIA/NVSentinel#155): failing, timed by the message's first line (before: 'the line has no time')", () => {
    const r = parseDmesg(cap("dmesg.570-open-fallen-off-probe-routine-nvsentinel155.txt"));
    assert.deepEqual(r.lost.map((l) => [l.pci, l.time]), [["0000:b3:00.0", { kind: "boot", s: 1843.308145 }]]);
    const h = xidOnly("dmesg.570-open-fallen-off-probe-routine-nvsentinel155.txt");
    assert.deepEqual(summary(h).findings, [["gpu", "GPU 0000:b3:00.0 lost by the driver (fallen off the bus or not initialised; what Xid 79 reports), 0 min before the log's last line (window 120 min)"]]);
});

test("an RTX 5080 the 595 open module cannot attach (journalctl, RmInitAdapter failed; NVIDIA/open-gpu-kernel-modules#1151): failing, one lost GPU", () => {
    const r = parseDmesg(cap("dmesg.rtx5080-595-rminitadapter-journal-ogkm1151.txt"));
    assert.deepEqual([...new Set(r.lost.map((l) => l.pci))], ["0000:09:00.0"]);
    const h = xidOnly("dmesg.rtx5080-595-rminitadapter-journal-ogkm1151.txt");
    assert.deepEqual(summary(h).findings, [["gpu", "GPU 0000:09:00.0 lost by the driver (fallen off the bus or not initialised; what Xid 79 reports), 0 min before the log's last line (window 120 min)"]]);
});

test("journalctl under a locale that writes the month in lower case ('sep 03 13:25:15 cachyos kernel:', CachyOS/linux-cachyos#1019): read, healthy (before: refused as no kernel log)", () => {
    const r = parseDmesg(cap("dmesg.610-open-boot-lowercase-month-journal-cachyos1019.txt"));
    assert.equal(r.newest.wall !== undefined, true);
    assert.deepEqual(summary(xidOnly("dmesg.610-open-boot-lowercase-month-journal-cachyos1019.txt")), { verdict: "healthy", findings: [], notChecked: [] });
    // a month in another language is still a prefix, without a time: an Xid on it counts as recent
    const other = parseDmesg("mai 03 13:25:15 host kernel: NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    assert.equal(other.xids[0].time, undefined);
});

test("nvidia-smi -q excerpts of a GeForce GTX 780 (450.66, sysmon#12) and of R610's -d PERFORMANCE (llama.cpp#27415): read, cut short, not checked; no failure invented", () => {
    const r610 = parseNvidiaSmiQ(cap("nvidia-smi-q.610.57.04-d-performance-llamacpp27415.txt"));
    // R610 keeps "Driver Version" with a deprecation note and adds "KMD Version": the version alone
    assert.equal(r610.driverVersion, "610.57.04");
    assert.equal(parseNvidiaSmiQ(cap("nvidia-smi-q.gtx780-450.66-head-sysmon12.txt")).driverVersion, "450.66");
    for (const [file, model] of [["nvidia-smi-q.610.57.04-d-performance-llamacpp27415.txt", "RTX 5090"], ["nvidia-smi-q.gtx780-450.66-head-sysmon12.txt", "GTX 780"]]) {
        const h = grade({ "nvidia-smi-q.txt": cap(file) }, only({ ...GEFORCE, gpuModel: model }, ["gpu", "ecc", "clocks"]));
        assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["gpu"] }, file);
        assert.match(h.notChecked[0].reason, /ends before its "Processes" field/);
    }
});

test("Xid 32 and 31 in the old form without pid ('Channel ID 00000000 intr 00004000', Bumblebee-Project/Bumblebee#677): read, healthy, notes", () => {
    const r = parseDmesg(cap("dmesg.optimus-xid32-31-old-form-bumblebee677.txt"));
    assert.deepEqual(r.xids.map((x) => [x.pci, x.code]), [["0000:01:00", 32], ["0000:01:00", 32], ["0000:01:00", 31]]);
    assert.deepEqual(summary(xidOnly("dmesg.optimus-xid32-31-old-form-bumblebee677.txt")), { verdict: "healthy", findings: [], notChecked: [] });
});

test("an RTX 5060 Ti whose GSP firmware never initialised (570 open module on Talos, RmInitAdapter failed; siderolabs/extensions#909): failing, one lost GPU", () => {
    const h = xidOnly("dmesg.rtx5060ti-570-open-gsp-init-failed-talos-ext909.txt");
    assert.deepEqual(summary(h).findings, [["gpu", "GPU 0000:01:00.0 lost by the driver (fallen off the bus or not initialised; what Xid 79 reports), 0 min before the log's last line (window 120 min)"]]);
});

test("a GSP heartbeat timeout and 'GSP Timeout' banner of driver GPU 6 whose Xid 119 line the stored text does not reach (595.71.05, NVIDIA/open-gpu-kernel-modules#1230): failing as Xid 119 (before: healthy)", () => {
    const r = parseDmesg(cap("dmesg.595-open-gsp-heartbeat-timeout-no-xid-ogkm1230.txt"));
    assert.deepEqual(r.gspTimeouts.map((t) => [t.instance, t.time?.s]), [["GPU6", 84.300488]]);
    const h = xidOnly("dmesg.595-open-gsp-heartbeat-timeout-no-xid-ogkm1230.txt");
    assert.deepEqual(summary(h).findings, [["xid", "GSP timeout (what Xid 119 reports) on driver GPU instance 6; the log holds no Xid 119 line naming its bus, 0 min before the log's last line (window 120 min)"]]);
    assert.equal(h.findings[0].persistence, "transient");
    // with the Xid 119 line the driver logs after the banner (its form in kernel_gsp.c _kgspLogXid119; **constructed**),
    // that line names the GPU and is the one finding
    const withXid = `${cap("dmesg.595-open-gsp-heartbeat-timeout-no-xid-ogkm1230.txt")}[   84.300500] NVRM: Xid (PCI:0000:c1:00): 119, pid=1234, name=python3, Timeout after 6s of waiting for RPC response from GPU6 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).\n`;
    assert.deepEqual(summary(grade({ "dmesg.txt": withXid }, only(H100, ["xid"]))).findings, [["xid", "Xid 119 (GSP RPC Timeout) on GPU 0000:c1:00, 0 min before the log's last line (window 120 min)"]]);
});

test("talosctl dmesg lines ('192.168.11.119: kern: warning: [2026-04-22T21:27:51.29Z]: NVRM: ...', NVIDIA/open-gpu-kernel-modules#446): read with their times (before: refused); a falcon core dump without a banner or Xid is a note", () => {
    const r = parseDmesg(cap("dmesg.talosctl-gsp-coredump-trace-ogkm446.txt"));
    assert.equal(r.newest.wall, Date.UTC(2026, 3, 22, 21, 27, 51) / 1000);
    const h = xidOnly("dmesg.talosctl-gsp-coredump-trace-ogkm446.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.match(h.notes.join("\n"), /the driver dumped the GSP's falcon .* no GSP timeout banner or Xid 119\/120 line naming a GPU .*; not graded/);
    // an Xid in the same form is read with its time (**constructed**: the Xid 79 line of the catalog in talosctl's form)
    const x = parseDmesg("10.0.0.2: kern:    info: [2026-04-22T21:27:51.291660856Z]: NVRM: Xid (PCI:0000:01:00): 79, pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n");
    assert.deepEqual(x.xids.map((e) => [e.code, e.time?.kind]), [[79, "wall"]]);
});

test("a PyTorch node whose GPU nvidia-smi cannot reach ('Unable to determine the device handle ... Unknown Error') and whose dmesg -H excerpt holds only corrected AER errors (rwth-i6/returnn#1486): the log alone healthy with an AER note, with nvidia-smi failing on gpu", () => {
    const log = cap("dmesg.delta-aer-corrected-elided-returnn1486.txt");
    const alone = grade({ "dmesg.txt": log }, only(H100, ["xid"]));
    assert.deepEqual(summary(alone), { verdict: "healthy", findings: [], notChecked: [] });
    assert.match(alone.notes.join("\n"), /3 corrected PCIe AER error line\(s\)/);
    const both = grade({ "dmesg.txt": log, "nvidia-smi-q.txt": cap("nvidia-smi.device-handle-unknown-error-returnn1486.txt") }, only(H100, ["xid", "gpu"]));
    assert.deepEqual(summary(both).findings, [["gpu", "nvidia-smi cannot reach a GPU"]]);
    assert.equal(both.findings[0].evidence, "Unable to determine the device handle for GPU0000:03:00.0: Unknown Error");
});

test("a p4d's boot: NVSwitches probed, 'nvidia 0000:10:1c.0: can't derive routing for PCI INT A' (aws/aws-ofi-nccl#141): healthy on a p4d stack, no GPU named lost", () => {
    const P4D = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p4d.24xlarge"; });
    const r = parseDmesg(cap("dmesg.p4d-nvswitch-probe-boot-awsofinccl141.txt"));
    assert.deepEqual([r.lost.length, r.sxids.length, r.xids.length], [0, 0, 0]);
    assert.deepEqual(summary(grade({ "dmesg.txt": cap("dmesg.p4d-nvswitch-probe-boot-awsofinccl141.txt") }, only(P4D, ["xid", "nvswitch"]))), { verdict: "healthy", findings: [], notChecked: [] });
});

test("Xid 48 (DBE) then Xid 63 in its pre-Ampere page-retirement words, dmesg -T of a 390 driver (NVIDIA/nvidia-docker#849): failing on Xid 48, the 63 a note", () => {
    const h = xidOnly("dmesg.390-xid48-dbe-63-page-retired-ctime-nvdocker849.txt");
    assert.deepEqual(summary(h).findings, [["xid", "Xid 48 (Double Bit ECC Error) on GPU 0000:8a:00, 0 min before the log's last line (window 120 min)"]]);
    assert.match(h.notes.join("\n"), /Xid 63 .* on GPU 0000:8a:00: NVIDIA's catalog says ignore/);
});

test("the R570+ 'channel 0x0b00000a' form of an Xid 43 on a GB200-domain GPU (kubernetes-sigs/dra-driver-nvidia-gpu#904): read, healthy, a note", () => {
    const r = parseDmesg(cap("dmesg.xid43-channel-hex-form-dra904.txt"));
    assert.deepEqual(r.xids.map((x) => [x.pci, x.code]), [["0009:01:00", 43]]);
    const h = xidOnly("dmesg.xid43-channel-hex-form-dra904.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.match(h.notes.join("\n"), /Xid 43 \(GPU stopped processing\) on GPU 0009:01:00: NVIDIA's catalog says ignore/);
});

test("older nvidia-smi -q heads of a Tesla K80 in an Azure domain (396.37, 'GPU 3E3F8E05:00:00.0'; NVIDIA/nvidia-docker#816) and of a GeForce 8800 GT (340.102, 'GPU 0000:01:00.0'; netdata/netdata#2759): read, cut short, not checked; the -q -x XML of a GT 730 (SysMonTask#60) refused by name", () => {
    const k80 = parseNvidiaSmiQ(cap("nvidia-smi-q.k80-396.37-azure-domain-head-nvdocker816.txt"));
    assert.deepEqual([k80.driverVersion, k80.gpus.map((g) => [g.busId, g.productName])], ["396.37", [["3E3F8E05:00:00.0", "Tesla K80"]]]);
    const g8800 = parseNvidiaSmiQ(cap("nvidia-smi-q.8800gt-340.102-head-netdata2759.txt"));
    assert.deepEqual([g8800.driverVersion, g8800.gpus.map((g) => [g.busId, g.productName])], ["340.102", [["0000:01:00.0", "GeForce 8800 GT"]]]);
    for (const [file, model] of [["nvidia-smi-q.k80-396.37-azure-domain-head-nvdocker816.txt", "K80"], ["nvidia-smi-q.8800gt-340.102-head-netdata2759.txt", "8800 GT"]]) {
        const h = grade({ "nvidia-smi-q.txt": cap(file) }, only({ ...GEFORCE, gpuModel: model }, ["gpu", "ecc", "clocks"]));
        assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["gpu"] }, file);
    }
    const xml = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q-x.gt730-460.67-head-sysmontask60.xml.txt") }, only({ ...GEFORCE, gpuModel: "GT 730" }, ["gpu"]));
    assert.equal(xml.verdict, "unreadable");
    assert.match(xml.unreadable[0].reason, /nvidia-smi -q -x \(XML\); the kit reads the text form of nvidia-smi -q/);
});
