/**
 * The per-node preflight results validate.yml writes (out/<stack>/preflight/<host>.json: `{host, checks: [{check,
 * expected, seen, ok}]}`, playbooks/roles/nccl_validate/tasks/main.yml), read into the report's verdicts so a bad
 * node is named with what was expected and seen: GPUs, RDMA ports, GPUDirect, fabric manager, memlock, the IB
 * partition key and, on Azure, the image's health checks.
 */
import * as fs from "fs";
import * as path from "path";
import type { Verdict } from "./types";

export interface PreflightNode {
    host: string;
    checks: Array<{ check: string; expected: string; seen: string; ok: boolean }>;
}

export interface PreflightReport {
    nodes: PreflightNode[];
    /** Hosts with at least one failed check, in name order. */
    badNodes: string[];
}

function isNode(x: unknown): x is PreflightNode {
    const n = x as PreflightNode;
    return typeof n === "object" && n !== null && typeof n.host === "string" && Array.isArray(n.checks) &&
        n.checks.every((c) => typeof c.check === "string" && typeof c.ok === "boolean");
}

/** Reads every `<host>.json` of the folder; a file that is not a preflight result is an error naming it. */
export function readPreflight(dir: string): PreflightReport | string {
    let names: string[];
    try {
        names = fs.readdirSync(dir).filter((f) => f.endsWith(".json")).sort();
    } catch (e) {
        return `--preflight: cannot read ${dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    const nodes: PreflightNode[] = [];
    for (const f of names) {
        let obj: unknown;
        try {
            obj = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
        } catch (e) {
            return `--preflight: ${path.join(dir, f)} is not JSON (${(e as Error).message})`;
        }
        if (!isNode(obj)) return `--preflight: ${path.join(dir, f)} is not a preflight result ({host, checks: [{check, expected, seen, ok}]})`;
        nodes.push(obj);
    }
    return { nodes, badNodes: nodes.filter((n) => n.checks.some((c) => !c.ok)).map((n) => n.host).sort() };
}

/** The failed checks as report verdicts, `where` naming the node. Pure. */
export function preflightFailures(p: PreflightReport): Array<Verdict & { where: string }> {
    return p.nodes.flatMap((n) => n.checks.filter((c) => !c.ok).map((c) => ({
        check: c.check, ok: false, expected: String(c.expected), seen: String(c.seen), where: `preflight ${n.host}`,
    })));
}
