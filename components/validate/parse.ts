/**
 * Pure parser for nccl-tests output, every era (2017 .. v2.19.x), with launcher prefixes, NCCL debug lines,
 * several runs per file, split rows, truncated and aborted runs.
 * Format facts: NVIDIA/nccl-tests src/util.cu, src/common.cu (real logs of each layout: test/fixtures/nccl-ref/SOURCES.md).
 */
import type {
    LineText, NcclRow, NcclRun, ParsedLog, Placement, RunParams, TableLayout,
} from "./types";
import { scanTransport } from "./transport";

// source: Open MPI `mpirun --tag-output` writes `[jobid,rank]<stdout>:` before each write, so a row written in
// pieces carries the tag again mid-line (FORMAT.md §5, log 06).
const OMPI_TAG = /\[\d+,\d+\]<std(?:out|err)>:/g;
// source: MPICH `mpiexec -prepend-rank` (`-l`) starts each write with `[<rank>] `, so a row written in pieces carries
// it again mid-line, glued to the token before (`-1[0]    1626.5`): NVIDIA/nccl#1453 (test/fixtures/nccl).
const HYDRA_TAG = /^\[\d+\]\s/;
const HYDRA_TAGS = /\[\d+\]/g;
// source: Slurm `srun --label` prefixes `<task>: ` (FORMAT.md §5, log 04).
const SRUN_LABEL = /^\s*\d+: /;
// Lines written by NCCL itself (NCCL_DEBUG=INFO/WARN/TRACE) and `NCCL version 2.x+cudaY`.
const NCCL_LINE = /\bNCCL (?:INFO|WARN|TRACE)\b|^\s*NCCL version \d/;
// libfabric's own log lines (FI_LOG_LEVEL=info/debug), `libfabric:<pid>:<time>::<provider>:<subsystem>:<func>():<line><level>`
// (ofiwg/libfabric src/log.c; NERSC Perlmutter fixtures in test/fixtures/nccl): any process's, never nccl-tests' output
const FABRIC_LOG_LINE = /^\s*libfabric:\d+:\d+:/;

const COLLECTIVES = [
    "all_reduce", "all_gather", "reduce_scatter", "alltoallv", "alltoall", "broadcast", "reduce", "sendrecv",
    "gather", "scatter", "hypercube",
];
// A binary is `<test>_perf` plus the build's NAME_SUFFIX (`all_gather_perf_mpi` with `NAME_SUFFIX=_mpi`: NVIDIA/nccl-tests
// src/Makefile), and `# Collective test starting:` prints its basename (src/common.cu main: programName = argv[0]'s).
const COMMAND_PERF = /\b(all_reduce|all_gather|reduce_scatter|alltoallv|alltoall|broadcast|reduce|sendrecv|gather|scatter|hypercube)_perf(?![A-Za-z0-9])/;

/** The test a printed program name runs: `all_gather_perf_mpi` -> `all_gather_perf`; other names as printed. */
export function testOfProgram(name: string): string {
    const m = name.match(COMMAND_PERF);
    return m && m.index === 0 ? `${m[1]}_perf` : name;
}
// Loose names as people write them in file names ("allgather", "all-reduce", "reducescatter").
const FILE_HINTS: Array<[RegExp, string]> = [
    [/all[_-]?reduce/i, "all_reduce_perf"], [/all[_-]?gather/i, "all_gather_perf"],
    [/reduce[_-]?scatter/i, "reduce_scatter_perf"], [/all[_-]?to[_-]?all/i, "alltoall_perf"],
    [/broadcast/i, "broadcast_perf"], [/send[_-]?recv/i, "sendrecv_perf"],
];

/** Removes launcher prefixes; keeps the rest of the line as printed. */
export function stripLauncherPrefix(raw: string): { text: string; source: string } {
    let source = "";
    const tag = raw.match(/^\[\d+,\d+\]<std(?:out|err)>:/);
    if (tag) source = tag[0];
    let text = raw.replace(OMPI_TAG, "");
    if (!tag && HYDRA_TAG.test(text)) {
        source = text.match(/^\[\d+\]/)![0];
        // spaces stand in for the tags, so glued tokens (`-1[0]1626.5`) come apart
        return { text: text.replace(HYDRA_TAGS, " ").replace(/\r$/, ""), source };
    }
    if (!tag) {
        const label = text.match(SRUN_LABEL);
        if (label) {
            source = label[0].trim();
            text = text.slice(label[0].length);
        }
    }
    return { text: text.replace(/\r$/, ""), source };
}

/** Parses a number as nccl-tests prints it (`%g`, `%7.2f`, `1.6e+07`); `N/A` and junk give null. */
export function num(token: string | undefined): number | null {
    if (token === undefined) return null;
    if (!/^[+-]?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?$/i.test(token)) return null;
    const v = Number(token);
    return Number.isFinite(v) ? v : null;
}

interface Columns {
    /** Names before the first `time` (size, count, type, redop, root). */
    prefix: string[];
    /** Names of the out-of-place placement (time, algbw, busbw, #wrong / error / res, optional extras). */
    placement: string[];
    /** Names of the in-place placement as the header prints them; fewer when the author removed a column. */
    inPlace: string[];
    /** Columns of the standard layout the header lacks (`in-place #wrong`, `out-of-place busbw`, ...). */
    missing: string[];
    /** `header`: from the printed column header; `row-shape`: no header, inferred from the first row. */
    from: "header" | "row-shape";
    layout: TableLayout;
    checkColumn: string | null;
    /**
     * The table has one placement only (rccl-tests `-O 0` prints the in-place half alone, its newest util.cu either half
     * alone: ROCm/rocm-systems projects/rccl-tests/src/util.cu writeResultHeader); null: both, or the 2017 layout.
     */
    single: "out-of-place" | "in-place" | null;
    /** Names printed after the placements (rccl-tests `algo proto nchannels`), whose row cells are not figures. */
    trailing: string[];
}

const HEADER = /^\s*(?:#\s*)?(size|bytes)\s+(count|N)\s+type\b.*\b(time|cputime)\b/;

// source: NVIDIA/nccl-tests@a0b82b2 src/util.cu: `-S 1` (report_timestamps) adds a last header column `timestamp` and
// ends each row, after the in-place placement, with writeTimestamp's "%21s" of TIME_STRING_FORMAT "%Y-%m-%d %H:%M:%S"
const TIMESTAMP_TAIL = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$/;

/** The row without a `-S 1` timestamp at its end (checked on the last 19 characters: linear). */
function withoutTimestamp(text: string): string {
    const t = text.trimEnd();
    return TIMESTAMP_TAIL.test(t.slice(-19)) ? t.slice(0, -19) : text;
}

// source: rccl-tests with `-a`-style algorithm output (output_algo_proto_channels) heads three more columns after the
// placements and ends each row with `%8s  %8s  %10d` (algorithm, protocol, channels: words, not figures):
// ROCm/rocm-systems projects/rccl-tests/src/util.cu writeResultHeader, src/common.cu TimeTest
const TRAILING_NAMES = ["algo", "proto", "nchannels"];

function columnsFromHeader(text: string, banner: "out-of-place" | "in-place" | null): Columns {
    const all = text.replace(/^\s*#/, "").trim().split(/\s+/);
    // the timestamp is no placement column (its row cell is dropped by withoutTimestamp)
    const noStamp = all[all.length - 1] === "timestamp" ? all.slice(0, -1) : all;
    const tail = noStamp.slice(-TRAILING_NAMES.length);
    const trailing = tail.join(" ") === TRAILING_NAMES.join(" ") ? tail : [];
    const tokens = noStamp.slice(0, noStamp.length - trailing.length);
    const first = tokens.findIndex((t) => t === "time" || t === "cputime");
    const prefix = tokens.slice(0, first);
    const rest = tokens.slice(first);
    const second = rest.findIndex((t, i) => i > 0 && (t === "time" || t === "cputime"));
    const placement = second > 0 ? rest.slice(0, second) : rest;
    const inPlace = second > 0 ? rest.slice(second) : [];
    const check = [...placement, ...inPlace].find((t) => t === "#wrong" || t === "error" || t === "res") ?? null;
    // source: FORMAT.md §2 — `res` + ms times 2017-2018; `error` 2019-2022; `#wrong` since 51af557 (v2.13.0).
    const layout: TableLayout = check === "#wrong" ? "2022" : check === "error" ? "2019" : check === "res" ? "2017" : "unknown";
    // every era prints time, algbw, busbw and a check column per placement; in-place is absent only from the
    // 2017-2018 broadcast (FORMAT.md §2), so anything else missing was removed by whoever published the log
    const std = ["algbw", "busbw", check ?? "#wrong"];
    const missing = [
        ...std.filter((c) => !placement.includes(c)).map((c) => `out-of-place ${c}`),
        ...(second > 0 ? [...(inPlace.some((t) => t === "time" || t === "cputime") ? [] : ["time"]), ...std].filter((c) => !inPlace.includes(c)).map((c) => `in-place ${c}`) : []),
        ...(check === null ? ["check column (#wrong / error)"] : []),
    ];
    // one placement under a banner naming one (rccl-tests); the 2017 broadcast keeps its own rule (parseNcclLog)
    const single = second > 0 || layout === "2017" ? null : banner ?? "out-of-place";
    return { prefix, placement, inPlace: second > 0 ? inPlace : placement, missing, from: "header", layout, checkColumn: check, single, trailing };
}

const REDOPS = new Set(["sum", "prod", "min", "max", "avg", "none", "mulsum", "premulsum"]);

/** Guesses the columns of a row when the log has no header (excerpts that start at the first row). */
function columnsFromRow(tokens: string[]): Columns | null {
    const hasRedop = tokens.length > 3 && (REDOPS.has(tokens[3]) || /^[a-z]+$/.test(tokens[3]));
    const redopTok = hasRedop ? 1 : 0;
    const rootTok = tokens.length > 3 + redopTok && /^-?\d+$/.test(tokens[3 + redopTok]) && hasRedop ? 1 : 0;
    const prefix = ["size", "count", "type", ...(redopTok ? ["redop"] : []), ...(rootTok ? ["root"] : [])];
    const perPlacement = (tokens.length - prefix.length) / 2;
    if (perPlacement !== 4) return null;
    const looksCount = /^\d+$/.test(tokens[prefix.length + 3]) || tokens[prefix.length + 3] === "N/A";
    const placement = ["time", "algbw", "busbw", looksCount ? "#wrong" : "error"];
    return {
        prefix, placement, inPlace: placement, missing: [], from: "row-shape",
        layout: looksCount && rootTok ? "2022" : "unknown",
        checkColumn: looksCount ? "#wrong" : "error", single: null, trailing: [],
    };
}

const ROW_START = /^\s*\d+\s+\d+\s+[a-z][a-z0-9_]*\b/i;

/** A figure cell: a number, `N/A`, or (rccl-tests 2019-2020, see Placement.overThreshold) a number ending in `*`. */
function isCell(t: string): boolean {
    return t === "N/A" || num(t.endsWith("*") ? t.slice(0, -1) : t) !== null;
}

const NO_FIGURES: Placement = { timeUs: null, algbwGBps: null, busbwGBps: null, wrong: null, maxError: null };

function parsePlacement(tokens: string[], names: string[], timeInMs: boolean): Placement | null {
    if (tokens.length < 3) return null;
    const get = (name: string): string | undefined => {
        const i = names.indexOf(name);
        return i >= 0 ? tokens[i] : undefined;
    };
    const time = num(get("time") ?? get("cputime"));
    const check = get("#wrong");
    const err = get("error") ?? get("res");
    const flagged = err !== undefined && err.endsWith("*");
    return {
        timeUs: time === null ? null : timeInMs ? time * 1000 : time,
        algbwGBps: num(get("algbw")),
        busbwGBps: num(get("busbw")),
        wrong: num(check),
        maxError: num(flagged ? err.slice(0, -1) : err),
        ...(flagged ? { overThreshold: true } : {}),
    };
}

function parseRow(text: string, line: number, cols: Columns): NcclRow | null {
    const tokens = text.trim().split(/\s+/);
    const np = cols.prefix.length;
    const per = cols.placement.length;
    if (tokens.length < np + 3) return null;
    const size = num(tokens[0]);
    const count = num(tokens[1]);
    if (size === null || count === null || !Number.isInteger(size)) return null;
    const field = (name: string): string | undefined => {
        const i = cols.prefix.indexOf(name);
        return i >= 0 ? tokens[i] : undefined;
    };
    const typeTok = field("type");
    if (!typeTok || !/^[a-z][a-z0-9_]*$/i.test(typeTok)) return null;
    const figures = tokens.slice(np);
    // the words under `algo proto nchannels` end the row (rccl-tests): not figures
    const body = cols.trailing.length && figures.length > cols.trailing.length ? figures.slice(0, -cols.trailing.length) : figures;
    // every remaining token must be numeric or N/A, else this is not a result row
    if (!body.every(isCell)) return null;
    const ms = cols.layout === "2017";
    const first = parsePlacement(body.slice(0, per), cols.placement, ms);
    if (!first) return null;
    const oop = cols.single === "in-place" ? NO_FIGURES : first;
    const ip = cols.single === "in-place" ? first : cols.single === "out-of-place" ? null
        : body.length >= per + 3 ? parsePlacement(body.slice(per, per + cols.inPlace.length), cols.inPlace, ms) : null;
    const redop = field("redop") ?? field("op");
    const root = field("root");
    return {
        line,
        sizeBytes: size,
        count,
        type: typeTok,
        redop: redop ?? null,
        root: root === undefined ? null : num(root),
        outOfPlace: oop,
        inPlace: ip,
    };
}

function parseParams(text: string): RunParams {
    const grab = (re: RegExp): number | undefined => {
        const m = text.match(re);
        return m ? Number(m[1]) : undefined;
    };
    // rccl-tests 2019-06 .. 2023-04 print `# nThread: 1 nGpus: 8 minBytes: 8 ... warmupIters: 5 iters: 20 validation: 1`
    // (`nThreads: .. nRanks: ..` from 2022): ROCm/rccl-tests src/common.cu at 924521f, 6156759, d16d1fb
    return {
        nThread: grab(/nThreads?:?\s+(\d+)/),
        nGpus: grab(/nGpus:?\s+(\d+)/),
        minBytes: grab(/minBytes:?\s+(\d+)/),
        maxBytes: grab(/maxBytes:?\s+(\d+)/),
        warmupIters: grab(/warmup ?[iI]ters:\s*(\d+)/),
        iters: grab(/(?<!agg |warmup )iters:\s*(\d+)/),
        validation: grab(/validation:\s*(\d+)/),
    };
}

// `#  Rank  0 Group  0 Pid 204199 on  nid005471 device  0 [0009:01:00] NVIDIA GH200 120GB` and the older
// `#   Rank  0 Pid  87569 on    seville device  0 [0x36] Tesla V100-SXM3-32GB` (FORMAT.md §1).
const RANK_LINE = /^\s*(?:#\s*)?Rank\s+(\d+)\s+(?:Group\s+\d+\s+)?(?:Pid\s+(\d+)\s+)?on\s+(\S+)\s+device\s+(\d+)\s+\[([^\]]*)\]\s*(.*)$/;
const PARAM_LINE = /^\s*(?:#\s*)?nThreads?(:?)\s+\d+\s+nGpus:?\s+\d+/;
// `# nccl-tests version X ..` (v2.17.4+); rccl-tests' newest util.cu prints `# rccl-tests version X-hash rccl-headers=..`
const VERSION_LINE = /^\s*#\s*(nccl|rccl)-tests version\s+(\S+)/;
// Lines only ROCm/rccl-tests prints (src/common.cu): `rccl-tests: Version <git>` after the parameters (3f7f785,
// 2024-03-28), and `# Errors with asterisks indicate errors that have exceeded the maximum threshold.` before the footer
// when data is checked (924521f, 2019-06-28 onwards); its parameter line with colons is the third mark (parseParams).
// (the text after it is trimmed in code: a lazy group before `\s*$` is quadratic on a line of blanks)
const RCCL_BANNER = /^\s*rccl-tests: Version\b(.*)$/;
const RCCL_ASTERISK_NOTE = /^\s*#\s*Errors with asterisks indicate errors that have exceeded the maximum threshold\.?\s*$/;
const STARTING_LINE = /^\s*#\s*Collective test starting:\s*(\S+)/;
const CONCLUDED_LINE = /^\s*#\s*Collective test concluded:\s*(\S+)/;
const OOB_LINE = /^\s*(?:#\s*)?Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)/;
// `# %-20s : %g %s`: the average, then `OK`/`FAILED` only when NCCL_TESTS_MIN_BW is set (src/util.cu writeResultFooter)
// `%g` of 0/0 (no row measured: bw[0] /= bw_count[0], src/common.cu run() at v2.19.6) prints `-nan` or `nan` with glibc
const AVG_LINE = /^\s*(?:#\s*)?Avg bus bandwidth\s*:\s*(-?nan|[-+]?inf|[-+0-9.eE]+)(?:\s+(OK|FAILED))?/i;
// source: NVIDIA/nccl-tests v2.19.6 src/hypercube.cu HyperCubeRunTest: `printf("nRanks %d is not a power of 2, skipping\n")`
const SKIP_LINE = /^\s*nRanks\s+\d+\s+is not a power of 2, skipping\s*$/;
const BANNER_LINE = /^\s*#\s*out-of-place\s+in-place\s*$/;
// a banner over one placement only (rccl-tests `-O 0`, or either half off in its newest util.cu writeResultHeader)
const SINGLE_BANNER = /^\s*#\s*(out-of-place|in-place)\s*$/;
const UNITS_LINE = /^\s*#\s*\(B\)\s+\(elements\)/;
// source: src/common.cu TESTCHECK/NCCLCHECK/CUDACHECK print `host: Test NCCL failure file:line '...'`, then
// ` .. host pid N: Test failure file:line`; `-T` prints `Test timeout` (FORMAT.md §1).
const FAILURE_LINE = /Test (?:NCCL|CUDA) failure|: Test failure |Test timeout \(\d+s\)/;
// The host nccl-tests names in its failure lines (src/common.h: getHostName, then `%s: Test ... failure`,
// ` .. %s pid %d: Test failure`; src/common.cu: `%s: Test timeout (%ds)`).
// Not anchored: a failure inside a row is printed after the row's preamble on the same line
// (`     2097152         32768     float    none      -1 node0: Test CUDA failure common.cu:389 ...`, NVIDIA/nccl-tests#355).
const FAILURE_HOST = /(?:^|\s)(?:\.\.\s+)?([A-Za-z0-9][\w.-]*)(?: pid \d+)?: Test (?:NCCL failure|CUDA failure|failure|timeout)\b/;
// `# error: %s` after the footer (src/util.cu writeErrors, v2.17.3+)
// main()'s TESTCHECK trace: ` .. host pid N: Test failure common.cu:L` (src/common.h TESTCHECK)
const EXIT_TRACE = /^\s*\.\.\s+[A-Za-z0-9][\w.-]* pid \d+: Test failure /;
// (trimmed by errorText: `(.+?)\s*$` took seconds on one line of 50,000 blanks)
const LAST_ERROR = /^\s*#\s*error:(.*\S.*)$/;
// A process's rank lines are cut at 2048 bytes and end in `...` (src/util.cu: MAX_LINE, `strcpy(line+MAX_LINE-5, "...\n")`)
const RANK_CUT = /^\s*#\s*Rank\s+\d+\b.*\.\.\.\s*$/;
// A rank line the log itself cut short: a start of `#  Rank %2d Group %2d Pid %6d on %10s device %2d [..] name` that
// stops before its bracketed bus id closes (`#  Ra`, `#  Rank 12 Group  0 Pi`). nccl-tests prints every rank line whole
// (src/util.cu writeDeviceReport), so the capture was cut there: a truncated log, not a shorter rank list. Linear (no regex
// that scans ahead from every blank).
function isPartialRankLine(text: string): boolean {
    const t = text.trim();
    if (!t.startsWith("#")) return false;
    const rest = t.slice(1).trimStart();
    if (rest.length > 0 && rest.length <= 4 && "Rank".startsWith(rest)) return true;
    return /^Rank\s+\d+(?:\s|$)/.test(rest) && !rest.includes("]");
}
// nccl-tests v2.13.4 (d313d20) to v2.17.2 print NCCL's last error as a bare line after the footer: `PRINT("%s\n",
// ncclGetLastError(NULL))`, an empty line when there is none (src/common.cu main); rccl-tests from 52aee69 (2024-07-31,
// with its `#wrong` column) likewise. Since v2.17.3 it is `# error: <text>` or an empty line (src/util.cu writeErrors).
// What is not NCCL's error text but may follow an excerpt whose author dropped that empty line: a shell prompt or command,
// or the rule of dashes Open MPI / PRRTE frame their notices with (test/fixtures/nccl/alcf-sophia-*, nccl-tests-219-*).
const NOT_AN_ERROR_TEXT = /^\s*(?:-{20,}\s*$|[$>%]\s|\+\s|(?:\([^)]*\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^\s$#]*)?\s?[$#%>]|\[[\w.-]+@[^\]]*\][$#])(?:\s|$)|(?:real|user|sys)\s+\d)/;
/** At most this much of NCCL's last error is kept (NCCL holds 1024 bytes: src/debug.cc ncclLastError). */
const MAX_ERROR_TEXT = 400;

/** NCCL's last error as shown: control characters out, bounded. */
function errorText(text: string): string {
    // eslint-disable-next-line no-control-regex
    return text.replace(/[\u0000-\u001f\u007f]/g, " ").trim().slice(0, MAX_ERROR_TEXT);
}

/** The host a failure line of nccl-tests names, or null (launcher lines name none). */
export function failureHost(text: string): string | null {
    const m = text.match(FAILURE_HOST);
    return m ? m[1] : null;
}
// Launcher messages that end a job early (Open MPI / PRRTE, Slurm; the texts and their sources: launcher.ts). The name
// before `noticed` is the launcher's own (mpirun, mpiexec, orterun, prterun); Open MPI 5's PRRTE prints `detected that one
// or more processes exited with non-zero status` with no `Primary job terminated` line before it (test/fixtures/nccl/
// alcf-sophia-*), and its `Process name:` / `Remote daemon:` lines name the process or node; MPICH's Hydra frames its
// notice in `=` lines (`=   BAD TERMINATION ..`, `=   PID %d RUNNING AT %s`, `=   EXIT CODE: %d`: launcher.ts).
const LAUNCHER_ERROR = /(?:mpirun|mpiexec|orterun|prterun) (?:noticed|has exited|detected that one or more processes exited)|MPI_ABORT was invoked|(?:ORTE|PRTE) has lost communication|^\s*(?:Remote daemon\s*:.* on node |Process name:\s*\[|=\s+(?:BAD TERMINATION OF ONE OF YOUR APPLICATION PROCESSES|(?:RANK \d+ )?PID \d+ RUNNING AT |KILLED BY SIGNAL: |EXIT CODE: ))|srun: error:|slurmstepd: error:|Primary job\s+terminated|terminate called after throwing|Segmentation fault|Bus error/;
// PRRTE wraps `%s noticed that process rank %lu with PID %lu on node %s exited on\nsignal %d (%s).` (launcher.ts)
const SIGNAL_TAIL = /^\s*signal \d+(?: \([^)]{1,60}\))?\.?\s*$/;
const TRUNCATED_NOTE = /^\s*#\s*Truncated\b/i;

/** Stage reached by a run; a start marker at or below the current stage opens a new run. */
enum Stage { None, Version, Starting, Params, Devices, Header, Rows, Footer, Concluded }

interface Draft {
    run: NcclRun;
    stage: Stage;
    cols: Columns | null;
    /** Rows waiting for the rest of their fields (row written in pieces), by launcher source. */
    pending: Map<string, { text: string; line: number }>;
    commandHint: string | null;
    /** A failure head was printed after this run's footer: later trace lines are not its exit status. */
    foreignTail: boolean;
    /** The banner above the column header named one placement only (SINGLE_BANNER). */
    banner: "out-of-place" | "in-place" | null;
    /** A `# nccl-tests version` / `# rccl-tests version` line opened the run (versions that print `# error:`). */
    versionLine: boolean;
    /** A rank line had `Group` (nccl-tests v2.13.4+, d313d20; rccl-tests' newest util.cu). */
    groupRanks: boolean;
    /** The next line is NCCL's bare last error (see NOT_AN_ERROR_TEXT's note); set at the footer for the versions that print one. */
    bareErrorNext: boolean;
}

function newDraft(line: number, commandHint: string | null): Draft {
    return {
        run: {
            collective: null, collectiveFrom: null, version: null, params: {}, firstLine: line, lastLine: line,
            layout: "unknown", checkColumn: null, missingColumns: [], columnsFrom: null, ranks: [], ranksElided: false, duplicateRanks: [], nRanks: null, nRanksFrom: null,
            hosts: [], rows: [], avgBusbwGBps: null, avgBusbwCheck: null, outOfBounds: null, completed: false, failures: [], notes: [],
            skipped: null, afterFooter: [], lastError: null, tool: "nccl-tests", cutRankLine: null,
        },
        stage: Stage.None,
        cols: null,
        pending: new Map(),
        commandHint,
        foreignTail: false,
        banner: null,
        versionLine: false,
        groupRanks: false,
        bareErrorNext: false,
    };
}

/** busbw/algbw factor per collective (FORMAT.md §4, source: NVIDIA/nccl-tests doc/PERFORMANCE.md). */
export function busbwFactor(collective: string, nRanks: number): number {
    const c = collective.replace(/_perf$/, "");
    if (c === "all_reduce") return (2 * (nRanks - 1)) / nRanks;
    if (["all_gather", "reduce_scatter", "alltoall", "alltoallv", "gather", "scatter"].includes(c)) return (nRanks - 1) / nRanks;
    return 1;
}

/**
 * The rank count every printed busbw/algbw pair of the run allows, or null when more than one count fits. nccl-tests
 * prints both with "%6.2f" in every era (src/common.cu, the result row's PRINT: `%7s  %6.2f  %6.2f`; 2017's `%5.2f`),
 * so each is known to +-0.005 only; busbw = algbw * factor(n) (FORMAT.md §4: all_reduce 2(n-1)/n, the gather family
 * (n-1)/n) gives an interval of n per placement, and the run's count must lie in all of them. Large runs (256 ranks:
 * 71.55 / 35.92, NVIDIA/nccl-tests#78) fit dozens of counts: the log does not say, and no count is made up.
 */
function ranksFromFactor(rows: NcclRow[], collective: string): number | null {
    const allReduce = collective === "all_reduce";
    if (!allReduce && !["all_gather", "reduce_scatter", "alltoall", "gather", "scatter"].includes(collective)) return null;
    // n as a function of the ratio r, increasing: all_reduce r = 2(n-1)/n, the gather family r = (n-1)/n
    const limit = allReduce ? 2 : 1;
    const nOf = (r: number): number => (r >= limit ? Infinity : limit / (limit - r));
    let lo = 2;
    let hi = Infinity;
    let seen = false;
    for (const row of rows) {
        for (const p of [row.outOfPlace, row.inPlace]) {
            if (!p?.algbwGBps || !p.busbwGBps || p.algbwGBps <= 0.005) continue;
            seen = true;
            lo = Math.max(lo, nOf((p.busbwGBps - 0.005) / (p.algbwGBps + 0.005)));
            hi = Math.min(hi, nOf((p.busbwGBps + 0.005) / (p.algbwGBps - 0.005)));
        }
    }
    if (!seen) return null;
    const first = Math.ceil(lo - 1e-9);
    return first <= hi + 1e-9 && first + 1 > hi + 1e-9 ? first : null;
}

/** The row with the largest size whose bandwidths are big enough to give a precise ratio. */
function ratioRow(rows: NcclRow[]): { ratio: number } | null {
    for (let i = rows.length - 1; i >= 0; i--) {
        const p = rows[i].outOfPlace;
        if (p.algbwGBps && p.busbwGBps && p.algbwGBps >= 1) return { ratio: p.busbwGBps / p.algbwGBps };
    }
    return null;
}

function finish(d: Draft, fileName: string): NcclRun {
    const run = d.run;
    // rank count and hosts
    if (run.ranks.length > 0) {
        // a loop, not Math.max(...ranks) nor includes(): a log's rank lines are as many as it says (linear in the file)
        let maxRank = -1;
        const seen = new Set<number>(), dup = new Set<number>();
        for (const r of run.ranks) {
            if (r.rank > maxRank) maxRank = r.rank;
            if (seen.has(r.rank) && !dup.has(r.rank)) {
                dup.add(r.rank);
                run.duplicateRanks.push(r.rank);
            }
            seen.add(r.rank);
        }
        // nccl-tests prints ranks 0..n-1 in order (rank 0 gathers every process's lines, src/util.cu writeDeviceReport at
        // v2.19.6), so a list without duplicates that lacks ranks below its highest is an excerpt: the author kept only
        // the last line (`#  Rank 1439 ...`, coreweave/nccl-tests README) or lines were lost. Its hosts are not the job's.
        if (run.duplicateRanks.length === 0 && seen.size < maxRank + 1) run.ranksElided = true;
        // separate processes that each print their own rank list: the ranks of one of them, not their sum
        run.nRanks = run.ranksElided || run.duplicateRanks.length > 0 ? maxRank + 1 : Math.max(run.ranks.length, maxRank + 1);
        run.nRanksFrom = "ranks";
        run.hosts = [...new Set(run.ranks.map((r) => r.host))];
    }
    // a rank line cut short: the list stops there, so its highest rank is no count (the busbw factor may still tell it)
    if (run.cutRankLine) {
        run.nRanks = null;
        run.nRanksFrom = null;
    }
    // collective name: printed > command line > busbw factor > file name
    if (!run.collective && d.commandHint) {
        run.collective = d.commandHint;
        run.collectiveFrom = "command";
    }
    const r = ratioRow(run.rows);
    if (!run.collective && r && r.ratio > 1.05) {
        // only all_reduce has a busbw factor above 1 (FORMAT.md §4)
        run.collective = "all_reduce_perf";
        run.collectiveFrom = "busbw-factor";
    }
    if (!run.collective) {
        const hint = FILE_HINTS.find(([re]) => re.test(fileName));
        if (hint) {
            run.collective = hint[1];
            run.collectiveFrom = "file-name";
        }
    }
    if (run.nRanks === null && run.collective) {
        const n = ranksFromFactor(run.rows, run.collective.replace(/_perf$/, ""));
        if (n !== null) {
            run.nRanks = n;
            run.nRanksFrom = "busbw-factor";
        }
    }
    run.completed = run.avgBusbwGBps !== null && run.failures.length === 0;
    return run;
}

export interface ParseOptions {
    /** Label for reports and a last-resort hint for the collective (`all_gather_output.dat`). */
    name?: string;
}

// source: NVIDIA/nccl-tests v2.19.0+ (c466505) src/alltoallv.cu AlltoAllvGetBw: with NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY=1
// rank 0 prints `# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY: mode=.. nranks=.. time_usec=..` and one `#   rank=N send_bytes=..`
// line per rank from inside BenchTime (src/common.cu, getBw before writeBenchmarkLineBody), that is right after the row's
// preamble and again after its out-of-place placement, so the row arrives in three pieces with the summary glued to the
// end of the first two. The glued summary is cut off here; the `#   rank=` lines are comments; the pieces then join.
const ALLTOALLV_SUMMARY = /# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY:.*$/;

function withoutAlltoallvSummary(text: string): string {
    const at = text.indexOf("# NCCL_TESTS_ALLTOALLV_PRINT_SUMMARY:");
    return at > 0 && text.slice(0, at).trim() !== "" ? text.replace(ALLTOALLV_SUMMARY, "") : text;
}

/** Parses a whole log. Never throws; a text without any nccl-tests run gives `runs: []`. */
export function parseNcclLog(text: string, options: ParseOptions = {}): ParsedLog {
    const name = options.name ?? "log";
    const rawLines = text.split("\n");
    if (rawLines.length > 0 && rawLines[rawLines.length - 1] === "") rawLines.pop();
    const runs: NcclRun[] = [];
    const launcherErrors: LineText[] = [];
    let d: Draft | null = null;
    let commandHint: string | null = null;

    const open = (line: number): Draft => {
        if (d && d.stage > Stage.None) runs.push(finish(d, name));
        d = newDraft(line, commandHint);
        commandHint = null;
        return d;
    };
    /**
     * The current run if it has not reached `stage` yet, else a new run. A run that already failed ends there: nccl-tests
     * exits after its failure lines (src/common.cu TESTCHECK), so the preamble of a run after them (its version, test or
     * `# nThread` line) is the next process's, a retry in the same file, even where no version line opens it.
     */
    const at = (stage: Stage, line: number): Draft => {
        const cur: Draft | null = d;
        if (!cur || cur.stage >= stage || (stage <= Stage.Params && cur.run.failures.length > 0)) return open(line);
        return cur;
    };

    for (let i = 0; i < rawLines.length; i++) {
        const lineNo = i + 1;
        const stripped = stripLauncherPrefix(rawLines[i]);
        const source = stripped.source;
        const text = withoutAlltoallvSummary(stripped.text);
        if (NCCL_LINE.test(text) || FABRIC_LOG_LINE.test(text)) continue;
        if (text.trim() === "") {
            // the empty form of the bare last error (ncclGetLastError gave "")
            if (d !== null && (d as Draft).bareErrorNext) (d as Draft).bareErrorNext = false;
            continue;
        }

        let m: RegExpMatchArray | null;
        if ((m = text.match(VERSION_LINE))) {
            const cur = at(Stage.Version, lineNo);
            cur.run.version = m[2];
            cur.versionLine = true;
            if (m[1] === "rccl") cur.run.tool = "rccl-tests";
            cur.stage = Stage.Version;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(RCCL_BANNER))) {
            // printed after the parameter line and its `#`, before `# Using devices` (ROCm/rccl-tests src/common.cu)
            const cur0 = d as Draft | null;
            const cur = cur0 && cur0.stage > Stage.None && cur0.stage <= Stage.Params && cur0.run.failures.length === 0 ? cur0 : open(lineNo);
            cur.run.tool = "rccl-tests";
            cur.run.version ??= m[1].trim().slice(0, 200) || null;
            if (cur.stage < Stage.Params) cur.stage = Stage.Params;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(STARTING_LINE))) {
            const cur = at(Stage.Starting, lineNo);
            cur.run.collective = testOfProgram(m[1]);
            cur.run.collectiveFrom = "printed";
            cur.stage = Stage.Starting;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(PARAM_LINE))) {
            const cur = at(Stage.Params, lineNo);
            cur.run.params = parseParams(text);
            if (m[1] === ":") cur.run.tool = "rccl-tests";
            cur.stage = Stage.Params;
            cur.run.lastLine = lineNo;
            continue;
        }
        if (RANK_CUT.test(text) && d !== null && (d as Draft).stage === Stage.Devices) {
            (d as Draft).run.ranksElided = true;
            continue;
        }
        if ((m = text.match(RANK_LINE))) {
            const cur = at(Stage.Header, lineNo);
            if (/\bGroup\s+\d/.test(text)) cur.groupRanks = true;
            cur.run.ranks.push({
                rank: Number(m[1]), pid: m[2] ? Number(m[2]) : null, host: m[3], device: Number(m[4]),
                busId: m[5], gpu: m[6].trim(),
            });
            cur.stage = Stage.Devices;
            cur.run.lastLine = lineNo;
            continue;
        }
        if (d !== null && (d as Draft).stage === Stage.Devices && /^\s*\.\.\.\s*$/.test(text)) {
            (d as Draft).run.ranksElided = true;
            continue;
        }
        if (d !== null && ((d as Draft).stage === Stage.Devices || (d as Draft).stage === Stage.Params) && isPartialRankLine(text)) {
            const cur = d as Draft;
            cur.run.cutRankLine ??= { line: lineNo, text: text.trim().slice(0, 200) };
            cur.run.ranksElided = true;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(SINGLE_BANNER))) {
            const cur = at(Stage.Rows, lineNo);
            cur.banner = m[1] as "out-of-place" | "in-place";
            if (cur.stage < Stage.Header) cur.stage = Stage.Header;
            cur.run.lastLine = lineNo;
            continue;
        }
        if (BANNER_LINE.test(text) || UNITS_LINE.test(text)) {
            const cur = at(Stage.Rows, lineNo);
            if (cur.stage < Stage.Header) cur.stage = Stage.Header;
            cur.run.lastLine = lineNo;
            continue;
        }
        if (HEADER.test(text)) {
            const cur = at(Stage.Rows, lineNo);
            cur.cols = columnsFromHeader(text, cur.banner);
            cur.run.layout = cur.cols.layout;
            cur.run.checkColumn = cur.cols.checkColumn;
            cur.run.missingColumns = cur.cols.missing;
            cur.run.columnsFrom = "header";
            cur.stage = Stage.Header;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(OOB_LINE))) {
            const cur = at(Stage.Footer, lineNo);
            cur.run.outOfBounds = { count: Number(m[1]), ok: m[2] === "OK", line: lineNo };
            cur.stage = Stage.Footer;
            cur.run.lastLine = lineNo;
            continue;
        }
        if ((m = text.match(AVG_LINE))) {
            const cur: Draft = d !== null && (d as Draft).stage <= Stage.Footer ? (d as Draft) : open(lineNo);
            cur.run.avgBusbwGBps = num(m[1]);
            if (m[2]) cur.run.avgBusbwCheck = { ok: m[2].toUpperCase() === "OK", line: lineNo, text: text.trim() };
            cur.stage = Stage.Footer;
            cur.run.lastLine = lineNo;
            // the versions that print the bare last error (NOT_AN_ERROR_TEXT's note): nccl-tests with `Group` in its rank
            // lines and no version line (v2.13.4 .. v2.17.2; v2.17.3 prints `# error:`), rccl-tests with its banner and
            // `#wrong` column (a # rccl-tests version line means its util.cu, which prints `# error:`)
            cur.bareErrorNext = !cur.versionLine && (cur.run.tool === "nccl-tests" ? cur.groupRanks : cur.run.layout === "2022");
            continue;
        }
        if (RCCL_ASTERISK_NOTE.test(text)) {
            if (d) (d as Draft).run.tool = "rccl-tests";
            continue;
        }
        if ((m = text.match(CONCLUDED_LINE))) {
            if (d) {
                const cur = d as Draft;
                if (!cur.run.collective) {
                    cur.run.collective = testOfProgram(m[1]);
                    cur.run.collectiveFrom = "printed";
                }
                cur.stage = Stage.Concluded;
                cur.run.lastLine = lineNo;
            }
            continue;
        }
        if (FAILURE_LINE.test(text) && !(d !== null && (d as Draft).stage >= Stage.Footer)) {
            // nccl-tests' own failure line: the run it ends, even one that printed nothing before it (a CUDA failure at
            // `# Using devices`: NVIDIA/nccl-tests#338), so that log is a failed run, not "not an nccl-tests log"
            const cur: Draft = (d as Draft | null) ?? open(lineNo);
            if (cur.stage === Stage.None) cur.stage = Stage.Version;
            cur.run.failures.push({ line: lineNo, text: text.trim() });
            cur.run.lastLine = lineNo;
            continue;
        }
        if (d !== null && (d as Draft).stage >= Stage.Footer && !(d as Draft).foreignTail &&
            (EXIT_TRACE.test(text) || LAST_ERROR.test(text))) {
            // nccl-tests' own lines after its footer belong to that run (FORMAT.md §1), not to the launcher: the
            // ` .. host pid N: Test failure` trace without a `Test NCCL/CUDA failure` head is main()'s exit status
            const cur = d as Draft;
            const le = text.match(LAST_ERROR);
            if (le) cur.run.lastError ??= { line: lineNo, text: errorText(le[1]) };
            else cur.run.afterFooter.push({ line: lineNo, text: text.trim() });
            cur.bareErrorNext = false;
            continue;
        }
        // a failure head after a footer is another process's (a retry, a separate job): its trace is not this run's
        if (d !== null && (d as Draft).stage >= Stage.Footer && FAILURE_LINE.test(text)) (d as Draft).foreignTail = true;
        if (d !== null && (d as Draft).bareErrorNext && (d as Draft).stage >= Stage.Footer && !text.trimStart().startsWith("#")) {
            // the first line after the footer's `#` lines (NCCL's own lines and other processes' blank lines aside)
            const cur = d as Draft;
            cur.bareErrorNext = false;
            if (!NOT_AN_ERROR_TEXT.test(text) && !FAILURE_LINE.test(text) && !LAUNCHER_ERROR.test(text) &&
                !COMMAND_PERF.test(text) && !ROW_START.test(text)) {
                cur.run.lastError ??= { line: lineNo, text: errorText(text) };
                continue;
            }
        }
        if (FAILURE_LINE.test(text) || LAUNCHER_ERROR.test(text)) {
            const cur = d as Draft | null;
            let whole = text;
            if (/exited on\s*$/.test(text) && i + 1 < rawLines.length) {
                const next = stripLauncherPrefix(rawLines[i + 1]).text;
                if (SIGNAL_TAIL.test(next)) {
                    whole = `${text.trimEnd()} ${next.trim()}`;
                    i++;
                }
            }
            if (cur && cur.stage >= Stage.Params && cur.stage < Stage.Footer) {
                cur.run.failures.push({ line: lineNo, text: whole.trim() });
                cur.run.lastLine = lineNo;
            } else {
                launcherErrors.push({ line: lineNo, text: whole.trim() });
            }
            continue;
        }
        if (SKIP_LINE.test(text) && d !== null && (d as Draft).stage >= Stage.Params && (d as Draft).stage < Stage.Footer) {
            (d as Draft).run.skipped = { line: lineNo, text: text.trim() };
            continue;
        }
        if (TRUNCATED_NOTE.test(text)) {
            if (d) (d as Draft).run.notes.push({ line: lineNo, text: text.trim() });
            continue;
        }
        if (text.trimStart().startsWith("#")) continue;

        // a result row, possibly written in pieces
        const cur0 = d as Draft | null;
        const pending = cur0?.pending.get(source);
        let candidate = withoutTimestamp(text);
        let rowLine = lineNo;
        if (pending && /^\s*[-+0-9.N]/.test(text) && !ROW_START.test(text)) {
            candidate = pending.text + " " + withoutTimestamp(text);
            rowLine = pending.line;
        }
        if (ROW_START.test(candidate)) {
            let cur: Draft = cur0 && cur0.stage < Stage.Footer ? cur0 : open(lineNo);
            if (!cur.cols) {
                const guess = columnsFromRow(candidate.trim().split(/\s+/));
                if (guess) {
                    cur.cols = guess;
                    cur.run.layout = guess.layout;
                    cur.run.checkColumn = guess.checkColumn;
                    cur.run.columnsFrom = "row-shape";
                }
            }
            const cols = cur.cols;
            if (cols) {
                const tokens = candidate.trim().split(/\s+/);
                const full = cols.prefix.length + cols.placement.length + (cols.single ? 0 : cols.inPlace.length);
                const row = parseRow(candidate, rowLine, cols);
                if (row && (tokens.length >= full || (cols.layout === "2017" && tokens.length >= cols.prefix.length + cols.placement.length))) {
                    cur.pending.delete(source);
                    cur.run.rows.push(row);
                    cur.stage = Stage.Rows;
                    cur.run.lastLine = lineNo;
                    continue;
                }
                if (tokens.length < full && tokens.slice(cols.prefix.length).every(isCell)) {
                    // the rest of this row comes in a later write
                    cur.pending.set(source, { text: candidate, line: rowLine });
                    continue;
                }
            }
            cur = cur as Draft;
            continue;
        }
        // a command line naming the test binary (`Running: ... all_gather_perf`, `$ srun ... all_reduce_perf`)
        const cm = text.match(COMMAND_PERF);
        if (cm && COLLECTIVES.includes(cm[1])) {
            const name = cm[1] + "_perf";
            if (d && (d as Draft).stage >= Stage.Header) commandHint = name;
            else if (d && !(d as Draft).run.collective) (d as Draft).commandHint = name;
            else commandHint = name;
        }
    }
    if (d && (d as Draft).stage > Stage.None) runs.push(finish(d, name));
    return { name, lineCount: rawLines.length, runs, transport: scanTransport(rawLines), launcherErrors };
}

/**
 * Why a text that holds no nccl-tests run is not one, in words for the refusal. nccl-tests 2.17+ writes a JSON document
 * with `-J/--output_file <file>.json` (src/util.cu jsonOutputInit: "version", "start_time", "args", "env",
 * "nccl_version", then "results"): another grammar than the printed log the kit grades, named as such.
 */
export function notLogReason(text: string): string {
    const head = text.trimStart().slice(0, 4096);
    if (head === "") return `is empty: ${EXPECTED}`;
    if (head.startsWith("{") && /"nccl_version"\s*:|"results"\s*:/.test(text.slice(0, 1 << 20))) {
        return "is nccl-tests' -J/--output_file JSON document, not its printed log: grade the run's stdout";
    }
    // linux-rdma/perftest prints ` #bytes     #iterations    BW peak[Gb/sec] ...` (`ib_write_bw`, `ib_read_bw`, `ib_send_bw`;
    // test/fixtures/incast/perftest-write-bw-gbits.txt) and ` #bytes #iterations    t_min[usec] ...` for the latency tests
    if (/^\s*#bytes\s+#iterations\s/m.test(text.slice(0, 1 << 16))) {
        return `is perftest output (ib_write_bw / ib_read_bw / ib_send_bw / *_lat), not nccl-tests: ${EXPECTED}`;
    }
    // every header nccl-tests has printed names `count` and `type` after the size (FORMAT.md §2: v1.0.0 `bytes N type`,
    // since 2019 `size count type`); a table headed `size time algbw busbw` was cut down by whoever published it
    // (elizabetht/spark 01_Infiniband_Tutorial.md), so its columns cannot be told apart with certainty: named, not read
    const edited = text.slice(0, 1 << 16).match(/^[ \t]*#[ \t]*(size|bytes)[ \t]+(?!count\b|N\b)([^\n]*?\bbusbw\b)/m);
    if (edited && !HEADER.test(edited[0])) {
        const cols = `${edited[1]} ${edited[2]}`.replace(/\s+/g, " ").slice(0, 80);
        return `has a result table headed '${cols}', which is no column layout nccl-tests prints (its header always has ` +
            `count and type after the size): an edited excerpt, not read: ${EXPECTED}`;
    }
    return `not an nccl-tests log (no result table, rank list, test header or nccl-tests failure line found): ${EXPECTED}`;
}

/** What a readable nccl-tests log holds, for refusals (src/util.cu writeDeviceReport, writeResultHeader, writeResultFooter). */
const EXPECTED = "expected nccl-tests' printed output: the '# nThread .. nGpus ..' parameter line, the '# Using devices' rank list, " +
    "the '#  size  count  type ..' column header, result rows and the '# Avg bus bandwidth' footer";

/** True when the text holds at least one nccl-tests run: a table header, rows, a rank list or the footer's check line. */
export function isNcclTestsLog(parsed: ParsedLog): boolean {
    return parsed.runs.some((r) => r.rows.length > 0 || r.checkColumn !== null || r.ranks.length > 0 || r.outOfBounds !== null ||
        r.failures.some((f) => FAILURE_LINE.test(f.text)));
}
