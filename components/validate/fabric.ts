/**
 * Pure proof that an nccl-tests log is the multi-node run of one fabric, as `nccl-report --fabric` and the validation
 * step grade it. A log proves the fabric only when every point holds; each point is one verdict with what was
 * expected and what the log shows:
 *  - one-job: one nccl-tests job, not several processes each running alone (nccl-tests built without MPI=1: every
 *    process prints its own parameter line and its own `Rank 0`; maintainers in NVIDIA/nccl-tests#27, #182);
 *  - multi-node: at least two hosts, and nRanks = nodes x GPUs per node where those are given;
 *  - net-transport: the fabric's NET transport carried channels (`via NET/...` lines). A node can print
 *    `Using network IB` and still move everything over NVLink/PCIe when it is alone, so the network line alone is no proof;
 *  - gpudirect: every NET channel `/GDRDMA`;
 *  - socket-fallback: no `Using network Socket`, no `via NET/Socket`.
 * Correctness (`-c 0`, wrong values) and completion (footer, failures) are per-run verdicts of grade.ts.
 *
 * Strings (NCCL and aws-ofi-nccl sources, and seen in the real logs named):
 *  - EFA: `NET/OFI Selected Provider is efa` (`efa;ofi_rxr` with plugin <= 1.x on libfabric 1.x), `Using network AWS
 *    Libfabric` (plugin <= 1.12; `Libfabric` since 1.13), channels `via NET/AWS Libfabric/0/GDRDMA`
 *    (aws/aws-ofi-nccl src/nccl_ofi_net.cpp, src/nccl_ofi_interface_nvidia.cpp; test/fixtures/nccl-ref 01, 03, 06);
 *  - IB / RoCE: `NET/IB : Using [0]mlx5_0:1/IB` or `.../RoCE` (link layer per device), `Using network IB` (`IBext_v8`
 *    through the SHARP plugin), channels `via NET/IB/0/GDRDMA` (`NET/IBext_v8/7/GDRDMA`) (NVIDIA/nccl
 *    src/transport/net_ib.cc, src/transport/net.cc; NVIDIA/nccl#1412, #1453, NVIDIA/nccl-tests#293); HPC-X's plugin:
 *    `Using network NCCL RDMA Plugin v8`, `.../IB/SHARP` devices, `via NET/NCCL RDMA Plugin v8/0/GDRDMA` (NVIDIA/nccl-tests#319).
 */
import type { EvidenceSet, LineText, NcclRun, ParsedLog, TransportEvidence, Verdict } from "./types";
import { evidenceOf, IB_NET } from "./transport";
import { namedFew } from "../listing";

export const FABRICS = ["efa", "ib", "roce"] as const;
export type FabricName = typeof FABRICS[number];

export interface FabricRequirement {
    fabric: FabricName;
    /** Nodes the job must span; unknown: at least two. */
    nodes?: number;
    /** GPUs (ranks) per node; with `nodes` fixes nRanks. */
    gpusPerNode?: number;
}

/** The plan's fabric names → the transport a log must prove. */
export function fabricOfPlan(fabric: "aws-efa" | "azure-ib" | "roce"): FabricName {
    return fabric === "aws-efa" ? "efa" : fabric === "azure-ib" ? "ib" : "roce";
}

/** Checks `--fabric/--nodes/--gpus-per-node` as typed; a message naming the flag, value and what is allowed. */
export function checkRequirement(fabric: string | undefined, nodes: string | undefined, gpus: string | undefined): FabricRequirement | string | undefined {
    if (fabric === undefined) {
        if (nodes !== undefined || gpus !== undefined) return "--nodes and --gpus-per-node need --fabric efa|ib|roce";
        return undefined;
    }
    if (!(FABRICS as readonly string[]).includes(fabric)) return `--fabric: unknown fabric "${fabric}"; allowed: ${FABRICS.join(", ")}`;
    const int = (flag: string, v: string | undefined, min: number): number | string | undefined => {
        if (v === undefined) return undefined;
        const n = Number(v);
        return Number.isInteger(n) && n >= min ? n : `${flag}: "${v}" is not an integer >= ${min}` +
            (flag === "--nodes" ? " (a fabric is only proven by a run across at least two nodes)" : "");
    };
    const n = int("--nodes", nodes, 2);
    if (typeof n === "string") return n;
    const g = int("--gpus-per-node", gpus, 1);
    if (typeof g === "string") return g;
    return { fabric: fabric as FabricName, nodes: n, gpusPerNode: g };
}

const NAMES: Record<FabricName, string> = { efa: "EFA (aws-ofi-nccl)", ib: "InfiniBand (NET/IB)", roce: "RoCE (NET/IB over Ethernet)" };

const HINTS = {
    oneJob: "Several nccl-tests processes ran side by side, each on its own: build nccl-tests with `make MPI=1 MPI_HOME=...` " +
        "(after `make clean`) and launch one job across the nodes with mpirun/srun, one rank per GPU.",
    multiNode: "The run did not span the nodes: launch it with a hostfile listing every node (`mpirun -np <nodes x GPUs> " +
        "--hostfile ...`, or `srun -N <nodes>`), and keep the `# Using devices` rank list in the log.",
    debug: "Rerun with NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,NET (or INIT,GRAPH,ENV,NET) so NCCL prints the network it chose, the " +
        "devices and every channel's transport.",
    efa: "NCCL did not carry the data over aws-ofi-nccl and EFA: check that the plugin is on the loader path " +
        "(/opt/amazon/ofi-nccl/lib, /etc/ld.so.conf.d/100_ofinccl.conf), that `fi_info -p efa` lists the devices, set " +
        "FI_PROVIDER=efa and NCCL_NET='AWS Libfabric' (plugin < 1.13) or Libfabric so a fallback fails.",
    ib: "NCCL did not carry the data over its IB verbs transport: check `ibv_devinfo` (PORT_ACTIVE, link layer), that " +
        "NCCL_IB_HCA names the devices, memlock unlimited, and set NCCL_NET=IB so a fallback fails instead of running slow.",
    gdr: "GPUDirect RDMA is off on some NET channels, so data bounces through host memory: load nvidia_peermem (efa_nv_peermem " +
        "on EFA) or use DMA-BUF (kernel >= 5.12, open GPU modules), check ACS is off on bare metal and that NCCL_NET_GDR_LEVEL " +
        "does not disable it.",
};

function ev(s: EvidenceSet): LineText[] {
    return s.lines.slice(0, 5);
}

/** Runs that ran the test (rows or a failure), else every run that printed a header. */
function gradedRuns(log: ParsedLog): NcclRun[] {
    const ran = log.runs.filter((r) => r.rows.length > 0 || r.failures.length > 0);
    return ran.length > 0 ? ran : log.runs;
}

/** The rank lines of ranks listed more than once; linear in the rank list, as long as the log makes it. */
function duplicatesOf(r: NcclRun): NcclRun["ranks"] {
    const dup = new Set(r.duplicateRanks);
    return r.ranks.filter((x) => dup.has(x.rank));
}

function oneJob(log: ParsedLog): Verdict {
    const headers = log.runs.filter((r) => r.params.nThread !== undefined);
    // a parameter line with no table, ranks or failure before the next one: another process's header
    const orphans = log.runs.filter((r, i) => i < log.runs.length - 1 && r.params.nThread !== undefined && r.rows.length === 0 &&
        r.failures.length === 0 && r.checkColumn === null && r.ranks.length === 0);
    const dup = log.runs.filter((r) => r.duplicateRanks.length > 0);
    const expected = "one nccl-tests job: one parameter line and one rank list per run, every rank listed once";
    if (orphans.length === 0 && dup.length === 0) {
        return { check: "one-job", ok: true, expected, seen: `${headers.length || log.runs.length} run(s), each one job` };
    }
    const parts: string[] = [];
    if (orphans.length > 0) parts.push(`${orphans.length + 1} parameter lines printed back to back (one per process)`);
    for (const r of dup) {
        const count = r.ranks.filter((x) => x.rank === r.duplicateRanks[0]).length;
        parts.push(`Rank ${r.duplicateRanks[0]} listed ${count} times (${namedFew([...new Set(r.ranks.map((x) => x.host))])})`);
    }
    return {
        check: "one-job", ok: false, expected, seen: `separate processes, not one job: ${parts.join("; ")}`, hint: HINTS.oneJob,
        evidence: [...orphans.map((r) => ({ line: r.firstLine, text: "# nThread ..." })),
            ...dup.flatMap((r) => duplicatesOf(r).slice(0, 3)
                .map((x) => ({ line: r.firstLine, text: `Rank ${x.rank} on ${x.host} pid ${x.pid ?? "?"}` })))].slice(0, 5),
    };
}

function multiNode(run: NcclRun, index: number, t: TransportEvidence, req: FabricRequirement): Verdict {
    const wantRanks = req.nodes !== undefined && req.gpusPerNode !== undefined ? req.nodes * req.gpusPerNode : null;
    const expected = `${req.nodes ?? ">= 2"} hosts` + (wantRanks !== null ? `, nRanks ${wantRanks} (${req.nodes} x ${req.gpusPerNode} GPUs)` : "") +
        " in one job";
    const where = `run ${index + 1} (${run.collective ?? "?"})`;
    // hosts: the rank list, else the NCCL INFO line prefixes; ranks: the rank list, else NCCL's `nranks`
    const hosts = run.hosts.length > 0 && !run.ranksElided ? run.hosts : t.ncclHosts;
    const hostsFrom = run.hosts.length > 0 && !run.ranksElided ? "rank list" : "NCCL INFO lines";
    const ranks = run.nRanksFrom === "ranks" ? run.nRanks : t.ncclRanks ?? run.nRanks;
    const ranksFrom = run.nRanksFrom === "ranks" ? "rank list" : t.ncclRanks !== null ? "NCCL `nranks`" : run.nRanksFrom === "busbw-factor" ? "busbw/algbw" : "";
    const problems: string[] = [];
    if (hosts.length === 0 && run.ranksElided) problems.push("hosts not shown: the rank list is incomplete (elided or an excerpt) and no NCCL INFO lines");
    else if (hosts.length === 0) problems.push("no host printed (no `# Using devices` rank lines, no NCCL INFO lines)");
    else if (hosts.length < 2) problems.push(`only ${hosts[0]} (${hostsFrom})`);
    else if (req.nodes !== undefined && hosts.length !== req.nodes) problems.push(`${hosts.length} hosts (${hostsFrom})`);
    if (run.duplicateRanks.length > 0) problems.push(`each process is its own job (Rank ${run.duplicateRanks[0]} listed more than once)`);
    else if (ranks !== null && ranks < 2) problems.push(`nRanks ${ranks}: one rank cannot span nodes`);
    if (wantRanks !== null && run.duplicateRanks.length === 0) {
        if (ranks === null) problems.push("nRanks not printed");
        else if (ranks !== wantRanks) problems.push(`nRanks ${ranks} (${ranksFrom})`);
    }
    const seen = `${where}: ` + (problems.length > 0 ? problems.join("; ")
        : `${hosts.length} hosts (${hosts.slice(0, 4).join(", ")}${hosts.length > 4 ? ", ..." : ""}), nRanks ${ranks ?? "?"}`);
    return {
        check: "multi-node", ok: problems.length === 0, expected, seen, hint: problems.length ? HINTS.multiNode : undefined,
        evidence: problems.length ? [{ line: run.firstLine, text: `run starts at line ${run.firstLine}` }] : undefined,
    };
}

function transportVerdict(t: TransportEvidence, req: FabricRequirement): Verdict {
    const expected = req.fabric === "efa"
        ? "NCCL on aws-ofi-nccl with the efa provider (`NET/OFI Selected Provider is efa`, `Using network AWS Libfabric`/`Libfabric`) " +
          "and channels via NET/AWS Libfabric or NET/Libfabric"
        : `NCCL on NET/IB with ${req.fabric === "ib" ? "InfiniBand" : "RoCE"} devices (\`NET/IB : Using [0]<dev>:<port>/${req.fabric === "ib" ? "IB" : "RoCE"}\`) ` +
          "and channels via NET/IB";
    if (t.ncclDebugLines === 0) {
        return { check: "net-transport", ok: false, expected, seen: "no NCCL INFO lines: the transport is not shown", hint: HINTS.debug };
    }
    const perNet = Object.entries(t.netChannelTransports);
    const channelsVia = (re: RegExp): number => perNet.filter(([n]) => re.test(n)).reduce((a, [, c]) => a + c, 0);
    const otherNets = (re: RegExp): string => namedFew(perNet.filter(([n]) => !re.test(n)).map(([n, c]) => `${c} via NET/${n}`));
    const problems: string[] = [];
    let seenParts: string[];
    if (req.fabric === "efa") {
        const efa = t.ofiProviders.some((p) => /(^|;)efa\b/.test(p));
        const libfabricNet = t.networks.some((n) => /Libfabric|OFI/i.test(n));
        const OFI = /^(?:AWS )?Libfabric$|^OFI$/;
        const ofiChannels = channelsVia(OFI);
        if (!efa) problems.push(t.ofiProviders.length ? `OFI provider ${namedFew(t.ofiProviders)}, not efa` : "no `NET/OFI Selected Provider is efa` line");
        if (!libfabricNet && ofiChannels === 0) problems.push("no `Using network AWS Libfabric`/`Libfabric` line");
        if (t.netChannels.count === 0) problems.push("no channel went `via NET/...`: nothing crossed the network");
        else if (ofiChannels < t.netChannels.count) problems.push(`channels not on aws-ofi-nccl: ${otherNets(OFI)}`);
        seenParts = [`networks: ${namedFew(t.networks) || "(none printed)"}`, `OFI provider: ${namedFew(t.ofiProviders) || "(none printed)"}`,
            `${t.netChannels.count} NET channel line(s)`];
    } else {
        const layer = req.fabric === "ib" ? "IB" : "RoCE";
        const onLayer = new RegExp(`/${layer}(?:/|$)`);
        const devices = new Set(t.ibDevices.filter((d) => onLayer.test(d)));
        const others = t.ibDevices.filter((d) => !devices.has(d));
        const ibChannels = channelsVia(IB_NET);
        if (t.ibDevices.length === 0) problems.push("no `NET/IB : Using [0]<device>` line (NCCL_DEBUG_SUBSYS must include INIT or NET)");
        else if (devices.size === 0) problems.push(`devices ${namedFew(others, 5, " ")} are not ${layer}`);
        else {
            // the devices the channels used must have the fabric's link layer (a host can list IB and RoCE ports)
            const byName = new Map<string, string>();
            for (const d of t.ibDevices) if (!byName.has(d.split(":")[0])) byName.set(d.split(":")[0], d);
            const wrong = Object.keys(t.ibChannelDevices).flatMap((i) => channelDevice(t, i, devices, byName));
            if (wrong.length > 0) problems.push(`channels on ${namedFew(wrong)}, not ${layer}`);
        }
        if (t.netChannels.count === 0) problems.push("no channel went `via NET/...`: nothing crossed the network");
        else if (ibChannels < t.netChannels.count) problems.push(`channels not on NET/IB: ${otherNets(IB_NET)}`);
        seenParts = [`networks: ${namedFew(t.networks) || "(none printed)"}`, `devices: ${namedFew(t.ibDevices, 5, " ") || "(none printed)"}`,
            `${t.netChannels.count} NET channel line(s)`];
    }
    if (t.netChannels.count === 0 && t.localChannels.count > 0) seenParts.push(`${t.localChannels.count} channel line(s) via P2P/SHM/NVLS inside a node`);
    return {
        check: "net-transport", ok: problems.length === 0, expected,
        seen: (problems.length ? problems.join("; ") + " — " : "") + seenParts.join("; "),
        hint: problems.length ? (t.netChannels.count === 0 && t.localChannels.count > 0 ? HINTS.multiNode : req.fabric === "efa" ? HINTS.efa : HINTS.ib) : undefined,
        evidence: evidenceOf(t.ofi, t.ib, t.netChannels, t.localChannels),
    };
}

/**
 * What a channel's device index `i` names, when it is not one of `devices` (the listed ones of the fabric's link layer): nothing when it is. An index past the `Using`
 * list is a virtual device NCCL made of listed ones (NIC fusion, or one per NIC in the topology's vNICs), and NCCL
 * refuses to merge devices of different link layers ("Attempted to merge incompatible devices", NVIDIA/nccl
 * src/transport/net_ib.cc): its layer is its members' where `Made virtual device` names them, else the list's when
 * every listed device has the same one, else unknown.
 */
function channelDevice(t: TransportEvidence, i: string, devices: ReadonlySet<string>, byName: ReadonlyMap<string, string>): string[] {
    const listed = t.ibDeviceByIndex[i];
    if (listed !== undefined) return devices.has(listed) ? [] : [listed];
    // a member is named without its port: the first listed device of that name (`mlx5_0` -> `mlx5_0:1/RoCE`)
    const members = t.ibVirtualDevices[i]?.map((name) => byName.get(name) ?? name);
    if (members) {
        const off = members.filter((d) => !devices.has(d));
        return off.length ? [`virtual device #${i} (${namedFew(off, 5, "+")})`] : [];
    }
    if (t.ibDevices.length > 0 && devices.size === t.ibDevices.length) return [];
    return [`virtual device #${i} of a list that mixes link layers (${namedFew(t.ibDevices, 5, " ")}; rerun with NCCL_DEBUG_SUBSYS=INIT,NET to name its members)`];
}

function gdrVerdict(t: TransportEvidence): Verdict {
    const expected = "every NET channel via .../GDRDMA (GPUDirect RDMA)";
    if (t.netChannels.count === 0) {
        return { check: "gpudirect", ok: false, expected, seen: "no `via NET/...` channel lines to show it", hint: HINTS.debug };
    }
    const withGdr = t.netChannels.count - t.netChannelsWithoutGdr.count;
    const ok = t.netChannelsWithoutGdr.count === 0 && t.cudaRegisterFailed.count === 0;
    return {
        check: "gpudirect", ok, expected,
        seen: `${withGdr} of ${t.netChannels.count} NET channel line(s) with /GDRDMA` +
            (t.cudaRegisterFailed.count ? `; ${t.cudaRegisterFailed.count} 'Failed to register CUDA buffer'` : "") +
            // NCCL's own reason (`... GPU Direct RDMA Disabled for HCA 0 'mlx5_0' (no module)`: src/transport/net_ib.cc)
            (!ok && t.gdrDisabled.count ? `; NCCL says: ${t.gdrDisabled.lines[0].text.replace(/^.*?NCCL INFO\s*/, "")}` : ""),
        hint: ok ? undefined : HINTS.gdr,
        evidence: ok ? ev(t.gdr) : evidenceOf(t.gdrDisabled, t.netChannelsWithoutGdr, t.cudaRegisterFailed),
    };
}

function socketVerdict(t: TransportEvidence): Verdict {
    const ok = t.socket.count === 0;
    return {
        check: "socket-fallback", ok, expected: "no TCP socket transport (`Using network Socket`, `via NET/Socket`)",
        seen: ok ? (t.ncclDebugLines > 0 ? "none" : "no NCCL INFO lines to show it") : `${t.socket.count} line(s) show NCCL on sockets`,
        hint: ok ? undefined : HINTS.ib.replace("its IB verbs transport", "the RDMA fabric"), evidence: ok ? undefined : ev(t.socket),
    };
}

/** Every verdict of the fabric proof, file-level first, then multi-node per run. Pure. */
export function proveFabric(log: ParsedLog, req: FabricRequirement): Verdict[] {
    const t = log.transport;
    const v: Verdict[] = [oneJob(log)];
    const runs = gradedRuns(log);
    if (runs.length === 0) {
        v.push({ check: "multi-node", ok: false, expected: `a ${NAMES[req.fabric]} run across nodes`, seen: "no nccl-tests run in the log", hint: HINTS.multiNode });
    }
    runs.forEach((r) => v.push(multiNode(r, log.runs.indexOf(r), t, req)));
    v.push(transportVerdict(t, req), gdrVerdict(t), socketVerdict(t));
    return v;
}

/** File-level verdicts grade.ts makes that the fabric proof replaces when `--fabric` is given. */
export const REPLACED_BY_FABRIC = new Set(["nccl-debug", "socket-fallback", "transport", "gpudirect"]);
