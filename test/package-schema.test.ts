// The component package's schema as Pulumi derives it: @pulumi/pulumi/provider/experimental's ComponentProvider runs the
// same analyzer `pulumi package add` runs (run-plugin → componentProviderHost → Analyzer over the package's .ts
// sources, entry from package.json exports). The typed inputs it reads (components/types.ts) must say what the
// cluster schema (components/spec.ts, zod) accepts: every field, required or not, enum values and kinds.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { z } from "zod";
import { ComponentProvider, getPulumiComponents } from "@pulumi/pulumi/provider/experimental";
import * as lib from "../components/package-components";
import { clusterSchema } from "../components/spec";
import { markSecretInputs, SECRET_INPUTS } from "../components/provider";

const ROOT = path.resolve(__dirname, "..");
const COMPONENTS = ["RdmaCluster", "AwsEfaCluster", "AzureInfinibandCluster", "RoceCluster"];

interface Prop { type?: string; $ref?: string; items?: Prop; additionalProperties?: Prop; plain?: boolean; description?: string }
interface TypeDef { type: string; properties?: Record<string, Prop>; required?: string[]; enum?: { value: string }[] }
interface Schema {
    name: string;
    resources: Record<string, { isComponent: boolean; inputProperties: Record<string, Prop>; requiredInputs?: string[]; properties: Record<string, Prop> }>;
    types: Record<string, TypeDef>;
}

let cached: Schema | undefined;
async function schema(): Promise<Schema> {
    if (!cached) {
        const provider = new ComponentProvider({ components: getPulumiComponents(lib), dirname: ROOT, name: "rdmakit" });
        cached = JSON.parse(await provider.getSchema()) as Schema;
    }
    return cached;
}

test("the component package's component list (components/package-components.ts) exports exactly the four cluster components, and the analyzer types each", { timeout: 120_000 }, async () => {
    assert.deepEqual(getPulumiComponents(lib).map((c) => c.name).sort(), [...COMPONENTS].sort());
    const s = await schema();
    assert.equal(s.name, "rdmakit");
    assert.deepEqual(Object.keys(s.resources).sort(), COMPONENTS.map((c) => `rdmakit:index:${c}`).sort());
    for (const c of COMPONENTS) {
        const r = s.resources[`rdmakit:index:${c}`];
        assert.equal(r.isComponent, true, c);
        assert.equal(r.inputProperties.spec.$ref, "#/types/rdmakit:index:ClusterSpecInput", `${c}.spec`);
        assert.ok(r.requiredInputs?.includes("spec"), `${c}: spec is required`);
        assert.ok(Object.keys(r.properties).length >= 3, `${c} has typed outputs`);
        for (const [k, p] of Object.entries(r.properties)) assert.ok(p.type ?? p.$ref, `${c}.${k} has a type`);
    }
    const rdma = s.resources["rdmakit:index:RdmaCluster"];
    assert.deepEqual(rdma.properties.nodePrivateIps, { type: "array", items: { type: "string" }, description: rdma.properties.nodePrivateIps.description });
    // the operating state as text: what a Python, Go, .NET or YAML program exports as rdmakitState for the day-2 verbs
    assert.equal(rdma.properties.operatingState?.type, "string", JSON.stringify(Object.keys(rdma.properties)));
    assert.equal(rdma.inputProperties.sshPrivateKey.type, "string");
    assert.notEqual(rdma.inputProperties.sshPrivateKey.plain, true, "the key may be an Output (a secret)");
});

test("the provider marks exactly the key inputs secret in the analyzer's schema, and a renamed one stops it", async () => {
    const s = await schema();
    const marked = JSON.parse(markSecretInputs(JSON.stringify(s))) as Schema;
    const secret = Object.entries(marked.resources).flatMap(([token, r]) =>
        Object.entries(r.inputProperties).filter(([, p]) => (p as { secret?: boolean }).secret === true).map(([k]) => `${token}.${k}`));
    assert.deepEqual(secret.sort(), ["rdmakit:index:RdmaCluster.sshPrivateKey", "rdmakit:index:RdmaCluster.switchSshPrivateKey", "rdmakit:index:RoceCluster.sshPrivateKey"]);
    assert.throws(() => markSecretInputs(JSON.stringify(s), { ...SECRET_INPUTS, "rdmakit:index:RoceCluster": ["switchKey"] }), /RoceCluster has no input switchKey/);
});

test("ids that come from other resources are inputs; what decides the resource count is plain", async () => {
    const s = await schema();
    const net = s.types["rdmakit:index:AwsNetworkInput"].properties!;
    assert.notEqual(net.vpcId.plain, true);
    assert.notEqual(s.types["rdmakit:index:AwsSubnetInput"].properties!.id.plain, true);
    assert.notEqual(s.types["rdmakit:index:AzureSpecInput"].properties!.resourceGroupName.plain, true);
    assert.equal(s.types["rdmakit:index:ClusterSpecInput"].properties!.nodes.plain, true);
    assert.equal(s.types["rdmakit:index:RoceSpecInput"].properties!.hosts.plain, true);
});

test("the typed inputs and the cluster schema agree on every field, its kind and its enum values", async () => {
    const s = await schema();
    const json = z.toJSONSchema(clusterSchema, { io: "input", unrepresentable: "any" }) as JsonObject;
    const problems: string[] = [];
    compareObject(s, json, "rdmakit:index:ClusterSpecInput", "cluster", problems);
    assert.deepEqual(problems, []);
});

interface JsonObject { type?: string; properties?: Record<string, JsonObject>; required?: string[]; enum?: unknown[]; items?: JsonObject; additionalProperties?: JsonObject | boolean; anyOf?: JsonObject[] }

function compareObject(s: Schema, json: JsonObject, token: string, where: string, problems: string[]): void {
    const def = s.types[token];
    if (!def?.properties) {
        problems.push(`${where}: no object type ${token} in the analyzer schema`);
        return;
    }
    const zodKeys = Object.keys(json.properties ?? {}).sort();
    const tsKeys = Object.keys(def.properties).sort();
    for (const k of zodKeys.filter((k) => !tsKeys.includes(k))) problems.push(`${where}.${k}: in the schema, missing from ${token}`);
    for (const k of tsKeys.filter((k) => !zodKeys.includes(k))) problems.push(`${where}.${k}: in ${token}, not in the schema`);
    const zodRequired = [...(json.required ?? [])].sort();
    const tsRequired = [...(def.required ?? [])].sort();
    if (zodRequired.join() !== tsRequired.join()) problems.push(`${where}: required ${zodRequired.join(",")} in the schema, ${tsRequired.join(",")} in ${token}`);
    for (const k of zodKeys.filter((k) => tsKeys.includes(k))) compareValue(s, json.properties![k], def.properties[k], `${where}.${k}`, problems);
}

function compareValue(s: Schema, json: JsonObject, prop: Prop, where: string, problems: string[]): void {
    if (prop.$ref) {
        const token = prop.$ref.replace("#/types/", "");
        const def = s.types[token];
        if (def?.enum) {
            const want = (json.enum ?? []).map(String).sort();
            const got = def.enum.map((e) => String(e.value)).sort();
            if (want.join() !== got.join()) problems.push(`${where}: enum ${want.join(",")} in the schema, ${got.join(",")} in ${token}`);
        } else {
            compareObject(s, json, token, where, problems);
        }
        return;
    }
    // a field given as a pulumi Input (a custom check in zod) has no JSON Schema type; the analyzer says string
    if (json.type === undefined) {
        if (prop.type !== "string") problems.push(`${where}: a pulumi.Input id should be a string, is ${prop.type}`);
        return;
    }
    const kind = json.type === "integer" ? "number" : json.type;
    if (kind !== prop.type) problems.push(`${where}: ${json.type} in the schema, ${prop.type} in the typed input`);
    if (kind === "array" && json.items && prop.items) compareValue(s, json.items, prop.items, `${where}[]`, problems);
    if (kind === "object" && typeof json.additionalProperties === "object" && prop.additionalProperties) {
        compareValue(s, json.additionalProperties, prop.additionalProperties, `${where}{}`, problems);
    }
}
