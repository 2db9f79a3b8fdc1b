/**
 * RoCE fabric rules: the switch configurations the stack pushes and the host settings the stack's Ansible run applies
 * agree, by rules C1–C13 (components/roce/consistency.ts — reused, not re-implemented), each its own policy, plus the
 * digest every push script checks.
 *
 * Why it works from resources: RoceCluster pushes each switch's rendered text with one command resource that runs
 * push.sh with `--os <os> --switch <name> --config <kept file> --config-sha256 <digest>` (components/roce/push.ts): the
 * text is kept once beside the stack (out/<stack>/inputs/, kept-input.ts), written at a preview too, so the pack reads
 * it from there, before anything is created, and only when its sha256 is the declared one. The path is relative to the
 * project folder: the pack looks under RDMAKIT_PROJECT_DIR, then the folder `pulumi` was started in ($PWD), then its
 * own working folder; a text it finds nowhere is reported as not verifiable, never passed. The provisioning command's
 * stdin names the Ansible inventory the same way, a kept file by path and sha256 (a team's own run may carry the text
 * itself there), and on bare metal every host there has its `roce_host_*`
 * variables and NCCL environment from the QoS plan (components/provision/nodes.ts). Those are exactly the two sides
 * checkConsistency compares. What no resource carries is the spec's own switch facts (the list of host ports and
 * the real cable length), so the two parts that read them (C5 "every host port configured", C4 "cable length
 * matches the real cable") are left to RoceCluster, which runs checkConsistency against the spec before it registers
 * anything; the rest of C4 (a lossless buffer profile on the RoCE PG) and C5 (trust DSCP, no link pause) run here.
 */
import type { PolicyResource, StackValidationArgs } from "@pulumi/policy";
import * as fs from "node:fs";
import * as path from "node:path";
import { parsePushCommand } from "../../components/roce/push-args";
import { parseInventory } from "../../components/provision/inventory-read";
import { namedFew } from "../../components/listing";
import { parsedOf } from "../../components/parsed";
import { checkConsistency, formatViolation, readSwitchView, RULES, type RuleId, type Violation } from "../../components/roce/consistency";
import type { HostPlan, QosPlan } from "../../components/roce/qos";
import { FORMAT, renderedDigest, sha256, type RenderedSwitchConfig } from "../../components/roce/render";
import type { NetworkOs } from "../../components/roce/spec";
import { known, TYPES } from "../support";
import { stackPolicy } from "./define";

export interface PushedConfig {
    resource: PolicyResource;
    config: RenderedSwitchConfig;
    /** the digest the push checks the text against */
    declaredDigest: string;
    /** the kept file as the push names it */
    file: string;
}

/** A push whose kept text the pack could not read: why. */
export interface UnreadPush {
    resource: PolicyResource;
    switch: string;
    why: string;
}

/** Folders a project-relative path may be under, most specific first (see the header). */
function projectDirs(): string[] {
    const dirs = [process.env.RDMAKIT_PROJECT_DIR, process.env.PWD, process.cwd()].filter((d): d is string => !!d);
    return [...new Set(dirs.map((d) => path.resolve(d)))];
}

/** A file's text and its sha256, as one reading found them. */
interface ReadText {
    text: string;
    sha256: string;
}

/**
 * Files read in one pass, by device and inode: the kept texts of switches alike are hard links to one file
 * (kept-input.ts; a rail fabric's 384 pushes name 2 texts), and a file read once in this pass is not read again
 * (at 2,048 hosts 33 MB of reads and strings). Only names of the very same file share an entry, so every name still
 * gives the text of the file it names, checked against its push's digest.
 */
export type ReadPass = Map<string, ReadText>;

function readOnce(f: string, pass: ReadPass | undefined): ReadText | undefined {
    let id: string | undefined;
    if (pass) {
        let st: fs.Stats;
        try {
            st = fs.statSync(f);
        } catch {
            return undefined;
        }
        if (!st.isFile()) return undefined;
        id = `${st.dev}:${st.ino}`;
        const seen = pass.get(id);
        if (seen) return seen;
    }
    let text: string;
    try {
        text = fs.readFileSync(f, "utf8");
    } catch {
        return undefined;
    }
    // a text this process rendered (rdmakit plan, a preview) has its digest already, and its one string stands for
    // the copy read here (render.ts renderedDigest: the same characters, so the same sha256)
    const rendered = renderedDigest(text);
    const read = { text: rendered?.text ?? text, sha256: rendered?.digest ?? sha256(text) };
    if (pass && id !== undefined) pass.set(id, read);
    return read;
}

/** The text of a kept file whose sha256 is `digest`, or why there is none. `pass`: files read already (ReadPass). */
export function readKeptText(file: string, digest: string, pass?: ReadPass): { text: string } | { why: string } {
    const where = path.isAbsolute(file) ? [file] : projectDirs().map((d) => path.join(d, file));
    let other: string | undefined;
    for (const f of where) {
        const read = readOnce(f, pass);
        if (read === undefined) continue;
        if (read.sha256 === digest) return { text: read.text };
        other = `${f} has sha256 ${read.sha256}`;
    }
    return { why: other ? `${other}, the push expects ${digest}` : `its text ${file} is not found under ${where.map((f) => path.dirname(f)).join(", ")} (run pulumi in the project folder, or set RDMAKIT_PROJECT_DIR to it)` };
}

/** The switch configurations the stack pushes: one per command resource that runs the kit's push.sh. */
export function pushedSwitchConfigs(resources: PolicyResource[]): { pushed: PushedConfig[]; unread: UnreadPush[] } {
    const pushed: PushedConfig[] = [];
    const unread: UnreadPush[] = [];
    const pass: ReadPass = new Map();
    for (const r of resources) {
        if (r.type !== TYPES.remoteCommand && r.type !== TYPES.localCommand) continue;
        const create = known(() => r.props.create);
        const args = typeof create === "string" ? parsePushCommand(create) : undefined;
        if (!args) continue;
        const os = (Object.keys(FORMAT) as NetworkOs[]).find((k) => k === args.os);
        if (!os) continue;
        const read = readKeptText(args.config, args.configSha256, pass);
        if ("why" in read) {
            unread.push({ resource: r, switch: args.switch, why: read.why });
            continue;
        }
        pushed.push({
            resource: r, declaredDigest: args.configSha256, file: args.config,
            // readKeptText returned the text because its sha256 is the declared one
            config: { switch: args.switch, os, format: FORMAT[os].format, fileName: `${args.switch}.${FORMAT[os].ext}`, text: read.text, digest: args.configSha256 },
        });
    }
    return { pushed, unread };
}

/** Inventory host vars → the host side of a QoS plan (only hosts that carry roce_host_* variables). */
function hostPlan(name: string, v: Record<string, any>): HostPlan {
    return {
        name,
        address: String(v.ansible_host ?? name),
        railNics: v.roce_host_rdma_devices ?? [],
        railNetdevs: v.roce_host_interfaces,
        bootstrapNic: v.roce_host_bootstrap_nic,
        // not in the inventory and not read by checkConsistency
        gpu: { model: "(not in inventory)", count: 0 },
        gidIndex: v.roce_host_gid_index,
        // what the nccl role writes on the host: the host's own NCCL environment (components/provision/nodes.ts)
        ncclEnv: v.nccl_conf ?? v.roce_host_nccl_env ?? {},
        vars: v as HostPlan["vars"],
    };
}

export interface InventoryHosts {
    resource: PolicyResource;
    hosts: HostPlan[];
}

/** A provisioning command whose kept inventory the pack could not read: why. */
export interface UnreadInventory {
    resource: PolicyResource;
    why: string;
}

/**
 * The inventory text a command's stdin carries (JSON { inventory, extraVars }: a team's own run, a host test), or
 * names by the path and SHA-256 of the file the program keeps (JSON { inventoryFile, inventorySha256, extraVars }:
 * components/provision/ansible.ts AnsibleRunStdin), read only when its sha256 is the named one; undefined for any other
 * stdin (validation variables, a switch config).
 */
function stdinInventory(stdin: string, pass: ReadPass): { text: string } | { why: string } | undefined {
    let input: { inventory?: unknown; inventoryFile?: unknown; inventorySha256?: unknown };
    try {
        input = JSON.parse(stdin) as typeof input;
    } catch {
        return undefined;
    }
    if (typeof input?.inventory === "string") return { text: input.inventory };
    if (typeof input?.inventoryFile !== "string") return undefined;
    if (typeof input.inventorySha256 !== "string") return { why: `its inventory ${input.inventoryFile} is named without its sha256` };
    return readKeptText(input.inventoryFile, input.inventorySha256, pass);
}

/**
 * RoCE hosts from the Ansible inventory each provisioning command carries on stdin or names there as a kept file
 * (components/provision/ansible.ts), and the commands whose kept inventory could not be read.
 */
export function inventoryRoceHosts(resources: PolicyResource[]): { inventories: InventoryHosts[]; unread: UnreadInventory[] } {
    const out: InventoryHosts[] = [];
    const unread: UnreadInventory[] = [];
    const pass: ReadPass = new Map();
    for (const r of resources) {
        if (r.type !== TYPES.localCommand) continue;
        const stdin = known(() => r.props.stdin);
        if (typeof stdin !== "string") continue;
        const read = stdinInventory(stdin, pass);
        if (read === undefined) continue;
        if ("why" in read) {
            unread.push({ resource: r, why: read.why });
            continue;
        }
        const text = read.text;
        let doc: any = parsedOf(text); // rendered in this process: no second parse (components/parsed.ts)
        if (doc === undefined) {
            try {
                doc = parseInventory(text);
            } catch {
                continue; // not an inventory
            }
        }
        const hosts = doc?.all?.hosts;
        if (!hosts || typeof hosts !== "object") continue;
        const roce = Object.entries(hosts as Record<string, any>).filter(([, v]) => v && typeof v === "object" && "roce_host_dscp" in v);
        if (roce.length > 0) out.push({ resource: r, hosts: roce.map(([n, v]) => hostPlan(n, v)) });
    }
    return { inventories: out, unread };
}

interface RoceView {
    pushed: PushedConfig[];
    unread: UnreadPush[];
    inventories: InventoryHosts[];
    /** provisioning commands whose kept inventory could not be read */
    unreadInventories: UnreadInventory[];
    violations: Violation[];
    /** why C1–C13 could not be evaluated, if they could not */
    unreadable?: string;
}

/**
 * checkConsistency over what the stack pushes and provisions, computed once per stack for all fourteen RoCE policies.
 * The policy server hands each policy its own copy of the resources, so the last view is found again by the texts
 * themselves (one entry: the stack being analyzed). The offline evaluator (policies/evaluate.ts) hands every policy the
 * same array, so there the array itself finds the view without comparing tens of megabytes of scripts once per policy.
 */
let cache: { parts: ViewPart[]; view: RoceView } | undefined;
const byArray = new WeakMap<readonly PolicyResource[], RoceView>();
/** A string as it is (strings do not change: the view keeps the very strings it was read from), anything else as JSON. */
type ViewPart = string | { json: string };
/** Everything a view is read from: each command resource's URN, script and stdin. */
function viewParts(resources: readonly PolicyResource[]): ViewPart[] {
    const parts: ViewPart[] = [];
    for (const r of resources) {
        if (r.type !== TYPES.remoteCommand && r.type !== TYPES.localCommand) continue;
        for (const part of [r.urn, known(() => r.props.create), known(() => r.props.stdin)]) {
            parts.push(typeof part === "string" ? part : { json: JSON.stringify(part ?? null) });
        }
    }
    return parts;
}
function sameParts(a: ViewPart[], b: ViewPart[]): boolean {
    return a.length === b.length && a.every((x, i) => {
        const y = b[i];
        return typeof x === "string" ? x === y : typeof y !== "string" && x.json === y.json;
    });
}
function roceView(resources: PolicyResource[]): RoceView {
    const same = byArray.get(resources);
    if (same) return same;
    // compared, not hashed: the policy server's copies are equal strings, told apart at their first difference
    const parts = viewParts(resources);
    if (cache && sameParts(cache.parts, parts)) {
        byArray.set(resources, cache.view);
        return cache.view;
    }
    const { pushed, unread } = pushedSwitchConfigs(resources);
    const { inventories, unread: unreadInventories } = inventoryRoceHosts(resources);
    // One host list (the provisioning inventory; the same host in two inventories counts once).
    const hosts = new Map<string, HostPlan>();
    for (const inv of inventories) for (const h of inv.hosts) if (!hosts.has(h.name)) hosts.set(h.name, h);
    const hostList = [...hosts.values()];
    // a pushed text that cannot be read as its format is left to the digest policy (rdmakit never pushes one)
    const switchViews: ReturnType<typeof readSwitchView>[] = [];
    const readable = pushed.filter((p) => {
        try {
            switchViews.push(readSwitchView(p.config));
            return true;
        } catch {
            return false;
        }
    });
    // The plan's mode is what the hosts were given (PFC on = lossless); without hosts, what the switches run.
    const lossless = hostList.length > 0 ? hostList.some((h) => h.vars.roce_host_pfc) : switchViews.some((v) => v.mode === "lossless");
    const first = hostList[0]?.vars;
    // checkConsistency reads mode, hosts, roce.dscp, cnp.priority and, per switch, hostPorts and cableLengthM (spec
    // facts no resource carries: an empty port list, and a real cable length of NaN, which C4 does not compare).
    const plan = {
        mode: lossless ? "lossless" : "lossy",
        hosts: hostList,
        switches: readable.map((p) => ({ name: p.config.switch, hostPorts: [], cableLengthM: Number.NaN })),
        roce: { dscp: first?.roce_host_dscp ?? -1, priority: first?.roce_host_priority ?? -1 },
        cnp: { dscp: first?.roce_host_cnp_dscp ?? -1, priority: first?.roce_host_cnp_priority ?? -1 },
    } as unknown as QosPlan;
    let violations: Violation[] = [];
    let unreadable: string | undefined;
    try {
        // hosts the pack cannot see (an inventory it could not read) would leave the switches judged against no host
        // settings: nothing is checked then, and the policies say why (below)
        if (unreadInventories.length === 0) violations = checkConsistency(plan, readable.map((p) => p.config));
    } catch (e) {
        // host variables of a shape rdmakit's inventory never has
        unreadable = `the RoCE host variables or switch texts could not be read (${(e as Error).message})`;
    }
    if (unread.length) {
        const texts = `the switch text${unread.length === 1 ? "" : "s"} of ${namedFew(unread.map((u) => `${u.switch} (${u.why})`), 3, "; ")} could not be read`;
        unreadable = unreadable ? `${unreadable}; ${texts}` : texts;
    }
    if (unreadInventories.length) {
        // hosts the pack cannot see may be RoCE hosts: C1–C13 are not verifiable, never passed
        const texts = `the inventory of ${namedFew(unreadInventories.map((u) => `${u.resource.name} (${u.why})`), 3, "; ")} could not be read`;
        unreadable = unreadable ? `${unreadable}; ${texts}` : texts;
    }
    const view = { pushed, unread, inventories, unreadInventories, violations, unreadable };
    cache = { parts, view };
    byArray.set(resources, view);
    return view;
}

function applicable(args: StackValidationArgs): RoceView {
    const v = roceView(args.resources);
    if (v.pushed.length === 0 && v.unread.length === 0 && v.inventories.length === 0 && v.unreadInventories.length === 0) args.notApplicable("no RoCE switch push and no RoCE host inventory");
    return v;
}

/**
 * C1–C13 and their sources: components/roce/consistency.ts RULES and shared/research/roce.md §5; the page below is
 * the Cumulus Linux RoCE QoS reference those rules start from (roce.md "CL-RoCE").
 */
const ROCE_URL = "https://docs.nvidia.com/networking-ethernet-software/cumulus-linux-512/Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE/";

const REMEDIATION =
    "Change cluster.roce.qos (not the rendered files) and let rdmakit render both sides from the one QoS plan; " +
    "`rdmakit switch-config --config <stack file>` shows each switch's text and the rule that fails.";

const SLUG: Record<RuleId, [string, "critical" | "high" | "medium"]> = {
    C1: ["dscp-lossless-queue", "critical"],
    C2: ["pfc-priority", "critical"],
    C3: ["single-lossless-priority", "high"],
    C4: ["lossless-buffer", "high"],
    C5: ["trust-dscp", "high"],
    C6: ["cnp-strict-queue", "high"],
    C7: ["ecn-dcqcn", "high"],
    C8: ["ect0-traffic-class", "medium"],
    C9: ["mtu", "high"],
    C10: ["gid-index", "high"],
    C11: ["pfc-watchdog", "medium"],
    C12: ["mode-agreement", "critical"],
    C13: ["nccl-interfaces", "high"],
    C14: ["fabric-lossless", "critical"],
    C15: ["pfc-pg-map", "critical"],
    C16: ["headroom-fits-buffer", "high"],
    C17: ["ecn-before-pfc", "medium"],
};

function rulePolicy(id: RuleId) {
    const [slug, severity] = SLUG[id];
    return stackPolicy({
        name: `roce-qos-${id.toLowerCase()}-${slug}`,
        description: `RoCE host and switch settings agree on ${id}: ${RULES[id]}.`,
        remediationSteps: REMEDIATION,
        severity,
        url: ROCE_URL,
        enforcementLevel: "mandatory",
    }, (args, f) => {
        const { pushed, inventories, violations, unreadable } = applicable(args);
        if (unreadable) f.cannotVerify(unreadable);
        const bySwitch = new Map(pushed.map((p) => [p.config.switch, p.resource]));
        const hostSource = inventories[0]?.resource;
        for (const v of violations.filter((x) => x.rule === id)) {
            const on = v.devices.map((d) => bySwitch.get(d.split(":")[0])).find((r) => r !== undefined) ?? hostSource;
            f.violation(`${formatViolation(v)} (values ${JSON.stringify(v.values)}; checked on ${on ? on.name : "the stack"})`, on?.urn);
        }
    });
}

export const roceQosC1 = rulePolicy("C1");
export const roceQosC2 = rulePolicy("C2");
export const roceQosC3 = rulePolicy("C3");
export const roceQosC4 = rulePolicy("C4");
export const roceQosC5 = rulePolicy("C5");
export const roceQosC6 = rulePolicy("C6");
export const roceQosC7 = rulePolicy("C7");
export const roceQosC8 = rulePolicy("C8");
export const roceQosC9 = rulePolicy("C9");
export const roceQosC10 = rulePolicy("C10");
export const roceQosC11 = rulePolicy("C11");
export const roceQosC12 = rulePolicy("C12");
export const roceQosC13 = rulePolicy("C13");

export const roceSwitchConfigDigest = stackPolicy({
    name: "roce-switch-config-digest",
    description: "Every switch configuration the stack pushes matches the sha256 its push script checks, so the switch takes the text that was rendered.",
    remediationSteps: "Do not edit a pushed text by hand: change cluster.roce.qos and let rdmakit render the text and its digest together.",
    severity: "high",
    // push.sh checks `sha256sum` of the kept text before the switch takes it, and the switch checks it again
    url: "https://man7.org/linux/man-pages/man1/sha256sum.1.html",
    enforcementLevel: "mandatory",
}, (args, f) => {
    // a kept text is read only when its sha256 is the declared one (readKeptText): any other is a violation here
    for (const u of applicable(args).unread) {
        if (/has sha256/.test(u.why)) f.violation(`switch push ${u.resource.name}: the kept text of ${u.switch}: ${u.why}; the switch would refuse it`, u.resource.urn);
        else f.cannotVerify(`switch push ${u.resource.name}: ${u.why}`);
    }
});
