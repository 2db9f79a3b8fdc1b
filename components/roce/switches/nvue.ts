/**
 * Cumulus Linux / NVUE renderer: the YAML that `nv config patch <file>` takes (a list of operation objects,
 * here one `set`), followed on the switch by `nv config apply -y`.
 * source: CumulusNetworks/docs (NVUE-CLI: "nv config patch <nvue-file> Updates the pending configuration with the
 * specified YAML configuration file"; snippets page: the file is `- set: {...}`).
 *
 * Keys are the NVUE object model's (hyphenated, as `nv set` paths): roce.md §4a and
 * CumulusNetworks/docs:content/cumulus-linux-512/.../RDMA-over-Converged-Ethernet-RoCE.md, cumulus-linux-514
 * .../Quality-of-Service/_index.md, content/nvue-reference/Set-and-Unset-Commands/QoS.md. Check them against
 * `nv config show -o yaml` on the target release (roce.md: M confidence for the YAML tree).
 */
import { stringify } from "yaml";
import type { QosPlan, SwitchPlan } from "../qos";

/** The profile NVUE applies to every port unless a port names another. source: CL-QoS ("modify the default PFC profile (default-global)") */
export const NVUE_PROFILE = "default-global";

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

export type NvuePatch = [{ set: Record<string, unknown> }];

/** Renders the NVUE patch document for one switch. Pure. */
export function renderNvue(plan: QosPlan, sw: SwitchPlan): NvuePatch {
    if (sw.os !== "nvue") throw new Error(`renderNvue: switch ${sw.name} runs ${sw.os}`);
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
    // ETS: `nv set qos egress-scheduler default-global traffic-class <tc> mode dwrr|strict`, `bw-percent`.
    const scheduler = {
        [String(sw.other.trafficClass)]: { mode: "dwrr", "bw-percent": plan.ets.otherWeightPct },
        [String(sw.roce.trafficClass)]: { mode: "dwrr", "bw-percent": plan.ets.roceWeightPct },
        [String(sw.cnp.trafficClass)]: { mode: "strict" },
    };
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
    if (lossless) {
        // `nv set qos pfc default-global switch-priority 3`, tx/rx enable, cable-length 1..100000 m (CL-QoS, NVUE reference).
        qos.pfc = {
            [NVUE_PROFILE]: {
                "switch-priority": Object.fromEntries(plan.pfc.priorities.map((p) => [String(p), {}])),
                tx: "enable",
                rx: "enable",
                "cable-length": Math.ceil(sw.cableLengthM),
            },
        };
        // `nv set qos pfc-watchdog polling-interval 100-5000` (ms) and `robustness 1-1000` (polls before acting).
        qos["pfc-watchdog"] = {
            "polling-interval": plan.pfc.watchdog.pollMs,
            robustness: Math.max(1, Math.round(plan.pfc.watchdog.detectionMs / plan.pfc.watchdog.pollMs)),
        };
    }
    const iface: Record<string, unknown> = {};
    for (const p of sw.hostPorts) {
        // `nv set interface <id> link mtu`; `nv set interface <id> qos pfc-watchdog state (enable|disable)`.
        iface[p] = lossless
            ? { link: { mtu: sw.mtu }, qos: { "pfc-watchdog": { state: "enable" } } }
            : { link: { mtu: sw.mtu } };
    }
    return [{ set: { qos, interface: iface } }];
}

/** The file `nv config patch` takes. */
export function renderNvueText(plan: QosPlan, sw: SwitchPlan): string {
    // no anchors: they cost a search per node on 1,000-port switches, and `nv config patch` gains nothing from them
    return stringify(renderNvue(plan, sw), { aliasDuplicateObjects: false });
}
