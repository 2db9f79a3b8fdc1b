/**
 * How a rendered configuration reaches its switch: pure functions that build the shell scripts the `@pulumi/command`
 * resources run. Every script runs one command per line, each under an explicit check (no `set -e`, no `a && b`
 * chains: a failure anywhere stops the script with a message that names the switch and the step), and every push is
 * a transaction in the switch OS's own terms: nothing is saved or confirmed unless every step before succeeded, and a
 * failure after the change went live rolls it back.
 *
 * - nvue (remote, bash on the switch): discard stale pending edits, turn auto-save off for the push window (an
 *   unconfirmed apply must not reach startup.yaml), drop the kit's QoS objects and the qos of the ports an earlier push
 *   owned, `nv config patch` the rendered file, `nv config apply --confirm 600s` (reverts by itself unless confirmed),
 *   verify the applied tree and what switchd runs, confirm, save, put the operator's auto-save setting back (also after
 *   a rollback; a push that died leaves it recorded on the switch for the next push to restore).
 * - sonic (remote): refuse a switch on the traditional buffer model, compute an RFC 6902 patch against the running
 *   CONFIG_DB that replaces the kit's rows (sonic-patch.ts), `config checkpoint`, `config apply-patch --dry-run`
 *   (YANG validation), `config apply-patch`, verify (the patch against the new CONFIG_DB is empty), `config save`;
 *   `config rollback` to the checkpoint on any failure after the apply.
 * - eos (local, plain ssh with the pinned host key, since the EOS login shell is the CLI): a configure session with
 *   the rendered lines, `commit timer 00:10:00` (reverts by itself), verify (the session and running config agree),
 *   confirm with `configure session <s> commit`, `copy running-config startup-config`; `abort` on failure.
 *
 * The digest of the rendered text is written into each script, so the command's inputs change exactly when the
 * configuration changes, and the script refuses a text whose digest is not what was planned.
 */
import { runChild, RUN_INTERPRETER, SSH_KEY_PRELUDE } from "../provision/ansible";
import type { RenderedSwitchConfig } from "./render";
import type { SwitchPlan } from "./qos";
import { SONIC_OWNERSHIP, SONIC_PATCH_PY } from "./sonic-patch";
import { roceScript } from "../scripts";

export interface PushCommand {
    /** Run here (`@pulumi/command` local): every push reaches its switch over ssh with the pinned host key. */
    create: string;
    update: string;
    delete: string;
    stdin: string;
    environment: Record<string, string>;
    /**
     * The shell the script runs under: with a served switch key its own ssh-agent (RUN_INTERPRETER, the key comes from
     * the program's key socket into that agent, never into a file, an input or an environment), else plain bash.
     */
    interpreter: string[];
}

/** Single-quote a value for POSIX sh. */
export function shq(s: string): string {
    return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Seconds a change stays live unconfirmed before NVUE / EOS revert it by themselves, and before the SONiC dead-man
 * timer restores the checkpoint: long enough for the verify step over a slow management network, short enough that
 * a push that died mid-way heals within minutes.
 */
export const CONFIRM_TIMEOUT_S = 600;

/** ssh's own limits, so a silent switch fails the push instead of hanging it: TCP connect, then keep-alives. */
export const SSH_TIMEOUTS = { connectS: 20, aliveIntervalS: 15, aliveCountMax: 4 } as const;

/**
 * The local prelude when no key is served (the caller's own agent or ssh config): bash (dash runs no EXIT trap on a
 * signal), a private temporary folder, and traps that stop the running ssh and remove the folder on INT/TERM/HUP.
 */
const PLAIN_PRELUDE = [
    "set -u -o pipefail",
    "umask 077",
    "tmp=$(mktemp -d) || exit 1",
    'child=""',
    'cleanup() { trap - EXIT INT TERM HUP; if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi; rm -rf "$tmp"; }',
    "trap cleanup EXIT",
    "trap 'cleanup; exit 129' HUP",
    "trap 'cleanup; exit 130' INT",
    "trap 'cleanup; exit 143' TERM",
];

/** The first lines of every push script: header (read by the policy pack), the run's prelude, the failure helper. */
function prelude(cfg: RenderedSwitchConfig, sw: SwitchPlan, agentKey: boolean, rollback: string): string[] {
    const known = sw.sshPort === 22 ? sw.managementAddress : `[${sw.managementAddress}]:${sw.sshPort}`;
    return [
        `# rdmakit RoCE QoS for ${cfg.switch} (${cfg.format}), sha256 ${cfg.digest}`,
        ...(agentKey ? SSH_KEY_PRELUDE : PLAIN_PRELUDE),
        `sw=${shq(cfg.switch)}`,
        // fail <step> <why>: stop, undo what the step's stage requires, say which switch and step
        `undo=""; state="nothing was saved or confirmed"`,
        `fail() { if [ -n "$undo" ]; then echo "rdmakit: $sw: rolling back ($undo)" >&2; eval "$undo" >&2 9>&- || echo "rdmakit: $sw: the rollback failed too; check the switch by hand" >&2; fi; echo "rdmakit: $sw: step '$1' failed ($2); $state" >&2; exit 1; }`,
        `rollback=${shq(rollback)}`,
        step("receive the configuration", `cat > "$tmp/config"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$tmp/config" | sha256sum -c --quiet -`),
        // the switch is trusted only with the key the spec pins: no first-contact trust, no global known_hosts
        step("write the pinned host key", `printf '%s %s\\n' ${shq(known)} ${shq(sw.hostKey.split(" ").slice(0, 2).join(" "))} > "$tmp/known_hosts"`),
        // every ssh: batch mode, the pinned key only, a connect timeout and keep-alives (a silent switch fails, never hangs)
        // an array, not a function: `"${sw_ssh[@]}" … &` is ssh itself, so the trap's kill of $child stops ssh (a
        // function run in the background is a subshell whose ssh would outlive that kill)
        `sw_ssh=(ssh -T -o ForwardAgent=no -o ClearAllForwardings=yes -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$tmp/known_hosts" -o GlobalKnownHostsFile=/dev/null ` +
            `-o ConnectTimeout=${SSH_TIMEOUTS.connectS} -o ServerAliveInterval=${SSH_TIMEOUTS.aliveIntervalS} -o ServerAliveCountMax=${SSH_TIMEOUTS.aliveCountMax} ` +
            `-p ${sw.sshPort} ${shq(`${sw.sshUser}@${sw.managementAddress}`)})`,
    ];
}

/** `cmd || fail "<step>" "exit $?"`: the exit status of `cmd` is what `$?` holds when fail's arguments expand. */
function step(name: string, cmd: string): string {
    return `${cmd} || fail ${shq(name)} "exit $?"`;
}

/** An ssh call as the run's child (a trapped signal stops it at once), then its status checked. */
function sshStep(name: string, cmd: string): string[] {
    return [...runChild(cmd), `[ "$rc" -eq 0 ] || fail ${shq(name)} "ssh exit $rc"`];
}

/**
 * NVUE and SONiC: the script that runs on the switch (bash), sent as the ssh command with the configuration on its
 * stdin. It prints its own step failures; ssh's own failures are exit 255.
 */
function remotePush(remote: string): string[] {
    return [
        ...runChild(`"\${sw_ssh[@]}" ${shq(`bash -c ${shq(remote)}`)} < "$tmp/config"`),
        `if [ "$rc" -eq 255 ]; then fail "ssh to the switch" "ssh exit 255: unreachable, no answer within ${SSH_TIMEOUTS.connectS} s, a host key other than the pinned one, or the login refused"; fi`,
        `if [ "$rc" -ne 0 ]; then echo "rdmakit: $sw: the push failed on the switch (exit $rc); see the messages above" >&2; exit 1; fi`,
    ];
}

/** The first lines of the part that runs on the switch (NVUE, SONiC). */
function remotePrelude(cfg: RenderedSwitchConfig, rollback: string): string[] {
    return [
        "set -u",
        // The switch's login umask (often 022) would leave ~/rdmakit and the dumps readable by every local user: the
        // running CONFIG_DB holds TACACS/RADIUS keys and SNMP communities . Private from here.
        "umask 077",
        `sw=${shq(cfg.switch)}; d="$HOME/rdmakit"`,
        // the switch's state read back for the verify: removed once the verify read them, and on every failure
        `drop_dumps() { rm -f ${SWITCH_DUMPS.map((f) => `"$d/${f}"`).join(" ")}; }`,
        `undo=""; state="nothing was saved or confirmed"`,
        `fail() { drop_dumps; if [ -n "$undo" ]; then echo "rdmakit: $sw: rolling back ($undo)" >&2; eval "$undo" >&2 || echo "rdmakit: $sw: the rollback failed too; check the switch by hand" >&2; fi; echo "rdmakit: $sw: step '$1' failed ($2); $state" >&2; exit 1; }`,
        `rollback=${shq(rollback)}`,
        step("mkdir ~/rdmakit", `mkdir -p "$d"`),
        // a folder an earlier push (or the login umask) left 755 is made private too
        step("make ~/rdmakit private (0700)", `chmod 700 "$d"`),
    ];
}

/**
 * What a push reads back from the switch into ~/rdmakit (NVUE's applied tree and RoCE state, SONiC's CONFIG_DB before
 * and after the patch): the CONFIG_DB dumps hold the switch's secrets, so none of them outlives the push.
 */
export const SWITCH_DUMPS = ["applied.json", "roce-oper.json", "running.json", "after.json"] as const;

function nvueScript(cfg: RenderedSwitchConfig, sw: SwitchPlan, agentKey: boolean): string {
    const ports = sw.ports.map((p) => p.name);
    const remote = [
        // the rollback of a live change, then the operator's auto-save setting back
        ...remotePrelude(cfg, "rollback_live"),
        `verify=${shq(NVUE_VERIFY_PY)}`,
        `autosave=${shq(NVUE_AUTOSAVE_PY)}`,
        `paths=${shq(NVUE_OWNED_PATHS_PY)}`,
        `f="$d/roce-qos.nvue.yaml"; owned="$d/roce-qos.ports"`,
        step("receive the configuration", `cat > "$f.new"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$f.new" | sha256sum -c --quiet -`),
        // Pending edits someone left would ride along with this apply. source: NVUE-REF `nv config detach`
        // ("discards all pending changes since the last apply") — roce-operations.md §1a
        step("nv config detach (discard stale pending changes)", "nv config detach"),
        `undo="nv config detach"`,
        // Auto-save (on by default from CL 5.9) makes an apply write startup.yaml at once, and NVIDIA's docs do not say
        // that `--confirm` defers that save (NVUE-REF "nv config apply": 5.9+ "automatically saves"; --confirm only rolls
        // back): an unconfirmed change could survive a reboot. So the kit turns it off for the push window, as its own
        // apply of that one setting, and puts the operator's setting back after the save, and after a rollback. The
        // operator's setting is kept in a file on the switch until it is restored, so a push that died in between
        // (the confirm timer reverts to the revision with auto-save off) is healed by the next push.
        step("read nv show system config auto-save -o json", `nv show system config auto-save -o json > "$d/auto-save.json"`),
        step("read the auto-save setting", `as=$(python3 -c "$autosave" "$d/auto-save.json")`),
        `if [ -f "$d/auto-save.orig" ]; then as=$(cat "$d/auto-save.orig"); fi`,
        // restore_autosave: the operator's setting back, applied (with auto-save on, that apply saves startup.yaml)
        `restore_autosave() { [ -f "$d/auto-save.orig" ] || return 0; nv set system config auto-save $(cat "$d/auto-save.orig") || return 1; nv config apply -y || return 1; rm -f "$d/auto-save.orig"; }`,
        `rollback_live() { nv config apply --confirm-no -y || return 1; restore_autosave; }`,
        `case "$as" in "state enabled"|"enable on")`,
        `  printf '%s\\n' "$as" > "$d/auto-save.orig" || fail "record the auto-save setting" "exit $?"`,
        `  undo="nv config detach; restore_autosave"`,
        `  nv set system config auto-save \${as%% *} $([ "\${as%% *}" = state ] && echo disabled || echo off) || fail "turn auto-save off for the push" "exit $?"`,
        `  nv config apply -y > "$d/apply-autosave.log" 2>&1 || { rc=$?; cat "$d/apply-autosave.log" >&2; fail "nv config apply -y (auto-save off)" "exit $rc"; } ;;`,
        `esac`,
        // The kit owns the QoS objects its files set (this one and the last one it applied), and its ports' qos: unset
        // those, then patch, replaces them (a moved priority leaves nothing behind) and leaves every other QoS setting
        // of the operator alone. Separate commands: one patch must not set and unset the same object (NVUE-CLI, §1a).
        step("list the QoS objects the kit owns", `python3 -c "$paths" "$f.new" "$f" > "$d/owned-paths"`),
        `while read -r p; do [ -n "$p" ] || continue; nv unset $p || fail "nv unset $p" "exit $?"; done < "$d/owned-paths"`,
        `if [ -f "$owned" ]; then`,
        `  while read -r p; do [ -n "$p" ] || continue; nv unset interface "$p" qos || fail "nv unset interface $p qos" "exit $?"; done < "$owned"`,
        `fi`,
        step("nv config patch", `nv config patch "$f.new"`),
        // --confirm: live, reverted unless confirmed (NVUE-REF: "nv config apply --confirm 60 requires you to confirm
        // within one hour"; an explicit unit as the 5.14 CLI page writes it, roce-operations.md §1a).
        step(`nv config apply --confirm ${CONFIRM_TIMEOUT_S}s`, `nv config apply --confirm ${CONFIRM_TIMEOUT_S}s -y > "$d/apply.log" 2>&1`),
        `undo="$rollback"`,
        // apply can print errors and still exit 0 (github.com/ipspace/netlab/pull/1726, roce-operations.md §1a)
        `if grep -qiE '(^|[^a-z])(error|invalid)' "$d/apply.log"; then cat "$d/apply.log" >&2; fail "nv config apply --confirm ${CONFIRM_TIMEOUT_S}s" "it printed an error"; fi`,
        step("read the applied configuration", `nv config show -o json > "$d/applied.json"`),
        step("verify (the applied configuration holds every rendered value)", `python3 -c "$verify" "$f.new" "$d/applied.json"`),
        // what switchd runs, not only what NVUE accepted: `nv show qos roce -o json` (CL-RoCE / CL-QoS "Verify",
        // roce-operations.md §3: each `nv show` takes -o json; applied vs operational differ when an apply did not take)
        step("read the operational RoCE state", `nv show qos roce -o json > "$d/roce-oper.json"`),
        step("verify (the switch operates the rendered RoCE mode)", `python3 -c "$verify" --roce "$f.new" "$d/roce-oper.json"`),
        "drop_dumps",
        // Confirming form: `nv config apply --confirm-yes` (NAPALM Cumulus driver napalm_cumulus/cumulus.py
        // confirm_commit; NVIDIA's own NVOS test constants list --confirm-yes / --confirm-no / --confirm-status beside
        // -y / --assume-yes (sonic-net/sonic-mgmt ngts nvos constants, ConfigConsts); NVIDIA's docs show only --confirm
        // <time> and --confirm-status: roce-operations.md §1a, M)
        step("nv config apply --confirm-yes", "nv config apply --confirm-yes -y"),
        // from here nothing is rolled back; a failure still puts the operator's auto-save back (with it on, that apply saves)
        `undo="restore_autosave"; state="the change is confirmed and live, but not saved: push again"`,
        // NVUE-REF: from 5.9 auto-save makes apply write startup.yaml by itself; `nv config save` covers 5.8 and earlier
        // and an auto-save someone turned off
        step("nv config save", "nv config save"),
        `state="the change is confirmed, live and saved, but auto-save is still off: run nv set system config auto-save $(cat "$d/auto-save.orig" 2>/dev/null) and nv config apply -y, or push again"`,
        step("restore the operator's auto-save setting", "restore_autosave"),
        `state="the change is confirmed, live and saved"`,
        step("record the applied file", `mv "$f.new" "$f"`),
        step("record the owned ports", `printf '%s\\n' ${ports.map(shq).join(" ")} > "$owned"`),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
    return [...prelude(cfg, sw, agentKey, ""), ...remotePush(remote)].join("\n");
}

/**
 * The NVUE objects a rendered file sets, as `nv unset` paths, one per line, for every file named that exists (the new
 * one and the last one applied): `qos roce`, `qos pfc-watchdog`, and `qos <table> <profile>` for the profile tables
 * (mapping, egress-queue-mapping, egress-scheduler, congestion-control, pfc). Names come from the kit's own files.
 */
const NVUE_OWNED_PATHS_PY = roceScript("nvue_owned_paths.py");

/**
 * `nv show system config auto-save -o json` → the setting as the command that sets it takes it: `state enabled|disabled`
 * (CL 5.10 on: "nv set system config auto-save state enabled/disabled" replaced "… auto-save enable on/off",
 * CumulusNetworks/docs:content/cumulus-linux-510/Whats-New/_index.md "Changed NVUE Commands") or `enable on|off`
 * (5.9 and earlier; NVUE-REF "nv show system config" prints `auto-save / enable off`). The JSON shape is unconfirmed
 * (the docs show only the table): the key is read flat or under `operational`; anything else stops the push.
 */
const NVUE_AUTOSAVE_PY = roceScript("nvue_autosave.py");

/**
 * Verify for NVUE: every leaf the rendered `- set:` document holds is in `nv config show -o json` (the applied tree,
 * NVUE-CLI "nv config show: applied config"), compared as text since NVUE may print numbers as strings. PyYAML is
 * what NVUE itself is built on (L: not confirmed from a Cumulus package list).
 */
const NVUE_VERIFY_PY = roceScript("nvue_verify.py");

/**
 * SONiC's dead-man: a transient systemd timer (`systemd-run --on-active=<s> --unit=<name>`, systemd-run(1): "a
 * transient .timer unit ... the transient service unit will be started when the transient timer is elapsed";
 * `systemctl stop <name>.timer` cancels it) armed before the real apply. It runs DEADMAN_SH as root: stop the apply
 * job, `config rollback <checkpoint>` (GCU-design: checkpoint → apply-patch → rollback, roce-operations.md §1b), and
 * save again if the job had saved. A transient unit does not survive a reboot, and a reboot loads the saved
 * configuration, which the job writes only after every check passed.
 */
const DEADMAN_SH = roceScript("sonic_deadman.sh");

/**
 * The part of the SONiC push that must not depend on the SSH session: apply, verify (CONFIG_DB, then what the
 * buffer manager made of it), save, cancel the dead-man timer last. It runs detached (setsid nohup) and reports in
 * `$job/status`, which the session polls; a session that drops leaves it running, and a job that dies or hangs is
 * stopped and undone by the timer.
 */
function sonicJob(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless: boolean): string {
    const own = JSON.stringify(SONIC_OWNERSHIP);
    const ports = JSON.stringify(sw.ports.map((p) => p.name));
    const pgs = lossless ? sw.ports.map((p) => `${p.name}:${sw.roce.priorityGroup}`) : [];
    return [
        "set -u",
        'job=$1; cp=$2; d=$3; f=$4; PY=$5; unit="rdmakit-deadman-$cp"',
        // private files whatever umask the job inherits; CONFIG_DB read back (after.json) is removed after the verify
        "umask 077",
        'echo $$ > "$job/pid"',
        'applied=0',
        'report() { printf \'%s\\n\' "$1" > "$job/status.new" && mv "$job/status.new" "$job/status"; }',
        // jfail <step> <why>: undo the apply, cancel the timer, say why in the status the session reads
        'jfail() { rm -f "$d/after.json"; m="step \'$1\' failed ($2)"; if [ "$applied" = 1 ]; then if sudo config rollback "$cp"; then m="$m; rolled back to the checkpoint"; else m="$m; the rollback failed too, the dead-man timer tries again"; report "failed: $m"; exit 1; fi; fi; sudo systemctl stop "$unit.timer"; sudo config delete-checkpoint "$cp"; report "failed: $m"; exit 1; }',
        'applied=1',
        'sudo config apply-patch "$d/patch.json" || jfail "config apply-patch" "exit $?"',
        'sudo sonic-cfggen -d --print-data > "$d/after.json" || jfail "read CONFIG_DB after the patch" "exit $?"',
        `python3 -c "$PY" verify "$f" "$d/after.json" ${shq(own)} ${shq(ports)} || jfail "verify (CONFIG_DB holds every rendered row)" "exit $?"`,
        'rm -f "$d/after.json"',
        // What the dynamic buffer manager computed: APPL_DB BUFFER_PG_TABLE:<port>:<pg> names the profile it made
        // (`pg_lossless_<speed>_<cable>_profile`), and BUFFER_PROFILE_TABLE:<profile> carries its xoff (the headroom);
        // a lossless PG that got no profile or zero xoff (sonic-net/SONiC#480) drops under pause. source:
        // sonic-net/sonic-swss@e6b0c5b5d2ab:cfgmgr/buffermgrdyn.cpp (updateBufferObjectToDb sets field "profile" on
        // APP_BUFFER_PG_TABLE; updateBufferProfileToDb writes xon/xoff/size/pool on APP_BUFFER_PROFILE_TABLE).
        // Older images wrote the reference as `[BUFFER_PROFILE_TABLE:<name>]`; both forms are read. `sonic-db-cli … HGET`
        // prints the value as it is and an empty line for a missing key or field (confirmed: sonic-net/sonic-swss-common
        // @85a39d8004ad:common/redisreply.cpp formatReply for string/nil replies, as sonic-oper.ts notes). buffermgrd works
        // on a timer (BUFFERMGR_TIMER_PERIOD 10 s there), so this waits up to 60 s (RDMAKIT_HEADROOM_WAIT_S, for tests).
        ...(pgs.length ? [
            `for pg in ${pgs.map(shq).join(" ")}; do`,
            '  n=0; while :; do',
            '    prof=$(sonic-db-cli APPL_DB HGET "BUFFER_PG_TABLE:$pg" profile 2>/dev/null); prof=${prof#[}; prof=${prof%]}; prof=${prof#BUFFER_PROFILE_TABLE:}',
            '    xoff=""; [ -n "$prof" ] && xoff=$(sonic-db-cli APPL_DB HGET "BUFFER_PROFILE_TABLE:$prof" xoff 2>/dev/null)',
            '    case "$xoff" in ""|0|*[!0-9]*) ;; *) break ;; esac',
            '    n=$((n + 2)); [ "$n" -lt "${RDMAKIT_HEADROOM_WAIT_S:-60}" ] || jfail "verify (the buffer manager gave each lossless PG headroom)" "APPL_DB BUFFER_PG_TABLE:$pg has profile \'${prof:-none}\' with xoff \'${xoff:-none}\': no headroom, so PFC cannot keep it lossless"',
            '    sleep 2',
            '  done',
            'done',
        ] : []),
        'sudo config save -y || jfail "config save" "exit $?"',
        'touch "$job/saved"',
        // last: cancel the timer (from here the change is applied and saved, and nothing will undo it)
        'sudo systemctl stop "$unit.timer" || { report "failed: step \'cancel the dead-man timer\' failed (exit $?): it will restore the checkpoint and save it; push again"; exit 1; }',
        'applied=0',
        'sudo config delete-checkpoint "$cp" || echo "rdmakit: could not delete checkpoint $cp" >> "$job/log"',
        'report ok',
    ].join("\n");
}

function sonicScript(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless: boolean, agentKey: boolean): string {
    const cp = `rdmakit-${cfg.digest.slice(0, 12)}`;
    const own = JSON.stringify(SONIC_OWNERSHIP);
    const ports = JSON.stringify(sw.ports.map((p) => p.name));
    const unit = `rdmakit-deadman-${cp}`;
    const remote = [
        ...remotePrelude(cfg, `sudo systemctl stop ${unit}.timer; sudo config delete-checkpoint ${cp}`),
        `PY=${shq(SONIC_PATCH_PY)}`,
        `f="$d/roce-qos.config_db.json"; cp=${shq(cp)}; job="$d/job-$cp"; unit=${shq(unit)}`,
        step("receive the configuration", `cat > "$f.new"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$f.new" | sha256sum -c --quiet -`),
        // Lossless PGs are rendered with profile NULL, which only the dynamic buffer model computes (roce.md §4b);
        // switching models is a `config qos reload` + swss restart, not a patch (roce-operations.md §2), so refuse.
        ...(lossless ? [
            step("read DEVICE_METADATA.localhost.buffer_model", `model=$(sudo sonic-cfggen -d -v DEVICE_METADATA.localhost.buffer_model)`),
            `[ "$model" = dynamic ] || fail "buffer model check" "buffer_model is '$model'; the lossless PGs need the dynamic model (config qos reload, then restart swss)"`,
        ] : []),
        // SU-main: `sonic-cfggen -d --print-data` dumps ConfigDB as config_db JSON (roce-operations.md §1b)
        step("read CONFIG_DB", `sudo sonic-cfggen -d --print-data > "$d/running.json"`),
        // the kit never writes PORT.speed (a wrong speed downs the link); it checks it read-only here
        step("check the port speeds (read-only)", `python3 -c "$PY" speeds "$f.new" "$d/running.json" ${shq(JSON.stringify(Object.fromEntries(sw.ports.map((p) => [p.name, String(p.speedGbps * 1000)]))))} ${shq(ports)}`),
        step("compute the patch", `python3 -c "$PY" patch "$f.new" "$d/running.json" ${shq(own)} ${shq(ports)} > "$d/patch.json"`),
        // the running CONFIG_DB (with the switch's secrets) is not needed past here
        "drop_dumps",
        // GCU-design: checkpoint → apply-patch → on error rollback; apply-patch does not persist (config save -y)
        step("config checkpoint", `sudo config checkpoint "$cp"`),
        `undo="sudo config delete-checkpoint $cp"`,
        // The dry run goes through GCU's whole pipeline (generic_updater.py PatchApplier.apply: validate_field_operation,
        // then YANG), so a PFC_WD change GCU refuses on this platform/image stops the push here, before any change.
        // source: sonic-net/sonic-utilities@691b1bbc4fd2:generic_config_updater/gcu_field_operation_validators.conf.json
        // (PFC_WD: rdma_config_update_validator, per-ASIC minimum image, e.g. spc4 20221100, th5 20240500; unknown ASIC
        // refused) and gu_common.py validate_field_operation (removing /PFC_WD/GLOBAL is always refused)
        `sudo config apply-patch --dry-run "$d/patch.json" > "$d/dry-run.log" 2>&1; rc=$?`,
        `if [ "$rc" -ne 0 ]; then cat "$d/dry-run.log" >&2; ` +
            `if grep -q '"/PFC_WD' "$d/patch.json" && grep -qiE 'PFC_WD|pfcwd|rdma|not (permitted|allowed)|illegal' "$d/dry-run.log"; then ` +
            `fail "config apply-patch --dry-run (YANG validation)" "exit $rc: GCU refuses the PFC watchdog change on this switch (its rdma_config_update_validator allows PFC_WD edits only on listed ASICs from a minimum image, e.g. Spectrum-4 from 202211); nothing was changed"; fi; ` +
            `fail "config apply-patch --dry-run (YANG validation)" "exit $rc"; fi`,
        step("job folder", `rm -rf "$job" && mkdir -p "$job"`),
        step("write the apply job", `printf '%s\\n' ${shq(sonicJob(cfg, sw, lossless))} > "$job/run.sh"`),
        step("write the dead-man", `printf '%s\\n' ${shq(DEADMAN_SH)} > "$job/deadman.sh"`),
        // the dead-man first, then the apply: from here a dropped session, a dead or hung job all end in the rollback
        step(`arm the dead-man timer (${CONFIRM_TIMEOUT_S} s, then config rollback)`, `sudo systemd-run --quiet --unit="$unit" --on-active=${CONFIRM_TIMEOUT_S} /bin/bash "$job/deadman.sh" "$job" "$cp"`),
        `undo="$rollback"`,
        // start the apply job detached from this session (its own session and process group, no terminal, no pipe
        // back to ssh), so neither a dropped session nor sshd's SIGHUP stops it
        `setsid nohup /bin/bash "$job/run.sh" "$job" "$cp" "$d" "$f.new" "$PY" > "$job/log" 2>&1 < /dev/null &`,
        // from here the job owns the rollback: a failure of this session undoes nothing itself
        `undo=""; state="the apply job on the switch goes on; the dead-man timer restores the checkpoint unless it saves"`,
        `n=0; while [ ! -f "$job/status" ] && [ ! -f "$job/deadman" ]; do n=$((n + 1)); [ "$n" -le ${(CONFIRM_TIMEOUT_S + 120) * 5} ] || fail "wait for the apply job" "no result after ${CONFIRM_TIMEOUT_S + 120} s"; sleep 0.2; done`,
        `if [ -f "$job/deadman" ] && [ ! -f "$job/status" ]; then cat "$job/log" >&2; state="the dead-man timer undid the change ($(cat "$job/deadman"))"; fail "apply job" "it did not finish within ${CONFIRM_TIMEOUT_S} s"; fi`,
        `st=$(cat "$job/status")`,
        `if [ "$st" != ok ]; then cat "$job/log" >&2; state="nothing was saved"; fail "apply job" "$st"; fi`,
        step("record the applied file", `mv "$f.new" "$f"`),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
    return [...prelude(cfg, sw, agentKey, ""), ...remotePush(remote)].join("\n");
}

function eosScript(cfg: RenderedSwitchConfig, sw: SwitchPlan, agentKey: boolean): string {
    const session = `rdmakit-${cfg.digest.slice(0, 12)}`;
    // the EOS CLI takes commands on stdin over ssh; `enable` first (a no-op for a privilege-15 login)
    const cli = (name: string, lines: string[]) => [
        `printf '%s\\n' enable ${lines.map(shq).join(" ")} > "$tmp/in"`,
        ...sshStep(name, `"\${sw_ssh[@]}" < "$tmp/in" > "$tmp/out" 2>&1`),
        // the CLI reports a refused line with '% ' and carries on (eos.arista.com, CLI error format; L for the exit status)
        `if grep -q '^% ' "$tmp/out"; then cat "$tmp/out" >&2; fail ${shq(name)} "the switch refused a line"; fi`,
    ];
    return [
        ...prelude(cfg, sw, agentKey, `printf '%s\\n' enable 'configure session ${session} abort' | "\${sw_ssh[@]}"`),
        `{ echo enable; echo ${shq(`configure session ${session}`)}; cat "$tmp/config"; echo end; } > "$tmp/in" || fail "build the session" "exit $?"`,
        // from here a session exists on the switch (perhaps half-staged): abort it on any failure
        `undo="$rollback"`,
        ...sshStep("configure session (stage the configuration)", `"\${sw_ssh[@]}" < "$tmp/in" > "$tmp/out" 2>&1`),
        `if grep -q '^% ' "$tmp/out"; then cat "$tmp/out" >&2; fail "configure session (stage the configuration)" "the switch refused a line"; fi`,
        // EOS-SESS / commit-timer TOI: live now, reverted when the timer ends unless committed again
        ...cli("commit timer", [`configure session ${session}`, "commit timer 00:10:00"]),
        ...cli("verify (session and running config agree)", [`show session-config named ${session} diffs`]),
        `if grep -qE '^[-+][^-+]' "$tmp/out"; then cat "$tmp/out" >&2; fail "verify (session and running config agree)" "the running config differs from the session"; fi`,
        ...cli("confirm (configure session commit)", [`configure session ${session} commit`]),
        `undo=""; state="the change is committed and live, but not saved to startup-config: push again"`,
        // a commit does not write startup-config (NVCM-EOS, roce-operations.md §1c)
        ...cli("copy running-config startup-config", ["copy running-config startup-config"]),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
}

/**
 * The command that applies `cfg` to `sw`, run here (`@pulumi/command` local) under `interpreter`. `agentKey`: the
 * switch key is served to the run (keysocket.ts) and loaded into the run's own ssh-agent; else ssh uses the caller's
 * agent or ssh config. Deleting the resource leaves the switch configured: pulling QoS from a live fabric would drop
 * RoCE traffic.
 */
export function pushCommandFor(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless = true, agentKey = false): PushCommand {
    if (cfg.switch !== sw.name || cfg.os !== sw.os) throw new Error(`pushCommandFor: config for ${cfg.switch}/${cfg.os} given with switch ${sw.name}/${sw.os}`);
    const script = sw.os === "eos" ? eosScript(cfg, sw, agentKey) : sw.os === "sonic" ? sonicScript(cfg, sw, lossless, agentKey) : nvueScript(cfg, sw, agentKey);
    return {
        create: script,
        update: script,
        delete: `echo "rdmakit: leaving the RoCE QoS on ${sw.name} in place (remove it by hand if the fabric is retired)"`,
        stdin: cfg.text,
        environment: { RDMAKIT_CONFIG_DIGEST: cfg.digest },
        interpreter: agentKey ? RUN_INTERPRETER : ["/bin/bash", "-c"],
    };
}

/** Switches in the first batch after the canary: a bad plan that the canary's check missed reaches at most these. */
export const ROLLOUT_BATCH = 8;
/** Each later batch doubles, up to this many switches, so a 384-switch fabric takes 9 stages after the canary, not 48. */
export const ROLLOUT_BATCH_MAX = 64;

/**
 * The order switch pushes run in: the first switch alone (the canary), then the rest in spec order in batches of
 * `batch`, 2 × `batch`, 4 × `batch` … capped at `max` (a wave grows only after a smaller one proved the change). Each
 * stage starts after the previous stage's check (cluster.ts), so exactly one push depends on nothing.
 */
export function rolloutStages(switches: readonly string[], batch = ROLLOUT_BATCH, max = ROLLOUT_BATCH_MAX): string[][] {
    if (!switches.length) return [];
    const stages = [[switches[0]]];
    for (let i = 1, size = batch; i < switches.length; i += size, size = Math.min(max, size * 2)) stages.push(switches.slice(i, i + size));
    return stages;
}
