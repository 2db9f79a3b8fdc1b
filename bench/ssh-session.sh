#!/bin/bash
# What one SSH session through the bastion hop costs the controller's CPU (README "Node software on the nodes", the
# fan-out's key exchange; components/provision/fanout.ts kexPreference): two nspawn test hosts (test/hosts/testhost.sh,
# 127.0.28.1 as the bastion, 127.0.28.2 as the node), the hop's shared master made first as the fan-out makes it, then
# sessions counted in a cpuacct cgroup of their own: the default key exchange, curve25519, a session carrying a
# bundle-sized stdin. Root only; not part of npm test.   bench/ssh-session.sh [sessions per case, default 10]
set -euo pipefail
N=${1:-10}
ROOT=$(cd "$(dirname "$0")/.." && pwd); H=$ROOT/test/hosts/testhost.sh
mkdir -p "$ROOT/.testhosts"; D=$(mktemp -d "$ROOT/.testhosts/ssh-session-XXXX")
G=/sys/fs/cgroup/cpuacct/rdmakit-ssh-session-$$
port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
cleanup() {
    set +e
    for s in "${CP:-/nonexistent}"/*; do [ -S "$s" ] && ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1; done
    [ -n "${CP:-}" ] && rm -rf "$CP"
    [ -n "${SSH_AGENT_PID:-}" ] && kill "$SSH_AGENT_PID"
    "$H" down "$D" xb1 >/dev/null 2>&1; "$H" down "$D" xn1 >/dev/null 2>&1
    if [ -d "$G" ]; then for p in $(cat "$G/cgroup.procs"); do echo "$p" >/sys/fs/cgroup/cpuacct/cgroup.procs; done; rmdir "$G"; fi
    rm -rf "$D"
}
trap cleanup EXIT
ssh-keygen -q -t ed25519 -N "" -f "$D/id"
P1=$(port); P2=$(port)
"$H" up "$ROOT/.testhosts" "$D" xb1 "$P1" "$D/id.pub" 127.0.28.1 >/dev/null
"$H" up "$ROOT/.testhosts" "$D" xn1 "$P2" "$D/id.pub" 127.0.28.2 >/dev/null
eval "$(ssh-agent -s)" >/dev/null; ssh-add -q "$D/id"
CP=$(mktemp -d /tmp/rk-XXXX)   # short: a unix socket path has at most 107 bytes
KH=(-o StrictHostKeyChecking=no -o UserKnownHostsFile="$D/kh")
PROXY="ProxyCommand=ssh -o ControlMaster=auto -o ControlPersist=30m -o ControlPath=$CP/jump-%%C -W %h:%p -p $P1 ${KH[*]} root@127.0.28.1"
SSH=(ssh -T -o ControlMaster=no -o ControlPath=none -o BatchMode=yes -o "$PROXY" "${KH[@]}" -p "$P2")
head -c 3359936 /dev/urandom >"$D/bundle"   # the size of the node bundle
mkdir "$G"
"${SSH[@]}" root@127.0.28.2 true 2>/dev/null   # the hop's master, outside the count
measure() { # <label> <stdin file> <ssh args...>
    local label=$1 input=$2; shift 2
    local before after
    before=$(cat "$G/cpuacct.usage")
    for _ in $(seq "$N"); do sh -c 'echo $$ >"$0/cgroup.procs"; exec "$@"' "$G" "$@" <"$input" >/dev/null 2>&1; done
    sleep 0.5
    after=$(cat "$G/cpuacct.usage")
    echo "$label: $(( (after - before) / N / 1000000 )) ms of controller CPU per session"
}
echo "$(ssh -V 2>&1), $N sessions per case"
measure "default key exchange ($(ssh -G x 2>/dev/null | sed -n 's/^kexalgorithms \([^,]*\).*/\1/p'))" /dev/null "${SSH[@]}" root@127.0.28.2 true
measure "curve25519-sha256" /dev/null "${SSH[@]}" -o KexAlgorithms=curve25519-sha256 root@127.0.28.2 true
measure "curve25519-sha256, 3.4 MB on stdin" "$D/bundle" "${SSH[@]}" -o KexAlgorithms=curve25519-sha256 root@127.0.28.2 "cat >/dev/null"
