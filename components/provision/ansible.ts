import { createHash } from "crypto";
import * as fs from "fs";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { keepMessage, SpecError, SpecIssue, toInputPropertiesError } from "../errors";
import { parseRunOutcome, summariserScript } from "./summarise";
import { assetPath } from "../assets";
import { checkExtraVarNames } from "./inventory";
import { KEY_CLIENT, serveSshKey } from "./keysocket";
import { planRetry, readRunRecord, retryEnvironment, runRecordPath } from "./resume";
import { planChangedHosts, readInventoryFile } from "./changed-hosts";
import { bundleDigest, buildBundle } from "./bundle";
import { fanoutScript } from "./fanout";
import { keptNodeTargets } from "./node-local";
import { NODE_SEND_BOUND_LINES, nodeSendEnv } from "./node-send";
import { keepInput, readKeptInput } from "../kept-input";
import type { AnsibleMode } from "../types";

export interface AnsiblePlaybookArgs {
    /** Inventory text, e.g. from renderInventory(). A change re-runs the playbook. */
    inventory: pulumi.Input<string>;
    /** Playbook file inside `playbooksDir`. @default "site.yml" */
    playbook?: string;
    /** Folder with the playbooks, ansible.cfg and roles. @default the kit's own playbooks/ (see DEFAULT_PLAYBOOKS_DIR) */
    playbooksDir?: string;
    /** Extra variables (`-e @file`, JSON). A change re-runs the playbook. @default {} */
    extraVars?: pulumi.Input<Record<string, pulumi.Input<unknown>>>;
    /**
     * SSH private key (PEM/OpenSSH text) for the nodes and the bastion. Kept secret and out of the command's inputs:
     * the program serves it to the run's own ssh-agent (keysocket.ts), so a rotated key re-runs nothing.
     */
    sshPrivateKey: pulumi.Input<string>;
    /** Stack name for the output folder. @default pulumi.getStack() */
    stack?: string;
    /** Where the full log, the inventory used and the failure summariser go. @default `out/<stack>` */
    outDir?: string;
    /** Hosts Ansible works on at once (`ANSIBLE_FORKS`; plan.provision.forks). @default ansible.cfg's forks */
    forks?: number;
    /**
     * Percentage of the hosts that may fail without failing the step; the failed ones are then in `failedNodes`
     * (plan.provision.maxFailPercentage). @default 0: any failed host fails the step
     */
    maxFailPercentage?: number;
    /**
     * Where the playbook runs (plan.provision.mode): `node-local`, each node runs it on itself from a bundle the
     * controller sends (fanout.ts, bundle.ts; `forks` nodes at once); `controller`, ansible-playbook here pushes every
     * task over SSH. @default "node-local"
     */
    mode?: AnsibleMode;
    /**
     * The cluster's munge key (base64, a secret: components/slurm/munge-key.ts) for the slurm role: in the run's
     * environment only (RDMAKIT_MUNGE_KEY), the fan-out sends it on each node's own session (fanout.ts secret). Node-local
     * mode only: controller mode has no per-node session to carry it.
     */
    mungeKey?: pulumi.Input<string>;
}

/** A node the last run left failed, at its first failing task. */
export interface FailedNode {
    node: string;
    task: string;
}

/**
 * The kit's playbooks, as a path relative to the working directory `pulumi up` runs in: `playbooks` in this
 * repository, `node_modules/rdmakit/playbooks` in a program that imports the package. Relative, so the command's
 * inputs (and so its state) do not change when the project folder moves.
 */
export const DEFAULT_PLAYBOOKS_DIR = path.relative(process.cwd(), assetPath("playbooks")) || ".";

/**
 * How every run of the kit is started: under its own ssh-agent (`ssh-agent /bin/bash -c <script>`). The agent starts
 * empty before the script; ssh-agent runs the command in the parent process (the one the command provider started and
 * signals) and stays as its child, exiting within 10 s of the command's end whatever ended it, KILL included
 * (openssh-portable ssh-agent.c: with a command, `parent_alive_interval = 10`, and the agent exits once its parent
 * is gone); SSH_KEY_PRELUDE makes that immediate where it can. bash, not sh: dash runs no EXIT trap on a signal.
 */
export const RUN_INTERPRETER = ["ssh-agent", "/bin/bash", "-c"];

/** The most a key stays in the run's agent (ssh-add -t), should the run outlive every other guard. 24 h. */
export const KEY_LIFETIME_S = 86400;

/**
 * Shell lines every Ansible run of the kit starts with (under RUN_INTERPRETER). The key never enters an environment or
 * a file: the Pulumi program serves it on a private socket (keysocket.ts), and it goes from there through a pipe into
 * this run's agent, which holds it for the run (and at most KEY_LIFETIME_S). INT, TERM and HUP stop the playbook and
 * the agent and remove the temporary folder; a KILL of the shell or of its whole process group closes the pipe the
 * agent's watcher reads, which stops the agent at once; the agent's own parent check (10 s) backs that up.
 */
export const SSH_KEY_PRELUDE = [
    "set -u -o pipefail",
    "umask 077",
    'if [ -z "${SSH_AGENT_PID:-}" ] || [ ! -S "${SSH_AUTH_SOCK:-}" ]; then echo "rdmakit: the run must start under its own ssh-agent (ssh-agent /bin/bash -c ...)" >&2; exit 1; fi',
    'tmp=$(mktemp -d) || { kill "$SSH_AGENT_PID"; exit 1; }',
    'child=""',
    // the children first (they hold no key, but their ssh connections would go on using the agent), then the agent
    // then this run's SSH masters (ControlPersist in ansible.cfg, the bastion hop's in inventory.ts), which would
    // otherwise stay for their ControlPersist time
    'cleanup() { trap - EXIT INT TERM HUP; if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi; ' +
        'for s in "$tmp"/cp/*; do [ -S "$s" ] && ssh -o ControlPath="$s" -O exit rdmakit >/dev/null 2>&1 9>&-; done; ' +
        'kill "$SSH_AGENT_PID" 2>/dev/null; rm -rf "$tmp"; }',
    "trap cleanup EXIT",
    "trap 'cleanup; exit 129' HUP",
    "trap 'cleanup; exit 130' INT",
    "trap 'cleanup; exit 143' TERM",
    // fd 9: a pipe only this shell writes (every command below gets 9>&-); its watcher stops the agent at end of file,
    // that is as soon as this shell is gone, however it ended. The watcher has a session of its own (setsid), so a
    // signal to the run's process group, KILL included, does not stop it first (where setsid(1) exists: util-linux;
    // elsewhere, macOS, the agent's own 10 s check stands behind a group KILL).
    "w=\"cat >/dev/null; kill \\\"\\$SSH_AGENT_PID\\\" 2>/dev/null\"",
    'if command -v setsid >/dev/null 2>&1; then exec 9> >(exec setsid sh -c "$w"); else exec 9> >(exec sh -c "$w"); fi',
    "unset w",
    ...runChild(`node -e "${KEY_CLIENT}" ${KEY_LIFETIME_S}`),
    `if [ "$rc" -ne 0 ]; then echo "rdmakit: the SSH private key could not be loaded into the run's agent (ssh-add)" >&2; exit 1; fi`,
    // Connections of this run only: ansible.cfg keeps SSH masters open (ControlPersist), and a later run reusing
    // one would forward this run's agent, gone by then (validation's mpirun needs its own forwarded agent).
    'export ANSIBLE_SSH_CONTROL_PATH_DIR="$tmp/cp"',
];

/**
 * Runs `command` (one shell line, no 9>&- of its own) as the run's child so that a trapped signal stops it at once
 * (bash runs a trap only after the foreground command ends; `wait` returns at the signal), and sets `$rc`.
 */
export function runChild(command: string): string[] {
    return [`${command} 9>&- &`, 'child=$!', 'wait "$child"', "rc=$?", 'child=""'];
}

/**
 * What the run reads on stdin: the inventory and the extra variables. Not the environment: the inventory grows with
 * the node count, and Linux refuses any one environment string over 128 KiB (MAX_ARG_STRLEN, execve(2)); stdin is
 * a pipe (@pulumi/command local.Command `stdin`). Their digests stay in the environment, so a change still updates.
 */
export interface AnsibleRunInput {
    /**
     * The inventory text. Left out of the stdin of a run that reads it from `$RDMAKIT_INVENTORY_INPUT` (the file the
     * program keeps once per deployment, kept-input.ts: validation reads the provisioning run's inventory from there).
     */
    inventory: string;
    /** the extra variables as stableJson text */
    extraVars: string;
}

/**
 * The provisioning run's stdin (AnsiblePlaybook): the extra variables, and the inventory by the path and SHA-256 of the
 * file the program keeps beside the stack (kept-input.ts, written at a preview too), not the text: at 2,048 hosts the
 * text is 2.7 MB, most of the stack's inputs, and Pulumi sends every input on every checkpoint. Known at a preview
 * (the run's environment is not: its key socket), so the policy pack reads the inventory through it
 * (policies/rules/roce.ts). The run reads the same file from `$RDMAKIT_INVENTORY_INPUT` and checks it against
 * `$RDMAKIT_INVENTORY_HASH` before Ansible reads it (UNPACK_INPUT, as validation does).
 */
export interface AnsibleRunStdin {
    extraVars: string;
    /** the kept inventory, relative to the folder the run starts in (the program's) */
    inventoryFile: string;
    inventorySha256: string;
}

/**
 * Node-local mode: the fan-out's targets, derived from the inventory (node-local.ts keptNodeTargets: each node's own
 * inventory, about 1.3 KB a node, and the group's variables once), kept once per deployment beside the stack (kept-input.ts) rather than in the run's
 * input: the provisioning run and validation read the same file, by path and digest (`$RDMAKIT_NODES_FILE`,
 * `$RDMAKIT_NODES_HASH`). Returns those two variables; writes the file when `write`.
 */
export function keepNodeTargets(outDir: string, inventory: string, write: boolean, from?: string, leaveOut: readonly string[] = []): { RDMAKIT_NODES_FILE: string; RDMAKIT_NODES_HASH: string } {
    // leaveOut: inventory hosts no per-node play runs on (validation's Slurm head node): no session, no verdict
    const kept = keepInput(outDir, "nodes", "json", JSON.stringify(keptNodeTargets(inventory, leaveOut)), write);
    // named as outDir names it, or relative to `from` (the folder a command runs in)
    return { RDMAKIT_NODES_FILE: from === undefined ? kept.file : path.relative(path.resolve(from), path.resolve(kept.file)), RDMAKIT_NODES_HASH: kept.digest };
}

/**
 * Reads a run's stdin back (tests look at the inventory a run used): the inventory on it, or the kept file it names,
 * refused unless its SHA-256 is the one named (kept-input.ts readKeptInput). A stdin with neither (validation's
 * variables) comes back as it is.
 */
export function readAnsibleRunInput(stdin: string): AnsibleRunInput {
    const input = JSON.parse(stdin) as Partial<AnsibleRunInput & AnsibleRunStdin>;
    if (typeof input.inventory === "string" || typeof input.inventoryFile !== "string") return input as AnsibleRunInput;
    return { inventory: readKeptInput(input.inventoryFile, String(input.inventorySha256)), extraVars: input.extraVars as string };
}

/**
 * Node one-liner the script runs: stdin → the inventory file and $tmp/vars.json, refusing input whose digests do not
 * match the environment's (a truncated pipe must not run Ansible on half an inventory). Every string of the variables
 * that Jinja could read as a template (one holding `{`: Jinja's delimiters are `{{`, `{%` and `{#`) is written as
 * `{"__ansible_unsafe": ...}`, which Ansible loads as an unsafe value it never templates, so a
 * `{{ lookup('pipe', ...) }}` in a variable stays that text (markUnsafe in inventory.ts does the same for the
 * inventory). source: ansible/ansible lib/ansible/parsing/ajson.py (AnsibleJSONDecoder: `__ansible_unsafe` →
 * wrap_var), lib/ansible/utils/vars.py load_extra_vars (`-e @file` goes through that decoder);
 * Jinja "Template Designer Documentation" (default delimiters).
 */
export const UNPACK_INPUT = [
    "const fs = require('fs'), c = require('crypto');",
    "const h = (s) => c.createHash('sha256').update(s).digest('hex');",
    "let d; try { d = JSON.parse(fs.readFileSync(0, 'utf8')); } catch (e) { console.error('rdmakit: the run input on stdin is not JSON'); process.exit(1); }",
    // a kept input (kept-input.ts): the file the program wrote this deployment, refused unless its digest is the planned one
    "const kept = (f, want, what) => { let t; try { t = fs.readFileSync(f || '', 'utf8'); } catch (e) { console.error('rdmakit: the ' + what + ' file ' + f + ' cannot be read (' + e.code + '): the program writes it at every pulumi up'); process.exit(1); }",
    "  if (h(t) !== want) { console.error('rdmakit: the ' + what + ' file ' + f + ' is not the planned one (sha256 differs); run pulumi up again'); process.exit(1); } return t; };",
    "const inv = typeof d.inventory === 'string' ? d.inventory : kept(process.env.RDMAKIT_INVENTORY_INPUT, process.env.RDMAKIT_INVENTORY_HASH, 'inventory');",
    "if (h(inv) !== process.env.RDMAKIT_INVENTORY_HASH || h(d.extraVars) !== process.env.RDMAKIT_VARS_HASH) {",
    "  console.error('rdmakit: the inventory or variables on stdin do not match their digests'); process.exit(1); }",
    "const u = (v) => typeof v === 'string' ? (v.includes('{') ? { __ansible_unsafe: v } : v) : Array.isArray(v) ? v.map(u)",
    "  : v !== null && typeof v === 'object' ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, u(x)])) : v;",
    "fs.writeFileSync(process.env.RDMAKIT_INVENTORY_FILE, inv); fs.writeFileSync(process.argv[1], JSON.stringify(u(JSON.parse(d.extraVars))));",
    // node-local runs: the fan-out's targets, from the file the program kept, refused unless its digest is the planned one
    // (a push-mode validation run has no fan-out and no list: none is written for it)
    // (`rdmakit check` hands its list on stdin, from the same process that wrote the inventory)
    "if (process.argv[2] && (Array.isArray(d.nodes) || process.env.RDMAKIT_NODES_FILE || process.env.RDMAKIT_FANOUT)) fs.writeFileSync(process.argv[2],",
    "  Array.isArray(d.nodes) ? JSON.stringify(d.nodes) : kept(process.env.RDMAKIT_NODES_FILE, process.env.RDMAKIT_NODES_HASH, 'node list'));",
].join(" ");

/**
 * The shell line that reads the run input (AnsibleRunInput JSON) from stdin into `$RDMAKIT_INVENTORY_FILE` and
 * `varsFile` (a shell word), checking both against `$RDMAKIT_INVENTORY_HASH` / `$RDMAKIT_VARS_HASH`; exits 1 otherwise.
 */
export function unpackRunInput(varsFile: string, stdinFd = 0, nodesFile = ""): string {
    return `node -e "${UNPACK_INPUT}" ${varsFile}${nodesFile ? ` ${nodesFile}` : ""}${stdinFd === 0 ? "" : ` <&${stdinFd}`} 9>&- || exit 1`;
}

/** The pieces of a run's environment that carry the input's digests (what makes a change re-run). */
export function runInputDigests(input: pulumi.Output<AnsibleRunInput>): { RDMAKIT_INVENTORY_HASH: pulumi.Output<string>; RDMAKIT_VARS_HASH: pulumi.Output<string> } {
    return { RDMAKIT_INVENTORY_HASH: input.apply((i) => sha256(i.inventory)), RDMAKIT_VARS_HASH: input.apply((i) => sha256(i.extraVars)) };
}

/**
 * The shell the Command runs (create and update). Static text: what changes between runs is in `environment`.
 * stdout carries only the progress lines of playbooks/callback_plugins/rdmakit_progress.py (fd 3: play and task
 * names with host counts, never a result or a variable), then the summary when hosts failed within the tolerance,
 * then the outcome line (summarise.ts PROVISION_RESULT_PREFIX). The full output goes to the log; stderr gets the
 * failure summary when the step fails.
 */
export const ANSIBLE_RUN_SCRIPT = [
    ...SSH_KEY_PRELUDE,
    // what a node sends back through ansible-playbook's ssh is bounded here, on the controller (node-send.ts)
    ...NODE_SEND_BOUND_LINES,
    'mkdir -p "$(dirname "$RDMAKIT_ANSIBLE_LOG")" "$(dirname "$RDMAKIT_INVENTORY_FILE")"',
    // The inventory is kept (it holds no secret) so later steps, e.g. validation, reach the same hosts the same way.
    unpackRunInput('"$tmp/vars.json"'),
    "exec </dev/null",
    // the last run's record (resume.ts) goes first: a run that ends before its summariser leaves none, so the next is full
    'if [ -n "${RDMAKIT_RUN_RECORD:-}" ]; then rm -f "$RDMAKIT_RUN_RECORD"; fi',
    // a retry visits only the nodes the last run left failed (inventory host names, comma-separated: --limit's syntax)
    ...runChild('RDMAKIT_PROGRESS_FD=3 ansible-playbook -i "$RDMAKIT_INVENTORY_FILE" ${RDMAKIT_RETRY_NODES:+--limit "$RDMAKIT_RETRY_NODES"} -e "@$tmp/vars.json" "$RDMAKIT_PLAYBOOK" 3>&1 >"$RDMAKIT_ANSIBLE_LOG" 2>&1'),
    'if [ ! -f "$RDMAKIT_ANSIBLE_SUMMARISER" ]; then',
    '  [ "$rc" -eq 0 ] || tail -n 30 "$RDMAKIT_ANSIBLE_LOG" >&2 9>&-',
    '  exit "$rc"',
    "fi",
    'node "$RDMAKIT_ANSIBLE_SUMMARISER" "$RDMAKIT_ANSIBLE_LOG" "$rc" "${RDMAKIT_MAX_FAIL_PERCENTAGE:-0}" 9>&-',
].join("\n");

/**
 * The node-local run (mode node-local): the same key prelude, input and verdict as ANSIBLE_RUN_SCRIPT, with the
 * fan-out (fanout.ts) in place of ansible-playbook: it writes the log in ansible-playbook's grammar and prints the
 * aggregated progress lines on stdout, so the summariser and the run record work as for a push run.
 */
export const NODE_LOCAL_RUN_SCRIPT = [
    ...SSH_KEY_PRELUDE,
    'mkdir -p "$(dirname "$RDMAKIT_ANSIBLE_LOG")" "$(dirname "$RDMAKIT_INVENTORY_FILE")" "$ANSIBLE_SSH_CONTROL_PATH_DIR"',
    unpackRunInput('"$tmp/vars.json"', 0, '"$tmp/nodes.json"'),
    "exec </dev/null",
    'if [ -n "${RDMAKIT_RUN_RECORD:-}" ]; then rm -f "$RDMAKIT_RUN_RECORD"; fi',
    ...runChild('node "$RDMAKIT_FANOUT" "$tmp/nodes.json" "$tmp/vars.json"'),
    'if [ ! -f "$RDMAKIT_ANSIBLE_SUMMARISER" ]; then exit "$rc"; fi',
    // the hosts of the step are the inventory's nodes, never what the log's lines add up to (summarise.ts decideRun)
    'RDMAKIT_NODES_FILE="$tmp/nodes.json" node "$RDMAKIT_ANSIBLE_SUMMARISER" "$RDMAKIT_ANSIBLE_LOG" "$rc" "${RDMAKIT_MAX_FAIL_PERCENTAGE:-0}" 9>&-',
].join("\n");

/**
 * What the Command runs: the script from its environment. The provider puts the command text into the error of a
 * failed run (pulumi-command provider/pkg/provider/local/commandOutputs.go: `running %q:`), so the text is this one
 * line and the error shows the summary the script printed, not the script.
 */
export const RUN_FROM_ENV = 'eval "$RDMAKIT_RUN_SCRIPT"';

/**
 * SHA-256 over every file under `dir` (relative path and content, in sorted order), `__pycache__` folders left out.
 * Cheap: a few hundred small files.
 */
export function hashFolder(dir: string): string {
    const h = createHash("sha256");
    const walk = (rel: string): void => {
        const entries = fs.readdirSync(path.join(dir, rel), { withFileTypes: true })
            .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const e of entries) {
            const r = rel === "" ? e.name : `${rel}/${e.name}`;
            // Python's bytecode cache (written next to callback_plugins/ when Ansible loads the plugin) is not content
            if (e.isDirectory() && e.name === "__pycache__") continue;
            if (e.isDirectory()) {
                walk(r);
            } else if (e.isFile()) {
                h.update(`${r}\0`);
                h.update(fs.readFileSync(path.join(dir, r)));
                h.update("\0");
            }
        }
    };
    walk("");
    return h.digest("hex");
}

/** JSON with object keys sorted, so equal variables always hash the same. */
export function stableJson(value: unknown): string {
    if (Array.isArray(value)) return `[${value.map(stableJson).join(",")}]`;
    if (value !== null && typeof value === "object") {
        const o = value as Record<string, unknown>;
        return `{${Object.keys(o).sort().filter((k) => o[k] !== undefined).map((k) => `${JSON.stringify(k)}:${stableJson(o[k])}`).join(",")}}`;
    }
    return JSON.stringify(value);
}

export function sha256(text: string): string {
    return createHash("sha256").update(text).digest("hex");
}

/** Every problem with the plain arguments, each with its field path (checked before anything is created). */
export function checkAnsiblePlaybookArgs(args: AnsiblePlaybookArgs, name = "run"): SpecIssue[] {
    const issues: SpecIssue[] = [];
    // the name goes into a file name (inventory-<name>.yml): no folder separators, no shell or control characters
    if (!/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(name)) issues.push({ path: "name", message: "must be letters, digits and . _ - (it names the inventory file)", value: name });
    if (args.stack !== undefined && !/^[A-Za-z0-9][A-Za-z0-9._-]*$/.test(args.stack)) issues.push({ path: "stack", message: "must be letters, digits and . _ -", value: args.stack });
    if (args.outDir !== undefined && /\p{Cc}/u.test(args.outDir)) issues.push({ path: "outDir", message: "must not hold control characters", value: args.outDir });
    const vars = args.extraVars;
    // an Output or a Promise is checked when it resolves (extraVarsJson)
    if (vars !== undefined && !pulumi.Output.isInstance(vars) && !(vars instanceof Promise)) issues.push(...checkExtraVarNames(vars));
    const dir = args.playbooksDir ?? DEFAULT_PLAYBOOKS_DIR;
    const playbook = args.playbook ?? "site.yml";
    if (!fs.existsSync(dir) || !fs.statSync(dir).isDirectory()) {
        issues.push({ path: "playbooksDir", message: "is not a folder (relative to the project directory)", value: dir });
        return issues;
    }
    if (!/^[A-Za-z0-9._-]+\.ya?ml$/.test(playbook)) {
        issues.push({ path: "playbook", message: "must be a .yml file name inside playbooksDir", value: playbook });
    } else if (!fs.existsSync(path.join(dir, playbook))) {
        issues.push({ path: "playbook", message: `does not exist in ${dir}`, value: playbook,
            allowed: fs.readdirSync(dir).filter((f) => /\.ya?ml$/.test(f)).join(", ") || "(no playbooks found)" });
    }
    if (!fs.existsSync(path.join(dir, "ansible.cfg"))) {
        issues.push({ path: "playbooksDir", message: "has no ansible.cfg", value: dir });
    }
    return issues;
}

/**
 * The extra variables, once known, as the stableJson text the run reads; throws a SpecError naming every refused
 * name (extraVarProblem: none of Ansible's own variables).
 */
export function extraVarsText(name: string, v: unknown): string {
    if (v === null || typeof v !== "object" || Array.isArray(v)) {
        throw keepMessage(new SpecError([{ path: "extraVars", message: "must be an object of variable names to values", value: Array.isArray(v) ? "(a list)" : typeof v }], `invalid AnsiblePlaybook ${name}`));
    }
    const issues = checkExtraVarNames(v as Record<string, unknown>);
    if (issues.length > 0) throw keepMessage(new SpecError(issues, `invalid AnsiblePlaybook ${name}`));
    return stableJson(v);
}

/**
 * The run's extra variables: an Output-valued `extraVars` whose names are refused once it resolves fails the
 * deployment here, before the command that would run with it.
 */
export function extraVarsJson(name: string, vars: AnsiblePlaybookArgs["extraVars"]): pulumi.Output<string> {
    return pulumi.output(vars ?? {}).apply((v) => extraVarsText(name, v));
}

/**
 * Runs an Ansible playbook against the cluster as part of `pulumi up`, through a `local.Command` child (`${name}-run`).
 * It runs again only when the playbooks folder, the variables or the inventory change (their hashes are in the
 * command's environment, so a change is an in-place update; `triggers` would force a replacement), or while the last
 * run left nodes failed: then on those nodes only (resume.ts; the record is `out/<stack>/outcome-<name>.json`). The full output
 * goes to `out/<stack>/ansible-<playbook>.log`; on failure the error names the failing hosts and tasks.
 */
export class AnsiblePlaybook extends pulumi.ComponentResource {
    /** The full ansible-playbook output of the last run (relative to the project directory). */
    public readonly logPath: string;
    /** The inventory file the run used (`out/<stack>/inventory-<name>.yml`), known once the run has finished. */
    public readonly inventoryFile: pulumi.Output<string>;
    /** SHA-256 of the playbooks folder this program saw. */
    public readonly playbooksHash: string;
    /** The command resource that runs ansible-playbook. */
    public readonly run: command.local.Command;
    /**
     * Nodes the last run left failed, each with its first failing task; [] when none. The next `pulumi up` retries them
     * (resume.ts) until they pass or are excluded.
     */
    public readonly failedNodes: pulumi.Output<FailedNode[]>;
    /** The retry this deployment runs or last ran ("attempt <n>: <nodes>"), "" when none (resume.ts). */
    public readonly retryKey: pulumi.Output<string>;

    constructor(name: string, args: AnsiblePlaybookArgs, opts?: pulumi.ComponentResourceOptions) {
        const issues = checkAnsiblePlaybookArgs(args, name);
        if (issues.length > 0) throw toInputPropertiesError(new SpecError(issues, `invalid AnsiblePlaybook ${name}`));
        super("rdmakit:index:AnsiblePlaybook", name, {}, opts);

        const dir = args.playbooksDir ?? DEFAULT_PLAYBOOKS_DIR;
        const playbook = args.playbook ?? "site.yml";
        const outDir = args.outDir ?? path.join("out", args.stack ?? pulumi.getStack());
        const inventoryFile = path.join(outDir, `inventory-${name}.yml`);
        this.logPath = path.join(outDir, `ansible-${playbook.replace(/\.ya?ml$/, "")}.log`);
        this.playbooksHash = hashFolder(dir);

        // Written at every deployment so the script always matches this version of the kit; a preview writes nothing.
        const summariser = path.join(outDir, "ansible-summarise.cjs");
        const mode = args.mode ?? "node-local";
        if (args.mungeKey !== undefined && mode !== "node-local") {
            throw new Error(`rdmakit: ${name}: Slurm needs cluster.ansible.mode node-local (got ${mode}): the munge key travels on each node's own session, which controller mode does not have`);
        }
        const fanout = path.join(outDir, "ansible-fanout.cjs");
        // the bundle's digest is an input (a changed bundle re-runs); the bundle itself is made at deployment only
        const digest = mode === "node-local" ? bundleDigest(this.playbooksHash) : "";
        if (!pulumi.runtime.isDryRun()) {
            fs.mkdirSync(outDir, { recursive: true });
            fs.writeFileSync(summariser, summariserScript());
            if (mode === "node-local") {
                fs.writeFileSync(fanout, fanoutScript());
                buildBundle(dir, this.playbooksHash, outDir);
            }
        }
        const nodeLocalEnv: Record<string, string> = mode === "node-local" ? {
            RDMAKIT_RUN_SCRIPT: NODE_LOCAL_RUN_SCRIPT,
            RDMAKIT_FANOUT: fanout,
            RDMAKIT_BUNDLE_FILE: path.join(outDir, `bundle-${digest}.tar.gz`),
            RDMAKIT_BUNDLE_DIGEST: digest,
            RDMAKIT_PLAYBOOK_NAME: playbook,
            RDMAKIT_NODE_LOG_DIR: path.join(outDir, "nodes"),
            ...(args.forks !== undefined ? { RDMAKIT_FANOUT_PARALLEL: String(args.forks) } : {}),
        } : {};

        const inventory = pulumi.output(args.inventory);
        const varsJson = extraVarsJson(name, args.extraVars);
        const inventoryHash = inventory.apply(sha256);
        const varsHash = varsJson.apply(sha256);
        // The last run's record (resume.ts): while it names failed nodes for these very inputs, the command gets the next
        // retry attempt in its environment, so this `pulumi up` re-runs the step on them. Read, never written, here.
        const recordFile = runRecordPath(outDir, name);
        const keyEnv = serveSshKey(`${name}-run`, args.sshPrivateKey);
        const last = readRunRecord(recordFile);
        const playbooksHash = this.playbooksHash;
        // else, after a clean run, an inventory that differs only in some hosts' own entries (a node the cloud replaced,
        // a node added) runs on those hosts only (changed-hosts.ts), against the inventory file that run left
        const previousInventory = readInventoryFile(inventoryFile);
        const retry = pulumi.all([inventoryHash, varsHash, inventory]).apply(([i, v, inv]) => {
            const now = { inventory: i, vars: v, playbooks: playbooksHash };
            return retryEnvironment(planRetry(last, now) ?? planChangedHosts(last, now, previousInventory, inv));
        });
        // after the variables' own check (varsJson), so a reserved extra variable is reported before the inventory's hosts
        // written at a preview too, as the switch texts are (roce/cluster.ts): the policy pack reads it there; a text kept
        // already (validation's inventory, the same hosts) is that file
        const keptInventory = pulumi.all([inventory, inventoryHash]).apply(([inv, digest]) => keepInput(outDir, "inventory", "yml", inv, true, digest));
        const nodesEnv = mode === "node-local" ? pulumi.all([inventory, varsJson]).apply(([inv]) => keepNodeTargets(outDir, inv, !pulumi.runtime.isDryRun())) : {};
        this.retryKey = retry.apply((r) => (r.RDMAKIT_RETRY_NODES ? `attempt ${r.RDMAKIT_RETRY_ATTEMPT}: ${r.RDMAKIT_RETRY_NODES}` : ""));

        this.run = new command.local.Command(`${name}-run`, {
            create: RUN_FROM_ENV,
            update: RUN_FROM_ENV,
            interpreter: RUN_INTERPRETER,
            environment: pulumi.all([retry, nodesEnv, args.mungeKey]).apply(([retryEnv, nodesEnv, mungeKey]) => ({
                RDMAKIT_RUN_SCRIPT: ANSIBLE_RUN_SCRIPT,
                // the run starts in the program's folder (no `dir`)
                ...nodeSendEnv(process.cwd()),
                ANSIBLE_CONFIG: path.join(dir, "ansible.cfg"),
                ANSIBLE_NOCOLOR: "1",
                ...(args.forks !== undefined ? { ANSIBLE_FORKS: String(args.forks) } : {}),
                RDMAKIT_MAX_FAIL_PERCENTAGE: String(args.maxFailPercentage ?? 0),
                RDMAKIT_PROGRESS_LABEL: playbook.replace(/\.ya?ml$/, ""),
                RDMAKIT_PLAYBOOK: path.join(dir, playbook),
                RDMAKIT_ANSIBLE_LOG: this.logPath,
                RDMAKIT_ANSIBLE_SUMMARISER: summariser,
                RDMAKIT_INVENTORY_FILE: inventoryFile,
                RDMAKIT_RUN_RECORD: recordFile,
                ...keyEnv,
                RDMAKIT_PLAYBOOKS_HASH: playbooksHash,
                RDMAKIT_INVENTORY_HASH: inventoryHash,
                // the kept inventory the run reads (UNPACK_INPUT), as stdin names it to the policy pack
                RDMAKIT_INVENTORY_INPUT: keptInventory.apply((k) => k.file),
                RDMAKIT_VARS_HASH: varsHash,
                ...retryEnv,
                ...nodeLocalEnv,
                ...nodesEnv,
                ...(mungeKey !== undefined ? { RDMAKIT_MUNGE_KEY: mungeKey } : {}),
            })),
            // the inventory and the node list derived from it are kept beside the stack: the inventory's path and digest on
            // stdin (AnsibleRunStdin: known at a preview, where the policy pack reads it), the list's in the environment
            stdin: pulumi.all([keptInventory, varsJson]).apply(([kept, vars]) =>
                JSON.stringify({ extraVars: vars, inventoryFile: kept.file, inventorySha256: kept.digest } satisfies AnsibleRunStdin)),
            // stdout streams to `pulumi up` as status lines: only progress lines and the outcome reach it (the script's
            // doc). stderr (the failure summary, which quotes task output) is not streamed; it ends up in the error.
            // Both stay secret in the state.
            logging: "stdout",
            addPreviousOutputInEnv: false,
        }, { parent: this, additionalSecretOutputs: ["stdout", "stderr"] });

        this.inventoryFile = this.run.id.apply(() => inventoryFile);
        // node and task names only (no task output), so the list leaves the secret stdout as a plain output
        this.failedNodes = pulumi.unsecret(this.run.stdout.apply((out) =>
            (parseRunOutcome(out)?.failed ?? []).map((f): FailedNode => ({ node: f.host, task: f.task }))));
        this.registerOutputs({
            logPath: this.logPath, inventoryFile: this.inventoryFile, playbooksHash: this.playbooksHash, failedNodes: this.failedNodes,
        });
    }
}
