import { cidrsOverlap, parseCidr } from "../net";

/*
 * Node private IPs, read from the scale set with one list call.
 *
 * @pulumi/azure-native v3 has no invoke that lists a scale set's NICs or VMs: network/ has no
 * `list/getVirtualMachineScaleSet*` function, and compute/ has only per-VM `getVirtualMachineScaleSetVM`, which would
 * be one invoke per node (checked in node_modules/@pulumi/azure-native 3.28.0). So the component runs one
 * `az vmss nic list` (the CLI for Network's ListVirtualMachineScaleSetNetworkInterfaces; source:
 * https://learn.microsoft.com/cli/azure/vmss/nic#az-vmss-nic-list) as a single @pulumi/command local.Command.
 * It needs the Azure CLI, logged in (`az login`), where `pulumi up` runs.
 * Alternatives: @pulumi/azure (classic) `compute.getVirtualMachineScaleSetOutput` returns `instances[].privateIpAddress`
 * in one invoke, at the price of a second Azure provider; or Ansible's `azure.azcollection.azure_rm` inventory
 * plugin lists scale-set VMs at playbook time (needs Azure credentials and the collection's Python SDK on the
 * Ansible side, and leaves the stack without the IPs).
 */

/**
 * JMESPath for `az vmss nic list`: the primary (only) IP configuration of each NIC. Both spellings of the field are
 * asked for because Azure CLI releases have printed both (`privateIPAddress` now, `privateIpAddress` before).
 */
export const NIC_IP_QUERY = "[].ipConfigurations[0].[privateIPAddress, privateIpAddress]";

/** The shell script of the lookup; its inputs come through the environment, never spliced into the text. */
export function nodeIpLookupScript(): string {
    return [
        "set -eu",
        "if ! command -v az >/dev/null 2>&1; then",
        "  echo 'rdmakit: the Azure CLI (az) lists the node IPs of the scale set; install it and run az login' >&2",
        "  exit 127",
        "fi",
        'az vmss nic list --subscription "$RDMAKIT_SUBSCRIPTION" --resource-group "$RDMAKIT_RESOURCE_GROUP" ' +
            `--vmss-name "$RDMAKIT_VMSS" --query '${NIC_IP_QUERY}' --output json`,
    ].join("\n");
}

/** The subscription of an Azure resource id (`/subscriptions/<id>/resourceGroups/...`). */
export function subscriptionOf(resourceId: string): string {
    const m = /^\/subscriptions\/([^/]+)\//i.exec(resourceId);
    if (!m) throw new Error(`rdmakit: not an Azure resource id: ${JSON.stringify(resourceId)}`);
    return m[1];
}

function ipValue(ip: string): number {
    return ip.split(".").reduce((acc, o) => acc * 256 + Number(o), 0);
}

/**
 * Parses the lookup's stdout into the node IPs, sorted by address. Throws with a message that says what is wrong
 * when the output is not what the query returns, an address is outside the nodes' subnet, or the count differs
 * from the scale set's capacity (a run graded on fewer nodes than asked for would pass for the wrong reason).
 */
export function parseNodeIps(stdout: string, expect: { nodes: number; subnetCidr: string; vmss: string }): string[] {
    let rows: unknown;
    try {
        rows = JSON.parse(stdout);
    } catch {
        throw new Error(`rdmakit: az vmss nic list for ${expect.vmss} did not print JSON: ${stdout.slice(0, 200)}`);
    }
    if (!Array.isArray(rows)) throw new Error(`rdmakit: az vmss nic list for ${expect.vmss} did not print a list`);
    const subnet = parseCidr(expect.subnetCidr);
    if (!subnet) throw new Error(`rdmakit: bad subnet CIDR ${expect.subnetCidr}`);
    const ips = rows.map((row, i) => {
        const ip = Array.isArray(row) ? row.find((v) => typeof v === "string") : undefined;
        const addr = ip === undefined ? undefined : parseCidr(`${ip}/32`);
        if (!addr) throw new Error(`rdmakit: NIC ${i} of ${expect.vmss} has no private IPv4 address (${JSON.stringify(row)})`);
        if (!cidrsOverlap(subnet, addr)) throw new Error(`rdmakit: NIC ${i} of ${expect.vmss} has ${ip}, outside the nodes' subnet ${expect.subnetCidr}`);
        return ip as string;
    });
    if (new Set(ips).size !== ips.length) throw new Error(`rdmakit: ${expect.vmss} lists the same private IP twice: ${ips.join(", ")}`);
    if (ips.length !== expect.nodes) {
        throw new Error(
            `rdmakit: scale set ${expect.vmss} has ${ips.length} node NIC${ips.length === 1 ? "" : "s"}, expected ${expect.nodes}; ` +
            "check the scale set's instances in the portal (failed allocation or a manual scale), then run pulumi up again",
        );
    }
    return ips.sort((a, b) => ipValue(a) - ipValue(b));
}
