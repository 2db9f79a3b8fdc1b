// What AwsEfaCluster asks AWS before creating anything, on the mock engine with recorded answers in the provider's
// shapes (test/fixtures/aws/cloud-answers.ts): a type whose layout differs from the catalog, a type or bastion type
// not offered in the AZ, a vCPU quota too small are refused with the field, what AWS said and what to do, and no
// AWS resource is registered; a quota the caller may not read is a warning, not a refusal.
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { awsCloudCheckList, blockScaleInTime, gradeAwsCloud, gradeReservation, gradeRootVolume } from "../components/aws/cloud";
import { AWS_VCPU_QUOTAS, countRunningVcpus } from "../components/aws/quota";
import { gradeSsmReach } from "../components/aws/ssm-reach";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { amiRootMapping, describeInstances, EXISTING_VPC, offerings, routeTable, vpcEndpoint, P5_INSTANCE_TYPE, pQuota, QUOTA_ACCESS_DENIED, reservation } from "./fixtures/aws/cloud-answers";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u test";
const ZONE = "us-east-2b";

const PROGRAM = path.join(__dirname, "fixtures", "aws", "cloud-program.ts");
interface Scenario { instanceType: unknown; offered: string[]; quota?: unknown; quotaError?: string; nodes?: number; account?: string; cliAccount?: string; cliFails?: string; rootSnapshotGiB?: number; amiError?: string; aws?: Record<string, unknown>; reservation?: unknown; reservationError?: string; describeInstances?: unknown; describeFails?: string; ssm?: unknown }
const fits = (): Scenario => ({ instanceType: P5_INSTANCE_TYPE, offered: ["p5.48xlarge", "t3.micro"], quota: pQuota(768) });

function spec(nodes = 4) {
    return parseClusterSpec({
        name: "train", fabric: "aws-efa", nodes, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-2", availabilityZone: ZONE, instanceType: "p5.48xlarge" },
    });
}

/** Runs the cluster program with the scenario's answers: the refusal (exit 1) or what it registered. */
function build(s: Scenario): { refusal?: string; registered: string[]; warnings: string[]; inputs: Record<string, any>; stderr?: string } {
    const raw = { name: "train", fabric: "aws-efa", nodes: s.nodes ?? 4, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-2", availabilityZone: ZONE, instanceType: "p5.48xlarge", ...s.aws } };
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, PROGRAM], {
        encoding: "utf8", env: { ...process.env, RDMAKIT_SCENARIO: JSON.stringify({ ...s, zone: ZONE, spec: raw }) }, timeout: 60_000,
    });
    if (r.status === 1) {
        const registered = JSON.parse(/^registered: (.*)$/m.exec(r.stderr)?.[1] ?? "null");
        assert.ok(Array.isArray(registered), r.stderr);
        assert.deepEqual(registered.filter((t: string) => t.startsWith("aws:")), [], "refused before any AWS resource is registered");
        return { refusal: r.stderr, registered, warnings: [], inputs: {} };
    }
    assert.equal(r.status, 0, r.stderr);
    return { ...JSON.parse(r.stdout.trim().split("\n").pop()!), stderr: r.stderr };
}

test("answers that fit: the cluster is created", () => {
    const r = build(fits());
    assert.equal(r.refusal, undefined);
    assert.ok(r.registered.includes("aws:autoscaling/group:Group"));
});

test("a type EC2 describes with another layout than the catalog is refused with both numbers", async () => {
    const r = build({ ...fits(), instanceType: { ...P5_INSTANCE_TYPE, maximumNetworkCards: 16, efaMaximumInterfaces: 16 } });
    assert.match(r.refusal!, /cluster\.aws\.instanceType: has 16 network cards and 16 EFA interfaces according to EC2; the kit's catalog.* says 32 and 32/);
    assert.doesNotMatch(r.refusal!, /error serializing/, "the refusal as the user should read it");
});

test("a type not offered in the AZ, and a bastion type not offered there, are each refused", async () => {
    const r = build({ ...fits(), offered: [] });
    assert.match(r.refusal!, /cluster\.aws\.instanceType: is not offered in us-east-2b/);
    assert.match(r.refusal!, /cluster\.aws\.bastionInstanceType: is not offered in us-east-2b/);
    assert.match(r.refusal!, /allowed: another availabilityZone/);
});

test("a P-instance vCPU quota short of the nodes is refused with what fits", async () => {
    const r = build({ ...fits(), quota: pQuota(384) });
    assert.match(r.refusal!, /cluster\.nodes: need 768 vCPUs of Running On-Demand P instances \(L-417A185B\) in us-east-2; the account's quota is 384/);
    assert.match(r.refusal!, /at most 2 nodes/);
});

test("a quota the caller may not read is a warning, and the cluster is created", async () => {
    const r = build({ ...fits(), quota: undefined, quotaError: QUOTA_ACCESS_DENIED });
    assert.equal(r.refusal, undefined);
    assert.ok(r.warnings.some((w) => /could not read the Running On-Demand P instances quota \(L-417A185B\).*AccessDenied/.test(w)), r.warnings.join("\n"));
    assert.ok(r.registered.includes("aws:autoscaling/group:Group"));
});

test("grading is pure: unknown answers (the offline plan) pass; a Capacity Block skips the On-Demand quota", () => {
    const s = spec();
    const plan = planCluster(s);
    const u = pulumi.runtime.unknownValue;
    assert.deepEqual(gradeAwsCloud(s, plan, { instanceType: { maximumNetworkCards: u as never, efaMaximumInterfaces: u as never, efaSupported: u as never, defaultVcpus: u as never, networkCards: [] }, offeredInZone: { instanceTypes: u as never }, quota: { value: u as never } }), []);
    const cb = parseClusterSpec({ ...JSON.parse(JSON.stringify(s)), aws: { ...s.aws, capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: ZONE, instanceCount: 4 } } });
    assert.deepEqual(gradeAwsCloud(cb, planCluster(cb), { instanceType: P5_INSTANCE_TYPE, offeredInZone: offerings(ZONE, ["p5.48xlarge", "t3.micro"]), quota: pQuota(0) }), []);
});

const BLOCK = { capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: ZONE, instanceCount: 4 } };

test("a Capacity Block as EC2 holds it: the group launches into it and scales to 0 an hour before its end", () => {
    const r = build({ ...fits(), aws: BLOCK, reservation: reservation() });
    assert.equal(r.refusal, undefined);
    const schedule = r.inputs["aws:autoscaling/schedule:Schedule"];
    assert.deepEqual([schedule.startTime, schedule.minSize, schedule.maxSize, schedule.desiredCapacity], ["2099-01-15T10:30:00Z", 0, 0, 0]);
    assert.equal(r.inputs["aws:autoscaling/group:Group"].ignoreFailedScalingActivities, true);
    assert.equal(r.inputs["aws:autoscaling/group:Group"].placementGroup, undefined, "no placement group with a block");
});

test("a Capacity Block in another zone, smaller than declared, or ended, is refused before anything is created", () => {
    const r = build({ ...fits(), aws: BLOCK, reservation: reservation({ availabilityZone: "us-east-2a", instanceCount: 2, endDate: "2020-01-01T00:00:00Z" }) });
    assert.match(r.refusal!, /cluster\.aws\.availabilityZone: is not the zone of reservation cr-0123456789abcdef0, which EC2 has in us-east-2a/);
    assert.match(r.refusal!, /cluster\.aws\.capacityBlock\.availabilityZone: disagrees with EC2/);
    assert.match(r.refusal!, /cluster\.nodes: exceeds reservation cr-0123456789abcdef0, which EC2 holds for 2 instances/);
    assert.match(r.refusal!, /cluster\.aws\.capacityBlock\.reservationId: ends at 2020-01-01T00:00:00Z/);
});

test("a Capacity Block that is not active yet is refused with its start; one EC2 does not know, with EC2's words", () => {
    const scheduled = build({ ...fits(), aws: BLOCK, reservation: reservation({ state: "scheduled" }) });
    assert.match(scheduled.refusal!, /cluster\.aws\.capacityBlock\.reservationId: is scheduled according to EC2 \(it starts at 2099-01-14T11:30:00Z\)/);
    assert.match(scheduled.refusal!, /run pulumi up once the block is active/);
    // an id the provider cannot find: the invoke fails and the SDK surfaces the gRPC error's details (the text here
    // stands in for the provider's own wording, which this test does not claim)
    const gone = build({ ...fits(), aws: BLOCK, reservationError: "reading EC2 Capacity Block Reservation: empty result", reservation: undefined });
    assert.match(gone.refusal!, /cluster\.aws\.capacityBlock\.reservationId: cannot be read from EC2: reading EC2 Capacity Block Reservation: empty result/);
});

test("an ODCR made in a placement group: the nodes launch into that group; asking for a new one is refused", () => {
    const odcr = { capacityReservation: { reservationId: "cr-0abcdef0123456789", instanceCount: 4 } };
    const inGroup = reservation({ endDate: undefined, endDateType: "unlimited", state: undefined, startDate: undefined, reservationType: "default", placementGroupArn: "arn:aws:ec2:us-east-2:123456789012:placement-group/train-cpg" });
    const r = build({ ...fits(), quota: undefined, aws: odcr, reservation: inGroup });
    assert.equal(r.refusal, undefined);
    assert.equal(r.inputs["aws:autoscaling/group:Group"].placementGroup, "train-cpg");
    assert.ok(!r.registered.includes("aws:autoscaling/schedule:Schedule"), "an ODCR does not end");
    const refused = build({ ...fits(), aws: { ...odcr, placementGroup: true }, reservation: inGroup });
    assert.match(refused.refusal!, /cluster\.aws\.placementGroup: would make a new placement group, but cr-0abcdef0123456789 was made in placement group train-cpg/);
});

test("reservation grading is pure; the scale-in time is an hour before the end", () => {
    const s = parseClusterSpec({
        name: "train", fabric: "aws-efa", nodes: 4, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-2", availabilityZone: ZONE, instanceType: "p5.48xlarge", ...BLOCK },
    });
    assert.deepEqual(gradeReservation(s, reservation(), new Date("2099-01-01T00:00:00Z")), []);
    assert.equal(gradeReservation(s, reservation(), new Date("2099-01-15T10:45:00Z")).length, 1, "inside the last hour: too late");
    assert.match(gradeReservation(s, reservation({ instanceType: "p5en.48xlarge" }), new Date(0))[0].message, /holds for p5en\.48xlarge/);
    assert.equal(blockScaleInTime("2099-01-15T11:30:00Z"), "2099-01-15T10:30:00Z");
    // a block of 4 with 1 taken by another instance: 4 nodes do not fit; this cluster's own running nodes are room
    const busy = gradeReservation(s, reservation({ availableInstanceCount: 3 }), new Date(0));
    assert.deepEqual(busy.map((i) => i.path), ["cluster.nodes"]);
    assert.match(busy[0].message, /EC2 says 3 of its 4 instances can still launch; other instances hold the rest/);
    assert.match(busy[0].allowed!, /at most 3/);
    assert.deepEqual(gradeReservation(s, reservation({ availableInstanceCount: 0 }), new Date(0), 4), [], "a later pulumi up: the block holds our 4");
});

test("the AWS CLI signed in to another account than the provider is refused before anything is created; the same account passes", () => {
    const other = build({ ...fits(), account: "123456789012", cliAccount: "210987654321", aws: { access: "ssm" } });
    assert.match(other.refusal!, /aws:profile: the AWS CLI where pulumi up runs is signed in to account 210987654321 \(arn:aws:iam::210987654321:user\/ci\), the AWS provider to 123456789012; the capacity wait and Session Manager's ssh run it, and would look for the node group in the wrong account/);
    assert.match(other.refusal!, /allowed: the provider's credentials for the CLI too/);
    const same = build({ ...fits(), account: "123456789012", cliAccount: "123456789012" });
    assert.equal(same.refusal, undefined);
    const broken = build({ ...fits(), account: "123456789012", cliFails: "Unable to locate credentials. You can configure credentials by running \"aws configure\"." });
    assert.match(broken.refusal!, /aws:profile: the AWS CLI where pulumi up runs could not say which account it is signed in to \(Unable to locate credentials/);
});

test("a root volume smaller than the AMI's root snapshot is refused before anything is created (not left to the group's launches)", () => {
    const r = build({ ...fits(), rootSnapshotGiB: 600, aws: { rootVolumeGiB: 500 } });
    assert.match(r.refusal!, /cluster\.aws\.rootVolumeGiB: is smaller than the root snapshot of the DLAMI ami-0123456789abcdef0 \(600 GiB\); EC2 would refuse every launch/);
    assert.match(r.refusal!, /allowed: at least 600/);
    const s = spec();
    assert.deepEqual(gradeRootVolume(s, { id: "ami-1", rootDeviceName: "/dev/sda1", blockDeviceMappings: amiRootMapping(s.aws!.rootVolumeGiB) }), [], "equal is enough");
    assert.deepEqual(gradeRootVolume(s, { id: "ami-1", rootDeviceName: "/dev/xvda", blockDeviceMappings: amiRootMapping(10_000) }), [], "another device is not the root");
    assert.deepEqual(gradeRootVolume(s, { id: "ami-1", rootDeviceName: pulumi.runtime.unknownValue as never }), [], "unknown (offline): passes");
});

test("a node AMI EC2 cannot find is refused with the provider's words before anything is created", () => {
    const r = build({ ...fits(), amiError: "reading EC2 AMIs: your query returned no results. Please change your search criteria and try again", aws: { ami: "ami-0badbadbadbadbad0" } });
    assert.match(r.refusal!, /cluster\.aws\.ami: has no x86_64 node AMI EC2 can find: .*your query returned no results/);
});

// W3: the quota less what other instances of the family already run, counted at pulumi up from the AWS CLI's
// `ec2 describe-instances` (recorded answer: test/fixtures/aws/cloud-answers.ts describeInstances: 192 + 48 vCPUs of
// others, a Spot instance and one of this cluster's own nodes that do not count)
const SIGNED_IN = { account: "123456789012", cliAccount: "123456789012" };

test("vCPUs other instances already run count against the quota: refused with the quota, the limit, the usage and the need", () => {
    const r = build({ ...fits(), ...SIGNED_IN, quota: pQuota(768), describeInstances: describeInstances() });
    assert.match(r.refusal!, /cluster\.nodes: need 768 vCPUs of Running On-Demand P instances \(L-417A185B\) in us-east-2; the account's quota is 768, of which other running instances already use 240 \(2 instances, aws ec2 describe-instances\), leaving 528/);
    assert.match(r.refusal!, /allowed: at most 2 nodes, a quota increase \(Service Quotas L-417A185B\), stopping the other instances, or a Capacity Block/);
    // asked of the CLI as the capacity wait runs it, with the state and family filters
    assert.match(r.refusal!, /aws calls: .*"ec2 describe-instances --region us-east-2 --filters Name=instance-state-name,Values=pending,running Name=instance-type,Values=p\* --output json"/);
});

test("this cluster's own running nodes (a later pulumi up) and Spot instances are not counted: the quota that holds the rest passes", () => {
    // 1008 = 240 others + 768 needed; counting the cluster's own node (192) or the Spot one (96) would refuse
    const r = build({ ...fits(), ...SIGNED_IN, quota: pQuota(1008), describeInstances: describeInstances() });
    assert.equal(r.refusal, undefined);
    assert.ok(r.registered.includes("aws:autoscaling/group:Group"));
    assert.match(r.stderr!, /ec2 describe-instances/, "the usage was asked");
});

test("a CLI that may not describe instances: a warning, only the limit is checked, and the cluster is created", () => {
    const r = build({ ...fits(), ...SIGNED_IN, quota: pQuota(768), describeInstances: describeInstances(),
        describeFails: "An error occurred (UnauthorizedOperation) when calling the DescribeInstances operation: You are not authorized to perform this operation." });
    assert.equal(r.refusal, undefined);
    assert.ok(r.warnings.some((w) => /could not count the vCPUs other instances already run of the Running On-Demand P instances quota \(L-417A185B\), so only the limit is checked: .*UnauthorizedOperation/.test(w)), r.warnings.join("\n"));
});

test("running vCPUs are not asked of a CLI signed in to another account (that is refused on its own)", () => {
    const r = build({ ...fits(), account: "123456789012", cliAccount: "210987654321", quota: pQuota(768), describeInstances: describeInstances() });
    assert.match(r.refusal!, /aws:profile: the AWS CLI where pulumi up runs is signed in to account 210987654321/);
    assert.doesNotMatch(r.refusal!, /already use/);
    assert.doesNotMatch(r.refusal!, /ec2 describe-instances/);
});

test("counting is pure and reads the whole answer: families, states, lifecycles, tags; an answer it cannot read is an error", () => {
    const P = AWS_VCPU_QUOTAS.p, G = AWS_VCPU_QUOTAS.g;
    const ours = { key: "rdmakit:cluster", value: "train" };
    assert.deepEqual(countRunningVcpus(describeInstances(), P, ours), { vcpus: 240, instances: 2 });
    assert.deepEqual(countRunningVcpus(describeInstances(), P, { key: "rdmakit:cluster", value: "other" }), { vcpus: 432, instances: 3 }, "another cluster's nodes count");
    assert.deepEqual(countRunningVcpus(describeInstances(), G, ours), { vcpus: 0, instances: 0 }, "P instances are not in the G and VT quota");
    const one = describeInstances();
    (one.Reservations[0].Instances[0].State as { Name: string }).Name = "stopped";
    assert.deepEqual(countRunningVcpus(one, P, ours), { vcpus: 48, instances: 1 }, "a stopped instance holds no quota");
    assert.deepEqual(countRunningVcpus({ Reservations: [] }, P, ours), { vcpus: 0, instances: 0 });
    const noCpu = describeInstances();
    delete (noCpu.Reservations[0].Instances[0] as { CpuOptions?: unknown }).CpuOptions;
    assert.match((countRunningVcpus(noCpu, P, ours) as { error: string }).error, /i-0aaaaaaaaaaaaaaa1 \(p5\.48xlarge\) has no CpuOptions\.CoreCount and ThreadsPerCore/);
    assert.match((countRunningVcpus({ Instances: [] }, P, ours) as { error: string }).error, /no Reservations list/);
    assert.match((countRunningVcpus({ ...describeInstances(), NextToken: "eyJOZXh0VG9rZW4iOiBudWxsfQ==" }, P, ours) as { error: string }).error, /one page of several/);
});

test("rdmakit plan's line for the quota says running vCPUs are counted", () => {
    const line = awsCloudCheckList(spec()).find((c) => c.includes("L-417A185B"));
    assert.match(line!, /covers 4 nodes' vCPUs on top of the vCPUs other running On-Demand P instances in us-east-2 already use .*running vCPUs counted with the AWS CLI's aws ec2 describe-instances, this cluster's own nodes left out/);
});

// W5: access: ssm in a VPC of your own: the subnet must reach Systems Manager (a NAT route in the route table that
// applies to it, or the three interface endpoints with private DNS), asked of EC2 before anything is created
const IN_VPC = { access: "ssm", network: EXISTING_VPC };
const NAT = { natGatewayId: "nat-0123456789abcdef0" };
const ALL_ENDPOINTS = { ssm: vpcEndpoint("ssm"), ssmmessages: vpcEndpoint("ssmmessages"), ec2messages: vpcEndpoint("ec2messages") };

test("an existing subnet whose own route table has a NAT default route: the cluster is created", () => {
    const r = build({ ...fits(), aws: IN_VPC, ssm: { own: ["rtb-0own"], main: "rtb-0main", tables: { "rtb-0own": routeTable("rtb-0own", { subnetId: "subnet-0def5678", defaultRoute: NAT }), "rtb-0main": routeTable("rtb-0main", { main: true }) } } });
    assert.equal(r.refusal, undefined);
    assert.ok(r.registered.includes("aws:autoscaling/group:Group"));
});

test("a subnet with no route table of its own goes by the VPC's main one: a NAT route there passes, none there is refused", () => {
    const main = (defaultRoute?: Record<string, string>) => ({ own: [], main: "rtb-0main", tables: { "rtb-0main": routeTable("rtb-0main", { main: true, defaultRoute }) }, endpoints: { ssm: vpcEndpoint("ssm") } });
    assert.equal(build({ ...fits(), aws: IN_VPC, ssm: main(NAT) }).refusal, undefined);
    const r = build({ ...fits(), aws: IN_VPC, ssm: main() });
    assert.match(r.refusal!, /cluster\.aws\.network\.subnets\[0\]\.id: cannot reach Systems Manager, which access: ssm needs \(the nodes' SSM Agent opens every session outbound\): its route table rtb-0main \(the VPC's main route table: the subnet has no explicit association\) has no 0\.0\.0\.0\/0 route through a NAT gateway, and VPC vpc-0abc1234 has no available interface endpoint for ssmmessages, ec2messages/);
    assert.match(r.refusal!, /value: "subnet-0def5678"|subnet-0def5678/);
    assert.match(r.refusal!, /allowed: a 0\.0\.0\.0\/0 route through a NAT gateway in rtb-0main, or interface endpoints com\.amazonaws\.us-east-2\.ssm, com\.amazonaws\.us-east-2\.ssmmessages, com\.amazonaws\.us-east-2\.ec2messages in vpc-0abc1234 with private DNS on/);
});

test("a default route to an internet gateway is refused: the nodes get no public IP to use it", () => {
    const r = build({ ...fits(), aws: IN_VPC, ssm: { own: ["rtb-0own"], main: "rtb-0main", tables: { "rtb-0own": routeTable("rtb-0own", { subnetId: "subnet-0def5678", defaultRoute: { gatewayId: "igw-0123456789abcdef0" } }) } } });
    assert.match(r.refusal!, /its route table rtb-0own sends 0\.0\.0\.0\/0 to internet gateway igw-0123456789abcdef0, which the nodes cannot use: they get no public IP, and VPC vpc-0abc1234 has no available interface endpoint for ssm, ssmmessages, ec2messages/);
});

test("the three endpoints with private DNS are enough without a route; one with private DNS off or not available is named", () => {
    const none = { own: [], main: "rtb-0main", tables: { "rtb-0main": routeTable("rtb-0main", { main: true }) } };
    assert.equal(build({ ...fits(), aws: IN_VPC, ssm: { ...none, endpoints: ALL_ENDPOINTS } }).refusal, undefined);
    const r = build({ ...fits(), aws: IN_VPC, ssm: { ...none, endpoints: { ...ALL_ENDPOINTS, ssm: vpcEndpoint("ssm", { privateDnsEnabled: false }), ec2messages: vpcEndpoint("ec2messages", { state: "pending" }) } } });
    assert.match(r.refusal!, /VPC vpc-0abc1234 has no available interface endpoint for ec2messages, and private DNS off on ssm \(vpce-0ssm0000000000000\)/);
});

test("a default route to a transit gateway (central egress EC2 cannot see past) is a warning, not a refusal", () => {
    const r = build({ ...fits(), aws: IN_VPC, ssm: { own: ["rtb-0own"], main: "rtb-0main", tables: { "rtb-0own": routeTable("rtb-0own", { subnetId: "subnet-0def5678", defaultRoute: { transitGatewayId: "tgw-0123456789abcdef0" } }) } } });
    assert.equal(r.refusal, undefined);
    assert.ok(r.warnings.some((w) => /subnet subnet-0def5678 sends 0\.0\.0\.0\/0 to tgw-0123456789abcdef0 \(route table rtb-0own\); whether that reaches Systems Manager .* it is not checked/.test(w)), r.warnings.join("\n"));
});

test("reach grading is pure: unknown answers (the offline plan) pass; rdmakit plan lists the check for an existing VPC only", () => {
    const s = parseClusterSpec({ ...JSON.parse(JSON.stringify(spec())), aws: { ...spec().aws, ...IN_VPC } });
    const ids = { vpcId: "vpc-0abc1234", subnetId: "subnet-0def5678" };
    const u = pulumi.runtime.unknownValue as never;
    assert.deepEqual(gradeSsmReach(s, ids, { routeTable: undefined, endpoints: { ssm: { state: u }, ssmmessages: { state: u }, ec2messages: { state: u } } }), { issues: [], warnings: [] });
    assert.deepEqual(gradeSsmReach(s, ids, { routeTable: { id: "rtb-1", main: false, routes: [] }, endpoints: { ssm: { state: u }, ssmmessages: { state: u }, ec2messages: { state: u } } }).issues, []);
    assert.equal(gradeSsmReach(s, ids, { routeTable: { error: "UnauthorizedOperation" }, endpoints: { ssm: { error: "x" }, ssmmessages: { error: "x" }, ec2messages: { error: "x" } } }).issues.length, 1);
    assert.ok(awsCloudCheckList(s).some((c) => /^subnet subnet-0def5678 reaches Systems Manager: a 0\.0\.0\.0\/0 route through a NAT gateway/.test(c)));
    assert.ok(!awsCloudCheckList(spec()).some((c) => /reaches Systems Manager/.test(c)), "the kit's own VPC makes its NAT route and endpoints");
});
