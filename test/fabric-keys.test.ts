/**
 * F2 of the red-team review (issue 25): `rdmakit fabric check` wrote the switch and the node key to
 * a folder $TMPDIR/rdmakit-fabric-XXXXXX and removed them only in a `finally`, so a SIGINT/SIGTERM left both private keys on disk,
 * and every ssh child inherited both in its environment. The attack as the red team ran it: the real CLI against
 * switches that accept the TCP connection and never answer (a loopback listener), the keys in the documented
 * environment variables, then a signal while ssh hangs. While it hangs: no key in any file under TMPDIR, none in any
 * child's environment or arguments, the agent holds the keys (only the switch key with --switches-only). After the
 * signal: the folder, the agent and the ssh children are gone.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { childEnv } from "../components/roce/fabric-read";

const ROOT = path.join(__dirname, "..");
const missing = ["ssh", "ssh-agent", "ssh-add", "ssh-keygen"].filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
const skip = missing.length ? `missing ${missing.join(", ")}` : false;
let dir: string;
const servers: net.Server[] = [];
const conns: net.Socket[] = [];
/** One listener per switch address (127.0.0.<n>: every switch has its own management address) that never answers. */
async function hanging(address: string): Promise<number> {
    const s = net.createServer((c) => { conns.push(c); c.on("error", () => undefined); });
    servers.push(s);
    await new Promise<void>((r) => s.listen(0, address, () => r()));
    return (s.address() as net.AddressInfo).port;
}

before(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fabric-keys-"));
});
after(() => {
    for (const c of conns) c.destroy();
    for (const s of servers) s.close();
    fs.rmSync(dir, { recursive: true, force: true });
});

const body = (pem: string) => pem.split("\n").filter((l) => l && !l.startsWith("-----")).join("");

function key(name: string): { pem: string; pub: string } {
    const f = path.join(dir, name);
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", f]).status, 0);
    const k = { pem: fs.readFileSync(f, "utf8"), pub: fs.readFileSync(`${f}.pub`, "utf8").split(" ").slice(0, 2).join(" ") };
    fs.rmSync(f);
    return k;
}

/** Every process below `pid` (from /proc/<n>/stat's ppid). */
function descendants(pid: number): number[] {
    const parent = new Map<number, number>();
    for (const e of fs.readdirSync("/proc")) {
        if (!/^\d+$/.test(e)) continue;
        try {
            const stat = fs.readFileSync(`/proc/${e}/stat`, "utf8");
            parent.set(Number(e), Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]));
        } catch { /* gone */ }
    }
    const out: number[] = [];
    const walk = (p: number) => { for (const [c, pp] of parent) if (pp === p) { out.push(c); walk(c); } };
    walk(pid);
    return out;
}

const read = (f: string) => { try { return fs.readFileSync(f).toString("latin1"); } catch { return ""; } };
function filesUnder(d: string): string[] {
    if (!fs.existsSync(d)) return [];
    return fs.readdirSync(d, { withFileTypes: true, recursive: true }).filter((e) => e.isFile()).map((e) => path.join(e.parentPath, e.name));
}

async function until(what: string, cond: () => boolean, ms = 60_000): Promise<void> {
    const end = Date.now() + ms;
    while (!cond()) {
        if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 200));
    }
}

async function attack(signal: "SIGINT" | "SIGTERM", switchesOnly: boolean): Promise<void> {
    const sw = key(`switch-${signal}`), host = key(`host-${signal}`);
    const tmp = fs.mkdtempSync(path.join(dir, "tmp-"));
    const doc = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8"));
    const roce = doc.config["rdmakit:cluster"].roce;
    for (const [i, s] of (roce.switches as { managementAddress: string; sshPort: number }[]).entries()) {
        s.managementAddress = `127.0.0.${i + 1}`;
        s.sshPort = await hanging(s.managementAddress);
    }
    for (const [i, h] of (roce.hosts as { address: string }[]).entries()) h.address = `127.0.1.${i + 1}`;
    const stack = path.join(dir, `Pulumi.${signal.toLowerCase()}.yaml`);
    fs.writeFileSync(stack, toYaml(doc));
    const seen = conns.length;
    const cli = spawn(process.execPath, [path.join(ROOT, "bin", "rdmakit.cjs"), "fabric", "check", "--config", stack, "--timeout", "90", ...(switchesOnly ? ["--switches-only"] : [])], {
        cwd: ROOT, stdio: ["ignore", "pipe", "pipe"],
        env: { ...process.env, TMPDIR: tmp, RDMAKIT_SWITCH_SSH_KEY: sw.pem, RDMAKIT_HOST_SSH_KEY: host.pem },
    });
    let err = "";
    cli.stderr.on("data", (d: Buffer) => { err += d.toString("utf8"); });
    const exited = new Promise<{ code: number | null; sig: NodeJS.Signals | null }>((r) => cli.on("exit", (code, sig) => r({ code, sig })));
    try {
        // every switch's ssh has connected and waits for a banner that never comes
        await until("the switches' ssh connections", () => conns.length - seen >= roce.switches.length || cli.exitCode !== null);
        assert.equal(cli.exitCode, null, err);
        const kids = descendants(cli.pid!);
        assert.ok(kids.length >= roce.switches.length, `children: ${kids.length}`);
        for (const k of [sw, host]) {
            for (const p of kids) {
                const env = read(`/proc/${p}/environ`), argv = read(`/proc/${p}/cmdline`);
                assert.ok(!env.includes(body(k.pem).slice(0, 40)) && !env.includes("PRIVATE KEY") && !/RDMAKIT_(SWITCH|HOST)_SSH_KEY/.test(env), `a key in the environment of ${argv}`);
                assert.ok(!argv.includes(body(k.pem).slice(0, 40)), "a key in a child's arguments");
            }
            for (const f of filesUnder(tmp)) assert.ok(!read(f).includes(body(k.pem).slice(0, 40)), `key material in ${f}`);
        }
        // the keys are in the run's agent (and the host key only when hosts are read)
        const sock = fs.readdirSync(tmp).filter((d) => d.startsWith("rdmakit-fabric-")).map((d) => path.join(tmp, d, "agent.sock")).find((s) => fs.existsSync(s));
        assert.ok(sock, "the agent's socket");
        const listed = spawnSync("ssh-add", ["-L"], { encoding: "utf8", env: { PATH: process.env.PATH, SSH_AUTH_SOCK: sock } }).stdout.split("\n").filter(Boolean).map((l) => l.split(" ").slice(0, 2).join(" "));
        assert.deepEqual(listed.sort(), (switchesOnly ? [sw.pub] : [sw.pub, host.pub]).sort());
        const agentPid = kids.find((p) => read(`/proc/${p}/cmdline`).startsWith("ssh-agent"));
        assert.ok(agentPid, "the agent is a child of the check");

        cli.kill(signal);
        const { code } = await exited;
        assert.equal(code, 128 + os.constants.signals[signal], err);
        assert.deepEqual(fs.readdirSync(tmp).filter((d) => d.startsWith("rdmakit-")), [], "the check's folder is left behind");
        for (const k of [sw, host]) for (const f of filesUnder(tmp)) assert.ok(!read(f).includes(body(k.pem).slice(0, 40)), `key material in ${f}`);
        await until("the children to end", () => kids.every((p) => !fs.existsSync(`/proc/${p}`) || /^Z|zombie/.test(read(`/proc/${p}/status`).match(/State:\s+(\S+)/)?.[1] ?? "")), 5_000);
        assert.doesNotMatch(err, /PRIVATE KEY|[A-Za-z0-9+/]{60}/);
    } finally {
        if (cli.exitCode === null) cli.kill("SIGKILL");
    }
}

test("SIGINT while every switch hangs: no key on disk or in a child's environment, then nothing left", { skip, timeout: 120_000 }, () => attack("SIGINT", false));
test("SIGTERM with --switches-only: the host key is never loaded, nothing left after", { skip, timeout: 120_000 }, () => attack("SIGTERM", true));

test("childEnv drops key variables by name and by PEM value, and keeps the rest", () => {
    const env = childEnv({ PATH: "/bin", RDMAKIT_SWITCH_SSH_KEY: "x", TEAM_DEPLOY_PRIVATE_KEY: "y", OTHER: "-----BEGIN OPENSSH PRIVATE KEY-----\nabc", SSH_AUTH_SOCK: "/s" });
    assert.deepEqual(env, { PATH: "/bin", SSH_AUTH_SOCK: "/s" });
});
