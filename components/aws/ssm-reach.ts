import * as pulumi from "@pulumi/pulumi";
import * as aws from "./sdk";
import type { SpecIssue } from "../errors";
import type { ClusterSpec } from "../spec-types";

/*
 * `access: ssm` in a VPC of your own (cluster.aws.network): Ansible's SSH runs inside Session Manager sessions that
 * each node's SSM Agent opens outbound, over HTTPS, to ssm, ssmmessages and ec2messages. A subnet that reaches none of
 * them gives nodes that launch, pass the capacity wait and then never answer. Asked of EC2 before anything is
 * created: the subnet's route table and the VPC's interface endpoints. Asking is in `askSsmReach`, grading in the
 * pure `gradeSsmReach`.
 */

/**
 * The services Session Manager needs the nodes to reach (interface endpoints com.amazonaws.<region>.<service>, with
 * private DNS, so the agent's usual host names resolve to them).
 * source: https://docs.aws.amazon.com/systems-manager/latest/userguide/setup-create-vpc.html ("Create VPC endpoints":
 * the three services, private DNS, HTTPS 443 from the instances)
 */
export const SSM_ENDPOINT_SERVICES = ["ssm", "ssmmessages", "ec2messages"] as const;

/** One route as aws.ec2.getRouteTable gives it (@pulumi/aws GetRouteTableRoute; the targets read here). */
export interface RouteAnswer {
    cidrBlock?: string;
    gatewayId?: string;
    natGatewayId?: string;
    transitGatewayId?: string;
    networkInterfaceId?: string;
    vpcPeeringConnectionId?: string;
    coreNetworkArn?: string;
    instanceId?: string;
    localGatewayId?: string;
    carrierGatewayId?: string;
}

/** An interface endpoint as aws.ec2.getVpcEndpoint gives it (GetVpcEndpointResult; the fields read here). */
export interface EndpointAnswer {
    id?: string;
    state?: string;
    privateDnsEnabled?: boolean;
    vpcEndpointType?: string;
}

/** The VPC and subnet as EC2 names them (the spec's ids, once known: they may be another resource's outputs). */
export interface SsmReachIds {
    vpcId: string;
    subnetId: string;
}

export interface SsmReachAnswers {
    /** the route table that applies to the subnet, and whether it is the VPC's main one; or why it could not be read */
    routeTable?: { id: string; main: boolean; routes?: RouteAnswer[] } | { error: string };
    /** per service: the VPC's available endpoint for it, or the provider's words for why there is none */
    endpoints: Partial<Record<(typeof SSM_ENDPOINT_SERVICES)[number], EndpointAnswer | { error: string }>>;
}

/** Whether a value is the engine's "not known yet" (the offline plan answers every cloud question with it). */
function unknown(v: unknown): boolean {
    return v === undefined || v === pulumi.runtime.unknownValue || pulumi.isUnknown(v);
}

/** The plan's line for this check, or none when it does not apply. Pure. */
export function ssmReachCheck(spec: ClusterSpec): string | undefined {
    const a = spec.aws!;
    const given = a.network.subnets?.[0]?.id;
    if (a.access !== "ssm" || a.network.vpcId === undefined || given === undefined) return undefined;
    const subnet = typeof given === "string" ? `subnet ${given}` : "the given subnet";
    return `${subnet} reaches Systems Manager: a 0.0.0.0/0 route through a NAT gateway in its route table (the VPC's main one when it has none of its own), or interface endpoints for ${SSM_ENDPOINT_SERVICES.join(", ")} with private DNS in ${typeof a.network.vpcId === "string" ? a.network.vpcId : "the given VPC"} (ec2:DescribeRouteTables, ec2:DescribeVpcEndpoints)`;
}

/**
 * The subnet's way to Systems Manager, graded. Reach is a 0.0.0.0/0 route through a NAT gateway, or all three
 * endpoints available with private DNS on. A default route through an internet gateway is not: the nodes get no
 * public IPv4 address (components/aws/template.ts: associatePublicIpAddress false; several network interfaces
 * cannot have one auto-assigned), and an internet gateway carries only traffic of instances that have one.
 * source: https://docs.aws.amazon.com/vpc/latest/userguide/VPC_Internet_Gateway.html (public IPv4 address needed),
 * https://docs.aws.amazon.com/vpc/latest/userguide/RouteTables.html (a subnet with no explicit association uses the
 * main route table). A default route to anything else (transit gateway, network interface, peering, Cloud WAN, …)
 * may reach the internet beyond what EC2 shows: a warning, not a refusal. Unknown answers pass. Pure.
 */
export function gradeSsmReach(spec: ClusterSpec, ids: SsmReachIds, answers: SsmReachAnswers): { issues: SpecIssue[]; warnings: string[] } {
    const a = spec.aws!;
    const subnet = ids.subnetId;
    const vpc = ids.vpcId;
    const rt = answers.routeTable;
    const missing: string[] = [];
    const dnsOff: string[] = [];
    let endpointsKnown = true;
    for (const svc of SSM_ENDPOINT_SERVICES) {
        const e = answers.endpoints[svc];
        if (!e || ("state" in e && unknown(e.state))) { endpointsKnown = false; continue; }
        if ("error" in e || String(e.state).toLowerCase() !== "available") missing.push(svc);
        else if (e.privateDnsEnabled !== true) dnsOff.push(`${svc} (${e.id ?? "its endpoint"})`);
    }
    if (endpointsKnown && missing.length === 0 && dnsOff.length === 0) return { issues: [], warnings: [] };
    if (!rt || ("routes" in rt && unknown(rt.routes)) || ("id" in rt && unknown(rt.id)) || !endpointsKnown) return { issues: [], warnings: [] };

    let route: string;
    if ("error" in rt) {
        route = `its route table cannot be read (${rt.error})`;
    } else {
        const table = `its route table ${rt.id}${rt.main ? " (the VPC's main route table: the subnet has no explicit association)" : ""}`;
        const def = (rt.routes ?? []).find((r) => r.cidrBlock === "0.0.0.0/0");
        if (def?.natGatewayId) return { issues: [], warnings: [] };
        const other = def && [def.transitGatewayId, def.networkInterfaceId, def.vpcPeeringConnectionId, def.coreNetworkArn, def.instanceId, def.localGatewayId, def.carrierGatewayId,
            def.gatewayId && !def.gatewayId.startsWith("igw-") ? def.gatewayId : undefined].find((x) => x);
        if (other) {
            return {
                issues: [], warnings: [`rdmakit: subnet ${subnet} sends 0.0.0.0/0 to ${other} (${table.slice(4)}); whether that reaches Systems Manager (${SSM_ENDPOINT_SERVICES.join(", ")} over HTTPS) EC2 does not show, so it is not checked`],
            };
        }
        route = def?.gatewayId
            ? `${table} sends 0.0.0.0/0 to internet gateway ${def.gatewayId}, which the nodes cannot use: they get no public IP`
            : `${table} has no 0.0.0.0/0 route through a NAT gateway`;
    }
    const lacks = [
        missing.length ? `no available interface endpoint for ${missing.join(", ")}` : "",
        dnsOff.length ? `private DNS off on ${dnsOff.join(", ")}` : "",
    ].filter((x) => x).join(", and ");
    return {
        issues: [{
            path: "cluster.aws.network.subnets[0].id", value: subnet,
            message: `cannot reach Systems Manager, which access: ssm needs (the nodes' SSM Agent opens every session outbound): ${route}, and VPC ${vpc} has ${lacks}`,
            // private DNS needs the VPC's DNS resolution and DNS hostnames attributes on
            // source: https://docs.aws.amazon.com/vpc/latest/privatelink/create-interface-endpoint.html (prerequisites)
            allowed: `a 0.0.0.0/0 route through a NAT gateway in ${"error" in rt ? "the subnet's route table" : rt.id}, or interface endpoints ${SSM_ENDPOINT_SERVICES.map((s) => `com.amazonaws.${a.region}.${s}`).join(", ")} in ${vpc} with private DNS on (DNS resolution and DNS hostnames on in the VPC) and a security group that takes HTTPS (443) from the nodes`,
        }],
        warnings: [],
    };
}

/**
 * Asks EC2 for the subnet's route table (its explicit association, else the VPC's main route table) and the VPC's
 * three endpoints, before anything is created; resolves to the graded answers (never rejects). Only with
 * `access: ssm` in a VPC of your own: in the VPC the kit creates, it makes the NAT route and the endpoints itself.
 */
export function askSsmReach(spec: ClusterSpec, parent: pulumi.Resource): pulumi.Output<{ issues: SpecIssue[]; warnings: string[] }> {
    if (!ssmReachCheck(spec)) return pulumi.output({ issues: [], warnings: [] });
    const a = spec.aws!;
    // ids given as text are asked about at once (also in a preview); another resource's output once it is known
    return pulumi.all([a.network.vpcId!, a.network.subnets![0].id]).apply(([vpcId, subnetId]) => ask(spec, { vpcId, subnetId }, parent));
}

function ask(spec: ClusterSpec, ids: SsmReachIds, parent: pulumi.Resource): Promise<{ issues: SpecIssue[]; warnings: string[] }> {
    const region = spec.aws!.region, { vpcId, subnetId } = ids;
    const opts = { parent };
    // DescribeRouteTables filters association.subnet-id and association.main (true | false)
    // source: https://docs.aws.amazon.com/cli/latest/reference/ec2/describe-route-tables.html
    const tables = (filter: { name: string; values: string[] }) => aws.ec2.getRouteTables({ region, vpcId, filters: [filter] }, opts).then((r) => r?.ids);
    const routeTable: Promise<SsmReachAnswers["routeTable"]> = tables({ name: "association.subnet-id", values: [subnetId] })
        .then(async (own) => {
            if (unknown(own)) return undefined;
            const main = own!.length === 0;
            const found = main ? await tables({ name: "association.main", values: ["true"] }) : own;
            if (unknown(found)) return undefined;
            if (found!.length === 0) return { error: `EC2 lists no route table for subnet ${subnetId} and no main route table in ${vpcId}` };
            const t = await aws.ec2.getRouteTable({ region, routeTableId: found![0] }, opts);
            return { id: found![0], main, routes: t?.routes };
        })
        .catch((e: unknown) => ({ error: String((e as Error)?.message ?? e) }));
    const endpoints = Promise.all(SSM_ENDPOINT_SERVICES.map((svc) =>
        aws.ec2.getVpcEndpoint({ region, vpcId, serviceName: `com.amazonaws.${region}.${svc}`, state: "available" }, opts)
            .then((e): EndpointAnswer => ({ id: e?.id, state: e?.state, privateDnsEnabled: e?.privateDnsEnabled, vpcEndpointType: e?.vpcEndpointType }),
                (e: unknown) => ({ error: String((e as Error)?.message ?? e) }))))
        .then((list) => Object.fromEntries(SSM_ENDPOINT_SERVICES.map((svc, i) => [svc, list[i]])));
    return Promise.all([routeTable, endpoints]).then(([rt, eps]) => gradeSsmReach(spec, ids, { routeTable: rt, endpoints: eps }));
}
