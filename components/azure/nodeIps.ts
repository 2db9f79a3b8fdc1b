import { cidrsOverlap, parseCidr } from "../net";

/*
 * The nodes of the scale set: one list of its NICs from ARM, with the provider's own credentials.
 *
 * @pulumi/azure-native v3 has no invoke that lists a scale set's NICs or VMs: network/ has no
 * `list/getVirtualMachineScaleSet*` function, and compute/ has only per-VM `getVirtualMachineScaleSetVM`, which would
 * be one invoke per node (checked in node_modules/@pulumi/azure-native 3.28.0). The `az vmss nic list` CLI the kit
 * used before fails for a service-principal or OIDC login of the provider (ARM_* variables) that the CLI does not
 * share. So the component takes a token for ARM from the provider itself (`authorization.getClientToken`, the login
 * pulumi up already uses) and makes the one REST call the CLI makes: Network's
 * ListVirtualMachineScaleSetNetworkInterfaces, GET /subscriptions/{s}/resourceGroups/{rg}/providers/
 * microsoft.Compute/virtualMachineScaleSets/{vmss}/networkInterfaces (paged with nextLink), answering
 * NetworkInterface objects (properties.ipConfigurations[].properties.privateIPAddress, properties.virtualMachine.id).
 * source: https://learn.microsoft.com/rest/api/virtualnetwork/network-interface-in-vm-ss/list-virtual-machine-scale-set-network-interfaces,
 * https://learn.microsoft.com/cli/azure/vmss/nic#az-vmss-nic-list (the CLI command for it, Uniform scale sets only).
 */

/**
 * The api-version of the scale-set NIC operations. Unlike the rest of Microsoft.Network they did not move with the
 * network API versions; 2018-10-01 is the version the Azure SDKs send for them (recalled from azure-sdk-for-python's
 * azure-mgmt-network request builders; not confirmed in a stored copy of the spec here). A version ARM does not take
 * fails the lookup with ARM's InvalidApiVersionParameter text, which names the versions it does take.
 */
export const VMSS_NIC_API_VERSION = "2018-10-01";

/** The list URL for one scale set, at the provider's cloud's ARM host (cloud.ts armHost). */
export function vmssNicListUrl(subscription: string, resourceGroup: string, vmss: string, armHost = "https://management.azure.com"): string {
    const e = encodeURIComponent;
    return `${armHost}/subscriptions/${e(subscription)}/resourceGroups/${e(resourceGroup)}` +
        `/providers/microsoft.Compute/virtualMachineScaleSets/${e(vmss)}/networkInterfaces?api-version=${VMSS_NIC_API_VERSION}`;
}

/** The subscription of an Azure resource id (`/subscriptions/<id>/resourceGroups/...`). */
export function subscriptionOf(resourceId: string): string {
    const m = /^\/subscriptions\/([^/]+)\//i.exec(resourceId);
    if (!m) throw new Error(`rdmakit: not an Azure resource id: ${JSON.stringify(resourceId)}`);
    return m[1];
}

/** A NIC as ARM answers it (the fields read here). */
export interface VmssNic {
    name?: string;
    properties?: {
        primary?: boolean;
        ipConfigurations?: Array<{ properties?: { privateIPAddress?: string; primary?: boolean } }>;
        virtualMachine?: { id?: string };
    };
}

/** One node: the scale set's instance id (the `virtualMachines/<n>` of its VM) and its private IP. */
export interface AzureNode {
    instanceId: string;
    privateIp: string;
}

function ipValue(ip: string): number {
    return ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
}

/**
 * The nodes from the NIC list, sorted by address. Throws with a message that says what is wrong when a NIC has no
 * private IPv4 or VM, an address is outside the nodes' subnet, an address repeats, or the count differs from the
 * scale set's capacity (a run graded on fewer nodes than asked for would pass for the wrong reason).
 */
export function parseNodeNics(nics: readonly VmssNic[], expect: { nodes: number; subnetCidrs: readonly string[]; vmss: string }): AzureNode[] {
    // the subnet's ranges: one for the kit's subnet, one or more for an existing one (none known offline: not checked)
    const subnets = expect.subnetCidrs.map((c) => {
        const cidr = parseCidr(c);
        if (!cidr) throw new Error(`rdmakit: bad subnet CIDR ${c}`);
        return cidr;
    });
    const nodes = nics.map((nic, i) => {
        const configs = nic.properties?.ipConfigurations ?? [];
        const ip = (configs.find((c) => c.properties?.primary) ?? configs[0])?.properties?.privateIPAddress;
        const addr = ip === undefined ? undefined : parseCidr(`${ip}/32`);
        const label = nic.name ?? `NIC ${i}`;
        if (!addr) throw new Error(`rdmakit: ${label} of ${expect.vmss} has no private IPv4 address`);
        if (subnets.length > 0 && !subnets.some((sub) => cidrsOverlap(sub, addr))) {
            throw new Error(`rdmakit: ${label} of ${expect.vmss} has ${ip}, outside the nodes' subnet ${expect.subnetCidrs.join(", ")}`);
        }
        const vm = /\/virtualMachines\/([^/]+)$/i.exec(nic.properties?.virtualMachine?.id ?? "");
        if (!vm) throw new Error(`rdmakit: ${label} of ${expect.vmss} (${ip}) belongs to no scale-set VM`);
        return { instanceId: vm[1], privateIp: ip as string };
    });
    const ips = nodes.map((n) => n.privateIp);
    if (new Set(ips).size !== ips.length) throw new Error(`rdmakit: ${expect.vmss} lists the same private IP twice: ${ips.join(", ")}`);
    if (nodes.length !== expect.nodes) {
        throw new Error(
            `rdmakit: scale set ${expect.vmss} has ${nodes.length} node NIC${nodes.length === 1 ? "" : "s"}, expected ${expect.nodes}; ` +
            "check the scale set's instances in the portal (failed allocation or a manual scale), then run pulumi up again",
        );
    }
    return nodes.sort((a, b) => ipValue(a.privateIp) - ipValue(b.privateIp));
}
