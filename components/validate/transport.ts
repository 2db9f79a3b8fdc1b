/**
 * Pure scan of NCCL debug lines for the network transport actually used, with line numbers as evidence.
 * Patterns (research: ../shared/research/aws-efa.md §6, azure-ib.md §6, ansible-stack.md §2-3):
 *  - `Using network IB` / `NET/IB : Using [0]mlx5_0:1/IB` / `via NET/IB/0/GDRDMA`
 *    (source: NVIDIA/nccl src/init.cc, src/transport/net_ib, src/transport/net.cc)
 *  - `NET/OFI Selected Provider is efa`, `Using network AWS Libfabric` (plugin <= 1.12) / `Libfabric` (>= 1.13),
 *    `via NET/AWS Libfabric/0/GDRDMA` (source: aws/aws-ofi-nccl src/nccl_ofi_net.cpp, nccl_ofi_interface_nvidia.cpp)
 *  - bad: `Using network Socket`, `via NET/Socket`, `NET/Plugin : No plugin found (libnccl-net.so)`,
 *    libfabric `Failed to register CUDA buffer with the EFA device` (source: aws/aws-k8s-tester#473)
 */
import type { EvidenceSet, LineText, TransportEvidence } from "./types";

const KEEP = 5;
/** WARN lines kept for finding the one before a failure: a bound on what an untrusted log can make us hold. */
const MAX_WARN_LINES = 2000;

function set(): EvidenceSet {
    return { count: 0, lines: [] };
}

function add(s: EvidenceSet, line: number, text: string): void {
    s.count++;
    if (s.lines.length < KEEP) s.lines.push({ line, text: text.trim() });
}

const DEBUG = /\bNCCL (?:INFO|WARN|TRACE)\b/;
const USING_NETWORK = /NCCL INFO Using network (.+?)\s*$/;
const OFI_PROVIDER = /NET\/OFI Selected [Pp]rovider is ([^\s,(]+)/;
// `Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA`, older `Ring 00 : 3 -> 10 [send] via NET/IB/0/GDRDMA`; HPC-X's
// nccl-rdma-sharp-plugins names its net `NCCL RDMA Plugin v8` (`via NET/NCCL RDMA Plugin v8/0/GDRDMA`, IB verbs through
// IBext: Mellanox/nccl-rdma-sharp-plugins src/p2p_plugin.c; NVIDIA/nccl-tests#319)
const RDMA_PLUGIN = "NCCL RDMA Plugin v\\d+";
const NET_CHANNEL = new RegExp(`\\bvia NET\\/(${RDMA_PLUGIN}|[^/\\s]+(?: Libfabric)?)\\/\\S*`);
/** Net names that are NCCL's IB verbs transport: `IB`, `IBext_v8` (SHARP plugin), `NCCL RDMA Plugin v8` (HPC-X). */
export const IB_NET = new RegExp(`^(?:IB|${RDMA_PLUGIN}$)`, "i");
const IB_CHANNEL_DEVICE = new RegExp(`via NET\\/(?:IB[^/\\s]*|${RDMA_PLUGIN})\\/(\\d+)`);
const GDR_ENABLED = /GPU Direct RDMA Enabled/;
// source: NVIDIA/nccl src/plugin/net.cc prints these when no external net plugin could be loaded.
const PLUGIN_MISSING = /NET\/Plugin ?: ?(?:No plugin found|Could not find:? libnccl-net|Plugin load returned|.*cannot open shared object file)|Failed to initialize any NET plugin|NET\/Plugin: Using internal network plugin/;
const CUDA_REGISTER = /Failed to register CUDA buffer/;
// `host:pid:tid [dev] NCCL INFO`, `host:pid:tid [dev] file.cc:123 NCCL WARN` (source: NVIDIA/nccl src/debug.cc: `%s:%d:%d `,
// then `[%d] NCCL INFO ` or `[%d] %s:%d NCCL WARN `)
const NCCL_PREFIX = /([A-Za-z0-9][\w.-]*):\d+:\d+ \[\d+\] (?:\S+:\d+ )?NCCL (?:INFO|WARN|TRACE)/;
// NCCL >= 2.27 names the network it gives the communicator: `Assigned NET plugin Socket to comm` (src/plugin/net.cc; v2.27.3-1
// :174 is its first tag, `git grep` finds none at v2.26.6-1)
const ASSIGNED_NET = /NCCL INFO Assigned NET plugin (.+?) to comm\s*$/;
// Why GPUDirect RDMA is off: `NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)` (NCCL <= 2.18, no
// nvidia_peermem), `NET/IB : GPU Direct RDMA Disabled for HCA 0 'mlx5_0'` (2.19+), `GPU Direct RDMA Disabled for GPU
// 1b000 / HCA 0 (distance 5 > 4)` (src/transport/net_ib.cc, src/graph/paths.cc ncclTopoCheckGdr)
const GDR_DISABLED = /GPU Direct RDMA Disabled for /;
// GPUDirect turned off on purpose: `NCCL_NET_GDR_LEVEL set by environment to LOC` (LOC: no GPU-NIC path qualifies;
// NVIDIA/nccl src/graph/paths.cc ncclGetLevel prints the path name, the old numbering `0` means LOC too), and
// aws-ofi-nccl's `NET/OFI Could not disable CUDA API usage for HMEM, disabling GDR` (src/nccl_ofi_ofiutils.cpp)
const GDR_FORCED_OFF = /NCCL_NET_GDR_LEVEL set by environment to (?:LOC|0)\b|NET\/OFI .*disabling GDR/;
// `ncclCommInitRank comm 0x.. rank 13 nranks 16 cudaDev 5 ...` (src/init.cc); older `comm 0x.. rank 0 nranks 32 ...`
const NRANKS = /\brank \d+ nranks (\d+)\b/;
// `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE [RO]; OOB eth0:...` (src/transport/net_ib.cc, ncclIbInit: `NET/IB : Using%s
// %s; OOB %s:%s`). NCCL 2.20-2.23 (and HPC-X's IBext plugin built from that code) print a NIC whose ports they merged as
// ` [%d]={[%d] %s:%d/%s, [%d] %s:%d/%s}` (outer: the net device, inner: the physical ones), and a lone device by its
// physical index (` [%d]%s:%d/%s`, ibDev), so the net device a channel names (`via NET/IB/<d>`) is the entry's position
// in the list (NVIDIA/nccl v2.21.5-1 src/transport/net_ib.cc:517-536; v2.19 and v2.24+ print the position itself, one
// device per entry: v2.28.3-1 :789). Real merged line: NVIDIA/nccl-tests#373 (test/nccl-captures-r7.test.ts).
const IB_DEVICES = /NET\/IB ?: Using ([^;]{1,4000})/;
const IB_ENTRY = /\[(\d+)\]=\{([^}]{0,2000})\}|\[(\d+)\]([^\s;={,][^\s;,]*)/g;
const IB_MEMBER = /\[\d+\] ?([^\s,;{}]+)/g;
// `NET/IB : Made virtual device [1] name=mlx5_0+mlx5_1 speed=... ndevs=2`: a device index past the physical list
// (NVIDIA/nccl src/transport/net_ib.cc ncclIbMakeVDeviceInternal, `*d = ncclNMergedIbDevs++`)
const IB_VIRTUAL = /NET\/IB ?: Made virtual device \[(\d+)\] name=(\S+)/;
// intra-node paths: `via P2P/IPC`, `via P2P/CUMEM`, `via P2P/direct pointer`, `via SHM/direct/direct` (src/transport/p2p.cc,
// shm.cc) and NVLink SHARP's `Connected NVLS tree` (v2.21.5-1 src/init.cc:1286, v2.28.3-1 src/transport/nvls.cc:214). Not any
// line naming NVLS: `NVLS multicast support is not available on dev 0` (nvls.cc:200) and aws-ofi-nccl's `NET/OFI Setting
// NCCL_NVLS_CHUNKSIZE to 512KiB` (test/fixtures/nccl-ref/06-*) are printed on every node and carry no data
const LOCAL_CHANNEL = /\bvia (?:P2P|SHM)\/|\bConnected NVLS tree\b/;

/** Scans raw log lines (launcher prefixes allowed) for transport evidence. */
export function scanTransport(lines: string[]): TransportEvidence {
    const ev: TransportEvidence = {
        ncclDebugLines: 0, networks: [], ofiProviders: [], ib: set(), ofi: set(), netChannels: set(), gdr: set(),
        netChannelsWithoutGdr: set(), socket: set(), pluginMissing: set(), cudaRegisterFailed: set(), warnings: set(),
        ncclHosts: [], ncclRanks: null, ibDevices: [], ibDeviceByIndex: {}, ibVirtualDevices: {}, ibChannelDevices: {}, netChannelTransports: {}, localChannels: set(), gdrDisabled: set(), warnLines: [],
    };
    // membership by Set, order by the arrays: a log of 2,048 hosts x 100 debug lines is 200k lookups (linear, not x hosts)
    const hosts = new Set<string>(), devices = new Set<string>(), networks = new Set<string>(), providers = new Set<string>();
    const once = (seen: Set<string>, list: string[], v: string): void => {
        if (!seen.has(v)) {
            seen.add(v);
            list.push(v);
        }
    };
    for (let i = 0; i < lines.length; i++) {
        const raw = lines[i];
        const lineNo = i + 1;
        // libfabric prints its own warnings (not NCCL lines)
        if (CUDA_REGISTER.test(raw)) add(ev.cudaRegisterFailed, lineNo, raw);
        if (!DEBUG.test(raw)) continue;
        ev.ncclDebugLines++;
        const host = raw.match(NCCL_PREFIX);
        if (host) once(hosts, ev.ncclHosts, host[1]);
        const text = raw.slice(raw.search(DEBUG));
        const nranks = text.match(NRANKS);
        if (nranks) ev.ncclRanks = Math.max(ev.ncclRanks ?? 0, Number(nranks[1]));
        const devs = text.match(IB_DEVICES);
        if (devs) {
            let position = 0;
            for (const d of devs[1].matchAll(IB_ENTRY)) {
                if (d[2] !== undefined) {
                    // a merged NIC: its ports are the devices, the entry is a virtual device of them
                    const members = [...d[2].matchAll(IB_MEMBER)].map((x) => x[1]).slice(0, 64);
                    for (const x of members) once(devices, ev.ibDevices, x);
                    if (members.length > 0) ev.ibVirtualDevices[String(position)] ??= members.map((x) => x.split(":")[0]);
                } else {
                    once(devices, ev.ibDevices, d[4]);
                    ev.ibDeviceByIndex[String(position)] ??= d[4];
                }
                position++;
            }
        }
        const vdev = text.match(IB_VIRTUAL);
        if (vdev) ev.ibVirtualDevices[vdev[1]] ??= vdev[2].split("+");
        if (LOCAL_CHANNEL.test(text)) add(ev.localChannels, lineNo, raw);
        if (/NCCL WARN/.test(text)) {
            add(ev.warnings, lineNo, raw);
            // every WARN up to a bound (the one just before a failure is its cause, often past the first few)
            if (ev.warnLines.length < MAX_WARN_LINES) ev.warnLines.push({ line: lineNo, text: raw.trim().slice(0, 400) });
        }
        if (GDR_DISABLED.test(text) || GDR_FORCED_OFF.test(text)) add(ev.gdrDisabled, lineNo, raw);
        let m = text.match(USING_NETWORK) ?? text.match(ASSIGNED_NET);
        if (m) {
            const net = m[1];
            once(networks, ev.networks, net);
            if (/^Socket$/i.test(net)) add(ev.socket, lineNo, raw);
            else if (IB_NET.test(net)) add(ev.ib, lineNo, raw);
            else if (/Libfabric|OFI/i.test(net)) add(ev.ofi, lineNo, raw);
        }
        if ((m = text.match(OFI_PROVIDER))) {
            once(providers, ev.ofiProviders, m[1]);
            add(ev.ofi, lineNo, raw);
        }
        if (/NET\/IB : Using \[\d+\]/.test(text)) add(ev.ib, lineNo, raw);
        if (GDR_ENABLED.test(text)) add(ev.gdr, lineNo, raw);
        if ((m = text.match(NET_CHANNEL))) {
            add(ev.netChannels, lineNo, raw);
            const transport = m[1];
            ev.netChannelTransports[transport] = (ev.netChannelTransports[transport] ?? 0) + 1;
            const dev = IB_NET.test(transport) ? text.match(IB_CHANNEL_DEVICE) : null;
            if (dev) ev.ibChannelDevices[dev[1]] = (ev.ibChannelDevices[dev[1]] ?? 0) + 1;
            if (/\/GDRDMA\b/.test(m[0])) add(ev.gdr, lineNo, raw);
            else add(ev.netChannelsWithoutGdr, lineNo, raw);
            if (/^Socket$/i.test(transport)) add(ev.socket, lineNo, raw);
            else if (IB_NET.test(transport)) add(ev.ib, lineNo, raw);
            else if (/Libfabric|OFI/i.test(transport)) add(ev.ofi, lineNo, raw);
        }
        if (PLUGIN_MISSING.test(text)) add(ev.pluginMissing, lineNo, raw);
    }
    return ev;
}

/** Lines for a verdict: the first few of each set, in line order, without repeats. */
export function evidenceOf(...sets: EvidenceSet[]): LineText[] {
    const seen = new Map<number, LineText>();
    for (const s of sets) for (const l of s.lines) seen.set(l.line, l);
    return [...seen.values()].sort((a, b) => a.line - b.line).slice(0, KEEP);
}
