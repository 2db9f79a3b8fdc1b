import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

/*
 * `rdmakit plan --program`: a team's own Pulumi program (its own folder, its own Pulumi.yaml and stack file, its own
 * node_modules) run by the real CLI on the mock engine, and the pack's verdicts on what it registered.
 */

const ROOT = join(__dirname, "..");

function plan(args: string[]) {
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, join(ROOT, "bin", "rdmakit.ts"), "plan", ...args], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A program folder as `pulumi new typescript` leaves it, its packages being the repository's (a symlinked node_modules). */
function programDir(files: Record<string, string>): string {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-program-"));
    symlinkSync(join(ROOT, "node_modules"), join(dir, "node_modules"));
    writeFileSync(join(dir, "Pulumi.yaml"), "name: gpu-team\nruntime: nodejs\n");
    for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
    return dir;
}

const AWS_PROGRAM = `
import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
const cfg = new pulumi.Config();
const sg = new aws.ec2.SecurityGroup("efa", { vpcId: "vpc-1" });
new aws.vpc.SecurityGroupIngressRule("self-in", { securityGroupId: sg.id, referencedSecurityGroupId: sg.id, ipProtocol: "-1" });
new aws.vpc.SecurityGroupEgressRule("self-out", { securityGroupId: sg.id, referencedSecurityGroupId: sg.id, ipProtocol: "-1" });
const cards = cfg.getNumber("cards") ?? 32;
const nics = [{ networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface", securityGroups: [sg.id], subnetId: "subnet-1" },
    ...Array.from({ length: cards }, (_, i) => ({ networkCardIndex: i, deviceIndex: i === 0 ? 1 : 0, interfaceType: "efa-only", securityGroups: [sg.id], subnetId: "subnet-1" }))];
const pg = new aws.ec2.PlacementGroup("pg", { strategy: "cluster" });
const lt = new aws.ec2.LaunchTemplate("nodes", { instanceType: "p5.48xlarge", imageId: "ami-1", networkInterfaces: nics, metadataOptions: { httpTokens: cfg.get("httpTokens") ?? "required" } });
new aws.autoscaling.Group("nodes", { minSize: 2, maxSize: 2, vpcZoneIdentifiers: ["subnet-1"], placementGroup: pg.id, launchTemplate: { id: lt.id, version: "$Latest" } });
// not on the fabric: a CPU template without IMDSv2 and a g5 inference template without EFA
new aws.ec2.LaunchTemplate("cpu", { instanceType: "c7i.large", imageId: "ami-2" });
new aws.ec2.LaunchTemplate("inference", { instanceType: "g5.12xlarge", imageId: "ami-3", metadataOptions: { httpTokens: "optional" } });
`;

test("a team's TypeScript program with its stack file: the verdicts on its EFA template; unrelated templates are not checked", () => {
    const dir = programDir({ "index.ts": AWS_PROGRAM, "Pulumi.dev.yaml": "config:\n  aws:region: us-east-1\n", "Pulumi.loose.yaml": "config:\n  gpu-team:httpTokens: optional\n  cards: 31\n" });
    const ok = plan(["--program", dir, "--stack", "dev"]);
    assert.equal(ok.code, 0, ok.err + ok.out);
    assert.match(ok.out, /program .*index\.ts \(project gpu-team, stack dev\)/);
    assert.match(ok.out, /^ {2}ok {3}aws-efa-imdsv2-required \(mandatory\)$/m);
    assert.match(ok.out, /^ {2}ok {3}aws-efa-placement-cluster \(advisory\)$/m);
    assert.match(ok.out, /^ {2}ok {3}aws-efa-sg-self-egress \(mandatory\)$/m);
    assert.match(ok.out, /^ +3 {2}aws:ec2\/launchTemplate:LaunchTemplate$/m);
    assert.doesNotMatch(ok.out, /cpu|inference|FAIL|warn/);

    const loose = plan(["--program", join(dir, "index.ts"), "--config", join(dir, "Pulumi.loose.yaml")]);
    assert.equal(loose.code, 1, loose.err + loose.out);
    assert.match(loose.out, /^ {2}FAIL aws-efa-imdsv2-required \(mandatory\) — launch template nodes: metadataOptions\.httpTokens is "optional", not "required"/m);
    assert.match(loose.out, /^ {2}FAIL aws-efa-interface-every-card \(mandatory\) — launch template nodes \(p5\.48xlarge, 32 network cards, 32 EFA\): no EFA interface on card 31/m);
    assert.doesNotMatch(loose.out, /launch template (cpu|inference)/);

    const json = plan(["--program", dir, "--json"]);
    assert.equal(json.code, 0, json.err);
    const doc = JSON.parse(json.out);
    assert.equal(doc.project, "gpu-team");
    const asg = doc.resources.find((r: { type: string }) => r.type === "aws:autoscaling/group:Group");
    assert.match(asg.urn, /^urn:pulumi:dev::gpu-team::aws:autoscaling\/group:Group::nodes$/);
    assert.deepEqual(asg.propertyDependencies.launchTemplate, ["urn:pulumi:dev::gpu-team::aws:ec2/launchTemplate:LaunchTemplate::nodes"]);
});

test("a JavaScript program that exports an async function: an Azure scale set of an IB size in Flexible mode fails", () => {
    const dir = programDir({
        "package.json": JSON.stringify({ name: "azure-team", main: "main.js" }),
        "main.js": `
const compute = require("@pulumi/azure-native/compute");
module.exports = async () => {
    new compute.VirtualMachineScaleSet("gpu", {
        resourceGroupName: "rg", sku: { name: "Standard_ND96isr_H100_v5", capacity: 2 }, orchestrationMode: "Flexible",
        singlePlacementGroup: true, platformFaultDomainCount: 1, overprovision: false,
    });
    new compute.VirtualMachineScaleSet("web", { resourceGroupName: "rg", sku: { name: "Standard_D2s_v5", capacity: 500 }, orchestrationMode: "Flexible" });
};`,
    });
    const r = plan(["--program", dir]);
    assert.equal(r.code, 1, r.err + r.out);
    assert.match(r.out, /^ {2}FAIL azure-ib-vmss-uniform-orchestration \(mandatory\) — VM scale set gpu \(Standard_ND96isr_H100_v5\): orchestrationMode is "Flexible", must be "Uniform"/m);
    assert.doesNotMatch(r.out, /VM scale set web/);
});

test("bad input exits 2 and says what is wrong: no program, no stack file, a program that throws", () => {
    const missing = plan(["--program", join(tmpdir(), "rdmakit-no-such-program")]);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /rdmakit-no-such-program: does not exist; allowed: a Pulumi program folder/);
    const dir = programDir({ "index.ts": "throw new Error(\"boom from the team's program\");\n" });
    const noStack = plan(["--program", dir, "--stack", "prod"]);
    assert.equal(noStack.code, 2);
    assert.match(noStack.err, /Pulumi\.prod\.yaml does not exist/);
    const both = plan(["--program", dir, "--stack", "prod", "--config", "x.yaml"]);
    assert.equal(both.code, 2);
    assert.match(both.err, /give --stack or --config, not both/);
    const boom = plan(["--program", dir]);
    assert.equal(boom.code, 2);
    assert.match(boom.err, /the program .* failed on the mock engine: boom from the team's program/);
});

// Issue 25, F5: a launch template with no type and no EFA interface of its own, launched by an Auto Scaling group as
// p5.48xlarge through mixedInstancesPolicy overrides, took every policy out of scope; SSH from the internet minus one
// address passed. The red team's program, through the real CLI.
const MINUS_ONE = `
const minusOne: string[] = [];
for (let len = 1; len <= 32; len++) {
    const net = (((0x01020304 >>> (32 - len)) ^ 1) << (32 - len)) >>> 0;
    minusOne.push(\`\${[24, 16, 8, 0].map((s) => (net >>> s) & 255).join(".")}/\${len}\`);
}`;
const overridden = (overrides: string) => `
import * as aws from "@pulumi/aws";
${MINUS_ONE}
const sg = new aws.ec2.SecurityGroup("nodes", { vpcId: "vpc-1", ingress: [{ protocol: "tcp", fromPort: 22, toPort: 22, cidrBlocks: minusOne }] });
const lt = new aws.ec2.LaunchTemplate("generic", { imageId: "ami-1",
    metadataOptions: { httpTokens: "optional", httpPutResponseHopLimit: 3 },
    networkInterfaces: [{ associatePublicIpAddress: "true", securityGroups: [sg.id] }, { deviceIndex: 1, securityGroups: [sg.id] }] });
new aws.autoscaling.Group("gpu", { minSize: 2, maxSize: 2, vpcZoneIdentifiers: ["subnet-1"],
    mixedInstancesPolicy: { launchTemplate: { launchTemplateSpecification: { launchTemplateId: lt.id, version: "$Latest" }, overrides: ${overrides} } } });
`;

test("a template launched as p5.48xlarge only through an ASG's overrides is checked as an EFA template; SSH from the internet minus one address fails", () => {
    const r = plan(["--program", programDir({ "index.ts": overridden(`[{ instanceType: "m7i.large" }, { instanceType: "p5.48xlarge" }]`) })]);
    assert.equal(r.code, 1, r.err + r.out);
    const line = r.out.split("\n").find((l) => l.includes("aws-efa-template-launched-as-rdma")) ?? "";
    assert.match(line, /^ {2}FAIL aws-efa-template-launched-as-rdma \(mandatory\) — /);
    assert.match(line, /aws-efa-imdsv2-required: launch template generic: metadataOptions\.httpTokens is "optional", not "required".* \(as auto scaling group gpu launches it: p5\.48xlarge\)/);
    assert.match(line, /aws-efa-no-public-ip: launch template generic: networkInterfaces\[0\] .* associatePublicIpAddress "true"/);
    assert.match(r.out, /^ {2}FAIL rdma-ssh-not-open-to-internet \(mandatory\) — security group nodes admits SSH \(TCP 22\) from 100 % of the public IPv4 Internet \(3702258687 addresses\), more than maxPublicShare \(0\.1 %\)$/m);

    const attrs = plan(["--program", programDir({ "index.ts": overridden(`[{ instanceRequirements: { vcpuCount: { min: 192 }, memoryMib: { min: 2000000 } } }]`) })]);
    assert.match(attrs.out, /^ {2}warn aws-efa-template-launched-as-rdma \(mandatory\) — .*auto scaling group gpu picks the instance types of generic by attributes \(instanceRequirements\), so whether it is on an EFA fabric cannot be verified/m);
});

// Issue 25, F4: the SSH policy never looked at the bastion's security group, where allowedCidrs opens SSH.
test("the kit's AWS stack with SSH open to the internet on purpose: the policy fails on the bastion's security group", () => {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-open-"));
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    Object.assign(doc.config["rdmakit:cluster"].ssh, { allowedCidrs: ["0.0.0.0/0"], allowInternet: true });
    writeFileSync(join(dir, "Pulumi.open.yaml"), toYaml(doc));
    const r = plan(["--config", join(dir, "Pulumi.open.yaml")]);
    assert.equal(r.code, 1, r.err + r.out);
    assert.match(r.out, /FAIL rdma-ssh-not-open-to-internet.* — security group cluster-aws-bastion-sg admits SSH \(TCP 22\) from the whole IPv4 Internet/);
});
