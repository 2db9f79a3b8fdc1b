/**
 * `rdmakit fabric check --config <stack file>`: reads the running state of every switch and host of a RoCE stack
 * (read-only) and reports drift by the plan's own rules (drift.ts). Exit 0: no drift and every device read; 1: drift,
 * a device that could not be read, or a plan that itself breaks a rule; 2: a bad spec or bad arguments. `pulumi up` runs it after the switch pushes
 * with `--spec-stdin --switches-only` (components/roce/cluster.ts).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { EXIT, stackFileOf, type StackOptions } from "../cli/verb";
import { formatIssue, redactSecrets, type SpecIssue } from "../errors";
import { roceSpecFromStackFile } from "./cli";
import { fabricDrift, formatDriftReport, type DriftReport } from "./drift";
import { readFabric, type ReadOptions } from "./fabric-read";
import { planQos } from "./qos";
import { parseRoceSpec, type RoceSpec } from "./spec";
import { runChild, RUN_INTERPRETER, SSH_KEY_PRELUDE } from "../provision/ansible";
import { readKeptInput, type KeptInput } from "../kept-input";
import { readState } from "../day2/read";
import { StateError } from "../day2/state";

/** Environment variables that carry SSH private keys (never flags: a flag shows in `ps`). */
export const FABRIC_KEY_ENV = { switch: "RDMAKIT_SWITCH_SSH_KEY", host: "RDMAKIT_HOST_SSH_KEY" } as const;

/**
 * The keys of FABRIC_KEY_ENV, taken out of this process's environment: bin/rdmakit.cjs (the installed command and the
 * one `pulumi up` runs) has moved them out before tsx started its esbuild child; run any other way, they leave it here.
 */
function envKeys(): Record<string, string | undefined> {
    const held = (globalThis as Record<symbol, Record<string, string> | undefined>)[Symbol.for("rdmakit.envKeys")] ?? {};
    const out: Record<string, string | undefined> = {};
    for (const k of Object.values(FABRIC_KEY_ENV)) {
        out[k] = held[k] ?? process.env[k];
        delete process.env[k];
    }
    return out;
}

export interface FabricCheckOptions extends ReadOptions {
    /** The `cluster.roce` section, parsed. */
    spec: RoceSpec;
}

/** Plans the spec, reads the fabric, and returns the drift report. */
export async function fabricCheck(o: FabricCheckOptions & { only?: string[] }): Promise<DriftReport> {
    const plan = planQos(o.spec);
    const only = o.only;
    const { switches, hosts } = await readFabric(only ? { ...plan, switches: plan.switches.filter((s) => only.includes(s.name)) } : plan, o);
    return fabricDrift(plan, switches, hosts);
}

function specFrom(opts: StackOptions & { specStdin?: boolean; specFile?: string; specSha256?: string }): { spec?: RoceSpec; issues: SpecIssue[]; where: string; file?: string; cluster?: Record<string, unknown> } {
    if (opts.specFile !== undefined) {
        if (!/^[0-9a-f]{64}$/.test(opts.specSha256 ?? "")) {
            return { where: "arguments", issues: [{ path: "--spec-sha256", value: opts.specSha256, message: "is required with --spec-file", allowed: "the SHA-256 of the file, 64 lowercase hex digits" }] };
        }
        let input: unknown;
        try { input = JSON.parse(readKeptInput(opts.specFile, opts.specSha256!)); } catch (e) {
            return { where: opts.specFile, issues: [{ path: "--spec-file", message: (e as Error).message, allowed: "the cluster.roce section as JSON, as pulumi up wrote it" }] };
        }
        return { where: opts.specFile, ...parseRoceSpec(input) };
    }
    if (opts.stack !== undefined && opts.config !== undefined) {
        return { where: "arguments", issues: [{ path: "--stack/--config", message: "are both given", allowed: "one of them: --stack NAME (the deployed stack) or --config FILE (a stack file here)" }] };
    }
    if (opts.stack !== undefined) {
        // the spec the stack deployed (its operating state, day2/read.ts), from any checkout
        let cluster: Record<string, unknown>;
        try {
            cluster = readState({ stack: opts.stack }).state.spec as Record<string, unknown>;
        } catch (e) {
            if (e instanceof StateError) return { where: `stack ${opts.stack}`, issues: [{ path: "--stack", message: e.message, allowed: "a stack deployed by rdmakit, readable with pulumi stack output" }] };
            throw e;
        }
        if (cluster?.fabric !== "roce") return { where: `stack ${opts.stack}`, issues: [{ path: "cluster.fabric", message: "fabric check reads fabrics for the roce fabric only", value: cluster?.fabric, allowed: "roce" }] };
        return { where: `stack ${opts.stack}`, ...parseRoceSpec(cluster.roce), cluster };
    }
    if (opts.specStdin) {
        let input: unknown;
        try { input = JSON.parse(fs.readFileSync(0, "utf8")); } catch (e) {
            return { where: "stdin", issues: [{ path: "stdin", message: `not JSON: ${(e as Error).message}`, allowed: "the cluster.roce section as JSON" }] };
        }
        return { where: "stdin", ...parseRoceSpec(input) };
    }
    const where = stackFileOf(opts);
    if (where === undefined) return { where: "arguments", issues: [{ path: "--config", message: "is required (or --stack, or --spec-stdin)", allowed: "a Pulumi stack settings file with config.rdmakit:cluster" }] };
    if (typeof where === "string") return { where: "arguments", issues: [{ path: "--stack/--config", message: where }] };
    const shown = opts.config ?? path.relative(process.cwd(), where.file);
    if (!fs.existsSync(where.file)) return { where: shown, issues: [{ path: shown, message: "does not exist", allowed: "a Pulumi stack settings file with config.rdmakit:cluster" }] };
    try {
        return { where: shown, file: where.file, ...roceSpecFromStackFile(where.file, "fabric check reads fabrics") };
    } catch (e) {
        return { where: shown, issues: [{ path: shown, message: `cannot be read as a stack settings file: ${(e as Error).message}` }] };
    }
}

export function registerFabric(program: Command): Command {
    const fabric = program.command("fabric").description("the running RoCE fabric: read-only checks against the plan");
    fabric
        .command("check")
        .description("read every switch's running configuration and LLDP table and every host's NIC QoS, then report drift from the plan (rules C1-C20)")
        .option("--stack <name>", "the spec the stack deployed, read through the Pulumi CLI from its backend (any checkout)")
        .option("--config <file>", "instead: a Pulumi stack settings file (Pulumi.<stack>.yaml) with config.rdmakit:cluster")
        .option("--spec-stdin", "read the cluster.roce section as JSON on stdin instead of --config")
        .option("--spec-file <file>", "read the cluster.roce section as JSON from this file (what `pulumi up` checks; with --spec-sha256)")
        .option("--spec-sha256 <hex>", "the SHA-256 the --spec-file must have; any other content is refused")
        .option("--switches-only", "read the switches only (what `pulumi up` checks after its pushes)")
        .option("--host-known-hosts <file>", "known_hosts for the GPU hosts; default: out/<stack>/known_hosts beside a Pulumi.<stack>.yaml when it exists, else ssh's own (never trust on first use)")
        .option("--only <switches>", "read only these switches (comma-separated names; the option may repeat): a rollout stage's check",
            (v: string, prev: string | undefined) => (prev === undefined ? v : `${prev},${v}`))
        .option("--timeout <seconds>", "per command; a device slower than this is unreadable", "30")
        .option("--json", "print the report as JSON")
        .action(async (opts: { stack?: string; config?: string; specStdin?: boolean; specFile?: string; specSha256?: string; switchesOnly?: boolean; only?: string; hostKnownHosts?: string; timeout: string; json?: boolean }) => {
            const { spec, issues, where, file, cluster } = specFrom(opts);
            if (!spec || issues.length) {
                process.stderr.write(`${where}: ${issues.length} problem(s)\n` + issues.map((i) => "  - " + formatIssue(i) + "\n").join(""));
                process.exitCode = 2;
                return;
            }
            const only = opts.only === undefined ? undefined : opts.only.split(",").map((x) => x.trim()).filter(Boolean);
            const unknown = (only ?? []).filter((n) => !spec.switches.some((s) => s.name === n));
            if (only && (!only.length || unknown.length)) {
                process.stderr.write(`--only: ${unknown.length ? `no switch named ${unknown.join(", ")} in the spec` : "is empty"}; allowed: comma-separated names of cluster.roce.switches (${spec.switches.map((s) => s.name).join(", ")})\n`);
                process.exitCode = 2;
                return;
            }
            const timeoutS = Number(opts.timeout);
            if (!Number.isFinite(timeoutS) || timeoutS <= 0) {
                process.stderr.write(`--timeout: must be a positive number of seconds, got '${opts.timeout}'\n`);
                process.exitCode = 2;
                return;
            }
            // the hosts' pinned keys `pulumi up` keeps beside the stack (out/<stack>/known_hosts), when there are some
            const stack = file ? path.basename(file).match(/^Pulumi\.(.+)\.ya?ml$/)?.[1] : undefined;
            const kept = stack ? path.join(path.dirname(file!), "out", stack, "known_hosts") : undefined;
            const hostKnownHosts = opts.hostKnownHosts ?? (kept && fs.existsSync(kept) ? kept : undefined);
            const hostUser = (cluster?.ssh as { user?: string } | undefined)?.user;
            // the keys leave this process's environment at once (no child inherits them); the host key is not even
            // read with --switches-only
            const keys = envKeys();
            const switchKey = keys[FABRIC_KEY_ENV.switch] || undefined;
            const hostKey = opts.switchesOnly ? undefined : keys[FABRIC_KEY_ENV.host] || undefined;
            let report: DriftReport;
            try {
                report = await fabricCheck({ spec, only, timeoutS, hosts: !opts.switchesOnly && !only, hostKnownHosts, hostUser, switchKey, hostKey });
            } catch (e) {
                process.stderr.write(redactSecrets(`rdmakit fabric check: ${(e as Error).message}\n`));
                process.exitCode = 2;
                return;
            }
            const failed = report.findings.length > 0 || report.unreadable.length > 0 || report.planViolations.length > 0;
            // the report goes to stderr on failure, so a `pulumi up` that fails shows it
            if (opts.json) process.stdout.write(JSON.stringify(report, null, 2) + "\n");
            else (failed ? process.stderr : process.stdout).write(formatDriftReport(report));
            process.exitCode = failed ? EXIT.failed : EXIT.ok;
        });
    return fabric;
}

/** The `pulumi up` side: what a post-push check command runs (cluster.ts wraps it in a command resource). */
export interface FabricCheckCommand {
    /**
     * Shell script, run in `dir` under `interpreter`; exits non-zero with the drift report on stderr. It names the spec
     * file and its digest, so a changed spec runs the check again.
     */
    create: string;
    /** The kit's root relative to the program's directory, where the command provider runs. */
    dir: string;
    /** Changes whenever a checked switch's rendered configuration does, i.e. whenever its push runs again. */
    triggers: string[];
    interpreter: string[];
}

/**
 * A check `pulumi up` runs after switch pushes: switches only (the GPU hosts get their QoS from the Ansible run that
 * follows, and the roce_host role checks it there); `only`: the switches of one rollout stage. `spec`: the
 * `cluster.roce` section as JSON (defaults applied), kept once for every check (kept-input.ts), its path relative to
 * `dir`. `agentKey`: the switch key is served to the run and loaded into its own ssh-agent, which the reads use (no key
 * in its environment).
 */
export function fabricCheckCommand(spec: KeptInput, digests: readonly string[], dir: string, o: { only?: string[]; agentKey?: boolean } = {}): FabricCheckCommand {
    const file = `'${spec.file.replace(/'/g, `'\\''`)}'`;
    // one option a line and at most 12 switches to an --only (it repeats), so `pulumi preview --diff` shows short lines
    const only: string[] = [];
    for (let i = 0; o.only && i < o.only.length; i += 12) only.push(`--only ${o.only.slice(i, i + 12).join(",")}`);
    const cli = ["node bin/rdmakit.cjs fabric check", `--spec-file ${file}`, `--spec-sha256 ${spec.digest}`, "--switches-only", ...only].join(" \\\n    ");
    return {
        // bin/rdmakit.cjs, not `node --import tsx`: a key in the environment leaves it before tsx starts its esbuild child
        create: o.agentKey ? [...SSH_KEY_PRELUDE, ...runChild(cli), 'exit "$rc"'].join("\n") : cli,
        dir,
        triggers: [...digests],
        interpreter: o.agentKey ? RUN_INTERPRETER : ["/bin/bash", "-c"],
    };
}
