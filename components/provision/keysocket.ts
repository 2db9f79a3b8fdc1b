/**
 * How the SSH private key reaches a run without being one of the command's inputs: the Pulumi program (which holds the
 * key in memory as a config secret anyway) serves it on a Unix socket in a private folder for as long as the
 * deployment lasts, and the run reads it from there straight into its own ssh-agent (SSH_KEY_PRELUDE). The command's
 * inputs hold only the socket's path and the key's name, so a rotated key changes no input and re-runs nothing, and
 * the key is never in an environment (no /proc/<pid>/environ holds it), a state file or a file on disk.
 *
 * Who can read it: processes of the same user, as with ssh-agent's own socket (a 0700 folder owned by the user,
 * checked before use). A same-user process could read the program's memory just as well (ptrace), so this adds no
 * reader that did not exist.
 */
import { spawn } from "node:child_process";
import { createHash, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import { Worker } from "node:worker_threads";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";

/** The folder the sockets live in: `${TMPDIR:-/tmp}/rdmakit-<uid>` (the script side computes nothing: it gets the path). */
export function keySocketDir(): string {
    const uid = typeof process.getuid === "function" ? String(process.getuid()) : "user";
    return path.join(process.env.TMPDIR || "/tmp", `rdmakit-${uid}`);
}

/** The socket of one stack's program: stable across runs of the same stack on the same machine. */
export function keySocketPath(project: string, stack: string, dir = keySocketDir()): string {
    return path.join(dir, `${createHash("sha256").update(`${project}\0${stack}`).digest("hex").slice(0, 16)}.sock`);
}

/** Creates the folder 0700, or checks that an existing one is a folder of this user that nobody else can enter. */
export function privateDir(dir: string): void {
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    const st = fs.lstatSync(dir);
    const uid = typeof process.getuid === "function" ? process.getuid() : st.uid;
    if (!st.isDirectory() || st.uid !== uid || (st.mode & 0o077) !== 0) {
        throw new Error(`rdmakit: ${dir} must be a folder of this user with mode 0700 (it holds the SSH key socket); remove it and run again`);
    }
}

/**
 * The server, as the code of a worker thread: its own event loop answers while the main thread blocks (spawnSync in
 * `rdmakit check` and the tests) or awaits the engine (the Pulumi program). One `<name>\n` request per connection,
 * answered with that key or with nothing. Keys come in `workerData.keys` and later as `{ name, key }` messages.
 */
const SERVER_WORKER = `
const { workerData, parentPort } = require("node:worker_threads");
const fs = require("node:fs"), net = require("node:net");
const keys = new Map(Object.entries(workerData.keys));
parentPort.on("message", (m) => keys.set(m.name, m.key));
fs.rmSync(workerData.socket, { force: true });
const server = net.createServer((conn) => {
    let line = "";
    conn.setEncoding("utf8");
    conn.on("error", () => conn.destroy());
    conn.on("data", (chunk) => {
        line += chunk;
        const nl = line.indexOf("\\n");
        if (nl < 0) { if (line.length > 512) conn.destroy(); return; }
        const k = keys.get(line.slice(0, nl));
        conn.end(k === undefined ? "" : k.endsWith("\\n") ? k : k + "\\n");
    });
});
server.on("error", (e) => { Atomics.store(workerData.ready, 0, 2); Atomics.notify(workerData.ready, 0); throw e; });
server.listen(workerData.socket, () => { Atomics.store(workerData.ready, 0, 1); Atomics.notify(workerData.ready, 0); });
`;

/** A running key server on `socket`; `add` serves one more key; `close` stops it and removes the socket. */
export class KeyServer {
    private readonly worker: Worker;

    /** Starts the server and waits (blocking, at most 5 s) until it listens. */
    constructor(public readonly socket: string, keys: Record<string, string> = {}) {
        privateDir(path.dirname(socket));
        const ready = new Int32Array(new SharedArrayBuffer(4));
        this.worker = new Worker(SERVER_WORKER, { eval: true, workerData: { socket, keys, ready } });
        // the deployment's pending requests keep the program alive while commands run; the server must not
        this.worker.unref();
        Atomics.wait(ready, 0, 0, 5000);
        if (Atomics.load(ready, 0) !== 1) {
            void this.worker.terminate();
            throw new Error(`rdmakit: could not serve the SSH key on ${socket}`);
        }
        process.once("exit", () => fs.rmSync(socket, { force: true }));
    }

    add(name: string, key: string): void {
        this.worker.postMessage({ name, key });
    }

    close(): void {
        void this.worker.terminate();
        fs.rmSync(this.socket, { force: true });
    }
}

let shared: KeyServer | undefined;

/**
 * Serves `key` under `name` from this program for the deployment and returns what the command needs to fetch it
 * (its environment: RDMAKIT_KEY_SOCKET, RDMAKIT_KEY_NAME). In a preview nothing runs, so nothing is served.
 */
export function serveSshKey(name: string, key: pulumi.Input<string>): KeyEnv {
    const socket = keySocketPath(pulumi.getProject(), pulumi.getStack());
    if (!pulumi.runtime.isDryRun()) {
        if (shared === undefined || shared.socket !== socket) shared = new KeyServer(socket);
        const server = shared;
        pulumi.output(key).apply((k) => server.add(name, k));
    }
    return { RDMAKIT_KEY_SOCKET: socket, RDMAKIT_KEY_NAME: name };
}

/** What a run's environment carries to fetch its key. */
export interface KeyEnv {
    RDMAKIT_KEY_SOCKET: string;
    RDMAKIT_KEY_NAME: string;
}

/**
 * For runs outside Pulumi (`rdmakit check`, tests): serves `key` on a fresh socket of this process until `close()`.
 */
export function serveKeyLocally(key: string): { env: KeyEnv; close: () => void } {
    const dir = keySocketDir();
    const socket = path.join(dir, `local-${process.pid}-${randomBytes(6).toString("hex")}.sock`);
    const server = new KeyServer(socket, { run: key });
    return { env: { RDMAKIT_KEY_SOCKET: socket, RDMAKIT_KEY_NAME: "run" }, close: () => server.close() };
}

/**
 * Node one-liner the run starts (argument: the key's lifetime in seconds): asks the socket in `$RDMAKIT_KEY_SOCKET`
 * for `$RDMAKIT_KEY_NAME` and hands the answer to `ssh-add -t <lifetime> -` on its stdin (a pipe), so the key is in
 * no file and no argument. One process the run can stop (a shell pipeline would outlive a trap that kills its last
 * member); gives up after 60 s without an answer; exits 1 with a reason when no key comes, else with ssh-add's status.
 */
export const KEY_CLIENT = [
    "const env = process.env, chunks = [];",
    "const fail = (why) => { console.error('rdmakit: ' + why); process.exit(1); };",
    "const s = require('net').connect(env.RDMAKIT_KEY_SOCKET);",
    "const t = setTimeout(() => fail('the SSH key socket ' + env.RDMAKIT_KEY_SOCKET + ' did not answer within 60 s'), 60000);",
    "s.on('connect', () => s.write(env.RDMAKIT_KEY_NAME + '\\n'));",
    "s.on('data', (d) => chunks.push(d));",
    "s.on('error', (e) => fail('the SSH key socket ' + env.RDMAKIT_KEY_SOCKET + ' cannot be reached (' + e.code + '): the Pulumi program serves it while pulumi up runs'));",
    "s.on('end', () => { clearTimeout(t); const k = Buffer.concat(chunks); if (k.length === 0) fail('the Pulumi program serves no SSH key named ' + env.RDMAKIT_KEY_NAME);",
    "  const a = require('child_process').spawn('ssh-add', ['-q', '-t', process.argv[1], '-'], { stdio: ['pipe', 'inherit', 'inherit'] });",
    "  a.on('error', (e) => fail('ssh-add cannot start (' + e.code + ')')); a.on('exit', (c) => process.exit(c === 0 ? 0 : 1)); a.stdin.end(k); k.fill(0); });",
].join(" ");

/** An ssh-agent bound to this process, holding keys it was handed on a pipe (startKeyAgent). */
export interface KeyAgent {
    /** the agent's socket, for ssh's `-o IdentityAgent=` */
    socket: string;
    /** the public key line (`ssh-ed25519 AAAA...`) of each key, in the order given: ssh's `-i` with IdentitiesOnly picks it */
    publicKeys: string[];
    /** the agent's process id */
    pid: number;
    /** stops the agent (its keys go with it) */
    stop(): void;
}

/**
 * Starts an ssh-agent for a run of this Node process (`rdmakit fabric check`) and loads `keys` into it through
 * `ssh-add -` on a pipe: the keys are in no file, no argument and no child's environment. The agent is bound to this
 * process as the Ansible runs' agent is to their shell (RUN_INTERPRETER): it runs with a command, `cat` reading a pipe
 * only this process writes, so when this process ends however it ends (KILL included) the pipe closes, `cat` exits
 * and the agent, whose parent that is, exits within 10 s (openssh-portable ssh-agent.c, `parent_alive_interval`);
 * `stop()` ends it at once. Each key also has ssh-add's lifetime (`-t`). `env` is the environment every child gets
 * (the caller's, without its key variables). The socket goes in `dir` (a 0700 folder of the caller's).
 */
export async function startKeyAgent(dir: string, keys: readonly string[], lifetimeS: number, env: NodeJS.ProcessEnv): Promise<KeyAgent> {
    const socket = path.join(dir, "agent.sock");
    const agent = spawn("ssh-agent", ["-a", socket, "sh", "-c", 'echo "$SSH_AGENT_PID"; exec cat >/dev/null'], { stdio: ["pipe", "pipe", "pipe"], env });
    agent.stdin.on("error", () => undefined);
    let pid = 0;
    const stop = () => {
        if (pid > 0) try { process.kill(pid, "SIGTERM"); } catch { /* gone already */ }
        agent.stdin.destroy();
        fs.rmSync(socket, { force: true });
    };
    try {
        pid = await new Promise<number>((resolve, reject) => {
            let out = "", err = "";
            const t = setTimeout(() => reject(new Error("ssh-agent did not start within 10 s")), 10_000);
            agent.on("error", (e) => { clearTimeout(t); reject(new Error(`ssh-agent cannot start (${(e as NodeJS.ErrnoException).code})`)); });
            agent.stderr.on("data", (d: Buffer) => { err += d.toString("utf8"); });
            agent.stdout.on("data", (d: Buffer) => {
                out += d.toString("utf8");
                const line = out.match(/^(\d+)\n/);
                if (line) { clearTimeout(t); resolve(Number(line[1])); }
            });
            agent.on("exit", (code) => { clearTimeout(t); reject(new Error(`ssh-agent exited (${code}): ${err.trim()}`)); });
        });
        const agentEnv = { ...env, SSH_AUTH_SOCK: socket };
        const publicKeys: string[] = [];
        for (const key of keys) {
            const before = new Set((await sshAdd(["-L"], "", agentEnv)).stdout.split("\n").filter((l) => /^(ssh|ecdsa|sk)-/.test(l)));
            const add = await sshAdd(["-q", "-t", String(lifetimeS), "-"], key.endsWith("\n") ? key : key + "\n", agentEnv);
            // ssh-add names no key material in its errors ("Error loading key "(stdin)": invalid format")
            if (add.code !== 0) throw new Error(`ssh-add refused a key: ${add.stderr.trim() || `exit ${add.code}`}`);
            const listed = (await sshAdd(["-L"], "", agentEnv)).stdout.split("\n").filter((l) => /^(ssh|ecdsa|sk)-/.test(l));
            const added = listed.find((l) => !before.has(l)) ?? publicKeys.find((p) => listed.includes(p)) ?? listed[listed.length - 1];
            publicKeys.push(added.split(" ").slice(0, 2).join(" "));
        }
        return { socket, publicKeys, pid, stop };
    } catch (e) {
        stop();
        throw e;
    }
}

function sshAdd(args: string[], input: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; stdout: string; stderr: string }> {
    return new Promise((resolve) => {
        const c = spawn("ssh-add", args, { stdio: ["pipe", "pipe", "pipe"], env });
        let stdout = "", stderr = "";
        c.stdout.on("data", (d: Buffer) => { stdout += d.toString("utf8"); });
        c.stderr.on("data", (d: Buffer) => { stderr += d.toString("utf8"); });
        c.on("error", (e) => resolve({ code: 127, stdout, stderr: `ssh-add cannot start (${(e as NodeJS.ErrnoException).code})` }));
        c.on("close", (code) => resolve({ code, stdout, stderr }));
        c.stdin.on("error", () => undefined);
        c.stdin.end(input);
    });
}
