import * as pulumi from "@pulumi/pulumi";
import { FabricPlan } from "../plan";
import { keepNodes } from "../plan/provision";
import { InventoryHost, renderInventory } from "./inventory";

/**
 * The GPU nodes as inventory hosts: the plan's names in placement order, the addresses the fabric reported, the
 * plan's login user; on bare metal each host also carries its own roce_host_* variables from the QoS plan. Nodes the
 * plan leaves out (cluster.ansible.exclude, plan.provision.excluded) are not in it.
 */
export function inventoryHosts(plan: FabricPlan, addresses: string[]): InventoryHost[] {
    const names = plan.validation.hostNames;
    if (addresses.length !== names.length) {
        throw new Error(`the fabric reported ${addresses.length} node addresses for ${names.length} nodes ` +
            `(${plan.nodes.hostType}); check that every node launched, then run pulumi up again`);
    }
    const hostPlans = new Map((plan.roce?.qos.hosts ?? []).map((h) => [h.name, h]));
    const kept = keepNodes(names, addresses, plan.provision.excluded);
    return kept.names.map((name, i) => {
        const hp = hostPlans.get(name);
        return {
            name,
            address: kept.values[i],
            user: plan.sshUser,
            // a host's own NCCL environment (its rail list, GID index) overrides the cluster-wide nccl_conf
            ...(hp ? { vars: { ...hp.vars, nccl_conf: hp.ncclEnv } } : {}),
        };
    });
}

/**
 * The inventory text for the Ansible runs: one apply over the whole address list (never one per node), so it
 * costs the same at 8 and 1,000 nodes.
 */
export function nodeInventory(
    plan: FabricPlan,
    addresses: pulumi.Output<string[]>,
    entry?: { address: pulumi.Output<string | undefined>; user: string },
): pulumi.Output<string> {
    return pulumi.all([addresses, entry?.address]).apply(([ips, bastion]) =>
        renderInventory({
            hosts: inventoryHosts(plan, ips),
            bastion: bastion ? { address: bastion, user: entry!.user } : undefined,
            vars: plan.ansibleVars,
        }));
}
