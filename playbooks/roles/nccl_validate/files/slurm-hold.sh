#!/bin/sh
# Holds the validation's nodes for its all-node runs, on the Slurm head node, as root:
#   slurm-hold.sh <reservation> <nodes: scontrol NodeName list>
# 1. A root-only reservation on the nodes (replacing one an interrupted run left), with no end: until the gate
#    (slurm-gate.sh) deletes it no user's job lands on them, whatever happens to this run.
# 2. The nodes rdmakit drained ("rdmakit..." reasons: not validated yet, an earlier gate, the health program) resumed,
#    so that Slurm can start the validation's job on them inside the reservation. A node an operator drained (another
#    reason) stays drained: srun's --immediate then gives up on it instead of waiting.
# source: https://slurm.schedmd.com/reservations.html (Users=, Flags=MAINT,IGNORE_JOBS, Duration=UNLIMITED);
# https://slurm.schedmd.com/scontrol.html (create/delete reservation, update NodeName= State=RESUME);
# https://slurm.schedmd.com/sinfo.html (-R, -N, -h, -o %n %E, --nodes).
set -eu
res=$1
nodes=$2
if scontrol show reservation "$res" >/dev/null 2>&1; then
    scontrol delete ReservationName="$res"
fi
scontrol create reservation ReservationName="$res" Users=root Nodes="$nodes" StartTime=now Duration=UNLIMITED Flags=MAINT,IGNORE_JOBS
# drained nodes with rdmakit's reasons, one a line; bounded (a line per node of the list)
ours=$(sinfo -h -R -N --nodes="$nodes" -o '%n|%E' | awk -F'|' '$2 ~ /^rdmakit/ { print $1 }' | sort -u | paste -sd, -)
if [ -n "$ours" ]; then
    scontrol update NodeName="$ours" State=RESUME
fi
# 3. Wait, at most 60 s, until slurmctld hears from every node of the run: a node it has flagged not responding (sinfo
#    %t ends in '*': "not responding and will not be allocated any new work", sinfo(1) NODE STATE CODES) makes srun queue
#    and print its own waiting lines into the run's log. Seen on Debian's Slurm after a drain and resume: the nodes
#    were flagged until their next registration, ~1 s after the resume (slurmctld "Node ... now responding").
waited=0
while [ "$waited" -lt 60 ] && sinfo -h -N --nodes="$nodes" -o '%t' | grep -q '[*]$'; do
    sleep 1
    waited=$((waited + 1))
done
echo "reserved $res on $nodes; resumed into it: ${ours:-none}"
