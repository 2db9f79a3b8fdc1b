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
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";
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

let digest: string | undefined;

/** sha256 of the shipped wrapper, read once. */
export function cappedSshDigest(): string {
    digest ??= createHash("sha256").update(fs.readFileSync(assetPath(CAPPED_SSH))).digest("hex");
    return digest;
}

/**
 * The environment a run needs for NODE_SEND_BOUND_LINES: the shipped wrapper's path and sha256 (as the switch pushes
 * name push.sh and its digest, roce/push.ts: the state holds a path and a digest, not the program, and a change to the
 * wrapper changes the run's inputs) and the bound. The path is relative to `runsIn`, the folder the run starts in, so
 * the inputs do not change when the project folder moves (as ansible.ts DEFAULT_PLAYBOOKS_DIR).
 */
export function nodeSendEnv(runsIn: string, maxBytes: number = NODE_SEND_MAX_BYTES): Record<string, string> {
    if (!Number.isSafeInteger(maxBytes) || maxBytes < 1) throw new Error(`nodeSendEnv: ${maxBytes} is not a number of bytes`);
    return {
        RDMAKIT_CAPPED_SSH: path.relative(path.resolve(runsIn), assetPath(CAPPED_SSH)),
        RDMAKIT_CAPPED_SSH_SHA256: cappedSshDigest(),
        RDMAKIT_NODE_SEND_MAX_BYTES: String(maxBytes),
    };
}

/**
 * Shell lines for a run script, after SSH_KEY_PRELUDE (they use its private `$tmp`), with nodeSendEnv's variables set:
 * the wrapper copied there, refused unless its sha256 is the planned one, made an executable under a #! line (the
 * package's own files carry no execute bit), and the environment every ansible-playbook of the run then inherits. The
 * #! line names the python3 on PATH by its real path, run with -I -S (no PYTHON* variables, no user or site packages:
 * the wrapper needs the standard library only) and without a launcher such as pyenv's shim in between: Ansible starts
 * it for every command it runs on a node (~20-30 ms of CPU each here, python3 -IS with the wrapper's imports).
 */
export const NODE_SEND_BOUND_LINES: readonly string[] = [
    'case "${RDMAKIT_NODE_SEND_MAX_BYTES:-}" in [1-9]*) case "$RDMAKIT_NODE_SEND_MAX_BYTES" in *[!0-9]*) ;; *) ok=1 ;; esac ;; esac',
    'if [ "${ok:-}" != 1 ]; then echo "rdmakit: RDMAKIT_NODE_SEND_MAX_BYTES is \'${RDMAKIT_NODE_SEND_MAX_BYTES:-}\': a whole number of bytes is needed (components/provision/node-send.ts)" >&2; exit 1; fi',
    'py=$(python3 -c "import sys; print(sys.executable)" 9>&-) || py=""',
    'case "$py" in /*) ;; *) echo "rdmakit: no python3 on PATH for the bounded ssh (components/provision/node-send.ts)" >&2; exit 1 ;; esac',
    // a #! line is split at the first blank: a path with one goes through env
    'case "$py" in *[[:space:]]*) py="/usr/bin/env python3" ;; *) py="$py -IS" ;; esac',
    'cp -- "${RDMAKIT_CAPPED_SSH:?}" "$tmp/capped_ssh.py" 9>&- || exit 1',
    'sum=$(sha256sum <"$tmp/capped_ssh.py" 9>&-) || exit 1',
    'if [ "${sum%% *}" != "${RDMAKIT_CAPPED_SSH_SHA256:?}" ]; then echo "rdmakit: $RDMAKIT_CAPPED_SSH is not the bounded ssh this run was planned with (sha256 ${sum%% *}, planned $RDMAKIT_CAPPED_SSH_SHA256): run pulumi up again with this package" >&2; exit 1; fi',
    '{ printf \'#!%s\\n\' "$py"; tail -n +2 "$tmp/capped_ssh.py"; } >"$tmp/rdmakit-ssh" 9>&- || exit 1',
    'chmod 700 "$tmp/rdmakit-ssh" || exit 1',
    'export ANSIBLE_SSH_EXECUTABLE="$tmp/rdmakit-ssh" ANSIBLE_SSH_TRANSFER_METHOD=piped RDMAKIT_NODE_SEND_MAX_BYTES',
];
