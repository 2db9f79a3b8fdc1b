/**
 * The clouds' replacement of one node (execute.ts CloudOps), through the user's own CLI (`aws`, `az`) with the
 * answers read in the APIs' response shapes. `run` runs one CLI command and resolves to its parsed JSON (undefined
 * for a command that prints nothing) or rejects with the CLI's message.
 *
 * AWS: the node's instance is marked Unhealthy in its Auto Scaling group, which terminates it and launches a
 * replacement to keep the desired capacity. Needs IAM `autoscaling:SetInstanceHealth` (plus
 * `autoscaling:DescribeAutoScalingGroups` and `ec2:DescribeInstances` to wait for and address the new one).
 * source: https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_SetInstanceHealth.html (HealthStatus
 * Healthy|Unhealthy, ShouldRespectGracePeriod), https://docs.aws.amazon.com/autoscaling/ec2/userguide/set-up-a-custom-health-check.html
 * ("Amazon EC2 Auto Scaling ... replaces instances marked unhealthy"), AWS CLI v2 `aws autoscaling set-instance-health`.
 *
 * Azure: the instance is deleted and the scale set's capacity set back, so the replacement is a new VM, placed
 * afresh. Not a reimage: reimaging reinstalls the OS disk of the same VM ("Reimages (upgrade the operating system)
 * ... for virtual machines who have a ephemeral OS disk the virtual machine is reset to initial state",
 * VirtualMachineScaleSets_Reimage), which cures software, not the GPU or HCA a persistent finding names; Azure's own
 * automatic instance repair defaults to the same choice ("Type of repair action (replace, restart, reimage) ...
 * Default value is replace", AutomaticRepairsPolicy.RepairAction). Deleting instances lowers the capacity
 * (VirtualMachineScaleSets_DeleteInstances), so it is set back explicitly.
 * source: https://learn.microsoft.com/rest/api/compute/virtual-machine-scale-sets/delete-instances,
 * https://learn.microsoft.com/dotnet/api/azure.resourcemanager.compute.models.automaticrepairspolicy.repairaction,
 * `az rest` (replaces {subscriptionId} in the URL with the CLI's current subscription).
 */
import type { CloudOps } from "./execute";
import { VMSS_NIC_API_VERSION, type VmssNic } from "../azure/nodeIps";

export type RunJson = (argv: string[]) => Promise<unknown>;
export interface WaitOptions { intervalMs: number; timeoutMs: number; sleep?: (ms: number) => Promise<void> }

const sleeper = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

async function poll<T>(what: string, w: WaitOptions, probe: () => Promise<T | undefined>): Promise<T> {
    const sleep = w.sleep ?? sleeper;
    for (let waited = 0; ; waited += w.intervalMs) {
        const got = await probe();
        if (got !== undefined) return got;
        if (waited >= w.timeoutMs) throw new Error(`${what}: not there after ${Math.round(w.timeoutMs / 1000)} s`);
        await sleep(w.intervalMs);
    }
}

interface AsgInstance { InstanceId?: string; LifecycleState?: string; HealthStatus?: string }

export function awsCloudOps(group: { region: string; autoScalingGroup: string }, run: RunJson, wait: WaitOptions): CloudOps {
    // JSON whatever the user's own `aws configure` output format is
    const region = ["--region", group.region, "--output", "json"];
    return {
        async replace(instanceId) {
            // without the grace period: the node failed its gate after boot, the grace period is for booting nodes
            await run(["aws", "autoscaling", "set-instance-health", "--instance-id", instanceId, "--health-status", "Unhealthy", "--no-should-respect-grace-period", ...region]);
        },
        async waitForReplacement(oldId, known) {
            const id = await poll(`a replacement for ${oldId} in ${group.autoScalingGroup}`, wait, async () => {
                const ans = await run(["aws", "autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", group.autoScalingGroup, ...region]) as
                    { AutoScalingGroups?: Array<{ Instances?: AsgInstance[] }> };
                const g = ans?.AutoScalingGroups?.[0];
                if (!g) throw new Error(`Auto Scaling group ${group.autoScalingGroup} not found in ${group.region}`);
                const fresh = (g.Instances ?? []).find((i) => i.InstanceId && !known.includes(i.InstanceId) && i.LifecycleState === "InService" && i.HealthStatus === "Healthy");
                return fresh?.InstanceId;
            });
            const d = await run(["aws", "ec2", "describe-instances", "--instance-ids", id, ...region]) as
                { Reservations?: Array<{ Instances?: Array<{ InstanceId?: string; PrivateIpAddress?: string }> }> };
            const address = d?.Reservations?.flatMap((r) => r.Instances ?? []).find((i) => i.InstanceId === id)?.PrivateIpAddress;
            if (!address) throw new Error(`EC2 lists no private address for ${id}`);
            return { instanceId: id, address };
        },
    };
}

/** The Compute API version of the scale-set calls. source: azure-rest-api-specs, Microsoft.Compute stable 2024-07-01. */
export const COMPUTE_API_VERSION = "2024-07-01";

export function azureCloudOps(group: { resourceGroup: string; scaleSet: string }, capacity: number, run: RunJson, wait: WaitOptions): CloudOps {
    const base = `https://management.azure.com/subscriptions/{subscriptionId}/resourceGroups/${encodeURIComponent(group.resourceGroup)}` +
        `/providers/Microsoft.Compute/virtualMachineScaleSets/${encodeURIComponent(group.scaleSet)}`;
    return {
        async replace(instanceId) {
            await run(["az", "rest", "--method", "post", "--url", `${base}/delete?api-version=${COMPUTE_API_VERSION}`, "--body", JSON.stringify({ instanceIds: [instanceId] })]);
            await run(["az", "rest", "--method", "patch", "--url", `${base}?api-version=${COMPUTE_API_VERSION}`, "--body", JSON.stringify({ sku: { capacity } })]);
        },
        async waitForReplacement(oldId, known) {
            return poll(`a replacement for instance ${oldId} of ${group.scaleSet}`, wait, async () => {
                const vms = await run(["az", "rest", "--method", "get", "--url", `${base}/virtualMachines?api-version=${COMPUTE_API_VERSION}`]) as
                    { value?: Array<{ instanceId?: string; properties?: { provisioningState?: string } }> };
                const fresh = (vms?.value ?? []).find((v) => v.instanceId && !known.includes(v.instanceId) && v.instanceId !== oldId && v.properties?.provisioningState === "Succeeded");
                if (!fresh?.instanceId) return undefined;
                const nics = await run(["az", "rest", "--method", "get", "--url", `${base}/virtualMachines/${fresh.instanceId}/networkInterfaces?api-version=${VMSS_NIC_API_VERSION}`]) as { value?: VmssNic[] };
                const nic = (nics?.value ?? []).find((n) => n.properties?.primary) ?? nics?.value?.[0];
                const cfg = nic?.properties?.ipConfigurations ?? [];
                const address = (cfg.find((c) => c.properties?.primary) ?? cfg[0])?.properties?.privateIPAddress;
                return address ? { instanceId: fresh.instanceId, address } : undefined;
            });
        },
    };
}
