/**
 * A folder of node folders (out/<stack>/health/<node>/ with the fixed file names of types.ts FILES) → graded nodes,
 * and the text a user reads. Reading is the only I/O; grading is grade.ts.
 */
import * as fs from "fs";
import * as path from "path";
import { gradeNode, type NodeFiles } from "./grade";
import { MAX_FILE_CHARS } from "./text";
import { printableLine } from "../redact";
import { FILES, type HealthExpectation, type NodeHealth } from "./types";

const NAMES = new Set<string>(Object.values(FILES).map((f) => f.name));

/** Each sub-folder of `dir` is a node; its files are read by their fixed names. An unreadable file is unreadable, not missing. */
export function gradeHealthDir(dir: string, exp: HealthExpectation): NodeHealth[] {
    const nodes = fs.readdirSync(dir, { withFileTypes: true }).filter((e) => e.isDirectory()).map((e) => e.name).sort();
    return nodes.map((node) => {
        const files: NodeFiles = {};
        const broken: Array<{ file: string; reason: string }> = [];
        for (const name of NAMES) {
            const p = path.join(dir, node, name);
            if (!fs.existsSync(p)) continue;
            try {
                // never read more than the parsers accept (text.ts MAX_FILE_CHARS, at most 4 bytes a character)
                const size = fs.statSync(p).size;
                if (size > 4 * MAX_FILE_CHARS) {
                    broken.push({ file: name, reason: `is ${size} bytes; no capture the kit reads is larger than ${4 * MAX_FILE_CHARS}` });
                    continue;
                }
                const buf = fs.readFileSync(p);
                // a binary file is not any tool's text output
                if (buf.includes(0)) broken.push({ file: name, reason: "holds NUL bytes: not a text capture" });
                else files[name] = buf.toString("utf8");
            } catch (e) {
                broken.push({ file: name, reason: `cannot be read (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})` });
            }
        }
        const h = gradeNode(node, files, exp);
        if (broken.length) {
            h.unreadable.push(...broken);
            h.notChecked = h.notChecked.filter((n) => !broken.some((b) => b.file === n.file));
            h.verdict = "unreadable";
        }
        return h;
    });
}

/** 0 every node healthy; 2 a file could not be read; 1 otherwise (a node failing, or not fully checked). */
export function healthExitCode(nodes: NodeHealth[]): 0 | 1 | 2 {
    if (nodes.some((n) => n.verdict === "unreadable")) return 2;
    return nodes.length > 0 && nodes.every((n) => n.verdict === "healthy") ? 0 : 1;
}

const VERDICT: Record<NodeHealth["verdict"], string> = {
    healthy: "healthy", failing: "FAILING", incomplete: "not checked", unreadable: "UNREADABLE",
};

/** The per-node verdict in one word, for the validation report's table. */
export const verdictWord = (h: NodeHealth): string => VERDICT[h.verdict];

export function formatHealth(nodes: NodeHealth[], head: string): string {
    // the head is the kit's own text, one line or more
    const out = head.split("\n");
    const width = Math.max(4, ...nodes.map((n) => n.node.length));
    for (const n of nodes) {
        out.push(`${n.node.padEnd(width)}  ${VERDICT[n.verdict]}`);
        for (const f of n.findings) {
            out.push(`  ${f.component.padEnd(6)}  ${f.message}${f.persistence === "transient" ? " [transient: check again before acting]" : ""}`);
            if (f.evidence) out.push(`          ${f.file}: ${f.evidence}`);
        }
        for (const u of n.unreadable) out.push(`  unreadable  ${u.file} ${u.reason}`);
        for (const c of n.notChecked) out.push(`  ${c.component.padEnd(6)}  not checked: ${c.reason}`);
        for (const note of n.notes.slice(0, 5)) out.push(`  note    ${note}`);
        if (n.notes.length > 5) out.push(`  note    (${n.notes.length - 5} more)`);
    }
    const failing = nodes.filter((n) => n.verdict === "failing");
    const other = nodes.filter((n) => n.verdict !== "failing" && n.verdict !== "healthy");
    const healthy = nodes.length - failing.length - other.length;
    const summary = [`${healthy} of ${nodes.length} node(s) healthy`];
    if (failing.length) summary.push(`failing: ${failing.map((n) => `${n.node} (${[...new Set(n.findings.map((f) => f.component))].join(", ")})`).join(", ")}`);
    if (other.length) summary.push(`${other.map((n) => `${n.node} ${VERDICT[n.verdict]}`).join(", ")}`);
    out.push(summary.join("; "));
    // a node's own text (an evidence line, a GPU name) is printed: no control character reaches the terminal
    return out.map(printableLine).join("\n") + "\n";
}
