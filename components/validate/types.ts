/**
 * Types shared by the nccl-tests parser, grader, slow-node finder, report and the validation component.
 * Format facts: NVIDIA/nccl-tests src/common.cu, src/util.cu (checked up to v2.19.6; real logs: test/fixtures/nccl-ref).
 */

/** What the plan expects of one nccl-tests run; produced per instance type by components/plan. */
export interface Expectation {
    /** Lowest acceptable busbw (GB/s, 1e9 B/s) at every graded size. */
    minBusbwGBps: number;
    /** Typical busbw for this hardware (GB/s); shown next to the result and drawn on the chart. */
    expectedBusbwGBps?: number;
    /** Rows with size >= this many bytes are graded; smaller sizes are latency-bound and not graded. */
    gradeFromBytes: number;
    /** Network transport the run must prove in its NCCL INFO lines ("any": no transport check). */
    transport: "efa" | "ib" | "any";
    /** Multi-node runs must show GPUDirect RDMA (`/GDRDMA` on the NET channels). */
    requireGdr: boolean;
    /** Where the numbers come from (catalog entry / published figure). */
    source: string;
}

/** One placement (out-of-place or in-place) of one row. `null` where the log printed `N/A` or nothing. */
export interface Placement {
    /** Average time per iteration in microseconds (the 2017-2018 layout printed ms; converted here). */
    timeUs: number | null;
    algbwGBps: number | null;
    busbwGBps: number | null;
    /** `#wrong` column (v2.13+): number of wrong elements. `null` for `N/A` or older layouts. */
    wrong: number | null;
    /** `error` / `res` column (before v2.13): max relative delta, a float, not a count. */
    maxError: number | null;
    /**
     * The check cell ended in `*`: rccl-tests from 924521f (2019-06-28) to 6e9e059 (2020-03-11) print `%5.0le%s` with "*"
     * when the delta is over its threshold (ROCm/rccl-tests src/common.cu BenchTime, CheckData `*error = true`).
     */
    overThreshold?: boolean;
}

export interface NcclRow {
    /** 1-based line number in the log. */
    line: number;
    sizeBytes: number;
    count: number;
    type: string;
    /** `null` when the layout has no redop column. */
    redop: string | null;
    /** `null` when the layout has no root column. */
    root: number | null;
    /**
     * Every field `null` when the table has only an in-place half (rccl-tests `-O 0`: ROCm/rccl-tests src/common.cu,
     * enable_out_of_place since a2bec5d, 2024-01-04).
     */
    outOfPlace: Placement;
    /** `null` when the row only has an out-of-place half (2017-2018 broadcast; rccl-tests with in-place off). */
    inPlace: Placement | null;
}

export interface RankInfo {
    rank: number;
    host: string;
    device: number;
    pid: number | null;
    busId: string;
    gpu: string;
}

/** Column layout of the result table, by nccl-tests era (FORMAT.md §2). */
export type TableLayout = "2017" | "2019" | "2022" | "unknown";

export interface RunParams {
    nThread?: number;
    nGpus?: number;
    minBytes?: number;
    maxBytes?: number;
    warmupIters?: number;
    iters?: number;
    validation?: number;
}

export interface LineText {
    line: number;
    text: string;
}

export interface NcclRun {
    /** e.g. `all_reduce_perf`; `null` when neither printed, named by the command nor inferable. */
    collective: string | null;
    /** How `collective` was found. */
    collectiveFrom: "printed" | "command" | "busbw-factor" | "file-name" | null;
    /** `# nccl-tests version X` (v2.17.4+); rccl-tests' `rccl-tests: Version X` or `# rccl-tests version X`. */
    version: string | null;
    /**
     * Which program printed the run: NVIDIA/nccl-tests, or ROCm/rccl-tests (its fork for AMD GPUs and RCCL, same table,
     * footer and busbw factors), told by a line only rccl-tests prints (parse.ts RCCL_MARKS).
     */
    tool: "nccl-tests" | "rccl-tests";
    params: RunParams;
    firstLine: number;
    lastLine: number;
    layout: TableLayout;
    /** The check column as printed: `#wrong`, `error` or `res`; `null` when no header was seen. */
    checkColumn: string | null;
    /** Standard columns the header lacks (`in-place #wrong`): read as absent (null), never filled in. */
    missingColumns: string[];
    /** Where the column layout came from: the printed header, or (no header) the shape of the first row. */
    columnsFrom: "header" | "row-shape" | null;
    ranks: RankInfo[];
    /**
     * The rank list is incomplete: elided by the author (`...`), a line cut by nccl-tests at 2048 bytes, or ranks missing
     * below the highest listed (an excerpt that keeps only the last rank line). Its hosts are then not the job's.
     */
    ranksElided: boolean;
    /** Rank numbers listed more than once (separate one-process jobs each print their own `Rank 0`). */
    duplicateRanks: number[];
    /** Total ranks: from the rank lines, else inferred from busbw/algbw (see `nRanksFrom`). */
    nRanks: number | null;
    nRanksFrom: "ranks" | "busbw-factor" | null;
    /** Hosts in rank order, without repeats. Empty when the log has no rank lines. */
    hosts: string[];
    rows: NcclRow[];
    avgBusbwGBps: number | null;
    /**
     * nccl-tests' own floor check on the average: `OK` / `FAILED` after `# Avg bus bandwidth` when NCCL_TESTS_MIN_BW is
     * set (FAILED below 0.9 x that floor; NVIDIA/nccl-tests src/util.cu writeResultFooter, src/common.cu), else null.
     */
    avgBusbwCheck: { ok: boolean; line: number; text: string } | null;
    outOfBounds: { count: number; ok: boolean; line: number } | null;
    /** Footer printed and no failure before it. */
    completed: boolean;
    /** `Test NCCL failure`, `Test CUDA failure`, `Test timeout`, launcher aborts seen inside the run. */
    failures: LineText[];
    /** Author notes such as `# Truncated  smaller message sizes`. */
    notes: LineText[];
    /**
     * The test's own refusal to measure: hypercube_perf prints `nRanks N is not a power of 2, skipping` and then its footer
     * with no row (NVIDIA/nccl-tests v2.19.6 src/hypercube.cu HyperCubeRunTest). `null` when none was printed.
     */
    skipped: LineText | null;
    /**
     * nccl-tests' own lines after its footer: since v2.17.3 main() ends a run whose results check failed (out-of-bounds
     * values, NCCL_TESTS_MIN_BW) with ` .. host pid N: Test failure common.cu:L` (TESTCHECK on run()'s testNumResults),
     * and a failure in the teardown prints the same (NVIDIA/nccl-tests@a0b82b2 src/common.cu main, run; FORMAT.md §1).
     */
    afterFooter: LineText[];
    /**
     * NCCL's last error after the footer: `# error: <text>` (v2.17.3+ writeErrors), or the bare line nccl-tests v2.13.4 to
     * v2.17.2 print there (`PRINT("%s\n", ncclGetLastError(NULL))`, src/common.cu main; rccl-tests from 52aee69,
     * 2024-07-31); null when none was printed or it was empty.
     */
    lastError: LineText | null;
    /** A rank line cut short (`#  Rank  5 Group  0 Pi`, `#  Ra`): the log was cut there; the rank list is incomplete. */
    cutRankLine: LineText | null;
}

/** Count plus the first few matching lines (1-based line numbers). */
export interface EvidenceSet {
    count: number;
    lines: LineText[];
}

export interface TransportEvidence {
    /** Lines from NCCL itself (`NCCL INFO`, `NCCL WARN`, `NCCL TRACE`). 0 means NCCL_DEBUG was not INFO. */
    ncclDebugLines: number;
    /** Names from `Using network X`, without repeats (`IB`, `AWS Libfabric`, `Libfabric`, `Socket`, `IBext_v8`). */
    networks: string[];
    /** OFI provider from `NET/OFI Selected Provider is X` (`efa`, `efa;ofi_rxr`, `cxi`, `verbs;ofi_rxm`). */
    ofiProviders: string[];
    ib: EvidenceSet;
    ofi: EvidenceSet;
    /** Channel/ring lines that go `via NET/...`. */
    netChannels: EvidenceSet;
    /** NET channel lines with `/GDRDMA`, and `GPU Direct RDMA Enabled` lines. */
    gdr: EvidenceSet;
    /** NET channel lines without `/GDRDMA`. */
    netChannelsWithoutGdr: EvidenceSet;
    /** `Using network Socket`, `via NET/Socket`. (`NET/Socket : Using ...` alone is bootstrap in NCCL <= 2.4.) */
    socket: EvidenceSet;
    /** Net plugin not found / not loadable: NCCL then uses its internal IB or Socket transport. */
    pluginMissing: EvidenceSet;
    /** libfabric could not register GPU memory with EFA: no peer-to-peer path. */
    cudaRegisterFailed: EvidenceSet;
    warnings: EvidenceSet;
    /** Every `NCCL WARN` line (the first 2000), for the one printed just before a failure. */
    warnLines: LineText[];
    /** `GPU Direct RDMA Disabled for ...` lines: why NCCL staged through host memory. */
    gdrDisabled: EvidenceSet;
    /** Host names from the `host:pid:tid [dev] NCCL INFO` prefix, in order of appearance, without repeats. */
    ncclHosts: string[];
    /** Largest `nranks N` NCCL printed when a communicator was made (`ncclCommInitRank ... nranks 16`); null if none. */
    ncclRanks: number | null;
    /** Devices from `NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ...`, without repeats (`mlx5_0:1/IB`). */
    ibDevices: string[];
    /** IB device per index of the `NET/IB : Using [i]dev` list (first host that printed it), e.g. `{"1": "mlx5_2:1/IB"}`. */
    ibDeviceByIndex: Record<string, string>;
    /**
     * Virtual devices NCCL made of listed ones (`NET/IB : Made virtual device [2] name=mlx5_0+mlx5_1 ...`, printed with
     * NCCL_DEBUG_SUBSYS NET): index → the physical device names.
     */
    ibVirtualDevices: Record<string, string[]>;
    /** IB device indexes the NET channels used (`via NET/IB/1/GDRDMA` → 1), with line counts. */
    ibChannelDevices: Record<string, number>;
    /** NET channel lines per transport name (`AWS Libfabric`, `Libfabric`, `IB`, `IBext_v8`, `Socket`). */
    netChannelTransports: Record<string, number>;
    /** Channel lines inside a node (`via P2P/...`, `via SHM/...`, NVLS). */
    localChannels: EvidenceSet;
}

export interface ParsedLog {
    /** Label given by the caller (file name), used in reports. */
    name: string;
    lineCount: number;
    runs: NcclRun[];
    transport: TransportEvidence;
    /** Launcher / job errors outside any run (mpirun, srun). */
    launcherErrors: LineText[];
}

export interface Verdict {
    /** Stable check name, e.g. `busbw`, `correctness`, `completed`, `transport`, `socket-fallback`, `gpudirect`. */
    check: string;
    ok: boolean;
    expected: string;
    seen: string;
    /** What to do when the check fails. */
    hint?: string;
    /** Log lines that back the verdict. */
    evidence?: LineText[];
}

export interface BusbwPoint {
    sizeBytes: number;
    outOfPlace: number | null;
    inPlace: number | null;
}

export interface RunGrade {
    run: number;
    collective: string | null;
    verdicts: Verdict[];
    /** busbw at the largest size of the run. */
    largest: BusbwPoint | null;
    /** The graded figure: the lowest per-size busbw (mean of the placements) among sizes >= gradeFromBytes. */
    gradedBusbwGBps: number | null;
    pass: boolean;
}

export interface LogGrade {
    name: string;
    expectation: Expectation;
    /** File-level verdicts (transport, GPUDirect, launcher errors). */
    verdicts: Verdict[];
    runs: RunGrade[];
    pass: boolean;
}
