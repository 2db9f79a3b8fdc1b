import { awsInstanceType } from "../catalog/aws";
import { azureVmSize } from "../catalog/azure";
import { BusbwFigure, GiB } from "../catalog/types";
import { Expectation } from "../validate/types";

/** What the grade needs to know about the hardware, whichever catalog it came from. */
export interface HardwareFacts {
    name: string;
    busbw: BusbwFigure[];
    /** total RDMA bandwidth of one node in Gb/s (EFA, IB HCAs or RoCE rails) */
    rdmaGbpsPerNode: number;
    transport: Expectation["transport"];
    gpuDirectRdma: boolean;
}

export interface ExpectationOptions {
    /** pass at this fraction of a measured figure (thresholds from health checks are used as they are) */
    minFraction: number;
    /** largest size of the sweep; a figure at a larger size is not comparable and is graded at this size */
    maxBytes: number;
    /** explicit floor in GB/s from the spec; wins over the catalog */
    minBusbwGBps?: number;
}

/**
 * Share of the per-node RDMA line rate that multi-node all_reduce must reach when no one has published a
 * figure for the type. Our own rule, from the published p5 runs: 4 to 16 nodes hold 354-357 GB/s on
 * 400 GB/s of EFA (89%), 32 nodes 321 (80%) (crazyguitar/aws-gpu-communication-benchmark, aws-efa.md §5);
 * 60% leaves room for larger jobs while still catching a missing rail or a TCP fallback.
 */
export const LINE_RATE_FLOOR = 0.6;

/**
 * The busbw a run of `nodes` nodes must reach. Multi-node runs use the published multi-node figure with the
 * closest node count not above `nodes` (busbw falls as rings grow), else a line-rate floor; single-node runs use
 * a published single-node figure or grade correctness only.
 */
export function expectationFromFacts(hw: HardwareFacts, nodes: number, opts: ExpectationOptions): Expectation {
    const base = { transport: nodes > 1 ? hw.transport : ("any" as const), requireGdr: nodes > 1 && hw.gpuDirectRdma };
    if (opts.minBusbwGBps !== undefined) {
        return { ...base, minBusbwGBps: opts.minBusbwGBps, gradeFromBytes: Math.min(opts.maxBytes, 1 * GiB), source: "cluster.validation.minBusbwGBps" };
    }
    // a figure measured with SHARP is not what the kit runs (NCCL_NET=IB, no CollNet): never its floor
    const sharp = hw.busbw.filter((f) => f.withSharp && (nodes > 1 ? f.nodes > 1 : f.nodes === 1));
    const candidates = hw.busbw.filter((f) => !f.withSharp && (nodes > 1 ? f.nodes > 1 : f.nodes === 1));
    const notAbove = candidates.filter((f) => f.nodes <= nodes).sort((a, b) => b.nodes - a.nodes);
    const fig = notAbove[0] ?? [...candidates].sort((a, b) => a.nodes - b.nodes)[0];
    if (fig) {
        const min = fig.kind === "threshold" ? fig.gbps : round(fig.gbps * opts.minFraction);
        const atBytes = Math.min(fig.bytes, opts.maxBytes);
        const note = fig.bytes > opts.maxBytes ? ` (published at ${fig.bytes} B, graded at ${atBytes} B)` : "";
        return {
            ...base,
            minBusbwGBps: min,
            expectedBusbwGBps: fig.gbps,
            gradeFromBytes: atBytes,
            source: `${fig.kind === "threshold" ? "health-check threshold" : `${Math.round(opts.minFraction * 100)}% of measured`} ` +
                `${fig.gbps} GB/s on ${fig.nodes} node${fig.nodes > 1 ? "s" : ""} at ${fig.bytes / GiB} GiB: ${fig.source}${note}`,
        };
    }
    if (nodes > 1 && hw.rdmaGbpsPerNode > 0) {
        const line = hw.rdmaGbpsPerNode / 8;
        return {
            ...base,
            minBusbwGBps: round(line * LINE_RATE_FLOOR),
            expectedBusbwGBps: line,
            gradeFromBytes: Math.min(opts.maxBytes, 8 * GiB),
            source: `${sharp.length ? `the published ${sharp.map((f) => `${f.gbps} GB/s on ${f.nodes} nodes`).join(", ")} for ${hw.name} was measured with ` +
                `SHARP, which validation does not run (${sharp[0].source})` : `no published figure for ${hw.name}`}: ` +
                `${LINE_RATE_FLOOR * 100}% of the ${hw.rdmaGbpsPerNode} Gb/s RDMA line rate per node`,
        };
    }
    return {
        ...base,
        minBusbwGBps: 0,
        gradeFromBytes: opts.maxBytes,
        source: `no published single-node figure for ${hw.name}: bandwidth not graded, correctness only`,
    };
}

function round(x: number): number {
    return Math.round(x * 10) / 10;
}

/** Catalog facts for an AWS instance type or Azure VM size, by name. */
export function hardwareFacts(name: string): HardwareFacts | undefined {
    const aws = awsInstanceType(name);
    if (aws) {
        return { name: aws.name, busbw: aws.busbw, rdmaGbpsPerNode: aws.efaGbps, transport: "efa", gpuDirectRdma: aws.gpuDirectRdma };
    }
    const az = azureVmSize(name);
    if (az) {
        return { name: az.name, busbw: az.busbw, rdmaGbpsPerNode: az.ib.hcas * az.ib.rateGbps, transport: "ib", gpuDirectRdma: az.gpuDirectRdma };
    }
    return undefined;
}

/**
 * For `rdmakit nccl-report --expect`: an instance type or VM size (graded as a run of `nodes` nodes, default 2),
 * or a plain number of GB/s. undefined when the name is unknown.
 */
export function expectationFor(nameOrGbps: string, nodes = 2): Expectation | undefined {
    const gbps = Number(nameOrGbps);
    if (nameOrGbps.trim() !== "" && Number.isFinite(gbps) && gbps > 0) {
        return { minBusbwGBps: gbps, gradeFromBytes: 1 * GiB, transport: "any", requireGdr: false, source: `--expect ${gbps} GB/s` };
    }
    const hw = hardwareFacts(nameOrGbps);
    return hw ? expectationFromFacts(hw, nodes, { minFraction: 0.8, maxBytes: 16 * GiB }) : undefined;
}
