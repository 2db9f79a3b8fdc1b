/**
 * `rdmakit ssh --stack <name> <node> [-- cmd]`: an SSH session to a node through the stack's way in, checked against
 * the stack's pinned host keys (no trust on first use), with the key from the user's own agent. Nothing of the key
 * passes through rdmakit; the known_hosts is a temporary file removed when the session ends (also on SIGINT/SIGTERM).
 */
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawn } from "node:child_process";
import { groupKnownHosts, KIT_HOST_KEY_ALGORITHMS, type KnownHost, renderKnownHosts } from "../provision/knownhosts";
import { type OperatingState, StateError } from "./state";

/**
 * The host-key and forwarding options of every hop. StrictHostKeyChecking yes: a key not in the file is refused;
 * GlobalKnownHostsFile /dev/null: only the stack's keys count; ForwardAgent no: the node never gets the user's agent.
 * source: OpenBSD ssh_config(5) (StrictHostKeyChecking, UserKnownHostsFile, GlobalKnownHostsFile, HostKeyAlgorithms,
 * ForwardAgent; ProxyCommand's %h %p).
 */
function hopOptions(knownHosts: string | undefined): string[] {
    return [
        "-o", "StrictHostKeyChecking=yes",
        ...(knownHosts ? ["-o", `UserKnownHostsFile=${knownHosts}`, "-o", "GlobalKnownHostsFile=/dev/null", "-o", `HostKeyAlgorithms=${KIT_HOST_KEY_ALGORITHMS.join(",")}`] : []),
        "-o", "ForwardAgent=no",
    ];
}

/**
 * The known_hosts text for a stack: the node group's key for every node's SSH address, the bastion's own, the Slurm
 * head node's own. Pure. On bare metal the stack pins no node key (undefined: the user's known_hosts decides), but
 * the head node's key is the spec's scheduler.controller.hostKey: a session to `node` = the head node gets it.
 */
export function stackKnownHosts(state: OperatingState, node?: string): string | undefined {
    const viaSsm = state.entry?.kind === "ssm";
    const entry = state.entry?.kind === "bastion" && state.entry.hostKey ? { address: state.entry.address, publicKey: state.entry.hostKey } : undefined;
    const h = state.head;
    const head: KnownHost[] = h?.hostKey ? [{ hosts: [viaSsm ? h.instanceId ?? h.address : h.address], publicKey: h.hostKey }] : [];
    if (!state.nodeHostKey) {
        if (node === undefined || node !== h?.name || head.length === 0) return undefined;
        return renderKnownHosts([...(entry ? [{ hosts: [entry.address], publicKey: entry.publicKey }] : []), ...head]);
    }
    const addresses = state.nodes.map((n) => (viaSsm ? n.instanceId ?? n.address : n.address));
    return renderKnownHosts([...groupKnownHosts(addresses, state.nodeHostKey, entry), ...head]);
}

/**
 * The ssh argument list for a node (without the program name). Pure. `knownHosts` is the stack's file; undefined on
 * bare metal, where the stack pins no key and the user's own known_hosts decides (still strict: no first-use trust).
 */
export function sshArgs(state: OperatingState, node: string, knownHosts: string | undefined, command: string[]): string[] {
    // a GPU node, or the Slurm head node under its own name and login user
    const h = state.head?.name === node ? state.head : undefined;
    const n = h ?? state.nodes.find((x) => x.name === node);
    if (!n) {
        throw new StateError(`no node ${JSON.stringify(node)} in the stack; it has ${state.nodes.map((x) => x.name).join(", ")}` +
            (state.head ? ` and the Slurm head node ${state.head.name}` : ""));
    }
    const args = [...hopOptions(knownHosts)];
    let target = n.address;
    if (state.entry?.kind === "ssm") {
        if (!n.instanceId) throw new StateError(`${node}: the stack has no instance id for it, which Session Manager needs`);
        target = n.instanceId;
        // as the inventory's hop (provision/inventory.ts sshCommonArgs); Session Manager checks the caller's IAM
        args.push("-o", `ProxyCommand=aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters portNumber=%p --region ${state.entry.region}`);
    } else if (state.entry?.kind === "bastion") {
        // ProxyCommand, not ProxyJump: -o options do not reach a ProxyJump hop's own ssh (provision/inventory.ts)
        const hop = ["ssh", ...hopOptions(knownHosts), "-W", "%h:%p", `${state.entry.user}@${state.entry.address}`];
        args.push("-o", `ProxyCommand=${hop.join(" ")}`);
    }
    args.push(`${h ? h.user : state.sshUser}@${target}`);
    if (command.length > 0) args.push("--", ...command);
    return args;
}

/** Runs the session: a temporary known_hosts, ssh with the terminal, the file removed after. Resolves to ssh's status. */
export function runSsh(state: OperatingState, node: string, command: string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
    const text = stackKnownHosts(state, node);
    const dir = text !== undefined ? fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-ssh-")) : undefined;
    const file = dir ? path.join(dir, "known_hosts") : undefined;
    const cleanup = (): void => { if (dir) fs.rmSync(dir, { recursive: true, force: true }); };
    try {
        if (file) fs.writeFileSync(file, text as string, { mode: 0o600 });
        const args = sshArgs(state, node, file, command);
        return new Promise((resolve) => {
            const child = spawn("ssh", args, { stdio: "inherit", env });
            // Ctrl-C reaches ssh from the terminal; this process waits for it, then removes the file
            const onInt = (): void => undefined;
            const onTerm = (): void => { child.kill("SIGTERM"); };
            process.on("SIGINT", onInt);
            process.on("SIGTERM", onTerm);
            const done = (code: number): void => {
                process.off("SIGINT", onInt);
                process.off("SIGTERM", onTerm);
                cleanup();
                resolve(code);
            };
            child.on("error", (e) => { process.stderr.write(`rdmakit ssh: ${e.message}\n`); done(255); });
            child.on("close", (code, signal) => done(code ?? (signal ? 255 : 0)));
        });
    } catch (e) {
        cleanup();
        throw e;
    }
}
