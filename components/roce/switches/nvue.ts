/**
 * Cumulus Linux / NVUE renderer: the YAML that `nv config patch <file>` takes (a list of operation objects,
 * here one `set`). The push (push.ts) unsets the kit's sections first, so the file replaces them.
 * source: CumulusNetworks/docs (NVUE-CLI: "nv config patch <nvue-file> Updates the pending configuration with the
 * specified YAML configuration file"; snippets page: the file is `- set: {...}`).
 *
 * Keys are the NVUE object model's (hyphenated, as `nv set` paths): roce.md §4a and
 * CumulusNetworks/docs:content/cumulus-linux-512/.../RDMA-over-Converged-Ethernet-RoCE.md, cumulus-linux-514
 * .../Quality-of-Service/_index.md, content/nvue-reference/Set-and-Unset-Commands/QoS.md. Check them against
 * `nv config show -o yaml` on the target release (roce.md: M confidence for the YAML tree).
 */
import type { QosPlan, SwitchRenderInput } from "../qos";

/** The profile NVUE applies to every port unless a port names another. source: CL-QoS ("modify the default PFC profile (default-global)") */
export const NVUE_PROFILE = "default-global";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export type NvuePatch = [{ set: Record<string, unknown> }];

/** Renders the NVUE patch document for one switch. Pure. */
export function renderNvue(plan: QosPlan, sw: SwitchRenderInput): NvuePatch {
    if (sw.os !== "nvue") throw new Error(`renderNvue: the switch runs ${sw.os}`);
    const lossless = plan.mode === "lossless";

    // `nv set qos roce mode lossless|lossy` (CL-RoCE). Everything below pins what the profile would default, so the
    // file states the whole plan and a non-default DSCP/priority is set the way CL-RoCE "Change RoCE Configuration" does.
    const roce = { enable: "on", mode: plan.mode };

    // trust both: DSCP for IP packets, PCP otherwise (CL-QoS classification table); the RoCE profile uses pcp,dscp.
    const dscp: Record<string, { "switch-priority": number }> = {};
    for (const d of range(64)) {
        const sp = d === plan.roce.dscp ? sw.roce.priority : d === plan.cnp.dscp ? sw.cnp.priority : sw.other.priority;
        dscp[String(d)] = { "switch-priority": sp };
    }
    // Switch priority → traffic class (egress queue) for all eight, e.g. `... switch-priority 2 traffic-class 3`.
    const spToTc: Record<string, { "traffic-class": number }> = {};
    for (const sp of range(8)) {
        const tc = sp === sw.roce.priority ? sw.roce.trafficClass : sp === sw.cnp.priority ? sw.cnp.trafficClass : sw.other.trafficClass;
        spToTc[String(sp)] = { "traffic-class": tc };
    }
    // ETS over all eight traffic classes: a class left out keeps its factory weight (12/13 %), so the DWRR total would
    // pass 100 (issue 15). `bw-percent` takes 1-100 and the DWRR sum must be at most 100 (CL-QoS egress scheduler), so
    // classes no switch priority maps to get 1 % each, taken from the "other" class: the DWRR total is exactly 100.
    const used = new Set([sw.other.trafficClass, sw.roce.trafficClass, sw.cnp.trafficClass]);
    const idle = range(8).filter((tc) => !used.has(tc));
    const scheduler: Record<string, { mode: string; "bw-percent"?: number }> = {};
    for (const tc of range(8)) {
        scheduler[String(tc)] = tc === sw.cnp.trafficClass ? { mode: "strict" }
            : tc === sw.roce.trafficClass ? { mode: "dwrr", "bw-percent": plan.ets.roceWeightPct }
            : tc === sw.other.trafficClass ? { mode: "dwrr", "bw-percent": 100 - plan.ets.roceWeightPct - idle.length }
            : { mode: "dwrr", "bw-percent": 1 };
    }
    // ECN: `nv set qos congestion-control default-global traffic-class 3 ecn enable|min-threshold|max-threshold|probability` (bytes).
    const congestion = {
        [String(sw.roce.trafficClass)]: {
            ecn: "enable",
            "min-threshold": plan.ecn.minBytes,
            "max-threshold": plan.ecn.maxBytes,
            probability: plan.ecn.maxProbabilityPct,
        },
    };

    const qos: Record<string, unknown> = {
        roce,
        mapping: { [NVUE_PROFILE]: { trust: "both", dscp } },
        "egress-queue-mapping": { [NVUE_PROFILE]: { "switch-priority": spToTc } },
        "egress-scheduler": { [NVUE_PROFILE]: { "traffic-class": scheduler } },
        "congestion-control": { [NVUE_PROFILE]: { "traffic-class": congestion } },
    };
    // PFC per cable length: the default profile carries the switch's default cable, other lengths (uplinks, long host
    // cables) get their own profile bound on their ports (`nv set interface <if> qos pfc profile <p>`; CL-QoS "a profile
    // overrides global settings on its ports"). cable-length 1..100000 m, rounded up so headroom is never short.
    const defaultCable = Math.ceil(sw.cableLengthM);
    const profileOf = (p: { cableLengthM: number }) => (Math.ceil(p.cableLengthM) === defaultCable ? NVUE_PROFILE : nvuePfcProfile(p.cableLengthM));
    if (lossless) {
        const pfcProfile = (cable: number) => ({
            "switch-priority": Object.fromEntries(plan.pfc.priorities.map((p) => [String(p), {}])),
            tx: "enable",
            rx: "enable",
            "cable-length": cable,
        });
        const profiles: Record<string, unknown> = { [NVUE_PROFILE]: pfcProfile(defaultCable) };
        for (const p of sw.ports) profiles[profileOf(p)] ??= pfcProfile(Math.ceil(p.cableLengthM));
        qos.pfc = profiles;
        // `nv set qos pfc-watchdog polling-interval 100-5000` (ms) and `robustness 1-1000` (polls before acting).
        qos["pfc-watchdog"] = {
            "polling-interval": plan.pfc.watchdog.pollMs,
            robustness: Math.max(1, Math.round(plan.pfc.watchdog.detectionMs / plan.pfc.watchdog.pollMs)),
        };
    }
    const iface: Record<string, unknown> = {};
    for (const p of sw.ports) {
        // `nv set interface <id> link mtu`; `nv set interface <id> qos pfc-watchdog state (enable|disable)`.
        const profile = profileOf(p);
        iface[p.name] = lossless
            ? { link: { mtu: sw.mtu }, qos: { "pfc-watchdog": { state: "enable" }, ...(profile === NVUE_PROFILE ? {} : { pfc: { profile } }) } }
            : { link: { mtu: sw.mtu } };
    }
    return [{ set: { qos, interface: iface } }];
}

/** Name of the PFC profile for ports whose cable differs from the switch default. */
export function nvuePfcProfile(cableLengthM: number): string {
    return `rdmakit-pfc-${Math.ceil(cableLengthM)}m`;
}

/**
 * The file `nv config patch` takes, from the rendered document: block YAML, two spaces per level, as the `yaml`
 * package prints it (test/roce-render.test.ts holds the two equal). Written out because the document is only maps,
 * one list and scalars, and the general printer costs seconds on a fabric of a few hundred switches.
 */
export function nvueText(doc: NvuePatch): string {
    const out: string[] = [];
    const emit = (v: unknown, indent: string): void => {
        for (const [k, x] of Object.entries(v as Record<string, unknown>)) {
            if (x !== null && typeof x === "object") {
                if (Object.keys(x).length === 0) { out.push(`${indent}${yamlScalar(k)}: {}`); continue; }
                out.push(`${indent}${yamlScalar(k)}:`);
                emit(x, indent + "  ");
            } else out.push(`${indent}${yamlScalar(k)}: ${yamlScalar(x as string | number)}`);
        }
    };
    for (const op of doc) {
        const [k, v] = Object.entries(op)[0];
        out.push(`- ${k}:`);
        emit(v, "    ");
    }
    return out.join("\n") + "\n";
}

// A plain scalar YAML reads back as the same string: letters first, no YAML 1.2 keyword (true/false/null, which
// the core schema would turn into another type), nothing that starts a flow, comment or tag. `on`/`off` stay plain
// (strings in YAML 1.2, as NVUE prints them). Everything else is double-quoted JSON, which YAML reads as-is.
const PLAIN = /^[A-Za-z][A-Za-z0-9_./-]*$/;
const KEYWORD = /^(true|false|null|True|False|Null|TRUE|FALSE|NULL)$/;
function yamlScalar(v: string | number): string {
    if (typeof v === "number") return String(v);
    return PLAIN.test(v) && !KEYWORD.test(v) ? v : JSON.stringify(v);
}

/** The file `nv config patch` takes. */
export function renderNvueText(plan: QosPlan, sw: SwitchRenderInput): string {
    return nvueText(renderNvue(plan, sw));
}
