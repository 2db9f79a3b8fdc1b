/**
 * Round 3 of the capture hunt (test/fixtures/health/README.md, "Round 3"): kinds the earlier rounds lacked. The NVLink
 * fabric's own verdicts as R535-R580 print them in nvidia-smi -q (Unhealthy, Insufficient Resources, In Progress), an
 * H100 NVSwitch board's and a GB200's `nvidia-smi nvlink -s`, and fi_info run through mpirun. Each excerpt is graded as
 * published (a grep or a pasted fragment is no whole capture and is refused), then, where it is one section of a whole
 * capture, set into a whole one in memory, so the verdict a user would see on their node is asserted.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, stack } from "./fixtures/health/stacks";
import { gradeNode } from "../components/health/grade";
import { parseFiInfo } from "../components/health/ibstat";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";
import { parseNvlinkStatus } from "../components/health/nvlink";
import type { Component, HealthExpectation, NodeHealth } from "../components/health/types";

const P5 = stack("examples/aws-p5.yaml");
const only = (exp: HealthExpectation, require: Component[]): HealthExpectation => ({ ...exp, require });
const summary = (h: NodeHealth) => ({ verdict: h.verdict, findings: h.findings.map((f) => [f.component, f.message, f.evidence]), notChecked: h.notChecked.map((n) => n.component) });
const WHOLE = "nvidia-smi-q.h100-565.57.01.txt";

/**
 * The whole 8x H100 capture with GPU 00000000:18:00.0's Fabric section (from its "    Fabric" line to the next line at
 * the GPU's own indent) replaced by `block`; every other GPU keeps its own Completed / Success.
 */
function withFabric(block: string): string {
    const whole = cap(WHOLE);
    const start = whole.indexOf("    Fabric\n");
    const end = whole.indexOf("\n    Processes", start);
    assert.ok(start > 0 && end > start, "the whole capture has a Fabric section before Processes");
    return whole.slice(0, start) + block.replace(/\n?$/, "") + whole.slice(end);
}

test("the healthy H100 capture reads Fabric Completed / Success with CliqueId 0 and a zero ClusterUUID: the kit grades State and Status only", () => {
    // Azure/azhpc-images#506 also fails CliqueId 0; on this healthy HGX H100 (no multi-node NVLink) every GPU shows it
    const smi = parseNvidiaSmiQ(cap(WHOLE));
    assert.equal(smi.gpus.filter((g) => g.fabric?.state === "Completed" && g.fabric.status === "Success").length, 8);
    assert.equal((cap(WHOLE).match(/CliqueId\s+: 0\n\s+ClusterUUID\s+: 00000000-0000-0000-0000-000000000000/g) ?? []).length, 8);
    assert.deepEqual(summary(gradeNode("n", { "nvidia-smi-q.txt": cap(WHOLE) }, only(P5, ["gpu"]))).findings, []);
});

test("Fabric Health Summary Unhealthy (kubernetes-sigs/dra-driver-nvidia-gpu#626): the grep excerpt is refused; in a whole capture it fails nvlink on that GPU", () => {
    const excerpt = cap("nvidia-smi-q.fabric-unhealthy-grep-dra626.txt");
    const alone = gradeNode("n", { "nvidia-smi-q.txt": excerpt }, only(P5, ["gpu"]));
    assert.equal(alone.verdict, "unreadable");
    assert.match(alone.unreadable[0].reason, /is not nvidia-smi -q output/);
    // the grep separator "--" is grep's, not nvidia-smi's: left out where the section is set into a whole capture
    const h = gradeNode("n", { "nvidia-smi-q.txt": withFabric(excerpt.replace(/--\n$/, "")) }, only(P5, ["gpu"]));
    assert.deepEqual(summary(h), {
        verdict: "failing",
        findings: [["nvlink", "GPU 00000000:18:00.0: the NVLink fabric reports it unhealthy", "Fabric Health Summary : Unhealthy"]],
        notChecked: [],
    });
    // "Bandwidth : Full" beside it is no finding of its own; the same section with Healthy passes
    const healthy = withFabric(excerpt.replace(/--\n$/, "").replace("Unhealthy", "Healthy"));
    assert.deepEqual(summary(gradeNode("n", { "nvidia-smi-q.txt": healthy }, only(P5, ["gpu"]))).findings, []);
});

test("Fabric Status Insufficient Resources (Azure/azhpc-images#506) fails nvlink; State In Progress on driver 580 (NVIDIA/gpu-operator#2511) fails nvlink", () => {
    const insufficient = cap("nvidia-smi-q.fabric-insufficient-resources-azhpc506.txt");
    assert.equal(gradeNode("n", { "nvidia-smi-q.txt": insufficient }, only(P5, ["gpu"])).verdict, "unreadable");
    // the PR's excerpt starts at column 0; inside a GPU section the same lines sit four spaces in
    const set = withFabric(insufficient.replace(/^/gm, "    ").replace(/ +$/, ""));
    assert.deepEqual(summary(gradeNode("n", { "nvidia-smi-q.txt": set }, only(P5, ["gpu"]))).findings, [[
        "nvlink", "GPU 00000000:18:00.0 has not joined the NVLink fabric (Fabric Manager)",
        "Fabric State : Completed, Status : Insufficient Resources, CliqueId : 0, ClusterUUID : 00000000-0000-0000-0000-000000000000",
    ]]);
    // R580's wider key column and its seven Health fields, all N/A while the GPU waits for the fabric
    const progress = cap("nvidia-smi-q.580-fabric-in-progress-gpuop2511.txt");
    assert.equal(gradeNode("n", { "nvidia-smi-q.txt": progress }, only(P5, ["gpu"])).verdict, "unreadable");
    const h = gradeNode("n", { "nvidia-smi-q.txt": withFabric(progress) }, only(P5, ["gpu"]));
    assert.deepEqual(h.findings.map((f) => [f.component, f.message]), [["nvlink", "GPU 00000000:18:00.0 has not joined the NVLink fabric (Fabric Manager)"]]);
    assert.match(h.findings[0].evidence ?? "", /^Fabric State : In Progress, Status : N\/A/);
    // a board without NVSwitch (an L40S stack) does not grade the fabric
    const pcie = only({ ...P5, nvswitch: false }, ["gpu"]);
    assert.ok(!gradeNode("n", { "nvidia-smi-q.txt": withFabric(progress) }, pcie).findings.some((f) => f.component === "nvlink"));
});

test("nvidia-smi nvlink --status of two H100s (bottlerocket-os/bottlerocket#4418): 18 links at 26.562 GB/s each, healthy on two GPUs, short of eight", () => {
    const text = cap("nvidia-smi-nvlink.h100x2-bottlerocket4418.txt");
    const r = parseNvlinkStatus(text);
    assert.deepEqual(r.gpus.map((g) => [g.index, g.links.length, new Set(g.links.map((l) => l.gbps)).size]), [[0, 18, 1], [1, 18, 1]]);
    assert.deepEqual(summary(gradeNode("n", { "nvidia-smi-nvlink.txt": text }, only({ ...P5, gpus: 2 }, ["nvlink"]))), { verdict: "healthy", findings: [], notChecked: [] });
    // the file lists two of the p5's eight GPUs: named, never passed
    assert.deepEqual(gradeNode("n", { "nvidia-smi-nvlink.txt": text }, only(P5, ["nvlink"])).findings.map((f) => f.message), ["NVLink status for 2 GPU(s), expected 8 on an NVSwitch board"]);
});

test("nvidia-smi nvlink -s of a GB200 (NVIDIA/k8s-test-infra#371, 53.125 GB/s links) with the poster's \"...\" is refused, never read as links down", () => {
    const text = cap("nvidia-smi-nvlink.gb200-elided-k8s-test-infra371.txt");
    const h = gradeNode("n", { "nvidia-smi-nvlink.txt": text }, only(P5, ["nvlink"]));
    assert.equal(h.verdict, "unreadable");
    assert.match(h.unreadable[0].reason, /^line "\.\.\." is not nvidia-smi nvlink --status output/);
    // the lines before the elision read as GB200 links at 53.125 GB/s, the NVLink5 per-link rate
    const before = text.slice(0, text.indexOf("..."));
    assert.deepEqual(parseNvlinkStatus(before).gpus.map((g) => [g.line.slice(0, 19), g.links.length, g.links[0].gbps]), [["GPU 0: NVIDIA GB200", 18, 53.125], ["GPU 1: NVIDIA GB200", 2, 53.125]]);
});

test("fi_info through mpirun --tag-output (two EKS pods' outputs, aws-ia/terraform-aws-eks-blueprints) is refused by name, not counted as one node's devices", () => {
    const text = cap("fi_info.eks-g5-mpirun-tagged-2node.txt");
    assert.throws(() => parseFiInfo(text), /fi_info run through mpirun \("\[job,rank\]<stdout>:" tags\)/);
    const exp = only(stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p4d.24xlarge"; }), ["nic"]);
    const h = gradeNode("n", { "fi_info.txt": text }, exp);
    assert.deepEqual([h.verdict, h.findings.length], ["unreadable", 0]);
    // the same lines without the launcher's tags and ssh's warnings are one node's fi_info: one device, rdmap197s0
    const one = text.split("\n").filter((l) => l.includes("[1,0]<stdout>:")).map((l) => l.replace(/^\s*\[1,0\]<stdout>:/, "")).join("\n");
    assert.deepEqual(parseFiInfo(one).devices, ["rdmap197s0"]);
});
