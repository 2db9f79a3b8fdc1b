/**
 * Reads the running fabric over SSH for `rdmakit fabric check`: the switches with their pinned host keys (as the
 * EOS push in push.ts connects: BatchMode, StrictHostKeyChecking=yes, a known_hosts file holding only the pinned key,
 * no global known_hosts), the hosts with the known_hosts the caller names. Commands are read-only (fabric-state.ts).
 * A switch or host that does not answer within the timeout, refuses the key, or exits non-zero is returned with the
 * error, and the report lists it unreadable.
 */
import { spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import type { HostReading, SwitchReading } from "./drift";
import { hostReadScript, SWITCH_READS } from "./fabric-state";
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

function run(cmd: string, args: string[], stdin: string, timeoutS: number): Promise<Run> {
    return new Promise((resolve) => {
        const child = spawn(cmd, args, { stdio: ["pipe", "pipe", "pipe"] });
        let out = "", err = "", done = false;
        const finish = (r: Run) => { if (!done) { done = true; clearTimeout(timer); resolve(r); } };
        const timer = setTimeout(() => { child.kill("SIGKILL"); finish({ ok: false, stdout: out, why: `no answer within ${timeoutS} s` }); }, timeoutS * 1000);
        child.stdout.on("data", (d: Buffer) => { out += d.toString("utf8"); });
        child.stderr.on("data", (d: Buffer) => { err += d.toString("utf8"); });
        child.on("error", (e) => finish({ ok: false, stdout: out, why: `cannot run ${cmd}: ${e.message}` }));
        child.on("close", (code) => finish(code === 0 ? { ok: true, stdout: out, why: "" } : { ok: false, stdout: out, why: `exit ${code}: ${err.trim().split("\n").slice(-3).join(" / ") || "(no message)"}` }));
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

/** ssh arguments for one device: no prompts, no first-contact trust. */
function sshArgs(target: { user: string; address: string; port: number }, keyFile: string | undefined, knownHosts: string | undefined, timeoutS: number): string[] {
    return [
        "-T", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
        ...(knownHosts ? ["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null"] : []),
        "-o", `ConnectTimeout=${Math.max(1, Math.min(timeoutS, 30))}`,
        "-p", String(target.port),
        ...(keyFile ? ["-i", keyFile, "-o", "IdentitiesOnly=yes"] : []),
        `${target.user}@${target.address}`,
    ];
}

async function readSwitch(sw: SwitchPlan, dir: string, keyFile: string | undefined, o: Required<Pick<ReadOptions, "timeoutS" | "ssh">>): Promise<SwitchReading> {
    // only the pinned key: a switch that presents another one is refused, not trusted
    const known = path.join(dir, `known_hosts.${sw.name}`);
    fs.writeFileSync(known, `${knownName(sw.managementAddress, sw.sshPort)} ${sw.hostKey.split(" ").slice(0, 2).join(" ")}\n`);
    const base = sshArgs({ user: sw.sshUser, address: sw.managementAddress, port: sw.sshPort }, keyFile, known, o.timeoutS);
    const reads = SWITCH_READS[sw.os];
    const cfg = await run(o.ssh, [...base, reads.config], "", o.timeoutS);
    if (!cfg.ok) return { switch: sw.name, error: `${reads.config}: ${cfg.why}` };
    const lldp = await run(o.ssh, [...base, reads.lldp], "", o.timeoutS);
    const oper = reads.oper === undefined ? undefined : await run(o.ssh, [...base, reads.oper], "", o.timeoutS);
    return {
        switch: sw.name, config: cfg.stdout, ...(lldp.ok ? { lldp: lldp.stdout } : { lldpError: `${reads.lldp}: ${lldp.why}` }),
        ...(oper === undefined ? {} : oper.ok ? { oper: oper.stdout } : { operError: `${reads.oper}: ${oper.why}` }),
    };
}

async function readHost(h: HostPlan, keyFile: string | undefined, o: Required<Pick<ReadOptions, "timeoutS" | "ssh">> & { knownHosts?: string; user?: string }): Promise<HostReading> {
    const base = sshArgs({ user: h.sshUser ?? o.user ?? "root", address: h.address, port: 22 }, keyFile, o.knownHosts, o.timeoutS);
    const r = await run(o.ssh, [...base, "sh -s"], hostReadScript(h.railNics, h.railNetdevs), o.timeoutS);
    return r.ok ? { host: h.name, output: r.stdout } : { host: h.name, error: `read over ssh: ${r.why}` };
}

/** Reads every switch (and host) of the plan. Never throws for a device: its error goes into its reading. */
export async function readFabric(plan: QosPlan, opts: ReadOptions = {}): Promise<{ switches: SwitchReading[]; hosts: HostReading[] }> {
    const o = { timeoutS: opts.timeoutS ?? 30, ssh: opts.ssh ?? "ssh" };
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fabric-"));
    try {
        const keyFile = (name: string, key?: string) => {
            if (!key) return undefined;
            const f = path.join(dir, name);
            fs.writeFileSync(f, key.endsWith("\n") ? key : key + "\n", { mode: 0o600 });
            return f;
        };
        const swKey = keyFile("switch_key", opts.switchKey);
        const hostKey = keyFile("host_key", opts.hostKey);
        const parallel = opts.parallel ?? 16;
        const switches = await pool(plan.switches, parallel, (s) => readSwitch(s, dir, swKey, o));
        const hosts = opts.hosts === false ? [] : await pool(plan.hosts, parallel, (h) => readHost(h, hostKey, { ...o, knownHosts: opts.hostKnownHosts, user: opts.hostUser }));
        return { switches, hosts };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}
