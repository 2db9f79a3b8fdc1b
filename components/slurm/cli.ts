/**
 * `rdmakit slurm-config --config <stack file> | --stack <name> --out <dir> [--ec2-topology <json>] [--instance-ids <json>]`:
 * the Slurm files of a stack, offline, for review. Exit 0 written, 1 the stack runs no Slurm, 2 bad input.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { SpecError } from "../errors";
import { planCluster } from "../plan";
import { parseClusterSpec } from "../spec";
import { exitOnUsage, printOutput, type VerbOutput } from "../cli/verb";
import { Ec2TopologyError, parseEc2TopologyResponse, parseInstanceIds } from "./ec2-topology";
import { slurmFiles, type Ec2Topology } from "./render";

export interface SlurmConfigOptions { config?: string; stack?: string; out: string; ec2Topology?: string; instanceIds?: string }

const usage = (msg: string): VerbOutput => ({ stderr: `rdmakit slurm-config: ${msg}\n`, code: 2 });

function readJson(file: string, what: string): unknown {
    try {
        return JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        throw new Ec2TopologyError(`${what} ${file}: ${(e as Error).message}`);
    }
}

export function runSlurmConfig(opts: SlurmConfigOptions, cwd = process.cwd()): VerbOutput {
    if ((opts.config === undefined) === (opts.stack === undefined)) return usage("give --config <stack file> or --stack <name> (one of them)");
    const file = opts.config ? path.resolve(cwd, opts.config) : path.join(cwd, `Pulumi.${opts.stack}.yaml`);
    if (!fs.existsSync(file)) return usage(`${file} does not exist`);
    let plan;
    try {
        const doc = parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
        const raw = doc?.config?.["rdmakit:cluster"];
        if (raw === undefined) return usage(`${file} has no config."rdmakit:cluster"`);
        plan = planCluster(parseClusterSpec(raw));
    } catch (e) {
        if (e instanceof SpecError) return usage(`${path.relative(cwd, file) || file}: ${e.message}`);
        return usage(`${file}: ${(e as Error).message}`);
    }
    const s = plan.scheduler;
    if (s.type !== "slurm") return { stderr: `rdmakit slurm-config: cluster ${plan.cluster} runs no scheduler (scheduler.type none); on roce name a cluster.scheduler.controller\n`, code: 1 };
    let ec2: Ec2Topology | undefined;
    try {
        if (opts.ec2Topology !== undefined) {
            if (s.topology.kind !== "ec2") return usage(`--ec2-topology applies to aws-efa clusters; ${plan.cluster} is ${plan.fabric}`);
            if (opts.instanceIds === undefined) return usage("--ec2-topology needs --instance-ids <json file of node name -> instance id> (e.g. from the stack's outputs)");
            ec2 = { instances: parseEc2TopologyResponse(readJson(opts.ec2Topology, "--ec2-topology")), ids: parseInstanceIds(readJson(opts.instanceIds, "--instance-ids")) };
        }
    } catch (e) {
        if (e instanceof Ec2TopologyError) return usage(e.message);
        throw e;
    }
    const files = slurmFiles(plan, ec2);
    const out = path.resolve(cwd, opts.out);
    fs.mkdirSync(out, { recursive: true });
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(out, name), text);
    const nodes = s.nodeNames.map((name, i) => ({
        name,
        ...(s.nodeAddresses ? { host: name, address: s.nodeAddresses[i] } : {}),
        ...(ec2 ? { instanceId: ec2.ids[name] ?? null } : {}),
    }));
    fs.writeFileSync(path.join(out, "nodes.json"), JSON.stringify({ cluster: plan.cluster, partition: s.partition, nodes }, null, 2) + "\n");
    const warn = s.topology.kind === "flat" ? [`topology: flat — ${s.topology.why}`] : s.topology.kind === "tree" ? s.topology.warnings.map((w) => `topology: ${w}`) : [];
    return {
        stdout: `wrote ${path.relative(cwd, out) || "."}/: ${Object.keys(files).join(" ")} nodes.json (${s.nodeNames.length} nodes, partition ${s.partition})\n`,
        stderr: warn.map((w) => `warning: ${w}\n`).join(""),
        code: 0,
    };
}

export function registerSlurmConfig(program: Command): void {
    exitOnUsage(program
        .command("slurm-config")
        .description("write a stack's Slurm files (slurm.conf, gres.conf, cgroup.conf, topology.conf, nodes.json) offline, for review")
        .option("--config <file>", "Pulumi stack settings file with config.rdmakit:cluster")
        .option("--stack <name>", "read Pulumi.<name>.yaml from the current directory")
        .requiredOption("--out <dir>", "where the files go")
        .option("--ec2-topology <file>", "aws ec2 describe-instance-topology output (JSON) for the AWS tree")
        .option("--instance-ids <file>", "JSON object of Slurm node name -> EC2 instance id, with --ec2-topology")
        .action((opts: SlurmConfigOptions) => printOutput(runSlurmConfig(opts))));
}

