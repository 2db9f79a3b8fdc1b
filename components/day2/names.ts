/**
 * A node keeps its name when the cloud replaces the machine under it. The cloud lists a group's instances in no
 * stable order (the AWS component sorts them by address, and a replacement gets a new address), so naming them by
 * position would move names between machines: Slurm, the inventory and every verdict would then follow the wrong
 * machine. Instead the names come from the last deployment's `rdmakitState` (read back through a StackReference to
 * the stack itself, cluster.ts): an instance that was there keeps its name; a new instance takes a name whose
 * instance is gone, and that is recorded as a replacement (bounded history, instance ids and times only). Pure.
 */
import type { Replacement } from "./repair";

/** The replacements the state keeps: the newest, at most this many (enough to see a node that keeps failing). */
export const MAX_REPLACEMENTS = 16;

export interface CloudNode { instanceId: string; address: string }
export interface NamedNode extends CloudNode { name: string }

/** What the last deployment's state says, as far as naming needs it. */
export interface PreviousNames { nodes: Array<{ name: string; instanceId?: string }>; replacements?: Replacement[] }

const ID = /^[A-Za-z0-9._-]{1,253}$/;

/**
 * The naming part of a state another run wrote (a stack output: checked, not trusted): undefined when there is
 * none or it is not the shape this code writes, and then the nodes are named by position, as on a first deployment.
 */
export function previousNames(value: unknown): PreviousNames | undefined {
    const v = value as { nodes?: unknown; replacements?: unknown } | undefined;
    if (!v || typeof v !== "object" || !Array.isArray(v.nodes)) return undefined;
    const nodes = v.nodes.filter((n): n is { name: string; instanceId?: string } =>
        !!n && typeof n === "object" && typeof (n as { name?: unknown }).name === "string" && ID.test((n as { name: string }).name) &&
        ((n as { instanceId?: unknown }).instanceId === undefined || (typeof (n as { instanceId?: unknown }).instanceId === "string" && ID.test((n as { instanceId: string }).instanceId))))
        .map((n) => ({ name: n.name, ...(n.instanceId ? { instanceId: n.instanceId } : {}) }));
    const replacements = Array.isArray(v.replacements) ? v.replacements.filter(isReplacement).slice(-MAX_REPLACEMENTS) : [];
    return { nodes, replacements };
}

function isReplacement(r: unknown): r is Replacement {
    const x = r as Replacement;
    return !!x && typeof x === "object" && typeof x.node === "string" && ID.test(x.node) && typeof x.at === "string" && !Number.isNaN(Date.parse(x.at)) &&
        (x.fromInstance === undefined || (typeof x.fromInstance === "string" && ID.test(x.fromInstance))) &&
        (x.toInstance === undefined || (typeof x.toInstance === "string" && ID.test(x.toInstance)));
}

/**
 * The nodes named: `names` (the plan's, in order) onto `current` (the cloud's instances, in its order). Instances
 * named before keep their names; the rest take the free names in order; a free name whose instance is gone, given
 * to an instance the cluster did not have, is a replacement stamped `now`. Pure.
 */
export function stableNodes(names: string[], current: CloudNode[], previous: PreviousNames | undefined, now: string): { nodes: NamedNode[]; replacements: Replacement[] } {
    const kept = previous?.replacements ?? [];
    // a count that differs is refused where the nodes are named (provision/nodes.ts), in the cloud's words
    if (!previous || previous.nodes.length === 0 || names.length !== current.length) return { nodes: current.map((c, i) => ({ name: names[i], ...c })), replacements: kept };
    const wanted = new Set(names);
    const nameOf = new Map(previous.nodes.filter((n) => n.instanceId && wanted.has(n.name)).map((n) => [n.instanceId as string, n.name]));
    const knownBefore = new Set(previous.nodes.map((n) => n.instanceId).filter(Boolean));
    const heldBefore = new Map(previous.nodes.map((n) => [n.name, n.instanceId]));
    const taken = new Set<string>();
    const byName = new Map<string, CloudNode>();
    const named = new Set<string>();
    for (const c of current) {
        const n = nameOf.get(c.instanceId);
        if (n && !taken.has(n)) { taken.add(n); byName.set(n, c); named.add(c.instanceId); }
    }
    const free = names.filter((n) => !taken.has(n));
    const rest = current.filter((c) => !named.has(c.instanceId));
    const replacements = [...kept];
    rest.forEach((c, i) => {
        const name = free[i];
        byName.set(name, c);
        const gone = heldBefore.get(name);
        if (gone && gone !== c.instanceId && !knownBefore.has(c.instanceId)) replacements.push({ node: name, at: now, fromInstance: gone, toInstance: c.instanceId });
    });
    return { nodes: names.map((n) => ({ name: n, ...(byName.get(n) as CloudNode) })), replacements: replacements.slice(-MAX_REPLACEMENTS) };
}
