/**
 * The Slurm head node in the software run's inventory, pure: the host (slurm_role controller) and the group
 * variables that make site.yml run the slurm role (slurm_head_in_inventory, the controller's address, the files with
 * the addresses known at `pulumi up`, the /home export's clients). The contract is the one playbooks/site.yml and
 * test/hosts/slurm.ts use. The head node is in the software run only: validate.yml runs on every host of its
 * inventory (nccl_validate_group all), and the head has no GPU to validate.
 */
import type { FabricPlan } from "../plan";
import type { SlurmPlan } from "../plan/scheduler";
import { slurmFiles, type Ec2Topology } from "../slurm/render";
import type { InventoryHost } from "./inventory";

/** Where the head node is at this `pulumi up`. */
export interface SlurmHeadAt {
    /** the address the nodes reach slurmctld at (cloud: its private IP; bare metal: scheduler.controller.address) */
    address: string;
    /** cloud: the instance / VM id (Session Manager's target; a replaced head node changes the inventory) */
    instanceId?: string;
    /** bare metal: the known_hosts file that pins scheduler.controller.hostKey for this host alone */
    pinnedKnownHostsFile?: string;
}

function slurmOf(plan: FabricPlan): SlurmPlan | undefined {
    return plan.scheduler.type === "slurm" ? plan.scheduler : undefined;
}

/**
 * The head node as an inventory host: the plan's controller name, its address (its instance id through Session
 * Manager), the controller's login user, `slurm_role: controller`. undefined when the plan runs no Slurm.
 */
export function slurmHeadHost(plan: FabricPlan, head: SlurmHeadAt, viaSsm: boolean): InventoryHost | undefined {
    const s = slurmOf(plan);
    if (!s) return undefined;
    if (viaSsm && !head.instanceId) throw new Error("Session Manager needs the Slurm head node's instance id; the fabric reported none");
    return {
        name: s.controller.name,
        address: viaSsm ? head.instanceId! : head.address,
        user: s.controller.sshUser,
        ...(head.pinnedKnownHostsFile ? { pinnedKnownHostsFile: head.pinnedKnownHostsFile } : {}),
        vars: { slurm_role: "controller", ...(head.instanceId ? { rdmakit_instance_id: head.instanceId } : {}) },
    };
}

/**
 * The group variables the slurm role needs once the head node is in the inventory, over plan.ansibleVars: the
 * controller's address, slurm.conf with the addresses known now (the cloud head node's and nodes' private IPs, so
 * nothing depends on name resolution) and topology.conf from the EC2 instance topology when one was read, the nodes
 * the head node exports /home to. {} when the plan runs no Slurm.
 */
export function slurmHeadVars(plan: FabricPlan, head: SlurmHeadAt, nodeAddresses: string[], ec2?: Ec2Topology): Record<string, unknown> {
    const s = slurmOf(plan);
    if (!s) return {};
    if (nodeAddresses.length !== s.nodeNames.length) {
        throw new Error(`the fabric reported ${nodeAddresses.length} node addresses for the ${s.nodeNames.length} Slurm nodes; run pulumi up again`);
    }
    const cloud = plan.fabric !== "roce";
    return {
        slurm_head_in_inventory: true,
        slurm_controller_address: head.address,
        slurm_files: slurmFiles(plan, ec2, cloud
            ? { controllerAddress: head.address, nodeAddresses: Object.fromEntries(s.nodeNames.map((n, i) => [n, nodeAddresses[i]])) }
            : {}),
        ...(s.homeNfs ? { slurm_home_nfs_clients: [...nodeAddresses] } : {}),
    };
}
