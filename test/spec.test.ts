import { test } from "node:test";
import assert from "node:assert/strict";
import { leaveClusterConfig, parseClusterSpec, plainDataKey, takeClusterConfig } from "../components/spec";
import { SpecError } from "../components/errors";
import { providerRegionIssues } from "../components/checks";
import { publicCoverage, PUBLIC_IPV4_ADDRESSES } from "../components/net";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse } from "yaml";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5Zm9ycmRtYWtpdHRlc3RzMDEyMzQ1Njc4OQ rdmakit-test";

function awsSpec(): any {
    return {
        name: "train",
        fabric: "aws-efa",
        nodes: 4,
        ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-1", availabilityZone: "us-east-1a", instanceType: "p5.48xlarge" },
    };
}

function azureSpec(): any {
    return {
        name: "train",
        fabric: "azure-ib",
        nodes: 4,
        ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" },
    };
}

function errorOf(raw: unknown): SpecError {
    try {
        parseClusterSpec(raw);
    } catch (e) {
        assert.ok(e instanceof SpecError, `expected SpecError, got ${String(e)}`);
        return e;
    }
    assert.fail("spec was accepted");
}

/** Asserts one issue at `path` whose text mentions every string in `mentions`. */
function expectIssue(raw: unknown, path: string, mentions: string[]) {
    const err = errorOf(raw);
    const issue = err.issues.find((i) => i.path === path);
    assert.ok(issue, `no issue at ${path}; got:\n${err.message}`);
    const text = `${issue.message} ${issue.allowed ?? ""}`;
    for (const m of mentions) assert.ok(text.includes(m), `issue at ${path} does not mention "${m}": ${text}`);
    assert.ok(err.message.includes(path), "the printed message names the field");
    return err;
}

function edit(base: any, f: (s: any) => void): any {
    const s = structuredClone(base);
    f(s);
    return s;
}

test("valid AWS and Azure specs parse with defaults applied", () => {
    const aws = parseClusterSpec(awsSpec());
    assert.equal(aws.nodes, 4);
    assert.equal(aws.aws?.rootVolumeGiB, 200);
    assert.equal(aws.aws?.network.vpcCidr, "10.0.0.0/16");
    assert.equal(aws.validation.minFraction, 0.8);
    assert.equal(aws.software.gpudirect, "auto");
    assert.equal(aws.ssh.allowInternet, false);
    const az = parseClusterSpec(azureSpec());
    assert.equal(az.azure?.vnetCidr, "10.10.0.0/16");
    assert.equal(az.azure?.quotaRaised, false);
});

const cases: Array<[string, () => unknown, string, string[]]> = [
    ["spec is not an object", () => "p5", "cluster", ["mapping"]],
    ["missing name", () => edit(awsSpec(), (s) => delete s.name), "cluster.name", ["missing", "text that starts with a letter"]],
    ["bad name", () => edit(awsSpec(), (s) => (s.name = "Train_1")), "cluster.name", ["lower case"]],
    ["unknown fabric", () => edit(awsSpec(), (s) => (s.fabric = "efa")), "cluster.fabric", ["aws-efa", "azure-ib", "roce"]],
    ["nodes zero", () => edit(awsSpec(), (s) => (s.nodes = 0)), "cluster.nodes", [">= 1"]],
    ["nodes negative", () => edit(awsSpec(), (s) => (s.nodes = -3)), "cluster.nodes", [">= 1"]],
    ["nodes fractional", () => edit(awsSpec(), (s) => (s.nodes = 2.5)), "cluster.nodes", ["integer"]],
    ["nodes as string", () => edit(awsSpec(), (s) => (s.nodes = "4")), "cluster.nodes", ["number"]],
    ["nodes missing on a cloud", () => edit(awsSpec(), (s) => delete s.nodes), "cluster.nodes", ["missing", "integer"]],
    ["typo at top level", () => edit(awsSpec(), (s) => (s.node = 4)), "cluster.node", ["not a known field", "did you mean nodes", "fabric"]],
    ["typo in aws", () => edit(awsSpec(), (s) => (s.aws.instanceTyp = "p5.48xlarge")), "cluster.aws.instanceTyp", ["did you mean instanceType"]],
    ["unknown instance type suggests the closest", () => edit(awsSpec(), (s) => (s.aws.instanceType = "p5.48xlarg")), "cluster.aws.instanceType", ["did you mean p5.48xlarge", "p4d.24xlarge"]],
    ["non-EFA instance type", () => edit(awsSpec(), (s) => (s.aws.instanceType = "m5.large")), "cluster.aws.instanceType", ["EFA", "p6-b300.48xlarge"]],
    ["EFA type without GPUDirect RDMA", () => edit(awsSpec(), (s) => (s.aws.instanceType = "g6e.48xlarge")), "cluster.aws.instanceType", ["GPUDirect", "allowNoGpuDirect"]],
    ["bad region", () => edit(awsSpec(), (s) => (s.aws.region = "useast1")), "cluster.aws.region", ["us-east-1"]],
    ["AZ outside region", () => edit(awsSpec(), (s) => (s.aws.availabilityZone = "us-west-2a")), "cluster.aws.availabilityZone", ["us-east-1"]],
    ["root volume too small", () => edit(awsSpec(), (s) => (s.aws.rootVolumeGiB = 8)), "cluster.aws.rootVolumeGiB", [">= 50"]],
    ["bad AMI id", () => edit(awsSpec(), (s) => (s.aws.ami = "ubuntu-22.04")), "cluster.aws.ami", ["ami-"]],
    ["subnets in two AZs", () => edit(awsSpec(), (s) => (s.aws.network = { vpcId: "vpc-0123abcd", subnets: [{ id: "subnet-0123abcd", availabilityZone: "us-east-1a" }, { id: "subnet-0456abcd", availabilityZone: "us-east-1b" }] })), "cluster.aws.network.subnets", ["across availability zones", "one subnet"]],
    ["two subnets in one AZ", () => edit(awsSpec(), (s) => (s.aws.network = { vpcId: "vpc-0123abcd", subnets: [{ id: "subnet-0123abcd", availabilityZone: "us-east-1a" }, { id: "subnet-0456abcd", availabilityZone: "us-east-1a" }] })), "cluster.aws.network.subnets", ["does not cross subnets", "exactly one"]],
    ["subnet without VPC", () => edit(awsSpec(), (s) => (s.aws.network = { subnets: [{ id: "subnet-0123abcd", availabilityZone: "us-east-1a" }] })), "cluster.aws.network.vpcId", ["vpc-"]],
    ["capacity block in another AZ", () => edit(awsSpec(), (s) => (s.aws.capacityBlock = { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-1b", instanceCount: 4 })), "cluster.aws.capacityBlock.availabilityZone", ["us-east-1a"]],
    ["placement group with a capacity block", () => edit(awsSpec(), (s) => { s.aws.placementGroup = true; s.aws.capacityBlock = { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-1a", instanceCount: 4 }; }), "cluster.aws.placementGroup", ["capacity block", "false"]],
    ["more nodes than the capacity block", () => edit(awsSpec(), (s) => { s.nodes = 8; s.aws.capacityBlock = { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-1a", instanceCount: 4 }; }), "cluster.nodes", ["capacity block", "at most 4"]],
    ["more nodes than the reservation", () => edit(awsSpec(), (s) => { s.nodes = 5; s.aws.capacityReservation = { reservationId: "cr-0123456789abcdef0", instanceCount: 2 }; }), "cluster.nodes", ["capacity reservation", "at most 2"]],
    ["capacity block and reservation together", () => edit(awsSpec(), (s) => { s.aws.capacityBlock = { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-1a", instanceCount: 4 }; s.aws.capacityReservation = { reservationId: "cr-0123456789abcdef1", instanceCount: 4 }; }), "cluster.aws.capacityReservation", ["one of capacityBlock or capacityReservation"]],
    ["bad reservation id", () => edit(awsSpec(), (s) => (s.aws.capacityReservation = { reservationId: "res-1", instanceCount: 4 })), "cluster.aws.capacityReservation.reservationId", ["cr-"]],
    ["SSH open to the internet", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["0.0.0.0/0"])), "cluster.ssh.allowedCidrs", ["allowInternet"]],
    ["SSH open to the internet in two halves", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["0.0.0.0/1", "128.0.0.0/1"])), "cluster.ssh.allowedCidrs", ["whole internet", "allowInternet"]],
    ["SSH open to a /4 of public space", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["32.0.0.0/4"])), "cluster.ssh.allowedCidrs", ["of the public IPv4 space", "maxPublicShare"]],
    ["SSH open to many /8s, one at a time", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["11.0.0.0/8", "12.0.0.0/8", "13.0.0.0/8"])), "cluster.ssh.allowedCidrs", ["of the public IPv4 space"]],
    ["bad CIDR", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["10.0.0.0/33"])), "cluster.ssh.allowedCidrs[0]", ["CIDR"]],
    ["empty CIDR list", () => edit(awsSpec(), (s) => (s.ssh.allowedCidrs = [])), "cluster.ssh.allowedCidrs", [">= 1"]],
    ["missing public key on a cloud", () => edit(awsSpec(), (s) => delete s.ssh.publicKey), "cluster.ssh.publicKey", ["OpenSSH public key"]],
    ["malformed public key", () => edit(awsSpec(), (s) => (s.ssh.publicKey = "AAAA")), "cluster.ssh.publicKey", ["OpenSSH public key"]],
    ["private key in plain config", () => edit(awsSpec(), (s) => (s.ssh.privateKey = "-----BEGIN OPENSSH PRIVATE KEY-----")), "cluster.ssh.privateKey", ["--secret", "rdmakit:sshPrivateKey"]],
    ["custom login user with the default AMI", () => edit(awsSpec(), (s) => (s.ssh.user = "ec2-user")), "cluster.ssh.user", ["ubuntu", "cluster.aws.ami"]],
    ["bad ssh user", () => edit(awsSpec(), (s) => (s.ssh.user = "Root User")), "cluster.ssh.user", ["Linux user name"]],
    ["section for another fabric", () => edit(awsSpec(), (s) => (s.azure = { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" })), "cluster.azure", ["only cluster.aws"]],
    ["missing fabric section", () => edit(awsSpec(), (s) => delete s.aws), "cluster.aws", ["required when fabric is aws-efa"]],
    ["validation fraction above 1", () => edit(awsSpec(), (s) => (s.validation = { minFraction: 1.5 })), "cluster.validation.minFraction", ["<= 1"]],
    ["gpudirect method unknown", () => edit(awsSpec(), (s) => (s.software = { gpudirect: "gdrcopy" })), "cluster.software.gpudirect", ["auto", "peermem", "dmabuf"]],
    ["NCCL version malformed", () => edit(awsSpec(), (s) => (s.software = { ncclVersion: "latest" })), "cluster.software.ncclVersion", ["2.28.9-1"]],
    ["tags not strings", () => edit(awsSpec(), (s) => (s.tags = { team: 7 })), "cluster.tags.team", ["must be text", "the number 7", "quotes"]],
    ["Azure size without InfiniBand", () => edit(azureSpec(), (s) => (s.azure.vmSize = "Standard_ND96is_H100_v5")), "cluster.azure.vmSize", ["no InfiniBand", "Standard_ND96isr_H100_v5"]],
    ["Azure size unknown", () => edit(azureSpec(), (s) => (s.azure.vmSize = "Standard_ND96isr_H100_v6")), "cluster.azure.vmSize", ["is not an InfiniBand size the kit knows Standard_ND96asr_v4", "Standard_ND96isr_H100_v5"]],
    ["VNet overlaps the RDMA range", () => edit(azureSpec(), (s) => { s.azure.vnetCidr = "172.16.0.0/12"; s.azure.subnetCidr = "172.20.0.0/24"; }), "cluster.azure.vnetCidr", ["172.16.0.0/16", "outside"]],
    ["subnet outside the VNet", () => edit(azureSpec(), (s) => (s.azure.subnetCidr = "10.20.0.0/24")), "cluster.azure.subnetCidr", ["10.10.0.0/16"]],
    ["more than one partition by default", () => edit(azureSpec(), (s) => (s.nodes = 101)), "cluster.nodes", ["100", "quotaRaised"]],
    ["more than a raised partition", () => edit(azureSpec(), (s) => { s.nodes = 301; s.azure.quotaRaised = true; }), "cluster.nodes", ["300", "does not span scale sets"]],
    ["Gen1 image on an ND size", () => edit(azureSpec(), (s) => (s.azure.image = { publisher: "canonical", offer: "0001-com-ubuntu-server-jammy", sku: "22_04-lts", generation: "V1" })), "cluster.azure.image.generation", ["Generation 2", "V2"]],
    ["password login", () => edit(azureSpec(), (s) => (s.azure.passwordAuthentication = true)), "cluster.azure.passwordAuthentication", ["SSH keys only"]],
    ["admin password in config", () => edit(azureSpec(), (s) => (s.azure.adminPassword = "hunter2hunter2")), "cluster.azure.adminPassword", ["password login is not supported"]],
    ["CPU-only HPC size", () => edit(azureSpec(), (s) => (s.azure.vmSize = "Standard_HB176rs_v4")), "cluster.azure.vmSize", ["no GPUs", "Standard_ND96isr_H100_v5"]],
    ["AMD GPU size", () => edit(azureSpec(), (s) => (s.azure.vmSize = "Standard_ND96isr_MI300X_v5")), "cluster.azure.vmSize", ["RCCL", "Standard_ND96isr_H200_v5"]],
    ["CUDA too old for Blackwell (own AMI)", () => edit(awsSpec(), (s) => { s.aws.instanceType = "p6-b200.48xlarge"; s.aws.ami = "ami-0123456789abcdef0"; s.software = { cudaVersion: "12.6" }; }), "cluster.software.cudaVersion", [">= 12.8"]],
    ["EFA installer whose plugin predates p6-b300 (own AMI)", () => edit(awsSpec(), (s) => { s.aws.instanceType = "p6-b300.48xlarge"; s.aws.ami = "ami-0123456789abcdef0"; s.software = { efaInstallerVersion: "1.43.2" }; }), "cluster.software.efaInstallerVersion", ["aws-ofi-nccl 1.16.3", ">= 1.47.0"]],
    ["NCCL older than p5 needs (own AMI)", () => edit(awsSpec(), (s) => { s.aws.ami = "ami-0123456789abcdef0"; s.software = { ncclVersion: "2.17.1-1" }; }), "cluster.software.ncclVersion", [">= 2.18.0"]],
    ["NCCL pinned over the DLAMI's own", () => edit(awsSpec(), (s) => (s.software = { ncclVersion: "2.28.9-1" })), "cluster.software.ncclVersion", ["ships its own NCCL", "cluster.software.replace"]],
    ["NCCL build for a CUDA released after it", () => edit(awsSpec(), (s) => { s.aws.ami = "ami-0123456789abcdef0"; s.software = { ncclVersion: "2.23.4-1", cudaVersion: "13.0" }; }), "cluster.software.ncclVersion", ["cannot exist", "2.28.9-1+cuda13.0"]],
    ["NCCL below the held one on ubuntu-hpc", () => edit(azureSpec(), (s) => (s.software = { ncclVersion: "2.23.4-1", replace: ["nccl"] })), "cluster.software.ncclVersion", ["never downgrades", ">= 2.30.4-1"]],
    ["driver branch sideways on ubuntu-hpc", () => edit(azureSpec(), (s) => (s.software = { driverBranch: "595" })), "cluster.software.driverBranch", ["580.126.16", "cluster.software.replace"]],
    ["sweep larger than the GPU holds", () => edit(awsSpec(), (s) => { s.aws.instanceType = "p4d.24xlarge"; s.validation = { maxBytes: 17179869184 }; }), "cluster.validation.maxBytes", ["A100-40GB", "8 GiB"]],
    ["sweep end not a power of two", () => edit(awsSpec(), (s) => (s.validation = { maxBytes: 12 * 1024 ** 3 })), "cluster.validation.maxBytes", ["power of two"]],
    ["tag key the cloud refuses", () => edit(awsSpec(), (s) => (s.tags = { "aws:team": "ml" })), "cluster.tags.aws:team", ["aws:"]],
    ["tag that the kit sets itself", () => edit(awsSpec(), (s) => (s.tags = { Name: "mine" })), "cluster.tags", ["Name"]],
    ["DOCA release the kit cannot recognise", () => edit(azureSpec(), (s) => (s.software = { docaVersion: "3.1.0" })), "cluster.software.docaVersion", ["3.2.x"]],
    ["OS disk too small", () => edit(azureSpec(), (s) => (s.azure.osDiskGiB = 10)), "cluster.azure.osDiskGiB", [">= 30"]],
];

for (const [name, make, path, mentions] of cases) {
    test(`invalid spec: ${name} → ${path}`, () => {
        expectIssue(make(), path, mentions);
    });
}

test("there are at least 30 invalid-spec cases", () => {
    assert.ok(cases.length >= 30, `only ${cases.length}`);
});

test("every problem is reported at once", () => {
    const err = errorOf(edit(awsSpec(), (s) => {
        s.nodes = 0;
        s.aws.instanceType = "p5.48xl";
        s.extra = true;
    }));
    const paths = err.issues.map((i) => i.path).sort();
    // the catalog check runs beside the schema's findings, not after they are fixed
    assert.deepEqual(paths, ["cluster.aws.instanceType", "cluster.extra", "cluster.nodes"]);
    // a cross-field check about a value the schema refused says nothing more: nodes is reported once, as too small
    assert.equal(err.issues.filter((i) => i.path === "cluster.nodes").length, 1);
    // a refused list entry takes its list out of the cross-field checks, the rest still run
    const err3 = errorOf(edit(awsSpec(), (s) => {
        s.ssh.allowedCidrs = ["not-a-range"];
        s.aws.availabilityZone = "us-west-2a";
    }));
    assert.deepEqual(err3.issues.map((i) => i.path).sort(), ["cluster.aws.availabilityZone", "cluster.ssh.allowedCidrs[0]"]);
    const err2 = errorOf(edit(awsSpec(), (s) => {
        s.aws.instanceType = "p5.48xl";
        s.ssh.allowedCidrs = ["0.0.0.0/0"];
        s.aws.availabilityZone = "us-west-2a";
    }));
    assert.deepEqual(err2.issues.map((i) => i.path).sort(), ["cluster.aws.availabilityZone", "cluster.aws.instanceType", "cluster.ssh.allowedCidrs"]);
});

test("secret values are never echoed in messages", () => {
    const secret = "-----BEGIN OPENSSH PRIVATE KEY-----b3BlbnNzaC1rZXktdjEAAAAA";
    const err = errorOf(edit(awsSpec(), (s) => (s.ssh.privateKey = secret)));
    assert.ok(!err.message.includes("b3BlbnNzaC1rZXktdjEAAAAA"), err.message);
    const err2 = errorOf(edit(azureSpec(), (s) => (s.azure.adminPassword = "hunter2hunter2")));
    assert.ok(!err2.message.includes("hunter2"), err2.message);
});

test("allowed ranges: private and office-sized ranges pass, the share is configurable, overlaps count once", () => {
    // private space reaches no public address at all, however wide
    assert.ok(parseClusterSpec(edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16", "100.64.0.0/10"]))));
    assert.ok(parseClusterSpec(edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["198.51.100.0/24", "8.0.0.0/16"]))));
    // a /8 is 0.45 % of the public space: refused by default, accepted with a share above it
    assert.throws(() => parseClusterSpec(edit(awsSpec(), (s) => (s.ssh.allowedCidrs = ["11.0.0.0/8"]))), /0\.45\d* %/);
    assert.ok(parseClusterSpec(edit(awsSpec(), (s) => { s.ssh.allowedCidrs = ["11.0.0.0/8"]; s.ssh.maxPublicShare = 0.01; })));
    // the same /9 twice is one /9
    assert.deepEqual(publicCoverage(["11.0.0.0/9", "11.0.0.0/9", "11.0.0.0/10"]).addresses, 2 ** 23);
    assert.equal(publicCoverage(["0.0.0.0/1", "128.0.0.0/1"]).share, 1);
    assert.equal(publicCoverage(["0.0.0.0/0"]).addresses, PUBLIC_IPV4_ADDRESSES);
});

test("SSH to 0.0.0.0/0 is accepted when explicitly allowed", () => {
    const spec = parseClusterSpec(edit(awsSpec(), (s) => { s.ssh.allowedCidrs = ["0.0.0.0/0"]; s.ssh.allowInternet = true; }));
    assert.deepEqual(spec.ssh.allowedCidrs, ["0.0.0.0/0"]);
});

test("bare metal: every host must have the same rails and GPUs (one plan serves them all)", () => {
    const roce = parse(readFileSync(join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    roce.roce.hosts[2].railNics = roce.roce.hosts[2].railNics.slice(0, 4);
    roce.roce.hosts[2].railNetdevs = roce.roce.hosts[2].railNetdevs.slice(0, 4);
    roce.roce.hosts[3].gpu = { model: "H200", count: 8 };
    const err = errorOf(roce);
    const rails = err.issues.find((i) => i.path === "cluster.roce.hosts[2].railNics");
    assert.ok(rails, err.message);
    assert.match(rails.message, /has 4 rails; gpu01 has 8/);
    assert.ok(err.issues.some((i) => i.path === "cluster.roce.hosts[3].gpu" && /8 × H100/.test(i.message)), err.message);
});

test("ssh.allowedCidrs is required, except with aws.access: ssm, which opens no SSH port", () => {
    const noRanges = (s: any) => { delete s.ssh.allowedCidrs; };
    assert.deepEqual(errorOf(edit(awsSpec(), noRanges)).issues.map((i) => [i.path, i.message]), [["cluster.ssh.allowedCidrs", "is missing"]]);
    assert.deepEqual(errorOf(edit(azureSpec(), noRanges)).issues.map((i) => i.path), ["cluster.ssh.allowedCidrs"]);
    const ssm = parseClusterSpec(edit(awsSpec(), (s) => { noRanges(s); s.aws.access = "ssm"; }));
    assert.deepEqual(ssm.ssh.allowedCidrs, []);
});

test("aws:region beside cluster.aws.region: refused when they differ, silent when equal or unset", () => {
    const spec = awsSpec();
    const region = (spec as any).aws.region as string;
    assert.deepEqual(providerRegionIssues(spec, region), []);
    assert.deepEqual(providerRegionIssues(spec, undefined), []);
    const [issue, ...more] = providerRegionIssues(spec, "eu-west-1");
    assert.equal(more.length, 0);
    assert.equal(issue.path, "aws:region");
    assert.equal(issue.value, "eu-west-1");
    assert.match(issue.allowed!, new RegExp(`^${region} \\(pulumi config set aws:region ${region}\\)`));
    assert.deepEqual(providerRegionIssues(azureSpec(), "eu-west-1"), []);
});

test("a spec parsed again is answered afresh: what a caller did to an earlier result, or to its input, never shows", () => {
    const raw = parse(readFileSync(join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    const first = parseClusterSpec(raw);
    const again = parseClusterSpec(structuredClone(raw));
    assert.deepEqual(again, first);
    assert.notEqual(again, first, "each parse hands out its own copy");
    // callers change what they got (the first parse's result, and one answered from it): the next parse of the same
    // input is the spec as parsed
    const mtu = first.roce!.qos.mtu;
    for (const got of [first, again]) {
        got.roce!.hosts[0].name = "changed";
        got.roce!.qos.mtu = 1;
    }
    const third = parseClusterSpec(raw);
    assert.equal(third.roce!.hosts[0].name, raw.roce.hosts[0].name);
    assert.equal(third.roce!.qos.mtu, mtu);
    // the input changed is a new input: checked again (an MTU below 4200 is refused)
    raw.roce.qos = { ...raw.roce.qos, mtu: 1500 };
    assert.throws(() => parseClusterSpec(raw), (e: unknown) => e instanceof SpecError && /qos\.mtu/.test(e.message));
});

test("the cluster `rdmakit plan` leaves for its program: taken once, for the same config text only, and parsed as that text is", () => {
    const raw = parse(readFileSync(join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    const text = plainDataKey(raw)!;
    // nothing left (a program under the engine): the config is not even read
    assert.equal(takeClusterConfig(() => assert.fail("the config was read")), undefined);
    leaveClusterConfig(raw, text);
    assert.equal(takeClusterConfig(() => JSON.stringify({ ...raw, name: "other" })), undefined, "another cluster's text");
    assert.equal(takeClusterConfig(() => text), undefined, "taken once, even by a program of another cluster");
    leaveClusterConfig(raw, text);
    // the config's text is a string of its own (the SDK parses its config store for each read), equal to the one left
    const taken = takeClusterConfig(() => JSON.stringify(raw));
    assert.equal(taken, raw);
    assert.deepEqual(parseClusterSpec(taken), parseClusterSpec(JSON.parse(text)));
    assert.notEqual(parseClusterSpec(taken), parseClusterSpec(taken), "a copy each time, as for any input");
});

test("plainDataKey: JSON text for plain data only (the parse cache's key), and a cycle still throws", () => {
    assert.equal(plainDataKey({ a: [1, "2", true, null], b: { c: -1.5 } }), '{"a":[1,"2",true,null],"b":{"c":-1.5}}');
    // what JSON would spell otherwise or drop: not plain
    const holed = [1, 2];
    delete holed[0]; // a hole
    for (const v of [-0, NaN, Infinity, undefined, holed, [undefined], { a: undefined }, { d: new Date(0) }, new Map(), 10n, { f() {} }, [Symbol("s")]]) {
        assert.equal(plainDataKey(v), undefined, typeof v);
    }
    // an object of no prototype: plain, unless asked for what JSON.parse gives back (the parsed spec's copies)
    const bare = Object.assign(Object.create(null), { x: 1 });
    assert.equal(plainDataKey({ bare }), '{"bare":{"x":1}}');
    assert.equal(plainDataKey({ bare }, { nullPrototype: false }), undefined);
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = { back: cyclic };
    assert.throws(() => plainDataKey(cyclic), TypeError);
});
