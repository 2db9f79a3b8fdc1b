// bin/node-modules.cjs, the loader every process of the kit starts with (bin/rdmakit.cjs, the tests' TS_NODE_ARGS):
// the two packages @pulumi/pulumi needs only to serialise a function are not loaded until that happens, and when it
// does happen Pulumi's serialisation and code-path walk work as without the loader.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.join(__dirname, "..");

test("@pulumi/pulumi loads without arborist and TypeScript; serialising a function and walking code paths load them and work", () => {
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(__dirname, "fixtures", "lazy-modules.ts")], { cwd: ROOT, encoding: "utf8", timeout: 60_000 });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout.trim().split("\n").pop()!);
    assert.deepEqual(out.atLoad, [], "neither package is loaded with @pulumi/pulumi");
    assert.match(out.text, /exports\.handler = __f0;/);
    assert.match(out.text, /40\s*\+\s*2/, "the function's body is in the serialised text");
    assert.deepEqual(out.afterSerialize, ["typescript"], "serialising loaded the TypeScript compiler");
    assert.ok(out.codePaths > 0, "the code-path walk found the project's packages");
    assert.deepEqual(out.afterCodePaths, ["@npmcli/arborist", "typescript"]);
});
