/**
 * Drift: the running fabric against the plan, by the plan's own rules. Pure: it takes what each switch and host
 * printed (fabric-read.ts fetches it) and returns a report.
 *
 * - Switches: each running configuration is read by the same readers as the rendered texts (runningSwitchView) and
 *   C1–C17 run over those views with the planned hosts (checkViews, consistency.ts). What breaks there and not in the
 *   plan itself is the switch's drift.
 * - Hosts: each rail's NIC state becomes the host variables it stands for (trust, PFC, dscp2prio, MTU, ECN, pause,
 *   ToS, /etc/nccl.conf), and the same rules run with those hosts against the planned switches.
 * - C18 (cabling: LLDP against hosts[i].railPorts and the uplinks) and C19 (NIC DCBX host-controlled, not willing)
 *   need the running fabric, so they live here only.
 * Every finding names the device, the rule, and the expected and found values. A device that could not be read is
 * reported unreadable: never as passing.
 */
import { checkViews, formatViolation, readSwitchView, RULES, type PortView, type RuleId, type SwitchView, type Violation } from "./consistency";
import { parseHostState, parseLldp, parseNvueRoceOper, runningSwitchView, sonicConfigDb, type HostState, type Neighbour, type RailState } from "./fabric-state";
import { pfcVector, type HostPlan, type QosPlan, type RoceHostVars, type SwitchPlan } from "./qos";
import { parseSonicOper, sonicOperFindings } from "./sonic-oper";
import { renderSwitchConfigs } from "./render";
import { printableLine } from "../redact";

export type DriftRule = RuleId | "C18" | "C19" | "C20";

export const DRIFT_RULES: Readonly<Record<DriftRule, string>> = {
    ...RULES,
    C18: "the cabling the plan declares (hosts[i].railPorts, leaf uplinks) is what LLDP sees on the hosts and switches",
    // torvalds/linux:drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c mlx5e_dcbnl_set_dcbx_mode: any mode but host
    // sets willing_admin = 1, so firmware DCBX takes the switch's PFC/ETS; lldptool-pfc(8): willing=yes uses the peer's
    C19: "the rail NIC's DCBX is host (OS) controlled and not willing, so a switch's DCBX cannot replace the host QoS the kit sets",
    C20: "what the switch operates is what the plan says (NVUE: the RoCE mode switchd runs; SONiC: PFC per port, the PFC watchdog armed, headroom on the lossless PG)",
};

export interface SwitchReading {
    switch: string;
    /** The running configuration as the OS printed it; undefined when it could not be read (error says why). */
    config?: string;
    error?: string;
    /** The LLDP neighbour table; undefined when it could not be read (lldpError says why). */
    lldp?: string;
    lldpError?: string;
    /** What the switch operates (SWITCH_READS[os].oper), when its OS has such a read; operError says why it is missing. */
    oper?: string;
    operError?: string;
    /** What its answers say, already read (switchFacts): fabric-read.ts reads each answer as it arrives, keeps no text. */
    facts?: SwitchFacts;
}

/** What one switch's answers say: its running view, or why it is unreadable, and what its LLDP and operational reads give. */
export interface SwitchFacts {
    /** The running configuration (runningSwitchView); undefined when it could not be read (unreadable says why). */
    view?: SwitchView;
    /** SONiC: the planned ports' aliases (PORT|<name>.alias), which LLDP advertises. */
    aliases?: Map<string, string>;
    /** The LLDP neighbours; undefined when not read (notChecked says why). */
    neighbours?: Neighbour[];
    findings: Finding[];
    unreadable: Array<{ device: string; why: string }>;
    notChecked: Array<{ device: string; what: string }>;
}
type Found = Pick<SwitchFacts, "findings" | "unreadable" | "notChecked">;

export interface HostReading {
    host: string;
    /** What hostReadScript printed; undefined when the host could not be read (error says why) or was read already. */
    output?: string;
    /** What it printed, already read (parseHostState): fabric-read.ts reads each host's answer as it arrives. */
    state?: HostState;
    error?: string;
}

export interface Finding {
    /** `switch`, `switch:port`, `host:netdev`, or several of them. */
    device: string;
    rule: DriftRule;
    message: string;
    expected?: Record<string, unknown>;
    found?: Record<string, unknown>;
}

export interface DriftReport {
    /** What the plan itself breaks (formatViolation lines): no drift, but nothing to hold the fabric to either. */
    planViolations: string[];
    findings: Finding[];
    unreadable: Array<{ device: string; why: string }>;
    notChecked: Array<{ device: string; what: string }>;
    read: { switches: string[]; hosts: string[] };
}

/** PortView fields each rule reads: what the report shows as expected vs found. */
const PORT_FIELDS: Partial<Record<RuleId, Array<keyof PortView>>> = {
    C1: ["dscpToTc", "tcToQueue", "pfcToQueue", "pfcPriorities", "ecnQueues"],
    C2: ["pfcPriorities", "pfcToQueue", "dscpToPriority"],
    C3: ["pfcPriorities", "strictQueues"],
    C4: ["losslessPgs", "tcToPg", "cableLengthM"],
    C5: ["trustDscp", "linkPause"],
    C6: ["dscpToTc", "tcToQueue", "strictQueues"],
    C7: ["ecnQueues"],
    C9: ["mtu"],
    C11: ["watchdogPriorities", "watchdogAction", "watchdogTimersOk"],
    C14: ["pfcPriorities"],
    C15: ["pfcToPg", "losslessPgs"],
    C17: ["ecnMinBytes"],
};

/** Host variables (and NCCL keys) each rule reads. */
const HOST_FIELDS: Partial<Record<RuleId, string[]>> = {
    C1: ["roce_host_tos", "NCCL_IB_TC"],
    C2: ["roce_host_priority", "roce_host_pfc_vector"],
    C3: ["roce_host_pfc_vector", "roce_host_cnp_priority"],
    C5: ["roce_host_trust", "roce_host_global_pause"],
    C6: ["roce_host_cnp_dscp"],
    C7: ["roce_host_ecn", "roce_host_cc_prio_mask", "roce_host_priority"],
    C8: ["NCCL_IB_TC", "roce_host_tos"],
    C9: ["roce_host_mtu"],
    C10: ["NCCL_IB_GID_INDEX"],
    C12: ["roce_host_pfc_vector"],
    C13: ["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME"],
};

const json = (x: unknown) => JSON.stringify(x ?? null);

/** The keys where two records differ; maps (objects) are compared key by key, so only changed entries show. */
function diff(expected: Record<string, unknown>, found: Record<string, unknown>, keys: readonly string[]): { expected: Record<string, unknown>; found: Record<string, unknown> } | undefined {
    const e: Record<string, unknown> = {}, f: Record<string, unknown> = {};
    for (const k of keys) {
        const a = expected[k], b = found[k];
        if (json(a) === json(b)) continue;
        if (a && b && typeof a === "object" && typeof b === "object" && !Array.isArray(a) && !Array.isArray(b)) {
            const ea: Record<string, unknown> = {}, fb: Record<string, unknown> = {};
            for (const kk of new Set([...Object.keys(a), ...Object.keys(b)])) {
                const x = (a as Record<string, unknown>)[kk], y = (b as Record<string, unknown>)[kk];
                if (json(x) !== json(y)) { ea[kk] = x ?? "(unset)"; fb[kk] = y ?? "(unset)"; }
            }
            e[k] = ea; f[k] = fb;
        } else { e[k] = a ?? "(unset)"; f[k] = b ?? "(unset)"; }
    }
    return Object.keys(e).length ? { expected: e, found: f } : undefined;
}

/** The report of the running fabric against the plan. Pure. */
export function fabricDrift(plan: QosPlan, switches: readonly SwitchReading[], hosts: readonly HostReading[]): DriftReport {
    const report: DriftReport = { planViolations: [], findings: [], unreadable: [], notChecked: [], read: { switches: [], hosts: [] } };
    const planned = renderSwitchConfigs(plan).map(readSwitchView);
    const plannedByName = new Map(planned.map((v) => [v.name, v]));
    // what the plan itself breaks is no drift (the component refuses such a plan; the CLI says it separately)
    const baseline = new Set(checkViews(plan, planned).map(formatViolation));
    report.planViolations = [...baseline];
    const swPlan = new Map(plan.switches.map((s) => [s.name, s]));

    // ---- switches
    const running: SwitchView[] = [];
    const aliases = new Map<string, Map<string, string>>();
    const lldpBySwitch = new Map<string, Neighbour[]>();
    for (const r of switches) {
        const sw = swPlan.get(r.switch);
        if (!sw) { report.unreadable.push({ device: r.switch, why: "not a switch of the plan" }); continue; }
        const f = r.facts ?? switchFacts(plan, sw, r);
        report.findings.push(...f.findings);
        report.unreadable.push(...f.unreadable);
        report.notChecked.push(...f.notChecked);
        if (!f.view) continue;
        running.push(f.view);
        if (f.aliases) aliases.set(sw.name, f.aliases);
        report.read.switches.push(r.switch);
        if (f.neighbours) lldpBySwitch.set(r.switch, f.neighbours);
    }
    const runningByName = new Map(running.map((v) => [v.name, v]));
    const readSwitches = new Set(running.map((v) => v.name));
    for (const x of checkViews(plan, running)) {
        if (baseline.has(formatViolation(x))) continue;
        const devs = x.devices.filter((d) => readSwitches.has(d.split(":")[0]));
        if (!devs.length) continue;
        report.findings.push(switchFinding(x, devs, plannedByName, runningByName));
    }

    // ---- hosts
    const hostRails: HostPlan[] = [];
    const railOwner = new Map<string, { host: HostPlan; observed: HostPlan }>();
    const hostPlan = new Map(plan.hosts.map((h) => [h.name, h]));
    const states = new Map<string, HostState>();
    for (const r of hosts) {
        const ph = hostPlan.get(r.host);
        if (!ph) { report.unreadable.push({ device: r.host, why: "not a host of the plan" }); continue; }
        if (r.output === undefined && r.state === undefined) { report.unreadable.push({ device: r.host, why: r.error ?? "no output came back" }); continue; }
        let st: HostState;
        try { st = r.state ?? parseHostState(r.output!); } catch (e) { report.unreadable.push({ device: r.host, why: (e as Error).message }); continue; }
        states.set(r.host, st);
        report.read.hosts.push(r.host);
        if (!st.ncclConf) report.unreadable.push({ device: r.host, why: "/etc/nccl.conf is absent or unreadable (the NCCL side of C1, C8, C10, C13)" });
        // from here on (the checks below, the cabling) the host's rails are the planned ones it answered for
        st.rails = plannedRails(report, ph, st);
        for (const rail of st.rails) {
            const name = `${ph.name}:${rail.netdev ?? rail.dev}`;
            for (const e of rail.errors) report.unreadable.push({ device: name, why: e });
            const observed = observedHost(plan, ph, rail, st, name);
            hostRails.push(observed);
            railOwner.set(name, { host: ph, observed });
            dcbxFindings(report, name, rail);
        }
        cablingFromHost(report, plan, ph, st, swPlan, aliases);
    }
    if (hostRails.length) {
        const byRule = new Map<string, { f: Finding; more: number }>();
        for (const x of checkViews({ ...plan, hosts: hostRails }, planned)) {
            if (baseline.has(formatViolation(x))) continue;
            const rails = x.devices.filter((d) => railOwner.has(d));
            if (!rails.length) continue;
            // one finding per rule and rail group: the same host mistake shows on every switch port it meets
            const key = `${x.rule} ${rails.join(",")}`;
            const hit = byRule.get(key);
            if (hit) { hit.more++; continue; }
            const o = railOwner.get(rails[0])!;
            const fields = HOST_FIELDS[x.rule] ?? [];
            const d = diff(hostFacts(o.host), hostFacts(o.observed), fields);
            byRule.set(key, { f: { device: rails.join(", "), rule: x.rule, message: x.message, ...(d ?? {}) }, more: 0 });
        }
        for (const { f, more } of byRule.values()) report.findings.push(more ? { ...f, message: `${f.message} (and ${more} more switch port${more > 1 ? "s" : ""})` } : f);
    }
    cablingFromSwitches(report, plan, lldpBySwitch, aliases, swPlan);
    return report;
}

/**
 * The host's rail sections for the NICs the plan gives it, the first one of each. The sections are the host's own text
 * (untrusted): one naming a NIC the plan does not have, or naming a NIC twice, is not read but reported (once per
 * host, however many), and a planned NIC without a section is unreadable, never read as passing.
 */
function plannedRails(report: DriftReport, ph: HostPlan, st: HostState): RailState[] {
    const byDev = new Map<string, RailState>();
    const extra: string[] = [];
    const planned = new Set(ph.railNics);
    for (const r of st.rails) {
        if (planned.has(r.dev) && !byDev.has(r.dev)) byDev.set(r.dev, r);
        else extra.push(r.dev);
    }
    if (extra.length) report.unreadable.push({ device: ph.name, why: `sent ${extra.length} rail section(s) the plan does not give it or that repeat one (first: '${extra[0].slice(0, 40)}'): not read` });
    const out: RailState[] = [];
    for (const dev of ph.railNics) {
        const r = byDev.get(dev);
        if (r) out.push(r);
        else report.unreadable.push({ device: `${ph.name}:${dev}`, why: "the host's answer has no section for this rail NIC" });
    }
    return out;
}

/**
 * What a switch's answers say (fabricDrift's switch part, one switch): its running configuration read into a view, and
 * only then its operational read (C20) and its LLDP table (C18). fabric-read.ts runs the same steps (configFacts,
 * lldpFacts, operFindings, withLldp) as each answer arrives, so no answer's text outlives its reading.
 */
export function switchFacts(plan: QosPlan, sw: SwitchPlan, r: SwitchReading): SwitchFacts {
    const f = configFacts(sw, r.config, r.error);
    if (!f.view) return f;
    const lldp = lldpFacts(sw, r.lldp, r.lldpError);
    operFindings(f, sw, plan, r);
    return withLldp(f, sw, lldp);
}

/** The running configuration's facts: the view and (SONiC) the planned ports' aliases, or why it cannot be read. */
export function configFacts(sw: SwitchPlan, config: string | undefined, error: string | undefined): SwitchFacts {
    const f: SwitchFacts = { findings: [], unreadable: [], notChecked: [] };
    if (config === undefined) { f.unreadable.push({ device: sw.name, why: error ?? "no running configuration came back" }); return f; }
    try {
        const view = runningSwitchView(sw, config);
        const aliases = sw.os === "sonic" ? sonicAliases(sw, config) : undefined;
        return { ...f, view, ...(aliases ? { aliases } : {}) };
    } catch (e) {
        f.unreadable.push({ device: sw.name, why: `the running configuration could not be parsed as ${sw.os} output: ${(e as Error).message}` });
        return f;
    }
}

/** The LLDP table read: its neighbours, or why C18 is not checked on the switch. */
export function lldpFacts(sw: SwitchPlan, lldp: string | undefined, error: string | undefined): { neighbours: Neighbour[] } | { why: string } {
    if (lldp === undefined) return { why: `LLDP cabling (C18): ${error ?? "no LLDP table came back"}` };
    try { return { neighbours: parseLldp(sw.os, lldp) }; } catch (e) { return { why: `LLDP cabling (C18): ${(e as Error).message}` }; }
}

/** `f` with the LLDP read added (after the operational read's entries, as fabricDrift reports them). */
export function withLldp(f: SwitchFacts, sw: SwitchPlan, lldp: { neighbours: Neighbour[] } | { why: string }): SwitchFacts {
    if ("why" in lldp) { f.notChecked.push({ device: sw.name, what: lldp.why }); return f; }
    return { ...f, neighbours: lldp.neighbours };
}

/** C20: the operational read against the plan (NVUE `nv show qos roce`, SONiC sonic-oper.ts), or why it was not checked. */
export function operFindings(report: Found, sw: SwitchPlan, plan: QosPlan, r: Pick<SwitchReading, "switch" | "oper" | "operError">): void {
    if (sw.os === "eos") {
        report.notChecked.push({ device: r.switch, what: "operational PFC and trust (C20): not read; no public source gives the JSON of `show priority-flow-control | json` or `show qos interfaces | json`, so only the running configuration (show running-config all) is checked" });
        return;
    }
    if (r.oper === undefined) { report.notChecked.push({ device: r.switch, what: `operational state (C20): ${r.operError ?? "no answer"}` }); return; }
    if (sw.os === "sonic") {
        let so;
        try { so = parseSonicOper(r.oper); } catch (e) { report.unreadable.push({ device: r.switch, why: `operational state (C20): ${(e as Error).message}` }); return; }
        const { findings, unreadable } = sonicOperFindings(plan, sw, so);
        report.findings.push(...findings);
        report.unreadable.push(...unreadable);
        return;
    }
    let o: { enable: string; mode: string };
    try { o = parseNvueRoceOper(r.oper); } catch (e) { report.unreadable.push({ device: r.switch, why: `operational RoCE state (C20): ${(e as Error).message}` }); return; }
    if (o.enable !== "on" || o.mode !== plan.mode) {
        report.findings.push({ device: r.switch, rule: "C20", message: `the switch operates RoCE ${o.enable === "on" ? `mode ${o.mode}` : "off"}; the plan (and the applied configuration it was given) says mode ${plan.mode}: the apply did not take`, expected: { enable: "on", mode: plan.mode }, found: o });
    }
}

function switchFinding(x: Violation, devs: string[], planned: Map<string, SwitchView>, running: Map<string, SwitchView>): Finding {
    const port = devs.find((d) => d.includes(":"));
    // C5 / C14 name a switch and list the planned ports its configuration lacks (consistency.ts): on a running switch
    // each is named `switch:port`, as every other port finding is, and the text says where they are missing
    const missing = Array.isArray(x.values.missing) ? (x.values.missing as unknown[]).filter((p): p is string => typeof p === "string") : [];
    if (!port && devs.length === 1 && missing.length && (x.rule === "C5" || x.rule === "C14")) {
        return {
            device: missing.map((p) => `${devs[0]}:${p}`).join(", "), rule: x.rule,
            message: x.message.replace("in the rendered config", "in the running configuration"),
            expected: { roceQos: "configured" }, found: { roceQos: "absent" },
        };
    }
    const fields = PORT_FIELDS[x.rule] ?? [];
    if (port && fields.length) {
        const [s, p] = [port.slice(0, port.indexOf(":")), port.slice(port.indexOf(":") + 1)];
        const want = planned.get(s)?.ports.find((q) => q.port === p);
        const got = running.get(s)?.ports.find((q) => q.port === p);
        if (want && got) {
            const d = diff(want as unknown as Record<string, unknown>, got as unknown as Record<string, unknown>, fields as string[]);
            if (d) return { device: devs.join(", "), rule: x.rule, message: x.message, ...d };
        }
    }
    return { device: devs.join(", "), rule: x.rule, message: x.message, found: x.values };
}

/** The host variables and NCCL environment one rail's state stands for; what it could not read stays as planned. */
function observedHost(plan: QosPlan, ph: HostPlan, r: RailState, st: HostState, name: string): HostPlan {
    const v = ph.vars;
    const prio = r.dscp2prio?.[plan.roce.dscp] ?? (r.trust === "dscp" ? plan.roce.dscp >> 3 : v.roce_host_priority);
    const ecnKnown = r.ecnNp !== undefined && r.ecnRp !== undefined;
    const both = ecnKnown ? r.ecnNp!.filter((p) => r.ecnRp!.includes(p)) : [];
    const vars: RoceHostVars = {
        ...v,
        roce_host_trust: (r.trust ?? v.roce_host_trust) as RoceHostVars["roce_host_trust"],
        roce_host_pfc: r.pfcEnabled ? r.pfcEnabled.length > 0 : v.roce_host_pfc,
        roce_host_pfc_vector: r.pfcEnabled ? pfcVector(r.pfcEnabled) : v.roce_host_pfc_vector,
        roce_host_priority: prio,
        roce_host_cnp_dscp: r.cnpDscp ?? v.roce_host_cnp_dscp,
        roce_host_cnp_priority: r.cnpPriority ?? v.roce_host_cnp_priority,
        roce_host_mtu: r.mtu ?? v.roce_host_mtu,
        roce_host_ecn: ecnKnown ? both.includes(prio) : v.roce_host_ecn,
        roce_host_cc_prio_mask: ecnKnown ? both.reduce((m, p) => m | (1 << p), 0) : v.roce_host_cc_prio_mask,
        roce_host_global_pause: (r.globalPause ? r.globalPause.rx || r.globalPause.tx : v.roce_host_global_pause) as false,
        roce_host_tos: r.trafficClass ?? v.roce_host_tos,
    };
    const ncclEnv = st.ncclConf ? Object.fromEntries(Object.keys(ph.ncclEnv).filter((k) => st.ncclConf![k] !== undefined).map((k) => [k, st.ncclConf![k]])) : ph.ncclEnv;
    // the rail is cabled to its own port only: checkViews compares it with that port (consistency.ts cabledGroups)
    const port = ph.railPorts?.[ph.railNics.indexOf(r.dev)];
    const { railPorts: _all, ...rest } = ph;
    return { ...rest, ...(port !== undefined ? { railPorts: [port] } : {}), name, ncclEnv, vars };
}

const hostFacts = (h: HostPlan): Record<string, unknown> => ({ ...h.vars, ...h.ncclEnv });

function dcbxFindings(report: DriftReport, name: string, r: RailState): void {
    // mlnx_qos prints "DCBX mode: OS controlled" when the port is in host mode, else "Firmware controlled"
    // (Mellanox/mlnx-tools:python/mlnx_qos pretty_print, DCB_CAP_DCBX_HOST)
    if (r.dcbxMode === undefined) report.notChecked.push({ device: name, what: "DCBX mode (C19): mlnx_qos did not show it" });
    else if (r.dcbxMode !== "OS controlled") {
        report.findings.push({ device: name, rule: "C19", message: `DCBX is "${r.dcbxMode}": the firmware runs DCBX as a willing peer, so the switch's PFC/ETS can replace the host QoS (set it with mlnx_qos -i ${r.netdev ?? r.dev} --dcbx os)`, expected: { dcbxMode: "OS controlled" }, found: { dcbxMode: r.dcbxMode } });
    }
    if (r.lldpadWilling === true) {
        report.findings.push({ device: name, rule: "C19", message: `lldpad's PFC TLV is willing: a switch's PFC settings replace the host's (lldptool -T -i ${r.netdev ?? r.dev} -V PFC willing=no)`, expected: { lldpadPfcWilling: false }, found: { lldpadPfcWilling: true } });
    }
}

/**
 * SONiC advertises a port's alias as its LLDP port id (PORT|<name>.alias): name → alias from its CONFIG_DB, for the
 * ports the plan gives the switch (the only ones the cabling checks look up; the rest of an untrusted table is not kept).
 */
function sonicAliases(sw: SwitchPlan, text: string): Map<string, string> {
    const db = sonicConfigDb(JSON.parse(text));
    const rows = db.PORT ?? {};
    const out = new Map<string, string>();
    for (const p of sw.ports) {
        const alias = Object.hasOwn(rows, p.name) ? rows[p.name]?.alias : undefined;
        if (alias) out.set(p.name, alias);
    }
    return out;
}

/** Whether a neighbour is `port` of switch `sw`, by system name (first label), management address, port id or description. */
function isSwitchPort(n: Neighbour, sw: SwitchPlan, port: string, aliases: Map<string, Map<string, string>>): "yes" | "no" | "alias-unknown" {
    const sysOk = (n.sysName !== undefined && (n.sysName.split(".")[0] === sw.name || n.sysName === sw.managementAddress)) || n.mgmtIps.includes(sw.managementAddress);
    if (!sysOk) return "no";
    const names = [n.portId, n.portDescr];
    if (names.includes(port)) return "yes";
    if (sw.os !== "sonic") return "no";
    const alias = aliases.get(sw.name)?.get(port);
    if (alias === undefined) return "alias-unknown";
    return names.includes(alias) ? "yes" : "no";
}

const heard = (n: Neighbour) => `${n.sysName ?? n.mgmtIps[0] ?? "(no name)"}:${n.portId ?? n.portDescr ?? "(no port id)"}`;

function cablingFromHost(report: DriftReport, plan: QosPlan, ph: HostPlan, st: HostState, swPlan: Map<string, SwitchPlan>, aliases: Map<string, Map<string, string>>): void {
    if (!ph.railPorts) return;
    if (!st.neighbours) { report.notChecked.push({ device: ph.name, what: `LLDP cabling (C18): ${st.lldpError ?? "no LLDP table"}` }); return; }
    ph.railPorts.forEach((want, i) => {
        const rail = st.rails.find((r) => r.dev === ph.railNics[i]);
        const netdev = rail?.netdev;
        if (!netdev) return; // already unreadable (no netdev)
        const [swName, port] = [want.slice(0, want.indexOf(":")), want.slice(want.indexOf(":") + 1)];
        const sw = swPlan.get(swName)!;
        const n = st.neighbours!.find((x) => x.local === netdev);
        const device = `${ph.name}:${netdev}`;
        if (!n) { report.findings.push({ device, rule: "C18", message: `no LLDP neighbour on ${netdev}; the plan cables it to ${want}`, expected: { neighbour: want }, found: { neighbour: "(none)" } }); return; }
        const m = isSwitchPort(n, sw, port, aliases);
        if (m === "alias-unknown") report.notChecked.push({ device, what: `LLDP cabling (C18): ${netdev} hears ${heard(n)}; SONiC advertises port aliases and ${swName}'s CONFIG_DB was not read` });
        else if (m === "no") report.findings.push({ device, rule: "C18", message: `${netdev} is cabled to ${heard(n)}, the plan says ${want}`, expected: { neighbour: want }, found: { neighbour: heard(n) } });
    });
    void plan;
}

function cablingFromSwitches(report: DriftReport, plan: QosPlan, lldp: Map<string, Neighbour[]>, aliases: Map<string, Map<string, string>>, swPlan: Map<string, SwitchPlan>): void {
    // host ports: the host a rail declares, when the switch hears one (hosts need not run LLDP)
    const railAt = new Map<string, { host: HostPlan; i: number }>();
    for (const h of plan.hosts) (h.railPorts ?? []).forEach((rp, i) => railAt.set(rp, { host: h, i }));
    for (const [name, neighbours] of lldp) {
        const sw = swPlan.get(name)!;
        for (const p of sw.ports) {
            const n = neighbours.find((x) => x.local === p.name);
            const device = `${name}:${p.name}`;
            if (p.kind === "host") {
                const r = railAt.get(device);
                if (!r || !n) continue;
                const sysOk = (n.sysName !== undefined && n.sysName.split(".")[0] === r.host.name) || n.mgmtIps.includes(r.host.address) || n.sysName === r.host.address;
                const netdev = r.host.railNetdevs?.[r.i];
                const portOk = netdev === undefined || [n.portId, n.portDescr].includes(netdev);
                if (!sysOk || !portOk) report.findings.push({ device, rule: "C18", message: `${device} hears ${heard(n)}; the plan cables it to ${r.host.name} rail ${r.host.railNics[r.i]}${netdev ? ` (${netdev})` : ""}`, expected: { neighbour: `${r.host.name}:${netdev ?? r.host.railNics[r.i]}` }, found: { neighbour: heard(n) } });
                continue;
            }
            const [peerName, peerPort] = [p.peer!.slice(0, p.peer!.indexOf(":")), p.peer!.slice(p.peer!.indexOf(":") + 1)];
            if (!n) { report.findings.push({ device, rule: "C18", message: `no LLDP neighbour on ${device}; the plan cables it to ${p.peer}`, expected: { neighbour: p.peer }, found: { neighbour: "(none)" } }); continue; }
            const m = isSwitchPort(n, swPlan.get(peerName)!, peerPort, aliases);
            if (m === "alias-unknown") report.notChecked.push({ device, what: `LLDP cabling (C18): hears ${heard(n)}; SONiC advertises port aliases and ${peerName}'s CONFIG_DB was not read` });
            else if (m === "no") report.findings.push({ device, rule: "C18", message: `${device} is cabled to ${heard(n)}, the plan says ${p.peer}`, expected: { neighbour: p.peer }, found: { neighbour: heard(n) } });
        }
    }
}

/**
 * The longest line the report prints. The kit's own lines are short; a longer one quotes what a device sent (an ssh
 * error's last lines, a CONFIG_DB key, an EOS line), and that device's text is not worth more of the operator's screen.
 */
export const MAX_REPORT_LINE = 2000;

/** The report as text: one block per finding, then unreadable devices and what was not checked. */
export function formatDriftReport(r: DriftReport): string {
    const out: string[] = [];
    const verdict = r.findings.length || r.unreadable.length || r.planViolations.length ? "FAIL" : "PASS";
    out.push(`rdmakit fabric check: ${verdict}: read ${r.read.switches.length} switch(es), ${r.read.hosts.length} host(s); ${r.findings.length} drift finding(s), ${r.unreadable.length} unreadable`);
    for (const v of r.planViolations) out.push(`PLAN ${v} (the plan itself breaks this rule: fix cluster.roce first)`);
    for (const f of r.findings) {
        out.push(`DRIFT ${f.device} [${f.rule}] ${f.message}`);
        if (f.expected) out.push(`    expected ${JSON.stringify(f.expected)}`);
        if (f.found) out.push(`    found    ${JSON.stringify(f.found)}`);
    }
    for (const u of r.unreadable) out.push(`UNREADABLE ${u.device}: ${u.why}`);
    for (const n of r.notChecked) out.push(`NOT CHECKED ${n.device}: ${n.what}`);
    // a switch's or host's own text is printed (an ssh error, a value it reported): one line each, no control
    // character, and no longer than MAX_REPORT_LINE (a message that quotes a key or a line of the device's answer)
    return out.map((l) => printableLine(l.length > MAX_REPORT_LINE ? `${l.slice(0, MAX_REPORT_LINE)}... (${l.length - MAX_REPORT_LINE} more characters)` : l)).join("\n") + "\n";
}
