/**
 * SONiC renderer: the config_db.json tables that carry the RoCE QoS plan for one switch. The result is merged into
 * the running CONFIG_DB (`config load` / `sonic-cfggen -j ... --write-to-db` update fields per key), so it only holds
 * the keys the plan decides; PORT rows keep their platform fields (lanes, alias) from the switch.
 *
 * SONiC's generic qos_config.j2 maps DSCP 26 to TC 1 (lossy) and makes TCs 3/4 lossless from DSCP 3/4 (roce.md §1
 * "Trap"); this map replaces it per port and globally, so DSCP 26 (or the plan's RoCE DSCP) lands on the lossless TC.
 *
 * Table and field names: sonic-net/sonic-buildimage:src/sonic-yang-models/yang-models/*.yang (the tests run yanglint
 * on them: test/fixtures/roce/helpers.ts) and roce.md §4b. References are plain names (leafrefs), not `[TABLE|key]`.
 */
import type { QosPlan, SwitchRenderInput } from "../qos";

export type SonicTable = Record<string, Record<string, string>>;
export type SonicConfigDb = Record<string, SonicTable | Record<string, Record<string, string>>>;

/** Object names the renderer owns; YANG requires `[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}` for map and WRED names. */
export const SONIC_NAMES = {
    map: "RDMAKIT_ROCE",
    wred: "RDMAKIT_ROCE_ECN",
    schedRoce: "RDMAKIT_ROCE_DWRR",
    schedOther: "RDMAKIT_OTHER_DWRR",
    schedCnp: "RDMAKIT_CNP_STRICT",
    // The dynamic buffer model reads the AZURE rows of CABLE_LENGTH / LOSSLESS_TRAFFIC_PATTERN.
    // source: sonic-net/sonic-buildimage:files/build_templates/buffers_config.j2 (roce.md §4b "CABLE_LENGTH ... AZURE")
    azure: "AZURE",
} as const;

const range = (n: number) => Array.from({ length: n }, (_, i) => i);

/** "<n>m" as CABLE_LENGTH wants it (pattern `[0-9]+m`, sonic-cable-length.yang); rounded up so headroom is never short. */
export function sonicCableLength(m: number): string {
    return `${Math.ceil(m)}m`;
}

/** [0,1,2,4,5,6] → ["0-2", "4-6"]: contiguous queue indexes as BUFFER_QUEUE keys take them (`[0-9]+(-[0-9]+)?`). */
export function queueRanges(qs: readonly number[]): string[] {
    const out: string[] = [];
    for (let i = 0; i < qs.length;) {
        let j = i;
        while (j + 1 < qs.length && qs[j + 1] === qs[j] + 1) j++;
        out.push(i === j ? String(qs[i]) : `${qs[i]}-${qs[j]}`);
        i = j + 1;
    }
    return out;
}

/** Renders the config_db.json fragment for one SONiC switch. Pure. */
export function renderSonic(plan: QosPlan, sw: SwitchRenderInput): SonicConfigDb {
    if (sw.os !== "sonic") throw new Error(`renderSonic: the switch runs ${sw.os}`);
    const lossless = plan.mode === "lossless";
    const n = SONIC_NAMES;
    const pfc = plan.pfc.priorities.join(","); // "" when lossy: pattern ([0-7](,[0-7])*)? allows empty (sonic-port-qos-map.yang)

    // Every DSCP explicitly: RoCE → its TC, CNP → CNP TC, everything else → the other class, so no stray marking
    // rides the lossless class (rule C3).
    const dscpToTc: Record<string, string> = {};
    for (const d of range(64)) {
        const tc = d === plan.roce.dscp ? sw.roce.trafficClass : d === plan.cnp.dscp ? sw.cnp.trafficClass : sw.other.trafficClass;
        dscpToTc[String(d)] = String(tc);
    }
    const tcToPg: Record<string, string> = {};
    const tcToQueue: Record<string, string> = {};
    const pfcToQueue: Record<string, string> = {};
    for (const tc of range(8)) {
        tcToPg[String(tc)] = String(tc === sw.roce.trafficClass ? sw.roce.priorityGroup : sw.other.priorityGroup);
        tcToQueue[String(tc)] = String(tc); // identity, as SONiC's AZURE map
        pfcToQueue[String(tc)] = String(tc); // PFC priority n pauses queue n (MAP_PFC_PRIORITY_TO_QUEUE AZURE is identity)
    }
    // The RoCE priority must pause the RoCE queue even where priority ≠ TC.
    pfcToQueue[String(sw.roce.priority)] = String(sw.roce.queue);

    const pfcToPg: Record<string, string> = { [String(sw.roce.priority)]: String(sw.roce.priorityGroup) };

    const portQos: Record<string, Record<string, string>> = {
        // PORT_QOS_MAP|global carries the switch-wide DSCP map on current images; ports bind it explicitly too.
        global: { dscp_to_tc_map: n.map },
    };
    const queue: Record<string, Record<string, string>> = {};
    const port: Record<string, Record<string, string>> = {};
    const bufferPg: Record<string, Record<string, string>> = {};
    const bufferQueue: Record<string, Record<string, string>> = {};
    const pfcWd: Record<string, Record<string, string>> = {};
    const cable: Record<string, string> = {};
    // Egress buffers: the RoCE queue lossless, queues 0-6 around it lossy, in ranges as buffers_config.j2 writes them
    // (`port|0-2`, `port|3-4`, `port|5-6`). The kit replaces the factory rows of every port it owns (push.ts).
    const lossyRanges = queueRanges(range(7).filter((q) => !lossless || q !== sw.roce.queue));
    for (const p of sw.ports) {
        portQos[p.name] = {
            dscp_to_tc_map: n.map,
            tc_to_pg_map: n.map,
            tc_to_queue_map: n.map,
            pfc_to_queue_map: n.map,
            // the PG that sends pause for the RoCE priority (without it a Spectrum switch pauses only 3 and 4)
            ...(sw.pfcToPgMap ? { pfc_to_pg_map: n.map } : {}),
            pfc_enable: pfc,
            // Watchdog on exactly the PFC priorities (rule C11: pfcwd_sw_enable == pfc_enable).
            pfcwd_sw_enable: pfc,
        };
        queue[`${p.name}|${sw.roce.queue}`] = { scheduler: n.schedRoce, wred_profile: n.wred };
        queue[`${p.name}|${sw.other.queue}`] = { scheduler: n.schedOther };
        queue[`${p.name}|${sw.cnp.queue}`] = { scheduler: n.schedCnp };
        // mtu range 68..9216 (sonic-port.yang). No speed: a wrong one flaps or downs the link and GCU refuses a speed
        // outside STATE_DB supported_speeds; the push checks PORT.speed read-only instead (push.ts, sonic-patch.ts).
        port[p.name] = { mtu: String(sw.mtu) };
        cable[p.name] = sonicCableLength(p.cableLengthM);
        // Profile names SONiC's buffer templates create on every SKU (DYN-HLD "mandatory entries": ingress_lossy_profile,
        // egress_lossless_profile, egress_lossy_profile); BUFFER_PG port|0 lossy as buffers_config.j2 renders it.
        bufferPg[`${p.name}|${sw.other.priorityGroup}`] = { profile: "ingress_lossy_profile" };
        for (const r of lossyRanges) bufferQueue[`${p.name}|${r}`] = { profile: "egress_lossy_profile" };
        if (lossless) {
            // profile "NULL": the dynamic buffer model computes the lossless headroom from speed, cable and MTU.
            // source: roce.md §4b (BUFFER_PG profile `"NULL"` = compute dynamically; dynamic model default since 202012).
            // The push refuses a switch on the traditional model instead of assuming (push.ts).
            bufferPg[`${p.name}|${sw.roce.priorityGroup}`] = { profile: "NULL" };
            bufferQueue[`${p.name}|${sw.roce.queue}`] = { profile: "egress_lossless_profile" };
            pfcWd[p.name] = {
                action: plan.pfc.watchdog.action,
                detection_time: String(plan.pfc.watchdog.detectionMs),
                restoration_time: String(plan.pfc.watchdog.restorationMs),
            };
        }
    }

    const db: SonicConfigDb = {
        DSCP_TO_TC_MAP: { [n.map]: dscpToTc },
        TC_TO_PRIORITY_GROUP_MAP: { [n.map]: tcToPg },
        TC_TO_QUEUE_MAP: { [n.map]: tcToQueue },
        MAP_PFC_PRIORITY_TO_QUEUE: { [n.map]: pfcToQueue },
        ...(sw.pfcToPgMap ? { PFC_PRIORITY_TO_PRIORITY_GROUP_MAP: { [n.map]: pfcToPg } } : {}),
        PORT_QOS_MAP: portQos,
        // ECN marking on the RoCE queue. Thresholds in bytes (uint64), probability 0..100 (sonic-wred-profile.yang).
        // ECN marking only, no WRED dropping: `ecn` sets SAI_WRED_ATTR_ECN_MARK_MODE and wred_<color>_enable sets
        // SAI_WRED_ATTR_<COLOR>_ENABLE, the WRED drop of that color (sonic-net/sonic-swss@e6b0c5b5d2ab:orchagent/qosorch.cpp);
        // with drop enabled a non-ECT packet on the RoCE queue (a RoCE NIC with ECN off, a stray TCP flow) is dropped
        // at up to the marking probability. The marking thresholds stand without the drop enable (sonic-sairedis
        // vslib wred: thresholds apply when "green_enable || ecn_mark_mode" covers the color; L for every ASIC's SAI).
        WRED_PROFILE: {
            [n.wred]: {
                ecn: "ecn_all",
                wred_green_enable: "false",
                wred_yellow_enable: "false",
                wred_red_enable: "false",
                green_min_threshold: String(plan.ecn.minBytes),
                green_max_threshold: String(plan.ecn.maxBytes),
                green_drop_probability: String(plan.ecn.maxProbabilityPct),
                yellow_min_threshold: String(plan.ecn.minBytes),
                yellow_max_threshold: String(plan.ecn.maxBytes),
                yellow_drop_probability: String(plan.ecn.maxProbabilityPct),
                red_min_threshold: String(plan.ecn.minBytes),
                red_max_threshold: String(plan.ecn.maxBytes),
                red_drop_probability: String(plan.ecn.maxProbabilityPct),
            },
        },
        // type DWRR|WRR|STRICT, weight 1..100 (sonic-scheduler.yang)
        SCHEDULER: {
            [n.schedRoce]: { type: "DWRR", weight: String(plan.ets.roceWeightPct) },
            [n.schedOther]: { type: "DWRR", weight: String(plan.ets.otherWeightPct) },
            [n.schedCnp]: { type: "STRICT" },
        },
        QUEUE: queue,
        PORT: port,
        CABLE_LENGTH: { [n.azure]: cable },
        BUFFER_PG: bufferPg,
        BUFFER_QUEUE: bufferQueue,
    };
    if (lossless) {
        // Headroom assumes this largest lossless frame (default 1024 would under-size it; rule C9).
        db.LOSSLESS_TRAFFIC_PATTERN = { [n.azure]: { mtu: String(plan.hostMtu), small_packet_percentage: "50" } };
        // GLOBAL.POLL_INTERVAL 100..1000 ms (sonic-pfcwd.yang); per-port detection/restoration must be >= it.
        db.PFC_WD = { GLOBAL: { POLL_INTERVAL: String(plan.pfc.watchdog.pollMs) }, ...pfcWd };
    }
    return db;
}

/** The file the switch takes: config_db.json text, stable key order, trailing newline. */
export function renderSonicText(plan: QosPlan, sw: SwitchRenderInput): string {
    return JSON.stringify(renderSonic(plan, sw), null, 4) + "\n";
}
