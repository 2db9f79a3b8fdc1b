// What AzureInfinibandCluster asks Azure before creating anything, on the mock engine with ARM's recorded answers
// (test/fixtures/azure/arm-answers.ts): a size not offered in the location, one restricted for the subscription, a
// family or regional vCPU quota short of the nodes, and a read ARM refuses are each refused with the field, what
// Azure said and what to do, before any Azure resource is registered.
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import assert from "node:assert/strict";
import { armList, gradeAzureCloud } from "../components/azure/cloud";
import { parseClusterSpec } from "../components/spec";
import { h100Sku, NOT_AVAILABLE, usages } from "./fixtures/azure/arm-answers";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICxhuhIlltwIFeKx5QpbjmqvsaPk2yHVJZiIu+VMy5k5 rdmakit-example";
const PROGRAM = path.join(__dirname, "fixtures", "azure", "cloud-program.ts");
const raw = (nodes: number) => ({
    name: "ib", fabric: "azure-ib", nodes, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
    azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" },
});

function build(s: { skus: unknown[]; usages: unknown[]; status?: number; error?: unknown; nodes?: number }): { refusal?: string; registered: string[] } {
    const nodes = s.nodes ?? 4;
    const r = spawnSync(process.execPath, ["--import", "tsx", PROGRAM], {
        encoding: "utf8", env: { ...process.env, RDMAKIT_SCENARIO: JSON.stringify({ ...s, nodes, spec: raw(nodes) }) }, timeout: 60_000,
    });
    if (r.status === 1) {
        const registered = JSON.parse(/^registered: (.*)$/m.exec(r.stderr)?.[1] ?? "null");
        assert.ok(Array.isArray(registered), r.stderr);
        assert.deepEqual(registered.filter((t: string) => t.startsWith("azure-native:")), [], "refused before any Azure resource is registered");
        return { refusal: r.stderr, registered };
    }
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

test("answers that fit: the cluster is created", () => {
    const r = build({ skus: [h100Sku()], usages: usages(0, 384) });
    assert.equal(r.refusal, undefined);
    assert.ok(r.registered.includes("azure-native:compute:VirtualMachineScaleSet"));
});

test("a size restricted for the subscription, and a family quota short of the nodes, are refused together", () => {
    const r = build({ skus: [h100Sku({ restrictions: [NOT_AVAILABLE] })], usages: usages(96, 384) });
    assert.match(r.refusal!, /cluster\.azure\.vmSize: is restricted in eastus for this subscription \(NotAvailableForSubscription, Microsoft\.Compute\/skus\)/);
    assert.match(r.refusal!, /ask Azure support to enable the size/);
    assert.match(r.refusal!, /cluster\.nodes: need 384 vCPUs of Standard NDSH100v5 Family vCPUs in eastus; the subscription uses 96 of its 384/);
    assert.match(r.refusal!, /at most 3 nodes, or a quota increase/);
});

test("a size the location does not offer is refused; a read ARM refuses is a refusal with ARM's words", () => {
    const none = build({ skus: [h100Sku({ locations: ["westus3"], locationInfo: [] })], usages: usages(0, 384) });
    assert.match(none.refusal!, /cluster\.azure\.vmSize: is not offered in eastus/);
    const denied = build({ skus: [], usages: [], status: 403, error: { code: "AuthorizationFailed", message: "The client does not have authorization to perform action 'Microsoft.Compute/skus/read'." } });
    assert.match(denied.refusal!, /cluster\.azure\.location: could not be checked .* answered 403: AuthorizationFailed The client does not have authorization/);
    assert.doesNotMatch(denied.refusal!, /stand-in-bearer-token/, "the token is never printed");
});

test("grading is pure: the regional vCPU total counts too; a Zone restriction does not stop a regional scale set", () => {
    const spec = parseClusterSpec(raw(4));
    const zoneOnly = { type: "Zone", values: ["eastus"], restrictionInfo: { locations: ["eastus"], zones: ["1"] }, reasonCode: "NotAvailableForSubscription" };
    assert.deepEqual(gradeAzureCloud(spec, { skus: [h100Sku({ restrictions: [zoneOnly] }) as never], usages: usages(0, 384) }), []);
    const regional = gradeAzureCloud(spec, { skus: [h100Sku() as never], usages: usages(0, 384, 100) });
    assert.equal(regional.length, 1);
    assert.match(regional[0].message, /Total Regional vCPUs/);
    assert.deepEqual(gradeAzureCloud(spec, {}), [], "no answers (offline): nothing refused");
});

test("ARM lists are followed through nextLink", async () => {
    let calls = 0;
    const impl = (async (u: string) => {
        calls++;
        const body = String(u).includes("page2") ? { value: [2] } : { value: [1], nextLink: "https://management.azure.com/x?page2" };
        return new Response(JSON.stringify(body), { status: 200 });
    }) as unknown as typeof fetch;
    assert.deepEqual(await armList("https://management.azure.com/x", "t", impl), [1, 2]);
    assert.equal(calls, 2);
});
