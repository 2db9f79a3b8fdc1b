/**
 * Cross-cutting: SSH (TCP 22) into RDMA nodes is not open to the Internet. Read from the security groups of EFA
 * launch templates and instances (inline rules, aws.vpc.SecurityGroupIngressRule, aws.ec2.SecurityGroupRule) and the
 * network security groups of InfiniBand scale sets and VMs (on their NIC or subnet; inline securityRules and
 * azure-native:network:SecurityRule, in priority order with Deny rules taken into account). "Open" is any set of
 * ranges that together admit every public address of a family, not only 0.0.0.0/0 or ::/0. The bastion / jump host
 * of an RDMA stack is in scope too: it is where `allowedCidrs` opens SSH (awsEntryGroups, azureEntryGroups).
 */
import type { PolicyResource } from "@pulumi/policy";
import type { Findings } from "../support";
import { dependenciesOf, get, items, known, knownItems, resolveRefs, TYPES, UNKNOWN } from "../support";
import { DEFAULT_FAMILIES, efaNodes, instanceEnis, nicGroups, templateNics } from "./aws-model";
import { DEFAULT_SIZES, ibNodes, nicConfigs, referencedNics } from "./azure-model";
import { add, coversInternet, empty, EVERYTHING, type Family, formatInterval, fromRanges, isEmpty, parseRange, publicOutside, publicShare, subtract, union, type RangeSet } from "./cidr";
import { stackPolicy } from "./define";

const SSH = 22;

interface SshConfig {
    instanceFamilies: string[];
    vmSizes: string[];
    allowedSshPrefixes: string[];
    maxPublicShare: number;
}

const addAll = (set: RangeSet, texts: unknown[]) => {
    for (const t of texts) {
        const r = typeof t === "string" ? parseRange(t) : undefined;
        if (r) add(set, r.family, r.interval);
    }
};

/** Whether an AWS rule's protocol and port range include TCP 22. */
function awsAdmitsSsh(protocol: unknown, from: unknown, to: unknown): boolean {
    const p = String(protocol).toLowerCase();
    if (p === "-1" || p === "all") return true;
    if (p !== "tcp" && p !== "6") return false;
    return typeof from === "number" && typeof to === "number" && from <= SSH && SSH <= to;
}

/** The sources a security group admits on TCP 22; unknown rule values are noted. */
function awsSshSources(sg: PolicyResource, resources: PolicyResource[], note: (s: string) => void): RangeSet {
    const set = empty();
    const inline = items(() => sg.props.ingress);
    if (inline === UNKNOWN) note(`the inline ingress rules of security group ${sg.name} are not known yet`);
    for (const r of knownItems(() => sg.props.ingress) as Record<string, any>[]) {
        const p = get(() => r.protocol);
        const from = get(() => r.fromPort);
        const to = get(() => r.toPort);
        if ([p, from, to].includes(UNKNOWN)) {
            note(`an inline ingress rule of security group ${sg.name} is not known yet`);
            continue;
        }
        if (!awsAdmitsSsh(p, from, to)) continue;
        addAll(set, [...knownItems(() => r.cidrBlocks), ...knownItems(() => r.ipv6CidrBlocks)]);
        // a managed prefix list holds whatever ranges its owner puts in it (0.0.0.0/0 included): not readable here
        const lists = knownItems(() => r.prefixListIds);
        if (lists.length > 0) note(`security group ${sg.name} admits SSH from the managed prefix list(s) ${lists.join(", ")}, whose ranges the pack cannot read`);
    }
    for (const r of resources) {
        const separate = r.type === TYPES.ingressRule;
        if (!separate && !(r.type === TYPES.securityGroupRule && known(() => r.props.type) === "ingress")) continue;
        const target = get(() => r.props.securityGroupId);
        const mine = target === UNKNOWN ? dependenciesOf(r, "securityGroupId", TYPES.securityGroup).some((d) => d.urn === sg.urn) : target === known(() => sg.props.id) || dependenciesOf(r, "securityGroupId", TYPES.securityGroup).some((d) => d.urn === sg.urn);
        if (!mine) continue;
        const p = get(() => (separate ? r.props.ipProtocol : r.props.protocol));
        const from = get(() => r.props.fromPort);
        const to = get(() => r.props.toPort);
        const all = String(p) === "-1";
        if (p === UNKNOWN || (!all && (from === UNKNOWN || to === UNKNOWN))) {
            note(`the protocol or ports of rule ${r.name} are not known yet`);
            continue;
        }
        if (!awsAdmitsSsh(p, from, to)) continue;
        const sources = separate ? [get(() => r.props.cidrIpv4), get(() => r.props.cidrIpv6)] : [...knownItems(() => r.props.cidrBlocks), ...knownItems(() => r.props.ipv6CidrBlocks)];
        // source: @pulumi/aws vpc.SecurityGroupIngressRule prefixListId, ec2.SecurityGroupRule / inline ingress
        // prefixListIds (a rule's source may be a managed prefix list); its entries are not in the stack
        const lists = separate ? [get(() => r.props.prefixListId)].filter((x) => x !== undefined && x !== null) : knownItems(() => r.props.prefixListIds);
        if (lists.length > 0) note(`rule ${r.name} admits SSH from the managed prefix list(s) ${lists.map(String).join(", ")}, whose ranges the pack cannot read`);
        if (sources.includes(UNKNOWN)) note(`the source range of rule ${r.name} is not known yet`);
        addAll(set, sources);
    }
    return set;
}

/** Azure port ranges ("22", "*", "20-30") → whether one includes 22. */
function azurePortsInclude(ranges: unknown[]): boolean {
    return ranges.some((r) => {
        if (r === "*") return true;
        const m = /^(\d+)(?:-(\d+))?$/.exec(String(r).trim());
        return m !== null && Number(m[1]) <= SSH && SSH <= Number(m[2] ?? m[1]);
    });
}

/**
 * Azure source prefixes → a range set; "*", "Any" and "Internet" mean every address, and so does any other service
 * tag but VirtualNetwork and AzureLoadBalancer: the others (AzureCloud, AzureCloud.<region>, Storage, ...) name public
 * ranges of Azure's that anyone can rent an address in.
 */
function azureSources(prefixes: unknown[]): RangeSet {
    const set = empty();
    for (const p of prefixes) {
        if (typeof p !== "string") continue;
        // source: https://learn.microsoft.com/azure/virtual-network/service-tags-overview ("Internet": the address space
        // outside the virtual network reachable by the public Internet; "VirtualNetwork": the virtual network address
        // space, peered and connected on-premises spaces; "AzureLoadBalancer": the host's 168.63.129.16 health probe;
        // "AzureCloud": all datacenter public IP addresses)
        if (p === "*" || /^(any|internet)$/i.test(p)) return union(set, EVERYTHING);
        if (parseRange(p) === undefined && !/^(virtualnetwork|azureloadbalancer)$/i.test(p)) return union(set, EVERYTHING);
        addAll(set, [p]);
    }
    return set;
}

/** What an NSG admits on TCP 22 from inbound rules in priority order (a Deny before an Allow takes its sources out). */
function nsgSshSources(nsg: PolicyResource, resources: PolicyResource[], note: (s: string) => void): RangeSet {
    const rules: Record<string, any>[] = [...knownItems(() => nsg.props.securityRules) as Record<string, any>[]];
    if (items(() => nsg.props.securityRules) === UNKNOWN) note(`the rules of network security group ${nsg.name} are not known yet`);
    for (const r of resources) {
        if (r.type !== TYPES.nsgRule) continue;
        const name = get(() => r.props.networkSecurityGroupName);
        const mine = dependenciesOf(r, "networkSecurityGroupName", TYPES.nsg).some((d) => d.urn === nsg.urn)
            || (typeof name === "string" && (name === known(() => nsg.props.networkSecurityGroupName) || name === known(() => nsg.props.name)));
        if (mine) rules.push(r.props);
        else if (name === UNKNOWN && dependenciesOf(r, "networkSecurityGroupName", TYPES.nsg).length === 0) note(`the network security group of rule ${r.name} is not known yet`);
    }
    const read = rules.map((r) => ({
        priority: get(() => r.priority), direction: get(() => r.direction), access: get(() => r.access), protocol: get(() => r.protocol),
        ports: [get(() => r.destinationPortRange), ...knownItems(() => r.destinationPortRanges)].filter((x) => x !== undefined),
        sources: [get(() => r.sourceAddressPrefix), ...knownItems(() => r.sourceAddressPrefixes)].filter((x) => x !== undefined),
    }));
    let denied = empty();
    let allowed = empty();
    for (const r of read.sort((a, b) => Number(a.priority) - Number(b.priority))) {
        if (r.direction !== UNKNOWN && String(r.direction).toLowerCase() !== "inbound") continue;
        if ([r.priority, r.direction, r.access, r.protocol, ...r.ports, ...r.sources].includes(UNKNOWN)) {
            note(`an inbound rule of network security group ${nsg.name} is not known yet`);
            continue;
        }
        if (!["tcp", "*"].includes(String(r.protocol).toLowerCase()) || !azurePortsInclude(r.ports)) continue;
        const sources = azureSources(r.sources);
        if (String(r.access).toLowerCase() === "deny") denied = union(denied, sources);
        else allowed = union(allowed, subtract(sources, denied));
    }
    return allowed;
}

/** The AWS security groups of the EFA nodes. */
function awsGroups(resources: PolicyResource[], families: string[], note: (s: string) => void): PolicyResource[] {
    const { nodes, unknown } = efaNodes(resources, families);
    unknown.forEach(note);
    const sgs = resources.filter((r) => r.type === TYPES.securityGroup);
    const out = new Set<PolicyResource>();
    const take = (r: { found: PolicyResource[]; outside: string[]; untraced: boolean }, of: string) => {
        r.found.forEach((g) => out.add(g));
        r.outside.forEach((id) => note(`security group ${id} of ${of} is not in this stack, so its rules cannot be read`));
        if (r.untraced) note(`the security groups of ${of} are not known yet`);
    };
    for (const n of nodes) {
        const byId = (property: string) => resolveRefs(n, property, TYPES.securityGroup, items(() => n.props[property]) ?? [], sgs, (c, v) => known(() => c.props.id) === v);
        if (n.type === TYPES.launchTemplate) {
            const nics = templateNics(n.props);
            if (nics === UNKNOWN) note(`the network interfaces of launch template ${n.name} are not known yet`);
            else nics.forEach((nic) => take(nicGroups(n, nic, resources), `launch template ${n.name}`));
        } else {
            for (const e of instanceEnis(n, resources)) take(resolveRefs(e, "securityGroups", TYPES.securityGroup, items(() => e.props.securityGroups) ?? [], sgs, (c, v) => known(() => c.props.id) === v), `network interface ${e.name}`);
        }
        take(byId("vpcSecurityGroupIds"), `${n.name}`);
    }
    return [...out];
}

/**
 * The way in to the EFA nodes: the security groups their own groups admit SSH from (a rule with a source group:
 * referencedSecurityGroupId, sourceSecurityGroupId, or an inline rule's securityGroups: the bastion's group in
 * rdmakit's stacks) and the groups of every instance in the stack that asks for a public address. Their openings are
 * what `allowedCidrs` really opens, so they are in the policy's scope.
 */
function awsEntryGroups(resources: PolicyResource[], nodeGroups: PolicyResource[], note: (s: string) => void): PolicyResource[] {
    const sgs = resources.filter((r) => r.type === TYPES.securityGroup);
    const out = new Set<PolicyResource>();
    const byId = (holder: PolicyResource, property: string, values: unknown[] | typeof UNKNOWN) => {
        const r = resolveRefs(holder, property, TYPES.securityGroup, values, sgs, (c, v) => known(() => c.props.id) === v);
        r.found.forEach((g) => out.add(g));
        r.outside.forEach((id) => note(`security group ${id}, which SSH to the RDMA nodes comes through, is not in this stack, so its rules cannot be read`));
    };
    for (const g of nodeGroups) {
        for (const r of knownItems(() => g.props.ingress) as Record<string, any>[]) {
            if (awsAdmitsSsh(known(() => r.protocol), known(() => r.fromPort), known(() => r.toPort))) byId(g, "ingress", items(() => r.securityGroups) ?? []);
        }
        for (const r of resources) {
            const separate = r.type === TYPES.ingressRule;
            if (!separate && !(r.type === TYPES.securityGroupRule && known(() => r.props.type) === "ingress")) continue;
            const target = get(() => r.props.securityGroupId);
            const mine = dependenciesOf(r, "securityGroupId", TYPES.securityGroup).some((d) => d.urn === g.urn) || (target !== UNKNOWN && target === known(() => g.props.id));
            if (!mine || !awsAdmitsSsh(known(() => (separate ? r.props.ipProtocol : r.props.protocol)), known(() => r.props.fromPort), known(() => r.props.toPort))) continue;
            const prop = separate ? "referencedSecurityGroupId" : "sourceSecurityGroupId";
            const v = get(() => r.props[prop]);
            if (v !== undefined) byId(r, prop, [v]);
        }
    }
    for (const i of resources.filter((r) => r.type === TYPES.instance && get(() => r.props.associatePublicIpAddress) !== false && get(() => r.props.associatePublicIpAddress) !== undefined)) {
        byId(i, "vpcSecurityGroupIds", items(() => i.props.vpcSecurityGroupIds) ?? []);
    }
    nodeGroups.forEach((g) => out.delete(g));
    return [...out];
}

/** The way in to the InfiniBand nodes: the NSGs of network interfaces in the stack that carry a public IP (the jump host's). */
function azureEntryGroups(resources: PolicyResource[], note: (s: string) => void): PolicyResource[] {
    const nsgs = resources.filter((r) => r.type === TYPES.nsg);
    const out = new Set<PolicyResource>();
    for (const nic of resources.filter((r) => r.type === TYPES.nic)) {
        const publicIp = (knownItems(() => nic.props.ipConfigurations) as Record<string, any>[]).some((c) => get(() => c.publicIPAddress) !== undefined)
            || dependenciesOf(nic, "ipConfigurations", "azure-native:network:PublicIPAddress").length > 0;
        if (!publicIp) continue;
        const ref = get(() => nic.props.networkSecurityGroup?.id);
        const deps = dependenciesOf(nic, "networkSecurityGroup", TYPES.nsg);
        const found = nsgs.find((x) => ref !== UNKNOWN && ref !== undefined && known(() => x.props.id) === ref);
        if (found) out.add(found);
        else if (deps.length > 0) deps.forEach((d) => out.add(d));
        else if (ref === UNKNOWN) note(`the network security group of network interface ${nic.name} (a public way in) is not known yet`);
        else if (ref !== undefined) note(`network security group ${String(ref)} of network interface ${nic.name} (a public way in) is not in this stack, so its rules cannot be read`);
    }
    return [...out];
}

/** The Azure NSGs of the InfiniBand nodes: on their NIC configurations, referenced NICs, or subnets. */
function azureGroups(resources: PolicyResource[], sizes: string[], note: (s: string) => void): PolicyResource[] {
    const { nodes, unknown } = ibNodes(resources, sizes);
    unknown.forEach(note);
    const nsgs = resources.filter((r) => r.type === TYPES.nsg);
    const out = new Set<PolicyResource>();
    const byRef = (holder: PolicyResource, ref: unknown, of: string) => {
        if (ref === undefined) return;
        const deps = Object.values(holder.propertyDependencies).flat().filter((d) => d.type === TYPES.nsg);
        if (ref === UNKNOWN) {
            if (deps.length === 0) note(`the network security group of ${of} is not known yet`);
            deps.forEach((d) => out.add(d));
            return;
        }
        const n = nsgs.find((x) => known(() => x.props.id) === ref);
        if (n) out.add(n);
        else if (deps.length > 0) deps.forEach((d) => out.add(d));
        else note(`network security group ${String(ref)} of ${of} is not in this stack, so its rules cannot be read`);
    };
    for (const node of nodes) {
        const configs = nicConfigs(node);
        configs.forEach((c) => byRef(node.r, get(() => c.networkSecurityGroup?.id), `${node.kind} ${node.r.name}`));
        if (node.r.type === TYPES.virtualMachine) {
            const nics = referencedNics(node.r, resources);
            nics.found.forEach((n) => byRef(n, get(() => n.props.networkSecurityGroup?.id), `network interface ${n.name}`));
        }
        // subnet NSGs: the subnets the nodes' NICs are in, when they are in this stack
        for (const s of resources.filter((r) => r.type === TYPES.subnet)) {
            const used = Object.values(node.r.propertyDependencies).flat().includes(s);
            if (used) byRef(s, get(() => s.props.networkSecurityGroup?.id), `subnet ${s.name}`);
        }
    }
    return [...out];
}

export const rdmaSshNotOpenToInternet = stackPolicy<SshConfig>({
    name: "rdma-ssh-not-open-to-internet",
    description: "No security group or network security group of an RDMA node (EFA or InfiniBand) or of its way in (the bastion / jump host: a group the nodes admit SSH from, or that of a host with a public address) admits SSH from the whole Internet, by 0.0.0.0/0 or by any set of ranges that adds up to it, nor from more than maxPublicShare of a family's public addresses; with allowedSshPrefixes set, no public source outside them.",
    remediationSteps:
        "Admit SSH only from your office or VPN ranges (together at most maxPublicShare of the public space) (rdmakit: cluster.ssh.allowedCidrs) or through a bastion / SSM; list the " +
        "public ranges you accept in this policy's allowedSshPrefixes to have anything else reported.",
    severity: "critical",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/security-group-rules-reference.html",
    enforcementLevel: "mandatory",
    configSchema: {
        properties: {
            instanceFamilies: { type: "array", items: { type: "string" }, default: DEFAULT_FAMILIES, description: "As for the aws-efa-* policies." },
            vmSizes: { type: "array", items: { type: "string" }, default: DEFAULT_SIZES, description: "As for the azure-ib-* policies." },
            maxPublicShare: {
                // rdmakit's own cluster.ssh.maxPublicShare default (components/spec.ts): a /10 of IPv4 is 0.1 %
                type: "number", minimum: 0, maximum: 1, default: 0.001,
                description: "Largest share (0-1) of a family's public address space a group may admit SSH from; more is reported (catches \"the Internet minus a few addresses\").",
            },
            allowedSshPrefixes: {
                type: "array", items: { type: "string" }, default: [],
                description: "Public CIDR ranges SSH may come from. Empty: only an opening to the whole Internet is reported.",
            },
        },
    },
}, (args, f: Findings, config) => {
    const note = (s: string) => f.cannotVerify(s);
    const { nodes: efa } = efaNodes(args.resources, config.instanceFamilies);
    const { nodes: ib } = ibNodes(args.resources, config.vmSizes);
    const efaGroups = awsGroups(args.resources, config.instanceFamilies, note);
    const ibGroups = azureGroups(args.resources, config.vmSizes, note);
    // the bastion / jump host of an RDMA stack: what allowedCidrs opens is on its group, not on the nodes'
    const entry = [
        ...(efa.length > 0 ? awsEntryGroups(args.resources, efaGroups, note) : []),
        ...(ib.length > 0 ? azureEntryGroups(args.resources, note).filter((g) => !ibGroups.includes(g)) : []),
    ];
    const groups = [...efaGroups, ...ibGroups, ...entry];
    if (efa.length === 0 && ib.length === 0 && groups.length === 0) args.notApplicable("no EFA or InfiniBand node in this stack");
    const allowed = fromRanges(config.allowedSshPrefixes);
    for (const g of groups) {
        const sources = g.type === TYPES.nsg ? nsgSshSources(g, args.resources, note) : awsSshSources(g, args.resources, note);
        const what = g.type === TYPES.nsg ? "network security group" : "security group";
        const open = coversInternet(sources);
        if (open.length > 0) {
            f.violation(`${what} ${g.name} admits SSH (TCP 22) from the whole ${open.map((x) => `IPv${x}`).join(" and ")} Internet (${[...sources[4].map((i) => formatInterval(4, i)), ...sources[6].map((i) => formatInterval(6, i))].join(", ")})`, g.urn);
            continue;
        }
        const wide = ([4, 6] as Family[]).map((fam) => ({ fam, ...publicShare(sources, fam) })).filter((x) => x.share > config.maxPublicShare);
        if (wide.length > 0) {
            const pct = (x: number) => `${Number((x * 100).toPrecision(3))} %`;
            f.violation(`${what} ${g.name} admits SSH (TCP 22) from ${wide.map((x) => `${pct(x.share)} of the public IPv${x.fam} Internet (${x.addresses} addresses)`).join(" and ")}, more than maxPublicShare (${pct(config.maxPublicShare)})`, g.urn);
            continue;
        }
        if (config.allowedSshPrefixes.length > 0) {
            const outside = publicOutside(sources, allowed);
            if (!isEmpty(outside)) f.violation(`${what} ${g.name} admits SSH from public addresses outside allowedSshPrefixes: ${[...outside[4].map((i) => formatInterval(4, i)), ...outside[6].map((i) => formatInterval(6, i))].join(", ")}`, g.urn);
        }
    }
});
