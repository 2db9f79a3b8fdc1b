/**
 * `rdmakit check --stack <name> | --config <file> [--nodes a,b] [--ssh-key FILE]`: day 2. Runs preflight and
 * validation again against the live cluster, and prints the same report as the validation step (bad and slow nodes
 * named). It changes nothing on the cluster or in the stack. With --stack the nodes, the way in, the pinned host keys
 * and the deployed spec come from the stack's operating state (day2/read.ts), from any checkout, with a temporary
 * known_hosts removed after the run; with --config from the stack file here and the inventory the last `pulumi up` on
 * this machine kept (out/<stack>/inventory-*.yml). The tests and thresholds come from planning the spec again, and the
 * run is VALIDATE_SCRIPT itself, writing its logs and report to out/<stack>/check/. validate.yml only probes and runs
 * nccl-tests (its files on the nodes go to /tmp/rdmakit-nccl).
 * Exit status: 0 pass, 1 fail (as nccl-report), 2 a usage error (no stack or state, no inventory, unknown node, no key).
 */
import * as fs from "fs";
import * as path from "path";
import { runForwardingSignals, signalStatus } from "../cli/child";
import type { Command } from "commander";
import { exitOnUsage, printOutput } from "../cli/verb";
import { isMap, isScalar, parse as parseYaml } from "yaml";
import { inventoryDocument, parseInventory } from "../provision/inventory-read";
import { parseClusterSpec } from "../spec";
import { planCluster } from "../plan";
import { SpecError } from "../errors";
import { PACKAGE_ROOT } from "../assets";
import { RUN_INTERPRETER, sha256 } from "../provision/ansible";
import { serveKeyLocally } from "../provision/keysocket";
import { summariserScript } from "../provision/summarise";
import { drainStatesNotRead, formatDrainStates } from "../slurm/gate";
import { readSinfoFile, SinfoError } from "../slurm/sinfo";
import { nodeSendEnv } from "../provision/node-send";
import { SLURM_STATES_FILE, SUMMARISER_NAME, VALIDATE_SCRIPT, fabricReportArgs, nodeLocalValidateEnv, validationVars, varsDigest } from "./component";
import { nodeTargets } from "../provision/node-local";
import { validationArgsFromPlan } from "./fromPlan";
import type { ValidationRunArgs } from "./component";
import * as os from "os";
import { readState } from "../day2/read";
import { StateError } from "../day2/state";
import { stackKnownHosts } from "../day2/ssh";
import { renderInventory } from "../provision/inventory";
import { inventoryHosts as stateHosts } from "../provision/nodes";
import { KIT_HOST_KEY_ALGORITHMS } from "../provision/knownhosts";

export interface CheckOptions {
    stack?: string;
    config?: string;
    /** Comma-separated inventory names to check; the others are left out of every run. */
    nodes?: string;
    /** SSH private key file; else $RDMAKIT_SSH_PRIVATE_KEY. */
    sshKey?: string;
}

export interface CheckResult {
    /** 0 pass, 1 fail, 2 usage; 128 + n when signal n stopped the run */
    code: number;
    stdout: string;
    stderr: string;
}

/** Hosts of a kit inventory (components/provision/inventory.ts renderInventory): `all.hosts.<name>.ansible_host`. */
export function inventoryHosts(text: string): Array<{ name: string; address: string }> {
    const doc = parseInventory(text) as { all?: { hosts?: Record<string, { ansible_host?: string } | null> } } | null;
    const hosts = doc?.all?.hosts ?? {};
    return Object.entries(hosts).map(([name, h]) => ({ name, address: String(h?.ansible_host ?? name) }));
}

/** The inventory with only `keep` under all.hosts (group vars kept). */
export function limitInventory(text: string, keep: string[]): string {
    // edited as a document, so every `!unsafe` string keeps its tag (Ansible would template it otherwise)
    const doc = inventoryDocument(text);
    const hosts = doc.getIn(["all", "hosts"]);
    if (doc.errors.length > 0 || !isMap(hosts)) throw new Error("rdmakit check: the inventory has no all.hosts mapping");
    hosts.items = hosts.items.filter((pair) => isScalar(pair.key) && keep.includes(String(pair.key.value)));
    doc.commentBefore = null;
    return "# Limited by rdmakit check (components/validate/check.ts).\n" + doc.toString({ lineWidth: 0 });
}

/** The inventory the last `pulumi up` kept: validation's own, else the newest provisioning one. */
export function findInventory(outDir: string): string | undefined {
    let names: string[];
    try {
        names = fs.readdirSync(outDir).filter((f) => /^inventory-.+\.ya?ml$/.test(f));
    } catch {
        return undefined;
    }
    if (names.includes("inventory-validation.yml")) return path.join(outDir, "inventory-validation.yml");
    const byAge = names.map((n) => path.join(outDir, n)).sort((a, b) => fs.statSync(b).mtimeMs - fs.statSync(a).mtimeMs);
    return byAge[0];
}

const usage = (msg: string): CheckResult => ({ code: 2, stdout: "", stderr: `rdmakit check: ${msg}\n` });

/** What a check runs on: the plan's validation arguments, the inventory text, where it came from, the out folder. */
interface CheckTarget {
    args: ValidationRunArgs;
    inventoryText: string;
    invFile: string;
    outDir: string;
    /** removes what the target wrote for the run (the stack's known_hosts) */
    cleanup(): void;
}

/**
 * `--stack NAME`: the operating state from the stack's backend (day2/read.ts), from any checkout: the deployed spec
 * plans the tests, the state's nodes, way in and pinned host keys make the inventory (a temporary known_hosts,
 * removed after the run).
 */
function targetFromStack(stack: string, cwd: string, env: NodeJS.ProcessEnv): CheckTarget | CheckResult {
    let got;
    try {
        got = readState({ stack }, cwd, env);
    } catch (e) {
        if (e instanceof StateError) return usage(e.message);
        throw e;
    }
    const { state } = got;
    let plan;
    try {
        plan = planCluster(parseClusterSpec(state.spec));
    } catch (e) {
        if (e instanceof SpecError) return usage(`the stack's deployed rdmakit:cluster: ${e.message}`);
        throw e;
    }
    const known = stackKnownHosts(state);
    const dir = known !== undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-check-")) : undefined;
    const knownHostsFile = dir ? path.join(dir, "known_hosts") : undefined;
    if (knownHostsFile) fs.writeFileSync(knownHostsFile, known as string, { mode: 0o600 });
    const cleanup = (): void => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); };
    try {
        const ids = state.nodes.every((n) => n.instanceId) ? state.nodes.map((n) => n.instanceId as string) : undefined;
        const viaSsm = state.entry?.kind === "ssm";
        const inventoryText = renderInventory({
            hosts: stateHosts(plan, viaSsm && ids ? ids : state.nodes.map((n) => n.address), ids),
            ...(state.entry?.kind === "bastion" ? { bastion: { address: state.entry.address, user: state.entry.user } } : {}),
            ...(state.entry?.kind === "ssm" ? { ssm: { region: state.entry.region } } : {}),
            ...(knownHostsFile ? { knownHostsFile, pinnedHostKeys: true, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS } : {}),
            vars: plan.ansibleVars,
        });
        return { args: validationArgsFromPlan(plan, state.stack), inventoryText, invFile: `stack ${stack}`, outDir: path.resolve(cwd, "out", state.stack), cleanup };
    } catch (e) {
        cleanup();
        if (e instanceof SpecError || e instanceof Error) return usage(`stack ${stack}: ${e.message}`);
        throw e;
    }
}

/** `--config FILE`: the stack file here and the inventory the last `pulumi up` on this machine kept in out/<stack>/. */
function targetFromOut(config: string, cwd: string): CheckTarget | CheckResult {
    const file = path.resolve(cwd, config);
    const stack = path.basename(file).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "");
    if (!fs.existsSync(file)) return usage(`${file} does not exist`);
    const outDir = path.resolve(cwd, "out", stack);
    const invFile = findInventory(outDir);
    if (!invFile) return usage(`no inventory in ${outDir} (inventory-*.yml, written by pulumi up's provisioning and validation): run pulumi up first, or use --stack NAME to read the stack`);
    try {
        const doc = parseYaml(fs.readFileSync(file, "utf8")) as { config?: Record<string, unknown> } | null;
        const raw = doc?.config?.["rdmakit:cluster"];
        if (raw === undefined) return usage(`${file} has no rdmakit:cluster config`);
        const args = validationArgsFromPlan(planCluster(parseClusterSpec(raw)), stack);
        return { args, inventoryText: fs.readFileSync(invFile, "utf8"), invFile, outDir, cleanup: () => undefined };
    } catch (e) {
        if (e instanceof SpecError) return usage(`${file}: ${e.message}`);
        throw e;
    }
}

/** Runs the check from `cwd` (a checkout of the project: Pulumi.yaml names it; out/ receives the logs). */
export async function runCheck(opts: CheckOptions, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): Promise<CheckResult> {
    if ((opts.stack === undefined) === (opts.config === undefined)) return usage("give --stack NAME (read from the stack's backend) or --config FILE (a stack file, with out/<stack>/ from pulumi up on this machine)");
    let key = env.RDMAKIT_SSH_PRIVATE_KEY;
    if (opts.sshKey !== undefined) {
        try {
            key = fs.readFileSync(path.resolve(cwd, opts.sshKey), "utf8");
        } catch (e) {
            return usage(`--ssh-key: cannot read ${opts.sshKey} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`);
        }
    }
    if (!key) return usage("no SSH key: give --ssh-key FILE or set RDMAKIT_SSH_PRIVATE_KEY (the stack's rdmakit:sshPrivateKey)");
    const target = opts.stack !== undefined ? targetFromStack(opts.stack, cwd, env) : targetFromOut(opts.config as string, cwd);
    if ("code" in target) return target;
    try {
        return await runOn(target, key, opts, cwd, env);
    } finally {
        target.cleanup();
    }
}

async function runOn(target: CheckTarget, key: string, opts: CheckOptions, cwd: string, env: NodeJS.ProcessEnv): Promise<CheckResult> {
    const { args, invFile, outDir } = target;
    const inventoryText = target.inventoryText;
    // Slurm: the head node is in the inventory but is no GPU node; check reads its drain states, and launches the
    // all-node runs with mpirun as before (srun would reserve the nodes: check changes nothing on the cluster)
    const head = args.slurm?.head;
    const all = inventoryHosts(inventoryText);
    const headHere = head !== undefined && all.some((h) => h.name === head);
    let hosts = all.filter((h) => h.name !== head);
    let inventory = inventoryText;
    if (opts.nodes !== undefined) {
        const want = opts.nodes.split(",").map((n) => n.trim()).filter(Boolean);
        const unknown = want.filter((n) => !hosts.some((h) => h.name === n));
        if (want.length === 0 || unknown.length > 0) {
            return usage(`--nodes: ${unknown.length ? `unknown node(s) ${unknown.join(", ")}` : "no node named"}; the inventory (${invFile}) has ${hosts.map((h) => h.name).join(", ")}`);
        }
        hosts = hosts.filter((h) => want.includes(h.name));
        inventory = limitInventory(inventoryText, headHere ? [...want, head] : want);
    }
    if (hosts.length === 0) return usage(`${invFile} lists no hosts`);

    const checkDir = path.join(outDir, "check");
    fs.mkdirSync(checkDir, { recursive: true });
    const runArgs: ValidationRunArgs = { ...args, hosts: hosts.map((h) => h.name), ...(args.slurm ? { slurm: { ...args.slurm, launch: false } } : {}) };
    let varsJson: string;
    try {
        varsJson = JSON.stringify(validationVars(runArgs, hosts.map((h) => h.address), path.join(checkDir, "nccl")));
    } catch (e) {
        if (e instanceof SpecError) return usage(e.message);
        throw e;
    }
    const summariser = path.join(checkDir, SUMMARISER_NAME);
    fs.writeFileSync(summariser, summariserScript());
    // node-local (the plan's mode): the per-node checks run on the nodes, as in pulumi up's validation
    let nodes: ReturnType<typeof nodeTargets> | undefined;
    let nodeLocalEnv: Record<string, string> = {};
    if ((runArgs.mode ?? "node-local") === "node-local") {
        try {
            nodes = nodeTargets(inventory);
            nodeLocalEnv = nodeLocalValidateEnv(path.join(PACKAGE_ROOT, "playbooks"), checkDir, checkDir, true);
        } catch (e) {
            return usage(`${(e as Error).message} (or set cluster.ansible.mode: controller)`);
        }
    }
    // the key goes to the run's own agent from this process (provision/keysocket.ts), never through the run's environment
    const { RDMAKIT_SSH_PRIVATE_KEY: _dropped, ...runEnv } = env;
    const served = serveKeyLocally(key);
    const [interpreter, ...interpreterArgs] = RUN_INTERPRETER;
    // not spawnSync: a signal to this process must reach the run, whose traps stop the fan-out, ssh and its agent
    // (the key loaded), and the key socket must close after it (cli/child.ts)
    const r = await runForwardingSignals(interpreter, [...interpreterArgs, VALIDATE_SCRIPT], {
        cwd: PACKAGE_ROOT, input: JSON.stringify({ inventory, extraVars: varsJson, ...(nodes ? { nodes } : {}) }), maxBytes: 64 * 1024 * 1024,
        env: {
            ...runEnv,
            ...served.env,
            RDMAKIT_INVENTORY_HASH: sha256(inventory), RDMAKIT_VARS_HASH: varsDigest(varsJson),
            RDMAKIT_EXPECT: JSON.stringify({ all: runArgs.expectations.all, single: runArgs.expectations.single, pair: runArgs.expectations.pair }),
            RDMAKIT_FABRIC_ARGS: fabricReportArgs(runArgs),
            ...(runArgs.health ? { RDMAKIT_HEALTH_EXPECT: JSON.stringify(runArgs.health) } : {}),
            ...(headHere ? { RDMAKIT_SLURM_STATES_HEAD: head } : {}),
            RDMAKIT_OUT: checkDir, RDMAKIT_FAIL_ON_FAILURE: "true", RDMAKIT_RERUN_ON: "", RDMAKIT_ANSIBLE_SUMMARISER: summariser,
            ...nodeSendEnv(PACKAGE_ROOT),
            ANSIBLE_CONFIG: path.join(PACKAGE_ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            ...nodeLocalEnv,
        },
    });
    served.close();
    // the script's 2 (neither a log nor a preflight result) is a failed cluster here, not a usage error; a run stopped
    // by a signal exits as a shell does (128 + the signal's number)
    const code = r.interrupted ? signalStatus(r.interrupted) : r.status === 0 ? 0 : 1;
    const where = `rdmakit check: ${hosts.length} node(s) from ${path.relative(cwd, invFile) || invFile}; logs and report in ${path.relative(cwd, checkDir) || checkDir}\n`;
    const statesFile = path.join(checkDir, SLURM_STATES_FILE);
    let slurm = "";
    if (headHere) {
        try {
            slurm = formatDrainStates(fs.existsSync(statesFile) ? readSinfoFile(statesFile, "sinfo -R") : undefined, hosts.map((h) => h.name), head);
        } catch (e) {
            if (!(e instanceof SinfoError)) throw e;
            slurm = drainStatesNotRead(head, e);
        }
    }
    return { code, stdout: (r.stdout ?? "") + slurm, stderr: where + (r.stderr ?? "") + (r.error ? `${r.error.message}\n` : "") };
}

/** Adds the `check` verb. */
export function registerCheck(program: Command): void {
    exitOnUsage(program
        .command("check")
        .description("day 2: re-run preflight and validation on the live cluster of the last pulumi up, changing nothing; exit 0 pass, 1 fail, 2 usage")
        .option("--stack <name>", "the stack, read through the Pulumi CLI from its backend (nodes, way in, host keys, the deployed spec), from any checkout")
        .option("--config <file>", "instead: a stack file here, with the inventory pulumi up left in out/<stack>/ on this machine")
        .option("--nodes <a,b>", "check only these inventory nodes")
        .option("--ssh-key <file>", "SSH private key for the nodes (default: $RDMAKIT_SSH_PRIVATE_KEY)"))
        .action(async (opts: CheckOptions) => printOutput(await runCheck(opts)));
}
