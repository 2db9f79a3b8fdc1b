# Versions of the Pulumi engine the engine tests build from the Go module proxy: the one place they are pinned.
# build.sh sources this file; its hash (with build.sh's) names the cache directory, so a change here rebuilds.

# The CLI: module github.com/pulumi/pulumi/pkg/v3, package cmd/pulumi. Matches @pulumi/pulumi 3.248.0 in
# package.json (tag pkg/v3.248.0 = commit dc7edd58bc13, proxy .info). Its go.mod replaces sdk/v3 with ../sdk (the
# wrapper requires the same sdk/v3 tag instead) and atotto/clipboard with the fork below (copied from that go.mod).
PULUMI_CLI_VERSION=v3.248.0
PULUMI_CLI_CLIPBOARD_REPLACE="github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e"

# The Node.js and Python language hosts. Their own modules (github.com/pulumi/pulumi/sdk/nodejs/cmd/
# pulumi-language-nodejs/v3, .../sdk/python/cmd/pulumi-language-python/v3) are not served by the Go module proxy
# this project reaches (403 "This module version is not available", 2026-12-01). Up to v3.68.0 both hosts were
# packages inside github.com/pulumi/pulumi/sdk/v3 itself (sdk/v3 v3.68.0's zip has nodejs/cmd/pulumi-language-nodejs
# and python/cmd/pulumi-language-python; v3.90.0's has neither), and v3.68.0 is the newest such sdk/v3 the proxy
# lists. So the hosts are Pulumi's own code, 180 releases older than the CLI. sdk/v3 v3.68.0's go.mod replaces
# golang.org/x/text with v0.3.6 (copied into the wrapper).
PULUMI_LANGHOST_SDK_VERSION=v3.68.0
PULUMI_LANGHOST_TEXT_REPLACE="golang.org/x/text=golang.org/x/text@v0.3.6"

# The command provider: module github.com/pulumi/pulumi-command/provider, package cmd/pulumi-resource-command.
# Matches @pulumi/command 1.2.1 in package-lock.json. Not served by the proxy here (403, 2026-12-01): build.sh tries it
# and reports it missing; the tests that need it say so.
PULUMI_COMMAND_VERSION=v1.2.1
