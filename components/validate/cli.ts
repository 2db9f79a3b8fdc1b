/**
 * `rdmakit nccl-report <log>... [--json] [--expect <instance type | size | GB/s | JSON>] [--fabric efa|ib|roce
 * [--nodes N] [--gpus-per-node G]] [--chart FILE] [--out DIR]`
 * Exit status: 0 pass, 1 fail, 2 not an nccl-tests log (or an unreadable file, an unknown --expect name, a bad flag).
 */
import * as fs from "fs";
import * as path from "path";
import type { Command } from "commander";
import { exitOnUsage, printOutput, stackFileOf } from "../cli/verb";
import { expectationFor } from "../plan/expectation";
import { parseNcclLog, isNcclTestsLog, notLogReason } from "./parse";
import { gradeLog, nodesOf } from "./grade";
import { buildReport, classifyLogName, formatText, renderChartSvg, type ReportEntry } from "./report";
import { findSlowNodes, type PairLog } from "./slow";
import { svgToPng } from "./png";
import { checkRequirement, type FabricRequirement } from "./fabric";
import { readPreflight } from "./preflight";
import { formatIncast, gradeIncast } from "./incast";
import { readIncastDir } from "./incast-files";
import type { Expectation, ParsedLog } from "./types";
import { gradeHealthDir } from "../health/report";
import { healthRule, type HealthExpectation, type NodeHealth } from "../health/types";
import { MAX_FINDINGS } from "../day2/state";
import { gateNodes, gateVars, type GateNode } from "../slurm/gate";

export interface NcclReportOptions {
    /** The stack (Pulumi.<name>.yaml here) whose plan gives --fabric, --nodes, --gpus-per-node and --expect. */
    stack?: string;
    /** A stack file whose plan gives --fabric, --nodes, --gpus-per-node and --expect; flags given beside it win. */
    config?: string;
    json?: boolean;
    /** `efa` | `ib` | `roce`: the all-node and pair logs must prove a multi-node run of this fabric (fabric.ts). */
    fabric?: string;
    /** Nodes of the all-node run (with --fabric); pair logs are two nodes. */
    nodes?: string;
    /** GPUs per node (with --fabric): nRanks must be nodes x this. */
    gpusPerNode?: string;
    /** Folder of per-node preflight results (`<host>.json`, validate.yml); failed checks name their node. */
    preflight?: string;
    expect?: string;
    chart?: string;
    out?: string;
    /** Folder of the RoCE incast run (incast.yml: plan.json, counter snapshots, client logs); its grade joins the verdict. */
    incast?: string;
    /** Folder of per-node health captures (`<host>/nvidia-smi-q.txt`, ...; the node_health role), graded with --health-expect. */
    health?: string;
    /** HealthExpectation JSON (components/health/types.ts; the plan's, as ClusterValidation passes it). */
    healthExpect?: string;
    /** Append `rdmakit-result: {pass, busbwGBps, sizeBytes, slowNodes, badNodes}` as the last line (read by ClusterValidation). */
    resultLine?: boolean;
    /**
     * Slurm's validation gate: the run's nodes (a JSON file: an array of Slurm node names, or validate.yml's variables
     * file, whose `nccl_validate_hosts` they are); writes `slurm-gate.json` (components/slurm/gate.ts gateVars) into
     * --out, which playbooks/slurm-gate.yml applies on the head node.
     */
    slurmGate?: string;
    /** How the all-node run was launched (`srun --mpi=pmix` under Slurm, `mpirun` otherwise): the report names it. */
    launcher?: string;
    /**
     * The nodes left out of the all-node runs for failing health or preflight within cluster.validation.maxFailedNodes
     * (a JSON array of names, or select.ts's override file): named in the report with what they failed; the all-node
     * logs must span the others (--nodes less these); they no longer fail the verdict, and stay bad nodes.
     */
    dropped?: string;
}

export interface NcclReportResult {
    code: 0 | 1 | 2;
    stdout: string;
    stderr: string;
}

/** Expectations per kind of log, as `--expect` JSON may give them. */
export interface ExpectationSet {
    all?: Expectation;
    single?: Expectation;
    pair?: Expectation;
}

/** Grades nothing, checks correctness and completion only. */
const NO_EXPECTATION: Expectation = {
    minBusbwGBps: 0, gradeFromBytes: 0, transport: "any", requireGdr: false, source: "no --expect: bandwidth not graded",
};

function isExpectation(x: unknown): x is Expectation {
    const e = x as Expectation;
    return typeof e === "object" && e !== null && typeof e.minBusbwGBps === "number" && typeof e.gradeFromBytes === "number" &&
        ["efa", "ib", "any"].includes(e.transport) && typeof e.requireGdr === "boolean" && typeof e.source === "string";
}

type Resolver = (kind: "all" | "single" | "pair", nodes: number | null) => Expectation | undefined;

/** `--expect` → a function giving the expectation for a log of a given kind and node count. */
export function expectationResolver(expect: string | undefined): Resolver | string {
    if (expect === undefined) return () => NO_EXPECTATION;
    const text = expect.trim();
    if (text.startsWith("{")) {
        let obj: unknown;
        try {
            obj = JSON.parse(text);
        } catch (e) {
            return `--expect: not valid JSON (${(e as Error).message})`;
        }
        if (isExpectation(obj)) return () => obj as Expectation;
        const set = obj as ExpectationSet;
        for (const k of ["all", "single", "pair"] as const) {
            if (set[k] !== undefined && !isExpectation(set[k])) {
                return `--expect: "${k}" must be {minBusbwGBps, gradeFromBytes, transport: efa|ib|any, requireGdr, source}`;
            }
        }
        if (!set.all && !set.single && !set.pair) return "--expect: JSON needs an Expectation or {all, single, pair}";
        return (kind) => set[kind] ?? set.all;
    }
    if (expectationFor(text) === undefined) {
        return `--expect: unknown instance type or VM size "${text}"; give a catalog name (p5.48xlarge, Standard_ND96isr_H100_v5) or a number of GB/s`;
    }
    return (kind, nodes) => expectationFor(text, kind === "single" ? 1 : kind === "pair" ? 2 : nodes ?? 2);
}

function nodesOfLog(p: ParsedLog): number | null {
    const run = [...p.runs].reverse().find((r) => r.rows.length > 0) ?? p.runs[0];
    return run ? nodesOf(run) : null;
}

/** The graded health captures of --health, or an error naming the flag; undefined without --health. */
function readHealth(dir: string | undefined, expectJson: string | undefined): { nodes: NodeHealth[]; rule: string } | string | undefined {
    if (dir === undefined) return undefined;
    if (!expectJson) return "--health needs --health-expect (the HealthExpectation JSON of the plan)";
    let exp: HealthExpectation;
    try {
        exp = JSON.parse(expectJson) as HealthExpectation;
    } catch (e) {
        return `--health-expect: not valid JSON (${(e as Error).message})`;
    }
    if (typeof exp?.gpus !== "number" || typeof exp.nics?.count !== "number" || !["aws-efa", "azure-ib", "roce"].includes(exp.fabric)) {
        return "--health-expect: not a HealthExpectation (gpus, gpuModel, fabric, nics {names, count, linkLayer}, ...: components/health/types.ts)";
    }
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) return `--health ${dir}: not a folder`;
    return { nodes: gradeHealthDir(dir, exp), rule: healthRule(exp) };
}

/** Runs the report over files. Reads the logs; writes files only for --chart / --out. */
export function runNcclReport(files: string[], given: NcclReportOptions): NcclReportResult {
    const err: string[] = [];
    const fromPlan = planReportOptions(given);
    if (typeof fromPlan === "string") return { code: 2, stdout: "", stderr: fromPlan + "\n" };
    const opts: NcclReportOptions = { ...fromPlan, ...Object.fromEntries(Object.entries(given).filter(([, v]) => v !== undefined)) };
    const resolver = expectationResolver(opts.expect);
    if (typeof resolver === "string") return { code: 2, stdout: "", stderr: resolver + "\n" };
    const dropped = opts.dropped !== undefined ? readNodeNames("--dropped", opts.dropped, "nccl_validate_dropped") : [];
    if (typeof dropped === "string") return { code: 2, stdout: "", stderr: dropped + "\n" };
    const droppedWhy = opts.dropped !== undefined ? readDroppedWhy(opts.dropped, dropped) : {};
    const required = checkRequirement(opts.fabric, opts.nodes, opts.gpusPerNode);
    if (typeof required === "string") return { code: 2, stdout: "", stderr: required + "\n" };
    // the all-node runs spanned the nodes that were not left out
    const fabric = required?.nodes !== undefined && dropped.length ? { ...required, nodes: required.nodes - dropped.length } : required;
    if (fabric?.nodes !== undefined && fabric.nodes < 2) {
        return { code: 2, stdout: "", stderr: `--dropped: ${dropped.length} of --nodes ${required?.nodes} left out leaves fewer than two for the all-node runs\n` };
    }
    const read = opts.preflight !== undefined ? readPreflight(opts.preflight) : undefined;
    if (typeof read === "string") return { code: 2, stdout: "", stderr: read + "\n" };
    // an empty results folder (the playbook stopped before the preflight) adds nothing to a report of logs
    const preflight = read && (read.nodes.length > 0 || files.length === 0) ? read : undefined;
    if (files.length === 0 && !preflight && !opts.health) return { code: 2, stdout: "", stderr: "no logs given (and no --preflight results)\n" };
    const health = readHealth(opts.health, opts.healthExpect);
    if (typeof health === "string") return { code: 2, stdout: "", stderr: health + "\n" };
    const incastRun = opts.incast !== undefined ? readIncastDir(opts.incast) : undefined;
    if (typeof incastRun === "string") return { code: 2, stdout: "", stderr: incastRun + "\n" };
    const incast = incastRun ? { plan: incastRun.plan, grade: gradeIncast(incastRun) } : undefined;
    const gateOf = opts.slurmGate !== undefined ? readGateNodes(opts.slurmGate, opts.out) : undefined;
    if (typeof gateOf === "string") return { code: 2, stdout: "", stderr: gateOf + "\n" };
    if (opts.launcher !== undefined && !/^[A-Za-z0-9 =._/-]{1,80}$/.test(opts.launcher)) {
        return { code: 2, stdout: "", stderr: `--launcher ${JSON.stringify(opts.launcher.slice(0, 80))}: allowed are letters, digits, spaces and = . _ / - (at most 80)\n` };
    }

    const entries: ReportEntry[] = [];
    let notLogs = 0;
    for (const file of files) {
        let text: string;
        try {
            text = fs.readFileSync(file, "utf8");
        } catch (e) {
            err.push(`${file}: cannot read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
            notLogs++;
            continue;
        }
        const name = path.basename(file);
        const parsed = parseNcclLog(text, { name });
        if (!isNcclTestsLog(parsed)) {
            err.push(`${file}: ${notLogReason(text)}`);
            notLogs++;
            continue;
        }
        const { kind, hosts } = classifyLogName(name);
        const exp = resolver(kind === "single" ? "single" : kind === "pair" ? "pair" : "all", nodesOfLog(parsed)) ?? NO_EXPECTATION;
        // single-node logs are NVLink runs by design; a pair is two nodes of the fabric
        const req: FabricRequirement | undefined = !fabric || kind === "single" ? undefined
            : kind === "pair" ? { ...fabric, nodes: 2 } : fabric;
        entries.push({ name, kind, hosts, parsed, grade: gradeLog(parsed, exp, req) });
    }
    if (notLogs > 0) return { code: 2, stdout: "", stderr: err.join("\n") + "\n" };

    const singles = entries.filter((e) => e.kind === "single");
    const pairs = entries.filter((e) => e.kind === "pair");
    const slow = singles.length > 0 || pairs.length > 0
        ? findSlowNodes({
            singleNode: Object.fromEntries(singles.map((e) => [e.hosts[0], e.parsed])),
            pairs: pairs.map((e): PairLog => ({ hosts: [e.hosts[0], e.hosts[1]], log: e.parsed })),
            singleNodeExpectation: singles[0]?.grade.expectation.minBusbwGBps ? singles[0].grade.expectation : undefined,
            pairExpectation: pairs[0]?.grade.expectation.minBusbwGBps ? pairs[0].grade.expectation : undefined,
        })
        : null;
    // What the flags left ungraded. A log across nodes with no fabric to prove is never a PASS: whether NCCL crossed on
    // the fabric with GPUDirect RDMA is what validation is for. Bandwidth without a floor is said, and does not block.
    const notJudged: string[] = [];
    const graded = entries.filter((e) => e.kind !== "single" && e.kind !== "pair");
    if (opts.expect === undefined && entries.length > 0) {
        err.push("not graded: bandwidth: no --expect (an instance type or VM size, a GB/s floor, or --config/--stack for the plan's thresholds)");
    }
    const spanning = graded.filter((e) => (nodesOfLog(e.parsed) ?? 2) >= 2).concat(entries.filter((e) => e.kind === "pair"));
    if (!fabric && spanning.length > 0) {
        const unknown = spanning.filter((e) => e.kind !== "pair" && nodesOfLog(e.parsed) === null).map((e) => e.name);
        const known = spanning.map((e) => e.name).filter((n) => !unknown.includes(n));
        const what = [known.length ? `${known.join(", ")} ran across nodes` : "", unknown.length ? `${unknown.join(", ")} does not say on how many nodes it ran` : ""];
        notJudged.push(`fabric: ${what.filter(Boolean).join("; ")}, but without --fabric (or --config/--stack) ` +
            "nothing was checked of its transport: NCCL may have used sockets or staged through host memory without GPUDirect RDMA");
    }
    const judged = buildReport(entries, slow, preflight, health?.nodes, health?.rule, dropped, droppedWhy);
    const built = notJudged.length > 0 ? { ...judged, pass: false, notJudged, ...(judged.pass ? { verdict: "NOT JUDGED" as const } : {}) } : judged;
    // the incast proof (RoCE) fails the run like a failed log does; its section follows the nccl-tests text
    const report = incast ? { ...built, pass: built.pass && incast.grade.pass, incast } : built;
    const gate = gateOf ? gateFromReport(gateOf, entries, preflight, report, droppedWhy) : undefined;
    const text = formatText(report, entries) + (opts.launcher ? `  all-node run launched by: ${opts.launcher}\n` : "") +
        (gate ? formatGate(gate) : "") + (incast ? "\n" + formatIncast(incast.plan, incast.grade) : "");
    const mainExp = (entries.find((e) => e.kind === "all-fixed" || e.kind === "all-sweep" || e.kind === "other") ?? entries[0])?.grade.expectation;
    const chartEntries = entries.filter((e) => e.kind !== "single" && e.kind !== "pair");
    const svg = renderChartSvg(chartEntries.length ? chartEntries : entries, mainExp && mainExp.minBusbwGBps > 0 ? mainExp : undefined);
    const json = JSON.stringify({ ...report, ...(opts.launcher ? { launcher: opts.launcher } : {}), ...(gate ? { slurmGate: gate } : {}), expectations: Object.fromEntries(entries.map((e) => [e.name, e.grade.expectation])) }, null, 2) + "\n";

    const writeChart = (file: string): void => {
        fs.mkdirSync(path.dirname(path.resolve(file)), { recursive: true });
        if (file.endsWith(".png")) {
            const png = svgToPng(svg);
            if (!png) {
                fs.writeFileSync(file.replace(/\.png$/, ".svg"), svg);
                err.push(`no PNG renderer (@resvg/resvg-js) installed: wrote ${file.replace(/\.png$/, ".svg")} instead`);
            } else fs.writeFileSync(file, png);
        } else {
            fs.writeFileSync(file, svg);
            const png = svgToPng(svg);
            if (png) fs.writeFileSync(file.replace(/\.svg$/, "") + ".png", png);
        }
    };
    if (opts.chart) writeChart(opts.chart);
    if (opts.out) {
        fs.mkdirSync(opts.out, { recursive: true });
        fs.writeFileSync(path.join(opts.out, "nccl-report.json"), json);
        fs.writeFileSync(path.join(opts.out, "nccl-summary.txt"), text);
        writeChart(path.join(opts.out, "nccl-busbw.svg"));
        if (gate) fs.writeFileSync(path.join(opts.out, SLURM_GATE_FILE), JSON.stringify(gateVars(gate)) + "\n");
    }
    let stdout = opts.json ? json : text;
    if (opts.resultLine) {
        stdout += "rdmakit-result: " + JSON.stringify({
            pass: report.pass, busbwGBps: report.headline?.busbwGBps ?? null, sizeBytes: report.headline?.sizeBytes ?? null,
            slowNodes: report.slowNodes?.slow.map((n) => n.host) ?? [],
            badNodes: [...new Set([...(report.preflight?.badNodes ?? []), ...(report.health?.badNodes ?? [])])],
            // per node, for the stack's operating state (components/day2/state.ts): when, whose own run failed, each
            // node's health verdict with its first findings (their text clipped there)
            at: new Date().toISOString(),
            failedNodes: entries.filter((e) => e.kind === "single" && !e.grade.pass).map((e) => e.hosts[0]),
            ...(report.health ? {
                health: report.health.nodes.map((n) => ({
                    node: n.node, verdict: n.verdict,
                    findings: n.findings.slice(0, MAX_FINDINGS).map((f) => ({
                        component: f.component, message: f.message, persistence: f.persistence, ...(f.evidence ? { evidence: f.evidence } : {}),
                    })),
                })),
            } : {}),
        }) + "\n";
    }
    return { code: report.pass ? 0 : 1, stdout, stderr: err.length ? err.join("\n") + "\n" : "" };
}

/**
 * `--config` / `--stack`: the flags the plan of that stack gives (as `pulumi up`'s validation passes them: fabric,
 * nodes, GPUs per node, the expectations, the health expectation); {} without either; a string on a bad stack file.
 */
function planReportOptions(opts: NcclReportOptions): Partial<NcclReportOptions> | string {
    const where = stackFileOf(opts);
    if (where === undefined) return {};
    if (typeof where === "string") return where;
    /* eslint-disable @typescript-eslint/no-require-imports -- the spec and plan load the Pulumi SDK (about a second),
       which grading logs without a stack never needs */
    const { parseClusterSpec } = require("../spec") as typeof import("../spec");
    const { planCluster } = require("../plan") as typeof import("../plan");
    const { readStackFile } = require("../offline") as typeof import("../offline");
    const { validationArgsFromPlan } = require("./fromPlan") as typeof import("./fromPlan");
    const { fabricReportArgs } = require("./component") as typeof import("./component");
    /* eslint-enable @typescript-eslint/no-require-imports */
    const shown = opts.config ?? path.relative(process.cwd(), where.file);
    if (!fs.existsSync(where.file)) return `${shown}: does not exist (give --config FILE or --stack NAME for Pulumi.NAME.yaml here)`;
    let args: import("./component").ValidationRunArgs;
    try {
        args = validationArgsFromPlan(planCluster(parseClusterSpec(readStackFile(where.file).cluster)), where.stack);
    } catch (e) {
        return `${shown}: ${(e as Error).message}`;
    }
    const flags = fabricReportArgs(args).split(" ");
    const flag = (name: string) => (flags.indexOf(name) >= 0 ? flags[flags.indexOf(name) + 1] : undefined);
    return {
        fabric: flag("--fabric"), nodes: flag("--nodes"), gpusPerNode: flag("--gpus-per-node"),
        expect: JSON.stringify(args.expectations), healthExpect: JSON.stringify(args.health),
    };
}

/** Adds the `nccl-report` verb to the rdmakit program. */
export function registerNcclReport(program: Command): void {
    exitOnUsage(program
        .command("nccl-report")
        .description("grade nccl-tests logs offline: exit 0 pass, 1 fail or not judged (a multi-node log without --fabric or --config), 2 not an nccl-tests log")
        .argument("[log...]", "nccl-tests output files (playbook names single-<host>.log / pair-r<n>-<a>+<b>.log feed the slow-node search)")
        .option("--stack <name>", "grade as the plan of Pulumi.<name>.yaml here does during pulumi up (its fabric, nodes, GPUs per node, thresholds)")
        .option("--config <file>", "grade as the plan of this stack file does during pulumi up; flags given beside it win")
        .option("--json", "print the report as JSON on stdout")
        .option("--expect <what>", "instance type or VM size from the catalog, a busbw floor in GB/s, or Expectation JSON ({all,single,pair})")
        .option("--fabric <fabric>", "efa | ib | roce: all-node and pair logs must prove one multi-node job on this fabric's NET transport with GPUDirect RDMA")
        .option("--nodes <n>", "with --fabric: nodes the all-node run must span (>= 2)")
        .option("--gpus-per-node <g>", "with --fabric: GPUs per node; nRanks must be nodes x this")
        .option("--preflight <dir>", "also report the per-node preflight results validate.yml wrote (<host>.json); bad nodes are named")
        .option("--health <dir>", "also grade the per-node health captures (<host>/nvidia-smi-q.txt, lspci-vv.txt, ...) against --health-expect; failing nodes are bad nodes")
        .option("--health-expect <json>", "with --health: what every node should show (HealthExpectation JSON; `rdmakit health --config` works from a stack file)")
        .option("--incast <dir>", "also grade the RoCE incast run validate.yml fetched (plan.json, <host>-before/after.txt, <sender>-client.log)")
        .option("--chart <file>", "write the busbw chart (SVG; a .png name renders PNG)")
        .option("--out <dir>", "write nccl-report.json, nccl-summary.txt, nccl-busbw.svg/.png into this folder")
        .option("--result-line", "end stdout with one 'rdmakit-result: {json}' line (for the Pulumi component)")
        .option("--slurm-gate <nodes.json>", "with --out: decide which of these Slurm nodes (a JSON array of names, or validate.yml's variables file) join the partition; writes slurm-gate.json")
        .option("--launcher <how>", "how the all-node run was launched (e.g. 'srun --mpi=pmix'): the report names it")
        .option("--dropped <nodes.json>", "nodes left out of the all-node runs for failing health or preflight (a JSON array of names, or an object with nccl_validate_dropped): named with what they failed; the all-node logs must span the others"))
        .action((logs: string[], opts: NcclReportOptions) => printOutput(runNcclReport(logs, opts)));
}

/** What --slurm-gate writes into --out: the variables of playbooks/slurm-gate.yml. */
export const SLURM_GATE_FILE = "slurm-gate.json";

/** The gate's node list from --slurm-gate: names checked as inventory names, or an error naming the flag. */
function readGateNodes(file: string, out: string | undefined): string[] | string {
    if (out === undefined) return "--slurm-gate needs --out (the folder slurm-gate.json is written to)";
    const names = readNodeNames("--slurm-gate", file, "nccl_validate_hosts");
    if (typeof names !== "string" && names.length === 0) return `--slurm-gate ${file}: expected a JSON array of node names or an object with nccl_validate_hosts`;
    return names;
}

/**
 * Node names from a JSON file: an array of names, or an object whose `key` holds them (names, or hosts `{name}` as
 * nccl_validate_hosts); each checked as an inventory name. An error names the flag and the file.
 */
/**
 * The reasons select.ts gave for left-out nodes whose own results cannot say why (`nccl_validate_dropped_why`: Slurm
 * could not give them to the run), for the dropped nodes only; text from the head node's sinfo, cleaned and bounded.
 */
function readDroppedWhy(file: string, dropped: readonly string[]): Record<string, string> {
    let v: unknown;
    try {
        v = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch {
        return {};
    }
    const why = (v as Record<string, unknown> | null)?.nccl_validate_dropped_why;
    if (typeof why !== "object" || why === null || Array.isArray(why)) return {};
    const out: Record<string, string> = {};
    for (const n of dropped) {
        const w = (why as Record<string, unknown>)[n];
        if (typeof w === "string") out[n] = w.replace(/\p{Cc}/gu, " ").slice(0, 200);
    }
    return out;
}

function readNodeNames(flag: string, file: string, key: string): string[] | string {
    let v: unknown;
    try {
        v = JSON.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        return `${flag} ${file}: not a readable JSON file (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    const hosts = (v as Record<string, unknown> | null)?.[key];
    const names = Array.isArray(v) ? v : Array.isArray(hosts) ? hosts.map((h: unknown) => (typeof h === "string" ? h : (h as { name?: unknown } | null)?.name)) : undefined;
    if (!names) return `${flag} ${file}: expected a JSON array of node names or an object with ${key}`;
    const bad = names.find((n) => typeof n !== "string" || !/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/.test(n));
    if (bad !== undefined) return `${flag} ${file}: ${JSON.stringify(bad)} is not a node name (letters, digits, . _ -)`;
    return names as string[];
}

/** The gate's decision from what the report graded (components/slurm/gate.ts gateNodes). */
function gateFromReport(nodes: string[], entries: ReportEntry[], preflight: ReturnType<typeof readPreflight> | undefined,
    report: ReturnType<typeof buildReport>, leftOut: Record<string, string> = {}): GateNode[] {
    const firstFail = (e: ReportEntry) => {
        const v = [...e.grade.verdicts, ...e.grade.runs.flatMap((r) => r.verdicts)].find((x) => !x.ok);
        return v ? `${v.check}: ${v.seen}` : undefined;
    };
    const singles = entries.filter((e) => e.kind === "single");
    const all = entries.find((e) => e.kind === "all-fixed") ?? entries.find((e) => e.kind === "all-sweep");
    const allWhy = entries.filter((e) => e.kind === "all-fixed" || e.kind === "all-sweep").find((e) => !e.grade.pass);
    return gateNodes({
        nodes,
        preflight: typeof preflight === "object" ? preflight.nodes : undefined,
        health: report.health?.nodes, healthBad: report.health?.badNodes,
        single: singles.length ? new Map(singles.map((e) => [e.hosts[0], { pass: e.grade.pass, why: firstFail(e) }])) : undefined,
        slow: report.slowNodes?.slow.map((s) => ({ host: s.host, reason: s.reason })), suspects: report.slowNodes?.suspects,
        allNodes: all ? { pass: !allWhy, why: allWhy ? firstFail(allWhy) : undefined } : undefined,
        leftOut: new Map(Object.entries(leftOut)),
    });
}

/** The gate's lines of the text report. */
function formatGate(nodes: GateNode[]): string {
    const out = nodes.filter((n) => !n.ok);
    const lines = [`  Slurm gate: ${nodes.length - out.length} of ${nodes.length} node(s) join the partition` +
        (out.length ? `; drained: ${out.length}` : "")];
    for (const n of out.slice(0, 50)) lines.push(`    drain ${n.name}: ${n.why}`);
    if (out.length > 50) lines.push(`    (+${out.length - 50} more in slurm-gate.json)`);
    return lines.join("\n") + "\n";
}
