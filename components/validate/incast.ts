/**
 * Incast proof (RoCE only): after nccl-tests, N hosts on other leaves than one receiver run `ib_write_bw` to it at once,
 * on the RoCE priority and GID the kit configures, and the host counters read before and after show what the fabric
 * did. Lossless means no drop and no retransmit under that load, and it needs ECN (CNPs) or PFC (pause) to have acted:
 * an incast that neither slowed the senders nor paused them proves nothing. In lossless mode a second incast runs with
 * the senders' DCQCN reaction point off (incast-rpoff.ts), where PFC must pause and nothing may drop. Both must reach a
 * throughput floor where the line rate is known. Pure: planning, the commands, the parsers and the grade;
 * playbooks/roles/nccl_validate/tasks/incast.yml runs the commands and fetches what they print.
 *
 * Why RoCE only: on EFA (SRD) and InfiniBand the fabric's congestion control and link-level credit flow are the
 * provider's and the subnet manager's, not settings the kit renders; the counters below are the mlx5 Ethernet
 * driver's (PFC per priority, DCQCN) and have no meaning there.
 *
 * Counter names, all checked against the kernel's mlx5 source or NVIDIA's docs:
 * - ethtool -S: `rx_prio<p>_pause`, `tx_prio<p>_pause` (PFC frames received / sent on priority p;
 *   pport_per_prio_pfc_stats_desc "rx_%s_pause", %s = "prio{i}", printed only for priorities with PFC on),
 *   `rx_prio<p>_buf_discard` (pport_per_tc_prio_stats_desc), `rx_prio<p>_cong_discard`
 *   (pport_per_tc_congest_prio_stats_desc; both only where the NIC has the sbcam register) — source:
 *   torvalds/linux@01dd74246c75ed0992a5f4ed83e8527a7197f720:drivers/net/ethernet/mellanox/mlx5/core/en_stats.c;
 *   `rx_discards_phy` (received packets dropped for lack of NIC buffer) — Documentation/networking/device_drivers/
 *   ethernet/mellanox/mlx5/counters.rst (roce-operations.md §5a, MLX5-CNT).
 * - /sys/class/infiniband/<dev>/ports/1/hw_counters/: `np_cnp_sent` (CNPs the notification point sent),
 *   `rp_cnp_handled` (CNPs the reaction point acted on), `out_of_sequence` (responder saw a PSN gap),
 *   `packet_seq_err` (requester got a NAK sequence error: a retransmit), `implied_nak_seq_err` (a response implied a
 *   lost request: a retransmit), `local_ack_timeout_err` (no ACK in time: the requester retransmitted after its
 *   timeout, what a silently dropped packet looks like) — torvalds/linux drivers/infiniband/hw/mlx5/counters.c
 *   (cong_cnts, out_of_seq_q_cnts; retrans_q_cnts: duplicate_request, rnr_nak_retry_err, packet_seq_err,
 *   implied_nak_seq_err, local_ack_timeout_err; roce-operations.md §5a, IB-CNT).
 * - perftest flags (linux-rdma/perftest README, src/perftest_parameters.c; roce-operations.md §5d): `-d` device,
 *   `-x` GID index, `--tclass` GRH traffic class (DSCP << 2 | ECN, `-T` applies only with rdma_cm), `-s` size,
 *   `-q` QPs, `-D` seconds, `-p` TCP port of the out-of-band exchange, `-F` no CPU-frequency refusal,
 *   `--report_gbits`.
 */

/** One host of the incast: the rail it uses (rail 0) and the leaf that rail plugs into, when the plan knows it. */
export interface IncastHost {
    name: string;
    /** the address `ib_write_bw` clients reach the receiver's server at (out-of-band TCP exchange) */
    address: string;
    /** RDMA device of rail 0 (e.g. mlx5_0) */
    device: string;
    /** its netdev (ethtool -S); resolved on the host from sysfs when the spec does not name it */
    netdev?: string;
    /** the leaf switch of that rail (hosts[].railPorts); unknown: the incast may stay on one leaf */
    leaf?: string;
    /** this host's own RoCEv2 GID index (hosts[i].gidIndex); else the plan's */
    gidIndex?: number;
}

export interface IncastPlanInput {
    hosts: IncastHost[];
    /** RoCE priority (PFC runs on it in lossless mode) */
    priority: number;
    /** GRH traffic class: the rdma_cm ToS the hosts use (roce_host_tos, DSCP << 2 | ECT(0)) */
    trafficClass: number;
    gidIndex: number;
    mode: "lossless" | "lossy";
    /**
     * Senders at most. 8:1 is the incast NVIDIA-partner guides run per leaf (Intel Gaudi congestion test,
     * docs.habana.ai Congestion_Test.html; roce-operations.md §5d, M): enough to overrun one 400G port many times over.
     * @default 8
     */
    maxSenders?: number;
    /** @default 20 */
    durationSeconds?: number;
    /** first TCP port of the servers on the receiver, one per sender. @default 18515 (perftest's default port) */
    basePort?: number;
    /** the rails' line rate (Gb/s, the plan's host-port speed); unknown: no throughput floor */
    lineRateGbps?: number;
}

export interface IncastSender extends IncastHost {
    /** the receiver's server port this sender connects to */
    port: number;
}

export interface IncastPlan {
    receiver: IncastHost;
    senders: IncastSender[];
    /** every sender's rail 0 is on another leaf than the receiver's (known from the plan) */
    crossesLeaves: boolean;
    priority: number;
    trafficClass: number;
    gidIndex: number;
    mode: "lossless" | "lossy";
    durationSeconds: number;
    /** why the senders are what they are, for the report */
    note: string;
    /**
     * Lossless only: a second incast with the senders' DCQCN reaction point off on the RoCE priority, where nothing
     * but PFC can keep it loss-free (incast-rpoff.ts).
     */
    rpOffPhase: boolean;
    /** the senders' total must reach this (Gb/s) in each phase; null when the line rate is unknown */
    floorGbps: number | null;
}

/**
 * The throughput floor as a fraction of the rails' line rate. Not a published figure, the kit's choice: every sender
 * can fill the receiver's port alone, so the receiver's port (or the leaf's port to it, same speed) is the bottleneck,
 * and a working lossless fabric keeps it busy (ib_write_bw at 64 KiB on a 4096-byte MTU carries ~97 % payload: 4096 of
 * 4096 + ~60 bytes RoCEv2/UDP/IP/Ethernet headers + 20 bytes preamble and gap). Half the line rate is loose on purpose:
 * DCQCN's rate cuts and PFC's pauses cost some, but a fabric below half is stalling (pause storms, head-of-line
 * blocking, over-throttled senders), not congestion-controlled.
 */
export const INCAST_FLOOR_FRACTION = 0.5;

/**
 * Receiver: the first host. Senders: one host per other leaf first (the incast then converges on the spine → leaf
 * link as well as on the receiver's port), then more hosts of other leaves, then, only when the fabric has no other
 * leaf or the plan does not say, hosts of the receiver's own leaf. undefined when fewer than two senders exist (one
 * sender at line rate cannot congest a port of the same speed).
 */
export function planIncast(input: IncastPlanInput): IncastPlan | undefined {
    const [receiver, ...rest] = input.hosts;
    const max = input.maxSenders ?? 8;
    if (!receiver || rest.length < 2 || max < 2) return undefined;
    const known = input.hosts.every((h) => h.leaf !== undefined);
    const other = known ? rest.filter((h) => h.leaf !== receiver.leaf) : [];
    const picked: IncastHost[] = [];
    const leaves = new Set<string>();
    for (const h of other) if (!leaves.has(h.leaf!) && picked.length < max) { leaves.add(h.leaf!); picked.push(h); }
    for (const h of other) if (!picked.includes(h) && picked.length < max) picked.push(h);
    const crossesLeaves = known && picked.length >= 2;
    if (!crossesLeaves) {
        picked.length = 0;
        for (const h of rest) if (picked.length < max) picked.push(h);
    }
    const base = input.basePort ?? 18515;
    const note = crossesLeaves
        ? `${picked.length} senders on ${leaves.size} other leaf/leaves than ${receiver.name} (${receiver.leaf})`
        : known ? `${picked.length} senders: fewer than two hosts on other leaves than ${receiver.name}, so the incast stays on its leaf`
            : `${picked.length} senders: the plan does not say which leaf each host's rail 0 plugs into (cluster.roce.hosts[].railPorts), so the incast may stay on one leaf`;
    return {
        receiver, senders: picked.map((h, i) => ({ ...h, port: base + i })), crossesLeaves,
        priority: input.priority, trafficClass: input.trafficClass, gidIndex: input.gidIndex, mode: input.mode,
        durationSeconds: input.durationSeconds ?? 20, note, rpOffPhase: input.mode === "lossless",
        floorGbps: input.lineRateGbps ? input.lineRateGbps * INCAST_FLOOR_FRACTION : null,
    };
}

/**
 * The `ib_write_bw` arguments of one end (both ends must agree on all of them but `-d` and `-x`): `-x` is the local
 * GID index (perftest README), so each end takes its own host's.
 */
function perftestArgs(plan: IncastPlan, host: IncastHost, port: number): string {
    return `ib_write_bw -d ${host.device} -x ${host.gidIndex ?? plan.gidIndex} --tclass=${plan.trafficClass} -s 65536 -q 4 -D ${plan.durationSeconds} --report_gbits -F -p ${port}`;
}

/** The receiver's command: one server per sender in the background, each to its own log, then wait for them all. */
export function receiverCommand(plan: IncastPlan, dir: string): string {
    const servers = plan.senders.map((s) => `${perftestArgs(plan, plan.receiver, s.port)} >${dir}/server-${s.port}.log 2>&1 &`);
    return [...servers, "wait"].join("\n");
}

/** A sender's command: its client to the receiver's server for it. */
export function senderCommand(plan: IncastPlan, sender: IncastSender): string {
    return `${perftestArgs(plan, sender, sender.port)} ${plan.receiver.address}`;
}

/**
 * What every participant prints before and after: its rail-0 netdev's `ethtool -S` and its RDMA port's hw_counters,
 * as `name value` lines under a section header (parseSnapshot reads it back).
 */
export function snapshotCommand(host: IncastHost): string {
    const dev = host.device;
    const netdev = host.netdev ?? `$(ls /sys/class/infiniband/${dev}/device/net/ | head -n 1)`;
    return [
        `echo "### ethtool ${netdev}"`,
        `ethtool -S ${netdev}`,
        `echo "### hw_counters ${dev}"`,
        `for f in /sys/class/infiniband/${dev}/ports/1/hw_counters/*; do printf '%s %s\\n' "\${f##*/}" "$(cat "$f")"; done`,
    ].join("\n");
}

export interface Snapshot {
    ethtool: Record<string, number>;
    hw: Record<string, number>;
}

/**
 * The most counters read of one set of one snapshot: a snapshot is the node's answer (untrusted), and every counter
 * read is held until the grade. mlx5's `ethtool -S` prints a few thousand (per-channel counters: 64 channels × ~40,
 * Documentation/networking/device_drivers/ethernet/mellanox/mlx5/counters.rst); past this bound the rest is not read,
 * so a counter the grade needs that comes after it is missing, which fails the grade (fail closed).
 */
export const MAX_COUNTERS = 100_000;

/** A counter's value: ethtool and sysfs print u64 counters, at most 20 decimal digits (2^64 - 1). */
const COUNTER = /^\d{1,20}$/;

/**
 * `ethtool -S` output → counter values. Lines are `     name: value` under `NIC statistics:`; anything else (the
 * header, a name with a non-numeric value, a value longer than a u64) is skipped; at most MAX_COUNTERS are read.
 */
export function parseEthtoolStats(text: string): Record<string, number> {
    const out: Record<string, number> = {};
    let n = 0;
    for (const line of text.split("\n")) {
        const m = /^\s*([A-Za-z0-9_[\]:.-]+):\s+(\d+)\s*$/.exec(line);
        if (!m || !COUNTER.test(m[2])) continue;
        if (n++ >= MAX_COUNTERS) break;
        out[m[1]] = Number(m[2]);
    }
    return out;
}

/** What snapshotCommand printed → the two counter sets. */
export function parseSnapshot(text: string): Snapshot {
    const ethtool: string[] = [];
    const hw: Record<string, number> = {};
    let section: "ethtool" | "hw" | undefined;
    let nHw = 0;
    for (const line of text.split("\n")) {
        if (line.startsWith("### ethtool ")) section = "ethtool";
        else if (line.startsWith("### hw_counters ")) section = "hw";
        else if (section === "ethtool") { if (ethtool.length < MAX_COUNTERS) ethtool.push(line); }
        else if (section === "hw" && nHw < MAX_COUNTERS) {
            const m = /^(\S+) (\d+)$/.exec(line.trim());
            if (m && COUNTER.test(m[2])) { hw[m[1]] = Number(m[2]); nHw++; }
        }
    }
    return { ethtool: parseEthtoolStats(ethtool.join("\n")), hw };
}

export interface PerftestResult {
    sizeBytes: number;
    iterations: number;
    /** BW average in Gb/s (with --report_gbits; MB/s results are converted) */
    avgGbps: number;
}

/**
 * The result row of an ib_*_bw run: the line after the `#bytes #iterations BW peak[...] BW average[...]` header.
 * undefined when the run printed no result (it failed or never connected).
 */
export function parsePerftestBw(text: string): PerftestResult | undefined {
    const lines = text.split("\n");
    const at = lines.findIndex((l) => /#bytes\s+#iterations\s+BW peak\[(Gb|MB)\/sec\]\s+BW average\[(Gb|MB)\/sec\]/.test(l));
    if (at < 0) return undefined;
    const unit = /BW average\[(Gb|MB)\/sec\]/.exec(lines[at])![1];
    for (const l of lines.slice(at + 1)) {
        const f = l.trim().split(/\s+/);
        if (f.length >= 4 && f.slice(0, 4).every((x) => /^\d+(\.\d+)?$/.test(x))) {
            const avg = Number(f[3]);
            // MB/sec is 2^20 bytes per second in perftest's report (perftest_parameters.h MEGA 1048576)
            return { sizeBytes: Number(f[0]), iterations: Number(f[1]), avgGbps: unit === "Gb" ? avg : (avg * 1048576 * 8) / 1e9 };
        }
        if (/^-+$/.test(l.trim())) break;
    }
    return undefined;
}

/** One counter of one host, before and after. */
export interface CounterRow {
    host: string;
    role: "receiver" | "sender";
    counter: string;
    before: number | null;
    after: number | null;
    delta: number | null;
}

export interface IncastGrade {
    pass: boolean;
    /** what failed, one line each */
    failures: string[];
    /** ECN (CNPs) and PFC (pauses) acted: where */
    ecnActed: boolean;
    pfcActed: boolean;
    /** sum of the senders' average bandwidth (Gb/s), null when a sender printed no result */
    totalGbps: number | null;
    rows: CounterRow[];
    /** the phase with the senders' reaction point off (lossless): PFC must pause, nothing may drop */
    rpOff?: { pfcActed: boolean; totalGbps: number | null; rows: CounterRow[] };
}

/** One incast's counters and client logs. */
export interface IncastPhase {
    before: Record<string, Snapshot>;
    after: Record<string, Snapshot>;
    /** each sender's ib_write_bw output, by host */
    clients: Record<string, string>;
}

export interface IncastRun extends IncastPhase {
    plan: IncastPlan;
    /**
     * The phase with the senders' reaction point off (plan.rpOffPhase), and what each sender's enable file read after
     * the kit wrote 0 to it (incast-rpoff.ts); absent when it did not run.
     */
    rpOff?: IncastPhase & { rpRead: Record<string, string> };
}

/** The counters graded and shown, per role: the drops, the retransmits and the two congestion responses. */
function countersOf(plan: IncastPlan): { ethtool: string[]; hw: string[]; drops: string[]; retransmits: string[] } {
    const p = plan.priority;
    const drops = ["rx_discards_phy", `rx_prio${p}_buf_discard`, `rx_prio${p}_cong_discard`];
    const retransmits = ["out_of_sequence", "packet_seq_err", "implied_nak_seq_err", "local_ack_timeout_err"];
    return { ethtool: [`rx_prio${p}_pause`, `tx_prio${p}_pause`, ...drops], hw: ["np_cnp_sent", "rp_cnp_handled", ...retransmits], drops, retransmits };
}

interface PhaseGrade { failures: string[]; rows: CounterRow[]; ecnActed: boolean; pfcActed: boolean; totalGbps: number | null }

/**
 * One phase: any drop or retransmit counter that grew on any participant, a counter the grade needs that a host does
 * not have, a sender without a result, and a total under the floor fail it. `tag` prefixes its failures.
 */
function gradePhase(plan: IncastPlan, run: IncastPhase, tag: string): PhaseGrade {
    const c = countersOf(plan);
    const p = plan.priority;
    const failures: string[] = [];
    const rows: CounterRow[] = [];
    const participants: Array<[IncastHost, "receiver" | "sender"]> = [[plan.receiver, "receiver"], ...plan.senders.map((s): [IncastHost, "sender"] => [s, "sender"])];
    const delta = (host: string, set: "ethtool" | "hw", name: string): number | null => {
        const b = run.before[host]?.[set][name];
        const a = run.after[host]?.[set][name];
        return b === undefined || a === undefined ? null : a - b;
    };
    for (const [h, role] of participants) {
        if (!run.before[h.name] || !run.after[h.name]) {
            failures.push(`${tag}${h.name} (${role}): no counter snapshot ${!run.before[h.name] ? "before" : "after"} the incast`);
            continue;
        }
        for (const [set, names] of [["ethtool", c.ethtool], ["hw", c.hw]] as const) {
            for (const counter of names) {
                const before = run.before[h.name][set][counter] ?? null;
                const after = run.after[h.name][set][counter] ?? null;
                rows.push({ host: h.name, role, counter, before, after, delta: before === null || after === null ? null : after - before });
            }
        }
        // drops: rx_discards_phy must exist (the per-priority discard counters are newer and shown where present)
        for (const counter of c.drops) {
            const d = delta(h.name, "ethtool", counter);
            if (d === null && counter === "rx_discards_phy") failures.push(`${tag}${h.name}: ethtool -S has no ${counter}, so drops cannot be ruled out`);
            if (d !== null && d > 0) failures.push(`${tag}${h.name} (${role}): ${counter} grew by ${d} under incast (packets dropped)`);
        }
        for (const counter of c.retransmits) {
            const d = delta(h.name, "hw", counter);
            if (d === null) failures.push(`${tag}${h.name}: hw_counters has no ${counter}, so retransmits cannot be ruled out`);
            else if (d > 0) failures.push(`${tag}${h.name} (${role}): ${counter} grew by ${d} under incast (lost packets were retransmitted)`);
        }
    }
    const grew = (host: string, set: "ethtool" | "hw", name: string) => (delta(host, set, name) ?? 0) > 0;
    const ecnActed = grew(plan.receiver.name, "hw", "np_cnp_sent") || plan.senders.some((s) => grew(s.name, "hw", "rp_cnp_handled"));
    const pfcActed = grew(plan.receiver.name, "ethtool", `tx_prio${p}_pause`) || plan.senders.some((s) => grew(s.name, "ethtool", `rx_prio${p}_pause`));
    let total: number | null = 0;
    for (const s of plan.senders) {
        const r = run.clients[s.name] === undefined ? undefined : parsePerftestBw(run.clients[s.name]);
        if (!r) {
            failures.push(`${tag}${s.name} (sender): ib_write_bw printed no result`);
            total = null;
        } else if (total !== null) total += r.avgGbps;
    }
    const totalGbps = total === null ? null : Math.round(total * 100) / 100;
    if (totalGbps !== null && plan.floorGbps !== null && totalGbps < plan.floorGbps) {
        failures.push(`${tag}the senders' total ${totalGbps} Gb/s is under the floor of ${plan.floorGbps} Gb/s (${INCAST_FLOOR_FRACTION * 100} % of the rails' line rate): the fabric stalls the incast instead of carrying it`);
    }
    return { failures, rows, ecnActed, pfcActed, totalGbps };
}

/**
 * The grade: each phase by gradePhase, plus what must have acted. With DCQCN on, ECN (CNPs sent by the receiver or
 * handled by a sender) or PFC (pauses sent by the receiver or received by a sender) must act: an incast that neither
 * slowed nor paused the senders proves nothing. Lossless mode also needs the phase with the senders' reaction point
 * off, every sender's enable file reading 0, and PFC pausing in it: DCQCN alone can keep an incast loss-free while PFC
 * is broken, and with the reaction point off only PFC stands between the incast and a drop.
 */
export function gradeIncast(run: IncastRun): IncastGrade {
    const { plan } = run;
    const p = plan.priority;
    const main = gradePhase(plan, run, "");
    const failures = [...main.failures];
    if (!main.ecnActed && !main.pfcActed) {
        failures.push(`neither ECN nor PFC acted under the ${plan.senders.length}:1 incast: no CNP sent (np_cnp_sent) or handled (rp_cnp_handled), no pause on priority ${p} (tx/rx_prio${p}_pause); the congestion was not signalled`);
    }
    let rpOff: IncastGrade["rpOff"];
    if (plan.rpOffPhase) {
        const tag = "reaction point off: ";
        if (!run.rpOff) failures.push(`${tag}lossless mode, but the incast with the senders' reaction point off did not run, so nothing shows that PFC holds the traffic when ECN does not slow the senders`);
        else {
            for (const s of plan.senders) {
                const read = run.rpOff.rpRead[s.name];
                if (read?.trim() !== "0") failures.push(`${tag}${s.name}: roce_rp/enable/${p} read ${read === undefined ? "nothing" : JSON.stringify(read.trim())} after writing 0 (0 expected; the file comes with DOCA/MLNX OFED), so DCQCN may have slowed it`);
            }
            const g = gradePhase(plan, run.rpOff, tag);
            failures.push(...g.failures);
            if (!g.pfcActed) {
                // the driver prints a priority's pause counters only while PFC is on for it (en_stats.c pfc_combined)
                const without = [...new Set(g.rows.filter((r) => r.counter.endsWith(`_prio${p}_pause`) && (r.before === null || r.after === null)).map((r) => r.host))];
                const why = without.length ? `; ethtool -S of ${without.join(", ")} has no prio${p} pause counters, which the mlx5 driver prints only while PFC is on for that priority` : "";
                failures.push(`${tag}lossless mode, but PFC never paused under the ${plan.senders.length}:1 incast without DCQCN (no tx/rx_prio${p}_pause): PFC does not act on priority ${p}${why}`);
            }
            rpOff = { pfcActed: g.pfcActed, totalGbps: g.totalGbps, rows: g.rows };
        }
    }
    return {
        pass: failures.length === 0, failures, ecnActed: main.ecnActed, pfcActed: main.pfcActed, totalGbps: main.totalGbps, rows: main.rows,
        ...(rpOff ? { rpOff } : {}),
    };
}

const cell = (v: number | null) => (v === null ? "-" : String(v));
const table = (rows: CounterRow[]) => [
    `  ${"host".padEnd(14)} ${"role".padEnd(8)} ${"counter".padEnd(22)} ${"before".padStart(14)} ${"after".padStart(14)} ${"delta".padStart(10)}`,
    ...rows.map((r) => `  ${r.host.padEnd(14)} ${r.role.padEnd(8)} ${r.counter.padEnd(22)} ${cell(r.before).padStart(14)} ${cell(r.after).padStart(14)} ${cell(r.delta).padStart(10)}`),
];
const total = (g: number | null) => (g === null ? "unknown (a sender printed no result)" : `${g} Gb/s`);

/** The report's incast section: verdict, what acted, the senders' bandwidth and every counter per host and phase. */
export function formatIncast(plan: IncastPlan, g: IncastGrade): string {
    const lines = [
        `incast ${plan.senders.length}:1 to ${plan.receiver.name} (${plan.receiver.device}, priority ${plan.priority}, tclass ${plan.trafficClass}, ${plan.mode}): ${g.pass ? "PASS" : "FAIL"}`,
        `  ${plan.note}`,
        `  ECN ${g.ecnActed ? "acted" : "did not act"}; PFC ${g.pfcActed ? "acted" : "did not act"}; senders' total ${total(g.totalGbps)}; floor ${plan.floorGbps === null ? "unknown (no line rate in the plan)" : `${plan.floorGbps} Gb/s`}`,
        ...(g.rpOff ? [`  senders' reaction point off: PFC ${g.rpOff.pfcActed ? "acted" : "did not act"}; senders' total ${total(g.rpOff.totalGbps)}`] : []),
        ...g.failures.map((f) => `  - ${f}`),
        ...table(g.rows),
        ...(g.rpOff ? ["  reaction point off:", ...table(g.rpOff.rows)] : []),
    ];
    return lines.join("\n") + "\n";
}
