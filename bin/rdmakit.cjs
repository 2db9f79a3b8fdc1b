#!/usr/bin/env node
/* global process */
// The installed `rdmakit` command: registers tsx's TypeScript loader (resolved from this package, so it works from any
// directory) and runs the CLI, which is TypeScript like the rest of the kit.
// The SSH keys `rdmakit fabric check` takes from its environment (fabric-cli.ts FABRIC_KEY_ENV) leave the environment
// first, before anything starts a child that would inherit them (tsx starts its esbuild service as soon as it loads);
// the CLI finds them under this symbol.
const KEY_VARS = ["RDMAKIT_SWITCH_SSH_KEY", "RDMAKIT_HOST_SSH_KEY"];
const held = {};
for (const k of KEY_VARS) {
    if (process.env[k] !== undefined) held[k] = process.env[k];
    delete process.env[k];
}
globalThis[Symbol.for("rdmakit.envKeys")] = held;
require("tsx/cjs");
// CommonJS packages load as Node loads them, not through tsx's scan (node-modules.cjs)
require("./node-modules.cjs");
require("./rdmakit.ts");
