/**
 * Runs a verb's long child (a bash run script) so that a signal to the verb reaches it: INT, TERM and HUP are passed
 * on to the child, whose own traps stop its children (the fan-out, ansible-playbook, ssh) and its ssh-agent, and the
 * verb returns only after the child has ended. spawnSync cannot do this: while it waits, the signal ends Node at
 * once and the child, its agent (with the key loaded) and the verb's key socket are left behind.
 */
import { spawn } from "child_process";

export interface ChildRun {
    status: number | null;
    stdout: string;
    stderr: string;
    /** the signal the verb received and passed on, if any */
    interrupted?: NodeJS.Signals;
    error?: Error;
}

const FORWARDED: NodeJS.Signals[] = ["SIGINT", "SIGTERM", "SIGHUP"];
/** A child that has not ended this long after the signal was passed on is killed. */
const GRACE_MS = 10_000;

/** Keeps at most `cap` bytes of a stream; past that, says how much was left out. */
function capped(cap: number): { push(b: Buffer): void; text(): string } {
    const parts: Buffer[] = [];
    let kept = 0, dropped = 0;
    return {
        push(b) {
            const room = cap - kept;
            if (room > 0) { parts.push(b.subarray(0, room)); kept += Math.min(room, b.length); }
            dropped += Math.max(0, b.length - Math.max(room, 0));
        },
        text() { return Buffer.concat(parts).toString("utf8") + (dropped > 0 ? `\n[${dropped} more bytes left out]\n` : ""); },
    };
}

/** Runs `cmd args` with `input` on stdin; resolves when it has ended, whatever signal came meanwhile. */
export function runForwardingSignals(cmd: string, args: string[], opts: { cwd: string; env: NodeJS.ProcessEnv; input: string; maxBytes: number }): Promise<ChildRun> {
    return new Promise((resolve) => {
        const out = capped(opts.maxBytes), err = capped(opts.maxBytes);
        let interrupted: NodeJS.Signals | undefined;
        let killer: NodeJS.Timeout | undefined;
        const child = spawn(cmd, args, { cwd: opts.cwd, env: opts.env, stdio: ["pipe", "pipe", "pipe"] });
        const onSignal = (sig: NodeJS.Signals) => {
            interrupted ??= sig;
            child.kill(sig);
            killer ??= setTimeout(() => child.kill("SIGKILL"), GRACE_MS);
        };
        for (const s of FORWARDED) process.on(s, onSignal);
        let finished = false;
        const done = (r: Omit<ChildRun, "stdout" | "stderr" | "interrupted">) => {
            if (finished) return;
            finished = true;
            for (const s of FORWARDED) process.off(s, onSignal);
            if (killer) clearTimeout(killer);
            resolve({ ...r, stdout: out.text(), stderr: err.text(), ...(interrupted ? { interrupted } : {}) });
        };
        child.stdout.on("data", (b: Buffer) => out.push(b));
        child.stderr.on("data", (b: Buffer) => err.push(b));
        child.stdin.on("error", () => { /* the child may end before reading its input */ });
        child.on("error", (e) => done({ status: null, error: e }));
        child.on("close", (status) => done({ status }));
        child.stdin.end(opts.input);
    });
}

/** The exit status a shell gives a run ended by `sig`: 128 + its number. */
export function signalStatus(sig: NodeJS.Signals): number {
    return 128 + ({ SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as Record<string, number>)[sig];
}
