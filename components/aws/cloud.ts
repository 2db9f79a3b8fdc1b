import { execFile } from "child_process";
import * as aws from "./sdk";
import { runAwsCliJson } from "./cli";
import { askRunningVcpus, quotaFor, type RunningVcpus } from "./quota";
import { ssmReachCheck } from "./ssm-reach";
import * as pulumi from "@pulumi/pulumi";
import { awsInstanceType } from "../catalog/aws";
import type { SpecIssue } from "../errors";
import type { FabricPlan } from "../plan";
import type { ClusterSpec } from "../spec-types";

/*
 * What AwsEfaCluster asks AWS before it creates anything (pulumi up and preview; `rdmakit plan` lists these as
 * checks that run at up): the instance type's network cards as EC2 describes them, against the catalog the launch
 * template was laid out from; whether the node type and the bastion type are offered in the cluster's AZ; and the
 * account's On-Demand vCPU quota for the family (./quota.ts); and, at pulumi up, whether the AWS CLI the kit runs is
 * signed in to the provider's account, and how many vCPUs of the family other instances already run (asked of that CLI). Asking is in `askAwsCloud`, grading in the pure `gradeAwsCloud`.
 */

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
    /** aws:index/getCallerIdentity:getCallerIdentity: the account the provider creates the cluster in */
    providerAccount?: string;
    /**
     * `aws sts get-caller-identity --output json` of the AWS CLI where pulumi up runs (its Account and Arn), or why it
     * gave none. source: https://docs.aws.amazon.com/cli/latest/reference/sts/get-caller-identity.html (UserId, Account, Arn)
     */
    cli?: { Account?: string; Arn?: string } | { error: string };
    /** the stack's aws:profile, which the kit hands the CLI */
    profile?: string;
    /**
     * vCPUs of the quota's family that other pending and running On-Demand instances in the region use (the CLI's
     * `aws ec2 describe-instances`, ./quota.ts countRunningVcpus; this cluster's own nodes left out), or why it gave none.
     * Asked at pulumi up only, and only of a CLI signed in to the provider's account.
     */
    running?: RunningVcpus | { error: string };
}

/** The checks that apply to this spec, in words, for `rdmakit plan` ("runs at pulumi up"). Pure. */
export function awsCloudCheckList(spec: ClusterSpec): string[] {
    const a = spec.aws!;
    const checks = [
        `${a.instanceType}: network cards and EFA interfaces as EC2 describes the type (ec2:DescribeInstanceTypes) match the catalog`,
        `${[a.instanceType, ...(a.access === "bastion" ? [a.bastionInstanceType] : [])].join(" and ")} offered in ${a.availabilityZone} (ec2:DescribeInstanceTypeOfferings)`,
    ];
    const quota = quotaFor(a.instanceType);
    if (quota && onDemand(spec)) {
        checks.push(`${quota.name} (${quota.code}) covers ${spec.nodes} nodes' vCPUs on top of the vCPUs other running On-Demand ${quota.prefixes.map((p) => p.toUpperCase()).join("/")} instances in ${a.region} already use (servicequotas:GetServiceQuota; running vCPUs counted with the AWS CLI's aws ec2 describe-instances, this cluster's own nodes left out)`);
    }
    checks.push(`the root volume (${a.rootVolumeGiB} GiB) holds the node AMI's root snapshot (ec2:DescribeImages block device mappings)`);
    const ssm = ssmReachCheck(spec);
    if (ssm) checks.push(ssm);
    checks.push("the AWS CLI where pulumi up runs (the capacity wait" + (a.access === "ssm" ? ", Session Manager's ssh" : "") + ") is signed in to the provider's account (aws sts get-caller-identity vs sts:GetCallerIdentity of the provider)");
    const held = a.capacityBlock ?? a.capacityReservation;
    if (held) {
        checks.push(`reservation ${held.reservationId}: zone, instance type and count as declared, not ended${a.capacityBlock ? `; the group scales to 0 ${BLOCK_SCALE_IN_BEFORE_END_MINUTES} min before its end` : "; its placement group used"} (ec2:DescribeCapacityReservations)`);
    }
    return checks;
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
        const used = answers.running && "vcpus" in answers.running ? answers.running : undefined;
        const free = q.value - (used?.vcpus ?? 0);
        if (free < need) {
            const running = used ? `, of which other running instances already use ${used.vcpus} (${used.instances} instance${used.instances === 1 ? "" : "s"}, aws ec2 describe-instances), leaving ${Math.max(free, 0)}` : "";
            issues.push({
                path: "cluster.nodes", value: spec.nodes,
                message: `need ${need} vCPUs of ${quota.name} (${quota.code}) in ${a.region}; the account's quota is ${q.value}${running}`,
                allowed: `at most ${Math.max(Math.floor(free / t.defaultVcpus), 0)} nodes, a quota increase (Service Quotas ${quota.code})${used ? ", stopping the other instances" : ""}, or a Capacity Block`,
            });
        }
    }
    issues.push(...gradeCliAccount(spec, answers));
    return issues;
}

/**
 * The CLI's account against the provider's. The capacity wait (./lifecycle.ts) and, with `access: ssm`, every ssh hop
 * (provision/inventory.ts ProxyCommand) run the AWS CLI with the credentials it finds (only aws:profile is passed on);
 * with static keys, an assumed role or an explicit provider for the cluster, the group is made in one account while
 * the CLI looks in another and reports that the group does not exist. Refused before anything is made. Pure.
 */
export function gradeCliAccount(spec: ClusterSpec, answers: Pick<AwsCloudAnswers, "providerAccount" | "cli" | "profile">): SpecIssue[] {
    const want = answers.providerAccount;
    const cli = answers.cli;
    if (!cli || unknown(want) || !want) return [];
    const uses = `the capacity wait${spec.aws!.access === "ssm" ? " and Session Manager's ssh" : ""} run${spec.aws!.access === "ssm" ? "" : "s"} it`;
    const allowed = `the provider's credentials for the CLI too: the same profile (aws:profile${answers.profile ? ` ${answers.profile}` : ""}, or AWS_PROFILE), the same AWS_* keys, or a CLI profile with the role the provider assumes`;
    if ("error" in cli) {
        return [{ path: "aws:profile", value: answers.profile, message: `the AWS CLI where pulumi up runs could not say which account it is signed in to (${cli.error}); ${uses}`, allowed }];
    }
    if (cli.Account === want) return [];
    return [{
        path: "aws:profile", value: answers.profile,
        message: `the AWS CLI where pulumi up runs is signed in to account ${cli.Account ?? "(none)"}${cli.Arn ? ` (${cli.Arn})` : ""}, the AWS provider to ${want}; ${uses}, and would look for the node group in the wrong account`,
        allowed,
    }];
}

/** Asks the AWS CLI who it is, as the capacity wait will run it (the stack's profile, the process's environment). */
export async function askCli(region: string, profile: string | undefined, run: typeof execFile = execFile): Promise<NonNullable<AwsCloudAnswers["cli"]>> {
    const r = await runAwsCliJson(["sts", "get-caller-identity", "--region", region], profile, run);
    if ("error" in r) return r;
    const j = (typeof r.json === "object" && r.json !== null ? r.json : {}) as { Account?: unknown; Arn?: unknown };
    return { Account: typeof j.Account === "string" ? j.Account : undefined, Arn: typeof j.Arn === "string" ? j.Arn : undefined };
}

/**
 * Asks AWS (four invokes, in the spec's region, and the CLI's `sts get-caller-identity` and `ec2 describe-instances`) and grades the answers. The quota is advisory when the caller may
 * not read it: a warning, not a refusal. Resolves to the issues; the component refuses when there are any.
 */
export function askAwsCloud(spec: ClusterSpec, plan: FabricPlan, parent: pulumi.Resource): pulumi.Output<SpecIssue[]> {
    const a = spec.aws!;
    const region = a.region;
    const opts = { parent };
    const types = [a.instanceType, ...(a.access === "bastion" ? [a.bastionInstanceType] : [])];
    const quota = quotaFor(a.instanceType);
    const profile = new pulumi.Config("aws").get("profile");
    // the provider's account, and (at pulumi up only: a preview runs no CLI) the CLI's; a provider that cannot say
    // (the offline plan) asks nothing
    // and, from a CLI signed in to that account, what other instances of the quota's family already run
    const accounts = aws.getCallerIdentity({}, opts).then((id) => id?.accountId, () => undefined).then(async (providerAccount) => {
        const cli = !unknown(providerAccount) && providerAccount && !pulumi.runtime.isDryRun() ? await askCli(region, profile) : undefined;
        const sameAccount = cli && "Account" in cli && cli.Account === providerAccount;
        const running = sameAccount && quota && onDemand(spec) ? await askRunningVcpus(region, profile, quota, { key: "rdmakit:cluster", value: spec.name }) : undefined;
        return { providerAccount, cli, running };
    });
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
        accounts,
    ]).then(([instanceType, offeredInZone, q, who]) => ({ instanceType, offeredInZone, quota: q, ...who, profile }));
    // graded inside the promise, not through Output.apply: an answer the engine does not know yet (the offline
    // plan) is a pass to grade, not an unknown that would hold back every child's region
    return pulumi.output(answers.then((ans) => {
        if (ans.quota && "error" in ans.quota) {
            void pulumi.log.warn(`rdmakit: could not read the ${quota!.name} quota (${quota!.code}), so it is not checked: ${ans.quota.error}`, parent);
        } else if (ans.running && "error" in ans.running) {
            void pulumi.log.warn(`rdmakit: could not count the vCPUs other instances already run of the ${quota!.name} quota (${quota!.code}), so only the limit is checked: ${ans.running.error}`, parent);
        }
        return gradeAwsCloud(spec, plan, ans);
    }));
}

/** The node AMI as aws.ec2.getAmi answers it (the fields read here: its root device and the block device mappings). */
export interface AmiAnswer {
    id?: string;
    rootDeviceName?: string;
    blockDeviceMappings?: Array<{ deviceName?: string; ebs?: Record<string, string> }>;
}

/**
 * The root volume against the AMI's root snapshot: EC2 refuses a launch whose root volume is smaller than the
 * snapshot (CreateVolume: "volume size ... must be greater than or equal to the snapshot size"), and inside an
 * Auto Scaling group that failure is a scaling activity, not an error, so pulumi up would wait out the capacity wait.
 * The size is the mapping's `ebs.volume_size` (GiB), as the provider's getAmi gives it (@pulumi/aws
 * GetAmiBlockDeviceMapping.ebs). Unknown answers pass. Pure.
 * source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/device_naming.html (root device), https://docs.aws.amazon.com/ebs/latest/userguide/ebs-creating-volume.html
 */
export function gradeRootVolume(spec: ClusterSpec, ami: AmiAnswer | undefined): SpecIssue[] {
    if (!ami || unknown(ami.rootDeviceName) || !ami.blockDeviceMappings || unknown(ami.blockDeviceMappings)) return [];
    const root = ami.blockDeviceMappings.find((m) => m.deviceName === ami.rootDeviceName);
    const size = Number(root?.ebs?.volume_size);
    const want = spec.aws!.rootVolumeGiB;
    if (!Number.isFinite(size) || size <= want) return [];
    return [{
        path: "cluster.aws.rootVolumeGiB", value: want,
        message: `is smaller than the root snapshot of ${spec.aws!.ami ? "the given AMI" : "the DLAMI"} ${ami.id ?? ""} (${size} GiB); EC2 would refuse every launch`.replace("  ", " "),
        allowed: `at least ${size}`,
    }];
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
    /** Capacity Blocks: the instances that can still launch into it (getCapacityBlockReservation availableInstanceCount) */
    availableInstanceCount?: number;
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
export function gradeReservation(spec: ClusterSpec, r: ReservationAnswer, now: Date, ours = 0): SpecIssue[] {
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
    // what other instances already hold of a block: it launches only `available` more, plus the room this cluster's
    // own running nodes (`ours`, found by tag and reservation id) already take; an ODCR read gives no such count
    // (@pulumi/aws ec2/capacityReservation.d.ts outputs have none), so there only the total is checked
    const available = r.availableInstanceCount;
    if (block && available !== undefined && !unknown(available) && r.instanceCount >= spec.nodes && available + ours < spec.nodes) {
        issues.push({
            path: "cluster.nodes", value: spec.nodes,
            message: `exceeds what reservation ${id} has free: EC2 says ${available} of its ${r.instanceCount} instances can still launch${ours ? ` (this cluster runs ${ours} there)` : ""}; other instances hold the rest`,
            allowed: `at most ${available + ours}, or stop the other instances in the block`,
        });
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
