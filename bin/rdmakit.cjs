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
// A command runs for about a second and most of its code runs once: V8 still compiles each function that gets warm
// with its optimizing compiler on worker threads, and at 2,048 RoCE hosts that compiling was about a third of
// `rdmakit plan`'s CPU (~1.0 s of ~2.7 s; 0.15 s at 8 hosts). A function is considered for optimizing after it has
// used up its interrupt budget (V8's --interrupt-budget, 67584 bytecode units in Node 20's V8 11.3: `node
// --v8-options`); eight times that leaves one-off code to the interpreter and baseline code and still optimizes the
// loops that run long. Measured (bench/scale.ts, docs/state-size.md): ~0.6 s less CPU at 2,048 hosts, ~0.1 s at 8,
// wall time unchanged on 2 cores. Node keeps V8's flags writable after start for v8.setFlagsFromString.
require("node:v8").setFlagsFromString(`--interrupt-budget=${8 * 67584}`);
require("tsx/cjs");
// CommonJS packages load as Node loads them, not through tsx's scan (node-modules.cjs)
require("./node-modules.cjs");
require("./rdmakit.ts");
