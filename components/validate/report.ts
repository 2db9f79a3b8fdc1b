/**
 * Report of a validation: short text for the `pulumi up` output, JSON, and an SVG chart of busbw against
 * message size (log2 x axis) with the expected line. Pure: returns strings; writing files is the caller's job.
 */
import type { Expectation, LogGrade, NcclRun, ParsedLog, Verdict } from "./types";
import { failures, formatBytes, formatGBps, largestPoint, nodesOf } from "./grade";
import type { SlowNodeReport } from "./slow";
import { pkeyMismatches, preflightFailures, softwareLines, softwareMismatches, type PreflightReport, type SoftwareLine } from "./preflight";
import { namedFew } from "../listing";
import type { NodeHealth } from "../health/types";
import { printableLine } from "../redact";

/** What a log was in the validation: names follow the playbook's convention (see `classifyLogName`). */
export type LogKind = "all-fixed" | "all-sweep" | "single" | "pair" | "other";

export interface ReportEntry {
    name: string;
    kind: LogKind;
    /** `single`: the host; `pair`: both hosts. */
    hosts: string[];
    parsed: ParsedLog;
    grade: LogGrade;
}

export interface ValidationReport {
    pass: boolean;
    /** busbw at the largest size of the main all-node run (fixed, else sweep, else the first log). */
    headline: { log: string; sizeBytes: number; busbwGBps: number | null; outOfPlace: number | null; inPlace: number | null } | null;
    logs: Array<{
        name: string; kind: LogKind; hosts: string[]; pass: boolean;
        runs: Array<{ collective: string | null; nRanks: number | null; nodes: number | null; completed: boolean; rows: number; missingColumns: string[];
            avgBusbwGBps: number | null; gradedBusbwGBps: number | null; largest: { sizeBytes: number; outOfPlace: number | null; inPlace: number | null } | null }>;
        verdicts: Array<Verdict & { where: string }>;
    }>;
    slowNodes: SlowNodeReport | null;
    /** What the flags left ungraded (no --expect, a multi-node log without --fabric), each with why: the run is no pass. */
    notJudged?: string[];
    /** "NOT JUDGED" when everything graded passed but notJudged is not empty (pass is then false). */
    verdict?: "NOT JUDGED";
    /** Per-node preflight results, when the report was given them (`--preflight`). */
    preflight?: { nodes: number; badNodes: string[] };
    /**
     * What the nodes run, per component (from the preflight files: the nodes' own probes), and the nodes that have no
     * record (site.yml has not run there). Present with `preflight`.
     */
    software?: { lines: SoftwareLine[]; unrecorded: string[] };
    failed: Array<Verdict & { where: string }>;
    /**
     * Each node's health verdict (components/health, `--health`) beside its nccl-tests verdict (its single-node log,
     * slow in the pair search); a failing node is a bad node and fails the report.
     */
    health?: { nodes: Array<NodeHealth & { nccl: "ok" | "FAIL" | "slow" | "-" }>; badNodes: string[]; rule?: string };
    /**
     * Nodes that failed health or preflight and were left out of the all-node runs, within
     * cluster.validation.maxFailedNodes (select.ts): each with what it failed. They stay bad nodes (the Slurm gate
     * drains them) but fail the report no more than they failed the run.
     */
    dropped?: Array<{ node: string; why: string }>;
}

/**
 * File-name convention of playbooks/validate.yml: `all-fixed.log`, `all-sweep.log`, `single-<host>.log`,
 * `pair-r<round>-<hostA>+<hostB>.log` (`+` cannot occur in a host name).
 */
export function classifyLogName(fileName: string): { kind: LogKind; hosts: string[] } {
    const base = fileName.replace(/^.*[\\/]/, "").replace(/\.(log|txt|out)$/, "");
    if (base === "all-fixed") return { kind: "all-fixed", hosts: [] };
    if (base === "all-sweep") return { kind: "all-sweep", hosts: [] };
    let m = base.match(/^single-(.+)$/);
    if (m) return { kind: "single", hosts: [m[1]] };
    m = base.match(/^pair-(?:r\d+-)?([^+]+)\+(.+)$/);
    if (m) return { kind: "pair", hosts: [m[1], m[2]] };
    return { kind: "other", hosts: [] };
}

function mainEntry(entries: ReportEntry[]): ReportEntry | undefined {
    // pair and single-node logs never give the cluster's headline figure
    return entries.find((e) => e.kind === "all-fixed") ?? entries.find((e) => e.kind === "all-sweep") ??
        entries.find((e) => e.kind === "other");
}

function lastRunWithRows(p: ParsedLog): NcclRun | undefined {
    return [...p.runs].reverse().find((r) => r.rows.length > 0);
}

/** A node's nccl-tests verdict: its single-node log, or slow when the pair search named it. */
function ncclOfNode(node: string, entries: ReportEntry[], slowNodes: SlowNodeReport | null): "ok" | "FAIL" | "slow" | "-" {
    if (slowNodes?.slow.some((s) => s.host === node)) return "slow";
    const single = entries.find((e) => e.kind === "single" && e.hosts[0] === node);
    return single ? (single.grade.pass ? "ok" : "FAIL") : "-";
}

export function buildReport(entries: ReportEntry[], slowNodes: SlowNodeReport | null = null, preflight?: PreflightReport, health?: NodeHealth[], healthRuleText?: string,
    dropped: readonly string[] = [], givenWhy: Readonly<Record<string, string>> = {}): ValidationReport {
    const main = mainEntry(entries);
    let headline: ValidationReport["headline"] = null;
    if (main) {
        const run = lastRunWithRows(main.parsed);
        const p = run ? largestPoint(run) : null;
        if (p) {
            const vals = [p.outOfPlace, p.inPlace].filter((v): v is number => v !== null);
            headline = { log: main.name, sizeBytes: p.sizeBytes, busbwGBps: vals.length ? Math.min(...vals) : null, outOfPlace: p.outOfPlace, inPlace: p.inPlace };
        }
    }
    const logs = entries.map((e) => ({
        name: e.name, kind: e.kind, hosts: e.hosts, pass: e.grade.pass,
        runs: e.parsed.runs.map((r, i) => ({
            collective: r.collective, nRanks: r.nRanks, nodes: nodesOf(r), completed: r.completed, rows: r.rows.length, missingColumns: r.missingColumns,
            avgBusbwGBps: r.avgBusbwGBps, gradedBusbwGBps: e.grade.runs[i]?.gradedBusbwGBps ?? null, largest: largestPoint(r),
        })),
        verdicts: [...e.grade.verdicts.map((v) => ({ ...v, where: e.name })),
            ...e.grade.runs.flatMap((r) => r.verdicts.map((v) => ({ ...v, where: `${e.name} run ${r.run + 1}` })))],
    }));
    const software = preflight ? softwareLines(preflight) : undefined;
    const left = new Set(dropped);
    const preFailed = preflight ? preflightFailures(preflight) : [];
    const leftOut = preFailed.filter((f) => left.has(f.where.slice("preflight ".length)));
    const failed = [...preFailed.filter((f) => !leftOut.includes(f)), ...(preflight ? pkeyMismatches(preflight) : []), ...(software ? softwareMismatches(software.lines) : []),
        ...entries.flatMap((e) => failures(e.grade))];
    const slowFail = slowNodes !== null && slowNodes.slow.length > 0;
    // the same rule as `rdmakit health` (components/health healthRule): only a healthy node passes; a required
    // component not checked ("incomplete") is not healthy
    const healthBad = (health ?? []).filter((h) => h.verdict !== "healthy").map((h) => h.node);
    const droppedWhy = dropped.map((node) => {
        const p = leftOut.find((f) => f.where === `preflight ${node}`);
        const h = (health ?? []).find((x) => x.node === node);
        const f = h?.findings[0];
        const why = givenWhy[node] !== undefined ? givenWhy[node] : p ? `preflight ${p.check}: expected ${p.expected}; seen ${p.seen}`
            : f ? `health ${f.component}: ${f.message}` : h && h.verdict !== "healthy" ? `health ${h.verdict}` : "no preflight result";
        return { node, why };
    });
    return {
        pass: failed.length === 0 && !slowFail && healthBad.every((n) => left.has(n)) && (entries.length > 0 || preflight !== undefined || !!health?.length),
        ...(dropped.length ? { dropped: droppedWhy } : {}),
        headline, logs, slowNodes,
        ...(preflight ? { preflight: { nodes: preflight.nodes.length, badNodes: preflight.badNodes }, software } : {}), failed,
        ...(health ? { health: { nodes: health.map((h) => ({ ...h, nccl: ncclOfNode(h.node, entries, slowNodes) })), badNodes: healthBad, ...(healthRuleText ? { rule: healthRuleText } : {}) } } : {}),
    };
}

/** Short text for the `pulumi up` output and the CLI. */
export function formatText(report: ValidationReport, entries: ReportEntry[]): string {
    const out: string[] = [];
    const failedChecks = report.failed.length;
    out.push(`nccl-tests validation: ${report.verdict ?? (report.pass ? "PASS" : "FAIL")}` +
        (report.headline ? ` — busbw ${formatGBps(report.headline.busbwGBps)} at ${formatBytes(report.headline.sizeBytes)} (${report.headline.log})` : "") +
        (failedChecks ? ` — ${failedChecks} failed check${failedChecks === 1 ? "" : "s"}` : ""));
    for (const n of report.notJudged ?? []) out.push(`  not judged: ${n}`);
    if (report.dropped?.length) {
        // select.ts: the nodes Slurm could not give the run (their reason is what sinfo said), and those the tolerance left out
        const bySlurm = report.dropped.filter((d) => d.why.startsWith("Slurm: "));
        const byTolerance = report.dropped.filter((d) => !bySlurm.includes(d));
        const groups: Array<[string, typeof bySlurm]> = [["Slurm cannot give them to the run", bySlurm], ["cluster.validation.maxFailedNodes", byTolerance]];
        for (const [rule, ds] of groups.filter(([, g]) => g.length > 0)) {
            out.push(`  left out of the all-node runs (${rule}): ${ds.length} node(s); the runs below are the others'`);
            for (const d of ds) out.push(`    ${d.node}: ${d.why.length > 160 ? d.why.slice(0, 157) + "..." : d.why}`);
        }
    }
    if (report.preflight) {
        const p = report.preflight;
        const own = p.badNodes.filter((n) => !report.dropped?.some((d) => d.node === n));
        out.push(`  ${own.length ? "FAIL" : p.badNodes.length ? "out " : "ok  "} preflight: ${p.nodes - p.badNodes.length} of ${p.nodes} node(s) pass` +
            (p.badNodes.length ? `; bad node(s): ${p.badNodes.join(", ")}` : ""));
    }
    if (report.health) {
        const h = report.health;
        const ok = h.nodes.filter((n) => n.verdict === "healthy").length;
        const own = h.badNodes.filter((n) => !report.dropped?.some((d) => d.node === n));
        out.push(`  ${own.length ? "FAIL" : h.badNodes.length ? "out " : "ok  "} node health: ${ok} of ${h.nodes.length} node(s) healthy` +
            (h.badNodes.length ? `; bad node(s): ${h.badNodes.join(", ")}` : ""));
        if (h.rule) out.push(`    rule: ${h.rule}`);
        const w = Math.max(4, ...h.nodes.map((n) => n.node.length));
        const word: Record<NodeHealth["verdict"], string> = { healthy: "healthy", failing: "FAILING", incomplete: "not checked", unreadable: "UNREADABLE" };
        for (const n of h.nodes) {
            const why = n.findings[0] ? `  ${n.findings[0].component}: ${n.findings[0].message}${n.findings.length > 1 ? ` (+${n.findings.length - 1} more)` : ""}`
                : n.unreadable[0] ? `  ${n.unreadable[0].file} ${n.unreadable[0].reason}`
                    : n.notChecked.length ? `  not checked: ${[...new Set(n.notChecked.map((c) => c.component))].join(", ")}` : "";
            out.push(`    ${n.node.padEnd(w)}  health ${word[n.verdict].padEnd(11)}  nccl-tests ${n.nccl.padEnd(4)}${why}`.trimEnd());
        }
    }
    if (report.software && (report.software.lines.length || report.software.unrecorded.length)) {
        const { lines, unrecorded } = report.software;
        out.push("  node software (each node's probes, /etc/rdmakit/software.json):");
        const w = Math.max(0, ...lines.map((l) => l.label.length));
        const all = report.preflight?.nodes ?? 0;
        for (const l of lines) {
            const one = l.versions.length === 1 && l.versions[0].hosts.length === all;
            out.push(`    ${l.label.padEnd(w)}  ` + (one ? `${l.versions[0].version} ${l.versions[0].action} (${all} node${all === 1 ? "" : "s"})`
                : l.versions.map((v) => `${v.version} ${v.action} on ${namedFew(v.hosts, 8)}`).join("; ")));
        }
        if (unrecorded.length) out.push(`    no record on ${namedFew(unrecorded, 8)} (site.yml has not finished there)`);
    }
    for (const e of entries) {
        for (const [i, r] of e.parsed.runs.entries()) {
            const g = e.grade.runs[i];
            const nodes = nodesOf(r);
            const who = [r.nRanks !== null ? `${r.nRanks} ranks` : null, nodes !== null ? `${nodes} node${nodes === 1 ? "" : "s"}` : null].filter(Boolean).join(" on ");
            const lp = largestPoint(r);
            out.push(`  ${g?.pass ? "ok  " : "FAIL"} ${e.name}${e.parsed.runs.length > 1 ? ` run ${i + 1}` : ""}: ${r.tool === "rccl-tests" ? "rccl-tests " : ""}${r.collective ?? "unknown test"}` +
                (who ? ` (${who})` : "") +
                (g?.gradedBusbwGBps !== null && g?.gradedBusbwGBps !== undefined ? `, graded busbw ${formatGBps(g.gradedBusbwGBps)}` : "") +
                (lp ? `, at ${formatBytes(lp.sizeBytes)}: ${formatGBps(lp.outOfPlace)} / ${formatGBps(lp.inPlace)} (out-of-place / in-place)` : "") +
                (r.missingColumns.length ? `; columns missing from the log: ${r.missingColumns.join(", ")} (not filled in)` : "") +
                (r.columnsFrom === "row-shape" ? "; no column header: columns read from the row shape" : ""));
        }
    }
    for (const f of report.failed) {
        out.push(`  x ${f.check} [${f.where}]: expected ${f.expected}; seen ${f.seen}`);
        for (const ev of (f.evidence ?? []).slice(0, 2)) out.push(`      line ${ev.line}: ${ev.text.length > 140 ? ev.text.slice(0, 137) + "..." : ev.text}`);
        if (f.hint) out.push(`      fix: ${f.hint}`);
    }
    if (report.slowNodes) {
        const s = report.slowNodes;
        if (s.slow.length) out.push(`  slow node(s): ${s.slow.map((n) => n.host).join(", ")}`);
        for (const l of s.lines) out.push(`    ${l}`);
        if (s.followUp.length) out.push(`  next: ${s.followUp.map((r, i) => `round ${i + 1}: ${r.map(([a, b]) => `${a}+${b}`).join(" ")}`).join("; ")}`);
    }
    // nodes' own text is printed (a preflight `seen`, a log line, a health finding): one line each, no control character
    return out.map(printableLine).join("\n") + "\n";
}

const esc = (s: string): string => s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");

function niceStep(max: number): number {
    const raw = max / 5;
    const p = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 2.5, 5, 10]) if (m * p >= raw) return m * p;
    return 10 * p;
}

function shortBytes(n: number): string {
    return formatBytes(n).replace(" ", "").replace("iB", "");
}

const COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22"];

/** SVG line chart of busbw (out-of-place; in-place dotted) against size on a log2 axis, with the expected lines. */
export function renderChartSvg(entries: Array<{ name: string; parsed: ParsedLog }>, exp?: Expectation, title = "nccl-tests bus bandwidth"): string {
    const series = entries.flatMap((e) => e.parsed.runs.filter((r) => r.rows.some((x) => x.sizeBytes > 0)).map((r, i, all) => ({
        label: `${e.name}${all.length > 1 ? ` #${i + 1}` : ""} ${r.collective ?? ""}`.trim(),
        oop: r.rows.filter((x) => x.sizeBytes > 0 && x.outOfPlace.busbwGBps !== null).map((x) => [Math.log2(x.sizeBytes), x.outOfPlace.busbwGBps as number] as const),
        ip: r.rows.filter((x) => x.sizeBytes > 0 && x.inPlace?.busbwGBps != null).map((x) => [Math.log2(x.sizeBytes), x.inPlace!.busbwGBps as number] as const),
    })));
    const W = 900, L = 70, R = 20, T = 40, ph = 380, B = 64 + 18 * Math.max(1, series.length + (exp ? 1 : 0));
    const H = T + ph + B, pw = W - L - R;
    const xs = series.flatMap((s) => [...s.oop, ...s.ip].map((p) => p[0]));
    const ys = series.flatMap((s) => [...s.oop, ...s.ip].map((p) => p[1]));
    // reduce, not Math.min(...xs): the points are as many as the logs' rows
    const xMin = xs.length ? Math.floor(xs.reduce((a, b) => Math.min(a, b))) : 3;
    const xMax = xs.length ? Math.ceil(xs.reduce((a, b) => Math.max(a, b))) : 34;
    const xSpan = Math.max(1, xMax - xMin);
    const yTop = ys.reduce((a, b) => Math.max(a, b), Math.max(1, exp?.minBusbwGBps ?? 0, exp?.expectedBusbwGBps ?? 0)) * 1.08;
    const step = niceStep(yTop);
    const yMax = Math.ceil(yTop / step) * step;
    const X = (v: number): number => L + ((v - xMin) / xSpan) * pw;
    const Y = (v: number): number => T + ph - (v / yMax) * ph;
    const f = (v: number): string => v.toFixed(1);
    const parts: string[] = [];
    parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`);
    parts.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);
    parts.push(`<text x="${W / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">${esc(title)}</text>`);
    // grid and y ticks
    for (let v = 0; v <= yMax + 1e-9; v += step) {
        parts.push(`<line x1="${L}" x2="${L + pw}" y1="${f(Y(v))}" y2="${f(Y(v))}" stroke="#e6e6e6"/>`);
        parts.push(`<text x="${L - 6}" y="${f(Y(v) + 4)}" text-anchor="end">${Number(v.toFixed(2))}</text>`);
    }
    // x ticks: every power of two, labelled every `lab` powers
    const lab = xSpan > 24 ? 4 : xSpan > 12 ? 2 : 1;
    for (let k = xMin; k <= xMax; k++) {
        parts.push(`<line x1="${f(X(k))}" x2="${f(X(k))}" y1="${T + ph}" y2="${T + ph + (k % lab === 0 ? 6 : 3)}" stroke="#333"/>`);
        if (k % lab === 0) parts.push(`<text x="${f(X(k))}" y="${T + ph + 20}" text-anchor="middle">${esc(shortBytes(2 ** k))}</text>`);
    }
    parts.push(`<line x1="${L}" x2="${L + pw}" y1="${T + ph}" y2="${T + ph}" stroke="#333"/>`);
    parts.push(`<line x1="${L}" x2="${L}" y1="${T}" y2="${T + ph}" stroke="#333"/>`);
    parts.push(`<text x="${L + pw / 2}" y="${T + ph + 40}" text-anchor="middle">message size (bytes, log2 scale)</text>`);
    parts.push(`<text transform="translate(18 ${T + ph / 2}) rotate(-90)" text-anchor="middle">busbw (GB/s)</text>`);
    // expectation
    let legendY = T + ph + 58;
    if (exp) {
        const x0 = X(Math.max(xMin, Math.log2(exp.gradeFromBytes)));
        parts.push(`<rect x="${f(x0)}" y="${T}" width="${f(L + pw - x0)}" height="${ph}" fill="#fff4e0" opacity="0.6"/>`);
        parts.push(`<line x1="${L}" x2="${L + pw}" y1="${f(Y(exp.minBusbwGBps))}" y2="${f(Y(exp.minBusbwGBps))}" stroke="#d62728" stroke-width="2" stroke-dasharray="8 5"/>`);
        let legend = `minimum ${formatGBps(exp.minBusbwGBps)} from ${formatBytes(exp.gradeFromBytes)}`;
        if (exp.expectedBusbwGBps !== undefined) {
            parts.push(`<line x1="${L}" x2="${L + pw}" y1="${f(Y(exp.expectedBusbwGBps))}" y2="${f(Y(exp.expectedBusbwGBps))}" stroke="#7f7f7f" stroke-width="1.5" stroke-dasharray="3 4"/>`);
            legend += `, typical ${formatGBps(exp.expectedBusbwGBps)} (grey)`;
        }
        parts.push(`<line x1="${L}" x2="${L + 30}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="#d62728" stroke-width="2" stroke-dasharray="8 5"/>`);
        const src = exp.source.length > 60 ? exp.source.slice(0, 57) + "..." : exp.source;
        parts.push(`<text x="${L + 38}" y="${legendY}">${esc(legend)} [${esc(src)}]</text>`);
        legendY += 18;
    }
    series.forEach((s, i) => {
        const c = COLORS[i % COLORS.length];
        const path = (pts: ReadonlyArray<readonly [number, number]>): string => pts.map((p, j) => `${j ? "L" : "M"}${f(X(p[0]))},${f(Y(p[1]))}`).join(" ");
        if (s.oop.length) parts.push(`<path d="${path(s.oop)}" fill="none" stroke="${c}" stroke-width="2"/>`);
        for (const p of s.oop) parts.push(`<circle cx="${f(X(p[0]))}" cy="${f(Y(p[1]))}" r="2.5" fill="${c}"/>`);
        if (s.ip.length) parts.push(`<path d="${path(s.ip)}" fill="none" stroke="${c}" stroke-width="1.5" stroke-dasharray="2 3"/>`);
        parts.push(`<line x1="${L}" x2="${L + 30}" y1="${legendY - 4}" y2="${legendY - 4}" stroke="${c}" stroke-width="2"/>`);
        parts.push(`<text x="${L + 38}" y="${legendY}">${esc(s.label)} (out-of-place solid, in-place dotted)</text>`);
        legendY += 18;
    });
    if (series.length === 0) parts.push(`<text x="${L + pw / 2}" y="${T + ph / 2}" text-anchor="middle">no result rows</text>`);
    parts.push(`</svg>`);
    return parts.join("\n") + "\n";
}
