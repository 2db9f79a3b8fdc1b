// The network security group's rules: public API (components/index.ts), so this module names no azure-native type.
// A declaration that did would make every TypeScript program importing rdmakit load azure-native's input types
// (16 MB of .d.ts). NsgRule is the subset of azure-native's network SecurityRuleArgs the kit sets, field for field,
// so its values go into `securityRules` of a NetworkSecurityGroup as they are.

/** NSG priorities: ours sit well above Azure's default rules (65000+), and leave room in between. */
export const NSG_PRIORITY = { allowSsh: 100, denyInternet: 4096 } as const;

/** One security rule, as azure-native's `network.SecurityRuleArgs` spells its fields. */
export interface NsgRule {
    name: string;
    priority: number;
    direction: "Inbound" | "Outbound";
    access: "Allow" | "Deny";
    protocol: "Tcp" | "Udp" | "Icmp" | "*";
    sourcePortRange: string;
    destinationPortRange: string;
    sourceAddressPrefix?: string;
    sourceAddressPrefixes?: string[];
    destinationAddressPrefix: string;
    description: string;
}

/**
 * Inbound rules of the one NSG (on the GPU nodes' NIC and the jump host's NIC). What we rely on from Azure's
 * default rules (source: MicrosoftDocs/azure-docs:articles/virtual-network/network-security-groups-overview.md,
 * "Default security rules"): AllowVnetInBound (65000) lets the jump host reach the nodes and the nodes reach each
 * other (SSH, mpirun, NCCL's TCP bootstrap on eth0); DenyAllInBound (65500) drops everything else;
 * AllowInternetOutBound (65001) lets nodes reach package mirrors through the NAT gateway. InfiniBand traffic does
 * not pass the NSG at all: it is not on the Ethernet network (azure-ib.md §2, §7).
 * The explicit deny of Internet inbound repeats the default on purpose, so that a later, broader allow rule added
 * by hand below priority 4096 is still the only way in, and so policies can check it.
 */
export function nsgRules(allowedCidrs: string[]): NsgRule[] {
    return [
        {
            name: "allow-ssh-from-allowed-cidrs",
            priority: NSG_PRIORITY.allowSsh,
            direction: "Inbound",
            access: "Allow",
            protocol: "Tcp",
            sourcePortRange: "*",
            destinationPortRange: "22",
            sourceAddressPrefixes: [...allowedCidrs],
            destinationAddressPrefix: "*",
            description: "SSH from cluster.ssh.allowedCidrs (the jump host is the only VM with a public IP)",
        },
        {
            name: "deny-internet-inbound",
            priority: NSG_PRIORITY.denyInternet,
            direction: "Inbound",
            access: "Deny",
            protocol: "*",
            sourcePortRange: "*",
            destinationPortRange: "*",
            sourceAddressPrefix: "Internet",
            destinationAddressPrefix: "*",
            description: "everything else from the Internet (Azure's DenyAllInBound would drop it too)",
        },
    ];
}
