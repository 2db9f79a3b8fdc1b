#!/bin/bash
# rdmakit: the part of the SONiC push that must not depend on the SSH session (sonic_push.sh starts it detached with
# setsid nohup): apply, verify (CONFIG_DB, then what the buffer manager made of it), save, cancel the dead-man timer
# last. It reports in $job/status, which the session polls; a session that drops leaves it running, and a job that
# dies or hangs is stopped and undone by the timer.
#   run.sh <job folder> <checkpoint> <~/rdmakit> <fragment> <sonic_patch.py> <ownership json> <ports json> <'port:pg …'>
set -u
job=$1; cp=$2; d=$3; f=$4; PY=$5; own=$6; ports=$7; read -ra pgs <<< "$8"
unit="rdmakit-deadman-$cp"
# private files whatever umask the job inherits; CONFIG_DB read back (after.json) is removed after the verify
umask 077
echo $$ > "$job/pid"
applied=0
report() { printf '%s\n' "$1" > "$job/status.new" && mv "$job/status.new" "$job/status"; }
# jfail <step> <why>: undo the apply, cancel the timer, say why in the status the session reads
jfail() {
    rm -f "$d/after.json"
    local m="step '$1' failed ($2)"
    if [ "$applied" = 1 ]; then
        if sudo config rollback "$cp"; then
            m="$m; rolled back to the checkpoint"
        else
            report "failed: $m; the rollback failed too, the dead-man timer tries again"
            exit 1
        fi
    fi
    sudo systemctl stop "$unit.timer"
    sudo config delete-checkpoint "$cp"
    report "failed: $m"
    exit 1
}
applied=1
sudo config apply-patch "$d/patch.json" || jfail "config apply-patch" "exit $?"
# written as the job's user into its private folder, on purpose
# shellcheck disable=SC2024
sudo sonic-cfggen -d --print-data > "$d/after.json" || jfail "read CONFIG_DB after the patch" "exit $?"
python3 -c "$PY" verify "$f" "$d/after.json" "$own" "$ports" || jfail "verify (CONFIG_DB holds every rendered row)" "exit $?"
rm -f "$d/after.json"
# What the dynamic buffer manager computed: APPL_DB BUFFER_PG_TABLE:<port>:<pg> names the profile it made
# (`pg_lossless_<speed>_<cable>_profile`), and BUFFER_PROFILE_TABLE:<profile> carries its xoff (the headroom); a
# lossless PG that got no profile or zero xoff (sonic-net/SONiC#480) drops under pause. source:
# sonic-net/sonic-swss@e6b0c5b5d2ab:cfgmgr/buffermgrdyn.cpp (updateBufferObjectToDb sets field "profile" on
# APP_BUFFER_PG_TABLE; updateBufferProfileToDb writes xon/xoff/size/pool on APP_BUFFER_PROFILE_TABLE). Older images
# wrote the reference as `[BUFFER_PROFILE_TABLE:<name>]`; both forms are read. `sonic-db-cli … HGET` prints the value
# as it is and an empty line for a missing key or field (confirmed: sonic-net/sonic-swss-common@85a39d8004ad:
# common/redisreply.cpp formatReply for string/nil replies, as sonic-oper.ts notes). buffermgrd works on a timer
# (BUFFERMGR_TIMER_PERIOD 10 s there), so this waits up to 60 s (RDMAKIT_HEADROOM_WAIT_S, for tests).
for pg in "${pgs[@]}"; do
    n=0
    while :; do
        prof=$(sonic-db-cli APPL_DB HGET "BUFFER_PG_TABLE:$pg" profile 2>/dev/null); prof=${prof#[}; prof=${prof%]}; prof=${prof#BUFFER_PROFILE_TABLE:}
        xoff=""; [ -n "$prof" ] && xoff=$(sonic-db-cli APPL_DB HGET "BUFFER_PROFILE_TABLE:$prof" xoff 2>/dev/null)
        case "$xoff" in ""|0|*[!0-9]*) ;; *) break ;; esac
        n=$((n + 2))
        [ "$n" -lt "${RDMAKIT_HEADROOM_WAIT_S:-60}" ] || jfail "verify (the buffer manager gave each lossless PG headroom)" "APPL_DB BUFFER_PG_TABLE:$pg has profile '${prof:-none}' with xoff '${xoff:-none}': no headroom, so PFC cannot keep it lossless"
        sleep 2
    done
done
sudo config save -y || jfail "config save" "exit $?"
touch "$job/saved"
# last: cancel the timer (from here the change is applied and saved, and nothing will undo it)
sudo systemctl stop "$unit.timer" || { report "failed: step 'cancel the dead-man timer' failed (exit $?): it will restore the checkpoint and save it; push again"; exit 1; }
applied=0
sudo config delete-checkpoint "$cp" || echo "rdmakit: could not delete checkpoint $cp" >> "$job/log"
report ok
