/**
 * Switch counters around the incast, where the switch is reachable: read-only show commands per network OS, and the
 * parser for SONiC's PFC table. Reaching the switch (pinned-key SSH) is `rdmakit fabric check`'s transport; this file
 * only says what to run and how to read it. Commands and fields: roce-operations.md §5b (CL-QoS, CL-RoCE, CR, ANTA).
 */
import type { NetworkOs } from "../roce/spec";

/**
 * The read-only commands that show PFC pause, ECN marks and discards on `ports`, per OS:
 * - NVUE: `nv show interface <if> qos roce counters -o json` (rx/tx PFC pause packets, no-buffer discards,
 *   tx-ecn-stats ecn-marked-packets). source: Cumulus Linux 5.14 RoCE page (CL-RoCE)
 * - SONiC: `show pfc counters` (Rx/Tx PFC0-7 per port), `show queue wredcounters` (EcnMarked per queue; needs
 *   `counterpoll wredqueue enable`), `show priority-group drop counters`. source: sonic-utilities Command-Reference.md
 * - EOS: `show priority-flow-control counters | json`, `show qos interfaces ecn counters queue | json` (needs
 *   `random-detect ecn count`), `show interfaces counters discards | json`. source: aristanetworks/anta interfaces.py
 */
export function switchCounterCommands(os: NetworkOs, ports: string[]): string[] {
    if (os === "nvue") return ports.map((p) => `nv show interface ${p} qos roce counters -o json`);
    if (os === "sonic") return ["show pfc counters", "show queue wredcounters", "show priority-group drop counters"];
    return ["show priority-flow-control counters | json", "show qos interfaces ecn counters queue | json", "show interfaces counters discards | json"];
}

export interface PfcCounts {
    /** PFC frames received per priority 0-7 */
    rx: number[];
    /** PFC frames sent per priority 0-7 */
    tx: number[];
}

/**
 * `show pfc counters` (pfcstat) → per port, Rx and Tx PFC frames per priority. Two tables, `Port Rx` and `Port Tx`,
 * with PFC0 … PFC7 columns; values carry thousands separators ("1,200") and `N/A` where the ASIC does not count.
 * source: sonic-net/sonic-utilities scripts/pfcstat (table layout), tests/pfcstat_test.py (expected output)
 */
export function parseSonicPfcCounters(text: string): Record<string, PfcCounts> {
    const out: Record<string, PfcCounts> = {};
    let dir: "rx" | "tx" | undefined;
    for (const line of text.split("\n")) {
        const head = /^\s*Port (Rx|Tx)\s+PFC0/.exec(line);
        if (head) { dir = head[1] === "Rx" ? "rx" : "tx"; continue; }
        const f = line.trim().split(/\s+/);
        if (!dir || f.length !== 9 || /^-+$/.test(f[0])) continue;
        const values = f.slice(1).map((v) => (v === "N/A" ? Number.NaN : Number(v.replace(/,/g, ""))));
        if (values.some((v) => !Number.isNaN(v) && !Number.isInteger(v))) continue;
        (out[f[0]] ??= { rx: [], tx: [] })[dir] = values;
    }
    return out;
}

/** PFC frames a switch sent or received on `priority` between two `show pfc counters` readings, summed over ports. */
export function sonicPauseDelta(before: Record<string, PfcCounts>, after: Record<string, PfcCounts>, priority: number): number {
    let sum = 0;
    for (const [port, a] of Object.entries(after)) {
        const b = before[port];
        if (!b) continue;
        for (const dir of ["rx", "tx"] as const) {
            const d = (a[dir][priority] ?? Number.NaN) - (b[dir][priority] ?? Number.NaN);
            if (Number.isFinite(d) && d > 0) sum += d;
        }
    }
    return sum;
}
