/**
 * The Slurm head node on AWS: one instance in the nodes' private subnet, on the nodes' AMI (the same Ubuntu release,
 * so the same Slurm version from the distribution: slurmctld must not be older than slurmd), reached the way the nodes
 * are (SSH from the bastion, or Session Manager through the nodes' instance profile), its own SSH host key pinned.
 * Its security group opens exactly the plan's ports (plan.scheduler.ports) between it and the nodes' group, SSH from
 * the bastion, and out only HTTPS/HTTP for packages and the SSM Agent; nothing from any CIDR.
 */
import * as aws from "./sdk";
import * as pulumi from "@pulumi/pulumi";
import type { SlurmPlan } from "../plan/scheduler";
import { hostKeyCloudConfig } from "../provision/hostkeys";
import { stackHostKey } from "../provision/hostkey-resource";

/** What the head node needs from the cluster component (aws/cluster.ts). */
export interface AwsHeadArgs {
    name: string;
    clusterName: string;
    region: pulumi.Output<string>;
    parent: pulumi.Resource;
    tags: Record<string, string>;
    slurm: SlurmPlan;
    vpcId: pulumi.Input<string>;
    subnetId: pulumi.Input<string>;
    /** the nodes' (EFA) security group */
    nodeSecurityGroupId: pulumi.Input<string>;
    /** with a bastion: its group, the head node's only SSH source */
    bastionSecurityGroupId?: pulumi.Input<string>;
    /** with Session Manager: the nodes' instance profile (AmazonSSMManagedInstanceCore), and the endpoints' group */
    instanceProfileName?: pulumi.Input<string>;
    ssmEndpointsSecurityGroupId?: pulumi.Input<string>;
    keyName: pulumi.Input<string>;
    ami: pulumi.Input<string>;
    /** the spec pins the AMI (cluster.aws.ami): then a new id replaces the head node on purpose */
    amiPinned: boolean;
}

/** The head node as the stack reports it. */
export interface AwsHead {
    privateIp: pulumi.Output<string>;
    instanceId: pulumi.Output<string>;
    hostPublicKey: pulumi.Output<string>;
    securityGroupId: pulumi.Output<string>;
}

/**
 * Egress of the head node beyond the nodes: HTTPS and HTTP to anywhere through the NAT gateway (the distribution's
 * package mirrors, the SSM Agent's endpoints). DNS, NTP and the instance metadata need no rule: security groups do not
 * filter traffic to Amazon DNS, the Amazon Time Sync Service or instance metadata.
 * source: https://docs.aws.amazon.com/vpc/latest/userguide/security-group-rules.html ("Security groups do not filter
 * traffic destined to and from the following")
 */
export const HEAD_EGRESS_PORTS: readonly number[] = [443, 80];

/**
 * The head node's #cloud-config: the host key document, and the plan's controller name as the host name, since
 * slurmctld runs only on the host slurm.conf's SlurmctldHost names (EC2 would name it ip-10-0-0-5). Pure.
 * source: https://cloudinit.readthedocs.io/en/latest/reference/modules.html#set-hostname (hostname, preserve_hostname);
 * https://slurm.schedmd.com/slurm.conf.html#OPT_SlurmctldHost ("the short, or long, hostname of the machine")
 */
export function headCloudConfig(hostKeyDoc: string, hostName: string): string {
    return `${hostKeyDoc.replace(/\n*$/, "\n")}preserve_hostname: false\nhostname: ${hostName}\n`;
}

export function createAwsSlurmHead(a: AwsHeadArgs): AwsHead {
    const { name, region, parent, slurm } = a;
    const o = { parent };
    const tags = { ...a.tags, Name: `${a.clusterName}-head`, "rdmakit:role": "slurm-head" };
    const sg = new aws.ec2.SecurityGroup(`${name}-head-sg`, {
        region, vpcId: a.vpcId, description: `rdmakit ${a.clusterName}: Slurm head node, Slurm and NFS with the nodes only`, tags,
    }, o);
    // the plan's ports, each rule between the two groups only (referenced groups, never a CIDR)
    slurm.ports.forEach((p, i) => {
        const ports = { ipProtocol: "tcp", fromPort: p.from, toPort: p.to };
        if (p.between !== "controller->nodes") {
            new aws.vpc.SecurityGroupIngressRule(`${name}-head-in-${i}`, {
                region, securityGroupId: sg.id, referencedSecurityGroupId: a.nodeSecurityGroupId, ...ports,
                description: `from the nodes: ${p.why}`, tags,
            }, o);
        }
        if (p.between !== "nodes->controller") {
            new aws.vpc.SecurityGroupIngressRule(`${name}-nodes-from-head-${i}`, {
                region, securityGroupId: a.nodeSecurityGroupId, referencedSecurityGroupId: sg.id, ...ports,
                description: `from the Slurm head node: ${p.why}`, tags,
            }, o);
            new aws.vpc.SecurityGroupEgressRule(`${name}-head-out-${i}`, {
                region, securityGroupId: sg.id, referencedSecurityGroupId: a.nodeSecurityGroupId, ...ports,
                description: `to the nodes: ${p.why}`, tags,
            }, o);
        }
    });
    if (a.bastionSecurityGroupId) {
        new aws.vpc.SecurityGroupIngressRule(`${name}-head-ssh-from-bastion`, {
            region, securityGroupId: sg.id, ipProtocol: "tcp", fromPort: 22, toPort: 22,
            referencedSecurityGroupId: a.bastionSecurityGroupId, description: "SSH from the bastion", tags,
        }, o);
    }
    if (a.ssmEndpointsSecurityGroupId) {
        new aws.vpc.SecurityGroupIngressRule(`${name}-ssm-endpoints-https-head`, {
            region, securityGroupId: a.ssmEndpointsSecurityGroupId, ipProtocol: "tcp", fromPort: 443, toPort: 443,
            referencedSecurityGroupId: sg.id, description: "HTTPS from the Slurm head node's SSM Agent", tags,
        }, o);
    }
    HEAD_EGRESS_PORTS.forEach((port) => {
        new aws.vpc.SecurityGroupEgressRule(`${name}-head-egress-${port}`, {
            region, securityGroupId: sg.id, ipProtocol: "tcp", fromPort: port, toPort: port, cidrIpv4: "0.0.0.0/0",
            description: "packages and the SSM Agent, through the NAT gateway", tags,
        }, o);
    });

    const hostKey = stackHostKey(`${name}-head-host-key`, parent);
    const head = new aws.ec2.Instance(`${name}-head`, {
        region,
        ami: a.ami,
        instanceType: slurm.controller.instanceType!,
        subnetId: a.subnetId,
        vpcSecurityGroupIds: [sg.id],
        associatePublicIpAddress: false,
        keyName: a.keyName,
        ...(a.instanceProfileName ? { iamInstanceProfile: a.instanceProfileName } : {}),
        metadataOptions: { httpEndpoint: "enabled", httpTokens: "required", httpPutResponseHopLimit: 1 },
        // /home lives here when it is exported to the nodes: encrypted like the nodes' volumes
        rootBlockDevice: { encrypted: true, volumeType: "gp3", deleteOnTermination: true },
        // the head node's own host key (a secret: it holds the private key), installed by cloud-init at first boot
        userData: pulumi.secret(pulumi.all([hostKey.privateKey, hostKey.publicKey])
            .apply(([privateKey, publicKey]) => headCloudConfig(hostKeyCloudConfig({ privateKey, publicKey }, "aws"), slurm.controller.name))),
        userDataReplaceOnChange: true,
        tags,
        volumeTags: tags,
        // the default lookup takes the newest DLAMI: a newer one must not replace the head node (and its /home)
    }, a.amiPinned ? o : { ...o, ignoreChanges: ["ami"] });
    return { privateIp: head.privateIp, instanceId: head.id, hostPublicKey: hostKey.publicKey, securityGroupId: sg.id };
}
