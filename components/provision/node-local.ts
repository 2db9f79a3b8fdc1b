/**
 * The program's side of node-local mode: the fan-out's targets from the inventory the run gets (the same text push
 * mode hands ansible-playbook, so both modes reach a node the same way), each with its own one-host inventory.
 */
import { fanoutNodes, type FanoutNode, type KeptNodes } from "./fanout";
import { inventoryYamlParts, oneHostYamlParts } from "./inventory-yaml";
import { markUnsafe } from "./inventory";
import { inventoryDocument } from "./inventory-read";
import { parsedOf } from "../parsed";

/** The connection variables of the controller's inventory; a node's own inventory has no use for them. */
const CONNECTION_VARS = ["ansible_ssh_common_args", "ansible_ssh_private_key_file"];

/** The first line of each node's own inventory. */
const OWN_HEAD = "# Rendered by rdmakit for the node's own run (components/provision/node-local.ts); do not edit.\n";

/**
 * The fan-out's targets from an inventory rendered by renderInventory (inventory.ts): each host's address, port, user
 * and SSH arguments, and its own inventory (that host alone with its variables and the group's, `!unsafe` values kept
 * so). Throws naming the host when one lacks an address or user. Pure.
 */
export function nodeTargets(inventory: string, leaveOut: readonly string[] = []): FanoutNode[] {
    return fanoutNodes(keptNodeTargets(inventory, leaveOut));
}

/**
 * The targets as the program keeps them for a run (ansible.ts keepNodeTargets): the group's variables, the same text
 * at the end of every node's own inventory (some 9 KB with the Slurm files; 2,048 copies were 22 MB a list), once as
 * `shared`, and each node marked `shared: true` carrying the rest of its inventory. fanoutNodes (fanout.ts) joins
 * them into the texts nodeTargets gives, which is what each node receives.
 */
export function keptNodeTargets(inventory: string, leaveOut: readonly string[] = []): KeptNodes {
    // `!unsafe` reads as its string here; markUnsafe tags the same strings again when each node's inventory is printed
    // an inventory this process rendered is read as the structure it was printed from (parsed.ts: the strings
    // markUnsafe tags are plain strings there, as the `!unsafe` tag reads them here)
    let value = parsedOf(inventory);
    if (value === undefined) {
        const doc = inventoryDocument(inventory);
        if (doc.errors.length > 0) throw new Error(`rdmakit: the inventory does not parse: ${doc.errors[0].message}`);
        value = doc.toJS();
    }
    const all = (value as { all?: { hosts?: Record<string, Record<string, unknown> | null>; vars?: Record<string, unknown> } } | null)?.all;
    const vars = { ...(all?.vars ?? {}) };
    const sshArgs = typeof vars.ansible_ssh_common_args === "string" ? vars.ansible_ssh_common_args : "";
    const keyFile = typeof vars.ansible_ssh_private_key_file === "string" ? vars.ansible_ssh_private_key_file : undefined;
    for (const k of CONNECTION_VARS) delete vars[k];
    // leaveOut: hosts no session goes to (validation's Slurm head node), whatever they carry
    let shared: string | undefined;
    const nodes = Object.entries(all?.hosts ?? {}).filter(([name]) => !leaveOut.includes(name)).map(([name, hv]): KeptNodes["nodes"][number] => {
        const own = { ...(hv ?? {}) };
        // a host pinned apart (inventory.ts pinnedKnownHostsFile) has its own ssh arguments, as in push mode
        const ownArgs = own.ansible_ssh_common_args;
        delete own.ansible_ssh_common_args;
        const address = own.ansible_host;
        const user = own.ansible_user;
        if (typeof address !== "string" || typeof user !== "string") {
            throw new Error(`rdmakit: inventory host ${name} has no ansible_host or ansible_user; node-local mode reaches each node by them`);
        }
        const port = typeof own.ansible_port === "number" ? own.ansible_port : 22;
        // the vars part is one text for every node (inventory-yaml.ts varsOf: one vars object here), or "" where a
        // node's inventory was printed whole
        // a host whose entry is `own` as it is (no ssh arguments of its own) is printed as the inventory printed it
        const parts = hv && !("ansible_ssh_common_args" in hv) ? oneHostYamlParts(name, hv, vars, markUnsafe)
            : inventoryYamlParts({ all: { hosts: { [name]: own }, vars } }, markUnsafe);
        const share = parts.vars !== "" && (shared === undefined || shared === parts.vars);
        if (share) shared = parts.vars;
        return {
            name, address, port, user, sshArgs: typeof ownArgs === "string" ? ownArgs : sshArgs, ...(keyFile !== undefined ? { keyFile } : {}),
            inventory: OWN_HEAD + parts.hosts + (share ? "" : parts.vars), ...(share ? { shared: true as const } : {}),
        };
    });
    return { shared: shared ?? "", nodes };
}
