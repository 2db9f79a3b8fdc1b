import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync, existsSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify } from "yaml";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

/*
 * `rdmakit plan` end to end, as a user runs it: the real CLI in a child process, the bundled examples, the
 * files it writes. It runs index.ts, the same program as `pulumi up`, on Pulumi's mock engine.
 */

const ROOT = join(__dirname, "..");

function plan(args: string[], cwd = ROOT) {
    // tsx by absolute URL, so the CLI also runs from another working directory (e.g. one holding Pulumi.<stack>.yaml)
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, join(ROOT, "bin", "rdmakit.ts"), "plan", ...args], {
        cwd, encoding: "utf8", timeout: 120_000,
    });
    return { code: r.status, out: r.stdout, err: r.stderr };
}

function tmp(): string {
    return mkdtempSync(join(tmpdir(), "rdmakit-plan-"));
}

test("with no arguments it plans the bundled AWS example and writes plan.json and the artifacts", () => {
    const out = tmp();
    const r = plan(["--out", out]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /nodes\s+4 × p5\.48xlarge\s+\(8 × H100-80GB each, 32 GPUs\)/);
    assert.match(r.out, /card 31 {2}device 0 {2}efa-only/);
    assert.match(r.out, /1 {2}aws:autoscaling\/group:Group/);
    assert.match(r.out, /NCCL_SOCKET_IFNAME=\^docker,lo,veth/);
    assert.match(r.out, /all 4 nodes\s+busbw >= 285\.6 GB\/s/);
    // where the node software runs: on the nodes, the default
    assert.match(r.out, /^node software: node-local \(plan\.provision\.mode\): each node runs site\.yml on itself/m);
    const doc = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
    assert.equal(doc.spec.fabric, "aws-efa");
    assert.equal(doc.plan.provision.mode, "node-local");
    assert.equal(doc.plan.aws.interfaces.length, 33);
    const lt = doc.resources.find((x: any) => x.type === "aws:ec2/launchTemplate:LaunchTemplate");
    assert.equal(lt.inputs.networkInterfaces.length, 33);
    assert.equal(lt.inputs.metadataOptions.httpTokens, "required");
    // values only the cloud knows are shown as such, never made up
    // two AMI lookups (nodes, bastion); the node-IP lookup waits for the group, so offline it is not made
    // the questions asked of AWS before anything is created (answered "unknown" offline), then the two AMI lookups
    assert.deepEqual(doc.invokes.map((i: any) => i.token).sort(), [
        "aws:ec2/getAmi:getAmi", "aws:ec2/getAmi:getAmi", "aws:ec2/getInstanceType:getInstanceType",
        "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings", "aws:index/getCallerIdentity:getCallerIdentity",
        "aws:servicequotas/getServiceQuota:getServiceQuota",
    ]);
    // what pulumi up asks first, listed: the CLI's account against the provider's, the root volume against the AMI
    assert.match(r.out, /asked of AWS at pulumi up, before anything is created \(not checked offline\):[\s\S]*- the AWS CLI where pulumi up runs \(the capacity wait\) is signed in to the provider's account/);
    assert.match(r.out, /- the root volume \(200 GiB\) holds the node AMI's root snapshot/);
    // the quota against the need and what other instances already run (counted with the AWS CLI at pulumi up)
    assert.match(r.out, /- Running On-Demand P instances \(L-417A185B\) covers 4 nodes' vCPUs on top of the vCPUs other running On-Demand P instances in us-east-2 already use \(servicequotas:GetServiceQuota; running vCPUs counted with the AWS CLI's aws ec2 describe-instances, this cluster's own nodes left out\)/);
    assert.ok(!JSON.stringify(doc).includes("04da6b54-80e4-46f7-96ec-b56ff0331ba9"), "no raw unknown sentinel");
    assert.ok(JSON.stringify(doc.resources).includes("(known after apply)"));
    const inventory = parseYaml(readFileSync(join(out, "inventory.yml"), "utf8"));
    assert.equal(Object.keys(inventory.all.hosts).length, 4);
    assert.equal(inventory.all.vars.rdmakit_fabric, "aws-efa");
    assert.equal(readFileSync(join(out, "nccl.env"), "utf8"), "FI_PROVIDER=efa\nNCCL_SOCKET_IFNAME=^docker,lo,veth\n");
    assert.equal(readFileSync(join(out, "hostfile"), "utf8").trim().split("\n").length, 4);
});

test("the RoCE example renders every switch config (leaves and spine) and passes C1-C17", () => {
    const out = tmp();
    const r = plan(["--config", "examples/roce-h100.yaml", "--out", out]);
    assert.equal(r.code, 0, r.err);
    for (const rule of ["C1", "C7", "C13", "C14", "C15", "C16", "C17"]) assert.match(r.out, new RegExp(`ok {3}${rule} `));
    for (const f of ["leaf-sonic.config_db.json", "leaf-nvue.nvue.yaml", "spine.config_db.json"]) assert.ok(existsSync(join(out, "switches", f)), f);
    // the SN4700 leaves have no published headroom table: C16 says so instead of guessing
    // a check that could not be made is "skip", never "ok"
    assert.match(r.out, / skip C16 headroom vs switch buffer, where the catalog has no published figures — [^\n]*leaf-sonic \(SN4700\)/);
    // a key the stack file does not hold is said to be missing, not "set as a secret"
    assert.match(r.out, /warn rdmakit:sshPrivateKey is not set \(Ansible needs it during pulumi up\) — pulumi config set --secret/);
    assert.match(readFileSync(join(out, "nccl.env"), "utf8"), /^NCCL_IB_TC=106$/m);
    // the summary names the switch folder once with its count, not each text (384 names on a 2,048-host fabric)
    assert.match(r.out, /^wrote .*: plan\.json .*\bswitches\/ \(3 files\)$/m);
    assert.doesNotMatch(r.out, /switches\/leaf-sonic/);
});

test("an invalid spec exits 2 with every problem named and no stack trace", () => {
    const dir = tmp();
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    doc.config["rdmakit:cluster"].nodes = -1;
    doc.config["rdmakit:cluster"].aws.instanceType = "p5.48xlarg";
    const file = join(dir, "Pulumi.broken.yaml");
    writeFileSync(file, stringify(doc));
    const r = plan(["--stack", "broken", "--out", join(dir, "out")], dir);
    assert.equal(r.code, 2);
    assert.match(r.err, /cluster\.nodes: is too small \(got -1\); allowed: >= 1/);
    assert.doesNotMatch(r.err, /\n\s+at /, "no stack trace");
    assert.ok(!existsSync(join(dir, "out", "plan.json")), "nothing written");
});

test("a private key in plain text is refused without being printed", () => {
    const dir = tmp();
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8"));
    doc.config["rdmakit:sshPrivateKey"] = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n";
    const file = join(dir, "stack.yaml");
    writeFileSync(file, stringify(doc));
    const r = plan(["--config", file, "--out", join(dir, "out")]);
    assert.equal(r.code, 2);
    assert.match(r.err, /rdmakit:sshPrivateKey: is stored in plain text/);
    assert.ok(!(r.out + r.err).includes("b3BlbnNzaC1rZXktdjEAAAAA"));
});

test("the Azure example's plan lists what pulumi up asks Azure first: the image version and the jump host", () => {
    const r = plan(["--config", "examples/azure-h100.yaml", "--out", tmp()]);
    assert.equal(r.code, 0, r.err);
    assert.match(r.out, /asked of Azure at pulumi up, before anything is created \(not checked offline\):/);
    assert.match(r.out, /- Standard_ND96isr_H100_v5, the jump host's Standard_B2s and the Slurm head VM's Standard_D8s_v5 offered in eastus/);
    assert.match(r.out, /cover 4 nodes and the jump host/);
    assert.match(r.out, /- image microsoft-dsvm:ubuntu-hpc:2204:22\.04\.2026072901 exists in eastus; if not, the newest versions are listed/);
});

test("an Azure cluster in an existing subnet: no network or jump host planned, the subnet asked of Azure, the nodes reached directly", () => {
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8"));
    const subnetId = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu/subnets/gpu";
    doc.config["rdmakit:cluster"].azure.network = { subnetId };
    const dir = tmp();
    const config = join(dir, "Pulumi.spoke.yaml");
    writeFileSync(config, stringify(doc));
    const out = join(dir, "out");
    const r = plan(["--config", config, "--out", out]);
    assert.equal(r.code, 0, r.err + r.out);
    for (const gone of ["VirtualNetwork", "Subnet", "NatGateway", "PublicIPAddress"]) {
        assert.doesNotMatch(r.out, new RegExp(`azure-native:network:${gone}\\b`), `${gone} planned`);
    }
    // one VM and one NIC: the Slurm head node's (Slurm is on by default on azure-ib), no jump host's
    assert.match(r.out, /^ +1 {2}azure-native:compute:VirtualMachine$/m);
    assert.match(r.out, /^ +1 {2}azure-native:network:NetworkInterface$/m);
    assert.match(r.out, /^ +1 {2}azure-native:compute:VirtualMachineScaleSet$/m);
    assert.match(r.out, /- the subnet \(cluster\.azure\.network\.subnetId\) exists, is in the stack's subscription and its VNet in eastus/);
    assert.doesNotMatch(r.out, /jump host/);
    const inventory = readFileSync(join(out, "inventory.yml"), "utf8");
    assert.doesNotMatch(inventory, /ProxyCommand|bastion/, "no hop: the nodes' private addresses are reached over the estate's own route");
});

test("a missing stack file exits 2 and says what to give", () => {
    const r = plan(["--config", "examples/nope.yaml"]);
    assert.equal(r.code, 2);
    assert.match(r.err, /does not exist/);
});

test("what the fabric component would refuse is reported by the plan too, before anything runs", () => {
    const dir = tmp();
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    // an existing VPC has no public subnet of the kit's, so the default bastion cannot be placed
    doc.config["rdmakit:cluster"].aws.network = { vpcId: "vpc-0123abcd", subnets: [{ id: "subnet-0123abcd", availabilityZone: "us-east-2b" }] };
    const file = join(dir, "stack.yaml");
    writeFileSync(file, stringify(doc));
    const r = plan(["--config", file, "--out", join(dir, "out")]);
    assert.equal(r.code, 2, r.out);
    assert.match(r.err, /cluster\.aws\.access: needs a public subnet.*allowed: ssm/);
});

test("usage errors exit 2, not 1 (which means a mandatory check failed); --help exits 0", () => {
    const unknownOption = plan(["--bogus"]);
    assert.equal(unknownOption.code, 2);
    assert.match(unknownOption.err, /unknown option '--bogus'/);
    const both = plan(["--stack", "a", "--config", "b.yaml"]);
    assert.equal(both.code, 2);
    assert.match(both.err, /--stack or --config, not both/);
    assert.equal(plan(["--help"]).code, 0);
});

test("plan.json's text in pieces is JSON.stringify(value, null, 2), armoured blocks redacted as in the whole text", async () => {
    const { prettyJsonParts, redactedJsonParts } = await import("../components/cli/plan");
    const { redactPemBlocks } = await import("../components/redact");
    const values: Record<string, unknown>[] = [
        {},
        { only: undefined },
        { a: 1, gone: undefined, f: () => 1, b: { c: [1, "x", null, { d: true }], e: {} }, "we\"ird\nkey": [], last: "C9 MTU ≥ 4200 ⇔" },
        { nested: { deep: [[{ x: -0.5 }]] }, s: "tail" },
        { toJson: { toJSON: () => ({ made: "by toJSON" }) }, date: new Date(0) },
    ];
    for (const v of values) assert.equal(prettyJsonParts(v).join(""), JSON.stringify(v, null, 2));
    const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE KEY-----";
    for (const v of [
        { a: "x", key: pem, b: "y" },
        // a block cut short is hidden to the end of the whole text, past its own member
        { a: "x", key: "-----BEGIN RSA PRIVATE KEY-----\nMIIE", b: "y", c: [1, 2] },
        { a: "no armour here", b: "-----BEGIN" },
    ]) {
        const whole = redactPemBlocks(JSON.stringify(v, null, 2));
        assert.equal(redactedJsonParts(v).join(""), whole);
    }
    assert.doesNotMatch(redactedJsonParts({ key: pem }).join(""), /b3BlbnNzaC1rZXktdjEAAAAA/);
});

test("a spec the program itself refuses (ansible.exclude naming no node) exits 2 naming the stack file and the field, and writes nothing", () => {
    const dir = tmp();
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "roce-h100.yaml"), "utf8"));
    doc.config["rdmakit:cluster"].ansible = { ...doc.config["rdmakit:cluster"].ansible, exclude: ["gpu09"] };
    const file = join(dir, "Pulumi.excl.yaml");
    writeFileSync(file, stringify(doc));
    const r = plan(["--config", file, "--out", join(dir, "out")]);
    assert.equal(r.code, 2, r.err);
    // said as a spec found bad before the program is said: `rdmakit plan: <file>: ...`, the field's path first
    assert.match(r.err, /^rdmakit plan: .*Pulumi\.excl\.yaml: invalid cluster spec: 1 problem\n {2}- cluster\.ansible\.exclude\[0\]: names no node of this cluster/);
    assert.equal(existsSync(join(dir, "out", "plan.json")), false);
});

test("a stack file whose spec key has no namespace (`cluster:`) is told to write `rdmakit:cluster:`", () => {
    const dir = tmp();
    const file = join(dir, "Pulumi.bare.yaml");
    writeFileSync(file, readFileSync(join(ROOT, "examples", "roce-h100.yaml"), "utf8").replace("rdmakit:cluster:", "cluster:"));
    const r = plan(["--config", file, "--out", join(dir, "out")]);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /config\.rdmakit:cluster: is missing \(a key `cluster:` is there: write it `rdmakit:cluster:`\)/);
});
