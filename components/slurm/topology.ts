/**
 * Slurm's network topology (topology/tree, slurm.schedmd.com/topology.conf.html) from the fabric the kit owns, pure.
 *
 * RoCE: from the declared cabling, `roce.hosts[].railPorts` (`leaf:port` per rail). Hosts whose rails land on the
 * same set of leaves form one leaf "switch" of the tree: in a rail-optimised fabric rail N of every host shares a leaf,
 * so a rail-to-rail transfer between two such hosts crosses one switch. The spines above each group of such leaves:
 * groups joined by any spine (uplinks declared on the leaves) sit under one spine switch; a group no spine reaches is
 * a tree of its own (slurmctld then keeps jobs inside it, which is what the cabling allows). Without cabling the
 * topology is flat, and the plan says so as a warning.
 *
 * Block topology (topology/block) needs Slurm 23.11+; the tree plugin exists in every distribution's Slurm
 * (Debian 12 22.05.8 ships topology_tree.so and no topology_block.so, scheduler.md §3), and no fabric here has a
 * multi-node NVLink domain that blocks would describe, so only trees are rendered.
 */
import type { RoceSpec } from "../spec-types";
import { namedFew } from "../listing";

export interface SlurmSwitch {
    name: string;
    /** leaf level: the node names under it */
    nodes?: string[];
    /** upper level: the switches under it */
    switches?: string[];
    /** what the switch stands for (leaf names, spine names, EC2 network node ids) */
    covers?: string[];
}

export type SlurmTopology =
    | { kind: "tree"; switches: SlurmSwitch[]; warnings: string[]; source: string }
    | { kind: "flat"; why: string }
    | { kind: "ec2"; note: string };

/**
 * A Slurm switch name for a set of real switches: one or two joined by '_', more as `<first>_and_<n>_more` so a
 * 2,048-host fabric's names stay short (topology.conf's comment beside each switch lists every member). The kit's
 * switch names are lower case, digits and '-', so the result is a plain Slurm name; `taken` keeps it unique.
 */
function switchName(parts: string[], taken: Set<string>): string {
    const base = parts.length <= 2 ? parts.join("_") : `${parts[0]}_and_${parts.length - 1}_more`;
    let name = base;
    for (let i = 2; taken.has(name); i++) name = `${base}_${i}`;
    taken.add(name);
    return name;
}

export function roceTopology(roce: Pick<RoceSpec, "hosts" | "switches">): SlurmTopology {
    const declared = roce.hosts.filter((h) => h.railPorts && h.railPorts.length > 0);
    if (declared.length === 0) {
        return { kind: "flat", why: "no roce.hosts[].railPorts declared: the kit does not know which leaf each host's rails land on (declare them to get a tree topology)" };
    }
    const warnings: string[] = [];
    const missing = roce.hosts.filter((h) => !h.railPorts || h.railPorts.length === 0).map((h) => h.name);
    if (missing.length > 0) {
        return {
            kind: "flat",
            why: `roce.hosts[].railPorts is declared on ${declared.length} of ${roce.hosts.length} hosts (missing: ${namedFew(missing)}); a partial tree would place those hosts nowhere, so the topology stays flat until every host declares its cabling`,
        };
    }
    // leaf set per host -> one group per distinct set, in the order hosts first name them
    const groups = new Map<string, { leaves: string[]; nodes: string[] }>();
    for (const h of roce.hosts) {
        const leaves = [...new Set(h.railPorts!.map((p) => p.slice(0, p.indexOf(":"))))].sort();
        const key = leaves.join(",");
        const g = groups.get(key) ?? { leaves, nodes: [] };
        g.nodes.push(h.name);
        groups.set(key, g);
    }
    const taken = new Set<string>();
    const leafSwitches: SlurmSwitch[] = [...groups.values()].map((g) => ({ name: switchName(g.leaves, taken), nodes: g.nodes, covers: g.leaves }));
    // spine reach: which groups each spine's uplinks touch (uplinks are declared on the leaves)
    const spinesOfLeaf = new Map<string, Set<string>>();
    for (const sw of roce.switches) {
        for (const u of sw.uplinks ?? []) {
            const s = spinesOfLeaf.get(sw.name) ?? new Set<string>();
            s.add(u.peer);
            spinesOfLeaf.set(sw.name, s);
        }
    }
    // union-find over groups joined by a common spine
    const parent = leafSwitches.map((_, i) => i);
    const find = (i: number): number => (parent[i] === i ? i : (parent[i] = find(parent[i])));
    const spinesOfGroup = leafSwitches.map((ls) => new Set(ls.covers!.flatMap((l) => [...(spinesOfLeaf.get(l) ?? [])])));
    const firstGroupOfSpine = new Map<string, number>();
    spinesOfGroup.forEach((spines, i) => {
        for (const sp of spines) {
            const j = firstGroupOfSpine.get(sp);
            if (j === undefined) firstGroupOfSpine.set(sp, i);
            else parent[find(i)] = find(j);
        }
    });
    const tops = new Map<number, number[]>();
    leafSwitches.forEach((_, i) => {
        const top = find(i);
        (tops.get(top) ?? tops.set(top, []).get(top)!).push(i);
    });
    const upper: SlurmSwitch[] = [];
    for (const members of tops.values()) {
        const spines = [...new Set(members.flatMap((i) => [...spinesOfGroup[i]]))].sort();
        if (members.length < 2 || spines.length === 0) continue;
        upper.push({ name: switchName(spines, taken), switches: members.map((i) => leafSwitches[i].name), covers: spines });
    }
    const trees = tops.size;
    if (trees > 1) {
        warnings.push(`the declared cabling forms ${trees} separate trees (no spine joins them): Slurm keeps every job inside one of them`);
    }
    // a leaf-group name may equal a spine-group name only if the spec reused a switch name, which it refuses
    return { kind: "tree", switches: [...leafSwitches, ...upper], warnings, source: "roce.hosts[].railPorts and roce.switches[].uplinks" };
}

