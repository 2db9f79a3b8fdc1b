// The SSH key's lifecycle in a real run of ANSIBLE_RUN_SCRIPT, started as the command provider starts it
// (RUN_INTERPRETER: ssh-agent /bin/bash -c), with ansible-playbook replaced by a stub that waits: whatever ends the
// run — TERM, KILL of the shell, KILL of its whole process group — no agent is left, no file holds the key, and no
// process environment or command line on the machine ever held it. The key is made here (ssh-keygen).
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { ANSIBLE_RUN_SCRIPT, RUN_INTERPRETER, sha256 } from "../components/provision/ansible";
import { KeyServer, keySocketDir, serveKeyLocally } from "../components/provision/keysocket";
import { nodeSendEnv } from "../components/provision/node-send";

let dir: string;
let key: string;
let fingerprint: string;

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-runkey-"));
    const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-runkey", "-f", path.join(dir, "id")]);
    assert.equal(r.status, 0, String(r.stderr));
    key = fs.readFileSync(path.join(dir, "id"), "utf8");
    fingerprint = spawnSync("ssh-keygen", ["-l", "-f", path.join(dir, "id")], { encoding: "utf8" }).stdout.split(" ")[1];
    fs.rmSync(path.join(dir, "id"));
    fs.rmSync(path.join(dir, "id.pub"));
    // the stub records what the run gave it, then waits to be ended
    fs.mkdirSync(path.join(dir, "bin"));
    fs.writeFileSync(path.join(dir, "bin", "ansible-playbook"), [
        "#!/bin/bash",
        'm="$RDMAKIT_TEST_MARKS"',
        'echo "$SSH_AGENT_PID" >"$m/agent.pid"',
        'ssh-add -l >"$m/agent.keys" 2>&1',
        'echo $$ >"$m/stub.pid"',
        "exec sleep 60",
    ].join("\n"), { mode: 0o755 });
});
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** Pieces of the key's secret body: any of them in a file or an environment means the key leaked. */
function pieces(): string[] {
    const body = key.split("\n").filter((l) => l && !l.startsWith("-----")).join("");
    // the first 70 characters are the format header, the same in every OpenSSH key; the rest is this key's
    return [0, 1, 2, 3].map((i) => body.slice(70 + i * 40, 70 + i * 40 + 24));
}

/** Every /proc/<pid>/{environ,cmdline} that holds a piece of the key. */
function procLeaks(): string[] {
    const found: string[] = [];
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        for (const f of ["environ", "cmdline"]) {
            let text: string;
            try { text = fs.readFileSync(`/proc/${pid}/${f}`, "latin1"); } catch { continue; }
            if (pieces().some((p) => text.includes(p))) found.push(`/proc/${pid}/${f}`);
        }
    }
    return found;
}

/** Every file under `root` that holds a piece of the key. */
function fileLeaks(root: string): string[] {
    const found: string[] = [];
    const walk = (d: string): void => {
        for (const e of fs.readdirSync(d, { withFileTypes: true })) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) walk(p);
            else if (e.isFile() && pieces().some((x) => fs.readFileSync(p, "latin1").includes(x))) found.push(p);
        }
    };
    walk(root);
    return found;
}

const alive = (pid: number): boolean => {
    try { process.kill(pid, 0); return true; } catch { return false; }
};

async function until(what: () => boolean, ms: number): Promise<boolean> {
    const end = Date.now() + ms;
    while (Date.now() < end) {
        if (what()) return true;
        await new Promise((r) => setTimeout(r, 100));
    }
    return what();
}

interface Started { run: ChildProcess; marks: string; tmp: string; exited: Promise<number | string> }

/** Starts the run as the command provider does: interpreter + script, the run input on stdin, its own process group. */
function start(name: string, keyEnv: { RDMAKIT_KEY_SOCKET: string; RDMAKIT_KEY_NAME: string }): Started {
    const marks = fs.mkdtempSync(path.join(dir, `${name}-marks-`));
    const tmp = fs.mkdtempSync(path.join(dir, `${name}-tmp-`));
    const out = fs.mkdtempSync(path.join(dir, `${name}-out-`));
    const input = { inventory: "all:\n  hosts: {}\n", extraVars: "{}" };
    const [cmd, ...args] = RUN_INTERPRETER;
    const run = spawn(cmd, [...args, ANSIBLE_RUN_SCRIPT], {
        detached: true, stdio: ["pipe", "ignore", "pipe"],
        env: {
            PATH: `${path.join(dir, "bin")}:${process.env.PATH}`, HOME: process.env.HOME ?? dir, TMPDIR: tmp,
            RDMAKIT_TEST_MARKS: marks, RDMAKIT_PLAYBOOK: "site.yml",
            RDMAKIT_ANSIBLE_LOG: path.join(out, "ansible.log"), ...nodeSendEnv(process.cwd()), RDMAKIT_ANSIBLE_SUMMARISER: path.join(out, "none.cjs"),
            RDMAKIT_INVENTORY_FILE: path.join(out, "inventory.yml"),
            RDMAKIT_INVENTORY_HASH: sha256(input.inventory), RDMAKIT_VARS_HASH: sha256(input.extraVars),
            ...keyEnv,
        },
    });
    run.stdin!.end(JSON.stringify(input));
    const exited = new Promise<number | string>((r) => run.on("exit", (code, sig) => r(code ?? sig ?? "?")));
    return { run, marks, tmp, exited };
}

/** After the run ended: no agent (within `agentMs`), no key in a file, an environment or a command line. */
async function assertNothingLeft(s: Started, agentPid: number, agentMs: number): Promise<void> {
    await s.exited;
    assert.ok(await until(() => !alive(agentPid), agentMs), `the run's ssh-agent (pid ${agentPid}) is still running`);
    assert.deepEqual(fileLeaks(dir), [], "a file holds the key");
    assert.deepEqual(procLeaks(), [], "a process environment or command line holds the key");
    const stub = Number(fs.readFileSync(path.join(s.marks, "stub.pid"), "utf8").trim() || 0);
    if (stub && alive(stub)) process.kill(stub, "SIGKILL");
}

/** Waits until the stub playbook runs, i.e. the key is in the agent; returns the agent's pid. */
async function keyLoaded(s: Started): Promise<number> {
    const keys = path.join(s.marks, "agent.keys");
    assert.ok(await until(() => fs.existsSync(path.join(s.marks, "stub.pid")), 15_000), "the playbook never started");
    assert.match(fs.readFileSync(keys, "utf8"), new RegExp(fingerprint.replace(/[+/]/g, "\\$&")), "the key is in the run's agent");
    return Number(fs.readFileSync(path.join(s.marks, "agent.pid"), "utf8").trim());
}

/** The ssh-agent whose parent is the run's shell (the agent of a run that has not loaded its key yet). */
function agentOf(shellPid: number): number | undefined {
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
            const stat = fs.readFileSync(`/proc/${pid}/stat`, "utf8");
            const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
            if (ppid === shellPid && fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim() === "ssh-agent") return Number(pid);
        } catch { /* gone */ }
    }
    return undefined;
}

describe("the run's key: agent-only, gone with the run", () => {
    it("reaches the run's agent from the program's socket, never through an environment, and the run ends clean", async () => {
        const served = serveKeyLocally(key);
        try {
            const s = start("ok", served.env);
            const agent = await keyLoaded(s);
            assert.deepEqual(procLeaks(), [], "while the run holds the key, no environment or command line does");
            assert.deepEqual(fileLeaks(dir), [], "while the run holds the key, no file does");
            process.kill(Number(fs.readFileSync(path.join(s.marks, "stub.pid"), "utf8")), "SIGTERM");
            assert.equal(await s.exited, 143, "the playbook's status is the run's");
            await assertNothingLeft(s, agent, 2000);
            assert.deepEqual(fs.readdirSync(s.tmp), [], "the run's temporary folder is removed");
        } finally {
            served.close();
        }
    });

    for (const [how, signal, group, agentMs] of [
        ["TERM to the shell", "SIGTERM", false, 3000],
        ["KILL to the shell", "SIGKILL", false, 3000],
        ["KILL to the whole process group", "SIGKILL", true, 3000],
    ] as const) {
        it(`${how} while the playbook runs: no agent, no key file, no key in any /proc/*/environ`, async () => {
            const served = serveKeyLocally(key);
            try {
                const s = start(signal.toLowerCase(), served.env);
                const agent = await keyLoaded(s);
                process.kill(group ? -s.run.pid! : s.run.pid!, signal);
                await assertNothingLeft(s, agent, agentMs);
            } finally {
                served.close();
            }
        });
    }

    for (const [how, signal] of [["TERM", "SIGTERM"], ["KILL", "SIGKILL"]] as const) {
        it(`${how} before the key arrived (the socket has not answered): no agent left`, async () => {
            // a socket that takes the request and never answers: the run waits in the key fetch
            fs.mkdirSync(keySocketDir(), { recursive: true, mode: 0o700 });
            const socket = path.join(keySocketDir(), `stall-${process.pid}.sock`);
            fs.rmSync(socket, { force: true });
            const conns: net.Socket[] = [];
            const stall = net.createServer((c) => conns.push(c)).listen(socket);
            try {
                const s = start(`early-${signal}`, { RDMAKIT_KEY_SOCKET: socket, RDMAKIT_KEY_NAME: "run" });
                assert.ok(await until(() => conns.length > 0, 10_000), "the run never asked for its key");
                const agent = agentOf(s.run.pid!);
                assert.ok(agent, "the run's agent is running");
                process.kill(s.run.pid!, signal);
                await s.exited;
                assert.ok(await until(() => !alive(agent), 3000), `the run's ssh-agent (pid ${agent}) is still running`);
                assert.equal(fs.existsSync(path.join(s.marks, "stub.pid")), false, "the playbook did not start");
            } finally {
                conns.forEach((c) => c.destroy());
                stall.close();
                fs.rmSync(socket, { force: true });
            }
        });
    }

    it("refuses to run without a key, naming why", async () => {
        const empty = new KeyServer(path.join(keySocketDir(), `empty-${process.pid}.sock`));
        try {
            const s = start("nokey", { RDMAKIT_KEY_SOCKET: empty.socket, RDMAKIT_KEY_NAME: "nobody" });
            let err = "";
            s.run.stderr!.on("data", (d) => (err += String(d)));
            assert.equal(await s.exited, 1);
            assert.match(err, /serves no SSH key named nobody/);
            assert.match(err, /could not be loaded into the run's agent/);
        } finally {
            empty.close();
        }
    });
});
