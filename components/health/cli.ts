/**
 * `rdmakit health --config <stack.yaml> | --stack <name> --from <dir> [--json]`: grades every node folder of <dir> (out/<stack>/health
 * after validation, or captures from elsewhere laid out the same way) against what the stack's hardware should show.
 * Exit status: 0 every node healthy; 1 a node failing (each named with its component and evidence line) or not fully
 * checked; 2 a file that is not the tool's output, or a bad flag / stack file.
 */
import * as fs from "fs";
import * as path from "path";
import type { Command } from "commander";
import { exitOnUsage, printOutput } from "../cli/verb";
import { parse as parseYaml } from "yaml";
import { SpecError } from "../errors";
import { planCluster } from "../plan";
import { parseClusterSpec } from "../spec";
import { describeExpectation, healthExpectation } from "./expect";
import { formatHealth, gradeHealthDir, healthExitCode } from "./report";
import { healthRule, type HealthExpectation } from "./types";
import { readState } from "../day2/read";
import { StateError } from "../day2/state";

export interface HealthOptions {
    config?: string;
    /** the stack whose deployed spec the nodes should show (its rdmakitState output) */
    stack?: string;
    from?: string;
    json?: boolean;
}

export interface HealthResult {
    code: 0 | 1 | 2;
    stdout: string;
    stderr: string;
}

const usage = (msg: string): HealthResult => ({ code: 2, stdout: "", stderr: `rdmakit health: ${msg}\n` });

/** The expectation of a stack file (Pulumi.<stack>.yaml with config rdmakit:cluster), or the reason it has none. */
export function expectationFromStackFile(file: string): HealthExpectation | string {
    let raw: unknown;
    try {
        const doc = parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
        raw = doc?.config?.["rdmakit:cluster"];
    } catch (e) {
        return `--config ${file}: cannot be read as a stack file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    if (raw === undefined) return `--config ${file}: has no config.rdmakit:cluster (the cluster spec, see examples/)`;
    try {
        return healthExpectation(planCluster(parseClusterSpec(raw)));
    } catch (e) {
        if (e instanceof SpecError) return `--config ${file}: ${e.message}`;
        throw e;
    }
}

/** The expectation of the spec a stack deployed (its rdmakitState output, read through the Pulumi CLI). */
function expectationFromStack(stack: string, cwd: string, env: NodeJS.ProcessEnv): HealthExpectation | string {
    try {
        return healthExpectation(planCluster(parseClusterSpec(readState({ stack }, cwd, env).state.spec)));
    } catch (e) {
        if (e instanceof StateError) return e.message;
        if (e instanceof SpecError) return `stack ${stack}: the deployed rdmakit:cluster: ${e.message}`;
        throw e;
    }
}

export function runHealth(opts: HealthOptions, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): HealthResult {
    if ((opts.config === undefined) === (opts.stack === undefined)) {
        return usage("give --config FILE (the stack file whose hardware the nodes should show) or --stack NAME (the spec the stack deployed)");
    }
    if (!opts.from) return usage("give --from DIR (a folder with one sub-folder per node, e.g. out/<stack>/health)");
    const dir = path.resolve(cwd, opts.from);
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) return usage(`--from ${opts.from}: not a folder`);
    const exp = opts.stack !== undefined ? expectationFromStack(opts.stack, cwd, env) : expectationFromStackFile(path.resolve(cwd, opts.config as string));
    if (typeof exp === "string") return usage(exp);
    const nodes = gradeHealthDir(dir, exp);
    if (nodes.length === 0) return usage(`--from ${opts.from}: no node folder in it (one sub-folder per node, holding nvidia-smi-q.txt, lspci-vv.txt, ...)`);
    const code = healthExitCode(nodes);
    if (opts.json) return { code, stdout: JSON.stringify({ expectation: exp, nodes }, null, 2) + "\n", stderr: "" };
    const head = `rdmakit health: ${nodes.length} node(s) in ${path.relative(cwd, dir) || dir}, each graded against ${describeExpectation(exp)}\nrule: ${healthRule(exp)}`;
    return { code, stdout: formatHealth(nodes, head), stderr: "" };
}

/** Adds the `health` verb. */
export function registerHealth(program: Command): void {
    exitOnUsage(program
        .command("health")
        .description("grade each node's GPUs, PCIe links, NVLink, NICs, kernel log and DCGM against the stack's hardware; exit 0 healthy, 1 failing, 2 unreadable")
        .option("--config <file>", "the stack file (Pulumi.<stack>.yaml) whose hardware every node should show")
        .option("--stack <name>", "instead: the spec the stack deployed, read through the Pulumi CLI from its backend (any checkout)")
        .option("--from <dir>", "one sub-folder per node with nvidia-smi-q.txt, nvidia-smi-nvlink.txt, dcgmi-diag.txt|json, lspci-vv.txt, ibstat.txt|fi_info.txt, dmesg.txt, rdma-devices.txt")
        .option("--json", "print the graded nodes as JSON"))
        .action((opts: HealthOptions) => printOutput(runHealth(opts)));
}
