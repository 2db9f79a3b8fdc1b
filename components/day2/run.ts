/**
 * One child command of a repair (aws, az, ssh, pulumi), bounded: stopped (TERM, then KILL after a grace) when it
 * runs past its time, its output capped, what it says clipped and cleaned before it is shown (a cloud CLI's or a
 * node's answer is untrusted text). A repair never waits on a child without a bound.
 */
import { spawn } from "node:child_process";
import { cleanText } from "./state";
import type { RunJson } from "./cloud";

export interface Ran { code: number | null; stdout: string; stderr: string; timedOut: boolean; missing: boolean; stopped?: NodeJS.Signals }

const GRACE_MS = 5_000;
const CAP = 8 * 1024 * 1024;
const SIGNALS: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];

/**
 * While a repair acts (`guardSignals` until its release): INT, TERM or HUP is passed on to the child that runs (the
 * cloud CLI, ssh, pulumi up, which stop as they do on Ctrl-C) and no further child is started, so the verb ends
 * after the step under way instead of leaving it behind. `stoppedBy` says which signal came.
 */
let stoppedBy: NodeJS.Signals | undefined;
const running = new Set<{ kill(sig: NodeJS.Signals): boolean }>();

export function stoppedBySignal(): NodeJS.Signals | undefined { return stoppedBy; }

export function guardSignals(): () => void {
    stoppedBy = undefined;
    const on = (sig: NodeJS.Signals): void => {
        stoppedBy ??= sig;
        for (const c of running) c.kill(sig);
    };
    for (const s of SIGNALS) process.on(s, on);
    return () => { for (const s of SIGNALS) process.off(s, on); };
}

/** Runs `argv`; resolves when it has ended (or was stopped at `timeoutMs`). `stream` copies its output to stderr as it comes. */
export function runBounded(argv: string[], o: { timeoutMs: number; env: NodeJS.ProcessEnv; cwd?: string; stream?: boolean }): Promise<Ran> {
    if (stoppedBy) return Promise.resolve({ code: null, stdout: "", stderr: "", timedOut: false, missing: false, stopped: stoppedBy });
    return new Promise((resolve) => {
        let out = "", err = "", timedOut = false, missing = false, settled = false;
        const child = spawn(argv[0], argv.slice(1), { cwd: o.cwd, env: o.env, stdio: ["ignore", "pipe", "pipe"] });
        running.add(child);
        let killer: NodeJS.Timeout | undefined;
        const timer = setTimeout(() => {
            timedOut = true;
            child.kill("SIGTERM");
            killer = setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
        }, o.timeoutMs);
        const keep = (have: string, b: Buffer): string => (have.length < CAP ? have + b.toString("utf8") : have);
        child.stdout.on("data", (b: Buffer) => { out = keep(out, b); if (o.stream) process.stderr.write(b); });
        child.stderr.on("data", (b: Buffer) => { err = keep(err, b); if (o.stream) process.stderr.write(b); });
        const done = (code: number | null): void => {
            if (settled) return;
            settled = true;
            running.delete(child);
            clearTimeout(timer);
            if (killer) clearTimeout(killer);
            resolve({ code, stdout: out, stderr: err, timedOut, missing, ...(stoppedBy ? { stopped: stoppedBy } : {}) });
        };
        child.on("error", (e) => { missing = (e as NodeJS.ErrnoException).code === "ENOENT"; err += e.message; done(null); });
        child.on("close", (code) => done(code));
        // a stopped child's own children may still hold its pipes open: once it has gone, stop waiting for them
        child.on("exit", (code) => { if (timedOut) { child.stdout.destroy(); child.stderr.destroy(); done(code); } });
    });
}

/** What a failed child said, for a message: its last lines, cleaned and clipped. Pure. */
export function said(r: Ran): string {
    const text = (r.stderr.trim() || r.stdout.trim()).split("\n").slice(-3).join(" ");
    return cleanText(text, 300);
}

/** Why a child failed, in one line: not installed, stopped at its bound, or its exit status and message. Pure. */
export function whyFailed(argv: string[], r: Ran, timeoutMs: number): string {
    const what = argv.slice(0, 3).join(" ");
    if (r.stopped) return `${what}: stopped by ${r.stopped}`;
    if (r.missing) return `${argv[0]} is not on PATH (the ${argv[0] === "aws" ? "AWS CLI v2" : argv[0] === "az" ? "Azure CLI" : argv[0]} is needed for this repair)`;
    if (r.timedOut) return `${what}: no answer within ${Math.round(timeoutMs / 1000)} s, stopped`;
    return `${what} failed (exit ${r.code}): ${said(r)}`;
}

/** A RunJson (cloud.ts) over the real CLIs: each command bounded by `timeoutMs`, its JSON answer parsed. */
export function cliJson(timeoutMs: number, env: NodeJS.ProcessEnv): RunJson {
    return async (argv) => {
        const r = await runBounded(argv, { timeoutMs, env });
        if (r.code !== 0 || r.timedOut || r.stopped) throw new Error(whyFailed(argv, r, timeoutMs));
        const text = r.stdout.trim();
        if (text === "") return undefined;
        try {
            return JSON.parse(text);
        } catch {
            throw new Error(`${argv.slice(0, 3).join(" ")}: the answer is not JSON (${cleanText(text, 80)})`);
        }
    };
}
