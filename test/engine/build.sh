#!/usr/bin/env bash
# Builds the Pulumi engine the engine tests drive (test/engine/*.test.ts) from the Go module proxy, at the versions
# in test/engine/pins.sh, into a cache outside the clone, and prints the directory that holds the binaries.
#
#   test/engine/build.sh            build what is missing; print the bin directory (last line of stdout)
#   test/engine/build.sh --status   print one line per binary: "<name> ok <path>" or "<name> missing <reason>"
#                                   (and "python-venv ok <dir>": a venv with PyPI `pulumi` at the CLI's version)
#   test/engine/build.sh --for-tests  as the default, but nothing at all when RDMAKIT_SKIP_ENGINE_TESTS=1 (npm run
#                                   test:engine builds first, so a cold build does not run into a test's timeout)
#
# Cache: ${RDMAKIT_ENGINE_CACHE:-/var/cache/rdmakit-engine}/<hash of pins.sh, this file, python-codegen>/bin, so every clone on a
# machine (CI's fresh clones included) reuses one build, and a change of pins builds anew. A binary that cannot be
# built leaves "<name>.missing" with the reason beside the binaries; the others are built independently of it.
# A `pulumi` already on PATH is used instead of building anything (what a user has): then the bin directory
# printed is the one holding that `pulumi`, and its language hosts and plugins are whatever the user installed.
# Builds run under `nice`, with GOFLAGS=-trimpath and the version stamped the way Pulumi's release builds do
# (-X .../sdk/v3/go/common/version.Version, pulumi/pulumi:pkg/cmd/pulumi and scripts/ldflags), one at a time.
#
# pulumi-resource-command from local checkouts (the proxy refuses its module, pins.sh): with
# RDMAKIT_COMMAND_SRC=<dir>, where <dir>/pulumi-command is a git checkout of github.com/pulumi/pulumi-command at
# PULUMI_COMMAND_COMMIT (and, optionally, <dir>/pulumi-go-provider one of github.com/pulumi/pulumi-go-provider at
# PULUMI_GO_PROVIDER_COMMIT), a proxy build that fails is followed by one whose wrapper replaces those modules with
# the checkouts; every other module still comes from the proxy, checked against go.sum's database. A checkout at
# another commit, or with any modified, untracked or ignored file, is refused (its reason goes into the .missing
# file). The proxy stays the first try; without the variable the binary stays missing with the proxy's reason.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=test/engine/pins.sh
. "$here/pins.sh"

mode=${1:-build}
if [ "$mode" = --for-tests ]; then
    [ "${RDMAKIT_SKIP_ENGINE_TESTS:-}" = 1 ] && exit 0
    mode=build
fi

if [ "${RDMAKIT_ENGINE_BUILD:-}" != 1 ] && existing=$(command -v pulumi 2>/dev/null); then
    dir=$(dirname "$(readlink -f "$existing")")
    if [ "$mode" = --status ]; then echo "pulumi ok $existing (from PATH)"; else echo "$dir"; fi
    exit 0
fi

# The Go toolchain of this project's machines lives in /usr/local/go (Go's own tarball layout).
command -v go >/dev/null || PATH=$PATH:/usr/local/go/bin
command -v go >/dev/null || { echo "build.sh: go not found; the engine tests build Pulumi with it (Go >= 1.25)" >&2; exit 1; }

hash=$(cat "$here/pins.sh" "$here/build.sh" "$here/python-codegen/main.go" | sha256sum | cut -c1-16)
cache=${RDMAKIT_ENGINE_CACHE:-/var/cache/rdmakit-engine}/$hash
bin=$cache/bin
mkdir -p "$bin" "$cache/logs"
# One build at a time per cache (two test runs on one machine share it); a waiting run then finds the binaries.
if command -v flock >/dev/null; then exec 9>"$cache/lock"; flock 9; fi

# One Go module with one requirement set per binary (a binary's own go.mod may carry replace directives, which
# only apply in the main module, so the wrapper repeats them).
#   wrapper <dir> <go version> <require module@version>... [-- <replace old=new@version>...]
wrapper() {
    local dir=$1 gover=$2; shift 2
    rm -rf "$dir"; mkdir -p "$dir"
    (cd "$dir" && go mod init rdmakit.local/engine/"$(basename "$dir")" >/dev/null 2>&1 && go mod edit -go="$gover")
    local replacing=0 arg
    for arg in "$@"; do
        if [ "$arg" = -- ]; then replacing=1; continue; fi
        if [ $replacing = 1 ]; then (cd "$dir" && go mod edit -replace="$arg"); else (cd "$dir" && go mod edit -require="$arg"); fi
    done
}

#   build_one <name> <package> <version> <wrapper dir> [<main.go>]   (wrapper already made; the version stamps the
#   binary too). With a main.go, that file is the wrapper's own main package and <package> is the one it needs.
#   BUILD_STAMP_VAR=<package path>.<var>: one more variable stamped with the version (without its "v").
build_one() {
    local name=$1 pkg=$2 stamp=$3 dir=$4 src=${5:-} log=$cache/logs/$1.log target=$2
    local start; start=$(date +%s)
    local ldflags="-X github.com/pulumi/pulumi/sdk/v3/go/common/version.Version=$stamp -X main.version=${stamp#v}"
    [ -n "${BUILD_STAMP_VAR:-}" ] && ldflags="$ldflags -X $BUILD_STAMP_VAR=${stamp#v}"
    if [ -n "$src" ]; then cp "$src" "$dir/main.go"; target=.; fi
    if (cd "$dir" && nice -n 19 go get "$pkg@$stamp" && nice -n 19 go build -mod=mod -trimpath \
            -ldflags "$ldflags" -o "$bin/$name.tmp" "$target") >"$log" 2>&1; then
        mv "$bin/$name.tmp" "$bin/$name"
        rm -f "$bin/$name.missing"
        echo "build.sh: built $name ($stamp) in $(( $(date +%s) - start )) s" >&2
    else
        local why
        if grep -q '403 Forbidden' "$log"; then
            why="module not served by the Go module proxy ($(grep -m1 -o 'reading https://[^ ]*' "$log" | sed 's/reading //; s/:*$//'): 403 Forbidden)"
        else
            why="go build failed; see $log"
        fi
        echo "$why" >"$bin/$name.missing"
        echo "build.sh: cannot build $name: $why" >&2
    fi
}

# Whether <name> must be built: not there yet, and not known to be unbuildable (RDMAKIT_ENGINE_RETRY=1 tries again;
# so does a RDMAKIT_COMMAND_SRC that the command provider's .missing does not name, i.e. was not tried yet).
need() {
    [ -x "$bin/$1" ] && return 1
    [ -f "$bin/$1.missing" ] || return 0
    [ "${RDMAKIT_ENGINE_RETRY:-}" = 1 ] && return 0
    [ "$1" = pulumi-resource-command ] && [ -n "${RDMAKIT_COMMAND_SRC:-}" ] \
        && ! grep -qF "RDMAKIT_COMMAND_SRC=$RDMAKIT_COMMAND_SRC:" "$bin/$1.missing" && return 0
    return 1
}

# Why <dir> is not a clean git checkout of <commit> (nothing printed, status 0, when it is): the commit id is the
# pin, and a modified, untracked or ignored file (a stray .go file compiles too) would build something else.
checkout_problem() {
    local dir=$1 commit=$2 head dirty
    [ -e "$dir/.git" ] || { echo "$dir is not a git checkout"; return 1; }
    head=$(git -C "$dir" rev-parse HEAD 2>/dev/null) || { echo "$dir: git rev-parse HEAD failed"; return 1; }
    [ "$head" = "$commit" ] || { echo "$dir is at $head, not $commit"; return 1; }
    dirty=$(git -C "$dir" status --porcelain --ignored 2>&1 | head -3 | tr '\n' ' ') || true
    [ -z "$dirty" ] || { echo "$dir has changed, untracked or ignored files: $dirty"; return 1; }
}

# pulumi-resource-command from the checkouts in RDMAKIT_COMMAND_SRC (header), after the proxy build failed.
command_from_src() {
    local src=$1 why problem
    why="RDMAKIT_COMMAND_SRC=$src: "
    if ! problem=$(checkout_problem "$src/pulumi-command" "$PULUMI_COMMAND_COMMIT"); then echo "$why$problem"; return 1; fi
    local replaces=("github.com/pulumi/pulumi-command/provider=$src/pulumi-command/provider" "$PULUMI_COMMAND_MAPSTRUCTURE_REPLACE")
    if [ -e "$src/pulumi-go-provider" ]; then
        if ! problem=$(checkout_problem "$src/pulumi-go-provider" "$PULUMI_GO_PROVIDER_COMMIT"); then echo "$why$problem"; return 1; fi
        replaces+=("github.com/pulumi/pulumi-go-provider=$src/pulumi-go-provider")
    fi
    wrapper "$work/command" 1.25.0 "github.com/pulumi/pulumi-command/provider@$PULUMI_COMMAND_VERSION" -- "${replaces[@]}"
    BUILD_STAMP_VAR=$PULUMI_COMMAND_VERSION_VAR build_one pulumi-resource-command \
        github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command "$PULUMI_COMMAND_VERSION" "$work/command"
    [ -x "$bin/pulumi-resource-command" ] && return 0
    echo "$why$(cat "$bin/pulumi-resource-command.missing")"
    return 1
}

if [ "$mode" != --status ]; then
    work=$cache/work
    if need pulumi; then
        wrapper "$work/pulumi" 1.25 \
            "github.com/pulumi/pulumi/pkg/v3@$PULUMI_CLI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_CLI_VERSION" \
            -- "$PULUMI_CLI_CLIPBOARD_REPLACE"
        build_one pulumi github.com/pulumi/pulumi/pkg/v3/cmd/pulumi "$PULUMI_CLI_VERSION" "$work/pulumi"
    fi
    if need pulumi-language-python; then
        wrapper "$work/python-codegen" 1.25 \
            "github.com/pulumi/pulumi/pkg/v3@$PULUMI_CLI_VERSION" "github.com/pulumi/pulumi/sdk/v3@$PULUMI_CLI_VERSION" \
            -- "$PULUMI_CLI_CLIPBOARD_REPLACE"
        build_one pulumi-language-python github.com/pulumi/pulumi/pkg/v3/codegen/python "$PULUMI_CLI_VERSION" \
            "$work/python-codegen" "$here/python-codegen/main.go"
    fi
    if need pulumi-resource-command; then
        wrapper "$work/command" 1.25.0 "github.com/pulumi/pulumi-command/provider@$PULUMI_COMMAND_VERSION" \
            -- "$PULUMI_COMMAND_MAPSTRUCTURE_REPLACE"
        BUILD_STAMP_VAR=$PULUMI_COMMAND_VERSION_VAR build_one pulumi-resource-command \
            github.com/pulumi/pulumi-command/provider/cmd/pulumi-resource-command "$PULUMI_COMMAND_VERSION" "$work/command"
        if [ ! -x "$bin/pulumi-resource-command" ]; then
            # the proxy's log stays beside the source build's
            mv "$cache/logs/pulumi-resource-command.log" "$cache/logs/pulumi-resource-command.proxy.log"
            proxy_why=$(sed 's|pulumi-resource-command\.log|pulumi-resource-command.proxy.log|' "$bin/pulumi-resource-command.missing")
            if [ -z "${RDMAKIT_COMMAND_SRC:-}" ]; then
                echo "$proxy_why; RDMAKIT_COMMAND_SRC is not set (a folder with a pulumi-command checkout at $PULUMI_COMMAND_COMMIT builds it from source, test/engine/README.md)" \
                    >"$bin/pulumi-resource-command.missing"
            elif ! src_why=$(command_from_src "$RDMAKIT_COMMAND_SRC"); then
                echo "$proxy_why; $src_why" >"$bin/pulumi-resource-command.missing"
                echo "build.sh: cannot build pulumi-resource-command from $RDMAKIT_COMMAND_SRC: $src_why" >&2
            fi
        fi
    fi
    # The Python programs' SDK, from PyPI, in a venv beside the binaries (python3 -m venv: Debian's python3-venv),
    # with the two packages every SDK `gen-sdk --language python` generates requires besides pulumi (parver, semver:
    # pkg/v3 codegen/python/gen.go@v3.248.0 calculateDeps hard-codes both), so the tests install the
    # generated SDK alone (pip --no-deps).
    if [ ! -x "$cache/venv/bin/python" ] && command -v python3 >/dev/null; then
        start=$(date +%s)
        rm -rf "$cache/venv.tmp"
        if (python3 -m venv "$cache/venv.tmp" && "$cache/venv.tmp/bin/pip" install -q "pulumi==$PULUMI_PYTHON_SDK_VERSION" \
                "parver>=0.2.1" "semver>=2.8.1") \
                >"$cache/logs/python-venv.log" 2>&1; then
            mv "$cache/venv.tmp" "$cache/venv"
            echo "build.sh: made the Python venv (pulumi $PULUMI_PYTHON_SDK_VERSION) in $(( $(date +%s) - start )) s" >&2
        else
            echo "build.sh: cannot make the Python venv; see $cache/logs/python-venv.log" >&2
        fi
    fi
    echo "$bin"
    exit 0
fi

for name in pulumi pulumi-language-python pulumi-resource-command; do
    if [ -x "$bin/$name" ]; then echo "$name ok $bin/$name"
    elif [ -f "$bin/$name.missing" ]; then echo "$name missing $(cat "$bin/$name.missing")"
    else echo "$name missing not built yet (run test/engine/build.sh)"; fi
done
if [ -x "$cache/venv/bin/python" ]; then echo "python-venv ok $cache/venv"
elif [ -f "$cache/logs/python-venv.log" ]; then echo "python-venv missing python3 -m venv or pip failed; see $cache/logs/python-venv.log"
else echo "python-venv missing not made yet (python3 not found, or run test/engine/build.sh)"; fi
