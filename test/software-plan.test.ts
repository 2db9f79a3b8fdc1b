import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify } from "yaml";
import { AWS_INSTANCE_TYPES } from "../components/catalog/aws";
import { AZURE_VM_SIZES } from "../components/catalog/azure";
import { gpuModel } from "../components/catalog/gpus";
import { NCCL_BUILDS } from "../components/catalog/software";
import { planCluster } from "../components/plan";
import { compareVersions, ncclPairIssue, planSoftware, SoftwareRow } from "../components/plan/software";
import { ClusterSpec, parseClusterSpec } from "../components/spec";
import { SpecError } from "../components/errors";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

/*
 * The software profile per image (components/plan/software.ts): what each image is expected to carry, and the
 * reuse / install / refuse rule against what the hardware needs and what the user pinned.
 */

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5Zm9ycmRtYWtpdHRlc3RzMDEyMzQ1Njc4OQ rdmakit-test";
const ROOT = join(__dirname, "..");

function aws(instanceType: string, extra: Record<string, unknown> = {}, software?: Record<string, unknown>): ClusterSpec {
    return parseClusterSpec({
        name: "t", fabric: "aws-efa", nodes: 2, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-1", availabilityZone: "us-east-1a", instanceType, allowNoGpuDirect: true, ...extra },
        ...(software ? { software } : {}),
    });
}
function azure(vmSize: string, extra: Record<string, unknown> = {}, software?: Record<string, unknown>): ClusterSpec {
    return parseClusterSpec({
        name: "t", fabric: "azure-ib", nodes: 2, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        azure: { location: "eastus", vmSize, ...extra }, ...(software ? { software } : {}),
    });
}
const rowsOf = (spec: ClusterSpec) => Object.fromEntries(planSoftware(spec).rows.map((r) => [r.component, r])) as Record<string, SoftwareRow>;
function issuesOf(f: () => unknown): string[] {
    try {
        f();
    } catch (e) {
        if (e instanceof SpecError) return e.issues.map((i) => `${i.path}: ${i.message} (got ${JSON.stringify(i.value)}); allowed: ${i.allowed}`);
        throw e;
    }
    assert.fail("expected a SpecError");
}

test("every instance type and NCCL VM size in the catalog plans with no software pins, and nothing is refused", () => {
    for (const t of AWS_INSTANCE_TYPES) {
        const spec = aws(t.name);
        const rows = planSoftware(spec).rows;
        assert.deepEqual(rows.filter((r) => r.decision === "refuse"), [], t.name);
        // the DLAMI's stack is reused: its driver, CUDA, NCCL, EFA installer and plugin
        for (const c of ["driver", "cuda", "nccl", "efa", "awsOfiNccl"]) assert.equal(rows.find((r) => r.component === c)?.decision, "reuse", `${t.name} ${c}`);
    }
    for (const s of AZURE_VM_SIZES.filter((z) => z.gpu && gpuModel(z.gpu.model)?.collectives === "nccl")) {
        const rows = planSoftware(azure(s.name)).rows;
        assert.deepEqual(rows.filter((r) => r.decision === "refuse"), [], s.name);
        for (const c of ["ofed", "driver", "cuda", "nccl"]) assert.equal(rows.find((r) => r.component === c)?.decision, "reuse", `${s.name} ${c}`);
    }
});

test("p6-b300 on the DLAMI reuses its 595 driver, CUDA 13.2 and EFA 1.50.0, which meet the floors", () => {
    const r = rowsOf(aws("p6-b300.48xlarge"));
    assert.equal(r.driver.version, "595.91.07");
    assert.equal(r.cuda.version, "13.2");
    assert.equal(r.efa.version, "1.50.0");
    assert.equal(r.fabricManager.decision, "reuse");
    assert.equal(r.nvlsm.decision, "install");
    const v = planCluster(aws("p6-b300.48xlarge")).ansibleVars;
    assert.equal(v.nccl_cuda_min_version, "13.0");
    assert.equal(v.efa_min_version, "1.47.0");
    assert.equal(v.nvidia_driver_min_branch, "580");
    assert.equal(v.nccl_tests_commit, "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432");
});

test("a CUDA the DLAMI also ships can be pinned and is reused", () => {
    const r = rowsOf(aws("p5.48xlarge", {}, { cudaVersion: "13.0" }));
    assert.equal(r.cuda.decision, "reuse");
    assert.equal(r.cuda.version, "13.0");
    assert.equal(planCluster(aws("p5.48xlarge", {}, { cudaVersion: "13.0" })).ansibleVars.nccl_cuda_version, "13.0");
});

test("an own AMI installs everything, with the NCCL build for the CUDA it installs", () => {
    const spec = aws("p6-b200.48xlarge", { ami: "ami-0123456789abcdef0" });
    const r = rowsOf(spec);
    for (const c of ["driver", "cuda", "nccl", "efa", "fabricManager"]) assert.equal(r[c].decision, "install", c);
    assert.equal(r.nccl.version, "2.28.9-1+cuda13.0");
    assert.equal(r.driver.version, "580.126.16");
    assert.equal(r.fabricManager.version, "580.126.16", "Fabric Manager is pinned to the driver");
    assert.equal(planSoftware(spec).image.known, false);
    // the NCCL picked for a pinned CUDA is a build that exists for it
    assert.equal(rowsOf(aws("p5.48xlarge", { ami: "ami-0123456789abcdef0" }, { cudaVersion: "12.9" })).nccl.version, "2.28.7-1+cuda12.9");
});

test("NCCL/CUDA pairs that cannot exist are refused with the pairs that do", () => {
    const issue = ncclPairIssue("2.23.4-1", "13.0");
    assert.ok(issue);
    assert.match(issue.message, /NCCL 2\.23\.4-1 predates CUDA 13\.0/);
    assert.equal(issue.allowed, NCCL_BUILDS.filter((b) => b.cuda === "13.0").map((b) => `${b.nccl}+cuda13.0`).join(", "));
    // every build the catalog lists is allowed by the rule
    for (const b of NCCL_BUILDS) assert.equal(ncclPairIssue(b.nccl, b.cuda), undefined, `${b.nccl}+cuda${b.cuda}`);
    assert.deepEqual(issuesOf(() => aws("p5.48xlarge", { ami: "ami-0123456789abcdef0" }, { cudaVersion: "13.0", ncclVersion: "2.23.4-1" })),
        ["cluster.software.ncclVersion: cannot exist: NCCL 2.23.4-1 predates CUDA 13.0 (the oldest NCCL built for CUDA 13.0 is 2.27.7-1) " +
            '(got "2.23.4-1+cuda13.0"); allowed: 2.28.9-1+cuda13.0']);
});

test("ubuntu-hpc: pinned to an exact release, its stack reused; no downgrade, no sideways driver, replace is explicit", () => {
    const plan = planCluster(azure("Standard_ND96isr_H100_v5"));
    assert.equal(plan.azure?.image.version, "22.04.2026072901");
    const r = rowsOf(azure("Standard_ND96isr_H100_v5"));
    assert.deepEqual([r.ofed.version, r.driver.version, r.fabricManager.version, r.cuda.version, r.nccl.version], ["3.2.1", "580.126.16", "580.126.16", "13.0", "2.30.4-1"]);
    assert.equal(plan.ansibleVars.ofed_replace, false);
    // a newer DOCA of the same OFED base (3.2.3 is 25.10 like 3.2.1) is not a conflict on 24.04
    assert.equal(rowsOf(azure("Standard_ND96isr_H100_v5", { image: { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2404", version: "24.04.2026072901" } })).ofed.version, "3.2.3");
    assert.match(issuesOf(() => azure("Standard_ND96isr_H100_v5", {}, { ncclVersion: "2.23.4-1" }))[0], /conflicts with the 2\.30\.4-1 .* never downgrades/);
    assert.match(issuesOf(() => azure("Standard_ND96isr_H100_v5", {}, { driverBranch: "570", replace: ["driver"] }))[0], /replacing never downgrades/);
    const up = rowsOf(azure("Standard_ND96isr_H100_v5", {}, { driverVersion: "595.58.03", replace: ["driver"] }));
    assert.equal(up.driver.decision, "install");
    assert.equal(up.fabricManager.version, "595.58.03");
    const v = planCluster(azure("Standard_ND96isr_H100_v5", {}, { driverVersion: "595.58.03", replace: ["driver"] })).ansibleVars;
    assert.deepEqual([v.nvidia_driver_branch, v.nvidia_driver_version, v.nvidia_driver_replace], ["595", "595.58.03", true]);
});

test("the image's nccl-tests are reused (ubuntu-hpc with its HPC-X, the DLAMI per CUDA); replace ncclTests builds the kit's", () => {
    const hpc = rowsOf(azure("Standard_ND96isr_H100_v5"));
    assert.deepEqual([hpc.ncclTests.decision, hpc.ncclTests.version], ["reuse", "the image's build (/opt/nccl-tests)"]);
    assert.deepEqual([hpc.mpi.decision, hpc.mpi.version], ["reuse", "HPC-X 2.25.1"]);
    const dl = rowsOf(aws("p5.48xlarge"));
    assert.deepEqual([dl.ncclTests.decision, dl.ncclTests.version], ["reuse", "the image's build (/usr/local/cuda-X.Y/efa/test-cuda-X.Y)"]);
    const plan = planCluster(azure("Standard_ND96isr_H100_v5"));
    assert.equal(plan.ansibleVars.nccl_tests_reuse_image, true);
    // validation launches whichever MPI the nccl_tests role linked the binaries' MPI to
    assert.equal(plan.validation.mpiHome, plan.ansibleVars.nccl_tests_mpi_link);
    const own = rowsOf(azure("Standard_ND96isr_H100_v5", {}, { replace: ["ncclTests"] }));
    assert.deepEqual([own.ncclTests.decision, own.ncclTests.version], ["install", "2.19.6 @a0b82b2260cf"]);
    assert.deepEqual([own.mpi.decision, own.mpi.version], ["install", "distro Open MPI"]);
    assert.equal(planCluster(azure("Standard_ND96isr_H100_v5", {}, { replace: ["ncclTests"] })).ansibleVars.nccl_tests_reuse_image, false);
});

test("software.replace refuses the components it has nothing of its own to replace, naming what to list instead", () => {
    const got = issuesOf(() => azure("Standard_ND96isr_H100_v5", {}, { replace: ["driver", "fabricManager", "mpi"] }));
    const allowed = "allowed: ofed, driver, efa, cuda, nccl, ncclTests";
    assert.deepEqual(got, [
        `cluster.software.replace[1]: cannot be replaced: Fabric Manager always equals the driver: replace "driver" to move both (got "fabricManager"); ${allowed}`,
        `cluster.software.replace[2]: cannot be replaced: the image's MPI is never replaced; replace "ncclTests" to build nccl-tests against the kit's MPI (got "mpi"); ${allowed}`,
    ]);
    assert.match(issuesOf(() => aws("p5.48xlarge", {}, { replace: ["awsOfiNccl"] }))[0], /replace\[0\]: cannot be replaced: aws-ofi-nccl comes with the EFA installer: replace "efa"/);
    assert.match(issuesOf(() => aws("p6-b200.48xlarge", {}, { replace: ["nvlsm"] }))[0], /NVLSM is installed where absent and never replaced/);
    // each replaceable one reaches the roles as a variable that changes what they do
    const v = planCluster(azure("Standard_ND96isr_H100_v5", {}, {
        replace: ["ofed", "driver", "cuda", "nccl", "ncclTests"], driverVersion: "595.58.03", cudaVersion: "13.3", ncclVersion: "2.30.7-1",
    })).ansibleVars;
    assert.deepEqual([v.ofed_replace, v.nvidia_driver_replace, v.nccl_cuda_replace, v.nccl_replace, v.nccl_tests_reuse_image], [true, true, true, true, false]);
    assert.equal(planCluster(aws("p5.48xlarge", {}, { replace: ["efa"] })).ansibleVars.efa_replace, true);
});

test("a plain Ubuntu image on Azure installs everything", () => {
    const spec = azure("Standard_ND96isr_H100_v5", { image: { publisher: "Canonical", offer: "0001-com-ubuntu-server-jammy", sku: "22_04-lts-gen2", version: "latest" } });
    const r = rowsOf(spec);
    for (const c of ["ofed", "driver", "fabricManager", "cuda", "nccl", "mpi", "ncclTests"]) assert.equal(r[c].decision, "install", c);
    assert.equal(r.ofed.imageHas, "none");
});

test("compareVersions orders dotted versions numerically with the package revision last", () => {
    assert.ok(compareVersions("2.28.9-1", "2.28.10-1") < 0);
    assert.ok(compareVersions("1.50.0", "1.47.0") > 0);
    assert.equal(compareVersions("13.0", "13.0"), 0);
    assert.ok(compareVersions("2.30.4-2", "2.30.4-1") > 0);
});

function planCli(config: string, out: string) {
    return spawnSync(process.execPath, [...TS_NODE_ARGS, join(ROOT, "bin", "rdmakit.ts"), "plan", "--config", config, "--out", out], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
}

test("rdmakit plan on p6-b200 and p6-b300 with no pins exits 0 and prints the software table", () => {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-sw-"));
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    for (const type of ["p6-b200.48xlarge", "p6-b300.48xlarge"]) {
        doc.config["rdmakit:cluster"].aws.instanceType = type;
        const file = join(dir, `${type}.yaml`);
        writeFileSync(file, stringify(doc));
        const r = planCli(file, join(dir, type));
        assert.equal(r.status, 0, r.stderr + r.stdout);
        assert.match(r.stdout, /software on AWS Deep Learning Base OSS Nvidia Driver GPU AMI \(Ubuntu 22\.04\)/);
        assert.match(r.stdout, /component\s+image has\s+decision\s+version/);
        assert.match(r.stdout, /NVIDIA driver\s+595\.91\.07 \(inferred\)\s+reuse\s+595\.91\.07/);
        assert.match(r.stdout, /NVLSM\s+.*install/);
    }
});

test("the proprietary kernel modules are refused on Blackwell before anything is created, with the field and what is allowed", () => {
    // source: NVIDIA, "NVIDIA Transitions Fully Towards Open-Source GPU Kernel Modules" (Blackwell: open modules only)
    const got = issuesOf(() => aws("p6-b200.48xlarge", {}, { openKernelModules: false, gpudirect: "peermem" }));
    assert.deepEqual(got.filter((i) => i.startsWith("cluster.software.openKernelModules")), [
        "cluster.software.openKernelModules: B200 (Blackwell) is supported only with NVIDIA's open kernel modules; the proprietary modules do not run it (got false); allowed: true (the default), or leave it out",
    ]);
    // Hopper keeps the choice
    assert.equal(planSoftware(aws("p5.48xlarge", {}, { openKernelModules: false, gpudirect: "peermem" })).rows.find((r) => r.component === "driver")?.decision, "reuse");
});

test("bare metal: 8 HGX GPUs a host get Fabric Manager and an NVSwitch expectation; 8 PCIe or NVL cards (bridged, no NVSwitch) get neither", () => {
    const doc = parseYaml(readFileSync(join(ROOT, "examples/roce-h100.yaml"), "utf8"));
    const withModel = (model: string) => {
        const c = structuredClone(doc.config["rdmakit:cluster"]);
        for (const h of c.roce.hosts) h.gpu = { model, count: 8 };
        return planCluster(parseClusterSpec(c));
    };
    for (const model of ["H100", "H200", "A100", "B200"]) {
        const plan = withModel(model);
        assert.equal(plan.nodes.nvswitch, true, model);
        assert.equal(plan.ansibleVars.nvidia_driver_fabric_manager, true, model);
    }
    for (const model of ["H100-NVL", "H100NVL", "H200-NVL", "H100-PCIe", "A100-PCIE-80GB"]) {
        const plan = withModel(model);
        assert.equal(plan.nodes.nvswitch, false, model);
        assert.equal(plan.ansibleVars.nvidia_driver_fabric_manager, false, model);
    }
});
