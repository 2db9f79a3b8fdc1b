/**
 * `rdmakit scale --stack <name> --nodes N`: the scale plan of scale.ts, shown (--dry-run) or carried out up to the
 * point where `pulumi up` with the new count takes over. Growing needs nothing beforehand: it prints what to change.
 * Shrinking, in order: the chosen nodes are drained (scontrol on a node that stays), the verb waits until the
 * scheduler says they run no job (DRAINED, not DRAINING; bounded by --drain-minutes), and only then releases them:
 * AWS takes their scale-in protection off (the group may terminate only those, cluster.ts), Azure deletes those
 * instances by id. A wait that runs out releases nothing (exit 1). Then it prints the `pulumi up` to run.
 *
 * sinfo(1): `-h` no header, `-N` one line per node, `-n` the nodes, `-o "%N %T"` name and extended state, where
 * "drained" is a node no job runs on that takes none, "draining" one still running a job.
 * source: https://slurm.schedmd.com/sinfo.html (NODE STATE CODES: DRAINED, DRAINING).
 * AWS: SetInstanceProtection takes at most 50 instance ids a call (API reference, InstanceIds); IAM
 * autoscaling:SetInstanceProtection. source: https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_SetInstanceProtection.html
 */
import { COMPUTE_API_VERSION, type RunJson } from "./cloud";
import { scontrolLine } from "./live";
import type { ScalePlan } from "./scale";
import type { OperatingState } from "./state";
import { SinfoError, sinfoLines } from "../slurm/sinfo";

/** How often the drain is looked at. */
export const DRAIN_POLL_MS = 30_000;
export const DEFAULT_DRAIN_MINUTES = 60;
const PROTECTION_BATCH = 50;

export interface ScaleDeps {
    run: RunJson;
    /** one command line on a node over ssh, its output */
    ssh: (node: string, line: string) => Promise<{ ok: boolean; why?: string; stdout?: string }>;
    sleep: (ms: number) => Promise<void>;
    drainTimeoutMs: number;
    intervalMs?: number;
}

/**
 * The node states sinfo printed (`%N %T` lines), for the nodes asked about; others, and a state that is not a word of
 * sinfo's state codes, ignored. Pure, linear in the text; over MAX_SINFO_CHARS it throws SinfoError (slurm/sinfo.ts).
 */
export function drainedStates(text: string, nodes: string[]): Map<string, string> {
    const asked = new Set(nodes);
    const m = new Map<string, string>();
    for (const line of sinfoLines(text, "sinfo -N -o '%N %T'")) {
        if (line === undefined) continue;
        const [name, state] = line.trim().split(/\s+/);
        // sinfo(1) NODE STATE CODES: words, some with "_" (POWERED_DOWN, REBOOT_ISSUED: node_state_string in slurm_protocol_defs.c), `+` between flags, a suffix of * ~ # ! % $ @ ^ -
        if (name && state && asked.has(name) && /^[A-Za-z_+]{1,40}[*~#!%$@^-]*$/.test(state)) m.set(name, state.toLowerCase().replace(/[*~#!%$@^-]+$/, ""));
    }
    return m;
}

/** What the shrink releases, as CLI calls. Pure. */
export function releaseCalls(state: OperatingState, ids: string[]): string[][] {
    const g = state.group;
    if (!g) return [];
    if (g.cloud === "aws") {
        const calls: string[][] = [];
        for (let i = 0; i < ids.length; i += PROTECTION_BATCH) {
            calls.push(["aws", "autoscaling", "set-instance-protection", "--no-protected-from-scale-in", "--auto-scaling-group-name", g.autoScalingGroup,
                "--instance-ids", ...ids.slice(i, i + PROTECTION_BATCH), "--region", g.region, "--output", "json"]);
        }
        return calls;
    }
    const base = `https://management.azure.com/subscriptions/{subscriptionId}/resourceGroups/${encodeURIComponent(g.resourceGroup)}` +
        `/providers/Microsoft.Compute/virtualMachineScaleSets/${encodeURIComponent(g.scaleSet)}`;
    return [["az", "rest", "--method", "post", "--url", `${base}/delete?api-version=${COMPUTE_API_VERSION}`, "--body", JSON.stringify({ instanceIds: ids })]];
}

/** Carries out a shrink: drain, wait, release. Resolves to the lines to print and the exit status. */
export async function shrink(state: OperatingState, plan: Extract<ScalePlan, { kind: "shrink" }>, want: number, deps: ScaleDeps): Promise<{ code: 0 | 1; lines: string[] }> {
    const names = plan.remove.map((r) => r.node);
    const lines: string[] = [];
    if (!state.group) return { code: 1, lines: [`bare metal: take ${names.join(", ")} out of roce.hosts and run pulumi up; nothing to release here`] };
    const ids = plan.remove.map((r) => r.instanceId);
    if (ids.some((x) => !x)) return { code: 1, lines: ["the stack has no instance id for every node to go: nothing was released"] };
    if (state.scheduler.type !== "none") {
        const via = state.nodes.find((n) => !names.includes(n.name) && !n.excluded)?.name;
        if (!via) return { code: 1, lines: ["no node stays to run scontrol on: nothing was released"] };
        for (const n of names) {
            const r = await deps.ssh(via, scontrolLine(n, { drain: "rdmakit scale-in" }));
            if (!r.ok) return { code: 1, lines: [`drain ${n}: ${r.why ?? "failed"}; nothing was released`] };
            lines.push(`drained ${n}`);
        }
        const interval = deps.intervalMs ?? DRAIN_POLL_MS;
        for (let waited = 0; ; waited += interval) {
            const r = await deps.ssh(via, `sinfo -h -N -n ${names.join(",")} -o '%N %T'`);
            let states = new Map<string, string>(), why = r.why;
            try { if (r.ok) states = drainedStates(r.stdout ?? "", names); } catch (e) { if (!(e instanceof SinfoError)) throw e; why = e.message; }
            const busy = names.filter((n) => states.get(n) !== "drained");
            if (busy.length === 0) break;
            if (waited >= deps.drainTimeoutMs) {
                return { code: 1, lines: [...lines, `still running jobs after ${Math.round(deps.drainTimeoutMs / 60_000)} min: ` +
                    busy.map((n) => `${n} (${states.get(n) ?? (why ?? "not listed")})`).join(", ") + "; nothing was released (run again later, or --drain-minutes)"] };
            }
            await deps.sleep(interval);
        }
        lines.push(`${names.join(", ")} run no job`);
    }
    for (const call of releaseCalls(state, ids as string[])) {
        try {
            await deps.run(call);
        } catch (e) {
            return { code: 1, lines: [...lines, `release failed: ${(e as Error).message}`] };
        }
    }
    lines.push(state.group.cloud === "aws" ? `scale-in protection taken off ${ids.join(" ")}` : `deleted instances ${ids.join(" ")} of ${state.group.scaleSet}`);
    lines.push(`now set cluster.nodes: ${want} in Pulumi.${state.stack}.yaml and run pulumi up --stack ${state.stack}` +
        (state.group.cloud === "aws" ? " (the group terminates only the released nodes)" : ""));
    return { code: 0, lines };
}

/** The plan as text. Pure. */
export function formatScale(state: OperatingState, want: number, plan: ScalePlan): string {
    if (plan.kind === "none") return `scale: ${state.stack} has ${want} nodes already; nothing to do\n`;
    if (plan.kind === "grow") {
        return `scale ${state.nodes.length} → ${want}: set cluster.nodes: ${want} in Pulumi.${state.stack}.yaml and run pulumi up --stack ${state.stack}; ` +
            `the ${plan.add} new node(s) are provisioned and get the health gate, then one all-node run\n`;
    }
    return [`scale ${state.nodes.length} → ${want}: ${plan.remove.map((r) => `${r.node} (${r.why})`).join(", ")} go`, ...plan.steps.map((s) => `  ${s}`)].join("\n") + "\n";
}
