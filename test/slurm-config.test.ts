// Slurm decisions and files (issue 32): the scheduler spec block, the plan, the RoCE and EC2 topology derivations,
// and Debian 12's real slurmctld loading the rendered files (test/slurm/slurmctld-load.sh; .ci/run installs
// slurmctld, slurmd, munge, libpmix2). Bound: the slurmctld runs take ~2-3 s each, 8 runs; the file stays under 60 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { SpecError } from "../components/errors";
import { planCluster, type FabricPlan } from "../components/plan";
import { roceTopology } from "../components/slurm/topology";
import { defCpuPerGpu, ec2Tree, slurmFiles } from "../components/slurm/render";
import { parseEc2TopologyResponse } from "../components/slurm/ec2-topology";
import { compressHostlist, pairedRanges } from "../components/slurm/hostlist";
import { runSlurmConfig } from "../components/slurm/cli";
import { formatSchedulerSection } from "../components/slurm/summary";
import { scaledStack } from "../bench/scale";

const ROOT = path.resolve(__dirname, "..");
const example = (name: string) => (parse(fs.readFileSync(path.join(ROOT, "examples", `${name}.yaml`), "utf8")) as { config: Record<string, any> }).config["rdmakit:cluster"];

function issuesOf(raw: unknown): string[] {
    try {
        parseClusterSpec(raw);
    } catch (e) {
        if (e instanceof SpecError) return e.issues.map((i) => `${i.path}|${i.message}|${i.allowed ?? ""}`);
        throw e;
    }
    return [];
}

test("scheduler defaults: slurm on the clouds, none on roce without a controller, slurm with one", () => {
    assert.equal(parseClusterSpec(example("aws-p5")).scheduler.type, "slurm");
    assert.equal(parseClusterSpec(example("azure-h100")).scheduler.type, "slurm");
    assert.equal(parseClusterSpec(example("aws-p5")).scheduler.homeNfs, true);
    const roce = example("roce-h100");
    const bare = parseClusterSpec({ ...roce, scheduler: undefined });
    assert.deepEqual(bare.scheduler, { type: "none", partition: "gpu", homeNfs: false });
    assert.equal(parseClusterSpec(roce).scheduler.type, "slurm");
});

test("head-node decisions: instance type default and the ports opened only between head and nodes", () => {
    const aws = planCluster(parseClusterSpec(example("aws-p5"))).scheduler;
    assert.equal(aws.type, "slurm");
    if (aws.type !== "slurm") return;
    assert.equal(aws.controller.instanceType, "m7i.2xlarge");
    assert.deepEqual(aws.ports.map((p) => `${p.from}-${p.to}`), ["6817-6817", "6818-6818", "60001-63000", "2049-2049"]);
    const roce = planCluster(parseClusterSpec(example("roce-h100"))).scheduler;
    assert.ok(roce.type === "slurm" && !roce.ports.some((p) => p.from === 2049), "no NFS port without homeNfs");
});

test("scheduler none keeps the plan's variables exactly as without the block", () => {
    const roce = example("roce-h100");
    const without = planCluster(parseClusterSpec({ ...roce, scheduler: undefined }));
    const none = planCluster(parseClusterSpec({ ...roce, scheduler: { type: "none" } }));
    assert.deepEqual(without.scheduler, { type: "none" });
    assert.deepEqual(none.ansibleVars, without.ansibleVars);
    assert.ok(!Object.keys(without.ansibleVars).some((k) => k.startsWith("slurm_")));
    const slurm = planCluster(parseClusterSpec(roce));
    const { slurm_enabled, slurm_files, slurm_job_env, slurm_controller_address, slurm_home_nfs, ...rest } = slurm.ansibleVars as Record<string, any>;
    assert.deepEqual(Object.fromEntries(Object.entries(rest).filter(([k]) => !k.startsWith("slurm_"))), without.ansibleVars);
    assert.equal(slurm_enabled, true);
    assert.deepEqual(Object.keys(slurm_files).sort(), ["cgroup.conf", "gres.conf", "slurm.conf", "topology.conf"]);
    assert.equal(slurm_controller_address, "10.20.0.5");
    assert.equal(slurm_home_nfs, false);
    // the job environment is what validation ran with: the plan's NCCL env plus the forced transport
    assert.deepEqual(slurm_job_env, { ...slurm.ncclEnv, ...slurm.validation.forcedNet });
});

test("bad scheduler blocks are refused naming the field, the value and what is allowed", () => {
    const roce = example("roce-h100");
    const noCtl = issuesOf({ ...roce, scheduler: { type: "slurm" } });
    assert.ok(noCtl.some((i) => i.startsWith("cluster.scheduler.controller|is required for Slurm on bare metal")), noCtl.join("\n"));
    const noKey = issuesOf({ ...roce, scheduler: { controller: { name: "head01", address: "10.20.0.5" } } });
    assert.ok(noKey.some((i) => i.startsWith("cluster.scheduler.controller.hostKey|is required")), noKey.join("\n"));
    const clash = issuesOf({ ...roce, scheduler: { controller: { ...roce.scheduler.controller, name: "gpu01", address: "10.20.0.99" } } });
    assert.ok(clash.some((i) => i.startsWith("cluster.scheduler.controller.address|differs from roce.hosts entry gpu01")), clash.join("\n"));
    // one host is either the controller or a GPU node (slurm_role): a GPU host named as the controller is refused
    const onGpu = issuesOf({ ...roce, scheduler: { controller: { ...roce.scheduler.controller, name: "gpu01", address: "10.20.0.11" } } });
    assert.ok(onGpu.some((i) => i.startsWith("cluster.scheduler.controller.name|is one of roce.hosts")), onGpu.join("\n"));
    const aws = example("aws-p5");
    const cloud = issuesOf({ ...aws, scheduler: { controller: { address: "10.0.0.5", vmSize: "Standard_D8s_v5" } } });
    assert.ok(cloud.some((i) => i.startsWith("cluster.scheduler.controller.address|does not apply to fabric aws-efa")), cloud.join("\n"));
    assert.ok(cloud.some((i) => i.startsWith("cluster.scheduler.controller.vmSize|does not apply")), cloud.join("\n"));
    const part = issuesOf({ ...aws, scheduler: { partition: "gpu nodes" } });
    assert.ok(part.some((i) => i.startsWith("cluster.scheduler.partition|must be a Slurm partition name")), part.join("\n"));
    const typo = issuesOf({ ...aws, scheduler: { type: "pbs" } });
    assert.ok(typo.some((i) => i === "cluster.scheduler.type|is not one of the allowed values|none, slurm"), typo.join("\n"));
    const nfs = issuesOf({ ...aws, scheduler: { type: "none", homeNfs: true } });
    assert.ok(nfs.some((i) => i.startsWith("cluster.scheduler.homeNfs|needs a scheduler head node")), nfs.join("\n"));
});

test("scheduler.node: required where the catalog has no figures (bare metal, an uncatalogued size), refused where it has, CPUs the product", () => {
    const roce = example("roce-h100");
    const { node, ...noNode } = roce.scheduler;
    const missing = issuesOf({ ...roce, scheduler: noNode });
    assert.ok(missing.some((i) => i.startsWith("cluster.scheduler.node|is required: the kit has no CPU and memory figures")), missing.join("\n"));
    const odd = issuesOf({ ...roce, scheduler: { ...roce.scheduler, node: { ...node, cpus: 112 } } });
    assert.ok(odd.some((i) => i === "cluster.scheduler.node.cpus|differs from sockets x coresPerSocket x threadsPerCore (224), which slurmd -C prints it as|224"), odd.join("\n"));
    const aws = example("aws-p5");
    const twice = issuesOf({ ...aws, scheduler: { node } });
    assert.ok(twice.some((i) => i.startsWith("cluster.scheduler.node|is set, but the kit's catalog has this node type's CPUs and memory")), twice.join("\n"));
    // Standard_ND96isr_MI300X_v5: an Azure size the catalog holds no figures for (refused for its GPUs too, elsewhere)
    const mi300 = { ...example("azure-h100"), azure: { ...example("azure-h100").azure, vmSize: "Standard_ND96isr_MI300X_v5" } };
    assert.ok(issuesOf(mi300).some((i) => i.startsWith("cluster.scheduler.node|is required")), issuesOf(mi300).join("\n"));
    assert.deepEqual(issuesOf({ ...mi300, scheduler: { type: "none" } }).filter((i) => i.startsWith("cluster.scheduler")), []);
    assert.deepEqual(issuesOf({ ...mi300, scheduler: { node: { cpus: 96, sockets: 2, coresPerSocket: 48, threadsPerCore: 1, realMemory: 1894400 } } })
        .filter((i) => i.startsWith("cluster.scheduler")), []);
    // the H200 size: catalog figures (96 vCPUs, 1850 GiB), RealMemory with the margin
    const h200 = planCluster(parseClusterSpec({ ...example("azure-h100"), azure: { ...example("azure-h100").azure, vmSize: "Standard_ND96isr_H200_v5" } })).scheduler;
    assert.ok(h200.type === "slurm");
    assert.deepEqual([h200.node.cpus, h200.node.realMemoryMiB], [96, Math.floor(1850 * 1024 * 0.95)]);
    // the example's line: slurmd -C's figures, RealMemory with the margin
    const files = slurmFiles(planCluster(parseClusterSpec(roce)));
    assert.match(files["slurm.conf"], /^NodeName=gpu\[01-04\] NodeAddr=10\.20\.0\.\[11-14\] CPUs=224 Sockets=2 CoresPerSocket=56 ThreadsPerCore=2 RealMemory=1960044 Gres=gpu:8$/m);
    assert.doesNotMatch(files["slurm.conf"], /config_overrides/);
});

/** A two-tier rail-optimised fabric: `pods` pods of `hostsPerPod` hosts, rail r of pod p on leaf p-r, every leaf to every spine. */
function twoTier(pods: number, hostsPerPod: number, rails: number, spines = 2, joined = true) {
    const hosts = [];
    for (let p = 0; p < pods; p++) {
        for (let h = 0; h < hostsPerPod; h++) {
            const name = `gpu${String(p * hostsPerPod + h + 1).padStart(4, "0")}`;
            hosts.push({ name, address: `10.1.${Math.floor((p * hostsPerPod + h) / 250)}.${((p * hostsPerPod + h) % 250) + 1}`, railPorts: Array.from({ length: rails }, (_, r) => `leaf-p${p}-r${r}:swp${h + 1}`) });
        }
    }
    const switches = [];
    for (let p = 0; p < pods; p++) {
        for (let r = 0; r < rails; r++) {
            // joined=false: the last pod's leaves have no uplinks (an island)
            const up = joined || p < pods - 1 ? Array.from({ length: spines }, (_, s) => ({ port: `swp${60 + s}`, peer: `spine${s}`, peerPort: `swp${p * rails + r + 1}`, cableLengthM: 30 })) : [];
            switches.push({ name: `leaf-p${p}-r${r}`, uplinks: up });
        }
    }
    return { hosts, switches } as any;
}

for (const [pods, perPod, rails] of [[2, 4, 8], [4, 16, 8], [16, 32, 4], [64, 32, 8]] as const) {
    test(`RoCE tree from railPorts: ${pods} pods x ${perPod} hosts x ${rails} rails, two tiers`, () => {
        const t = roceTopology(twoTier(pods, perPod, rails));
        assert.equal(t.kind, "tree");
        if (t.kind !== "tree") return;
        const leaves = t.switches.filter((s) => s.nodes);
        assert.equal(leaves.length, pods, "one leaf switch per pod: the hosts whose rails share the same leaves");
        leaves.forEach((l, p) => {
            assert.equal(l.nodes!.length, perPod);
            assert.deepEqual(l.covers, Array.from({ length: rails }, (_, r) => `leaf-p${p}-r${r}`).sort());
        });
        const upper = t.switches.filter((s) => s.switches);
        assert.equal(upper.length, pods > 1 ? 1 : 0);
        if (pods > 1) assert.deepEqual(upper[0].switches, leaves.map((l) => l.name));
        assert.deepEqual(t.warnings, []);
    });
}

test("RoCE topology: an island pod is a tree of its own (warned); missing or partial cabling is flat with the reason", () => {
    const t = roceTopology(twoTier(3, 4, 2, 2, false));
    assert.equal(t.kind, "tree");
    if (t.kind === "tree") {
        assert.match(t.warnings.join(), /2 separate trees/);
        assert.deepEqual(t.switches.filter((s) => s.switches).map((s) => s.switches!.length), [2]);
    }
    const fab = twoTier(2, 2, 2);
    const none = roceTopology({ ...fab, hosts: fab.hosts.map((h: any) => ({ ...h, railPorts: undefined })) });
    assert.equal(none.kind, "flat");
    assert.match((none as any).why, /no roce.hosts\[\].railPorts declared/);
    const part = roceTopology({ ...fab, hosts: fab.hosts.map((h: any, i: number) => (i === 0 ? { ...h, railPorts: undefined } : h)) });
    assert.equal(part.kind, "flat");
    assert.match((part as any).why, /declared on 3 of 4 hosts \(missing: gpu0001\)/);
});

/**
 * The AWS CLI's `describe-instance-topology` output shape (botocore ec2 2016-11-15 service-2.json
 * DescribeInstanceTopologyResult; example values as in the EC2 user guide's "Examples" page): 3 layers for p5.
 */
const EC2_RESPONSE = {
    Instances: [
        { InstanceId: "i-1111111111example".replace("example", "0abcdef"), InstanceType: "p5.48xlarge", GroupName: "ml-cpg", NetworkNodes: ["nn-1111111111example", "nn-2222222222example", "nn-3333333333example"], ZoneId: "usw2-az2", AvailabilityZone: "us-west-2a" },
        { InstanceId: "i-22222222220abcdef", InstanceType: "p5.48xlarge", GroupName: "ml-cpg", NetworkNodes: ["nn-1111111111example", "nn-2222222222example", "nn-4444444444example"], ZoneId: "usw2-az2", AvailabilityZone: "us-west-2a" },
        { InstanceId: "i-33333333330abcdef", InstanceType: "p5.48xlarge", GroupName: "ml-cpg", NetworkNodes: ["nn-1111111111example", "nn-2222222222example", "nn-3333333333example"], ZoneId: "usw2-az2", AvailabilityZone: "us-west-2a" },
    ],
    NextToken: "SomeEncryptedToken",
};

test("EC2 tree from DescribeInstanceTopology: layers become switches, a node not listed yet goes under ec2-unplaced", () => {
    const instances = parseEc2TopologyResponse(EC2_RESPONSE);
    assert.equal(instances.length, 3);
    const names = ["c-000", "c-001", "c-002", "c-003"];
    const ids = { "c-000": "i-11111111110abcdef", "c-001": "i-22222222220abcdef", "c-002": "i-33333333330abcdef", "c-003": "i-44444444440abcdef" };
    const t = ec2Tree(names, { instances, ids });
    assert.equal(t.kind, "tree");
    if (t.kind !== "tree") return;
    const byName = new Map(t.switches.map((s) => [s.name, s]));
    assert.deepEqual(byName.get("nn-3333333333example")!.nodes, ["c-000", "c-002"]);
    assert.deepEqual(byName.get("nn-4444444444example")!.nodes, ["c-001"]);
    assert.deepEqual(byName.get("nn-2222222222example")!.switches, ["nn-3333333333example", "nn-4444444444example"]);
    assert.deepEqual(byName.get("ec2-unplaced")!.nodes, ["c-003"]);
    assert.deepEqual(byName.get("ec2-root")!.switches, ["nn-1111111111example", "ec2-unplaced"]);
    assert.match(t.warnings.join(), /1 node\(s\) not in the DescribeInstanceTopology response.*eventually consistent.*c-003/);
    // untrusted input: a network node id that would inject a line into topology.conf is refused
    assert.throws(() => parseEc2TopologyResponse({ Instances: [{ InstanceId: "i-11111111110abcdef", NetworkNodes: ["nn-1\nSwitchName=x"] }] }), /NetworkNodes/);
    assert.throws(() => parseEc2TopologyResponse({ Reservations: [] }), /no "Instances" list/);
});

test("hostlists compress fixed-width numbered names and keep the rest", () => {
    assert.deepEqual(compressHostlist(["a-000", "a-001", "a-002", "a-004", "b", "gpu9", "gpu10"]), ["a-[000-002]", "a-004", "b", "gpu9", "gpu10"]);
    // names and addresses step together, or fall back to one pair per host
    assert.deepEqual(pairedRanges(["gpu01", "gpu02", "gpu03", "gpu05", "head"], ["10.0.0.9", "10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13"]), [
        { names: "gpu[01-03]", addrs: "10.0.0.[9-11]" }, { names: "gpu05", addrs: "10.0.0.12" }, { names: "head", addrs: "10.0.0.13" },
    ]);
});

test("slurm-config writes the files and nodes.json; exit 2 on bad input, 1 when the stack runs no Slurm", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "slurmcfg-"));
    try {
        const ok = runSlurmConfig({ config: path.join(ROOT, "examples/roce-h100.yaml"), out: dir });
        assert.equal(ok.code, 0, ok.stderr);
        for (const f of ["slurm.conf", "gres.conf", "cgroup.conf", "topology.conf", "nodes.json"]) assert.ok(fs.existsSync(path.join(dir, f)), f);
        const nodes = JSON.parse(fs.readFileSync(path.join(dir, "nodes.json"), "utf8"));
        assert.deepEqual(nodes.nodes[0], { name: "gpu01", host: "gpu01", address: "10.20.0.11" });
        assert.match(fs.readFileSync(path.join(dir, "slurm.conf"), "utf8"), /^NodeName=gpu\[01-04\] NodeAddr=10\.20\.0\.\[11-14\] CPUs=224 .*Gres=gpu:8$/m);
        assert.equal(runSlurmConfig({ out: dir }).code, 2);
        const bad = path.join(dir, "bad.yaml");
        fs.writeFileSync(bad, "config:\n  rdmakit:cluster:\n    name: x\n    fabric: roce\n");
        assert.equal(runSlurmConfig({ config: bad, out: dir }).code, 2);
        const noSched = path.join(dir, "none.yaml");
        const roce = example("roce-h100");
        fs.writeFileSync(noSched, JSON.stringify({ config: { "rdmakit:cluster": { ...roce, scheduler: undefined } } }));
        assert.equal(runSlurmConfig({ config: noSched, out: dir }).code, 1);
        const aws = runSlurmConfig({ config: path.join(ROOT, "examples/aws-p5.yaml"), out: dir, ec2Topology: path.join(dir, "nope.json"), instanceIds: path.join(dir, "nope.json") });
        assert.equal(aws.code, 2);
        assert.match(aws.stderr!, /--ec2-topology .*nope.json/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

// ---- Debian 12's real slurmctld loads the files -------------------------------------------------------------------

const LOADER = path.join(ROOT, "test/slurm/slurmctld-load.sh");

/** Renders with the harness overrides into a scratch dir, runs slurmctld on a private port, returns what it parsed. */
function loadIntoSlurmctld(plan: FabricPlan, ec2?: Parameters<typeof slurmFiles>[1]) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "slurmctld-"));
    try {
        const port = 20000 + Math.floor(Math.random() * 9000);
        const files = slurmFiles(plan, ec2, {
            // the cloud nodes' addresses as pulumi up passes them (the plan has none); bare metal keeps the spec's
            ...(plan.fabric !== "roce" && plan.scheduler.type === "slurm" ? { nodeAddresses: Object.fromEntries(plan.scheduler.nodeNames.map((n, i) => [n, `10.0.${Math.floor(i / 250)}.${(i % 250) + 1}`])) } : {}),
            controllerHost: os.hostname(), slurmctldPort: port, slurmUser: "root", mungeSocket: path.join(dir, "munge/sock"),
            paths: { stateSave: path.join(dir, "state"), slurmdSpool: path.join(dir, "spool"), ctldPid: path.join(dir, "ctld.pid"), slurmdPid: path.join(dir, "d.pid"), ctldLog: path.join(dir, "ctld.file.log"), slurmdLog: path.join(dir, "d.log") },
        });
        for (const [k, v] of Object.entries(files)) fs.writeFileSync(path.join(dir, k), v);
        try {
            execFileSync("timeout", ["60", LOADER, dir], { stdio: "pipe" });
        } catch (e) {
            assert.fail(`slurmctld-load.sh: ${(e as { stderr?: Buffer }).stderr?.toString() ?? e}`);
        }
        const read = (f: string) => fs.readFileSync(path.join(dir, "out", f), "utf8");
        return { nodes: read("nodes"), partitions: read("partitions"), topology: read("topology"), config: read("config"), log: read("ctld.log") };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

function haveSlurmctld(): void {
    try {
        execFileSync("slurmctld", ["-V"], { stdio: "pipe" });
    } catch {
        assert.fail("slurmctld is not installed: .ci/run installs slurmctld slurmd munge libpmix2 (README's test command)");
    }
}

function assertLoaded(plan: FabricPlan, got: ReturnType<typeof loadIntoSlurmctld>) {
    const s = plan.scheduler;
    assert.equal(s.type, "slurm");
    if (s.type !== "slurm") return;
    const lines = got.nodes.trim().split("\n");
    assert.equal(lines.length, s.nodeNames.length, "every node parsed");
    const addr = new Map((s.nodeAddresses ?? []).map((a, i) => [s.nodeNames[i], a]));
    for (const l of lines) {
        // a line of no State: slurmctld keeps the saved state across restarts, and a node drains itself before its
        // first slurmd start (roles/slurm/tasks/predrain.yml; test/slurm-alloc.test.ts runs that on a real slurmd)
        assert.match(l, /State=UNKNOWN /, "a node slurmctld has no state for and no slurmd is UNKNOWN, as the line gives no State");
        const name = /^NodeName=(\S+)/.exec(l)![1];
        if (addr.size > 0) assert.match(l, new RegExp(`NodeAddr=${addr.get(name)!.replace(/\./g, "\\.")} `), `${name} at its own address`);
        assert.doesNotMatch(l, /Reason=/);
        assert.match(l, new RegExp(`Gres=gpu:${s.node.gpus}`));
        // every node line states its CPUs and memory: Slurm schedules by the line, and one without them is 1 CPU, 1 MiB
        assert.match(l, new RegExp(`CPUTot=${s.node.cpus} `));
        assert.match(l, new RegExp(`RealMemory=${s.node.realMemoryMiB} `));
        assert.ok(Number(/CPUTot=(\d+)/.exec(l)![1]) >= s.node.gpus && Number(/RealMemory=(\d+)/.exec(l)![1]) > 1024, `${name}: a GPU node of one CPU or 1 MiB: ${l}`);
    }
    assert.match(got.partitions, new RegExp(`PartitionName=${s.partition} .*TotalNodes=${s.nodeNames.length}`));
    assert.match(got.config, /SelectType\s+= select\/cons_tres/);
    assert.match(got.config, /MpiDefault\s+= pmix/);
    assert.match(got.config, /PropagateResourceLimitsExcept = MEMLOCK,NOFILE/);
    assert.match(got.config, /TaskPlugin\s+= task\/cgroup,task\/affinity/);
    assert.doesNotMatch(got.log, /fatal|error: .*(topology|gres|cgroup)\.conf/i, got.log);
    // a job naming no memory gets its CPUs' share of the node, not all of it (DefMemPerCPU's default: unlimited)
    assert.match(got.config, new RegExp(`DefMemPerCPU\\s+= ${Math.floor(s.node.realMemoryMiB / s.node.cpus)}\n`));
    // a job asking for GPUs gets their share of the node's cores (scontrol prints DefCpuPerGPU under JobDefaults)
    assert.match(got.config, new RegExp(`JobDefaults\\s+= DefCpuPerGPU=${defCpuPerGpu(s)}\n`));
    assert.ok(defCpuPerGpu(s) * s.node.gpus <= s.node.cpus && defCpuPerGpu(s) > 0, `DefCpuPerGPU ${defCpuPerGpu(s)}`);
    // config_overrides would make slurmctld keep the line's figures and never drain a node reporting less
    assert.match(got.config, /SlurmdParameters\s+= \(null\)/);
    return s;
}

test("Debian's slurmctld accepts every example that runs Slurm, topology included", { timeout: 120_000 }, () => {
    haveSlurmctld();
    for (const name of ["roce-h100", "aws-p5", "azure-h100"]) {
        const plan = planCluster(parseClusterSpec(example(name)));
        const got = loadIntoSlurmctld(plan);
        const s = assertLoaded(plan, got)!;
        if (s.topology.kind === "flat") assert.match(got.topology, /No topology information available/);
        else assert.match(got.topology, /SwitchName=/, `${name}: ${got.topology}`);
        if (name === "roce-h100") assert.match(got.topology, /SwitchName=leaf-nvue_leaf-sonic Level=0 .*Nodes=gpu\[01-04\]/);
    }
});

test("Debian's slurmctld accepts the EC2 tree and the RoCE trees of several sizes (scontrol show topology)", { timeout: 120_000 }, () => {
    haveSlurmctld();
    const aws = planCluster(parseClusterSpec({ ...example("aws-p5"), nodes: 4 }));
    const s = aws.scheduler as Extract<FabricPlan["scheduler"], { type: "slurm" }>;
    const ids = Object.fromEntries(s.nodeNames.slice(0, 3).map((n, i) => [n, EC2_RESPONSE.Instances[i].InstanceId]));
    const ec2 = { instances: parseEc2TopologyResponse(EC2_RESPONSE), ids };
    const got = loadIntoSlurmctld(aws, ec2);
    assertLoaded(aws, got);
    assert.match(got.topology, /SwitchName=nn-3333333333example Level=0 .*Nodes=p5-demo-000,p5-demo-002\n/);
    assert.match(got.topology, /SwitchName=ec2-root Level=\d .*Switches=/);
    // RoCE: the example's plan carrying generated two-tier fabrics of several sizes
    const roce = planCluster(parseClusterSpec(example("roce-h100")));
    for (const [pods, perPod, rails] of [[2, 4, 8], [8, 32, 8]] as const) {
        const fab = twoTier(pods, perPod, rails);
        const sched = { ...(roce.scheduler as any), nodeNames: fab.hosts.map((h: any) => h.name), nodeAddresses: fab.hosts.map((h: any) => h.address), topology: roceTopology(fab) };
        const plan = { ...roce, scheduler: sched } as FabricPlan;
        const out = loadIntoSlurmctld(plan);
        assertLoaded(plan, out);
        const topo = out.topology.trim().split("\n");
        assert.equal(topo.filter((l) => /Level=0/.test(l)).length, pods, out.topology);
        assert.equal(topo.filter((l) => /Level=1/.test(l)).length, 1, out.topology);
        assert.match(out.topology, /SwitchName=spine0_spine1 Level=1 /);
    }
});

test("the bench's rail-optimised RoCE stacks (real specs, railPorts on every host) derive pods under one spine layer, and slurmctld loads them", { timeout: 120_000 }, () => {
    haveSlurmctld();
    for (const [hosts, rails] of [[128, 8], [2048, 8]] as const) {
        const doc = scaledStack("roce-h100.yaml", hosts) as { config: Record<string, any> };
        const plan = planCluster(parseClusterSpec(doc.config["rdmakit:cluster"]));
        const t = (plan.scheduler as Extract<FabricPlan["scheduler"], { type: "slurm" }>).topology;
        assert.equal(t.kind, "tree");
        if (t.kind !== "tree") continue;
        // 64 hosts per leaf in each of the 8 rail planes: one Slurm leaf switch per 64 hosts, covering its 8 leaves
        const leaves = t.switches.filter((s) => s.nodes);
        assert.equal(leaves.length, hosts / 64);
        for (const l of leaves) assert.equal(l.covers!.length, rails);
        assert.equal(t.switches.filter((s) => s.switches).length, 1);
        assert.ok(t.switches.every((s) => s.name.length <= 40), t.switches.map((s) => s.name).join());
        if (hosts > 128) continue; // one slurmctld load per shape is enough; 2,048 NodeAddr lines add nothing new
        const got = loadIntoSlurmctld(plan);
        assertLoaded(plan, got);
        assert.equal(got.topology.trim().split("\n").filter((l) => /Level=0/.test(l)).length, hosts / 64);
    }
});

test("rdmakit plan's scheduler section: the planned head node, the node line, the topology, and that pulumi up installs it", () => {
    const lines = formatSchedulerSection(planCluster(parseClusterSpec(example("aws-p5"))).scheduler);
    assert.equal(lines[0], "scheduler: slurm");
    assert.match(lines[1], /controller: p5-demo-head, m7i\.2xlarge \(planned\); slurmctld 6817, slurmd 6818/);
    assert.match(lines[3], /node line: {2}192 CPUs \(2 threads\/core\), RealMemory \d+ MiB, gpu:8 \(\/dev\/nvidia\[0-7\]\)/);
    assert.match(lines[4], /tree from ec2:DescribeInstanceTopology/);
    assert.match(lines.at(-1) ?? "", /installed by pulumi up: the software run adds the head node it creates as the controller/);
    assert.doesNotMatch(lines.join("\n"), /not yet installed/);
    assert.match(formatSchedulerSection(planCluster(parseClusterSpec(example("roce-h100"))).scheduler).at(-1) ?? "", /adds this host as the controller/);
    assert.deepEqual(formatSchedulerSection(planCluster(parseClusterSpec({ ...example("roce-h100"), scheduler: undefined })).scheduler),
        ["scheduler: none (scheduler.type none; on roce name cluster.scheduler.controller to run Slurm)"]);
});
