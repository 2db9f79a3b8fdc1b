// What AzureInfinibandCluster asks Azure before creating anything, on the mock engine with ARM's recorded answers
// (test/fixtures/azure/arm-answers.ts): a size not offered in the location, one restricted for the subscription, a
// family or regional vCPU quota short of the nodes, and a read ARM refuses are each refused with the field, what
// Azure said and what to do, before any Azure resource is registered.
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import * as path from "node:path";
import assert from "node:assert/strict";
import { armHost, armList, azureCloudCheckList, gradeAzureCloud, imageIssues, newestFirst } from "../components/azure/cloud";
import { vmssNicListUrl } from "../components/azure/nodeIps";
import { parseClusterSpec } from "../components/spec";
import { b2sSku, d8sv5Sku, existingSubnet, h100Sku, NOT_AVAILABLE, ubuntuHpc2204Versions, usages } from "./fixtures/azure/arm-answers";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICxhuhIlltwIFeKx5QpbjmqvsaPk2yHVJZiIu+VMy5k5 rdmakit-example";
const PROGRAM = path.join(__dirname, "fixtures", "azure", "cloud-program.ts");
const raw = (nodes: number) => ({
    name: "ib", fabric: "azure-ib", nodes, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
    azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" },
});

function build(s: { skus: unknown[]; usages: unknown[]; imageVersions?: string[]; status?: number; error?: unknown; nodes?: number; azure?: Record<string, unknown>; network?: Record<string, unknown>; spec?: Record<string, unknown> }): { refusal?: string; registered: string[]; warnings: string[] } {
    const nodes = s.nodes ?? 4;
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, PROGRAM], {
        encoding: "utf8", env: { ...process.env, RDMAKIT_SCENARIO: JSON.stringify({ ...s, nodes, spec: { ...raw(nodes), ...s.spec, azure: { ...raw(nodes).azure, ...s.azure } } }) }, timeout: 60_000,
    });
    if (r.status === 1) {
        const registered = JSON.parse(/^registered: (.*)$/m.exec(r.stderr)?.[1] ?? "null");
        assert.ok(Array.isArray(registered), r.stderr);
        assert.deepEqual(registered.filter((t: string) => t.startsWith("azure-native:")), [], "refused before any Azure resource is registered");
        return { refusal: r.stderr, registered, warnings: [] };
    }
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

test("answers that fit: the cluster is created", () => {
    const r = build({ skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 384) });
    assert.equal(r.refusal, undefined);
    assert.deepEqual(r.warnings, []);
    assert.ok(r.registered.includes("azure-native:compute:VirtualMachineScaleSet"));
});

test("a size restricted for the subscription, and a family quota short of the nodes, are refused together", () => {
    const r = build({ skus: [h100Sku({ restrictions: [NOT_AVAILABLE] }), b2sSku(), d8sv5Sku()], usages: usages(96, 384) });
    assert.match(r.refusal!, /cluster\.azure\.vmSize: is restricted in eastus for this subscription \(NotAvailableForSubscription, Microsoft\.Compute\/skus\)/);
    assert.match(r.refusal!, /ask Azure support to enable the size/);
    assert.match(r.refusal!, /cluster\.nodes: need 384 vCPUs of Standard NDSH100v5 Family vCPUs in eastus; the subscription uses 96 of its 384/);
    assert.match(r.refusal!, /at most 3 nodes, or a quota increase/);
});

test("a size the location does not offer is refused; a read ARM refuses is a refusal with ARM's words", () => {
    const none = build({ skus: [h100Sku({ locations: ["westus3"], locationInfo: [] }), b2sSku(), d8sv5Sku()], usages: usages(0, 384) });
    assert.match(none.refusal!, /cluster\.azure\.vmSize: is not offered in eastus/);
    const denied = build({ skus: [], usages: [], status: 403, error: { code: "AuthorizationFailed", message: "The client does not have authorization to perform action 'Microsoft.Compute/skus/read'." } });
    assert.match(denied.refusal!, /cluster\.azure\.location: could not be checked .* answered 403: AuthorizationFailed The client does not have authorization/);
    assert.doesNotMatch(denied.refusal!, /stand-in-bearer-token/, "the token is never printed");
});

test("an existing subnet: a delegated one is refused before any Azure resource; one that fits needs no jump host size or network", () => {
    const subnetId = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke/subnets/gpu";
    // no Standard_B2s in the SKU list: a jump host size asked about would be refused as not offered
    const delegated = build({ skus: [h100Sku(), d8sv5Sku()], usages: usages(0, 384), azure: { network: { subnetId } }, network: existingSubnet(subnetId, { addressPrefix: "10.10.0.0/24", delegatedTo: "Microsoft.ContainerInstance/containerGroups" }) });
    assert.match(delegated.refusal!, /cluster\.azure\.network\.subnetId: is delegated to Microsoft\.ContainerInstance\/containerGroups \(subnet gpu of VNet spoke\): a delegated subnet holds that service's resources only, not a VM scale set \(got "\/subscriptions\/00000000-[^)]*\); allowed: a subnet without delegations/);
    assert.doesNotMatch(delegated.refusal!, /jumpHostSize/);
    const fits = build({ skus: [h100Sku(), d8sv5Sku()], usages: usages(0, 384), azure: { network: { subnetId } }, network: existingSubnet(subnetId, { addressPrefix: "10.10.0.0/24" }) });
    assert.equal(fits.refusal, undefined);
    assert.deepEqual(fits.warnings, []);
    // no VNet, subnet, NAT, public IP or jump host: the scale set and its NSG, the Slurm head node (Slurm is the default
    // on azure-ib: its VM, NIC and NSG, in the same subnet) and the resource group
    assert.deepEqual(fits.registered.filter((t) => t.startsWith("azure-native:")).sort(), [
        "azure-native:compute:VirtualMachine", "azure-native:compute:VirtualMachineScaleSet", "azure-native:network:NetworkInterface",
        "azure-native:network:NetworkSecurityGroup", "azure-native:network:NetworkSecurityGroup", "azure-native:resources:ResourceGroup",
    ]);
    // a subnet with neither a NAT gateway nor a route table: created, with a warning about the nodes' egress
    const bare = build({ skus: [h100Sku(), d8sv5Sku()], usages: usages(0, 384), azure: { network: { subnetId } }, network: existingSubnet(subnetId, { addressPrefix: "10.10.0.0/24", egress: false }) });
    assert.equal(bare.refusal, undefined);
    assert.match(bare.warnings.join("\n"), /subnet gpu has no NAT gateway and no route table: the nodes reach the package repositories/);
});

test("grading is pure: the regional vCPU total counts too; a Zone restriction does not stop a regional scale set", () => {
    const spec = parseClusterSpec(raw(4));
    const zoneOnly = { type: "Zone", values: ["eastus"], restrictionInfo: { locations: ["eastus"], zones: ["1"] }, reasonCode: "NotAvailableForSubscription" };
    assert.deepEqual(gradeAzureCloud(spec, { skus: [h100Sku({ restrictions: [zoneOnly] }) as never, b2sSku() as never, d8sv5Sku() as never], usages: usages(0, 384) }), []);
    const regional = gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: usages(0, 384, 100) });
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

test("the pinned image version missing in the location is refused before anything exists, naming the newest versions", () => {
    const r = build({ skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 384), imageVersions: ubuntuHpc2204Versions(false) });
    assert.match(r.refusal!, /cluster\.azure\.image\.version: is not a version of microsoft-dsvm:ubuntu-hpc:2204 in eastus \(ARM answered 404 NotFound\); it is the kit's pinned default/);
    assert.match(r.refusal!, /one of the newest: 22\.04\.2026082801, 22\.04\.2024102301, 22\.04\.2024043001/);
    // a user's typo in cluster.azure.image is caught the same way, and an unknown SKU says there are no versions
    const typo = build({ skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 384), azure: { image: { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204", version: "22.04.202607290" } } });
    assert.match(typo.refusal!, /cluster\.azure\.image\.version: is not a version of microsoft-dsvm:ubuntu-hpc:2204 in eastus \(ARM answered 404 NotFound\)\n?.*one of the newest: 22\.04\.2026082801, 22\.04\.2026072901/s);
    const sku = imageIssues(parseClusterSpec({ ...raw(4), azure: { ...raw(4).azure, image: { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204-typo" } } }), { found: false, versions: [] });
    assert.match(`${sku[0].path}: ${sku[0].message}`, /cluster\.azure\.image\.sku: microsoft-dsvm:ubuntu-hpc:2204-typo has no image versions in eastus/);
});

test("the jump host: a size not offered is refused by its field; its vCPUs count against its family and the regional total", () => {
    const r = build({ skus: [h100Sku(), d8sv5Sku()], usages: usages(0, 384) });
    assert.match(r.refusal!, /cluster\.azure\.jumpHostSize: is not offered in eastus/);
    const spec = parseClusterSpec(raw(4));
    // 4 x 96 node vCPUs fit a regional limit of 8 + 384 exactly; the jump host's 2 and the Slurm head VM's 8 do not
    const regional = gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: usages(0, 384, 392) });
    assert.equal(regional.length, 1);
    assert.match(regional[0].message, /need 394 vCPUs of Total Regional vCPUs in eastus \(2 of them for the Standard_B2s jump host, 8 for the Standard_D8s_v5 Slurm head VM\); the subscription uses 8 of its 392/);
    assert.match(regional[0].allowed!, /at most 3 nodes/);
    const bs = usages(0, 384).map((u) => u.name.value === "standardBSFamily" ? { ...u, currentValue: 99 } : u);
    const family = gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: bs });
    assert.deepEqual(family.map((i) => i.path), ["cluster.azure.jumpHostSize"]);
    assert.match(family[0].message, /need 2 vCPUs of Standard BS Family vCPUs/);
});

test("a family quota ARM lists under another spelling is still read; one it does not list is said, not passed in silence", () => {
    const spec = parseClusterSpec(raw(4));
    const spaced = usages(96, 384).map((u) => u.name.value === "standardNDSH100v5Family" ? { ...u, name: { value: "StandardNDSH100v5Family " } } : u);
    const short = gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: spaced });
    assert.deepEqual(short.map((i) => i.path), ["cluster.nodes"], "the family row matched across case and whitespace");
    const warnings: string[] = [];
    const none = usages(0, 384).filter((u) => u.name.value !== "standardNDSH100v5Family");
    assert.deepEqual(gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: none }, (m) => warnings.push(m)), []);
    assert.equal(warnings.length, 1);
    assert.match(warnings[0], /family quota not found: .*usages lists no standardNDSH100v5Family row/);
});

test("plan's list of what is asked of Azure names the image version, the jump host and the head VM; versions sort by number", () => {
    const list = azureCloudCheckList(parseClusterSpec(raw(4))).join("\n");
    assert.match(list, /Standard_ND96isr_H100_v5, the jump host's Standard_B2s and the Slurm head VM's Standard_D8s_v5 offered in eastus/);
    assert.match(list, /cover 4 nodes and the jump host and the Slurm head VM/);
    assert.match(list, /image microsoft-dsvm:ubuntu-hpc:2204:22\.04\.2026072901 exists in eastus; if not, the newest versions are listed/);
    assert.deepEqual(newestFirst(["22.04.2024043001", "22.04.2026082801", "22.04.9", "24.04.2026072901"]), ["24.04.2026072901", "22.04.2026082801", "22.04.2024043001", "22.04.9"]);
});

test("ARM's host follows the provider's cloud; a custom metadata host or an unknown cloud is refused, not asked publicly", () => {
    assert.equal(armHost({}), "https://management.azure.com");
    assert.equal(armHost({ environment: "usgovernment" }), "https://management.usgovcloudapi.net");
    assert.equal(armHost({ envVar: "china" }), "https://management.chinacloudapi.cn");
    assert.equal(armHost({ environment: "public", envVar: "china" }), "https://management.azure.com", "the stack setting wins over the variable");
    assert.throws(() => armHost({ metadataHost: "management.local.azurestack.external" }), /metadataHost .* public, usgovernment and china/);
    assert.throws(() => armHost({ environment: "german" }), /allowed: public, usgovernment, china/);
    assert.match(vmssNicListUrl("s", "rg", "v", armHost({ environment: "china" })), /^https:\/\/management\.chinacloudapi\.cn\/subscriptions\/s\//);
});

test("the Slurm head VM: its size asked of ARM before anything is created, by its own field; counted in its family and the regional total", () => {
    // not offered in the location: refused by scheduler.controller.vmSize, before any Azure resource
    const missing = build({ skus: [h100Sku(), b2sSku()], usages: usages(0, 384) });
    assert.match(missing.refusal!, /cluster\.scheduler\.controller\.vmSize: is not offered in eastus \(Microsoft\.Compute\/skus lists no such virtualMachines size there\)/);
    // a size of the user's choice is the one asked about; restricted for the subscription
    const chosen = build({ skus: [h100Sku(), b2sSku(), d8sv5Sku({ name: "Standard_D16s_v5", size: "D16s_v5", restrictions: [NOT_AVAILABLE] })], usages: usages(0, 384),
        spec: { scheduler: { type: "slurm", controller: { vmSize: "Standard_D16s_v5" } } } });
    assert.match(chosen.refusal!, /cluster\.scheduler\.controller\.vmSize: is restricted in eastus for this subscription \(NotAvailableForSubscription/);
    assert.doesNotMatch(chosen.refusal!, /Standard_D8s_v5/);
    // its family's quota short: the head VM's field, with what it needs
    const spec = parseClusterSpec(raw(4));
    const dsv5 = usages(0, 384).map((u) => u.name.value === "standardDSv5Family" ? { ...u, currentValue: 96 } : u);
    const family = gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: dsv5 });
    assert.deepEqual(family.map((i) => [i.path, i.value]), [["cluster.scheduler.controller.vmSize", "Standard_D8s_v5"]]);
    assert.match(family[0].message, /need 8 vCPUs of Standard DSv5 Family vCPUs in eastus \(8 of them for the Standard_D8s_v5 Slurm head VM\); the subscription uses 96 of its 100/);
    assert.match(family[0].allowed!, /a Slurm head VM size of another family, or a quota increase for Standard DSv5 Family vCPUs/);
    // scheduler none: no head VM, nothing asked about it (a SKU list without its size passes) and its 8 vCPUs not
    // counted: a regional limit of 8 used + 386 holds the nodes and the jump host, not the head VM as well
    const none = parseClusterSpec({ ...raw(4), scheduler: { type: "none" } });
    assert.deepEqual(gradeAzureCloud(none, { skus: [h100Sku() as never, b2sSku() as never], usages: usages(0, 384, 394) }), []);
    assert.deepEqual(gradeAzureCloud(spec, { skus: [h100Sku() as never, b2sSku() as never, d8sv5Sku() as never], usages: usages(0, 384, 394) }).map((i) => i.path), ["cluster.nodes"]);
    assert.doesNotMatch(azureCloudCheckList(none).join("\n"), /head VM/);
});
