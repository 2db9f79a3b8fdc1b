import { EfaInterface } from "../plan/aws";
import { Cidr, parseCidr } from "../net";

/*
 * Pure network arithmetic for the VPC the kit creates. No Pulumi here: the component maps these plain values
 * to resources, and the tests check them directly.
 */

/**
 * Addresses AWS keeps in every subnet (network, VPC router, DNS, future use, broadcast).
 * source: https://docs.aws.amazon.com/vpc/latest/userguide/subnet-sizing.html
 */
export const AWS_RESERVED_IPS_PER_SUBNET = 5;

/**
 * Smallest and largest VPC the kit will carve. AWS allows /16 to /28
 * (source: https://docs.aws.amazon.com/vpc/latest/userguide/vpc-cidr-blocks.html); the kit needs room for a
 * private subnet (half the VPC) and a public /28 or larger next to it, so it stops at /24.
 */
export const VPC_PREFIX_RANGE = { min: 16, max: 24 } as const;

/** The two subnets of a VPC the kit creates, both in the cluster's one Availability Zone. */
export interface VpcLayout {
    /** first half of the VPC: the GPU nodes (every ENA/EFA-with-ENA interface takes one address) */
    privateCidr: string;
    /** last sixteenth of the VPC (at most a /28): NAT gateway and bastion */
    publicCidr: string;
    /** addresses the private subnet can hand out, AWS's reserved ones already taken off */
    privateUsable: number;
}

export function formatCidr(c: Cidr): string {
    const b = c.base;
    return `${b >>> 24}.${(b >>> 16) & 255}.${(b >>> 8) & 255}.${b & 255}/${c.prefix}`;
}

/** Splits `vpcCidr` into the private and public subnet; undefined when the block is not one the kit carves. */
export function carveVpc(vpcCidr: string): VpcLayout | undefined {
    const vpc = parseCidr(vpcCidr);
    if (!vpc || vpc.prefix < VPC_PREFIX_RANGE.min || vpc.prefix > VPC_PREFIX_RANGE.max) return undefined;
    const privatePrefix = vpc.prefix + 1;
    const publicPrefix = Math.min(vpc.prefix + 4, 28);
    const vpcSize = 2 ** (32 - vpc.prefix);
    const publicSize = 2 ** (32 - publicPrefix);
    // The public block is the last one of the VPC, so it never overlaps the private first half.
    const publicBase = (vpc.base + vpcSize - publicSize) >>> 0;
    return {
        privateCidr: formatCidr({ base: vpc.base, prefix: privatePrefix }),
        publicCidr: formatCidr({ base: publicBase, prefix: publicPrefix }),
        privateUsable: 2 ** (32 - privatePrefix) - AWS_RESERVED_IPS_PER_SUBNET,
    };
}

/**
 * Private IPv4 addresses one node takes in its subnet: `interface` (ENA) and `efa` (EFA with ENA) get one each;
 * `efa-only` gets none. source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html
 * ("EFA-only interfaces ... do not have IP addresses"; aws-efa.md §2.1)
 */
export function ipsPerNode(interfaces: readonly EfaInterface[]): number {
    return interfaces.filter((i) => i.interfaceType !== "efa-only").length;
}

/**
 * The AWS partition of a region, for managed-policy ARNs.
 * source: https://docs.aws.amazon.com/whitepapers/latest/aws-fault-isolation-boundaries/partitions.html
 */
export function partitionOf(region: string): "aws" | "aws-cn" | "aws-us-gov" {
    if (region.startsWith("cn-")) return "aws-cn";
    if (region.startsWith("us-gov-")) return "aws-us-gov";
    return "aws";
}

/**
 * Whether an instance type runs on AWS Graviton (arm64). EC2 names put the processor in the attribute letters
 * after the generation digit, and `g` there means Graviton (t4g, c7gn, m6gd); GPU families such as g5 carry
 * their `g` before the digit. source: https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html
 */
export function isGravitonType(instanceType: string): boolean {
    const m = /^[a-z]+(\d+)([a-z-]*)\./.exec(instanceType);
    return m !== null && m[2].includes("g");
}

/** IPv4 addresses in numeric order (the lookup returns them in no particular order). */
export function sortIpv4(ips: readonly string[]): string[] {
    const key = (ip: string) => ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
    return [...ips].sort((a, b) => key(a) - key(b));
}
