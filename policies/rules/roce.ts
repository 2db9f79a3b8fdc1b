/**
 * RoCE fabric rule: the switch configurations the stack pushes and the host settings the stack's Ansible run applies
 * agree, by rules C1–C13 (components/roce/consistency.ts — reused, not re-implemented).
 *
 * Why it works from resources: RoceCluster pushes each switch's rendered text as the `stdin` of one command resource,
 * whose script starts with `# rdmakit RoCE QoS for <switch> (<format>), sha256 <digest>` (components/roce/push.ts);
 * the provisioning command carries the Ansible inventory, and on bare metal every host there has its `roce_host_*`
 * variables and NCCL environment from the QoS plan (components/provision/nodes.ts). Those are exactly the two sides
 * checkConsistency compares. What no resource carries is the spec's own switch facts (the list of host ports and
 * the real cable length), so the two checks that read them (C5 "every host port configured", C4 cable length and
 * buffer profile) are left to RoceCluster, which runs checkConsistency against the spec before it registers anything.
 */
import { readAnsibleRunInput } from "../../components/provision/ansible";
import type { PolicyResource, StackValidationPolicy } from "@pulumi/policy";
import { parse as parseYaml } from "yaml";
import { checkConsistency, formatViolation, readSwitchView } from "../../components/roce/consistency";
import type { HostPlan, QosPlan } from "../../components/roce/qos";
import { FORMAT, sha256, type RenderedSwitchConfig } from "../../components/roce/render";
import type { NetworkOs } from "../../components/roce/spec";
import { knownOr, TYPES } from "../support";

/** The first line of every push script after `set -eu` (components/roce/push.ts switchScript/eosScript). */
const PUSH_HEADER = /^# rdmakit RoCE QoS for (\S+) \(([a-z_-]+)\), sha256 ([0-9a-f]{64})$/m;

export interface PushedConfig {
    resource: PolicyResource;
    config: RenderedSwitchConfig;
    /** the digest the script checks the text against */
    declaredDigest: string;
}

/** The switch configurations the stack pushes: one per command resource whose script carries the push header. */
export function pushedSwitchConfigs(resources: PolicyResource[]): PushedConfig[] {
    const out: PushedConfig[] = [];
    for (const r of resources) {
        if (r.type !== TYPES.remoteCommand && r.type !== TYPES.localCommand) continue;
        const create = knownOr(() => r.props.create);
        const m = typeof create === "string" ? PUSH_HEADER.exec(create) : null;
        if (!m) continue;
        const [, name, format, declaredDigest] = m;
        const os = (Object.keys(FORMAT) as NetworkOs[]).find((k) => FORMAT[k].format === format);
        const text = knownOr(() => r.props.stdin);
        if (!os || typeof text !== "string") continue;
        out.push({
            resource: r, declaredDigest,
            config: { switch: name, os, format: FORMAT[os].format, fileName: `${name}.${FORMAT[os].ext}`, text, digest: sha256(text) },
        });
    }
    return out;
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

/** RoCE hosts from the Ansible inventory the provisioning command carries on stdin (components/provision/ansible.ts). */
export function inventoryRoceHosts(resources: PolicyResource[]): InventoryHosts[] {
    const out: InventoryHosts[] = [];
    for (const r of resources) {
        if (r.type !== TYPES.localCommand) continue;
        const stdin = knownOr(() => r.props.stdin);
        if (typeof stdin !== "string") continue;
        let text: unknown;
        try {
            text = readAnsibleRunInput(stdin).inventory;
        } catch {
            continue; // another command's stdin (validation variables, a switch config)
        }
        if (typeof text !== "string") continue;
        let doc: any;
        try {
            doc = parseYaml(text);
        } catch {
            continue; // not an inventory (the validation command passes a file path)
        }
        const hosts = doc?.all?.hosts;
        if (!hosts || typeof hosts !== "object") continue;
        const roce = Object.entries(hosts as Record<string, any>).filter(([, v]) => v && typeof v === "object" && "roce_host_dscp" in v);
        if (roce.length > 0) out.push({ resource: r, hosts: roce.map(([n, v]) => hostPlan(n, v)) });
    }
    return out;
}

export const roceQosConsistency: StackValidationPolicy = {
    name: "roce-qos-consistency",
    description:
        "The RoCE switch configurations the stack pushes and the host QoS settings its Ansible run applies agree (rules C1–C13), " +
        "and every pushed text matches the digest its script checks.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Change cluster.roce.qos (not the rendered files) and let rdmakit render both sides from the one QoS plan; run " +
        "`rdmakit switch-config --config <stack file>` to see each switch's text and the rule that fails. The rules and their " +
        "sources are in components/roce/consistency.ts (RULES) and ../shared/research/roce.md §5.",
    validateStack: (args, report) => {
        const pushed = pushedSwitchConfigs(args.resources);
        const inventories = inventoryRoceHosts(args.resources);
        if (pushed.length === 0 && inventories.length === 0) args.notApplicable("no RoCE switch push and no RoCE host inventory");

        for (const p of pushed) {
            if (p.config.digest !== p.declaredDigest) {
                report(`switch push ${p.resource.name}: the stdin text of ${p.config.switch} has sha256 ${p.config.digest} but the script expects ${p.declaredDigest}; the switch would refuse it`, p.resource.urn);
            }
        }

        // One host list (the provisioning inventory; the same host in two inventories counts once).
        const hosts = new Map<string, HostPlan>();
        for (const inv of inventories) for (const h of inv.hosts) if (!hosts.has(h.name)) hosts.set(h.name, h);
        const hostList = [...hosts.values()];
        const views = pushed.map((p) => readSwitchView(p.config));
        // The plan's mode is what the hosts were given (PFC on = lossless); without hosts, what the switches run.
        const lossless = hostList.length > 0 ? hostList.some((h) => h.vars.roce_host_pfc) : views.some((v) => v.mode === "lossless");
        const first = hostList[0]?.vars;
        // checkConsistency reads mode, hosts, switches (only to look up spec facts by name), roce.dscp and cnp.priority;
        // the rest of a QosPlan is what the renderers used and is not in any resource.
        const plan = {
            mode: lossless ? "lossless" : "lossy",
            hosts: hostList,
            switches: [],
            roce: { dscp: first?.roce_host_dscp ?? -1, priority: first?.roce_host_priority ?? -1 },
            cnp: { dscp: first?.roce_host_cnp_dscp ?? -1, priority: first?.roce_host_cnp_priority ?? -1 },
        } as unknown as QosPlan;

        const bySwitch = new Map(pushed.map((p) => [p.config.switch, p.resource]));
        const hostSource = inventories[0]?.resource;
        for (const v of checkConsistency(plan, pushed.map((p) => p.config))) {
            const on = v.devices.map((d) => bySwitch.get(d.split(":")[0])).find((r) => r !== undefined) ?? hostSource;
            report(`${formatViolation(v)} (values ${JSON.stringify(v.values)}; checked on ${on ? on.name : "the stack"})`, on?.urn);
        }
    },
};
