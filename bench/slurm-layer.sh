#!/usr/bin/env bash
# The software bench's Slurm layer (bench/software.ts --slurm): the files Debian 12's Slurm and munge packages add to
# the test hosts' base tree, so that every bench host starts as an image with Slurm already installed and the slurm
# role's package task finds them present. The mirror's speed then stays out of the figures, as it does for the
# roce role the bench runs; the controller's CPU of the step does not depend on it (each host installs on itself).
#
#   slurm-layer.sh build <base.tar> <layer.tar>   unpack the base, apt-get install the packages in it (systemd-nspawn,
#                                                 no boot), pack only the files the install created or changed
#   slurm-layer.sh apply <layer.tar> <tree>       unpack the layer over a host's tree (testhost.sh's
#                                                 RDMAKIT_TESTHOST_PREPARE hook, before the host boots)
set -euo pipefail

die() { echo "slurm-layer.sh: $*" >&2; exit 1; }

# What the slurm role installs on Debian 12 (playbooks/roles/slurm/vars/main.yml "Debian 12": common + controller +
# node); one layer for the head node and the nodes alike: slurmctld stays stopped on a node (its unit needs
# /etc/slurm/slurm.conf at boot, and the role starts only slurmd there).
PACKAGES=(munge slurm-client slurm-wlm-basic-plugins libpmix-dev slurmctld slurmd)

cmd_build() {
    local base=$1 layer=$2
    [ -s "$base" ] || die "base tarball $base is missing (test/hosts/testhost.sh base)"
    command -v systemd-nspawn >/dev/null || die "systemd-nspawn not found"
    local work; work=$(mktemp -d "$(dirname "$layer")/slurm-layer.XXXXXX")
    # shellcheck disable=SC2064 # expand now: the folder of this build
    trap "rm -rf '$work'" EXIT
    mkdir "$work/tree"
    tar -C "$work/tree" -xf "$base"
    touch "$work/marker"
    sleep 1
    systemd-nspawn --register=no --keep-unit -q -M rdmakit-slurm-layer -D "$work/tree" --pipe /bin/sh -c \
        "apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends ${PACKAGES[*]} && apt-get clean" \
        >"$work/apt.log" 2>&1 || { cat "$work/apt.log" >&2; die "apt-get install in the layer's tree failed"; }
    # the package's own munge key is no cluster's key: the role installs the cluster's
    rm -f "$work/tree/etc/munge/munge.key"
    # created or changed since the marker (ctime: dpkg keeps the packages' mtimes); directories without their contents
    (cd "$work/tree" && find . -cnewer "$work/marker" ! -path ./tmp ! -path './tmp/*' ! -path ./root ! -path './root/*' -print0 |
        tar --null --no-recursion -T - -cf "$layer.tmp")
    mv "$layer.tmp" "$layer"
}

cmd_apply() {
    local layer=$1 tree=$2
    [ -s "$layer" ] || die "layer $layer is missing"
    [ -d "$tree/etc" ] || die "$tree is not a host's tree"
    # -m: the files get this moment's mtime, so apt's lists count as fresh (the role's cache_valid_time)
    tar -C "$tree" -m -xf "$layer"
}

case "${1:-}" in
    build) [ $# -eq 3 ] || die "usage: build <base.tar> <layer.tar>"; cmd_build "$2" "$3" ;;
    apply) [ $# -eq 3 ] || die "usage: apply <layer.tar> <tree>"; cmd_apply "$2" "$3" ;;
    *) die "usage: slurm-layer.sh build|apply ..." ;;
esac
