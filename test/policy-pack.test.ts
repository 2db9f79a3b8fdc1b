import { after, before, describe, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { evaluatePolicies, type PolicySubject } from "../policies/evaluate";
import { RDMAKIT_POLICIES } from "../policies/rules";
import { parsePushCommand } from "../components/roce/push-args";
import { awsStack, azureStack, clone, edit, find, p5Interfaces, plus, res, secret, T, U, urn, without, type Stack } from "./policy-fixtures";
import { Pack, type Diagnostic, type EngineResource } from "./policy-pack";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

/*
 * The policy pack as Pulumi runs it: started by the pack's own @pulumi/pulumi/cmd/run-policy-pack, in place
 * (policies/ after `npm install` and `npm run build`) and as published (`npm pack` of policies/, unpacked in a temporary
 * folder outside the repository, `npm install` there), and called over gRPC as the engine calls it. Every policy gets
 * a violating stack and the clean stack of its fabric; resources on no RDMA fabric must get no diagnostic at all; a
 * value unknown at preview or a resource outside the stack is advisory only. The offline evaluator (`rdmakit plan`)
 * must give the same verdicts on the same resources. Both packs start once and serve every case.
 */

const ROOT = join(__dirname, "..");
// The packs run in their own folders, as Pulumi starts them; the switch texts the RoCE stack keeps are named relative
// to the project folder, where check.ts ran the program (policies/rules/roce.ts readKeptText)
process.env.RDMAKIT_PROJECT_DIR = ROOT;
const POLICIES = join(ROOT, "policies");
const run = promisify(execFile);
// The npm cache already holds the root install's packages, so these installs do not need the network.
const NPM = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];

const runnerIn = (dir: string) => createRequire(join(dir, "package.json")).resolve("@pulumi/pulumi/cmd/run-policy-pack");

async function inPlace(): Promise<Pack> {
    // `npm install`, not `npm ci`: it leaves an existing install in place, which other test files may be reading
    await run("npm", ["install", ...NPM], { cwd: POLICIES });
    await run("npm", ["run", "build", "--silent"], { cwd: POLICIES });
    const runner = runnerIn(POLICIES);
    assert.ok(runner.startsWith(join(POLICIES, "node_modules")), `the runner comes from the pack's own install: ${runner}`);
    return Pack.start(POLICIES, runner);
}

let publishedFiles: string[] = [];
let scratch = "";
/** `npm pack` in policies/ (its prepack builds dist/), as `pulumi policy publish` runs it; the tarball's path. */
async function npmPack(): Promise<string> {
    scratch = mkdtempSync(join(tmpdir(), "rdmakit-pack-"));
    const { stdout } = await run("npm", ["pack", "--json", "--pack-destination", scratch, ...NPM], { cwd: POLICIES });
    const [info] = JSON.parse(stdout) as { filename: string; files: { path: string }[] }[];
    publishedFiles = info.files.map((f) => f.path).sort();
    return join(scratch, info.filename);
}

/** The tarball unpacked outside the repository and installed there, as a Pulumi Cloud policy group installs it. */
async function published(tarball: string): Promise<Pack> {
    await run("tar", ["xzf", tarball, "-C", scratch]);
    const dir = join(scratch, "package");
    await run("npm", ["install", ...NPM], { cwd: dir });
    return Pack.start(dir, runnerIn(dir));
}

/** The bundled RoCE example, recorded offline (the real program on the mock engine), as the engine would send it. */
async function roceStack(): Promise<Stack> {
    const out = await new Promise<string>((resolve, reject) => {
        const p = spawn(process.execPath, [...TS_NODE_ARGS, "policies/check.ts", "examples/roce-h100.yaml", "--json"], { cwd: ROOT });
        let o = "";
        let e = "";
        p.stdout.on("data", (d) => (o += d));
        p.stderr.on("data", (d) => (e += d));
        p.on("close", (code) => (code === 0 ? resolve(o) : reject(new Error(`check.ts: ${code} ${e}`))));
    });
    const rec = JSON.parse(out) as { resources: PolicySubject[] };
    // the mock engine's unknown marker → the engine's sentinel; secrets stay in their envelope, as the engine sends them
    const engine = (v: unknown): unknown => {
        if (Array.isArray(v)) return v.map(engine);
        if (v && typeof v === "object") {
            const o = v as Record<string, unknown>;
            if (o.__pulumiUnknown === true) return U;
            return Object.fromEntries(Object.entries(o).map(([k, x]) => [k, engine(x)]));
        }
        return v;
    };
    return rec.resources.map((r) => ({
        type: r.type, name: r.name, urn: r.urn!, parent: r.parent, props: engine(r.inputs ?? {}) as Record<string, unknown>,
        dependencies: r.dependencies ?? [], propertyDependencies: r.propertyDependencies ?? {},
    }));
}

/** The engine-shaped resources as the offline evaluator takes them (what components/offline.ts records). */
const subjects = (s: Stack): PolicySubject[] => s.map((r) => ({ type: r.type, name: r.name, custom: true, inputs: r.props, urn: r.urn, parent: r.parent, dependencies: r.dependencies, propertyDependencies: r.propertyDependencies }));

// ---------------------------------------------------------------------------------------------------------------
// RoCE changes: the inventory's host variables and the pushed switch texts

const INVENTORY_RUN = "cluster-software-run";
const SONIC = "cluster-roce-leaf-sonic-qos";

/**
 * gpu02's variables changed in the provisioning run's inventory: the kept file its stdin names (the program's way,
 * components/provision/ansible.ts AnsibleRunStdin), re-kept under a name of its own with its new digest; or, `inline`,
 * the text itself on stdin, as a team's own run may carry it.
 */
function editHost(s: Stack, change: (vars: Record<string, any>) => void, inline = false): Stack {
    return edit(s, "command:local:Command", INVENTORY_RUN, (p) => {
        const input = JSON.parse(p.stdin);
        const text: string = readFileSync(join(ROOT, input.inventoryFile), "utf8");
        // gpu02's block: change its variables through a YAML round trip
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const YAML = require("yaml");
        const doc = YAML.parse(text);
        change(doc.all.hosts.gpu02);
        const edited: string = YAML.stringify(doc);
        if (inline) {
            p.stdin = JSON.stringify({ inventory: edited, extraVars: input.extraVars });
            return;
        }
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const digest: string = require("node:crypto").createHash("sha256").update(edited, "utf8").digest("hex");
        const file = join("out", "policy-pack-test", "inputs", `edited-inventory-${digest}.yml`);
        mkdirSync(join(ROOT, "out", "policy-pack-test", "inputs"), { recursive: true });
        writeFileSync(join(ROOT, file), edited);
        p.stdin = JSON.stringify({ ...input, inventoryFile: file, inventorySha256: digest });
    });
}

/** The SONiC push's text changed as a file someone edited after rendering; its digest re-declared unless `keepDigest`. */
function editSonic(s: Stack, change: (db: Record<string, any>) => void, keepDigest = false): Stack {
    return edit(s, "command:local:Command", SONIC, (p) => {
        const args = parsePushCommand(String(p.create))!;
        const db = JSON.parse(readFileSync(join(ROOT, args.config), "utf8"));
        change(db);
        const text = JSON.stringify(db, null, 2) + "\n";
        // eslint-disable-next-line @typescript-eslint/no-require-imports
        const digest: string = require("node:crypto").createHash("sha256").update(text, "utf8").digest("hex");
        // beside the others, under a name of its own (the pack finds it as it finds them: relative to the project)
        const file = join("out", "policy-pack-test", "inputs", `edited-${digest}.json`);
        mkdirSync(join(ROOT, "out", "policy-pack-test", "inputs"), { recursive: true });
        writeFileSync(join(ROOT, file), text);
        // re-declare the digest as rdmakit would, so only the QoS rule is broken; or keep the rendered one (a text
        // edited after rendering)
        p.create = String(p.create).replace(`'${args.config}'`, `'${file}'`).replace(`--config-sha256 ${args.configSha256}`, `--config-sha256 ${keepDigest ? args.configSha256 : digest}`);
    });
}

// ---------------------------------------------------------------------------------------------------------------
// Cases

interface Case {
    policy: string;
    why: string;
    stack: () => Stack;
}

const LT = (s: Stack, change: (p: any) => void) => edit(s, T.lt, "nodes", change);
const VMSS = (s: Stack, change: (p: any) => void) => edit(s, T.vmss, "gpu", change);

function violations(roce: () => Stack): Case[] {
    const aws = awsStack();
    const az = azureStack();
    return [
        { policy: "aws-efa-interface-present", why: "a p5 template with only an ENA interface", stack: () => LT(aws, (p) => (p.networkInterfaces = [p5Interfaces()[0]])) },
        { policy: "aws-efa-interface-every-card", why: "card 5 has no interface", stack: () => LT(aws, (p) => (p.networkInterfaces = p.networkInterfaces.filter((n: any) => n.networkCardIndex !== 5))) },
        { policy: "aws-efa-interface-unique-slot", why: "card 1 device 0 twice", stack: () => LT(aws, (p) => p.networkInterfaces.push({ ...p.networkInterfaces[2] })) },
        { policy: "aws-efa-interface-efa-only-secondary", why: "an efa-only primary", stack: () => LT(aws, (p) => (p.networkInterfaces[0].interfaceType = "efa-only")) },
        { policy: "aws-efa-interface-type-valid", why: "interfaceType efa-plus", stack: () => LT(aws, (p) => (p.networkInterfaces[3].interfaceType = "efa-plus")) },
        { policy: "aws-efa-interface-security-groups", why: "template-level vpcSecurityGroupIds", stack: () => LT(aws, (p) => (p.vpcSecurityGroupIds = ["sg-0abc"])) },
        { policy: "aws-efa-interface-single-subnet", why: "two known subnets", stack: () => LT(aws, (p) => p.networkInterfaces.forEach((n: any, i: number) => (n.subnetId = i % 2 ? "subnet-a" : "subnet-b"))) },
        { policy: "aws-efa-no-public-ip", why: "associatePublicIpAddress \"true\" on a 33-interface template", stack: () => LT(aws, (p) => (p.networkInterfaces[0].associatePublicIpAddress = "true")) },
        { policy: "aws-efa-imdsv2-required", why: "httpTokens optional", stack: () => LT(aws, (p) => (p.metadataOptions.httpTokens = "optional")) },
        { policy: "aws-efa-gpudirect-instance-type", why: "a g6e.48xlarge with EFA", stack: () => LT(aws, (p) => { p.instanceType = "g6e.48xlarge"; p.networkInterfaces = p5Interfaces(4); }) },
        // issue 25 F5: a template with no type and no EFA interface that the group launches as p5.48xlarge (overrides)
        { policy: "aws-efa-template-launched-as-rdma", why: "a typeless ENA-only template with httpTokens optional, launched as p5.48xlarge by mixedInstancesPolicy overrides",
            stack: () => edit(LT(aws, (p) => { delete p.instanceType; p.networkInterfaces = [p5Interfaces()[0]]; p.metadataOptions.httpTokens = "optional"; }), T.asg, "nodes", (p) => {
                p.mixedInstancesPolicy = { launchTemplate: { launchTemplateSpecification: { launchTemplateId: p.launchTemplate.id, version: "$Latest" }, overrides: [{ instanceType: "p5.48xlarge" }] } };
                delete p.launchTemplate;
            }) },
        { policy: "aws-efa-sg-self-ingress", why: "no self ingress rule", stack: () => without(aws, T.in, "efa-self-in") },
        { policy: "aws-efa-sg-self-egress", why: "only 0.0.0.0/0 egress", stack: () => without(aws, T.out, "efa-self-out") },
        { policy: "aws-efa-asg-single-subnet", why: "two subnets", stack: () => edit(aws, T.asg, "nodes", (p) => (p.vpcZoneIdentifiers = ["subnet-a", "subnet-b"])) },
        { policy: "aws-efa-placement-cluster", why: "a spread placement group", stack: () => edit(aws, T.pg, "pg", (p) => (p.strategy = "spread")) },
        { policy: "aws-efa-placement-capacity-block", why: "a Capacity Block and a placement group", stack: () => LT(aws, (p) => (p.instanceMarketOptions = { marketType: "capacity-block" })) },
        { policy: "azure-ib-vmss-single-placement-group", why: "singlePlacementGroup false", stack: () => VMSS(az, (p) => (p.singlePlacementGroup = false)) },
        { policy: "azure-ib-vmss-partition-capacity", why: "150 VMs", stack: () => VMSS(az, (p) => (p.sku.capacity = 150)) },
        { policy: "azure-ib-vmss-fault-domain-one", why: "5 fault domains", stack: () => VMSS(az, (p) => (p.platformFaultDomainCount = 5)) },
        { policy: "azure-ib-vmss-no-overprovision", why: "overprovision true", stack: () => VMSS(az, (p) => (p.overprovision = true)) },
        { policy: "azure-ib-vmss-uniform-orchestration", why: "Flexible", stack: () => VMSS(az, (p) => (p.orchestrationMode = "Flexible")) },
        {
            policy: "azure-ib-no-password-login", why: "password login with a (secret) password",
            stack: () => VMSS(az, (p) => { p.virtualMachineProfile.osProfile.linuxConfiguration.disablePasswordAuthentication = false; p.virtualMachineProfile.osProfile.adminPassword = secret("hunter2-not-shown"); }),
        },
        {
            policy: "azure-ib-gen2-image", why: "a Gen1 gallery image",
            stack: () => plus(VMSS(az, (p) => (p.virtualMachineProfile.storageProfile.imageReference = { id: U })), res(T.gallery, "img", { resourceGroupName: "rg", galleryName: "g", osType: "Linux", osState: "Generalized", hyperVGeneration: "V1", identifier: { publisher: "me", offer: "o", sku: "s" } }))
                .map((r) => (r.type === T.vmss ? { ...r, propertyDependencies: { ...r.propertyDependencies, virtualMachineProfile: [...r.propertyDependencies!.virtualMachineProfile, urn(T.gallery, "img")] } } : r)),
        },
        { policy: "azure-ib-trusted-launch-off", why: "Trusted Launch with Secure Boot", stack: () => VMSS(az, (p) => (p.virtualMachineProfile.securityProfile = { securityType: "TrustedLaunch", uefiSettings: { secureBootEnabled: true, vTpmEnabled: true } })) },
        { policy: "azure-ib-accelerated-networking", why: "accelerated networking off", stack: () => VMSS(az, (p) => (p.virtualMachineProfile.networkProfile.networkInterfaceConfigurations[0].enableAcceleratedNetworking = false)) },
        { policy: "azure-ib-vnet-rdma-range", why: "a VNet 172.16.0.0/12", stack: () => edit(az, T.vnet, "vnet", (p) => (p.addressSpace.addressPrefixes = ["172.16.0.0/12"])) },
        { policy: "rdma-ssh-not-open-to-internet", why: "EFA SG: 0.0.0.0/1 + 128.0.0.0/1", stack: () => plus(without(aws, T.in, "efa-ssh-office"), ...["0.0.0.0/1", "128.0.0.0/1"].map((c, i) => res(T.in, `ssh-${i}`, { securityGroupId: U, cidrIpv4: c, ipProtocol: "tcp", fromPort: 22, toPort: 22 }, { securityGroupId: [urn(T.sg, "efa-sg")] }))) },
        { policy: "rdma-ssh-not-open-to-internet", why: "IB NSG: Internet allowed before the deny", stack: () => edit(az, T.nsg, "nsg", (p) => p.securityRules.push({ name: "open", priority: 900, direction: "Inbound", access: "Allow", protocol: "*", destinationPortRange: "*", sourceAddressPrefix: "Internet", destinationAddressPrefix: "*", sourcePortRange: "*" })) },
        ...["AzureCloud", "AzureCloud.EastUS"].map((tag) => ({ policy: "rdma-ssh-not-open-to-internet", why: `IB NSG: the service tag ${tag} allowed (Azure's public ranges)`, stack: () => edit(az, T.nsg, "nsg", (p) => p.securityRules.push({ name: "cloud", priority: 900, direction: "Inbound", access: "Allow", protocol: "Tcp", destinationPortRange: "22", sourceAddressPrefix: tag, destinationAddressPrefix: "*", sourcePortRange: "*" })) })),
        { policy: "roce-qos-c1-dscp-lossless-queue", why: "gpu02 NCCL_IB_TC 98 (DSCP 24)", stack: () => editHost(roce(), (h) => (h.nccl_conf.NCCL_IB_TC = "98")) },
        { policy: "roce-qos-c2-pfc-priority", why: "gpu02 PFC on priority 5", stack: () => editHost(roce(), (h) => (h.roce_host_pfc_vector = "0,0,0,0,0,1,0,0")) },
        { policy: "roce-qos-c3-single-lossless-priority", why: "gpu02 PFC on 3 and 4", stack: () => editHost(roce(), (h) => (h.roce_host_pfc_vector = "0,0,0,1,1,0,0,0")) },
        { policy: "roce-qos-c4-lossless-buffer", why: "a lossy profile on Ethernet0's RoCE PG", stack: () => editSonic(roce(), (db) => (db.BUFFER_PG["Ethernet0|3"].profile = "ingress_lossy_profile")) },
        { policy: "roce-qos-c5-trust-dscp", why: "gpu02 trusts PCP", stack: () => editHost(roce(), (h) => (h.roce_host_trust = "pcp")) },
        { policy: "roce-qos-c6-cnp-strict-queue", why: "gpu02 CNP DSCP 10", stack: () => editHost(roce(), (h) => (h.roce_host_cnp_dscp = 10)) },
        { policy: "roce-qos-c7-ecn-dcqcn", why: "gpu02 ECN off", stack: () => editHost(roce(), (h) => (h.roce_host_ecn = false)) },
        { policy: "roce-qos-c8-ect0-traffic-class", why: "gpu02 ToS/TC 104", stack: () => editHost(roce(), (h) => { h.roce_host_tos = 104; h.nccl_conf.NCCL_IB_TC = "104"; }) },
        { policy: "roce-qos-c9-mtu", why: "gpu02 MTU 4000", stack: () => editHost(roce(), (h) => (h.roce_host_mtu = 4000)) },
        { policy: "roce-qos-c10-gid-index", why: "gpu02 NCCL_IB_GID_INDEX 5", stack: () => editHost(roce(), (h) => (h.nccl_conf.NCCL_IB_GID_INDEX = "5")) },
        { policy: "roce-qos-c11-pfc-watchdog", why: "Ethernet0 watchdog action forward", stack: () => editSonic(roce(), (db) => (db.PFC_WD.Ethernet0.action = "forward")) },
        { policy: "roce-qos-c12-mode-agreement", why: "gpu02 lossy tuning on a lossless fabric", stack: () => editHost(roce(), (h) => (h.roce_host_lossy_tuning = true)) },
        { policy: "roce-qos-c13-nccl-interfaces", why: "gpu02 NCCL_IB_HCA without =", stack: () => editHost(roce(), (h) => (h.nccl_conf.NCCL_IB_HCA = h.nccl_conf.NCCL_IB_HCA.slice(1))) },
        { policy: "roce-switch-config-digest", why: "the SONiC text edited after rendering", stack: () => editSonic(roce(), (db) => (db.PORT.Ethernet0.mtu = "9100"), true) },
    ];
}

/** On no RDMA fabric: none of these may get an rdmakit diagnostic, not even advisory. */
function unrelated(): Stack {
    return [
        res(T.lt, "cpu", { instanceType: "c7i.large", imageId: "ami-1", vpcSecurityGroupIds: ["sg-web"] }),
        res(T.lt, "inference", { instanceType: "g5.12xlarge", imageId: "ami-2", metadataOptions: { httpTokens: "optional" }, networkInterfaces: [{ deviceIndex: 0, associatePublicIpAddress: "true", securityGroups: ["sg-web"] }] }),
        res(T.inst, "bastion", { instanceType: "t3.micro", ami: "ami-3", associatePublicIpAddress: true, vpcSecurityGroupIds: ["sg-web"] }),
        res(T.sg, "web", { name: "web", ingress: [{ protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: ["0.0.0.0/0"] }], egress: [] }),
        res(T.asg, "web", { minSize: 1, maxSize: 3, vpcZoneIdentifiers: ["subnet-a", "subnet-b", "subnet-c"], launchTemplate: { id: U, version: "$Latest" } }, { launchTemplate: [urn(T.lt, "cpu")] }),
        res(T.vnet, "rdma-range", { resourceGroupName: "rg", addressSpace: { addressPrefixes: ["172.16.0.0/16"] } }),
        res(T.vm, "web", { resourceGroupName: "rg", hardwareProfile: { vmSize: "Standard_D4s_v5" }, osProfile: { adminUsername: "u", adminPassword: secret("p"), linuxConfiguration: { disablePasswordAuthentication: false } }, storageProfile: { imageReference: { publisher: "Canonical", offer: "ubuntu-24_04-lts", sku: "server", version: "latest" } } }),
        res(T.vmss, "web", { resourceGroupName: "rg", sku: { name: "Standard_D2s_v5", capacity: 500 }, orchestrationMode: "Flexible", platformFaultDomainCount: 3 }),
        res("command:local:Command", "hello", { create: "echo hello" }),
    ];
}

/** Unknown at preview, or outside the stack: advisory "cannot be verified yet", never mandatory. */
function undecidable(): Case[] {
    const aws = awsStack();
    const az = azureStack();
    return [
        { policy: "aws-efa-sg-self-ingress", why: "the EFA interfaces use an existing security group (by id)", stack: () => LT(without(without(aws, T.in, "efa-self-in"), T.out, "efa-self-out"), (p) => p.networkInterfaces.forEach((n: any) => (n.securityGroups = ["sg-0existing"]))).map((r) => (r.type === T.lt ? { ...r, propertyDependencies: {} } : r)) },
        { policy: "aws-efa-interface-present", why: "an instance type not known yet", stack: () => [res(T.lt, "later", { instanceType: U, imageId: "ami-1" })] },
        { policy: "aws-efa-placement-cluster", why: "an ASG whose template id is unknown and untraced", stack: () => edit(aws, T.asg, "nodes", (p, r) => { r.propertyDependencies = { vpcZoneIdentifiers: r.propertyDependencies!.vpcZoneIdentifiers }; void p; }) },
        { policy: "rdma-ssh-not-open-to-internet", why: "EFA SG: SSH from a managed prefix list", stack: () => plus(aws, res(T.in, "ssh-pl", { securityGroupId: U, prefixListId: "pl-0123456789abcdef0", ipProtocol: "tcp", fromPort: 22, toPort: 22 }, { securityGroupId: [urn(T.sg, "efa-sg")] })) },
        { policy: "azure-ib-vmss-single-placement-group", why: "singlePlacementGroup from another output", stack: () => VMSS(az, (p) => (p.singlePlacementGroup = U)) },
        { policy: "azure-ib-vnet-rdma-range", why: "a subnet of an existing VNet", stack: () => VMSS(without(without(az, T.vnet, "vnet"), T.azSubnet, "nodes"), (p) => (p.virtualMachineProfile.networkProfile.networkInterfaceConfigurations[0].ipConfigurations[0].subnet.id = "/subscriptions/x/resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/shared/subnets/gpu")).map((r) => (r.type === T.vmss ? { ...r, propertyDependencies: { virtualMachineProfile: [urn(T.nsg, "nsg")] } } : r)) },
    ];
}

// ---------------------------------------------------------------------------------------------------------------

type Summary = Record<string, { mandatory: number; advisory: number; unknown: number }>;

function summarize(ds: Diagnostic[]): Summary {
    const out: Summary = {};
    for (const d of ds) {
        const s = (out[d.policy] ??= { mandatory: 0, advisory: 0, unknown: 0 });
        if (/^can't run policy .* during preview: /.test(d.message)) s.unknown++;
        else if (d.level === "mandatory") s.mandatory++;
        else s.advisory++;
    }
    return out;
}

function offlineSummary(s: Stack): Summary {
    const out: Summary = {};
    for (const v of evaluatePolicies(subjects(s), { stack: "dev", project: "team" })) {
        if (v.violations.length === 0 && v.undecided.length === 0) continue;
        out[v.policy] = { mandatory: v.enforcementLevel === "mandatory" ? v.violations.length : 0, advisory: v.enforcementLevel === "mandatory" ? 0 : v.violations.length, unknown: v.undecided.length };
    }
    return out;
}

const level = (name: string) => RDMAKIT_POLICIES.find((p) => p.name === name)!.enforcementLevel;

// Both packs are prepared at once, after `npm pack` (whose build is then the only one writing dist/ while nothing reads it).
const tarball = npmPack();
const ready = { "in place": tarball.then(() => inPlace()), published: tarball.then(published) };
const roceReady = roceStack();
for (const p of [...Object.values(ready), roceReady]) p.catch(() => undefined); // awaited (and reported) by each suite
after(async () => {
    for (const p of Object.values(ready)) (await p.catch(() => undefined))?.close();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
});

for (const mode of ["in place", "published"] as const) {
    describe(`the pack ${mode}, under Pulumi's runner`, () => {
        let pack: Pack;
        let roce: Stack;
        before(async () => {
            [pack, roce] = await Promise.all([ready[mode], roceReady]);
        }, { timeout: 240_000 });

        if (mode === "published") {
            test("the tarball holds the pack and nothing that reaches outside it", () => {
                assert.deepEqual(publishedFiles, ["PulumiPolicy.yaml", "dist/index.js", "package.json"]);
                const bundle = readFileSync(join(scratch, "package", "dist", "index.js"), "utf8");
                const requires = [...new Set([...bundle.matchAll(/require\("([^"]+)"\)/g)].map((m) => m[1]))].sort();
                assert.deepEqual(requires.filter((r) => !["buffer", "process"].includes(r) && !r.startsWith("node:")),
                    // the package itself and its proxy module (policies/proxy.ts): both resolve inside the pack's own install
                    ["@pulumi/policy", "@pulumi/policy/proxy"]);
                assert.ok(!readdirSync(join(scratch, "package")).includes("components"));
            });
        }

        test("GetAnalyzerInfo: the pack's name and version, every policy with its metadata and config schema; Handshake is unimplemented", async () => {
            assert.equal(pack.info.name, "rdmakit");
            assert.equal(pack.info.version, JSON.parse(readFileSync(join(POLICIES, "package.json"), "utf8")).version);
            assert.deepEqual(pack.info.policies.map((p) => p.name), RDMAKIT_POLICIES.map((p) => p.name));
            assert.ok(pack.info.policies.length >= 30);
            for (const p of pack.info.policies) {
                assert.match(p.name, /^(aws-efa|azure-ib|roce|rdma)-[a-z0-9]+(-[a-z0-9]+)+$/);
                assert.ok(p.description.length > 20 && p.remediation.length > 20 && /^https:\/\//.test(p.url) && p.severity > 0, p.name);
                assert.ok(["advisory", "mandatory"].includes(p.level), p.name);
            }
            const cap = pack.info.policies.find((p) => p.name === "azure-ib-vmss-partition-capacity")!;
            assert.equal(cap.schema?.properties.partitionLimit.default, 100);
            assert.equal(cap.schema?.properties.partitionLimit.maximum, 300);
            assert.ok((pack.info.policies.find((p) => p.name === "aws-efa-imdsv2-required")!.schema?.properties.instanceFamilies.default as string[]).includes("p5"));
            assert.deepEqual(pack.info.policies.find((p) => p.name === "rdma-ssh-not-open-to-internet")!.schema?.properties.allowedSshPrefixes.default, []);
            assert.equal(await pack.handshake(), 12);
        });

        test("the clean stack of each fabric: every policy of the fabric runs and none reports anything", async () => {
            for (const [fabric, stack] of [["aws", awsStack()], ["azure", azureStack()], ["roce", roce]] as const) {
                const { diagnostics, ran } = await pack.preview(stack);
                assert.deepEqual(diagnostics, [], `${fabric}: ${JSON.stringify(diagnostics, null, 1)}`);
                const prefix = { aws: "aws-efa-", azure: "azure-ib-", roce: "roce-" }[fabric];
                for (const p of RDMAKIT_POLICIES.filter((x) => x.name.startsWith(prefix))) assert.ok(ran.has(p.name), `${p.name} should run on the ${fabric} stack`);
                if (fabric !== "roce") assert.ok(ran.has("rdma-ssh-not-open-to-internet"));
                assert.deepEqual(offlineSummary(stack), {}, `${fabric}: the offline evaluator agrees`);
            }
        });

        test("RoCE hosts on a run's stdin as text (a team's own run) are checked as the kept inventory is; a kept inventory that cannot be read is not verifiable, never passed", async () => {
            const inline = editHost(clone(roce), (h) => (h.roce_host_mtu = 4000), true);
            const { diagnostics } = await pack.preview(inline);
            assert.ok(diagnostics.some((d) => d.policy === "roce-qos-c9-mtu" && d.level === "mandatory" && /gpu02/.test(d.message)), JSON.stringify(diagnostics.map((d) => [d.policy, d.message.slice(0, 120)])));
            assert.deepEqual(offlineSummary(inline), summarize(diagnostics), "inline: offline and analyzer agree");
            // the file the stdin names, but another digest (a file edited after the program wrote it), or no such file
            for (const [why, change] of [
                ["another digest", (i: any) => (i.inventorySha256 = "0".repeat(64))],
                ["no such file", (i: any) => (i.inventoryFile = "out/policy-pack-test/inputs/gone.yml")],
            ] as const) {
                const stack = edit(clone(roce), "command:local:Command", INVENTORY_RUN, (p) => {
                    const input = JSON.parse(p.stdin);
                    change(input);
                    p.stdin = JSON.stringify(input);
                });
                const got = await pack.preview(stack);
                const c1 = got.diagnostics.filter((d) => d.policy === "roce-qos-c1-dscp-lossless-queue");
                assert.ok(c1.some((d) => d.level === "advisory" && /cannot be verified yet: .*the inventory of cluster-software-run/.test(d.message)), `${why}: ${JSON.stringify(got.diagnostics.map((d) => [d.policy, d.level, d.message.slice(0, 200)]))}`);
                assert.ok(!got.diagnostics.some((d) => d.level === "mandatory"), `${why}: ${JSON.stringify(got.diagnostics.filter((d) => d.level === "mandatory"))}`);
                assert.deepEqual(offlineSummary(stack), summarize(got.diagnostics), `${why}: offline and analyzer agree`);
            }
        });

        test("each policy's violation is reported by that policy at its level, naming the resource; the offline evaluator agrees", async () => {
            const cases = violations(() => clone(roce));
            for (const p of RDMAKIT_POLICIES) assert.ok(cases.some((c) => c.policy === p.name), `a violating case for ${p.name}`);
            for (const c of cases) {
                const stack = c.stack();
                const { diagnostics } = await pack.preview(stack);
                const mine = diagnostics.filter((d) => d.policy === c.policy && !/during preview/.test(d.message));
                assert.ok(mine.length > 0, `${c.policy} (${c.why}): no violation; got ${JSON.stringify(diagnostics.map((d) => [d.policy, d.message.slice(0, 120)]))}`);
                assert.ok(mine.every((d) => d.level === level(c.policy)), `${c.policy}: level ${mine.map((d) => d.level)}`);
                assert.ok(mine.every((d) => d.urn === "" || stack.some((r) => r.urn === d.urn)), `${c.policy}: urn`);
                assert.ok(!diagnostics.some((d) => d.message.includes("hunter2")), "a secret is never printed");
                assert.deepEqual(offlineSummary(stack), summarize(diagnostics), `${c.policy} (${c.why}): offline and analyzer agree`);
            }
        });

        test("resources on no RDMA fabric get no rdmakit diagnostic at all", async () => {
            const stack = unrelated();
            const { diagnostics } = await pack.preview(stack);
            assert.deepEqual(diagnostics, []);
            assert.deepEqual(offlineSummary(stack), {});
        });

        test("unknown at preview or outside the stack: advisory 'cannot be verified yet', never mandatory", async () => {
            for (const c of undecidable()) {
                const stack = c.stack();
                const { diagnostics } = await pack.preview(stack);
                const mine = diagnostics.filter((d) => d.policy === c.policy);
                assert.ok(mine.some((d) => /cannot be verified yet/.test(d.message) && d.level === "advisory"), `${c.policy} (${c.why}): ${JSON.stringify(diagnostics.map((d) => [d.policy, d.level, d.message.slice(0, 160)]))}`);
                assert.ok(!diagnostics.some((d) => d.level === "mandatory"), `${c.why}: ${JSON.stringify(diagnostics.filter((d) => d.level === "mandatory"))}`);
                assert.deepEqual(offlineSummary(stack), summarize(diagnostics), `${c.why}: offline and analyzer agree`);
            }
        });

        test("Configure: a team's level and config take effect (partition limit raised, SSH prefixes listed, a policy disabled)", async () => {
            const big = VMSS(azureStack(), (p) => (p.sku.capacity = 250));
            assert.ok((await pack.preview(big)).diagnostics.some((d) => d.policy === "azure-ib-vmss-partition-capacity"));
            const ssh = edit(awsStack(), T.in, "efa-ssh-office", (p) => (p.cidrIpv4 = "192.0.2.0/24"));
            await pack.configure({
                "azure-ib-vmss-partition-capacity": { partitionLimit: 300 },
                "rdma-ssh-not-open-to-internet": { allowedSshPrefixes: ["198.51.100.0/24"] },
                "aws-efa-imdsv2-required": "disabled",
            });
            try {
                assert.deepEqual((await pack.preview(big)).diagnostics, []);
                const office = edit(awsStack(), T.in, "efa-ssh-office", (p) => (p.cidrIpv4 = "8.8.8.0/24"));
                const d = (await pack.preview(office)).diagnostics;
                assert.equal(d.length, 1);
                assert.match(d[0].message, /security group efa-sg admits SSH from public addresses outside allowedSshPrefixes: 8\.8\.8\.0–8\.8\.8\.255/);
                assert.deepEqual((await pack.preview(ssh)).diagnostics, [], "192.0.2.0/24 is a documentation range, not the Internet");
                assert.deepEqual((await pack.preview(LT(awsStack(), (p) => (p.metadataOptions.httpTokens = "optional")))).diagnostics, []);
            } finally {
                await pack.configure();
            }
            void find;
        });
    });
}

// An instance attached to an EFA network interface is in scope through the ENI (stack policies).
test("an aws.ec2.Instance of an EFA family without an EFA network interface: aws-efa-interface-present names it (offline)", () => {
    const stack: EngineResource[] = [
        res(T.eni, "eth0", { subnetId: "subnet-a", interfaceType: "interface", securityGroups: ["sg-1"] }),
        res(T.inst, "trainer", { instanceType: "p5.48xlarge", ami: "ami-1", metadataOptions: { httpTokens: "required" }, primaryNetworkInterface: { networkInterfaceId: U } }, { primaryNetworkInterface: [urn(T.eni, "eth0")] }),
    ];
    const v = evaluatePolicies(subjects(stack)).find((x) => x.policy === "aws-efa-interface-present")!;
    assert.deepEqual(v.violations.map((x) => x.message), ["instance trainer (\"p5.48xlarge\") attaches no aws.ec2.NetworkInterface with interfaceType efa or efa-only"]);
    const efa = evaluatePolicies(subjects(edit(stack, T.eni, "eth0", (p) => (p.interfaceType = "efa")))).find((x) => x.policy === "aws-efa-interface-present")!;
    assert.deepEqual(efa.violations, []);
});

// C4's cable part reads the spec's real cable lengths, which no resource carries: RoceCluster checks it before it
// registers anything, and the pack, which has only the pushed text, never judges a cable (policies/rules/roce.ts).
test("the pack leaves the cable length to RoceCluster: cables of another length, of a fraction of a metre or none get no C4; the rest of C4 still runs (offline)", async () => {
    const roce = await roceReady;
    const cables = (db: Record<string, any>) => {
        const row = Object.values(db.CABLE_LENGTH)[0] as Record<string, string>;
        const [a, b, c] = Object.keys(row);
        row[a] = "300m";
        row[b] = "7.5m";
        delete row[c];
    };
    assert.deepEqual(offlineSummary(editSonic(clone(roce), cables)), {});
    const lossy = offlineSummary(editSonic(clone(roce), (db) => { cables(db); db.BUFFER_PG["Ethernet0|3"].profile = "ingress_lossy_profile"; }));
    assert.deepEqual(Object.keys(lossy), ["roce-qos-c4-lossless-buffer"]);
    assert.equal(lossy["roce-qos-c4-lossless-buffer"].mandatory, 1);
});
