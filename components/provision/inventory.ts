import { stringify } from "yaml";
import { SpecError, SpecIssue } from "../errors";

/** One node Ansible provisions. `name` becomes the inventory host name, `address` its `ansible_host`. */
export interface InventoryHost {
    name: string;
    address: string;
    user: string;
    /** SSH port. @default 22 */
    port?: number;
    /** Host variables of this host alone (bare metal: its roce_host_* settings). @default {} */
    vars?: Record<string, unknown>;
}

/** The jump host every node is reached through (ProxyCommand `ssh -W`). */
export interface InventoryBastion {
    address: string;
    user: string;
    /** @default 22 */
    port?: number;
}

export interface InventoryArgs {
    hosts: InventoryHost[];
    bastion?: InventoryBastion;
    /** Group variables for `all` (the plan's Ansible variables). Keys must be valid Ansible variable names. */
    vars: Record<string, unknown>;
    /**
     * known_hosts file SSH records host keys in, for the nodes and the bastion. With it, new hosts are accepted on first
     * contact and a changed key fails the run (StrictHostKeyChecking=accept-new); without it the user's default file
     * is used with the same rule (ansible.cfg).
     */
    knownHostsFile?: string;
    /** Private key for the nodes and the bastion. Omit it when the caller passes `--private-key` or an agent holds it. */
    privateKeyFile?: string;
}

const HOST_NAME = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
const VAR_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
// Anything that would need quoting inside ssh's ProxyCommand or an ssh -o value: refuse it rather than escape it.
const SAFE_SSH_WORD = /^[A-Za-z0-9@%+=:,./_~-]+$/;
const RESERVED_VARS = ["ansible_host", "ansible_user", "ansible_port", "ansible_ssh_common_args", "ansible_ssh_private_key_file"];

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
        checkVarNames(h.vars ?? {}, `hosts[${i}].vars`, issues);
    });
    if (args.bastion) {
        checkWord(args.bastion.address, "bastion.address", issues);
        checkWord(args.bastion.user, "bastion.user", issues);
        checkPort(args.bastion.port, "bastion.port", issues);
    }
    if (args.knownHostsFile !== undefined) checkWord(args.knownHostsFile, "knownHostsFile", issues);
    if (args.privateKeyFile !== undefined) checkWord(args.privateKeyFile, "privateKeyFile", issues);
    checkVarNames(args.vars, "vars", issues);
    return issues;
}

function checkVarNames(vars: Record<string, unknown>, base: string, issues: SpecIssue[]): void {
    for (const key of Object.keys(vars)) {
        if (!VAR_NAME.test(key)) {
            issues.push({ path: `${base}.${key}`, message: "is not a valid Ansible variable name", value: key,
                allowed: "[A-Za-z_][A-Za-z0-9_]*" });
        } else if (RESERVED_VARS.includes(key)) {
            issues.push({ path: `${base}.${key}`, message: "is set by the inventory itself", value: key,
                allowed: "use hosts[], bastion, knownHostsFile or privateKeyFile" });
        }
    }
}

/** The options every SSH hop gets: where host keys live and how unknown ones are treated. */
function hostKeyOptions(knownHostsFile: string | undefined): string[] {
    const opts = ["-o StrictHostKeyChecking=accept-new"];
    if (knownHostsFile !== undefined) opts.push(`-o UserKnownHostsFile=${knownHostsFile}`);
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
 * `ansible_ssh_common_args` for the nodes: host-key options and, with a bastion, a ProxyCommand through it.
 * ProxyCommand rather than ProxyJump because `-o` options given to ssh are not passed to the jump hop's own ssh,
 * so with ProxyJump the bastion's host key would be checked against a different known_hosts and policy.
 */
export function sshCommonArgs(args: Pick<InventoryArgs, "bastion" | "knownHostsFile" | "privateKeyFile">): string {
    const opts = hostKeyOptions(args.knownHostsFile);
    if (args.bastion) {
        const b = args.bastion;
        const hop = ["ssh", ...JUMP_MUX, "-W", "%h:%p", "-p", String(b.port ?? 22), ...hostKeyOptions(args.knownHostsFile)];
        if (args.privateKeyFile !== undefined) hop.push("-i", args.privateKeyFile);
        hop.push(`${b.user}@${b.address}`);
        opts.push(`-o ProxyCommand="${hop.join(" ")}"`);
    }
    return opts.join(" ");
}

/**
 * Renders the Ansible inventory as YAML (YAML rather than INI so group variables keep their types: INI `[all:vars]`
 * values reach Ansible as strings). Pure: the same input gives the same text, which the Pulumi side hashes to decide
 * whether to re-run. Throws SpecError listing every problem.
 */
export function renderInventory(args: InventoryArgs): string {
    const issues = checkInventoryArgs(args);
    if (issues.length > 0) throw new SpecError(issues, "invalid Ansible inventory input");
    const hosts: Record<string, Record<string, unknown>> = {};
    for (const h of args.hosts) {
        const own: Record<string, unknown> = {};
        for (const key of Object.keys(h.vars ?? {}).sort()) own[key] = h.vars![key];
        hosts[h.name] = { ansible_host: h.address, ansible_port: h.port ?? 22, ansible_user: h.user, ...own };
    }
    const connection: Record<string, unknown> = { ansible_ssh_common_args: sshCommonArgs(args) };
    if (args.privateKeyFile !== undefined) connection.ansible_ssh_private_key_file = args.privateKeyFile;
    const sortedVars: Record<string, unknown> = {};
    for (const key of Object.keys(args.vars).sort()) sortedVars[key] = args.vars[key];
    const doc = { all: { hosts, vars: { ...connection, ...sortedVars } } };
    return "# Rendered by rdmakit (components/provision/inventory.ts); do not edit.\n" +
        stringify(doc, { lineWidth: 0, aliasDuplicateObjects: false });
}
