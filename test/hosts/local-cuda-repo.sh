#!/usr/bin/env bash
# A local stand-in for NVIDIA's CUDA apt repository, with the same flat layout
# (<base>/<distro>/<arch>/{cuda-keyring_1.1-1_all.deb,Packages,Release,InRelease}; source: NVIDIA/deepops:
# roles/nvidia_cuda/defaults/main.yml), so the nccl role's keyring install, apt pin, versioned install and hold run
# for real on the test hosts. The packages are empty placeholders built here with dpkg-deb; the repository is signed
# with a throw-away key made here.
#
#   local-cuda-repo.sh <dir> <base-url>   e.g. <dir>=/tmp/repo <base-url>=http://127.0.0.1:8765/compute/cuda/repos
# Serves nothing itself: the caller serves <dir>/www over HTTP so that <base-url> maps to <dir>/www/compute/cuda/repos.
# Versions offered: libnccl2/libnccl-dev 2.23.4-1+cuda12.6 and a newer 2.24.3-1+cuda12.6 (the pin must keep the
# older one), cuda-toolkit-12-6 1.0-1.
set -euo pipefail
dir=$1 base=$2
distro=debian12 arch_dir=x86_64
arch=$(dpkg --print-architecture)
for t in gpg dpkg-deb dpkg-scanpackages sha256sum; do
    command -v "$t" >/dev/null || { echo "local-cuda-repo.sh: $t not found" >&2; exit 1; }
done
rm -rf "$dir"; mkdir -p "$dir/build"
repo="$dir/www/compute/cuda/repos/$distro/$arch_dir"
mkdir -p "$repo"

export GNUPGHOME="$dir/gnupg"
mkdir -m 0700 "$GNUPGHOME"
gpg --batch --quiet --passphrase '' --quick-gen-key "rdmakit test CUDA repo <test@rdmakit.invalid>" ed25519 sign never
keyid=$(gpg --batch --with-colons --list-keys | awk -F: '/^fpr:/ {print $10; exit}')

# deb <name> <version> <arch> [file:content ...]
deb() {
    local name=$1 version=$2 darch=$3; shift 3
    local root="$dir/build/${name}_${version}"
    mkdir -p "$root/DEBIAN"
    cat >"$root/DEBIAN/control" <<EOF
Package: $name
Version: $version
Architecture: $darch
Maintainer: rdmakit tests <test@rdmakit.invalid>
Description: rdmakit test placeholder for $name
EOF
    local spec path
    for spec in "$@"; do
        path=${spec%%=*}
        mkdir -p "$root/$(dirname "$path")"
        printf '%s' "${spec#*=}" >"$root/$path"
    done
    dpkg-deb --root-owner-group -Zgzip --build "$root" "$repo/${name}_${version}_${darch}.deb" >/dev/null
}

for v in 2.23.4-1+cuda12.6 2.24.3-1+cuda12.6; do
    deb libnccl2 "$v" "$arch" "usr/share/doc/libnccl2/VERSION=$v"
    deb libnccl-dev "$v" "$arch" "usr/share/doc/libnccl-dev/VERSION=$v"
done
deb cuda-toolkit-12-6 1.0-1 "$arch" "usr/share/doc/cuda-toolkit-12-6/README=placeholder without nvcc"

# The keyring package carries the key and the source list, like NVIDIA's cuda-keyring. Its tree is filled here
# (the key is binary) before deb() adds the control file and builds it.
kroot="$dir/build/cuda-keyring_1.1-1"
mkdir -p "$kroot/usr/share/keyrings"
gpg --batch --export "$keyid" >"$kroot/usr/share/keyrings/cuda-archive-keyring.gpg"
deb cuda-keyring 1.1-1 all \
    "etc/apt/sources.list.d/cuda-$distro-$arch_dir.list=deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] $base/$distro/$arch_dir/ /
"

cd "$repo"
dpkg-scanpackages --multiversion . /dev/null 2>/dev/null >Packages
gzip -9kf Packages
{
    echo "Origin: rdmakit-test"
    echo "Label: rdmakit-test-cuda"
    echo "Architectures: $arch all"
    echo "Date: $(LC_ALL=C date -u '+%a, %d %b %Y %H:%M:%S UTC')"
    echo "SHA256:"
    for f in Packages Packages.gz; do
        printf ' %s %s %s\n' "$(sha256sum "$f" | cut -d' ' -f1)" "$(stat -c%s "$f")" "$f"
    done
} >Release
gpg --batch --yes --local-user "$keyid" --clearsign -o InRelease Release
gpg --batch --yes --local-user "$keyid" -abs -o Release.gpg Release
gpgconf --kill gpg-agent 2>/dev/null || true
