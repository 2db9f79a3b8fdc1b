/**
 * The validation gate's side of Slurm, pure: which nodes join the partition and which stay drained, with a
 * reason that names the component, as the scontrol commands the head node runs; and the drain states read back from
 * the head (`sinfo -R`) for `rdmakit check`, parsed as untrusted text (bounded, sanitised, attributed by node name
 * against the plan's own node list, never by what the text claims).
 * scontrol(1) `update NodeName=<list> State=RESUME | State=DRAIN Reason=<text>`; sinfo(1) `-R`, `-o` field `%n` (node
 * name), `%t` (compact state), `%E` (reason).
 */
import { hostlistChunks } from "./hostlist";

/** The longest reason the kit writes or reads back (Slurm keeps it whole; a line of `sinfo -R` stays readable). */
export const MAX_REASON = 200;

export interface GateNode {
    name: string;
    /** preflight, health and the node's nccl-tests all passed */
    ok: boolean;
    /** why not, when !ok: "health: pcie GPU 3 at x8", "slow, 31% below the others" (the component first) */
    why?: string;
}

/** Printable ASCII without quotes or backslashes, at most MAX_REASON characters. */
export function cleanReason(text: string): string {
    return text.replace(/[^ -~]/g, " ").replace(/["'\\`$]/g, "").replace(/\s+/g, " ").trim().slice(0, MAX_REASON);
}

/** The reason a failed node is drained with: `rdmakit health: <component> ...` or `rdmakit: <why>`. */
export function drainReason(why: string): string {
    const w = cleanReason(why);
    return cleanReason(w.startsWith("health:") ? `rdmakit ${w}` : `rdmakit: ${w}`);
}

/**
 * The commands the head node runs after the gate: one RESUME per hostlist chunk of the nodes that passed, one DRAIN per
 * failed node (each has its own reason). A node not in `nodes` is not touched (it stays drained as slurm.conf starts it).
 */
export function gateCommands(nodes: GateNode[]): string[] {
    const passed = nodes.filter((n) => n.ok).map((n) => n.name);
    const cmds = hostlistChunks(passed).map((list) => `scontrol update NodeName=${list} State=RESUME`);
    for (const n of nodes.filter((x) => !x.ok)) {
        cmds.push(`scontrol update NodeName=${n.name} State=DRAIN Reason="${drainReason(n.why ?? "did not pass validation")}"`);
    }
    return cmds;
}

/** What `sinfo -h -R -o '%n|%t|%E'` said of one node. */
export interface DrainState {
    node: string;
    state: string;
    reason: string;
}

/** The sinfo command whose output parseDrainStates reads. */
export const SINFO_REASONS = "sinfo -h -R -o '%n|%t|%E'";

/**
 * `sinfo -h -R -o '%n|%t|%E'` from the head node → the drained/down nodes the plan knows, each once; lines about other
 * names, malformed lines and anything past `maxLines` are dropped; states and reasons cleaned and bounded.
 */
export function parseDrainStates(text: string, planNodes: readonly string[], maxLines = 100_000): DrainState[] {
    const known = new Set(planNodes);
    const seen = new Map<string, DrainState>();
    for (const line of text.slice(0, 64 * 1024 * 1024).split("\n").slice(0, maxLines)) {
        const m = /^([A-Za-z0-9._-]{1,128})\|([a-z*~#!%$@^-]{1,16})\|(.*)$/.exec(line.trimEnd());
        if (!m || !known.has(m[1]) || seen.has(m[1])) continue;
        seen.set(m[1], { node: m[1], state: m[2], reason: cleanReason(m[3]) });
    }
    return planNodes.filter((n) => seen.has(n)).map((n) => seen.get(n)!);
}
