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
# Matches @pulumi/command 1.2.1 in package-lock.json. Not served by the proxy here (403 "This module version is not
# available" for .mod, .zip and @v/list; .info 404; 2026-12-05): build.sh tries the proxy first, then, with
# RDMAKIT_COMMAND_SRC set, a git checkout of github.com/pulumi/pulumi-command at the commit of tag v1.2.1 (below),
# verified by commit id; else it reports it missing and the tests that need it say so.
PULUMI_COMMAND_VERSION=v1.2.1
PULUMI_COMMAND_COMMIT=7f3eb6f3b77cd0fa3895ba437a695dd393f7dd25
# The version string the provider reports (GetPluginInfo): its Makefile stamps it with
# -X github.com/pulumi/pulumi-command/provider/pkg/version.Version=<version without v> (pulumi-command@v1.2.1:Makefile).
PULUMI_COMMAND_VERSION_VAR=github.com/pulumi/pulumi-command/provider/pkg/version.Version
# Its go.mod's replace directive, which applies only in the main module, so the wrapper repeats it
# (pulumi-command@v1.2.1:provider/go.mod).
PULUMI_COMMAND_MAPSTRUCTURE_REPLACE="github.com/mitchellh/mapstructure=github.com/go-viper/mapstructure@v1.6.0"
# Its framework, github.com/pulumi/pulumi-go-provider v1.3.0 (required by that go.mod). The proxy serves this version
# (.mod, .zip, .info with Origin.Hash below; only @v/list is 403, 2026-12-05), so it comes from the proxy, checked
# against sum.golang.org like every other module; a checkout at this commit in RDMAKIT_COMMAND_SRC is used instead
# where the proxy refuses it too.
PULUMI_GO_PROVIDER_VERSION=v1.3.0
PULUMI_GO_PROVIDER_COMMIT=3bfb720d763cca9c53a2af4016e224f7259f6345
