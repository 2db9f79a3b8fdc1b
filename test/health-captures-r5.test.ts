/**
 * Round 5 of the capture hunt (test/fixtures/health/README.md, "Round 5"): nvidia-smi -q of a Blackwell GPU on R570 (its
 * "Fabric > Health" fields without a Summary), of an HGX A100 with a row remapping pending and of an H100 NVL pair;
 * NVLink of Blackwell (18 links per GPU); kernel logs of open-module drivers that are not Xids (GSP refusals, NVLink core
 * churn, nvidia-peermem). Each is graded the way `rdmakit health` reads a node: a node folder holding the capture under
 * the grader's file name, through gradeHealthDir, with only the components that capture answers required.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDmesg } from "../components/health/dmesg";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";

const H100 = stack("examples/azure-h100.yaml");
const B200 = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p6-b200.48xlarge"; });


test("nvidia-smi -q of a GeForce RTX 5090 on 570.124.06 (Blackwell; Health fields N/A, reset status 'deprecated') grades healthy", () => {
    const text = cap("nvidia-smi-q.rtx5090-570.124.06.txt");
    assert.match(text, /Product Architecture {18}: Blackwell/);
    assert.match(text, /Reset Required {20}: Requested functionality has been deprecated/);
    const gpu = parseNvidiaSmiQ(text).gpus[0];
    assert.deepEqual([gpu.complete, gpu.fabric?.state, gpu.fabricHealthFields, gpu.resetRequired, gpu.slowdowns], [true, "N/A", [], undefined, []]);
    const exp = only({ ...H100, gpus: 1, gpuModel: "RTX", gpuMemoryGiB: undefined, gpuPcie: undefined, nvswitch: false }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": text }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    // idle in P8 at Gen1 x8: notes, as nvidia-smi says the link narrows when the GPU is not in use
    assert.ok(h.notes.some((n) => /PCIe Gen1 of Gen5 in P8/.test(n)));
});

test("R570's Fabric Health fields on an NVSwitch board: Degraded, True or a wrong configuration fail nvlink (before: passed, no Summary line)", () => {
    // constructed in memory: the first GPU of the whole H100 565.57.01 capture with its "Health > Bandwidth : N/A" line
    // replaced by the four Health lines of the R570 form (nvidia-smi-q.rtx5090-570.124.06.txt), values as given
    const whole = cap("nvidia-smi-q.h100-565.57.01.txt");
    const line = "            Bandwidth                     : N/A\n";
    assert.ok(whole.includes(line));
    const withHealth = (bw: string, recovery: string, unhealthy: string, timeout: string, extra = ""): string => whole.replace(line,
        `            Bandwidth                     : ${bw}\n            Route Recovery in progress    : ${recovery}\n` +
        `            Route Unhealthy               : ${unhealthy}\n            Access Timeout Recovery       : ${timeout}\n${extra}`);
    const exp = only(H100, ["gpu", "ecc", "clocks"]);
    const run = (text: string) => grade({ "nvidia-smi-q.txt": text }, exp);
    // the healthy values, and N/A everywhere: healthy
    assert.equal(run(withHealth("Full", "False", "False", "False", "            Incorrect Configuration       : None\n")).verdict, "healthy");
    assert.equal(run(withHealth("N/A", "N/A", "N/A", "N/A")).verdict, "healthy");
    const bad = run(withHealth("Degraded", "False", "True", "False"));
    assert.deepEqual(bad.findings.map((f) => [f.component, f.message, f.evidence, f.persistence]), [
        ["nvlink", "GPU 00000000:18:00.0: the NVLink fabric reports a problem", "Fabric Health Bandwidth : Degraded", "persistent"],
        ["nvlink", "GPU 00000000:18:00.0: the NVLink fabric reports a problem", "Fabric Health Route Unhealthy : True", "persistent"],
    ]);
    // a route recovery in progress is the fabric rerouting now: transient, check again
    const rerouting = run(withHealth("Full", "True", "False", "False"));
    assert.deepEqual(rerouting.findings.map((f) => [f.message, f.persistence]), [["GPU 00000000:18:00.0: the NVLink fabric is rerouting around a failure", "transient"]]);
    const config = run(withHealth("Full", "False", "False", "False", "            Incorrect Configuration       : Incorrect SysGUID\n"));
    assert.deepEqual(config.findings.map((f) => f.evidence), ["Fabric Health Incorrect Configuration : Incorrect SysGUID"]);
    // a value neither clear nor a known problem is a note: a wording not seen yet never fails a healthy node
    const odd = run(withHealth("Partial", "False", "False", "False"));
    assert.deepEqual([odd.verdict, odd.notes.filter((n) => /Fabric Health/.test(n))], ["healthy", ["GPU 00000000:18:00.0: Fabric Health Bandwidth : Partial (a value the kit does not know; not graded)"]]);
    // a board without NVSwitch does not grade its fabric
    assert.equal(grade({ "nvidia-smi-q.txt": withHealth("Degraded", "True", "True", "True") }, { ...exp, nvswitch: false }).verdict, "healthy");
});

test("nvidia-smi -q of an HGX A100 4-GPU (555.42.02): one GPU's row remapping pending after a correctable error fails ecc, the others pass", () => {
    const text = cap("nvidia-smi-q.a100-sxm4x4-555.42.02-remap-pending.txt");
    const exp = only({ ...H100, gpus: 4, gpuModel: "A100-80GB", gpuMemoryGiB: 80, gpuPcie: { gen: 4, width: 16 }, nvswitch: false, nvlinkLinks: 0 }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": text }, exp);
    assert.deepEqual(summary(h), {
        verdict: "failing",
        findings: [["ecc", "GPU 00000000:9E:00.0 has a row remapping pending (reset the GPU to apply it)"]],
        notChecked: [],
    });
    assert.equal(h.findings[0].persistence, "persistent");
    assert.equal(h.findings[0].evidence, "Pending                           : Yes");
});

test("nvidia-smi -q of two H100 NVL (550.54.14, no NVSwitch, fabric N/A) grades healthy on a two-GPU stack", () => {
    const exp = only({ ...H100, gpus: 2, nvswitch: false, nvlinkLinks: 0 }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.h100nvl-x2-550.54.14.txt") }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
});

test("Blackwell NVLink: 18 links per GPU from the catalog; eight GPUs of GB200 link lines pass, a GPU listing 17 fails (before: no count for B200)", () => {
    assert.equal(B200.nvlinkLinks, 18);
    // constructed in memory: the whole GPU 0 block of the GB200 capture (18 links at 53.125 GB/s), as GPU 0..7
    const text = cap("nvidia-smi-nvlink.gb200-elided-k8s-test-infra371.txt");
    const block = text.split("\n").filter((l) => /^\s+Link \d+: /.test(l)).slice(0, 18);
    assert.equal(block.length, 18);
    const eight = (links: string[]) => Array.from({ length: 8 }, (_, i) => [`GPU ${i}: NVIDIA B200 (UUID: GPU-${i})`, ...(i === 5 ? links : block)].join("\n")).join("\n") + "\n";
    const exp = only(B200, ["nvlink"]);
    assert.deepEqual(summary(grade({ "nvidia-smi-nvlink.txt": eight(block) }, exp)), { verdict: "healthy", findings: [], notChecked: [] });
    assert.deepEqual(summary(grade({ "nvidia-smi-nvlink.txt": eight(block.slice(0, 17)) }, exp)).findings, [["nvlink", "GPU 5: 17 NVLink links listed, B200 has 18"]]);
});

test("kernel logs of open-module drivers that name no lost GPU grade healthy: NVLink core churn, nvidia-peermem, a chipset setup error", () => {
    const exp = only(B200, ["xid", "nvswitch"]);
    for (const name of ["dmesg.nvlink-core-churn-syslog-iso-ollama11932.txt", "dmesg.kmsg-peermem-invalid-context-gpud.txt", "dmesg.open-530-chipset-error-ogkm489.txt"]) {
        const r = parseDmesg(cap(name));
        assert.deepEqual([r.xids.length, r.sxids.length, r.lost.length, r.refused.length, r.mlx5Errors.length, r.aer.length], [0, 0, 0, 0, 0, 0], name);
        assert.deepEqual(summary(grade({ "dmesg.txt": cap(name) }, exp)), { verdict: "healthy", findings: [], notChecked: [] }, name);
    }
});

test("a GPU the open module refuses for want of GSP (eight indented continuation lines; pop-os/cosmic-epoch#3411) fails gpu, transient, unless nvidia-smi shows every GPU", () => {
    const text = cap("dmesg.mx-open-no-gsp-refused-popos3411.txt");
    const r = parseDmesg(text);
    assert.deepEqual(r.refused.map((x) => [x.pci, x.pciId, x.reason]), [["0000:2c:00.0", "10de:1d16", "not supported by open nvidia.ko"]]);
    // the parser lists its probe failure line as well; the grader counts it as that refusal (one finding, below)
    assert.equal(r.lost.length, 1);
    const h = grade({ "dmesg.txt": text }, only(H100, ["xid"]));
    assert.deepEqual(summary(h).findings, [["gpu", "GPU 0000:2c:00.0 (PCI ID 10de:1d16) refused by the driver: not supported by open nvidia.ko, 0 min before the log's last line (window 120 min)"]]);
    assert.equal(h.findings[0].persistence, "transient");
    // beside an nvidia-smi that shows the eight planned H100s, the refused card is another one: a note
    const withSmi = grade({ "dmesg.txt": text, "nvidia-smi-q.txt": cap("nvidia-smi-q.h100-565.57.01.txt") }, only(H100, ["xid", "gpu"]));
    assert.deepEqual(summary(withSmi), { verdict: "healthy", findings: [], notChecked: [] });
});

test("nvidia-smi -q of eight V100-SXM2 and of ten A40 (550.127.05, idle, ECC on) grade healthy on stacks of their size", () => {
    const base = { ...H100, gpuMemoryGiB: undefined, gpuPcie: undefined, nvswitch: false, nvlinkLinks: 0 };
    const v100 = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.v100-sxm2x8-550.127.05.txt") }, only({ ...base, gpus: 8, gpuModel: "V100" }, ["gpu", "ecc", "clocks"]));
    assert.deepEqual(summary(v100), { verdict: "healthy", findings: [], notChecked: [] });
    const a40 = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.a40x10-550.127.05.txt") }, only({ ...base, gpus: 10, gpuModel: "A40" }, ["gpu", "ecc", "clocks"]));
    assert.deepEqual(summary(a40), { verdict: "healthy", findings: [], notChecked: [] });
    // idle at Gen1 in P8: one note per GPU, never a finding
    assert.equal(a40.notes.filter((n) => /PCIe Gen1 of Gen4 in P8/.test(n)).length, 10);
});

test("nvidia-smi -q of eight RTX 6000 Ada with ECC off (their default) fails ecc on each: the kit's rule for ECC-capable GPUs", () => {
    const exp = only({ ...H100, gpus: 8, gpuModel: "RTX", gpuMemoryGiB: undefined, gpuPcie: undefined, nvswitch: false, nvlinkLinks: 0 }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.rtx6000ada-x8-550.127.05-ecc-off.txt") }, exp);
    assert.equal(h.verdict, "failing");
    assert.deepEqual([...new Set(h.findings.map((f) => [f.component, f.evidence].join(" ")))], ["ecc ECC Mode Current : Disabled"]);
    assert.equal(h.findings.length, 8);
});

test("nvidia-smi -q of Azure's 8 GPUs with pages pending retirement on four (AzNHC's bad_nvsmi8) fails ecc on those four; the excerpt's cut is not checked", () => {
    const h = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.azure-8gpu-retired-pending-aznhc.txt") }, only(H100, ["gpu", "ecc", "clocks"]));
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => f.message), ["00000002", "00000004", "00000006", "00000008"].map((d) => `GPU ${d}:00:00.0 has pages waiting to be retired (reset the GPU)`));
    assert.equal(h.notChecked.length, 8);
});

test("nvidia-smi -q -d MEMORY,PERFORMANCE of an RTX PRO 6000 Blackwell host (580.105.06, vGPU driver) is not checked, never healthy", () => {
    const text = cap("nvidia-smi-q.rtxpro6000-580.105.06-d-memory-performance-cubecos312.txt");
    const r = parseNvidiaSmiQ(text);
    assert.deepEqual([r.driverVersion, r.attached, r.gpus.length, r.gpus[0].complete], ["580.105.06", 4, 1, false]);
    const exp = only({ ...H100, gpus: 4, gpuModel: "RTX", gpuMemoryGiB: undefined, gpuPcie: undefined, nvswitch: false }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": text }, exp);
    assert.deepEqual([h.verdict, h.findings.length, h.notChecked.length], ["incomplete", 0, 2]);
    assert.match(h.notChecked[0].reason, /holds 1 of the 4 attached GPUs/);
});
