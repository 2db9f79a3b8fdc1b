// The controller's bound on what a node sends back through Ansible (components/provision/node-send.ts,
// components/scripts/ssh/capped_ssh.py). The wrapper is installed by the run scripts' own lines (bash, as a run does)
// and run against stand-in ssh programs that send too much, split it over stdout and stderr, keep going after
// SIGTERM, leave a process holding the pipes (as a ControlPersist master does), drop the connection, or are stopped by
// a signal; then a real ansible-playbook reaches a real sshd (test/fixtures/sshd.ts, needs root) through it and
// fetches a file under the bound and one over it. Bound: each stand-in run under 10 s (the slowest waits out the 2 s
// grace), the two playbook runs under 90 s each.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { CAPPED_SSH, NODE_SEND_BOUND_LINES, NODE_SEND_MAX_BYTES, cappedSshDigest, nodeSendEnv } from "../components/provision/node-send";
import { createHash } from "node:crypto";
import { ANSIBLE_RUN_SCRIPT } from "../components/provision/ansible";
import { VALIDATE_SCRIPT } from "../components/validate/component";
import { MAX_FILE_CHARS } from "../components/health/text";
import { renderInventory } from "../components/provision/inventory";
import { freePort } from "./fixtures/ports";
import { startSshd, sshdMissing, type Sshd } from "./fixtures/sshd";

const ROOT = path.join(__dirname, "..");
const CAP = 1000;
let dir: string;

before(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-capped-ssh-"));
});
after(() => {
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** The run scripts' lines in bash with `$tmp` = a fresh folder: the wrapper's path and the environment they export. */
function install(cap: number): { wrapper: string; env: Record<string, string> } {
    const tmp = fs.mkdtempSync(path.join(dir, "run-"));
    const r = spawnSync("bash", ["-c", `set -u; umask 077; tmp=${tmp}\n${NODE_SEND_BOUND_LINES.join("\n")}\nenv -0`], {
        cwd: ROOT, encoding: "utf8", timeout: 10_000, env: { ...process.env, ...nodeSendEnv(ROOT, cap) },
    });
    assert.equal(r.status, 0, r.stderr);
    const env = Object.fromEntries(r.stdout.split("\0").filter(Boolean).map((l) => [l.slice(0, l.indexOf("=")), l.slice(l.indexOf("=") + 1)]));
    return { wrapper: path.join(tmp, "rdmakit-ssh"), env };
}

/** A stand-in `ssh` (bash) in a folder of its own, first on PATH for the wrapper. */
function stubSsh(name: string, body: string): string {
    const bin = path.join(dir, `bin-${name}`);
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "ssh"), `#!/bin/bash\necho "$$" >${bin}/pid\n${body}\n`, { mode: 0o755 });
    return bin;
}

const ARGS = ["-o", "ControlMaster=auto", "-o", "User=root", "-p", "22", "-tt", "gpu07", "/bin/sh -c 'dd if=/x bs=65536'"];
const OVER = new RegExp(`rdmakit-ssh: gpu07 sent more than ${CAP} bytes \\(stdout and stderr together\\)`);

function runWrapped(bin: string, input = "", extraEnv: Record<string, string> = {}) {
    const { wrapper, env } = install(CAP);
    const t0 = Date.now();
    const r = spawnSync(wrapper, ARGS, {
        input, timeout: 10_000, maxBuffer: 1 << 20,
        env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH}`, ...extraEnv },
    });
    return { status: r.status, signal: r.signal, out: r.stdout, err: r.stderr, ms: Date.now() - t0 };
}

/** The node's bytes on stderr: the wrapper's own line taken off. */
const nodeErr = (err: Buffer) => Buffer.from(err.toString("latin1").replace(/rdmakit-ssh: [^\n]*\n/g, ""), "latin1");

test("the bound is the largest capture the health reader opens, with room; the run scripts install the wrapper as Ansible's ssh with the piped transfer", () => {
    assert.ok(NODE_SEND_MAX_BYTES > 4 * MAX_FILE_CHARS && NODE_SEND_MAX_BYTES < 4 * MAX_FILE_CHARS + (1 << 20), String(NODE_SEND_MAX_BYTES));
    const lines = NODE_SEND_BOUND_LINES.join("\n");
    for (const script of [ANSIBLE_RUN_SCRIPT, VALIDATE_SCRIPT]) {
        assert.ok(script.includes(lines), "the run script carries the bound's lines");
        // before any ansible-playbook of the run
        assert.ok(script.indexOf(lines) < script.indexOf("ansible-playbook"));
    }
    const { wrapper, env } = install(NODE_SEND_MAX_BYTES);
    // the file written is the shipped one, byte for byte, under a #! line naming this machine's python3 by its path
    const [first, ...rest] = fs.readFileSync(wrapper, "utf8").split("\n");
    assert.equal(rest.join("\n"), fs.readFileSync(path.join(ROOT, CAPPED_SSH), "utf8").split("\n").slice(1).join("\n"));
    const py = spawnSync("python3", ["-c", "import sys; print(sys.executable)"], { encoding: "utf8" }).stdout.trim();
    assert.equal(first, `#!${py} -IS`);
    assert.equal(fs.statSync(wrapper).mode & 0o777, 0o700);
    assert.equal(env.ANSIBLE_SSH_EXECUTABLE, wrapper);
    assert.equal(env.ANSIBLE_SSH_TRANSFER_METHOD, "piped");
    assert.equal(env.RDMAKIT_NODE_SEND_MAX_BYTES, String(NODE_SEND_MAX_BYTES));
    // the run's inputs name the shipped file (relative to where the run starts) and its digest, not its text
    const fromRoot = nodeSendEnv(ROOT);
    assert.equal(fromRoot.RDMAKIT_CAPPED_SSH, CAPPED_SSH);
    assert.equal(nodeSendEnv(path.join(ROOT, "playbooks")).RDMAKIT_CAPPED_SSH, path.join("..", CAPPED_SSH));
    assert.equal(fromRoot.RDMAKIT_CAPPED_SSH_SHA256, createHash("sha256").update(fs.readFileSync(path.join(ROOT, CAPPED_SSH))).digest("hex"));
    assert.equal(cappedSshDigest(), fromRoot.RDMAKIT_CAPPED_SSH_SHA256);
    for (const script of [ANSIBLE_RUN_SCRIPT, VALIDATE_SCRIPT]) assert.ok(!script.includes("def relay("), "no wrapper text in a run script");
    assert.throws(() => nodeSendEnv(ROOT, 0), /not a number of bytes/);
});

test("the run refuses a wrapper whose sha256 is not the planned one, and a bound that is no number, before any ansible-playbook", () => {
    const tmp = fs.mkdtempSync(path.join(dir, "run-"));
    const changed = path.join(dir, "changed_ssh.py");
    fs.writeFileSync(changed, fs.readFileSync(path.join(ROOT, CAPPED_SSH), "utf8") + "# changed\n");
    const run = (env: Record<string, string>) => spawnSync("bash", ["-c", `set -u; umask 077; tmp=${tmp}\n${NODE_SEND_BOUND_LINES.join("\n")}\necho installed`], {
        cwd: ROOT, encoding: "utf8", timeout: 10_000, env: { ...process.env, ...nodeSendEnv(ROOT, CAP), ...env },
    });
    const swapped = run({ RDMAKIT_CAPPED_SSH: changed });
    assert.equal(swapped.status, 1);
    assert.match(swapped.stderr, /is not the bounded ssh this run was planned with \(sha256 [0-9a-f]{64}, planned [0-9a-f]{64}\)/);
    assert.doesNotMatch(swapped.stdout, /installed/);
    assert.equal(fs.existsSync(path.join(tmp, "rdmakit-ssh")), false);
    for (const bad of ["", "0", "12x", "-5"]) {
        const r = run({ RDMAKIT_NODE_SEND_MAX_BYTES: bad });
        assert.equal(r.status, 1, bad);
        assert.match(r.stderr, /RDMAKIT_NODE_SEND_MAX_BYTES is '[^']*': a whole number of bytes is needed/);
    }
});

test("a node that sends more than the bound: exactly the bound passed on, ssh stopped, the host and the bound named, exit 3", () => {
    // stdout, then it would go on waiting: the wrapper does not wait for it
    const r = runWrapped(stubSsh("over", `head -c ${CAP * 50} /dev/zero | tr '\\0' a\nexec sleep 30`));
    assert.equal(r.status, 3, r.err.toString());
    assert.equal(r.out.length, CAP);
    assert.match(r.err.toString(), OVER);
    assert.ok(r.ms < 5000, `${r.ms} ms`);
    // stderr counts too
    const e = runWrapped(stubSsh("over-err", `head -c ${CAP * 5} /dev/zero >&2\nexec sleep 30`));
    assert.equal(e.status, 3);
    assert.equal(nodeErr(e.err).length, CAP);
    assert.match(e.err.toString(), OVER);
    // both together: 600 + 600 is past 1000, and no more than 1000 of them come through
    const both = runWrapped(stubSsh("over-both", "head -c 600 /dev/zero; sleep 0.2; head -c 600 /dev/zero >&2\nexec sleep 30"));
    assert.equal(both.status, 3);
    assert.equal(both.out.length + nodeErr(both.err).length, CAP);
});

test("a fetch (Ansible's piped `dd if=<file>`): the file is passed on only once all of it is in; past the bound, none of it", () => {
    // ansible-core 2.14 and 2.15 write the path as it is, 2.17 quotes it (ssh.py _file_transport_command)
    const fetch = ["-o", "ControlMaster=auto", "gpu07", "dd if=/tmp/rdmakit-health.x/dmesg.txt bs=65536"];
    const quoted = ["-o", "ControlMaster=auto", "gpu07", "dd if='/tmp/rdmakit health/dmesg.txt' bs=65536"];
    const run = (name: string, body: string, args = fetch) => {
        const { wrapper, env } = install(CAP);
        const r = spawnSync(wrapper, args, { timeout: 10_000, env: { ...process.env, ...env, PATH: `${stubSsh(name, body)}:${process.env.PATH}` } });
        return { status: r.status, out: r.stdout, err: r.stderr.toString() };
    };
    const whole = run("fetch-ok", `head -c ${CAP - 100} /dev/zero | tr '\\0' c\nprintf '1+0 records in\\n' >&2`);
    assert.equal(whole.status, 0, whole.err);
    assert.equal(whole.out.toString(), "c".repeat(CAP - 100));
    assert.equal(whole.err, "1+0 records in\n");
    const over = run("fetch-over", `head -c ${CAP * 5} /dev/zero | tr '\\0' c\nexec sleep 30`);
    assert.equal(over.status, 3);
    assert.equal(over.out.length, 0, "nothing of an over-bound file is passed on");
    assert.match(over.err, OVER);
    const overQuoted = run("fetch-over-quoted", `head -c ${CAP * 5} /dev/zero\nexec sleep 30`, quoted);
    assert.equal(overQuoted.status, 3);
    assert.equal(overQuoted.out.length, 0);
});

test("a node that keeps going after SIGTERM is killed after the grace: the wrapper ends in bounded time", () => {
    const r = runWrapped(stubSsh("stubborn", `trap '' TERM\nhead -c ${CAP * 5} /dev/zero\nsleep 8`));
    assert.equal(r.status, 3);
    assert.equal(r.out.length, CAP);
    assert.ok(r.ms < 6000, `${r.ms} ms`);
    const pid = Number(fs.readFileSync(path.join(dir, "bin-stubborn", "pid"), "utf8"));
    assert.throws(() => process.kill(pid, 0), /ESRCH/, "the stand-in ssh is gone");
});

test("within the bound: everything passed on, stdin through to ssh, ssh's status kept", () => {
    const exact = runWrapped(stubSsh("exact", `head -c ${CAP - 10} /dev/zero | tr '\\0' b\nprintf 'err\\n' >&2\nexit 7`));
    assert.equal(exact.status, 7);
    assert.equal(exact.out.toString(), "b".repeat(CAP - 10));
    assert.equal(exact.err.toString(), "err\n");
    // a pipelined module reaches ssh's stdin as it is
    const echo = runWrapped(stubSsh("cat", "cat"), "print('module')\n");
    assert.equal(echo.status, 0);
    assert.equal(echo.out.toString(), "print('module')\n");
    // a dropped connection: what came, and ssh's 255 (Ansible's cue to reconnect)
    const drop = runWrapped(stubSsh("drop", "printf part\nprintf 'Connection closed by remote host\\n' >&2\nexit 255"));
    assert.equal(drop.status, 255);
    assert.equal(drop.out.toString(), "part");
    assert.match(drop.err.toString(), /Connection closed/);
});

test("ssh gone but its pipes held open (a ControlPersist master keeps stderr): the wrapper ends with ssh", () => {
    const bin = stubSsh("master", `sleep 20 &\necho $! >${path.join(dir, "bin-master", "bg")}\nprintf done\nexit 0`);
    const r = runWrapped(bin);
    assert.equal(r.status, 0);
    assert.equal(r.out.toString(), "done");
    assert.ok(r.ms < 5000, `${r.ms} ms`);
    process.kill(Number(fs.readFileSync(path.join(bin, "bg"), "utf8")), "SIGTERM");
});

test("SIGTERM to the wrapper (Ansible's timeout) reaches ssh; the wrapper ends as ssh did", async () => {
    const bin = stubSsh("term", "exec sleep 30");
    const { wrapper, env } = install(CAP);
    const child = spawn(wrapper, ARGS, { env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH}` }, stdio: "ignore" });
    const t0 = Date.now();
    // the stand-in has started once it wrote its pid
    while (!fs.existsSync(path.join(bin, "pid")) && Date.now() - t0 < 5000) await new Promise((r) => setTimeout(r, 50));
    child.kill("SIGTERM");
    const [code, sig] = await new Promise<[number | null, string | null]>((r) => child.once("exit", (c, s) => r([c, s])));
    assert.equal(sig, "SIGTERM", `exit ${code}`);
    assert.ok(Date.now() - t0 < 6000);
    const pid = Number(fs.readFileSync(path.join(bin, "pid"), "utf8"));
    assert.throws(() => process.kill(pid, 0), /ESRCH/, "ssh got the signal");
});

test("no bound in the environment: refused before any ssh starts", () => {
    const bin = stubSsh("unset", "echo reached >&2");
    const r = runWrapped(bin, "", { RDMAKIT_NODE_SEND_MAX_BYTES: "lots" });
    assert.equal(r.status, 2);
    assert.match(r.err.toString(), /RDMAKIT_NODE_SEND_MAX_BYTES is 'lots': a whole number of bytes is needed/);
    assert.ok(!fs.existsSync(path.join(bin, "pid")), "ssh was not started");
});

// ---- a real ansible-playbook through the wrapper, to a real sshd ----

const why = sshdMissing() || (spawnSync("sh", ["-c", "command -v ansible-playbook"]).status !== 0 ? "no ansible-playbook" : "");
let sshd: Sshd | undefined;
let realDir = "";
let inventory = "";

before(async () => {
    if (why) return;
    realDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-capped-real-"));
    const hostKey = path.join(realDir, "host_key"), clientKey = path.join(realDir, "id");
    for (const k of [hostKey, clientKey]) assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", k]).status, 0);
    const port = await freePort();
    sshd = await startSshd(realDir, { address: "127.0.0.1", port, hostKeyFiles: [hostKey], authorizedKey: `${clientKey}.pub` });
    inventory = path.join(realDir, "inventory.yml");
    fs.writeFileSync(inventory, renderInventory({
        hosts: [{ name: "h1", address: "127.0.0.1", port, user: "root", vars: { ansible_python_interpreter: "/usr/bin/python3" } }],
        vars: {}, knownHostsFile: path.join(realDir, "known_hosts"), pinnedHostKeys: false, privateKeyFile: clientKey,
    }));
});
after(async () => {
    // this test's SSH masters (ControlPersist), found by its own folder
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
            if (realDir && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(realDir)) process.kill(Number(pid), "SIGTERM");
        } catch { /* gone */ }
    }
    await sshd?.stop();
    if (realDir) fs.rmSync(realDir, { recursive: true, force: true });
});

/** validate.yml's way of bringing a file back (ansible.builtin.fetch, flat), of a file of `size` bytes made on the node. */
function fetchRun(name: string, size: number, cap: number) {
    const play = path.join(realDir, `${name}.yml`), src = path.join(realDir, `${name}.src`), dest = path.join(realDir, "back", `${name}.txt`);
    fs.writeFileSync(play, [
        "- hosts: all", "  gather_facts: false", "  tasks:",
        // through become (su, root to root, no password: Ansible reads su's success line from the command's stdout;
        // su turns pipelining off, so this does not show sudo's case, where the module waits on that line)
        "    - name: Write the file on the node", `      ansible.builtin.shell: head -c ${size} /dev/zero | tr '\\0' x > ${src}`,
        "      become: true", "      become_method: ansible.builtin.su",
        ...(name.startsWith("print")
            ? ["    - name: Print it (a module result that big)", `      ansible.builtin.command: cat ${src}`]
            : ["    - name: Fetch it", "      ansible.builtin.fetch:", `        src: ${src}`, `        dest: ${dest}`, "        flat: true"]),
        "",
    ].join("\n"));
    // the lines a run script has, then ansible-playbook as the run starts it (the kit's ansible.cfg)
    const script = [`set -u; umask 077; tmp=$(mktemp -d -p ${realDir})`, ...NODE_SEND_BOUND_LINES, `ansible-playbook -i ${inventory} ${play}`].join("\n");
    const r = spawnSync("bash", ["-c", script], {
        cwd: ROOT, encoding: "utf8", timeout: 90_000, maxBuffer: 16 << 20,
        env: { ...process.env, ...nodeSendEnv(ROOT, cap), ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1", SSH_AUTH_SOCK: "",
            ANSIBLE_SSH_CONTROL_PATH_DIR: fs.mkdtempSync(path.join(realDir, "cp-")) },
    });
    return { code: r.status, out: r.stdout + r.stderr, size: fs.existsSync(dest) ? fs.statSync(dest).size : -1 };
}

test("ansible-playbook through the wrapper: a fetch within the bound lands whole; one past it fails, naming host and bound, and none of it lands", { skip: why || false, timeout: 200_000 }, () => {
    const cap = 64 * 1024;
    const ok = fetchRun("small", 10 * 1024, cap);
    assert.equal(ok.code, 0, ok.out);
    assert.equal(ok.size, 10 * 1024);
    const big = fetchRun("big", 1024 * 1024, cap);
    assert.notEqual(big.code, 0, big.out);
    assert.match(big.out, /fatal: \[h1\]/);
    assert.match(big.out, new RegExp(`rdmakit-ssh: 127\\.0\\.0\\.1 sent more than ${cap} bytes`));
    // the fetch is held back whole: nothing of the file lands, and Ansible's error carries none of it either
    assert.equal(big.size, 0, `${big.size} bytes on disk`);
    assert.doesNotMatch(big.out, /xxxx/);
    // a module's result past the bound: streamed (Ansible reads become's answer before it sends the module), stopped
    // at the bound, the task failed
    const printed = fetchRun("print-big", 1024 * 1024, cap);
    assert.notEqual(printed.code, 0, printed.out);
    assert.match(printed.out, /fatal: \[h1\]: FAILED!/);
    assert.match(printed.out, new RegExp(`rdmakit-ssh: 127\\.0\\.0\\.1 sent more than ${cap} bytes`));
    assert.ok(printed.out.length < cap + 16 * 1024, `${printed.out.length} characters of output`);
});
