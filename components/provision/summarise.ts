/**
 * Turns ansible-playbook output (default stdout callback) into the few lines a `pulumi up` error should show: which
 * host failed, at which task, and why. Pure.
 *
 * parseAnsibleLog and formatAnsibleFailures are written to be self-contained (no imports, no module-level helpers):
 * summariserScript() embeds their source in a small Node script that the Ansible command runs on its own log when
 * ansible-playbook fails, because the command's output is the only thing Pulumi shows for a failed command.
 */
import { recordRun } from "./resume";

/** One host that failed or was unreachable, at the task where it happened. */
export interface AnsibleFailure {
    host: string;
    /** As Ansible prints it, e.g. "node_prep : Wait for cloud-init" or "Gathering Facts". */
    task: string;
    kind: "failed" | "unreachable" | "error";
    /** Loop item label when the failure was one item of a loop. */
    item?: string;
    message: string;
}

/** One PLAY RECAP line. */
export interface AnsibleRecap {
    host: string;
    ok: number;
    changed: number;
    unreachable: number;
    failed: number;
    skipped: number;
    rescued: number;
    ignored: number;
}

export interface AnsibleLogSummary {
    failures: AnsibleFailure[];
    recap: AnsibleRecap[];
}

/** Reads failures (fatal/failed/UNREACHABLE lines, ERROR! blocks) and the PLAY RECAP from ansible-playbook output. */
export function parseAnsibleLog(text: string): AnsibleLogSummary {
    const failures: AnsibleFailure[] = [];
    const recap: AnsibleRecap[] = [];
    const lines = text.split(/\r?\n/);
    let task = "(before the first task)";
    let inRecap = false;
    const taskRe = /^(?:TASK|RUNNING HANDLER) \[(.*)\] \**\s*$/;
    // fatal: [h1]: FAILED! => {...}   failed: [h1] (item=x) => {...}   fatal: [h3]: UNREACHABLE! => {...}
    const failRe = /^(fatal|failed): \[([^\]]+)\](?:: (FAILED|UNREACHABLE)!)?(?: \(item=(.*?)\))? => (.*)$/;
    const recapRe = /^(\S+)\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)\s+skipped=(\d+)\s+rescued=(\d+)\s+ignored=(\d+)/;
    const describe = (raw: string): string => {
        let data: unknown;
        try {
            data = JSON.parse(raw);
        } catch {
            return raw.trim();
        }
        if (data === null || typeof data !== "object") return String(data);
        const r = data as Record<string, unknown>;
        const parts: string[] = [];
        if (Array.isArray(r.argument_errors) && r.argument_errors.length > 0) {
            parts.push("invalid variables: " + r.argument_errors.map(String).join("; "));
        } else if (typeof r.msg === "string" && r.msg !== "") {
            parts.push(r.msg.trim());
        }
        if (typeof r.rc === "number" && r.rc !== 0) parts.push(`rc=${r.rc}`);
        if (typeof r.stderr === "string" && r.stderr.trim() !== "") {
            parts.push("stderr: " + r.stderr.trim().split("\n").slice(-3).join(" | "));
        } else if (typeof r.stdout === "string" && r.stdout.trim() !== "" && parts.length < 2) {
            parts.push("stdout: " + r.stdout.trim().split("\n").slice(-3).join(" | "));
        }
        return parts.length > 0 ? parts.join("; ") : raw.trim();
    };
    for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        const t = taskRe.exec(line);
        if (t) {
            task = t[1];
            continue;
        }
        if (/^PLAY RECAP \*/.test(line)) {
            inRecap = true;
            continue;
        }
        if (inRecap) {
            const m = recapRe.exec(line.trim());
            if (m) {
                recap.push({
                    host: m[1], ok: Number(m[2]), changed: Number(m[3]), unreachable: Number(m[4]),
                    failed: Number(m[5]), skipped: Number(m[6]), rescued: Number(m[7]), ignored: Number(m[8]),
                });
                continue;
            }
            if (line.trim() !== "") inRecap = false;
        }
        const f = failRe.exec(line);
        if (f) {
            const unreachable = f[3] === "UNREACHABLE";
            // Results marked verbose (an assert without quiet, -vvv) print as indented JSON over many lines:
            // read on until the object parses.
            // The object's end is found by counting brackets outside strings, each line read once: a JSON.parse of the
            // growing text after every line (what this did before) was quadratic in the block and threw once per line,
            // so a node's 8 MB log of such blocks took minutes (test/node-trust.test.ts).
            let raw = f[5];
            if (raw.trim().startsWith("{")) {
                const parts = [raw];
                let depth = 0, inString = false, escaped = false;
                const scan = (s: string): void => {
                    for (let k = 0; k < s.length; k++) {
                        const c = s.charCodeAt(k);
                        if (inString) {
                            if (escaped) escaped = false;
                            else if (c === 92) escaped = true; // backslash
                            else if (c === 34) inString = false; // "
                        } else if (c === 34) inString = true;
                        else if (c === 123 || c === 91) depth++; // { [
                        else if (c === 125 || c === 93) depth--; // } ]
                    }
                };
                scan(raw);
                // at most 400 lines after the failure's own (the bound was `j <= i + 400` with i moved along, so never hit)
                const last = i + 400;
                for (let j = i + 1; depth > 0 && j < lines.length && j <= last; j++) {
                    parts.push(lines[j]);
                    scan(lines[j]);
                    i = j;
                }
                raw = parts.join("\n");
            }
            const failure: AnsibleFailure = {
                host: f[2], task, kind: unreachable ? "unreachable" : "failed", message: describe(raw),
            };
            if (f[4] !== undefined) failure.item = f[4];
            failures.push(failure);
            continue;
        }
        if (/^ERROR! /.test(line)) {
            // Playbook-level errors (syntax, missing file) span the following lines up to a blank line.
            const block = [line.slice("ERROR! ".length)];
            for (let j = i + 1; j < lines.length && lines[j].trim() !== "" && block.length < 6; j++) block.push(lines[j].trim());
            failures.push({ host: "(ansible-playbook)", task: "(loading the playbook)", kind: "error", message: block.join(" ") });
        }
    }
    return { failures, recap };
}

/**
 * The error text for a failed run: one line per distinct failure (hosts that failed the same task with the same
 * reason, their own name aside, share a line), at most `maxLines`, and where the full log is. `stepHosts`: the hosts of
 * the whole step when the run was a retry of fewer (resume.ts).
 */
export function formatAnsibleFailures(summary: AnsibleLogSummary, logPath: string, maxLines = 20, stepHosts?: number): string {
    const clip = (s: string, n: number): string => (s.length > n ? s.slice(0, n - 3) + "..." : s);
    const failedHosts = new Set(summary.failures.map((f) => f.host));
    const retried = stepHosts !== undefined && stepHosts > summary.recap.length ? summary.recap.length : undefined;
    const total = retried !== undefined ? (stepHosts as number) : summary.recap.length;
    const head = summary.failures.length === 0
        ? "ansible-playbook failed without a task failure in its output"
        : `ansible-playbook failed on ${failedHosts.size}${total > 0 ? ` of ${total}` : ""} host` +
          `${(total > 0 ? total : failedHosts.size) === 1 ? "" : "s"}` +
          (retried !== undefined ? ` (a retry of the ${retried} that failed before)` : "");
    const groups: { hosts: string[]; f: AnsibleFailure; text: string }[] = [];
    const byKey = new Map<string, { hosts: string[]; f: AnsibleFailure; text: string }>();
    for (const f of summary.failures) {
        // The host's own name, as a whole word, does not make its failure different from the others'.
        const own = new RegExp("(^|[^A-Za-z0-9_.-])" + f.host.replace(/[.*+?^${}()|[\]\\]/g, "\\$&") + "(?![A-Za-z0-9_-])", "g");
        // a node's text reaches the operator's terminal: control characters (escapes) become blanks
        // eslint-disable-next-line no-control-regex
        const text = f.message.replace(/[\s\u0000-\u001f\u007f-\u009f]+/g, " ").replace(own, "$1<host>");
        const key = [f.kind, f.task, f.item ?? "", text].join("\u0000");
        const g = byKey.get(key);
        if (g) {
            g.hosts.push(f.host);
        } else {
            const ng = { hosts: [f.host], f, text };
            byKey.set(key, ng);
            groups.push(ng);
        }
    }
    const out = [`${head} (full log: ${logPath}):`];
    for (const g of groups.slice(0, maxLines)) {
        const what = g.f.kind === "unreachable" ? "unreachable at" : g.f.kind === "error" ? "error" : "failed at";
        // eslint-disable-next-line no-control-regex
        const item = g.f.item !== undefined ? ` (item ${clip(g.f.item.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " "), 60)})` : "";
        const hosts = g.hosts.length <= 5 ? g.hosts.join(", ") : `${g.hosts.slice(0, 5).join(", ")} and ${g.hosts.length - 5} more`;
        const msg = g.hosts.length === 1 ? g.text.split("<host>").join(g.hosts[0]) : g.text;
        // eslint-disable-next-line no-control-regex
        out.push(`  ${hosts}: ${what} task "${clip(g.f.task.replace(/[\u0000-\u001f\u007f-\u009f]+/g, " "), 200)}"${item}: ${clip(msg, 400)}`);
    }
    if (groups.length > maxLines) out.push(`  ... and ${groups.length - maxLines} more in the log`);
    return out.join("\n");
}

/** What a run that left nodes failed says after its summary (the retry: resume.ts). */
export const RETRY_NOTE = "rdmakit: the next `pulumi up` retries the failed nodes (only them), until they pass or cluster.ansible.exclude names them";

/** The prefix of the one line on a run's stdout that carries its outcome as JSON (RunOutcome). */
export const PROVISION_RESULT_PREFIX = "rdmakit-provision: ";

/** What a run of the node-software step ended with: the nodes that failed, each at its first failing task. */
export interface RunOutcome {
    /** true when the step passes: no node failed, or no more than cluster.ansible.maxFailPercentage of them */
    ok: boolean;
    /** hosts of the step: those in the PLAY RECAP, or all of them for a retry limited to the failed ones */
    hosts: number;
    failed: Array<{ host: string; task: string; kind: AnsibleFailure["kind"] }>;
    /** on the outcome line of a retry (resume.ts): which attempt it was */
    attempt?: number;
    /** the summary (formatAnsibleFailures) when a node failed or the playbook did not run */
    summary?: string;
}

/**
 * The outcome of one ansible-playbook run from its exit status and log: which hosts failed (the PLAY RECAP's failed
 * or unreachable hosts; a failure that a rescue block or ignore_errors absorbed does not count), at which task, and
 * whether that stays within `maxFailPercentage` of the hosts. A playbook-level error, an exit status other than
 * ansible-playbook's "hosts failed" (2) and "hosts unreachable" (4), or every host failing is never tolerated.
 * source: ansible-core lib/ansible/executor/task_queue_manager.py (RUN_FAILED_HOSTS = 2, RUN_UNREACHABLE_HOSTS = 4).
 * `stepHosts`: the hosts of the whole step when this run was a retry limited to fewer (the others passed before).
 * Self-contained (embedded in the summariser script).
 */
export function decideRun(summary: AnsibleLogSummary, rc: number, maxFailPercentage: number, logPath: string, stepHosts?: number,
    inventory?: string[]): RunOutcome {
    // `inventory`: the run's hosts (the fan-out's nodes, from the inventory): only their recap lines and failures count,
    // a host's first recap line only, and the step has at least as many hosts as the inventory names
    const known = inventory !== undefined && inventory.length > 0 ? new Set(inventory) : undefined;
    const seen = new Set<string>();
    const recap: AnsibleRecap[] = [];
    for (const r of summary.recap) {
        if ((known === undefined || known.has(r.host)) && !seen.has(r.host)) { seen.add(r.host); recap.push(r); }
    }
    summary = { failures: summary.failures.filter((f) => known === undefined || f.kind === "error" || known.has(f.host)), recap };
    if (known !== undefined && (stepHosts === undefined || stepHosts < known.size)) stepHosts = known.size;
    const down = new Set(summary.recap.filter((r) => r.failed > 0 || r.unreachable > 0).map((r) => r.host));
    const counted = summary.recap.length > 0
        ? summary.failures.filter((f) => f.kind === "error" || down.has(f.host))
        : summary.failures;
    const first = new Map<string, AnsibleFailure>();
    for (const f of counted) if (f.kind !== "error" && !first.has(f.host)) first.set(f.host, f);
    for (const h of down) if (!first.has(h)) first.set(h, { host: h, task: "(unknown task)", kind: "failed", message: "see the log" });
    const failed = [...first.values()].map((f) => ({ host: f.host, task: f.task, kind: f.kind }));
    // a retry (resume.ts) visits only the nodes that failed before; the others passed, and the tolerance is of them all
    const hosts = stepHosts !== undefined && stepHosts > summary.recap.length ? stepHosts : summary.recap.length;
    if (rc === 0 && failed.length === 0) return { ok: true, hosts, failed };
    const playbookError = counted.some((f) => f.kind === "error");
    const tolerated = !playbookError && (rc === 2 || rc === 4) && hosts > 0 && failed.length > 0 && failed.length < hosts &&
        failed.length * 100 <= maxFailPercentage * hosts;
    return { ok: tolerated, hosts, failed, summary: formatAnsibleFailures({ failures: counted, recap: summary.recap }, logPath, 20, hosts) };
}

/**
 * Whether a run settled every node it visited: each passed, or failed or was unreachable at a task (exit status 0, 2 or
 * 4, no playbook-level error, a PLAY RECAP). An interrupted run or a playbook error settles nothing, so no retry may
 * trust it. Self-contained (embedded in the summariser script).
 */
export function runSettled(summary: AnsibleLogSummary, rc: number): boolean {
    return (rc === 0 || rc === 2 || rc === 4) && summary.recap.length > 0 && !summary.failures.some((f) => f.kind === "error");
}

/**
 * The head of a generated CommonJS script: its origin, strict mode, and each pure function by its name, as its source
 * text (so the script runs the very code the tests run). `source`: the module that generates it.
 */
export function generatedScriptHead(source: string, fns: Record<string, (...args: never[]) => unknown>): string[] {
    return [
        `// Generated by rdmakit (${source}); rewritten at every \`pulumi up\`.`,
        '"use strict";',
        // Bundlers that keep function names (tsx/esbuild) wrap nested functions in __name(...).
        "var __name = function (f) { return f; };",
        ...Object.entries(fns).map(([name, fn]) => `var ${name} = (${fn.toString()});`),
    ];
}

/**
 * The Node script (CommonJS) the Ansible commands run on a log. `node s.cjs <log>`: prints the failure summary to
 * stderr (validation's use). `node s.cjs <log> <rc> <maxFailPercentage>`: the node-software step's verdict: the
 * RunOutcome line (PROVISION_RESULT_PREFIX) on stdout, then the summary on stderr and exit status `rc` when the step
 * fails, or the summary on stdout (a warning) and 0 when the failures stay within the tolerance. With
 * `$RDMAKIT_RUN_RECORD` set it also writes the run's record there (resume.ts recordRun) when the run settled its nodes.
 */
export function summariserScript(): string {
    return [
        ...generatedScriptHead("components/provision/summarise.ts", { parseAnsibleLog, formatAnsibleFailures, decideRun, runSettled, recordRun }),
        "var log = process.argv[2];",
        'var text = "";',
        'try { text = require("fs").readFileSync(log, "utf8"); } catch (e) { text = ""; }',
        "if (process.argv[3] === undefined) {",
        '  process.stderr.write(formatAnsibleFailures(parseAnsibleLog(text), log) + "\\n");',
        "} else {",
        "  var rc = Number(process.argv[3]);",
        "  var env = process.env;",
        "  var retry = (env.RDMAKIT_RETRY_NODES || '') !== '';",
        "  var parsed = parseAnsibleLog(text);",
        // node-local runs name their nodes (the fan-out's, from the inventory): the hosts are counted from them
        // a list of nodes (`rdmakit check`) or the kept { shared, nodes } (fanout.ts KeptNodes)
        "  var nodes; try { nodes = env.RDMAKIT_NODES_FILE ? (function (v) { return Array.isArray(v) ? v : v.nodes; })(JSON.parse(require('fs').readFileSync(env.RDMAKIT_NODES_FILE, 'utf8'))).map(function (n) { return String(n.name); }) : undefined; } catch (e) { nodes = undefined; }",
        "  var o = decideRun(parsed, rc, Number(process.argv[4] || 0), log, retry ? Number(env.RDMAKIT_RETRY_HOSTS) || undefined : undefined, nodes);",
        "  var rec = recordRun(o, runSettled(parsed, rc), env);",
        '  if (env.RDMAKIT_RUN_RECORD && rec) require("fs").writeFileSync(env.RDMAKIT_RUN_RECORD, JSON.stringify(rec) + "\\n");',
        "  var line = { ok: o.ok, hosts: o.hosts, failed: o.failed };",
        "  if (retry) line.attempt = Number(env.RDMAKIT_RETRY_ATTEMPT) || 1;",
        // the outcome line first: a failed command's error is its stdout and stderr in order, so it ends with the summary
        `  process.stdout.write(${JSON.stringify(PROVISION_RESULT_PREFIX)} + JSON.stringify(line) + "\\n");`,
        '  if (o.summary !== undefined) (o.ok ? process.stdout : process.stderr).write(o.summary + "\\n");',
        `  if (rec && rec.failed.length > 0) (o.ok ? process.stdout : process.stderr).write(${JSON.stringify(RETRY_NOTE)} + "\\n");`,
        "  process.exitCode = o.ok ? 0 : (rc === 0 ? 1 : rc);",
        "}",
        "",
    ].join("\n");
}

/** Reads the RunOutcome line a run printed last (undefined when there is none). Pure. */
export function parseRunOutcome(stdout: string | undefined): Omit<RunOutcome, "summary"> | undefined {
    const line = (stdout ?? "").split("\n").reverse().find((l) => l.startsWith(PROVISION_RESULT_PREFIX));
    if (line === undefined) return undefined;
    try {
        return JSON.parse(line.slice(PROVISION_RESULT_PREFIX.length)) as Omit<RunOutcome, "summary">;
    } catch {
        return undefined;
    }
}
