#!/usr/bin/env node
// The installed `rdmakit` command: registers tsx's TypeScript loader (resolved from this package, so it works from any
// directory) and runs the CLI, which is TypeScript like the rest of the kit.
require("tsx/cjs");
require("./rdmakit.ts");
