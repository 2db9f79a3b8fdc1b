/**
 * A GPU the driver refuses as unsupported (NVIDIA/open-gpu-kernel-modules@df1c9a3d osapi.c rm_is_supported_device,
 * nv-pci.c "ignoring the legacy GPU"): the "nvidia: probe of ... failed" line after it is that refusal, not a GPU
 * fallen off the bus. Captures from other people's machines (test/fixtures/health/README.md): a planned GPU refused
 * fails the node naming the driver's reason; a refused extra card beside every planned GPU is a note.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, stack } from "./fixtures/health/stacks";
import { gradeNode } from "../components/health/grade";
import { parseDmesg } from "../components/health/dmesg";
import type { Component, HealthExpectation } from "../components/health/types";

const only = (exp: HealthExpectation, require: Component[]): HealthExpectation => ({ ...exp, require });
const H100 = only(stack("examples/azure-h100.yaml"), ["xid", "gpu"]);
const G5 = only(stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "g5.8xlarge"; c.aws.allowNoGpuDirect = true; }), ["xid", "gpu"]);
const findings = (files: Record<string, string>, exp: HealthExpectation) => gradeNode("n", files, exp).findings.map((f) => [f.component, f.message, f.evidence]);

test("an H100 the open module refuses (no GSP firmware) fails on gpu with the driver's reason, not as a GPU fallen off the bus", () => {
    const log = cap("dmesg.h100-535-open-no-gsp-refused-ogkm587.txt");
    const r = parseDmesg(log);
    assert.deepEqual(r.refused.map((x) => [x.pci, x.pciId, x.reason]), [["0000:01:00.0", "10de:2331", "not supported by open nvidia.ko"]]);
    assert.deepEqual(findings({ "dmesg.txt": log }, H100), [[
        "gpu", "GPU 0000:01:00.0 (PCI ID 10de:2331) refused by the driver: not supported by open nvidia.ko, 0 min before the log's last line (window 120 min)",
        "[  160.877997] NVRM: The NVIDIA GPU 0000:01:00.0 (PCI ID: 10de:2331)",
    ]]);
});

test("an A10G on g5 refused by a driver release that predates it fails on gpu naming the release", () => {
    const h = gradeNode("n", { "dmesg.txt": cap("dmesg.a10g-515-refused-pytorch88352.txt") }, G5);
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => [f.component, f.persistence]), [["gpu", "transient"]]);
    assert.match(h.findings[0].message, /^GPU 0000:00:1e\.0 \(PCI ID 10de:2237\) refused by the driver: not supported by the NVIDIA 515\.57 driver release/);
});

test("the refusal read in the -H form after its probe failure, and in the one-line-per-row form of 2011's 280.13 driver", () => {
    const delta = cap("dmesg.rtx3050ti-520-refused-delta-ogkm393.txt");
    assert.deepEqual(parseDmesg(delta).refused.map((x) => [x.pci, x.reason]), [["0000:01:00.0", "not supported by the NVIDIA 520.56.06 driver release"]]);
    assert.deepEqual(findings({ "dmesg.txt": delta }, H100).map(([c, m]) => [c, m]), [
        ["gpu", "GPU 0000:01:00.0 (PCI ID 10de:25a0) refused by the driver: not supported by the NVIDIA 520.56.06 driver release (the line has no time: cannot show it is old)"],
    ]);
    const old = cap("dmesg.ion-280-refused-ironhide141.txt");
    assert.deepEqual(parseDmesg(old).refused.map((x) => [x.pci, x.pciId, x.reason]), [["0000:04:00.0", "10de:0a76", "not supported by the 280.13 NVIDIA Linux"]]);
    assert.deepEqual(findings({ "dmesg.txt": old }, H100).map(([c]) => c), ["gpu"]);
});

test("a refused extra card beside every GPU the node should have is a note; the node stays healthy", () => {
    const exp = only({ ...stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p5e.48xlarge"; }), gpus: 1 }, ["xid", "gpu"]);
    const h = gradeNode("n", { "dmesg.txt": cap("dmesg.ion-280-refused-ironhide141.txt"), "nvidia-smi-q.txt": cap("nvidia-smi-q.h200-550.90.12.txt") }, exp);
    assert.equal(h.verdict, "healthy");
    assert.ok(h.notes.some((n) => /^GPU 0000:04:00\.0 \(PCI ID 10de:0a76\) refused by the driver: .*so it is another card$/.test(n)), h.notes.join("\n"));
});

test("a legacy GPU the driver ignores (constructed from nv-pci.c's message), and a refusal cut before its reason", () => {
    const legacy = "[    4.166440] NVRM: ignoring the legacy GPU 0000:07:00.0\n[    4.166456] nvidia: probe of 0000:07:00.0 failed with error -1\n";
    assert.deepEqual(parseDmesg(legacy).refused.map((x) => [x.pci, x.reason]), [["0000:07:00.0", "a legacy GPU this driver does not support"]]);
    assert.deepEqual(findings({ "dmesg.txt": legacy }, H100).map(([c, m]) => [c, m]), [["gpu", "GPU 0000:07:00.0 refused by the driver: a legacy GPU this driver does not support, 0 min before the log's last line (window 120 min)"]]);
    // the message cut after its first line says no reason: the probe failure stays a GPU lost
    const cut = cap("dmesg.h100-535-open-no-gsp-refused-ogkm587.txt").split("\n").filter((l, i) => i < 4 || l.startsWith("[")).join("\n");
    assert.deepEqual(parseDmesg(cut).refused, []);
    assert.match(String(findings({ "dmesg.txt": cut }, H100)[0][1]), /^GPU 0000:01:00\.0 lost by the driver/);
});
