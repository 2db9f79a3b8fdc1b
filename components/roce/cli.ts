/**
 * `rdmakit switch-config --config FILE [--switch NAME] [--out DIR]`: renders the switch configurations of a RoCE
 * stack config offline and prints them (or writes one file per switch). Thin: parsing, planning, rendering and
 * checking are the pure functions of this folder.
 */
import * as fs from "node:fs";
import * as path from "node:path";
import type { Command } from "commander";
import { parse as parseYaml } from "yaml";
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

export function registerSwitchConfig(program: Command): Command {
    return program
        .command("switch-config")
        .description("render the RoCE switch configurations (NVUE YAML, SONiC config_db.json, EOS CLI) of a stack config")
        .requiredOption("--config <file>", "Pulumi stack settings file (Pulumi.<stack>.yaml) with config.rdmakit:cluster")
        .option("--switch <name>", "only this switch")
        .option("--out <dir>", "write one file per switch (<name>.nvue.yaml | .config_db.json | .eos.cfg) instead of printing")
        .action((opts: { config: string; switch?: string; out?: string }) => {
            const r = switchConfigFromStackFile(opts.config, opts.switch);
            if (r.issues.length) {
                process.stderr.write(`${opts.config}: ${r.issues.length} problem(s)\n` + r.issues.map((i) => "  - " + formatIssue(i) + "\n").join(""));
                process.exitCode = 1;
                return;
            }
            for (const v of r.violations) process.stderr.write(`consistency: ${v}\n`);
            if (opts.out) {
                fs.mkdirSync(opts.out, { recursive: true });
                for (const c of r.configs) {
                    const f = path.join(opts.out, c.fileName);
                    fs.writeFileSync(f, c.text);
                    process.stdout.write(`${f}  sha256 ${c.digest}\n`);
                }
            } else if (r.configs.length === 1) {
                process.stdout.write(r.configs[0].text);
            } else {
                for (const c of r.configs) process.stdout.write(`### ${c.fileName} (${c.format}, sha256 ${c.digest})\n${c.text}\n`);
            }
            if (r.violations.length) process.exitCode = 2;
        });
}
