import { isSecretInput, mockHostKey, mockHostKeyState, revealSecrets } from "./fixtures/host-key-mock";
import { nodeCustomData } from "../components/azure/settings";
import { before, test } from "node:test";
import { jumpHostCloudConfig } from "../components/provision/jump";
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import { parseClusterSpec } from "../components/spec";
import { evaluatePolicies } from "../policies/evaluate";
import { parse as parseYaml } from "yaml";
import { armFetch, b2sSku, d8sv5Sku, CLIENT_CONFIG, CLIENT_TOKEN, existingSubnet, h100Sku, usages, vmssNics } from "./fixtures/azure/arm-answers";

/*
 * AzureInfinibandCluster on Pulumi's mock engine: every registered resource is recorded with its inputs, and the
 * ARM answers (a stand-in fetch) list the scale set's NICs for the capacity it was given.
 */

interface Registered {
    type: string;
    name: string;
    inputs: any;
    raw?: any;
}

const registered: Registered[] = [];
const SUB = "00000000-1111-2222-3333-444444444444";
const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICxhuhIlltwIFeKx5QpbjmqvsaPk2yHVJZiIu+VMy5k5 rdmakit-example";

/** The scale set's NICs as ARM lists them for n VMs: VM i at .(4+i), listed in reverse. */
function nicsOf(vmssName: string) {
    const vmss = registered.find((r) => r.type === "azure-native:compute:VirtualMachineScaleSet" && `${r.name}-a1b2c3` === vmssName);
    const n = Number(vmss?.inputs.sku.capacity ?? 0);
    return vmssNics("mock-rg", vmssName, Array.from({ length: n }, (_, i) => `${nicBase}${4 + i}`)).reverse();
}

/** First three octets of the mocked NIC addresses (Azure hands out .4 upwards in the nodes' subnet). */
let nicBase = "10.10.0.";

let mod: typeof import("../components/azure/cluster");
const invokes: string[] = [];
// ARM's answers that fit: the size offered in eastus, room in the family quota for 90 nodes; the jump host sizes the
// tests use (Standard_B2ats_v2 in the B2s entry's shape, 2 vCPUs; its family name there is the test's, not a capture)
// existing subnets and VNets ARM knows (bring-your-own network tests fill it)
const network: Record<string, unknown> = {};
const arm = armFetch({ skus: [h100Sku(), b2sSku(), d8sv5Sku(), b2sSku({ name: "Standard_B2ats_v2", size: "B2ats_v2", family: "standardBasv2Family" })], usages: usages(0, 96 * 100), nics: (v) => nicsOf(v), network });

before(async () => {
    globalThis.fetch = arm.impl;
    await pulumi.runtime.setMocks(
        {
            newResource(args: pulumi.runtime.MockResourceArgs) {
                // inputs as the resource gets them; `raw` keeps the secret wrappers (the host keys' customData)
                registered.push({ type: args.type, name: args.name, inputs: revealSecrets(args.inputs), raw: args.inputs });
                const name = args.inputs.resourceGroupName && args.type === "azure-native:resources:ResourceGroup"
                    ? args.inputs.resourceGroupName
                    : `${args.name}-a1b2c3`;
                const state: Record<string, unknown> = { ...args.inputs, name, ...mockHostKeyState(args) };
                const id = `/subscriptions/${SUB}/resourceGroups/mock-rg/providers/${args.type}/${name}`;
                if (args.type === "azure-native:network:PublicIPAddress") state.ipAddress = args.name.endsWith("-jump-ip") ? "20.30.40.50" : "20.30.40.51";
                if (args.type === "azure-native:compute:VirtualMachineScaleSet") state.uniqueId = `uid-${args.name}`;
                if (args.type === "azure-native:network:NetworkInterface" && args.name.endsWith("-head-nic")) {
                    state.ipConfigurations = args.inputs.ipConfigurations.map((c: Record<string, unknown>) => ({ ...c, privateIPAddress: "10.10.0.250" }));
                }
                return { id, state };
            },
            call(args: pulumi.runtime.MockCallArgs) {
                invokes.push(args.token);
                // the subscription and the ARM token the pre-create checks use (components/azure/cloud.ts)
                if (args.token === "azure-native:authorization:getClientConfig") return CLIENT_CONFIG;
                if (args.token === "azure-native:authorization:getClientToken") return CLIENT_TOKEN;
                throw new Error(`unexpected invoke ${args.token}`);
            },
        },
        "rdmakit",
        "test",
        false,
    );
    mod = await import("../components/azure/cluster");
});

function azureSpec(name: string, nodes: number, extra: (s: any) => void = () => {}) {
    const raw: any = {
        name,
        fabric: "azure-ib",
        nodes,
        ssh: { allowedCidrs: ["203.0.113.0/24", "198.51.100.0/24"], publicKey: KEY },
        azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5", osDiskGiB: 512 },
        tags: { team: "ml", "rdmakit-cluster": "spoofed" },
        // the fabric alone; the Slurm head node has its own test
        scheduler: { type: "none" },
    };
    extra(raw);
    return parseClusterSpec(raw);
}

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => o.apply(resolve));
}

/** Builds a cluster and waits until every child is registered (all outputs resolved). */
async function build(name: string, spec: ReturnType<typeof azureSpec>) {
    const cluster = new mod.AzureInfinibandCluster(name, { spec });
    const out = {
        nodePrivateIps: await unwrap(cluster.nodePrivateIps),
        jumpHostAddress: await unwrap(cluster.jumpHostAddress),
        adminUser: await unwrap(cluster.adminUser),
        fabricSummary: await unwrap(cluster.fabricSummary),
        resourceGroupName: await unwrap(cluster.resourceGroupName),
        vmssName: await unwrap(cluster.vmssName),
        vnetId: await unwrap(cluster.vnetId),
        subnetId: await unwrap(cluster.subnetId),
        nsgId: await unwrap(cluster.nsgId),
    };
    const mine = registered.filter((r) => r.name === name || r.name.startsWith(`${name}-`));
    const one = (type: string) => {
        const found = mine.filter((r) => r.type === type);
        assert.equal(found.length, 1, `exactly one ${type}`);
        return found[0];
    };
    return { cluster, out, mine, one };
}

const one0 = (rs: Registered[], type: string) => rs.filter((r) => r.type === type)[0];
const idOf = (type: string, name: string) => `/subscriptions/${SUB}/resourceGroups/mock-rg/providers/${type}/${name}-a1b2c3`;

test("the scale set is one Uniform, single-placement-group IB partition with exactly the planned settings", async () => {
    const { one } = await build("ib4", azureSpec("ib4", 4));
    const vmss = one("azure-native:compute:VirtualMachineScaleSet");
    assert.equal(vmss.name, "ib4-vmss");
    const i = vmss.inputs;
    assert.equal(i.resourceGroupName, "ib4-rg-a1b2c3");
    assert.equal(i.location, "eastus");
    assert.equal(i.orchestrationMode, "Uniform");
    assert.equal(i.singlePlacementGroup, true);
    assert.equal(i.platformFaultDomainCount, 1);
    assert.equal(i.overprovision, false);
    assert.deepEqual(i.upgradePolicy, { mode: "Manual" });
    assert.deepEqual(i.sku, { name: "Standard_ND96isr_H100_v5", capacity: 4, tier: "Standard" });
    assert.equal(i.securityProfile, undefined, "the scale set's own securityProfile is not where VMs get theirs");
    assert.equal(i.proximityPlacementGroup, undefined);
    assert.equal(i.zones, undefined);
    assert.deepEqual(i.tags, { team: "ml", "rdmakit-cluster": "ib4", "rdmakit-fabric": "azure-ib" });

    const p = i.virtualMachineProfile;
    // no securityProfile: no Trusted Launch / Secure Boot, the DKMS modules are unsigned (components/azure/settings.ts)
    assert.deepEqual(Object.keys(p).sort(), ["diagnosticsProfile", "networkProfile", "osProfile", "storageProfile"]);
    assert.deepEqual(p.diagnosticsProfile, { bootDiagnostics: { enabled: true } });
    assert.deepEqual(p.storageProfile.imageReference, { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: "2204", version: "22.04.2026072901" });
    assert.deepEqual(p.storageProfile.osDisk, {
        createOption: "FromImage", caching: "ReadWrite", managedDisk: { storageAccountType: "Premium_LRS" }, diskSizeGB: 512,
    });
    assert.deepEqual(p.osProfile, {
        computerNamePrefix: "ib4",
        adminUsername: "azureuser",
        // the node group's host key, for cloud-init (components/provision/hostkeys.ts)
        customData: nodeCustomData(mockHostKey("node")),
        linuxConfiguration: {
            disablePasswordAuthentication: true,
            ssh: { publicKeys: [{ path: "/home/azureuser/.ssh/authorized_keys", keyData: KEY }] },
        },
    });
    assert.equal(p.osProfile.adminPassword, undefined);
    assert.deepEqual(p.networkProfile, {
        networkInterfaceConfigurations: [{
            name: "eth0",
            primary: true,
            enableAcceleratedNetworking: true,
            networkSecurityGroup: { id: idOf("azure-native:network:NetworkSecurityGroup", "ib4-nsg") },
            ipConfigurations: [{ name: "ipconfig1", primary: true, subnet: { id: idOf("azure-native:network:Subnet", "ib4-subnet") } }],
        }],
    });
    const ipConfig = p.networkProfile.networkInterfaceConfigurations[0].ipConfigurations[0];
    assert.equal(ipConfig.publicIPAddressConfiguration, undefined, "GPU nodes get no public IP");
});

test("network: VNet and subnet from the spec, NAT egress, NSG with SSH from the allowed CIDRs only", async () => {
    nicBase = "10.50.8.";
    const { one, mine } = await build("net", azureSpec("net", 4, (s) => {
        s.azure.vnetCidr = "10.50.0.0/16";
        s.azure.subnetCidr = "10.50.8.0/22";
    }));
    nicBase = "10.10.0.";
    const rg = "net-rg-a1b2c3";
    assert.deepEqual(one("azure-native:resources:ResourceGroup").inputs, {
        location: "eastus", tags: { team: "ml", "rdmakit-cluster": "net", "rdmakit-fabric": "azure-ib" },
    });
    const vnet = one("azure-native:network:VirtualNetwork").inputs;
    assert.deepEqual(vnet.addressSpace, { addressPrefixes: ["10.50.0.0/16"] });
    assert.equal(vnet.subnets, undefined, "the subnet is its own resource, never inline");
    assert.deepEqual(one("azure-native:network:Subnet").inputs, {
        resourceGroupName: rg,
        virtualNetworkName: "net-vnet-a1b2c3",
        addressPrefix: "10.50.8.0/22",
        natGateway: { id: idOf("azure-native:network:NatGateway", "net-nat") },
        defaultOutboundAccess: false,
        // defaults the azure-native SDK fills in for every Subnet (network/subnet.js)
        privateEndpointNetworkPolicies: "Disabled",
        privateLinkServiceNetworkPolicies: "Enabled",
    });
    const nat = one("azure-native:network:NatGateway").inputs;
    assert.deepEqual(nat.sku, { name: "Standard" });
    assert.deepEqual(nat.publicIpAddresses, [{ id: idOf("azure-native:network:PublicIPAddress", "net-nat-ip") }]);

    const nsg = one("azure-native:network:NetworkSecurityGroup").inputs;
    assert.equal(nsg.resourceGroupName, rg);
    assert.deepEqual(nsg.securityRules, [
        {
            name: "allow-ssh-from-allowed-cidrs", priority: 100, direction: "Inbound", access: "Allow", protocol: "Tcp",
            sourcePortRange: "*", destinationPortRange: "22", sourceAddressPrefixes: ["203.0.113.0/24", "198.51.100.0/24"],
            destinationAddressPrefix: "*",
            description: "SSH from cluster.ssh.allowedCidrs (the jump host is the only VM with a public IP)",
        },
        {
            name: "deny-internet-inbound", priority: 4096, direction: "Inbound", access: "Deny", protocol: "*",
            sourcePortRange: "*", destinationPortRange: "*", sourceAddressPrefix: "Internet", destinationAddressPrefix: "*",
            description: "everything else from the Internet (Azure's DenyAllInBound would drop it too)",
        },
    ]);
    // public IPs: the NAT gateway's and the jump host's, nothing on the GPU nodes
    const pips = mine.filter((r) => r.type === "azure-native:network:PublicIPAddress").map((r) => r.name).sort();
    assert.deepEqual(pips, ["net-jump-ip", "net-nat-ip"]);
    for (const r of mine.filter((r) => r.type === "azure-native:network:PublicIPAddress")) {
        assert.deepEqual([r.inputs.sku, r.inputs.publicIPAllocationMethod], [{ name: "Standard" }, "Static"]);
    }
});

test("jump host: small Linux VM, SSH key only, public IP, behind the same NSG", async () => {
    const { one, out } = await build("jh", azureSpec("jh", 2, (s) => {
        s.ssh.user = "hpcadmin";
        s.azure.jumpHostSize = "Standard_B2ats_v2";
    }));
    const nic = one("azure-native:network:NetworkInterface").inputs;
    assert.deepEqual(nic.networkSecurityGroup, { id: idOf("azure-native:network:NetworkSecurityGroup", "jh-nsg") });
    assert.deepEqual(nic.ipConfigurations, [{
        name: "ipconfig1", primary: true, subnet: { id: idOf("azure-native:network:Subnet", "jh-subnet") },
        privateIPAllocationMethod: "Dynamic", publicIPAddress: { id: idOf("azure-native:network:PublicIPAddress", "jh-jump-ip") },
    }]);
    const vm = one("azure-native:compute:VirtualMachine").inputs;
    assert.deepEqual(vm.hardwareProfile, { vmSize: "Standard_B2ats_v2" });
    assert.deepEqual(vm.osProfile, {
        computerName: "jh-jump",
        adminUsername: "hpcadmin",
        // sshd tuned for the Ansible jump hops and the jump host's own host key (components/provision/jump.ts)
        customData: Buffer.from(jumpHostCloudConfig(mockHostKey("jump"), "azure")).toString("base64"),
        linuxConfiguration: {
            disablePasswordAuthentication: true,
            ssh: { publicKeys: [{ path: "/home/hpcadmin/.ssh/authorized_keys", keyData: KEY }] },
        },
    });
    assert.deepEqual(vm.storageProfile.imageReference, { publisher: "Canonical", offer: "0001-com-ubuntu-server-jammy", sku: "22_04-lts-gen2", version: "latest" });
    assert.deepEqual(vm.networkProfile, { networkInterfaces: [{ id: idOf("azure-native:network:NetworkInterface", "jh-jump-nic"), primary: true }] });
    assert.equal(out.jumpHostAddress, "20.30.40.50");
    assert.equal(out.adminUser, "hpcadmin");
    assert.equal(one("azure-native:compute:VirtualMachineScaleSet").inputs.virtualMachineProfile.osProfile.adminUsername, "hpcadmin");
});

test("node IPs come from one lookup of the scale set, sorted by address; outputs name the fabric", async () => {
    const { out, mine, cluster } = await build("ips", azureSpec("ips", 12));
    // one list of the scale set's NICs, with the provider's token; no command, no per-VM lookup
    const lists = arm.seen.filter((x) => x.url.includes("/virtualMachineScaleSets/ips-vmss-a1b2c3/networkInterfaces"));
    assert.deepEqual(lists.map((x) => x.url), [`https://management.azure.com/subscriptions/${SUB}/resourceGroups/ips-rg-a1b2c3/providers/microsoft.Compute/virtualMachineScaleSets/ips-vmss-a1b2c3/networkInterfaces?api-version=2018-10-01`]);
    assert.equal(lists[0].auth, `Bearer ${CLIENT_TOKEN.token}`);
    assert.equal(mine.filter((r) => r.type.startsWith("command:")).length, 0);
    // instance ids: VM i at .(4+i), listed in reverse and sorted back by address
    assert.deepEqual((await unwrap(cluster.nodes)).slice(0, 2), [{ instanceId: "0", privateIp: "10.10.0.4" }, { instanceId: "1", privateIp: "10.10.0.5" }]);
    // the pinned image version of the plan (the mock's scale set answers no exactVersion)
    assert.equal(await unwrap(cluster.imageVersion), one0(mine, "azure-native:compute:VirtualMachineScaleSet").inputs.virtualMachineProfile.storageProfile.imageReference.version);
    assert.equal(mine.filter((r) => r.type.startsWith("azure-native:compute:VirtualMachineScaleSetVM")).length, 0);
    assert.deepEqual(out.nodePrivateIps, Array.from({ length: 12 }, (_, i) => `10.10.0.${4 + i}`));
    assert.equal(out.resourceGroupName, "ips-rg-a1b2c3");
    assert.equal(out.vmssName, "ips-vmss-a1b2c3");
    assert.equal(out.vnetId, idOf("azure-native:network:VirtualNetwork", "ips-vnet"));
    assert.equal(out.subnetId, idOf("azure-native:network:Subnet", "ips-subnet"));
    assert.equal(out.fabricSummary.vmSize, "Standard_ND96isr_H100_v5");
    assert.equal(out.fabricSummary.nodes, 12);
    assert.equal(out.fabricSummary.hcasPerNode, 8);
    assert.equal(out.fabricSummary.ncclTopoFile, "/opt/microsoft/ndv5-topo.xml");
    // the published multi-node figure was measured with SHARP, which validation does not run: the line-rate rule
    assert.equal(out.fabricSummary.expectedBusbwGBps, 400);
    assert.equal(out.fabricSummary.minBusbwGBps, 240);
});

test("the resource count and types are the same at 4 and 90 nodes", async () => {
    const shape = (rs: Registered[], name: string) => rs.map((r) => `${r.type} ${r.name.slice(name.length)}`).sort();
    const four = await build("s4", azureSpec("s4", 4));
    const ninety = await build("s90", azureSpec("s90", 90));
    assert.deepEqual(shape(ninety.mine, "s90"), shape(four.mine, "s4"));
    assert.deepEqual(shape(four.mine, "s4"), [
        "azure-native:compute:VirtualMachine -jump",
        "azure-native:compute:VirtualMachineScaleSet -vmss",
        "azure-native:network:NatGateway -nat",
        "azure-native:network:NetworkInterface -jump-nic",
        "azure-native:network:NetworkSecurityGroup -nsg",
        "azure-native:network:PublicIPAddress -jump-ip",
        "azure-native:network:PublicIPAddress -nat-ip",
        "azure-native:network:Subnet -subnet",
        "azure-native:network:VirtualNetwork -vnet",
        "azure-native:resources:ResourceGroup -rg",
        "rdmakit:index:AzureInfinibandCluster ",
        // one host key for the scale set, one for the jump host, whatever the node count
        "tls:index/privateKey:PrivateKey -jump-host-key",
        "tls:index/privateKey:PrivateKey -node-host-key",
    ]);
    assert.equal(ninety.one("azure-native:compute:VirtualMachineScaleSet").inputs.sku.capacity, 90);
    assert.equal(ninety.out.nodePrivateIps.length, 90);
});

test("an existing resource group is used, not created", async () => {
    const { mine, out, one } = await build("byo", azureSpec("byo", 4, (s) => (s.azure.resourceGroupName = "gpu-rg")));
    assert.equal(mine.filter((r) => r.type === "azure-native:resources:ResourceGroup").length, 0);
    assert.equal(out.resourceGroupName, "gpu-rg");
    assert.equal(one("azure-native:compute:VirtualMachineScaleSet").inputs.resourceGroupName, "gpu-rg");
    assert.equal(one("azure-native:network:VirtualNetwork").inputs.resourceGroupName, "gpu-rg");
    assert.equal(mine.length, 12);
});

/** Runs the constructor, expecting InputPropertiesError; returns its property paths. Nothing may be registered. */
function refused(name: string, spec: any): { paths: string[]; message: string } {
    const before = registered.length;
    let err: unknown;
    try {
        new mod.AzureInfinibandCluster(name, { spec });
    } catch (e) {
        err = e;
    }
    assert.ok(pulumi.InputPropertiesError.isInstance(err), `expected InputPropertiesError, got ${String(err)}`);
    assert.equal(registered.length, before, "nothing registered");
    return { paths: err.errors.map((e) => e.propertyPath), message: err.message };
}

test("Slurm head node: one VM in the cluster subnet on the nodes' image, no public IP, named as SlurmctldHost, its NSG the plan's ports from the subnet only", async () => {
    const { cluster, out, mine } = await build("slh", azureSpec("slh", 4, (s) => { s.scheduler = { type: "slurm" }; }));
    const vms = mine.filter((r) => r.type === "azure-native:compute:VirtualMachine");
    assert.deepEqual(vms.map((r) => r.name).sort(), ["slh-head", "slh-jump"]);
    const vm = vms.find((r) => r.name === "slh-head")!.inputs;
    const vmss = mine.find((r) => r.type === "azure-native:compute:VirtualMachineScaleSet")!.inputs;
    assert.equal(vm.hardwareProfile.vmSize, "Standard_D8s_v5");
    assert.deepEqual(vm.storageProfile.imageReference, vmss.virtualMachineProfile.storageProfile.imageReference, "the nodes' image: one Slurm release");
    assert.equal(vm.osProfile.computerName, "slh-head");
    assert.equal(vm.osProfile.linuxConfiguration.disablePasswordAuthentication, true);
    const raw = vms.find((r) => r.name === "slh-head")!.raw;
    assert.ok(isSecretInput(raw.osProfile), "the customData holds the head node's private host key: a secret");
    const key = mockHostKey("head");
    assert.deepEqual(parseYaml(Buffer.from(vm.osProfile.customData, "base64").toString()).ssh_keys, { ed25519_private: key.privateKey, ed25519_public: key.publicKey });
    const nic = mine.find((r) => r.name === "slh-head-nic")!.inputs;
    assert.deepEqual(nic.ipConfigurations.map((c: any) => [c.subnet.id, c.publicIPAddress]), [[out.subnetId, undefined]], "the cluster subnet, no public IP");
    const nsg = mine.find((r) => r.name === "slh-head-nsg")!;
    assert.equal(nic.networkSecurityGroup.id, idOf("azure-native:network:NetworkSecurityGroup", "slh-head-nsg"));
    // exactly: SSH (the jump host's hop) and the plan's ports from the cluster subnet; the rest of the VNet and the Internet denied
    assert.deepEqual(nsg.inputs.securityRules.map((r: any) => [r.priority, r.access, r.protocol, r.destinationPortRange, r.sourceAddressPrefix]), [
        [100, "Allow", "Tcp", "22", "10.10.0.0/24"],
        [110, "Allow", "Tcp", "6817", "10.10.0.0/24"],
        [120, "Allow", "Tcp", "6818", "10.10.0.0/24"],
        [130, "Allow", "Tcp", "60001-63000", "10.10.0.0/24"],
        [140, "Allow", "Tcp", "2049", "10.10.0.0/24"],
        [4000, "Deny", "*", "*", "VirtualNetwork"],
        [4096, "Deny", "*", "*", "Internet"],
    ]);
    assert.ok(!nsg.inputs.securityRules.some((r: any) => r.access === "Allow" && ["*", "0.0.0.0/0", "Internet"].includes(r.sourceAddressPrefix)));
    assert.equal(await unwrap(cluster.slurmHead!.privateIp), "10.10.0.250");
    assert.equal(await unwrap(cluster.slurmHead!.hostPublicKey), key.publicKey);
});

test("Azure is asked first, with the provider's subscription and token: the size in the location, the quotas", async () => {
    await build("asked", azureSpec("asked", 4));
    assert.ok(invokes.includes("azure-native:authorization:getClientConfig") && invokes.includes("azure-native:authorization:getClientToken"));
    const urls = arm.seen.map((x) => x.url);
    assert.ok(urls.includes(`https://management.azure.com/subscriptions/${SUB}/providers/Microsoft.Compute/skus?api-version=2021-07-01&$filter=location%20eq%20'eastus'`), urls.join("\n"));
    assert.ok(urls.includes(`https://management.azure.com/subscriptions/${SUB}/providers/Microsoft.Compute/locations/eastus/usages?api-version=2024-07-01`), urls.join("\n"));
    assert.ok(arm.seen.every((x) => x.auth === `Bearer ${CLIENT_TOKEN.token}`));
});

test("bad input is refused before anything is created, with the field named", () => {
    const aws = parseClusterSpec({
        name: "awsc", fabric: "aws-efa", nodes: 2, ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: KEY },
        aws: { region: "us-east-1", availabilityZone: "us-east-1a", instanceType: "p5.48xlarge" },
    });
    const wrong = refused("bad1", aws);
    assert.deepEqual(wrong.paths, ["cluster.fabric"]);
    assert.match(wrong.message, /cluster\.fabric: is not an Azure InfiniBand cluster \(got "aws-efa"\); allowed: azure-ib/);

    // a spec assembled in code is checked like one from stack config: every problem at once
    const handMade: any = { ...azureSpec("bad2", 4) };
    handMade.nodes = 120;
    handMade.azure = { ...handMade.azure, passwordAuthentication: true, vnetCidr: "172.16.0.0/16", subnetCidr: "172.16.1.0/24" };
    const many = refused("bad2", handMade);
    assert.deepEqual(many.paths.sort(), ["cluster.azure.passwordAuthentication", "cluster.azure.vnetCidr", "cluster.nodes"]);

    assert.deepEqual(refused("bad3", azureSpec("bad3", 4, (s) => (s.ssh.user = "admin"))).paths, ["cluster.ssh.user"]);
    assert.equal(registered.filter((r) => r.name.startsWith("bad")).length, 0);
});

// a hub-and-spoke estate's GPU subnet, in the stack's subscription
const SPOKE = `/subscriptions/${SUB}/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu/subnets/gpu`;

test("an existing subnet: the scale set joins it, ARM is asked about it first, and there is no VNet, NAT, public IP or jump host", async () => {
    Object.assign(network, existingSubnet(SPOKE, { addressPrefix: "10.60.4.0/22" }));
    nicBase = "10.60.4.";
    const { mine, out, one, cluster } = await build("spoke", azureSpec("spoke", 4, (s) => (s.azure.network = { subnetId: SPOKE })));
    nicBase = "10.10.0.";
    assert.deepEqual(mine.map((r) => `${r.type} ${r.name}`).sort(), [
        "azure-native:compute:VirtualMachineScaleSet spoke-vmss",
        "azure-native:network:NetworkSecurityGroup spoke-nsg",
        "azure-native:resources:ResourceGroup spoke-rg",
        "rdmakit:index:AzureInfinibandCluster spoke",
        "tls:index/privateKey:PrivateKey spoke-node-host-key",
    ]);
    const nic = one("azure-native:compute:VirtualMachineScaleSet").inputs.virtualMachineProfile.networkProfile.networkInterfaceConfigurations[0];
    assert.deepEqual(nic.ipConfigurations, [{ name: "ipconfig1", primary: true, subnet: { id: SPOKE } }]);
    // the cluster's NSG still sits on the nodes' NIC: SSH from the allowed CIDRs only
    assert.deepEqual(nic.networkSecurityGroup, { id: idOf("azure-native:network:NetworkSecurityGroup", "spoke-nsg") });
    assert.equal(out.subnetId, SPOKE);
    assert.equal(out.vnetId, `/subscriptions/${SUB}/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu`);
    assert.equal(out.jumpHostAddress, undefined);
    assert.equal(await unwrap(cluster.jumpHostPublicKey), undefined);
    // the addresses are checked against the subnet's range as ARM gave it
    assert.deepEqual(out.nodePrivateIps, ["10.60.4.4", "10.60.4.5", "10.60.4.6", "10.60.4.7"]);
    const urls = arm.seen.map((x) => x.url);
    assert.ok(urls.includes(`https://management.azure.com${SPOKE}?api-version=2024-05-01`), urls.join("\n"));
    assert.ok(urls.includes(`https://management.azure.com/subscriptions/${SUB}/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/spoke-gpu?api-version=2024-05-01`));
    // the policy pack on what was registered: the scale set's rules still apply and pass; the range rule cannot read a
    // subnet outside the stack and says so (ARM was asked for its ranges above, before anything was created)
    const verdicts = evaluatePolicies(mine.map((r) => ({ type: r.type, name: r.name, custom: !r.type.startsWith("rdmakit:"), inputs: r.inputs })));
    const range = verdicts.find((v) => v.policy === "azure-ib-vnet-rdma-range")!;
    assert.deepEqual([range.violations, range.undecided], [[], [`cannot be verified yet: subnet ${SPOKE} of VM scale set spoke-vmss is not in this stack, so its address range cannot be read`]]);
    for (const p of ["azure-ib-vmss-single-placement-group", "azure-ib-vmss-partition-capacity", "azure-ib-no-password-login", "azure-ib-gen2-image", "azure-ib-trusted-launch-off", "azure-ib-accelerated-networking"]) {
        assert.ok(verdicts.some((v) => v.policy === p && v.ok && v.notApplicable === undefined), `${p} applies and passes`);
    }
});

/** The pre-create verdict for a spec with an existing subnet, as the component asks it (invokes through the mocks). */
async function verdictFor(subnetId: string, nodes = 4, location = "eastus") {
    const cloud = await import("../components/azure/cloud");
    const spec = azureSpec("pre", nodes, (s) => { s.azure.network = { subnetId }; s.azure.location = location; });
    const parent = new pulumi.ComponentResource("test:index:Parent", `pre-${Math.random().toString(36).slice(2, 8)}`);
    return unwrap(cloud.askAzureCloud(spec, parent, undefined, { subnetId: pulumi.output(subnetId), scaleSetPrefix: "pre-vmss" }));
}

test("an existing subnet ARM says no to is refused before anything is created: field, value, what is allowed", async () => {
    const other = SPOKE.replace(SUB, "99999999-8888-7777-6666-555555555555");
    const sub = (name: string) => SPOKE.replace(/gpu$/, name);
    Object.assign(network,
        existingSubnet(sub("delegated"), { delegatedTo: "Microsoft.Web/serverFarms" }),
        existingSubnet(sub("rdma").replace("spoke-gpu", "spoke-rdma"), { addressPrefix: "172.16.8.0/24", vnetPrefixes: ["172.16.0.0/12"] }),
        existingSubnet(sub("west").replace("spoke-gpu", "spoke-west"), { location: "westus2" }),
        existingSubnet(sub("small"), {
            addressPrefix: "10.60.9.0/28",
            // 11 usable (16 less Azure's 5): 2 in use by others, 3 by this cluster's own scale set on an earlier up
            inUse: [`${SPOKE}-x/a`, `${SPOKE}-x/b`, ...[0, 1, 2].map((n) => `/subscriptions/${SUB}/resourceGroups/gpu/providers/Microsoft.Compute/virtualMachineScaleSets/pre-vmss1f2e3d/virtualMachines/${n}/networkInterfaces/eth0/ipConfigurations/ipconfig1`)],
        }));
    const refusal = async (id: string, nodes?: number) => (await verdictFor(id, nodes)).issues;

    const [crossSub] = await refusal(other);
    assert.equal(crossSub.path, "cluster.azure.network.subnetId");
    assert.equal(crossSub.value, other);
    assert.match(crossSub.message, new RegExp(`is in subscription 99999999-8888-7777-6666-555555555555; the stack deploys into ${SUB}`));
    assert.match(crossSub.allowed!, /a subnet in subscription 0000.*or azure-native:subscriptionId 9999/);
    assert.ok(!arm.seen.some((x) => x.url.includes("99999999-8888")), "nothing asked of another subscription");

    const [missing] = await refusal(sub("nope"));
    assert.match(missing.message, /does not exist: ARM answered 404 for subnet nope of VNet spoke-gpu in resource group hub-rg/);
    assert.match(missing.allowed!, /az network vnet subnet list -g hub-rg --vnet-name spoke-gpu/);

    const [delegated] = await refusal(sub("delegated"));
    assert.match(delegated.message, /is delegated to Microsoft\.Web\/serverFarms \(subnet delegated of VNet spoke-gpu\)/);
    assert.equal(delegated.allowed, "a subnet without delegations");

    const rdma = await refusal(sub("rdma").replace("spoke-gpu", "spoke-rdma"));
    assert.deepEqual(rdma.map((i) => /^has (.*) range ([\d./]+)/.exec(i.message)?.slice(1)), [["subnet rdma's", "172.16.8.0/24"], ["VNet spoke-rdma's", "172.16.0.0/12"]]);
    assert.ok(rdma.every((i) => i.message.includes("overlaps 172.16.0.0/16")));

    const [west] = await refusal(sub("west").replace("spoke-gpu", "spoke-west"));
    assert.match(west.message, /is in VNet spoke-west in westus2; the cluster is in eastus/);
    assert.match(west.allowed!, /cluster\.azure\.location: westus2/);

    // this cluster's own NICs do not count against it: 11 usable, 2 used by others, so 9 fit and 10 do not
    assert.deepEqual(await refusal(sub("small"), 9), []);
    const [small] = await refusal(sub("small"), 10);
    assert.equal(small.path, "cluster.nodes");
    assert.match(small.message, /10\.60\.9\.0\/28 has 11 usable addresses \(Azure keeps 5 per range\) and 2 are in use/);
    assert.equal(small.allowed, "at most 9 nodes, or a larger subnet");

    // the one that fits: nothing refused, the subnet's range handed on for the node addresses
    Object.assign(network, existingSubnet(SPOKE));
    assert.deepEqual(await verdictFor(SPOKE), { issues: [], subnetPrefixes: ["10.60.4.0/22"] });
});
