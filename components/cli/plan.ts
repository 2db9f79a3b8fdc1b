import * as fs from "fs";
import * as path from "path";
import { Command } from "commander";
import { SpecError } from "../errors";
import { formatPlanSummary, OfflineResult, runProgramOffline, showUnknowns } from "../offline";
import { planArtifacts } from "../artifacts";
import { formatSoftwareTable } from "../plan/software";

const REPO = path.resolve(__dirname, "../..");
/** With no arguments `rdmakit plan` plans the bundled AWS example, so a newcomer sees the kit work. */
export const DEFAULT_EXAMPLE = path.join(REPO, "examples", "aws-p5.yaml");

export interface PlanOptions {
    stack?: string;
    config?: string;
    out?: string;
    json?: boolean;
}

/** Which stack file to read and what the stack is called. */
export function resolveStackFile(opts: PlanOptions, cwd = process.cwd()): { file: string; stack: string } {
    if (opts.stack && opts.config) throw new Error("give --stack or --config, not both");
    if (opts.stack) return { file: path.join(cwd, `Pulumi.${opts.stack}.yaml`), stack: opts.stack };
    const file = opts.config ? path.resolve(cwd, opts.config) : DEFAULT_EXAMPLE;
    const stack = path.basename(file).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "");
    return { file, stack };
}

/** Runs the plan; returns the exit status (0 ok, 1 a mandatory check failed, 2 invalid input). */
export async function runPlan(opts: PlanOptions, out: (s: string) => void = console.log, err: (s: string) => void = console.error): Promise<number> {
    const { file, stack } = resolveStackFile(opts);
    if (!fs.existsSync(file)) {
        err(`rdmakit plan: ${file} does not exist (give --config FILE, or --stack NAME for Pulumi.NAME.yaml here)`);
        return 2;
    }
    let result: OfflineResult;
    try {
        result = await runProgramOffline(file, stack, path.join(REPO, "index.ts"));
    } catch (e) {
        if (e instanceof SpecError) {
            err(`rdmakit plan: ${path.relative(process.cwd(), file) || file}: ${e.message}`);
            return 2;
        }
        throw e;
    }
    const outDir = path.resolve(opts.out ?? path.join("out", stack));
    const artifacts = planArtifacts(result);
    fs.mkdirSync(outDir, { recursive: true });
    for (const [name, text] of Object.entries(artifacts.files)) {
        fs.mkdirSync(path.dirname(path.join(outDir, name)), { recursive: true });
        fs.writeFileSync(path.join(outDir, name), text);
    }
    const planJson = {
        stack,
        stackFile: file,
        spec: result.spec,
        plan: result.plan,
        checks: artifacts.checks,
        resources: result.resources.map((r) => ({ ...r, inputs: showUnknowns(r.inputs) })),
        invokes: result.invokes.map((i) => ({ ...i, args: showUnknowns(i.args) })),
        artifacts: Object.keys(artifacts.files),
    };
    fs.writeFileSync(path.join(outDir, "plan.json"), JSON.stringify(planJson, null, 2) + "\n");
    if (opts.json) {
        out(JSON.stringify(planJson, null, 2));
    } else {
        const extra = result.plan ? ["", ...formatSoftwareTable(result.plan.software)] : [];
        extra.push("", "checks:");
        if (artifacts.checks.length === 0) extra.push("  none apply to this fabric");
        for (const c of artifacts.checks) extra.push(`  ${c.ok ? "ok  " : c.mandatory ? "FAIL" : "warn"} ${c.name}${c.detail ? ` — ${c.detail}` : ""}`);
        extra.push("", `wrote ${path.relative(process.cwd(), outDir) || "."}/: plan.json ${Object.keys(artifacts.files).join(" ")}`);
        out(formatPlanSummary(result, extra));
    }
    return artifacts.checks.some((c) => !c.ok && c.mandatory) ? 1 : 0;
}

export function registerPlan(program: Command): void {
    program
        .command("plan")
        .description("show what `pulumi up` would create, offline, on Pulumi's mock engine (default: examples/aws-p5.yaml)")
        .option("--stack <name>", "read Pulumi.<name>.yaml from the current directory")
        .option("--config <file>", "read this stack settings file")
        .option("--out <dir>", "where plan.json and the artifacts go (default: out/<stack>)")
        .option("--json", "print plan.json instead of the summary")
        .action(async (opts: PlanOptions) => {
            process.exitCode = await runPlan(opts);
        });
}
