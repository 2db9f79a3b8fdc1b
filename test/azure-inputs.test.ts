import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { SpecError } from "../components/errors";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { parseNodeNics, subscriptionOf, vmssNicListUrl } from "../components/azure/nodeIps";
import { vmssNics } from "./fixtures/azure/arm-answers";
import { computerNamePrefix, layoutIssues, nsgRules } from "../components/azure/settings";
import { azureFabricSummary } from "../components/azure/summary";
import { parseSubnetId } from "../components/azure/network";
import { azureCloudCheckList } from "../components/azure/cloud";

/*
 * Azure input checks and pure helpers. The spec checks live in components/spec.ts; these tests prove through
 * parseClusterSpec that every bad input of issue 4 is refused with the field named and what is allowed.
 */

const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICxhuhIlltwIFeKx5QpbjmqvsaPk2yHVJZiIu+VMy5k5 rdmakit-example";

function azureSpec(): any {
    return {
        name: "ibtest",
        fabric: "azure-ib",
        nodes: 4,
        ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" },
    };
}

function edit(f: (s: any) => void): any {
    const s = azureSpec();
    f(s);
    return s;
}

/** The one issue at `path`; its message + allowed text must mention each string. */
function expectIssue(raw: unknown, path: string, mentions: string[]) {
    let err: unknown;
    try {
        parseClusterSpec(raw);
    } catch (e) {
        err = e;
    }
    assert.ok(err instanceof SpecError, "the spec was accepted");
    const issue = err.issues.find((i) => i.path === path);
    assert.ok(issue, `no issue at ${path}; got:\n${err.message}`);
    const text = `${issue.message} | ${issue.allowed ?? ""}`;
    for (const m of mentions) assert.ok(text.includes(m), `issue at ${path} does not mention "${m}": ${text}`);
    assert.ok(err.message.includes(`${path}: `), "the printed message names the field");
    return issue;
}

test("the example stack config parses and plans as 4 x ND96isr_H100_v5 with the Gen2 HPC image", () => {
    const doc = parseYaml(readFileSync(join(__dirname, "..", "examples", "azure-h100.yaml"), "utf8"));
    const spec = parseClusterSpec(doc.config["rdmakit:cluster"]);
    assert.equal(spec.fabric, "azure-ib");
    assert.equal(spec.nodes, 4);
    assert.equal(spec.azure?.vmSize, "Standard_ND96isr_H100_v5");
    assert.match(spec.ssh.publicKey ?? "", /^ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI[A-Za-z0-9+/]{43} /);
    const plan = planCluster(spec);
    assert.deepEqual(plan.azure?.image, { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204", version: "22.04.2026072901" });
    assert.equal(plan.azure?.partitionLimit, 100);
    // parsing is idempotent: the component re-checks a parsed spec and must get the same spec back
    assert.deepEqual(parseClusterSpec(spec), spec);
    // the node IPs come from ARM with the provider's login (components/azure/nodeIps.ts), not the Azure CLI
    const text = readFileSync(join(__dirname, "..", "examples", "azure-h100.yaml"), "utf8");
    assert.doesNotMatch(text, /az vmss nic list|az login/);
    assert.match(text, /node IPs from ARM with the azure-native provider's own login/);
});

test("a size without InfiniBand is refused, naming its IB twin", () => {
    const issue = expectIssue(edit((s) => (s.azure.vmSize = "Standard_ND96is_H100_v5")), "cluster.azure.vmSize", [
        "no InfiniBand", "Standard_ND96isr_H100_v5",
    ]);
    assert.equal(issue.value, "Standard_ND96is_H100_v5");
    expectIssue(edit((s) => (s.azure.vmSize = "Standard_D4s_v5")), "cluster.azure.vmSize", ["not an InfiniBand size", "Standard_HX176rs"]);
});

test("a VNet overlapping Azure's RDMA range 172.16.0.0/16 is refused; one beside it is not", () => {
    expectIssue(edit((s) => (s.azure.vnetCidr = "172.16.0.0/12")), "cluster.azure.vnetCidr", ["overlaps 172.16.0.0/16", "outside 172.16.0.0/16"]);
    expectIssue(edit((s) => {
        s.azure.vnetCidr = "172.16.128.0/20";
        s.azure.subnetCidr = "172.16.128.0/24";
    }), "cluster.azure.vnetCidr", ["172.16.0.0/16"]);
    const ok = parseClusterSpec(edit((s) => {
        s.azure.vnetCidr = "172.17.0.0/16";
        s.azure.subnetCidr = "172.17.1.0/24";
    }));
    assert.equal(ok.azure?.vnetCidr, "172.17.0.0/16");
    expectIssue(edit((s) => (s.azure.subnetCidr = "10.20.0.0/24")), "cluster.azure.subnetCidr", ["not inside the VNet 10.10.0.0/16"]);
});

test("node limits: 100 by default, 300 with quotaRaised, and never more (IB does not span scale sets)", () => {
    assert.equal(parseClusterSpec(edit((s) => (s.nodes = 100))).nodes, 100);
    const i101 = expectIssue(edit((s) => (s.nodes = 101)), "cluster.nodes", ["exceeds the 100 VMs", "300", "quotaRaised", "1..100"]);
    assert.equal(i101.value, 101);
    const raised = parseClusterSpec(edit((s) => {
        s.nodes = 300;
        s.azure.quotaRaised = true;
    }));
    assert.equal(planCluster(raised).azure?.partitionLimit, 300);
    expectIssue(edit((s) => {
        s.nodes = 301;
        s.azure.quotaRaised = true;
    }), "cluster.nodes", ["exceeds the 300 VMs", "InfiniBand does not span scale sets", "1..300"]);
});

test("a Generation 1 image is refused for ND H100/H200/A100", () => {
    for (const vmSize of ["Standard_ND96isr_H100_v5", "Standard_ND96isr_H200_v5", "Standard_ND96asr_v4"]) {
        expectIssue(edit((s) => {
            s.azure.vmSize = vmSize;
            s.azure.image = { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204", generation: "V1" };
        }), "cluster.azure.image.generation", [`${vmSize} runs only Generation 2 images`, "V2"]);
    }
});

test("password login is refused, as a flag and as a secret in plain text", () => {
    expectIssue(edit((s) => (s.azure.passwordAuthentication = true)), "cluster.azure.passwordAuthentication", [
        "password login is not allowed", "SSH keys only",
    ]);
    const leaked = expectIssue(edit((s) => (s.azure.adminPassword = "Sup3r$ecret!")), "cluster.azure.adminPassword", ["password login is not supported"]);
    assert.equal(leaked.value, "(hidden)");
    expectIssue(edit((s) => delete s.ssh.publicKey), "cluster.ssh.publicKey", ["is missing", "ssh-ed25519"]);
});

test("component-level checks: a plan of another fabric, Azure's reserved admin names", () => {
    const spec = parseClusterSpec(azureSpec());
    assert.deepEqual(layoutIssues(spec, planCluster(spec)), []);
    const aws = planCluster(parseClusterSpec({
        ...azureSpec(), fabric: "aws-efa", azure: undefined,
        aws: { region: "us-east-1", availabilityZone: "us-east-1a", instanceType: "p5.48xlarge" },
    }));
    assert.deepEqual(layoutIssues(spec, aws).map((i) => [i.path, i.value]), [["plan.fabric", "aws-efa"]]);
    const root = parseClusterSpec(edit((s) => (s.ssh.user = "root")));
    const issues = layoutIssues(root, planCluster(root));
    assert.equal(issues.length, 1);
    assert.equal(issues[0].path, "cluster.ssh.user");
    assert.match(issues[0].message, /Azure refuses/);
});

test("NSG rules: SSH from the allowed CIDRs at 100, Internet denied at 4096, nothing else", () => {
    const rules = nsgRules(["203.0.113.0/24", "198.51.100.7/32"]);
    assert.deepEqual(rules.map((r) => [r.name, r.priority, r.direction, r.access, r.protocol]), [
        ["allow-ssh-from-allowed-cidrs", 100, "Inbound", "Allow", "Tcp"],
        ["deny-internet-inbound", 4096, "Inbound", "Deny", "*"],
    ]);
    assert.deepEqual(rules[0].sourceAddressPrefixes, ["203.0.113.0/24", "198.51.100.7/32"]);
    assert.equal(rules[0].destinationPortRange, "22");
    assert.equal(rules[0].sourceAddressPrefix, undefined);
    assert.equal(rules[1].sourceAddressPrefix, "Internet");
});

test("computer name prefix fits Azure's 15 characters without a trailing hyphen", () => {
    assert.equal(computerNamePrefix("h100-demo"), "h100-demo");
    assert.equal(computerNamePrefix("training-cluster-eastus"), "training-cluste");
    assert.equal(computerNamePrefix("abcdefghijklmn-x"), "abcdefghijklmn");
});

test("node lookup: one ARM list of the scale set's NICs; instance ids and addresses checked and sorted", () => {
    assert.equal(vmssNicListUrl("sub-1", "rg 1", "vmss1"),
        "https://management.azure.com/subscriptions/sub-1/resourceGroups/rg%201/providers/microsoft.Compute/virtualMachineScaleSets/vmss1/networkInterfaces?api-version=2018-10-01");
    const expect = { nodes: 3, subnetCidrs: ["10.10.0.0/24"], vmss: "vmss1" };
    // VM 0 at .10, VM 1 at .9, VM 2 at .4: 10.10.0.10 sorts after 10.10.0.9 by address, not by text
    assert.deepEqual(parseNodeNics(vmssNics("rg", "vmss1", ["10.10.0.10", "10.10.0.9", "10.10.0.4"]), expect), [
        { instanceId: "2", privateIp: "10.10.0.4" }, { instanceId: "1", privateIp: "10.10.0.9" }, { instanceId: "0", privateIp: "10.10.0.10" },
    ]);
    assert.throws(() => parseNodeNics(vmssNics("rg", "vmss1", ["10.10.0.4"]), expect), /has 1 node NIC, expected 3/);
    assert.throws(() => parseNodeNics(vmssNics("rg", "vmss1", ["10.10.1.4", "10.10.0.5", "10.10.0.6"]), expect), /10\.10\.1\.4, outside the nodes' subnet 10\.10\.0\.0\/24/);
    const noIp = vmssNics("rg", "vmss1", ["10.10.0.4", "10.10.0.5", "10.10.0.6"]);
    delete (noIp[0].properties.ipConfigurations[0].properties as { privateIPAddress?: string }).privateIPAddress;
    assert.throws(() => parseNodeNics(noIp, expect), /nic of vmss1 has no private IPv4 address/);
    const noVm = vmssNics("rg", "vmss1", ["10.10.0.4", "10.10.0.5", "10.10.0.6"]).map((n) => ({ ...n, properties: { ...n.properties, virtualMachine: {} } }));
    assert.throws(() => parseNodeNics(noVm, expect), /belongs to no scale-set VM/);
    assert.throws(() => parseNodeNics(vmssNics("rg", "vmss1", ["10.10.0.5", "10.10.0.5", "10.10.0.6"]), expect), /same private IP twice/);
    assert.equal(subscriptionOf("/subscriptions/1234-ab/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/v"), "1234-ab");
    assert.throws(() => subscriptionOf("vmss1"), /not an Azure resource id/);
});

test("fabric summary reads size, HCAs, busbw expectation and topology file from the plan", () => {
    const summary = azureFabricSummary(planCluster(parseClusterSpec(azureSpec())));
    assert.equal(summary.vmSize, "Standard_ND96isr_H100_v5");
    assert.equal(summary.hcasPerNode, 8);
    assert.deepEqual(summary.hcaNames, ["mlx5_ib0", "mlx5_ib1", "mlx5_ib2", "mlx5_ib3", "mlx5_ib4", "mlx5_ib5", "mlx5_ib6", "mlx5_ib7"]);
    assert.equal(summary.hcaRateGbps, 400);
    assert.equal(summary.rdmaGbpsPerNode, 3200);
    assert.equal(summary.ncclTopoFile, "/opt/microsoft/ndv5-topo.xml");
    // the only multi-node H100 figure (~450 GB/s, 8 nodes) was measured with SHARP, which the kit's validation (NCCL_NET=IB)
    // does not run: it is named, and the floor is 60% of the 8 x 400 Gb/s line rate, the same rule as ND H200 v5's
    assert.equal(summary.expectedBusbwGBps, 400);
    assert.equal(summary.minBusbwGBps, 240);
    assert.match(summary.busbwSource, /450 GB\/s on 8 nodes .* measured with SHARP, which validation does not run \(.*sku_performance_baseline/);
    const h200 = azureFabricSummary(planCluster(parseClusterSpec({ ...azureSpec(), azure: { ...azureSpec().azure, vmSize: "Standard_ND96isr_H200_v5" } })));
    assert.deepEqual([h200.expectedBusbwGBps, h200.minBusbwGBps], [summary.expectedBusbwGBps, summary.minBusbwGBps]);
    assert.equal(summary.image, "microsoft-dsvm:ubuntu-hpc:2204:22.04.2026072901");
});

const SUBNET = "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu/subnets/gpu";

test("an existing subnet: its ARM id's grammar is checked before anything, and the kit's own network fields beside it are refused", () => {
    const spec = parseClusterSpec(edit((s) => (s.azure.network = { subnetId: SUBNET })));
    assert.deepEqual(parseSubnetId(SUBNET), {
        subscription: "00000000-1111-2222-3333-444444444444", resourceGroup: "hub-rg", vnet: "spoke-gpu", subnet: "gpu",
        vnetId: "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu",
    });
    // ARM's segment names in any case, as ids copied from the portal or the CLI come
    assert.ok(parseClusterSpec(edit((s) => (s.azure.network = { subnetId: SUBNET.replace("resourceGroups", "resourcegroups") }))));
    for (const bad of [
        SUBNET.replace("/subnets/gpu", ""), // the VNet's id, not a subnet's
        SUBNET.replace("00000000-1111-2222-3333-444444444444", "my-subscription"),
        SUBNET.replace("Microsoft.Network", "Microsoft.Compute"),
        SUBNET.replace("spoke-gpu", "-spoke"), // a VNet name starts with a letter or digit
        SUBNET.replace("/gpu", "/gpu."), // and a subnet name does not end in '.'
        "gpu",
    ]) {
        expectIssue(edit((s) => (s.azure.network = { subnetId: bad })), "cluster.azure.network.subnetId", ["/subscriptions/<subscription GUID>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>"]);
    }
    // the fields of the network and jump host the kit makes mean nothing beside an existing subnet: refused, each named
    for (const [field, value] of [["vnetCidr", "10.60.0.0/16"], ["subnetCidr", "10.60.4.0/22"], ["jumpHostSize", "Standard_B2ats_v2"]] as const) {
        expectIssue(edit((s) => { s.azure.network = { subnetId: SUBNET }; s.azure[field] = value; }), `cluster.azure.${field}`, ["cluster.azure.network.subnetId", "leave it out"]);
    }
    // a parsed spec carries the defaults, and is taken again as it is (RdmaCluster hands it to its fabric component)
    assert.deepEqual(parseClusterSpec(spec), spec);
    // no jump host: the plan has no entry (Ansible and the operator reach the private addresses over their own route)
    assert.equal(planCluster(spec).entry, undefined);
    assert.deepEqual(planCluster(parseClusterSpec(azureSpec())).entry, { kind: "jump-host", user: "azureuser" });
    // what plan says is asked of Azure: the subnet, and no jump host size
    const asked = azureCloudCheckList(spec).join("\n");
    assert.match(asked, /the subnet \(cluster\.azure\.network\.subnetId\) exists, is in the stack's subscription and its VNet in eastus, has no delegation, keeps clear of 172\.16\.0\.0\/16/);
    assert.doesNotMatch(asked, /jump host/);
});

test("node addresses are checked against every IPv4 range of an existing subnet", () => {
    const expect = { nodes: 2, subnetCidrs: ["10.60.4.0/24", "10.60.9.0/24"], vmss: "vmss1" };
    assert.deepEqual(parseNodeNics(vmssNics("rg", "vmss1", ["10.60.9.4", "10.60.4.4"]), expect).map((n) => n.privateIp), ["10.60.4.4", "10.60.9.4"]);
    assert.throws(() => parseNodeNics(vmssNics("rg", "vmss1", ["10.60.5.4", "10.60.4.4"]), expect), /10\.60\.5\.4, outside the nodes' subnet 10\.60\.4\.0\/24, 10\.60\.9\.0\/24/);
});
