/**
 * config_db.json → SONiC YANG JSON (RFC 7951), so `yanglint` can validate a rendered config against the SONiC
 * models offline. Rules as SONiC's own translator applies them (sonic-net/sonic-buildimage:
 * src/sonic-yang-mgmt/sonic_yang_ext.py, summarised in roce.md §7 and sonic-net/sonic-buildimage src/sonic-yang-models):
 * - each table becomes `<module>:<module>` / `TABLE` / `TABLE_LIST[]`, keys split on `|` into the list's key leaves;
 * - "type-1" map tables become `{name, TABLE: [{<key leaf>, <value leaf>}]}`;
 * - libyang 2 wants (u)int8/16/32 as JSON numbers, (u)int64 as strings, booleans as true/false.
 * Only the tables and fields this kit writes (plus the PORT fields a switch already has) are known; anything else
 * throws, so an untranslatable field is never silently passed as the wrong type.
 */

type Kind = "str" | "num" | "u64" | "bool";

interface ListTable { kind: "list"; module: string; keys: string[]; fields: Record<string, Kind> }
interface MapTable { kind: "map"; module: string; keyLeaf: string; valueLeaf: string; keyKind: Kind; valueKind: Kind }
interface ContainerTable { kind: "container"; module: string; fields: Record<string, Kind> }
type TableDef = ListTable | MapTable | ContainerTable;

// Types per leaf from the YANG files of sonic-net/sonic-buildimage src/sonic-yang-models/yang-models (file named by `module`).
const TABLES: Record<string, TableDef> = {
    DSCP_TO_TC_MAP: { kind: "map", module: "sonic-dscp-tc-map", keyLeaf: "dscp", valueLeaf: "tc", keyKind: "str", valueKind: "num" },
    TC_TO_PRIORITY_GROUP_MAP: { kind: "map", module: "sonic-tc-priority-group-map", keyLeaf: "tc", valueLeaf: "pg", keyKind: "num", valueKind: "str" },
    TC_TO_QUEUE_MAP: { kind: "map", module: "sonic-tc-queue-map", keyLeaf: "tc", valueLeaf: "qindex", keyKind: "num", valueKind: "str" },
    MAP_PFC_PRIORITY_TO_QUEUE: { kind: "map", module: "sonic-pfc-priority-queue-map", keyLeaf: "pfc_priority", valueLeaf: "qindex", keyKind: "str", valueKind: "str" },
    CABLE_LENGTH: { kind: "map", module: "sonic-cable-length", keyLeaf: "port", valueLeaf: "length", keyKind: "str", valueKind: "str" },
    PORT_QOS_MAP: {
        kind: "list", module: "sonic-port-qos-map", keys: ["ifname"],
        fields: { dscp_to_tc_map: "str", tc_to_pg_map: "str", tc_to_queue_map: "str", pfc_to_queue_map: "str", pfc_to_pg_map: "str", tc_to_dscp_map: "str", dot1p_to_tc_map: "str", pfc_enable: "str", pfcwd_sw_enable: "str", scheduler: "str" },
    },
    WRED_PROFILE: {
        kind: "list", module: "sonic-wred-profile", keys: ["name"],
        fields: {
            ecn: "str", wred_green_enable: "bool", wred_yellow_enable: "bool", wred_red_enable: "bool",
            green_min_threshold: "u64", green_max_threshold: "u64", green_drop_probability: "u64",
            yellow_min_threshold: "u64", yellow_max_threshold: "u64", yellow_drop_probability: "u64",
            red_min_threshold: "u64", red_max_threshold: "u64", red_drop_probability: "u64",
        },
    },
    SCHEDULER: { kind: "list", module: "sonic-scheduler", keys: ["name"], fields: { type: "str", weight: "num", priority: "num", meter_type: "str", cir: "u64", pir: "u64", cbs: "num", pbs: "num" } },
    QUEUE: { kind: "list", module: "sonic-queue", keys: ["ifname", "qindex"], fields: { scheduler: "str", wred_profile: "str" } },
    BUFFER_PG: { kind: "list", module: "sonic-buffer-pg", keys: ["port", "pg_num"], fields: { profile: "str" } },
    BUFFER_QUEUE: { kind: "list", module: "sonic-buffer-queue", keys: ["port", "qindex"], fields: { profile: "str" } },
    BUFFER_PROFILE: {
        kind: "list", module: "sonic-buffer-profile", keys: ["name"],
        fields: { pool: "str", size: "u64", static_th: "u64", dynamic_th: "num", xon: "u64", xoff: "u64", xon_offset: "u64", headroom_type: "str" },
    },
    BUFFER_POOL: { kind: "list", module: "sonic-buffer-pool", keys: ["name"], fields: { type: "str", mode: "str", size: "u64", xoff: "u64", percentage: "num" } },
    PFC_PRIORITY_TO_PRIORITY_GROUP_MAP: { kind: "map", module: "sonic-pfc-priority-priority-group-map", keyLeaf: "pfc_priority", valueLeaf: "pg", keyKind: "str", valueKind: "str" },
    PFC_WD: { kind: "list", module: "sonic-pfcwd", keys: ["ifname"], fields: { action: "str", detection_time: "num", restoration_time: "num", pfc_stat_history: "str", POLL_INTERVAL: "num" } },
    PORT: {
        kind: "list", module: "sonic-port", keys: ["name"],
        fields: { alias: "str", lanes: "str", speed: "num", mtu: "num", admin_status: "str", index: "num", fec: "str", autoneg: "str", description: "str", pfc_asym: "str", subport: "num" },
    },
    LOSSLESS_TRAFFIC_PATTERN: { kind: "list", module: "sonic-lossless-traffic-pattern", keys: ["name"], fields: { mtu: "num", small_packet_percentage: "num" } },
    DEVICE_METADATA: { kind: "container", module: "sonic-device_metadata", fields: { hostname: "str", hwsku: "str", platform: "str", mac: "str", type: "str", buffer_model: "str", default_pfcwd_status: "str" } },
};

function convert(table: string, field: string, kind: Kind, value: string): string | number | boolean {
    switch (kind) {
        case "str": return value;
        case "u64": return value;
        case "num": {
            if (!/^-?\d+$/.test(value)) throw new Error(`${table}.${field}: ${JSON.stringify(value)} is not an integer`);
            return Number(value);
        }
        case "bool": {
            if (value !== "true" && value !== "false") throw new Error(`${table}.${field}: ${JSON.stringify(value)} is not true/false`);
            return value === "true";
        }
    }
}

/** Translates config_db tables to YANG JSON; returns the data and the module names yanglint must load. */
export function sonicToYang(configDb: Record<string, Record<string, unknown>>): { data: Record<string, unknown>; modules: string[] } {
    const data: Record<string, unknown> = {};
    const modules = new Set<string>(["sonic-device_metadata"]); // so `when` conditions on DEVICE_METADATA are evaluated
    for (const [table, rows] of Object.entries(configDb)) {
        const def = TABLES[table];
        if (!def) throw new Error(`no YANG translation known for table ${table}`);
        modules.add(def.module);
        const top = `${def.module}:${def.module}`;
        const container = (data[top] ??= {}) as Record<string, unknown>;
        if (def.kind === "container") {
            const out: Record<string, unknown> = {};
            for (const [key, fields] of Object.entries(rows)) {
                const leaves: Record<string, unknown> = {};
                for (const [f, v] of Object.entries(fields as Record<string, string>)) {
                    const kind = def.fields[f];
                    if (!kind) throw new Error(`${table}|${key}: no YANG type known for field ${f}`);
                    leaves[f] = convert(table, f, kind, v);
                }
                out[key] = leaves;
            }
            container[table] = out;
            continue;
        }
        const list: unknown[] = [];
        for (const [key, fields] of Object.entries(rows)) {
            if (def.kind === "map") {
                const entries = Object.entries(fields as Record<string, string>).map(([k, v]) => ({
                    [def.keyLeaf]: convert(table, def.keyLeaf, def.keyKind, k),
                    [def.valueLeaf]: convert(table, def.valueLeaf, def.valueKind, v),
                }));
                list.push({ name: key, [table]: entries });
                continue;
            }
            const parts = key.split("|");
            if (parts.length !== def.keys.length) throw new Error(`${table}|${key}: key must have ${def.keys.length} part(s) (${def.keys.join("|")})`);
            const entry: Record<string, unknown> = {};
            def.keys.forEach((k, i) => (entry[k] = parts[i]));
            for (const [f, v] of Object.entries(fields as Record<string, string>)) {
                const kind = def.fields[f];
                if (!kind) throw new Error(`${table}|${key}: no YANG type known for field ${f}`);
                entry[f] = convert(table, f, kind, v);
            }
            list.push(entry);
        }
        container[table] = { [`${table}_LIST`]: list };
    }
    // sonic-device_metadata first: modules whose `when`/`must` refer to it are compiled after it is implemented.
    return { data, modules: ["sonic-device_metadata", ...[...modules].filter((m) => m !== "sonic-device_metadata").sort()] };
}

/**
 * Merges a rendered fragment over a base config_db (field-wise per key, as `config load` does), for validating
 * the fragment in the context of a switch's existing tables (PORT lanes, DEVICE_METADATA hostname …).
 */
export function mergeConfigDb(base: Record<string, Record<string, Record<string, string>>>, patch: Record<string, Record<string, Record<string, string>>>): Record<string, Record<string, Record<string, string>>> {
    const out: Record<string, Record<string, Record<string, string>>> = JSON.parse(JSON.stringify(base));
    for (const [table, rows] of Object.entries(patch)) {
        const t = (out[table] ??= {});
        for (const [key, fields] of Object.entries(rows)) t[key] = { ...(t[key] ?? {}), ...fields };
    }
    return out;
}
