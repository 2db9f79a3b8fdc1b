/**
 * The node-local fan-out: the controller's whole part of a node-local run (cluster.ansible.mode: node-local). One
 * Node process opens one SSH session per node and run (through the same ProxyCommand / Session Manager hop, pinned
 * known_hosts and run-bound agent as push mode: the inventory's own ansible_ssh_common_args), in which the node
 * checks its Python, takes the bundle where it lacks that digest, runs the playbook against itself (`ansible-playbook -c local`,
 * node-scripts.ts), reads the node's progress lines into aggregated ones, and writes one log in ansible-playbook's
 * grammar (each node's own PLAY RECAP line and failures, written by the controller; a failed node's whole log as a
 * quote: nodeLogSection) that the summariser (summarise.ts) and the resume record
 * (resume.ts) read exactly as they read a push-mode log. So partial failure, maxFailPercentage, failedNodes and the
 * retry of the failed nodes only keep their meaning.
 *
 * Connections: at most `connectLimit` SSH handshakes at once (sshd's MaxStartups counts only connections that have
 * not authenticated yet; its default 10:30:100 starts refusing at 10. source: OpenBSD sshd_config(5) MaxStartups);
 * a handshake counts until the node's first line; the first goes alone, so the bastion hop's shared master
 * (inventory.ts JUMP_MUX) exists before the others start and every later hop is a channel on it. A handshake that fails (ssh exit 255) is tried again with a
 * backoff; a node's run has a wall-clock limit. `parallel` nodes run at once.
 *
 * The functions here are self-contained (no imports, no module-level helpers): fanoutScript() embeds their source in
 * the script the run starts, as summariserScript() does.
 */
import { NODE_RUN_SCRIPT } from "./node-scripts";
import { generatedScriptHead, parseAnsibleLog, type AnsibleLogSummary } from "./summarise";
import { NODE_PYTHON_RANGE } from "./node-python";

/** A node as the fan-out reaches it: from the inventory the program rendered (ansible.ts nodeTargets). */
export interface FanoutNode {
    name: string;
    address: string;
    port: number;
    user: string;
    /** the inventory's ansible_ssh_common_args: host-key options and the hop */
    sshArgs: string;
    /** ansible_ssh_private_key_file, when the inventory names one (tests, runs by hand) */
    keyFile?: string;
    /** the node's own inventory: this host with its variables and the group's, as YAML */
    inventory: string;
}

/**
 * The node list as the program keeps it for a run (node-local.ts keptNodeTargets, ansible.ts keepNodeTargets): the
 * group's variables, which end every node's own inventory, once. A node marked `shared` has its own part in
 * `inventory`, and `shared` follows it.
 */
export interface KeptNodes {
    shared: string;
    nodes: Array<FanoutNode & { shared?: true }>;
}

/**
 * The fan-out's nodes from a node list as read from its JSON: a kept list (KeptNodes), each node's inventory joined
 * with the shared part, or a plain FanoutNode array (what `rdmakit check` hands on stdin). Self-contained: the
 * generated script (fanoutScript) carries it. Throws on anything else, which the script reports as a failed fan-out.
 */
export function fanoutNodes(list: unknown): FanoutNode[] {
    if (Array.isArray(list)) return list as FanoutNode[];
    const kept = list as KeptNodes | null;
    if (kept === null || typeof kept !== "object" || typeof kept.shared !== "string" || !Array.isArray(kept.nodes)) {
        throw new Error("the node list is neither a list of nodes nor { shared, nodes }");
    }
    return kept.nodes.map((n) => {
        const { shared, ...node } = n;
        return shared === true ? { ...node, inventory: node.inventory + kept.shared } : node;
    });
}

/** What the run gives the fan-out (the generated script reads it from the run's environment and files). */
export interface FanoutConfig {
    nodes: FanoutNode[];
    /** the extra variables as the run wrote them ($tmp/vars.json text) */
    varsJson: string;
    bundleFile: string;
    bundleDigest: string;
    playbook: string;
    label: string;
    /** node names this run is limited to (a retry, resume.ts); [] for all */
    limit: string[];
    runTags: string;
    skipTags: string;
    /** the aggregated log (the summariser reads it) and the folder of failed nodes' own logs */
    log: string;
    nodeLogDir: string;
    controlDir: string;
    connectLimit: number;
    parallel: number;
    nodeTimeoutS: number;
    connectRetries: number;
    /** how long a node may take to come back after a reboot the roles asked for */
    rebootTimeoutS: number;
    /** the Pythons the bundle runs on, as the failure of a node without one says it (node-python.ts NODE_PYTHON_RANGE) */
    pythonRange: string;
    /**
     * A run that brings results back (validate.yml's per-node part): the extra variable the node sets to a folder of
     * its own (`<variable>=<sub-folder>`, node-scripts.ts NODE_RUN_SCRIPT $7) and the controller folder its files go
     * to, each node's own files only (collectedFile). Absent: nothing comes back but the log.
     */
    collect?: { spec: string; dir: string };
    /**
     * The cluster's munge key (the bytes, from the run's environment RDMAKIT_MUNGE_KEY, base64; never a file here):
     * sent to each node right after the input on its own session's stdin ($10 bytes), where the node script writes it
     * to MUNGE_KEY_STAGE (tmpfs, 0400 root) for the slurm role. Absent or empty: nothing is sent ($10 is 0).
     */
    secret?: Buffer;
}

/**
 * Shell-style words of an ssh argument string as Ansible splits ansible_ssh_common_args (shlex.split): blanks
 * separate words, '...' and "..." quote, a backslash escapes the next character outside single quotes. Throws on an
 * unterminated quote. Self-contained.
 */
export function splitShellWords(text: string): string[] {
    const out: string[] = [];
    let cur = "";
    let inWord = false;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === "'") {
            const end = text.indexOf("'", i + 1);
            if (end < 0) throw new Error("unterminated ' in ssh arguments");
            cur += text.slice(i + 1, end);
            i = end;
            inWord = true;
        } else if (c === '"') {
            let j = i + 1;
            for (; j < text.length && text[j] !== '"'; j++) {
                if (text[j] === "\\" && j + 1 < text.length && '"\\$`'.includes(text[j + 1])) j++;
                cur += text[j];
            }
            if (j >= text.length) throw new Error('unterminated " in ssh arguments');
            i = j;
            inWord = true;
        } else if (c === "\\" && i + 1 < text.length) {
            cur += text[++i];
            inWord = true;
        } else if (c === " " || c === "\t" || c === "\n") {
            if (inWord) out.push(cur);
            cur = "";
            inWord = false;
        } else {
            cur += c;
            inWord = true;
        }
    }
    if (inWord) out.push(cur);
    return out;
}

/**
 * What the controller takes from one node, at most (issue 34, finding 4): its session's output (progress lines, the
 * results it sends back in base64, its log) and the results unpacked. A node's health captures and preflight result
 * are a few MB (dmesg's ring buffer is 128 KiB-1 MiB by CONFIG_LOG_BUF_SHIFT 17-20, source: Linux init/Kconfig
 * LOG_BUF_SHIFT; nvidia-smi -q of 8 GPUs about 100 KiB, test/fixtures/health/captures); the playbooks have about
 * 400 named tasks (grep -c "- name:" playbooks/): a node naming thousands of distinct tasks or plays is not running them.
 */
export const NODE_LIMITS = { outputBytes: 32 * 1024 * 1024, unpackedBytes: 64 * 1024 * 1024, tasks: 2000, plays: 100, nameChars: 200 };

/** One progress line of a node's own run (rdmakit_progress.py grammar), or undefined for any other line. */
export interface NodeProgress {
    kind: "PLAY" | "TASK" | "HANDLER" | "RECAP";
    name: string;
    ok: boolean;
}

/**
 * Reads `[label] PLAY <name> — <n> host(s)`, `[label] TASK|HANDLER <name> — <ok>/<total> ok[, <f> failed][, <u>
 * unreachable]` (a heartbeat, `... (running <s>s)`, is no result and reads as undefined) and `[label] RECAP — ...`.
 * A node's run has one host, so a task line is that host's result: ok when its ok count is its total. The name is
 * the node's text: control characters (terminal escapes: OSC 52 clipboard writes, titles, line erases) become
 * blanks and it is cut at `maxName` characters before anyone prints it. Self-contained.
 */
export function parseNodeProgress(line: string, maxName = 200): NodeProgress | undefined {
    const m = /^\[[^\]]*\] (PLAY|TASK|HANDLER|RECAP) (?:(.*?) )?\u2014 (.*)$/.exec(line);
    if (!m) return undefined;
    const kind = m[1] as NodeProgress["kind"];
    // eslint-disable-next-line no-control-regex
    const raw = (m[2] ?? "").replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
    const name = raw.length > maxName ? raw.slice(0, maxName - 3) + "..." : raw;
    if (kind === "PLAY" || kind === "RECAP") return { kind, name, ok: true };
    if (/\(running \d+s\)$/.test(m[3])) return undefined;
    const c = /^(\d+)\/(\d+) ok/.exec(m[3]);
    if (!c || m[2] === undefined) return undefined;
    return { kind, name, ok: Number(c[1]) >= Number(c[2]) && Number(c[2]) > 0 };
}

/**
 * The aggregated progress: what every node's lines add up to, as the lines `pulumi up` shows (the same grammar as
 * rdmakit_progress.py, counted over nodes). A task's line comes once every node of the run has reported it or is
 * out (finished or failed); `status()` is the one-line count of nodes. A node adds at most `limits.tasks` distinct
 * tasks and the run `limits.plays` plays (NODE_LIMITS): a node naming more is ignored beyond them, so no node can
 * flood the operator's screen or make the aggregation slow (each line costs the tasks not yet printed, at most
 * limits.tasks per node, checked in O(1) each until they may be complete). Self-contained.
 */
export function createProgress(label: string, names: string[], write: (line: string) => void, limits = { tasks: 2000, plays: 100 }) {
    const total = names.length;
    const state = new Map<string, { phase: string; task: string; start: number; end: number; down: boolean; tasks: number }>();
    for (const n of names) state.set(n, { phase: "waiting", task: "", start: 0, end: 0, down: false, tasks: 0 });
    const plays = new Set<string>();
    let pending: Array<{ key: string; kind: string; name: string; ok: number; seen: Set<string>; emitted: boolean }> = [];
    const byKey = new Map<string, (typeof pending)[number]>();
    const out = (text: string) => write(`[${label}] ${text}`);
    // a node is out of the run from its failed task on (as the callback counts hosts), back in when it goes on (rescue)
    const failedCount = () => [...state.values()].filter((s) => s.down || s.phase === "failed" || s.phase === "unreachable").length;
    const finished = (n: string) => ["done", "failed", "unreachable"].includes(state.get(n)!.phase);
    let finishedCount = 0;
    const flush = () => {
        let emitted = false;
        for (const t of pending) {
            // a task can be complete only when the nodes that saw it and the finished ones make up the run
            if (t.seen.size + finishedCount < total) continue;
            if (names.every((n) => t.seen.has(n) || finished(n))) {
                t.emitted = true;
                emitted = true;
                const f = failedCount();
                out(`${t.kind} ${t.name} \u2014 ${t.ok}/${total} ok${f ? `, ${f} failed` : ""}`);
            }
        }
        if (emitted) pending = pending.filter((t) => !t.emitted);
    };
    return {
        phase(node: string, phase: string, now: number) {
            const s = state.get(node)!;
            const was = finished(node);
            if (s.phase === "waiting" && phase !== "waiting") s.start = now;
            s.phase = phase;
            if (finished(node) !== was) finishedCount += was ? -1 : 1;
            if (finished(node)) { s.end = now; flush(); }
        },
        line(node: string, p: { kind: string; name: string; ok: boolean }) {
            if (p.kind === "PLAY") {
                if (!plays.has(p.name) && plays.size < limits.plays) { plays.add(p.name); out(`PLAY ${p.name} \u2014 ${total} host${total === 1 ? "" : "s"}`); }
                return;
            }
            if (p.kind === "RECAP") return;
            const s = state.get(node)!;
            const key = `${p.kind}\u0000${p.name}`;
            let t = byKey.get(key);
            if (t?.seen.has(node)) { s.task = `${p.kind} ${p.name}`; s.down = !p.ok; return; }
            // a node's distinct tasks beyond the limit are not counted (nor printed)
            if (s.tasks >= limits.tasks) return;
            s.tasks++;
            if (!t) {
                t = { key, kind: p.kind, name: p.name, ok: 0, seen: new Set(), emitted: false };
                byKey.set(key, t);
                pending.push(t);
            }
            t.seen.add(node);
            if (p.ok) t.ok++;
            s.task = `${p.kind} ${p.name}`;
            s.down = !p.ok;
            flush();
        },
        status(): string {
            const count: Record<string, number> = {};
            const at = new Map<string, number>();
            for (const s of state.values()) {
                count[s.phase] = (count[s.phase] ?? 0) + 1;
                if (s.phase === "running" && s.task) at.set(s.task, (at.get(s.task) ?? 0) + 1);
            }
            const top = [...at.entries()].sort((a, b) => b[1] - a[1]).slice(0, 2).map(([t, n]) => `${t} (${n})`);
            return `nodes: ${count.done ?? 0} done, ${(count.running ?? 0) + (count.connecting ?? 0)} running, ` +
                (count.rebooting ? `${count.rebooting} rebooting, ` : "") +
                `${(count.failed ?? 0) + (count.unreachable ?? 0)} failed, ${count.waiting ?? 0} waiting (of ${total})` +
                (top.length ? `; at ${top.join(", ")}` : "");
        },
        summary(): string[] {
            const ok = [...state.values()].filter((s) => s.phase === "done").length;
            const times = [...state.entries()].filter(([, s]) => s.end > 0).map(([n, s]) => ({ n, t: (s.end - s.start) / 1000, task: s.task }))
                .sort((a, b) => b.t - a.t);
            const lines = [`RECAP \u2014 ${ok}/${total} hosts ok${total - ok ? `, ${total - ok} failed or unreachable` : ""}`];
            if (times.length > 0) {
                const median = times[Math.floor(times.length / 2)].t;
                lines.push(`slowest nodes: ${times.slice(0, 5).map((x) => `${x.n} ${x.t.toFixed(0)} s`).join(", ")} (median ${median.toFixed(0)} s of ${times.length})`);
            }
            return lines.map((l) => `[${label}] ${l}`);
        },
        emit: out,
    };
}

/** The result of one node, as the aggregated log records it. */
export interface NodeResult {
    name: string;
    kind: "ok" | "failed" | "unreachable";
    /** the node's ansible-playbook exit status, when it ran */
    rc?: number;
    recap: string;
    /** the node's whole log, when it failed */
    log?: string;
    /** why, when the node did not get to run the playbook to its end */
    message?: string;
    /** the task the node was at (for a timeout or a lost connection) */
    task?: string;
    /** how many times the node rebooted for the roles during this run */
    reboots?: number;
    seconds: number;
}

/**
 * A node's part of the aggregated log, in ansible-playbook's output grammar (what parseAnsibleLog reads), written by
 * the controller from what it knows of that node alone: its failures (the node's own log, read with parseAnsibleLog,
 * only those naming this node; or the controller's own reason for a node that never ran its playbook to the end: no
 * connection, no usable Python, a timeout) and one PLAY RECAP line for it, agreeing with its run's exit status. The
 * node's own text follows as a quote (every line behind `  | `, control characters dropped), which nothing reads: a
 * node cannot add hosts, recap lines or failures of other nodes to the run (issue 34, finding 2). `parse`: summarise.ts
 * parseAnsibleLog (a parameter, so this stays self-contained).
 */
export function nodeLogSection(r: NodeResult, parse: (text: string) => AnsibleLogSummary): string {
    // one line of a node's text, safe to print: no control characters (terminal escapes), at most n characters
    const plain = (s: string, n: number): string => {
        // C0 and C1 controls and DEL: ESC/CSI/OSC sequences lose their introducer and print as plain text
        // eslint-disable-next-line no-control-regex
        const t = String(s).replace(/[\u0000-\u001f\u007f-\u009f]+/g, " ").trim();
        return t.length > n ? t.slice(0, n - 3) + "..." : t;
    };
    const head = `# rdmakit node-local: ${r.name} ${r.kind}${r.rc !== undefined ? ` (ansible-playbook exit ${r.rc})` : ""} after ` +
        `${r.reboots ? `${r.reboots} reboot${r.reboots === 1 ? "" : "s"}, ` : ""}${r.seconds.toFixed(1)} s`;
    const text = r.log ?? r.recap;
    const own = parse(text);
    const counts = own.recap.find((x) => x.host === r.name) ??
        { ok: 0, changed: 0, unreachable: 0, failed: 0, skipped: 0, rescued: 0, ignored: 0 };
    const failures: Array<{ task: string; kind: string; item?: string; message: string }> = r.message !== undefined
        ? [{ task: r.task ?? "Connect to the node (rdmakit node-local)", kind: r.kind === "unreachable" ? "unreachable" : "failed", message: r.message }]
        : own.failures.filter((f) => f.host === r.name || f.kind === "error")
            .map((f) => ({ task: f.task, kind: f.kind === "unreachable" ? "unreachable" : "failed", ...(f.item !== undefined ? { item: f.item } : {}), message: f.message }));
    if (r.kind !== "ok" && failures.length === 0) {
        failures.push({ task: r.task ?? "(unknown task)", kind: r.kind, message: `the node's run ended with exit status ${r.rc ?? "unknown"}; its log names no failed task of its own` });
    }
    const down = r.kind === "unreachable" ? { unreachable: Math.max(1, counts.unreachable), failed: 0 }
        : r.kind === "failed" ? { unreachable: 0, failed: Math.max(1, counts.failed) } : { unreachable: 0, failed: 0 };
    const lines = [head];
    if (r.kind !== "ok" && text.trim() !== "") {
        lines.push(`# ${r.name}'s own log (a quote: nothing in it counts)`);
        // a loop, not push(...lines): one argument per line of the node's log overflowed the stack at ~125k lines, and
        // the throw lost the whole run's log (every node's verdict) to one node's output
        for (const l of text.split("\n")) lines.push(`  | ${plain(l, 2000)}`);
    }
    if (r.kind !== "ok") {
        for (const f of failures) {
            lines.push(`TASK [${plain(f.task, 200)}] ***`,
                `fatal: [${r.name}]: ${f.kind === "unreachable" ? "UNREACHABLE" : "FAILED"}!${f.item !== undefined ? ` (item=${plain(f.item, 100).replace(/\)/g, "]")})` : ""} => ` +
                JSON.stringify({ changed: false, msg: plain(f.message, 2000), ...(f.kind === "unreachable" ? { unreachable: true } : {}) }));
        }
    }
    lines.push("", "PLAY RECAP ***",
        `${r.name} : ok=${counts.ok}    changed=${counts.changed}    unreachable=${down.unreachable}    failed=${down.failed}    ` +
        `skipped=${counts.skipped}    rescued=${counts.rescued}    ignored=${counts.ignored}`, "");
    return lines.join("\n");
}

/** ansible-playbook's exit status for these results: 0, 2 when a node failed, 4 when nodes were only unreachable. */
export function fanoutExitStatus(results: NodeResult[]): number {
    if (results.some((r) => r.kind === "failed")) return 2;
    if (results.some((r) => r.kind === "unreachable")) return 4;
    return 0;
}

/**
 * Whether a file a node sent back (its path in the node's collect folder) is that node's own result and may be kept:
 * `<folder>/<node>.json` or `<folder>/<node>/<file>`, plain names only, `<folder>` one of the result folders a node
 * writes (validate.yml: nccl_validate_out_dir's `nccl`, nccl_validate_preflight_dir's `preflight`, node_health_out_dir's
 * `health`, the roles' defaults/main.yml). So a node can write only its own results, never another node's,
 * nor anything else of the stack's out folder (a log, an outcome record). Self-contained.
 */
export function collectedFile(rel: string, node: string): boolean {
    const parts = rel.split("/");
    if (parts.some((p) => p === "" || p === "." || p === ".." || !/^[A-Za-z0-9._+-]+$/.test(p))) return false;
    if (!["nccl", "preflight", "health"].includes(parts[0])) return false;
    return (parts.length === 2 && parts[1] === `${node}.json`) || (parts.length === 3 && parts[1] === node);
}

/**
 * The key exchanges the fan-out's sessions offer, best first, of those this ssh supports (`ssh -Q kex`): the hybrid
 * post-quantum mlkem768x25519 (OpenSSH 9.9+) first, then curve25519, then sntrup761x25519 and the rest. OpenSSH 9.0-9.8
 * put sntrup761x25519 first by default: a session through the hop cost the client 99-113 ms of CPU with it against
 * 19-20 ms with curve25519 (measured with OpenSSH 9.2: bench/ssh-session.sh), about 80 CPU-seconds of the controller
 * at 1,000 nodes; mlkem768 is as cheap as curve25519 by its design (unconfirmed here: this
 * machine's OpenSSH is 9.2). The price on 9.0-9.8 is a classical (not post-quantum) exchange for these sessions, which
 * carry the run's variables (no secret by design) and the public bundle, never a key.
 * source: OpenBSD ssh_config(5) KexAlgorithms (the names, the default order); OpenSSH 9.0 and 9.9 release notes
 * (https://www.openssh.com/txt/release-9.0: sntrup761x25519-sha512@openssh.com the default; 9.9 adds
 * mlkem768x25519-sha256). Self-contained.
 */
export function kexPreference(supported: string[]): string {
    const order = ["mlkem768x25519-sha256", "curve25519-sha256", "curve25519-sha256@libssh.org", "sntrup761x25519-sha512",
        "sntrup761x25519-sha512@openssh.com", "ecdh-sha2-nistp256", "ecdh-sha2-nistp384", "ecdh-sha2-nistp521",
        "diffie-hellman-group-exchange-sha256", "diffie-hellman-group16-sha512", "diffie-hellman-group18-sha512", "diffie-hellman-group14-sha256"];
    const have = new Set(supported.map((k) => k.trim()));
    return order.filter((k) => have.has(k)).join(",");
}

/** The command a session runs on the node: `[sudo -n] sh -c '<script>' rdmakit <words>`. Self-contained. */
export function remoteCommand(script: string, words: string[], user: string): string {
    if (script.includes("'")) throw new Error("a node script must hold no single quote");
    for (const w of words) if (!/^[A-Za-z0-9._,:@%+=/-]+$/.test(w)) throw new Error(`not a plain word for the node's shell: ${JSON.stringify(w)}`);
    return `${user === "root" ? "" : "sudo -n "}sh -c '${script}' rdmakit ${words.join(" ")}`;
}

type Deps = {
    cp: typeof import("child_process"); fs: typeof import("fs"); path: typeof import("path"); zlib: typeof import("zlib");
    parse: (text: string) => AnsibleLogSummary; limits: typeof NODE_LIMITS;
};

/**
 * Runs the fan-out; resolves with ansible-playbook's exit status for the results (fanoutExitStatus) once every node
 * has settled and the aggregated log is written. Uses the self-contained helpers above by name.
 */
export async function runFanout(deps: Deps, cfg: FanoutConfig, scripts: { run: string }, write: (line: string) => void): Promise<number> {
    const { cp, fs, path, parse, zlib } = deps;
    const limits = deps.limits;
    const NODE_LIMITS_OUTPUT = limits.outputBytes;
    const NODE_LIMITS_UNPACKED = limits.unpackedBytes;
    const limit = new Set(cfg.limit);
    const nodes = cfg.nodes.filter((n) => limit.size === 0 || limit.has(n.name));
    const progress = createProgress(cfg.label, nodes.map((n) => n.name), write, limits);
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
    // a stopped run (the run script's trap sends TERM) stops every session it started; the script closes the masters
    const children = new Set<import("child_process").ChildProcess>();
    for (const sig of ["SIGTERM", "SIGINT", "SIGHUP"] as const) {
        process.once(sig, () => { for (const c of children) c.kill("SIGTERM"); process.exit(128 + (sig === "SIGHUP" ? 1 : sig === "SIGINT" ? 2 : 15)); });
    }
    let lastStatus = "";
    let lastStatusAt = 0;
    const statusTimer = setInterval(() => {
        const s = progress.status();
        if (s !== lastStatus || Date.now() - lastStatusAt > 30000) { lastStatus = s; lastStatusAt = Date.now(); progress.emit(s); }
    }, 10000);

    // a counting gate for the handshakes: the first alone, then connectLimit at once
    let slots = 1;
    let firstDone = false;
    const waiters: Array<() => void> = [];
    const acquire = async () => { while (slots <= 0) await new Promise<void>((r) => waiters.push(r)); slots--; };
    const release = () => {
        slots++;
        if (!firstDone) { firstDone = true; slots += Math.max(0, cfg.connectLimit - 1); }
        while (slots > 0 && waiters.length > 0) waiters.shift()!();
    };

    // one session per node and run, no master of its own: a fresh node costs the controller one ssh client (and the
    // hop's) instead of a master, a session, an upload and an exit (bench/software.ts measures it). The bastion hop
    // keeps its one shared master (the ProxyCommand's ControlMaster=auto, inventory.ts).
    const kexList = cp.spawnSync("ssh", ["-Q", "kex"], { encoding: "utf8" });
    const kex = kexList.status === 0 ? kexPreference(String(kexList.stdout).split("\n")) : "";
    const base = (n: FanoutNode) => [
        // no forwarding, whatever the user's ssh_config says (inventory.ts NO_FORWARDING: the node is not trusted)
        "-o", "ForwardAgent=no", "-o", "ClearAllForwardings=yes",
        "-o", "BatchMode=yes", "-o", "ConnectTimeout=30", "-o", "ServerAliveInterval=15", "-o", "ServerAliveCountMax=4",
        "-o", "ControlMaster=no", "-o", "ControlPath=none", "-o", "Compression=no", ...(kex ? ["-o", `KexAlgorithms=${kex}`] : []),
        ...splitShellWords(n.sshArgs), ...(n.keyFile ? ["-i", n.keyFile] : []), "-p", String(n.port), `${n.user}@${n.address}`,
    ];
    const bundleSize = fs.statSync(cfg.bundleFile, { throwIfNoEntry: false })?.size ?? 0;
    let bundle: Buffer | undefined;
    const lastLine = (s: string) => s.trim().split("\n").filter((l) => l.trim() !== "").slice(-1)[0] ?? "";
    // the files a collecting run sent (base64 tar.gz between its markers): unpacked apart, then the node's own kept
    const collect = (n: FanoutNode, i: number, out: string): string => {
        if (!cfg.collect) return "";
        const a = out.indexOf("@@rdmakit files\n");
        const b = out.indexOf("@@rdmakit files-end\n");
        if (a < 0 || b < a) return "the node sent no results back";
        const stage = path.join(cfg.controlDir, `collect-${i}`);
        fs.rmSync(stage, { recursive: true, force: true });
        fs.mkdirSync(stage, { recursive: true });
        try {
            // unpacked here, at most limits.unpackedBytes (a small gzip can unpack to gigabytes), then tar reads it
            let plain: Buffer;
            try {
                plain = zlib.gunzipSync(Buffer.from(out.slice(a + 16, b).replace(/\s+/g, ""), "base64"), { maxOutputLength: NODE_LIMITS_UNPACKED });
            } catch (e) {
                return `its results could not be unpacked (${(e as NodeJS.ErrnoException).code === "ERR_BUFFER_TOO_LARGE" || e instanceof RangeError ? `more than ${NODE_LIMITS_UNPACKED} bytes` : (e as Error).message})`;
            }
            const tar = cp.spawnSync("tar", ["-xf", "-", "--no-same-owner", "--no-same-permissions", "-C", stage], { input: plain });
            if (tar.status !== 0) return `its results could not be unpacked (tar: ${String(tar.stderr || tar.error).trim()})`;
            const walk = (rel: string): void => {
                for (const e of fs.readdirSync(path.join(stage, rel), { withFileTypes: true })) {
                    const r = rel ? `${rel}/${e.name}` : e.name;
                    if (e.isDirectory()) walk(r);
                    else if (e.isFile() && collectedFile(r, n.name)) {
                        fs.mkdirSync(path.dirname(path.join(cfg.collect!.dir, r)), { recursive: true });
                        fs.copyFileSync(path.join(stage, r), path.join(cfg.collect!.dir, r));
                    }
                }
            };
            walk("");
            return "";
        } catch (e) {
            // a result that cannot be kept fails this node, named; the run goes on and ends as usual
            return `its results could not be kept in ${cfg.collect.dir} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
        } finally {
            fs.rmSync(stage, { recursive: true, force: true });
        }
    };

    /**
     * One session on node n: the input first, the bundle once the node asks for it. Its handshake holds a slot of the
     * gate until the node's first line (the node answered: authenticated), or the session's end. A handshake that
     * fails (ssh exit 255 before any line) is tried again with a backoff, `connectRetries` times or until `deadline`.
     */
    const session = async (n: FanoutNode, cmd: string, payload: Buffer, onLine: (l: string) => void, timeoutMs: number, deadline: number) => {
        let why = "";
        for (let attempt = 0; attempt <= cfg.connectRetries || Date.now() < deadline; attempt++) {
            await acquire();
            let held = true;
            const free = () => { if (held) { held = false; release(); } };
            const r = await new Promise<{ rc: number; out: string; err: string; timedOut: boolean; answered: boolean; tooMuch: boolean }>((resolve) => {
                const child = cp.spawn("ssh", [...base(n), cmd], { stdio: ["pipe", "pipe", "pipe"] });
                children.add(child);
                let out = "";
                let err = "";
                let partial = "";
                let timedOut = false;
                let answered = false;
                let bytes = 0;
                let tooMuch = false;
                const timer = setTimeout(() => { timedOut = true; child.kill("SIGTERM"); }, timeoutMs);
                const line = (l: string) => {
                    out += l + "\n";
                    if (!answered) {
                        answered = true;
                        free();
                        if (l === "@@rdmakit need-bundle") {
                            bundle ??= fs.readFileSync(cfg.bundleFile);
                            child.stdin.end(bundle);
                        } else {
                            child.stdin.end();
                        }
                    }
                    onLine(l);
                };
                child.stdout.on("data", (d: Buffer) => {
                    // a node that sends more than the limit is stopped there: what it sent is not kept
                    if (tooMuch) return;
                    bytes += d.length;
                    if (bytes > NODE_LIMITS_OUTPUT) { tooMuch = true; out = ""; partial = ""; child.kill("SIGTERM"); return; }
                    const lines = (partial + d.toString("utf8")).split("\n");
                    partial = lines.pop() ?? "";
                    for (const l of lines) line(l);
                });
                child.stderr.on("data", (d: Buffer) => { err = (err + d.toString("utf8")).slice(-8000); });
                child.stdin.on("error", () => undefined);
                child.stdin.write(payload);
                child.on("error", (e) => { err += String(e); });
                child.on("close", (code: number | null, signal: NodeJS.Signals | null) => {
                    children.delete(child);
                    clearTimeout(timer);
                    if (partial) line(partial);
                    resolve({ rc: code ?? (signal ? 255 : -1), out, err, timedOut, answered, tooMuch });
                });
            });
            free();
            if (r.answered || r.timedOut || r.tooMuch || r.rc !== 255) return { ...r, why: "" };
            why = lastLine(r.err) || `ssh exited ${r.rc}`;
            await sleep(Math.min(30000, 2000 * 2 ** Math.min(attempt, 4)) + Math.floor(Math.random() * 1000));
        }
        return { rc: 255, out: "", err: "", timedOut: false, answered: false, tooMuch: false, why };
    };

    const runNode = async (n: FanoutNode, i: number): Promise<NodeResult> => {
        const start = Date.now();
        let reboots = 0;
        const done = (r: Omit<NodeResult, "name" | "seconds">): NodeResult =>
            ({ name: n.name, seconds: (Date.now() - start) / 1000, ...(reboots ? { reboots } : {}), ...r });
        progress.phase(n.name, "connecting", start);
        const input = Buffer.from(JSON.stringify({ inventory: n.inventory, vars: cfg.varsJson }), "utf8");
        const secret = cfg.secret ?? Buffer.alloc(0);
        const payload = Buffer.concat([input, secret]);
        const words = [cfg.bundleDigest, cfg.playbook, n.name, cfg.label, cfg.runTags || "-", cfg.skipTags || "-", cfg.collect ? cfg.collect.spec : "-",
            String(input.length), String(bundleSize), String(secret.length)];
        const runCmd = remoteCommand(scripts.run, words, n.user);
        const deadline = start + cfg.nodeTimeoutS * 1000;
        let task = "";
        let lost = 0;
        let reconnectUntil = 0;
        for (let pass = 0; pass < 8; pass++) {
            const r = await session(n, runCmd, payload, (l) => {
                if (l.startsWith("@@rdmakit ")) { if (l.endsWith("-bundle")) progress.phase(n.name, "running", Date.now()); return; }
                const p = parseNodeProgress(l, limits.nameChars);
                if (p) { if (p.kind === "TASK" || p.kind === "HANDLER") task = `${p.name}`; progress.line(n.name, p); }
            }, Math.max(1000, deadline - Date.now()), reconnectUntil);
            reconnectUntil = 0;
            if (r.why) {
                if (pass === 0) return done({ kind: "unreachable", recap: "", message: `could not connect after ${cfg.connectRetries + 1} tries: ${r.why}` });
                return done({ kind: "unreachable", recap: "", task: task || "Wait for the node after its reboot (rdmakit node-local)", message: r.why });
            }
            if (r.tooMuch) return done({ kind: "failed", recap: "", task: task || undefined, message: `the node sent more than ${NODE_LIMITS_OUTPUT} bytes: stopped, nothing of it kept` });
            if (r.timedOut) return done({ kind: "failed", recap: "", task: task || undefined, message: `the node's run did not finish within ${cfg.nodeTimeoutS} s` });
            const marks = r.out.split("\n").filter((l) => l.startsWith("@@rdmakit "));
            const noPython = marks.find((l) => l.startsWith("@@rdmakit no-python "));
            if (noPython !== undefined) {
                return done({ kind: "failed", recap: "", task: "Check the node's Python (rdmakit node-local)",
                    message: `${n.name} has ${noPython.slice("@@rdmakit no-python ".length)}; node-local mode needs Python ${cfg.pythonRange} ` +
                        "(python3 or /usr/libexec/platform-python): install one on the node, or set cluster.ansible.mode: controller" });
            }
            const bad = marks.find((l) => l.startsWith("@@rdmakit bundle-failed"));
            if (bad !== undefined) {
                return done({ kind: "failed", recap: "", task: "Prepare the node's Ansible (rdmakit node-local bundle)",
                    message: bad.slice("@@rdmakit bundle-failed".length).trim() || "the bundle could not be unpacked" });
            }
            if (marks.includes("@@rdmakit reboot")) {
                progress.phase(n.name, "rebooting", Date.now());
                // the task the node was at is its own request for the reboot: what comes next is the wait for it
                reboots++;
                task = "";
                await sleep(20000);
                reconnectUntil = Date.now() + cfg.rebootTimeoutS * 1000;
                continue;
            }
            const rcLine = marks.find((l) => l.startsWith("@@rdmakit rc "));
            if (rcLine === undefined && r.rc === 255 && lost < cfg.connectRetries) {
                // the connection dropped under the run: connect again and run again (the roles are idempotent)
                lost++;
                continue;
            }
            if (rcLine === undefined) {
                // the session ended before the node's run did (a lost connection): say so at the task it was at
                return done({ kind: r.rc === 255 ? "unreachable" : "failed", recap: "", task: task || undefined,
                    message: `the session ended before the node's run finished (ssh exit ${r.rc}): ${lastLine(r.err)}` });
            }
            const rc = Number(rcLine.slice("@@rdmakit rc ".length));
            const lostFiles = collect(n, i, r.out);
            if (lostFiles) return done({ kind: "failed", rc, recap: "", task: task || undefined, message: lostFiles });
            const body = r.out.slice(r.out.indexOf(rcLine) + rcLine.length + 1);
            const logAt = body.indexOf("@@rdmakit log\n");
            const recap = logAt >= 0 ? body.slice(0, logAt) : body;
            const log = logAt >= 0 ? body.slice(logAt + "@@rdmakit log\n".length) : undefined;
            return done({ kind: rc === 0 ? "ok" : rc === 4 ? "unreachable" : "failed", rc, recap, ...(log !== undefined ? { log } : {}) });
        }
        return done({ kind: "failed", recap: "", message: "the node asked for more reboots than a run allows (8 passes)" });
    };

    const results: NodeResult[] = new Array(nodes.length);
    let next = 0;
    const worker = async () => {
        while (next < nodes.length) {
            const i = next++;
            const r = await runNode(nodes[i], cfg.nodes.indexOf(nodes[i]));
            results[i] = r;
            progress.phase(r.name, r.kind === "ok" ? "done" : r.kind, Date.now());
            const own = path.join(cfg.nodeLogDir, `${r.name}.log`);
            if (r.kind === "ok") fs.rmSync(own, { force: true });
            else {
                fs.mkdirSync(cfg.nodeLogDir, { recursive: true });
                // the node's own text, read by an operator on a failure: no control character but tab and newline
                // eslint-disable-next-line no-control-regex
                fs.writeFileSync(own, (r.log ?? nodeLogSection(r, parse)).replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, " "));
            }
        }
    };
    try {
        await Promise.all(Array.from({ length: Math.max(1, Math.min(cfg.parallel, nodes.length)) }, worker));
    } finally {
        // whatever happened, no status line after the run (an error ends it: the script's catch says why)
        clearInterval(statusTimer);
    }
    fs.writeFileSync(cfg.log, results.map((r) => nodeLogSection(r, parse)).join("\n"));
    for (const l of progress.summary()) write(l);
    return fanoutExitStatus(results);
}

/**
 * The Node script (CommonJS) the node-local run starts: `node fanout.cjs <nodes.json> <vars.json>` (the node list
 * as fanoutNodes reads it) with the run's
 * environment (RDMAKIT_BUNDLE_FILE, RDMAKIT_BUNDLE_DIGEST, RDMAKIT_PLAYBOOK_NAME, RDMAKIT_PROGRESS_LABEL,
 * RDMAKIT_ANSIBLE_LOG, RDMAKIT_NODE_LOG_DIR, ANSIBLE_SSH_CONTROL_PATH_DIR, RDMAKIT_RETRY_NODES, RDMAKIT_FANOUT_*,
 * RDMAKIT_COLLECT / RDMAKIT_COLLECT_DIR (a run whose per-node results come back: FanoutConfig.collect),
 * ANSIBLE_RUN_TAGS / ANSIBLE_SKIP_TAGS, RDMAKIT_MUNGE_KEY: FanoutConfig.secret); progress on stdout; exits with ansible-playbook's status for the results.
 */
export function fanoutScript(): string {
    return [
        ...generatedScriptHead("components/provision/fanout.ts",
            { splitShellWords, parseNodeProgress, createProgress, parseAnsibleLog, nodeLogSection, fanoutExitStatus, collectedFile, kexPreference, remoteCommand, runFanout, fanoutNodes }),
        "var fs = require('fs'), env = process.env;",
        "var num = function (v, d) { var n = Number(v); return Number.isFinite(n) && n > 0 ? n : d; };",
        "var cfg = {",
        "  nodes: fanoutNodes(JSON.parse(fs.readFileSync(process.argv[2], 'utf8'))), varsJson: fs.readFileSync(process.argv[3], 'utf8'),",
        "  bundleFile: env.RDMAKIT_BUNDLE_FILE, bundleDigest: env.RDMAKIT_BUNDLE_DIGEST, playbook: env.RDMAKIT_PLAYBOOK_NAME,",
        "  label: env.RDMAKIT_PROGRESS_LABEL || 'site', limit: (env.RDMAKIT_RETRY_NODES || '').split(',').filter(Boolean),",
        "  runTags: env.ANSIBLE_RUN_TAGS || '', skipTags: env.ANSIBLE_SKIP_TAGS || '', log: env.RDMAKIT_ANSIBLE_LOG,",
        "  nodeLogDir: env.RDMAKIT_NODE_LOG_DIR, controlDir: env.ANSIBLE_SSH_CONTROL_PATH_DIR,",
        "  connectLimit: num(env.RDMAKIT_FANOUT_CONNECT, 10), parallel: num(env.RDMAKIT_FANOUT_PARALLEL, 100),",
        "  nodeTimeoutS: num(env.RDMAKIT_FANOUT_NODE_TIMEOUT_S, 10800), connectRetries: /^[0-9]+$/.test(env.RDMAKIT_FANOUT_RETRIES || '') ? Number(env.RDMAKIT_FANOUT_RETRIES) : 3,",
        "  rebootTimeoutS: num(env.RDMAKIT_FANOUT_REBOOT_TIMEOUT_S, 900),",
        `  pythonRange: ${JSON.stringify(NODE_PYTHON_RANGE)},`,
        "  collect: env.RDMAKIT_COLLECT ? { spec: env.RDMAKIT_COLLECT, dir: env.RDMAKIT_COLLECT_DIR } : undefined,",
        // the munge key lives in this process's memory only: out of the environment the ssh clients inherit
        "  secret: env.RDMAKIT_MUNGE_KEY ? Buffer.from(env.RDMAKIT_MUNGE_KEY, 'base64') : undefined,",
        "};",
        "delete env.RDMAKIT_MUNGE_KEY;",
        "fs.mkdirSync(cfg.controlDir, { recursive: true, mode: 0o700 });",
        `var scripts = { run: ${JSON.stringify(NODE_RUN_SCRIPT)} };`,
        `runFanout({ cp: require('child_process'), fs: fs, path: require('path'), zlib: require('zlib'), parse: parseAnsibleLog, limits: ${JSON.stringify(NODE_LIMITS)} }, cfg, scripts, function (l) { process.stdout.write(l + '\\n'); })`,
        // the fan-out's own CPU (one process, so one core), for the software bench (bench/software.ts)
        "  .finally(function () { if (env.RDMAKIT_FANOUT_CPU_FILE) { var u = process.cpuUsage(); fs.writeFileSync(env.RDMAKIT_FANOUT_CPU_FILE, ((u.user + u.system) / 1e6).toFixed(3) + '\\n'); } })",
        "  .then(function (rc) { process.exitCode = rc; }, function (e) { process.stderr.write('rdmakit: the node-local fan-out failed: ' + (e && e.message || e) + '\\n'); process.exitCode = 1; });",
        "",
    ].join("\n");
}
