import * as pulumi from "@pulumi/pulumi";
import { FabricPlan } from "../plan";
import { keepNodes } from "../plan/provision";
import { InventoryHost, InventorySsm, renderInventory } from "./inventory";
import { slurmHeadHost, slurmHeadVars, type SlurmHeadAt } from "./head";
import type { Ec2Topology } from "../slurm/render";

/**
 * The GPU nodes as inventory hosts: the plan's names in placement order, the addresses the fabric reported, the
 * plan's login user; on bare metal each host also carries its own roce_host_* variables from the QoS plan. With the
 * cloud's instance ids (aligned with `addresses`), each host carries its `rdmakit_instance_id`: a node the cloud
 * replaced changes the inventory even at a reused address, so the software and validation steps run again. Nodes the
 * plan leaves out (cluster.ansible.exclude, plan.provision.excluded) are not in it.
 */
export function inventoryHosts(plan: FabricPlan, addresses: string[], instanceIds?: string[]): InventoryHost[] {
    const names = plan.validation.hostNames;
    checkReported(plan, addresses, instanceIds);
    const hostPlans = new Map((plan.roce?.qos.hosts ?? []).map((h) => [h.name, h]));
    const kept = keepNodes(names, addresses, plan.provision.excluded);
    const keptIds = instanceIds ? keepNodes(names, instanceIds, plan.provision.excluded).values : undefined;
    return kept.names.map((name, i) => {
        const hp = hostPlans.get(name);
        // a host's own NCCL environment (its rail list, GID index) overrides the cluster-wide nccl_conf
        // (one copy of the plan's variables a host: a spread of that copy into another was 0.7 KB more a host, each run)
        const own = hp ? { ...hp.vars, nccl_conf: hp.ncclEnv } : undefined;
        const vars = keptIds ? { ...own, rdmakit_instance_id: keptIds[i] } : own;
        return { name, address: kept.values[i], user: plan.sshUser, ...(vars ? { vars } : {}) };
    });
}

/** What the fabric reported is one address (and one instance id, where it gives them) for each node of the plan. */
function checkReported(plan: FabricPlan, addresses: string[], instanceIds?: string[]): void {
    const names = plan.validation.hostNames;
    if (addresses.length !== names.length) {
        throw new Error(`the fabric reported ${addresses.length} node addresses for ${names.length} nodes ` +
            `(${plan.nodes.hostType}); check that every node launched, then run pulumi up again`);
    }
    if (instanceIds && instanceIds.length !== addresses.length) {
        throw new Error(`the fabric reported ${instanceIds.length} instance ids for ${addresses.length} node addresses; run pulumi up again`);
    }
}

function requireIds(ids: string[] | undefined, nodes: number): string[] {
    if (!ids || ids.length !== nodes) throw new Error(`Session Manager needs the instance id of each of the ${nodes} nodes; the fabric reported ${ids?.length ?? 0}`);
    return ids;
}

/** A GPU node as the stack reports it: its inventory name, its address, and the cloud's id for it where there is one. */
export interface NodeInstance {
    name: string;
    address: string;
    instanceId?: string;
}

/** The plan's node names with the fabric's addresses and instance ids, every node. Pure. */
export function nodeInstances(plan: FabricPlan, addresses: string[], instanceIds?: string[]): NodeInstance[] {
    checkReported(plan, addresses, instanceIds); // the inventory's checks of what the fabric reported
    // every node, excluded ones too (cluster.ansible.exclude leaves a node out of the runs, not out of the cluster)
    return plan.validation.hostNames.map((name, i) => ({
        name, address: addresses[i], ...(instanceIds ? { instanceId: instanceIds[i] } : {}),
    }));
}

/** Pinned host keys for the inventory: the file (as the run that reads the inventory names it), the key types. */
export interface HostKeyPin {
    knownHostsFile: string;
    hostKeyAlgorithms: string[];
    /** resolves once the file is written: the inventory (and so every run) waits for it */
    written?: pulumi.Output<unknown>;
}

/** The Slurm head node for the software run's inventory: where it is now, and the EC2 topology read at this up. */
export interface SlurmHeadInput {
    head: pulumi.Input<SlurmHeadAt>;
    /** instances' network nodes and which node each is (aws-efa); undefined: topology.conf as the plan has it */
    ec2?: pulumi.Input<Ec2Topology | undefined>;
}

/**
 * The inventory text for the Ansible runs: one apply over the whole address list (never one per node), so it
 * costs the same at 8 and 1,000 nodes. With `slurm`, the head node is one more host (slurm_role controller) and the
 * group variables make site.yml run the slurm role (head.ts); the software run's inventory only.
 */
export function nodeInventory(
    plan: FabricPlan,
    addresses: pulumi.Output<string[]>,
    entry?: { address: pulumi.Output<string | undefined>; user: string },
    instanceIds?: pulumi.Output<string[] | undefined>,
    ssm?: InventorySsm,
    pin?: HostKeyPin,
    slurm?: SlurmHeadInput,
): pulumi.Output<string> {
    return pulumi.all([addresses, entry?.address, instanceIds, pin?.written, slurm?.head, slurm?.ec2]).apply(([ips, bastion, ids, , head, ec2]) => {
        const headHost = head ? slurmHeadHost(plan, head, ssm !== undefined) : undefined;
        return renderInventory({
            ...(pin ? { knownHostsFile: pin.knownHostsFile, pinnedHostKeys: true, hostKeyAlgorithms: pin.hostKeyAlgorithms } : {}),
            // through Session Manager, Ansible's address of a node is its instance id (the session's target)
            hosts: [...inventoryHosts(plan, ssm ? requireIds(ids, ips.length) : ips, ids), ...(headHost ? [headHost] : [])],
            bastion: bastion ? { address: bastion, user: entry!.user } : undefined,
            ...(ssm ? { ssm } : {}),
            vars: head ? { ...plan.ansibleVars, ...slurmHeadVars(plan, head, ips, ec2) } : plan.ansibleVars,
        });
    });
}
