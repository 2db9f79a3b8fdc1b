import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { clusterSchema } from "../components/spec";
import { RULES } from "../components/roce/consistency";
import { rdmakitPolicies } from "../policies/rules/index";
import { GENERATED } from "../docs/generate";

/*
 * The docs users read against the code: the generated references are fresh, the notes state the defaults the schema
 * applies, the policy reference lists exactly what the pack exports, and README and docs/ link only to what exists.
 * A change to components/spec.ts, a verb's flags or the pack without the docs fails here. Bound: ~10 s (loads the
 * CLI's verbs once).
 */

const ROOT = join(__dirname, "..");
const read = (f: string) => readFileSync(join(ROOT, f), "utf8");
const readme = read("README.md");
const notes = read("docs/configuration.md");
const project = read("Pulumi.yaml");

for (const [file, make] of Object.entries(GENERATED)) {
    test(`docs/${file} is what \`npm run docs:gen\` writes from the code now`, () => {
        assert.equal(read(`docs/${file}`), make(), `docs/${file} is stale: run npm run docs:gen`);
    });
}

test("the generated config reference has a row for every field of every section, roce included", () => {
    const config = read("docs/config.md");
    for (const key of [...Object.keys(clusterSchema.shape), "roce.qos.ecn.minBytes", "roce.switches[].uplinks[].peerPort", "aws.network.subnets[].id"]) {
        assert.ok(config.includes(`| \`${key}\` |`), `docs/config.md has no row for ${key}`);
    }
});

for (const section of ["software", "validation", "ansible"] as const) {
    // a nested group's defaults are written "<group>.<key> <value>" (validation.health)
    const flat = (o: Record<string, unknown>, at = ""): Array<[string, unknown]> => Object.entries(o).flatMap(([k, v]) =>
        v !== null && typeof v === "object" && !Array.isArray(v) ? flat(v as Record<string, unknown>, `${at}${k}.`) : [[`${at}${k}`, v] as [string, unknown]]);
    const defaults = flat(clusterSchema.shape[section].parse(undefined) as Record<string, unknown>);
    test(`docs/configuration.md and Pulumi.yaml state every ${section} default`, () => {
        for (const [key, raw] of defaults) {
            // an empty list default is written "none"
            const value = Array.isArray(raw) ? (raw.length === 0 ? "none" : JSON.stringify(raw)) : String(raw);
            assert.ok(notes.includes(`\`${key}\` ${value}`), `docs/configuration.md does not say ${key} ${value}`);
            assert.ok(new RegExp(`\\b${key} ${value.replace(/[.[\]]/g, "\\$&")}(?![\\w.])`).test(project), `Pulumi.yaml does not say ${key} ${value}`);
        }
    });
}

test("every spec field is documented in Pulumi.yaml", () => {
    for (const key of Object.keys(clusterSchema.shape)) {
        assert.match(project, new RegExp(`#\\s+${key}\\b`), `Pulumi.yaml does not document ${key}`);
    }
});

test("docs/policies.md lists exactly the pack's policies with their levels and count, and the RoCE rules left to plan", () => {
    const doc = read("docs/policies.md");
    const pack = rdmakitPolicies();
    const rows = [...doc.matchAll(/^\| `([a-z0-9-]+)` \| (advisory|mandatory|disabled) \| (.*) \|$/gm)].map((m) => ({ name: m[1], level: m[2], text: m[3] }));
    assert.deepEqual(rows.map((r) => `${r.name} ${r.level}`), pack.map((p) => `${p.name} ${p.enforcementLevel}`));
    for (const r of rows) assert.equal(r.text, pack.find((p) => p.name === r.name)!.description, r.name);
    for (const text of [doc, readme]) assert.match(text, new RegExp(`policy pack \\(${pack.length} policies\\)`));
    // every consistency rule is either a policy of the pack or in the plan-only table, never both, never neither
    const inPack = Object.keys(RULES).filter((id) => pack.some((p) => p.name.startsWith(`roce-qos-${id.toLowerCase()}-`)));
    const planOnly = [...doc.matchAll(/^\| (C\d+) \| (.*) \|$/gm)].map((m) => m[1]);
    assert.deepEqual([...inPack, ...planOnly].sort(), Object.keys(RULES).sort());
    assert.deepEqual(inPack.filter((id) => planOnly.includes(id)), []);
    assert.ok(doc.includes(`Four of the seventeen RoCE QoS rules`) === (planOnly.length === 4 && Object.keys(RULES).length === 17));
});

test("README: what it is, the quick start, the fabrics and the documentation within its first screen; no link to what does not ship", () => {
    const firstScreen = readme.split("\n").slice(0, 15).join("\n");
    for (const anchor of ["#quick-start-offline-no-cloud-account", "#choosing-a-fabric", "#documentation"]) assert.ok(firstScreen.includes(anchor), anchor);
    assert.match(readme, /^npm ci && \.\/bin\/rdmakit\.cjs plan$/m);
    assert.doesNotMatch(readme, /npm run rdmakit/);
    const docs = ["README.md", ...["getting-started", "concepts", "configuration", "config", "cli", "operations", "troubleshooting", "keys", "own-program", "policies", "development"].map((d) => `docs/${d}.md`)];
    for (const file of docs) {
        const text = read(file);
        assert.doesNotMatch(text, /shared\/DESIGN\.md/, file);
        assert.doesNotMatch(text, /npm run rdmakit/, file);
        for (const m of text.matchAll(/\]\(([^)#\s]+\.md)(#[^)]*)?\)/g)) {
            assert.ok(existsSync(resolve(dirname(join(ROOT, file)), m[1])), `${file} links to ${m[1]}, which does not exist`);
        }
    }
});

test("teardown and switch-config are documented where day-2 operations are", () => {
    const ops = read("docs/operations.md");
    assert.match(ops, /^## Teardown$/m);
    assert.match(ops, /The RoCE QoS stays on the switches/);
    assert.match(ops, /config rollback pre-rdmakit/);
    assert.match(ops, /^## Switch configurations: `rdmakit switch-config`$/m);
    // what the teardown section says the delete step prints is what it prints
    assert.match(read("components/roce/push.ts"), /leaving the RoCE QoS on \$\{sw\.name\} in place/);
});
