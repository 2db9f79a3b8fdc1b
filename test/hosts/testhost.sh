#!/usr/bin/env bash
# Debian bookworm test hosts for the Ansible real-run tests (test/ansible-hosts.test.ts).
# Each host is a debootstrap tree booted with systemd-nspawn on the host network; its sshd listens on its own
# port on 127.0.0.1, so Ansible reaches several containers as separate hosts. Recipe: docs/architecture.md
# ("Ansible test hosts").
#
#   testhost.sh base <cache-dir>                                 build the base tarball once; print its path
#                                                                (see "Base cache" below)
#   testhost.sh up <cache-dir> <run-dir> <name> <port> <pubkey> [<address>]
#                                                                unpack, configure sshd on <address>:<port> (default
#                                                                127.0.0.1), boot; wait for ssh; print pid
#                                                                with RDMAKIT_TESTHOST_PREPARE=<cmd> set, runs `<cmd> <tree>`
#                                                                after unpacking and before the boot (image-state.sh)
#                                                                with RDMAKIT_TESTHOST_REBOOT=1, a reboot inside the
#                                                                container boots it again (boot() below)
#   testhost.sh restart <run-dir> <name> <port> [<address>]      power the container off cleanly and boot the same tree
#                                                                again (a reboot); wait for ssh; print pid
#   testhost.sh down <run-dir> <name>                            stop the container (kill its nspawn process), remove the tree
set -euo pipefail

die() { echo "testhost.sh: $*" >&2; exit 1; }
need_root() { [ "$(id -u)" = 0 ] || die "must run as root (debootstrap and systemd-nspawn need it)"; }
# The mirror the build machine uses; override with RDMAKIT_TESTHOST_MIRROR.
MIRROR=${RDMAKIT_TESTHOST_MIRROR:-http://deb.debian.org/debian}

# Base cache: the tarball depends only on how it is built (build_base below and the mirror), so it is kept outside
# the clone, in ${RDMAKIT_TESTHOST_BASE_CACHE:-/var/cache/rdmakit-testhosts}/<hash of build_base and the mirror>/,
# as test/engine/build.sh keeps the engine binaries: every fresh clone on a machine (CI's) reuses it instead of
# running debootstrap again (about 2 min on 2 cores). A changed recipe is a new hash, so a new build. Where that
# folder cannot be made, <cache-dir> given by the caller holds it.
base_cache() {
    local fallback=$1 hash dir
    hash=$( { declare -f build_base; echo "$MIRROR"; } | sha256sum | cut -c1-16)
    dir=${RDMAKIT_TESTHOST_BASE_CACHE:-/var/cache/rdmakit-testhosts}/$hash
    if mkdir -p "$dir" 2>/dev/null && [ -w "$dir" ]; then echo "$dir"; else mkdir -p "$fallback" && echo "$fallback"; fi
}

cmd_base() {
    local cache; cache=$(base_cache "$1")
    local tar="$cache/bookworm-base.tar"
    if [ -s "$tar" ]; then echo "$tar"; return; fi
    need_root
    command -v debootstrap >/dev/null || die "debootstrap not found (apt-get install debootstrap)"
    # test files run in parallel: one builds the base, the others wait for it
    exec 9>"$cache/base.lock"
    flock 9
    if [ -s "$tar" ]; then echo "$tar"; flock -u 9; return; fi
    build_base "$cache" "$tar"
    exec 9>&-
    echo "$tar"
}

# build_base <dir> <tar>: debootstrap the tree and pack it (what the base cache's hash covers)
build_base() {
    local cache=$1 tar=$2
    local tree="$cache/base.build"
    rm -rf "$tree"
    debootstrap --variant=minbase --include=python3,openssh-server,systemd,systemd-sysv,dbus \
        bookworm "$tree" "$MIRROR" >"$cache/debootstrap.log" 2>&1 ||
        die "debootstrap failed; see $cache/debootstrap.log"
    # The build machine's mirror is a dated snapshot; apt inside the hosts must accept its old Release files
    # the same way the build machine does (/etc/apt/apt.conf.d/99artifact-registry there).
    printf 'Acquire::Check-Valid-Until "false";\nAcquire::Check-Date "false";\n' \
        >"$tree/etc/apt/apt.conf.d/99rdmakit-testhost"
    # Host keys are made per container in `up`, never shared through the tarball.
    rm -f "$tree"/etc/ssh/ssh_host_*
    rm -rf "$tree"/var/lib/apt/lists/*
    tar -C "$tree" -cf "$tar.tmp" . && mv "$tar.tmp" "$tar"
    rm -rf "$tree"
}

cmd_up() {
    local cache=$1 run=$2 name=$3 port=$4 pubkey=$5 address=${6:-127.0.0.1}
    case "$address" in 127.*) ;; *) die "address $address is not a loopback address (127.0.0.0/8)";; esac
    need_root
    command -v systemd-nspawn >/dev/null || die "systemd-nspawn not found (apt-get install systemd-container)"
    [ -s "$pubkey" ] || die "public key file $pubkey is missing"
    local tar; tar=$(cmd_base "$cache")
    local root="$run/$name"
    rm -rf "$root"; mkdir -p "$root"
    tar -C "$root" -xf "$tar"
    chroot "$root" ssh-keygen -A >/dev/null
    install -d -m 0700 "$root/root/.ssh"
    install -m 0600 "$pubkey" "$root/root/.ssh/authorized_keys"
    cat >"$root/etc/ssh/sshd_config.d/rdmakit-testhost.conf" <<EOF
Port $port
ListenAddress $address
PermitRootLogin prohibit-password
PasswordAuthentication no
EOF
    echo "$name" >"$root/etc/hostname"
    # Test hosts are thrown away after the run, so dpkg need not fsync every file it unpacks (dpkg(1),
    # --force-unsafe-io; container image builds commonly set it as /etc/dpkg/dpkg.cfg.d/docker-apt-speedup).
    # Measured here: the Open MPI + build-essential install took 48 s instead of 77 s. Nothing else changes.
    echo force-unsafe-io >"$root/etc/dpkg/dpkg.cfg.d/rdmakit-testhost-unsafe-io"
    if [ -n "${RDMAKIT_TESTHOST_PREPARE:-}" ]; then
        # shellcheck disable=SC2086
        $RDMAKIT_TESTHOST_PREPARE "$root" >"$run/$name.prepare.log" 2>&1 || die "preparing $name failed; see $run/$name.prepare.log"
    fi
    boot "$run" "$name" "$port" "$address"
}

# boot <run-dir> <name> <port> <address>: start the container on its tree and wait for its sshd
boot() {
    local run=$1 name=$2 port=$3 address=$4 root="$1/$2"
    # Host network (no --private-network): the address/port pair tells the hosts apart (all of 127.0.0.0/8 is local).
    local nspawn=(systemd-nspawn --register=no --keep-unit --console=passive -b -M "$name" -D "$root")
    if [ "${RDMAKIT_TESTHOST_REBOOT:-}" = 1 ]; then
        # A host that can reboot: nspawn exits 133 when the container's systemd reboots, so it is started again on
        # the same tree (/run is a fresh tmpfs each boot), as systemd-nspawn@.service does with
        # RestartForceExitStatus=133 (source: systemd units/systemd-nspawn@.service.in; systemd-nspawn(1) EXIT
        # STATUS). Any other exit ends the loop; its TERM (stop below) powers the running container off.
        setsid bash -c 'trap "kill -TERM \$c 2>/dev/null; wait \$c; exit 0" TERM
            while :; do "$@" & c=$!; wait $c; rc=$?; [ "$rc" = 133 ] || exit "$rc"; echo "rdmakit testhost: rebooted" >&2; done' \
            rdmakit-testhost "${nspawn[@]}" >>"$run/$name.console.log" 2>&1 </dev/null &
    else
        setsid "${nspawn[@]}" >>"$run/$name.console.log" 2>&1 </dev/null &
    fi
    local pid=$!
    echo "$pid" >"$run/$name.pid"
    local i
    for i in $(seq 1 120); do
        if ! kill -0 "$pid" 2>/dev/null; then
            die "container $name exited while booting; see $run/$name.console.log"
        fi
        if (exec 3<>"/dev/tcp/$address/$port") 2>/dev/null; then echo "$pid"; return; fi
        sleep 0.5
    done
    die "sshd of $name did not listen on $address:$port within 60 s; see $run/$name.console.log"
}

stop() {
    local pidfile="$1/$2.pid"
    if [ -s "$pidfile" ]; then
        local pid; pid=$(cat "$pidfile")
        # SIGTERM asks nspawn to power the container off cleanly; SIGKILL if it does not stop in 15 s.
        if kill -0 "$pid" 2>/dev/null; then
            kill -TERM "$pid" 2>/dev/null || true
            local i
            for i in $(seq 1 30); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
        fi
        rm -f "$pidfile"
    fi
}

cmd_restart() {
    local run=$1 name=$2 port=$3 address=${4:-127.0.0.1}
    [ -d "$run/$name" ] || die "no tree $run/$name to boot again"
    stop "$run" "$name"
    boot "$run" "$name" "$port" "$address"
}

cmd_down() {
    local run=$1 name=$2
    stop "$run" "$name"
    rm -rf "${run:?}/${name:?}"
}

case "${1:-}" in
    base) [ $# -eq 2 ] || die "usage: base <cache-dir>"; cmd_base "$2" ;;
    up) [ $# -eq 6 ] || [ $# -eq 7 ] || die "usage: up <cache-dir> <run-dir> <name> <port> <pubkey> [<address>]"; shift; cmd_up "$@" ;;
    restart) [ $# -eq 4 ] || [ $# -eq 5 ] || die "usage: restart <run-dir> <name> <port> [<address>]"; shift; cmd_restart "$@" ;;
    down) [ $# -eq 3 ] || die "usage: down <run-dir> <name>"; cmd_down "$2" "$3" ;;
    *) die "usage: testhost.sh base|up|restart|down ..." ;;
esac
