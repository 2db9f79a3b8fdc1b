// The stack's state at 4,096 nodes (issue 37): on Pulumi's mock engine, with the node group's instance list resolved
// (4,096 instances on AWS; Azure's one scale set, 300 VMs, the most one placement group holds), every resource input
// RdmaCluster registers, those known only after apply included (the node list, the inventory, validation's hosts),
// stays within 2 KB a node, and what its components register as outputs (the engine keeps them in the state too)
// within 256 B. Offline, `rdmakit plan` sees those inputs unknown and cannot measure them. Bound: one cluster per
// fabric, under 60 s each.
import { before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import { parse as parseYaml } from "yaml";
import type * as ClusterModule from "../components/cluster";
import { clusterCall, clusterResource } from "./fixtures/cluster-answers";
import { armFetch, b2sSku, d8sv5Sku, h100Sku, usages, vmssNics } from "./fixtures/azure/arm-answers";
import { scaledStack } from "../bench/scale";
import { readKeptInput } from "../components/kept-input";
import { parsePushCommand } from "../components/roce/push-args";
import { roceScript } from "../components/scripts";

const AWS_NODES = 4096, AZURE_NODES = 300;
const ip = (i: number) => `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${(i & 255) + 1}`;
const awsIps = Array.from({ length: AWS_NODES }, (_, i) => ip(i));
// in the subnet the test gives the scale set (10.10.0.0/23: 300 VMs do not fit the default /24)
const azureIps = Array.from({ length: AZURE_NODES }, (_, i) => `10.10.${(i + 4) >> 8}.${(i + 4) & 255}`);
let registered: Array<{ type: string; name: string; inputs: Record<string, unknown> }> = [];
// what each component registers as its outputs (ComponentResource.registerOutputs): the engine keeps them in the
// state too; the mock engine hands them to its monitor's registerResourceOutputs (@pulumi/pulumi runtime/mocks.js)
let componentOutputs: Array<{ urn: string; bytes: number }> = [];
const outputsProto = MockMonitor.prototype as unknown as { registerResourceOutputs(req: { getUrn(): string; getOutputs(): { toJavaScript(): unknown } | undefined }, cb: unknown): unknown };
const registerOutputs = outputsProto.registerResourceOutputs;
outputsProto.registerResourceOutputs = function (req, cb) {
    componentOutputs.push({ urn: req.getUrn(), bytes: Buffer.byteLength(JSON.stringify(req.getOutputs()?.toJavaScript() ?? {})) });
    return registerOutputs.call(this, req, cb);
};
let mod: typeof ClusterModule;

before(async () => {
    globalThis.fetch = armFetch({ skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 100_000, 100_000), nics: (vmss) => vmssNics("demo", vmss, azureIps) }).impl;
    await pulumi.runtime.setMocks({
        newResource(args) {
            registered.push({ type: args.type, name: args.name, inputs: args.inputs });
            return clusterResource(args);
        },
        call: (args) => clusterCall(args, { ids: awsIps.map((_, i) => `i-${i}`), privateIps: awsIps }),
    }, "rdmakit", "state", false);
    mod = await import("../components/cluster");
});
beforeEach(() => { registered = []; componentOutputs = []; });

/** The inventory the provisioning run's stdin names (components/provision/ansible.ts AnsibleRunStdin), checked by its digest. */
function keptInventory(stdin: string): string {
    const { inventoryFile, inventorySha256 } = JSON.parse(stdin) as { inventoryFile: string; inventorySha256: string };
    return readKeptInput(inventoryFile, inventorySha256);
}

function example(name: string, nodes: number): any {
    const c = parseYaml(readFileSync(join(__dirname, "..", "examples", name), "utf8")).config["rdmakit:cluster"];
    c.nodes = nodes;
    if (c.azure) Object.assign(c.azure, { quotaRaised: true, subnetCidr: "10.10.0.0/23" });
    return c;
}

for (const [file, nodes] of [["aws-p5.yaml", AWS_NODES], ["azure-h100.yaml", AZURE_NODES]] as const) {
    test(`${file} at ${nodes} nodes: resource inputs, after apply, at most 2 KB a node; the components' outputs 256 B`, { timeout: 120_000 }, async () => {
        const c = new mod.RdmaCluster("demo", { spec: example(file, nodes), sshPrivateKey: pulumi.secret("not-a-real-key") });
        const ips = await new Promise<string[]>((r) => c.nodePrivateIps.apply(r));
        await (pulumi.runtime as any).waitForRPCs?.();
        await new Promise((r) => setTimeout(r, 100));
        assert.equal(ips.length, nodes, "the instance list resolved");
        const run = registered.find((r) => r.name === "demo-software-run");
        // the inventory is known (resolved), not unknown: its kept file, named on stdin, holds the last node
        assert.ok(run && typeof run.inputs.stdin === "string" && keptInventory(run.inputs.stdin).includes(ips[nodes - 1]), "the inventory is known (resolved), not unknown");
        const sizes = registered.map((r) => [r.name, Buffer.byteLength(JSON.stringify(r.inputs))] as const).sort((a, b) => b[1] - a[1]);
        const total = sizes.reduce((n, [, b]) => n + b, 0);
        const top = sizes.slice(0, 4).map(([n, b]) => `${n} ${(b / 1024).toFixed(0)} KB`).join(", ");
        console.log(`# ${file} ${nodes} nodes: inputs ${(total / 1024).toFixed(0)} KB, ${(total / nodes).toFixed(0)} B a node (largest: ${top})`);
        assert.ok(total / nodes <= 2048, `${(total / nodes).toFixed(0)} B a node; largest: ${top}`);
        assertComponentOutputs(file, nodes);
    });
}

/** The components' registered outputs are state too: at most 256 B a node (node lists: names, addresses, instance ids; not the operating state again, ~1 KB a node). */
function assertComponentOutputs(file: string, nodes: number): void {
    const outputs = componentOutputs.reduce((n, o) => n + o.bytes, 0);
    const largest = [...componentOutputs].sort((a, b) => b.bytes - a.bytes).slice(0, 3).map((o) => `${o.urn.split("::").pop()} ${o.bytes} B`).join(", ");
    console.log(`# ${file} ${nodes} nodes: components' outputs ${(outputs / 1024).toFixed(0)} KB, ${(outputs / nodes).toFixed(0)} B a node (largest: ${largest})`);
    assert.ok(componentOutputs.length >= 3, "the components registered their outputs");
    assert.ok(outputs / nodes <= 256, `components' outputs ${(outputs / nodes).toFixed(0)} B a node; largest: ${largest}`);
}

// Bare metal: the 2,048-host rail fabric of bench/scale.ts at a quarter of its size (512 hosts: 64 leaves, 32 spines),
// with the switch key served (each push sources the kept key prelude). The switch texts, the push scripts and the
// key prelude are kept files, so a push's inputs are its parameters and digests: at most 2 KB a host in all, Slurm
// and the provisioning inventory included (13 KB a host when the pushes carried their texts and scripts).
test("roce-h100.yaml at 512 hosts: resource inputs at most 2 KB a host, the components' outputs 256 B, and no push carries its text or a script", { timeout: 120_000 }, async () => {
    const hosts = 512;
    const c = new mod.RdmaCluster("demo", { spec: (scaledStack("roce-h100.yaml", hosts) as any).config["rdmakit:cluster"], sshPrivateKey: pulumi.secret("not-a-real-key") });
    await new Promise<string[]>((r) => c.nodePrivateIps.apply(r));
    await (pulumi.runtime as any).waitForRPCs?.();
    await new Promise((r) => setTimeout(r, 100));
    const pushes = registered.filter((r) => r.name.endsWith("-qos"));
    assert.equal(pushes.length, 64 + 32, "every leaf and spine pushed");
    const script = roceScript("push.sh").split("\n").filter((l) => l.trim().length > 40);
    for (const p of pushes) {
        assert.equal(p.inputs.stdin, undefined, p.name);
        const args = parsePushCommand(p.inputs.create as string)!;
        const text = readKeptInput(args.config, args.configSha256);
        const inputs = JSON.stringify(p.inputs);
        // neither its rendered text nor the script is among its inputs, only their digests
        assert.ok(!inputs.includes(JSON.stringify(text.slice(0, 200)).slice(1, -1)), `${p.name} carries its text`);
        assert.ok(!script.some((l) => inputs.includes(JSON.stringify(l).slice(1, -1))), `${p.name} carries push.sh`);
    }
    const sizes = registered.map((r) => [r.name, Buffer.byteLength(JSON.stringify(r.inputs))] as const).sort((a, b) => b[1] - a[1]);
    const total = sizes.reduce((n, [, b]) => n + b, 0);
    const top = sizes.slice(0, 4).map(([n, b]) => `${n} ${(b / 1024).toFixed(0)} KB`).join(", ");
    console.log(`# roce-h100.yaml ${hosts} hosts: inputs ${(total / 1024).toFixed(0)} KB, ${(total / hosts).toFixed(0)} B a host (largest: ${top})`);
    assert.ok(total / hosts <= 2048, `${(total / hosts).toFixed(0)} B a host; largest: ${top}`);
    // not a copy of each host's NCCL environment (RoceCluster.hostNcclEnv stays a property)
    assertComponentOutputs("roce-h100.yaml", hosts);
});
