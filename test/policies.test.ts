import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import { planArtifacts } from "../components/artifacts";
import type { OfflineResult } from "../components/offline";
import { planCluster } from "../components/plan";
import { sha256 } from "../components/roce/render";
import { parseClusterSpec } from "../components/spec";
import { ALL_POLICIES } from "../policies/all";
import { evaluatePolicies, type PolicySubject, type PolicyVerdict } from "../policies/evaluate";

/*
 * The policy pack, tested with the program: each bundled example runs offline in a child process (the real index.ts
 * on the mock engine, with the dependency recording the stack policies need) and every policy must pass on what it
 * registers; then each policy gets resource sets that break it, hand-made or doctored from an example's real
 * resources, and must name the resource and the value. policies/index.ts is never imported (it starts a server).
 */

const ROOT = join(__dirname, "..");
const TSX = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
const U = pulumi.runtime.unknownValue;

function node(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
    return new Promise((resolve, reject) => {
        const p = spawn(process.execPath, ["--import", TSX, ...args], { cwd: ROOT });
        let out = "";
        let err = "";
        p.stdout.on("data", (d) => (out += d));
        p.stderr.on("data", (d) => (err += d));
        p.on("error", reject);
        p.on("close", (code) => resolve({ code, out, err }));
    });
}

interface Recorded {
    stack: string;
    verdicts: PolicyVerdict[];
    resources: PolicySubject[];
}

const EXAMPLES = ["aws-p5", "azure-h100", "roce-h100"] as const;
type Example = (typeof EXAMPLES)[number];
const APPLICABLE: Record<Example, string[]> = {
    "aws-p5": [
        "aws-efa-sg-self-ingress-egress", "aws-efa-launch-template-no-public-ip", "aws-efa-launch-template-interfaces",
        "aws-efa-imdsv2-required", "aws-efa-placement-capacity-block", "aws-efa-placement-group",
    ],
    "azure-h100": ["azure-ib-vmss-single-partition", "azure-ib-vnet-rdma-range", "azure-ib-no-password-login"],
    "roce-h100": ["roce-qos-consistency"],
};

// One child per example, started once and shared by the tests below.
const recorded: Record<Example, Promise<Recorded>> = Object.fromEntries(EXAMPLES.map((x) => [x, node(["policies/check.ts", `examples/${x}.yaml`, "--json"]).then((r) => {
    assert.equal(r.code, 0, `policies/check.ts ${x}: ${r.err}`);
    return JSON.parse(r.out) as Recorded;
})])) as Record<Example, Promise<Recorded>>;

const verdict = (vs: PolicyVerdict[], name: string) => {
    const v = vs.find((x) => x.policy === name);
    assert.ok(v, `no verdict for ${name}`);
    return v;
};
const messages = (vs: PolicyVerdict[], name: string) => verdict(vs, name).violations.map((x) => x.message);
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));

describe("the bundled examples pass every policy", () => {
    for (const x of EXAMPLES) {
        test(`${x}: the policies for its fabric pass and decide; the others do not apply`, async () => {
            const { verdicts, resources } = await recorded[x];
            assert.deepEqual(verdicts.map((v) => v.policy), ALL_POLICIES.map((p) => p.name));
            assert.ok(resources.length > 5 && resources.every((r) => r.urn), "resources carry URNs from the recording");
            for (const v of verdicts) {
                if (APPLICABLE[x].includes(v.policy)) {
                    assert.equal(v.notApplicable, undefined, `${v.policy} should apply to ${x}`);
                    assert.deepEqual(v.violations, [], `${v.policy} on ${x}`);
                    assert.deepEqual(v.undecided, [], `${v.policy} on ${x} must be decided offline`);
                    assert.equal(v.ok, true);
                } else {
                    assert.ok(v.notApplicable, `${v.policy} should not apply to ${x}`);
                }
            }
            // the same verdicts when evaluated here from the recorded resources
            assert.deepEqual(evaluatePolicies(resources, { stack: x }), verdicts);
        });
    }
});

describe("rdmakit plan prints the policy verdicts", () => {
    for (const x of EXAMPLES) {
        test(`${x}: exit 0 and one line per policy of the fabric`, async () => {
            const out = mkdtempSync(join(tmpdir(), "rdmakit-policies-"));
            const r = await node(["bin/rdmakit.ts", "plan", "--config", `examples/${x}.yaml`, "--out", out]);
            assert.equal(r.code, 0, r.err + r.out);
            for (const name of APPLICABLE[x]) assert.match(r.out, new RegExp(`^ {2}(ok|warn) {1,3}${name}( |$)`, "m"));
            assert.doesNotMatch(r.out, /FAIL/);
            const doc = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
            const names = doc.checks.map((c: { name: string }) => c.name);
            for (const name of APPLICABLE[x]) assert.ok(names.includes(name), `${name} in plan.json checks`);
            for (const p of ALL_POLICIES) if (!APPLICABLE[x].includes(p.name)) assert.ok(!names.includes(p.name), `${p.name} is for another fabric`);
        });
    }
});

// ---------------------------------------------------------------------------------------------------------------
// AWS, hand-made

const urn = (type: string, name: string) => `urn:pulumi:t::rdmakit::${type}::${name}`;
const LT = "aws:ec2/launchTemplate:LaunchTemplate";
const SG = "aws:ec2/securityGroup:SecurityGroup";
const IN = "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule";
const OUT = "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule";
const ASG = "aws:autoscaling/group:Group";
const PG = "aws:ec2/placementGroup:PlacementGroup";

function res(type: string, name: string, inputs: Record<string, unknown>, propertyDependencies: Record<string, string[]> = {}): PolicySubject {
    return { type, name, custom: true, inputs, urn: urn(type, name), propertyDependencies };
}

/** p5-like interfaces: card 0 device 0 ENA, then efa-only, all in `groups`. */
function interfaces(n: number, groups: unknown[], extra: Record<string, unknown> = {}): Record<string, unknown>[] {
    return Array.from({ length: n }, (_, i) => ({
        networkCardIndex: i === 0 ? 0 : i - 1, deviceIndex: i === 0 ? 0 : i === 1 ? 1 : 0,
        interfaceType: i === 0 ? "interface" : "efa-only", securityGroups: groups, subnetId: U, ...(i === 0 ? extra : {}),
    }));
}

function template(name: string, over: Record<string, unknown> = {}, sgDeps: string[] = [urn(SG, "efa-sg")]): PolicySubject {
    return res(LT, name, {
        instanceType: "p5.48xlarge", networkInterfaces: interfaces(33, [U]),
        metadataOptions: { httpEndpoint: "enabled", httpTokens: "required" }, ...over,
    }, { networkInterfaces: sgDeps });
}

const selfRule = (type: string, name: string, sg = "efa-sg") =>
    res(type, name, { ipProtocol: "-1", securityGroupId: U, referencedSecurityGroupId: U }, { securityGroupId: [urn(SG, sg)], referencedSecurityGroupId: [urn(SG, sg)] });

const run = (rs: PolicySubject[]) => evaluatePolicies(rs, { stack: "t" });

describe("aws-efa-sg-self-ingress-egress", () => {
    const name = "aws-efa-sg-self-ingress-egress";
    test("separate rules, group ids unknown: both self rules pass; ingress only names the group and the missing egress", () => {
        const ok = run([template("lt"), res(SG, "efa-sg", { description: "efa" }), selfRule(IN, "in"), selfRule(OUT, "out")]);
        assert.equal(verdict(ok, name).ok, true);
        const bad = run([template("lt"), res(SG, "efa-sg", { description: "efa" }), selfRule(IN, "in")]);
        const m = messages(bad, name);
        assert.equal(m.length, 32, "one per EFA interface");
        assert.match(m[0], /launch template lt: EFA networkInterfaces\[1\] \(card 0, device 1\): security group efa-sg has no all-protocol \(-1\) egress rule referencing itself/);
        assert.equal(verdict(bad, name).violations[0].urn, urn(LT, "lt"));
    });
    test("a 0.0.0.0/0 egress rule or a rule to another group does not count", () => {
        const wide = res(OUT, "out-all", { ipProtocol: "-1", securityGroupId: U, cidrIpv4: "0.0.0.0/0" }, { securityGroupId: [urn(SG, "efa-sg")] });
        const other = res(OUT, "out-bastion", { ipProtocol: "-1", securityGroupId: U, referencedSecurityGroupId: U }, { securityGroupId: [urn(SG, "efa-sg")], referencedSecurityGroupId: [urn(SG, "bastion-sg")] });
        const tcp = res(OUT, "out-tcp", { ipProtocol: "tcp", fromPort: 0, toPort: 65535, securityGroupId: U, referencedSecurityGroupId: U }, { securityGroupId: [urn(SG, "efa-sg")], referencedSecurityGroupId: [urn(SG, "efa-sg")] });
        const v = run([template("lt"), res(SG, "efa-sg", {}), res(SG, "bastion-sg", {}), selfRule(IN, "in"), wide, other, tcp]);
        assert.match(messages(v, name)[0], /efa-sg has no all-protocol \(-1\) egress rule/);
    });
    test("inline rules with self: true pass; inline ingress only fails", () => {
        const both = res(SG, "efa-sg", { ingress: [{ protocol: "-1", fromPort: 0, toPort: 0, self: true }], egress: [{ protocol: "-1", fromPort: 0, toPort: 0, self: true }] });
        assert.equal(verdict(run([template("lt"), both]), name).ok, true);
        const inOnly = res(SG, "efa-sg", { ingress: [{ protocol: "-1", fromPort: 0, toPort: 0, self: true }] });
        assert.match(messages(run([template("lt"), inOnly]), name)[0], /efa-sg has no all-protocol \(-1\) egress rule/);
    });
    test("known ids: rules matched by id; a group with neither rule is named by its id", () => {
        const lt = template("lt", { networkInterfaces: interfaces(3, ["sg-0abc"]) }, []);
        const inR = res(IN, "in", { ipProtocol: "-1", securityGroupId: "sg-0abc", referencedSecurityGroupId: "sg-0abc" });
        const outR = res(OUT, "out", { ipProtocol: "-1", securityGroupId: "sg-0abc", referencedSecurityGroupId: "sg-0abc" });
        assert.equal(verdict(run([lt, inR, outR]), name).ok, true);
        const m = messages(run([lt]), name);
        assert.match(m[0], /security group sg-0abc has no all-protocol \(-1\) ingress and egress rule referencing itself/);
    });
    test("unknown ids with no dependency recorded: undecided (as the engine reports it), not a violation", () => {
        const v = verdict(run([template("lt", {}, []), res(SG, "efa-sg", {})]), name);
        assert.deepEqual(v.violations, []);
        assert.equal(v.ok, false);
        assert.match(v.undecided[0], /security groups of launch template lt .* are unknown and no dependency names them/);
    });
});

describe("aws-efa-launch-template-no-public-ip", () => {
    const name = "aws-efa-launch-template-no-public-ip";
    test("a public IP on a 33-interface template is named with its value; on a one-interface template it is allowed", () => {
        const m = messages(run([template("nodes-lt", { networkInterfaces: interfaces(33, [U], { associatePublicIpAddress: "true" }) })]), name);
        assert.deepEqual(m, ["launch template nodes-lt: networkInterfaces[0] (card 0, device 0) sets associatePublicIpAddress \"true\" on a template with 33 interfaces; EC2 refuses to launch it"]);
        assert.equal(verdict(run([template("one", { networkInterfaces: interfaces(1, [U], { associatePublicIpAddress: "true" }) })]), name).ok, true);
        assert.equal(verdict(run([template("nodes-lt", { networkInterfaces: interfaces(33, [U], { associatePublicIpAddress: "false" }) })]), name).ok, true);
    });
});

describe("aws-efa-launch-template-interfaces", () => {
    const name = "aws-efa-launch-template-interfaces";
    test("no EFA interface on an EFA instance type", () => {
        const ifaces = interfaces(2, [U]).map((i) => ({ ...i, interfaceType: "interface" }));
        assert.match(messages(run([template("lt", { networkInterfaces: ifaces })]), name)[0], /launch template lt \(instance type "p5\.48xlarge"\): none of its 2 interfaces is efa or efa-only \(interfaceType \["interface"\]\)/);
    });
    test("a repeated (card, device), an efa-only primary, an interface without groups, vpcSecurityGroupIds", () => {
        const ifaces = interfaces(4, [U]);
        ifaces[3] = { ...ifaces[2] };
        ifaces[0] = { ...ifaces[0], interfaceType: "efa-only" };
        ifaces[1] = { ...ifaces[1], securityGroups: [] };
        const m = messages(run([template("lt", { networkInterfaces: ifaces, vpcSecurityGroupIds: ["sg-0abc"] })]), name);
        assert.ok(m.some((x) => /networkInterfaces\[3\] \(card 1, device 0\) repeats networkCardIndex 1 \/ deviceIndex 0 of networkInterfaces\[2\]/.test(x)), m.join("\n"));
        assert.ok(m.some((x) => /networkInterfaces\[0\] \(card 0, device 0\) is efa-only, which cannot be the primary/.test(x)), m.join("\n"));
        assert.ok(m.some((x) => /networkInterfaces\[1\] \(card 0, device 1\) has no securityGroups \(\[\]\)/.test(x)), m.join("\n"));
        assert.ok(m.some((x) => /launch template lt: sets vpcSecurityGroupIds \["sg-0abc"\] together with networkInterfaces/.test(x)), m.join("\n"));
        assert.equal(m.length, 4);
    });
    test("a template for a non-EFA instance type without EFA interfaces is not checked", () => {
        const v = verdict(run([res(LT, "cpu-lt", { instanceType: "t3.micro", metadataOptions: { httpTokens: "required" } })]), name);
        assert.ok(v.notApplicable);
    });
});

describe("aws-efa-imdsv2-required", () => {
    test("httpTokens optional on a template, unset on an instance", () => {
        const v = run([
            template("lt", { metadataOptions: { httpEndpoint: "enabled", httpTokens: "optional" } }),
            res("aws:ec2/instance:Instance", "bastion", { instanceType: "t3.micro" }),
        ]);
        assert.deepEqual(messages(v, "aws-efa-imdsv2-required").map((m) => m.split(";")[0]), [
            "launch template lt: metadataOptions.httpTokens is \"optional\", not \"required\"",
            "instance bastion: metadataOptions.httpTokens is (not set), not \"required\"",
        ]);
    });
});

describe("aws-efa-placement-*", () => {
    const group = (over: Record<string, unknown>, deps: Record<string, string[]>) =>
        res(ASG, "nodes", { minSize: 4, maxSize: 4, launchTemplate: { id: U, version: U }, ...over }, { launchTemplate: [urn(LT, "lt")], ...deps });
    const cbTemplate = template("lt", { instanceMarketOptions: { marketType: "capacity-block" }, capacityReservationSpecification: { capacityReservationTarget: { capacityReservationId: "cr-0123" } } });
    test("capacity block + placement group is a mandatory violation naming the group and the placement group", () => {
        const v = run([cbTemplate, res(PG, "pg", { strategy: "cluster" }), group({ placementGroup: "p5-pg" }, { placementGroup: [urn(PG, "pg")] })]);
        const vd = verdict(v, "aws-efa-placement-capacity-block");
        assert.equal(vd.enforcementLevel, "mandatory");
        assert.deepEqual(vd.violations.map((x) => x.message), [
            "auto scaling group nodes: launch template lt targets a Capacity Block (marketType \"capacity-block\") and the group also sets placement group p5-pg",
        ]);
        assert.equal(verdict(run([cbTemplate, group({}, {})]), "aws-efa-placement-capacity-block").ok, true);
        assert.equal(verdict(run([cbTemplate, group({}, {})]), "aws-efa-placement-group").ok, true, "no placement group is right with a capacity block");
    });
    test("no placement group and no capacity block: advisory; a spread group is named with its strategy", () => {
        const none = verdict(run([template("lt"), group({}, {})]), "aws-efa-placement-group");
        assert.equal(none.enforcementLevel, "advisory");
        assert.match(none.violations[0].message, /auto scaling group nodes \(launch template lt\) has no placement group and no Capacity Block/);
        const spread = verdict(run([template("lt"), res(PG, "pg", { strategy: "spread" }), group({ placementGroup: U }, { placementGroup: [urn(PG, "pg")] })]), "aws-efa-placement-group");
        assert.deepEqual(spread.violations.map((x) => x.message), ["auto scaling group nodes: placement group pg has strategy \"spread\", not \"cluster\""]);
        const cluster = verdict(run([template("lt"), res(PG, "pg", { strategy: "cluster" }), group({ placementGroup: U }, { placementGroup: [urn(PG, "pg")] })]), "aws-efa-placement-group");
        assert.equal(cluster.ok, true);
    });
});

test("the real AWS example, doctored: without the self egress rule the policy names the EFA group", async () => {
    const { resources } = await recorded["aws-p5"];
    const v = run(clone(resources).filter((r) => !r.name.endsWith("-efa-self-out")));
    assert.match(messages(v, "aws-efa-sg-self-ingress-egress")[0], /launch template cluster-aws-lt: EFA networkInterfaces\[1\] \(card 0, device 1\): security group cluster-aws-efa-sg has no all-protocol \(-1\) egress rule referencing itself/);
});

// ---------------------------------------------------------------------------------------------------------------
// Azure

const VMSS = "azure-native:compute:VirtualMachineScaleSet";
function scaleSet(over: Record<string, unknown> = {}, os: Record<string, unknown> = {}): PolicySubject {
    return res(VMSS, "ib-vmss", {
        sku: { name: "Standard_ND96isr_H100_v5", capacity: 4 }, orchestrationMode: "Uniform", singlePlacementGroup: true,
        platformFaultDomainCount: 1, overprovision: false,
        virtualMachineProfile: { osProfile: { adminUsername: "azureuser", linuxConfiguration: { disablePasswordAuthentication: true }, ...os } },
        ...over,
    });
}

describe("azure-ib-*", () => {
    test("vmss-single-partition: singlePlacementGroup false, 3 fault domains, Flexible, overprovision, 400 VMs", () => {
        const name = "azure-ib-vmss-single-partition";
        assert.equal(verdict(run([scaleSet()]), name).ok, true);
        assert.deepEqual(messages(run([scaleSet({ singlePlacementGroup: false })]), name), [
            "VM scale set ib-vmss (Standard_ND96isr_H100_v5): singlePlacementGroup is false, must be true: IB only connects VMs of one placement group, and false cannot be changed back to true",
        ]);
        const m = messages(run([scaleSet({ orchestrationMode: "Flexible", platformFaultDomainCount: 3, overprovision: true, sku: { name: "Standard_ND96isr_H100_v5", capacity: 400 } })]), name);
        assert.equal(m.length, 4, m.join("\n"));
        assert.match(m[0], /orchestrationMode is "Flexible", must be "Uniform"/);
        assert.match(m[1], /platformFaultDomainCount is 3, must be 1/);
        assert.match(m[2], /overprovision is true, must be false/);
        assert.match(m[3], /VM scale set ib-vmss: sku\.capacity 400 exceeds 300/);
        assert.ok(verdict(run([scaleSet({ sku: { name: "Standard_D4s_v5", capacity: 2 }, singlePlacementGroup: false })]), name).notApplicable, "not an IB size");
    });
    test("vnet-rdma-range: a VNet 172.16.0.0/12 and a subnet 172.16.5.0/24 overlap Azure's RDMA range", () => {
        const name = "azure-ib-vnet-rdma-range";
        const v = run([
            res("azure-native:network:VirtualNetwork", "vnet", { addressSpace: { addressPrefixes: ["10.10.0.0/16", "172.16.0.0/12"] } }),
            res("azure-native:network:Subnet", "subnet", { addressPrefix: "172.16.5.0/24", virtualNetworkName: U }),
            res("azure-native:network:VirtualNetwork", "ok-vnet", { addressSpace: { addressPrefixes: ["172.17.0.0/16", "fd00::/48"] } }),
        ]);
        assert.deepEqual(messages(v, name), [
            "virtual network vnet: addressSpace.addressPrefixes 172.16.0.0/12 overlaps 172.16.0.0/16, which Azure reserves for the RDMA (InfiniBand) network",
            "subnet subnet: addressPrefix 172.16.5.0/24 overlaps 172.16.0.0/16, which Azure reserves for the RDMA (InfiniBand) network",
        ]);
    });
    test("no-password-login: password auth on, a password given (never printed)", () => {
        const name = "azure-ib-no-password-login";
        const m = messages(run([scaleSet({}, { adminPassword: "hunter2-secret", linuxConfiguration: { disablePasswordAuthentication: false } })]), name);
        assert.deepEqual(m, [
            "VM scale set ib-vmss: osProfile.linuxConfiguration.disablePasswordAuthentication is false, must be true",
            "VM scale set ib-vmss: osProfile.adminPassword is set; log in with SSH keys only",
        ]);
        assert.ok(!m.join().includes("hunter2"));
        const vm = res("azure-native:compute:VirtualMachine", "jump", { osProfile: { adminUsername: "azureuser", linuxConfiguration: {} } });
        assert.deepEqual(messages(run([vm]), name), ["VM jump: osProfile.linuxConfiguration.disablePasswordAuthentication is (not set), must be true"]);
    });
});

// ---------------------------------------------------------------------------------------------------------------
// RoCE: the real example's pushes and inventory, doctored


/** The provisioning command's inventory (on its stdin) and a setter for it. */
function inventoryOf(rs: PolicySubject[]): { doc: any; write(doc: any): void } {
    const cmd = rs.find((r) => r.name.endsWith("-software-run"))!;
    const inputs = cmd.inputs as any;
    const run = JSON.parse(inputs.stdin);
    return {
        doc: parseYaml(run.inventory),
        write: (doc) => (inputs.stdin = JSON.stringify({ ...run, inventory: JSON.stringify(doc) })),
    };
}

describe("roce-qos-consistency", () => {
    const name = "roce-qos-consistency";
    test("a host whose NCCL_IB_TC says DSCP 24 disagrees with every switch port (C1) and with its own rdma_cm ToS", async () => {
        const rs = clone((await recorded["roce-h100"]).resources);
        const inv = inventoryOf(rs);
        inv.doc.all.hosts.gpu02.nccl_conf.NCCL_IB_TC = "98";
        inv.write(inv.doc);
        const m = messages(run(rs), name);
        assert.ok(m.some((x) => x.startsWith("[C1] gpu02: rdma_cm ToS 106 (DSCP 26) and NCCL_IB_TC 98 (DSCP 24) disagree")), m.slice(0, 3).join("\n"));
        assert.ok(m.some((x) => /^\[C1\] gpu02, leaf-sonic:Ethernet0: host sends RoCE with DSCP 24; .*checked on cluster-roce-leaf-sonic-qos\)$/.test(x)), m.slice(0, 3).join("\n"));
        assert.ok(!m.some((x) => /gpu01/.test(x)), "the untouched hosts agree");
    });
    test("a pushed SONiC text edited after rendering: the digest check and C1 on that switch", async () => {
        const rs = clone((await recorded["roce-h100"]).resources);
        const push = rs.find((r) => r.name === "cluster-roce-leaf-sonic-qos")!;
        const cfg = JSON.parse((push.inputs as any).stdin);
        const maps = cfg.DSCP_TO_TC_MAP as Record<string, Record<string, string>>;
        for (const m of Object.values(maps)) m["26"] = "0";
        (push.inputs as any).stdin = JSON.stringify(cfg, null, 2);
        const m = messages(run(rs), name);
        assert.match(m[0], new RegExp(`^switch push cluster-roce-leaf-sonic-qos: the stdin text of leaf-sonic has sha256 ${sha256((push.inputs as any).stdin)} but the script expects [0-9a-f]{64}`));
        assert.ok(m.some((x) => /^\[C1\] gpu01, gpu02, gpu03, gpu04, leaf-sonic:Ethernet0: host sends RoCE with DSCP 26; leaf-sonic:Ethernet0 maps it to TC 0/.test(x)), m.slice(0, 3).join("\n"));
        assert.ok(!m.some((x) => /leaf-nvue/.test(x)), "the other switch is untouched");
        assert.equal(verdict(run(rs), name).violations[0].urn, push.urn);
    });
});

// ---------------------------------------------------------------------------------------------------------------
// planArtifacts: the verdicts become plan checks; a mandatory violation is a failing mandatory check

test("planArtifacts turns a mandatory violation into a failing mandatory check named after the policy", async () => {
    const { resources } = await recorded["azure-h100"];
    const spec = parseClusterSpec(parseYaml(readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8")).config["rdmakit:cluster"]);
    const base: OfflineResult = { stack: "azure-h100", spec, plan: planCluster(spec), resources, invokes: [], hasSecretKey: true };
    const good = planArtifacts(base).checks.filter((c) => c.name.startsWith("azure-ib-"));
    assert.deepEqual(good.map((c) => [c.name, c.ok]), [["azure-ib-vmss-single-partition", true], ["azure-ib-vnet-rdma-range", true], ["azure-ib-no-password-login", true]]);

    const doctored = clone(resources);
    const vmss = doctored.find((r) => r.type === VMSS)!;
    (vmss.inputs as any).singlePlacementGroup = false;
    const checks = planArtifacts({ ...base, resources: doctored }).checks;
    const c = checks.find((x) => x.name === "azure-ib-vmss-single-partition")!;
    assert.deepEqual({ ok: c.ok, mandatory: c.mandatory }, { ok: false, mandatory: true });
    assert.match(c.detail!, /VM scale set cluster-azure-vmss \(Standard_ND96isr_H100_v5\): singlePlacementGroup is false, must be true/);
    // runPlan exits 1 exactly when some check is mandatory and not ok (components/cli/plan.ts)
    assert.ok(checks.some((x) => !x.ok && x.mandatory));

    // an advisory policy's violation is a warning, not a failure
    const aws = (await recorded["aws-p5"]).resources;
    const awsSpec = parseClusterSpec(parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"]);
    const noPg = clone(aws).filter((r) => r.type !== PG).map((r) => (r.type === ASG ? { ...r, inputs: { ...(r.inputs as object), placementGroup: undefined } } : r));
    const pg = planArtifacts({ stack: "aws-p5", spec: awsSpec, plan: planCluster(awsSpec), resources: noPg, invokes: [], hasSecretKey: true }).checks.find((x) => x.name === "aws-efa-placement-group")!;
    assert.deepEqual({ ok: pg.ok, mandatory: pg.mandatory }, { ok: false, mandatory: false });
    assert.match(pg.detail!, /auto scaling group cluster-aws-nodes \(launch template cluster-aws-lt\) has no placement group/);
});

test("every policy has a kebab-case <fabric>-<what>-<rule> name, a description, a level and remediation text", () => {
    const names = ALL_POLICIES.map((p) => p.name);
    assert.equal(new Set(names).size, names.length);
    for (const p of ALL_POLICIES) {
        assert.match(p.name, /^(aws-efa|azure-ib|roce)(-[a-z0-9]+){2,}$/, p.name);
        assert.ok(p.description.length > 20 && p.description.endsWith("."), p.name);
        assert.ok(p.enforcementLevel === "mandatory" || p.enforcementLevel === "advisory", p.name);
        assert.ok((p.remediationSteps ?? "").length > 20, p.name);
    }
});
