// A rotated SSH key re-runs nothing: the same stack planned with two different node keys registers every command with
// the same inputs (the engine diffs inputs; equal inputs, no update). The key reaches the runs from the program
// (components/provision/keysocket.ts), never as an input. Pulumi's mock engine, each bundled example.
import { clusterCall, clusterResource } from "./fixtures/cluster-answers";
import { before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync } from "node:crypto";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type * as ClusterModule from "../components/cluster";
import { armFetch, b2sSku, d8sv5Sku, h100Sku, usages, vmssNics } from "./fixtures/azure/arm-answers";

interface Registered { type: string; name: string; inputs: Record<string, unknown> }
let registered: Registered[] = [];
let mod: typeof ClusterModule;
const NODE_IPS = ["10.0.0.21", "10.0.0.22", "10.0.0.23", "10.0.0.24"];

before(async () => {
    // ARM's answers for the Azure example: the size offered, quota to spare, the scale set's NICs (components/azure/cloud.ts)
    globalThis.fetch = armFetch({ skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 96 * 100), nics: (v) => vmssNics("demo", v, ["10.10.0.4", "10.10.0.5", "10.10.0.6", "10.10.0.7"]) }).impl;
    await pulumi.runtime.setMocks({
        newResource(args) {
            registered.push({ type: args.type, name: args.name, inputs: args.inputs });
            const answer = clusterResource(args);
            if (args.type.startsWith("azure-native:")) answer.state.name = args.inputs.resourceGroupName ?? args.name;
            if (args.type === "command:local:Command" && args.name.endsWith("-node-ips")) {
                answer.state.stdout = JSON.stringify(["10.10.0.7", "10.10.0.4", "10.10.0.5", "10.10.0.6"].map((ip) => [ip, null]));
            }
            return answer;
        },
        call: (args) => clusterCall(args, { ids: NODE_IPS.map((_, i) => `i-${i}`), privateIps: NODE_IPS }),
    }, "rdmakit", "rotate", false);
    mod = await import("../components/cluster");
});
beforeEach(() => { registered = []; });

function example(name: string): any {
    return parseYaml(readFileSync(join(__dirname, "..", "examples", name), "utf8")).config["rdmakit:cluster"];
}

const newKey = () => generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();

/** Every command the program registers with `key`, by name, with its inputs as the engine gets them. */
async function commandsWith(file: string, key: string, switchKey: string): Promise<Record<string, string>> {
    registered = [];
    const c = new mod.RdmaCluster("demo", { spec: example(file), sshPrivateKey: pulumi.secret(key), switchSshPrivateKey: pulumi.secret(switchKey) });
    await new Promise((r) => c.nodePrivateIps.apply(r));
    await (pulumi.runtime as any).waitForRPCs?.();
    await new Promise((r) => setTimeout(r, 100));
    const cmds = registered.filter((r) => r.type.startsWith("command:"));
    return Object.fromEntries(cmds.map((r) => [`${r.type} ${r.name}`, JSON.stringify(r.inputs)]));
}

for (const file of ["aws-p5.yaml", "azure-h100.yaml", "roce-h100.yaml"]) {
    test(`${file}: two node keys, the same inputs for every command (and neither key among them)`, async () => {
        const [a, b, sw] = [newKey(), newKey(), newKey()];
        const first = await commandsWith(file, a, sw);
        const second = await commandsWith(file, b, sw);
        assert.ok(Object.keys(first).some((k) => k.endsWith("demo-software-run")), "the software step is among them");
        assert.deepEqual(Object.keys(second).sort(), Object.keys(first).sort());
        for (const k of Object.keys(first)) {
            assert.equal(second[k], first[k], `${k}: its inputs changed with the key`);
            for (const key of [a, b]) {
                const piece = key.split("\n")[1].slice(10, 40);
                assert.ok(!first[k].includes(piece) && !second[k].includes(piece), `${k}: the node key is one of its inputs`);
            }
        }
    });
}
