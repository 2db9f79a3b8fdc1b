/**
 * `ibstat` (infiniband-diags, from rdma-core or MLNX_OFED/DOCA-OFED: the same program and format) → ports per CA,
 * and `fi_info -p efa` (libfabric) → EFA devices.
 *
 * ibstat (rdma-core infiniband-diags/ibstat.c ca_dump/port_dump; real captures in test/fixtures/health/README.md):
 *   CA 'mlx5_0'
 *   	CA type: MT4129 ... Port 1:
 *   		State: Active | Down | Initializing | Armed      Physical state: LinkUp | Polling | Disabled | ...
 *   		Rate: 400      Link layer: InfiniBand | Ethernet
 * indented with tabs (spaces where a terminal copy turned them), `ibwarn:` debug lines and an `ibpanic:` line where it
 * could not open a device ("stat of IB device 'mlx5_8' failed"), after which it lists no more: on Azure the Accelerated
 * Networking VF (mlx5_an0; Azure/azhpc-images#213; the gpud capture ibstat.39.0.a100.failed.ibpanic is of an Azure VM,
 * its GUIDs start 00155d, the IEEE OUI 00-15-5D of Microsoft that Hyper-V VFs carry, as in azhpc-diagnostics#59, and it
 * stops after eight HDR ports).
 *
 * fi_info (libfabric util/info.c, the default short form):
 *   provider: efa
 *       fabric: efa | efa-direct | EFA-fe80::...     (older libfabric named the fabric by the link-local address)
 *       domain: rdmap16s27-rdm | rdmap16s27-dgrm | efa_0-rdm
 *       version: ...  type: FI_EP_RDM | FI_EP_DGRAM  protocol: FI_PROTO_EFA
 * "fi_getinfo: -61 (No data available)" is libfabric's answer when no EFA device is there.
 *
 * Also read into the same report (rdma-core libibverbs/examples/devinfo.c, print_hca_cap): `ibv_devinfo [-v]`, as
 *   hca_id:	mlx5_0        then, per port, "port:	1", "state:	PORT_ACTIVE (4)", "link_layer:	InfiniBand" and, with -v
 *   only, "active_width:	4X (2)", "active_speed:	25.0 Gbps (32)", "phys_state:	LINK_UP (5)"
 * (ibverbs-utils is installed where infiniband-diags often is not), and ibstatus (parseIbstatus). The other tools
 * people paste for "ibstat" are refused by name (OTHER_TOOLS).
 */
import { boundedLines } from "./text";
import { HealthParseError } from "./types";

export interface IbPort {
    ca: string;
    port: number;
    state?: string;
    physicalState?: string;
    rate?: number;
    linkLayer?: string;
    /** ibstat's "Effective speed" (rdma-core 2026+), in Gb/s */
    effective?: { gbps: number; line: string };
    /** the port's lines, for evidence */
    lines: Record<"state" | "physicalState" | "rate" | "linkLayer", string | undefined>;
}

export interface IbstatReport {
    cas: Array<{ name: string; type?: string; ports: IbPort[] }>;
    /** ibpanic / error lines the tool printed, and the v54+ "ibwarn: ... stat of IB device" line that replaces the panic */
    errors: string[];
    /**
     * where the text stops inside a device: ibstat.c prints a "Port N:" section for each port of a CA and, per port, "State:"
     * first and "Link layer:" last (where built with link layers, as every capture in test/fixtures/health is), so a last
     * CA without ports, or a last port without its State or its Link layer while the ports before have one, was cut short
     */
    cut?: string;
    /** which tool printed it: ibv_devinfo without -v prints no rate and no physical state */
    tool: "ibstat" | "ibv_devinfo" | "ibstatus";
    /** the tool's line saying the kernel lists no RDMA device at all (and no device is listed) */
    noDevice?: string;
}

/**
 * Other tools' outputs that people paste for ibstat, each refused by name (never read as ibstat): `rdma link` (iproute2
 * rdma/link.c link_one_show: "link %s/%u ", then "state %s physical_state %s netdev %s"; before commit b0a688a5, 2019,
 * "0/1: ibp0s9/1: subnet_prefix ... state ACTIVE", as Leon Romanovsky's linux-rdma mails show), `rdma dev` (rdma/dev.c:
 * "%u: " index, the name, "node_type %s"), ibdev2netdev ("mlx5_0 port 1 ==> ib0 (Up)"), `ibstat -l` (the device names
 * alone), `ibstat -p` (port GUIDs).
 * None of them names a port's rate or link layer (nor, for rdma-devices.txt, a PCI function).
 */
const OTHER_TOOLS: Array<[RegExp, string]> = [
    [/^(?:link |\d+\/\d+: )\S+\/\d+:? .*\bstate [A-Z_]+/, "rdma link"],
    [/^(?:\d+: )?\S+: node_type \S+/, "rdma dev"],
    [/^\S+ port \d+ ==> \S+/, "ibdev2netdev"],
    [/^0x[0-9a-f]{16}$/i, "ibstat -p (port GUIDs)"],
    // libibverbs/examples/devinfo.c: "%d HCA%s found:" then the names, for -l
    [/^\d+ HCAs? found:$/, "ibv_devinfo -l (device names only)"],
    [/^[a-z][\w-]*\d$/i, "ibstat -l (device names only)"],
];

export function otherTool(line: string): string | undefined {
    return OTHER_TOOLS.find(([re]) => re.test(line))?.[1];
}

/** A port of `ca` before any of its lines is read (ibstat, ibv_devinfo and ibstatus fill the same fields). */
function emptyPort(ca: string, port: number): IbPort {
    return { ca, port, lines: { state: undefined, physicalState: undefined, rate: undefined, linkLayer: undefined } };
}

// ibstat.c ca_dump / ca_stat: "<node type> '<name>'" heads a device ("CA", "Switch", "Router", "iWARP RNIC", "???":
// node_type_str); `ibstat <ca> <port>` prints "<node type>: '<name>'" and that one port unindented
const CA_HEAD = /^(?:CA|Switch|Router|iWARP RNIC|\?\?\?):? '([^']+)'$/;

export function parseIbstat(text: string): IbstatReport {
    const lines = boundedLines(text);
    const first = lines.map((l) => l.trim()).find((l) => l && !l.startsWith("#"));
    if (first !== undefined && /^(hca_id:\s|No IB devices found$)/.test(first)) return parseDevinfo(lines);
    if (first !== undefined && /^(Infiniband device '[^']+' port \d+ status:|Fatal error:\s+No devices)$/.test(first)) return parseIbstatus(lines);
    const cas: IbstatReport["cas"] = [];
    const errors: string[] = [];
    let port: IbPort | undefined;
    for (const raw of lines) {
        const line = raw.trim();
        // rdma-core v54.0+ (commit 703b52c6e, "ibdiags: Do not panic on ibstat query failure") warns and goes on where
        // older ones panic: "ibwarn: [pid] main: stat of IB device '<name>' failed" (libibmad mad.h IBWARN); other
        // ibwarn lines are debug output
        const warned = /^ibwarn: \[\d+\] \w+: stat of IB device '/.test(line);
        if (!line || line.startsWith("#") || (/^ibwarn:/.test(line) && !warned)) continue;
        if (warned || /^ibpanic:|^ibstat: |^Error/i.test(line)) {
            errors.push(line);
            continue;
        }
        const ca = CA_HEAD.exec(line);
        if (ca) {
            cas.push({ name: ca[1], ports: [] });
            port = undefined;
            continue;
        }
        // a line of dots is a person's elision (leptonai/gpud#752 opens its ibstat paste with "..."): the text is an
        // excerpt, and what was left out cannot be graded
        if (/^(\.{3}|…)$/.test(line)) throw new HealthParseError(`holds a "${line}" line (someone's elision): an excerpt, not ibstat's whole output`);
        const cur = cas[cas.length - 1];
        if (!cur) {
            const other = otherTool(line);
            if (other) throw new HealthParseError(`is ${other} output ("${line.slice(0, 80)}"), not ibstat: the kit reads ibstat (or ibv_devinfo -v)`);
            throw new HealthParseError(`line "${line.slice(0, 120)}" comes before any "CA '<name>'" line: not ibstat output`);
        }
        const p = /^Port (\d+):$/.exec(line);
        if (p) {
            port = emptyPort(cur.name, Number(p[1]));
            cur.ports.push(port);
            continue;
        }
        const kv = /^([A-Za-z][A-Za-z ]*?):\s*(.*)$/.exec(line);
        if (!kv) throw new HealthParseError(`line "${line.slice(0, 120)}" is not a "Key: value" line of ibstat`);
        const [, key, value] = kv;
        if (key === "CA type") cur.type = value;
        if (!port) continue;
        const evidence = `${cur.name} port ${port.port}: ${line}`;
        if (key === "State") [port.state, port.lines.state] = [value, evidence];
        else if (key === "Physical state") [port.physicalState, port.lines.physicalState] = [value, evidence];
        else if (key === "Rate") {
            const r = /^([\d.]+)/.exec(value);
            if (!r) throw new HealthParseError(`"${line}" of ${cur.name} port ${port.port} is not a rate in Gb/s`);
            [port.rate, port.lines.rate] = [Number(r[1]), evidence];
        } else if (key === "Link layer") [port.linkLayer, port.lines.linkLayer] = [value, evidence];
        // rdma-core commit 9a645e432 (2026-06): "Effective speed: %g" (ibv_query_port_speed, in Gb/s: LAG aggregation and
        // PCIe limits counted), printed where the provider supports the verb; kept for a note, Rate stays the link's
        else if (key === "Effective speed") {
            const r = /^([\d.]+)$/.exec(value);
            if (r) port.effective = { gbps: Number(r[1]), line: evidence };
        }
    }
    if (cas.length === 0 && errors.length === 0 && text.trim()) throw new HealthParseError("holds no \"CA '<name>'\" section: not ibstat output");
    // `ibstat -s` prints each device's head and no port (ibstat.c ca_stat: short_format → no_ports): two or more devices
    // and not one port is that form, not a capture cut inside its last device
    if (cas.length >= 2 && cas.every((c) => c.ports.length === 0)) throw new HealthParseError(`is ibstat -s (${cas.length} devices, no "Port N:" section): the kit reads ibstat's port states`);
    // where the kernel lists no RDMA device, libibumad's umad_get_cas_names answers its default name "mthca0"
    // (rdma-core libibumad/umad.c def_ca_name) and ibstat fails to stat it, "No such file or directory"
    // (ckhroulev/apptainer-with-ompi README, "Without IB devices"): no device at all, not a stop before the rest
    const noDevice = cas.length === 0 ? errors.find((e) => /stat of IB device 'mthca0' failed: No such file or directory/.test(e)) : undefined;
    return { cas, errors: noDevice ? [] : errors, cut: cutShort(cas), tool: "ibstat", noDevice };
}

// devinfo.c port_state_str / port_phy_state_str → ibstat's words (ibstat.c port_state_str / port_phy_state_str)
const DEVINFO_STATE: Record<string, string> = { PORT_DOWN: "Down", PORT_INIT: "Initializing", PORT_ARMED: "Armed", PORT_ACTIVE: "Active" };
const DEVINFO_PHYS: Record<string, string> = {
    SLEEP: "Sleep", POLLING: "Polling", DISABLED: "Disabled", "PORT_CONFIGURATION TRAINNING": "PortConfigurationTraining",
    LINK_UP: "LinkUp", LINK_ERROR_RECOVERY: "LinkErrorRecovery", "PHY TEST": "PhyTest",
};

/** ibv_devinfo [-v] → the ibstat report: its per-port state, physical state (-v), link layer, and rate = width × lane speed (-v). */
function parseDevinfo(lines: string[]): IbstatReport {
    const cas: IbstatReport["cas"] = [];
    const errors: string[] = [];
    let port: IbPort | undefined;
    let width: number | undefined;
    let lane: { gbps: number; line: string } | undefined;
    const close = (): void => {
        if (port && width !== undefined && lane) [port.rate, port.lines.rate] = [width * lane.gbps, lane.line];
        [width, lane] = [undefined, undefined];
    };
    for (const raw of lines) {
        const line = raw.trim();
        if (!line || line.startsWith("#")) continue;
        // devinfo.c main: "Failed to get IB devices list", "No IB devices found", "Failed to open device" (stderr, kept by 2>&1)
        if (/^(Failed to |No IB devices found|IB device '[^']*' wasn't found)/.test(line)) {
            errors.push(line);
            continue;
        }
        const hca = /^hca_id:\s*(\S+)$/.exec(line);
        if (hca) {
            close();
            cas.push({ name: hca[1], ports: [] });
            port = undefined;
            continue;
        }
        const cur = cas[cas.length - 1];
        if (!cur) throw new HealthParseError(`line "${line.slice(0, 120)}" comes before any "hca_id:" line: not ibv_devinfo output`);
        const p = /^port:\s*(\d+)$/.exec(line);
        if (p) {
            close();
            port = emptyPort(cur.name, Number(p[1]));
            cur.ports.push(port);
            continue;
        }
        // the device's own lines (fw_ver, vendor_part_id, the -v capability lists) say nothing about a port's link
        const kv = /^(\w+):\s*(.*)$/.exec(line);
        if (!kv || !port) continue;
        const [, key, value] = kv;
        const word = value.replace(/\s*\(\d+\)$/, "");
        const evidence = `${cur.name} port ${port.port}: ${line.replace(/\s+/g, " ")}`;
        if (key === "state") [port.state, port.lines.state] = [DEVINFO_STATE[word] ?? word, evidence];
        else if (key === "phys_state") [port.physicalState, port.lines.physicalState] = [DEVINFO_PHYS[word] ?? word, evidence];
        else if (key === "link_layer") [port.linkLayer, port.lines.linkLayer] = [value, evidence];
        // width_str "1" "4" "8" "12" "2" + "X"; speed_str "2.5 Gbps" ... "200.0 Gbps"
        else if (key === "active_width") width = /^(\d+)X\b/.exec(value) ? Number(/^(\d+)X/.exec(value)![1]) : undefined;
        else if (key === "active_speed") {
            const g = /^([\d.]+) Gbps\b/.exec(value);
            lane = g ? { gbps: Number(g[1]), line: evidence } : undefined;
        }
    }
    close();
    if (cas.length === 0 && errors.length === 0) throw new HealthParseError("holds no \"hca_id:\" section: not ibv_devinfo output");
    const noDevice = cas.length === 0 ? errors.find((e) => /^No IB devices found$/.test(e)) : undefined;
    return { cas, errors: noDevice ? [] : errors, cut: cutShort(cas), tool: "ibv_devinfo", noDevice };
}

/**
 * ibstatus (rdma-core infiniband-diags/scripts/ibstatus, port_status: the port's sysfs files as the kernel writes them,
 * drivers/infiniband/core/sysfs.c):
 *   Infiniband device 'mlx5_0' port 1 status:
 *   	state:		 4: ACTIVE              "%d: %s" (DOWN, INIT, ARMED, ACTIVE)
 *   	phys state:	 5: LinkUp              "%u: %s" (Sleep, Polling, Disabled, PortConfigurationTraining, LinkUp, ...)
 *   	rate:		 200 Gb/sec (4X HDR)    "%d%s Gb/sec (%dX%s)"
 *   	link_layer:	 InfiniBand
 * "Fatal error:  No devices" (its fatal(), where /sys/class/infiniband cannot be entered) is no device at all.
 */
const SYSFS_STATE: Record<string, string> = { DOWN: "Down", INIT: "Initializing", ARMED: "Armed", ACTIVE: "Active" };

function parseIbstatus(lines: string[]): IbstatReport {
    const cas: IbstatReport["cas"] = [];
    const errors: string[] = [];
    let port: IbPort | undefined;
    for (const raw of lines) {
        const line = raw.trim();
        if (!line || line.startsWith("#")) continue;
        if (/^Fatal error:/.test(line)) {
            errors.push(line);
            continue;
        }
        const head = /^Infiniband device '([^']+)' port (\d+) status:$/.exec(line);
        if (head) {
            let ca = cas.find((c) => c.name === head[1]);
            if (!ca) cas.push((ca = { name: head[1], ports: [] }));
            port = emptyPort(ca.name, Number(head[2]));
            ca.ports.push(port);
            continue;
        }
        const kv = /^(default gid|base lid|sm lid|state|phys state|rate|link_layer):\s*(.*)$/.exec(line);
        if (!kv) throw new HealthParseError(`line "${line.slice(0, 120)}" is not ibstatus output ("Infiniband device '<name>' port N status:", then "state:", "phys state:", "rate:", "link_layer:")`);
        if (!port) throw new HealthParseError(`"${line.slice(0, 120)}" comes before any "Infiniband device '<name>' port N status:" line: not ibstatus output`);
        const [, key, value] = kv;
        const evidence = `${port.ca} port ${port.port}: ${line.replace(/\s+/g, " ")}`;
        const word = value.replace(/^\d+:\s*/, "");
        if (key === "state") [port.state, port.lines.state] = [SYSFS_STATE[word] ?? word, evidence];
        else if (key === "phys state") [port.physicalState, port.lines.physicalState] = [word.replace(/ /g, ""), evidence];
        else if (key === "link_layer") [port.linkLayer, port.lines.linkLayer] = [value, evidence];
        else if (key === "rate") {
            const r = /^([\d.]+) Gb\/sec\b/.exec(value);
            if (r) [port.rate, port.lines.rate] = [Number(r[1]), evidence];
        }
    }
    const noDevice = cas.length === 0 ? errors.find((e) => /No devices/.test(e)) : undefined;
    return { cas, errors: noDevice ? [] : errors, cut: cutShort(cas), tool: "ibstatus", noDevice };
}

function cutShort(cas: IbstatReport["cas"]): string | undefined {
    const last = cas[cas.length - 1];
    if (!last) return undefined;
    if (last.ports.length === 0) return `${last.name} has no "Port N:" section`;
    const port = last.ports[last.ports.length - 1];
    if (port.state === undefined) return `${last.name} port ${port.port} has no "State:" line`;
    const layered = cas.flatMap((c) => c.ports).some((p) => p !== port && p.linkLayer !== undefined);
    if (layered && port.linkLayer === undefined) return `${last.name} port ${port.port} ends before its "Link layer:" line`;
    return undefined;
}

export interface FiInfoReport {
    /** EFA device names (the domain without -rdm / -dgrm), each once */
    devices: string[];
    entries: Array<{ provider: string; fabric?: string; domain?: string; type?: string }>;
    errors: string[];
}

// Open MPI's `--tag-output` prefix (`[jobid,rank]<stdout>:`), as `mpirun ... fi_info -p efa` writes every node's
// lines into one text (aws-ia/terraform-aws-eks-blueprints patterns/elastic-fabric-adapter/README.md, the EFA test)
const MPI_TAG = /^\[\d+,\d+\]<std(?:out|err)>:/;

export function parseFiInfo(text: string): FiInfoReport {
    const entries: FiInfoReport["entries"] = [];
    const errors: string[] = [];
    const lines = boundedLines(text);
    // several nodes' answers in one file cannot say how many devices this node has: refused by name, not read as one
    if (lines.some((l) => MPI_TAG.test(l.trim()))) {
        throw new HealthParseError("is fi_info run through mpirun (\"[job,rank]<stdout>:\" tags): several processes' outputs in one file; the kit reads one node's own fi_info -p efa");
    }
    for (const raw of lines) {
        const line = raw.trim();
        if (!line || line.startsWith("# ")) continue;
        // `fi_info --version` (util/info.c: "%s: %s" of argv[0] and PACKAGE_VERSION, "libfabric: %s", "libfabric api: %d.%d"):
        // another command, never "no EFA device"
        if (/^(\S*fi_info|libfabric|libfabric api): \d+\.\d+\S*$/.test(line)) throw new HealthParseError(`is fi_info --version ("${line.slice(0, 60)}"), not fi_info -p efa`);
        // `fi_info -l` (util/info.c print_providers: "<prov>:" then "    version: %d.%d")
        if (/^[a-z][\w;-]*:$/i.test(line) && line !== "fi_info:") throw new HealthParseError(`is fi_info -l (the providers list, "${line.slice(0, 60)}"), not fi_info -p efa: it names no device`);
        if (/^fi_getinfo:|^fi_info:|^libfabric:/.test(line) && !/^fi_info:$/.test(line)) {
            errors.push(line);
            continue;
        }
        if (line === "---" || /^fi_info:$/.test(line)) throw new HealthParseError("is fi_info -v (the verbose YAML form); the kit reads the short form of fi_info -p efa");
        const kv = /^(provider|fabric|domain|version|type|protocol):\s*(.*)$/.exec(line);
        if (!kv) throw new HealthParseError(`line "${line.slice(0, 120)}" is not fi_info output ("provider:", "fabric:", "domain:", "version:", "type:", "protocol:")`);
        if (kv[1] === "provider") entries.push({ provider: kv[2] });
        else if (entries.length === 0) throw new HealthParseError(`"${line}" comes before any "provider:" line: not fi_info output`);
        else (entries[entries.length - 1] as Record<string, string>)[kv[1]] = kv[2];
    }
    const devices = [...new Set(entries.filter((e) => /(^|;)efa$/.test(e.provider) && e.domain).map((e) => (e.domain as string).replace(/-(rdm|dgrm)$/, "")))];
    return { devices, entries, errors };
}
