#!/bin/bash
# rdmakit: push one switch's rendered RoCE QoS configuration (components/roce/push.ts builds the command line and
# documents the transaction each switch OS gets). Runs here, under `@pulumi/command` local; reaches the switch over
# ssh with the pinned host key only. Every step runs under an explicit check (no `set -e`, no `a && b` chains): a
# failure stops the push with a message naming the switch and the step, and undoes what its stage requires.
#
#   push.sh --os nvue|sonic|eos --switch NAME --address ADDR --port N --user USER --host-key 'TYPE BASE64'
#           --config FILE --config-sha256 HEX --scripts-sha256 HEX --mode lossless|lossy [--priority-group N]
#           [--plan 'WORDS']… [--ports 'P P …']… [--port-speed Mb/s] [--speeds 'P=Mb/s …']…
#           [--key-prelude FILE --key-prelude-sha256 HEX]
#
# --plan: what the config file is made from, in words (push.ts planLines), printed after the apply; nothing is applied
# from it (the config file is).
# --ports and --speeds may repeat (their words add up), so a long port list stays on short lines of the command.
# SONiC: --port-speed is the speed of every port --speeds does not name.
# --key-prelude: the run-key prelude the program kept (components/provision/ansible.ts SSH_KEY_PRELUDE): sourced
# after its digest is checked, it loads the served switch key into this run's own ssh-agent. Without it, ssh uses
# the caller's agent or ssh config.
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd) || exit 1
ports=(); speeds=(); plan=(); port_speed=""; key_prelude=""; key_prelude_sha=""; pg=""
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "rdmakit push.sh: $1 needs a value" >&2; exit 2; }
    case "$1" in
        --os) os=$2 ;;
        --switch) sw=$2 ;;
        --address) addr=$2 ;;
        --port) port=$2 ;;
        --user) user=$2 ;;
        --host-key) host_key=$2 ;;
        --config) config=$2 ;;
        --config-sha256) digest=$2 ;;
        --scripts-sha256) scripts_sha=$2 ;;
        --mode) mode=$2 ;;
        --priority-group) pg=$2 ;;
        # word splitting on purpose: each value is a list of port names (or port=speed pairs), no spaces inside one
        --ports) read -ra more <<< "$2"; ports+=("${more[@]}") ;;
        --speeds) read -ra more <<< "$2"; speeds+=("${more[@]}") ;;
        --port-speed) port_speed=$2 ;;
        --plan) plan+=("$2") ;;
        --key-prelude) key_prelude=$2 ;;
        --key-prelude-sha256) key_prelude_sha=$2 ;;
        *) echo "rdmakit push.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
for v in os sw addr port user host_key config digest scripts_sha mode; do
    [ -n "${!v:-}" ] || { echo "rdmakit push.sh: a required option is missing ($v)" >&2; exit 2; }
done

# Seconds a change stays live unconfirmed before NVUE / EOS revert it by themselves, and before the SONiC dead-man
# timer restores the checkpoint: long enough for the verify over a slow management network, short enough that a push
# that died mid-way heals within minutes.
CONFIRM_S=600
# ssh's own limits, so a silent switch fails the push instead of hanging it: TCP connect, then keep-alives.
CONNECT_S=20; ALIVE_S=15; ALIVE_MAX=4

# The files this push runs, as components/roce/push.ts pushScripts() lists them: their digest is in the command's
# inputs, so a changed script is a changed push, and a copy that differs from the planned one runs nothing.
case "$os" in
    nvue) files=(push.sh nvue_push.sh nvue_verify.py nvue_autosave.py nvue_owned_paths.py) ;;
    sonic) files=(push.sh sonic_push.sh sonic_job.sh sonic_deadman.sh sonic_patch.py sonic_ownership.json) ;;
    eos) files=(push.sh) ;;
    *) echo "rdmakit push.sh: --os $os is not nvue, sonic or eos" >&2; exit 2 ;;
esac
got=$(cd "$here" && sha256sum "${files[@]}" | sha256sum) || { echo "rdmakit: $sw: the push scripts in $here cannot be read" >&2; exit 1; }
if [ "${got%% *}" != "$scripts_sha" ]; then echo "rdmakit: $sw: the push scripts in $here are not the planned ones (sha256 ${got%% *}, the plan has $scripts_sha); run pulumi up again" >&2; exit 1; fi

if [ -n "$key_prelude" ]; then
    if ! echo "$key_prelude_sha  $key_prelude" | sha256sum -c --quiet - >&2; then echo "rdmakit: $sw: the key prelude $key_prelude is not the planned one; run pulumi up again" >&2; exit 1; fi
    # defines tmp, child, cleanup and the traps as below, and loads the served key into this run's agent
    # shellcheck disable=SC1090
    . "$key_prelude"
else
    # bash (dash runs no EXIT trap on a signal), a private temporary folder, and traps that stop the running ssh and
    # remove the folder on INT/TERM/HUP
    set -u -o pipefail
    umask 077
    tmp=$(mktemp -d) || exit 1
    child=""
    cleanup() { trap - EXIT INT TERM HUP; if [ -n "$child" ]; then kill -TERM "$child" 2>/dev/null; fi; rm -rf "$tmp"; }
    trap cleanup EXIT
    trap 'cleanup; exit 129' HUP
    trap 'cleanup; exit 130' INT
    trap 'cleanup; exit 143' TERM
fi

# fail <step> <why>: stop, undo what the step's stage requires, say which switch and step
undo=""; state="nothing was saved or confirmed"
fail() {
    if [ -n "$undo" ]; then
        echo "rdmakit: $sw: rolling back ($undo)" >&2
        eval "$undo" >&2 9>&- || echo "rdmakit: $sw: the rollback failed too; check the switch by hand" >&2
    fi
    echo "rdmakit: $sw: step '$1' failed ($2); $state" >&2
    exit 1
}
# run_child <stdin file> <command…>: the command as this run's child, so a trapped signal stops it at once (bash runs
# a trap only after the foreground command ends; `wait` returns at the signal); sets rc. Its stdin is named here: a
# background command without a redirect of its own reads /dev/null. A switch is untrusted: what it answers goes to a
# file here, at most ANSWER_KIB (bash's `ulimit -f` counts 1024-byte blocks); the writer past it gets SIGXFSZ and
# ends with 128 + 25 = 153 (signal(7)), so a switch answering without end cannot fill this machine's disk.
ANSWER_KIB=65536
run_child() { local in=$1; shift; ( ulimit -f "$ANSWER_KIB" && exec "$@" ) < "$in" 9>&- & child=$!; wait "$child"; rc=$?; child=""; }
# too_much <step>: fails the step when the last run_child was stopped at the answer limit
too_much() { if [ "$rc" -eq 153 ]; then fail "$1" "the switch answered more than $ANSWER_KIB KiB: stopped at the file size limit (or its command exited 153)"; fi; }
# shown <file> [fd]: what a switch said, as untrusted text on this run's stderr (or fd 1): its last 64 KiB, control
# characters but tab and newline taken out (an escape sequence from a switch never reaches a terminal). C0 and DEL go
# with tr; then sed keeps only well-formed UTF-8 (RFC 3629 section 4, the UTF8-octets grammar) other than the C1
# controls U+0080-U+009F (0xC2 0x80-0x9F; U+009B is CSI, ECMA-48 section 5.2), and drops every other byte at or above
# 0x80: a C1 control sent as one byte (0x9B, CSI to an 8-bit terminal) or a broken sequence. In the C locale a bracket
# range is a range of byte values; POSIX's longest match makes a whole sequence win over its lead byte alone.
UTF8_SHOWN=$'(\xc2[\xa0-\xbf]|[\xc3-\xdf][\x80-\xbf]|\xe0[\xa0-\xbf][\x80-\xbf]|[\xe1-\xec\xee\xef][\x80-\xbf][\x80-\xbf]|\xed[\x80-\x9f][\x80-\xbf]|\xf0[\x90-\xbf][\x80-\xbf][\x80-\xbf]|[\xf1-\xf3][\x80-\xbf][\x80-\xbf][\x80-\xbf]|\xf4[\x80-\x8f][\x80-\xbf][\x80-\xbf])|[\x80-\xff]'
shown() { tail -c 65536 "$1" | LC_ALL=C tr -d '\000-\010\013-\037\177' | LC_ALL=C sed -E "s/$UTF8_SHOWN/\\1/g" >&"${2:-2}"; }

# a copy, so the text checked is the text sent even if the kept file changes meanwhile
cp "$config" "$tmp/config" || fail "read the configuration $config" "exit $?"
echo "$digest  $tmp/config" | sha256sum -c --quiet - || fail "digest check" "exit $?"
# the switch is trusted only with the key the spec pins: no first-contact trust, no global known_hosts
if [ "$port" = 22 ]; then known=$addr; else known="[$addr]:$port"; fi
printf '%s %s\n' "$known" "$host_key" > "$tmp/known_hosts" || fail "write the pinned host key" "exit $?"
# every ssh: batch mode, the pinned key only, a connect timeout and keep-alives (a silent switch fails, never hangs).
# An array, not a function: `"${sw_ssh[@]}" … &` is ssh itself, so the trap's kill of $child stops ssh (a function
# run in the background is a subshell whose ssh would outlive that kill).
sw_ssh=(ssh -T -o ForwardAgent=no -o ClearAllForwardings=yes -o BatchMode=yes -o StrictHostKeyChecking=yes
    -o UserKnownHostsFile="$tmp/known_hosts" -o GlobalKnownHostsFile=/dev/null
    -o ConnectTimeout="$CONNECT_S" -o ServerAliveInterval="$ALIVE_S" -o ServerAliveCountMax="$ALIVE_MAX"
    -p "$port" "$user@$addr")

# q <word>: the word single-quoted for the switch's login shell
q() { printf "'%s'" "${1//\'/\'\\\'\'}"; }

# NVUE and SONiC: <os>_push.sh runs on the switch (bash), sent as the ssh command with its arguments (the helper
# programs among them: the switch gets nothing but this one command) and the configuration on its stdin. It prints
# its own step failures (shown once the session ends); ssh's own failures are exit 255.
remote_push() {
    local script=$1 cmd a; shift
    cmd="bash -c $(q "$(cat "$here/$script")") rdmakit-push"
    for a in "$@"; do cmd+=" $(q "$a")"; done
    run_child "$tmp/config" "${sw_ssh[@]}" "$cmd" > "$tmp/remote.out" 2> "$tmp/remote.err"
    too_much "run $script on the switch"
    shown "$tmp/remote.out" 1
    shown "$tmp/remote.err"
    if [ "$rc" -eq 255 ]; then fail "ssh to the switch" "ssh exit 255: unreachable, no answer within $CONNECT_S s, a host key other than the pinned one, or the login refused"; fi
    if [ "$rc" -ne 0 ]; then echo "rdmakit: $sw: the push failed on the switch (exit $rc); see the messages above" >&2; exit 1; fi
}

case "$os" in
    nvue)
        remote_push nvue_push.sh "$sw" "$digest" "$CONFIRM_S" "${ports[*]}" \
            "$(cat "$here/nvue_verify.py")" "$(cat "$here/nvue_autosave.py")" "$(cat "$here/nvue_owned_paths.py")"
        ;;
    sonic)
        # every port's planned speed: the ones named, else --port-speed
        declare -A named=()
        for s in "${speeds[@]}"; do named[${s%%=*}]=${s#*=}; done
        all_speeds=()
        for p in "${ports[@]}"; do
            s=${named[$p]:-$port_speed}
            [ -n "$s" ] || fail "arguments" "no speed for port $p (--port-speed or --speeds)"
            all_speeds+=("$p=$s")
        done
        pgs=()
        if [ "$mode" = lossless ]; then
            [ -n "$pg" ] || fail "arguments" "--priority-group is required with --mode lossless"
            for p in "${ports[@]}"; do pgs+=("$p:$pg"); done
        fi
        remote_push sonic_push.sh "$sw" "$digest" "$CONFIRM_S" "$mode" "${ports[*]}" "${all_speeds[*]}" "${pgs[*]}" \
            "$(cat "$here/sonic_patch.py")" "$(cat "$here/sonic_job.sh")" "$(cat "$here/sonic_deadman.sh")" "$(cat "$here/sonic_ownership.json")"
        ;;
    eos)
        # the EOS login shell is the CLI: it takes commands on stdin over ssh; `enable` first (a no-op for a
        # privilege-15 login). The CLI reports a refused line with '% ' and carries on (eos.arista.com, CLI error
        # format), so each call's output is read for it.
        session="rdmakit-${digest:0:12}"
        # cli <step> <line>…: one CLI call, checked
        cli() {
            local name=$1; shift
            printf '%s\n' enable "$@" > "$tmp/in" || fail "$name" "exit $?"
            run_child "$tmp/in" "${sw_ssh[@]}" > "$tmp/out" 2>&1
            too_much "$name"
            [ "$rc" -eq 0 ] || fail "$name" "ssh exit $rc"
            if grep -q '^% ' "$tmp/out"; then shown "$tmp/out"; fail "$name" "the switch refused a line"; fi
        }
        rollback() { printf '%s\n' enable "configure session $session abort" | "${sw_ssh[@]}"; }
        { echo enable; echo "configure session $session"; cat "$tmp/config"; echo end; } > "$tmp/in" || fail "build the session" "cannot write $tmp/in"
        # from here a session exists on the switch (perhaps half-staged): abort it on any failure
        undo="rollback"
        run_child "$tmp/in" "${sw_ssh[@]}" > "$tmp/out" 2>&1
        too_much "configure session (stage the configuration)"
        [ "$rc" -eq 0 ] || fail "configure session (stage the configuration)" "ssh exit $rc"
        if grep -q '^% ' "$tmp/out"; then shown "$tmp/out"; fail "configure session (stage the configuration)" "the switch refused a line"; fi
        # EOS-SESS / commit-timer TOI: live now, reverted when the timer ends unless committed again
        cli "commit timer" "configure session $session" "commit timer $(printf '%02d:%02d:%02d' $((CONFIRM_S / 3600)) $((CONFIRM_S / 60 % 60)) $((CONFIRM_S % 60)))"
        cli "verify (session and running config agree)" "show session-config named $session diffs"
        if grep -qE '^[-+][^-+]' "$tmp/out"; then shown "$tmp/out"; fail "verify (session and running config agree)" "the running config differs from the session"; fi
        cli "confirm (configure session commit)" "configure session $session commit"
        undo=""; state="the change is committed and live, but not saved to startup-config: push again"
        # a commit does not write startup-config (NVCM-EOS, roce-operations.md §1c)
        cli "copy running-config startup-config" "copy running-config startup-config"
        echo "rdmakit: applied $digest to $sw"
        ;;
esac
# what the applied text is made from, as the plan says it (push.ts planLines): the run's log shows the values live now
for line in "${plan[@]}"; do echo "rdmakit: $sw: $line"; done
