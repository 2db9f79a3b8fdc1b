#!/bin/bash
# rdmakit: the part of a SONiC push that runs on the switch (push.sh sends it as the ssh command, the rendered
# config_db.json fragment on stdin). components/roce/push.ts documents the transaction:
#   sonic_push.sh <switch> <sha256> <confirm seconds> <lossless|lossy> <'port …'> <'port=Mb/s …'> <'port:pg …'>
#                 <sonic_patch.py> <sonic_job.sh> <sonic_deadman.sh> <sonic_ownership.json>
# refuse a switch on the traditional buffer model, compute an RFC 6902 patch against the running CONFIG_DB that
# replaces the kit's rows (sonic_patch.py), `config checkpoint`, `config apply-patch --dry-run` (YANG validation),
# then, armed with a dead-man timer that restores the checkpoint, the apply job (sonic_job.sh) detached from this
# session: apply, verify, save, cancel the timer.
# The reads of CONFIG_DB run as root and write into the login user's private ~/rdmakit as that user, on purpose:
# shellcheck disable=SC2024
set -u
# The switch's login umask (often 022) would leave ~/rdmakit and the dumps readable by every local user: the running
# CONFIG_DB holds TACACS/RADIUS keys and SNMP communities. Private from here.
umask 077
sw=$1; digest=$2; confirm_s=$3; mode=$4; ports=$5; speeds=$6; pgs=$7; PY=$8; job_sh=$9; deadman_sh=${10}; own=${11}
d="$HOME/rdmakit"
cp="rdmakit-${digest:0:12}"; unit="rdmakit-deadman-$cp"; f="$d/roce-qos.config_db.json"; job="$d/job-$cp"
# the switch's state read back (the running CONFIG_DB, with the switch's secrets): removed once read, and on every failure
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
cat > "$f.new" || fail "receive the configuration" "exit $?"
echo "$digest  $f.new" | sha256sum -c --quiet - || fail "digest check" "exit $?"
# the lists as the JSON sonic_patch.py takes: the port names, and {port: "Mb/s"}
json_ports=$(python3 -c 'import json, sys; print(json.dumps(sys.argv[1].split()))' "$ports") || fail "read the port list" "exit $?"
json_speeds=$(python3 -c 'import json, sys; print(json.dumps(dict(a.split("=", 1) for a in sys.argv[1].split())))' "$speeds") || fail "read the port speeds" "exit $?"
# Lossless PGs are rendered with profile NULL, which only the dynamic buffer model computes (roce.md §4b); switching
# models is a `config qos reload` + swss restart, not a patch (roce-operations.md §2), so refuse.
if [ "$mode" = lossless ]; then
    model=$(sudo sonic-cfggen -d -v DEVICE_METADATA.localhost.buffer_model) || fail "read DEVICE_METADATA.localhost.buffer_model" "exit $?"
    [ "$model" = dynamic ] || fail "buffer model check" "buffer_model is '$model'; the lossless PGs need the dynamic model (config qos reload, then restart swss)"
fi
# SU-main: `sonic-cfggen -d --print-data` dumps ConfigDB as config_db JSON (roce-operations.md §1b)
sudo sonic-cfggen -d --print-data > "$d/running.json" || fail "read CONFIG_DB" "exit $?"
# the kit never writes PORT.speed (a wrong speed downs the link); it checks it read-only here
python3 -c "$PY" speeds "$f.new" "$d/running.json" "$json_speeds" "$json_ports" || fail "check the port speeds (read-only)" "exit $?"
python3 -c "$PY" patch "$f.new" "$d/running.json" "$own" "$json_ports" > "$d/patch.json" || fail "compute the patch" "exit $?"
# the running CONFIG_DB (with the switch's secrets) is not needed past here
drop_dumps
# GCU-design: checkpoint → apply-patch → on error rollback; apply-patch does not persist (config save -y)
sudo config checkpoint "$cp" || fail "config checkpoint" "exit $?"
undo="sudo config delete-checkpoint $cp"
# The dry run goes through GCU's whole pipeline (generic_updater.py PatchApplier.apply: validate_field_operation, then
# YANG), so a PFC_WD change GCU refuses on this platform/image stops the push here, before any change.
# source: sonic-net/sonic-utilities@691b1bbc4fd2:generic_config_updater/gcu_field_operation_validators.conf.json
# (PFC_WD: rdma_config_update_validator, per-ASIC minimum image, e.g. spc4 20221100, th5 20240500; unknown ASIC
# refused) and gu_common.py validate_field_operation (removing /PFC_WD/GLOBAL is always refused)
sudo config apply-patch --dry-run "$d/patch.json" > "$d/dry-run.log" 2>&1; rc=$?
if [ "$rc" -ne 0 ]; then
    cat "$d/dry-run.log" >&2
    if grep -q '"/PFC_WD' "$d/patch.json" && grep -qiE 'PFC_WD|pfcwd|rdma|not (permitted|allowed)|illegal' "$d/dry-run.log"; then
        fail "config apply-patch --dry-run (YANG validation)" "exit $rc: GCU refuses the PFC watchdog change on this switch (its rdma_config_update_validator allows PFC_WD edits only on listed ASICs from a minimum image, e.g. Spectrum-4 from 202211); nothing was changed"
    fi
    fail "config apply-patch --dry-run (YANG validation)" "exit $rc"
fi
rm -rf "$job" || fail "job folder" "exit $?"
mkdir -p "$job" || fail "job folder" "exit $?"
printf '%s\n' "$job_sh" > "$job/run.sh" || fail "write the apply job" "exit $?"
printf '%s\n' "$deadman_sh" > "$job/deadman.sh" || fail "write the dead-man" "exit $?"
# The dead-man first, then the apply: from here a dropped session, a dead or hung job all end in the rollback. A
# transient systemd timer (`systemd-run --on-active=<s> --unit=<name>`, systemd-run(1): "a transient .timer unit ...
# the transient service unit will be started when the transient timer is elapsed"; `systemctl stop <name>.timer`
# cancels it) runs sonic_deadman.sh as root: stop the apply job, `config rollback <checkpoint>` (GCU-design:
# checkpoint → apply-patch → rollback, roce-operations.md §1b), and save again if the job had saved. A transient unit
# does not survive a reboot, and a reboot loads the saved configuration, which the job writes only after every check.
sudo systemd-run --quiet --unit="$unit" --on-active="$confirm_s" /bin/bash "$job/deadman.sh" "$job" "$cp" || fail "arm the dead-man timer ($confirm_s s, then config rollback)" "exit $?"
undo="sudo systemctl stop $unit.timer; sudo config delete-checkpoint $cp"
# Start the apply job detached from this session (its own session and process group, no terminal, no pipe back to
# ssh), so neither a dropped session nor sshd's SIGHUP stops it.
setsid nohup /bin/bash "$job/run.sh" "$job" "$cp" "$d" "$f.new" "$PY" "$own" "$json_ports" "$pgs" > "$job/log" 2>&1 < /dev/null &
# from here the job owns the rollback: a failure of this session undoes nothing itself
undo=""; state="the apply job on the switch goes on; the dead-man timer restores the checkpoint unless it saves"
n=0
while [ ! -f "$job/status" ] && [ ! -f "$job/deadman" ]; do
    n=$((n + 1))
    [ "$n" -le $(((confirm_s + 120) * 5)) ] || fail "wait for the apply job" "no result after $((confirm_s + 120)) s"
    sleep 0.2
done
if [ -f "$job/deadman" ] && [ ! -f "$job/status" ]; then
    cat "$job/log" >&2
    state="the dead-man timer undid the change ($(cat "$job/deadman"))"
    fail "apply job" "it did not finish within $confirm_s s"
fi
st=$(cat "$job/status")
if [ "$st" != ok ]; then cat "$job/log" >&2; state="nothing was saved"; fail "apply job" "$st"; fi
mv "$f.new" "$f" || fail "record the applied file" "exit $?"
echo "rdmakit: applied $digest to $sw"
