import { test } from "node:test";
import assert from "node:assert/strict";
import { bastionAmiQuery, nodeAmiQuery } from "../components/aws/ami";
import { carveVpc, ipsPerNode, isGravitonType, partitionOf, sortIpv4 } from "../components/aws/network";
import { placementSettings, templateInterfaces } from "../components/aws/template";

test("carveVpc: private first half, public last sixteenth (at most /28), AWS's 5 reserved addresses off", () => {
    assert.deepEqual(carveVpc("10.0.0.0/16"), { privateCidr: "10.0.0.0/17", publicCidr: "10.0.240.0/20", privateUsable: 32763 });
    assert.deepEqual(carveVpc("172.31.128.0/20"), { privateCidr: "172.31.128.0/21", publicCidr: "172.31.143.0/24", privateUsable: 2043 });
    assert.deepEqual(carveVpc("192.168.7.0/24"), { privateCidr: "192.168.7.0/25", publicCidr: "192.168.7.240/28", privateUsable: 123 });
    // a host address is normalised to its block
    assert.equal(carveVpc("10.1.2.3/16")?.privateCidr, "10.1.0.0/17");
    assert.equal(carveVpc("10.0.0.0/25"), undefined);
    assert.equal(carveVpc("10.0.0.0/15"), undefined);
    assert.equal(carveVpc("not-a-cidr"), undefined);
});

test("ipsPerNode: efa-only interfaces take no address", () => {
    assert.equal(ipsPerNode([
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface" },
        { networkCardIndex: 0, deviceIndex: 1, interfaceType: "efa-only" },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: "efa" },
        { networkCardIndex: 2, deviceIndex: 0, interfaceType: "efa-only" },
    ]), 2);
});

test("isGravitonType reads the g after the generation digit", () => {
    for (const t of ["t4g.micro", "c7gn.large", "m6gd.xlarge", "im4gn.large"]) assert.equal(isGravitonType(t), true, t);
    for (const t of ["t3.micro", "t3a.small", "c6in.large", "g5.xlarge", "p5.48xlarge", "p6-b200.48xlarge"]) assert.equal(isGravitonType(t), false, t);
});

test("partitionOf", () => {
    assert.equal(partitionOf("us-east-1"), "aws");
    assert.equal(partitionOf("cn-north-1"), "aws-cn");
    assert.equal(partitionOf("us-gov-west-1"), "aws-us-gov");
});

test("sortIpv4 sorts numerically, not as text", () => {
    assert.deepEqual(sortIpv4(["10.0.1.2", "10.0.0.10", "10.0.0.9", "9.255.255.255"]), ["9.255.255.255", "10.0.0.9", "10.0.0.10", "10.0.1.2"]);
});

test("AMI queries", () => {
    assert.deepEqual(nodeAmiQuery("arm64"), {
        owners: ["amazon"], mostRecent: true,
        filters: [
            { name: "name", values: ["Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) ????????"] },
            { name: "architecture", values: ["arm64"] },
            { name: "state", values: ["available"] },
        ],
    });
    assert.deepEqual(bastionAmiQuery("arm64").filters[0], { name: "name", values: ["ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-arm64-server-*"] });
    assert.deepEqual(bastionAmiQuery("x86_64").owners, ["099720109477"]);
});

test("templateInterfaces: public-IP refusal only on the primary", () => {
    const got = templateInterfaces([
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface" },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: "efa-only" },
    ], "sg-1", "subnet-1");
    assert.deepEqual(got, [
        { networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface", securityGroups: ["sg-1"], subnetId: "subnet-1", deleteOnTermination: "true", associatePublicIpAddress: "false" },
        { networkCardIndex: 1, deviceIndex: 0, interfaceType: "efa-only", securityGroups: ["sg-1"], subnetId: "subnet-1", deleteOnTermination: "true" },
    ]);
});

test("placementSettings", () => {
    assert.deepEqual(placementSettings({ kind: "placement-group", strategy: "cluster" }), { placementGroup: true });
    assert.deepEqual(placementSettings({ kind: "capacity-block", reservationId: "cr-1", instanceCount: 4 }),
        { placementGroup: false, marketType: "capacity-block", reservationId: "cr-1" });
    assert.deepEqual(placementSettings({ kind: "capacity-reservation", reservationId: "cr-2", instanceCount: 4, placementGroup: false }),
        { placementGroup: false, reservationId: "cr-2" });
    assert.deepEqual(placementSettings({ kind: "none" }), { placementGroup: false });
});
