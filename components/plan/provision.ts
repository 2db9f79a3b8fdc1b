/**
 * How the Ansible steps run: which nodes take part, how many at once, how many may fail. Pure: spec + the plan's node
 * names in, decisions out; the provisioning and validation components read them and decide nothing themselves.
 */
import type { SpecIssue } from "../errors";
import { suggest } from "../spec-messages";
import type { ClusterSpec } from "../spec";
import type { AnsibleMode } from "../types";

export interface ProvisionPlan {
    /** Nodes Ansible works on at once (`ANSIBLE_FORKS`): the nodes that take part, up to cluster.ansible.maxForks. */
    forks: number;
    /** Percentage of the taking-part nodes that may fail the node-software step (cluster.ansible.maxFailPercentage). */
    maxFailPercentage: number;
    /** Node names left out of both Ansible steps (cluster.ansible.exclude), in placement order. */
    excluded: string[];
    /**
     * Where the node-software step runs (cluster.ansible.mode): `node-local`, on each node against itself, `forks` nodes
     * at once (components/provision/fanout.ts); `controller`, pushed from the controller's ansible-playbook.
     */
    mode: AnsibleMode;
}

/** The provisioning decisions for the nodes `hostNames` (placement order). */
export function planProvision(spec: Pick<ClusterSpec, "ansible">, hostNames: string[]): ProvisionPlan {
    const out = new Set(spec.ansible.exclude);
    const excluded = hostNames.filter((n) => out.has(n));
    const taking = hostNames.length - excluded.length;
    return {
        forks: Math.max(1, Math.min(taking, spec.ansible.maxForks)),
        maxFailPercentage: spec.ansible.maxFailPercentage,
        excluded,
        mode: spec.ansible.mode,
    };
}

/** Problems with cluster.ansible.exclude against the node names: unknown names, duplicates, every node left out. */
export function provisionIssues(spec: Pick<ClusterSpec, "ansible" | "provision">, hostNames: string[]): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const known = new Set(hostNames);
    const seen = new Set<string>();
    spec.ansible.exclude.forEach((name, i) => {
        if (!known.has(name)) {
            const sample = hostNames.slice(0, 3).join(", ") + (hostNames.length > 3 ? ", ..." : "");
            issues.push({ path: `cluster.ansible.exclude[${i}]`, value: name, message: `names no node of this cluster${suggest(name, hostNames)}`, allowed: `node names: ${sample}` });
        } else if (seen.has(name)) {
            issues.push({ path: `cluster.ansible.exclude[${i}]`, value: name, message: "is listed twice" });
        }
        seen.add(name);
    });
    if (spec.provision && hostNames.length > 0 && hostNames.every((n) => seen.has(n))) {
        issues.push({
            path: "cluster.ansible.exclude", value: spec.ansible.exclude,
            message: "leaves no node to provision", allowed: "at least one node not excluded, or cluster.provision: false",
        });
    }
    return issues;
}

/**
 * The items of `values` (one per name of `names`, same order) whose node is not excluded, with their names: how the
 * inventory and the validation's host and address lists drop the excluded nodes. Pure.
 */
export function keepNodes<T>(names: string[], values: T[], excluded: string[]): { names: string[]; values: T[] } {
    const out = new Set(excluded);
    const keep = names.map((n, i) => [n, i] as const).filter(([n]) => !out.has(n));
    return { names: keep.map(([n]) => n), values: keep.map(([, i]) => values[i]) };
}
