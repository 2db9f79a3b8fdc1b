/**
 * The one QoS plan of a RoCE fabric: a pure function of the spec. It is the only source of the host NIC settings
 * (the `roce_host_*` Ansible variables), the NCCL environment and every switch's class layout; the renderers in
 * ./switches and the consistency rules in ./consistency read it and never re-decide.
 */
import { SpecError } from "../errors";
import type { NicModel } from "../catalog/nics";
import { pgHeadroomBytes, SWITCH_CATALOG } from "../catalog/switches";
import type { RoceSwitchInput } from "../types";
import { checkRoceSpec, DEFAULT_SWITCH_USER, isCleanRoceSpec, SWITCH_MAX_MTU, type NetworkOs, type RoceSpec } from "./spec";

/** Where one class of traffic sits inside a switch. Priorities are what must agree across devices (rule C2). */
export interface ClassLayout {
    /** 802.1p / switch priority (the PFC priority). */
    priority: number;
    /** Internal traffic class the DSCP map sends it to. */
    trafficClass: number;
    /** Egress queue of that traffic class. */
    queue: number;
    /** Ingress priority group (SONiC buffer PG). */
    priorityGroup: number;
}

/** One switch port on the RoCE path. Every one gets the same classification, PFC, ECN, watchdog and MTU. */
export interface PortPlan {
    name: string;
    /** host: faces a GPU rail; uplink: leaf → spine; downlink: spine → leaf. */
    kind: "host" | "uplink" | "downlink";
    speedGbps: number;
    /** The cable on this port, metres (sizes its headroom). */
    cableLengthM: number;
    /** `switch:port` at the other end of a fabric link. */
    peer?: string;
    /** Lossless PG size for this port's speed and cable from the catalog, bytes; undefined when unknown. */
    headroomBytes?: number;
}

export interface SwitchPlan {
    name: string;
    os: NetworkOs;
    role: "leaf" | "spine";
    /** Catalog model, when the spec names one. */
    model?: string;
    managementAddress: string;
    sshUser: string;
    sshPort: number;
    /** Pinned SSH host key line; every push verifies it. */
    hostKey: string;
    /** Host-facing port names (a subset of `ports`). */
    hostPorts: string[];
    /** Every port on the RoCE path: host ports, then uplinks (leaf) or downlinks (spine). */
    ports: PortPlan[];
    speedGbps: number;
    cableLengthM: number;
    /** Port MTU to configure (≥ host MTU, rule C9). */
    mtu: number;
    roce: ClassLayout;
    cnp: ClassLayout;
    /** Everything else (DSCPs other than RoCE and CNP). */
    other: ClassLayout;
    /**
     * Headroom the lossless PGs of all RoCE ports reserve vs the switch's lossless pool (rule C16); each figure
     * undefined when the catalog does not know it.
     */
    buffer: { headroomBytes?: number; poolBytes?: number; source?: string };
    /** EOS queue keyword of the platform. */
    eosQueueKeyword?: "uc-tx-queue" | "tx-queue";
    /** SONiC: render PFC_PRIORITY_TO_PRIORITY_GROUP_MAP (SONiC's own template does so on mellanox/barefoot ASICs). */
    pfcToPgMap: boolean;
}

/**
 * What the switch renderers (switches/nvue.ts, sonic.ts, eos.ts) read of a switch: its OS, MTU, default cable, class
 * layout, the SONiC PG map and EOS queue keyword, and each port's name and cable. Not its name, addresses, key or
 * peers, so switches alike in these (a rail fabric's leaves, its spines) take one text (render.ts renders it once).
 * The renderers are typed to this, and given switchRenderInput's copy, so what they read is what the copy holds.
 */
export type SwitchRenderInput = Pick<SwitchPlan, "os" | "mtu" | "cableLengthM" | "roce" | "cnp" | "other" | "pfcToPgMap" | "eosQueueKeyword"> & {
    ports: Array<Pick<PortPlan, "name" | "cableLengthM">>;
};

/** The render input of a switch: a copy of those fields alone (an absent optional one stays absent). */
export function switchRenderInput(sw: SwitchPlan): SwitchRenderInput {
    return {
        os: sw.os, mtu: sw.mtu, cableLengthM: sw.cableLengthM, roce: sw.roce, cnp: sw.cnp, other: sw.other, pfcToPgMap: sw.pfcToPgMap,
        ...(sw.eosQueueKeyword !== undefined ? { eosQueueKeyword: sw.eosQueueKeyword } : {}),
        ports: sw.ports.map((p) => ({ name: p.name, cableLengthM: p.cableLengthM })),
    };
}

/**
 * Host NIC settings for the roce_host Ansible role; one set per host (rail names and GID index may differ).
 * Names shared with the role's meta/argument_specs.yml (roce_host_interfaces, _dscp, _priority, _cnp_dscp,
 * _cnp_priority, _mtu, _pfc, _ecn) keep the role's meaning; the role applies and checks the rest too (playbooks/roles/roce_host). The host's NCCL
 * environment travels as its own nccl_conf host variable (provision/nodes.ts), written to /etc/nccl.conf by the nccl role.
 */
export interface RoceHostVars {
    /** Rail netdevs (mlnx_qos, ethtool, sysfs ecn); present when the spec gives hosts[i].railNetdevs. */
    roce_host_interfaces?: string[];
    /** Rail RDMA devices; the role can find each netdev under /sys/class/infiniband/<dev>/device/net/. */
    roce_host_rdma_devices: string[];
    roce_host_bootstrap_nic: string;
    roce_host_dscp: number;
    roce_host_priority: number;
    roce_host_cnp_dscp: number;
    roce_host_cnp_priority: number;
    roce_host_mtu: number;
    /** PFC on roce_host_priority (false: lossy fabric). */
    roce_host_pfc: boolean;
    /** DCQCN notification (roce_np) and reaction (roce_rp) on roce_host_priority. */
    roce_host_ecn: boolean;
    roce_host_trust: "dscp";
    /** mlnx_qos --pfc vector, e.g. 0,0,0,1,0,0,0,0 (all zero when lossy). */
    roce_host_pfc_vector: string;
    roce_host_global_pause: false;
    /** mlxconfig ROCE_CC_PRIO_MASK_P1/P2: bit per priority with DCQCN. */
    roce_host_cc_prio_mask: number;
    /** ToS for rdma_cm (cma_roce_tos / configfs default_roce_tos) and the verbs tc/1/traffic_class override. */
    roce_host_tos: number;
    roce_host_roce_mode: "RoCE v2";
    roce_host_gid_index: number;
    roce_host_verify_gid: true;
    /** doRoCE ROCE_ACCL lossy tuning (adaptive retransmission, tx window, slow restart) on: lossy fabrics only. */
    roce_host_lossy_tuning: boolean;
    /** mlnx_qos --cable_len (metres), the longest host cable. */
    roce_host_cable_length_m: number;
    /** What /etc/nccl.conf gets on this host. */
}

export interface HostPlan {
    name: string;
    address: string;
    sshUser?: string;
    /** RDMA devices without port suffix. */
    railNics: string[];
    /** Rail netdevs, same order as railNics, when the spec gives them. */
    railNetdevs?: string[];
    /** `switch:port` each rail plugs into, same order as railNics, when the spec gives them (rule C18). */
    railPorts?: string[];
    bootstrapNic: string;
    gpu: { model: string; count: number };
    gidIndex: number;
    ncclEnv: Record<string, string>;
    vars: RoceHostVars;
}

export interface QosPlan {
    mode: "lossless" | "lossy";
    nicModel: NicModel;
    roce: { dscp: number; priority: number };
    cnp: { dscp: number; priority: number };
    /** Full IPv4 ToS byte the hosts send RoCE with: DSCP << 2 | ECT(0). NCCL_IB_TC and rdma_cm default ToS. */
    tos: number;
    pfc: {
        /** Priorities with PFC: exactly [roce.priority] when lossless, [] when lossy (rule C3). */
        priorities: number[];
        /** mlnx_qos --pfc argument, e.g. 0,0,0,1,0,0,0,0. */
        vector: string;
        watchdog: { pollMs: number; detectionMs: number; restorationMs: number; action: "drop" };
    };
    ecn: { minBytes: number; maxBytes: number; maxProbabilityPct: number };
    /** Egress scheduling: RoCE and other traffic share by weight, CNPs strict. */
    ets: { roceWeightPct: number; otherWeightPct: number };
    hostMtu: number;
    hosts: HostPlan[];
    switches: SwitchPlan[];
    /** NCCL variables every host shares (HCA list and socket interface only when all hosts agree). */
    ncclEnv: Record<string, string>;
}

/** ECT(0) codepoint in the two low ToS bits. source: RFC 3168 §5 (ECT(0) = 10); roce.md §1 (106 = 26 << 2 | 2). */
export const ECT0 = 0b10;

/** DSCP → ToS byte as NCCL_IB_TC wants it (the whole traffic_class byte). source: NVIDIA/nccl:src/transport/net_ib/connect.cc (roce.md §3) */
export function tosFor(dscp: number): number {
    return (dscp << 2) | ECT0;
}

/** "0,0,0,1,0,0,0,0" for [3]: the mlnx_qos --pfc vector. source: Mellanox/nic-configuration-operator README (roce.md §2) */
export function pfcVector(priorities: readonly number[]): string {
    return [0, 1, 2, 3, 4, 5, 6, 7].map((p) => (priorities.includes(p) ? 1 : 0)).join(",");
}

// PFC watchdog: Cumulus polls every 100 ms and acts after 3 polls (robustness 3), i.e. 300 ms.
// source: CumulusNetworks/docs:content/cumulus-linux-514/Layer-1-and-Switch-Ports/Quality-of-Service/_index.md
// ("The default polling interval is 100 milliseconds. The default number of polling intervals is 3.")
// SONiC accepts detection 100..5000 ms and restoration 100..60000 ms, both >= POLL_INTERVAL (sonic-pfcwd.yang);
// EOS wants polling <= min(timeout, recovery)/2 (roce.md §4c, L), which 100 <= 150 satisfies. Action drop: rule C11.
export const PFC_WATCHDOG = { pollMs: 100, detectionMs: 300, restorationMs: 300, action: "drop" as const };

// ETS: RoCE TC DWRR 50 %, other traffic TC0 DWRR 50 %, CNP strict. source: CL-RoCE default table (roce.md §1)
export const ETS = { roceWeightPct: 50, otherWeightPct: 50 };

// NVUE's RoCE profile binds its lossless pools to traffic class 3 and keeps RoCE there when the priority moves
// (`nv set qos egress-queue-mapping default-global switch-priority 2 traffic-class 3`); CNPs use TC 6.
// source: CumulusNetworks/docs:content/cumulus-linux-512/Layer-1-and-Switch-Ports/Quality-of-Service/RDMA-over-Converged-Ethernet-RoCE.md
const NVUE_ROCE_TC = 3;
const NVUE_CNP_TC = 6;
const OTHER_TC = 0;

/**
 * Class layout per OS. SONiC and EOS: traffic class = queue = PG = priority, the convention SONiC's own templates
 * use for lossless classes (qos_config.j2: TC 3/4 → PG 3/4 → queue 3/4, pfc priority n → queue n), so a PFC frame
 * for priority n pauses exactly the queue that carries it. NVUE: RoCE stays on TC 3 (see above).
 */
export function classLayout(os: NetworkOs, rocePriority: number, cnpPriority: number): { roce: ClassLayout; cnp: ClassLayout; other: ClassLayout } {
    const at = (priority: number, tc: number): ClassLayout => ({ priority, trafficClass: tc, queue: tc, priorityGroup: tc });
    if (os === "nvue") return { roce: at(rocePriority, NVUE_ROCE_TC), cnp: at(cnpPriority, NVUE_CNP_TC), other: at(0, OTHER_TC) };
    return { roce: at(rocePriority, rocePriority), cnp: at(cnpPriority, cnpPriority), other: at(0, OTHER_TC) };
}

/*
 * NCCL_IB_GID_INDEX. On mlx5 each IP address on a rail netdev adds a RoCE v1 and a RoCE v2 GID after the two
 * link-local ones, so with one IPv4 address the RoCE v2/IPv4 GID is index 3 (doRoCE pins `gix_val=3`,
 * NVIDIA/doroce-linux:doRoCE.sh). It is not guaranteed (an extra IPv6 address or a VLAN shifts it; roce.md §2 "Resolve
 * per host"), and NCCL 2.19 and older default to index 0 rather than auto-selecting (roce.md §3). So the kit pins one
 * index (qos.gidIndex, default 3, per-host override hosts[i].gidIndex) and makes it verified rather than assumed:
 * the roce_host role gets roce_host_gid_index + roce_host_verify_gid and fails the host unless, on every rail,
 * /sys/class/infiniband/<dev>/ports/1/gid_attrs/types/<index> reads "RoCE v2" and .../gids/<index> is the
 * IPv4-mapped address (::ffff:a.b.c.d) of that rail (rule C10).
 */

/** NCCL_IB_HCA value: exact-match (`=`) list of rail devices with port 1. source: roce.md §3 (`=mlx5_0:1,...`) */
export function ncclHcaList(railNics: readonly string[]): string {
    return "=" + railNics.map((r) => (r.includes(":") ? r : `${r}:1`)).join(",");
}

/**
 * Turns a valid RoceSpec into the QoS plan. Throws SpecError (with every field path) when checkRoceSpec finds
 * problems, so no caller plans from an inconsistent spec.
 */
export function planQos(spec: RoceSpec): QosPlan {
    // `pulumi up` and `rdmakit plan` plan the same spec more than once (the plan hub, the component, the CLI); on a
    // fabric of hundreds of switches that is seconds, so equal specs share one plan. Treat the plan as read-only.
    const key = JSON.stringify(spec);
    const hit = planned.get(key);
    if (hit) return hit;
    const plan = planQosOnce(spec, isCleanRoceSpec(key));
    if (planned.size >= 8) planned.delete(planned.keys().next().value!);
    planned.set(key, plan);
    return plan;
}
const planned = new Map<string, QosPlan>();

function planQosOnce(spec: RoceSpec, checked: boolean): QosPlan {
    // a text a spec parse found clean (rememberCleanRoceSpec) is not checked again
    const issues = checked ? [] : checkRoceSpec(spec);
    if (issues.length) throw new SpecError(issues, "invalid cluster.roce");
    const q = spec.qos;
    const lossless = q.mode === "lossless";
    const pfcPriorities = lossless ? [q.rocePriority] : [];
    const tos = tosFor(q.roceDscp);
    // whole metres, rounded up as the switch renderers do: mlnx_qos --cable_len takes an integer; the longest host cable
    let longest = -Infinity;
    for (const s of spec.switches) for (const p of s.hostPorts ?? []) longest = Math.max(longest, s.portOverrides?.[p]?.cableLengthM ?? s.cableLengthM);
    const maxCable = Math.ceil(longest);

    const sharedNccl: Record<string, string> = {
        NCCL_IB_TC: String(tos),
    };

    // Hosts alike in their rails, bootstrap NIC and GID index (every host of a uniform cluster) share one rail list, one
    // netdev list and one NCCL environment, as the plan is read-only (planQos): what reads each host's variables again
    // (the inventory's printer, inventory-yaml.ts) meets a value it has seen by its object, not by its text.
    const alike = new Map<string, { railNics: string[]; railNetdevs?: string[]; ncclEnv: Record<string, string> }>();
    const railsOf = (h: RoceSpec["hosts"][number], gidIndex: number) => {
        const key = JSON.stringify([h.railNics, h.railNetdevs ?? null, h.bootstrapNic, gidIndex]);
        let a = alike.get(key);
        if (!a) {
            a = {
                railNics: h.railNics.map((r) => (r.includes(":") ? r.slice(0, r.indexOf(":")) : r)),
                ...(h.railNetdevs ? { railNetdevs: [...h.railNetdevs] } : {}),
                ncclEnv: {
                    NCCL_IB_HCA: ncclHcaList(h.railNics),
                    NCCL_SOCKET_IFNAME: `=${h.bootstrapNic}`,
                    NCCL_IB_TC: String(tos),
                    NCCL_IB_GID_INDEX: String(gidIndex),
                },
            };
            alike.set(key, a);
        }
        return a;
    };

    const hosts: HostPlan[] = spec.hosts.map((h) => {
        const gidIndex = h.gidIndex ?? q.gidIndex;
        const { railNics, railNetdevs, ncclEnv } = railsOf(h, gidIndex);
        // the variables every host has, then the netdevs first where the spec gives them (the same names in the same
        // order as a literal that starts with a spread of them, which V8 builds store by store: 10 KB and 15 µs a host)
        const common: RoceHostVars = {
            roce_host_rdma_devices: railNics,
            roce_host_bootstrap_nic: h.bootstrapNic,
            // The role sets dscp2prio <dscp>,<priority> explicitly: the NIC default is DSCP/8, which is right only
            // for 24-31 → 3 and 48-55 → 6 (roce.md §2).
            roce_host_dscp: q.roceDscp,
            roce_host_priority: q.rocePriority,
            roce_host_cnp_dscp: q.cnpDscp,
            roce_host_cnp_priority: q.cnpPriority,
            roce_host_mtu: q.mtu,
            roce_host_pfc: lossless,
            // DCQCN needs both ends: NP makes CNPs, RP cuts the rate (rule C7); on in both modes (lossy relies on it).
            roce_host_ecn: true,
            roce_host_trust: "dscp",
            roce_host_pfc_vector: pfcVector(pfcPriorities),
            roce_host_global_pause: false,
            roce_host_cc_prio_mask: 1 << q.rocePriority,
            roce_host_tos: tos,
            roce_host_roce_mode: "RoCE v2",
            roce_host_gid_index: gidIndex,
            roce_host_verify_gid: true,
            // doRoCE sets ROCE_ACCL adaptive retransmission/tx window/slow restart to 1 for lossy fabrics, 0 for lossless.
            roce_host_lossy_tuning: !lossless,
            roce_host_cable_length_m: maxCable,
        };
        const vars: RoceHostVars = railNetdevs ? { roce_host_interfaces: railNetdevs, ...common } : common;
        return {
            name: h.name, address: h.address, ...(h.sshUser ? { sshUser: h.sshUser } : {}),
            railNics, ...(railNetdevs ? { railNetdevs } : {}), ...(h.railPorts ? { railPorts: [...h.railPorts] } : {}), bootstrapNic: h.bootstrapNic, gpu: { ...h.gpu }, gidIndex, ncclEnv, vars,
        };
    });

    // Keys whose value every host shares go into the common environment.
    const ncclEnv: Record<string, string> = { ...sharedNccl };
    for (const key of ["NCCL_IB_HCA", "NCCL_SOCKET_IFNAME", "NCCL_IB_GID_INDEX"]) {
        const first = hosts[0]?.ncclEnv[key];
        if (hosts.length > 0 && hosts.every((h) => h.ncclEnv[key] === first)) ncclEnv[key] = first;
    }

    const uplinksTo = uplinksByPeer(spec);
    const switches: SwitchPlan[] = spec.switches.map((s) => switchPlan(spec, s, uplinksTo));

    return {
        mode: q.mode,
        nicModel: spec.nicModel,
        roce: { dscp: q.roceDscp, priority: q.rocePriority },
        cnp: { dscp: q.cnpDscp, priority: q.cnpPriority },
        tos,
        pfc: { priorities: pfcPriorities, vector: pfcVector(pfcPriorities), watchdog: { ...PFC_WATCHDOG } },
        ecn: { ...q.ecn },
        ets: { ...ETS },
        hostMtu: q.mtu,
        hosts,
        switches,
        ncclEnv,
    };
}

/** The ports of one switch on the RoCE path: its host ports and uplinks, or (a spine) the leaves' uplinks that end on it. */
export function switchPorts(spec: RoceSpec, s: RoceSwitchInput, uplinksTo = uplinksByPeer(spec)): Omit<PortPlan, "headroomBytes">[] {
    const host = (s.hostPorts ?? []).map((p): Omit<PortPlan, "headroomBytes"> => ({
        name: p, kind: "host",
        speedGbps: s.portOverrides?.[p]?.speedGbps ?? s.speedGbps,
        cableLengthM: s.portOverrides?.[p]?.cableLengthM ?? s.cableLengthM,
    }));
    const up = (s.uplinks ?? []).map((u): Omit<PortPlan, "headroomBytes"> => ({
        name: u.port, kind: "uplink", speedGbps: u.speedGbps ?? s.speedGbps, cableLengthM: u.cableLengthM, peer: `${u.peer}:${u.peerPort}`,
    }));
    const down = (uplinksTo.get(s.name) ?? []).map(({ leaf, u }): Omit<PortPlan, "headroomBytes"> => ({
        name: u.peerPort, kind: "downlink", speedGbps: u.speedGbps ?? leaf.speedGbps, cableLengthM: u.cableLengthM, peer: `${leaf.name}:${u.port}`,
    }));
    return [...host, ...up, ...down];
}

/** Every leaf uplink, by the spine it ends on (spec order). */
function uplinksByPeer(spec: RoceSpec): Map<string, Array<{ leaf: RoceSwitchInput; u: NonNullable<RoceSwitchInput["uplinks"]>[number] }>> {
    const m = new Map<string, Array<{ leaf: RoceSwitchInput; u: NonNullable<RoceSwitchInput["uplinks"]>[number] }>>();
    for (const leaf of spec.switches) for (const u of leaf.uplinks ?? []) (m.get(u.peer) ?? m.set(u.peer, []).get(u.peer)!).push({ leaf, u });
    return m;
}

function switchPlan(spec: RoceSpec, s: RoceSwitchInput, uplinksTo: ReturnType<typeof uplinksByPeer>): SwitchPlan {
    const q = spec.qos;
    const model = s.model === undefined ? undefined : SWITCH_CATALOG[s.model];
    const lossless = q.mode === "lossless";
    // the port objects are this call's own (switchPorts makes them): each known headroom is added in place, not copied
    const ports: PortPlan[] = switchPorts(spec, s, uplinksTo);
    for (const p of ports) {
        const h = lossless ? pgHeadroomBytes(model, p.speedGbps, p.cableLengthM) : 0;
        if (h !== undefined) p.headroomBytes = h;
    }
    // one lossless PG per port (rule C3), so the switch reserves one PG's headroom per RoCE port
    const known = ports.every((p) => p.headroomBytes !== undefined);
    const headroom = known ? ports.reduce((n, p) => n + (p.headroomBytes ?? 0), 0) : undefined;
    return {
        name: s.name,
        os: s.os,
        role: s.role ?? "leaf",
        ...(s.model ? { model: s.model } : {}),
        managementAddress: s.managementAddress,
        sshUser: s.sshUser ?? DEFAULT_SWITCH_USER[s.os],
        sshPort: s.sshPort ?? 22,
        hostKey: s.hostKey,
        hostPorts: [...(s.hostPorts ?? [])],
        ports,
        speedGbps: s.speedGbps,
        cableLengthM: s.cableLengthM,
        mtu: q.switchMtu ?? SWITCH_MAX_MTU[s.os],
        ...classLayout(s.os, q.rocePriority, q.cnpPriority),
        buffer: {
            ...(headroom !== undefined ? { headroomBytes: headroom } : {}),
            ...(model?.losslessPoolBytes !== undefined ? { poolBytes: model.losslessPoolBytes, source: model.source } : {}),
        },
        ...(model?.eosQueueKeyword ? { eosQueueKeyword: model.eosQueueKeyword } : {}),
        // SONiC renders and binds pfc_to_pg_map only where asic_type is mellanox or barefoot (qos_config.j2
        // pfc_to_pg_map_supported_asics, roce-operations.md §2); a model the catalog does not know gets it too, since
        // without it a Spectrum switch never pauses a priority other than 3 or 4 (issue 15).
        pfcToPgMap: model === undefined || model.vendor === "mellanox",
    };
}
