/**
 * Pure slow-node finding: which node(s) drag the cluster down, from per-node single-node runs and pairwise runs.
 * Method as in the field: single node first, then pairs across the cluster, then each suspect against a
 * known-good node (GoogleCloudPlatform/cluster-health-scanner src/health_runner/nccl_runner.py second pass;
 * oracle-quickstart/oci-hpc scripts/ncclscout.py; Azure/ai-infrastructure-on-azure nccl_performance_diagnosis —
 * research ansible-stack.md §6, azure-ib.md §6).
 */
import type { Expectation, ParsedLog } from "./types";
import { largestPoint, rowBusbw, wrongRows } from "./grade";

/** Disjoint pairs that can run at the same time. */
export type PairRound = Array<[string, string]>;

/**
 * Pairs for N hosts in at most 3 rounds, every host paired with two different partners (one when N = 2).
 * Round 1 pairs host i with host i + N/2 (the far half, so each pair crosses the cluster's middle when hosts
 * are listed in placement order); round 2 shifts the partners by one; odd N needs a third round of one pair.
 * Built as the edges of the ring h0, h(N/2), h1, h(N/2+1), ...: a node slow in both of its pairs is the culprit.
 */
export function planPairRounds(hosts: string[]): PairRound[] {
    const n = hosts.length;
    if (n < 2) return [];
    if (n === 2) return [[[hosts[0], hosts[1]]]];
    const half = Math.floor(n / 2);
    const order: string[] = [];
    for (let i = 0; i < half; i++) order.push(hosts[i], hosts[i + half]);
    if (n % 2 === 1) order.push(hosts[n - 1]);
    const rounds: PairRound[] = [[], []];
    for (let k = 0; k < n; k++) {
        const edge: [string, string] = [order[k], order[(k + 1) % n]];
        if (n % 2 === 1 && k === n - 1) rounds[2] = [edge];
        else rounds[k % 2].push(edge);
    }
    return rounds;
}

/**
 * Second pass: each suspect against a known-good node, as few rounds as the good nodes allow
 * (ceil(suspects / good)). Pairs already tested are avoided when another good partner exists.
 */
export function planFollowUp(suspects: string[], good: string[], tested: Array<[string, string]> = []): PairRound[] {
    if (suspects.length === 0 || good.length === 0) return [];
    const done = new Set(tested.map(([a, b]) => [a, b].sort().join("\u0000")));
    const rounds: PairRound[] = [];
    for (let start = 0; start < suspects.length; start += good.length) {
        const batch = suspects.slice(start, start + good.length);
        const free = [...good];
        const round: PairRound = [];
        for (const s of batch) {
            let idx = free.findIndex((g) => !done.has([s, g].sort().join("\u0000")));
            if (idx < 0) idx = 0;
            round.push([s, free[idx]]);
            free.splice(idx, 1);
        }
        rounds.push(round);
    }
    return rounds;
}

export interface Measured {
    /** Graded busbw: the lowest per-size busbw at sizes >= gradeFromBytes, else the busbw at the largest size. */
    busbwGBps: number | null;
    completed: boolean;
    wrong: boolean;
}

/** One figure per log: its last run with rows (the run a validation command produces). */
export function measure(log: ParsedLog, gradeFromBytes?: number): Measured {
    const run = [...log.runs].reverse().find((r) => r.rows.length > 0) ?? log.runs[log.runs.length - 1];
    if (!run) return { busbwGBps: null, completed: false, wrong: false };
    const rows = gradeFromBytes === undefined ? [] : run.rows.filter((r) => r.sizeBytes >= gradeFromBytes && rowBusbw(r) !== null);
    let bw: number | null = null;
    if (rows.length > 0) bw = rows.reduce((m, r) => Math.min(m, rowBusbw(r) as number), Infinity);
    else {
        const p = largestPoint(run);
        const vals = p ? [p.outOfPlace, p.inPlace].filter((v): v is number => v !== null) : [];
        bw = vals.length ? vals.reduce((a, b) => a + b, 0) / vals.length : null;
    }
    const allCompleted = log.runs.every((r) => r.completed);
    const wrong = log.runs.some((r) => wrongRows(r).length > 0 || (r.outOfBounds?.count ?? 0) > 0);
    return { busbwGBps: bw, completed: allCompleted, wrong };
}

export interface PairLog {
    hosts: [string, string];
    log: ParsedLog;
}

export interface SlowNodeInput {
    /** Single-node results keyed by host. */
    singleNode?: Record<string, ParsedLog>;
    pairs?: PairLog[];
    singleNodeExpectation?: Expectation;
    pairExpectation?: Expectation;
    /**
     * Without an expectation, a result below this fraction of the median of its kind is slow.
     * @default 0.8
     */
    relativeThreshold?: number;
}

export interface SlowNode {
    host: string;
    reason: string;
}

export interface SlowNodeReport {
    slow: SlowNode[];
    /** Nodes in a bad pair that the data cannot clear or blame yet. */
    suspects: string[];
    /** Nodes with a good single-node result and at least one good pair (or good single-node with no pairs). */
    good: string[];
    /** Suspects against known-good nodes, to run next. */
    followUp: PairRound[];
    /** One line per finding, for the report. */
    lines: string[];
}

function median(xs: number[]): number | null {
    if (xs.length === 0) return null;
    const s = [...xs].sort((a, b) => a - b);
    const m = Math.floor(s.length / 2);
    return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
}

interface Judged {
    m: Measured;
    bad: boolean;
    why: string;
}

function judge(results: Measured[], exp: Expectation | undefined, rel: number): Judged[] {
    const med = median(results.map((r) => r.busbwGBps).filter((v): v is number => v !== null));
    const limit = exp ? exp.minBusbwGBps : med !== null ? med * rel : null;
    const limitText = exp ? `the plan's ${exp.minBusbwGBps} GB/s` : `${rel} x the median ${med?.toFixed(2)} GB/s`;
    return results.map((m) => {
        if (!m.completed) return { m, bad: true, why: "run did not complete" };
        if (m.wrong) return { m, bad: true, why: "wrong values" };
        if (m.busbwGBps === null) return { m, bad: true, why: "no busbw" };
        if (limit !== null && m.busbwGBps < limit) return { m, bad: true, why: `${m.busbwGBps.toFixed(2)} GB/s < ${limitText}` };
        return { m, bad: false, why: `${m.busbwGBps.toFixed(2)} GB/s` };
    });
}

/** Names the slow node(s). Pure; the inputs are parsed logs keyed by host / pair. */
export function findSlowNodes(input: SlowNodeInput): SlowNodeReport {
    const rel = input.relativeThreshold ?? 0.8;
    const slow = new Map<string, string>();
    const lines: string[] = [];
    const allHosts = new Set<string>();

    const single = Object.entries(input.singleNode ?? {});
    const singleJudged = judge(single.map(([, log]) => measure(log, input.singleNodeExpectation?.gradeFromBytes)), input.singleNodeExpectation, rel);
    const singleBad = new Set<string>();
    single.forEach(([host], i) => {
        allHosts.add(host);
        if (singleJudged[i].bad) {
            singleBad.add(host);
            slow.set(host, `single-node run: ${singleJudged[i].why}`);
        }
    });

    const pairs = input.pairs ?? [];
    const pairJudged = judge(pairs.map((p) => measure(p.log, input.pairExpectation?.gradeFromBytes)), input.pairExpectation, rel);
    const byHost = new Map<string, Array<{ other: string; bad: boolean; why: string }>>();
    pairs.forEach((p, i) => {
        const [a, b] = p.hosts;
        allHosts.add(a);
        allHosts.add(b);
        for (const [h, o] of [[a, b], [b, a]] as const) {
            if (!byHost.has(h)) byHost.set(h, []);
            byHost.get(h)!.push({ other: o, bad: pairJudged[i].bad, why: pairJudged[i].why });
        }
    });
    const hasGoodPair = (h: string): boolean => (byHost.get(h) ?? []).some((x) => !x.bad);

    // blame: every pair of the node is bad, and it is not explained by partners that are already slow,
    // and at least one partner is proven good elsewhere (or the node has >= 2 distinct partners)
    for (const [h, list] of byHost) {
        if (slow.has(h)) continue;
        if (list.length === 0 || list.some((x) => !x.bad)) continue;
        const unexplained = list.filter((x) => !slow.has(x.other) || singleBad.has(h));
        if (unexplained.length === 0) continue;
        const partnersGood = unexplained.some((x) => hasGoodPair(x.other) && !singleBad.has(x.other));
        const distinct = new Set(unexplained.map((x) => x.other)).size;
        if (partnersGood || distinct >= 2) {
            slow.set(h, `every pair is slow: ${unexplained.map((x) => `with ${x.other} ${x.why}`).join("; ")}`);
        }
    }

    // bad pairs not explained by a slow node: both ends stay suspects
    const suspects = new Set<string>();
    pairs.forEach((p, i) => {
        if (!pairJudged[i].bad) return;
        const [a, b] = p.hosts;
        if (slow.has(a) || slow.has(b)) return;
        for (const h of [a, b]) if (!hasGoodPair(h) || singleBad.has(h)) suspects.add(h);
        if (hasGoodPair(a) && hasGoodPair(b)) {
            lines.push(`pair ${a} + ${b} is slow (${pairJudged[i].why}) but both nodes pass with other partners: check the path between them (switch/port)`);
        }
    });

    const good = [...allHosts].filter((h) => !slow.has(h) && !suspects.has(h) &&
        (byHost.has(h) ? hasGoodPair(h) : !singleBad.has(h)));
    for (const [h, why] of slow) lines.unshift(`slow node ${h}: ${why}`);
    for (const s of suspects) lines.push(`suspect ${s}: in a slow pair that cannot be separated yet`);
    const tested = pairs.map((p) => p.hosts);
    const followUp = planFollowUp([...suspects], good, tested);
    if (suspects.size > 0 && followUp.length === 0) {
        lines.push("no known-good node to test the suspects against: compare their single-node results or add a node");
    }
    return {
        slow: [...slow].map(([host, reason]) => ({ host, reason })),
        suspects: [...suspects],
        good,
        followUp,
        lines,
    };
}
