/**
 * `dcgmi diag -r <level>`: the text table and the `-j` JSON, DCGM 3.x and 4.x → test results.
 * Text (DCGM dcgmi/Diag.cpp; real outputs in NVIDIA/DCGM#55, #49, #198, #124, #253, IBM/autopilot#68, test/fixtures/health/README.md):
 *   | Diagnostic                | Result                                         |
 *   |-----  Deployment  --------+------------------------------------------------|   section rows (also "+-----  X  ---+")
 *   | Denylist                  | Pass                                           |   a test and its result: Pass, Fail,
 *   | PCIe                      | Fail - All                                     |   Skip, Warn, with " - All" /
 *   | GPU Memory                | Pass - GPUs: 1, 2, 3 ...                       |   " - GPU: 0" / " - GPUs: 1, 2"
 *   |                           | Fail - GPU: 0                                  |   continuation: more of the same test
 *   | Warning                   | GPU 0 Thermal violations totaling ...           |   detail rows (Warning, Error, Info),
 *   |                           | s started at 9.7 seconds ...                    |   wrapped over several rows
 *   |                           | GPU0: Fail                                      |   DCGM 4.x: a result per entity
 *   | Warning: GPU0             | ...                                             |   a warning tied to that entity
 * Metadata rows (DCGM Version, Driver Version Detected, ...) carry no result and are skipped.
 * JSON: {"DCGM GPU Diagnostic" (3.x) | "DCGM Diagnostic" (4.x): {"test_categories": [{"category", "tests": [{"name",
 * "results": [{"status", "gpu_id" | "entity_id", "warnings": [{"warning", ...}], "info"}], "test_summary"?}]}]}}
 * (field names as GoogleCloudPlatform/cluster-health-scanner src/gpu_healthcheck/gpu_healthcheck.py reads them).
 * "Error: ..." lines (no host engine, no GPU) mean the diagnostic did not run: not checked, never a pass.
 */
import { MAX_FILE_CHARS, boundedLines } from "./text";
import { HealthParseError } from "./types";

export interface DcgmTest {
    name: string;
    /**
     * "internal": dcgmi printed Fail, but every reason it gives is the diagnostic's own breakage (DCGM_FR_INTERNAL,
     * "There was an internal error during the test: '%s'", DCGM dcgmlib/dcgm_errors.h; category DCGM_FR_EC_INTERNAL_OTHER
     * in dcgmlib/src/dcgm_errors.c) and no GPU is named failing: the test did not complete, which says nothing of the GPU.
     * "persistence": dcgmi printed Fail and every reason it gives is DCGM_FR_PERSISTENCE_MODE ("Persistence mode for GPU
     * %u is disabled.", dcgm_errors.h): DCGM up to 3.1.7 failed its Software test on that (nvvs Software.cpp
     * checkPersistenceMode, NVVS_RESULT_FAIL), 3.2.5 and later warn (NVVS_RESULT_WARN), and the code's severity is
     * DCGM_ERROR_CONFIG ("This error can be configured", dcgm_errors.c): a setting of the node, not a fault of the GPU
     */
    status: "pass" | "fail" | "warn" | "skip" | "internal" | "persistence";
    /** the section the test sits in (text: "Deployment", "Hardware", ...; JSON: its "category") */
    category?: string;
    /** the row(s) that show the status, and the warning/error text that follows */
    evidence: string[];
}

export interface DcgmReport {
    tests: DcgmTest[];
    /** the tool's own error: the diagnostic did not run */
    error?: string;
}

// the words dcgmi prints for a result (dcgmi/Diag.cpp, DCGM_DIAG_RESULT_PASS/SKIP/WARN/FAIL/NOT_RUN: "Pass", "Skip",
// "Warn", "Fail", "Not Run"); the JSON form carries the same words
const WORDS = "Pass|Fail|Skip|Warn|Not Run";
const STATUS = new RegExp(`^(${WORDS})\\b`, "i");
// an entity's own row, "<group><id>: <result>" (dcgmi/Diag.cpp HelperDisplayEntityResults; the group as
// DcgmFieldsGetEntityGroupString spells it, dcgmlib/src/dcgm_fields.cpp: GPU, vGPU, Switch, GPU_I, GPU_CI, LINK, CPU,
// CPU_CORE, ConnectX); "GPU 0:" with a space as older tables print it
const GROUP = "(?:GPU|vGPU|Switch|GPU_I|GPU_CI|LINK|CPU|CPU_CORE|ConnectX)";
const ENTITY = new RegExp(`^${GROUP}\\s?\\d+\\s*:\\s*(${WORDS})\\b`, "i");
// an entity named failing: DCGM 4.x "GPU0: Fail"; DCGM 3.x "Fail - All", "Fail - GPU: 0", "Fail - GPUs: 0, 1" (dcgmi/Diag.cpp
// at v3.3.9, the per-test row: on the test's own row when it is the first shown, else on a row of its own)
const ENTITY_FAILED = new RegExp(`^${GROUP}\\s?\\d+\\s*:\\s*Fail\\b|^Fail - (?:All\\b|GPUs?:)`, "i");
// the name cell of a warning: "Warning", or "Warning: GPU0" where DCGM 4.x ties it to one entity (Diag.cpp)
const REASON_HEAD = new RegExp(`^(?:Warning|Error)(?::\\s*${GROUP}\\d+)?:\\s*`, "i");
const WORD = new RegExp(`^(?:${WORDS})$`, "i");
// DCGM_FR_INTERNAL_MSG (dcgmlib/dcgm_errors.h); real: NVIDIA/DCGM#253 and #254, a PCIe test whose helper process failed
const INTERNAL = /^There was an internal error during the test\b/i;
// DCGM_FR_PERSISTENCE_MODE_MSG (dcgmlib/dcgm_errors.h), after the subtest's name where DCGM 4.x puts it ("Persistence
// Mode: Persistence mode for GPU 0 is disabled. ...", the detail NVIDIA/NVSentinel#772 quotes)
const PERSISTENCE = /^(?:Persistence Mode:\s*)?Persistence mode for GPU \d+ is disabled\b/i;

// nvvs refuses to run while a GPU of the group is in MIG mode: "GPU 2's MIG configuration is incompatible with the
// diagnostic because it prevents access to the entire GPU." (NVIDIA/DCGM nvvs/src/NvidiaValidationSuite.cpp at 4.6.0;
// printed alone by dcgmi 3.1.3, NVIDIA/DCGM#70): the diagnostic did not run, as with an "Error:" line
const MIG_REFUSAL = /^GPU \d+'s MIG configuration is incompatible with the diagnostic\b/i;

/**
 * The name a section row gives, "|-----  Deployment  --------+---...|" or "+-----  Hardware  ----------+---...+"
 * (dcgmi/Diag.cpp): the first cell between its runs of dashes; undefined for any other row. Linear (text.ts).
 */
function sectionName(line: string): string | undefined {
    if (line[0] !== "|" && line[0] !== "+") return undefined;
    const end = line.indexOf("+", 1);
    const cell = line.slice(1, end < 0 ? line.length : end);
    let a = 0;
    while (a < cell.length && cell[a] === "-") a++;
    let b = cell.length;
    while (b > a && cell[b - 1] === "-") b--;
    const name = cell.slice(a, b).trim();
    return a > 0 && b < cell.length && name && !name.includes("|") ? name : undefined;
}

/**
 * A failed test whose every stated reason is DCGM_FR_INTERNAL and where no entity is named failing did not complete:
 * "internal". The detail rows read "Warning: <text>" / "Warning: GPU0: <text>" / "Error: <text>"; the entity rows
 * "GPU0: Pass" / "Fail - GPU: 0".
 */
function internalOnly(t: DcgmTest): boolean {
    const reasons = t.evidence.filter((e) => /^(Warning|Error):/i.test(e)).map((e) => e.replace(REASON_HEAD, ""));
    // the first evidence is "<name>: <result>": its result is read as the entity rows are
    const head = `${t.name}: `;
    const gpuFailed = t.evidence.some((e, i) => ENTITY_FAILED.test(e) || (i === 0 && e.startsWith(head) && ENTITY_FAILED.test(e.slice(head.length))));
    return reasons.length > 0 && reasons.every((r) => INTERNAL.test(r)) && !gpuFailed;
}

/** A failed test whose every stated reason is DCGM_FR_PERSISTENCE_MODE: "persistence" (DcgmTest.status). */
function persistenceOnly(reasons: string[]): boolean {
    return reasons.length > 0 && reasons.every((r) => PERSISTENCE.test(r.trim()));
}

/** A result word as the kit grades it: a test DCGM did not run counts as skipped (neither passed nor failed). */
function status(word: string): DcgmTest["status"] {
    const w = word.toLowerCase();
    return w === "not run" ? "skip" : (w as DcgmTest["status"]);
}

export function parseDcgmText(text: string): DcgmReport {
    if (/^\s*\{/.test(text.slice(0, 64))) throw new HealthParseError("is JSON (dcgmi diag -j): the kit reads that form from dcgmi-diag.json");
    const tests: DcgmTest[] = [];
    const lines = boundedLines(text);
    const err = lines.map((l) => l.trim()).find((l) => /^Error:|Unable to connect|unable to establish a connection|^Diagnostic failed/i.test(l) || MIG_REFUSAL.test(l));
    let table = false;
    let last: DcgmTest | undefined;
    let detail: string | undefined;
    let category: string | undefined;
    for (const raw of lines) {
        const line = raw.trim();
        // a section row names the category of the tests under it
        category = sectionName(line) ?? category;
        if (!line.startsWith("|")) continue;
        const parts = line.split("|");
        const cells = parts.slice(1, -1).map((c) => c.trim());
        if (cells.length < 2) continue;
        const [name, result] = cells;
        // dcgmi wraps long text at exactly 45 characters of the Result column (one space of padding before it), so the
        // pieces join without adding or dropping a space
        const piece = parts[2].slice(1, 46);
        if (/^Diagnostic$/i.test(name) && /^Result$/i.test(result)) {
            table = true;
            continue;
        }
        if (/^-+\s/.test(name) || /^[-=]+$/.test(name)) continue; // section rows
        if (name && STATUS.test(result)) {
            last = { name, category, status: status(STATUS.exec(result)![1]), evidence: [`${name}: ${result}`] };
            tests.push(last);
            detail = undefined;
        } else if (!name && last && (STATUS.test(result) || ENTITY.test(result))) {
            const s = status((STATUS.exec(result) ?? ENTITY.exec(result))![1]);
            if (s === "fail" || (s === "warn" && last.status === "pass")) last.status = s;
            last.evidence.push(result);
        } else if (/^(Warning|Error|Info)\b/i.test(name)) {
            // an Error row fails what it stands under; one before any test is the diagnostic's own failure
            if (!last) {
                last = { name: "diagnostic", status: "fail", evidence: [] };
                tests.push(last);
            }
            if (/^Error/i.test(name)) last.status = "fail";
            detail = `${name}: ${piece}`;
            last.evidence.push(detail);
        } else if (!name && detail !== undefined && last) {
            // a wrapped detail row continues the text of the one above
            last.evidence[last.evidence.length - 1] += piece;
            detail = last.evidence[last.evidence.length - 1];
        }
    }
    for (const t of tests) {
        t.evidence = t.evidence.map((e) => e.trimEnd());
        if (t.status === "fail" && internalOnly(t)) t.status = "internal";
        else if (t.status === "fail" && persistenceOnly(t.evidence.filter((e) => /^(Warning|Error):/i.test(e)).map((e) => e.replace(REASON_HEAD, "")))) t.status = "persistence";
    }
    if (!table && tests.length === 0) {
        if (err) return { tests, error: err };
        throw new HealthParseError("is not dcgmi diag output (no \"| Diagnostic | Result |\" table, no \"Error:\" line)");
    }
    return { tests, error: tests.length === 0 ? err : undefined };
}

interface JsonResult { status?: string; gpu_id?: unknown; entity_id?: unknown; warnings?: Array<{ warning?: string }>; info?: unknown; error?: unknown }

export function parseDcgmJson(text: string): DcgmReport {
    if (text.length > MAX_FILE_CHARS) throw new HealthParseError(`is ${text.length} characters long; no capture the kit reads is longer than ${MAX_FILE_CHARS}`);
    // Lines before the document: dcgmi/nvvs may print one ahead of it ("WARNING: ..." in the output NVIDIA's own test
    // reads as real, NVIDIA/DCGM nvvs/src/tests/JsonResultTests.cpp "Deserialize real output", whose reader starts at
    // the first '{'; "Error: Unable to run diagnostic on unsupported GPU 0." ahead of a document with no results). The
    // document is read from the first line that opens an object.
    const start = text.search(/^\s*\{/m);
    const preamble = start > 0 ? text.slice(0, start) : "";
    let doc: Record<string, unknown>;
    try {
        doc = JSON.parse(start > 0 ? text.slice(start) : text) as Record<string, unknown>;
    } catch (e) {
        throw new HealthParseError(`is not JSON (${(e as Error).message})`);
    }
    // `dcgmi diag -j --iterations N` (N > 1) prints one object holding each run's document under "iterations", then
    // "Overall Result" ("Pass", or "Fail" with a "Warning" once a run returned an error: the loop stops there) (NVIDIA/DCGM
    // dcgmi/Diag.cpp at 4.6.0, the iterations loop; NvvsJsonStrings.h NVVS_ITERATIONS, NVVS_RESULT, NVVS_WARNING)
    if (doc && typeof doc === "object" && Array.isArray(doc["iterations"])) return iterations(doc);
    const diag = (doc?.["DCGM GPU Diagnostic"] ?? doc?.["DCGM Diagnostic"]) as { test_categories?: unknown; runtime_error?: unknown } | undefined;
    // the diagnostic did not run (dcgmi/Diag.cpp writes "runtime_error"): not checked, as the text form's "Error:" line
    if (diag && typeof diag.runtime_error === "string" && !Array.isArray(diag.test_categories)) return { tests: [], error: diag.runtime_error.slice(0, 500) };
    const said = /^\s*(Error:.*)$/m.exec(preamble)?.[1];
    if (diag && said && !Array.isArray(diag.test_categories)) return { tests: [], error: said.trim().slice(0, 500) };
    if (!diag || !Array.isArray(diag.test_categories)) {
        throw new HealthParseError("is JSON but not dcgmi diag -j output (no \"DCGM GPU Diagnostic\" / \"DCGM Diagnostic\" object with test_categories)");
    }
    // null entries occur between tests in DCGM 3.x output (the same real output): skipped, as is anything not an object
    const objects = <T>(xs: unknown): T[] => (Array.isArray(xs) ? xs.filter((x): x is T => typeof x === "object" && x !== null) : []);
    const tests: DcgmTest[] = [];
    for (const cat of objects<{ category?: string; tests?: unknown }>(diag.test_categories)) {
        for (const t of objects<{ name?: string; results?: unknown; test_summary?: JsonResult }>(cat.tests)) {
            const name = `${cat.category ?? "?"}/${t.name ?? "?"}`;
            const test: DcgmTest = { name, category: cat.category, status: "pass", evidence: [] };
            const results = objects<JsonResult>(t.results);
            const statuses = [...results.map((r) => r.status), t.test_summary?.status].filter((s): s is string => typeof s === "string");
            for (const r of results) {
                const who = r.gpu_id ?? r.entity_id;
                const words = [...(r.warnings ?? []).map((w) => w.warning).filter(Boolean), typeof r.error === "string" ? r.error : undefined].filter(Boolean);
                if (r.status && !/^pass$/i.test(r.status)) test.evidence.push(`${name}${who !== undefined ? ` GPU ${String(who)}` : ""}: ${r.status}${words.length ? ` - ${words.join("; ")}` : ""}`);
            }
            // a word that is none of dcgmi's is refused, never read as a pass; a test with no result at all ran nothing
            const unknown = statuses.find((x) => !WORD.test(x.trim()));
            if (unknown !== undefined) throw new HealthParseError(`test "${name}" has the result ${JSON.stringify(unknown.slice(0, 40))}, not one of dcgmi's Pass, Fail, Warn, Skip, Not Run`);
            const lower = statuses.map((x) => status(x.trim()));
            test.status = lower.includes("fail") ? "fail" : lower.includes("warn") ? "warn" : lower.every((x) => x === "skip") ? "skip" : "pass";
            // the same rule as the table's: no entity's result is Fail, and the test's failure (its test_summary, which
            // DCGM 4.x writes with the errors tied to no entity: dcgmi/Diag.cpp HelperJsonAddTestSummary) gives only
            // DCGM_FR_INTERNAL as its reasons
            const isFail = (r: JsonResult): boolean => typeof r.status === "string" && /^fail$/i.test(r.status.trim());
            const summaryWarnings: unknown = t.test_summary?.warnings;
            const summaryReasons = (Array.isArray(summaryWarnings) ? summaryWarnings : []).map((w: { warning?: unknown } | null) => (typeof w?.warning === "string" ? w.warning : ""));
            if (t.test_summary && isFail(t.test_summary)) for (const w of summaryReasons) test.evidence.push(`${name}: Fail - ${w}`);
            if (test.status === "fail" && !results.some(isFail) && t.test_summary && isFail(t.test_summary)
                && summaryReasons.length > 0 && summaryReasons.every((w) => INTERNAL.test(w))) test.status = "internal";
            // every failed result's and the summary's stated reasons are DCGM_FR_PERSISTENCE_MODE
            const failedReasons = [...results.filter(isFail), ...(t.test_summary && isFail(t.test_summary) ? [t.test_summary] : [])]
                .flatMap((r) => (Array.isArray(r.warnings) ? r.warnings : []).map((w) => (typeof w?.warning === "string" ? w.warning : "")));
            if (test.status === "fail" && persistenceOnly(failedReasons)) test.status = "persistence";
            tests.push(test);
        }
    }
    return { tests };
}

/**
 * The runs of `dcgmi diag -j --iterations N`, each read as one document, their tests named with the run's number. A run
 * that returned an error stops the loop with "Overall Result": "Fail" and the error as "Warning", and the document kept
 * for it may be the run before's (Diag.cpp stores the last JSON it built): where no test failed, that run did not
 * complete, so the diagnostic is not checked (never a pass); a failed test fails as in one run.
 */
function iterations(doc: Record<string, unknown>): DcgmReport {
    const runs = (doc["iterations"] as unknown[]).filter((x): x is Record<string, unknown> => typeof x === "object" && x !== null);
    const reports = runs.map((run) => parseDcgmJson(JSON.stringify(run)));
    const tests = reports.flatMap((r, i) => r.tests.map((t) => ({ ...t, name: `${t.name} (iteration ${i + 1} of ${runs.length})` })));
    const overall = typeof doc["Overall Result"] === "string" ? (doc["Overall Result"] as string).trim() : undefined;
    if (overall === undefined || !/^(pass|fail)$/i.test(overall)) {
        throw new HealthParseError(`is dcgmi diag -j --iterations output whose "Overall Result" is ${JSON.stringify(overall?.slice(0, 40) ?? null)}, not Pass or Fail`);
    }
    const said = reports.find((r) => r.error)?.error;
    if (/^fail$/i.test(overall) && !tests.some((t) => t.status === "fail")) {
        const warning = typeof doc["Warning"] === "string" ? (doc["Warning"] as string).slice(0, 500) : "no reason given";
        return { tests, error: `the run of --iterations stopped with "Overall Result": "Fail" (${warning})` };
    }
    if (said && tests.length === 0) return { tests, error: said };
    return { tests };
}
