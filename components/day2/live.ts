/**
 * `rdmakit repair --stack <name>` acting (not --dry-run): the decision of repair.ts carried out by execute.ts with
 * the real operations, each bounded in time:
 * - the cloud (cloud.ts) through the user's own `aws` / `az` login, each call stopped after CALL_TIMEOUT_MS, the
 *   wait for a replacement bounded by --wait-minutes;
 * - drain / resume through Slurm (`scontrol update` run with sudo on a node that passed, over the stack's pinned
 *   hops): root on any node of the cluster may change a node's state, munge vouches for it;
 * - provisioning the new instance: `pulumi up --stack <name>` in this checkout (the program finds the group's new
 *   instance, pins its host key, runs the node software and validation), bounded by --up-minutes;
 * - the proof: `rdmakit check --stack <name> --nodes <new>,<peer>`: the health gate, preflight, single-node and the
 *   pairwise nccl-tests run against a node that passed, with the deployed spec's thresholds.
 * Only a node whose proof passes is resumed and counted repaired.
 *
 * Confirmation: a repair that changes anything (drain or replace) goes ahead only with --yes or an interactive
 * "yes"; without a terminal and without --yes it is refused (exit 2) before anything is touched.
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { awsCloudOps, azureCloudOps, type RunJson, type WaitOptions } from "./cloud";
import type { CloudOps, NodeOps, Outcome } from "./execute";
import { readState } from "./read";
import { cliJson, runBounded, whyFailed } from "./run";
import { sshArgs, stackKnownHosts } from "./ssh";
import { cleanText, type OperatingState } from "./state";
import type { RepairDecision } from "./repair";

/** One cloud CLI call (a describe, a set-instance-health, an az rest): 2 minutes at most. */
export const CALL_TIMEOUT_MS = 120_000;
/** One scontrol over ssh. */
export const SSH_TIMEOUT_MS = 60_000;
/** How often the replacement is looked for. */
export const POLL_MS = 20_000;
/** The default wait for a replacement in service (an 8-GPU instance's launch and boot take minutes; --wait-minutes). */
export const DEFAULT_WAIT_MINUTES = 30;
/** The default bound of the `pulumi up` that provisions the replacement (node software and validation). */
export const DEFAULT_UP_MINUTES = 120;

export type Confirm = "go" | "ask" | "refuse";

/** Whether a repair may act: nothing to change → go; --yes → go; a terminal → ask; else refuse. Pure. */
export function confirmation(d: RepairDecision, yes: boolean, interactive: boolean): Confirm {
    if (!d.actions.some((a) => a.kind !== "report")) return "go";
    if (yes) return "go";
    return interactive ? "ask" : "refuse";
}

/** The exit status of a repair run: 0 when every failing node was repaired (or none failed), else 1. Pure. */
export function repairStatus(outcomes: Outcome[]): 0 | 1 {
    return outcomes.every((o) => o.outcome === "rejoined") ? 0 : 1;
}

/** One line per outcome. Pure. */
export function formatOutcomes(outcomes: Outcome[]): string {
    if (outcomes.length === 0) return "";
    const lines = outcomes.map((o) => {
        switch (o.outcome) {
            case "rejoined": return `  ${o.node}: replaced (${o.from} → ${o.to}), proven, resumed`;
            case "failed-after-replacement": return `  ${o.node}: replaced (${o.from} → ${o.to}) but the replacement failed its proof: ${o.why}; left drained, not replaced again`;
            case "replacement-failed": return `  ${o.node}: not replaced: ${o.why}`;
            case "drained": return `  ${o.node}: drained (${o.reason})`;
            case "reported": return `  ${o.node}: reported, needs a person (${o.reason}: ${o.why})`;
        }
    });
    return ["repair outcome:", ...lines].join("\n") + "\n";
}

/** A shell word for a remote command line (ssh joins its arguments for the remote shell). Pure. */
export function shellWord(s: string): string {
    return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The scontrol line that drains or resumes a node. source: Slurm scontrol(1), `update NodeName=... State=DRAIN
 * Reason=...` (a reason is required to drain) and `State=RESUME`; https://slurm.schedmd.com/scontrol.html. Pure.
 */
export function scontrolLine(node: string, change: { drain: string } | "resume"): string {
    return change === "resume"
        ? `sudo -n scontrol update NodeName=${node} State=RESUME`
        : `sudo -n scontrol update NodeName=${node} State=DRAIN Reason=${shellWord(change.drain)}`;
}

type Verdict = { ok: boolean; why?: string; stdout?: string };

export interface LiveDeps {
    cwd: string;
    env: NodeJS.ProcessEnv;
    /** the cloud CLIs; default: the real ones, bounded (run.ts cliJson) */
    run?: RunJson;
    wait?: WaitOptions;
    /** runs one command line on a node over ssh; default: the real ssh with the stack's pinned keys, bounded */
    ssh?: (node: string, line: string) => Promise<Verdict>;
    /** `pulumi up` of the stack; default: the real CLI in `cwd`, bounded */
    up?: (stack: string) => Promise<Verdict>;
    /** the proof: health + nccl-tests on the two nodes; default: rdmakit check */
    check?: (stack: string, nodes: string[]) => Promise<Verdict>;
}

/** The cloud's side for the stack's group; none on bare metal. */
export function cloudOpsFor(state: OperatingState, run: RunJson, wait: WaitOptions): CloudOps | undefined {
    const g = state.group;
    if (!g || state.fabric === "roce") return undefined;
    return g.cloud === "aws" ? awsCloudOps(g, run, wait) : azureCloudOps(g, state.nodes.length, run, wait);
}

/**
 * The cluster's side. Node names are looked up again after `pulumi up` by instance id (the new instance's and the
 * peer's), so the proof runs on the machines meant even where the stack named them in another order.
 */
export function liveNodeOps(stack: string, before: OperatingState, deps: Required<Pick<LiveDeps, "ssh" | "up" | "check">> & { reread: () => OperatingState }): NodeOps {
    const freshIds = new Map<string, string>();
    let after: OperatingState | undefined;
    // scontrol runs on a node that passed, which the repair does not touch
    const via = before.nodes.find((n) => !n.excluded && !n.drained && n.health?.verdict === "healthy" && n.nccl === "ok")?.name;
    const scontrol = async (line: string): Promise<void> => {
        if (!via) throw new Error("no node that passed to run scontrol on");
        const r = await deps.ssh(via, line);
        if (!r.ok) throw new Error(`scontrol on ${via}: ${r.why ?? "failed"}`);
    };
    const nameNow = (instanceId: string | undefined, fallback: string): string =>
        (instanceId ? after?.nodes.find((n) => n.instanceId === instanceId)?.name : undefined) ?? fallback;
    return {
        drain: (node, reason) => scontrol(scontrolLine(node, { drain: reason })),
        resume: (node) => scontrol(scontrolLine(nameNow(freshIds.get(node), node), "resume")),
        async provision(node, address, instanceId) {
            freshIds.set(node, instanceId);
            const up = await deps.up(stack);
            try {
                after = deps.reread();
            } catch (e) {
                return { ok: false, why: `the stack after pulumi up cannot be read: ${(e as Error).message}` };
            }
            const now = after.nodes.find((n) => n.instanceId === instanceId);
            if (!now) return { ok: false, why: `pulumi up ${up.ok ? "ran" : `failed (${up.why})`} but the stack lists no node on the new instance ${instanceId} (${address})` };
            if (now.softwareFailed) return { ok: false, why: `its node software failed at ${now.softwareFailed}` };
            return { ok: true };
        },
        async prove(node, peer) {
            const fresh = nameNow(freshIds.get(node), node);
            const pair = nameNow(before.nodes.find((n) => n.name === peer)?.instanceId, peer);
            return deps.check(stack, [fresh, pair]);
        },
    };
}

/** ssh to `node` with the stack's pinned keys (a temporary known_hosts, removed after), batch mode, bounded. */
export function realSsh(state: OperatingState, env: NodeJS.ProcessEnv): (node: string, line: string) => Promise<Verdict> {
    return async (node, line) => {
        const text = stackKnownHosts(state);
        const dir = text !== undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-repair-")) : undefined;
        try {
            const file = dir ? path.join(dir, "known_hosts") : undefined;
            if (file) fs.writeFileSync(file, text as string, { mode: 0o600 });
            // BatchMode: no password or passphrase prompt can hold the repair; the key comes from the user's agent
            const argv = ["ssh", "-o", "BatchMode=yes", "-o", "ConnectTimeout=20", ...sshArgs(state, node, file, [line])];
            const r = await runBounded(argv, { timeoutMs: SSH_TIMEOUT_MS, env });
            return r.code === 0 && !r.timedOut && !r.stopped ? { ok: true, stdout: r.stdout } : { ok: false, why: whyFailed(argv, r, SSH_TIMEOUT_MS) };
        } finally {
            if (dir) fs.rmSync(dir, { recursive: true, force: true });
        }
    };
}

/** `pulumi up` of the stack in `cwd`, its progress on stderr, bounded. */
export function realUp(cwd: string, env: NodeJS.ProcessEnv, minutes: number): (stack: string) => Promise<Verdict> {
    return async (stack) => {
        const argv = ["pulumi", "up", "--stack", stack, "--yes", "--skip-preview", "--non-interactive"];
        const timeoutMs = minutes * 60_000;
        const r = await runBounded(argv, { timeoutMs, env, cwd, stream: true });
        return r.code === 0 && !r.timedOut && !r.stopped ? { ok: true } : { ok: false, why: whyFailed(argv, r, timeoutMs) };
    };
}

/** The proof through `rdmakit check --stack --nodes` (validate/check.ts), with the key as check takes it. */
export function realCheck(cwd: string, env: NodeJS.ProcessEnv, sshKey: string | undefined): (stack: string, nodes: string[]) => Promise<Verdict> {
    return async (stack, nodes) => {
        const { runCheck } = await import("../validate/check");
        const r = await runCheck({ stack, nodes: nodes.join(","), ...(sshKey ? { sshKey } : {}) }, cwd, env);
        process.stderr.write(r.stderr + r.stdout);
        const last = cleanText(r.stdout.trim().split("\n").slice(-2).join(" "), 200);
        return r.code === 0 ? { ok: true } : { ok: false, why: `rdmakit check --nodes ${nodes.join(",")} exit ${r.code}${last ? `: ${last}` : ""}` };
    };
}

/** The defaults for what `deps` leaves out. */
export function liveDeps(stack: string, state: OperatingState, deps: LiveDeps, o: { waitMinutes: number; upMinutes: number; sshKey?: string }):
    Required<Omit<LiveDeps, "cwd" | "env">> & { reread: () => OperatingState } {
    return {
        run: deps.run ?? cliJson(CALL_TIMEOUT_MS, deps.env),
        wait: deps.wait ?? { intervalMs: POLL_MS, timeoutMs: o.waitMinutes * 60_000 },
        ssh: deps.ssh ?? realSsh(state, deps.env),
        up: deps.up ?? realUp(deps.cwd, deps.env, o.upMinutes),
        check: deps.check ?? realCheck(deps.cwd, deps.env, o.sshKey),
        reread: () => readState({ stack }, deps.cwd, deps.env).state,
    };
}
