/**
 * The per-node preflight results validate.yml writes (out/<stack>/preflight/<host>.json: `{host, checks: [{check,
 * expected, seen, ok}]}`, playbooks/roles/nccl_validate/tasks/main.yml), read into the report's verdicts so a bad
 * node is named with what was expected and seen: GPUs, RDMA ports, GPUDirect, fabric manager, memlock, the IB
 * partition key and, on Azure, the image's health checks. Each file also carries what the node runs (`software`:
 * /etc/rdmakit/software.json as site.yml's probes wrote it, component -> {version, action}), which the report lists
 * per component; a component at different versions across the nodes is a failed check.
 */
import * as fs from "fs";
import * as path from "path";
import type { Verdict } from "./types";
import { COMPONENT_LABEL, type SoftwareComponent } from "../catalog/images";
import { namedFew } from "../listing";

/**
 * Bounds on what a node's result can make the report hold and print: a result the roles write is a few KB (some 15
 * checks, 8 components), so a file past MAX_RESULT_BYTES is refused by name, a text is clipped at MAX_TEXT_CHARS and a
 * node's failed checks past FAILED_LISTED are counted, not listed.
 */
export const MAX_RESULT_BYTES = 1024 * 1024;
const MAX_TEXT_CHARS = 300;
const FAILED_LISTED = 10;

/** The text, or its start and its end around "...": the end of a check's `seen` says what it found (ib-pkey's keys). */
const clipped = (v: unknown): string => {
    const s = String(v);
    const tail = 100;
    return s.length > MAX_TEXT_CHARS ? `${s.slice(0, MAX_TEXT_CHARS - tail - 3)}...${s.slice(-tail)}` : s;
};

export interface PreflightNode {
    host: string;
    checks: Array<{ check: string; expected: string; seen: string; ok: boolean }>;
    /** what the node runs, by component: the version its probe found or the kit installed, and which it was */
    software?: Record<string, { version: string; action: string }>;
}

/** One component across the nodes: each distinct version with what was done and where. */
export interface SoftwareLine {
    component: string;
    label: string;
    versions: Array<{ version: string; action: string; hosts: string[] }>;
}

export interface PreflightReport {
    nodes: PreflightNode[];
    /** Hosts with at least one failed check, in name order. */
    badNodes: string[];
}

function isNode(x: unknown): x is PreflightNode {
    const n = x as PreflightNode;
    return typeof n === "object" && n !== null && typeof n.host === "string" && Array.isArray(n.checks) &&
        n.checks.every((c) => typeof c.check === "string" && typeof c.ok === "boolean") &&
        (n.software === undefined || (typeof n.software === "object" && n.software !== null &&
            Object.values(n.software).every((v) => typeof v === "object" && v !== null && "version" in v && "action" in v)));
}

/**
 * Reads every `<host>.json` of the folder, each as the result of the host its file is named after; a file that is not
 * a preflight result is an error naming it.
 */
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
            const size = fs.statSync(path.join(dir, f)).size;
            if (size > MAX_RESULT_BYTES) return `--preflight: ${path.join(dir, f)} is ${size} bytes; a preflight result is at most ${MAX_RESULT_BYTES}`;
            obj = JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
        } catch (e) {
            return `--preflight: ${path.join(dir, f)} is not JSON (${(e as Error).message})`;
        }
        if (!isNode(obj)) return `--preflight: ${path.join(dir, f)} is not a preflight result ({host, checks: [{check, expected, seen, ok}], software?: {<component>: {version, action}}})`;
        // the node a result belongs to is the file's name, never the `host` inside it: a node-local run lets each node
        // write its own file only (fanout.ts collectedFile), and what a node writes into it may name anyone
        nodes.push(bounded(obj, f.slice(0, -".json".length)));
    }
    return { nodes, badNodes: nodes.filter((n) => n.checks.some((c) => !c.ok)).map((n) => n.host).sort() };
}

/** A node's result with its texts clipped and only the components the kit's probes record (catalog/images.ts). */
function bounded(n: PreflightNode, host: string): PreflightNode {
    const checks = n.checks.map((c) => ({ check: clipped(c.check), expected: clipped(c.expected), seen: clipped(c.seen), ok: c.ok }));
    if (n.software === undefined) return { host, checks };
    const software = Object.fromEntries(Object.entries(n.software).filter(([c]) => c in COMPONENT_LABEL)
        .map(([c, v]) => [c, { version: clipped(v.version), action: clipped(v.action) }]));
    return { host, checks, software };
}

/** The failed checks as report verdicts, `where` naming the node: the first FAILED_LISTED of a node, then their count. Pure. */
export function preflightFailures(p: PreflightReport): Array<Verdict & { where: string }> {
    return p.nodes.flatMap((n) => {
        const failed = n.checks.filter((c) => !c.ok);
        const listed: Array<Verdict & { where: string }> = failed.slice(0, FAILED_LISTED).map((c) => ({
            check: c.check, ok: false, expected: String(c.expected), seen: String(c.seen), where: `preflight ${n.host}`,
        }));
        if (failed.length > FAILED_LISTED) {
            listed.push({ check: "more-checks", ok: false, expected: "every preflight check passing", where: `preflight ${n.host}`,
                seen: `${failed.length - FAILED_LISTED} more failed check(s) on ${n.host}, not listed one by one (preflight/${n.host}.json)` });
        }
        return listed;
    });
}

/** Each component's versions across the nodes, in the roles' order (catalog/images.ts); nodes without a record apart. Pure. */
export function softwareLines(p: PreflightReport): { lines: SoftwareLine[]; unrecorded: string[] } {
    const order = Object.keys(COMPONENT_LABEL);
    const by = new Map<string, Map<string, { version: string; action: string; hosts: string[] }>>();
    for (const n of p.nodes) {
        for (const [c, f] of Object.entries(n.software ?? {})) {
            const key = `${f.version}\u0000${f.action}`;
            const m = by.get(c) ?? new Map();
            by.set(c, m);
            const e = m.get(key) ?? { version: String(f.version), action: String(f.action), hosts: [] };
            m.set(key, e);
            e.hosts.push(n.host);
        }
    }
    const rank = (c: string) => (order.indexOf(c) < 0 ? order.length : order.indexOf(c));
    const lines = [...by.entries()].sort(([a], [b]) => rank(a) - rank(b) || a.localeCompare(b)).map(([c, m]) => ({
        component: c, label: COMPONENT_LABEL[c as SoftwareComponent] ?? c,
        versions: [...m.values()].sort((a, b) => b.hosts.length - a.hosts.length || a.version.localeCompare(b.version)),
    }));
    const unrecorded = p.nodes.filter((n) => !n.software || Object.keys(n.software).length === 0).map((n) => n.host).sort();
    return { lines, unrecorded };
}

/** A component at more than one version across the nodes is a failed check (one job needs one stack). Pure. */
export function softwareMismatches(lines: SoftwareLine[]): Array<Verdict & { where: string }> {
    const distinct = (l: SoftwareLine) => new Set(l.versions.map((v) => v.version));
    return lines.filter((l) => distinct(l).size > 1).map((l) => ({
        check: "software-versions", ok: false, where: "preflight software",
        expected: `one ${l.label} version on every node`,
        seen: l.versions.map((v) => `${v.version} (${v.action}) on ${namedFew(v.hosts, 8)}`).join("; "),
        hint: "boot every node from the same image release (the plan pins it) or let the kit install the same version everywhere",
    }));
}

/**
 * The IB partition keys must be the same full-member keys on every node (a pkey mismatch between nodes hangs NCCL:
 * research azure-ib.md §6). Push mode compares each node with the first one inside the play; a node-local run sees
 * one node only, so each node's `ib-pkey` check there proves a full-member key and this compares them across the
 * nodes, from the check's `seen` ("keys ...; full-member <k,k|none>", playbooks/roles/nccl_validate/tasks/main.yml).
 * Nothing when a node's own ib-pkey check failed already (that line names it) or when they agree. Pure.
 */
export function pkeyMismatches(p: PreflightReport): Array<Verdict & { where: string }> {
    const by = new Map<string, string[]>();
    for (const n of p.nodes) {
        const c = n.checks.find((x) => x.check === "ib-pkey");
        if (!c) continue;
        if (!c.ok) return [];
        const m = /full-member (\S+)\s*$/.exec(String(c.seen));
        const keys = m ? m[1] : "unreadable";
        by.set(keys, [...(by.get(keys) ?? []), n.host]);
    }
    if (by.size <= 1) return [];
    const groups = [...by.entries()].sort((a, b) => b[1].length - a[1].length || a[0].localeCompare(b[0]));
    return [{
        check: "ib-pkey", ok: false, where: "preflight partition keys",
        expected: "the same full-member partition keys on every node",
        seen: groups.map(([k, hosts]) => `${k} on ${namedFew(hosts, 8)}`).join("; "),
        hint: "every node of one job must be in the same InfiniBand partition: check the VMs are in one scale set / placement group",
    }];
}
