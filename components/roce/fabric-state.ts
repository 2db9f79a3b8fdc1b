/**
 * What `rdmakit fabric check` reads from the running fabric, and the pure parsers that turn it into the models the
 * rules take: a SwitchView per switch (the same readers consistency.ts uses for rendered texts), host NIC state per
 * rail, and LLDP neighbours. Reading is read-only: every command here only shows state.
 *
 * Output shapes (fixtures in test/fixtures/roce/running/, each with its source in that folder's README):
 * - NVUE `nv config show -o json`: the applied configuration as `[{header}, {set: {...}}]`, the document
 *   `nv config patch` takes (CumulusNetworks/docs:content/cumulus-linux-514/System-Configuration/NVIDIA-User-Experience-NVUE/NVUE-CLI.md
 *   "Show Switch Configuration": `header:` then `- set:`).
 * - SONiC `sonic-cfggen -d --print-data`: CONFIG_DB as config_db.json (roce-operations.md §1b, SU-main).
 * - EOS `show running-config all`: the CLI text the renderer writes, with the rest of the switch's configuration and
 *   its defaults around it.
 * - LLDP: lldpd's `lldpctl -f json0` (always arrays; lldpd/lldpd:tests/integration/test_lldpcli.py test_json0_output)
 *   on hosts, Cumulus and SONiC (its lldp container); EOS `show lldp neighbors | json` (`lldpNeighbors[]` with port,
 *   neighborDevice, neighborPort: sonic-net/sonic-mgmt:tests/common/devices/eos.py SAMPLE_COMMAND_DATA).
 * - Host: `mlnx_qos -i <if>` as Mellanox/mlnx-tools:python/mlnx_qos@227c7ab1 pretty_print prints it ("DCBX mode:",
 *   "Priority trust state:", "prio:N dscp:..", "Cable len:", the "enabled" row), `ethtool -a` (RX:/TX: rows), the
 *   sysfs ECN files the roce_host role writes (roce.md §2), /etc/nccl.conf (KEY=VALUE, the nccl role).
 */
import { readEos, readNvue, readSonic, type SwitchView } from "./consistency";
import type { SwitchPlan } from "./qos";
import type { NetworkOs } from "./spec";

/**
 * Read-only commands per network OS: the running configuration, the LLDP neighbour table, and (`oper`) what the switch
 * operates where that can differ from its configuration.
 */
export const SWITCH_READS: Readonly<Record<NetworkOs, { config: string; lldp: string; oper?: string }>> = {
    // NVUE-CLI: `nv config show` shows the applied configuration; `-o json` as push.ts's verify step reads it
    // `nv show qos roce -o json`: the RoCE object switchd runs (CL-RoCE / CL-QoS "Verify", roce-operations.md §3); a
    // refused or half-done apply leaves it apart from the applied configuration. The same read as the push's verify.
    nvue: { config: "nv config show -o json", lldp: "sudo lldpctl -f json0", oper: "nv show qos roce -o json" },
    // SU-main `sonic-cfggen -d --print-data` (roce-operations.md §1b); SONiC runs lldpd in its `lldp` container (L).
    // oper: sonic-oper.ts sonicOperScript on stdin (`show pfc priority`, `show pfcwd config`, APPL_DB headroom)
    sonic: { config: "sudo sonic-cfggen -d --print-data", lldp: "docker exec lldp lldpctl -f json0", oper: "sh -s" },
    // EOS takes a CLI command as the ssh command (L); `| json` is EOS's JSON output (sonic-mgmt eos.py, above).
    // `all`: plain `show running-config` hides defaults the kit writes (flowcontrol off, DSCP→TC entries equal to the
    // default map), which would read as drift (C5, C1). No oper read: no public source gives the JSON of
    // `show priority-flow-control | json` or `show qos interfaces | json` (ANTA, arista.eos, napalm, pyeapi and
    // Arista's manual searched; ANTA has only `show priority-flow-control counters`, which says nothing of enablement),
    // so the check says so (drift.ts) instead of guessing at keys.
    eos: { config: "show running-config all", lldp: "show lldp neighbors | json" },
};

/**
 * The switch's running configuration as a SwitchView, restricted to the ports the plan puts on the RoCE path: the
 * running configuration also holds every other port (management, unused, factory QoS), which the kit does not own.
 * A port the plan expects but the switch lacks is left out, so the rules report it missing (C5, C14).
 */
export function runningSwitchView(sw: SwitchPlan, text: string): SwitchView {
    const eos = sw.os === "eos" ? eosRunningGlobals(sw, text) : undefined;
    const doc = eos ? eos.text : JSON.parse(text);
    // NVUE may print the document bare ({set: …}) or as the op list; the reader takes the list
    const view = sw.os === "sonic" ? readSonic(sw.name, withGlobalDscpMap(sonicConfigDb(doc))) : sw.os === "nvue" ? readNvue(sw.name, nvueOps(doc)) : readEos(sw.name, doc);
    const owned = new Set(sw.ports.map((p) => p.name));
    let ports = view.ports.filter((p) => owned.has(p.port));
    // `priority-flow-control all off`: no port runs PFC, whatever its own lines say (eosRunningGlobals)
    if (eos?.pfcAllOff) ports = ports.map((p) => ({ ...p, pfcPriorities: [], watchdogPriorities: [] }));
    // NVUE names the mode (qos roce mode); elsewhere the mode follows from PFC on the kit's ports only
    const mode = sw.os === "nvue" ? view.mode : ports.some((p) => p.pfcPriorities.length) ? "lossless" : "lossy";
    return { ...view, ports, mode };
}

/**
 * Global lines of a running EOS configuration that the shared reader (consistency.ts readEos, written for the kit's
 * own rendered text) does not take, handled here so a running switch that carries them is read, not refused or misread.
 * Source of every form: Arista's own configuration generator, aristanetworks/avd@3cac535c16978abb099f159b0bd6839536a9108c
 * ansible_collections/arista/avd/molecule/eos_cli_config_gen/intended/configs/qos.cfg (test/fixtures/roce/running/README.md):
 * - `priority-flow-control all off`: "Disable PFC on all interfaces" (AVD schema priority_flow_control.all_off,
 *   template eos/priority-flow-control.j2): every port reads PFC off, whatever its interface or profile lines say.
 *   readEos skipped the line, so such a switch read as running PFC.
 * - `qos map dscp <list> to traffic-class <tc> drop-precedence <dp>`: the DSCPs go to <tc>; the drop precedence only
 *   selects which WRED drop thresholds apply (the same file's `random-detect drop drop-precedence 2 minimum-threshold …`
 *   queue lines), so it is read as the map to <tc>. readEos refused the whole switch on it.
 * - `qos map traffic-class <list> to cos <n>`: the 802.1p value written on egress. The fabric classifies by DSCP (C5
 *   requires DSCP trust on every port), so it changes nothing a rule reads and is left out.
 * - `qos map traffic-class <list> to dscp <d>`: the DSCP written on egress while `qos rewrite dscp` is on (AVD
 *   qos.rewrite_dscp, eos/qos.j2). A rewrite of the RoCE or CNP traffic class changes the DSCP the next hop classifies
 *   by, which no rule models: the switch is refused, naming the line. Any other class's rewrite (or any rewrite map
 *   while `qos rewrite dscp` is absent) leaves the RoCE path as read and is left out.
 * Only top-level lines (no indentation) are touched; everything else reaches readEos unchanged.
 */
export function eosRunningGlobals(sw: SwitchPlan, text: string): { text: string; pfcAllOff: boolean } {
    const lines = text.split("\n");
    const top = (raw: string) => raw.length > 0 && !/^\s/.test(raw);
    const rewriteOn = lines.some((raw) => top(raw) && raw.trim() === "qos rewrite dscp");
    const path = new Set([sw.roce.trafficClass, sw.cnp.trafficClass]);
    let pfcAllOff = false;
    const out: string[] = [];
    for (const raw of lines) {
        if (!top(raw)) { out.push(raw); continue; }
        const line = raw.trim();
        let m: RegExpMatchArray | null;
        if (line === "priority-flow-control all off") { pfcAllOff = true; continue; }
        if ((m = /^(qos map dscp .+ to traffic-class \d+) drop-precedence \d+$/.exec(line))) { out.push(m[1]); continue; }
        // the class list as readEos takes one (`1 2 3`, a range `0-7`); one space before each further entry, so the
        // match is linear on an untrusted line
        if ((m = /^qos map traffic-class (\d+(?:-\d+)?(?: \d+(?:-\d+)?)*) to (cos|dscp) \d+$/.exec(line))) {
            if (m[2] === "cos") continue;
            // the rewrite touches the path when a path class is one of the entries or lies in a range a-b
            const ranges = m[1].split(" ").map((t) => t.split("-").map(Number));
            const touched = [...path].filter((x) => ranges.some(([a, b]) => x >= a && x <= (b ?? a)));
            if (rewriteOn && touched.length) {
                throw new Error(`'${line.slice(0, 120)}' rewrites the DSCP of traffic class ${touched.join(", ")} (RoCE or CNP) on egress while 'qos rewrite dscp' is on: what the next hop classifies it as is not checked`);
            }
            continue;
        }
        out.push(raw);
    }
    return { text: out.join("\n"), pfcAllOff };
}

type Rows = Record<string, Record<string, Record<string, string>>>;

/**
 * CONFIG_DB as the switch classifies DSCP: `PORT_QOS_MAP|global` binds a DSCP_TO_TC_MAP to the whole switch
 * (orchagent applies its dscp_to_tc_map as SAI_SWITCH_ATTR_QOS_DSCP_TO_TC_MAP, removing the row sets it back to no map;
 * any other field of that row is "not supported at global level" and ignored; source: sonic-net/sonic-swss@e6b0c5b5
 * orchagent/qosorch.cpp handleGlobalQosMap, added in 43743483 "Apply DSCP_TO_TC_MAP from PORT_QOS_MAP|global to switch
 * level", #2314; sonic-buildimage's qos templates write that row beside the per-port bindings, and sonic-utilities'
 * scripts/db_migrator.py migrate_port_qos_map_global adds it on Broadcom ASICs, naming the first DSCP_TO_TC_MAP, to a
 * CONFIG_DB that has none: test/fixtures/roce/running/sonic-dbmigrator-qos_map_table_global_*.json). A port's own binding
 * (SAI_PORT_ATTR_QOS_DSCP_TO_TC_MAP, qosorch.cpp handlePortQosMapTable) is what that port uses; a port row with no
 * dscp_to_tc_map of its own classifies by the switch-level map, so such a row is read with the global map's name
 * filled in. The name is left as written (readSonic resolves it: a map that does not exist is no map, as on the
 * switch, where orchagent cannot resolve it and does not apply it). The other fields never come from the global row.
 */
export function withGlobalDscpMap(db: Rows): Rows {
    const rows = db.PORT_QOS_MAP;
    const global = rows && typeof rows === "object" ? rows.global : undefined;
    const map = global && typeof global === "object" ? global.dscp_to_tc_map : undefined;
    if (typeof map !== "string" || map === "") return db;
    const out: Record<string, Record<string, string>> = {};
    for (const [key, row] of Object.entries(rows)) {
        out[key] = key === "global" || !row || typeof row !== "object" || row.dscp_to_tc_map !== undefined ? row : { ...row, dscp_to_tc_map: map };
    }
    return { ...db, PORT_QOS_MAP: out };
}

/** The first keys of an untrusted object for an error message: 8 at most, each cut to 40 characters. */
function someKeys(o: object): string {
    const keys: string[] = [];
    for (const k in o) { if (keys.length === 8) break; keys.push(k.length > 40 ? `${k.slice(0, 40)}...` : k); }
    return keys.join(", ");
}

/**
 * CONFIG_DB as `sonic-cfggen -d --print-data` prints it (`{"PORT": {"Ethernet0": {…}}, …}`), or in the flat form of
 * redis keys (`{"PORT|Ethernet0": {…}, "QUEUE|Ethernet0|3": {…}}`: sonic-net/sonic-utilities tests/mock_tables/
 * config_db.json and tests/db_migrator_input/config_db/*.json, what a CONFIG_DB dump by key looks like), which is
 * nested by the table name before the first `|`. Anything else, or a document without a PORT or PORT_QOS_MAP table,
 * is refused: an empty reading would make every planned port look unconfigured.
 */
export function sonicConfigDb(doc: unknown): Rows {
    if (!doc || typeof doc !== "object" || Array.isArray(doc)) throw new Error("expected a JSON object of CONFIG_DB tables (sonic-cfggen -d --print-data)");
    const top = Object.entries(doc as Record<string, unknown>);
    const flat = top.filter(([k]) => k.includes("|"));
    let db = doc as Rows;
    if (flat.length && flat.length >= top.length / 2) {
        // objects without a prototype: the switch names the tables and rows, and a key `__proto__|x` written into a
        // plain object set x on Object.prototype, i.e. on every object of the controller (another switch's rows too)
        db = Object.create(null) as Rows;
        for (const [k, v] of flat) {
            if (!v || typeof v !== "object") continue;
            const i = k.indexOf("|");
            (db[k.slice(0, i)] ??= Object.create(null) as Rows[string])[k.slice(i + 1)] = v as Record<string, string>;
        }
    }
    if (!db.PORT && !db.PORT_QOS_MAP) throw new Error(`no PORT or PORT_QOS_MAP table among ${someKeys(db) || "(no keys)"}: not CONFIG_DB (expected sonic-cfggen -d --print-data)`);
    return db;
}

/**
 * `nv config show -o json`: the op list `[{"header": …}, {"set": {…}}]` (NVUE-CLI "Show Switch Configuration"), or the
 * bare tree. Anything that is neither (an error object, a list without a `set`) is refused, never read as a switch
 * with nothing configured.
 */
function nvueOps(doc: unknown): Array<Record<string, any>> {
    if (Array.isArray(doc)) {
        if (doc.some((op) => op && typeof op === "object" && op.set && typeof op.set === "object")) return doc;
        // a list whose tree is not under `set` (some tools store it so): the element that holds the tree
        const tree = doc.find((op) => op && typeof op === "object" && (op.interface || op.qos || op.system));
        if (tree) return [{ set: tree }];
        throw new Error("the NVUE op list has no 'set' object (expected nv config show -o json: [{header}, {set}])");
    }
    if (!doc || typeof doc !== "object") throw new Error("expected the NVUE configuration as JSON (nv config show -o json)");
    const d = doc as Record<string, any>;
    const set = d.set ?? d;
    if (!set || typeof set !== "object" || (!set.interface && !set.qos && !set.system)) throw new Error(`no interface, qos or system object in the NVUE configuration (keys: ${someKeys(set ?? {}) || "(none)"})`);
    return [{ set }];
}

/** One LLDP neighbour as the local device sees it. */
export interface Neighbour {
    /** The local port / netdev it was heard on. */
    local: string;
    sysName?: string;
    mgmtIps: string[];
    portId?: string;
    portDescr?: string;
}

type J0 = Array<Record<string, any>> | undefined;
const v0 = (x: J0): string | undefined => (Array.isArray(x) && x[0] && typeof x[0].value === "string" ? x[0].value : undefined);

/**
 * LLDP neighbours from `lldpctl -f json0`, lldpctl's plain `-f json`, or EOS `show lldp neighbors | json`. Throws on
 * text that is none of them.
 *
 * lldpd's two JSON forms (lldpd/lldpd:src/client/json_writer.c; tests/integration/test_lldpcli.py test_json_output and
 * test_json0_output hold the expected documents): json0 keeps every element as a list (`"lldp": [{"interface":
 * [{"name": "eth0", "chassis": [{"name": [{"value": …}]}], …}]}]`). Plain json (json_element_cleanup) unwraps every
 * one-element list and every `{"value": x}`, and turns an object with a "name" string into `{<name>: {…rest}}`: one
 * interface is `"interface": {"eth0": {…}}`, several are a list of such one-key objects, the chassis is
 * `{"<system name>": {"id": …, "mgmt-ip": "…" or […]}}` (or the bare object when the neighbour sends no name), and the
 * port is `{"id": {"type", "value"}, "descr": "…"}`. A build with --enable-json0 prints json0 for `-f json` too.
 */
export function parseLldp(os: NetworkOs | "host", text: string): Neighbour[] {
    const doc = JSON.parse(text) as any;
    if (os === "eos") {
        if (!Array.isArray(doc?.lldpNeighbors)) throw new Error("no lldpNeighbors list in the EOS output (expected show lldp neighbors | json)");
        return doc.lldpNeighbors.map((n: any): Neighbour => ({ local: String(n.port), sysName: n.neighborDevice, mgmtIps: [], portId: n.neighborPort }));
    }
    if (Array.isArray(doc?.lldp)) return lldpJson0(doc.lldp);
    if (doc?.lldp && typeof doc.lldp === "object") return lldpJson(doc.lldp);
    throw new Error("no lldp object in the lldpctl output (expected lldpctl -f json0 or -f json)");
}

function lldpJson0(lldp: Array<Record<string, any>>): Neighbour[] {
    const out: Neighbour[] = [];
    for (const l of lldp) {
        for (const i of (l?.interface ?? []) as Array<Record<string, any>>) {
            const ch = (i.chassis ?? [])[0] ?? {};
            const port = (i.port ?? [])[0] ?? {};
            out.push({
                local: String(i.name),
                sysName: v0(ch.name),
                mgmtIps: ((ch["mgmt-ip"] ?? []) as Array<{ value: string }>).map((m) => m.value),
                portId: v0(port.id),
                portDescr: v0(port.descr),
            });
        }
    }
    return out;
}

const str = (x: unknown): string | undefined => (typeof x === "string" ? x : undefined);
const asList = (x: unknown): unknown[] => (Array.isArray(x) ? x : x === undefined || x === null ? [] : [x]);

function lldpJson(lldp: Record<string, any>): Neighbour[] {
    const out: Neighbour[] = [];
    // one interface: {eth0: {…}}; several: [{eth0: {…}}, {eth1: {…}}] (an interface heard twice is listed twice)
    for (const entry of asList(lldp.interface) as Array<Record<string, any>>) {
        for (const [local, i] of Object.entries(entry ?? {})) {
            if (!i || typeof i !== "object") continue;
            const chassis = (i.chassis ?? {}) as Record<string, any>;
            // keyed by the system name, unless the neighbour sent none (then the chassis fields are at the top)
            const named = !("id" in chassis) && Object.keys(chassis).length === 1;
            const [sysName, ch] = named ? [Object.keys(chassis)[0], Object.values(chassis)[0] as Record<string, any>] : [undefined, chassis];
            const port = (i.port ?? {}) as Record<string, any>;
            out.push({
                local,
                sysName,
                mgmtIps: asList(ch?.["mgmt-ip"]).map(str).filter((x): x is string => x !== undefined),
                portId: str(port.id?.value) ?? str(port.id),
                portDescr: str(port.descr),
            });
        }
    }
    return out;
}

/** What one rail NIC reads like; a field is undefined when the host could not show it (`errors` says why). */
export interface RailState {
    dev: string;
    netdev?: string;
    mtu?: number;
    /** mlnx_qos "DCBX mode": "OS controlled" or "Firmware controlled". */
    dcbxMode?: string;
    trust?: string;
    /** DSCP → priority (mlnx_qos dscp2prio table). */
    dscp2prio?: Record<number, number>;
    pfcEnabled?: number[];
    cableLenM?: number;
    /** 802.3x pause as configured (ethtool -a "RX:" and "TX:"; the negotiated rows are ethtool's guess, not read). */
    globalPause?: { rx: boolean; tx: boolean };
    /** ethtool -a "Autonegotiate" (pause autonegotiation), when printed. */
    pauseAutoneg?: boolean;
    ecnNp?: number[];
    ecnRp?: number[];
    cnpDscp?: number;
    cnpPriority?: number;
    /** lldpad's PFC willing bit, when lldpad runs (lldptool -t -V PFC -c willing). */
    lldpadWilling?: boolean;
    /** The verbs-wide ToS override (OFED tc/1/traffic_class). */
    trafficClass?: number;
    errors: string[];
}

export interface HostState {
    rails: RailState[];
    /** undefined when lldpctl could not be run (why in lldpError). */
    neighbours?: Neighbour[];
    lldpError?: string;
    /** /etc/nccl.conf; undefined when absent. */
    ncclConf?: Record<string, string>;
}

const shq = (s: string) => `'${s.replace(/'/g, `'\\''`)}'`;

/**
 * The read-only script a host runs (`sh -s` over SSH): per rail its netdev, MTU, `mlnx_qos -i` (shows, sets nothing
 * without options), `ethtool -a`, the sysfs ECN enables and CNP marking, lldpad's willing bit, the verbs ToS; then
 * `lldpctl -f json0` and /etc/nccl.conf. Sections start with `@@<name>`; `@@error <name> <why>` marks one it could
 * not read. Netdevs are found as the roce_host role finds them (railNetdevs, else /sys/class/infiniband/<dev>/device/net).
 */
export function hostReadScript(railNics: readonly string[], railNetdevs?: readonly string[]): string {
    const pairs = railNics.map((d, i) => `${shq(d)} ${shq(railNetdevs?.[i] ?? "")}`).join(" ");
    return [
        "set -u",
        // prefix for /sys and /etc, only for tests that run this against a fake tree (as rdmakit-roce-qos does)
        'R=${RDMAKIT_SYSFS_ROOT:-}',
        // every section's output ends with a newline of its own (`echo`), so no marker lands on an output's last line
    "echo '@@rdmakit-host-state 1'",
        `set -- ${pairs}`,
        'while [ $# -ge 2 ]; do',
        '  dev=$1; ifc=$2; shift 2',
        // source: NVIDIA/doroce-linux:doRoCE.sh (netdev = ls /sys/class/infiniband/<dev>/device/net/), as the role does
        '  if [ -z "$ifc" ]; then for n in "$R"/sys/class/infiniband/"$dev"/device/net/*; do [ -e "$n" ] && ifc=$(basename "$n") && break; done; fi',
        '  echo "@@rail $dev $ifc"',
        '  if [ -z "$ifc" ] || [ ! -e "$R/sys/class/net/$ifc" ]; then echo "@@error rail no netdev for $dev"; continue; fi',
        '  echo "@@mtu"; cat "$R/sys/class/net/$ifc/mtu"',
        '  if command -v mlnx_qos >/dev/null 2>&1; then echo "@@mlnx_qos"; mlnx_qos -i "$ifc" 2>&1; echo; else echo "@@error mlnx_qos not installed (it comes with DOCA/MLNX OFED)"; fi',
        '  if command -v ethtool >/dev/null 2>&1; then echo "@@ethtool-a"; ethtool -a "$ifc" 2>&1; echo; else echo "@@error ethtool-a ethtool not installed"; fi',
        '  e="$R/sys/class/net/$ifc/ecn"',
        '  if [ -d "$e" ]; then',
        '    echo "@@ecn"; p=0',
        '    while [ "$p" -le 7 ]; do echo "np $p $(cat "$e/roce_np/enable/$p" 2>/dev/null)"; echo "rp $p $(cat "$e/roce_rp/enable/$p" 2>/dev/null)"; p=$((p + 1)); done',
        '    echo "cnp_dscp $(cat "$e/roce_np/cnp_dscp" 2>/dev/null)"; echo "cnp_prio $(cat "$e/roce_np/cnp_802p_prio" 2>/dev/null)"',
        '  else echo "@@error ecn $e absent (DOCA/MLNX OFED provides it)"; fi',
        // lldptool-pfc(8): `lldptool -t -i ethx -V PFC -c willing`; only meaningful while lldpad runs
        '  if command -v lldptool >/dev/null 2>&1; then w=$(lldptool -t -i "$ifc" -V PFC -c willing 2>/dev/null) && { echo "@@willing"; echo "$w"; }; fi',
        '  tc="$R/sys/class/infiniband/$dev/tc/1/traffic_class"',
        '  if [ -r "$tc" ]; then echo "@@traffic_class"; cat "$tc"; fi',
        'done',
        'if command -v lldpctl >/dev/null 2>&1; then echo "@@lldp"; lldpctl -f json0 2>&1; echo; else echo "@@error lldp lldpctl not installed (lldpd)"; fi',
        'if [ -r "$R/etc/nccl.conf" ]; then echo "@@nccl"; cat "$R/etc/nccl.conf"; echo; fi',
        "echo '@@end'",
    ].join("\n") + "\n";
}

/** Parses what hostReadScript printed. Throws when the output is not the script's (no header or no end marker). */
export function parseHostState(text: string): HostState {
    const lines = text.split("\n");
    if (!lines.some((l) => l.startsWith("@@rdmakit-host-state"))) throw new Error("the output is not the kit's host state (no @@rdmakit-host-state line)");
    if (!lines.some((l) => l === "@@end")) throw new Error("the host state ends early (no @@end line)");
    const state: HostState = { rails: [] };
    let rail: RailState | undefined;
    let section = "";
    const body: Record<string, string[]> = {};
    const flush = () => {
        if (!section) return;
        const b = body[section] ?? [];
        if (section === "lldp") {
            try { state.neighbours = parseLldp("host", b.join("\n")); } catch (e) { state.lldpError = `lldpctl -f json0: ${(e as Error).message}`; }
        } else if (section === "nccl") {
            state.ncclConf = Object.fromEntries(b.map((l) => l.trim()).filter((l) => l && !l.startsWith("#") && l.includes("=")).map((l) => [l.slice(0, l.indexOf("=")).trim(), l.slice(l.indexOf("=") + 1).trim()]));
        } else if (rail) {
            railSection(rail, section, b);
        }
        delete body[section];
        section = "";
    };
    for (const line of lines) {
        if (line.startsWith("@@")) {
            flush();
            const [tag, ...rest] = line.slice(2).split(" ");
            if (tag === "rail") { rail = { dev: rest[0], netdev: rest[1] || undefined, errors: [] }; state.rails.push(rail); }
            else if (tag === "error") {
                const msg = rest.slice(1).join(" ");
                if (rest[0] === "lldp") state.lldpError = msg; else if (rail) railError(rail, `${rest[0]}: ${msg}`);
            } else if (tag !== "rdmakit-host-state" && tag !== "end") { section = tag; body[tag] = []; }
            continue;
        }
        if (section) body[section].push(line);
    }
    flush();
    return state;
}

/**
 * The most errors kept per rail: the script writes at most one per section (6), so more came from the host itself
 * (untrusted), and each would be a report line. The rest are counted in the last one.
 */
export const MAX_RAIL_ERRORS = 8;

function railError(r: RailState, e: string): void {
    if (r.errors.length < MAX_RAIL_ERRORS) { r.errors.push(e); return; }
    const m = /^\(and (\d+) more errors?\)$/.exec(r.errors[MAX_RAIL_ERRORS] ?? "");
    r.errors[MAX_RAIL_ERRORS] = `(and ${m ? Number(m[1]) + 1 : 1} more error${m ? "s" : ""})`;
}

/** A host's text quoted in a message: one line's worth at most. */
const quoted = (s: string): string => `'${s.length > 120 ? `${s.slice(0, 120)}...' (${s.length} characters)` : `${s}'`}`;

function railSection(r: RailState, section: string, b: string[]): void {
    const text = b.join("\n");
    if (section === "mtu") { const n = Number(text.trim()); if (Number.isInteger(n) && n > 0) r.mtu = n; else railError(r, `mtu: unreadable ${quoted(text.trim())}`); }
    else if (section === "mlnx_qos") readMlnxQos(r, text);
    else if (section === "ethtool-a") readEthtoolPause(r, text);
    else if (section === "ecn") {
        const np: number[] = [], rp: number[] = [];
        for (const l of b) {
            const m = l.match(/^(np|rp) (\d) (\d)?$/);
            if (m && m[3] === "1") (m[1] === "np" ? np : rp).push(Number(m[2]));
            const c = l.match(/^cnp_(dscp|prio) (\d+)$/);
            if (c) { if (c[1] === "dscp") r.cnpDscp = Number(c[2]); else r.cnpPriority = Number(c[2]); }
        }
        r.ecnNp = np; r.ecnRp = rp;
    } else if (section === "willing") {
        const m = text.match(/willing\s*[=:]\s*(yes|no|1|0|on|off)/i);
        if (m) r.lldpadWilling = /^(yes|1|on)$/i.test(m[1]);
    } else if (section === "traffic_class") {
        // the last number on the line (OFED may print a label before it; L for the exact text), found from the end:
        // an unanchored /(\d+)\s*$/ was quadratic on a long run of digits that does not end the text
        const t = text.trim();
        let i = t.length;
        while (i > 0 && t.charCodeAt(i - 1) >= 48 && t.charCodeAt(i - 1) <= 57) i--;
        if (i < t.length) r.trafficClass = Number(t.slice(i));
    }
}

/**
 * `mlnx_qos -i <if>` as Mellanox/mlnx-tools prints it (python/mlnx_qos pretty_print, every version from 80fb22e to
 * 374d9b5 read): "DCBX mode: OS controlled|Firmware controlled" (from d1b0709, OFED 4.2), the trust line, which 5c00758
 * (2017) printed as "Priority trust mode: pcp|dscp|both|none" and every later version as "Priority trust state:",
 * the dscp2prio rows "\tprio:N dscp:dd,dd," (printAppSelector / print_dscp2prio_sysfs wrap a priority's list after 8
 * entries and start the next row with the same "prio:N dscp:", so one priority can have several rows), optional
 * "default priority:" (a60252a..374d9b5, followed by "\tprio:N" rows without dscp), "Receive buffer size (bytes):",
 * "Cable len: N", then "PFC configuration:" with the "\tpriority    0   1 ...", "\tenabled     0   0 ..." and, where the
 * buffer commands work, "\tbuffer ..." rows, then the "tc: N ratelimit: ..., tsa: ets|strict|vendor" blocks. The
 * oldest version (80fb22e) has no trust line: without one (or without an 8-column enabled row) the rail's QoS is
 * unreadable, never read as planned.
 */
function readMlnxQos(r: RailState, text: string): void {
    // line by line, each regex anchored on one trimmed line: multi-line /^\s*…$/m patterns let \s* run across lines,
    // which was quadratic on a host's answer of blank lines (80k took 5 s)
    let trust: string | undefined, en: number[] | undefined;
    const d2p: Record<number, number> = {};
    for (const raw of text.split("\n")) {
        const line = raw.trim();
        const startsRow = raw.length > 0 && raw.charCodeAt(0) > 32; // the header rows start the line, the table rows are indented
        if (startsRow && raw.startsWith("DCBX mode:")) r.dcbxMode ??= line.slice("DCBX mode:".length).trim();
        const t = startsRow && trust === undefined ? /^Priority trust (?:state|mode):\s*(\S+)/.exec(raw) : null;
        if (t) trust = t[1];
        for (const m of line.matchAll(/prio:(\d)\s+dscp:([\d,]+)/g)) for (const d of m[2].split(",").filter(Boolean)) d2p[Number(d)] = Number(m[1]);
        const cable = startsRow && r.cableLenM === undefined ? /^Cable len:\s*(\d+)/.exec(raw) : null;
        if (cable) r.cableLenM = Number(cable[1]);
        if (en === undefined && line.startsWith("enabled")) {
            const cols = line.slice("enabled".length);
            const bits = cols.trim().split(/\s+/);
            if (/^\s/.test(cols) && bits.length === 8 && bits.every((x) => x === "0" || x === "1")) en = bits.flatMap((x, i) => (x === "1" ? [i] : []));
        }
    }
    if (trust !== undefined) r.trust = trust;
    if (Object.keys(d2p).length) r.dscp2prio = d2p;
    if (en !== undefined) r.pfcEnabled = en;
    if (!trust || !en) {
        const first = text.trim().split("\n")[0]?.slice(0, 120) ?? "";
        r.errors.push(`mlnx_qos: expected a 'Priority trust state:' line and an 8-column 'enabled' PFC row (mlnx_qos -i <if>, MLNX_OFED 4.2 or later), found ${trust ? "no PFC row" : "no trust line"}; first line '${first}'`);
    }
}

/**
 * `ethtool -a <if>`: "Pause parameters for <if>:", "Autonegotiate:\ton|off", "RX:\t\ton|off", "TX:\t\ton|off"; with
 * pause autonegotiation on, ethtool also prints "RX negotiated: on|off" and "TX negotiated: on|off", and with
 * --include-statistics a "Statistics:" block (captures: test/fixtures/roce/running/README.md).
 * RX/TX are the configured policy, what `ethtool -A <if> rx off tx off` (the roce_host role) sets and what its agent
 * reads back: that is what the plan's "global pause off" is compared with. The negotiated rows are not read from the
 * kernel or the NIC: ethtool works them out in userspace from the advertised and the link partner's Pause/Asym_Pause
 * link-mode bits (ethtool netlink/pause.c pause_autoneg_cb), "a guess of the resolved state" that "can be wrong"
 * (Oleksij Rempel, netdev <aSa8Gkl1AP1U2C9j@pengutronix.de>, whose example prints RX/TX off and negotiated on), and
 * the kernel does not apply link-wide PAUSE where PFC runs ("Link-wide PAUSE cannot be used together with
 * Priority-based Flow Control", Documentation/networking/flow_control.rst, torvalds/linux@7bd80ed89d72). So a
 * negotiated row never turns pause on or off here.
 * Rows are read with any leading indentation (published captures are often indented). "Cannot get device pause
 * settings" or any text without the rows is unreadable.
 */
function readEthtoolPause(r: RailState, text: string): void {
    // the first row of each name, read on one trimmed line at a time (a /^\s*RX:…$/m over the whole text let \s* run
    // across lines: quadratic on a host's answer of blank lines, 80k took 10 s)
    const rows = new Map<string, string>();
    for (const raw of text.split("\n")) {
        const m = /^(RX|TX|Autonegotiate):\s*(on|off)$/.exec(raw.trim());
        if (m && !rows.has(m[1])) rows.set(m[1], m[2]);
    }
    const row = (name: string) => rows.get(name);
    const rx = row("RX"), tx = row("TX");
    if (rx === undefined || tx === undefined) {
        r.errors.push(`ethtool -a: expected 'RX:' and 'TX:' pause rows (on|off), found '${text.trim().split("\n").slice(0, 2).join(" / ").slice(0, 160)}'`);
        return;
    }
    r.globalPause = { rx: rx === "on", tx: tx === "on" };
    const auto = row("Autonegotiate");
    if (auto !== undefined) r.pauseAutoneg = auto === "on";
}

/**
 * `nv show qos roce -o json` → the RoCE enable and mode the switch operates. The JSON shape is unconfirmed: NVIDIA's
 * docs show this command only as a table with operational and applied columns (CumulusNetworks/docs:content/
 * cumulus-linux-514/Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE.md "Verify RoCE
 * Configuration"), where the operational `enable` cell is empty in one example (mode lossless-single-ipool) and `on` in
 * another, and later pages print `state enabled` instead of `enable on`. So `mode` is required and `enable`/`state`
 * only judged when present (absent reads as on: a switch that runs no RoCE has no operational mode). The object is
 * read flat or under an `operational` key; anything else is refused, naming the key it looked for.
 */
export function parseNvueRoceOper(text: string): { enable: string; mode: string } {
    const doc = JSON.parse(text) as unknown;
    const o = doc && typeof doc === "object" && !Array.isArray(doc) ? ((doc as Record<string, unknown>).operational ?? doc) as Record<string, unknown> : undefined;
    if (!o || typeof o !== "object" || o.mode === undefined || o.mode === "") throw new Error("nv show qos roce -o json printed no object with an operational mode");
    const norm = (x: unknown) => (x === true || x === "enabled" ? "on" : x === false || x === "disabled" ? "off" : String(x));
    const on = o.enable ?? o.state;
    return { enable: on === undefined || on === "" ? "on" : norm(on), mode: norm(o.mode) };
}
