import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { clusterSchema } from "../components/spec";

/*
 * The config reference users read (README.md, Pulumi.yaml) states the defaults the schema applies. A default
 * changed in components/spec.ts without the docs fails here.
 */

const ROOT = join(__dirname, "..");
const readme = readFileSync(join(ROOT, "README.md"), "utf8");
const project = readFileSync(join(ROOT, "Pulumi.yaml"), "utf8");

for (const section of ["software", "validation", "ansible"] as const) {
    // a nested group's defaults are written "<group>.<key> <value>" (validation.health)
    const flat = (o: Record<string, unknown>, at = ""): Array<[string, unknown]> => Object.entries(o).flatMap(([k, v]) =>
        v !== null && typeof v === "object" && !Array.isArray(v) ? flat(v as Record<string, unknown>, `${at}${k}.`) : [[`${at}${k}`, v] as [string, unknown]]);
    const defaults = flat(clusterSchema.shape[section].parse(undefined) as Record<string, unknown>);
    test(`README and Pulumi.yaml state every ${section} default`, () => {
        for (const [key, raw] of defaults) {
            // an empty list default is written "none"
            const value = Array.isArray(raw) ? (raw.length === 0 ? "none" : JSON.stringify(raw)) : String(raw);
            assert.ok(readme.includes(`\`${key}\` ${value}`), `README.md does not say ${key} ${value}`);
            assert.ok(new RegExp(`\\b${key} ${value.replace(/[.[\]]/g, "\\$&")}(?![\\w.])`).test(project), `Pulumi.yaml does not say ${key} ${value}`);
        }
    });
}

test("every spec field is documented in Pulumi.yaml", () => {
    for (const key of Object.keys(clusterSchema.shape)) {
        assert.match(project, new RegExp(`#\\s+${key}\\b`), `Pulumi.yaml does not document ${key}`);
    }
});
