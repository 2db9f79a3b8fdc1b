// What `rdmakit plan` hands the program about the stack's cluster (components/offline.ts, spec.ts leaveClusterConfig):
// the object it read from the stack file, taken once by a program whose config holds the same text, and nothing
// after a plan that ended before the program ran. The program here is a constructed one that records what it took.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { runProgramOffline } from "../components/offline";
import { takeClusterConfig } from "../components/spec";

const root = path.join(__dirname, "..");
const example = path.join(root, "examples", "roce-h100.yaml");

function program(): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-offline-config-"));
    const file = path.join(dir, "index.js");
    fs.writeFileSync(file, [
        `const pulumi = require(${JSON.stringify(require.resolve("@pulumi/pulumi"))});`,
        `const { takeClusterConfig } = require(${JSON.stringify(path.join(root, "components", "spec.ts"))});`,
        "const text = new pulumi.Config('rdmakit').get('cluster');",
        "globalThis.offlineConfigSeen = { text, taken: takeClusterConfig(() => text), again: takeClusterConfig(() => text) };",
    ].join("\n"));
    return file;
}

test("the program takes the stack file's cluster once, by the config text it is given", async () => {
    await runProgramOffline(example, "offline-config", program());
    const seen = (globalThis as { offlineConfigSeen?: { text: string; taken: unknown; again: unknown } }).offlineConfigSeen!;
    const cluster = parse(fs.readFileSync(example, "utf8")).config["rdmakit:cluster"];
    assert.deepEqual(JSON.parse(seen.text), cluster, "the config holds the cluster as JSON");
    assert.deepEqual(seen.taken, cluster);
    assert.equal(seen.again, undefined, "taken once");
});

test("a plan that ends before the program runs leaves nothing for a later program", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-offline-config-"));
    const bad = path.join(dir, "Pulumi.bad.yaml");
    // constructed: the example with its first host renamed to a name the schema refuses
    fs.writeFileSync(bad, fs.readFileSync(example, "utf8").replace(/name: gpu01\b/, "name: GPU_1"));
    await assert.rejects(runProgramOffline(bad, "bad", program()), /hosts\[0\]\.name/);
    assert.equal(takeClusterConfig(() => assert.fail("the config was read")), undefined);
});
