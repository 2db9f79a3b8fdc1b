/**
 * Pure grader: a parsed nccl-tests log against the plan's expectation. Every verdict states what was expected,
 * what was seen, and what to do when it fails.
 */
import type { BusbwPoint, Expectation, LineText, LogGrade, NcclRow, NcclRun, ParsedLog, RunGrade, TransportEvidence, Verdict } from "./types";
import { evidenceOf } from "./transport";
import { failureHost } from "./parse";
import { namedFew } from "../listing";
import { proveFabric, REPLACED_BY_FABRIC, type FabricRequirement } from "./fabric";
import { launcherReport, launcherText, type LauncherReport } from "./launcher";

/** `17179869184` → `16 GiB`. */
export function formatBytes(n: number): string {
    const units = ["B", "KiB", "MiB", "GiB", "TiB"];
    let v = n;
    let u = 0;
    while (v >= 1024 && u < units.length - 1 && Number.isInteger(v / 1024)) {
        v /= 1024;
        u++;
    }
    return `${v} ${units[u]}`;
}

export function formatGBps(v: number | null): string {
    return v === null ? "n/a" : `${Number(v.toFixed(2))} GB/s`;
}

/**
 * busbw of one row: the mean of the placements that printed a number. Same figure nccl-tests' own
 * NCCL_TESTS_MIN_BW check and Azure NHC grade on a single-size run, where `# Avg bus bandwidth` is that mean
 * (source: NVIDIA/nccl-tests src/common.cu; Azure/azurehpc-health-checks customTests/azure_nccl_allreduce.nhc).
 */
export function rowBusbw(row: NcclRow): number | null {
    const vals = [row.outOfPlace.busbwGBps, row.inPlace?.busbwGBps ?? null].filter((v): v is number => v !== null);
    if (vals.length === 0) return null;
    return vals.reduce((a, b) => a + b, 0) / vals.length;
}

export function largestPoint(run: NcclRun): BusbwPoint | null {
    if (run.rows.length === 0) return null;
    const row = run.rows.reduce((a, b) => (b.sizeBytes >= a.sizeBytes ? b : a));
    return { sizeBytes: row.sizeBytes, outOfPlace: row.outOfPlace.busbwGBps, inPlace: row.inPlace?.busbwGBps ?? null };
}

/**
 * Rows with a non-zero `#wrong` in either placement (v2.13+ layouts; older logs only have the footer count), or an
 * `error` cell rccl-tests marked `*` (over its threshold: Placement.overThreshold).
 */
export function wrongRows(run: NcclRun): NcclRow[] {
    return run.rows.filter((r) => (r.outOfPlace.wrong ?? 0) > 0 || (r.inPlace?.wrong ?? 0) > 0 ||
        r.outOfPlace.overThreshold === true || r.inPlace?.overThreshold === true);
}

/**
 * Why a run's figures were not checked, or null when they were: the parameter line says `validation: 0` (`-c 0`), or
 * every check cell is `N/A`, which nccl-tests prints for an unchecked placement (FORMAT.md §2; src/util.cu).
 */
export function correctnessOff(run: NcclRun): string | null {
    if (run.params.validation === 0) return "correctness checking off: the parameter line says `validation: 0` (-c 0)";
    if (run.rows.length === 0 || run.checkColumn === null) return null;
    const cells = run.rows.flatMap((r) => [r.outOfPlace, ...(r.inPlace ? [r.inPlace] : [])]);
    const checked = cells.some((p) => p.wrong !== null || p.maxError !== null);
    return checked ? null : `correctness checking off: every ${run.checkColumn} cell is N/A`;
}

/** Number of nodes the run spans; `null` when the log has no rank lines. */
export function nodesOf(run: NcclRun): number | null {
    if (run.hosts.length === 0 || run.ranksElided) return null;
    return run.hosts.length;
}

/**
 * The NCCL WARN that names why a run failed: the last one before its first failure line (NCCL prints the error, then
 * unwinds: `enqueue.cc:1500 NCCL WARN Cuda failure 1 'invalid argument'`, then `group.cc:242 -> 1` ...), else the first
 * one after it (another rank's view of the same error).
 */
function causeWarning(run: NcclRun, t: TransportEvidence | undefined): LineText | null {
    if (!t || run.failures.length === 0) return null;
    const first = run.failures[0].line;
    const before = t.warnLines.filter((l) => l.line < first && l.line >= run.firstLine);
    return before[before.length - 1] ?? t.warnLines.find((l) => l.line > first) ?? null;
}

const FOOTER = "its footer ('# Out of bounds values' and '# Avg bus bandwidth')";

/**
 * The node nccl-tests' rank list puts an MPI rank (process) on: process p prints ranks p x nThread x nGpus onwards
 * (NVIDIA/nccl-tests v2.19.6 src/util.cu:677 `rank = proc*nThreads*nGpus+i`; v2.11.0 common.cu:1041 the same). Null where
 * the list cannot tell (elided, several jobs, rank not listed).
 */
function hostOfMpiRank(run: NcclRun): (p: number) => string | null {
    const perProcess = (run.params.nThread ?? 1) * (run.params.nGpus ?? 1);
    let byRank: Map<number, string> | null = null;
    return (p) => {
        if (run.ranksElided || run.duplicateRanks.length > 0 || !(perProcess >= 1)) return null;
        byRank ??= new Map(run.ranks.map((r) => [r.rank, r.host]));
        return byRank.get(p * perProcess) ?? null;
    };
}

/** The launcher's report on a run: its launcher lines inside the run (run.failures) and those printed after it. */
function runLauncher(run: NcclRun, after: readonly LineText[]): LauncherReport | null {
    return launcherReport([...run.failures, ...after], hostOfMpiRank(run));
}

// NCCL's result strings (NVIDIA/nccl v2.28.3-1 src/init.cc ncclGetErrorString), as nccl-tests quotes them in its
// `Test NCCL failure file:line '<string> / <last error>'` line (src/common.h), and what each points at
const NCCL_RESULT_HINTS: Array<[RegExp, string]> = [
    [/remote process exited or there was a network error/, "A peer process died or the fabric dropped the connection: the " +
        "hosts that print this are the survivors. Look at the first NCCL WARN of each rank and at the launcher's lines for the " +
        "process that died, check the links (ibv_devinfo / fi_info -p efa) and rerun."],
    [/unhandled system error/, "A system call failed inside NCCL on the node named (a socket, an IB verbs or libfabric call, " +
        "memory registration or shared memory): the NCCL WARN before it names the call. Check that node's NICs (ibv_devinfo, " +
        "fi_info), `ulimit -l` (unlimited), /dev/shm and NCCL_SOCKET_IFNAME, then rerun with NCCL_DEBUG=INFO."],
    [/unhandled cuda error|Test CUDA failure/, "A CUDA call failed on the node named: check `nvidia-smi` and the Xid errors in " +
        "its dmesg, and that the driver supports the CUDA version nccl-tests and NCCL were built with."],
    [/internal error - please report/, "NCCL hit an internal error: check that every node runs the same NCCL and nccl-tests build, then rerun " +
        "with NCCL_DEBUG=INFO (and report it to NCCL if it stays)."],
    [/invalid usage|invalid argument/, "NCCL refused its arguments or environment: check the NCCL_* variables and that every node " +
        "runs the same NCCL and nccl-tests build; NCCL_DEBUG=WARN names what it refused."],
    // NVIDIA/nccl-tests v2.19.6 src/common.cu:518-528: with `-T <s>` an operation still running after s seconds aborts the
    // communicators and prints `<host>: Test timeout (<s>s)`
    [/Test timeout \(\d+s\)/, "An operation did not finish within the -T limit: a rank hung (a stalled GPU, or a link that drops " +
        "packets). Run the pairwise tests to find the node pair, check the link error counters and the Xid errors of the node named."],
];

const REMOTE_ERROR = /remote process exited or there was a network error/;

/** nccl-tests' own failure heads of a run (`<host>: Test NCCL|CUDA failure ..`, `<host>: Test timeout ..`), not the traces. */
function failureHeads(run: NcclRun): LineText[] {
    return run.failures.filter((f) => failureHost(f.text) !== null && !/ pid \d+: Test failure /.test(f.text));
}

/**
 * The run's hosts that printed no failure line when every head that was printed says a peer went away (NCCL's
 * ncclRemoteError): the other end of the broken connection. Each process prints its own head (src/common.h printf, not
 * rank 0's PRINT), but the launcher may kill a process before it prints, and a host whose own NIC failed reports its peer
 * as gone too, so this names the other side, not the culprit. Empty when the rank list is not whole.
 */
function silentHosts(run: NcclRun): string[] {
    const heads = failureHeads(run);
    if (heads.length === 0 || run.ranksElided || !heads.every((f) => REMOTE_ERROR.test(f.text))) return [];
    const reporting = new Set(heads.map((f) => failureHost(f.text)));
    return run.hosts.filter((h) => !reporting.has(h));
}

/**
 * What to do about an aborted run. A process killed or a node lost, as the launcher says, is the cause when nccl-tests'
 * own failure lines say no more than that a peer went away (or there are none); NCCL's result string otherwise (a
 * launcher's later kills of the other processes are its clean-up, not the cause).
 */
function abortHint(run: NcclRun, launcher: LauncherReport | null): string {
    const own = failureHeads(run)[0]?.text;
    const peerGone = own === undefined || REMOTE_ERROR.test(own);
    const died = peerGone ? launcher?.nodes.find((n) => /signal|Killed|Out Of Memory|lost its daemon|node failure/i.test(n.cause)) : undefined;
    if (died && /lost its daemon|node failure/i.test(died.cause)) {
        return `${died.node} went down or dropped off the network during the run: check that it is up (console, BMC, journal), ` +
            "leave it out (drain it) and rerun on the others.";
    }
    if (died) {
        return `The launcher says a process on ${died.node} died (${died.cause}): signal 9 or Out Of Memory is the kernel's OOM ` +
            `killer or the scheduler, 7 (Bus error) / 11 (Segmentation fault) a crash; check dmesg and the journal on ${died.node}, ` +
            "then rerun.";
    }
    // SchedMD/slurm src/slurmd/slurmstepd/req.c: `*** JOB|STEP .. CANCELLED AT .. DUE TO TIME LIMIT ***`
    if (launcher?.job.some((c) => /time limit/.test(c))) {
        return "Slurm's time limit ended the job before nccl-tests finished: give it more time (--time) or a shorter sweep " +
            "(-e, -n), and compare the row times with a healthy run to see whether a node made it slow.";
    }
    const silent = silentHosts(run);
    if (silent.length > 0) {
        // a bad NIC makes its own host report the peer as gone too (xxrjun/nccl-tests-cluster 2511 pairwise logs: the same
        // host reports against each of its partners), so the log alone does not say which side failed
        const reporting = [...new Set(failureHeads(run).map((f) => failureHost(f.text) as string))];
        return `Every failure line says a peer went away: the connection between ${namedFew(reporting)} and ${namedFew(silent)} ` +
            "(which printed no failure line) broke, and one log cannot tell which side failed. Check both (dmesg, the journal, the " +
            "NICs' link and error counters) and run the pairwise tests: the node common to the failing pairs is the one at fault.";
    }
    const first = run.failures.find((f) => NCCL_RESULT_HINTS.some(([re]) => re.test(f.text)))?.text ?? "";
    const hit = NCCL_RESULT_HINTS.find(([re]) => re.test(first));
    return hit ? hit[1] : "nccl-tests stopped on an error: look at the first NCCL WARN line of each rank and at the launcher's lines, " +
        "check the links (ibv_devinfo / fi_info -p efa) and rerun.";
}

function gradeRun(run: NcclRun, index: number, exp: Expectation, t?: TransportEvidence, launcherAfter: readonly LineText[] = []): RunGrade {
    const verdicts: Verdict[] = [];
    const launcher = runLauncher(run, launcherAfter);
    // 1. completed
    if (run.completed) {
        // NCCL's last error after the footer (`# error:`, src/util.cu writeErrors; the bare line of v2.13.4 .. v2.17.2,
        // src/common.cu main) is the text of the last WARN NCCL logged (src/debug.cc ncclDebugLogV), whatever came of it:
        // WARNs that are no error stay there too, such as NCCL's topology search "Could not find a path for pattern 4,
        // falling back to simple order" (test/fixtures/nccl/nccl-tests-287-cuda-failure-after-header.log lines 25-32,
        // not the cause the maintainers found) and RCCL's "NUMA auto balancing enabled". It is shown; the footer, the
        // data check and the figures decide
        const last = run.lastError ? `; NCCL's last error (line ${run.lastError.line}): ${run.lastError.text}` : "";
        verdicts.push({ check: "completed", ok: true, expected: "run finished with its footer", seen: `footer at line ${run.lastLine}${last}` });
    } else if (run.failures.length > 0) {
        // the node nccl-tests names in `<host>: Test NCCL failure ...` (src/common.h), and the first NCCL WARN
        // and the nodes the launcher names (a process killed, a node lost): after a node's death nccl-tests' failure lines
        // come from its surviving peers, so the launcher's node goes first
        const nodes = [...new Set([...(launcher?.nodes.map((n) => n.node) ?? []),
            ...run.failures.map((f) => failureHost(f.text)).filter((h): h is string => h !== null)])];
        const warn = causeWarning(run, t);
        verdicts.push({
            check: "completed", ok: false, expected: `run finished with ${FOOTER}`,
            seen: `aborted${nodes.length ? ` on ${namedFew(nodes)}` : ""}${run.rows.length ? ` after ${run.rows.length} row(s)` : ""}: ${run.failures[0].text}` +
                (warn ? `; NCCL WARN (line ${warn.line}): ${warn.text.replace(/^.*?NCCL WARN\s*/, "")}` : "") +
                (launcher ? `; the launcher: ${launcherText(launcher)}` : "") +
                (silentHosts(run).length ? `; no failure line from ${namedFew(silentHosts(run))}` : ""),
            hint: abortHint(run, launcher),
            evidence: [...(warn ? [warn] : []), ...run.failures].sort((a, b) => a.line - b.line).slice(0, 5),
        });
    } else if (run.skipped && run.rows.length === 0) {
        verdicts.push({
            check: "completed", ok: false, expected: `run finished with ${FOOTER}`,
            seen: `skipped by nccl-tests, nothing measured: ${run.skipped.text}`,
            hint: "hypercube_perf measures only a power-of-2 number of ranks: rerun it with 2, 4, 8 ... ranks (nodes x GPUs), " +
                "or grade another test.",
            evidence: [run.skipped],
        });
    } else {
        const last = run.rows[run.rows.length - 1];
        verdicts.push({
            check: "completed", ok: false, expected: `run finished with ${FOOTER}`,
            seen: (run.cutRankLine && run.rows.length === 0
                ? `truncated: the log is cut inside the rank list (line ${run.cutRankLine.line}: '${run.cutRankLine.text}'), no result rows and no footer`
                : run.rows.length === 0 ? "truncated: no result rows and no footer"
                : `truncated: the log ends mid-table after ${run.rows.length} row(s) (last ${formatBytes(last.sizeBytes)} at line ${last.line}) without its footer`) +
                (launcher ? `; the launcher: ${launcherText(launcher)}` : ""),
            hint: launcher ? abortHint(run, launcher)
                : "The run was cut short (timeout, killed job, or an excerpt). Rerun under `timeout` with a larger limit and keep the whole output.",
        });
    }

    // a rank line cut short where the log goes on: bytes were lost from the capture (nccl-tests prints each rank line whole,
    // src/util.cu writeDeviceReport), so the rank list and the nodes are not the job's; the truncated verdict above names
    // a log that ends there
    const cutNamed = !run.completed && run.failures.length === 0 && !run.skipped && run.rows.length === 0;
    if (run.cutRankLine && !cutNamed) {
        verdicts.push({
            check: "log-cut", ok: false, expected: "the log as nccl-tests printed it, every rank line whole",
            seen: `the rank list is cut at line ${run.cutRankLine.line} ('${run.cutRankLine.text}'): the ranks and nodes of the run are not known`,
            hint: "The capture lost part of the output (a cut copy, a full buffer or an interleaved write): keep the whole output of the run " +
                "(redirect it to a file) and grade that.",
            evidence: [run.cutRankLine],
        });
    }

    // a run that printed no row has nothing more to check; `completed` already says why
    if (run.rows.length === 0) {
        return { run: index, collective: run.collective, verdicts, largest: null, gradedBusbwGBps: null, pass: false };
    }

    // 2. correctness
    const wrong = wrongRows(run);
    const oob = run.outOfBounds;
    const unchecked = correctnessOff(run);
    if (unchecked) {
        verdicts.push({
            check: "correctness", ok: false, expected: "data checked (-c 1, the default) with 0 wrong values", seen: unchecked,
            hint: "The run did not check its results, so `Out of bounds values : 0` proves nothing: rerun without `-c 0` " +
                "(nccl-tests checks by default).",
        });
    } else if (wrong.length > 0 || (oob && oob.count > 0)) {
        const rows = namedFew(wrong.map((r) => formatBytes(r.sizeBytes)), 8);
        verdicts.push({
            check: "correctness", ok: false, expected: "0 wrong values",
            seen: [oob ? `Out of bounds values: ${oob.count} ${oob.ok ? "OK" : "FAILED"}` : null, wrong.length ? `${run.checkColumn === "#wrong" ? "#wrong > 0" : `${run.checkColumn ?? "error"} marked * (over the threshold)`} at ${rows}` : null]
                .filter(Boolean).join("; "),
            // NVIDIA/nccl-tests#37: all_gather_perf -g 8 at 4 GiB, `error 1e+00`, "Out of bounds values : 2 FAILED" on a healthy
            // DGX-1: an NCCL bug at that size, fixed in NCCL (maintainer: nccl@3701130)
            hint: "nccl-tests found corrupted data: a hardware or driver fault, or an NCCL bug at some sizes (NVIDIA/nccl-tests#37: " +
                "wrong data only at 4 GiB, fixed in a later NCCL), not a tuning problem. Rerun with the newest NCCL; run the single-node " +
                "test on each node to find the GPU/NVLink at fault (dcgmi diag -r 3), check `nvidia-smi -q -d ECC` and Xid errors in dmesg.",
            evidence: [...wrong.map((r) => ({ line: r.line, text: `size ${r.sizeBytes}` })), ...(oob ? [{ line: oob.line, text: `Out of bounds values : ${oob.count}` }] : [])].slice(0, 5),
        });
    } else if (oob) {
        verdicts.push({ check: "correctness", ok: true, expected: "0 wrong values", seen: `Out of bounds values: ${oob.count} OK` });
    } else {
        verdicts.push({
            check: "correctness", ok: false, expected: "0 wrong values", seen: "no 'Out of bounds values' line: correctness unknown",
            hint: "Run with -c 1 (the default) and keep the footer; a run without its footer cannot prove its results are correct.",
        });
    }

    // 3. bandwidth at the large sizes (the printed average includes small sizes and is no grade)
    const graded = run.rows.filter((r) => r.sizeBytes >= exp.gradeFromBytes && rowBusbw(r) !== null);
    const largest = largestPoint(run);
    let gradedBusbw: number | null = null;
    const expectedText = `>= ${formatGBps(exp.minBusbwGBps)} at sizes >= ${formatBytes(exp.gradeFromBytes)}` +
        (exp.expectedBusbwGBps !== undefined ? ` (typical ${formatGBps(exp.expectedBusbwGBps)})` : "") + ` [${exp.source}]`;
    if (graded.length === 0) {
        verdicts.push({
            check: "busbw", ok: false, expected: expectedText,
            seen: largest ? `largest size is ${formatBytes(largest.sizeBytes)}: nothing to grade` : "no result rows",
            hint: `Run up to at least ${formatBytes(exp.gradeFromBytes)} (-e ${exp.gradeFromBytes}); small sizes measure latency, not the fabric.`,
        });
    } else {
        const worst = graded.reduce((a, b) => ((rowBusbw(b) as number) < (rowBusbw(a) as number) ? b : a));
        gradedBusbw = rowBusbw(worst);
        const ok = (gradedBusbw as number) >= exp.minBusbwGBps;
        const sizes = graded.length === 1 ? formatBytes(graded[0].sizeBytes) : `${graded.length} sizes ${formatBytes(graded[0].sizeBytes)}..${formatBytes(graded[graded.length - 1].sizeBytes)}`;
        verdicts.push({
            check: "busbw", ok, expected: expectedText,
            seen: `${formatGBps(gradedBusbw)} (lowest of ${sizes}, at ${formatBytes(worst.sizeBytes)}: out-of-place ${formatGBps(worst.outOfPlace.busbwGBps)}, in-place ${formatGBps(worst.inPlace?.busbwGBps ?? null)})`,
            hint: ok ? undefined : "Bus bandwidth is below the plan's threshold. Check the transport verdicts first (socket fallback, missing " +
                "GPUDirect), then run the single-node test on every node and the pairwise schedule to name the slow node(s).",
            evidence: [{ line: worst.line, text: `size ${worst.sizeBytes}` }],
        });
    }
    // 4. nccl-tests' own floor (NCCL_TESTS_MIN_BW): it exits non-zero on FAILED (src/common.cu)
    if (run.avgBusbwCheck && !run.avgBusbwCheck.ok) {
        verdicts.push({
            check: "min-bw", ok: false, expected: "nccl-tests' NCCL_TESTS_MIN_BW check OK", seen: run.avgBusbwCheck.text,
            hint: "The average bus bandwidth is below 0.9 x NCCL_TESTS_MIN_BW, the floor the run was given: check the transport verdicts " +
                "and run the single-node and pair tests to find the slow node.",
            evidence: [{ line: run.avgBusbwCheck.line, text: run.avgBusbwCheck.text }],
        });
    }
    // 5. nccl-tests' exit trace after the footer (v2.17.3+): main()'s TESTCHECK on what run() returned. run() frees its
    // buffers and destroys its communicators before the footer (src/common.cu, v2.17.3 to v2.19.6), so after the footer
    // it fails only on its results check (Out of bounds > 0, Avg bus bandwidth < 0.9 x NCCL_TESTS_MIN_BW), graded above
    // when the footer says FAILED. After a clean footer the check failed on another process: `-a 0` reports rank 0's
    // times and lets each process keep its own (common.cu Allreduce, no MPI_Allreduce for average 0), so a process whose
    // own bandwidth was under NCCL_TESTS_MIN_BW exits non-zero under rank 0's OK; or the line is another job's output
    const footerFailed = (oob !== null && oob.count > 0) || run.avgBusbwCheck?.ok === false;
    if (run.afterFooter.length > 0 && !footerFailed) {
        verdicts.push({
            check: "exit", ok: false, expected: "nccl-tests exits 0 after a clean footer",
            seen: `failed after its footer: ${run.afterFooter[0].text}`,
            hint: "nccl-tests exits non-zero after its footer only when a process's own results check fails (Out of bounds values > 0, " +
                "or its Avg bus bandwidth under 0.9 x NCCL_TESTS_MIN_BW): the process this line names measured less than rank 0's footer " +
                "shows (with -a 0 each process keeps its own times), or the line is from another job in the same log. Rerun with -a 1 " +
                "(the default) and check the launcher's exit status before trusting this node.",
            evidence: run.afterFooter.slice(0, 5),
        });
    }
    const pass = verdicts.every((v) => v.ok);
    return { run: index, collective: run.collective, verdicts, largest, gradedBusbwGBps: gradedBusbw, pass };
}

/** Hints per transport, with the env var that makes a fallback fail instead of running slow. */
const TRANSPORT_HINT: Record<"efa" | "ib", string> = {
    // source: aws/aws-ofi-nccl RPM spec writes /etc/ld.so.conf.d/100_ofinccl.conf; EFA installer >= 1.38 bundles the
    // plugin under /opt/amazon/ofi-nccl (research aws-efa.md §3.2, ansible-stack.md §3); NCCL_NET aliases per
    // aws-ofi-nccl src/nccl_ofi_interface_nvidia.cpp.
    efa: "aws-ofi-nccl was not used by NCCL: check that the plugin is on the loader path (`ldconfig -p | grep libnccl-net`, " +
        "/etc/ld.so.conf.d/100_ofinccl.conf, /opt/amazon/ofi-nccl/lib), that `fi_info -p efa` lists the EFA devices, and set " +
        "NCCL_NET=Libfabric ('AWS Libfabric' for plugin < 1.13) so a fallback fails instead of running slow.",
    // source: NVIDIA/nccl docs env.html (NCCL_NET, NCCL_IB_HCA); research azure-ib.md §6, roce.md §3.
    ib: "NCCL did not use InfiniBand/RoCE verbs: check `ibv_devinfo` (PORT_ACTIVE on every rail), that NCCL_IB_HCA names existing " +
        "devices (`ls /sys/class/infiniband`), that /dev/infiniband is usable (memlock unlimited), and set NCCL_NET=IB so a fallback fails.",
};

function fileVerdicts(log: ParsedLog, exp: Expectation): Verdict[] {
    const t = log.transport;
    const v: Verdict[] = [];
    const runsWithRows = log.runs.filter((r) => r.rows.length > 0 || r.failures.length > 0);
    const nodeCounts = runsWithRows.map(nodesOf);
    const singleNode = nodeCounts.length > 0 && nodeCounts.every((n) => n === 1);
    const needsNet = !singleNode;

    if (log.launcherErrors.length > 0) {
        // lines after a run are its processes' (gradeLog), so its rank list places a `Process name: [..,<rank>]`
        const owner = [...log.runs].reverse().find((r) => r.firstLine < log.launcherErrors[0].line);
        const rep = launcherReport(log.launcherErrors, owner ? hostOfMpiRank(owner) : undefined);
        v.push({
            check: "launcher", ok: false, expected: "no launcher errors",
            seen: log.launcherErrors[0].text + (rep ? ` (${launcherText(rep)})` : ""),
            hint: "mpirun/srun reported a failed process; read the lines before it for the first error.",
            evidence: log.launcherErrors.slice(0, 5),
        });
    }

    const wantDebug = needsNet && (exp.transport !== "any" || exp.requireGdr);
    if (wantDebug && t.ncclDebugLines === 0) {
        v.push({
            check: "nccl-debug", ok: false, expected: "NCCL INFO lines (NCCL_DEBUG=INFO)", seen: "no NCCL INFO lines",
            hint: "Without NCCL_DEBUG=INFO the log cannot prove which transport carried the data; rerun with NCCL_DEBUG=INFO " +
                "NCCL_DEBUG_SUBSYS=INIT,NET.",
        });
    }

    // socket fallback: `Using network Socket` on a single node only means no NIC was needed
    const socketChannels = t.socket.lines.some((l) => /via NET\/Socket/.test(l.text));
    if (t.socket.count > 0 && (needsNet || socketChannels)) {
        v.push({
            check: "socket-fallback", ok: false, expected: "no TCP socket transport", seen: `${t.socket.count} line(s) show NCCL on sockets`,
            hint: exp.transport === "ib" ? TRANSPORT_HINT.ib : TRANSPORT_HINT.efa,
            evidence: evidenceOf(t.socket),
        });
    } else if (t.ncclDebugLines > 0) {
        v.push({ check: "socket-fallback", ok: true, expected: "no TCP socket transport", seen: "none" });
    }

    if (needsNet && exp.transport === "efa" && t.ncclDebugLines > 0) {
        const providers = t.ofiProviders.join(", ");
        const efaProvider = t.ofiProviders.some((p) => /(^|;)efa\b/.test(p));
        const libfabric = t.networks.some((n) => /Libfabric|OFI/i.test(n)) || t.ofi.count > 0;
        const ok = libfabric && (t.ofiProviders.length === 0 || efaProvider) && t.socket.count === 0;
        v.push({
            check: "transport", ok, expected: "NCCL on aws-ofi-nccl with the efa provider",
            seen: libfabric ? `networks: ${t.networks.join(", ") || "(not printed)"}; OFI provider: ${providers || "(not printed)"}`
                : `networks: ${t.networks.join(", ") || "(none printed)"}`,
            hint: ok ? undefined : TRANSPORT_HINT.efa,
            evidence: evidenceOf(t.ofi, t.socket),
        });
        if (t.pluginMissing.count > 0) {
            v.push({
                check: "net-plugin", ok: false, expected: "aws-ofi-nccl loaded", seen: t.pluginMissing.lines[0].text,
                hint: TRANSPORT_HINT.efa, evidence: evidenceOf(t.pluginMissing),
            });
        }
    } else if (needsNet && exp.transport === "ib" && t.ncclDebugLines > 0) {
        const ok = t.ib.count > 0 && t.socket.count === 0;
        v.push({
            check: "transport", ok, expected: "NCCL on the IB verbs transport (NET/IB)",
            seen: `networks: ${t.networks.join(", ") || "(none printed)"}; NET/IB lines: ${t.ib.count}`,
            hint: ok ? undefined : TRANSPORT_HINT.ib,
            evidence: evidenceOf(t.ib, t.socket),
        });
    }

    if (needsNet && exp.requireGdr && t.ncclDebugLines > 0) {
        const gdrChannels = t.gdr.lines.filter((l) => /\/GDRDMA/.test(l.text)).length > 0;
        const ok = gdrChannels && t.netChannelsWithoutGdr.count === 0 && t.cudaRegisterFailed.count === 0;
        const seen = t.netChannels.count === 0
            ? "no `via NET/...` channel lines (need NCCL_DEBUG_SUBSYS to include INIT)"
            : `${t.gdr.count} NET channel line(s) with /GDRDMA, ${t.netChannelsWithoutGdr.count} without` +
              (t.cudaRegisterFailed.count ? `; ${t.cudaRegisterFailed.count} 'Failed to register CUDA buffer'` : "") +
              (!ok && t.gdrDisabled.count ? `; NCCL says: ${t.gdrDisabled.lines[0].text.replace(/^.*?NCCL INFO\s*/, "")}` : "");
        v.push({
            check: "gpudirect", ok, expected: "every NET channel via .../GDRDMA", seen,
            // source: research aws-efa.md §3.3 (DMA-BUF vs efa_nv_peermem/nvidia_peermem), ansible-stack.md §2
            hint: ok ? undefined : "GPUDirect RDMA is off, so data bounces through host memory: load nvidia_peermem (`lsmod | grep " +
                "nvidia_peermem`; efa_nv_peermem on EFA) or use DMA-BUF (kernel >= 5.12 with the open GPU driver), and check " +
                "NCCL_NET_GDR_LEVEL is not forcing it off.",
            evidence: evidenceOf(t.gdrDisabled, t.netChannelsWithoutGdr, t.cudaRegisterFailed, t.gdr),
        });
    }
    return v;
}

/**
 * Grades every run of a log plus the transport evidence of the file. With `fabric`, the log must also prove a
 * multi-node run of that fabric (fabric.ts), whose verdicts replace the plain transport checks.
 */
export function gradeLog(log: ParsedLog, exp: Expectation, fabric?: FabricRequirement): LogGrade {
    // launcher lines outside a run's table (after its footer, or after it stopped) belong to the run before them
    const runs = log.runs.map((r, i) => gradeRun(r, i, exp, log.transport, log.launcherErrors.filter((l) =>
        l.line > r.firstLine && (i + 1 >= log.runs.length || l.line < log.runs[i + 1].firstLine))));
    const verdicts = fabric
        ? [...fileVerdicts(log, exp).filter((v) => !REPLACED_BY_FABRIC.has(v.check)), ...proveFabric(log, fabric)]
        : fileVerdicts(log, exp);
    if (runs.length === 0) {
        verdicts.push({
            check: "completed", ok: false, expected: "an nccl-tests run", seen: "no nccl-tests output in this log",
            hint: "The test did not start: look for mpirun/ssh errors and check that the nccl-tests binary exists on every node.",
        });
    }
    const pass = verdicts.every((v) => v.ok) && runs.every((r) => r.pass);
    return { name: log.name, expectation: exp, verdicts, runs, pass };
}

/** All failed verdicts of a grade, labelled with their run. */
export function failures(g: LogGrade): Array<Verdict & { where: string }> {
    const out: Array<Verdict & { where: string }> = g.verdicts.filter((v) => !v.ok).map((v) => ({ ...v, where: g.name }));
    for (const r of g.runs) for (const v of r.verdicts) if (!v.ok) out.push({ ...v, where: `${g.name} run ${r.run + 1} (${r.collective ?? "?"})` });
    return out;
}
