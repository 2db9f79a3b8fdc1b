import type { FabricPlan } from "../plan";
import type { ClusterSpec } from "../spec";
import type { SpecIssue } from "../errors";
import { carveVpc, ipsPerNode, isGravitonType, VPC_PREFIX_RANGE } from "./network";

/**
 * What AwsEfaCluster refuses before it creates anything. The spec has been parsed (parseClusterSpec already
 * rejected non-EFA types, a missing GPUDirect opt-in, multi-AZ subnets, capacity block AZ mismatches, too many
 * nodes for a reservation, a placement group with a capacity block); this adds what only the component knows:
 * that the spec and plan agree, and the limits of the network it builds. Pure; returns every issue at once.
 */
export function checkAwsClusterInput(spec: ClusterSpec, plan: FabricPlan | undefined): SpecIssue[] {
    const issues: SpecIssue[] = [];
    if (spec.fabric !== "aws-efa") {
        issues.push({ path: "cluster.fabric", value: spec.fabric, message: "is not the fabric AwsEfaCluster builds", allowed: "aws-efa" });
    }
    const aws = spec.aws;
    if (!aws) {
        issues.push({ path: "cluster.aws", message: "is missing", allowed: "an aws section (region, availabilityZone, instanceType)" });
        return issues;
    }
    if (!plan) return issues; // only when fabric is wrong, reported above
    if (plan.fabric !== "aws-efa" || !plan.aws) {
        issues.push({ path: "plan.fabric", value: plan.fabric, message: "is not an aws-efa plan", allowed: "the plan of an aws-efa spec" });
        return issues;
    }
    if (plan.aws.interfaces.length === 0) {
        issues.push({ path: "plan.aws.interfaces", value: [], message: "is empty: a node needs at least its primary interface", allowed: "the layout from efaInterfaceLayout" });
    }
    if (spec.ssh.publicKey === undefined) {
        issues.push({ path: "cluster.ssh.publicKey", message: "is missing", allowed: "an OpenSSH public key line (ssh-ed25519 AAAA...)" });
    }
    // the Slurm head node boots the nodes' AMI (same release, same Slurm): its type must run that architecture
    const head = plan.scheduler.type === "slurm" ? plan.scheduler.controller.instanceType : undefined;
    if (head !== undefined && (isGravitonType(head) ? "arm64" : "x86_64") !== plan.aws.arch) {
        issues.push({
            path: "cluster.scheduler.controller.instanceType", value: head,
            message: `is not an ${plan.aws.arch} type: the head node runs the nodes' ${plan.aws.arch} image (one Slurm release cluster-wide)`,
            allowed: `an ${plan.aws.arch} instance type${plan.aws.arch === "arm64" ? " (Graviton, e.g. m7g.2xlarge)" : " (e.g. m7i.2xlarge)"}`,
        });
    }

    const net = aws.network;
    const given = net.subnets !== undefined && net.subnets.length > 0;
    if (net.vpcId !== undefined && !given) {
        issues.push({
            path: "cluster.aws.network.subnets", message: "is missing: with cluster.aws.network.vpcId the nodes go into a subnet you name",
            allowed: `one private subnet in ${aws.availabilityZone}, or leave vpcId out and the kit creates the VPC`,
        });
    }
    if (given && aws.access === "bastion") {
        issues.push({
            path: "cluster.aws.access", value: "bastion",
            message: "needs a public subnet, which the kit only creates in its own VPC; in an existing VPC it cannot place a bastion",
            // with ssm, Ansible's SSH runs inside Session Manager sessions the nodes' SSM Agent opens outbound: no
            // inbound SSH at all, but the subnet must reach ssm, ssmmessages and ec2messages: a NAT route (the nodes get
            // no public IP, so an internet gateway route is not enough), or interface endpoints with private DNS.
            // source: https://docs.aws.amazon.com/systems-manager/latest/userguide/setup-create-vpc.html; checked
            // against EC2 before anything is created (./ssm-reach.ts)
            allowed: "ssm (no inbound SSH: Ansible's SSH runs inside Session Manager sessions the nodes open outbound, so the subnet needs a 0.0.0.0/0 route through a NAT gateway, or interface endpoints for ssm, ssmmessages and ec2messages with private DNS in the VPC), or leave cluster.aws.network out",
        });
    }
    if (!given) {
        const layout = carveVpc(net.vpcCidr);
        if (!layout) {
            issues.push({
                path: "cluster.aws.network.vpcCidr", value: net.vpcCidr,
                message: "is too small or too large for the private and public subnet the kit carves from it",
                allowed: `a /${VPC_PREFIX_RANGE.min} to /${VPC_PREFIX_RANGE.max} block, e.g. 10.0.0.0/16`,
            });
        } else {
            const need = spec.nodes * ipsPerNode(plan.aws.interfaces);
            if (need > layout.privateUsable) {
                issues.push({
                    path: "cluster.aws.network.vpcCidr", value: net.vpcCidr,
                    message: `leaves ${layout.privateUsable} addresses in the node subnet ${layout.privateCidr}; ${spec.nodes} nodes need ${need}`,
                    allowed: "a larger block (each prefix bit less doubles the node subnet)",
                });
            }
        }
    }
    return issues;
}
