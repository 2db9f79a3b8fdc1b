import * as aws from "./sdk";
import * as pulumi from "@pulumi/pulumi";
import * as local from "@pulumi/command/local";
import { keepMessage, SpecError, SpecIssue, toInputPropertiesError } from "../errors";
import { FabricPlan, planCluster } from "../plan";
import { efaDeviceCount } from "../plan/aws";
import { Internals } from "../internal";
import { checkedId, ClusterSpec, parseSpecArg } from "../spec";
import type { ClusterSpecInput } from "../types";
import { bastionAmiQuery, DLAMI_SSH_USER, nodeAmiQuery } from "./ami";
import { jumpHostCloudConfig } from "../provision/jump";
import { hostKeyCloudConfig } from "../provision/hostkeys";
import { stackHostKey, type StackHostKey } from "../provision/hostkey-resource";
import { checkAwsClusterInput } from "./checks";
import { askSsmReach, SSM_ENDPOINT_SERVICES } from "./ssm-reach";
import { askAwsCloud, blockScaleInTime, gradeReservation, gradeRootVolume, placementGroupName } from "./cloud";
import { AwsNode, CAPACITY_WAIT_SCRIPT, GROUP_CAPACITY_POLL_SECONDS, GROUP_CAPACITY_WAIT_SECONDS, GROUP_REPLACEMENT, groupNamePrefix, pairNodes } from "./lifecycle";
import { carveVpc, isGravitonType, partitionOf } from "./network";
import { placementSettings, templateInterfaces } from "./template";
import { type AwsHead, createAwsSlurmHead } from "./slurm-head";
import { EC2_TOPOLOGY_SCRIPT, ec2TopologyFromRead, TOPOLOGY_INSTANCE_TYPES, TOPOLOGY_POLL_SECONDS, TOPOLOGY_WAIT_SECONDS } from "../slurm/ec2-topology";
import type { Ec2Topology } from "../slurm/render";

/** Arguments of {@link AwsEfaCluster}. Everything else comes from the spec and the plan. */
export interface AwsEfaClusterArgs {
    /**
     * The cluster spec, fabric `aws-efa`: its `aws` section says where (region, AZ, network), what (instance type,
     * AMI, root volume), how nodes are placed and how operators get in. Checked by the same schema as the stack
     * config before anything is created.
     */
    spec: ClusterSpecInput;
}

/** What the cluster is, for reports and for the validation step. Plain values, known at preview. */
export interface AwsFabricSummary {
    instanceType: string;
    nodes: number;
    gpusPerNode: number;
    /** EFA devices per node (`efa` + `efa-only` interfaces) */
    efaDevicesPerNode: number;
    /** launch-template interfaces per node, ENA included */
    interfacesPerNode: number;
    /** total EFA line rate of one node, Gb/s */
    rdmaGbpsPerNode: number;
    /** cluster-placement-group, capacity-block, capacity-reservation or none */
    placement: string;
    /** typical all_reduce busbw for this node count, GB/s, when a published figure or line-rate rule gives one */
    expectedBusbwGBps?: number;
    /** the busbw validation requires, GB/s */
    minBusbwGBps: number;
    /** where those figures come from */
    busbwSource: string;
}

const plans = new Internals<AwsEfaCluster, FabricPlan>();
const slurmParts = new Internals<AwsEfaCluster, { head?: AwsHead; topology?: pulumi.Output<Ec2Topology | undefined> }>();

/**
 * An AWS GPU cluster whose every GPU reaches every other over EFA with GPUDirect RDMA: one VPC subnet in one AZ,
 * an EFA security group with all-traffic rules to itself both ways, a launch template with one interface per
 * network card, and all nodes as one Auto Scaling group (placement group, capacity block or ODCR per the plan).
 *
 * Region: every regional child and invoke carries `region: spec.aws.region` (AWS provider v7 per-resource region,
 * https://www.pulumi.com/registry/packages/aws/how-to-guides/aws-enhanced-region-support/), so the spec's region
 * holds whichever provider is in use, and the default or given provider keeps its credentials, profile and
 * default tags. No provider child is created.
 */
export class AwsEfaCluster extends pulumi.ComponentResource {
    /** private IPv4 of each node's primary interface, sorted; from one lookup of the group */
    public readonly nodePrivateIps: pulumi.Output<string[]>;
    /**
     * The nodes as EC2 has them at this `pulumi up`, in nodePrivateIps order: instance id and address. The instance
     * ids are the nodes' identity: the inventory carries them, so a node the group replaced (new id, even at a reused
     * address) makes the next `pulumi up` provision and validate again.
     */
    public readonly nodes: pulumi.Output<AwsNode[]>;
    /** public IP of the bastion; undefined with `access: ssm` */
    public readonly bastionAddress: pulumi.Output<string | undefined>;
    /** login user on the nodes */
    public readonly sshUser: string;
    /** login user on the bastion; undefined with `access: ssm` */
    public readonly bastionUser: string | undefined;
    /**
     * The SSH host key every node shows (`ssh-ed25519 AAAA...`): made by the stack, installed through the launch
     * template's user data, pinned in out/<stack>/known_hosts (components/provision/hostkeys.ts).
     */
    public readonly nodeHostPublicKey: pulumi.Output<string>;
    /** The bastion's SSH host key, the same way; undefined with `access: ssm` */
    public readonly bastionHostPublicKey: pulumi.Output<string | undefined>;
    public readonly fabricSummary: AwsFabricSummary;
    /** The plan everything here was read from. */
    get plan(): FabricPlan { return plans.of(this); }
    public readonly vpcId: pulumi.Output<string>;
    /** the one subnet every node interface is in */
    public readonly subnetId: pulumi.Output<string>;
    /** the EFA security group on every node interface */
    public readonly securityGroupId: pulumi.Output<string>;
    public readonly launchTemplateId: pulumi.Output<string>;
    /** the Auto Scaling group's name */
    public readonly groupName: pulumi.Output<string>;
    /** the cluster placement group; undefined when the plan has none */
    public readonly placementGroupName: pulumi.Output<string | undefined>;
    /**
     * The Slurm head node (./slurm-head.ts): private IP, instance id, its SSH host key (public line), its security
     * group; undefined when the plan runs no Slurm. (Getters: the component schema carries no optional Output shapes.)
     */
    get slurmHead(): AwsHead | undefined { return slurmParts.of(this).head; }
    /**
     * With Slurm: the nodes' EC2 instance topology read at this `pulumi up` (../slurm/ec2-topology.ts), for
     * topology.conf; undefined when it could not be read (a warning says why) or the type has none.
     */
    get ec2Topology(): pulumi.Output<Ec2Topology | undefined> | undefined { return slurmParts.of(this).topology; }

    constructor(name: string, args: AwsEfaClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Before super(): a refused input leaves nothing registered.
        const spec = parseSpecArg(args.spec, `AwsEfaCluster ${name}`);
        const plan = spec.fabric === "aws-efa" && spec.aws ? planCluster(spec) : undefined;
        const issues = checkAwsClusterInput(spec, plan);
        if (issues.length > 0 || !plan?.aws || !spec.aws) {
            throw toInputPropertiesError(new SpecError(issues, `invalid AwsEfaCluster ${name}`));
        }
        super("rdmakit:index:AwsEfaCluster", name, {}, opts);

        // Every child takes its region from the cloud's answers, so nothing is created until AWS has confirmed the
        // type's layout, its offer in the AZ and the quota (./cloud.ts); a refusal names the field and registers nothing.
        const reservation = readReservation(name, spec, plan, this);
        // The one AMI lookup for the nodes (also for a given AMI: it checks region and architecture, and gives the
        // root device name the volume mapping needs), asked with the others: its root snapshot bounds the root volume.
        // Graded in the promise (as askAwsCloud does): an answer the engine does not know yet (the offline plan) passes
        // instead of holding back every child's region.
        const nodeAmiAnswer = aws.ec2.getAmi({ region: spec.aws.region, ...nodeAmiQuery(plan.aws.arch, spec.aws.ami) }, { parent: this });
        const nodeAmi = pulumi.output(nodeAmiAnswer);
        const amiIssues = nodeAmiAnswer.then((ami) => gradeRootVolume(spec, ami), (e: unknown): SpecIssue[] => [{
            path: spec.aws!.ami ? "cluster.aws.ami" : "cluster.aws.region", value: spec.aws!.ami ?? spec.aws!.region,
            message: `has no ${plan.aws!.arch} node AMI EC2 can find: ${String((e as Error)?.message ?? e)}`,
            allowed: spec.aws!.ami ? `an AMI id available in ${spec.aws!.region} for ${plan.aws!.arch}` : "a region where the Deep Learning Base AMI is published",
        }]);
        // with access: ssm in a VPC of your own: the subnet's way to Systems Manager (a NAT route or the endpoints)
        const ssmReach = askSsmReach(spec, this).apply((r) => {
            for (const w of r.warnings) void pulumi.log.warn(w, this);
            return r.issues;
        });
        const region = pulumi.all([askAwsCloud(spec, plan, this), reservation?.issues ?? [], amiIssues, ssmReach]).apply(([cloud, held, ami, ssm]) => {
            const issues = [...cloud, ...held, ...ami, ...ssm];
            if (issues.length > 0) throw keepMessage(new SpecError(issues, `AwsEfaCluster ${name}: AWS refuses this cluster`));
            return spec.aws!.region;
        });
        const ctx: Ctx = {
            name, spec: { ...spec, aws: spec.aws }, plan: { ...plan, aws: plan.aws }, region, parent: this, tags: baseTags(spec),
        };
        const net = createNetwork(ctx);
        // one host key for the node group, one for the bastion (components/provision/hostkeys.ts says why per group)
        const nodeHostKey = stackHostKey(`${name}-node-host-key`, this);
        const access = createAccess(ctx, net);
        const sg = createEfaSecurityGroup(ctx, net, access);
        const endpointsSg = createSsmEndpoints(ctx, net, sg);
        const nodes = createNodes(ctx, net, sg, access, nodeHostKey, nodeAmi, reservation);
        let head: AwsHead | undefined;
        if (plan.scheduler.type === "slurm") {
            head = createAwsSlurmHead({
                name, clusterName: spec.name, region, parent: this, tags: ctx.tags, slurm: plan.scheduler,
                vpcId: net.vpcId, subnetId: net.subnetId, nodeSecurityGroupId: sg.id,
                ...(access.bastionSecurityGroupId ? { bastionSecurityGroupId: access.bastionSecurityGroupId } : {}),
                ...(access.instanceProfileName ? { instanceProfileName: access.instanceProfileName } : {}),
                ...(endpointsSg ? { ssmEndpointsSecurityGroupId: endpointsSg.id } : {}),
                keyName: access.keyName, ami: nodeAmi.id, amiPinned: spec.aws.ami !== undefined,
            });
        }

        // One lookup for the whole group: instances carry the aws:autoscaling:groupName tag that the group adds.
        // source: https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-tagging.html
        // Read at every pulumi up (an invoke is never cached), after the capacity wait: the group's members now.
        const found = aws.ec2.getInstancesOutput({
            region: ctx.region,
            filters: [{ name: "tag:aws:autoscaling:groupName", values: [nodes.group.name] }],
            instanceStateNames: ["running"],
        }, { parent: this, dependsOn: [nodes.group, nodes.capacity] });

        const allNodes = plan.validation.allNodes;
        plans.set(this, plan);
        this.nodes = pulumi.all([found.ids, found.privateIps, nodes.group.name]).apply(([ids, ips, group]) => pairNodes(ids, ips, { nodes: spec.nodes, group }));
        this.nodePrivateIps = this.nodes.apply((ns) => ns.map((n) => n.privateIp));
        slurmParts.set(this, { head, ...(plan.scheduler.type === "slurm" ? { topology: readTopology(ctx, this.nodes, nodes.capacity) } : {}) });
        this.bastionAddress = access.bastion ? access.bastion.publicIp : pulumi.output<string | undefined>(undefined);
        this.sshUser = plan.sshUser;
        this.bastionUser = access.bastion ? DLAMI_SSH_USER : undefined;
        this.nodeHostPublicKey = nodeHostKey.publicKey;
        this.bastionHostPublicKey = access.bastionHostKey ? access.bastionHostKey.publicKey : pulumi.output<string | undefined>(undefined);
        this.fabricSummary = {
            instanceType: plan.aws.instanceType,
            nodes: plan.nodes.count,
            gpusPerNode: plan.nodes.gpusPerNode,
            efaDevicesPerNode: efaDeviceCount(plan.aws.interfaces),
            interfacesPerNode: plan.aws.interfaces.length,
            rdmaGbpsPerNode: plan.nics.rdmaGbpsPerNode,
            placement: plan.aws.placement.kind,
            ...(allNodes.expectedBusbwGBps !== undefined ? { expectedBusbwGBps: allNodes.expectedBusbwGBps } : {}),
            minBusbwGBps: allNodes.minBusbwGBps,
            busbwSource: allNodes.source,
        };
        this.vpcId = net.vpcId;
        this.subnetId = net.subnetId;
        this.securityGroupId = sg.id;
        this.launchTemplateId = nodes.template.id;
        this.groupName = nodes.group.name;
        this.placementGroupName = nodes.placementGroup ? nodes.placementGroup.name : pulumi.output<string | undefined>(undefined);

        this.registerOutputs({
            nodePrivateIps: this.nodePrivateIps,
            nodes: this.nodes,
            bastionAddress: this.bastionAddress,
            sshUser: this.sshUser,
            bastionUser: this.bastionUser,
            nodeHostPublicKey: this.nodeHostPublicKey,
            bastionHostPublicKey: this.bastionHostPublicKey,
            fabricSummary: this.fabricSummary,
            vpcId: this.vpcId,
            subnetId: this.subnetId,
            securityGroupId: this.securityGroupId,
            launchTemplateId: this.launchTemplateId,
            groupName: this.groupName,
            placementGroupName: this.placementGroupName,
        });
    }
}

/**
 * The nodes' instance topology at `pulumi up`: a local command after the capacity wait runs the read
 * (EC2_TOPOLOGY_SCRIPT: the AWS CLI, polled until every node is listed), again whenever the nodes' ids change; its
 * answer is parsed here as untrusted input. Types the API does not cover are not asked for.
 */
function readTopology(ctx: Ctx, nodes: pulumi.Output<AwsNode[]>, capacity: local.Command): pulumi.Output<Ec2Topology | undefined> {
    const { name, plan, region, parent } = ctx;
    const names = plan.validation.hostNames;
    if (!TOPOLOGY_INSTANCE_TYPES.includes(plan.aws.instanceType)) {
        void pulumi.log.warn(`${plan.aws.instanceType} has no EC2 instance topology (DescribeInstanceTopology covers ${TOPOLOGY_INSTANCE_TYPES.join(", ")}): topology.conf puts every node under one switch`, parent);
        return pulumi.output(undefined);
    }
    const profile = new pulumi.Config("aws").get("profile");
    const read = new local.Command(`${name}-ec2-topology`, {
        create: EC2_TOPOLOGY_SCRIPT,
        interpreter: ["node", "-e"],
        environment: {
            RDMAKIT_INSTANCE_IDS: nodes.apply((ns) => ns.map((n) => n.instanceId).join(",")),
            RDMAKIT_REGION: region,
            RDMAKIT_WAIT_SECONDS: String(TOPOLOGY_WAIT_SECONDS),
            RDMAKIT_POLL_SECONDS: String(TOPOLOGY_POLL_SECONDS),
            ...(profile ? { AWS_PROFILE: profile } : {}),
        },
        addPreviousOutputInEnv: false,
        logging: "stderr",
    }, { parent, dependsOn: [capacity] });
    return pulumi.all([read.stdout, nodes]).apply(([stdout, ns]) => {
        const got = ec2TopologyFromRead(stdout, Object.fromEntries(ns.map((n, i) => [names[i], n.instanceId])));
        if (got.warning) void pulumi.log.warn(got.warning, parent);
        return got.topology;
    });
}

/** What every builder below needs. */
interface Ctx {
    name: string;
    spec: ClusterSpec & { aws: NonNullable<ClusterSpec["aws"]> };
    plan: FabricPlan & { aws: NonNullable<FabricPlan["aws"]> };
    /** the spec's region, once AWS's answers allow the cluster */
    region: pulumi.Output<string>;
    parent: pulumi.Resource;
    tags: Record<string, string>;
}

/** The user's tags plus the cluster name; `Name` is added per resource. */
function baseTags(spec: ClusterSpec): Record<string, string> {
    return { ...spec.tags, "rdmakit:cluster": spec.name };
}

function tagsFor(ctx: Ctx, part: string): Record<string, string> {
    return { ...ctx.tags, Name: `${ctx.spec.name}-${part}` };
}

interface Network {
    vpcId: pulumi.Output<string>;
    /** the node subnet */
    subnetId: pulumi.Output<string>;
    /** only in a VPC the kit creates: where the NAT gateway and the bastion live */
    publicSubnetId?: pulumi.Output<string>;
}

/**
 * The given VPC/subnet, or a new VPC with a private node subnet and a public subnet (NAT gateway for egress,
 * bastion) in the cluster's one AZ. Nodes never get public IPs, so their internet traffic goes through the NAT.
 */
function createNetwork(ctx: Ctx): Network {
    const { name, spec, region, parent } = ctx;
    const aws_ = spec.aws;
    const given = aws_.network.subnets?.[0];
    if (given && aws_.network.vpcId) {
        return {
            vpcId: checkedId(aws_.network.vpcId, "vpcId", "cluster.aws.network.vpcId"),
            subnetId: checkedId(given.id, "subnetId", "cluster.aws.network.subnets[0].id"),
        };
    }
    const layout = carveVpc(aws_.network.vpcCidr)!; // checked in checkAwsClusterInput
    const o = { parent };
    const vpc = new aws.ec2.Vpc(`${name}-vpc`, {
        region, cidrBlock: aws_.network.vpcCidr, enableDnsSupport: true, enableDnsHostnames: true, tags: tagsFor(ctx, "vpc"),
    }, o);
    const priv = new aws.ec2.Subnet(`${name}-private`, {
        region, vpcId: vpc.id, cidrBlock: layout.privateCidr, availabilityZone: aws_.availabilityZone,
        mapPublicIpOnLaunch: false, tags: tagsFor(ctx, "private"),
    }, o);
    const pub = new aws.ec2.Subnet(`${name}-public`, {
        region, vpcId: vpc.id, cidrBlock: layout.publicCidr, availabilityZone: aws_.availabilityZone,
        // off even here: the bastion asks for its public IP explicitly, and nothing else should get one
        mapPublicIpOnLaunch: false, tags: tagsFor(ctx, "public"),
    }, o);
    const igw = new aws.ec2.InternetGateway(`${name}-igw`, { region, vpcId: vpc.id, tags: tagsFor(ctx, "igw") }, o);
    const eip = new aws.ec2.Eip(`${name}-nat-eip`, { region, domain: "vpc", tags: tagsFor(ctx, "nat") }, o);
    const nat = new aws.ec2.NatGateway(`${name}-nat`, {
        region, allocationId: eip.id, subnetId: pub.id, connectivityType: "public", tags: tagsFor(ctx, "nat"),
    }, { parent, dependsOn: [igw] });
    const pubRt = new aws.ec2.RouteTable(`${name}-public-rt`, {
        region, vpcId: vpc.id, routes: [{ cidrBlock: "0.0.0.0/0", gatewayId: igw.id }], tags: tagsFor(ctx, "public"),
    }, o);
    new aws.ec2.RouteTableAssociation(`${name}-public-rta`, { region, subnetId: pub.id, routeTableId: pubRt.id }, o);
    const privRt = new aws.ec2.RouteTable(`${name}-private-rt`, {
        region, vpcId: vpc.id, routes: [{ cidrBlock: "0.0.0.0/0", natGatewayId: nat.id }], tags: tagsFor(ctx, "private"),
    }, o);
    new aws.ec2.RouteTableAssociation(`${name}-private-rta`, { region, subnetId: priv.id, routeTableId: privRt.id }, o);
    return { vpcId: vpc.id, subnetId: priv.id, publicSubnetId: pub.id };
}

interface Access {
    /** the bastion's security group: the only SSH source of the nodes */
    bastionSecurityGroupId?: pulumi.Output<string>;
    bastion?: aws.ec2.Instance;
    bastionHostKey?: StackHostKey;
    /** SSM: the nodes' instance profile */
    instanceProfileArn?: pulumi.Output<string>;
    instanceProfileName?: pulumi.Output<string>;
    keyName: pulumi.Output<string>;
}

/**
 * The way in. `bastion`: a small instance in the public subnet, SSH from cluster.ssh.allowedCidrs only, IMDSv2,
 * encrypted root. `ssm`: no bastion; the nodes get an instance profile with AmazonSSMManagedInstanceCore
 * (source: https://docs.aws.amazon.com/systems-manager/latest/userguide/setup-instance-permissions.html), and
 * Ansible's SSH runs inside Session Manager sessions (the inventory's ProxyCommand, provision/inventory.ts), which
 * need the AWS CLI and its Session Manager plugin where pulumi up runs. The SSM Agent comes with the AMI: AWS lists
 * it as preinstalled on Ubuntu Server 22.04 AMIs, which the DLAMI is built on
 * (https://docs.aws.amazon.com/systems-manager/latest/userguide/ami-preinstalled-agent.html; a given AMI must have it).
 */
function createAccess(ctx: Ctx, net: Network): Access {
    const { name, spec, region, parent } = ctx;
    const o = { parent };
    const key = new aws.ec2.KeyPair(`${name}-key`, {
        region, keyNamePrefix: `${spec.name}-`, publicKey: spec.ssh.publicKey!, tags: tagsFor(ctx, "key"),
    }, o);
    if (spec.aws.access === "ssm") {
        // EC2's service principal in the region's partition, as the provider knows it (aws_service_principal:
        // terraform-provider-aws internal/service/meta/service_principal_data_source.go), not a literal
        // ec2.amazonaws.com that another partition may not take
        const principal = aws.getServicePrincipalOutput({ serviceName: "ec2", region }, { parent });
        const role = new aws.iam.Role(`${name}-node-role`, {
            assumeRolePolicy: principal.name.apply((service) => JSON.stringify({
                Version: "2012-10-17",
                Statement: [{ Effect: "Allow", Principal: { Service: service }, Action: "sts:AssumeRole" }],
            })),
            // IAM is global (no region input): the tags wait on the cloud's answers instead, so a refusal creates
            // no role either; the attachment and the profile take the role's name and wait with it
            tags: region.apply(() => tagsFor(ctx, "node")),
        }, o);
        new aws.iam.RolePolicyAttachment(`${name}-node-ssm`, {
            role: role.name,
            policyArn: `arn:${partitionOf(spec.aws.region)}:iam::aws:policy/AmazonSSMManagedInstanceCore`,
        }, o);
        const profile = new aws.iam.InstanceProfile(`${name}-node-profile`, { role: role.name, tags: tagsFor(ctx, "node") }, o);
        return { instanceProfileArn: profile.arn, instanceProfileName: profile.name, keyName: key.keyName };
    }

    const sg = new aws.ec2.SecurityGroup(`${name}-bastion-sg`, {
        region, vpcId: net.vpcId, description: `rdmakit ${spec.name}: bastion, SSH from the allowed CIDRs`,
        tags: tagsFor(ctx, "bastion"),
    }, o);
    spec.ssh.allowedCidrs.forEach((cidr, i) => {
        new aws.vpc.SecurityGroupIngressRule(`${name}-bastion-ssh-${i}`, {
            region, securityGroupId: sg.id, ipProtocol: "tcp", fromPort: 22, toPort: 22, cidrIpv4: cidr,
            description: "SSH from cluster.ssh.allowedCidrs", tags: tagsFor(ctx, "bastion"),
        }, o);
    });
    new aws.vpc.SecurityGroupEgressRule(`${name}-bastion-egress`, {
        region, securityGroupId: sg.id, ipProtocol: "-1", cidrIpv4: "0.0.0.0/0",
        description: "SSH on to the nodes, package updates", tags: tagsFor(ctx, "bastion"),
    }, o);
    const bastionHostKey = stackHostKey(`${name}-bastion-host-key`, parent);
    const arch = isGravitonType(spec.aws.bastionInstanceType) ? "arm64" : "x86_64";
    const ami = aws.ec2.getAmiOutput({ region, ...bastionAmiQuery(arch) }, { parent });
    const bastion = new aws.ec2.Instance(`${name}-bastion`, {
        region,
        ami: ami.id,
        instanceType: spec.aws.bastionInstanceType,
        subnetId: net.publicSubnetId!,
        vpcSecurityGroupIds: [sg.id],
        associatePublicIpAddress: true,
        keyName: key.keyName,
        metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: 1 },
        rootBlockDevice: { encrypted: true, volumeType: "gp3", deleteOnTermination: true },
        // sshd tuned for the Ansible runs' jump hops (components/provision/jump.ts) and the stack's host key for it
        // (a secret: it holds the private key)
        userData: pulumi.secret(pulumi.all([bastionHostKey.privateKey, bastionHostKey.publicKey])
            .apply(([privateKey, publicKey]) => jumpHostCloudConfig({ privateKey, publicKey }, "aws"))),
        // cloud-init installs the host key at an instance's first boot only: other user data means a new bastion, or
        // the pinned key and the one it shows would differ
        userDataReplaceOnChange: true,
        tags: tagsFor(ctx, "bastion"),
        volumeTags: tagsFor(ctx, "bastion"),
        // the lookup takes the newest Ubuntu image: a newer one must not replace the bastion (new address, so a
        // full Ansible re-run) on a later pulumi up
    }, { ...o, ignoreChanges: ["ami"] });
    return { bastionSecurityGroupId: sg.id, bastion, bastionHostKey, keyName: key.keyName };
}

/**
 * The EFA security group, on every node interface. Rules are separate `aws.vpc.SecurityGroup{Ingress,Egress}Rule`
 * resources, not inline blocks: the group is an output platform teams attach their own rules to, and inline rules
 * would delete those on the next update (the provider's guidance is not to mix the two styles on one group).
 * The self rules are all-protocol (-1) both ways: EFA traffic is neither IPv4 nor IPv6, so the 0.0.0.0/0 egress
 * rule does not cover it and a missing self egress rule hangs NCCL at the first collective
 * (source: https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-sg.html; aws-efa.md §2.4).
 */
function createEfaSecurityGroup(ctx: Ctx, net: Network, access: Access): aws.ec2.SecurityGroup {
    const { name, spec, region, parent } = ctx;
    const o = { parent };
    const sg = new aws.ec2.SecurityGroup(`${name}-efa-sg`, {
        region, vpcId: net.vpcId, description: `rdmakit ${spec.name}: EFA, all traffic between nodes`,
        tags: tagsFor(ctx, "efa"),
    }, o);
    new aws.vpc.SecurityGroupIngressRule(`${name}-efa-self-in`, {
        region, securityGroupId: sg.id, ipProtocol: "-1", referencedSecurityGroupId: sg.id,
        description: "EFA: all traffic from cluster nodes", tags: tagsFor(ctx, "efa"),
    }, o);
    new aws.vpc.SecurityGroupEgressRule(`${name}-efa-self-out`, {
        region, securityGroupId: sg.id, ipProtocol: "-1", referencedSecurityGroupId: sg.id,
        description: "EFA: all traffic to cluster nodes", tags: tagsFor(ctx, "efa"),
    }, o);
    new aws.vpc.SecurityGroupEgressRule(`${name}-egress-all`, {
        region, securityGroupId: sg.id, ipProtocol: "-1", cidrIpv4: "0.0.0.0/0",
        description: "IPv4 egress through the NAT gateway", tags: tagsFor(ctx, "efa"),
    }, o);
    if (access.bastionSecurityGroupId) {
        new aws.vpc.SecurityGroupIngressRule(`${name}-ssh-from-bastion`, {
            region, securityGroupId: sg.id, ipProtocol: "tcp", fromPort: 22, toPort: 22,
            referencedSecurityGroupId: access.bastionSecurityGroupId, description: "SSH from the bastion", tags: tagsFor(ctx, "efa"),
        }, o);
    }
    // `ssm`: no SSH ingress at all. Session Manager's sessions (and SSH tunnelled through them) are opened by the SSM
    // agent on the node, outbound; no inbound rule is needed.
    // source: https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-getting-started-enable-ssh-connections.html
    return sg;
}

/**
 * The interface endpoints Session Manager needs (./ssm-reach.ts SSM_ENDPOINT_SERVICES), in the VPC the kit creates
 * with `access: ssm`: with the endpoints (private DNS on) the SSM Agent's traffic stays in the VPC instead of leaving
 * through the NAT gateway, and the sessions Ansible opens do not depend on it. Service names follow
 * com.amazonaws.<region>.<service> (the pattern the provider's getVpcEndpointService `service` argument assumes,
 * @pulumi/aws ec2/getVpcEndpointService.d.ts). In a VPC of your own (cluster.aws.network) the kit creates none: that
 * network's way to SSM is yours, and askSsmReach checks it before anything is created.
 */

function createSsmEndpoints(ctx: Ctx, net: Network, nodeSg: aws.ec2.SecurityGroup): aws.ec2.SecurityGroup | undefined {
    const { name, spec, region, parent } = ctx;
    if (spec.aws.access !== "ssm" || !net.publicSubnetId) return undefined;
    const o = { parent };
    const sg = new aws.ec2.SecurityGroup(`${name}-ssm-endpoints-sg`, {
        region, vpcId: net.vpcId, description: `rdmakit ${spec.name}: Session Manager endpoints, HTTPS from the nodes`,
        tags: tagsFor(ctx, "ssm"),
    }, o);
    new aws.vpc.SecurityGroupIngressRule(`${name}-ssm-endpoints-https`, {
        region, securityGroupId: sg.id, ipProtocol: "tcp", fromPort: 443, toPort: 443, referencedSecurityGroupId: nodeSg.id,
        description: "HTTPS from the nodes' SSM Agent", tags: tagsFor(ctx, "ssm"),
    }, o);
    for (const svc of SSM_ENDPOINT_SERVICES) {
        new aws.ec2.VpcEndpoint(`${name}-${svc}`, {
            region, vpcId: net.vpcId, serviceName: region.apply((r) => `com.amazonaws.${r}.${svc}`), vpcEndpointType: "Interface",
            privateDnsEnabled: true, subnetIds: [net.subnetId], securityGroupIds: [sg.id], tags: tagsFor(ctx, `ssm-${svc}`),
        }, o);
    }
    return sg;
}

/** The Capacity Block or ODCR as EC2 has it, and what the spec got wrong about it. */
interface Reservation {
    issues: pulumi.Output<SpecIssue[]>;
    endDate: pulumi.Output<string | undefined>;
    placementGroup: pulumi.Output<string | undefined>;
}

/**
 * The reservation the plan launches into, as EC2 has it, graded by gradeReservation. A Capacity Block through the
 * invoke that gives its state and start (aws.ec2.getCapacityBlockReservation; it answers for blocks only); an ODCR
 * through a read of the existing reservation (`CapacityReservation.get`: tracked as external, never created or
 * deleted by the stack).
 */
function readReservation(name: string, spec: ClusterSpec, plan: FabricPlan, parent: pulumi.Resource): Reservation | undefined {
    const place = plan.aws!.placement;
    const now = new Date();
    if (place.kind === "capacity-block") {
        const field = "cluster.aws.capacityBlock.reservationId";
        // this cluster's nodes already in the block (a later pulumi up): they count as room, not as others' use
        const ours = aws.ec2.getInstances({
            region: spec.aws!.region, instanceStateNames: ["pending", "running"],
            filters: [{ name: "tag:rdmakit:cluster", values: [spec.name] }, { name: "capacity-reservation-id", values: [place.reservationId] }],
        }, { parent }).then((r) => (Array.isArray(r?.ids) ? r.ids.length : 0), () => 0);
        const answer = Promise.all([aws.ec2.getCapacityBlockReservation({ id: place.reservationId, region: spec.aws!.region }, { parent }), ours])
            .then(([b, mine]) => ({ issues: gradeReservation(spec, b, now, mine), endDate: b.endDate as string | undefined }),
                (e: unknown) => ({
                    issues: [{ path: field, value: place.reservationId, message: `cannot be read from EC2: ${String((e as Error)?.message ?? e)}`, allowed: "the id of a Capacity Block in this account and region" }],
                    endDate: undefined,
                }));
        return {
            issues: pulumi.output(answer.then((a) => a.issues)),
            endDate: pulumi.output(answer.then((a) => a.endDate)),
            placementGroup: pulumi.output(undefined),
        };
    }
    if (place.kind !== "capacity-reservation") return undefined;
    const cr = aws.ec2.CapacityReservation.get(`${name}-reservation`, place.reservationId, { region: spec.aws!.region }, { parent });
    return {
        issues: pulumi.all([cr.availabilityZone, cr.instanceType, cr.instanceCount, cr.endDate, cr.placementGroupArn])
            .apply(([availabilityZone, instanceType, instanceCount, endDate, placementGroupArn]) =>
                gradeReservation(spec, { availabilityZone, instanceType, instanceCount, endDate, placementGroupArn }, now)),
        endDate: cr.endDate,
        placementGroup: cr.placementGroupArn.apply(placementGroupName),
    };
}

interface Nodes {
    template: aws.ec2.LaunchTemplate;
    group: aws.autoscaling.Group;
    /** waits until every node is InService (./lifecycle.ts CAPACITY_WAIT_SCRIPT) */
    capacity: local.Command;
    placementGroup?: aws.ec2.PlacementGroup;
}

/**
 * The nodes as ONE Auto Scaling group on ONE launch template, so the resource count does not depend on the node
 * count. An ASG rather than an EC2 Fleet `instant`: the bridged provider manages an ASG fully (update in place,
 * wait for capacity, delete), it replaces a failed node on its own, and it launches into Capacity Blocks and
 * targeted ODCRs named in the launch template
 * (source: https://docs.aws.amazon.com/autoscaling/ec2/userguide/launch-template-capacity-blocks.html); an
 * `instant` fleet is a one-shot request whose instances the provider neither tracks nor replaces.
 */
function createNodes(ctx: Ctx, net: Network, sg: aws.ec2.SecurityGroup, access: Access, hostKey: StackHostKey, ami: pulumi.Output<{ id: string; rootDeviceName: string }>, reservation?: Reservation): Nodes {
    const { name, spec, plan, region, parent } = ctx;
    const o = { parent };
    const place = placementSettings(plan.aws.placement);
    const placementGroup = place.placementGroup
        ? new aws.ec2.PlacementGroup(`${name}-pg`, { region, strategy: "cluster", tags: tagsFor(ctx, "pg") }, o)
        : undefined;

    const nodeTags = { ...tagsFor(ctx, "node"), "rdmakit:role": "node" };
    const template = new aws.ec2.LaunchTemplate(`${name}-lt`, {
        region,
        description: `rdmakit ${spec.name}: ${plan.aws.instanceType}, ${plan.aws.interfaces.length} interfaces`,
        imageId: ami.id,
        instanceType: plan.aws.instanceType,
        keyName: access.keyName,
        // the node group's SSH host key (components/provision/hostkeys.ts), base64 as the launch template takes it;
        // a secret, since it holds the private key
        userData: pulumi.secret(pulumi.all([hostKey.privateKey, hostKey.publicKey])
            .apply(([privateKey, publicKey]) => Buffer.from(hostKeyCloudConfig({ privateKey, publicKey }, "aws")).toString("base64"))),
        networkInterfaces: templateInterfaces(plan.aws.interfaces, sg.id, net.subnetId),
        metadataOptions: {
            httpEndpoint: "enabled",
            httpTokens: "required",
            // 1: the IMDSv2 token's PUT answer dies one hop out, so a container on the node cannot fetch the role's
            // credentials; 2 only when the spec says containers need them (one hop more).
            // source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html
            // ("hop limit ... containers ... we recommend setting the hop limit to 2")
            httpPutResponseHopLimit: spec.aws.containersUseInstanceRole ? 2 : 1,
            instanceMetadataTags: "disabled",
        },
        blockDeviceMappings: [{
            deviceName: ami.rootDeviceName,
            ebs: { volumeSize: spec.aws.rootVolumeGiB, volumeType: "gp3", encrypted: "true", deleteOnTermination: "true" },
        }],
        ...(place.marketType ? { instanceMarketOptions: { marketType: place.marketType } } : {}),
        ...(place.reservationId
            ? { capacityReservationSpecification: { capacityReservationTarget: { capacityReservationId: place.reservationId } } }
            : {}),
        ...(access.instanceProfileArn ? { iamInstanceProfile: { arn: access.instanceProfileArn } } : {}),
        tagSpecifications: ["instance", "volume", "network-interface"].map((resourceType) => ({ resourceType, tags: nodeTags })),
        tags: tagsFor(ctx, "lt"),
        // with the default lookup (newest DLAMI), a newer image must not move the template and so the nodes the group
        // replaces to another driver/EFA stack; pin cluster.aws.ami to change it on purpose
    }, spec.aws.ami === undefined ? { ...o, ignoreChanges: ["imageId"] } : o);

    // the nodes' definition in the name: a new image, type, layout, volume or placement replaces the group (./lifecycle.ts)
    const namePrefix = pulumi.all([template.imageId, hostKey.publicKey]).apply(([imageId, hostPublicKey]) => groupNamePrefix(spec.name, {
        imageId: imageId ?? "", instanceType: plan.aws.instanceType, interfaces: plan.aws.interfaces, rootVolumeGiB: spec.aws.rootVolumeGiB,
        placement: plan.aws.placement, instanceProfile: access.instanceProfileArn !== undefined, hostKey: hostPublicKey,
    }));
    const group = new aws.autoscaling.Group(`${name}-nodes`, {
        region,
        namePrefix,
        minSize: spec.nodes,
        maxSize: spec.nodes,
        desiredCapacity: spec.nodes,
        vpcZoneIdentifiers: [net.subnetId],
        launchTemplate: { id: template.id, version: template.latestVersion.apply((v) => `${v}`) },
        // the kit's group, else the one an ODCR was made in: its instances must launch there
        ...(placementGroup ? { placementGroup: placementGroup.name }
            : reservation && plan.aws.placement.kind === "capacity-reservation" ? { placementGroup: reservation.placementGroup } : {}),
        healthCheckType: "EC2",
        // Every node the group launches is protected from scale-in (NewInstancesProtectedFromScaleIn), so lowering
        // the count never lets the group pick which node goes: a scale-in waits until the nodes chosen and drained
        // lose their protection (day2/scale.ts). A repair still works: protection "does not protect Auto Scaling
        // instances from ... Health check replacement if the instance fails health checks", and a replacement
        // "inherits the instance scale-in protection setting of the Auto Scaling group".
        // source: https://docs.aws.amazon.com/autoscaling/ec2/userguide/ec2-auto-scaling-instance-protection.html;
        // @pulumi/aws autoscaling/group.d.ts protectFromScaleIn
        protectFromScaleIn: true,
        // The provider does not wait ("0": skip all capacity waiting, @pulumi/aws autoscaling/group.d.ts
        // waitForCapacityTimeout); the capacity command below does, and reports AWS's reason (./lifecycle.ts).
        waitForCapacityTimeout: "0",
        // Should the provider's wait ever be turned on again: a failed launch (capacity, quota) is retried by the
        // group, so it must not fail the update. source: @pulumi/aws autoscaling/group.d.ts ignoreFailedScalingActivities
        ignoreFailedScalingActivities: true,
        tags: Object.entries({ ...ctx.tags, Name: `${spec.name}-nodes` }).map(([key, value]) => ({ key, value, propagateAtLaunch: false })),
    }, { ...o, ...GROUP_REPLACEMENT });
    const profile = new pulumi.Config("aws").get("profile");
    const capacity = new local.Command(`${name}-capacity`, {
        create: CAPACITY_WAIT_SCRIPT,
        interpreter: ["node", "-e"],
        // what it waits for: a new group (name), another size or another template version runs it again
        environment: {
            RDMAKIT_GROUP: group.name,
            RDMAKIT_DESIRED: String(spec.nodes),
            RDMAKIT_TEMPLATE_VERSION: template.latestVersion.apply((v) => `${v}`),
            RDMAKIT_REGION: region,
            RDMAKIT_WAIT_SECONDS: String(GROUP_CAPACITY_WAIT_SECONDS),
            RDMAKIT_POLL_SECONDS: String(GROUP_CAPACITY_POLL_SECONDS),
            ...(profile ? { AWS_PROFILE: profile } : {}),
        },
        addPreviousOutputInEnv: false,
        logging: "stderr",
    }, { parent, dependsOn: [group] });
    if (reservation && plan.aws.placement.kind === "capacity-block") {
        // to zero before EC2 terminates the block's instances (./cloud.ts BLOCK_SCALE_IN_BEFORE_END_MINUTES)
        new aws.autoscaling.Schedule(`${name}-block-end`, {
            region,
            autoscalingGroupName: group.name,
            scheduledActionName: `${spec.name}-capacity-block-end`,
            startTime: reservation.endDate.apply((end) => (end && !Number.isNaN(Date.parse(end)) ? blockScaleInTime(end) : "")),
            minSize: 0,
            maxSize: 0,
            desiredCapacity: 0,
        }, o);
    }
    return { template, group, capacity, placementGroup };
}
