#!/usr/bin/env bash
# A local stand-in for NVIDIA's CUDA apt repository, with the same flat layout
# (<base>/<distro>/<arch>/{cuda-keyring_1.1-1_all.deb,Packages,Release,InRelease}; source: NVIDIA/deepops:
# roles/nvidia_cuda/defaults/main.yml), so the nccl role's keyring install, apt pin, versioned install and hold run
# for real on the test hosts. The packages are empty placeholders built here with dpkg-deb; the repository is signed
# with a throw-away key made here.
#
#   local-cuda-repo.sh <dir> <base-url>   e.g. <dir>=/tmp/repo <base-url>=http://127.0.0.1:8765/compute/cuda/repos
# Serves nothing itself: the caller serves <dir>/www over HTTP so that <base-url> maps to <dir>/www/compute/cuda/repos.
# Packages offered, with the vendors' names (images.md sections 2.3, 3.1, 3.2; aws-efa.md 3.3):
#   libnccl2/libnccl-dev 2.28.9-1+cuda13.0 (the kit's default) and a newer 2.30.4-1+cuda13.2 (the pin must keep the
#   older one); cuda-toolkit-13-0 (ships /usr/local/cuda-13.0/version.json, as the real toolkit does);
#   nvidia-driver-pinning-580.126.16 (an apt preferences file pinning the 580.126.16 driver family), nvidia-open
#   580.126.16-1 and 595.58.03-1, nvidia-fabricmanager 580.126.16-1, 595.58.03-1 and 595.91.07-1 (Depends on
#   libnvidia-nscq of the same version), libnvidia-nscq likewise, nvlsm.
# Vendor packages that are not in NVIDIA's repository go to <dir>/vendor/ instead (the image-like test hosts install
# them with dpkg, as the images do): libnccl2/libnccl-dev 2.30.4-1+cuda13.0 as Azure builds them from the NCCL tag.
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

# deb <name> <version> <arch> [file=content ...]; DEPENDS="..." adds a Depends field, OUT=<dir> another output directory
deb() {
    local name=$1 version=$2 darch=$3; shift 3
    local root="$dir/build/${name}_${version}"
    mkdir -p "$root/DEBIAN"
    {
        echo "Package: $name"
        echo "Version: $version"
        echo "Architecture: $darch"
        echo "Maintainer: rdmakit tests <test@rdmakit.invalid>"
        [ -z "${DEPENDS:-}" ] || echo "Depends: $DEPENDS"
        echo "Description: rdmakit test placeholder for $name"
    } >"$root/DEBIAN/control"
    local spec path
    for spec in "$@"; do
        path=${spec%%=*}
        mkdir -p "$root/$(dirname "$path")"
        printf '%s' "${spec#*=}" >"$root/$path"
    done
    dpkg-deb --root-owner-group -Zgzip --build "$root" "${OUT:-$repo}/${name}_${version}_${darch}.deb" >/dev/null
}
mkdir -p "$dir/vendor"

for v in 2.28.9-1+cuda13.0 2.30.4-1+cuda13.2; do
    deb libnccl2 "$v" "$arch" "usr/share/doc/libnccl2/VERSION=$v"
    DEPENDS="libnccl2 (= $v)" deb libnccl-dev "$v" "$arch" "usr/share/doc/libnccl-dev/VERSION=$v"
done
v=2.30.4-1+cuda13.0
OUT="$dir/vendor" deb libnccl2 "$v" "$arch" "usr/share/doc/libnccl2/VERSION=$v"
OUT="$dir/vendor" DEPENDS="libnccl2 (= $v)" deb libnccl-dev "$v" "$arch" "usr/share/doc/libnccl-dev/VERSION=$v"
deb cuda-toolkit-13-0 13.0.2-1 "$arch" "usr/local/cuda-13.0/version.json={\"cuda\": {\"name\": \"CUDA SDK\", \"version\": \"13.0.2\"}}
"
for v in 580.126.16 595.58.03 595.91.07; do
    deb libnvidia-nscq "$v-1" "$arch" "usr/share/doc/libnvidia-nscq/VERSION=$v"
    DEPENDS="libnvidia-nscq (= $v-1)" deb nvidia-fabricmanager "$v-1" "$arch" "usr/share/doc/nvidia-fabricmanager/VERSION=$v" \
        "usr/bin/nv-fabricmanager=placeholder for the Fabric Manager daemon $v"
done
for v in 580.126.16 595.58.03; do
    deb nvidia-open "$v-1" "$arch" "usr/share/doc/nvidia-open/VERSION=$v"
done
deb nvidia-driver-pinning-580.126.16 1-1 all "etc/apt/preferences.d/nvidia-driver-pinning-580.126.16=Package: nvidia-open nvidia-fabricmanager libnvidia-nscq
Pin: version 580.126.16-*
Pin-Priority: 1000
"
deb nvlsm 2025.10.1-1 "$arch" "usr/share/doc/nvlsm/README=placeholder"

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
# the keyring test hosts are told to trust (cuda_repo_key_fingerprint)
echo "$keyid" >"$dir/key-fingerprint"
gpgconf --kill gpg-agent 2>/dev/null || true
