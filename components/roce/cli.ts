/**
 * `rdmakit switch-config --config FILE | --stack NAME [--switch NAME] [--out DIR]`: renders the switch configurations of a RoCE
 * stack config offline and prints them (or writes one file per switch). Thin: parsing, planning, rendering and
 * checking are the pure functions of this folder.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { EXIT, exitOnUsage, printOutput, stackFileOf, stackOptions, type StackOptions, type VerbOutput } from "../cli/verb";
import { formatIssue, type SpecIssue } from "../errors";
import { checkConsistency, formatViolation } from "./consistency";
import { planQos } from "./qos";
import { renderSwitchConfigs, type RenderedSwitchConfig } from "./render";
import { parseRoceSpec, type RoceSpec } from "./spec";

/** Config key the cluster spec lives under in a Pulumi stack settings file. */
export const CLUSTER_CONFIG_KEY = "rdmakit:cluster";

export interface SwitchConfigResult {
    configs: RenderedSwitchConfig[];
    issues: SpecIssue[];
    violations: string[];
}

/**
 * Reads a Pulumi stack settings YAML (`config: { "rdmakit:cluster": { fabric: roce, roce: {...} } }`), validates the
 * roce section and renders the switch configurations. Pure apart from reading the file.
 */
export function switchConfigFromStackFile(file: string, only?: string): SwitchConfigResult {
    const { spec, issues } = roceSpecFromStackFile(file, "switch-config renders switches");
    if (!spec || issues.length) return { configs: [], violations: [], issues };
    const plan = planQos(spec);
    const all = renderSwitchConfigs(plan);
    const violations = checkConsistency(plan, all).map(formatViolation);
    if (only !== undefined && !all.some((c) => c.switch === only)) {
        return { configs: [], violations, issues: [{ path: "--switch", message: "no switch of that name in cluster.roce.switches", value: only, allowed: all.map((c) => c.switch).join(", ") }] };
    }
    return { configs: only === undefined ? all : all.filter((c) => c.switch === only), issues: [], violations };
}

/** The validated `cluster.roce` section of a Pulumi stack settings file, or the issues that stop it. */
export function roceSpecFromStackFile(file: string, verb: string): { spec?: RoceSpec; issues: SpecIssue[]; cluster?: Record<string, unknown> } {
    const doc = parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
    const cluster = doc?.config?.[CLUSTER_CONFIG_KEY] as Record<string, unknown> | undefined;
    if (!cluster || typeof cluster !== "object") {
        return { issues: [{ path: "cluster", message: `missing: ${file} has no config."${CLUSTER_CONFIG_KEY}" object`, allowed: "a Pulumi stack settings file with config.rdmakit:cluster" }] };
    }
    if (cluster.fabric !== "roce") {
        return { issues: [{ path: "cluster.fabric", message: `${verb} for the roce fabric only`, value: cluster.fabric, allowed: "roce" }] };
    }
    return { ...parseRoceSpec(cluster.roce), cluster };
}

/** What `rdmakit switch-config` prints and its exit status: 0 rendered, 1 the plan breaks a consistency rule, 2 bad input. */
export function runSwitchConfig(opts: StackOptions & { switch?: string; out?: string }): VerbOutput {
    const where = stackFileOf(opts);
    if (where === undefined) return { code: EXIT.badInput, stderr: "rdmakit switch-config: give --config FILE or --stack NAME (Pulumi.NAME.yaml here)\n" };
    if (typeof where === "string") return { code: EXIT.badInput, stderr: `rdmakit switch-config: ${where}\n` };
    const shown = opts.config ?? path.relative(process.cwd(), where.file);
    if (!fs.existsSync(where.file)) return { code: EXIT.badInput, stderr: `rdmakit switch-config: ${shown} does not exist\n` };
    let r: SwitchConfigResult;
    try {
        r = switchConfigFromStackFile(where.file, opts.switch);
    } catch (e) {
        return { code: EXIT.badInput, stderr: `rdmakit switch-config: ${shown} cannot be read as a stack settings file: ${(e as Error).message}\n` };
    }
    if (r.issues.length) {
        return { code: EXIT.badInput, stderr: `${shown}: ${r.issues.length} problem(s)\n` + r.issues.map((i) => "  - " + formatIssue(i) + "\n").join("") };
    }
    let stdout = "";
    if (opts.out) {
        fs.mkdirSync(opts.out, { recursive: true });
        for (const c of r.configs) {
            const f = path.join(opts.out, c.fileName);
            fs.writeFileSync(f, c.text);
            stdout += `${f}  sha256 ${c.digest}\n`;
        }
    } else if (r.configs.length === 1) {
        stdout = r.configs[0].text;
    } else {
        for (const c of r.configs) stdout += `### ${c.fileName} (${c.format}, sha256 ${c.digest})\n${c.text}\n`;
    }
    const stderr = r.violations.map((v) => `FAIL consistency: ${v}\n`).join("");
    return { code: r.violations.length ? EXIT.failed : EXIT.ok, stdout, stderr };
}

export function registerSwitchConfig(program: Command): Command {
    return exitOnUsage(stackOptions(program
        .command("switch-config")
        .description("render the RoCE switch configurations (NVUE YAML, SONiC config_db.json, EOS CLI) of a stack config; exit 0 rendered, 1 the QoS plan breaks a rule, 2 bad input"))
        .option("--switch <name>", "only this switch")
        .option("--out <dir>", "write one file per switch (<name>.nvue.yaml | .config_db.json | .eos.cfg) instead of printing"))
        .action((opts: StackOptions & { switch?: string; out?: string }) => printOutput(runSwitchConfig(opts)));
}
