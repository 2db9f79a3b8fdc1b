#!/bin/bash
# What Open MPI's launcher does per node with tree spawn off (README "At 1,000 nodes"): mpirun with a stand-in for
# ssh (--mca plm_rsh_agent) that logs each call and starts the orted on this machine instead, for growing "node"
# counts; prints the agent calls (one per node) and mpirun's own CPU (perf stat -i: the mpirun process only, not
# the agents or daemons). Needs mpirun (Open MPI) and perf; not part of npm test.   bench/mpirun-launch.sh [N...]
set -euo pipefail
D=$(mktemp -d); trap 'rm -rf "$D"' EXIT
cat >"$D/agent" <<AGENT
#!/bin/sh
echo "\$1" >>"$D/calls"
shift
exec sh -c "\$*"
AGENT
chmod +x "$D/agent"
mpirun --version | head -1
[ $# -gt 0 ] || set -- 4 16
for n in "$@"; do
    rm -f "$D/calls"
    hosts=$(seq -f "h%04g" 1 "$n" | paste -sd,)
    timeout 120 perf stat -i -e task-clock -x, -o "$D/perf" mpirun --allow-run-as-root --oversubscribe --mca plm_rsh_agent "$D/agent" \
        --mca plm_rsh_no_tree_spawn 1 -H "$hosts" -np "$n" --map-by node true 2>/dev/null
    echo "$n nodes: $(wc -l <"$D/calls") agent calls, mpirun's own CPU $(tail -1 "$D/perf" | cut -d, -f1) ms"
done
