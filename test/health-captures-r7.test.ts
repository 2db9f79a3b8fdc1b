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
