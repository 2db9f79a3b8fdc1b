#!/bin/bash
# rdmakit: the SONiC dead-man (components/roce/push.ts DEADMAN_SH documents it), run as root by a transient systemd
# timer: deadman.sh <job folder> <checkpoint>. Stops the apply job, restores the checkpoint, saves again if the job had.
job=$1; cp=$2
echo "dead-man timer fired at $(date -u +%FT%TZ)" >> "$job/log"
# the job runs in a session of its own (setsid): its process group id is its pid
if [ -f "$job/pid" ]; then kill -TERM -- "-$(cat "$job/pid")" 2>/dev/null; fi
if config rollback "$cp"; then echo "rolled back to $cp" > "$job/deadman"; else echo "rollback to $cp failed" > "$job/deadman"; fi
if [ -f "$job/saved" ]; then config save -y; fi
