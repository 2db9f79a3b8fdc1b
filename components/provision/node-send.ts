/**
 * The controller's bound on what a node sends back through Ansible: every ansible-playbook run of the kit on this
 * machine (controller-mode provisioning, validation, `rdmakit check`) reaches the nodes through
 * components/scripts/ssh/capped_ssh.py as its ssh (ANSIBLE_SSH_EXECUTABLE), which passes on at most
 * NODE_SEND_MAX_BYTES of what one command brings back, stdout and stderr together, and fails that command past it.
 * Files come back the same way: ANSIBLE_SSH_TRANSFER_METHOD=piped makes a fetch `dd if=<file>` over that ssh, whose
 * stdout Ansible writes to the destination, where sftp and scp would write to disk themselves (ansible-core 2.14.18
 * lib/ansible/plugins/connection/ssh.py: options ssh_executable (env ANSIBLE_SSH_EXECUTABLE) and ssh_transfer_method
 * (env ANSIBLE_SSH_TRANSFER_METHOD, choices sftp, scp, piped, smart), _file_transport_command's `piped` branch;
 * environment settings give way only to inventory and play variables, and the kit's inventory refuses both names from
 * a user: inventory.ts CONNECTION_NAMES).
 * What that bounds: a node cannot make Ansible hold, or fetch write, more than NODE_SEND_MAX_BYTES for one command;
 * across a run, forks commands at once (ansible.cfg forks, plan.provision.forks). What it does not: how long a node
 * keeps a command open (ServerAliveInterval in ansible.cfg ends a dead link, not a live node that stays silent).
 * Node-local mode's own fan-out stream has its own bounds (fanout.ts NODE_LIMITS).
 */
import * as fs from "node:fs";
import { assetPath } from "../assets";
import { MAX_FILE_CHARS } from "../health/text";

/**
 * Room, beside the largest file, for what comes back with it on the same command: dd's three summary lines on stderr,
 * ssh's own warnings, a module result's JSON keys around its text.
 */
export const NODE_SEND_HEADROOM_BYTES = 64 * 1024;

/**
 * The most one command may bring back from a node. The largest thing the kit legitimately fetches is a node health
 * capture: the health reader opens a file of up to 4 * MAX_FILE_CHARS bytes (components/health/report.ts: at most
 * MAX_FILE_CHARS characters, at most 4 UTF-8 bytes each; text.ts: 64 MiB holds any since-boot kernel log), fetched
 * with `dd` over the piped transfer. The all-node nccl-tests log (NCCL_DEBUG=INFO, NCCL_DEBUG_SUBSYS=INIT,NET,
 * commands.ts) grows with the ranks: test/fixtures/nccl/nersc-perlmutter-shifter-ofi-cxi-gdrdma.log (NCCL_DEBUG=INFO,
 * every subsystem) has 37,862 bytes of NCCL INFO lines over 8 ranks, about 4.7 KB a rank, so 256 MiB holds some 56,000
 * such ranks; a GPU with more channels writes more `Channel` lines a rank, and at three times that it is still about
 * 18,000 ranks (2,300 nodes of 8 GPUs). 256 MiB + 64 KiB in all.
 */
export const NODE_SEND_MAX_BYTES = 4 * MAX_FILE_CHARS + NODE_SEND_HEADROOM_BYTES;

/** The wrapper, as shipped (package.json "files": components/scripts/). */
export const CAPPED_SSH = "components/scripts/ssh/capped_ssh.py";

const END = "RDMAKIT_CAPPED_SSH_END";
let text: string | undefined;

/** The wrapper's text, read once. */
export function cappedSshText(): string {
    text ??= fs.readFileSync(assetPath(CAPPED_SSH), "utf8");
    if (text.split("\n").includes(END)) throw new Error(`${CAPPED_SSH} holds the line ${END}, which ends its here-document`);
    return text;
}

/**
 * Shell lines for a run script, after SSH_KEY_PRELUDE (they use its private `$tmp`): the wrapper written there as an
 * executable (the package's own files carry no execute bit), and the environment every ansible-playbook of the run
 * then inherits. The wrapper's text is in the script, so the run uses the file it was planned with and a change to it
 * changes the command's inputs. Its first line names the python3 on PATH by its real path, run with -I -S (no
 * PYTHON* variables, no user or site packages: the wrapper needs the standard library only) and without a
 * launcher such as pyenv's shim in between: Ansible starts it for every command it runs on a node.
 */
export function nodeSendBoundLines(maxBytes: number = NODE_SEND_MAX_BYTES): string[] {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new Error(`nodeSendBoundLines: ${maxBytes} is not a number of bytes`);
    const body = cappedSshText().replace(/\n$/, "").split("\n");
    if (!body[0].startsWith("#!")) throw new Error(`${CAPPED_SSH}: its first line is not a #! line`);
    return [
        'py=$(python3 -c "import sys; print(sys.executable)" 9>&-) || py=""',
        'case "$py" in /*) ;; *) echo "rdmakit: no python3 on PATH for the bounded ssh (components/provision/node-send.ts)" >&2; exit 1 ;; esac',
        // a #! line is split at the first blank: a path with one goes through env
        'case "$py" in *[[:space:]]*) py="/usr/bin/env python3" ;; *) py="$py -IS" ;; esac',
        `{ printf '#!%s\\n' "$py"; cat <<'${END}'`,
        ...body.slice(1),
        END,
        '} >"$tmp/rdmakit-ssh" 9>&- || exit 1',
        'chmod 700 "$tmp/rdmakit-ssh" || exit 1',
        `export ANSIBLE_SSH_EXECUTABLE="$tmp/rdmakit-ssh" ANSIBLE_SSH_TRANSFER_METHOD=piped RDMAKIT_NODE_SEND_MAX_BYTES=${maxBytes}`,
    ];
}
