#!/bin/sh
# The validation gate on the Slurm head node, as root: slurm-gate.sh <reservation> <plan file>
# The plan file (components/slurm/gate.ts gateVars, written by the role) has one line per node, tab-separated:
#   resume<TAB><node>             the node passed: back into the partition if rdmakit drained it
#   drain<TAB><node><TAB><reason>  the node failed: drained with the reason (component first)
# A node an operator drained (a reason not starting "rdmakit") keeps its state and reason either way. A node that is
# not drained is not resumed (scontrol refuses to resume an idle node). Nor is one rdmakit drained after the
# validation's reservation began (slurm-hold.sh resumed every rdmakit drain into it): the health program (slurmd's
# HealthCheckProgram) found it failing during the run, after the captures the gate judged, and resuming it would let
# users' jobs land on it until the program's next turn. Then the validation's reservation
# (slurm-hold.sh) goes, so the passed nodes take users' jobs only once the failed ones are drained.
# Prints one line per action; exits non-zero when scontrol refused one.
# source: https://slurm.schedmd.com/scontrol.html (update NodeName= State=RESUME | State=DRAIN Reason=; delete
# ReservationName=); https://slurm.schedmd.com/sinfo.html (-R: drained and down nodes with their reasons; %H the
# reason's timestamp). scontrol's StartTime= and sinfo's %H are both slurm_make_time_str, "%FT%T" unless
# SLURM_TIME_FORMAT says otherwise (src/common/parse_time.c), so they compare as strings.
set -eu
export SLURM_TIME_FORMAT=standard
res=$1
plan=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
tab=$(printf '\t')
# when the validation's reservation began ("" without one: every rdmakit drain counts as before it)
since=$(scontrol show reservation "$res" 2>/dev/null | sed -n 's/.*StartTime=\([0-9T:-]*\).*/\1/p' | head -n 1)
sinfo -h -R -N -o '%n|%H|%E' >"$tmp/drained"
# resume: the plan's passed nodes that rdmakit drained; drain: the failed ones no operator drained (the first file is
# told apart by name, not by FNR == NR, which also holds for the second file when the first is empty)
awk -F'|' -v tab="$tab" -v since="$since" '
    FILENAME == ARGV[1] {
        if ($3 !~ /^rdmakit/) op[$1] = 1
        else if (since != "" && $2 >= since) late[$1] = $3
        else ours[$1] = 1
        next
    }
    { split($0, f, tab) }
    f[1] == "resume" && (f[2] in late) { print "kept (drained during the validation: " late[f[2]] "): " f[2]; next }
    f[1] == "resume" && (f[2] in ours) { print f[2] > "'"$tmp/resume"'"; next }
    f[1] == "resume" && (f[2] in op) { print "kept (drained by an operator): " f[2]; next }
    f[1] == "drain" && (f[2] in op) { print "kept (drained by an operator): " f[2]; next }
    f[1] == "drain" { print f[2] tab f[3] > "'"$tmp/drain"'" }
' "$tmp/drained" "$plan"
rc=0
if [ -s "$tmp/resume" ]; then
    # 200 names a call: scontrol's NodeName list stays a few kilobytes at any size
    xargs -n 200 <"$tmp/resume" | tr ' ' ',' >"$tmp/batches"
    while read -r list; do
        if scontrol update NodeName="$list" State=RESUME; then echo "resumed: $list"; else rc=1; fi
    done <"$tmp/batches"
fi
if [ -s "$tmp/drain" ]; then
    while IFS="$tab" read -r node reason; do
        if scontrol update NodeName="$node" State=DRAIN Reason="$reason"; then echo "drained: $node: $reason"; else rc=1; fi
    done <"$tmp/drain"
fi
if scontrol show reservation "$res" >/dev/null 2>&1; then
    if scontrol delete ReservationName="$res"; then echo "reservation $res deleted"; else rc=1; fi
fi
exit "$rc"
