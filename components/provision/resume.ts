/**
 * Retrying the nodes a tolerated run left failed (cluster.ansible.maxFailPercentage > 0). Such a run succeeds, so the
 * command's inputs stay as they were and the next `pulumi up` would have nothing to do: the failed nodes would stay
 * broken without a word. Instead each run of the node-software step leaves a record, `out/<stack>/outcome-<name>.json`
 * (written by the run's summariser, never by the program, so a preview writes nothing), and the program reads it:
 * while the record names failed nodes for the inventory, variables and playbooks it is about to run with, the command
 * gets a retry attempt in its environment, so that `pulumi up` re-runs the step with `--limit` on those nodes only.
 * The nodes that passed are not visited again: at 1,000 nodes a full pass costs every node's controller time even
 * when it changes nothing (bench/software.ts), and no play of site.yml reads another node's state.
 *
 * Inputs stay stable when nothing failed: no record, a record of another inventory/variables/playbooks, or one of a
 * full run with no failure gives no retry variables at all; a record of a retry that healed every node gives that
 * retry's own variables again, which the state already holds. Pure except readRunRecord.
 */
import * as fs from "node:fs";
import * as path from "node:path";

/** What one run of the step left: the digests it ran with, which attempt it was, the nodes still failing after it. */
export interface RunRecord {
    /** RDMAKIT_INVENTORY_HASH, RDMAKIT_VARS_HASH and RDMAKIT_PLAYBOOKS_HASH of the run */
    inventory: string;
    vars: string;
    playbooks: string;
    /** 0: a full run; n: the n-th retry since the last full run */
    attempt: number;
    /** hosts of the whole step (a retry visits fewer) */
    hosts: number;
    /** the nodes this run was limited to ([] for a full run) */
    limit: string[];
    /** the nodes that still fail after this run */
    failed: string[];
}

/** The digests the program is about to run the step with. */
export interface RunDigests {
    inventory: string;
    vars: string;
    playbooks: string;
}

/** A retry of the step: which attempt, on which nodes, out of how many hosts in all. */
export interface RetryPlan {
    attempt: number;
    hosts: number;
    nodes: string[];
}

const NODE = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;

/** The record file of the step `name` in `outDir`. */
export function runRecordPath(outDir: string, name: string): string {
    return path.join(outDir, `outcome-${name}.json`);
}

/** A record read back, or undefined when it is missing or not one (then the step simply runs as a change decides). */
export function parseRunRecord(text: string): RunRecord | undefined {
    let r: unknown;
    try {
        r = JSON.parse(text);
    } catch {
        return undefined;
    }
    if (r === null || typeof r !== "object") return undefined;
    const o = r as Record<string, unknown>;
    const digest = (v: unknown): v is string => typeof v === "string" && /^[0-9a-f]{64}$/.test(v);
    const count = (v: unknown): v is number => typeof v === "number" && Number.isInteger(v) && v >= 0;
    const names = (v: unknown): v is string[] => Array.isArray(v) && v.every((n) => typeof n === "string" && NODE.test(n));
    if (!digest(o.inventory) || !digest(o.vars) || !digest(o.playbooks) || !count(o.attempt) || !count(o.hosts) ||
        !names(o.limit) || !names(o.failed)) return undefined;
    return { inventory: o.inventory, vars: o.vars, playbooks: o.playbooks, attempt: o.attempt, hosts: o.hosts, limit: o.limit, failed: o.failed };
}

/** readFileSync + parseRunRecord; undefined when the file is missing or unreadable. */
export function readRunRecord(file: string): RunRecord | undefined {
    try {
        return parseRunRecord(fs.readFileSync(file, "utf8"));
    } catch {
        return undefined;
    }
}

/**
 * Whether the next run retries, and on what. Only a record of the same inventory, variables and playbooks counts: any
 * other change re-runs the whole step anyway. Failed nodes give the next attempt on them; a retry that healed every
 * node gives its own attempt again (the inputs the state holds, so nothing re-runs); a clean full run gives none.
 */
export function planRetry(record: RunRecord | undefined, now: RunDigests): RetryPlan | undefined {
    if (record === undefined || record.inventory !== now.inventory || record.vars !== now.vars || record.playbooks !== now.playbooks) return undefined;
    if (record.failed.length > 0) return { attempt: record.attempt + 1, hosts: record.hosts, nodes: [...record.failed] };
    if (record.attempt > 0 && record.limit.length > 0) return { attempt: record.attempt, hosts: record.hosts, nodes: [...record.limit] };
    return undefined;
}

/** The command's environment for a retry (none without one): what the run script and its summariser read. */
export function retryEnvironment(plan: RetryPlan | undefined): Record<string, string> {
    if (plan === undefined) return {};
    return { RDMAKIT_RETRY_ATTEMPT: String(plan.attempt), RDMAKIT_RETRY_HOSTS: String(plan.hosts), RDMAKIT_RETRY_NODES: plan.nodes.join(",") };
}

/**
 * The record a finished run leaves, from its outcome and its environment; undefined when the run did not settle every
 * node (a playbook error, an exit status other than 0, 2 or 4: then no record, and the next run is a full one).
 * Self-contained (embedded in the summariser script, components/provision/summarise.ts).
 */
export function recordRun(
    outcome: { hosts: number; failed: Array<{ host: string }> }, settled: boolean, env: Record<string, string | undefined>,
): RunRecord | undefined {
    if (!settled || !env.RDMAKIT_INVENTORY_HASH || !env.RDMAKIT_VARS_HASH || !env.RDMAKIT_PLAYBOOKS_HASH) return undefined;
    const limit = (env.RDMAKIT_RETRY_NODES || "").split(",").filter((n) => n !== "");
    return {
        inventory: env.RDMAKIT_INVENTORY_HASH, vars: env.RDMAKIT_VARS_HASH, playbooks: env.RDMAKIT_PLAYBOOKS_HASH,
        attempt: limit.length > 0 ? Number(env.RDMAKIT_RETRY_ATTEMPT || 1) : 0,
        hosts: outcome.hosts, limit, failed: outcome.failed.map((f) => f.host),
    };
}
