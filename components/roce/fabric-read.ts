/**
 * Reads the running fabric over SSH for `rdmakit fabric check`: the switches with their pinned host keys (as the
 * EOS push in push.ts connects: BatchMode, StrictHostKeyChecking=yes, a known_hosts file holding only the pinned key,
 * no global known_hosts), the hosts with the known_hosts the caller names. Commands are read-only (fabric-state.ts).
 * A switch or host that does not answer within the timeout, refuses the key, or exits non-zero is returned with the
 * error, and the report lists it unreadable.
 *
 * Keys: given as text, they go into an ssh-agent bound to this process (keysocket.ts startKeyAgent) on a pipe, never
 * into a file; ssh gets the agent's socket (IdentityAgent) and the key's public half (`-i`, IdentitiesOnly), and every
 * child runs with an environment without key variables (childEnv). With `hosts: false` the host key is not loaded.
 * SIGINT, SIGTERM and SIGHUP during a read stop the ssh children and the agent and remove the temporary folder
 * (known_hosts files, public keys, the agent's socket) before the process exits with 128 + the signal's number; a
 * KILL leaves that folder, which holds nothing secret, and the agent exits on its own within 10 s.
 */
import { type ChildProcess, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { type KeyAgent, startKeyAgent } from "../provision/keysocket";
import { NO_FORWARDING } from "../provision/inventory";
import { configFacts, lldpFacts, operFindings, withLldp, type HostReading, type SwitchReading } from "./drift";
import { hostReadScript, parseHostState, SWITCH_READS } from "./fabric-state";
import { sonicOperScript } from "./sonic-oper";
import type { HostPlan, QosPlan, SwitchPlan } from "./qos";

export interface ReadOptions {
    /** Private key text for the switches (the stack secret rdmakit:switchSshPrivateKey); else the SSH agent. */
    switchKey?: string;
    /** Private key text for the hosts; else the SSH agent. */
    hostKey?: string;
    /** Login on the hosts without hosts[i].sshUser (cluster.ssh.user). @default root */
    hostUser?: string;
    /** known_hosts for the hosts (e.g. out/<stack>/known_hosts); else ssh's own files, never trust on first use. */
    hostKnownHosts?: string;
    /** Seconds per command before the device counts as unreadable. @default 30 */
    timeoutS?: number;
    /** Devices read at once. @default 16 */
    parallel?: number;
    /** Read the hosts too. @default true */
    hosts?: boolean;
    /** The ssh program. @default ssh (on PATH) */
    ssh?: string;
}

interface Run { ok: boolean; stdout: string; why: string }

/** What every child of a read shares: its environment and the set the signal handler stops. */
interface Ctx { env: NodeJS.ProcessEnv; children: Set<ChildProcess> }

/** Key-carrying variables (by name or by a PEM armour in the value) are never passed on to a child. */
export function childEnv(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
    return Object.fromEntries(Object.entries(env).filter(([k, v]) => !/SSH_KEY|PRIVATE_KEY/i.test(k) && !/-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----/.test(v ?? "")));
}

/**
 * The most one of a switch's answers may hold: a switch is untrusted, and one answering gigabytes within the timeout
 * would exhaust the controller's memory (a string past V8's limit throws in the reader). The largest answer is the
 * running configuration, and the largest of those a SONiC CONFIG_DB: sonic-utilities' mock CONFIG_DB of a whole 32-port
 * switch (BGP, ACLs, buffers, QoS, every table; test/fixtures/roce/running/sonic-mock-config_db.json) is 100,296 bytes,
 * about 3.1 KB a port, so a switch of 1,024 ports (four-way breakout of a 256-port chassis) would print some 3.2 MB;
 * the kit's own rendering of a 64-port SN5600 spine is 85 KB (bench railFabric). `lldpctl -f json0` and the operational
 * reads print a few hundred bytes a port (test/fixtures/roce/running/lldpctl-json0-neighbors.json: 769 bytes for one
 * neighbour; sonic-show-pfc-priority.txt one line a port). 8 MiB leaves more than twice the 1,024-port figure (L: no
 * EOS `show running-config all` of a whole switch was found to measure; its interface blocks are tens of lines each).
 * A switch past it is unreadable ("answer over N bytes, not read"), the others are still read. Each answer is read into
 * its facts as it arrives (readSwitch), so the controller holds one answer's text per switch being read (`parallel`
 * of them, 16 by default: 128 MiB at most), never every switch's. An error's text keeps its last 8,000 characters.
 */
export const MAX_ANSWER_BYTES = 8 * 1024 * 1024;

/**
 * The most a host's answer may hold. A host prints what hostReadScript asks: per rail its MTU, `mlnx_qos -i` (about
 * 2 KB: test/fixtures/roce/running-host.ts), `ethtool -a`, 16 ECN lines and a traffic class; then one `lldpctl -f json0`
 * of its interfaces and /etc/nccl.conf: some tens of KB for 16 rails. 1 MiB leaves a wide margin; a host past it is
 * unreadable ("answer over N bytes, not read"), the others are still read. Each answer is parsed as it arrives and its
 * text dropped (readHost), so the controller holds at most `parallel` answers, not every host's.
 */
export const MAX_HOST_ANSWER_BYTES = 1024 * 1024;

function run(ctx: Ctx, cmd: string, args: string[], stdin: string, timeoutS: number, maxBytes = MAX_ANSWER_BYTES): Promise<Run> {
    return new Promise((resolve) => {
        const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"], env: ctx.env });
        ctx.children.add(child);
        // the chunks are decoded once at the end: a character split across two chunks stays whole
        let chunks: Buffer[] = [], err = "", done = false, bytes = 0;
        const out = () => Buffer.concat(chunks).toString("utf8");
        const finish = (r: Run) => { if (!done) { done = true; clearTimeout(timer); ctx.children.delete(child); chunks = []; resolve(r); } };
        const timer = setTimeout(() => { child.kill("SIGKILL"); finish({ ok: false, stdout: out(), why: `no answer within ${timeoutS} s` }); }, timeoutS * 1000);
        child.stdout.on("data", (d: Buffer) => {
            if (done) return;
            bytes += d.length;
            if (bytes > maxBytes) {
                child.kill("SIGKILL");
                finish({ ok: false, stdout: "", why: `answer over ${maxBytes} bytes, not read (stopped there)` });
                return;
            }
            chunks.push(d);
        });
        child.stderr.on("data", (d: Buffer) => { err = (err + d.toString("utf8")).slice(-8000); });
        child.on("error", (e) => finish({ ok: false, stdout: out(), why: `cannot run ${cmd}: ${e.message}` }));
        child.on("close", (code) => finish(code === 0 ? { ok: true, stdout: out(), why: "" } : { ok: false, stdout: out(), why: `exit ${code}: ${err.trim().split("\n").slice(-3).join(" / ") || "(no message)"}` }));
        child.stdin.on("error", () => undefined);
        child.stdin.end(stdin);
    });
}

async function pool<T, R>(items: readonly T[], n: number, f: (t: T) => Promise<R>): Promise<R[]> {
    const out: R[] = new Array(items.length);
    let next = 0;
    await Promise.all(Array.from({ length: Math.min(n, items.length) }, async () => {
        while (next < items.length) { const i = next++; out[i] = await f(items[i]); }
    }));
    return out;
}

const knownName = (address: string, port: number) => (port === 22 ? address : `[${address}]:${port}`);

/** How ssh reaches a device's key: the agent's socket and the key's public half, or ssh's own agent and files. */
interface Identity { agent: string; publicKeyFile: string }

/** ssh arguments for one device: no prompts, no first-contact trust. */
export function sshArgs(target: { user: string; address: string; port: number }, id: Identity | undefined, knownHosts: string | undefined, timeoutS: number): string[] {
    return [
        "-T", ...NO_FORWARDING, "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        ...(knownHosts ? ["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null"] : []),
        "-o", `ConnectTimeout=${Math.max(1, Math.min(timeoutS, 30))}`,
        "-p", String(target.port),
        ...(id ? ["-o", `IdentityAgent=${id.agent}`, "-i", id.publicKeyFile, "-o", "IdentitiesOnly=yes"] : []),
        `${target.user}@${target.address}`,
    ];
}

type Opts = Required<Pick<ReadOptions, "timeoutS" | "ssh">>;

async function readSwitch(ctx: Ctx, plan: QosPlan, sw: SwitchPlan, dir: string, id: Identity | undefined, o: Opts): Promise<SwitchReading> {
    // only the pinned key: a switch that presents another one is refused, not trusted
    const known = path.join(dir, `known_hosts.${sw.name}`);
    fs.writeFileSync(known, `${knownName(sw.managementAddress, sw.sshPort)} ${sw.hostKey.split(" ").slice(0, 2).join(" ")}\n`);
    const base = sshArgs({ user: sw.sshUser, address: sw.managementAddress, port: sw.sshPort }, id, known, o.timeoutS);
    const reads = SWITCH_READS[sw.os];
    const cfg = await run(ctx, o.ssh, [...base, reads.config], "", o.timeoutS);
    if (!cfg.ok) return { switch: sw.name, error: `${reads.config}: ${cfg.why}` };
    // each answer read into what it says before the next is asked for (drift.ts switchFacts, step by step): only the
    // facts are kept, never the text
    const facts = configFacts(sw, cfg.stdout, undefined);
    if (!facts.view) return { switch: sw.name, facts };
    const lldpRun = await run(ctx, o.ssh, [...base, reads.lldp], "", o.timeoutS);
    const lldp = lldpFacts(sw, lldpRun.ok ? lldpRun.stdout : undefined, `${reads.lldp}: ${lldpRun.why}`);
    const oper = reads.oper === undefined ? undefined : await run(ctx, o.ssh, [...base, reads.oper], sw.os === "sonic" ? sonicOperScript(sw) : "", o.timeoutS);
    operFindings(facts, sw, plan, { switch: sw.name, ...(oper === undefined ? {} : oper.ok ? { oper: oper.stdout } : { operError: `${reads.oper}: ${oper.why}` }) });
    return { switch: sw.name, facts: withLldp(facts, sw, lldp) };
}

async function readHost(ctx: Ctx, h: HostPlan, id: Identity | undefined, o: Opts & { knownHosts?: string; user?: string }): Promise<HostReading> {
    const base = sshArgs({ user: h.sshUser ?? o.user ?? "root", address: h.address, port: 22 }, id, o.knownHosts, o.timeoutS);
    const r = await run(ctx, o.ssh, [...base, "sh -s"], hostReadScript(h.railNics, h.railNetdevs), o.timeoutS, MAX_HOST_ANSWER_BYTES);
    if (!r.ok) return { host: h.name, error: `read over ssh: ${r.why}` };
    // read now, so only what it says is kept while the other hosts answer, not its text
    try { return { host: h.name, state: parseHostState(r.stdout) }; } catch (e) { return { host: h.name, error: (e as Error).message }; }
}

const SIGNALS = ["SIGINT", "SIGTERM", "SIGHUP"] as const;

/**
 * Reads every switch (and host) of the plan. Never throws for a device: its error goes into its reading. While it
 * runs, SIGINT/SIGTERM/SIGHUP clean up and end the process (the module's doc).
 */
export async function readFabric(plan: QosPlan, opts: ReadOptions = {}): Promise<{ switches: SwitchReading[]; hosts: HostReading[] }> {
    const o = { timeoutS: opts.timeoutS ?? 30, ssh: opts.ssh ?? "ssh" };
    const readHosts = opts.hosts !== false;
    const ctx: Ctx = { env: childEnv(process.env), children: new Set() };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fabric-"));
    let agent: KeyAgent | undefined;
    const cleanup = () => {
        for (const c of ctx.children) c.kill("SIGKILL");
        agent?.stop();
        fs.rmSync(dir, { recursive: true, force: true });
    };
    const onSignal = (sig: NodeJS.Signals) => { cleanup(); process.exit(128 + os.constants.signals[sig]); };
    for (const s of SIGNALS) process.on(s, onSignal);
    try {
        const keys = [opts.switchKey, readHosts ? opts.hostKey : undefined];
        const given = keys.filter((k): k is string => !!k);
        // the agent holds them for the read at most: every device, one command after another, within the timeout
        if (given.length > 0) agent = await startKeyAgent(dir, given, Math.ceil(o.timeoutS * 2 * (plan.switches.length + plan.hosts.length)) + 60, ctx.env);
        const ids: (Identity | undefined)[] = [];
        let next = 0;
        for (const [i, k] of keys.entries()) {
            if (!k || !agent) { ids.push(undefined); continue; }
            const publicKeyFile = path.join(dir, `key${i}.pub`);
            fs.writeFileSync(publicKeyFile, agent.publicKeys[next++] + "\n", { mode: 0o600 });
            ids.push({ agent: agent.socket, publicKeyFile });
        }
        const parallel = opts.parallel ?? 16;
        const switches = await pool(plan.switches, parallel, (s) => readSwitch(ctx, plan, s, dir, ids[0], o));
        const hosts = readHosts ? await pool(plan.hosts, parallel, (h) => readHost(ctx, h, ids[1], { ...o, knownHosts: opts.hostKnownHosts, user: opts.hostUser })) : [];
        return { switches, hosts };
    } finally {
        for (const s of SIGNALS) process.off(s, onSignal);
        cleanup();
    }
}
