import type { SpecIssue } from "../errors";
import type { ClusterSpec } from "../spec-types";
import { AZURE_RDMA_RESERVED_CIDR } from "../catalog/azure";
import { AZURE_SUBNET_ID } from "../grammars";
import { cidrsOverlap, parseCidr } from "../net";

/*
 * Bring-your-own network (`cluster.azure.network.subnetId`): the nodes' scale set goes into an existing subnet, and
 * the kit creates no VNet, subnet, NAT gateway, public IP or jump host. What ARM is asked about that subnet before
 * anything is created, and how its answers are graded. Pure apart from the GETs of askExistingSubnet; no SDK.
 */

/** Subnets - Get and Virtual Networks - Get. source: https://learn.microsoft.com/rest/api/virtualnetwork/subnets/get */
export const NETWORK_API_VERSION = "2024-05-01";

/**
 * Addresses Azure keeps in every subnet: the first four and the last. source:
 * https://learn.microsoft.com/azure/virtual-network/virtual-networks-faq ("Are there any restrictions on using IP
 * addresses within these subnets?")
 */
export const AZURE_RESERVED_PER_SUBNET = 5;

/** The parts of a subnet's ARM id. */
export interface SubnetRef {
    subscription: string;
    resourceGroup: string;
    vnet: string;
    subnet: string;
    /** the VNet's own ARM id (the subnet id without `/subnets/<name>`) */
    vnetId: string;
}

/** The id's parts, or undefined when it is not a subnet's ARM id (components/grammars.ts AZURE_SUBNET_ID). Pure. */
export function parseSubnetId(id: string): SubnetRef | undefined {
    const g = AZURE_SUBNET_ID.exec(id)?.groups;
    if (!g) return undefined;
    return { subscription: g.subscription, resourceGroup: g.resourceGroup, vnet: g.vnet, subnet: g.subnet, vnetId: id.replace(/\/subnets\/[^/]+$/i, "") };
}

/** What Subnets - Get answers (the fields read here); undefined: ARM answered 404. */
export interface SubnetAnswer {
    id?: string;
    properties?: {
        addressPrefix?: string;
        addressPrefixes?: string[];
        delegations?: Array<{ name?: string; properties?: { serviceName?: string } }>;
        ipConfigurations?: Array<{ id?: string }>;
        natGateway?: { id?: string };
        routeTable?: { id?: string };
        networkSecurityGroup?: { id?: string };
    };
}

/** What Virtual Networks - Get answers (the fields read here). */
export interface VnetAnswer {
    location?: string;
    properties?: { addressSpace?: { addressPrefixes?: string[] } };
}

export interface SubnetAnswers {
    /** the subscription the stack deploys into: azure-native's login (authorization.getClientConfig) */
    stackSubscription: string;
    /** undefined: not found (404) */
    subnet?: SubnetAnswer;
    vnet?: VnetAnswer;
}

/** The subnet's address prefixes (one or several), as ARM lists them. */
export function subnetPrefixes(s: SubnetAnswer | undefined): string[] {
    const p = s?.properties;
    return [...(p?.addressPrefix ? [p.addressPrefix] : []), ...(p?.addressPrefixes ?? [])].filter((x, i, all) => all.indexOf(x) === i);
}

const FIELD = "cluster.azure.network.subnetId";

/**
 * Grades ARM's answers about the existing subnet: every issue names the field, the id, what ARM said and what is
 * allowed. `scaleSetPrefix` is the start of the name of this cluster's own scale set, whose NICs (on a later
 * `pulumi up`) do not count against the room left; another stack's scale set of the same logical name in the same
 * subnet is left out too, so the room can be overstated (Azure then refuses the scale set), never understated.
 * Warnings (nothing refused) go to `warn`. Pure apart from `warn`.
 */
export function gradeExistingSubnet(spec: ClusterSpec, id: string, answers: SubnetAnswers, scaleSetPrefix: string, warn: (m: string) => void = () => {}): SpecIssue[] {
    const a = spec.azure!;
    const ref = parseSubnetId(id);
    if (!ref) return [{ path: FIELD, value: id, message: "is not a subnet's ARM id", allowed: "/subscriptions/<subscription GUID>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/subnets/<subnet>" }];
    // a NIC joins a VNet of its own subscription and location only.
    // source: https://learn.microsoft.com/azure/virtual-machines/network-overview ("Each NIC must be connected to a
    // VNet that exists in the same Azure location and subscription as the NIC")
    if (ref.subscription.toLowerCase() !== answers.stackSubscription.toLowerCase()) {
        return [{
            path: FIELD, value: id,
            message: `is in subscription ${ref.subscription}; the stack deploys into ${answers.stackSubscription}, and the nodes' NICs must be in their VNet's subscription`,
            allowed: `a subnet in subscription ${answers.stackSubscription}, or azure-native:subscriptionId ${ref.subscription} for the stack`,
        }];
    }
    if (!answers.subnet) {
        return [{
            path: FIELD, value: id, message: `does not exist: ARM answered 404 for subnet ${ref.subnet} of VNet ${ref.vnet} in resource group ${ref.resourceGroup}`,
            allowed: `the id of an existing subnet (az network vnet subnet list -g ${ref.resourceGroup} --vnet-name ${ref.vnet} --query "[].id")`,
        }];
    }
    const issues: SpecIssue[] = [];
    const vnetLocation = answers.vnet?.location;
    if (vnetLocation && norm(vnetLocation) !== norm(a.location)) {
        issues.push({
            path: FIELD, value: id,
            message: `is in VNet ${ref.vnet} in ${vnetLocation}; the cluster is in ${a.location} (cluster.azure.location), and the nodes' NICs must be in their VNet's location`,
            allowed: `a subnet of a VNet in ${a.location}, or cluster.azure.location: ${norm(vnetLocation)}`,
        });
    }
    // a delegated subnet takes the delegated service's resources only.
    // source: https://learn.microsoft.com/azure/virtual-network/subnet-delegation-overview
    const delegated = (answers.subnet.properties?.delegations ?? []).map((d) => d.properties?.serviceName ?? d.name ?? "a service");
    if (delegated.length > 0) {
        issues.push({
            path: FIELD, value: id, message: `is delegated to ${delegated.join(", ")} (subnet ${ref.subnet} of VNet ${ref.vnet}): a delegated subnet holds that service's resources only, not a VM scale set`,
            allowed: "a subnet without delegations",
        });
    }
    // source: setup-infiniband.md ("The RDMA network in Azure reserves the address space 172.16.0.0/16"); azure-ib.md §2
    const reserved = parseCidr(AZURE_RDMA_RESERVED_CIDR)!;
    const prefixes = subnetPrefixes(answers.subnet);
    const ranges = [...prefixes.map((p) => ({ p, of: "subnet" })), ...(answers.vnet?.properties?.addressSpace?.addressPrefixes ?? []).map((p) => ({ p, of: `VNet ${ref.vnet}` }))];
    for (const { p, of } of ranges) {
        const c = parseCidr(p); // an IPv6 prefix cannot overlap an IPv4 block
        if (c && cidrsOverlap(c, reserved)) {
            issues.push({
                path: FIELD, value: id, message: `has ${of === "subnet" ? `subnet ${ref.subnet}'s` : `${of}'s`} range ${p}, which overlaps ${AZURE_RDMA_RESERVED_CIDR}, the range Azure reserves for the InfiniBand/RDMA network`,
                allowed: `a subnet in a VNet whose ranges keep clear of ${AZURE_RDMA_RESERVED_CIDR}`,
            });
        }
    }
    const v4 = prefixes.map(parseCidr).filter((c) => c !== undefined);
    if (v4.length === 0) {
        issues.push({ path: FIELD, value: id, message: `has no IPv4 range (ARM lists ${prefixes.join(", ") || "none"}); the nodes need IPv4 addresses`, allowed: "a subnet with an IPv4 range" });
        return issues;
    }
    const usable = v4.reduce((n, c) => n + Math.max(0, 2 ** (32 - c.prefix) - AZURE_RESERVED_PER_SUBNET), 0);
    const others = (answers.subnet.properties?.ipConfigurations ?? []).filter((c) => !ownScaleSet(c.id, scaleSetPrefix)).length;
    const free = Math.max(0, usable - others);
    if (spec.nodes > free) {
        issues.push({
            path: "cluster.nodes", value: spec.nodes,
            message: `do not fit subnet ${ref.subnet}: ${prefixes.join(", ")} has ${usable} usable addresses (Azure keeps ${AZURE_RESERVED_PER_SUBNET} per range) and ${others} are in use`,
            allowed: `at most ${free} nodes, or a larger subnet`,
        });
    }
    const p = answers.subnet.properties ?? {};
    if (!p.natGateway?.id && !p.routeTable?.id) {
        warn(`rdmakit: subnet ${ref.subnet} has no NAT gateway and no route table: the nodes reach the package repositories (apt, DOCA, NVIDIA) only through Azure's default outbound access, which Azure is retiring; give the subnet an egress route (source: https://learn.microsoft.com/azure/virtual-network/ip-services/default-outbound-access)`);
    }
    return issues;
}

/** Whether an IP configuration belongs to this cluster's scale set (…/virtualMachineScaleSets/<name>/…). */
function ownScaleSet(ipConfigId: string | undefined, prefix: string): boolean {
    const set = /\/virtualMachineScaleSets\/([^/]+)\//i.exec(ipConfigId ?? "")?.[1];
    return set !== undefined && set.toLowerCase().startsWith(prefix.toLowerCase());
}

/** Location names as ARM spells them in different places ("East US", "eastus"). */
function norm(location: string): string {
    return location.replace(/\s+/g, "").toLowerCase();
}

/**
 * Asks ARM about the subnet and its VNet (two GETs with the provider's token), unless it is in another subscription
 * than the stack's, which grading refuses without asking. `get` is cloud.ts armGet (undefined on 404).
 */
export async function askExistingSubnet(
    host: string, id: string, stackSubscription: string, get: <T>(url: string) => Promise<T | undefined>,
): Promise<SubnetAnswers> {
    const ref = parseSubnetId(id);
    if (!ref || ref.subscription.toLowerCase() !== stackSubscription.toLowerCase()) return { stackSubscription };
    const path = (p: string) => `${host}${p.split("/").map(encodeURIComponent).join("/")}?api-version=${NETWORK_API_VERSION}`;
    const [subnet, vnet] = await Promise.all([get<SubnetAnswer>(path(id)), get<VnetAnswer>(path(ref.vnetId))]);
    return { stackSubscription, subnet: subnet && vnet ? subnet : undefined, vnet };
}

/** The existing subnet's checks, in words, for `rdmakit plan` ("asked of Azure at pulumi up"). Pure. */
export function existingSubnetCheckList(spec: ClusterSpec): string[] {
    return [
        `the subnet (cluster.azure.network.subnetId) exists, is in the stack's subscription and its VNet in ${spec.azure!.location}, has no delegation, keeps clear of ${AZURE_RDMA_RESERVED_CIDR} (subnet and VNet ranges) and has room for ${spec.nodes} nodes (Microsoft.Network subnets and virtualNetworks GET)`,
    ];
}
