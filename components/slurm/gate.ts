/**
 * The validation gate's side of Slurm, pure: which nodes join the partition and which stay drained, with a
 * reason that names the component, as the scontrol commands the head node runs; and the drain states read back from
 * the head (`sinfo -R`) for `rdmakit check`, parsed as untrusted text (bounded, sanitised, attributed by node name
 * against the plan's own node list, never by what the text claims).
 * scontrol(1) `update NodeName=<list> State=RESUME | State=DRAIN Reason=<text>`; sinfo(1) `-R`, `-o` field `%n` (node
 * name), `%t` (compact state), `%E` (reason).
 */
import { hostlistChunks } from "./hostlist";
import { MAX_SINFO_LINE, SinfoError, sinfoLines } from "./sinfo";

/** The longest reason the kit writes or reads back (Slurm keeps it whole; a line of `sinfo -R` stays readable). */
export const MAX_REASON = 200;

export interface GateNode {
    name: string;
    /** preflight, health and the node's nccl-tests all passed */
    ok: boolean;
    /** why not, when !ok: "health: pcie GPU 3 at x8", "slow, 31% below the others" (the component first) */
    why?: string;
}

/**
 * Printable ASCII without quotes, backslashes or braces, at most MAX_REASON characters. No brace: a reason carries a
 * node's own text (its preflight `seen`) into slurm-gate.json, which Ansible reads as extra variables and templates, so
 * a `{{ lookup(...) }}` there would run on the controller; without `{` Jinja sees no delimiter (`{{`, `{%`, `{#`).
 * source: Jinja "Template Designer Documentation" (default delimiters); docs.ansible.com
 * playbook_guide/playbooks_advanced_syntax.html ("Unsafe or raw strings": variables are templated unless marked).
 */
export function cleanReason(text: string): string {
    return text.replace(/[^ -~]/g, " ").replace(/["'\\`${}]/g, "").replace(/\s+/g, " ").trim().slice(0, MAX_REASON);
}

/** The reason a failed node is drained with: `rdmakit health: <component> ...` or `rdmakit: <why>`. */
export function drainReason(why: string): string {
    const w = cleanReason(why);
    return cleanReason(w.startsWith("health:") ? `rdmakit ${w}` : `rdmakit: ${w}`);
}

/**
 * The commands the head node runs after the gate: one RESUME per hostlist chunk of the nodes that passed, one DRAIN per
 * failed node (each has its own reason). A node not in `nodes` is not touched (it stays drained as the role drained it before its first slurmd start).
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

/**
 * The sinfo command whose output parseDrainStates reads. `%n` (NodeHost) and not `%N`: a `%n` field sets sinfo's hostnames
 * match flag, so a node whose host name is not yet in a record starts a record of its own and every line names one host
 * (src/sinfo/sinfo.c _match_node_data, src/sinfo/opts.c `{"NodeHost", 'n', ..., MATCH_FLAG_HOSTNAMES}` at
 * SchedMD/slurm slurm-24-05-0-1 .. slurm-25-11-7-1; `match_flags.hostnames_flag` at slurm-23-11-0-1), where `%N` would
 * merge nodes of one state and reason into a ranged `gpu[01-03]`. NodeHost is the NodeName here: render.ts writes no
 * NodeHostname.
 */
export const SINFO_REASONS = "sinfo -h -R -o '%n|%t|%E'";

/** What parseDrainStates read: the plan's drained or down nodes, and how many lines it could not read. */
export interface DrainRead {
    states: DrainState[];
    /** lines longer than MAX_SINFO_LINE or not `name|state|reason` (sinfo -h prints none such) */
    unread: number;
}

/**
 * `sinfo -h -R -o '%n|%t|%E'` from the head node → the drained/down nodes the plan knows, each once; lines about other
 * names are dropped, malformed or over-long lines counted, anything past `maxLines` not read; states and reasons
 * cleaned and bounded. Linear in the text; over MAX_SINFO_CHARS it throws SinfoError (sinfo.ts), never reads a part.
 * `%t` is Slurm's compact state lowercased (sinfo/print.c _print_state_compact, node_state_string_compact in
 * src/common/slurm_protocol_defs.c, 22.05 to 25.11; 25.05 adds "ext"): a word, some with "_" ("pow_dn", "canc_r",
 * "powered_dn", "powering_up", 11 characters), "alloc+" (jobs completing), "?" (a state it cannot name), then at most
 * one flag of * ~ # ! % $ @ ^ - (sinfo(1) NODE STATE CODES).
 */
export function readDrainStates(text: string, planNodes: readonly string[], maxLines = 100_000): DrainRead {
    const known = new Set(planNodes);
    const seen = new Map<string, DrainState>();
    let n = 0, unread = 0;
    for (const line of sinfoLines(text, SINFO_REASONS)) {
        if (n++ >= maxLines) break;
        const m = line === undefined ? null : /^([A-Za-z0-9._-]{1,128})\|([a-z_+?*~#!%$@^-]{1,16})\|(.*)$/.exec(line.trimEnd());
        if (!m) { if (line === undefined || line.trim()) unread++; continue; }
        if (!known.has(m[1]) || seen.has(m[1])) continue;
        seen.set(m[1], { node: m[1], state: m[2], reason: cleanReason(m[3]) });
    }
    return { states: planNodes.filter((x) => seen.has(x)).map((x) => seen.get(x)!), unread };
}

/** readDrainStates' nodes only (it throws SinfoError the same way). */
export function parseDrainStates(text: string, planNodes: readonly string[], maxLines = 100_000): DrainState[] {
    return readDrainStates(text, planNodes, maxLines).states;
}

/** The reservation validation's all-node run holds its nodes under: root only, until the gate deletes it. */
export const VALIDATION_RESERVATION = "rdmakit-validate";

/** What the gate reads of one validation run (nccl-report's inputs, already graded). */
export interface GateInputs {
    /** the run's nodes: Slurm node names are the inventory host names (plan.scheduler.nodeNames) */
    nodes: readonly string[];
    /** per-node preflight results; undefined when none were given (the run did not get that far: every node stays out) */
    preflight?: ReadonlyArray<{ host: string; checks: ReadonlyArray<{ check: string; ok: boolean; seen?: unknown }> }>;
    /** each node's health verdict with its findings (components/health), when the captures were graded */
    health?: ReadonlyArray<{ node: string; verdict: string; findings: ReadonlyArray<{ component: string; message: string }> }>;
    /** nodes the health grade fails (the report's health.badNodes: it is what fails the report) */
    healthBad?: readonly string[];
    /** single-node nccl-tests runs by host: pass, and the first failed verdict's words when not */
    single?: ReadonlyMap<string, { pass: boolean; why?: string }>;
    /** the slow-node search: slow nodes with the search's reason, and suspects it could not clear */
    slow?: ReadonlyArray<{ host: string; reason: string }>;
    suspects?: readonly string[];
    /** the all-node run: absent when it did not run (no log); its first failed verdict otherwise */
    allNodes?: { pass: boolean; why?: string };
    /** nodes left out of the run because Slurm could not give them to it (validate/select.ts), with what sinfo said */
    leftOut?: ReadonlyMap<string, string>;
}

/**
 * Which nodes join the partition, pure. A node joins only when every check it took passed: its preflight, its
 * health grade, its own nccl-tests run, the slow-node search, and the all-node run it took part in. Anything missing
 * keeps it out, with the reason saying what is missing (fail closed: a node nobody has validated takes no jobs).
 * The first failure is the reason, component first: `preflight memlock: ...`, `health: pcie GPU 3 at x8`, `slow, ...`.
 */
export function gateNodes(i: GateInputs): GateNode[] {
    const pre = new Map((i.preflight ?? []).map((n) => [n.host, n]));
    const health = new Map((i.health ?? []).map((h) => [h.node, h]));
    const healthBad = new Set(i.healthBad ?? []);
    const slow = new Map((i.slow ?? []).map((s) => [s.host, s.reason]));
    const suspects = new Set(i.suspects ?? []);
    const why = (node: string): string | undefined => {
        // not validated: kept out (an operator's drain keeps its own reason: slurm-gate.sh does not drain over it)
        const away = i.leftOut?.get(node);
        if (away !== undefined) return `left out of the validation (${away})`;
        const p = pre.get(node);
        if (i.preflight === undefined) return "no preflight results: the validation run stopped before them";
        if (!p) return "no preflight result from this node";
        const bad = p.checks.find((c) => !c.ok);
        if (bad) return `preflight ${bad.check}: seen ${typeof bad.seen === "string" ? bad.seen : JSON.stringify(bad.seen ?? null)}`;
        if (healthBad.has(node)) {
            const f = health.get(node)?.findings[0];
            return f ? `health: ${f.component} ${f.message}` : `health: ${health.get(node)?.verdict ?? "failing"}`;
        }
        if (i.single !== undefined) {
            const s = i.single.get(node);
            if (!s) return "no single-node nccl-tests log from this node";
            if (!s.pass) return `nccl-tests single-node run failed${s.why ? `: ${s.why}` : ""}`;
        }
        const sl = slow.get(node);
        if (sl !== undefined) return `slow, ${sl}`;
        if (suspects.has(node)) return "nccl-tests: in a slow pair the search could not clear";
        if (i.allNodes === undefined) return "the all-node nccl-tests run did not run";
        if (!i.allNodes.pass) return `the all-node nccl-tests run failed${i.allNodes.why ? `: ${i.allNodes.why}` : ""}`;
        return undefined;
    };
    return i.nodes.map((name) => {
        const w = why(name);
        return w === undefined ? { name, ok: true } : { name, ok: false, why: w };
    });
}

/**
 * The gate as playbooks/slurm-gate.yml runs it on the head node (the nccl_validate role's slurm-gate.sh): the passed
 * nodes to resume, each failed node with its reason (cleaned: it becomes one argument of scontrol, never a shell word;
 * no tab, the plan file's separator), and the validation reservation to delete. Pure.
 */
export interface GateVars {
    slurm_gate_resume: string[];
    slurm_gate_drain: Array<{ node: string; reason: string }>;
    slurm_gate_reservation: string;
}

export function gateVars(nodes: readonly GateNode[]): GateVars {
    return {
        slurm_gate_resume: nodes.filter((n) => n.ok).map((n) => n.name),
        slurm_gate_drain: nodes.filter((n) => !n.ok).map((n) => ({ node: n.name, reason: drainReason(n.why ?? "did not pass validation") })),
        slurm_gate_reservation: VALIDATION_RESERVATION,
    };
}

/** `rdmakit check`'s Slurm line for an answer over sinfo.ts's bounds, in the text or in its file. */
export function drainStatesNotRead(head: string, e: SinfoError): string {
    return `Slurm: the drain states from ${head} were not read (${e.message})\n`;
}

/**
 * `rdmakit check`'s Slurm lines: the drained and down nodes with their reasons, or none; unread when `text` is undefined
 * or over the bound (sinfo.ts), with what was not read.
 */
export function formatDrainStates(text: string | undefined, nodes: readonly string[], head: string): string {
    if (text === undefined) return `Slurm: the drain states could not be read from ${head} (sinfo -R; see the Ansible log)\n`;
    let got: DrainRead;
    try { got = readDrainStates(text, nodes); } catch (e) {
        if (e instanceof SinfoError) return drainStatesNotRead(head, e);
        throw e;
    }
    const { states, unread } = got;
    const notRead = unread ? `\n  ${unread} line(s) not read: longer than ${MAX_SINFO_LINE} characters or not name|state|reason` : "";
    if (states.length === 0) return `Slurm (sinfo -R on ${head}): no node drained or down${notRead}\n`;
    let w = 0;
    for (const s of states) w = Math.max(w, s.node.length);
    return [`Slurm (sinfo -R on ${head}): ${states.length} of ${nodes.length} node(s) drained or down`,
        ...states.map((s) => `  ${s.node.padEnd(w)}  ${s.state.padEnd(7)} ${s.reason}`)].join("\n") + notRead + "\n";
}
