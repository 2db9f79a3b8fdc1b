# Versions of the Pulumi engine the engine tests build from the Go module proxy: the one place they are pinned.
# build.sh sources this file; its hash (with build.sh's) names the cache directory, so a change here rebuilds.

# The CLI: module github.com/pulumi/pulumi/pkg/v3, package cmd/pulumi. Matches @pulumi/pulumi 3.248.0 in
# package.json (tag pkg/v3.248.0 = commit dc7edd58bc13, proxy .info). Its go.mod replaces sdk/v3 with ../sdk (the
# wrapper requires the same sdk/v3 tag instead) and atotto/clipboard with the fork below (copied from that go.mod).
PULUMI_CLI_VERSION=v3.248.0
PULUMI_CLI_CLIPBOARD_REPLACE="github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e"

# No language host that runs programs is built. The hosts' own modules (github.com/pulumi/pulumi/sdk/nodejs/cmd/
# pulumi-language-nodejs/v3, .../sdk/python/cmd/pulumi-language-python/v3) are not served by the Go module proxy this
# project reaches (403 "This module version is not available", 2026-12-01), and none is needed: the tests run
# programs through the Automation API's inline mode (the SDK serves the program to the CLI over --client, which
# v3.181.0 added), policy packs through the CLI's analyzer shim fallback, and the component package as an
# executable plugin (test/engine/README.md). The one host built here, test/engine/python-codegen, only generates
# code (`pulumi package gen-sdk --language python`), from this CLI's own pkg/v3 release.

# PyPI `pulumi` for the Python programs: the SDK of the CLI's release (the CLI version without its "v").
PULUMI_PYTHON_SDK_VERSION=${PULUMI_CLI_VERSION#v}

# The command provider: module github.com/pulumi/pulumi-command/provider, package cmd/pulumi-resource-command.
# Matches @pulumi/command 1.2.1 in package-lock.json. Not served by the proxy here (403, 2026-12-01): build.sh tries it
# and reports it missing; the tests that need it say so.
PULUMI_COMMAND_VERSION=v1.2.1
