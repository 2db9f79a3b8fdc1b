#!/bin/bash
# rdmakit: the part of an NVUE push that runs on the switch (push.sh sends it as the ssh command, the rendered
# `nv config patch` file on stdin). components/roce/push.ts documents the transaction:
#   nvue_push.sh <switch> <sha256> <confirm seconds> <'port …'> <verify.py> <autosave.py> <owned_paths.py>
# discard stale pending edits, turn auto-save off for the push window (an unconfirmed apply must not reach
# startup.yaml), drop the kit's QoS objects and the qos of the ports an earlier push owned, patch, `nv config apply
# --confirm` (reverts by itself unless confirmed), verify the applied tree and what switchd runs, confirm, save, put
# the operator's auto-save setting back (also after a rollback; a push that died leaves it recorded on the switch for
# the next push to restore).
set -u
# The switch's login umask (often 022) would leave ~/rdmakit and the dumps readable by every local user. Private.
umask 077
sw=$1; digest=$2; confirm_s=$3; read -ra ports <<< "$4"; verify=$5; autosave=$6; paths=$7
d="$HOME/rdmakit"
# the switch's state read back for the verify: removed once the verify read it, and on every failure
drop_dumps() { rm -f "$d/applied.json" "$d/roce-oper.json" "$d/running.json" "$d/after.json"; }
undo=""; state="nothing was saved or confirmed"
fail() {
    drop_dumps
    if [ -n "$undo" ]; then
        echo "rdmakit: $sw: rolling back ($undo)" >&2
        eval "$undo" >&2 || echo "rdmakit: $sw: the rollback failed too; check the switch by hand" >&2
    fi
    echo "rdmakit: $sw: step '$1' failed ($2); $state" >&2
    exit 1
}
mkdir -p "$d" || fail "mkdir ~/rdmakit" "exit $?"
# a folder an earlier push (or the login umask) left 755 is made private too
chmod 700 "$d" || fail "make ~/rdmakit private (0700)" "exit $?"
f="$d/roce-qos.nvue.yaml"; owned="$d/roce-qos.ports"
cat > "$f.new" || fail "receive the configuration" "exit $?"
echo "$digest  $f.new" | sha256sum -c --quiet - || fail "digest check" "exit $?"
# Pending edits someone left would ride along with this apply. source: NVUE-REF `nv config detach` ("discards all
# pending changes since the last apply") — roce-operations.md §1a
nv config detach || fail "nv config detach (discard stale pending changes)" "exit $?"
undo="nv config detach"
# Auto-save (on by default from CL 5.9) makes an apply write startup.yaml at once, and NVIDIA's docs do not say that
# `--confirm` defers that save (NVUE-REF "nv config apply": 5.9+ "automatically saves"; --confirm only rolls back): an
# unconfirmed change could survive a reboot. So the kit turns it off for the push window, as its own apply of that
# one setting, and puts the operator's setting back after the save, and after a rollback. The operator's setting is
# kept in a file on the switch until it is restored, so a push that died in between (the confirm timer reverts to
# the revision with auto-save off) is healed by the next push.
nv show system config auto-save -o json > "$d/auto-save.json" || fail "read nv show system config auto-save -o json" "exit $?"
as=$(python3 -c "$autosave" "$d/auto-save.json") || fail "read the auto-save setting" "exit $?"
if [ -f "$d/auto-save.orig" ]; then as=$(cat "$d/auto-save.orig"); fi
# restore_autosave: the operator's setting back, applied (with auto-save on, that apply saves startup.yaml)
restore_autosave() {
    [ -f "$d/auto-save.orig" ] || return 0
    # two words (`state enabled`, `enable on`): split on purpose
    # shellcheck disable=SC2046
    nv set system config auto-save $(cat "$d/auto-save.orig") || return 1
    nv config apply -y || return 1
    rm -f "$d/auto-save.orig"
}
# the rollback of a live change, then the operator's auto-save setting back
rollback_live() { nv config apply --confirm-no -y || return 1; restore_autosave; }
case "$as" in "state enabled"|"enable on")
    printf '%s\n' "$as" > "$d/auto-save.orig" || fail "record the auto-save setting" "exit $?"
    undo="nv config detach; restore_autosave"
    key=${as%% *}
    if [ "$key" = state ]; then off=disabled; else off=off; fi
    nv set system config auto-save "$key" "$off" || fail "turn auto-save off for the push" "exit $?"
    nv config apply -y > "$d/apply-autosave.log" 2>&1 || { rc=$?; cat "$d/apply-autosave.log" >&2; fail "nv config apply -y (auto-save off)" "exit $rc"; } ;;
esac
# The kit owns the QoS objects its files set (this one and the last one it applied), and its ports' qos: unset those,
# then patch, replaces them (a moved priority leaves nothing behind) and leaves every other QoS setting of the
# operator alone. Separate commands: one patch must not set and unset the same object (NVUE-CLI, §1a).
python3 -c "$paths" "$f.new" "$f" > "$d/owned-paths" || fail "list the QoS objects the kit owns" "exit $?"
# each line is an `nv unset` path of several words: split on purpose
# shellcheck disable=SC2086
while read -r p; do [ -n "$p" ] || continue; nv unset $p || fail "nv unset $p" "exit $?"; done < "$d/owned-paths"
if [ -f "$owned" ]; then
    while read -r p; do [ -n "$p" ] || continue; nv unset interface "$p" qos || fail "nv unset interface $p qos" "exit $?"; done < "$owned"
fi
nv config patch "$f.new" || fail "nv config patch" "exit $?"
# --confirm: live, reverted unless confirmed (NVUE-REF: "nv config apply --confirm 60 requires you to confirm within
# one hour"; an explicit unit as the 5.14 CLI page writes it, roce-operations.md §1a).
nv config apply --confirm "${confirm_s}s" -y > "$d/apply.log" 2>&1 || fail "nv config apply --confirm ${confirm_s}s" "exit $?"
undo="rollback_live"
# apply can print errors and still exit 0 (github.com/ipspace/netlab/pull/1726, roce-operations.md §1a)
if grep -qiE '(^|[^a-z])(error|invalid)' "$d/apply.log"; then cat "$d/apply.log" >&2; fail "nv config apply --confirm ${confirm_s}s" "it printed an error"; fi
nv config show -o json > "$d/applied.json" || fail "read the applied configuration" "exit $?"
python3 -c "$verify" "$f.new" "$d/applied.json" || fail "verify (the applied configuration holds every rendered value)" "exit $?"
# what switchd runs, not only what NVUE accepted: `nv show qos roce -o json` (CL-RoCE / CL-QoS "Verify",
# roce-operations.md §3: each `nv show` takes -o json; applied vs operational differ when an apply did not take)
nv show qos roce -o json > "$d/roce-oper.json" || fail "read the operational RoCE state" "exit $?"
python3 -c "$verify" --roce "$f.new" "$d/roce-oper.json" || fail "verify (the switch operates the rendered RoCE mode)" "exit $?"
drop_dumps
# Confirming form: `nv config apply --confirm-yes` (NAPALM Cumulus driver napalm_cumulus/cumulus.py confirm_commit;
# NVIDIA's own NVOS test constants list --confirm-yes / --confirm-no / --confirm-status beside -y / --assume-yes
# (sonic-net/sonic-mgmt ngts nvos constants, ConfigConsts); NVIDIA's docs show only --confirm <time> and
# --confirm-status: roce-operations.md §1a, M)
nv config apply --confirm-yes -y || fail "nv config apply --confirm-yes" "exit $?"
# from here nothing is rolled back; a failure still puts the operator's auto-save back (with it on, that apply saves)
undo="restore_autosave"; state="the change is confirmed and live, but not saved: push again"
# NVUE-REF: from 5.9 auto-save makes apply write startup.yaml by itself; `nv config save` covers 5.8 and earlier and
# an auto-save someone turned off
nv config save || fail "nv config save" "exit $?"
state="the change is confirmed, live and saved, but auto-save is still off: run nv set system config auto-save $(cat "$d/auto-save.orig" 2>/dev/null) and nv config apply -y, or push again"
restore_autosave || fail "restore the operator's auto-save setting" "exit $?"
state="the change is confirmed, live and saved"
mv "$f.new" "$f" || fail "record the applied file" "exit $?"
printf '%s\n' "${ports[@]}" > "$owned" || fail "record the owned ports" "exit $?"
echo "rdmakit: applied $digest to $sw"
