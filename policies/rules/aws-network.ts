/**
 * AWS EFA rules across resources: the EFA security group's self rules, and where an EFA Auto Scaling group puts its
 * nodes (one subnet/AZ, a cluster placement group or a Capacity Block, never both). Facts from
 * shared/research/aws-efa.md §2.3–2.5 (cited per rule).
 */
import type { PolicyResource } from "@pulumi/policy";
import type { Findings } from "../support";
import { dependenciesOf, get, items, known, knownItems, show, TYPES, UNKNOWN, type Maybe } from "../support";
import { efaNodes, groupsLaunching, isEfa, nicGroups, nicLabel, SCOPE_SCHEMA, templateNics, type EfaGroup, type ScopeConfig } from "./aws-model";
import { stackPolicy } from "./define";

type Direction = "ingress" | "egress";

/**
 * All protocols is IpProtocol -1. source: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpPermission.html
 * ("Use -1 to specify all protocols"); aws-efa.md §2.4 (aws-parallelcluster EfaSecurityGroupValidator checks -1).
 */
const ALL_PROTOCOLS = ["-1", "all"];

/**
 * Whether a property of a rule points at group `g`: by value when both are known, otherwise by the resource the
 * engine says the property was computed from. UNKNOWN: the value is unknown and no dependency says where it came from.
 */
function pointsAt(rule: PolicyResource, property: string, g: PolicyResource): Maybe<boolean> {
    const v = get(() => rule.props[property]);
    if (v !== UNKNOWN) {
        const id = known(() => g.props.id);
        if (id !== undefined) return v === id;
        // the group's id is unknown (created in this preview) while the rule's is known: another group
        return dependenciesOf(rule, property, TYPES.securityGroup).some((d) => d.urn === g.urn);
    }
    const deps = dependenciesOf(rule, property, TYPES.securityGroup);
    if (deps.length === 0) return UNKNOWN;
    return deps.some((d) => d.urn === g.urn);
}

/**
 * Looks for an all-protocol rule of `g` in `direction` whose peer is `g` itself: inline (`ingress`/`egress` with
 * `self: true` or the group's own id in securityGroups), a separate aws.vpc.SecurityGroup{Ingress,Egress}Rule with
 * referencedSecurityGroupId, or a legacy aws.ec2.SecurityGroupRule with self/sourceSecurityGroupId.
 * `undecided`: rules whose group or peer cannot be traced yet.
 */
function findSelfRule(g: PolicyResource, direction: Direction, resources: PolicyResource[]): { found: boolean; undecided: string[] } {
    const undecided: string[] = [];
    const id = known(() => g.props.id);
    const inline = items(() => g.props[direction]);
    if (inline === UNKNOWN) undecided.push(`${g.name}.${direction}`);
    for (const r of knownItems(() => g.props[direction]) as Record<string, any>[]) {
        if (!ALL_PROTOCOLS.includes(String(known(() => r.protocol)))) continue;
        const peers = knownItems(() => r.securityGroups);
        if (known(() => r.self) === true || (id !== undefined && peers.includes(id))) return { found: true, undecided };
    }
    const separate = direction === "ingress" ? TYPES.ingressRule : TYPES.egressRule;
    for (const r of resources) {
        let mine: Maybe<boolean>;
        let self: Maybe<boolean>;
        if (r.type === separate) {
            if (!ALL_PROTOCOLS.includes(String(known(() => r.props.ipProtocol)))) continue;
            mine = pointsAt(r, "securityGroupId", g);
            self = pointsAt(r, "referencedSecurityGroupId", g);
        } else if (r.type === TYPES.securityGroupRule) {
            if (known(() => r.props.type) !== direction || !ALL_PROTOCOLS.includes(String(known(() => r.props.protocol)))) continue;
            mine = pointsAt(r, "securityGroupId", g);
            self = known(() => r.props.self) === true ? true : pointsAt(r, "sourceSecurityGroupId", g);
        } else {
            continue;
        }
        if (mine === false || self === false) continue;
        if (mine === true && self === true) return { found: true, undecided };
        undecided.push(r.name);
    }
    return { found: false, undecided };
}

function selfRulePolicy(direction: Direction) {
    return stackPolicy<ScopeConfig>({
        name: `aws-efa-sg-self-${direction}`,
        description: `Every EFA interface is in a security group with an all-protocol (-1) ${direction} rule whose ${direction === "ingress" ? "source" : "destination"} is the group itself.`,
        remediationSteps:
            `Add aws.vpc.Security${direction === "ingress" ? "GroupIngressRule" : "GroupEgressRule"} { securityGroupId: sg.id, referencedSecurityGroupId: sg.id, ipProtocol: "-1" } ` +
            `(CLI: aws ec2 authorize-security-group-${direction} --group-id $SG --protocol -1 --source-group $SG).` +
            (direction === "egress" ? " An egress rule to 0.0.0.0/0 does not cover EFA traffic: EFA addresses are neither IPv4 nor IPv6." : ""),
        severity: "critical",
        // source: aws-efa.md §2.4 (PC EfaSecurityGroupValidator; awslabs/awsome-distributed-ai#546)
        url: "https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-sg.html",
        enforcementLevel: "mandatory",
        configSchema: { properties: SCOPE_SCHEMA },
    }, (args, f, config) => {
        const { nodes, unknown } = efaNodes(args.resources, config.instanceFamilies);
        unknown.forEach((u) => f.cannotVerify(u));
        const templates = nodes.filter((r) => r.type === "aws:ec2/launchTemplate:LaunchTemplate");
        if (templates.length === 0 && unknown.length === 0) args.notApplicable("no launch template on an EFA fabric");
        for (const lt of templates) {
            const nics = templateNics(lt.props);
            if (nics === UNKNOWN) {
                f.cannotVerify(`the network interfaces of launch template ${lt.name} are not known yet`);
                continue;
            }
            for (const nic of nics.filter(isEfa)) checkNic(lt, nicLabel(nic), nicGroups(lt, nic, args.resources), direction, args.resources, f);
        }
    });
}

function checkNic(lt: PolicyResource, label: string, groups: ReturnType<typeof nicGroups>, direction: Direction, resources: PolicyResource[], f: Findings): void {
    if (groups.untraced) {
        f.cannotVerify(`the security groups of launch template ${lt.name} ${label} are not known yet and no dependency names them`);
        return;
    }
    if (groups.found.length === 0 && groups.outside.length === 0) {
        f.violation(`launch template ${lt.name}: EFA ${label} has no security group, so no self rule can admit EFA traffic`, lt.urn);
        return;
    }
    const verdicts = groups.found.map((g) => ({ g, ...findSelfRule(g, direction, resources) }));
    // An interface in several groups gets the union of their rules: one group with the rule is enough.
    if (verdicts.some((v) => v.found)) return;
    if (groups.outside.length > 0) {
        f.cannotVerify(`launch template ${lt.name} ${label} uses security group${groups.outside.length > 1 ? "s" : ""} ${groups.outside.join(", ")}, which ${groups.outside.length > 1 ? "are" : "is"} not in this stack, so ${groups.outside.length > 1 ? "their" : "its"} rules cannot be read`);
        return;
    }
    const undecided = verdicts.flatMap((v) => v.undecided);
    if (undecided.length > 0) {
        f.cannotVerify(`the security group of rule(s) ${[...new Set(undecided)].join(", ")} is not known yet and no dependency names it`);
        return;
    }
    const named = verdicts.map((v) => `${v.g.name}${known(() => v.g.props.id) !== undefined ? ` (${known(() => v.g.props.id)})` : ""}`);
    f.violation(`launch template ${lt.name}: EFA ${label}: security group ${named.join(", ")} has no all-protocol (-1) ${direction} rule referencing itself`, lt.urn);
}

export const awsEfaSgSelfIngress = selfRulePolicy("ingress");
export const awsEfaSgSelfEgress = selfRulePolicy("egress");

// ---------------------------------------------------------------------------------------------------------------
// Auto Scaling groups

/** EFA Auto Scaling groups of the stack (and what cannot be traced yet), or notApplicable. */
function efaGroups(resources: PolicyResource[], families: string[], f: Findings, notApplicable: (r: string) => never): EfaGroup[] {
    const { nodes, unknown } = efaNodes(resources, families);
    const { groups, unknown: untraced } = groupsLaunching(resources, nodes.filter((r) => r.type === TYPES.launchTemplate));
    [...unknown, ...untraced].forEach((u) => f.cannotVerify(u));
    if (groups.length === 0 && unknown.length === 0 && untraced.length === 0) notApplicable("no auto scaling group launches an EFA launch template");
    return groups;
}

const isCapacityBlock = (lt: PolicyResource) => known(() => lt.props.instanceMarketOptions?.marketType) === "capacity-block";

/** The placement group named on the group or its template: a name, UNKNOWN, or undefined (none). */
function placementOf(g: EfaGroup): Maybe<string | undefined> {
    for (const v of [get(() => g.group.props.placementGroup), get(() => g.template.props.placement?.groupName), get(() => g.template.props.placement?.groupId)]) {
        if (v === UNKNOWN) return UNKNOWN;
        if (typeof v === "string" && v !== "") return v;
    }
    return undefined;
}

export const awsEfaAsgSingleSubnet = stackPolicy<ScopeConfig>({
    name: "aws-efa-asg-single-subnet",
    description: "An EFA Auto Scaling group launches into exactly one subnet (so one Availability Zone).",
    remediationSteps: "Set vpcZoneIdentifiers to the one node subnet (and no second availabilityZones entry): EFA is not supported across Availability Zones and does not cross subnets.",
    severity: "high",
    // source: aws-efa.md §2.3 (PC EfaMultiAzValidator "EFA is not supported across Availability zones"; single-subnet EFA)
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html",
    enforcementLevel: "mandatory",
    configSchema: { properties: SCOPE_SCHEMA },
}, (args, f, config) => {
    for (const g of efaGroups(args.resources, config.instanceFamilies, f, args.notApplicable)) {
        const subnets = items(() => g.group.props.vpcZoneIdentifiers);
        const zones = items(() => g.group.props.availabilityZones);
        if (subnets === UNKNOWN || zones === UNKNOWN) {
            f.cannotVerify(`the subnets of auto scaling group ${g.group.name} are not known yet`);
            continue;
        }
        if (subnets !== undefined && subnets.length > 1) f.violation(`auto scaling group ${g.group.name} (launch template ${g.template.name}) spans ${subnets.length} subnets (vpcZoneIdentifiers ${show(subnets)}); EFA nodes must share one subnet`, g.group.urn);
        else if (zones !== undefined && zones.length > 1) f.violation(`auto scaling group ${g.group.name} spans ${zones.length} Availability Zones (${show(zones)}); EFA is not supported across Availability Zones`, g.group.urn);
    }
});

export const awsEfaPlacementCapacityBlock = stackPolicy<ScopeConfig>({
    name: "aws-efa-placement-capacity-block",
    description: "An EFA Auto Scaling group whose launch template targets a Capacity Block has no placement group.",
    remediationSteps:
        "Remove placementGroup from the group (and placement.groupName from the template): a Capacity Block already places its " +
        "instances in an EC2 UltraCluster, and a placement group on top can fail with insufficient capacity.",
    severity: "high",
    // source: aws-efa.md §2.3 (PC PlacementGroupCapacityTypeValidator), §2.5
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html",
    enforcementLevel: "mandatory",
    configSchema: { properties: SCOPE_SCHEMA },
}, (args, f, config) => {
    for (const g of efaGroups(args.resources, config.instanceFamilies, f, args.notApplicable)) {
        if (!isCapacityBlock(g.template)) continue;
        const pg = placementOf(g);
        if (pg !== undefined) f.violation(`auto scaling group ${g.group.name}: launch template ${g.template.name} targets a Capacity Block (marketType "capacity-block") and the group also sets placement group ${show(pg)}`, g.group.urn);
    }
});

export const awsEfaPlacementCluster = stackPolicy<ScopeConfig>({
    name: "aws-efa-placement-cluster",
    description: "An EFA Auto Scaling group launches into a placement group with strategy \"cluster\", unless its launch template targets a Capacity Block.",
    remediationSteps: "Create an aws.ec2.PlacementGroup with strategy \"cluster\" and set it as the group's placementGroup, or launch into a Capacity Block.",
    severity: "medium",
    // source: aws-efa.md §2.3 (PC EfaPlacementGroupValidator: "better performance using a placement group"; PC groups use cluster)
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/placement-strategies.html",
    enforcementLevel: "advisory",
    configSchema: { properties: SCOPE_SCHEMA },
}, (args, f, config) => {
    const pgs = args.resources.filter((r) => r.type === TYPES.placementGroup);
    for (const g of efaGroups(args.resources, config.instanceFamilies, f, args.notApplicable)) {
        if (isCapacityBlock(g.template)) continue;
        const pg = placementOf(g);
        if (pg === undefined) {
            f.violation(`auto scaling group ${g.group.name} (launch template ${g.template.name}) has no placement group and no Capacity Block, so its EFA nodes may land far apart`, g.group.urn);
            continue;
        }
        const resources = [...dependenciesOf(g.group, "placementGroup", TYPES.placementGroup), ...dependenciesOf(g.template, "placement", TYPES.placementGroup),
            ...pgs.filter((p) => typeof pg === "string" && (known(() => p.props.name) === pg || known(() => p.props.id) === pg))];
        if (resources.length === 0) {
            f.cannotVerify(`placement group ${show(pg)} of auto scaling group ${g.group.name} is not in this stack, so its strategy cannot be read`);
            continue;
        }
        for (const p of new Set(resources)) {
            const strategy = get(() => p.props.strategy);
            if (strategy === UNKNOWN) f.cannotVerify(`the strategy of placement group ${p.name} is not known yet`);
            else if (strategy !== "cluster") f.violation(`auto scaling group ${g.group.name}: placement group ${p.name} has strategy ${show(strategy)}, not "cluster"`, g.group.urn);
        }
    }
});
