import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { FabricPlan } from "../plan";
import { keepNodes } from "../plan/provision";
import { InventoryHost, InventorySsm, renderInventory } from "./inventory";
import { PinnedHost, syncPinnedHostKeys } from "./knownhosts";

/**
 * The GPU nodes as inventory hosts: the plan's names in placement order, the addresses the fabric reported, the
 * plan's login user; on bare metal each host also carries its own roce_host_* variables from the QoS plan. With the
 * cloud's instance ids (aligned with `addresses`), each host carries its `rdmakit_instance_id`: a node the cloud
 * replaced changes the inventory even at a reused address, so the software and validation steps run again. Nodes the
 * plan leaves out (cluster.ansible.exclude, plan.provision.excluded) are not in it.
 */
export function inventoryHosts(plan: FabricPlan, addresses: string[], instanceIds?: string[]): InventoryHost[] {
    const names = plan.validation.hostNames;
    if (addresses.length !== names.length) {
        throw new Error(`the fabric reported ${addresses.length} node addresses for ${names.length} nodes ` +
            `(${plan.nodes.hostType}); check that every node launched, then run pulumi up again`);
    }
    if (instanceIds && instanceIds.length !== addresses.length) {
        throw new Error(`the fabric reported ${instanceIds.length} instance ids for ${addresses.length} node addresses; run pulumi up again`);
    }
    const hostPlans = new Map((plan.roce?.qos.hosts ?? []).map((h) => [h.name, h]));
    const kept = keepNodes(names, addresses, plan.provision.excluded);
    const keptIds = instanceIds ? keepNodes(names, instanceIds, plan.provision.excluded).values : undefined;
    return kept.names.map((name, i) => {
        const hp = hostPlans.get(name);
        // a host's own NCCL environment (its rail list, GID index) overrides the cluster-wide nccl_conf
        const vars = {
            ...(hp ? { ...hp.vars, nccl_conf: hp.ncclEnv } : {}),
            ...(keptIds ? { rdmakit_instance_id: keptIds[i] } : {}),
        };
        return { name, address: kept.values[i], user: plan.sshUser, ...(Object.keys(vars).length > 0 ? { vars } : {}) };
    });
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
    inventoryHosts(plan, addresses, instanceIds); // the same checks of what the fabric reported
    // every node, excluded ones too (cluster.ansible.exclude leaves a node out of the runs, not out of the cluster)
    return plan.validation.hostNames.map((name, i) => ({
        name, address: addresses[i], ...(instanceIds ? { instanceId: instanceIds[i] } : {}),
    }));
}

/** The stack's known_hosts file and the host keys pinned in it (the nodes', the bastion's). */
export interface PinnedHostKeys {
    /** e.g. knownHostsPath(stack): out/<stack>/known_hosts */
    file: string;
    /** public keys only */
    hosts: pulumi.Input<PinnedHost[]>;
}

/**
 * The inventory text for the Ansible runs: one apply over the whole address list (never one per node), so it
 * costs the same at 8 and 1,000 nodes. With `hostKeys`, the runs check every host against that file alone
 * (StrictHostKeyChecking=yes) and, at a deployment, the file is made to hold exactly the pinned keys of each
 * address before the inventory resolves, so before any run that reads it: a replaced node's old entry at a reused
 * address is dropped (knownhosts.ts syncPinnedHostKeys). A preview writes nothing. Without `hostKeys` the runs use
 * the operator's known_hosts with accept-new and nothing is dropped: the kit cannot tell a replaced node from
 * another machine at its address, so a node that comes back with a new key fails the run with ssh's "REMOTE HOST
 * IDENTIFICATION HAS CHANGED" until its entry is removed by hand (`ssh-keygen -R <address>`).
 */
export function nodeInventory(
    plan: FabricPlan,
    addresses: pulumi.Output<string[]>,
    entry?: { address: pulumi.Output<string | undefined>; user: string },
    instanceIds?: pulumi.Output<string[] | undefined>,
    ssm?: InventorySsm,
    hostKeys?: PinnedHostKeys,
): pulumi.Output<string> {
    // public keys only, so a key pair kept as a secret does not make the inventory one
    const pinned = hostKeys ? pulumi.unsecret(pulumi.output(hostKeys.hosts)) : pulumi.output(undefined);
    return pulumi.all([addresses, entry?.address, instanceIds, pinned]).apply(([ips, bastion, ids, hosts]) => {
        const text = renderInventory({
            // through Session Manager, Ansible's address of a node is its instance id (the session's target)
            hosts: inventoryHosts(plan, ssm ? requireIds(ids, ips.length) : ips, ids),
            bastion: bastion ? { address: bastion, user: entry!.user } : undefined,
            ...(ssm ? { ssm } : {}),
            ...(hostKeys ? { knownHostsFile: hostKeys.file, pinnedHostKeys: true } : {}),
            vars: plan.ansibleVars,
        });
        if (hostKeys && hosts && !pulumi.runtime.isDryRun()) {
            fs.mkdirSync(path.dirname(hostKeys.file), { recursive: true });
            const { dropped } = syncPinnedHostKeys(hostKeys.file, hosts);
            if (dropped.length > 0) {
                pulumi.log.info(`${hostKeys.file}: dropped the old host keys of ${dropped.length} replaced node address(es): ` +
                    `${dropped.slice(0, 5).join(", ")}${dropped.length > 5 ? ", ..." : ""}`);
            }
        }
        return text;
    });
}
