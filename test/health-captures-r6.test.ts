/**
 * Round 6 of the capture hunt (test/fixtures/health/README.md, "Round 6"): dcgmi diag tables of DCGM 3.3 and 4.x that
 * other people published: 4.x's per-GPU rows and Metadata section, a PCIe test that broke inside the diagnostic
 * (DCGM_FR_INTERNAL) while every GPU passed, a run whose every GPU test was skipped, the plugin-folder error; and
 * `nvidia-smi nvlink -s` indented with two spaces. Each is graded the way `rdmakit health` reads a node: a node folder
 * holding the capture under the grader's file name, through gradeHealthDir, with only the components it answers required.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDcgmJson, parseDcgmText } from "../components/health/dcgm";
import { parseIbstat } from "../components/health/ibstat";
import { parseRdmaDevices } from "../components/health/rdma-devices";

const H100 = stack("examples/azure-h100.yaml");
const A100 = stack("examples/azure-h100.yaml", (c) => { c.azure.vmSize = "Standard_ND96amsr_A100_v4"; });
const P4DE = stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = "p4de.24xlarge"; });
const dcgm = (file: string, exp = H100) => grade({ "dcgmi-diag.txt": cap(file) }, only(exp, ["dcgm"]));

test("dcgmi diag of DCGM 4.4.2 on one GPU (NVIDIA/DCGM#124): Metadata rows skipped, each test's \"GPU0: Pass\" row read: healthy", () => {
    const r = parseDcgmText(cap("dcgmi-diag.4.4.2-one-gpu-pass-dcgm124.txt"));
    assert.deepEqual(r.tests.map((t) => [t.category, t.name, t.status]), [
        ["Deployment", "software", "pass"], ["Hardware", "memory", "pass"], ["Integration", "pcie", "pass"],
    ]);
    assert.deepEqual(summary(dcgm("dcgmi-diag.4.4.2-one-gpu-pass-dcgm124.txt")), { verdict: "healthy", findings: [], notChecked: [] });
});

test("a PCIe test that failed only by DCGM's internal error while every GPU passed (NVIDIA/DCGM#253, DCGM 4.2.3 and 4.4.1 under Slurm) is not checked, never failing (before: failing)", () => {
    const cases: Array<[string, string]> = [
        ["dcgmi-diag.4.2.3-pcie-internal-error-dcgm253.txt", "'A child process (152) exited with non-zero status 1'"],
        ["dcgmi-diag.4.4.1-b200-pcie-internal-error-slurm-dcgm253.txt", "'Output of child process (11167) couldn't be parsed"],
    ];
    for (const [file, said] of cases) {
        const pcie = parseDcgmText(cap(file)).tests.find((t) => t.name === "pcie");
        assert.equal(pcie?.status, "internal", file);
        const h = dcgm(file);
        assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["dcgm"] }, file);
        const reason = h.notChecked[0].reason;
        assert.ok(reason.startsWith(`DCGM test "pcie" did not complete: dcgmi reports an internal error of the diagnostic, not of a GPU (pcie: Fail; Warning: There was an internal error during the test: ${said}`), reason);
    }
    // the same table with one GPU named failing, or with a reason of the GPU's own beside the internal one, still fails
    const text = cap("dcgmi-diag.4.2.3-pcie-internal-error-dcgm253.txt");
    const gpuFail = text.replace("|                           | GPU2: Pass                                     |\n|                           | GPU3: Pass                                     |\n", "|                           | GPU2: Fail                                     |\n|                           | GPU3: Pass                                     |\n");
    assert.notEqual(gpuFail, text);
    assert.equal(grade({ "dcgmi-diag.txt": gpuFail }, only(H100, ["dcgm"])).verdict, "failing");
    const ownReason = text.replace("| Warning                   | There was an internal error during the test:   |\n|                           | 'A child process (152)", "| Warning                   | GPU 0 is running at PCI link generation 3, whi |\n|                           | 'A child process (152)");
    assert.notEqual(ownReason, text);
    assert.deepEqual(summary(grade({ "dcgmi-diag.txt": ownReason }, only(H100, ["dcgm"]))).findings, [["dcgm", "DCGM test \"pcie\" failed"]]);
    // the current dcgmi ties a warning to its entity in the name cell ("Warning: GPU0", dcgmi/Diag.cpp
    // HelperDisplayEntityResults) and names other entity groups ("CPU0: Fail", dcgm_fields.cpp): constructed from the
    // 4.4.1 capture by those two edits
    const b200 = cap("dcgmi-diag.4.4.1-b200-pcie-internal-error-slurm-dcgm253.txt");
    const tied = b200.replace("| Warning                   | There was", "| Warning: GPU0             | There was");
    assert.notEqual(tied, b200);
    assert.equal(parseDcgmText(tied).tests.find((t) => t.name === "pcie")?.status, "internal");
    const cpuFail = tied.replace("|                           | GPU7: Pass                                     |\n+---", "|                           | CPU0: Fail                                     |\n+---");
    assert.notEqual(cpuFail, tied);
    assert.equal(grade({ "dcgmi-diag.txt": cpuFail }, only(H100, ["dcgm"])).verdict, "failing");
});

test("dcgmi diag -j: a GPU result Fail whose warnings are all DCGM_FR_INTERNAL names that GPU failing, as the table's \"GPU0: Fail\" (test/health-review13.test.ts has the test_summary form); one with the GPU's own warning fails", () => {
    // constructed in memory in the DCGM 4.x -j shape (testing/python3/dcgm_diag_schema.json of NVIDIA/DCGM): one test,
    // one GPU, the warning text of NVIDIA/DCGM#253 joined
    const doc = (warning: string): string => JSON.stringify({ "DCGM Diagnostic": { test_categories: [{ category: "Integration", tests: [{ name: "pcie", results: [{ entity_group: "GPU", entity_group_id: 1, entity_id: 0, status: "Fail", warnings: [{ error_category: 0, error_id: 44, error_severity: 4, warning }] }], test_summary: { status: "Fail" } }] }] } });
    const internal = doc("There was an internal error during the test: 'A child process (152) exited with non-zero status 1' Check DCGM and system logs for errors. Reset GPU. Restart DCGM. Rerun diagnostics.");
    assert.equal(parseDcgmJson(internal).tests[0].status, "fail");
    assert.equal(grade({ "dcgmi-diag.json": internal }, only(H100, ["dcgm"])).verdict, "failing");
    assert.equal(parseDcgmJson(doc("GPU 0 is running at PCI link generation 3, which is below the minimum allowed link generation of 4")).tests[0].status, "fail");
});

test("dcgmi diag -r 3 of DCGM 3.3.9 on RTX PRO 6000 Blackwell, printed twice by srun (gnosia93/slurm-on-aws): every GPU test skipped is not checked (before: healthy)", () => {
    const r = parseDcgmText(cap("dcgmi-diag.3.3.9-rtxpro6000-skipped-twice-slurm-on-aws.txt"));
    assert.equal(r.tests.length, 30);
    assert.deepEqual([...new Set(r.tests.map((t) => `${t.category}:${t.status}`))], ["Deployment:pass", "Integration:skip", "Hardware:skip", "Stress:skip"]);
    const h = dcgm("dcgmi-diag.3.3.9-rtxpro6000-skipped-twice-slurm-on-aws.txt");
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["dcgm"] });
    assert.equal(h.notChecked[0].reason, "dcgmi-diag.txt: every GPU test was skipped (PCIe, GPU Memory, Targeted Stress, Targeted Power, Memory Bandwidth, EUD Test); only the Deployment checks ran");
});

test("dcgmi diag -r 2 of DCGM 3.3.3 on a p4de (aws-samples efa-cheatsheet): an empty Stress section, PCIe and GPU Memory Pass - All: healthy", () => {
    const r = parseDcgmText(cap("dcgmi-diag.3.3.3-p4de-nvlinks-expected-empty-stress-efa-cheatsheet.txt"));
    assert.deepEqual(r.tests.filter((t) => t.category !== "Deployment").map((t) => [t.category, t.name, t.status]), [
        ["Integration", "PCIe", "pass"], ["Hardware", "GPU Memory", "pass"],
    ]);
    assert.deepEqual(summary(dcgm("dcgmi-diag.3.3.3-p4de-nvlinks-expected-empty-stress-efa-cheatsheet.txt", P4DE)), { verdict: "healthy", findings: [], notChecked: [] });
    // one test skipped among ones that ran: healthy, and the skip is said
    const text = cap("dcgmi-diag.3.3.3-p4de-nvlinks-expected-empty-stress-efa-cheatsheet.txt").replace("| GPU Memory                | Pass - All ", "| GPU Memory                | Skip - All ");
    const h = grade({ "dcgmi-diag.txt": text }, only(P4DE, ["dcgm"]));
    assert.equal(h.verdict, "healthy");
    assert.ok(h.notes.includes("DCGM test \"GPU Memory\" was skipped (not run)"), h.notes.join("\n"));
});

test("dcgmi diag of DCGM 4.4.1 that could not load its plugins (NVIDIA/DCGM#254): not checked, naming dcgmi's error", () => {
    const h = dcgm("dcgmi-diag.4.4.1-plugin-dir-error-dcgm254.txt");
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["dcgm"] });
    assert.equal(h.notChecked[0].reason, "dcgmi did not run the diagnostic: Error: Unable to complete diagnostic for entities 0,1,2,3. Return: (-30) : DCGM GPU Diagnostic returned an error");
});

test("nvidia-smi nvlink -s of GPU 0 of a p4de, indented with two spaces (aws-samples efa-cheatsheet): 12 links at 25 GB/s pass on a one-GPU A100 stack", () => {
    const one = only({ ...P4DE, gpus: 1 }, ["nvlink"]);
    const h = grade({ "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.a100-gpu0-s-two-space-efa-cheatsheet.txt") }, one);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    // on the whole p4de (8 GPUs) the one GPU listed is not the board
    assert.equal(grade({ "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.a100-gpu0-s-two-space-efa-cheatsheet.txt") }, only(P4DE, ["nvlink"])).verdict, "failing");
});

test("ibstat of a ConnectX-4 without a \"CA type:\" line, EDR port Initializing (no subnet manager), and its ls -l /sys/class/infiniband (jgh-10050/mesa-mofed-utils): the port fails nic", () => {
    const ib = parseIbstat(cap("ibstat.cx4-edr-initializing-no-ca-type-mesa.txt"));
    assert.deepEqual(ib.cas.map((c) => [c.name, c.type, c.ports.map((p) => [p.state, p.physicalState, p.rate, p.linkLayer])]), [
        ["mlx5_0", undefined, [["Initializing", "LinkUp", 100, "InfiniBand"]]],
    ]);
    assert.equal(ib.cut, undefined);
    const rdma = parseRdmaDevices(cap("rdma-devices.cx4-one-ls-l-mesa.txt"));
    assert.deepEqual([...rdma.devices], [["mlx5_0", "0000:04:00.0"]]);
    const h = grade({ "ibstat.txt": cap("ibstat.cx4-edr-initializing-no-ca-type-mesa.txt"), "rdma-devices.txt": cap("rdma-devices.cx4-one-ls-l-mesa.txt") }, only(A100, ["nic"]));
    assert.equal(h.verdict, "failing");
    assert.deepEqual(h.findings.map((f) => [f.message, f.evidence]), [
        ["1 InfiniBand RDMA device(s), expected 8", undefined],
        ["mlx5_0 port 1 is Initializing, expected Active", "mlx5_0 port 1: State: Initializing"],
    ]);
});
