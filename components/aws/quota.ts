import { execFile } from "child_process";
import { runAwsCliJson } from "./cli";

/*
 * The account's Running On-Demand vCPU quota for the node type's family, and what other instances already use of it.
 * EC2 refuses a launch that would take the family's running vCPUs past the quota (VcpuLimitExceeded); inside an Auto
 * Scaling group that is a failed scaling activity, not an error, so pulumi up would only see it at the end of the
 * capacity wait. No provider invoke reads the usage (it is a CloudWatch AWS/Usage metric, and aws.ec2.getInstances
 * gives ids, not types), so at pulumi up the kit asks the AWS CLI it already runs for the capacity wait.
 */

/**
 * Running On-Demand vCPU quotas (Service Quotas, service `ec2`) by instance family letter, and the instance type
 * prefixes each one counts.
 * source: https://docs.aws.amazon.com/ec2/latest/instancetypes/ec2-instance-quotas.html ("Running On-Demand P
 * instances" L-417A185B, "Running On-Demand G and VT instances" L-DB2E81BA); the codes as AWS's console links them,
 * https://console.aws.amazon.com/servicequotas/home/services/ec2/quotas/L-417A185B
 */
export const AWS_VCPU_QUOTAS: Record<string, { code: string; name: string; prefixes: string[] }> = {
    p: { code: "L-417A185B", name: "Running On-Demand P instances", prefixes: ["p"] },
    g: { code: "L-DB2E81BA", name: "Running On-Demand G and VT instances", prefixes: ["g", "vt"] },
};

export type VcpuQuota = (typeof AWS_VCPU_QUOTAS)[string];

export function quotaFor(instanceType: string): VcpuQuota | undefined {
    return AWS_VCPU_QUOTAS[instanceType[0]];
}

/** What other instances of the quota's family run, as counted from `aws ec2 describe-instances`. */
export interface RunningVcpus {
    vcpus: number;
    instances: number;
}

/**
 * The states counted: pending and running (the quotas are for running instances, as their names say; a pending
 * one is about to run). InstanceState.Name values: pending | running | shutting-down | terminated | stopping |
 * stopped, https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceState.html
 */
const HOLDING_STATES = ["pending", "running"];

/**
 * Instances that are not On-Demand for the quota: Spot Instances have their own Spot quotas (same quotas page); a
 * Capacity Block's instances are left out as well (InstanceLifecycle `capacity-block`): whether they count against
 * the On-Demand quota is unconfirmed, and counting them could refuse a cluster EC2 would launch.
 * source: InstanceLifecycle values spot | scheduled | capacity-block,
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Instance.html
 */
const NOT_ON_DEMAND = ["spot", "capacity-block"];

/**
 * Counts the vCPUs that pending and running On-Demand instances of the quota's families use, from the AWS CLI's
 * `ec2 describe-instances --output json` answer (its full shape: Reservations[].Instances[], each with InstanceId,
 * InstanceType, State.Name, CpuOptions.CoreCount and ThreadsPerCore, Tags[] of Key/Value, InstanceLifecycle when not
 * On-Demand). vCPUs per instance are CoreCount × ThreadsPerCore, as EC2 reports the instance's CPU options
 * (whether the quota counts a type's default vCPUs instead when CPU options lower them is unconfirmed).
 * `ours` (tag key and value) marks this cluster's own nodes: a later pulumi up keeps them, so they are not another
 * use of the quota. An answer it cannot read is an error, never a guess. Pure.
 * source: https://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html (output),
 * https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_Instance.html, API_CpuOptions.html
 */
export function countRunningVcpus(answer: unknown, quota: VcpuQuota, ours: { key: string; value: string }): RunningVcpus | { error: string } {
    const bad = (why: string) => ({ error: `aws ec2 describe-instances answered in a shape the kit cannot read: ${why}` });
    if (!isObject(answer) || !Array.isArray(answer.Reservations)) return bad("no Reservations list");
    if (answer.NextToken !== undefined && answer.NextToken !== null) return bad("it is one page of several (NextToken)");
    let vcpus = 0, instances = 0;
    for (const [r, reservation] of answer.Reservations.entries()) {
        if (!isObject(reservation) || !Array.isArray(reservation.Instances)) return bad(`Reservations[${r}] has no Instances list`);
        for (const i of reservation.Instances as unknown[]) {
            if (!isObject(i) || typeof i.InstanceType !== "string") return bad(`an instance in Reservations[${r}] has no InstanceType`);
            const id = typeof i.InstanceId === "string" ? i.InstanceId : "(no id)";
            if (!quota.prefixes.some((p) => (i.InstanceType as string).startsWith(p))) continue;
            const state = isObject(i.State) ? i.State.Name : undefined;
            if (typeof state !== "string") return bad(`${id} has no State.Name`);
            if (!HOLDING_STATES.includes(state)) continue;
            if (typeof i.InstanceLifecycle === "string" && NOT_ON_DEMAND.includes(i.InstanceLifecycle)) continue;
            if (i.Tags !== undefined && !Array.isArray(i.Tags)) return bad(`${id} has Tags that are not a list`);
            const tags = (i.Tags ?? []) as unknown[];
            if (tags.some((t) => isObject(t) && t.Key === ours.key && t.Value === ours.value)) continue;
            const cpu = isObject(i.CpuOptions) ? i.CpuOptions : undefined;
            const cores = cpu?.CoreCount, threads = cpu?.ThreadsPerCore;
            if (!Number.isInteger(cores) || !Number.isInteger(threads)) return bad(`${id} (${i.InstanceType}) has no CpuOptions.CoreCount and ThreadsPerCore`);
            vcpus += (cores as number) * (threads as number);
            instances++;
        }
    }
    return { vcpus, instances };
}

/**
 * Asks the AWS CLI for the region's pending and running instances of the quota's families (filtered by EC2: the
 * instance-state-name and instance-type filters, which take `*` wildcards), and counts them.
 * source: https://docs.aws.amazon.com/cli/latest/reference/ec2/describe-instances.html (--filters, wildcards)
 */
export async function askRunningVcpus(region: string, profile: string | undefined, quota: VcpuQuota, ours: { key: string; value: string },
    run: typeof execFile = execFile): Promise<RunningVcpus | { error: string }> {
    const answer = await runAwsCliJson(["ec2", "describe-instances", "--region", region, "--filters",
        `Name=instance-state-name,Values=${HOLDING_STATES.join(",")}`, `Name=instance-type,Values=${quota.prefixes.map((p) => `${p}*`).join(",")}`], profile, run);
    return "error" in answer ? answer : countRunningVcpus(answer.json, quota, ours);
}

function isObject(v: unknown): v is Record<string, unknown> {
    return typeof v === "object" && v !== null && !Array.isArray(v);
}
