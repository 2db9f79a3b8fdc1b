/**
 * Consistency rules C1–C13 (../shared/research/roce.md §5) as one pure function over the QoS plan (host side: the
 * roce_host_* variables and the NCCL environment of every host) and the rendered switch configurations.
 *
 * The switch side is read back from the rendered text (config_db.json, NVUE YAML, EOS CLI), not from the plan, so
 * a renderer bug, a hand edit of a saved config or a plan/host mismatch all show up as violations. Each violation
 * names the rule, the devices and the values that disagree.
 */
import { parse as parseYaml } from "yaml";
import type { QosPlan, HostPlan } from "./qos";
import { MAX_REMEMBERED, parsedOf } from "../parsed";
import type { RenderedSwitchConfig } from "./render";
import type { NetworkOs } from "./spec";

export type RuleId = "C1" | "C2" | "C3" | "C4" | "C5" | "C6" | "C7" | "C8" | "C9" | "C10" | "C11" | "C12" | "C13" | "C14" | "C15" | "C16" | "C17";

export interface Violation {
    rule: RuleId;
    /** Hosts and/or switches (switch ports as `switch:port`) that disagree. */
    devices: string[];
    message: string;
    values: Record<string, unknown>;
}

export const RULES: Readonly<Record<RuleId, string>> = {
    C1: "host RoCE DSCP (NCCL_IB_TC >> 2, rdma_cm ToS >> 2) is mapped by every switch to the RoCE (lossless) queue",
    C2: "host dscp2prio(RoCE DSCP) = host PFC priority = switch PFC priority, and that priority pauses the RoCE queue",
    C3: "exactly one lossless priority; the CNP priority has no PFC and is scheduled strict",
    C4: "the RoCE PG has a lossless buffer profile and the cable length matches the real cable",
    C5: "trust DSCP on NIC and switch; 802.3x link pause off where PFC runs",
    C6: "the CNP DSCP is classified into the strict CNP queue",
    C7: "ECN marking on the RoCE queue ⇔ NIC ECN notification (NP) and reaction (RP) on the RoCE priority",
    C8: "NCCL_IB_TC carries ECT(0): NCCL_IB_TC & 3 == 2",
    C9: "switch MTU ≥ host MTU ≥ 4200; SONiC lossless traffic pattern MTU ≥ host MTU",
    C10: "NCCL_IB_GID_INDEX is the index the host role verifies as RoCE v2 / IPv4",
    C11: "PFC watchdog on every PFC port and priority, action drop, detection ≥ poll interval",
    C12: "switch mode and host mode agree (lossless ⇔ host PFC on; lossy ⇔ host PFC off + lossy NIC tuning)",
    C13: "NCCL_IB_HCA lists exactly the rail NICs; NCCL_SOCKET_IFNAME is the bootstrap NIC",
    C14: "every fabric port (leaf uplink, spine downlink) carries the lossless class like a host port, and both ends of a link agree",
    C15: "the PFC priority → priority group map sends the RoCE priority's pause from the PG with the lossless buffer (SONiC)",
    C16: "the lossless headroom of all RoCE ports fits the switch's lossless buffer pool (catalog figure; unknown is not checked)",
    C17: "ECN starts marking before PFC can fire: the RoCE queue's ECN minimum is below the point where the shared buffer pauses",
};

/** What one switch port does with traffic, as read from a rendered configuration. */
export interface PortView {
    port: string;
    dscpToTc: Record<number, number>;
    /** NVUE only: DSCP → switch priority. */
    dscpToPriority?: Record<number, number>;
    tcToQueue: Record<number, number>;
    tcToPg: Record<number, number>;
    /** PFC priority → the queue its pause frames stop. */
    pfcToQueue: Record<number, number>;
    pfcPriorities: number[];
    watchdogPriorities: number[];
    watchdogAction?: string;
    /** false when the watchdog's detection time is below its poll interval. */
    watchdogTimersOk: boolean;
    ecnQueues: number[];
    strictQueues: number[];
    mtu?: number;
    trustDscp: boolean;
    linkPause: boolean;
    /** PGs with a lossless buffer profile (SONiC BUFFER_PG). undefined where the OS sizes headroom itself (EOS). */
    losslessPgs?: number[];
    cableLengthM?: number;
    /** SONiC PFC_PRIORITY_TO_PRIORITY_GROUP_MAP bound on the port (undefined where the OS has no such map). */
    pfcToPg?: Record<number, number>;
    /** ECN marking start (bytes) per queue. */
    ecnMinBytes: Record<number, number>;
}

export interface SwitchView {
    name: string;
    os: NetworkOs;
    /** NVUE `qos roce mode`; otherwise derived (PFC on any port → lossless). */
    mode: "lossless" | "lossy";
    ports: PortView[];
    losslessPatternMtu?: number;
}

const nums = (s: string) => (s === "" ? [] : s.split(",").map((x) => Number(x.trim())));
const toNumMap = (o: Record<string, unknown> | undefined): Record<number, number> =>
    Object.fromEntries(Object.entries(o ?? {}).map(([k, v]) => [Number(k), Number(v)]));
const identity8 = (): Record<number, number> => Object.fromEntries(Array.from({ length: 8 }, (_, i) => [i, i]));

// ---------------------------------------------------------------------------------------------------------------
// Readers

type Db = Record<string, Record<string, Record<string, string>>>;

/**
 * The fields that name another table's row, and the older form of those names: `[DSCP_TO_TC_MAP|AZURE]` where today's
 * CONFIG_DB holds `AZURE`. Source: sonic-net/sonic-utilities scripts/db_migrator.py, version_3_0_2 →
 * migrate_qos_fieldval_reference_format (QUEUE scheduler/wred_profile, PORT_QOS_MAP *_map, BUFFER_PG profile, ...);
 * a switch still on a config_db.json of that age, or one written by hand in that form, is read the same.
 */
const SONIC_REFERENCES: Record<string, string[]> = {
    QUEUE: ["scheduler", "wred_profile"],
    PORT_QOS_MAP: ["dscp_to_tc_map", "dot1p_to_tc_map", "pfc_to_queue_map", "tc_to_pg_map", "tc_to_queue_map", "pfc_to_pg_map"],
    BUFFER_PG: ["profile"],
    BUFFER_QUEUE: ["profile"],
    BUFFER_PROFILE: ["pool"],
};
const LEGACY_REFERENCE = /^\[([A-Z_]+)\|([^\]|]+)\]$/;

/** A copy of the tables that hold references, each `[TABLE|name]` value as its bare `name`. */
function bareReferences(db: Db): Db {
    const out: Db = { ...db };
    for (const [table, fields] of Object.entries(SONIC_REFERENCES)) {
        const rows = db[table];
        if (!rows || typeof rows !== "object") continue;
        // only a table and a row that hold an older name are copied (a 2,048-host fabric has tens of thousands of
        // rows, nearly always all in today's form); the rest is shared, as the reader never changes what it reads
        let copied: Db[string] | undefined;
        for (const [key, row] of Object.entries(rows)) {
            if (!row || typeof row !== "object") continue;
            let copy: Record<string, string> | undefined;
            for (const f of fields) {
                const m = typeof row[f] === "string" ? LEGACY_REFERENCE.exec(row[f]) : null;
                if (m) (copy ??= { ...row })[f] = m[2];
            }
            if (copy) (copied ??= { ...rows })[key] = copy;
        }
        if (copied) out[table] = copied;
    }
    return out;
}

/**
 * The queue or PG indexes of a `PORT|<i>` or `PORT|<a>-<b>` key: every index of the range (`0-2` is 0, 1 and 2, as
 * sonic-buildimage's buffers_config.j2 writes `BUFFER_QUEUE port|0-2`). An index that is not a number or range gives
 * none, so the port reads as without that row rather than with a wrong one.
 */
function indexRange(s: string | undefined): number[] {
    const m = /^(\d+)(?:-(\d+))?$/.exec(s ?? "");
    if (!m) return [];
    const a = Number(m[1]), b = Number(m[2] ?? m[1]);
    return b >= a && b - a < 64 ? Array.from({ length: b - a + 1 }, (_, i) => a + i) : [];
}

export function readSonic(name: string, text: string | Db): SwitchView {
    const db = bareReferences((typeof text === "string" ? JSON.parse(text) : text) as Db);
    const t = (table: string) => db[table] ?? {};
    const wd = t("PFC_WD");
    const poll = Number(wd.GLOBAL?.POLL_INTERVAL ?? 0);
    const ports: PortView[] = [];
    // each named map converted once, shared by the ports that bind it (views are read-only)
    const maps = new Map<string, Record<number, number>>();
    const mapOf = (table: string, name: string | undefined) => {
        const key = `${table}|${name ?? ""}`;
        let m = maps.get(key);
        if (!m) maps.set(key, (m = toNumMap(t(table)[name ?? ""])));
        return m;
    };
    // rows of a `PORT|index` table grouped by port once, so a 1,000-port switch is read in linear time. A key may name
    // several ports, `Ethernet0,Ethernet4|3-4`: orchagent splits the port part at ',' (sonic-swss orchagent/qosorch.cpp
    // and bufferorch.cpp, tokenize(tokens[0], list_item_delimiter)); sonic-mgmt-common's CVL tests validate such keys
    const ofPorts = (key: string) => key.split(",").map((p) => p.trim()).filter(Boolean);
    const byPort = (table: string) => {
        const m = new Map<string, Array<[string, any]>>();
        for (const e of Object.entries(t(table))) {
            for (const port of ofPorts(e[0].split("|")[0])) (m.get(port) ?? m.set(port, []).get(port)!).push(e);
        }
        return m;
    };
    const queueRows = byPort("QUEUE");
    const pgRows = byPort("BUFFER_PG");
    // port → its cable length, from the first CABLE_LENGTH row that names it (rows in document order), built once: a
    // lookup per port through every row was ports × rows (10k of each took 15 s; a switch's CONFIG_DB is untrusted)
    const cableOf = new Map<string, string>();
    for (const row of Object.values(t("CABLE_LENGTH"))) {
        if (!row || typeof row !== "object") continue;
        for (const [port, len] of Object.entries(row)) if (typeof len === "string" && !cableOf.has(port)) cableOf.set(port, len);
    }
    // PORT_QOS_MAP keys may name several ports too (qosorch.cpp handlePortQosMapTable splits its key the same way)
    const qosMaps = Object.entries(t("PORT_QOS_MAP")).flatMap(([key, qm]) => ofPorts(key).map((port) => [port, qm] as const));
    for (const [port, qm] of qosMaps) {
        if (port === "global") continue;
        const pfc = nums(qm.pfc_enable ?? "");
        const queues = queueRows.get(port) ?? [];
        const ecnQueues: number[] = [];
        const strictQueues: number[] = [];
        const ecnMinBytes: Record<number, number> = {};
        for (const [k, q] of queues) {
            const idx = indexRange(k.split("|")[1]);
            const wred = q.wred_profile ? t("WRED_PROFILE")[q.wred_profile] : undefined;
            if (wred && wred.ecn && wred.ecn !== "ecn_none") {
                ecnQueues.push(...idx);
                for (const i of idx) ecnMinBytes[i] = Number(wred.green_min_threshold);
            }
            const sched = q.scheduler ? t("SCHEDULER")[q.scheduler] : undefined;
            if (sched?.type === "STRICT") strictQueues.push(...idx);
        }
        const pgs = (pgRows.get(port) ?? [])
            .filter(([, v]) => v.profile === "NULL" || /lossless/.test(v.profile ?? ""))
            .flatMap(([k]) => indexRange(k.split("|")[1]));
        const cable = cableOf.get(port);
        const pw = wd[port];
        ports.push({
            port,
            dscpToTc: mapOf("DSCP_TO_TC_MAP", qm.dscp_to_tc_map),
            tcToQueue: mapOf("TC_TO_QUEUE_MAP", qm.tc_to_queue_map),
            tcToPg: mapOf("TC_TO_PRIORITY_GROUP_MAP", qm.tc_to_pg_map),
            pfcToQueue: mapOf("MAP_PFC_PRIORITY_TO_QUEUE", qm.pfc_to_queue_map),
            pfcPriorities: pfc,
            watchdogPriorities: pw ? nums(qm.pfcwd_sw_enable ?? "") : [],
            watchdogAction: pw?.action,
            watchdogTimersOk: !pw || (Number(pw.detection_time) >= poll && Number(pw.restoration_time) >= poll),
            ecnQueues, strictQueues, ecnMinBytes,
            pfcToPg: qm.pfc_to_pg_map ? mapOf("PFC_PRIORITY_TO_PRIORITY_GROUP_MAP", qm.pfc_to_pg_map) : undefined,
            mtu: db.PORT?.[port]?.mtu !== undefined ? Number(db.PORT[port].mtu) : undefined,
            trustDscp: Boolean(qm.dscp_to_tc_map && t("DSCP_TO_TC_MAP")[qm.dscp_to_tc_map]),
            linkPause: false, // config_db has no 802.3x pause field; SONiC ports do not send link pause by default
            losslessPgs: pgs,
            cableLengthM: cable ? Number(cable.replace(/m$/, "")) : undefined,
        });
    }
    const pattern = Object.values(t("LOSSLESS_TRAFFIC_PATTERN"))[0];
    return {
        name, os: "sonic",
        mode: ports.some((p) => p.pfcPriorities.length) ? "lossless" : "lossy",
        ports,
        losslessPatternMtu: pattern?.mtu ? Number(pattern.mtu) : undefined,
    };
}

type Obj = Record<string, any>;  

export function readNvue(name: string, text: string | Obj[]): SwitchView {
    const doc = (typeof text === "string" ? parseYaml(text) : text) as Obj[];
    // merged op by op: a spread of the op list into one call overflowed the stack at ~300k ops (untrusted answer)
    const set: Obj = {};
    for (const op of doc) if (op?.set) Object.assign(set, op.set);
    const qos: Obj = set.qos ?? {};
    const prof = "default-global";
    const mapping: Obj = qos.mapping?.[prof] ?? {};
    const dscpToPriority = Object.fromEntries(Object.entries<Obj>(mapping.dscp ?? {}).map(([d, v]) => [Number(d), Number(v["switch-priority"])]));
    const spToTc = Object.fromEntries(Object.entries<Obj>(qos["egress-queue-mapping"]?.[prof]?.["switch-priority"] ?? {}).map(([sp, v]) => [Number(sp), Number(v["traffic-class"])]));
    const dscpToTc = Object.fromEntries(Object.entries(dscpToPriority).map(([d, sp]) => [Number(d), spToTc[sp]]));
    // a port binds a PFC profile by name (`interface <if> qos pfc profile <p>`), else default-global (CL-QoS)
    // read once per profile, shared by the ports that bind it (views are read-only)
    const pfcProfiles = new Map<string, { pfc: number[]; cable: unknown }>();
    const pfcOf = (profile: string) => {
        const hit = pfcProfiles.get(profile);
        if (hit) return hit;
        const pfcProf: Obj | undefined = qos.pfc?.[profile];
        const pfcOn = pfcProf && pfcProf.tx !== "disable" && pfcProf.rx !== "disable";
        const read = { pfc: pfcOn ? Object.keys(pfcProf["switch-priority"] ?? {}).map(Number) : [], cable: pfcProf?.["cable-length"] };
        pfcProfiles.set(profile, read);
        return read;
    };
    const tcToQueue = identity8(); // NVUE traffic class = egress queue (CL-QoS); one map for every port
    const sched: Obj = qos["egress-scheduler"]?.[prof]?.["traffic-class"] ?? {};
    const cc: Obj = qos["congestion-control"]?.[prof]?.["traffic-class"] ?? {};
    const wd: Obj = qos["pfc-watchdog"] ?? {};
    const ecnQueues = Object.entries(cc).filter(([, v]) => v.ecn === "enable").map(([tc]) => Number(tc));
    const ecnMinBytes = Object.fromEntries(Object.entries(cc).filter(([, v]) => v.ecn === "enable").map(([tc, v]) => [Number(tc), Number(v["min-threshold"])]));
    const strictQueues = Object.entries(sched).filter(([, v]) => v.mode === "strict").map(([tc]) => Number(tc));
    const anyPfc = pfcOf(prof).pfc.length > 0;
    const ports: PortView[] = Object.entries<Obj>(set.interface ?? {}).map(([port, iface]) => {
      const { pfc, cable } = pfcOf(iface.qos?.pfc?.profile ?? prof);
      return {
        port,
        dscpToTc, dscpToPriority,
        tcToQueue,
        tcToPg: {},
        pfcToQueue: spToTc,
        pfcPriorities: pfc,
        watchdogPriorities: iface.qos?.["pfc-watchdog"]?.state === "enable" ? pfc : [],
        watchdogAction: iface.qos?.["pfc-watchdog"]?.state === "enable" ? "drop" : undefined, // the Cumulus watchdog drops on the stuck queue (CL-QoS)
        watchdogTimersOk: wd.robustness === undefined || Number(wd.robustness) >= 1,
        ecnQueues, strictQueues, ecnMinBytes,
        mtu: iface.link?.mtu !== undefined ? Number(iface.link.mtu) : undefined,
        trustDscp: mapping.trust === "l3" || mapping.trust === "both",
        linkPause: qos["link-pause"] !== undefined,
        losslessPgs: undefined,
        cableLengthM: cable !== undefined ? Number(cable) : undefined,
      };
    });
    const mode = qos.roce?.mode === "lossy" ? "lossy" : qos.roce?.mode === "lossless" ? "lossless" : (anyPfc ? "lossless" : "lossy");
    return { name, os: "nvue", mode, ports };
}

/** EOS value lists as `qos map` lines take them: `0 1 2` (a range `0-7` is read too; L: not seen in the sources read). */
function eosList(s: string, line: string): number[] {
    return s.trim().split(/\s+/).flatMap((t) => {
        const m = t.match(/^(\d+)(?:-(\d+))?$/);
        if (!m) throw new Error(`cannot read the value list in EOS line '${line.slice(0, 200)}'`);
        const lo = Number(m[1]), hi = Number(m[2] ?? m[1]);
        // DSCP is 6 bits (RFC 2474 §3), a traffic class 0-7: a range past 63 is no EOS value list, and built whole
        // (`0-4000000000`, from an untrusted switch) it would take the controller's memory
        if (hi > 63 || lo > hi) throw new Error(`value ${t.slice(0, 24)} is out of 0-63 in EOS line '${line.slice(0, 200)}'`);
        return Array.from({ length: hi - lo + 1 }, (_, i) => lo + i);
    });
}

interface EosQos { trust?: boolean; pfcOn?: boolean; pfc: number[]; pfcDrop: number[]; wd?: boolean; wdAction?: string; ecn: number[]; ecnMin: Record<number, number>; strict: number[] }
const eosQos = (): EosQos => ({ pfc: [], pfcDrop: [], ecn: [], ecnMin: {}, strict: [] });

/**
 * One QoS statement of a `qos profile` or an `interface` block, as EOS accepts it in either place (AVD renders the
 * profile form, qos-profiles.j2; operators often write the same lines on the interface): `qos trust dscp|cos`,
 * `priority-flow-control on` or the older `priority-flow-control mode on`, `no priority-flow-control`,
 * `priority-flow-control priority <p> no-drop|drop`, the port watchdog lines, and `[uc-]tx-queue <q>` sub-blocks with
 * `priority strict`, `no priority`, `bandwidth percent`, `random-detect ecn …`. Returns false for a line that is not
 * QoS; throws for a PFC / ECN line it cannot read, so the switch is reported unreadable instead of read wrong.
 */
function eosQosLine(q: EosQos, line: string, txq: { q?: number }): boolean {
    let m: RegExpMatchArray | null;
    if ((m = line.match(/^qos trust (dscp|cos)$/))) { q.trust = m[1] === "dscp"; return true; }
    if (line === "no qos trust") { q.trust = false; return true; }
    if ((m = line.match(/^(?:uc-|mc-)?tx-queue (\d+)$/))) { txq.q = line.startsWith("mc-") ? undefined : Number(m[1]); return true; }
    if (line === "priority-flow-control on" || line === "priority-flow-control mode on") { q.pfcOn = true; return true; }
    if (line === "no priority-flow-control" || line === "no priority-flow-control mode" || line === "priority-flow-control off") { q.pfcOn = false; return true; }
    if ((m = line.match(/^priority-flow-control priority (\d) (no-drop|drop)$/))) { (m[2] === "no-drop" ? q.pfc : q.pfcDrop).push(Number(m[1])); return true; }
    if (line === "priority-flow-control pause watchdog") { q.wd = true; return true; }
    if (line === "no priority-flow-control pause watchdog") { q.wd = false; return true; }
    if ((m = line.match(/^priority-flow-control pause watchdog port action (\S+)$/))) { q.wdAction = m[1]; return true; }
    if (/^priority-flow-control pause watchdog port timer /.test(line)) return true;
    if (line.startsWith("priority-flow-control")) throw new Error(`cannot read the EOS PFC line '${line}'`);
    if (txq.q !== undefined) {
        if (line === "priority strict") { q.strict.push(txq.q); return true; }
        if (line === "no priority" || /^bandwidth (percent|guaranteed) /.test(line) || /^shape rate /.test(line)) return true;
        if (line.startsWith("random-detect ecn ")) {
            if (line === "random-detect ecn count") return true;
            // units EOS takes: bytes, kbytes, mbytes, segments, and the time-based microseconds and milliseconds
            // (source: aristanetworks/avd eos_cli_config_gen molecule "qos": `random-detect ecn minimum-threshold 3
            // milliseconds maximum-threshold 9 milliseconds max-mark-probability 90`, `... 320 segments ... weight 10`)
            const mm = line.match(/minimum-threshold (\d+) (bytes|kbytes|mbytes|segments|microseconds|milliseconds)\b/);
            if (!mm) throw new Error(`cannot read the EOS ECN line '${line}'`);
            q.ecn.push(txq.q);
            // kbytes/mbytes in 1024s (L: the unit base is not in the sources read). Segments and times are not bytes
            // without the cell size or the port's drain rate: the queue marks ECN (C7 reads it), its minimum stays
            // unknown, so C17 is not compared on it rather than compared wrong
            if (["bytes", "kbytes", "mbytes"].includes(mm[2])) q.ecnMin[txq.q] = Number(mm[1]) * (mm[2] === "kbytes" ? 1024 : mm[2] === "mbytes" ? 1024 * 1024 : 1);
            return true;
        }
    }
    return false;
}

/**
 * Arista EOS: the CLI text, as the renderer writes it and as `show running-config all` prints a switch's whole
 * configuration (the `all` form shows the defaults too, e.g. `flowcontrol receive off` and the default DSCP map, which
 * plain `show running-config` hides). QoS comes from the `qos profile` an interface names with `service-profile` and
 * from the same statements written on the interface itself (those win). Throws on a PFC, ECN, `qos map` or
 * `flowcontrol` line it cannot read.
 */
export function readEos(name: string, text: string | string[]): SwitchView {
    const dscpToTc: Record<number, number> = {};
    const tcToQueue = identity8();
    const profiles: Record<string, EosQos> = {};
    const ifaces: { port: string; mtu?: number; pauseOff: { send: boolean; receive: boolean }; profile?: string; qos: EosQos }[] = [];
    let globalWdAction: string | undefined;
    let ctx: { kind: "profile"; name: string } | { kind: "iface"; idx: number } | undefined;
    const txq: { q?: number } = {};
    for (const raw of typeof text === "string" ? text.split("\n") : text) {
        const line = raw.trim();
        if (!line || line.startsWith("!")) continue; // separators and comments
        const top = !/^\s/.test(raw);
        let m: RegExpMatchArray | null;
        if (top) {
            ctx = undefined; txq.q = undefined;
            // a top-level `no …` removes what an earlier push left before the section is written again (eos.ts)
            if (line.startsWith("no ")) continue;
            if ((m = line.match(/^qos map dscp (.+) to traffic-class (\d+)$/))) for (const d of eosList(m[1], line)) dscpToTc[d] = Number(m[2]);
            else if ((m = line.match(/^qos map traffic-class (.+) to tx-queue (\d+)$/))) for (const tc of eosList(m[1], line)) tcToQueue[tc] = Number(m[2]);
            else if (line.startsWith("qos map dscp ") || line.startsWith("qos map traffic-class ")) throw new Error(`cannot read the EOS line '${line}'`);
            else if ((m = line.match(/^priority-flow-control pause watchdog action (\S+)$/))) globalWdAction = m[1];
            else if ((m = line.match(/^qos profile (\S+)$/))) { profiles[m[1]] = eosQos(); ctx = { kind: "profile", name: m[1] }; }
            else if ((m = line.match(/^interface (\S+)$/))) { ifaces.push({ port: m[1], pauseOff: { send: false, receive: false }, qos: eosQos() }); ctx = { kind: "iface", idx: ifaces.length - 1 }; }
            continue;
        }
        if (ctx?.kind === "profile") {
            eosQosLine(profiles[ctx.name], line, txq);
        } else if (ctx?.kind === "iface") {
            const i = ifaces[ctx.idx];
            if (eosQosLine(i.qos, line, txq)) continue;
            if ((m = line.match(/^mtu (\d+)$/))) i.mtu = Number(m[1]);
            else if ((m = line.match(/^flowcontrol (send|receive) (on|off|desired)$/))) i.pauseOff[m[1] as "send" | "receive"] = m[2] === "off";
            else if (line.startsWith("flowcontrol ") || line.startsWith("no flowcontrol")) throw new Error(`cannot read the EOS line '${line}' (interface ${i.port})`);
            else if ((m = line.match(/^service-profile (\S+)$/))) i.profile = m[1];
        }
    }
    const ports: PortView[] = ifaces.map((i) => {
        const p = i.profile ? profiles[i.profile] : undefined;
        // interface statements win over the profile's (L: EOS's precedence is not in the sources read; it is what the
        // CLI's nesting suggests)
        const q = i.qos;
        const pfcOn = q.pfcOn ?? p?.pfcOn ?? false;
        const listed = q.pfc.length || q.pfcDrop.length ? q.pfc : p?.pfc ?? [];
        const pfc = pfcOn ? listed : [];
        const wd = q.wd ?? p?.wd ?? false;
        const ecn = q.ecn.length ? q.ecn : p?.ecn ?? [];
        return {
            port: i.port,
            dscpToTc, tcToQueue, tcToPg: {},
            pfcToQueue: tcToQueue, // EOS: PFC priority n ↔ traffic class n → its tx-queue
            pfcPriorities: pfc,
            watchdogPriorities: wd ? pfc : [],
            watchdogAction: wd ? (q.wdAction ?? p?.wdAction ?? globalWdAction) : undefined,
            watchdogTimersOk: true,
            ecnQueues: ecn,
            ecnMinBytes: q.ecn.length ? q.ecnMin : p?.ecnMin ?? {},
            strictQueues: q.strict.length ? q.strict : p?.strict ?? [],
            mtu: i.mtu,
            trustDscp: q.trust ?? p?.trust ?? false,
            linkPause: !(i.pauseOff.send && i.pauseOff.receive),
            losslessPgs: undefined,
            cableLengthM: undefined,
        };
    });
    return { name, os: "eos", mode: ports.some((p) => p.pfcPriorities.length) ? "lossless" : "lossy", ports };
}

/** Views by OS and text, whichever switch had the text first; and the view last given to each switch, with its text. */
const byText = new Map<string, { os: NetworkOs; view: SwitchView }>();
const bySwitch = new Map<string, { text: string; view: SwitchView }>();

/**
 * The switch's view, read from its text; the same text is read once per process (parsed.ts), whichever switch has it:
 * a reader's view depends on the text alone but for the switch's name (a rail fabric's leaves, like its spines, mostly
 * share one text), so a text read for another switch gives this one a copy under its own name. A switch asked again
 * for the same text gets the same view.
 */
export function readSwitchView(r: RenderedSwitchConfig): SwitchView {
    const mine = bySwitch.get(`${r.os} ${r.switch}`);
    if (mine && mine.text === r.text) return mine.view;
    const seen = byText.get(r.text);
    let v: SwitchView;
    if (seen && seen.os === r.os) {
        v = seen.view.name === r.switch ? seen.view : { ...seen.view, name: r.switch };
    } else {
        const parsed = parsedOf(r.text) as any;
        v = r.os === "sonic" ? readSonic(r.switch, parsed ?? r.text) : r.os === "nvue" ? readNvue(r.switch, parsed ?? r.text) : readEos(r.switch, parsed ?? r.text);
        if (byText.size >= MAX_REMEMBERED) byText.delete(byText.keys().next().value!);
        byText.set(r.text, { os: r.os, view: v });
    }
    if (bySwitch.size >= MAX_REMEMBERED) bySwitch.delete(bySwitch.keys().next().value!);
    bySwitch.set(`${r.os} ${r.switch}`, { text: r.text, view: v });
    return v;
}

// ---------------------------------------------------------------------------------------------------------------
// Rules

/** Priority the host NIC gives `dscp`: the role's explicit dscp2prio entries, else the NIC default DSCP/8 (roce.md §2). */
function hostPriorityOf(vars: HostPlan["vars"], dscp: number): number {
    if (dscp === vars.roce_host_dscp) return vars.roce_host_priority;
    if (dscp === vars.roce_host_cnp_dscp) return vars.roce_host_cnp_priority;
    return dscp >> 3;
}

/** PFC priorities the host role turns on: the vector it writes with mlnx_qos --pfc (roce_host_pfc false → none). */
function hostPfcPriorities(vars: HostPlan["vars"]): number[] {
    if (!vars.roce_host_pfc) return [];
    return vars.roce_host_pfc_vector.split(",").map((x, i) => (x.trim() === "1" ? i : -1)).filter((i) => i >= 0);
}

// ports by name, built once per plan switch / view (a spine has hundreds)
const planPorts = new WeakMap<object, Map<string, QosPlan["switches"][number]["ports"][number]>>();
const planPort = (ps: QosPlan["switches"][number], name: string) => {
    let m = planPorts.get(ps);
    if (!m) planPorts.set(ps, (m = new Map((ps.ports ?? []).map((x) => [x.name, x]))));
    return m.get(name);
};
// by the view's port list, which the switches that share a text share (readSwitchView)
const viewPorts = new WeakMap<readonly PortView[], Map<string, PortView>>();
const viewPortMap = (v: SwitchView) => {
    let m = viewPorts.get(v.ports);
    if (!m) viewPorts.set(v.ports, (m = new Map(v.ports.map((x) => [x.port, x]))));
    return m;
};
const viewPort = (v: SwitchView | undefined, name: string) => (v ? viewPortMap(v).get(name) : undefined);
/** The same numbers, in any order (a list of one or none, the usual case, compared without copies). */
const same = (a: readonly number[], b: readonly number[]) => {
    if (a.length !== b.length) return false;
    if (a.length === 0) return true;
    if (a.length === 1) return a[0] === b[0];
    const sb = [...b].sort();
    return [...a].sort().every((v, i) => v === sb[i]);
};

/** Evaluates C1–C17 on the rendered texts. An empty list means host, switch and NCCL settings agree. Pure. */
export function checkConsistency(plan: QosPlan, rendered: readonly RenderedSwitchConfig[]): Violation[] {
    // RoceCluster and `rdmakit plan` check the same (shared, read-only) plan against the same texts: check once. The
    // texts are compared as they are (the same rendered strings compare by reference, in no time), not hashed again
    const seen = checked.get(plan) ?? [];
    checked.set(plan, seen);
    const same = (a: readonly RenderedSwitchConfig[]) => a.length === rendered.length &&
        a.every((r, i) => r.text === rendered[i].text && r.os === rendered[i].os && r.switch === rendered[i].switch);
    const hit = seen.find((x) => same(x.rendered));
    if (hit) return hit.out.map((v) => ({ ...v }));
    const out = checkOnce(plan, rendered);
    // what was checked, as it was (the caller's array and its entries may change later); a few sets a plan at most
    if (seen.length >= 4) seen.shift();
    seen.push({ rendered: rendered.map((r) => ({ ...r })), out });
    return out.map((v) => ({ ...v }));
}
const checked = new WeakMap<QosPlan, Array<{ rendered: RenderedSwitchConfig[]; out: Violation[] }>>();

function checkOnce(plan: QosPlan, rendered: readonly RenderedSwitchConfig[]): Violation[] {
    return checkViews(plan, rendered.map(readSwitchView));
}

/**
 * C1–C17 over switch views however they were read: from rendered texts (checkConsistency) or from the running
 * configuration of each switch (`rdmakit fabric check`, drift.ts), so the rules exist once. Pure.
 */
export function checkViews(plan: QosPlan, views: readonly SwitchView[]): Violation[] {
    const out: Violation[] = [];
    const v = (rule: RuleId, devices: string[], message: string, values: Record<string, unknown>) => out.push({ rule, devices, message, values });
    const viewByName = new Map(views.map((x) => [x.name, x]));
    const lossless = plan.mode === "lossless";
    const hosts = plan.hosts;
    const sp = (s: SwitchView, p: PortView) => `${s.name}:${p.port}`;
    const planSwitches = new Map(plan.switches.map((s) => [s.name, s]));
    const planSwitch = (name: string) => planSwitches.get(name);

    // Host facts, per host.
    const hostDscp = (h: HostPlan) => Number(h.ncclEnv.NCCL_IB_TC) >> 2;

    // hosts of one plan mostly share their PFC vector and NIC list: each is read again only when it differs from the
    // host before (the PFC list is then shared by the violations that show it)
    let last: { pfc: boolean; vector: string; hostPfc: number[]; hca?: string; railNics: readonly string[]; hcaOk: boolean } | undefined;
    for (const h of hosts) {
        const tc = Number(h.ncclEnv.NCCL_IB_TC);
        // C8
        if (!Number.isInteger(tc) || (tc & 3) !== 2) v("C8", [h.name], `NCCL_IB_TC=${h.ncclEnv.NCCL_IB_TC} does not carry ECT(0) (low bits must be 10), so switches never ECN-mark RoCE`, { NCCL_IB_TC: h.ncclEnv.NCCL_IB_TC, expected: (tc & ~3) | 2 });
        if ((h.vars.roce_host_tos & 3) !== 2) v("C8", [h.name], `roce_host_tos=${h.vars.roce_host_tos} does not carry ECT(0)`, { roce_host_tos: h.vars.roce_host_tos });
        // C1 (host side): NCCL and rdma_cm ToS must name the same DSCP.
        if (h.vars.roce_host_tos >> 2 !== hostDscp(h)) v("C1", [h.name], `rdma_cm ToS ${h.vars.roce_host_tos} (DSCP ${h.vars.roce_host_tos >> 2}) and NCCL_IB_TC ${tc} (DSCP ${tc >> 2}) disagree`, { roce_host_tos: h.vars.roce_host_tos, NCCL_IB_TC: tc });
        // C2 (host side)
        const hostPrio = hostPriorityOf(h.vars, hostDscp(h));
        const hostPfc = last && last.pfc === h.vars.roce_host_pfc && last.vector === h.vars.roce_host_pfc_vector ? last.hostPfc : hostPfcPriorities(h.vars);
        if (lossless && !(hostPfc.length === 1 && hostPfc[0] === hostPrio)) v("C2", [h.name], `host maps DSCP ${hostDscp(h)} to priority ${hostPrio} but enables PFC on [${hostPfc}] (vector ${h.vars.roce_host_pfc_vector})`, { dscp: hostDscp(h), dscp2prio: hostPrio, pfc: hostPfc });
        // C3 (host side)
        if (lossless && hostPfc.length !== 1) v("C3", [h.name], `host must have exactly one PFC priority, has [${hostPfc}] (vector ${h.vars.roce_host_pfc_vector})`, { pfc: hostPfc, vector: h.vars.roce_host_pfc_vector });
        if (hostPfc.includes(h.vars.roce_host_cnp_priority)) v("C3", [h.name], `CNP priority ${h.vars.roce_host_cnp_priority} has PFC on the host`, { cnpPriority: h.vars.roce_host_cnp_priority, pfc: hostPfc });
        // C5 (host side)
        if (h.vars.roce_host_trust !== "dscp") v("C5", [h.name], `host trust is ${h.vars.roce_host_trust}, not dscp`, { trust: h.vars.roce_host_trust });
        if (lossless && h.vars.roce_host_global_pause !== false) v("C5", [h.name], "802.3x global pause must be off on a PFC host", { globalPause: h.vars.roce_host_global_pause });
        // C7 (host side)
        const dcqcnOk = h.vars.roce_host_ecn && h.vars.roce_host_priority === hostPrio && (h.vars.roce_host_cc_prio_mask & (1 << hostPrio)) !== 0;
        if (!dcqcnOk) v("C7", [h.name], `DCQCN (ECN NP/RP) not on the RoCE priority ${hostPrio}: roce_host_ecn ${h.vars.roce_host_ecn} on priority ${h.vars.roce_host_priority}, ROCE_CC_PRIO_MASK ${h.vars.roce_host_cc_prio_mask}`, { priority: hostPrio, ecn: h.vars.roce_host_ecn, ecnPriority: h.vars.roce_host_priority, ccPrioMask: h.vars.roce_host_cc_prio_mask });
        // C9 (host side)
        if (h.vars.roce_host_mtu < 4200) v("C9", [h.name], `host MTU ${h.vars.roce_host_mtu} is below 4200, so RoCE cannot use active_mtu 4096`, { hostMtu: h.vars.roce_host_mtu });
        // C10
        const gid = h.ncclEnv.NCCL_IB_GID_INDEX;
        if (gid !== undefined && (Number(gid) !== h.vars.roce_host_gid_index || h.vars.roce_host_verify_gid !== true)) v("C10", [h.name], `NCCL_IB_GID_INDEX=${gid} is not the GID index the host role verifies (${h.vars.roce_host_gid_index}, verify ${h.vars.roce_host_verify_gid})`, { NCCL_IB_GID_INDEX: gid, roce_host_gid_index: h.vars.roce_host_gid_index, verify: h.vars.roce_host_verify_gid });
        // C12 (host side)
        const hostLossless = hostPfc.length > 0;
        if (hostLossless !== lossless || h.vars.roce_host_lossy_tuning !== !lossless) v("C12", [h.name], `host is ${hostLossless ? "lossless" : "lossy"} (PFC [${hostPfc}], lossy tuning ${h.vars.roce_host_lossy_tuning}) but the plan is ${plan.mode}`, { planMode: plan.mode, hostPfc, lossyTuning: h.vars.roce_host_lossy_tuning });
        // C13
        const hcaOk = last && last.hca === h.ncclEnv.NCCL_IB_HCA && sameStrings(last.railNics, h.railNics) ? last.hcaOk : hcaMatches(h);
        last = { pfc: h.vars.roce_host_pfc, vector: h.vars.roce_host_pfc_vector, hostPfc, hca: h.ncclEnv.NCCL_IB_HCA, railNics: h.railNics, hcaOk };
        if (!hcaOk) {
            v("C13", [h.name], `NCCL_IB_HCA=${h.ncclEnv.NCCL_IB_HCA} is not the exact list of rail NICs (${h.railNics.join(",")})`, { NCCL_IB_HCA: h.ncclEnv.NCCL_IB_HCA, railNics: h.railNics });
        }
        const ifname = (h.ncclEnv.NCCL_SOCKET_IFNAME ?? "").replace(/^=/, "");
        if (ifname !== h.bootstrapNic || h.railNics.includes(ifname)) v("C13", [h.name], `NCCL_SOCKET_IFNAME=${h.ncclEnv.NCCL_SOCKET_IFNAME} is not the bootstrap NIC ${h.bootstrapNic}`, { NCCL_SOCKET_IFNAME: h.ncclEnv.NCCL_SOCKET_IFNAME, bootstrapNic: h.bootstrapNic });
    }

    // Host ↔ switch, per switch port. Hosts with the same QoS-relevant values are compared once, as a group, so one
    // switch mistake gives one violation per port rather than one per host and port.
    const groups: HostGroup[] = [];
    const groupOf = new Map<string, HostGroup>();
    // each host's group, in host order (the cabling below)
    const hostGroup: number[] = [];
    for (const h of hosts) {
        const dscp = hostDscp(h);
        const hostPrio = hostPriorityOf(h.vars, dscp);
        const key = JSON.stringify([dscp, hostPrio, h.vars.roce_host_cnp_dscp, h.vars.roce_host_mtu]);
        // found by key, not by a search of the groups: rails a fabric check read each differ (untrusted), which made
        // the search hosts × groups
        const g = groupOf.get(key);
        if (g) { g.names.push(h.name); hostGroup.push(g.index); }
        else { const ng = { names: [h.name], dscp, hostPrio, vars: h.vars, index: groups.length }; hostGroup.push(ng.index); groups.push(ng); groupOf.set(key, ng); }
    }
    // which groups each port is compared with (cabledGroups): every group, or where the cabling is declared the group
    // of the rail cabled to the port, and the plan's own host values on a port no rail is cabled to
    const cabled = cabledGroups(hosts, hostGroup);
    const everyGroup: Compared = { groups, values: groupValues(groups) };
    const ownGroup: Compared[] = [];
    let planGroup: Compared | undefined;
    const compared = (at: ReadonlyMap<string, number> | undefined, p: PortView): Compared => {
        const gi = at?.get(p.port);
        if (gi === undefined) return (planGroup ??= planValuesGroup(plan, hosts, groupOf));
        return (ownGroup[gi] ??= { groups: [groups[gi]], values: groupValues([groups[gi]]) });
    };
    // each port view that broke no port rule, with the facts it was checked with (portFacts)
    const passed = new Map<PortView, PortFacts>();
    for (const s of views) {
        const ps = planSwitch(s.name);
        // C12 (switch side)
        if (s.mode !== plan.mode) v("C12", [s.name], `switch runs ${s.mode} but the plan (and hosts) are ${plan.mode}`, { switchMode: s.mode, planMode: plan.mode });
        if (ps) {
            const configured = viewPortMap(s);
            const missing = ps.hostPorts.filter((p) => !configured.has(p));
            if (missing.length) v("C5", [s.name], `host ports without RoCE QoS in the rendered config: ${missing.join(", ")}`, { missing });
            // C14: fabric ports configured and lossless
            const fabric = (ps.ports ?? []).filter((p) => p.kind !== "host");
            const bare = fabric.filter((p) => !configured.has(p.name)).map((p) => p.name);
            if (bare.length) v("C14", [s.name], `fabric ports without RoCE QoS in the rendered config: ${bare.join(", ")} (RoCE crossing them rides a lossy queue)`, { missing: bare });
            if (lossless) {
                for (const fp of fabric) {
                    const pv = viewPort(s, fp.name);
                    if (pv && !pv.pfcPriorities.includes(plan.roce.priority)) v("C14", [sp(s, pv)], `fabric port ${sp(s, pv)} (to ${fp.peer}) runs PFC on [${pv.pfcPriorities}], not the RoCE priority ${plan.roce.priority}`, { pfc: pv.pfcPriorities, priority: plan.roce.priority });
                    // both ends pause the same priorities (the peer's view, when it is among the rendered configs); MTU is
                    // C9's (each hop ≥ the host MTU: EOS tops out at 9214, SONiC at 9216, and both carry 9000-byte frames)
                    const [peerName, peerPort] = peerEnd(fp.peer);
                    const peer = peerPort === undefined ? undefined : viewPort(viewByName.get(peerName), peerPort);
                    if (pv && peer && !same(pv.pfcPriorities, peer.pfcPriorities)) {
                        v("C14", [sp(s, pv), `${peerName}:${peerPort}`], `the two ends of ${sp(s, pv)} ↔ ${fp.peer} pause different priorities: [${pv.pfcPriorities}] vs [${peer.pfcPriorities}]`, { pfc: [pv.pfcPriorities, peer.pfcPriorities] });
                    }
                }
            }
            // C16 (plan side: the catalog's buffer facts for the switch model)
            const b = ps.buffer;
            if (lossless && b?.headroomBytes !== undefined && b.poolBytes !== undefined && b.headroomBytes > b.poolBytes) {
                v("C16", [s.name], `the lossless PGs of ${ps.ports.length} ports reserve ${b.headroomBytes} B of headroom, more than the ${ps.model} lossless pool (${b.poolBytes} B)`, { headroomBytes: b.headroomBytes, poolBytes: b.poolBytes, source: b.source });
            }
        }
        // the ports of this switch that rails are cabled to
        const cabledHere = cabled?.get(s.name);
        // indexed loops: a for-of makes an iterator each time until the optimiser takes the loop (32,768 ports)
        for (let pi = 0; pi < s.ports.length; pi++) {
            const p = s.ports[pi];
            // the real cable of the port (C4), when the plan has the switch
            const real = lossless && ps ? planPort(ps, p.port)?.cableLengthM ?? ps.cableLengthM : undefined;
            const cmp = cabled ? compared(cabledHere, p) : everyGroup;
            const prior = passed.get(p);
            if (prior !== undefined && prior.compared === cmp && hasFacts(prior, s, ps, real)) continue;
            const found = out.length;
            const pausedQueues = p.pfcPriorities.map((pr) => p.pfcToQueue[pr] ?? pr);
            // the groups that break a rule here, in group order; the rules run again on each of them alone
            const failing = failingGroups(cmp.values, s, p, pausedQueues, lossless);
            for (let fi = 0; fi < failing.length; fi++) {
                const g = cmp.groups[failing[fi]];
                const { dscp, hostPrio } = g;
                const h = { vars: g.vars };
                const tc = p.dscpToTc[dscp];
                const q = tc === undefined ? undefined : p.tcToQueue[tc] ?? tc;
                // C1
                if (q === undefined || (lossless ? !pausedQueues.includes(q) : !p.ecnQueues.includes(q))) {
                    v("C1", [...g.names, sp(s, p)], `host sends RoCE with DSCP ${dscp}; ${sp(s, p)} maps it to TC ${tc ?? "(none)"} / queue ${q ?? "(none)"}, not the ${lossless ? `lossless queue [${pausedQueues}]` : `ECN queue [${p.ecnQueues}]`}`, { dscp, trafficClass: tc, queue: q, losslessQueues: pausedQueues, ecnQueues: p.ecnQueues });
                }
                if (lossless) {
                    // C2
                    if (!p.pfcPriorities.includes(hostPrio)) v("C2", [...g.names, sp(s, p)], `host PFC priority ${hostPrio}; ${sp(s, p)} runs PFC on [${p.pfcPriorities}]`, { hostPriority: hostPrio, switchPfc: p.pfcPriorities });
                    else if (q !== undefined && (p.pfcToQueue[hostPrio] ?? hostPrio) !== q) v("C2", [...g.names, sp(s, p)], `PFC priority ${hostPrio} pauses queue ${p.pfcToQueue[hostPrio]} on ${sp(s, p)}, but RoCE (DSCP ${dscp}) is in queue ${q}`, { priority: hostPrio, pausedQueue: p.pfcToQueue[hostPrio], roceQueue: q });
                    if (p.dscpToPriority && p.dscpToPriority[dscp] !== hostPrio) v("C2", [...g.names, sp(s, p)], `host puts DSCP ${dscp} on priority ${hostPrio}; ${sp(s, p)} classifies it to switch priority ${p.dscpToPriority[dscp]}`, { dscp, hostPriority: hostPrio, switchPriority: p.dscpToPriority[dscp] });
                }
                // C6
                const cnpTc = p.dscpToTc[h.vars.roce_host_cnp_dscp];
                const cnpQ = cnpTc === undefined ? undefined : p.tcToQueue[cnpTc] ?? cnpTc;
                if (cnpQ === undefined || !p.strictQueues.includes(cnpQ) || pausedQueues.includes(cnpQ)) {
                    v("C6", [...g.names, sp(s, p)], `host sends CNPs with DSCP ${h.vars.roce_host_cnp_dscp}; ${sp(s, p)} puts them in queue ${cnpQ ?? "(none)"}, not a strict, PFC-free queue (strict: [${p.strictQueues}])`, { cnpDscp: h.vars.roce_host_cnp_dscp, queue: cnpQ, strictQueues: p.strictQueues, losslessQueues: pausedQueues });
                }
                // C7 (switch side)
                if (q !== undefined && !p.ecnQueues.includes(q)) v("C7", [...g.names, sp(s, p)], `no ECN marking on the RoCE queue ${q} of ${sp(s, p)} (ECN queues [${p.ecnQueues}]) while the host runs DCQCN on priority ${hostPrio}`, { queue: q, ecnQueues: p.ecnQueues });
                // C9
                if (p.mtu !== undefined && p.mtu < h.vars.roce_host_mtu) v("C9", [...g.names, sp(s, p)], `${sp(s, p)} MTU ${p.mtu} is below host MTU ${h.vars.roce_host_mtu}; full-size frames are dropped`, { switchMtu: p.mtu, hostMtu: h.vars.roce_host_mtu });
                if (lossless && s.os === "sonic" && (s.losslessPatternMtu ?? 1024) < h.vars.roce_host_mtu) v("C9", [...g.names, s.name], `LOSSLESS_TRAFFIC_PATTERN mtu ${s.losslessPatternMtu ?? "1024 (default)"} under-sizes headroom for host MTU ${h.vars.roce_host_mtu}`, { patternMtu: s.losslessPatternMtu, hostMtu: h.vars.roce_host_mtu });
            }
            // C3 (switch side)
            if (lossless && p.pfcPriorities.length !== 1) v("C3", [sp(s, p)], `${sp(s, p)} must run PFC on exactly one priority, runs it on [${p.pfcPriorities}]`, { pfc: p.pfcPriorities });
            const cnpPrio = plan.cnp.priority;
            if (p.pfcPriorities.includes(cnpPrio)) v("C3", [sp(s, p)], `CNP priority ${cnpPrio} has PFC on ${sp(s, p)}`, { cnpPriority: cnpPrio, pfc: p.pfcPriorities });
            // C4
            if (lossless && ps) {
                if (p.losslessPgs !== undefined) {
                    const roceTc = p.dscpToTc[plan.roce.dscp];
                    const pg = roceTc === undefined ? undefined : p.tcToPg[roceTc];
                    if (pg === undefined || !p.losslessPgs.includes(pg)) v("C4", [sp(s, p)], `RoCE TC ${roceTc} → PG ${pg ?? "(none)"} on ${sp(s, p)} has no lossless BUFFER_PG profile (lossless PGs [${p.losslessPgs}])`, { trafficClass: roceTc, pg, losslessPgs: p.losslessPgs });
                }
                // a plan that knows no cable (NaN: the policy pack's, policies/rules/roce.ts, which resources carry
                // none) has nothing to compare with: a violation on each of 32,768 ports was made and dropped there
                if (real !== undefined && s.os !== "eos" && !Number.isNaN(real) && (p.cableLengthM === undefined || p.cableLengthM !== Math.ceil(real))) v("C4", [sp(s, p)], `cable length ${p.cableLengthM ?? "(unset)"} m on ${sp(s, p)} differs from the real cable (${real} m)`, { configured: p.cableLengthM, actual: real });
            }
            // C15: the PFC priority → PG map (SONiC, where the switch needs it)
            // the plan says whether the switch needs the map; without a plan (the policy pack) only a bound map is checked
            const needsPgMap = ps?.pfcToPgMap ?? p.pfcToPg !== undefined;
            if (lossless && s.os === "sonic" && needsPgMap && p.losslessPgs !== undefined) {
                for (const pr of p.pfcPriorities) {
                    const pg = p.pfcToPg?.[pr];
                    if (pg === undefined || !p.losslessPgs.includes(pg)) v("C15", [sp(s, p)], `PFC priority ${pr} on ${sp(s, p)} maps to PG ${pg ?? "(none: no pfc_to_pg_map entry)"}, not a lossless PG [${p.losslessPgs}]: the switch never sends pause for it`, { priority: pr, pg, losslessPgs: p.losslessPgs });
                }
            }
            // C17: ECN before PFC. With SONiC's default dynamic_th 0 (alpha 2^0 = 1; DEFAULT_LOSSLESS_BUFFER_PARAMETER,
            // roce-operations.md §2) one congested PG can hold alpha/(1+alpha) = half of the free shared pool before it
            // pauses, the most any queue gets; an ECN minimum above that never marks before PFC (L for the model).
            if (lossless && ps?.buffer?.poolBytes !== undefined && ps.buffer.headroomBytes !== undefined) {
                const roceTc = p.dscpToTc[plan.roce.dscp];
                const q = roceTc === undefined ? undefined : p.tcToQueue[roceTc] ?? roceTc;
                const kmin = q === undefined ? undefined : p.ecnMinBytes?.[q];
                const pausePoint = Math.floor((ps.buffer.poolBytes - ps.buffer.headroomBytes) / 2);
                if (kmin !== undefined && kmin >= pausePoint) v("C17", [sp(s, p)], `ECN on ${sp(s, p)} starts at ${kmin} B, but PFC pauses once the RoCE PG holds ${pausePoint} B of the shared pool: ECN never acts first`, { ecnMinBytes: kmin, pausePointBytes: pausePoint });
            }
            // C5 (switch side)
            if (!p.trustDscp) v("C5", [sp(s, p)], `${sp(s, p)} does not trust DSCP`, { trustDscp: p.trustDscp });
            if (lossless && p.linkPause) v("C5", [sp(s, p)], `802.3x link pause is not off on ${sp(s, p)} while PFC runs`, { linkPause: p.linkPause });
            // C11
            if (lossless) {
                const unwatched = p.pfcPriorities.some((pr) => !p.watchdogPriorities.includes(pr));
                if (unwatched || p.watchdogAction !== "drop" || !p.watchdogTimersOk) v("C11", [sp(s, p)], `PFC watchdog on ${sp(s, p)}: priorities [${p.watchdogPriorities}] of PFC [${p.pfcPriorities}], action ${p.watchdogAction ?? "(none)"}${p.watchdogTimersOk ? "" : ", detection below poll interval"}`, { pfc: p.pfcPriorities, watchdog: p.watchdogPriorities, action: p.watchdogAction, timersOk: p.watchdogTimersOk });
            }
            if (out.length === found) passed.set(p, portFacts(s, ps, real, cmp));
        }
    }
    return out;
}

/**
 * What the port rules read of a switch besides the port's view and the plan's fabric-wide values: its OS and SONiC
 * lossless pattern MTU (C4, C9, C15), and from its plan the real cable of the port (C4), whether it needs the PFC → PG
 * map (C15) and its buffer figures (C17). The switches of one text share one view of each port (readSwitchView: a rail
 * fabric's 256 leaves read one), so a port that broke no rule for one switch breaks none for another with the same
 * facts; only a clean port is remembered (checkViews `passed`), as a violation names its switch.
 */
interface PortFacts {
    /** The host groups the port was compared with (compared in checkViews: the same object for the same groups). */
    compared: Compared;
    os: NetworkOs;
    patternMtu: number | undefined;
    planned: boolean;
    cable: number | undefined;
    pgMap: boolean | undefined;
    poolBytes: number | undefined;
    headroomBytes: number | undefined;
}
function portFacts(s: SwitchView, ps: QosPlan["switches"][number] | undefined, cable: number | undefined, compared: Compared): PortFacts {
    return {
        compared,
        os: s.os, patternMtu: s.losslessPatternMtu, planned: ps !== undefined, cable,
        pgMap: ps?.pfcToPgMap, poolBytes: ps?.buffer?.poolBytes, headroomBytes: ps?.buffer?.headroomBytes,
    };
}
/** Whether `f` are the facts of this switch and cable: each the same value (NaN as NaN: the policy pack's unknown cable). */
function hasFacts(f: PortFacts, s: SwitchView, ps: QosPlan["switches"][number] | undefined, cable: number | undefined): boolean {
    return f.os === s.os && Object.is(f.patternMtu, s.losslessPatternMtu) && f.planned === (ps !== undefined) && Object.is(f.cable, cable) &&
        f.pgMap === ps?.pfcToPgMap && Object.is(f.poolBytes, ps?.buffer?.poolBytes) && Object.is(f.headroomBytes, ps?.buffer?.headroomBytes);
}

/** Hosts with the same QoS-relevant values (checkViews), and the group's index among all groups. */
interface HostGroup { names: string[]; dscp: number; hostPrio: number; vars: HostPlan["vars"]; index: number }

/** Host groups one port is compared with, and their values (groupValues). */
interface Compared { groups: readonly HostGroup[]; values: GroupValues }

/**
 * switch → port → the group of the host whose rail is cabled there (`switch:port`, split at its first colon: the
 * spec's grammar has no colon in a switch name), where the cabling is declared: every host gives the port of each rail
 * (railPorts, checked by the spec: one rail per port; rule C18 holds it to what LLDP hears). A rail's frames
 * enter the fabric on that port, which classifies them (DSCP → queue, PFC, the CNP queue: C1, C2, C6, C7) and takes
 * frames of its MTU (C9); so each group is compared with the ports its hosts are cabled to, not with every port of
 * every switch (16,384 rails that each read differently against 16,384 host ports were rails × ports). undefined,
 * and every group compared with every port as before, where a host declares no cabling or a port is declared twice
 * (no cabling the spec accepts; a fabric check's rails each name their own port: drift.ts observedHost).
 */
function cabledGroups(hosts: readonly HostPlan[], hostGroup: readonly number[]): Map<string, Map<string, number>> | undefined {
    if (hosts.length === 0) return undefined;
    const at = new Map<string, Map<string, number>>();
    for (let i = 0; i < hosts.length; i++) {
        const ports = hosts[i].railPorts;
        if (!ports || ports.length === 0) return undefined;
        for (const rp of ports) {
            const c = rp.indexOf(":");
            if (c < 0) return undefined;
            const sw = rp.slice(0, c), port = rp.slice(c + 1);
            let m = at.get(sw);
            if (!m) at.set(sw, (m = new Map()));
            if (m.has(port)) return undefined;
            m.set(port, hostGroup[i]);
        }
    }
    return at;
}

/**
 * The host values the plan gives every host (plan.roce, plan.cnp, plan.hostMtu): what a port no rail is cabled to (a
 * leaf uplink, a spine port, a spare host port) is compared with where the cabling is declared. Such a port carries
 * the rails of the whole plane, so it must carry the planned class as the host ports do (C14 holds the fabric ports to
 * the RoCE priority); a host whose own values differ is reported where it is cabled. The group of the hosts that hold
 * these values, so a violation names them as before; none holding them, the values alone (no host named).
 */
function planValuesGroup(plan: QosPlan, hosts: readonly HostPlan[], groupOf: ReadonlyMap<string, HostGroup>): Compared {
    const held = groupOf.get(JSON.stringify([plan.roce.dscp, plan.roce.priority, plan.cnp.dscp, plan.hostMtu]));
    const g: HostGroup = held ?? {
        names: [], dscp: plan.roce.dscp, hostPrio: plan.roce.priority, index: -1,
        vars: { ...hosts[0].vars, roce_host_cnp_dscp: plan.cnp.dscp, roce_host_mtu: plan.hostMtu },
    };
    return { groups: [g], values: groupValues([g]) };
}

/**
 * The groups' values each port rule reads, each distinct value once with the groups that hold it: the RoCE DSCP (and
 * under it the priority the host gives it), the CNP DSCP, and the MTU (ascending). A fabric check's rails may each
 * read differently (untrusted), so a port is not compared with every group: a group passes a port only with a DSCP
 * the port maps, a priority it pauses and an MTU up to the port's, so the values a port looks at are the ones it
 * passes (bounded by its maps) and the ones that fail (each failing group is reported there anyway).
 */
interface GroupValues {
    dscps: Array<{ dscp: number; groups: number[]; prios: Array<{ hostPrio: number; groups: number[] }> }>;
    cnpDscps: Array<{ cnpDscp: number; groups: number[] }>;
    /** Distinct numeric MTUs, ascending (NaN fails no comparison: left out). */
    mtus: Array<{ mtu: number; groups: number[] }>;
    /** Groups whose MTU is not a number, compared one by one. */
    otherMtus: number[];
}

function groupValues(groups: ReadonlyArray<{ dscp: number; hostPrio: number; vars: HostPlan["vars"] }>): GroupValues {
    const dscps = new Map<number, GroupValues["dscps"][number] & { byPrio: Map<number, { hostPrio: number; groups: number[] }> }>();
    const cnps = new Map<number, GroupValues["cnpDscps"][number]>();
    const mtus = new Map<number, GroupValues["mtus"][number]>();
    const otherMtus: number[] = [];
    groups.forEach((g, i) => {
        let d = dscps.get(g.dscp);
        if (!d) dscps.set(g.dscp, (d = { dscp: g.dscp, groups: [], prios: [], byPrio: new Map() }));
        d.groups.push(i);
        let pr = d.byPrio.get(g.hostPrio);
        if (!pr) { d.byPrio.set(g.hostPrio, (pr = { hostPrio: g.hostPrio, groups: [] })); d.prios.push(pr); }
        pr.groups.push(i);
        const cnpDscp = g.vars.roce_host_cnp_dscp;
        let c = cnps.get(cnpDscp);
        if (!c) cnps.set(cnpDscp, (c = { cnpDscp, groups: [] }));
        c.groups.push(i);
        const mtu = g.vars.roce_host_mtu;
        if (typeof mtu !== "number") { otherMtus.push(i); return; }
        if (Number.isNaN(mtu)) return;
        let m = mtus.get(mtu);
        if (!m) mtus.set(mtu, (m = { mtu, groups: [] }));
        m.groups.push(i);
    });
    return {
        dscps: [...dscps.values()].map(({ dscp, groups: gs, prios }) => ({ dscp, groups: gs, prios })),
        cnpDscps: [...cnps.values()],
        mtus: [...mtus.values()].sort((a, b) => a.mtu - b.mtu),
        otherMtus,
    };
}

/**
 * The indexes (ascending, once each) of the groups that break one of the group rules on port `p` of `s`: C1, C2, C6,
 * C7 and C9 as checkViews words them; an over-approximation would only cost time, as the rules run again on each.
 */
function failingGroups(values: GroupValues, s: SwitchView, p: PortView, pausedQueues: readonly number[], lossless: boolean): readonly number[] {
    let out: number[] | undefined;
    for (let di = 0; di < values.dscps.length; di++) {
        const d = values.dscps[di];
        const tc = p.dscpToTc[d.dscp];
        const q = tc === undefined ? undefined : p.tcToQueue[tc] ?? tc;
        // C1 and C7: the DSCP's queue
        if (q === undefined || (lossless ? !pausedQueues.includes(q) : !p.ecnQueues.includes(q)) || !p.ecnQueues.includes(q)) {
            out = withGroups(out, d.groups);
            continue;
        }
        if (!lossless) continue;
        // C2: the priority the hosts give it
        for (let pi = 0; pi < d.prios.length; pi++) {
            const pr = d.prios[pi];
            const paused = p.pfcPriorities.includes(pr.hostPrio) && (p.pfcToQueue[pr.hostPrio] ?? pr.hostPrio) === q;
            if (!paused || (p.dscpToPriority && p.dscpToPriority[d.dscp] !== pr.hostPrio)) out = withGroups(out, pr.groups);
        }
    }
    // C6: the CNP DSCP's queue
    for (let ci = 0; ci < values.cnpDscps.length; ci++) {
        const c = values.cnpDscps[ci];
        const tc = p.dscpToTc[c.cnpDscp];
        const q = tc === undefined ? undefined : p.tcToQueue[tc] ?? tc;
        if (q === undefined || !p.strictQueues.includes(q) || pausedQueues.includes(q)) out = withGroups(out, c.groups);
    }
    // C9: MTUs above the port's, and above a SONiC lossless pattern's
    const { mtus } = values;
    if (p.mtu !== undefined) for (let i = firstAbove(mtus, p.mtu); i < mtus.length; i++) out = withGroups(out, mtus[i].groups);
    if (lossless && s.os === "sonic") for (let i = firstAbove(mtus, s.losslessPatternMtu ?? 1024); i < mtus.length; i++) out = withGroups(out, mtus[i].groups);
    if (values.otherMtus.length) out = withGroups(out, values.otherMtus);
    if (!out) return NONE;
    return out.length === 1 ? out : [...new Set(out.sort((a, b) => a - b))];
}
const NONE: readonly number[] = [];

/** `out` (made when first needed) with `groups` added. */
function withGroups(out: number[] | undefined, groups: readonly number[]): number[] {
    out ??= [];
    for (let i = 0; i < groups.length; i++) out.push(groups[i]);
    return out;
}

/** The index of the first MTU above `limit` (the list's length when none is, or `limit` is not a number). */
function firstAbove(mtus: GroupValues["mtus"], limit: number): number {
    if (typeof limit !== "number" || Number.isNaN(limit)) return mtus.length;
    let lo = 0, hi = mtus.length;
    while (lo < hi) {
        const mid = (lo + hi) >> 1;
        if (mtus[mid].mtu > limit) hi = mid;
        else lo = mid + 1;
    }
    return lo;
}

/** C13: NCCL_IB_HCA is an exact (`=`) list of the host's rail NICs, in any order. */
function hcaMatches(h: HostPlan): boolean {
    const hca = (h.ncclEnv.NCCL_IB_HCA ?? "").replace(/^[=^]/, "").split(",").filter(Boolean).map((x) => x.split(":")[0]);
    // `=` makes NCCL match names exactly; without it mlx5_1 also selects mlx5_10, mlx5_11 … (NCCL env docs).
    return h.ncclEnv.NCCL_IB_HCA?.startsWith("=") === true && hca.slice().sort().join() === h.railNics.slice().sort().join();
}

const sameStrings = (a: readonly string[], b: readonly string[]) => a === b || (a.length === b.length && a.every((x, i) => x === b[i]));

/** `switch:port` as split at its first two colons: the switch and the port (undefined when there is no colon). */
function peerEnd(peer: string | undefined): [string, string | undefined] {
    const end = peer ?? ":";
    const i = end.indexOf(":");
    if (i < 0) return [end, undefined];
    const j = end.indexOf(":", i + 1);
    return [end.slice(0, i), end.slice(i + 1, j < 0 ? undefined : j)];
}

/** One line per violation, for `rdmakit plan` and the policy pack. */
export function formatViolation(x: Violation): string {
    return `[${x.rule}] ${x.devices.join(", ")}: ${x.message}`;
}
