import { Scalar } from "yaml";
import { inventoryYaml } from "./inventory-yaml";
import { rememberParsed } from "../parsed";
import { SpecError, SpecIssue } from "../errors";
import { plainDataKey } from "../spec";

/** One node Ansible provisions. `name` becomes the inventory host name, `address` its `ansible_host`. */
export interface InventoryHost {
    name: string;
    address: string;
    user: string;
    /** SSH port. @default 22 */
    port?: number;
    /** Host variables of this host alone (bare metal: its roce_host_* settings). @default {} */
    vars?: Record<string, unknown>;
    /**
     * This host's key is pinned in this known_hosts file (StrictHostKeyChecking=yes), whatever the rule of the others:
     * the bare-metal Slurm controller, whose key the spec states (scheduler.controller.hostKey), among hosts that are
     * accepted on first contact. Rendered as the host's own `ansible_ssh_common_args`, which win over the group's.
     * @default the inventory's rule (knownHostsFile, pinnedHostKeys)
     */
    pinnedKnownHostsFile?: string;
}

/** The jump host every node is reached through (ProxyCommand `ssh -W`). */
export interface InventoryBastion {
    address: string;
    user: string;
    /** @default 22 */
    port?: number;
}

/**
 * AWS Systems Manager Session Manager as the SSH transport: each host's `address` is its EC2 instance id, and ssh
 * reaches it through `aws ssm start-session` with the AWS-StartSSHSession document (no bastion, no inbound rule).
 * source: https://docs.aws.amazon.com/systems-manager/latest/userguide/session-manager-getting-started-enable-ssh-connections.html
 * (the ProxyCommand, document AWS-StartSSHSession, parameter portNumber; the Session Manager plugin for the AWS CLI
 * must be installed where Ansible runs).
 */
export interface InventorySsm {
    region: string;
    /** named AWS CLI profile, when the stack's provider uses one */
    profile?: string;
}

export interface InventoryArgs {
    hosts: InventoryHost[];
    bastion?: InventoryBastion;
    /** reach the hosts through Session Manager instead (exclusive with `bastion`) */
    ssm?: InventorySsm;
    /** Group variables for `all` (the plan's Ansible variables). Keys must be valid Ansible variable names. */
    vars: Record<string, unknown>;
    /**
     * known_hosts file SSH records host keys in, for the nodes and the bastion. With it, new hosts are accepted on first
     * contact and a changed key fails the run (StrictHostKeyChecking=accept-new); without it the user's default file
     * is used with the same rule (ansible.cfg).
     */
    knownHostsFile?: string;
    /**
     * The host keys in `knownHostsFile` are pinned (knownhosts.ts writes them before the first contact): any host, the
     * bastion included, whose key is not there is refused (StrictHostKeyChecking=yes) instead of accepted on first
     * contact. @default false
     */
    pinnedHostKeys?: boolean;
    /**
     * With pinned keys: the only host key types ssh accepts (`-o HostKeyAlgorithms=`), e.g. `["ssh-ed25519"]` for the
     * keys a cloud stack makes (hostkeys.ts), so a host offering another type of key is refused rather than asked for
     * it. @default any type ssh negotiates (it prefers the types known_hosts holds for the host)
     */
    hostKeyAlgorithms?: string[];
    /** Private key for the nodes and the bastion. Omit it when the caller passes `--private-key` or an agent holds it. */
    privateKeyFile?: string;
}

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Anything that would need quoting inside ssh's ProxyCommand or an ssh -o value: refuse it rather than escape it.
const SAFE_SSH_WORD = /^[A-Za-z0-9@%+=:,./_~-]+$/;
/**
 * Variables that decide how Ansible reaches a host and what runs on this machine, by the options of the ssh connection
 * plugin they set (`ansible-doc -t connection ssh --json`, each option's `vars`; ansible-core 2.14). The inventory
 * sets host, port, user, key and ssh_common_args itself; the others would undo its host-key pinning
 * (host_key_checking and ssh_args come before ssh_common_args on ssh's command line, and ssh takes the first value:
 * ansible/ansible lib/ansible/plugins/connection/ssh.py _build_command) or run another program here (the
 * executables; a ProxyCommand in extra args). Refused in the inventory's variables and in extra variables alike.
 * source: ansible/ansible@v2.14.18:lib/ansible/plugins/connection/ssh.py (DOCUMENTATION options and their vars)
 */
export const RESERVED_VARS: readonly string[] = [
    // set by the inventory itself
    "ansible_host", "ansible_ssh_host", "ansible_user", "ansible_ssh_user", "ansible_port", "ansible_ssh_port",
    "ansible_ssh_common_args", "ansible_ssh_private_key_file", "ansible_private_key_file",
    // host-key checking, ssh's own options, the programs ssh/scp/sftp and their extra arguments, the control sockets
    "ansible_host_key_checking", "ansible_ssh_host_key_checking", "ansible_ssh_args", "ansible_ssh_extra_args",
    "ansible_ssh_executable", "ansible_scp_executable", "ansible_sftp_executable", "ansible_scp_extra_args",
    "ansible_sftp_extra_args", "ansible_ssh_pkcs11_provider", "ansible_control_path", "ansible_control_path_dir",
    "ansible_ssh_transfer_method", "ansible_scp_if_ssh",
];

/**
 * Why an extra variable's name is refused, or undefined when it is free. Extra variables win over every other source
 * (Ansible's variable precedence, "extra vars (-e) ... always win"), so none may be one of Ansible's own: every option
 * of its connection, become and shell plugins (the interpreters and executables among them) is read from an
 * `ansible_` variable, and the connection plugins also read `inventory_hostname` (ansible-doc --json of the ssh,
 * paramiko_ssh, local connections, the sudo and su become plugins and the sh shell: no other name).
 * source: https://docs.ansible.com/ansible/latest/playbook_guide/playbooks_variables.html#understanding-variable-precedence
 */
export function extraVarProblem(key: string): SpecIssue | undefined {
    if (!VAR_NAME.test(key)) return { path: key, message: "is not a valid Ansible variable name", value: key, allowed: "[A-Za-z_][A-Za-z0-9_]*" };
    if (/^ansible_/i.test(key) || key === "inventory_hostname") {
        return { path: key, message: "is one of Ansible's own variables (connection, become, interpreter, executable), which an extra variable would override for every host", value: key,
            allowed: "a name not starting with ansible_ (how hosts are reached is the inventory's: hosts[], bastion, knownHostsFile)" };
    }
    return undefined;
}

/** Every problem with the names of extra variables (`base.<name>` paths). */
export function checkExtraVarNames(vars: Record<string, unknown>, base = "extraVars"): SpecIssue[] {
    return Object.keys(vars).flatMap((k) => { const p = extraVarProblem(k); return p ? [{ ...p, path: `${base}.${k}` }] : []; });
}

function checkPort(port: number | undefined, path: string, issues: SpecIssue[]): void {
    if (port !== undefined && !(Number.isInteger(port) && port >= 1 && port <= 65535)) {
        issues.push({ path, message: "must be a TCP port", value: port, allowed: "an integer 1-65535" });
    }
}

function checkWord(value: string, path: string, issues: SpecIssue[]): void {
    if (!SAFE_SSH_WORD.test(value)) {
        issues.push({ path, message: "contains characters SSH options cannot carry unquoted", value,
            allowed: "letters, digits and @%+=:,./_~-" });
    }
}

/** Every problem with the inventory input, each with its field path. Empty when the input is usable. */
export function checkInventoryArgs(args: InventoryArgs): SpecIssue[] {
    const issues: SpecIssue[] = [];
    if (args.hosts.length === 0) issues.push({ path: "hosts", message: "needs at least one host", value: [] });
    const seen = new Set<string>();
    args.hosts.forEach((h, i) => {
        if (!HOST_NAME.test(h.name)) {
            issues.push({ path: `hosts[${i}].name`, message: "is not a valid inventory host name", value: h.name,
                allowed: "letters, digits, '.', '_', '-' (not first)" });
        }
        if (seen.has(h.name)) issues.push({ path: `hosts[${i}].name`, message: "is used twice", value: h.name });
        seen.add(h.name);
        checkWord(h.address, `hosts[${i}].address`, issues);
        checkWord(h.user, `hosts[${i}].user`, issues);
        checkPort(h.port, `hosts[${i}].port`, issues);
        if (h.pinnedKnownHostsFile !== undefined) checkWord(h.pinnedKnownHostsFile, `hosts[${i}].pinnedKnownHostsFile`, issues);
        checkVarNames(h.vars ?? {}, `hosts[${i}].vars`, issues);
    });
    if (args.bastion) {
        checkWord(args.bastion.address, "bastion.address", issues);
        checkWord(args.bastion.user, "bastion.user", issues);
        checkPort(args.bastion.port, "bastion.port", issues);
    }
    if (args.ssm) {
        if (args.bastion) issues.push({ path: "ssm", message: "cannot be combined with a bastion", allowed: "one of bastion, ssm" });
        checkWord(args.ssm.region, "ssm.region", issues);
        if (args.ssm.profile !== undefined) checkWord(args.ssm.profile, "ssm.profile", issues);
        args.hosts.forEach((h, i) => {
            if (!/^(i|mi)-[0-9a-f]+$/.test(h.address)) {
                issues.push({ path: `hosts[${i}].address`, message: "is not an instance id, which Session Manager needs as the target", value: h.address, allowed: "i-0123456789abcdef0" });
            }
        });
    }
    if (args.knownHostsFile !== undefined) checkWord(args.knownHostsFile, "knownHostsFile", issues);
    if (args.privateKeyFile !== undefined) checkWord(args.privateKeyFile, "privateKeyFile", issues);
    (args.hostKeyAlgorithms ?? []).forEach((a, i) => {
        if (!/^[a-z0-9@.-]+$/.test(a)) issues.push({ path: `hostKeyAlgorithms[${i}]`, message: "is not an SSH host key algorithm name", value: a, allowed: "e.g. ssh-ed25519" });
    });
    checkVarNames(args.vars, "vars", issues);
    return issues;
}

function checkVarNames(vars: Record<string, unknown>, base: string, issues: SpecIssue[]): void {
    for (const key of Object.keys(vars)) {
        if (!VAR_NAME.test(key)) {
            issues.push({ path: `${base}.${key}`, message: "is not a valid Ansible variable name", value: key,
                allowed: "[A-Za-z_][A-Za-z0-9_]*" });
        } else if (RESERVED_VARS.includes(key)) {
            issues.push({ path: `${base}.${key}`, message: "is set by the inventory itself or would undo its host-key pinning", value: key,
                allowed: "use hosts[], bastion, knownHostsFile or privateKeyFile" });
        }
    }
}

/**
 * The options every SSH hop gets: where host keys live and how unknown ones are treated. ssh takes the first value it
 * gets for an option, so ansible.cfg's ssh_args, which come first on Ansible's ssh command line, set no host-key rule.
 * source: OpenBSD ssh_config(5) ("the first obtained value will be used"; StrictHostKeyChecking yes / accept-new).
 */
function hostKeyOptions(knownHostsFile: string | undefined, pinned = false, algorithms: string[] = []): string[] {
    const strict = pinned && knownHostsFile !== undefined;
    const opts = [`-o StrictHostKeyChecking=${strict ? "yes" : "accept-new"}`];
    if (knownHostsFile !== undefined) opts.push(`-o UserKnownHostsFile=${knownHostsFile}`);
    if (strict && algorithms.length > 0) opts.push(`-o HostKeyAlgorithms=${algorithms.join(",")}`);
    return opts;
}

/**
 * The jump hop shares one SSH connection to the bastion: the first hop of a run opens it as a master, every later
 * node's hop is a channel on it (ssh_config(5) ControlMaster, ControlPersist; `-W` over a master is a mux stdio
 * forward, openssh-portable mux.c), so 1,000 nodes do not make 1,000 handshakes with the bastion per connection
 * wave. The socket lives in the run's own control folder (the run scripts' ANSIBLE_SSH_CONTROL_PATH_DIR, which they
 * close at exit; Ansible's default ~/.ansible/cp otherwise). The shell that runs the ProxyCommand expands the
 * folder; `%%C` reaches the hop's ssh as `%C`, a hash of the hop's user, host and port.
 */
const JUMP_MUX = [
    "-o", "ControlMaster=auto", "-o", "ControlPersist=30m",
    "-o", "ControlPath=${ANSIBLE_SSH_CONTROL_PATH_DIR:-$HOME/.ansible/cp}/jump-%%C",
];

/**
 * No forwarding on any ssh the kit starts, whatever the user's ssh_config says (`Host *` / `ForwardAgent yes` would
 * hand the run's agent, with the run's key, to every node and switch for the whole run; a node is not trusted: issue
 * 34, finding 5). Given on the command line, they win over the config files: ssh keeps an option's first value, and
 * the command line is read before them. source: OpenBSD ssh_config(5) ForwardAgent, ClearAllForwardings ("clear all
 * local, remote, and dynamic port forwardings specified in the configuration files or on the command line"), and
 * "command-line options" first in the order ssh obtains its configuration.
 */
export const NO_FORWARDING = ["-o", "ForwardAgent=no", "-o", "ClearAllForwardings=yes"] as const;

/**
 * `ansible_ssh_common_args` for the nodes: no forwarding (NO_FORWARDING), host-key options and, with a bastion, a
 * ProxyCommand through it (its own ssh without forwarding too).
 * ProxyCommand rather than ProxyJump because `-o` options given to ssh are not passed to the jump hop's own ssh,
 * so with ProxyJump the bastion's host key would be checked against a different known_hosts and policy.
 */
export function sshCommonArgs(args: Pick<InventoryArgs, "bastion" | "ssm" | "knownHostsFile" | "privateKeyFile" | "pinnedHostKeys" | "hostKeyAlgorithms">): string {
    const opts = [NO_FORWARDING.join(" "), ...hostKeyOptions(args.knownHostsFile, args.pinnedHostKeys, args.hostKeyAlgorithms)];
    if (args.ssm) {
        // %h is the host's address, its instance id; %p its SSH port (ssm_config of the AWS guide). Session Manager
        // checks the caller's IAM (ssm:StartSession on the instance and the document) instead of a network path.
        const proxy = ["aws", "ssm", "start-session", "--target", "%h", "--document-name", "AWS-StartSSHSession",
            "--parameters", "portNumber=%p", "--region", args.ssm.region, ...(args.ssm.profile ? ["--profile", args.ssm.profile] : [])];
        opts.push(`-o ProxyCommand="${proxy.join(" ")}"`);
    }
    if (args.bastion) {
        const b = args.bastion;
        const hop = ["ssh", ...NO_FORWARDING, ...JUMP_MUX, "-W", "%h:%p", "-p", String(b.port ?? 22), ...hostKeyOptions(args.knownHostsFile, args.pinnedHostKeys, args.hostKeyAlgorithms)];
        if (args.privateKeyFile !== undefined) hop.push("-i", args.privateKeyFile);
        hop.push(`${b.user}@${b.address}`);
        opts.push(`-o ProxyCommand="${hop.join(" ")}"`);
    }
    return opts.join(" ");
}

/**
 * `value` with every string Jinja could read as a template (one holding `{`: Jinja's delimiters are `{{`, `{%`, `{#`)
 * tagged `!unsafe`, the YAML tag Ansible loads as a value it never templates; other values as they are. Pure.
 * source: docs.ansible.com playbook_guide/playbooks_advanced_syntax.html ("Unsafe or raw strings": `!unsafe`);
 * ansible/ansible lib/ansible/parsing/yaml/constructor.py (construct_yaml_unsafe).
 */
export function markUnsafe(value: unknown): unknown {
    if (typeof value === "string") {
        if (!value.includes("{")) return value;
        const s = new Scalar(value);
        s.tag = "!unsafe";
        return s;
    }
    if (Array.isArray(value)) return value.map(markUnsafe);
    if (value !== null && typeof value === "object") {
        return Object.fromEntries(Object.entries(value as Record<string, unknown>).map(([k, v]) => [k, markUnsafe(v)]));
    }
    return value;
}

/**
 * Renders the Ansible inventory as YAML (YAML rather than INI so group variables keep their types: INI `[all:vars]`
 * values reach Ansible as strings). Pure: the same input gives the same text, which the Pulumi side hashes to decide
 * whether to re-run. Throws SpecError listing every problem.
 */
export function renderInventory(args: InventoryArgs): string {
    // `pulumi up` and `rdmakit plan` render the same inventory more than once in one process (the software run, the
    // validation run, the plan's inventory.yml): the same input is rendered once (at 2,048 hosts, half a second each)
    // (JSON keeps every value an inventory holds apart, but NaN/Infinity read as null: those are spelled out)
    const key = inventoryKey(args);
    if (lastInventory?.key === key) return lastInventory.text;
    const text = renderInventoryOnce(args);
    lastInventory = { key, text };
    return text;
}
let lastInventory: { key: string; text: string } | undefined;

/**
 * The inventory input as JSON text with NaN and the infinities spelled out: plain data as JSON.stringify's own text
 * (spec.ts plainDataKey, no replacer: a call into JS for every value is ~3x the cost at 2,048 hosts), anything else
 * through the replacer that spells them.
 */
function inventoryKey(args: InventoryArgs): string {
    // An option given as undefined (`bastion: undefined`, as nodes.ts and the plan's artifact pass it) is no member
    // in JSON, so it is left out before the walk, which would refuse it and send all 2,048 hosts through the replacer:
    // the same text either way. -0 is spelled apart too (JSON writes 0; the inventory prints -0).
    let given: unknown = args;
    if (Object.getPrototypeOf(args) === Object.prototype) {
        const own: Record<string, unknown> = {};
        for (const [k, v] of Object.entries(args)) if (v !== undefined) own[k] = v;
        given = own;
    }
    return plainDataKey(given) ?? JSON.stringify(args, (_k, v: unknown) => (typeof v === "number" && (!Number.isFinite(v) || Object.is(v, -0)) ? `number:${v === 0 ? "-0" : v}` : v));
}

const CONNECTION_NAMES = ["ansible_host", "ansible_port", "ansible_user"];

/**
 * Makes a host's entry: `names` (in order; the same array for entries of the same names) set to `values`, later names
 * winning as assignments do. An object given its names one at a time by computed key becomes a dictionary past a dozen
 * of them (V8), 1.8 KB and slow to read for a RoCE host's 24 names; so each entry is a copy of a first one of the same
 * names (Object.fromEntries, which V8 keeps fast: 0.3 KB a copy), its values then set in place.
 */
function entryMaker(): (names: readonly string[], values: readonly unknown[]) => Record<string, unknown> {
    let last: { names: readonly string[]; template: Record<string, unknown> } | undefined;
    return (names, values) => {
        if (last?.names !== names) last = { names, template: Object.fromEntries(names.map((n, i) => [n, values[i]])) };
        const entry = { ...last.template };
        for (let i = 0; i < names.length; i++) entry[names[i]] = values[i];
        return entry;
    };
}

function renderInventoryOnce(args: InventoryArgs): string {
    const issues = checkInventoryArgs(args);
    if (issues.length > 0) throw new SpecError(issues, "invalid Ansible inventory input");
    const hosts: Record<string, Record<string, unknown>> = {};
    // hosts' variables mostly have the same names in the same order (every RoCE host its roce_host_* set): the names
    // of the last host's entry are taken again when its variables' names and its pinning are the same
    let lastNames: string[] = [];
    let lastPinned = false;
    let names: string[] = CONNECTION_NAMES;
    const entryOf = entryMaker();
    for (const h of args.hosts) {
        const pinned = h.pinnedKnownHostsFile !== undefined;
        const varNames = h.vars === undefined ? [] : Object.keys(h.vars);
        if (pinned !== lastPinned || varNames.length !== lastNames.length || varNames.some((n, i) => n !== lastNames[i])) {
            // a host pinned apart: its own ssh arguments (host variables win over the group's in Ansible's precedence);
            // its own variables after the connection's, sorted by name (`__proto__` would set the entry's prototype
            // instead of a key: it is not one, as spreading an object never made it one)
            names = [...CONNECTION_NAMES, ...(pinned ? ["ansible_ssh_common_args"] : []), ...[...varNames].sort().filter((k) => k !== "__proto__")];
            [lastNames, lastPinned] = [varNames, pinned];
        }
        const values: unknown[] = [h.address, h.port ?? 22, h.user];
        if (pinned) values.push(sshCommonArgs({ ...args, knownHostsFile: h.pinnedKnownHostsFile, pinnedHostKeys: true }));
        for (let i = values.length; i < names.length; i++) values.push(h.vars![names[i]]);
        hosts[h.name] = entryOf(names, values);
    }
    const connection: Record<string, unknown> = { ansible_ssh_common_args: sshCommonArgs(args) };
    if (args.privateKeyFile !== undefined) connection.ansible_ssh_private_key_file = args.privateKeyFile;
    const sortedVars: Record<string, unknown> = {};
    for (const key of Object.keys(args.vars).sort()) sortedVars[key] = args.vars[key];
    const doc = { all: { hosts, vars: { ...connection, ...sortedVars } } };
    const text = "# Rendered by rdmakit (components/provision/inventory.ts); do not edit.\n" + inventoryYaml(doc, markUnsafe);
    // the RoCE policies read it back (policies/rules/roce.ts) without parsing it again: the plain values, which is what
    // parsing the text gives (an `!unsafe` scalar reads as its string)
    rememberParsed(text, doc); // the RoCE policies read it back (policies/rules/roce.ts) without parsing it again
    return text;
}
