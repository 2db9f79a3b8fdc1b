/**
 * How a rendered configuration reaches its switch. The programs are shipped files (components/scripts/roce/, linted by
 * test/scripts-lint.test.ts); each push resource runs push.sh with arguments: the switch's parameters, the kept file
 * of its rendered text (kept-input.ts) and that text's sha256, and the sha256 of the scripts it runs. A change of
 * configuration or of script is a change of the command's inputs, so the push runs again exactly then; the script
 * refuses a text or a script whose digest is not the planned one. Every script runs one command per line, each under
 * an explicit check (no `set -e`, no `a && b` chains: a failure anywhere stops the push with a message that names the
 * switch and the step), and every push is a transaction in the switch OS's own terms: nothing is saved or confirmed
 * unless every step before succeeded, and a failure after the change went live rolls it back.
 *
 * - nvue (nvue_push.sh, on the switch): discard stale pending edits, turn auto-save off for the push window (an
 *   unconfirmed apply must not reach startup.yaml), drop the kit's QoS objects and the qos of the ports an earlier push
 *   owned, `nv config patch` the rendered file, `nv config apply --confirm 600s` (reverts by itself unless confirmed),
 *   verify the applied tree and what switchd runs, confirm, save, put the operator's auto-save setting back (also after
 *   a rollback; a push that died leaves it recorded on the switch for the next push to restore).
 * - sonic (sonic_push.sh, on the switch): refuse a switch on the traditional buffer model, compute an RFC 6902 patch
 *   against the running CONFIG_DB that replaces the kit's rows (sonic_patch.py), `config checkpoint`, `config
 *   apply-patch --dry-run` (YANG validation), then, under a dead-man timer (sonic_deadman.sh) that restores the
 *   checkpoint, the apply job detached from the session (sonic_job.sh): apply, verify, `config save`.
 * - eos (push.sh itself, plain ssh with the pinned host key, since the EOS login shell is the CLI): a configure session
 *   with the rendered lines, `commit timer 00:10:00` (reverts by itself), verify (the session and running config
 *   agree), confirm with `configure session <s> commit`, `copy running-config startup-config`; `abort` on failure.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
import { assetPath } from "../assets";
import type { KeptInput } from "../kept-input";
import { RUN_INTERPRETER } from "../provision/ansible";
import type { RenderedSwitchConfig } from "./render";
import type { SwitchPlan } from "./qos";
import type { NetworkOs } from "./spec";
export { parsePushCommand, type PushArgs } from "./push-args";

export interface PushCommand {
    /** Run here (`@pulumi/command` local): `exec bash <push.sh> --option value …`, one option group a line. */
    create: string;
    delete: string;
    /**
     * The shell the command runs under: with a served switch key its own ssh-agent (RUN_INTERPRETER; push.sh sources
     * the kept key prelude, which loads the key from the program's key socket into that agent, never into a file, an
     * input or an environment), else plain bash.
     */
    interpreter: string[];
}

/** Single-quote a value for POSIX sh. */
export function shq(s: string): string {
    return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * The shipped files each push runs, in the order push.sh lists them (it checks their digest before it runs any): the
 * driver, and what it sends to the switch.
 */
export const PUSH_SCRIPTS: Readonly<Record<NetworkOs, readonly string[]>> = {
    nvue: ["push.sh", "nvue_push.sh", "nvue_verify.py", "nvue_autosave.py", "nvue_owned_paths.py"],
    sonic: ["push.sh", "sonic_push.sh", "sonic_job.sh", "sonic_deadman.sh", "sonic_patch.py", "sonic_ownership.json"],
    eos: ["push.sh"],
};

const sha256 = (b: string | Buffer) => createHash("sha256").update(b).digest("hex");
const digests = new Map<NetworkOs, string>();
/** The digest push.sh computes over its files: sha256 of `sha256sum <files>` (`<hex>  <name>` lines), run in their folder. */
export function pushScriptsDigest(os: NetworkOs): string {
    let d = digests.get(os);
    if (!d) {
        d = sha256(PUSH_SCRIPTS[os].map((f) => `${sha256(fs.readFileSync(assetPath("components", "scripts", "roce", f)))}  ${f}\n`).join(""));
        digests.set(os, d);
    }
    return d;
}

/** Words per line of a list option (ports, speeds), so the command's lines stay short in `pulumi preview --diff`. */
const WORDS_PER_LINE = 12;

/**
 * SONiC's port speeds (Mb/s, CONFIG_DB PORT.speed), checked read-only on the switch: the switch's most common speed
 * once (`--port-speed`), and the ports at any other speed by name (`--speeds 'port=Mb/s …'`).
 */
function speedArgs(sw: SwitchPlan): string[] {
    const mbps = (p: SwitchPlan["ports"][number]) => p.speedGbps * 1000;
    const count = new Map<number, number>();
    for (const p of sw.ports) count.set(mbps(p), (count.get(mbps(p)) ?? 0) + 1);
    const common = [...count].sort((a, b) => b[1] - a[1] || a[0] - b[0])[0]?.[0];
    if (common === undefined) return [];
    const other = sw.ports.filter((p) => mbps(p) !== common).map((p) => `${p.name}=${mbps(p)}`);
    const lines = [`--port-speed ${common}`];
    for (let i = 0; i < other.length; i += WORDS_PER_LINE) lines.push(`--speeds ${shq(other.slice(i, i + WORDS_PER_LINE).join(" "))}`);
    return lines;
}

/**
 * What the switch's text is made from (qos.ts switchRenderInput), in words: the push's `--plan` lines. They make
 * `pulumi preview --diff` of a QoS change show the values that change on the switch (its text is a kept file, named in
 * the command by path and digest only), and push.sh prints them after the apply; nothing is applied from them. The
 * ports are grouped by their cable and headroom (a rail leaf's 64 host ports are one line).
 */
export function planLines(sw: SwitchPlan): string[] {
    const cls = (name: string, c: SwitchPlan["roce"]) => `${name} priority ${c.priority} tc ${c.trafficClass} queue ${c.queue} pg ${c.priorityGroup}`;
    // the groups in the order their first port comes; a port joins the group whose figures print as its own do (the
    // numbers compared, not their texts made for each of a fabric's ~37,000 ports)
    const groups: PortGroup[] = [];
    let last: PortGroup | undefined;
    for (const p of sw.ports) {
        if (!last || !inGroup(last, p)) {
            last = groups.find((g) => inGroup(g, p));
            if (!last) groups.push(last = { cableLengthM: p.cableLengthM, headroomBytes: p.headroomBytes, ports: 0 });
        }
        last.ports++;
    }
    return [
        `mtu ${sw.mtu}, default cable ${sw.cableLengthM} m` + (sw.os === "sonic" ? `, pfc-to-pg map ${sw.pfcToPgMap ? "on" : "off"}` : "") +
            (sw.eosQueueKeyword ? `, queue keyword ${sw.eosQueueKeyword}` : ""),
        `${cls("roce", sw.roce)}; ${cls("cnp", sw.cnp)}; ${cls("other", sw.other)}`,
        ...groups.map((g) => `cable ${g.cableLengthM} m${g.headroomBytes === undefined ? "" : `, headroom ${g.headroomBytes} B`}: ${g.ports} port${g.ports === 1 ? "" : "s"}`),
    ];
}

interface PortGroup { cableLengthM: number; headroomBytes: number | undefined; ports: number }

/** Whether the port's cable and headroom print as the group's: equal numbers (0 and -0 print alike, NaN as NaN). */
function inGroup(g: PortGroup, p: SwitchPlan["ports"][number]): boolean {
    return sameFigure(g.cableLengthM, p.cableLengthM) && sameFigure(g.headroomBytes, p.headroomBytes);
}
const sameFigure = (a: number | undefined, b: number | undefined) => a === b || (a !== a && b !== b);

export interface PushWhere {
    /** The kept file of the rendered text (kept-input.ts), as the command's working directory reaches it. */
    config: KeptInput;
    /** The run-key prelude the program kept, when the switch key is served to the run (keysocket.ts). */
    keyPrelude?: KeptInput;
    /** The folder the scripts are read from, as the command's working directory reaches it. @default the package's */
    scriptsDir?: string;
}

/** The shipped scripts' folder as a command run in `cwd` names it (once per folder: a fabric has hundreds of pushes). */
function scriptsDirFrom(cwd: string): string {
    if (scriptsDir?.cwd !== cwd) scriptsDir = { cwd, dir: path.relative(cwd, assetPath("components", "scripts", "roce")) || "." };
    return scriptsDir.dir;
}
let scriptsDir: { cwd: string; dir: string } | undefined;

/**
 * The command that applies `cfg` to `sw`, run here (`@pulumi/command` local). With `where.keyPrelude`, the switch key is
 * served to the run (keysocket.ts) and loaded into the run's own ssh-agent; else ssh uses the caller's agent or ssh
 * config. Deleting the resource leaves the switch configured: pulling QoS from a live fabric would drop RoCE traffic.
 */
export function pushCommandFor(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless: boolean, where: PushWhere): PushCommand {
    if (cfg.switch !== sw.name || cfg.os !== sw.os) throw new Error(`pushCommandFor: config for ${cfg.switch}/${cfg.os} given with switch ${sw.name}/${sw.os}`);
    if (where.config.digest !== cfg.digest) throw new Error(`pushCommandFor: the kept file ${where.config.file} has sha256 ${where.config.digest}, the rendered text of ${cfg.switch} ${cfg.digest}`);
    const dir = where.scriptsDir ?? scriptsDirFrom(process.cwd());
    const list = (opt: string, words: string[]) => {
        const lines: string[] = [];
        for (let i = 0; i < words.length; i += WORDS_PER_LINE) lines.push(`${opt} ${shq(words.slice(i, i + WORDS_PER_LINE).join(" "))}`);
        return lines;
    };
    const lines = [
        `exec bash ${shq(path.join(dir, "push.sh"))}`,
        `--os ${sw.os} --switch ${shq(sw.name)}`,
        `--address ${shq(sw.managementAddress)} --port ${sw.sshPort} --user ${shq(sw.sshUser)}`,
        `--host-key ${shq(sw.hostKey.split(" ").slice(0, 2).join(" "))}`,
        `--config ${shq(where.config.file)}`,
        `--config-sha256 ${cfg.digest}`,
        `--scripts-sha256 ${pushScriptsDigest(sw.os)}`,
        `--mode ${lossless ? "lossless" : "lossy"}` + (lossless ? ` --priority-group ${sw.roce.priorityGroup}` : ""),
        ...(where.keyPrelude ? [`--key-prelude ${shq(where.keyPrelude.file)}`, `--key-prelude-sha256 ${where.keyPrelude.digest}`] : []),
        ...planLines(sw).map((l) => `--plan ${shq(l)}`),
        ...list("--ports", sw.ports.map((p) => p.name)),
        ...(sw.os === "sonic" ? speedArgs(sw) : []),
    ];
    return {
        create: lines.join(" \\\n    "),
        delete: `echo "rdmakit: leaving the RoCE QoS on ${sw.name} in place (remove it by hand if the fabric is retired)"`,
        interpreter: where.keyPrelude ? RUN_INTERPRETER : ["/bin/bash", "-c"],
    };
}

/** Switches in the first batch after the canary: a bad plan that the canary's check missed reaches at most these. */
export const ROLLOUT_BATCH = 8;
/** Each later batch doubles, up to this many switches, so a 384-switch fabric takes 9 stages after the canary, not 48. */
export const ROLLOUT_BATCH_MAX = 64;

/**
 * The order switch pushes run in: the first switch alone (the canary), then the rest in spec order in batches of
 * `batch`, 2 × `batch`, 4 × `batch` … capped at `max` (a wave grows only after a smaller one proved the change). Each
 * stage starts after the previous stage's check (cluster.ts), so exactly one push depends on nothing.
 */
export function rolloutStages(switches: readonly string[], batch = ROLLOUT_BATCH, max = ROLLOUT_BATCH_MAX): string[][] {
    if (!switches.length) return [];
    const stages = [[switches[0]]];
    for (let i = 1, size = batch; i < switches.length; i += size, size = Math.min(max, size * 2)) stages.push(switches.slice(i, i + size));
    return stages;
}
