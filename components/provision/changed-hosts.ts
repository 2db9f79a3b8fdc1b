/**
 * A node the cloud replaced (a new instance id, maybe a new address) or a node added changes only that host's own
 * entry in the inventory. The software step then runs on those hosts only, as a retry does (resume.ts: the fan-out's
 * and ansible-playbook's limit), instead of visiting every node again: no play of site.yml reads another host's
 * variables, and whatever the cluster shares (the group's variables: slurm.conf with every node's address, the NCCL
 * environment, the versions) is compared whole, so a change there still re-runs every host.
 *
 * Only against a clean run: the last run's record (resume.ts) names no failed node and was made with the same
 * variables and playbooks, and the inventory file that run left (out/<stack>/inventory-<name>.yml, beside the
 * record) is the one the record's digest names. Anything else (no record, another checkout without the files, a
 * failed node, a changed group) is a full run, as before. Pure except readInventoryFile.
 */
import * as fs from "node:fs";
import { createHash } from "node:crypto";
import { isDeepStrictEqual } from "node:util";
import { parseInventory } from "./inventory-read";
import type { RetryPlan, RunDigests, RunRecord } from "./resume";

interface Inventory { all?: { hosts?: Record<string, unknown>; vars?: unknown; children?: unknown } & Record<string, unknown> }

function parse(text: string): Inventory | undefined {
    try {
        const doc = parseInventory(text) as Inventory | null;
        return doc && typeof doc === "object" && doc.all && typeof doc.all === "object" ? doc : undefined;
    } catch {
        return undefined;
    }
}

/** The hosts whose own entry is new or differs, when nothing else differs; undefined when something else does. Pure. */
export function changedHosts(previous: string, now: string): string[] | undefined {
    const a = parse(previous);
    const b = parse(now);
    if (!a || !b) return undefined;
    const { hosts: ha = {}, ...restA } = a.all!;
    const { hosts: hb = {}, ...restB } = b.all!;
    const others = (d: Inventory) => Object.fromEntries(Object.entries(d).filter(([k]) => k !== "all"));
    if (!isDeepStrictEqual(restA, restB) || !isDeepStrictEqual(others(a), others(b))) return undefined;
    return Object.keys(hb).filter((h) => !(h in ha) || !isDeepStrictEqual(ha[h], hb[h]));
}

/**
 * The run on the changed hosts only, or undefined for a full run (see the file's comment). `previous` is the
 * inventory file the last run left, `inventory` the one about to run. Pure.
 */
export function planChangedHosts(record: RunRecord | undefined, now: RunDigests, previous: string | undefined, inventory: string): RetryPlan | undefined {
    if (!record || previous === undefined || record.failed.length > 0) return undefined;
    if (record.vars !== now.vars || record.playbooks !== now.playbooks || record.inventory === now.inventory) return undefined;
    if (createHash("sha256").update(previous).digest("hex") !== record.inventory) return undefined;
    const changed = changedHosts(previous, inventory);
    if (!changed || changed.length === 0) return undefined;
    const hosts = Object.keys(parse(inventory)?.all?.hosts ?? {}).length;
    return { attempt: record.attempt + 1, hosts, nodes: changed };
}

/** The inventory file the last run left; undefined when there is none. */
export function readInventoryFile(file: string): string | undefined {
    try {
        return fs.readFileSync(file, "utf8");
    } catch {
        return undefined;
    }
}
