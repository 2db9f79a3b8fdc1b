/**
 * `rdmakit status --stack <name>`: what the stack says about the running cluster (nodes, their verdicts and how old
 * they are, failed and drained nodes with the reasons, the scheduler) and what a repair would do now. Pure
 * formatting of the operating state and the repair decision.
 */
import type { OperatingState } from "./state";
import { type RepairDecision, formatDecision } from "./repair";

/** "3h 12m ago", from an ISO time; "time unknown" when absent or unreadable. Pure. */
export function age(at: string | undefined, now: Date): string {
    const t = at ? Date.parse(at) : NaN;
    if (Number.isNaN(t)) return "time unknown";
    const s = Math.max(0, Math.round((now.getTime() - t) / 1000));
    if (s < 60) return `${s}s ago`;
    const m = Math.floor(s / 60);
    if (m < 60) return `${m}m ago`;
    const h = Math.floor(m / 60);
    return h < 48 ? `${h}h ${m % 60}m ago` : `${Math.floor(h / 24)}d ago`;
}

const HEALTH_WORD = { healthy: "healthy", failing: "FAILING", incomplete: "not checked", unreadable: "UNREADABLE" } as const;

/** The status text. Pure. */
export function formatStatus(state: OperatingState, from: string, decision: RepairDecision, now: Date): string {
    const out: string[] = [`stack ${state.stack} (${state.fabric}), read from ${from}`];
    const e = state.entry;
    out.push(`way in: ${!e ? "direct" : e.kind === "ssm" ? `AWS Session Manager (${e.region})` : `bastion ${e.user}@${e.address}${e.hostKey ? " (host key pinned)" : ""}`}` +
        `; node host key ${state.nodeHostKey ? `pinned (${state.nodeHostKey.slice(0, 24)}…)` : "not pinned by the stack (bare metal: your known_hosts)"}`);
    const v = state.validation;
    out.push(v ? `last validation: ${v.verdict}, ${age(v.at, now)}${v.busbwGBps !== undefined ? `, all-node busbw ${v.busbwGBps} GB/s` : ""}`
        : "last validation: none in the stack (provisioning or validation off, or not run yet)");
    const drained = state.nodes.filter((n) => n.drained);
    const h = state.head;
    out.push(`scheduler: ${state.scheduler.type === "none" ? "none" : `${state.scheduler.type}, ${drained.length} drained`}` +
        (h ? `; head node ${h.name} at ${h.address}${h.instanceId ? ` (${h.instanceId})` : ""}, ${h.user}, host key ${h.hostKey ? "pinned" : "not pinned"}` +
            ` (not a GPU node: never validated or repaired; rdmakit ssh --stack ${state.stack} ${h.name})` : ""));
    const rows = state.nodes.map((n) => [
        n.name, n.address, n.instanceId ?? "-",
        n.excluded ? "excluded" : n.health ? HEALTH_WORD[n.health.verdict] : "-",
        n.excluded ? "-" : n.nccl ?? "-",
        [n.softwareFailed ? `software failed at ${n.softwareFailed}` : "", n.drained ? `drained: ${n.drained.reason}` : ""].filter(Boolean).join("; "),
    ]);
    const head = ["node", "address", "instance", "health", "nccl", "state"];
    // widths and rows by a loop: a spread of one argument per node overflowed the stack at ~125k nodes
    const w = head.map((h, i) => rows.reduce((m, r) => Math.max(m, r[i].length), h.length));
    const line = (r: string[]): string => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(w[i]))).join("  ").trimEnd();
    out.push("", line(head));
    for (const r of rows) out.push(line(r));
    for (const n of state.nodes) {
        for (const f of n.health?.findings ?? []) out.push(`  ${n.name}: ${f.component}: ${f.message}${f.evidence ? ` [${f.evidence}]` : ""}`);
    }
    const recent = (state.replacements ?? []).slice(-5).reverse();
    if (recent.length > 0) {
        out.push("", `replaced (newest first, ${recent.length} of ${state.replacements!.length} kept):`);
        for (const r of recent) out.push(`  ${r.node}: ${r.fromInstance ?? "?"} → ${r.toInstance ?? "?"}, ${age(r.at, now)}`);
    }
    out.push("", formatDecision(decision, state).trimEnd());
    return out.join("\n") + "\n";
}
