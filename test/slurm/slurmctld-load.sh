#!/usr/bin/env bash
# Loads rendered Slurm files into Debian's real slurmctld, then asks it what it parsed (test/slurm-config.test.ts).
# Usage: slurmctld-load.sh <dir> <port>. <dir> holds slurm.conf (rendered with the harness overrides: this machine
# as controller, a private port, state/log/pid paths and a munge socket inside <dir>), gres.conf, cgroup.conf,
# topology.conf. Writes <dir>/out/{nodes,partitions,topology,ctld.log}. Bounded: slurmctld gets 20 s to answer.
set -euo pipefail
dir=$1
out="$dir/out"
mkdir -p "$out" "$dir/state" "$dir/munge"
chmod 0700 "$dir/munge"
mungekey --create --keyfile="$dir/munge/munge.key" --bits=1024 >/dev/null 2>&1
chmod 0400 "$dir/munge/munge.key"
munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/sock" --pid-file="$dir/munge/pid" \
    --log-file="$dir/munge/log" --seed-file="$dir/munge/seed"
ctld=""
cleanup() {
    [ -n "$ctld" ] && kill "$ctld" 2>/dev/null && wait "$ctld" 2>/dev/null
    munged --socket="$dir/munge/sock" --stop >/dev/null 2>&1 || true
    rm -f "$dir/munge/munge.key"
}
trap cleanup EXIT
export SLURM_CONF="$dir/slurm.conf"
slurmctld -D -c -f "$dir/slurm.conf" >"$out/ctld.log" 2>&1 &
ctld=$!
for _ in $(seq 1 40); do
    if scontrol ping >/dev/null 2>&1; then break; fi
    if ! kill -0 "$ctld" 2>/dev/null; then echo "slurmctld exited:" >&2; cat "$out/ctld.log" >&2; exit 1; fi
    sleep 0.5
done
scontrol ping >/dev/null
scontrol -o show nodes >"$out/nodes"
scontrol -o show partitions >"$out/partitions"
scontrol -o show topology >"$out/topology" 2>&1 || true
scontrol show config >"$out/config"
