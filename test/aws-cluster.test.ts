import { isSecretInput, mockHostKey, mockHostKeyState, TLS_PRIVATE_KEY } from "./fixtures/host-key-mock";
import { before, beforeEach, describe, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type * as ClusterModule from "../components/aws/cluster";
import { SpecError } from "../components/errors";
import { planCluster } from "../components/plan";
import { ClusterSpec, parseClusterSpec } from "../components/spec";

/*
 * AwsEfaCluster on Pulumi's mock engine: every registered resource and every invoke is recorded, and the tests
 * assert exact types, counts and inputs. Expected interface layouts are written out from AWS's facts
 * (aws-efa.md §1/§2.1), not computed with the code under test.
 */

interface Registered { type: string; name: string; inputs: Record<string, any>; id: string; state: Record<string, any> }
interface Invoked { token: string; args: Record<string, any> }

let registered: Registered[] = [];
let invoked: Invoked[] = [];
/** how many instances the mocked DescribeInstances returns; each test sets it to its node count */
let runningNodes = 0;

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u rdmakit-example";
const DLAMI_ID = "ami-0dl0000000000000a";
const UBUNTU_ID = "ami-0ub0000000000000b";
const BASTION_IP = "198.51.100.7";

const T = {
    component: "rdmakit:index:AwsEfaCluster",
    vpc: "aws:ec2/vpc:Vpc",
    subnet: "aws:ec2/subnet:Subnet",
    igw: "aws:ec2/internetGateway:InternetGateway",
    eip: "aws:ec2/eip:Eip",
    nat: "aws:ec2/natGateway:NatGateway",
    rt: "aws:ec2/routeTable:RouteTable",
    rta: "aws:ec2/routeTableAssociation:RouteTableAssociation",
    sg: "aws:ec2/securityGroup:SecurityGroup",
    ingress: "aws:vpc/securityGroupIngressRule:SecurityGroupIngressRule",
    egress: "aws:vpc/securityGroupEgressRule:SecurityGroupEgressRule",
    instance: "aws:ec2/instance:Instance",
    key: "aws:ec2/keyPair:KeyPair",
    pg: "aws:ec2/placementGroup:PlacementGroup",
    lt: "aws:ec2/launchTemplate:LaunchTemplate",
    asg: "aws:autoscaling/group:Group",
    role: "aws:iam/role:Role",
    attach: "aws:iam/rolePolicyAttachment:RolePolicyAttachment",
    profile: "aws:iam/instanceProfile:InstanceProfile",
    getAmi: "aws:ec2/getAmi:getAmi",
    getInstances: "aws:ec2/getInstances:getInstances",
};

let mod: typeof ClusterModule;

before(async () => {
    await pulumi.runtime.setMocks({
        newResource(args) {
            const id = `${args.name}-id`;
            const state: Record<string, any> = { ...args.inputs, ...mockHostKeyState(args) };
            if (args.type === T.lt) state.latestVersion = 3;
            if (args.type === T.instance) state.publicIp = BASTION_IP;
            if (args.type === T.asg) state.name = `${args.name}-4f2a`;
            if (args.type === T.pg) state.name = `${args.name}-9c1d`;
            if (args.type === T.key) state.keyName = `${args.inputs.keyNamePrefix}7e3b`;
            if (args.type === T.profile) {
                state.arn = `arn:aws:iam::123456789012:instance-profile/${args.name}`;
                state.name = `${args.name}-7a1c`;
            }
            registered.push({ type: args.type, name: args.name, inputs: args.inputs, id, state });
            return { id, state };
        },
        call(args) {
            invoked.push({ token: args.token, args: args.inputs });
            if (args.token === T.getAmi) {
                const filters: Array<{ name: string; values: string[] }> = args.inputs.filters;
                const pinned = filters.find((f) => f.name === "image-id")?.values[0];
                const canonical = (args.inputs.owners ?? []).includes("099720109477");
                return { id: pinned ?? (canonical ? UBUNTU_ID : DLAMI_ID), rootDeviceName: "/dev/sda1", architecture: "x86_64" };
            }
            if (args.token === "aws:index/getServicePrincipal:getServicePrincipal") {
                // the result shape of @pulumi/aws getServicePrincipal (its doc: `logs.amazonaws.com.cn` in AWS China); the
                // suffix rule here is the mock's, what matters is that the trust policy takes the answer
                const suffix = String(args.inputs.region).startsWith("cn-") ? "amazonaws.com.cn" : "amazonaws.com";
                return { id: `${args.inputs.serviceName}.${args.inputs.region}.${suffix}`, name: `${args.inputs.serviceName}.${suffix}`, region: args.inputs.region, serviceName: args.inputs.serviceName, suffix };
            }
            if (args.token === T.getInstances) {
                // deliberately out of order: the component sorts
                const ips = Array.from({ length: runningNodes }, (_, i) => `10.0.${Math.floor(i / 200)}.${(i * 37) % 200 + 10}`).reverse();
                return { ids: ips.map((_, i) => `i-${i}`), privateIps: ips, publicIps: [], ipv6Addresses: [] };
            }
            return {};
        },
    }, "rdmakit", "test", false);
    // the resource options as the engine receives them (the mock's newResource sees only the inputs)
    const monitor = (pulumi.runtime as unknown as { getMonitor(): any }).getMonitor();
    const register = monitor.registerResource.bind(monitor);
    monitor.registerResource = (req: any, cb: unknown) => {
        options.set(req.getName(), {
            replaceOnChanges: req.getReplaceonchangesList(), deleteBeforeReplace: req.getDeletebeforereplace(),
            ignoreChanges: req.getIgnorechangesList(), dependsOn: req.getDependenciesList(),
        });
        return register(req, cb);
    };
    mod = await import("../components/aws/cluster");
});
const options = new Map<string, { replaceOnChanges: string[]; deleteBeforeReplace: boolean; ignoreChanges: string[]; dependsOn: string[] }>();

beforeEach(() => {
    registered = [];
    invoked = [];
});

function raw(instanceType: string, aws: Record<string, unknown> = {}, top: Record<string, unknown> = {}): any {
    return {
        name: "train",
        fabric: "aws-efa",
        nodes: 4,
        ssh: { allowedCidrs: ["203.0.113.0/24", "198.51.100.0/24"], publicKey: KEY },
        aws: { region: "us-east-2", availabilityZone: "us-east-2b", instanceType, ...aws },
        tags: { team: "ml" },
        // Blackwell needs a newer CUDA than the default pin (catalog minVersions); the SSM specs here test the fabric
        // only (test/cluster.test.ts runs Ansible's inventory through Session Manager)
        ...(instanceType.startsWith("p6-") ? { software: { cudaVersion: "13.0" } } : {}),
        ...(aws.access === "ssm" ? { provision: false } : {}),
        // the fabric alone; the Slurm head node has its own tests (describe "Slurm head node")
        scheduler: { type: "none" },
        ...top,
    };
}

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => o.apply(resolve));
}

const waitForRPCs = (pulumi.runtime as unknown as { waitForRPCs(): Promise<void> }).waitForRPCs;

let seq = 0;
/** Builds the component from a raw spec, waits until every child is registered. */
async function build(rawSpec: unknown) {
    const spec = parseClusterSpec(rawSpec);
    runningNodes = spec.nodes;
    const c = new mod.AwsEfaCluster(`c${++seq}`, { spec });
    await unwrap(c.nodePrivateIps);
    await waitForRPCs();
    return { c, spec };
}

const ofType = (type: string) => registered.filter((r) => r.type === type);
function one(type: string, nameSuffix?: string): Registered {
    const found = ofType(type).filter((r) => nameSuffix === undefined || r.name.endsWith(nameSuffix));
    assert.equal(found.length, 1, `expected one ${type}${nameSuffix ? ` named *${nameSuffix}` : ""}, got ${found.map((r) => r.name).join(", ")}`);
    return found[0];
}

type Iface = { networkCardIndex: number; deviceIndex: number; interfaceType: string };
/** efa-only at device 0 on cards from..to (AWS's recommendation for every card after 0) */
function efaOnlyCards(from: number, to: number): Iface[] {
    const out: Iface[] = [];
    for (let c = from; c <= to; c++) out.push({ networkCardIndex: c, deviceIndex: 0, interfaceType: "efa-only" });
    return out;
}
const ENA0 = { networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface" };
const EFA0 = { networkCardIndex: 0, deviceIndex: 1, interfaceType: "efa-only" };

const LAYOUTS: Record<string, { interfaces: Iface[]; efa: number }> = {
    // 4 cards, 4 EFA: card 0 supports EFA and takes 15 ENIs
    "p4d.24xlarge": {
        interfaces: [
            ENA0, EFA0,
            { networkCardIndex: 1, deviceIndex: 0, interfaceType: "efa-only" },
            { networkCardIndex: 2, deviceIndex: 0, interfaceType: "efa-only" },
            { networkCardIndex: 3, deviceIndex: 0, interfaceType: "efa-only" },
        ],
        efa: 4,
    },
    "p5.48xlarge": { interfaces: [ENA0, EFA0, ...efaOnlyCards(1, 31)], efa: 32 },
    "p5en.48xlarge": { interfaces: [ENA0, EFA0, ...efaOnlyCards(1, 15)], efa: 16 },
    "p6-b200.48xlarge": { interfaces: [ENA0, EFA0, ...efaOnlyCards(1, 7)], efa: 8 },
    // 17 cards, 16 EFA: card 0 is ENA only, EFA on cards 1-16
    "p6-b300.48xlarge": { interfaces: [ENA0, ...efaOnlyCards(1, 16)], efa: 16 },
};

describe("launch template interfaces per instance type", () => {
    for (const [type, want] of Object.entries(LAYOUTS)) {
        test(type, async () => {
            const { c } = await build(raw(type));
            const lt = one(T.lt);
            const sg = one(T.sg, "-efa-sg");
            const subnet = one(T.subnet, "-private");
            const got = lt.inputs.networkInterfaces as any[];
            assert.deepEqual(
                got.map((i) => ({ networkCardIndex: i.networkCardIndex, deviceIndex: i.deviceIndex, interfaceType: i.interfaceType })),
                want.interfaces,
            );
            for (const i of got) {
                assert.deepEqual(i.securityGroups, [sg.id], "the EFA security group on every interface");
                assert.equal(i.subnetId, subnet.id, "every interface in the one node subnet");
                assert.equal(i.deleteOnTermination, "true");
                const primary = i.networkCardIndex === 0 && i.deviceIndex === 0;
                assert.equal(i.associatePublicIpAddress, primary ? "false" : undefined);
            }
            assert.equal(lt.inputs.vpcSecurityGroupIds, undefined, "launch templates with interfaces cannot use vpcSecurityGroupIds");
            assert.equal(lt.inputs.instanceType, type);
            assert.equal(lt.inputs.imageId, DLAMI_ID);
            const summary = c.fabricSummary;
            assert.equal(summary.instanceType, type);
            assert.equal(summary.efaDevicesPerNode, want.efa);
            assert.equal(summary.interfacesPerNode, want.interfaces.length);
            assert.equal(summary.nodes, 4);
        });
    }
});

describe("security groups", () => {
    test("EFA group: all-protocol rules to itself both ways, NAT egress, SSH only from the bastion", async () => {
        await build(raw("p5.48xlarge"));
        const efa = one(T.sg, "-efa-sg");
        const bastionSg = one(T.sg, "-bastion-sg");
        const vpc = one(T.vpc);
        assert.equal(efa.inputs.vpcId, vpc.id);
        assert.equal(efa.inputs.ingress, undefined, "no inline rules: they would fight separate rule resources");
        assert.equal(efa.inputs.egress, undefined);

        const selfIn = one(T.ingress, "-efa-self-in").inputs;
        assert.equal(selfIn.securityGroupId, efa.id);
        assert.equal(selfIn.referencedSecurityGroupId, efa.id);
        assert.equal(selfIn.ipProtocol, "-1");
        assert.equal(selfIn.cidrIpv4, undefined);
        const selfOut = one(T.egress, "-efa-self-out").inputs;
        assert.equal(selfOut.securityGroupId, efa.id);
        assert.equal(selfOut.referencedSecurityGroupId, efa.id);
        assert.equal(selfOut.ipProtocol, "-1");
        const nat = one(T.egress, "-egress-all").inputs;
        assert.deepEqual([nat.securityGroupId, nat.ipProtocol, nat.cidrIpv4], [efa.id, "-1", "0.0.0.0/0"]);
        const ssh = one(T.ingress, "-ssh-from-bastion").inputs;
        assert.deepEqual(
            [ssh.securityGroupId, ssh.referencedSecurityGroupId, ssh.ipProtocol, ssh.fromPort, ssh.toPort, ssh.cidrIpv4],
            [efa.id, bastionSg.id, "tcp", 22, 22, undefined],
        );
        // every rule on the EFA group, listed: nothing else opens it
        const onEfa = registered.filter((r) => (r.type === T.ingress || r.type === T.egress) && r.inputs.securityGroupId === efa.id);
        assert.deepEqual(onEfa.map((r) => r.name.replace(/^c\d+/, "")).sort(), ["-efa-self-in", "-efa-self-out", "-egress-all", "-ssh-from-bastion"]);

        const bastionRules = registered.filter((r) => r.type === T.ingress && r.inputs.securityGroupId === bastionSg.id);
        assert.deepEqual(
            bastionRules.map((r) => [r.inputs.ipProtocol, r.inputs.fromPort, r.inputs.toPort, r.inputs.cidrIpv4]),
            [["tcp", 22, 22, "203.0.113.0/24"], ["tcp", 22, 22, "198.51.100.0/24"]],
        );
    });

    test("with access ssm: no bastion, no SSH ingress from anywhere, SSM instance profile", async () => {
        const { c } = await build(raw("p5.48xlarge", { access: "ssm" }));
        assert.equal(ofType(T.instance).length, 0);
        const efa = one(T.sg, "-efa-sg");
        // nothing opens port 22, from anywhere: Session Manager needs no inbound path to the nodes
        const ssh = registered.filter((r) => r.type === T.ingress && r.inputs.ipProtocol !== "-1" && r.inputs.fromPort <= 22 && r.inputs.toPort >= 22);
        assert.deepEqual(ssh.map((r) => r.name), []);
        // the EFA group's only ingress is its own (all protocols from itself)
        const onEfa = registered.filter((r) => r.type === T.ingress && r.inputs.securityGroupId === efa.id);
        assert.deepEqual(onEfa.map((r) => [r.inputs.ipProtocol, r.inputs.cidrIpv4, r.inputs.referencedSecurityGroupId]), [["-1", undefined, efa.id]]);
        const role = one(T.role);
        // EC2's principal as the provider gives it for the region's partition, not a literal
        assert.deepEqual(JSON.parse(role.inputs.assumeRolePolicy).Statement[0].Principal, { Service: "ec2.amazonaws.com" });
        assert.deepEqual(invoked.filter((i) => i.token === "aws:index/getServicePrincipal:getServicePrincipal").map((i) => [i.args.serviceName, i.args.region]), [["ec2", "us-east-2"]]);
        const attach = one(T.attach);
        assert.equal(attach.inputs.policyArn, "arn:aws:iam::aws:policy/AmazonSSMManagedInstanceCore");
        const profile = one(T.profile);
        assert.deepEqual(one(T.lt).inputs.iamInstanceProfile, { arn: profile.state.arn });
        assert.equal(await unwrap(c.bastionAddress), undefined);
        assert.equal(c.bastionUser, undefined);
    });

    test("with access ssm in the kit's VPC: interface endpoints for ssm, ssmmessages, ec2messages, HTTPS from the nodes only", async () => {
        await build(raw("p5.48xlarge", { access: "ssm" }));
        const efa = one(T.sg, "-efa-sg");
        const sg = one(T.sg, "-ssm-endpoints-sg");
        assert.equal(sg.inputs.vpcId, one(T.vpc).id);
        const https = registered.filter((r) => r.type === T.ingress && r.inputs.securityGroupId === sg.id);
        assert.deepEqual(https.map((r) => [r.inputs.ipProtocol, r.inputs.fromPort, r.inputs.toPort, r.inputs.referencedSecurityGroupId, r.inputs.cidrIpv4]),
            [["tcp", 443, 443, efa.id, undefined]]);
        const endpoints = ofType("aws:ec2/vpcEndpoint:VpcEndpoint");
        assert.deepEqual(endpoints.map((e) => ({ ...e.inputs, tags: undefined })), ["ssm", "ssmmessages", "ec2messages"].map((svc) => ({
            region: "us-east-2", vpcId: one(T.vpc).id, serviceName: `com.amazonaws.us-east-2.${svc}`, vpcEndpointType: "Interface",
            privateDnsEnabled: true, subnetIds: [one(T.subnet, "-private").id], securityGroupIds: [sg.id], tags: undefined,
        })));
        // and none with a bastion, or in a VPC of your own
        await build(raw("p5.48xlarge"));
        await build(raw("p5.48xlarge", { access: "ssm", network: { vpcId: "vpc-0abc1234", subnets: [{ id: "subnet-0def5678", availabilityZone: "us-east-2b" }] } }));
        assert.equal(ofType("aws:ec2/vpcEndpoint:VpcEndpoint").length, 3, "only the first cluster's three");
    });
});

describe("Slurm head node", () => {
    const SLURM = { scheduler: { type: "slurm" } };
    const rulesOn = (sgId: string) => registered.filter((r) => (r.type === T.ingress || r.type === T.egress) && r.inputs.securityGroupId === sgId)
        .map((r) => [r.type === T.ingress ? "in" : "out", r.inputs.ipProtocol, r.inputs.fromPort, r.inputs.toPort, r.inputs.referencedSecurityGroupId ?? r.inputs.cidrIpv4]);

    test("one instance in the nodes' private subnet, on the nodes' AMI, the plan's type, no public IP, IMDSv2, its own host key as a secret", async () => {
        const { c } = await build(raw("p5.48xlarge", {}, SLURM));
        const head = one(T.instance, "-head");
        assert.deepEqual(ofType(T.instance).map((r) => r.name.replace(/^c\d+/, "")).sort(), ["-bastion", "-head"]);
        const h = head.inputs;
        assert.equal(h.subnetId, one(T.subnet, "-private").id);
        assert.equal(h.ami, DLAMI_ID, "the nodes' image: the same Ubuntu release, so the same Slurm");
        assert.equal(h.instanceType, "m7i.2xlarge");
        assert.equal(h.associatePublicIpAddress, false);
        assert.deepEqual(h.vpcSecurityGroupIds, [one(T.sg, "-head-sg").id]);
        assert.equal(h.keyName, one(T.key).state.keyName);
        assert.deepEqual([h.metadataOptions.httpTokens, h.metadataOptions.httpPutResponseHopLimit], ["required", 1]);
        assert.deepEqual([h.rootBlockDevice.encrypted, h.rootBlockDevice.volumeType], [true, "gp3"]);
        assert.equal(h.iamInstanceProfile, undefined, "with a bastion: reached by SSH through it, no instance role");
        assert.ok(isSecretInput(h.userData), "the head node's user data holds its private host key: a secret");
        const key = mockHostKey("head");
        const doc = parseYaml(h.userData.value);
        assert.deepEqual(doc.ssh_keys, { ed25519_private: key.privateKey, ed25519_public: key.publicKey });
        // slurmctld runs only on the host SlurmctldHost names: the plan's controller name, not EC2's ip-10-...
        assert.deepEqual([doc.hostname, doc.preserve_hostname], ["train-head", false]);
        assert.equal(h.userDataReplaceOnChange, true);
        assert.deepEqual(options.get(head.name)?.ignoreChanges, ["ami"], "a newer DLAMI does not replace the head node and its /home");
        assert.equal(await unwrap(c.slurmHead!.hostPublicKey), key.publicKey);
        // a given type is used
        await build(raw("p5.48xlarge", {}, { scheduler: { controller: { instanceType: "c7i.4xlarge" } } }));
        assert.equal(ofType(T.instance).filter((r) => r.name.endsWith("-head")).at(-1)!.inputs.instanceType, "c7i.4xlarge");
    });

    test("rules: the plan's Slurm and NFS ports between the head node and the nodes only, SSH from the bastion, nothing from any CIDR", async () => {
        await build(raw("p5.48xlarge", {}, SLURM));
        const head = one(T.sg, "-head-sg").id, efa = one(T.sg, "-efa-sg").id, bastion = one(T.sg, "-bastion-sg").id;
        // slurm.conf's ports (6817 slurmctld, 6818 slurmd, SrunPortRange 60001-63000), NFSv4 2049: components/plan/scheduler.ts
        assert.deepEqual(rulesOn(head).sort(), [
            ["in", "tcp", 2049, 2049, efa], ["in", "tcp", 22, 22, bastion], ["in", "tcp", 60001, 63000, efa], ["in", "tcp", 6817, 6817, efa], ["in", "tcp", 6818, 6818, efa],
            ["out", "tcp", 443, 443, "0.0.0.0/0"], ["out", "tcp", 60001, 63000, efa], ["out", "tcp", 6818, 6818, efa], ["out", "tcp", 80, 80, "0.0.0.0/0"],
        ].sort());
        // the nodes' group: its own rules as without Slurm, and slurmd and srun's ports from the head node
        assert.deepEqual(rulesOn(efa).filter((r) => r[4] === head).sort(), [["in", "tcp", 60001, 63000, head], ["in", "tcp", 6818, 6818, head]].sort());
        assert.equal(rulesOn(efa).length, 4 + 2);
        // no rule anywhere lets a CIDR in, but the bastion's SSH from cluster.ssh.allowedCidrs
        const fromCidr = registered.filter((r) => r.type === T.ingress && r.inputs.cidrIpv4 !== undefined).map((r) => r.inputs.securityGroupId);
        assert.deepEqual([...new Set(fromCidr)], [bastion]);
        // homeNfs false: no NFS port
        registered = [];
        await build(raw("p5.48xlarge", {}, { scheduler: { homeNfs: false } }));
        assert.ok(!rulesOn(one(T.sg, "-head-sg").id).some((r) => r[2] === 2049));
    });

    test("with access ssm: the nodes' instance profile, HTTPS to the Session Manager endpoints, no SSH ingress", async () => {
        await build(raw("p5.48xlarge", { access: "ssm" }, SLURM));
        const h = one(T.instance, "-head").inputs;
        assert.equal(h.iamInstanceProfile, one(T.profile).state.name);
        const head = one(T.sg, "-head-sg").id;
        assert.ok(!rulesOn(head).some((r) => r[0] === "in" && r[2] === 22), "no SSH ingress: Session Manager");
        const endpoints = one(T.sg, "-ssm-endpoints-sg").id;
        assert.deepEqual(rulesOn(endpoints).sort(), [["in", "tcp", 443, 443, head], ["in", "tcp", 443, 443, one(T.sg, "-efa-sg").id]].sort());
    });

    test("a head node type of another architecture than the nodes' image is refused before anything is created", () => {
        const e = propertiesErrorOf(parseClusterSpec(raw("p5.48xlarge", {}, { scheduler: { controller: { instanceType: "m7g.2xlarge" } } })));
        const reason = e.errors.find((x) => x.propertyPath === "cluster.scheduler.controller.instanceType")?.reason ?? e.message;
        assert.match(reason, /not an x86_64 type.*\(got "m7g\.2xlarge"\); allowed: an x86_64 instance type/);
        assert.equal(registered.length, 0);
    });
});

describe("placement", () => {
    test("default: a cluster placement group on the group; no market type, no reservation", async () => {
        const { c } = await build(raw("p5.48xlarge"));
        const pg = one(T.pg);
        assert.equal(pg.inputs.strategy, "cluster");
        assert.equal(one(T.asg).inputs.placementGroup, pg.state.name);
        const lt = one(T.lt).inputs;
        assert.equal(lt.instanceMarketOptions, undefined);
        assert.equal(lt.capacityReservationSpecification, undefined);
        assert.equal(await unwrap(c.placementGroupName), pg.state.name);
        assert.equal(c.fabricSummary.placement, "placement-group");
    });

    test("capacity block: market type capacity-block, the reservation id, no placement group", async () => {
        const { c } = await build(raw("p5.48xlarge", {
            capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-2b", instanceCount: 4 },
        }));
        const lt = one(T.lt).inputs;
        assert.deepEqual(lt.instanceMarketOptions, { marketType: "capacity-block" });
        assert.deepEqual(lt.capacityReservationSpecification, { capacityReservationTarget: { capacityReservationId: "cr-0123456789abcdef0" } });
        assert.equal(ofType(T.pg).length, 0);
        assert.equal(one(T.asg).inputs.placementGroup, undefined);
        assert.equal(await unwrap(c.placementGroupName), undefined);
        assert.equal(c.fabricSummary.placement, "capacity-block");
    });

    test("targeted ODCR: the reservation id without a market type, and no new placement group by default", async () => {
        // a new placement group would be unrelated to the reservation (aws-efa.md §2.5)
        await build(raw("p5en.48xlarge", { capacityReservation: { reservationId: "cr-0abcdef0123456789", instanceCount: 8 } }));
        const lt = one(T.lt).inputs;
        assert.equal(lt.instanceMarketOptions, undefined);
        assert.deepEqual(lt.capacityReservationSpecification, { capacityReservationTarget: { capacityReservationId: "cr-0abcdef0123456789" } });
        assert.equal(ofType(T.pg).length, 0);
        assert.equal(one(T.asg).inputs.placementGroup, undefined);
    });

    test("targeted ODCR with placementGroup true: a cluster placement group on the group", async () => {
        await build(raw("p5en.48xlarge", {
            placementGroup: true, capacityReservation: { reservationId: "cr-0abcdef0123456789", instanceCount: 8 },
        }));
        assert.equal(one(T.asg).inputs.placementGroup, one(T.pg).state.name);
        assert.deepEqual(one(T.lt).inputs.capacityReservationSpecification, { capacityReservationTarget: { capacityReservationId: "cr-0abcdef0123456789" } });
    });
});

describe("node hardening", () => {
    test("IMDS hop limit 2 only when the spec says containers need the instance role", async () => {
        await build(raw("p5.48xlarge", { access: "ssm", containersUseInstanceRole: true }));
        assert.equal(one(T.lt).inputs.metadataOptions.httpPutResponseHopLimit, 2);
    });

    test("IMDSv2 required and an encrypted gp3 root volume of the configured size", async () => {
        await build(raw("p4d.24xlarge", { rootVolumeGiB: 500 }));
        const lt = one(T.lt).inputs;
        assert.equal(lt.metadataOptions.httpTokens, "required");
        assert.equal(lt.metadataOptions.httpEndpoint, "enabled");
        assert.equal(lt.metadataOptions.httpPutResponseHopLimit, 1, "only the host itself reaches IMDS");
        assert.deepEqual(lt.blockDeviceMappings, [{
            deviceName: "/dev/sda1",
            ebs: { volumeSize: 500, volumeType: "gp3", encrypted: "true", deleteOnTermination: "true" },
        }]);
        assert.deepEqual(lt.tagSpecifications.map((t: any) => t.resourceType), ["instance", "volume", "network-interface"]);
        for (const t of lt.tagSpecifications) {
            assert.deepEqual(t.tags, { team: "ml", "rdmakit:cluster": "train", Name: "train-node", "rdmakit:role": "node" });
        }
        assert.equal(lt.keyName, one(T.key).state.keyName);
        assert.equal(one(T.key).inputs.publicKey, KEY);
    });

    test("bastion: public subnet, explicit public IP, IMDSv2, encrypted root, Ubuntu AMI", async () => {
        const { c } = await build(raw("p5.48xlarge"));
        const b = one(T.instance, "-bastion").inputs;
        assert.equal(b.subnetId, one(T.subnet, "-public").id);
        assert.equal(b.associatePublicIpAddress, true);
        assert.equal(b.metadataOptions.httpTokens, "required");
        assert.equal(b.rootBlockDevice.encrypted, true);
        assert.equal(b.instanceType, "t3.micro");
        assert.equal(b.ami, UBUNTU_ID);
        assert.deepEqual(b.vpcSecurityGroupIds, [one(T.sg, "-bastion-sg").id]);
        assert.equal(await unwrap(c.bastionAddress), BASTION_IP);
        assert.equal(c.bastionUser, "ubuntu");
        assert.equal(c.sshUser, "ubuntu");
    });

    test("nodes get no public IP anywhere: private subnet without auto-assign, routed through the NAT", async () => {
        await build(raw("p6-b300.48xlarge"));
        const priv = one(T.subnet, "-private");
        const pub = one(T.subnet, "-public");
        assert.deepEqual([priv.inputs.cidrBlock, priv.inputs.availabilityZone, priv.inputs.mapPublicIpOnLaunch], ["10.0.0.0/17", "us-east-2b", false]);
        assert.deepEqual([pub.inputs.cidrBlock, pub.inputs.availabilityZone, pub.inputs.mapPublicIpOnLaunch], ["10.0.240.0/20", "us-east-2b", false]);
        const nat = one(T.nat);
        assert.equal(nat.inputs.subnetId, pub.id);
        assert.equal(nat.inputs.allocationId, one(T.eip).id);
        assert.deepEqual(one(T.rt, "-private-rt").inputs.routes, [{ cidrBlock: "0.0.0.0/0", natGatewayId: nat.id }]);
        assert.deepEqual(one(T.rt, "-public-rt").inputs.routes, [{ cidrBlock: "0.0.0.0/0", gatewayId: one(T.igw).id }]);
        assert.deepEqual(
            ofType(T.rta).map((r) => [r.inputs.subnetId, r.inputs.routeTableId]).sort(),
            [[priv.id, one(T.rt, "-private-rt").id], [pub.id, one(T.rt, "-public-rt").id]].sort(),
        );
        const asg = one(T.asg).inputs;
        assert.deepEqual(asg.vpcZoneIdentifiers, [priv.id]);
    });
});

describe("host keys", () => {
    test("the launch template and the bastion carry the stack's host keys, as secrets; outputs the public halves", async () => {
        const { c } = await build(raw("p5.48xlarge"));
        const node = mockHostKey("node"), bastion = mockHostKey("bastion");
        assert.deepEqual(ofType(TLS_PRIVATE_KEY).map((r) => [r.name, r.inputs.algorithm]).sort(), [["c" + seq + "-bastion-host-key", "ED25519"], ["c" + seq + "-node-host-key", "ED25519"]]);
        const lt = one(T.lt).inputs.userData;
        assert.ok(isSecretInput(lt), "the launch template's user data is a secret");
        assert.deepEqual(parseYaml(Buffer.from(lt.value, "base64").toString()).ssh_keys, { ed25519_private: node.privateKey, ed25519_public: node.publicKey });
        const b = one(T.instance).inputs;
        assert.ok(isSecretInput(b.userData), "the bastion's user data is a secret");
        assert.deepEqual(parseYaml(b.userData.value).ssh_keys, { ed25519_private: bastion.privateKey, ed25519_public: bastion.publicKey });
        // cloud-init installs a host key at an instance's first boot only: other user data, another bastion
        assert.equal(b.userDataReplaceOnChange, true);
        assert.equal(await unwrap(c.nodeHostPublicKey), node.publicKey);
        assert.equal(await unwrap(c.bastionHostPublicKey), bastion.publicKey);
    });
});

describe("nodes as one group", () => {
    async function inventory(nodes: number) {
        registered = [];
        invoked = [];
        const { c } = await build(raw("p5.48xlarge", {}, { nodes }));
        return {
            c,
            types: registered.map((r) => r.type).sort(),
            names: registered.map((r) => r.name.replace(/^c\d+/, "")).sort(),
            invokes: invoked.map((i) => i.token).sort(),
            asg: one(T.asg).inputs,
        };
    }

    test("the same resources and invokes at 8 and 512 nodes", async () => {
        const small = await inventory(8);
        const large = await inventory(512);
        assert.equal(small.types.length, large.types.length);
        assert.deepEqual(small.types, large.types);
        assert.deepEqual(small.names, large.names);
        assert.deepEqual(small.invokes, large.invokes);
        // and the list itself, so a per-node resource cannot sneak in at both sizes
        assert.deepEqual(small.names, [
            "", "-bastion", "-bastion-egress", "-bastion-host-key", "-bastion-sg", "-bastion-ssh-0", "-bastion-ssh-1", "-capacity",
            "-efa-self-in", "-efa-self-out", "-efa-sg", "-egress-all", "-igw", "-key", "-lt", "-nat", "-nat-eip", "-node-host-key", "-nodes", "-pg",
            "-private", "-private-rt", "-private-rta", "-public", "-public-rt", "-public-rta", "-ssh-from-bastion", "-vpc",
        ]);
        // the AMI lookups, the group's IPs, and the four questions asked of AWS first (components/aws/cloud.ts)
        assert.deepEqual(small.invokes, [T.getAmi, T.getAmi, "aws:ec2/getInstanceType:getInstanceType", "aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings", T.getInstances,
            "aws:index/getCallerIdentity:getCallerIdentity", "aws:servicequotas/getServiceQuota:getServiceQuota"]);
        assert.deepEqual([small.asg.minSize, small.asg.maxSize, small.asg.desiredCapacity], [8, 8, 8]);
        assert.deepEqual([large.asg.minSize, large.asg.maxSize, large.asg.desiredCapacity], [512, 512, 512]);
        assert.equal((await unwrap(large.c.nodePrivateIps)).length, 512);
    });

    test("the group runs the launch template's latest version; the kit's command waits for its capacity", async () => {
        await build(raw("p5.48xlarge"));
        const asg = one(T.asg).inputs;
        const lt = one(T.lt);
        assert.deepEqual(asg.launchTemplate, { id: lt.id, version: "3" });
        // the provider does not wait (it would time out without AWS's reason); the capacity command does
        assert.equal(asg.waitForCapacityTimeout, "0");
        assert.equal(asg.ignoreFailedScalingActivities, true);
        assert.equal(asg.healthCheckType, "EC2");
        // a lowered count cannot take a node the kit did not choose and drain (day2/scale.ts)
        assert.equal(asg.protectFromScaleIn, true);
        const wait = one("command:local:Command", "-capacity").inputs;
        assert.deepEqual(wait.interpreter, ["node", "-e"]);
        assert.deepEqual(wait.environment, {
            RDMAKIT_GROUP: one(T.asg).state.name, RDMAKIT_DESIRED: "4", RDMAKIT_TEMPLATE_VERSION: "3", RDMAKIT_REGION: "us-east-2",
            RDMAKIT_WAIT_SECONDS: "1800", RDMAKIT_POLL_SECONDS: "15",
        });
    });

    test("a new node definition replaces the group, old group first; a rotated key or another node count does not", async () => {
        const prefix = async (rawSpec: unknown) => {
            await build(rawSpec);
            const asg = ofType(T.asg).at(-1)!;
            assert.equal(options.get(asg.name)!.deleteBeforeReplace, true, "old group first: a reservation has no room for both");
            assert.deepEqual(options.get(asg.name)!.replaceOnChanges, []);
            return asg.inputs.namePrefix as string;
        };
        const base = await prefix(raw("p5.48xlarge"));
        assert.match(base, /^train-nodes-[0-9a-f]{8}-$/);
        // the group's name carries the nodes' definition: an Auto Scaling group cannot be renamed, so it is replaced
        const otherKey = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGw1p3bFf2B0z9Fv7lZ3a8l9s1Q0c2kYy4mX3tR6uV8w rotated";
        assert.equal(await prefix({ ...raw("p5.48xlarge"), ssh: { allowedCidrs: ["203.0.113.0/24", "198.51.100.0/24"], publicKey: otherKey } }), base, "a rotated key keeps the nodes");
        assert.equal(await prefix(raw("p5.48xlarge", {}, { nodes: 6 })), base, "the count changes in place");
        assert.notEqual(await prefix(raw("p5.48xlarge", { ami: "ami-0123456789abcdef0" })), base, "a pinned image replaces the nodes");
        assert.notEqual(await prefix(raw("p5.48xlarge", { rootVolumeGiB: 400 })), base, "so does another root volume");
        assert.notEqual(await prefix(raw("p5en.48xlarge")), base, "and another type");
        // the default image lookup does not move the template (so neither the name): a newer DLAMI changes nothing
        await build(raw("p5.48xlarge"));
        assert.deepEqual(options.get(ofType(T.lt).at(-1)!.name)!.ignoreChanges, ["imageId"]);
        // the wait comes after the group, and it is what the node lookup waits for
        assert.ok(options.get(ofType("command:local:Command").at(-1)!.name)!.dependsOn.some((u) => u.endsWith(`::${ofType(T.asg).at(-1)!.name}`)));
    });

    test("the nodes are instance ids paired with their addresses, sorted by address", async () => {
        const { c } = await build(raw("p5.48xlarge", {}, { nodes: 3 }));
        // the mock lists 10.0.0.84 (i-0), 10.0.0.47 (i-1), 10.0.0.10 (i-2)
        assert.deepEqual(await unwrap(c.nodes), [
            { instanceId: "i-2", privateIp: "10.0.0.10" }, { instanceId: "i-1", privateIp: "10.0.0.47" }, { instanceId: "i-0", privateIp: "10.0.0.84" },
        ]);
    });

    test("private IPs come from one lookup of the group, sorted", async () => {
        const { c } = await build(raw("p5.48xlarge", {}, { nodes: 6 }));
        const lookups = invoked.filter((i) => i.token === T.getInstances);
        assert.equal(lookups.length, 1);
        assert.deepEqual(lookups[0].args.filters, [{ name: "tag:aws:autoscaling:groupName", values: [one(T.asg).state.name] }]);
        assert.deepEqual(lookups[0].args.instanceStateNames, ["running"]);
        assert.equal(lookups[0].args.region, "us-east-2");
        assert.deepEqual(await unwrap(c.nodePrivateIps), ["10.0.0.10", "10.0.0.47", "10.0.0.84", "10.0.0.121", "10.0.0.158", "10.0.0.195"]);
        assert.equal(await unwrap(c.groupName), one(T.asg).state.name);
        assert.equal(await unwrap(c.launchTemplateId), one(T.lt).id);
        assert.equal(await unwrap(c.securityGroupId), one(T.sg, "-efa-sg").id);
        assert.equal(await unwrap(c.vpcId), one(T.vpc).id);
        assert.equal(await unwrap(c.subnetId), one(T.subnet, "-private").id);
    });
});

describe("AMI, region, given network", () => {
    test("default AMI: one lookup of the newest DLAMI (Ubuntu 22.04) by Amazon for the architecture", async () => {
        await build(raw("p6-b200.48xlarge"));
        const nodeAmi = invoked.filter((i) => i.token === T.getAmi && i.args.owners?.includes("amazon"));
        assert.equal(nodeAmi.length, 1);
        assert.equal(nodeAmi[0].args.mostRecent, true);
        assert.deepEqual(nodeAmi[0].args.filters, [
            { name: "name", values: ["Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) ????????"] },
            { name: "architecture", values: ["x86_64"] },
            { name: "state", values: ["available"] },
        ]);
    });

    test("given AMI: pinned by id (any owner), still checked for the architecture", async () => {
        await build(raw("p5.48xlarge", { ami: "ami-0123456789abcdef0" }));
        const lookups = invoked.filter((i) => i.token === T.getAmi && i.args.filters.some((f: any) => f.name === "image-id"));
        assert.equal(lookups.length, 1);
        assert.equal(lookups[0].args.owners, undefined);
        assert.deepEqual(lookups[0].args.filters[1], { name: "architecture", values: ["x86_64"] });
        assert.equal(one(T.lt).inputs.imageId, "ami-0123456789abcdef0");
    });

    test("every regional resource and invoke carries the spec's region; IAM is global", async () => {
        await build(raw("p5.48xlarge", { access: "ssm" }));
        for (const r of registered) {
            if (r.type === T.component) continue;
            // the capacity wait is a local command: the region is its environment's
            if (r.type === "command:local:Command") { assert.equal(r.inputs.environment.RDMAKIT_REGION, "us-east-2"); continue; }
            // the host keys are made by the tls provider, in the state: no region
            if (r.type === TLS_PRIVATE_KEY) continue;
            const want = r.type.startsWith("aws:iam/") ? undefined : "us-east-2";
            assert.equal(r.inputs.region, want, `${r.type} ${r.name}`);
        }
        for (const i of invoked) {
            // STS's caller identity is the account's, whatever the region (GetCallerIdentityArgs takes none)
            if (i.token === "aws:index/getCallerIdentity:getCallerIdentity") continue;
            assert.equal(i.args.region, "us-east-2", i.token);
        }
    });

    test("given VPC and subnet: nothing of the network is created, every interface in that subnet", async () => {
        await build(raw("p5.48xlarge", {
            access: "ssm",
            network: { vpcId: "vpc-0abc1234", subnets: [{ id: "subnet-0def5678", availabilityZone: "us-east-2b" }] },
        }));
        for (const t of [T.vpc, T.subnet, T.igw, T.eip, T.nat, T.rt, T.rta, T.instance]) assert.equal(ofType(t).length, 0, t);
        assert.equal(one(T.sg).inputs.vpcId, "vpc-0abc1234");
        assert.ok((one(T.lt).inputs.networkInterfaces as any[]).every((i) => i.subnetId === "subnet-0def5678"));
        assert.deepEqual(one(T.asg).inputs.vpcZoneIdentifiers, ["subnet-0def5678"]);
    });

    test("the plan it exposes is the plan of its spec", async () => {
        const spec = parseClusterSpec(raw("p4d.24xlarge"));
        const plan = planCluster(spec);
        runningNodes = spec.nodes;
        const c = new mod.AwsEfaCluster(`c${++seq}`, { spec });
        await unwrap(c.nodePrivateIps);
        await waitForRPCs();
        assert.deepEqual(c.plan, plan);
        assert.equal(c.fabricSummary.minBusbwGBps, plan.validation.allNodes.minBusbwGBps);
        assert.equal(c.fabricSummary.expectedBusbwGBps, plan.validation.allNodes.expectedBusbwGBps);
        assert.equal((one(T.lt).inputs.networkInterfaces as any[]).length, plan.aws!.interfaces.length);
    });
});

describe("examples/aws-p5.yaml", () => {
    test("is a stack settings file whose cluster builds: 4 x p5.48xlarge, regions agree", async () => {
        const file = parseYaml(readFileSync(join(__dirname, "..", "examples", "aws-p5.yaml"), "utf8"));
        const cluster = file.config["rdmakit:cluster"];
        const { c, spec } = await build(cluster);
        assert.equal(spec.nodes, 4);
        assert.equal(spec.aws!.instanceType, "p5.48xlarge");
        assert.equal(file.config["aws:region"], spec.aws!.region);
        assert.equal(c.fabricSummary.efaDevicesPerNode, 32);
        assert.equal((await unwrap(c.nodePrivateIps)).length, 4);
        assert.equal(one(T.key).inputs.publicKey, cluster.ssh.publicKey);
    });
});

/** Raw spec → parseClusterSpec → AwsEfaCluster, the way RdmaCluster runs it. */
function buildFromRaw(rawSpec: unknown): void {
    const spec = parseClusterSpec(rawSpec);
    new mod.AwsEfaCluster(`bad${++seq}`, { spec });
}

function specErrorOf(rawSpec: unknown): SpecError {
    try {
        buildFromRaw(rawSpec);
    } catch (e) {
        assert.ok(e instanceof SpecError, `expected SpecError, got ${String(e)}`);
        return e;
    }
    assert.fail("the spec was accepted");
}

describe("bad input from the issue is refused before anything is created", () => {
    const cases: Array<{ title: string; raw: any; path: string; allowed: string[] }> = [
        {
            title: "a non-EFA instance type",
            raw: raw("m5.24xlarge"),
            path: "cluster.aws.instanceType",
            allowed: ["p5.48xlarge", "p6-b300.48xlarge"],
        },
        {
            title: "a type without GPUDirect RDMA, not accepted explicitly",
            raw: raw("g6e.48xlarge"),
            path: "cluster.aws.instanceType",
            allowed: ["allowNoGpuDirect: true"],
        },
        {
            title: "a capacity block in another AZ",
            raw: raw("p5.48xlarge", { capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-2a", instanceCount: 4 } }),
            path: "cluster.aws.capacityBlock.availabilityZone",
            allowed: ["us-east-2b"],
        },
        {
            title: "subnets in more than one AZ",
            raw: raw("p5.48xlarge", {
                network: {
                    vpcId: "vpc-0abc1234",
                    subnets: [{ id: "subnet-0aaa1111", availabilityZone: "us-east-2b" }, { id: "subnet-0bbb2222", availabilityZone: "us-east-2c" }],
                },
            }),
            path: "cluster.aws.network.subnets",
            allowed: ["one subnet in us-east-2b"],
        },
        {
            title: "more nodes than the capacity block holds",
            raw: raw("p5.48xlarge", { capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-2b", instanceCount: 2 } }),
            path: "cluster.nodes",
            allowed: ["at most 2"],
        },
        {
            title: "more nodes than the capacity reservation holds",
            raw: raw("p5.48xlarge", { capacityReservation: { reservationId: "cr-0abcdef0123456789", instanceCount: 3 } }),
            path: "cluster.nodes",
            allowed: ["at most 3"],
        },
        {
            title: "a placement group together with a capacity block",
            raw: raw("p5.48xlarge", {
                placementGroup: true,
                capacityBlock: { reservationId: "cr-0123456789abcdef0", availabilityZone: "us-east-2b", instanceCount: 4 },
            }),
            path: "cluster.aws.placementGroup",
            allowed: ["false or leave it out"],
        },
    ];
    for (const c of cases) {
        test(c.title, () => {
            const err = specErrorOf(c.raw);
            const issue = err.issues.find((i) => i.path === c.path);
            assert.ok(issue, `no issue at ${c.path}: ${err.message}`);
            for (const a of c.allowed) assert.ok(issue.allowed?.includes(a), `allowed of ${c.path} lacks ${a}: ${issue.allowed}`);
            assert.ok(err.message.includes(c.path), "the message names the field");
            assert.equal(registered.length, 0, "nothing registered");
        });
    }
});

function propertiesErrorOf(spec: ClusterSpec): pulumi.InputPropertiesError {
    try {
        new mod.AwsEfaCluster(`bad${++seq}`, { spec });
    } catch (e) {
        assert.ok(pulumi.InputPropertiesError.isInstance(e), `expected InputPropertiesError, got ${String(e)}`);
        return e;
    }
    assert.fail("the input was accepted");
}

describe("what the component itself refuses", () => {
    const reasonAt = (e: pulumi.InputPropertiesError, path: string) => {
        const found = e.errors.find((x) => x.propertyPath === path);
        assert.ok(found, `no error at ${path}: ${e.message}`);
        return found.reason;
    };

    test("a spec of another fabric", () => {
        const spec = parseClusterSpec({
            name: "ib", fabric: "azure-ib", nodes: 2, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
            azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" },
        });
        const e = propertiesErrorOf(spec);
        assert.match(reasonAt(e, "cluster.fabric"), /allowed: aws-efa/);
        assert.equal(registered.length, 0);
    });

    test("a VPC id without the subnet to use", () => {
        const e = propertiesErrorOf(parseClusterSpec(raw("p5.48xlarge", { access: "ssm", network: { vpcId: "vpc-0abc1234" } })));
        assert.match(reasonAt(e, "cluster.aws.network.subnets"), /allowed: one private subnet in us-east-2b/);
    });

    test("a bastion in an existing VPC", () => {
        const e = propertiesErrorOf(parseClusterSpec(raw("p5.48xlarge", {
            network: { vpcId: "vpc-0abc1234", subnets: [{ id: "subnet-0def5678", availabilityZone: "us-east-2b" }] },
        })));
        assert.match(reasonAt(e, "cluster.aws.access"), /allowed: ssm/);
        assert.equal(registered.length, 0);
    });

    test("a VPC block the kit cannot carve", () => {
        const e = propertiesErrorOf(parseClusterSpec(raw("p5.48xlarge", { network: { vpcCidr: "10.0.0.0/26" } })));
        assert.match(reasonAt(e, "cluster.aws.network.vpcCidr"), /"10.0.0.0\/26".*allowed: a \/16 to \/24 block/);
    });

    test("more nodes than the node subnet has addresses", async () => {
        // /24 VPC -> /25 node subnet -> 128 - 5 = 123 addresses; p5 takes one per node (the rest are efa-only)
        const ok = checkNodes(123);
        assert.equal(ok, undefined);
        await waitForRPCs();
        const e = checkNodes(124)!;
        assert.match(reasonAt(e, "cluster.aws.network.vpcCidr"), /leaves 123 addresses in the node subnet 10\.0\.0\.0\/25; 124 nodes need 124/);
    });

    function checkNodes(nodes: number): pulumi.InputPropertiesError | undefined {
        const spec = parseClusterSpec(raw("p5.48xlarge", { network: { vpcCidr: "10.0.0.0/24" } }, { nodes }));
        try {
            runningNodes = nodes;
            new mod.AwsEfaCluster(`n${++seq}`, { spec });
            return undefined;
        } catch (e) {
            assert.ok(pulumi.InputPropertiesError.isInstance(e));
            return e;
        }
    }
});
