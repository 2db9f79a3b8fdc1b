import * as aws from "./sdk";
import * as pulumi from "@pulumi/pulumi";
import { awsInstanceType } from "../catalog/aws";
import type { SpecIssue } from "../errors";
import type { FabricPlan } from "../plan";
import type { ClusterSpec } from "../spec-types";

/*
 * What AwsEfaCluster asks AWS before it creates anything (pulumi up and preview; `rdmakit plan` lists these as
 * checks that run at up): the instance type's network cards as EC2 describes them, against the catalog the launch
 * template was laid out from; whether the node type and the bastion type are offered in the cluster's AZ; and the
 * account's On-Demand vCPU quota for the family. Asking is in `askAwsCloud`, grading in the pure `gradeAwsCloud`.
 */

/**
 * Running On-Demand vCPU quotas (Service Quotas, service `ec2`) by instance family letter.
 * source: https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html ("Running On-Demand P
 * instances" L-417A185B, "Running On-Demand G and VT instances" L-DB2E81BA); the codes as AWS's console links them,
 * https://console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-417A185B
 */
export const AWS_VCPU_QUOTAS: Record<string, { code: string; name: string }> = {
    p: { code: "L-417A185B", name: "Running On-Demand P instances" },
    g: { code: "L-DB2E81BA", name: "Running On-Demand G and VT instances" },
};

/** The answers, in the shapes the provider's invokes return (only the fields read here). */
export interface AwsCloudAnswers {
    /** aws:ec2/getInstanceType:getInstanceType for the node type */
    instanceType?: {
        maximumNetworkCards: number;
        efaMaximumInterfaces: number;
        efaSupported: boolean;
        defaultVcpus: number;
        networkCards: Array<{ index: number; maximumInterfaces: number }>;
    };
    /** aws:ec2/getInstanceTypeOfferings:getInstanceTypeOfferings in the AZ, node type and bastion type */
    offeredInZone?: { instanceTypes: string[] };
    /** aws:servicequotas/getServiceQuota:getServiceQuota for the family; an error when the caller may not read it */
    quota?: { value: number } | { error: string };
}

/** The checks that apply to this spec, in words, for `rdmakit plan` ("runs at pulumi up"). Pure. */
export function awsCloudCheckList(spec: ClusterSpec): string[] {
    const a = spec.aws!;
    const checks = [
        `${a.instanceType}: network cards and EFA interfaces as EC2 describes the type (ec2:DescribeInstanceTypes) match the catalog`,
        `${[a.instanceType, ...(a.access === "bastion" ? [a.bastionInstanceType] : [])].join(" and ")} offered in ${a.availabilityZone} (ec2:DescribeInstanceTypeOfferings)`,
    ];
    const quota = quotaFor(a.instanceType);
    if (quota && onDemand(spec)) checks.push(`${quota.name} (${quota.code}) covers ${spec.nodes} nodes' vCPUs (servicequotas:GetServiceQuota)`);
    const held = a.capacityBlock ?? a.capacityReservation;
    if (held) {
        checks.push(`reservation ${held.reservationId}: zone, instance type and count as declared, not ended${a.capacityBlock ? `; the group scales to 0 ${BLOCK_SCALE_IN_BEFORE_END_MINUTES} min before its end` : "; its placement group used"} (ec2:DescribeCapacityReservations)`);
    }
    return checks;
}

function quotaFor(instanceType: string): { code: string; name: string } | undefined {
    return AWS_VCPU_QUOTAS[instanceType[0]];
}

/** Nodes launch as plain On-Demand instances (no Capacity Block, whose instances the quota check does not cover here). */
function onDemand(spec: ClusterSpec): boolean {
    return spec.aws!.capacityBlock === undefined && spec.aws!.capacityReservation === undefined;
}

/** Whether a value is the engine's "not known yet" (the offline plan answers every cloud question with it). */
function unknown(v: unknown): boolean {
    return v === undefined || v === pulumi.runtime.unknownValue || pulumi.isUnknown(v);
}

/** Grades AWS's answers; every issue names the field, what AWS said and what to do. Unknown answers pass. Pure. */
export function gradeAwsCloud(spec: ClusterSpec, plan: FabricPlan, answers: AwsCloudAnswers): SpecIssue[] {
    const a = spec.aws!;
    const issues: SpecIssue[] = [];
    const t = answers.instanceType;
    const catalog = awsInstanceType(a.instanceType);
    if (t && catalog && !unknown(t.maximumNetworkCards)) {
        const cards = plan.aws!.interfaces.map((i) => i.networkCardIndex);
        if (!t.efaSupported) {
            issues.push({
                path: "cluster.aws.instanceType", value: a.instanceType, message: "is not EFA-capable according to EC2 (efaSupported: false)",
                allowed: "an EFA instance type (p4d, p5, p5en, p6-b200, …)",
            });
        } else if (t.maximumNetworkCards !== catalog.networkCards || t.efaMaximumInterfaces !== catalog.maxEfaInterfaces) {
            issues.push({
                path: "cluster.aws.instanceType", value: a.instanceType,
                message: `has ${t.maximumNetworkCards} network cards and ${t.efaMaximumInterfaces} EFA interfaces according to EC2; the kit's catalog, which the launch template is laid out from, says ${catalog.networkCards} and ${catalog.maxEfaInterfaces}`,
                allowed: "report the type's new layout to rdmakit (components/catalog/aws.ts); no nodes were launched",
            });
        } else {
            const tooMany = cards.filter((c, i) => cards.indexOf(c) === i)
                .map((c) => ({ c, want: cards.filter((x) => x === c).length, max: t.networkCards.find((n) => n.index === c)?.maximumInterfaces }))
                .filter((x) => x.max !== undefined && x.want > x.max);
            for (const x of tooMany) {
                issues.push({
                    path: "cluster.aws.instanceType", value: a.instanceType,
                    message: `takes at most ${x.max} interfaces on network card ${x.c} according to EC2; the launch template puts ${x.want} there`,
                    allowed: "report the type's new layout to rdmakit (components/catalog/aws.ts)",
                });
            }
        }
    }
    const offered = answers.offeredInZone?.instanceTypes;
    if (offered && !unknown(offered)) {
        const wanted: Array<[string, string]> = [["cluster.aws.instanceType", a.instanceType]];
        if (a.access === "bastion") wanted.push(["cluster.aws.bastionInstanceType", a.bastionInstanceType]);
        for (const [path, type] of wanted) {
            if (!offered.includes(type)) {
                issues.push({
                    path, value: type, message: `is not offered in ${a.availabilityZone} (ec2:DescribeInstanceTypeOfferings lists it nowhere in that zone)`,
                    allowed: "another availabilityZone of the region where EC2 offers the type, or a Capacity Block there",
                });
            }
        }
    }
    const q = answers.quota;
    const quota = quotaFor(a.instanceType);
    if (q && quota && onDemand(spec) && "value" in q && !unknown(q.value) && t && !unknown(t.defaultVcpus)) {
        const need = spec.nodes * t.defaultVcpus;
        if (q.value < need) {
            issues.push({
                path: "cluster.nodes", value: spec.nodes,
                message: `need ${need} vCPUs of ${quota.name} (${quota.code}) in ${a.region}; the account's quota is ${q.value}`,
                allowed: `at most ${Math.floor(q.value / t.defaultVcpus)} nodes, a quota increase (Service Quotas ${quota.code}), or a Capacity Block`,
            });
        }
    }
    return issues;
}

/**
 * Asks AWS (three invokes, in the spec's region) and grades the answers. The quota is advisory when the caller may
 * not read it: a warning, not a refusal. Resolves to the issues; the component refuses when there are any.
 */
export function askAwsCloud(spec: ClusterSpec, plan: FabricPlan, parent: pulumi.Resource): pulumi.Output<SpecIssue[]> {
    const a = spec.aws!;
    const region = a.region;
    const opts = { parent };
    const types = [a.instanceType, ...(a.access === "bastion" ? [a.bastionInstanceType] : [])];
    const quota = quotaFor(a.instanceType);
    const answers: Promise<AwsCloudAnswers> = Promise.all([
        // a type the region does not know fails DescribeInstanceTypes (InvalidInstanceType): the offerings check then
        // names the field, so the failure itself is no answer rather than a raw error
        aws.ec2.getInstanceType({ instanceType: a.instanceType, region }, opts).catch(() => undefined),
        aws.ec2.getInstanceTypeOfferings({
            region, locationType: "availability-zone",
            filters: [{ name: "location", values: [a.availabilityZone] }, { name: "instance-type", values: types }],
        }, opts),
        quota && onDemand(spec)
            ? aws.servicequotas.getServiceQuota({ region, serviceCode: "ec2", quotaCode: quota.code }, opts)
                .then((r) => ({ value: r.value }), (e: unknown) => ({ error: String((e as Error)?.message ?? e) }))
            : Promise.resolve(undefined),
    ]).then(([instanceType, offeredInZone, q]) => ({ instanceType, offeredInZone, quota: q }));
    // graded inside the promise, not through Output.apply: an answer the engine does not know yet (the offline
    // plan) is a pass to grade, not an unknown that would hold back every child's region
    return pulumi.output(answers.then((ans) => {
        if (ans.quota && "error" in ans.quota) {
            void pulumi.log.warn(`rdmakit: could not read the ${quota!.name} quota (${quota!.code}), so it is not checked: ${ans.quota.error}`, parent);
        }
        return gradeAwsCloud(spec, plan, ans);
    }));
}

/** The reservation as `aws.ec2.CapacityReservation.get` reads it (the fields graded here). */
export interface ReservationAnswer {
    availabilityZone: string;
    instanceType: string;
    instanceCount: number;
    /** RFC 3339; unset for an ODCR that does not end */
    endDate?: string;
    /** set when the ODCR was made in a cluster placement group */
    placementGroupArn?: string;
    /** Capacity Blocks (aws.ec2.getCapacityBlockReservation): active, scheduled, payment-pending, expired, … */
    state?: string;
    startDate?: string;
}

/**
 * EC2 starts terminating a Capacity Block's instances 30 minutes before its end time; the group scales to zero
 * before that, so the step's own shutdown (and anything the nodes write) is not cut off.
 * source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-using.html ("30 minutes before")
 */
export const BLOCK_SCALE_IN_BEFORE_END_MINUTES = 60;

/** The placement group name inside an ARN `arn:aws:ec2:<region>:<account>:placement-group/<name>`. */
export function placementGroupName(arn: string | undefined): string | undefined {
    return arn ? arn.slice(arn.lastIndexOf("/") + 1) || undefined : undefined;
}

/** The reservation against the spec: zone, type, size, and a block that has not ended. Pure. */
export function gradeReservation(spec: ClusterSpec, r: ReservationAnswer, now: Date): SpecIssue[] {
    const a = spec.aws!;
    const block = a.capacityBlock;
    const field = block ? "cluster.aws.capacityBlock" : "cluster.aws.capacityReservation";
    const id = (block ?? a.capacityReservation)!.reservationId;
    const issues: SpecIssue[] = [];
    if ([r.availabilityZone, r.instanceType, r.instanceCount].some(unknown)) return issues;
    if (r.availabilityZone !== a.availabilityZone) {
        issues.push({ path: "cluster.aws.availabilityZone", value: a.availabilityZone, message: `is not the zone of reservation ${id}, which EC2 has in ${r.availabilityZone}`, allowed: r.availabilityZone });
    }
    if (block && block.availabilityZone !== r.availabilityZone) {
        issues.push({ path: `${field}.availabilityZone`, value: block.availabilityZone, message: `disagrees with EC2, which has ${id} in ${r.availabilityZone}`, allowed: r.availabilityZone });
    }
    if (r.instanceType !== a.instanceType) {
        issues.push({ path: "cluster.aws.instanceType", value: a.instanceType, message: `is not the type of reservation ${id}, which EC2 holds for ${r.instanceType}`, allowed: r.instanceType });
    }
    if (r.instanceCount < spec.nodes) {
        issues.push({ path: "cluster.nodes", value: spec.nodes, message: `exceeds reservation ${id}, which EC2 holds for ${r.instanceCount} instances`, allowed: `at most ${r.instanceCount}` });
    }
    const declared = (block ?? a.capacityReservation)!.instanceCount;
    if (declared !== r.instanceCount) {
        issues.push({ path: `${field}.instanceCount`, value: declared, message: `disagrees with EC2, which holds ${id} for ${r.instanceCount} instances`, allowed: String(r.instanceCount) });
    }
    if (block && r.state && !unknown(r.state) && r.state !== "active") {
        // instances launch into a block only while it is active; the group would wait out its timeout and fail
        // source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html
        issues.push({
            path: `${field}.reservationId`, value: id, message: `is ${r.state} according to EC2${r.startDate && !unknown(r.startDate) ? ` (it starts at ${r.startDate})` : ""}; nodes launch into a block only while it is active`,
            allowed: "run pulumi up once the block is active, or an active block",
        });
    }
    if (r.endDate && !unknown(r.endDate) && Date.parse(r.endDate) <= now.getTime() + BLOCK_SCALE_IN_BEFORE_END_MINUTES * 60_000) {
        issues.push({ path: `${field}.reservationId`, value: id, message: `ends at ${r.endDate}: too late to launch into (the group scales in ${BLOCK_SCALE_IN_BEFORE_END_MINUTES} minutes before the end)`, allowed: "a reservation that is still running, or a new Capacity Block" });
    }
    if (!block && r.placementGroupArn && a.placementGroup === true) {
        issues.push({
            path: "cluster.aws.placementGroup", value: true,
            message: `would make a new placement group, but ${id} was made in placement group ${placementGroupName(r.placementGroupArn)}, which the nodes must launch into`,
            allowed: "leave placementGroup out: the group uses the reservation's placement group",
        });
    }
    return issues;
}

/** The scale-in time of a group on a block that ends at `endDate`, in the ISO form the Schedule resource takes. */
export function blockScaleInTime(endDate: string): string {
    return new Date(Date.parse(endDate) - BLOCK_SCALE_IN_BEFORE_END_MINUTES * 60_000).toISOString().replace(/\.\d{3}Z$/, "Z");
}
