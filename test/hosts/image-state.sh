#!/usr/bin/env bash
# Lays the published state of a GPU image onto a Debian test-host tree before it boots (testhost.sh up with
# RDMAKIT_TESTHOST_PREPARE), so the roles meet what they meet on the real image. Sources: ../shared/research/images.md
# (§1.4 DLAMI layout and probes, §2.3-2.5 ubuntu-hpc install methods, versions.json, sku-customizations.service).
# Packages come from the local CUDA repository (test/hosts/local-cuda-repo.sh) with the vendors' names, installed
# with dpkg and held as the images hold them. The kernel modules cannot exist in a container: `modinfo` answers
# for nvidia from a stand-in in /usr/local/sbin (first in root's PATH) and defers to the real one otherwise.
#
#   image-state.sh <repo-dir> <kind> <tree>     kind: dlami | ubuntu-hpc
set -euo pipefail
repo_dir=$1 kind=$2 root=$3
pool="$repo_dir/www/compute/cuda/repos/debian12/x86_64"
arch=$(dpkg --print-architecture)

# dpkg_install <deb path>...: install into the tree (dependencies must be among the given files)
dpkg_install() {
    local d
    mkdir -p "$root/tmp/rdmakit-debs"
    for d in "$@"; do cp "$d" "$root/tmp/rdmakit-debs/"; done
    chroot "$root" sh -c 'dpkg -i /tmp/rdmakit-debs/*.deb' >/dev/null
    rm -rf "$root/tmp/rdmakit-debs"
}
hold() { local p; for p in "$@"; do echo "$p hold" | chroot "$root" dpkg --set-selections; done; }

modinfo_standin() {
    local version=$1
    install -d "$root/usr/local/sbin"
    cat >"$root/usr/local/sbin/modinfo" <<EOF
#!/bin/sh
# test stand-in for the nvidia kernel module of the image (driver $version, open kernel modules)
case "\$*" in
    "-F version nvidia") echo "$version" ;;
    "-F license nvidia") echo "Dual MIT/GPL" ;;
    *) [ -x /sbin/modinfo ] && exec /sbin/modinfo "\$@"; exit 1 ;;
esac
EOF
    chmod 0755 "$root/usr/local/sbin/modinfo"
    cat >"$root/usr/bin/nvidia-smi" <<EOF
#!/bin/sh
# test stand-in: the image's nvidia-smi, here on a host without GPUs
echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver (driver $version installed)" >&2
exit 9
EOF
    chmod 0755 "$root/usr/bin/nvidia-smi"
}

# elf_lib <path in the tree> <soname>: an empty shared library with that soname, enough for ldd to resolve it.
# Needs binutils (as, ld, readelf: dpkg-dev depends on it).
elf_lib() {
    local tmp
    tmp=$(mktemp -d)
    : >"$tmp/empty.s"
    as -o "$tmp/empty.o" "$tmp/empty.s"
    install -d "$(dirname "$root$1")"
    ld -shared -soname "$2" -o "$root$1" "$tmp/empty.o"
    rm -rf "$tmp"
}

# mpi_linked_standin <binary> <mpi prefix> [<folder of libnccl.so.2>]: an nccl-tests binary of the image that links the
# image's MPI, as the real one does (MPI=1 adds -lmpi; no rpath), and libnccl.so.2 from the given folder (nccl-tests
# links -lnccl), with a libmpi.so.40 stand-in and an mpirun in that prefix. Never run: it only has to answer ldd. The
# mpirun stand-in prints the environment it was started in and its arguments, and fails.
mpi_linked_standin() {
    local bin=$1 prefix=$2 nccl=${3:-} tmp interp
    tmp=$(mktemp -d)
    printf '.globl _start\n_start:\n' >"$tmp/start.s"
    as -o "$tmp/start.o" "$tmp/start.s"
    install -d "$root$prefix/lib" "$root$prefix/bin" "$(dirname "$root$bin")"
    [ -e "$root$prefix/lib/libmpi.so.40" ] || elf_lib "$prefix/lib/libmpi.so.40" libmpi.so.40
    interp=$(readelf -l /bin/sh | sed -n 's/.*interpreter: \(.*\)]$/\1/p')
    ld -o "$root$bin" "$tmp/start.o" --dynamic-linker "$interp" -L "$root$prefix/lib" -l:libmpi.so.40 \
        ${nccl:+-L "$root$nccl" -l:libnccl.so.2}
    cat >"$root$prefix/bin/mpirun" <<'STANDIN'
#!/bin/sh
echo "test stand-in for the image MPI mpirun ($0) OPAL_PREFIX=${OPAL_PREFIX:-} LD_LIBRARY_PATH=${LD_LIBRARY_PATH:-} args: $*" >&2
exit 1
STANDIN
    chmod 0755 "$root$prefix/bin/mpirun"
    rm -rf "$tmp"
}

cuda_dir() {
    local v=$1 full=$2 nccl=${3:-}
    install -d "$root/usr/local/cuda-$v/lib"
    printf '{"cuda": {"name": "CUDA SDK", "version": "%s"}}\n' "$full" >"$root/usr/local/cuda-$v/version.json"
    if [ -n "$nccl" ]; then
        elf_lib "/usr/local/cuda-$v/lib/libnccl.so.$nccl" libnccl.so.2
        ln -sf "libnccl.so.$nccl" "$root/usr/local/cuda-$v/lib/libnccl.so.2"
    fi
}

# Both images are Ubuntu server images, whose update-notifier-common hooks apt to touch a stamp after every successful
# `apt-get update` (/etc/apt/apt.conf.d/15update-stamp; ansible's apt module reads the cache's age from that stamp).
# source: Ubuntu update-notifier-common (15update-stamp); ansible-core lib/ansible/modules/apt.py APT_UPDATE_SUCCESS_STAMP_PATH
cat >"$root/etc/apt/apt.conf.d/15update-stamp" <<'EOF'
APT::Update::Post-Invoke-Success {"touch /var/lib/apt/periodic/update-success-stamp 2>/dev/null || true";};
EOF
install -d "$root/var/lib/apt/periodic"

case "$kind" in
dlami)
    # Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04): driver 595.91.07, CUDA 12.8/12.9/13.0/13.2 with
    # /usr/local/cuda -> cuda-13.2, EFA installer 1.50.0 with aws-ofi-nccl 1.21.1, Open MPI in /opt/amazon/openmpi
    # (catalog/images.ts DLAMI_BASE_OSS_U2204). The per-CUDA NCCL build's version is not published: 2.27.7 here
    # is a stand-in. Fabric Manager at the driver's version, held (not in the release tables: our inference).
    modinfo_standin 595.91.07
    for v in 12.8:12.8.1 12.9:12.9.1 13.0:13.0.2 13.2:13.2.0; do cuda_dir "${v%%:*}" "${v#*:}" 2.27.7; done
    ln -sfn cuda-13.2 "$root/usr/local/cuda"
    install -d "$root/opt/amazon/efa/bin" "$root/opt/amazon/ofi-nccl/lib" "$root/opt/amazon/openmpi/include" "$root/opt/amazon/openmpi/bin"
    # nccl-tests per toolkit in /usr/local/cuda-X.Y/efa/test-cuda-X.Y, linking the EFA installer's Open MPI
    # (awslabs/awsome-distributed-ai nccl-tests-ami.sbatch and smoke tests: "/usr/local/cuda-*/efa/test-cuda-*/")
    # each linking the NCCL of its own toolkit, which no ld.so.conf entry names here (whether the real DLAMI has one is
    # not published, images.md §1.4; AWS's own run puts /usr/local/cuda-X.Y/lib on LD_LIBRARY_PATH)
    for v in 12.8 12.9 13.0 13.2; do
        mpi_linked_standin "/usr/local/cuda-$v/efa/test-cuda-$v/all_reduce_perf" /opt/amazon/openmpi "/usr/local/cuda-$v/lib"
    done
    cat >"$root/opt/amazon/efa_installed_packages" <<'EOF'
# EFA installer version: 1.50.0
# Debug packages installed: no
# Packages installed:
efa-config_1.18-1_all efa-profile_1.7-1_all libfabric-aws-bin_2.6.0amzn1.0_amd64 libnccl-ofi_1.21.1-1_amd64 openmpi40-aws_4.1.7-1_amd64
EOF
    : >"$root/opt/amazon/ofi-nccl/lib/libnccl-net-ofi.so"
    echo /opt/amazon/ofi-nccl/lib >"$root/etc/ld.so.conf.d/100_ofinccl.conf"
    echo "/* test stand-in for the EFA installer's Open MPI header */" >"$root/opt/amazon/openmpi/include/mpi.h"
    dpkg_install "$pool/libnvidia-nscq_595.91.07-1_$arch.deb" "$pool/nvidia-fabricmanager_595.91.07-1_$arch.deb"
    hold nvidia-fabricmanager libnvidia-nscq
    ;;
ubuntu-hpc)
    # microsoft-dsvm:ubuntu-hpc:2204 at ubuntu-hpc-2026072901: DOCA 3.2.1 (OFED-internal 25.10), driver 580.126.16
    # through nvidia-driver-pinning + nvidia-open, Fabric Manager 580.126.16, CUDA 13.0, NCCL 2.30.4-1+cuda13.0 built
    # by Azure and held, HPC-X 2.25.1, nccl-tests in /opt/nccl-tests, and sku-customizations.service, which rewrites
    # /etc/nccl.conf at every boot (catalog/images.ts UBUNTU_HPC_2204; images.md §2.2-2.5).
    modinfo_standin 580.126.16
    cat >"$root/usr/bin/ofed_info" <<'EOF'
#!/bin/sh
# test stand-in for DOCA-OFED 3.2.1's ofed_info (first line as images.md §3.3 quotes it)
case "$1" in
    -s) echo "OFED-internal-25.10-1.7.1:" ;;
    -n) echo "25.10-1.7.1" ;;
    *) echo "OFED-internal-25.10-1.7.1:"; echo; echo "doca-ofed 3.2.1" ;;
esac
EOF
    chmod 0755 "$root/usr/bin/ofed_info"
    # the image's driver is apt's nvidia-open, whose kernel modules (nvidia_peermem among them) DKMS builds
    # (images.md section 2.3); `dkms status` lines read "<module>/<version>, <kernel>, <arch>: installed" (dkms(8))
    cat >"$root/usr/local/sbin/dkms" <<'EOF2'
#!/bin/sh
# test stand-in for dkms: the image's nvidia module registered for the running kernel; rebuilds are logged
case "$1" in
    status) echo "nvidia/580.126.16, $(uname -r), $(uname -m): installed" ;;
    install) echo "dkms $*" >>/var/log/rdmakit-test-dkms.log ;;
    *) exit 1 ;;
esac
EOF2
    chmod 0755 "$root/usr/local/sbin/dkms"
    dpkg_install "$pool/nvidia-driver-pinning-580.126.16_1-1_all.deb" "$pool/nvidia-open_580.126.16-1_$arch.deb" \
        "$pool/libnvidia-nscq_580.126.16-1_$arch.deb" "$pool/nvidia-fabricmanager_580.126.16-1_$arch.deb" \
        "$pool/cuda-toolkit-13-0_13.0.2-1_$arch.deb" \
        "$repo_dir/vendor/libnccl2_2.30.4-1+cuda13.0_$arch.deb" "$repo_dir/vendor/libnccl-dev_2.30.4-1+cuda13.0_$arch.deb"
    hold nvidia-fabricmanager libnvidia-nscq libnccl2 libnccl-dev
    # nccl-tests built with MPI=1 against HPC-X's Open MPI (Azure/azhpc-images components/install_nccl.sh)
    mpi_linked_standin /opt/nccl-tests/build/all_reduce_perf /opt/hpcx-v2.25.1-gcc-doca_ofed-ubuntu22.04-cuda13-x86_64/ompi
    # HPC-X's environment script: hpcx-init.sh, whose hpcx_load sets OPAL_PREFIX, PATH and LD_LIBRARY_PATH for the
    # bundled libraries (NVIDIA HPC-X README; variable names as hpcx-init-ompi.sh exports them), cut down to those
    cat >"$root/opt/hpcx-v2.25.1-gcc-doca_ofed-ubuntu22.04-cuda13-x86_64/hpcx-init.sh" <<'STANDIN'
#!/bin/bash
# test stand-in for HPC-X's hpcx-init.sh
mydir="$( cd "$( dirname "${BASH_SOURCE[0]}" )" && pwd )"
export HPCX_DIR=$mydir HPCX_UCX_DIR=$mydir/ucx HPCX_MPI_DIR=$mydir/ompi
hpcx_load() {
    export OPAL_PREFIX=$HPCX_MPI_DIR
    export PATH=$HPCX_MPI_DIR/bin:$HPCX_UCX_DIR/bin:$PATH
    export LD_LIBRARY_PATH=$HPCX_MPI_DIR/lib:$HPCX_UCX_DIR/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
}
STANDIN
    # the image loads nvidia_peermem at boot (Azure/azhpc-images components/setup_sku_customizations.sh; images.md §2.5)
    printf 'nvidia_peermem\n' >"$root/etc/modules-load.d/nvidia-peermem.conf"
    install -d "$root/opt/azurehpc"
    cat >"$root/opt/azurehpc/component_versions.txt" <<'EOF'
{"DOCA": "3.2.1", "OFED": "25.10-1.7.1", "NVIDIA": "580.126.16", "NVIDIA_FABRIC_MANAGER": "580.126.16", "CUDA": "13.0", "NCCL": "2.30.4-1", "HPCX": "2.25.1"}
EOF
    # the image's boot service: writes /etc/nccl.conf for the ND H100 v5 family at start, truncates it at stop
    # (Azure/azhpc-images components/setup_sku_customizations.sh, customizations/ndv5.sh; images.md §2.5)
    cat >"$root/usr/sbin/setup_sku_customizations.sh" <<'EOF'
#!/bin/sh
printf 'NCCL_IB_PCI_RELAXED_ORDERING=1\nNCCL_TOPO_FILE=/opt/microsoft/ndv5/topo.xml\nNCCL_IGNORE_CPU_AFFINITY=1\n' >/etc/nccl.conf
EOF
    printf '#!/bin/sh\n: >/etc/nccl.conf\n' >"$root/usr/sbin/remove_sku_customizations.sh"
    chmod 0755 "$root/usr/sbin/setup_sku_customizations.sh" "$root/usr/sbin/remove_sku_customizations.sh"
    cat >"$root/etc/systemd/system/sku-customizations.service" <<'EOF'
[Unit]
Description=Customizations based on SKU
After=network-online.target openibd.service rdma-hw.target nvidia-fabricmanager.service
Wants=network-online.target nvidia-fabricmanager.service

[Service]
Type=oneshot
RemainAfterExit=true
ExecStart=/usr/sbin/setup_sku_customizations.sh
ExecStop=/usr/sbin/remove_sku_customizations.sh

[Install]
WantedBy=multi-user.target
EOF
    mkdir -p "$root/etc/systemd/system/multi-user.target.wants"
    ln -sf ../sku-customizations.service "$root/etc/systemd/system/multi-user.target.wants/sku-customizations.service"
    ;;
*) echo "image-state.sh: unknown kind $kind (dlami | ubuntu-hpc)" >&2; exit 2 ;;
esac
