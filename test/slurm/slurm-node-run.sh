#!/usr/bin/env bash
# Runs Debian's real slurmctld and one real slurmd on this machine with rendered Slurm files, then asks for jobs and
# restarts slurmctld (test/slurm-alloc.test.ts). Usage: slurm-node-run.sh <dir> <node>. <dir> holds slurm.conf (the
# harness's: this machine as controller and node, private ports, paths inside <dir>, SlurmdParameters=config_overrides
# so slurmd reports the node line's CPUs rather than this machine's), gres.conf (File= under <dir>/dev), cgroup.conf,
# `gpus`: one GPU count a line, and `reason`: the reason a node drains itself with before its first slurmd start (the
# slurm role's tasks/predrain.yml). Writes <dir>/out/{before-slurmd,predrained,registered,alloc,before-restart,
# after-restart,operator-drain,operator-after-restart,ctld.log,slurmd.log}.
# Bounded: each wait is at most 20 s, each job 20 s.
set -euo pipefail
dir=$1
node=$2
out="$dir/out"
mkdir -p "$out" "$dir/state" "$dir/spool" "$dir/munge" "$dir/dev"
chmod 0700 "$dir/munge"
# stand-ins for /dev/nvidia<i>: character devices of NVIDIA's major number 195 (devices.txt), which gres/gpu stats
for i in $(seq 0 15); do mknod "$dir/dev/nvidia$i" c 195 "$i"; done
mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 >/dev/null 2>&1
chmod 0400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed"
ctld="" slurmd=""
cleanup() {
    # every step, whatever the one before returned (wait gives a killed daemon's 143, which set -e would stop at)
    set +e
    [ -n "$slurmd" ] && kill "$slurmd" 2>/dev/null && wait "$slurmd" 2>/dev/null
    [ -n "$ctld" ] && kill "$ctld" 2>/dev/null && wait "$ctld" 2>/dev/null
    munged --socket="$dir/munge/sock" --stop >/dev/null 2>&1 || true
    rm -f "$dir/munge/munge.key"
}
trap cleanup EXIT
export SLURM_CONF="$dir/slurm.conf"
wait_for() { # <what> <command...>: true within 20 s, else fail naming it
    local what=$1; shift
    for _ in $(seq 1 40); do "$@" >/dev/null 2>&1 && return 0; sleep 0.5; done
    echo "timed out waiting for $what" >&2; cat "$out/ctld.log" "$out/slurmd.log" >&2 2>/dev/null || true; exit 1
}
# registered: the node's base state is no longer UNKNOWN (scontrol -o show node: "State=IDLE+DRAIN ...")
responding() { scontrol -o show node "$node" | grep -q ' State=IDLE'; }
slurmctld -D -c -f "$dir/slurm.conf" >"$out/ctld.log" 2>&1 &
ctld=$!
wait_for slurmctld scontrol ping
state() { sinfo -h -N -n "$node" -o '%N|%t|%E'; }
# a node line of no State: before any slurmd, slurmctld knows the name and nothing more
state >"$out/before-slurmd"
# the role's drain before the node's first slurmd start (tasks/predrain.yml)
scontrol update NodeName="$node" State=DRAIN Reason="$(cat "$dir/reason")"
state >"$out/predrained"
slurmd -D -N "$node" -f "$dir/slurm.conf" >"$out/slurmd.log" 2>&1 &
slurmd=$!
wait_for "slurmd to register" responding
state >"$out/registered"
# the validation gate's resume (components/slurm/gate.ts)
scontrol update NodeName="$node" State=RESUME
while read -r g; do
    [ -n "$g" ] || continue
    timeout 20 srun --mpi=none -N1 -n1 --gres="gpu:$g" sh -c "echo gpus=$g cpus=\$SLURM_CPUS_ON_NODE" </dev/null >>"$out/alloc"
done <"$dir/gpus"
restart_ctld() {
    kill "$ctld"; wait "$ctld" 2>/dev/null || true
    ctld=""
    slurmctld -D -f "$dir/slurm.conf" >>"$out/ctld.log" 2>&1 &
    ctld=$!
    wait_for "slurmctld again" scontrol ping
    # the running slurmd registers again (a node line of no State shows `unk` until then)
    wait_for "slurmd to register again" responding
}
state >"$out/before-restart"
restart_ctld
state >"$out/after-restart"
# an operator's drain, then a restart: which reason the node keeps
scontrol update NodeName="$node" State=DRAIN Reason="bad DIMM, RMA"
state >"$out/operator-drain"
restart_ctld
state >"$out/operator-after-restart"
