/**
 * What node-local mode runs on a node, over the fan-out's one SSH session per node and run (fanout.ts): a POSIX sh
 * script (the bundle's receiver inside it) and the small Python that unpacks a run's input. Each script travels as the session's command
 * (`sh -c '<script>' rdmakit <words>`), so it holds no single quote, and every word after it is checked to need no
 * quoting (fanout.ts remoteCommand). A login user other than root runs them under `sudo -n`, as Ansible's become does.
 *
 * The session's stdin: the run's input (JSON {inventory, vars}, as many bytes as the run's $8 says), then, only once
 * the node asked for it, the bundle (tar.gz, $9 bytes). Markers on the session's stdout (the controller reads them;
 * everything else there is a progress line of playbooks/callback_plugins/rdmakit_progress.py): the first line is
 * `@@rdmakit have-bundle` or `@@rdmakit need-bundle` (no bundle of this digest here: send it now) or
 * `@@rdmakit bundle-failed <why>` (the bundle sent could not be unpacked or prepared),
 * `@@rdmakit no-python <what was found>` (no bundle here and no Python the bundle can run on: nothing is sent),
 * `@@rdmakit reboot` (a role asked for a reboot: the node reboots now; run again when it is back),
 * `@@rdmakit files` and base64 lines of a tar.gz, then `@@rdmakit files-end` (a run that collects results: the
 * folder the run's collect variable named), `@@rdmakit rc <n>` then the PLAY RECAP, then `@@rdmakit log` and the
 * node's full log when the run failed.
 */
import { NODE_PYTHON_MAX, NODE_PYTHON_MIN } from "./node-python";

/** Where bundles live on a node: /opt/rdmakit/<digest>/ (64 hex digits; nothing else there is touched). */
export const NODE_BUNDLE_ROOT = "/opt/rdmakit";
/** A node's own log of its last run of a playbook: /var/log/rdmakit/<playbook>.log. */
export const NODE_LOG_DIR = "/var/log/rdmakit";
/** The flag a role's reboot handler leaves in node-local mode (playbooks/roles/*\/handlers). */
export const REBOOT_FLAG = "/run/rdmakit-reboot-required";
/**
 * Where the node script leaves the munge key the session carried ($10 bytes after the input): a tmpfs (gone at the
 * next boot), 0400 root, in a 0700 folder; the slurm role moves it to /etc/munge/munge.key and removes it
 * (playbooks/roles/slurm/tasks/munge.yml), and the script removes it when the session ends in any case (a run that
 * fails before the role). Never in the bundle, the inventory or the run's variables.
 */
export const MUNGE_KEY_STAGE = "/run/rdmakit/munge.key";

/**
 * Receives the bundle (tar.gz on stdin) for digest $1 into /opt/rdmakit/<digest>/: unpacked beside, prepared (the
 * ansible-core set for this Python, or exit 96 with why), then moved in place; older digests' folders are removed.
 * NODE_RUN_SCRIPT runs it in a subshell when the node has no such bundle.
 */
export const NODE_UPLOAD_SCRIPT = [
    "set -eu",
    `R=${NODE_BUNDLE_ROOT}; B="$R/$1"`,
    "PY=$(command -v python3 || command -v /usr/libexec/platform-python || true)",
    'if [ -z "$PY" ]; then echo "rdmakit: no python3 on this node; node-local mode needs Python 3.9-3.12 (or cluster.ansible.mode: controller)" >&2; exit 96; fi',
    'mkdir -p "$R"; T=$(mktemp -d "$R/.incoming.XXXXXX")',
    'trap "rm -rf $T" EXIT',
    'tar -xzf - --no-same-owner -C "$T"',
    '"$PY" -I -S "$T/prepare.py" >&2',
    'rm -rf "$B"; mv "$T" "$B"; touch "$B/.ready"; trap - EXIT',
    'for d in "$R"/* "$R"/.incoming.*; do n=${d##*/}; [ "$n" = "$1" ] && continue; [ -d "$d" ] || continue',
    '  case $n in .incoming.*) rm -rf "$d"; continue;; esac',
    '  if [ ${#n} -eq 64 ] && [ -z "$(printf %s "$n" | tr -d 0-9a-f)" ]; then rm -rf "$d"; fi; done',
].join("\n");


/**
 * Runs playbook $2 of bundle $1 on this node for inventory host $3 (progress label $4, tags $5, skipped tags $6;
 * "-" for none), with the run's input (JSON {inventory, vars}, $8 bytes) first on stdin, then the munge key ($10 bytes,
 * 0 for none: written to MUNGE_KEY_STAGE), then the bundle ($9 bytes) when the node asks for it: one session does it
 * all. $7: "-", or `<variable>=<sub-folder>`: the
 * run sets that extra variable to <sub-folder> of a fresh collect folder and sends the folder back (tar.gz, base64)
 * whatever the playbook's result (validate.yml's per-node results: nccl_validate_out_dir=nccl). Before asking for the
 * bundle it checks the node's Python (the first python3, else /usr/libexec/platform-python) is one the bundle runs on,
 * so a node without one fails at once with what it has, and is sent nothing. The full log stays on the node
 * (/var/log/rdmakit/<label>.log); stdout carries the progress lines, then the markers.
 */
export const NODE_RUN_SCRIPT = [
    "set -u",
    `B="${NODE_BUNDLE_ROOT}/$1"`,
    'I=$(mktemp) || exit 98',
    'trap "rm -f $I" EXIT',
    'head -c "$8" >"$I"',
    // the staged key goes when the session ends, whatever happens before the slurm role moves it (a failed role, no Python)
    `if [ "\${10:-0}" -gt 0 ]; then trap "rm -f $I ${MUNGE_KEY_STAGE}" EXIT; mkdir -p -m 0700 /run/rdmakit && (umask 0377; rm -f ${MUNGE_KEY_STAGE}; head -c "\${10}" >${MUNGE_KEY_STAGE}) || exit 98; fi`,
    // a prepared bundle whose Python has gone (an image update) is prepared again
    'if [ ! -f "$B/.ready" ] || [ ! -x "$(cat "$B/python" 2>/dev/null)" ]; then',
    "  PY=$(command -v python3 || command -v /usr/libexec/platform-python || true)",
    '  if [ -z "$PY" ]; then echo "@@rdmakit no-python no python3 on the PATH and no /usr/libexec/platform-python"; exit 0; fi',
    `  V=$("$PY" -c "import sys; v = sys.version_info[:2]; print(*v, sep=chr(46)); sys.exit(0 if (${NODE_PYTHON_MIN.join(", ")}) <= v <= (${NODE_PYTHON_MAX.join(", ")}) else 1)" 2>&1)`,
    '  if [ $? -ne 0 ]; then echo "@@rdmakit no-python Python $(printf %s "$V" | tail -n 1) at $PY"; exit 0; fi',
    '  echo "@@rdmakit need-bundle"',
    '  E=$(mktemp) || exit 98',
    '  head -c "$9" | (',
    ...NODE_UPLOAD_SCRIPT.split("\n").map((l) => `    ${l}`),
    '  ) 2>"$E"',
    '  if [ $? -ne 0 ]; then echo "@@rdmakit bundle-failed $(grep -v "^ *$" "$E" | tail -n 1)"; rm -f "$E"; exit 0; fi',
    '  rm -f "$E"',
    "else",
    '  echo "@@rdmakit have-bundle"',
    "fi",
    "umask 077",
    `mkdir -p ${NODE_LOG_DIR} "$B/run"`,
    'C="$B/run/collect"; rm -rf "$C"; X=""',
    'if [ "$7" != "-" ]; then mkdir -p "$C"; X="${7%%=*}=$C/${7#*=}"; fi',
    'PY=$(cat "$B/python"); S="$B/py/$(cat "$B/set")"',
    '"$PY" -I -S "$B/input.py" "$B/run" <"$I" || exit 98',
    `L="${NODE_LOG_DIR}/$4.log"; rm -f ${REBOOT_FLAG}`,
    'cd "$B/playbooks" || exit 98',
    'if [ "$5" != "-" ]; then export ANSIBLE_RUN_TAGS="$5"; fi',
    'if [ "$6" != "-" ]; then export ANSIBLE_SKIP_TAGS="$6"; fi',
    'export RDMAKIT_PROGRESS_FD=3 RDMAKIT_PROGRESS_LABEL="$4" ANSIBLE_CONFIG="$B/playbooks/ansible.cfg" ANSIBLE_COLLECTIONS_PATH="$B/collections" ANSIBLE_NOCOLOR=1',
    '"$PY" -I -S "$B/launch.py" "$S" -i "$B/run/inventory.yml" -c local --limit "$3" -e "@$B/run/vars.json" -e rdmakit_node_local=true ${X:+-e "$X"} "$2" 3>&1 >"$L" 2>&1 </dev/null',
    "rc=$?",
    `if [ "$rc" -ne 0 ] && [ -f ${REBOOT_FLAG} ]; then rm -f ${REBOOT_FLAG}; echo "@@rdmakit reboot"; ` +
        'nohup sh -c "sleep 2; systemctl reboot || reboot" >/dev/null 2>&1 </dev/null & exit 0; fi',
    'if [ -n "$X" ]; then echo "@@rdmakit files"; tar -czf - -C "$C" . | base64; echo "@@rdmakit files-end"; fi',
    'echo "@@rdmakit rc $rc"',
    'sed -n "/^PLAY RECAP/,\\$p" "$L"',
    'if [ "$rc" -ne 0 ]; then echo "@@rdmakit log"; cat "$L"; fi',
    "exit 0",
].join("\n");

/** The bundle's input.py: stdin JSON {inventory, vars} into <dir>/inventory.yml and <dir>/vars.json (0600). */
export const INPUT_PY = [
    "# rdmakit node-local bundle: a run's input from stdin (components/provision/node-scripts.ts)",
    "import json, os, sys",
    "d = json.load(sys.stdin)",
    "for name, key in (('inventory.yml', 'inventory'), ('vars.json', 'vars')):",
    "    p = os.path.join(sys.argv[1], name)",
    "    fd = os.open(p, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)",
    "    with os.fdopen(fd, 'w') as f:",
    "        f.write(d[key])",
    "",
].join("\n");
