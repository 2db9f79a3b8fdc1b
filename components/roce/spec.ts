/**
 * The `cluster.roce` section of the cluster spec: existing GPU hosts on RoCEv2 Ethernet, the switches they plug
 * into, and the QoS intent. Schema (zod 4, strict objects) + cross-field checks (`checkRoceSpec`).
 *
 * Defaults are the NVIDIA lossless RoCE plan (../shared/research/roce.md §1): RoCE on DSCP 26 → priority 3 with
 * PFC, CNPs on DSCP 48 → priority 6 strict, ECN on the RoCE queue at 150 KB / 1.5 MB / 100 %.
 */
import { z } from "zod";
import { KEY_MATERIAL, notKeyMaterial, SHORT_MODEL } from "../grammars";
import { NIC_CATALOG, NIC_MODELS, type NicModel } from "../catalog/nics";
import { SWITCH_CATALOG, SWITCH_MODELS } from "../catalog/switches";
import type { SpecIssue } from "../errors";
import { suggest } from "../spec-messages";

export const NETWORK_OS = ["nvue", "sonic", "eos"] as const;
export type { NetworkOs } from "../types";
import type { NetworkOs } from "../types";

// A DNS name (RFC 1123 labels) or a dotted IPv4 address; what SSH and Ansible accept as a host. A name whose last
// label is all digits is not a host name ("a top-level domain name ... cannot be all-numeric", RFC 3696 §2): 192.0.2.300
// is a mistyped address, not a name to resolve.
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HOSTNAME = /^(?=.{1,253}$)(?!(?:.*\.)?\d+$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;
// Inventory/resource names: also used in Pulumi resource names and file names.
const NAME = /^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/;
// RDMA device name as `ibv_devices`/`rdma link` print it, optionally with the port (NCCL_IB_HCA syntax `mlx5_0:1`).
const RDMA_DEVICE = /^[A-Za-z][A-Za-z0-9_]{0,31}(:[1-9]\d?)?$/;
// Linux netdev names are at most 15 characters (IFNAMSIZ 16 with the NUL). source: torvalds/linux:include/uapi/linux/if.h
const NETDEV = /^[A-Za-z0-9_.:-]{1,15}$/;

/** Port names each network OS uses for front-panel ports. */
export const PORT_NAME_PATTERNS: Readonly<Record<NetworkOs, { re: RegExp; example: string }>> = {
    // source: CumulusNetworks/docs:content/cumulus-linux-514/Layer-1-and-Switch-Ports/Quality-of-Service/_index.md (swp1, swp1s0 breakouts)
    nvue: { re: /^swp\d+(s\d+)?$/, example: "swp1, swp1s0" },
    // source: sonic-net/sonic-buildimage:src/sonic-yang-models/yang-models/sonic-port.yang (PORT_LIST name, e.g. Ethernet0)
    sonic: { re: /^Ethernet\d+$/, example: "Ethernet0, Ethernet8" },
    // source: ROCm/gpu-cluster-networking:docs/how-to/roce-network-config.rst (`interface Ethernet2/5/1`)
    eos: { re: /^Ethernet\d+(\/\d+){0,2}$/, example: "Ethernet1, Ethernet2/5/1" },
};

/** Largest L2 MTU each network OS accepts on a port (roce.md §1 MTU row). */
export const SWITCH_MAX_MTU: Readonly<Record<NetworkOs, number>> = {
    nvue: 9216, // source: roce.md §1 "Cumulus 9216"
    sonic: 9216, // source: sonic-net/sonic-buildimage:src/sonic-yang-models/yang-models/sonic-port.yang (mtu range 68..9216)
    eos: 9214, // source: ROCm/gpu-cluster-networking:docs/how-to/roce-network-config.rst (`mtu 9214`); roce.md §1 "Arista max 9214"
};

/** Default SSH login per network OS when a switch gives no `sshUser`. */
export const DEFAULT_SWITCH_USER: Readonly<Record<NetworkOs, string>> = {
    nvue: "cumulus", // source: CumulusNetworks/docs (prompts read `cumulus@switch`)
    sonic: "admin", // source: sonic-net/sonic-buildimage:rules/config (DEFAULT_USERNAME = admin)
    eos: "admin", // source: ROCm/gpu-cluster-networking:docs/how-to/roce-network-config.rst (Arista: ssh, `enable`)
};

/**
 * notKeyMaterial once per distinct short text: a fabric's port names repeat on every switch (swp1 … swp64 on each of
 * 384 leaves, and the uplinks' ports, at 2,048 hosts: ~40,000 checks of a few hundred texts) and every host names the
 * same GPU model. The answer is the text's alone; a long text (where key material would be) is checked each time.
 */
const keyMaterialAnswers = new Map<string, boolean>();
function notKeyMaterialOnce(text: string): boolean {
    if (text.length > 64) return notKeyMaterial(text);
    let clean = keyMaterialAnswers.get(text);
    if (clean === undefined) {
        clean = notKeyMaterial(text);
        if (keyMaterialAnswers.size >= 4096) keyMaterialAnswers.clear();
        keyMaterialAnswers.set(text, clean);
    }
    return clean;
}

const int = (what: string, min: number, max: number) =>
    z.int({ error: `${what} must be a whole number from ${min} to ${max}` })
        .min(min, { error: `${what} must be at least ${min}` })
        .max(max, { error: `${what} must be at most ${max}` });

const address = z.string({ error: "must be a string: a DNS name or an IPv4 address" })
    .regex(new RegExp(`${IPV4.source}|${HOSTNAME.source}`), { error: "must be a DNS name or an IPv4 address (e.g. 10.0.0.11 or gpu01.lab)" });

const name = (what: string) => z.string({ error: `${what} must be a string` })
    .regex(NAME, { error: `${what} must be lower-case letters, digits and '-', 1-63 characters, starting and ending with a letter or digit` });

/** @internal */
export const roceHostSchema = z.strictObject({
    name: name("host name").describe("Inventory name of the GPU host (also the Ansible inventory hostname)."),
    address: address.describe("Address Ansible and SSH use to reach the host (its management/bootstrap address)."),
    sshUser: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, "must be a Linux user name (lower case, digits, _ and -)").optional()
        .describe("SSH login for Ansible and mpirun, the same on every host. @default cluster.ssh.user, else root"),
    railNics: z.array(z.string().regex(RDMA_DEVICE, {
        error: "must be an RDMA device name as `rdma link` / `ibv_devices` print it, e.g. mlx5_0 (optionally with the port, mlx5_0:1)",
    }), { error: "must be a list of RDMA device names" })
        .min(1, { error: "must list at least one rail NIC (e.g. [mlx5_0, mlx5_1, ...])" })
        .describe("The RoCE rail NICs by RDMA device name (mlx5_0 …). NCCL_IB_HCA uses exactly these; the roce_host role finds each netdev under /sys/class/infiniband/<dev>/device/net/."),
    railNetdevs: z.array(z.string().regex(NETDEV, { error: "must be a Linux interface name of at most 15 characters, e.g. ens1f0np0" }))
        .optional()
        .describe("The rails' netdev names, in the order of railNics (as `rdma link` pairs them: `link mlx5_0/1 ... netdev ens1f0np0`). @default resolved on the host from /sys/class/infiniband/<dev>/device/net/"),
    railPorts: z.array(z.string().regex(/^[a-z0-9][a-z0-9-]*:\S+$/, { error: "must be `<leaf switch name>:<port>`, e.g. leaf1:swp1" }))
        .optional()
        .describe("The leaf port each rail plugs into, in the order of railNics (`leaf1:swp1`); `rdmakit fabric check` compares it with LLDP (rule C18). @default not declared (cabling not checked)"),
    bootstrapNic: z.string().regex(NETDEV, { error: "must be a Linux interface name of at most 15 characters, e.g. eno1" })
        .describe("The front-end netdev NCCL bootstraps over (NCCL_SOCKET_IFNAME). Must not be a rail."),
    gpu: z.strictObject({
        model: z.string().regex(SHORT_MODEL, { error: "GPU model must be a short model name (letters, digits, - _ . between), e.g. H100 or H100-80GB" })
            .refine(notKeyMaterialOnce, { error: KEY_MATERIAL }).describe("GPU model, e.g. H100. Eight A100/H100/H200/B200/B300 a host are an HGX board with NVSwitch (Fabric Manager installed, NVSwitch expected by the health gate); name PCIe cards as such (`H100-PCIe`, `H100-NVL`, `H200-NVL`): bridged cards get neither."),
        count: int("GPU count", 1, 16).describe("GPUs in this host."),
    }).describe("GPUs in the host; used to sanity-check the rail count."),
    gidIndex: int("GID index", 0, 255).optional()
        .describe("Per-host override of the RoCEv2/IPv4 GID index. @default cluster.roce.qos.gidIndex"),
});

const cableLength = (what: string) => z.number({ error: `${what} must be a number of metres` })
    .positive({ error: `${what} must be positive` }).max(100000, { error: `${what} must be at most 100000 m` });
const portSpeed = (what: string) => z.number({ error: `${what} must be a number of Gb/s` }).positive({ error: `${what} must be positive` });

/** @internal A link from this switch to a switch of the tier above (leaf → spine); the spine's port comes from it. */
export const roceUplinkSchema = z.strictObject({
    port: z.string().min(1, { error: "port name must not be empty" }).refine(notKeyMaterialOnce, { error: KEY_MATERIAL }).describe("This switch's port that faces the peer."),
    peer: name("peer switch name").describe("Name of the switch at the other end (in cluster.roce.switches)."),
    peerPort: z.string().min(1, { error: "peer port name must not be empty" }).refine(notKeyMaterialOnce, { error: KEY_MATERIAL }).describe("The peer's port at the other end of the cable."),
    cableLengthM: cableLength("uplink cable length").describe("Length of this cable in metres; sizes the headroom of both ends."),
    speedGbps: portSpeed("uplink speed").optional().describe("Speed of the link in Gb/s. @default the switch's speedGbps"),
});

/** @internal Per-port overrides of a host port (e.g. a breakout sub-port at a lower speed, a longer cable). */
export const rocePortOverrideSchema = z.strictObject({
    speedGbps: portSpeed("port speed").optional().describe("Speed of this port in Gb/s (a breakout sub-port, e.g. 100). @default the switch's speedGbps"),
    cableLengthM: cableLength("cable length").optional().describe("Length of this port's cable in metres. @default the switch's cableLengthM"),
});

/** @internal */
export const roceSwitchSchema = z.strictObject({
    name: name("switch name").describe("Switch name; resource and file names derive from it."),
    os: z.enum(NETWORK_OS, { error: `network OS must be one of ${NETWORK_OS.join(", ")} (Cumulus/NVUE, SONiC, Arista EOS)` })
        .describe("Network OS: nvue (Cumulus Linux 5.x), sonic (config_db.json), eos (Arista CLI)."),
    role: z.enum(["leaf", "spine"], { error: "switch role must be leaf (faces GPU hosts) or spine (faces leaves only)" }).default("leaf")
        .describe("leaf: has host ports (and uplinks); spine: its ports are the peer ends of the leaves' uplinks. @default leaf"),
    model: z.string().regex(SHORT_MODEL, { error: "switch model must be a short model name (letters, digits, - _ . between), e.g. SN4700" })
        .refine(notKeyMaterialOnce, { error: KEY_MATERIAL }).optional()
        .describe("Switch model from the catalog (components/catalog/switches.ts), e.g. SN5600; required for eos (its queue keyword depends on the platform). Sizes the headroom check (rule C16)."),
    managementAddress: address.describe("Address the kit SSHes to when it pushes the configuration."),
    sshUser: z.string().regex(/^[A-Za-z_][A-Za-z0-9_.-]{0,31}$/, "must be a user name (letters, digits, _ . -)").optional()
        .describe("SSH login on the switch. @default cumulus (nvue), admin (sonic, eos)"),
    sshPort: int("SSH port", 1, 65535).optional().describe("SSH port. @default 22"),
    hostKey: z.string({ error: "is required: the switch's SSH host key line, so a push never trusts a switch on first contact (ssh-keyscan -t ed25519 <switch>)" })
        .regex(/^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$/, { error: "must be an OpenSSH public host key line (ssh-keyscan -t ed25519 <switch>)" })
        .describe("The switch's SSH host key (`ssh-keyscan -t ed25519 <switch>` prints it); every push verifies it."),
    hostPorts: z.array(z.string().min(1, { error: "port name must not be empty" }).refine(notKeyMaterialOnce, { error: KEY_MATERIAL }), { error: "must be a list of port names" })
        .default([])
        .describe("Front-panel ports that face GPU-host rail NICs (breakout sub-ports by their own names, e.g. swp1s0). Required on a leaf. @default []"),
    portOverrides: z.record(z.string(), rocePortOverrideSchema, { error: "must map port names to { speedGbps?, cableLengthM? }" }).optional()
        .describe("Per-port speed or cable length for host ports that differ from the switch defaults."),
    uplinks: z.array(roceUplinkSchema, { error: "must be a list of uplinks" }).default([])
        .describe("Links to the tier above (leaf → spine). Every port on the RoCE path gets the same lossless QoS, with headroom for its own cable. @default []"),
    speedGbps: portSpeed("port speed")
        .describe("Default port speed in Gb/s (host ports must run at a speed the NIC model supports)."),
    cableLengthM: cableLength("cable length")
        .describe("Default cable length in metres (the longest host cable); sizes the lossless headroom (too short drops before pause takes effect)."),
});

/** @internal */
export const ecnSchema = z.strictObject({
    minBytes: int("ECN minimum threshold (bytes)", 1, 256_000_000).default(150_000)
        .describe("Queue depth where ECN marking starts. @default 150000 (NVIDIA RoCE default)"),
    maxBytes: int("ECN maximum threshold (bytes)", 1, 256_000_000).default(1_500_000)
        .describe("Queue depth where marking reaches maxProbabilityPct. @default 1500000"),
    maxProbabilityPct: int("ECN max marking probability (%)", 1, 100).default(100)
        .describe("Marking probability at maxBytes. @default 100"),
});

/** @internal */
export const qosSchema = z.strictObject({
    mode: z.enum(["lossless", "lossy"], { error: "QoS mode must be lossless (PFC + ECN) or lossy (ECN only, PFC off)" }).default("lossless")
        .describe("lossless: PFC on the RoCE priority plus ECN. lossy: ECN only, PFC off (an explicit choice). @default lossless"),
    roceDscp: int("RoCE DSCP", 0, 63).default(26).describe("DSCP the NICs put on RoCE data. @default 26"),
    rocePriority: int("RoCE priority", 0, 7).default(3).describe("802.1p/switch priority of RoCE; PFC runs on it in lossless mode. @default 3"),
    cnpDscp: int("CNP DSCP", 0, 63).default(48).describe("DSCP of congestion notification packets. @default 48"),
    cnpPriority: int("CNP priority", 0, 7).default(6).describe("Priority of CNPs, scheduled strict, never PFC. @default 6"),
    ecn: ecnSchema.default({ minBytes: 150_000, maxBytes: 1_500_000, maxProbabilityPct: 100 })
        .describe("ECN marking on the RoCE queue (kmin/kmax/pmax)."),
    mtu: int("host MTU", 4200, 9216).default(9000)
        .describe("Host rail netdev MTU. At least 4200 so RoCE runs with active_mtu 4096. @default 9000"),
    switchMtu: int("switch MTU", 4200, 9216).optional()
        .describe("Switch port MTU. @default the OS maximum (9216 NVUE/SONiC, 9214 EOS)"),
    gidIndex: int("GID index", 0, 255).default(3)
        .describe("RoCEv2 GID index with the rail's IPv4 address (NCCL_IB_GID_INDEX); the roce_host role verifies it on every rail. @default 3"),
});

/** @internal */
export const roceSpecSchema = z.strictObject({
    nicModel: z.enum(NIC_MODELS as [NicModel, ...NicModel[]], { error: `NIC model must be one of ${NIC_MODELS.join(", ")}` })
        .describe("RDMA NIC model of the rails (catalog: components/catalog/nics.ts)."),
    hosts: z.array(roceHostSchema, { error: "must be a list of hosts" }).min(1, { error: "must list at least one GPU host" })
        .describe("Existing bare-metal GPU hosts."),
    switches: z.array(roceSwitchSchema, { error: "must be a list of switches" }).min(1, { error: "must list at least one switch" })
        .describe("Switches on the RoCE path: leaves (host ports and uplinks) and spines."),
    qos: qosSchema.default(() => qosSchema.parse({})).describe("QoS intent; the defaults are NVIDIA's lossless RoCE plan."),
}).describe("Bare-metal RoCEv2 fabric: hosts, switches and one QoS plan.");

export type { RoceSpec } from "../spec-types";
import type { RoceSpec } from "../spec-types";
/** What a user may write (defaults not yet applied). */
export type { RoceSpecInput } from "../types";
export type { RoceHostInput as RoceHost, RoceSwitchInput as RoceSwitch } from "../types";

/** `cluster.roce.hosts[2].railNics[0]` from a zod path. */
export function fieldPath(base: string, path: readonly PropertyKey[]): string {
    let out = base;
    for (const p of path) out += typeof p === "number" ? `[${p}]` : `.${String(p)}`;
    return out;
}

/**
 * Parses and checks a `cluster.roce` section: schema issues first; when the schema passes, the cross-field checks.
 * Every issue carries the field path, so the user fixes them all in one go.
 */
export function parseRoceSpec(input: unknown, base = "cluster.roce"): { spec?: RoceSpec; issues: SpecIssue[] } {
    const parsed = roceSpecSchema.safeParse(input, { reportInput: true });
    if (!parsed.success) {
        const issues = parsed.error.issues.map((i): SpecIssue => {
            const unknownKeys = i.code === "unrecognized_keys" ? (i as { keys: string[] }).keys : undefined;
            return {
                path: fieldPath(base, i.path),
                message: unknownKeys ? `unknown field${unknownKeys.length > 1 ? "s" : ""} ${unknownKeys.join(", ")}; check the spelling` : i.message,
                value: unknownKeys || (i as { input?: unknown }).input === undefined ? undefined : (i as { input?: unknown }).input,
            };
        });
        return { issues };
    }
    const issues = [...checkRoceSpec(parsed.data, base), ...roceOsIssues(parsed.data, base)];
    return issues.length ? { spec: parsed.data, issues } : { spec: parsed.data, issues: [] };
}

/**
 * Each value that occurs more than once, with the indexes of its first two occurrences, in the order of the first
 * occurrences. A host's few rails are compared pairwise; a long list (2,048 hosts' names) goes through one map of first
 * indexes, and only a repeated value gets a pair.
 */
function duplicates<T>(items: readonly T[]): ReadonlyMap<T, [number, number]> {
    if (items.length <= 16) {
        let few: Map<T, [number, number]> | undefined;
        for (let i = 0; i < items.length; i++) {
            if (few?.has(items[i])) continue;
            for (let j = i + 1; j < items.length; j++) {
                if (Object.is(items[i], items[j]) || items[i] === items[j]) { (few ??= new Map()).set(items[i], [i, j]); break; }
            }
        }
        return few ?? NO_DUPLICATES;
    }
    const out = new Map<T, [number, number]>();
    const first = new Map<T, number>();
    items.forEach((v, i) => {
        const f = first.get(v);
        if (f === undefined) first.set(v, i);
        else if (!out.has(v)) out.set(v, [f, i]);
    });
    // `out` is in the order of the second occurrences
    return out.size > 1 ? new Map([...out].sort((a, b) => a[1][0] - b[1][0])) : out;
}
const NO_DUPLICATES: ReadonlyMap<never, [number, number]> = new Map<never, [number, number]>();

/**
 * What a switch OS cannot do with the plan (run where a spec is parsed: the CLI, the component, `rdmakit plan`).
 * NVUE keeps its lossless traffic pool on switch priority 3 (CL 5.12 RoCE page: "Switch priority 3 allocated to RoCE
 * lossless traffic pool"); how to move `qos traffic-pool roce-lossless switch-priority` with a remap is not in the docs
 * read (CL-RoCE documents only the lossy pools for a remap, roce-operations.md §3). Until it is, a lossless RoCE
 * priority other than 3 on NVUE would be paused by PFC without lossless buffers: refused.
 */
export function roceOsIssues(spec: RoceSpec, base = "cluster.roce"): SpecIssue[] {
    const q = spec.qos;
    const nvue = spec.switches.findIndex((s) => s.os === "nvue");
    if (nvue < 0 || q.mode !== "lossless" || q.rocePriority === 3) return [];
    return [{
        path: `${base}.qos.rocePriority`, value: q.rocePriority,
        message: `switches[${nvue}] (${spec.switches[nvue].name}) runs NVUE, whose lossless traffic pool stays on switch priority 3; a lossless RoCE priority ${q.rocePriority} would get PFC without lossless buffers`,
        allowed: "3 while an NVUE switch is in a lossless fabric (or qos.mode: lossy)",
    }];
}

/**
 * The JSON texts of the last few `cluster.roce` sections a spec parse found clean with checkRoceSpec: planQos plans
 * such a text without checking it again (at 2,048 hosts the checks take ~25 ms; a plan runs them in the parse and
 * would again in planQos). The text is what planQos's memo keys its plans by, so a spec equal to it in JSON is treated
 * the same either way.
 */
const cleanRoceTexts: string[] = [];
export function rememberCleanRoceSpec(text: string): void {
    if (cleanRoceTexts.includes(text)) return;
    if (cleanRoceTexts.length >= 4) cleanRoceTexts.shift();
    cleanRoceTexts.push(text);
}
export const isCleanRoceSpec = (text: string): boolean => cleanRoceTexts.includes(text);

/**
 * Cross-field checks the schema cannot express. Also re-checks ranges, because code may build a RoceSpec without
 * the schema (the component accepts a typed spec). Paths name the field, e.g. `cluster.roce.switches[1].os`.
 */
export function checkRoceSpec(spec: RoceSpec, base = "cluster.roce"): SpecIssue[] {
    const issues: SpecIssue[] = [];
    const q = spec.qos;
    const add = (path: string, message: string, value?: unknown, allowed?: string) =>
        issues.push({ path: `${base}.${path}`, message, value, allowed });

    for (const [field, v] of [["roceDscp", q.roceDscp], ["cnpDscp", q.cnpDscp]] as const) {
        if (!Number.isInteger(v) || v < 0 || v > 63) add(`qos.${field}`, "DSCP is a 6-bit field", v, "an integer 0..63");
    }
    for (const [field, v] of [["rocePriority", q.rocePriority], ["cnpPriority", q.cnpPriority]] as const) {
        if (!Number.isInteger(v) || v < 0 || v > 7) add(`qos.${field}`, "802.1p priority is a 3-bit field", v, "an integer 0..7");
        // Priority 0 is where every unmarked packet lands (the default class); RoCE or CNPs there share its queue.
        else if (v === 0) add(`qos.${field}`, "priority 0 carries all other traffic; RoCE and CNPs need their own class", v, "1..7");
    }
    if (q.roceDscp === q.cnpDscp) add("qos.cnpDscp", `the same DSCP as qos.roceDscp: CNPs would share the RoCE class instead of the strict CNP class`, q.cnpDscp, `any DSCP other than ${q.roceDscp}`);
    if (q.rocePriority === q.cnpPriority) add("qos.cnpPriority", `priority used twice (also qos.rocePriority): CNPs must not be paused by PFC on the RoCE priority`, q.cnpPriority, `any priority 1..7 other than ${q.rocePriority}`);
    if (q.ecn.maxBytes < q.ecn.minBytes) add("qos.ecn.maxBytes", `must be at least qos.ecn.minBytes (${q.ecn.minBytes})`, q.ecn.maxBytes, `>= ${q.ecn.minBytes}`);
    if (!Number.isInteger(q.mtu) || q.mtu < 4200 || q.mtu > 9216) add("qos.mtu", "host MTU must allow RoCE active_mtu 4096 (4200 is the documented minimum)", q.mtu, "4200..9216");
    if (q.switchMtu !== undefined && q.switchMtu < q.mtu) add("qos.switchMtu", `switch MTU below the host MTU (${q.mtu}) drops full-size frames silently (rule C9)`, q.switchMtu, `>= ${q.mtu}`);

    // Hosts
    const railPortOwner = new Map<string, string>();
    // a name given twice is refused below; its rail ports are read against the first switch of that name
    const switchByName = new Map<string, RoceSpec["switches"][number]>();
    for (const sw of spec.switches) if (!switchByName.has(sw.name)) switchByName.set(sw.name, sw);
    // a switch name no switch has is one mistake however many rail ports name it: told once, at the first
    const unknownSwitches = new Map<string, { at: string; rp: string; more: number }>();
    // each switch's host ports as a set, made when a rail port first names the switch (a leaf has 64)
    const hostPortSets = new Map<string, Set<string>>();
    const isHostPort = (sw: RoceSpec["switches"][number], port: string) => {
        let ports = hostPortSets.get(sw.name);
        if (!ports) hostPortSets.set(sw.name, (ports = new Set(sw.hostPorts ?? [])));
        return ports.has(port);
    };
    for (const [n, idx] of duplicates(spec.hosts.map((h) => h.name))) add(`hosts[${idx[1]}].name`, `duplicate host name (also hosts[${idx[0]}])`, n, "unique names");
    for (const [a, idx] of duplicates(spec.hosts.map((h) => h.address))) add(`hosts[${idx[1]}].address`, `duplicate host address (also hosts[${idx[0]}])`, a, "one address per host");
    spec.hosts.forEach((h, i) => {
        const devs = h.railNics.map((r) => r.split(":")[0]);
        for (const [d, idx] of duplicates(devs)) add(`hosts[${i}].railNics[${idx[1]}]`, `rail NIC listed twice (also railNics[${idx[0]}])`, d, "each RDMA device once");
        if (h.railNics.length > h.gpu.count) {
            add(`hosts[${i}].railNics`, `${h.railNics.length} rails for ${h.gpu.count} GPUs: NCCL pairs each GPU with its nearest rail, extra rails stay idle`, h.railNics.length, `at most ${h.gpu.count}`);
        } else if (h.gpu.count % h.railNics.length !== 0) {
            add(`hosts[${i}].railNics`, `${h.railNics.length} rails do not divide ${h.gpu.count} GPUs evenly, so some rails carry more GPUs' traffic than others`, h.railNics.length, `a divisor of ${h.gpu.count} (e.g. ${h.gpu.count})`);
        }
        if (h.railNetdevs) {
            if (h.railNetdevs.length !== h.railNics.length) add(`hosts[${i}].railNetdevs`, `lists ${h.railNetdevs.length} netdevs for ${h.railNics.length} rail NICs; give one per rail, in the same order`, h.railNetdevs.length, String(h.railNics.length));
            for (const [n, idx] of duplicates(h.railNetdevs)) add(`hosts[${i}].railNetdevs[${idx[1]}]`, `netdev listed twice (also railNetdevs[${idx[0]}])`, n, "each netdev once");
            if (h.railNetdevs.includes(h.bootstrapNic)) add(`hosts[${i}].bootstrapNic`, "the bootstrap NIC must not be a rail (NCCL_SOCKET_IFNAME is the front-end network, rule C13)", h.bootstrapNic, "a non-rail netdev, e.g. eno1");
        }
        if (h.railPorts) {
            if (h.railPorts.length !== h.railNics.length) add(`hosts[${i}].railPorts`, `lists ${h.railPorts.length} ports for ${h.railNics.length} rail NICs; give one per rail, in the same order`, h.railPorts.length, String(h.railNics.length));
            h.railPorts.forEach((rp, j) => {
                const [sw, port] = [rp.slice(0, rp.indexOf(":")), rp.slice(rp.indexOf(":") + 1)];
                const target = switchByName.get(sw);
                const unknown = target ? undefined : unknownSwitches.get(sw);
                if (unknown) unknown.more++;
                else if (!target) unknownSwitches.set(sw, { at: `hosts[${i}].railPorts[${j}]`, rp, more: 0 });
                else if (!isHostPort(target, port)) add(`hosts[${i}].railPorts[${j}]`, `${port} is not one of ${sw}'s hostPorts`, rp, (target.hostPorts ?? []).map((p) => `${sw}:${p}`).slice(0, 8).join(", ") || "(none)");
                const seen = railPortOwner.get(rp);
                if (seen) add(`hosts[${i}].railPorts[${j}]`, `${rp} is already the port of ${seen}`, rp, "one rail per switch port");
                else railPortOwner.set(rp, `${h.name} rail ${j}`);
            });
        }
        if (devs.includes(h.bootstrapNic)) add(`hosts[${i}].bootstrapNic`, "the bootstrap NIC must not be a rail (NCCL_SOCKET_IFNAME is the front-end network, rule C13)", h.bootstrapNic, "a non-rail netdev, e.g. eno1");
    });

    const leaves = [...new Set(spec.switches.filter((s) => (s.role ?? "leaf") === "leaf").map((s) => s.name))];
    for (const [sw, { at, rp, more }] of unknownSwitches) {
        const others = more > 0 ? ` (and ${more} more rail port${more === 1 ? "" : "s"} name ${sw})` : "";
        add(at, `no switch of that name in cluster.roce.switches${others}${suggest(sw, leaves)}`, rp, leaves.join(", "));
    }

    // Switches
    const nic = NIC_CATALOG[spec.nicModel];
    for (const [n, idx] of duplicates(spec.switches.map((s) => s.name))) add(`switches[${idx[1]}].name`, `duplicate switch name (also switches[${idx[0]}])`, n, "unique names");
    for (const [a, idx] of duplicates(spec.switches.map((s) => s.managementAddress))) add(`switches[${idx[1]}].managementAddress`, `duplicate management address (also switches[${idx[0]}])`, a, "one address per switch");
    const byName = new Map(spec.switches.map((s, i) => [s.name, { s, i }]));
    // every port a spine gets from the leaves' uplinks, to find a spine port cabled twice
    const peerEnds = new Map<string, string>();
    spec.switches.forEach((s, i) => {
        if (!(NETWORK_OS as readonly string[]).includes(s.os)) { add(`switches[${i}].os`, "unknown network OS", s.os, NETWORK_OS.join(", ")); return; }
        const role = s.role ?? "leaf";
        if (!s.hostKey) add(`switches[${i}].hostKey`, "is required: every push verifies the switch's SSH host key, so it never trusts a switch on first contact", s.hostKey, `the line \`ssh-keyscan -t ed25519 ${s.managementAddress}\` prints`);
        const model = s.model === undefined ? undefined : SWITCH_CATALOG[s.model];
        if (s.model !== undefined && !model) add(`switches[${i}].model`, "not a switch model the catalog knows (components/catalog/switches.ts)", s.model, SWITCH_MODELS.join(", "));
        if (s.os === "eos" && !model?.eosQueueKeyword) add(`switches[${i}].model`, "an eos switch needs its model: Strata platforms take uc-tx-queue, Sand platforms tx-queue", s.model, SWITCH_MODELS.filter((m) => SWITCH_CATALOG[m].eosQueueKeyword).join(", "));
        const hostPorts = s.hostPorts ?? [];
        if (role === "leaf" && hostPorts.length === 0) add(`switches[${i}].hostPorts`, "a leaf must list at least one port that faces a GPU host", hostPorts, "one or more port names");
        if (role === "spine" && hostPorts.length > 0) add(`switches[${i}].hostPorts`, "a spine faces leaves only; GPU hosts plug into leaves", hostPorts, "[] (the spine's ports come from the leaves' uplinks)");
        if (role === "spine" && (s.uplinks ?? []).length > 0) add(`switches[${i}].uplinks`, "the fabric has two tiers: a spine has no uplinks (list the link on the leaf, with this spine as peer)", s.uplinks!.length, "[]");
        const pat = PORT_NAME_PATTERNS[s.os];
        hostPorts.forEach((p, j) => {
            if (!pat.re.test(p)) add(`switches[${i}].hostPorts[${j}]`, `not a ${s.os} port name`, p, pat.example);
        });
        const speeds = (v: number, path: string) => {
            if (nic && !nic.ethernetSpeedsGbps.includes(v)) add(path, `${spec.nicModel} does not run at this speed`, v, nic.ethernetSpeedsGbps.join(", ") + " Gb/s");
        };
        if (role === "leaf") speeds(s.speedGbps, `switches[${i}].speedGbps`);
        for (const [p, o] of Object.entries(s.portOverrides ?? {})) {
            if (!hostPorts.includes(p)) add(`switches[${i}].portOverrides.${p}`, "not one of this switch's hostPorts", p, hostPorts.join(", ") || "(none)");
            else if (o.speedGbps !== undefined) speeds(o.speedGbps, `switches[${i}].portOverrides.${p}.speedGbps`);
        }
        const all = [...hostPorts, ...(s.uplinks ?? []).map((u) => u.port)];
        for (const [p, idx] of duplicates(all)) {
            const at = idx[1] < hostPorts.length ? `hostPorts[${idx[1]}]` : `uplinks[${idx[1] - hostPorts.length}].port`;
            add(`switches[${i}].${at}`, "port listed twice on this switch (host ports and uplinks together)", p, "each port once");
        }
        (s.uplinks ?? []).forEach((u, j) => {
            const at = `switches[${i}].uplinks[${j}]`;
            if (!pat.re.test(u.port)) add(`${at}.port`, `not a ${s.os} port name`, u.port, pat.example);
            const peer = byName.get(u.peer);
            if (!peer) { add(`${at}.peer`, `no switch of that name in cluster.roce.switches${suggest(u.peer, [...byName.keys()])}`, u.peer, [...byName.keys()].join(", ")); return; }
            if ((peer.s.role ?? "leaf") !== "spine") add(`${at}.peer`, `uplinks go to a spine; ${u.peer} is a ${peer.s.role ?? "leaf"}`, u.peer, "a switch with role: spine");
            const ppat = PORT_NAME_PATTERNS[peer.s.os];
            if (ppat && !ppat.re.test(u.peerPort)) add(`${at}.peerPort`, `not a ${peer.s.os} port name (switch ${u.peer} runs ${peer.s.os})`, u.peerPort, ppat.example);
            const end = `${u.peer}:${u.peerPort}`;
            if (peerEnds.has(end)) add(`${at}.peerPort`, `${end} is already cabled to ${peerEnds.get(end)}`, u.peerPort, "one cable per port");
            else peerEnds.set(end, `${s.name}:${u.port}`);
        });
        const swMtu = q.switchMtu ?? SWITCH_MAX_MTU[s.os];
        if (swMtu > SWITCH_MAX_MTU[s.os]) add("qos.switchMtu", `switch ${s.name} runs ${s.os}, whose ports take at most ${SWITCH_MAX_MTU[s.os]}`, swMtu, `<= ${SWITCH_MAX_MTU[s.os]}`);
    });
    const peers = new Set(spec.switches.flatMap((s) => (s.uplinks ?? []).map((u) => u.peer)));
    spec.switches.forEach((s, i) => {
        if ((s.role ?? "leaf") === "spine" && !peers.has(s.name)) add(`switches[${i}]`, "a spine no leaf uplink points at carries no RoCE", s.name, "list the leaf → spine links under the leaves' uplinks");
    });
    const rails = spec.hosts.reduce((n, h) => n + h.railNics.length, 0);
    const ports = spec.switches.reduce((n, s) => n + (s.hostPorts ?? []).length, 0);
    if (ports < rails) add("switches", `${rails} rail NICs but only ${ports} host-facing switch ports; every rail must plug into a listed port to get the RoCE QoS`, ports, `>= ${rails} hostPorts in total`);
    return issues;
}
