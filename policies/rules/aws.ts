/**
 * AWS EFA fabric rules: what a launch template, its security group and its Auto Scaling group must say for every
 * GPU to reach every other over EFA. Facts from ../shared/research/aws-efa.md §2 (cited per rule).
 */
import type { PolicyResource, ResourceValidationPolicy, StackValidationPolicy, ReportViolation } from "@pulumi/policy";
import { awsInstanceType } from "../../components/catalog/aws";
import {
    dependenciesOf, EFA_INTERFACE_TYPES, hasEfaInterface, interfaceLabel, knownOr, list, PreviewUnknown, read, show, templateInterfaces, TYPES,
} from "../support";

// ---------------------------------------------------------------------------------------------------------------
// Security group: all-protocol self rules, in and out

type Direction = "ingress" | "egress";

/** A security group as a launch template names it: the resource (when it is in this stack) and/or its id (when known). */
interface GroupRef {
    resource?: PolicyResource;
    id?: string;
}

function groupLabel(g: GroupRef): string {
    return g.resource ? g.resource.name : g.id ?? "(unknown group)";
}

function groupId(g: GroupRef): string | undefined {
    return g.id ?? (g.resource ? knownOr(() => g.resource!.props.id) : undefined);
}

/**
 * All protocols is IpProtocol -1. source: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_IpPermission.html
 * ("Use -1 to specify all protocols"); aws-efa.md §2.4 (aws-parallelcluster EfaSecurityGroupValidator checks -1).
 */
const ALL_PROTOCOLS = "-1";

/**
 * Whether a property of a rule points at group `g`: by value when both are known, otherwise by the resource the
 * engine says the property was computed from. `undefined`: the value is unknown and no dependency says where it came
 * from, so this rule cannot be attributed during preview.
 */
function pointsAt(rule: PolicyResource, property: string, g: GroupRef): boolean | undefined {
    const v = read(() => rule.props[property]);
    if (v.known) {
        const id = groupId(g);
        return id !== undefined && v.value === id;
    }
    const deps = dependenciesOf(rule, property, TYPES.securityGroup);
    if (deps.length === 0) return undefined;
    return g.resource !== undefined && deps.some((d) => d.urn === g.resource!.urn);
}

interface SelfRuleSearch {
    found: boolean;
    /** rules whose group or peer is unknown with no dependency to follow (preview only) */
    undecided: string[];
}

/**
 * Looks for an all-protocol rule of `g` in `direction` whose peer is `g` itself: inline on the group
 * (`ingress`/`egress` with `self: true` or the group's own id), a separate `aws.vpc.SecurityGroup{Ingress,Egress}Rule`
 * with `referencedSecurityGroupId`, or a legacy `aws.ec2.SecurityGroupRule` with `self`/`sourceSecurityGroupId`.
 */
function findSelfRule(g: GroupRef, direction: Direction, resources: PolicyResource[]): SelfRuleSearch {
    const undecided: string[] = [];
    if (g.resource) {
        const inline = list(knownOr(() => g.resource!.props[direction])) ?? [];
        const id = groupId(g);
        for (const r of inline as Record<string, any>[]) {
            if (String(knownOr(() => r.protocol)) !== ALL_PROTOCOLS) continue;
            const peers = (list(knownOr(() => r.securityGroups)) ?? []).map((x) => knownOr(() => x));
            if (knownOr(() => r.self) === true || (id !== undefined && peers.includes(id))) return { found: true, undecided };
        }
    }
    const separate = direction === "ingress" ? TYPES.ingressRule : TYPES.egressRule;
    for (const r of resources) {
        let mine: boolean | undefined;
        let self: boolean | undefined;
        if (r.type === separate) {
            if (String(knownOr(() => r.props.ipProtocol)) !== ALL_PROTOCOLS) continue;
            mine = pointsAt(r, "securityGroupId", g);
            self = pointsAt(r, "referencedSecurityGroupId", g);
        } else if (r.type === TYPES.securityGroupRule) {
            if (knownOr(() => r.props.type) !== direction || String(knownOr(() => r.props.protocol)) !== ALL_PROTOCOLS) continue;
            mine = pointsAt(r, "securityGroupId", g);
            self = knownOr(() => r.props.self) === true ? true : pointsAt(r, "sourceSecurityGroupId", g);
        } else {
            continue;
        }
        if (mine === false || self === false) continue;
        if (mine === true && self === true) return { found: true, undecided };
        undecided.push(r.name);
    }
    return { found: false, undecided };
}

/**
 * The groups each EFA interface of a launch template is in. Known ids are matched to the groups in this stack; when
 * the ids are unknown (a group created in the same preview), the groups come from the engine's propertyDependencies
 * of `networkInterfaces`, which cover every interface of the template, not one. Returns one list per EFA interface.
 */
function efaInterfaceGroups(lt: PolicyResource, groups: PolicyResource[]): { label: string; groups: GroupRef[] }[] {
    const out: { label: string; groups: GroupRef[] }[] = [];
    templateInterfaces(lt.props).forEach((iface, index) => {
        if (!EFA_INTERFACE_TYPES.includes(String(knownOr(() => iface.interfaceType)))) return;
        const ids = read(() => (list(iface.securityGroups) ?? []).map((x) => x as string));
        let refs: GroupRef[];
        if (ids.known) {
            refs = ids.value.map((id) => ({ id, resource: groups.find((sg) => knownOr(() => sg.props.id) === id) }));
        } else {
            const deps = dependenciesOf(lt, "networkInterfaces", TYPES.securityGroup);
            // Unknown ids and no dependency to follow: nothing can be said during preview (the engine reports it).
            if (deps.length === 0) throw new PreviewUnknown(`the security groups of launch template ${lt.name} ${interfaceLabel(iface, index)} are unknown and no dependency names them (${ids.error.message})`);
            refs = deps.map((resource) => ({ resource }));
        }
        out.push({ label: interfaceLabel(iface, index), groups: refs });
    });
    return out;
}

export const awsEfaSgSelfIngressEgress: StackValidationPolicy = {
    name: "aws-efa-sg-self-ingress-egress",
    description:
        "Every EFA interface of a launch template is in a security group with all-protocol (-1) ingress AND egress rules whose peer is the group itself.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Add both rules to the EFA security group: aws.vpc.SecurityGroupIngressRule and aws.vpc.SecurityGroupEgressRule with " +
        "ipProtocol \"-1\" and referencedSecurityGroupId = securityGroupId = the group's id (CLI: aws ec2 authorize-security-group-" +
        "{ingress,egress} --group-id $SG --protocol -1 --source-group $SG). An egress rule to 0.0.0.0/0 does not cover EFA traffic.",
    // source: aws-efa.md §2.4 (PC EfaSecurityGroupValidator; https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-sg.html;
    // "EFA addresses are neither IPv4 nor IPv6", awslabs/awsome-distributed-ai#546)
    validateStack: (args, report: ReportViolation) => {
        const templates = args.resources.filter((r) => r.type === TYPES.launchTemplate && hasEfaInterface(r.props));
        if (templates.length === 0) args.notApplicable("no launch template with an efa or efa-only interface");
        const groups = args.resources.filter((r) => r.type === TYPES.securityGroup);
        for (const lt of templates) {
            for (const iface of efaInterfaceGroups(lt, groups)) {
                if (iface.groups.length === 0) {
                    report(`launch template ${lt.name}: EFA ${iface.label} has no security group, so no self rule can admit EFA traffic`, lt.urn);
                    continue;
                }
                const verdicts = iface.groups.map((g) => ({ g, ingress: findSelfRule(g, "ingress", args.resources), egress: findSelfRule(g, "egress", args.resources) }));
                // An interface in several groups gets the union of their rules: one group with both self rules is enough.
                if (verdicts.some((v) => v.ingress.found && v.egress.found)) continue;
                const undecided = verdicts.flatMap((v) => [...v.ingress.undecided, ...v.egress.undecided]);
                if (undecided.length > 0) {
                    // Rules whose group is unknown and untraceable could be the missing ones: say nothing rather than guess.
                    throw new PreviewUnknown(`the security group of rule(s) ${[...new Set(undecided)].join(", ")} is unknown and no dependency names it`);
                }
                const missing = verdicts.map((v) => {
                    const lacks = [v.ingress.found ? undefined : "ingress", v.egress.found ? undefined : "egress"].filter(Boolean).join(" and ");
                    const where = v.g.resource && v.g.id !== undefined ? ` (${v.g.id})` : "";
                    return `security group ${groupLabel(v.g)}${where} has no all-protocol (-1) ${lacks} rule referencing itself`;
                });
                report(`launch template ${lt.name}: EFA ${iface.label}: ${missing.join("; ")}`, lt.urn);
            }
        }
    },
};

// ---------------------------------------------------------------------------------------------------------------
// Launch template

/**
 * Whether a launch template is for EFA nodes: it asks for an EFA interface, or its instance type is one of the kit's
 * EFA GPU types. Other templates (a CPU node group, a bastion) are not this pack's business.
 */
function isEfaTemplate(props: Record<string, any>, efaTypes: (t: string) => boolean): boolean {
    const type = knownOr(() => props.instanceType);
    return (typeof type === "string" && efaTypes(type)) || hasEfaInterface(props);
}

export const awsEfaLaunchTemplateNoPublicIp: ResourceValidationPolicy = {
    name: "aws-efa-launch-template-no-public-ip",
    description: "A launch template with more than one network interface does not ask for a public IP on any of them.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Set associatePublicIpAddress to \"false\" (or leave it out) on every interface, put the nodes in a private subnet with a NAT " +
        "gateway, and reach them through a bastion or SSM; if a node needs a public address, attach an Elastic IP to the primary " +
        "interface after launch.",
    // source: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceNetworkInterfaceSpecification.html
    // ("You cannot specify more than one network interface in the request" with AssociatePublicIpAddress); aws-efa.md §2.2
    validateResource: (args, report) => {
        if (args.type !== TYPES.launchTemplate) args.notApplicable(`applies to ${TYPES.launchTemplate}`);
        const ifaces = templateInterfaces(args.props);
        if (ifaces.length <= 1) return;
        ifaces.forEach((i, index) => {
            const v = knownOr(() => i.associatePublicIpAddress);
            if (v === "true" || v === true) {
                report(`launch template ${args.name}: ${interfaceLabel(i, index)} sets associatePublicIpAddress ${show(v)} on a template with ${ifaces.length} interfaces; EC2 refuses to launch it`);
            }
        });
    },
};

/** Instance types in the kit's catalog are EFA GPU types (components/catalog/aws.ts). */
const isEfaInstanceType = (t: string) => awsInstanceType(t) !== undefined;

export const awsEfaLaunchTemplateInterfaces: ResourceValidationPolicy = {
    name: "aws-efa-launch-template-interfaces",
    description:
        "An EFA launch template has at least one efa/efa-only interface, one interface per (networkCardIndex, deviceIndex), " +
        "no efa-only primary, security groups on every interface and no template-level vpcSecurityGroupIds.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Declare one interface per network card (card 0: device 0 `interface` or `efa`, plus `efa-only` at device 1 when the card " +
        "supports EFA; other cards: `efa-only`), each with securityGroups set to the EFA security group and the one node subnet; " +
        "drop vpcSecurityGroupIds/securityGroupNames from the template. rdmakit's plan (components/plan/aws.ts) builds this layout.",
    // source: aws-efa.md §2.1 (interface types; efa-only "can only be configured as a secondary interface"),
    // §2.3 ("security groups must be set per interface (Groups), because SecurityGroupIds cannot be used",
    // https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html)
    validateResource: (args, report) => {
        if (args.type !== TYPES.launchTemplate) args.notApplicable(`applies to ${TYPES.launchTemplate}`);
        if (!isEfaTemplate(args.props, isEfaInstanceType)) args.notApplicable("not an EFA launch template");
        const ifaces = templateInterfaces(args.props);
        const types = ifaces.map((i) => knownOr(() => i.interfaceType));
        if (!types.some((t) => EFA_INTERFACE_TYPES.includes(String(t)))) {
            report(`launch template ${args.name} (instance type ${show(knownOr(() => args.props.instanceType))}): none of its ${ifaces.length} interfaces is efa or efa-only (interfaceType ${show([...new Set(types)])}), so the nodes get no EFA device`);
        }
        const seen = new Map<string, number>();
        ifaces.forEach((i, index) => {
            const card = knownOr(() => i.networkCardIndex) ?? 0;
            const device = knownOr(() => i.deviceIndex);
            const key = `${card}/${device}`;
            if (seen.has(key)) {
                report(`launch template ${args.name}: ${interfaceLabel(i, index)} repeats networkCardIndex ${card} / deviceIndex ${device} of networkInterfaces[${seen.get(key)}]`);
            } else {
                seen.set(key, index);
            }
            if (types[index] === "efa-only" && card === 0 && device === 0) {
                report(`launch template ${args.name}: ${interfaceLabel(i, index)} is efa-only, which cannot be the primary interface (card 0, device 0)`);
            }
            const groups = read(() => list(i.securityGroups));
            if (groups.known && (groups.value === undefined || groups.value.length === 0)) {
                report(`launch template ${args.name}: ${interfaceLabel(i, index)} has no securityGroups (${show(groups.value)}); a template with networkInterfaces takes its groups per interface`);
            }
        });
        for (const field of ["vpcSecurityGroupIds", "securityGroupNames"]) {
            const v = read(() => list(args.props[field]));
            const set = !v.known || (v.value !== undefined && v.value.length > 0);
            if (ifaces.length > 0 && set) {
                report(`launch template ${args.name}: sets ${field} ${v.known ? show(v.value) : "(known after apply)"} together with networkInterfaces; EC2 takes the groups per interface only`);
            }
        }
    },
};

export const awsEfaImdsv2Required: ResourceValidationPolicy = {
    name: "aws-efa-imdsv2-required",
    description: "Launch templates and instances require IMDSv2 (metadataOptions.httpTokens \"required\").",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Set metadataOptions: { httpEndpoint: \"enabled\", httpTokens: \"required\", httpPutResponseHopLimit: 2 } (2 lets containers on " +
        "the node reach IMDS).",
    // source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-IMDS-new-instances.html (httpTokens required = IMDSv2 only)
    validateResource: (args, report) => {
        if (args.type !== TYPES.launchTemplate && args.type !== TYPES.instance) args.notApplicable("applies to launch templates and instances");
        const tokens = knownOr(() => args.props.metadataOptions?.httpTokens);
        if (tokens !== "required") {
            const what = args.type === TYPES.launchTemplate ? "launch template" : "instance";
            report(`${what} ${args.name}: metadataOptions.httpTokens is ${show(tokens)}, not "required"; IMDSv1 stays open to SSRF on a node that holds SSH keys and role credentials`);
        }
    },
};

// ---------------------------------------------------------------------------------------------------------------
// Placement: cluster placement group, or a capacity block, never both

interface EfaGroup {
    group: PolicyResource;
    template: PolicyResource;
    capacityBlock: boolean;
    /** the placement group named on the group or the template; "(known after apply)" when set from an unknown output */
    placementGroup?: string;
    placementGroupResources: PolicyResource[];
}

/** Each Auto Scaling group launched from an EFA launch template, with its placement facts. */
function efaGroups(resources: PolicyResource[]): EfaGroup[] {
    const templates = resources.filter((r) => r.type === TYPES.launchTemplate && hasEfaInterface(r.props));
    const out: EfaGroup[] = [];
    for (const group of resources.filter((r) => r.type === TYPES.autoscalingGroup)) {
        const id = read(() => group.props.launchTemplate?.id as string | undefined);
        let template: PolicyResource | undefined;
        if (id.known) {
            template = templates.find((t) => id.value !== undefined && knownOr(() => t.props.id) === id.value);
        } else {
            const deps = dependenciesOf(group, "launchTemplate", TYPES.launchTemplate);
            if (deps.length === 0) throw new PreviewUnknown(`the launch template of auto scaling group ${group.name} is unknown and no dependency names it`);
            template = templates.find((t) => deps.some((d) => d.urn === t.urn));
        }
        if (!template) continue;
        const lt = template;
        const marketType = knownOr(() => lt.props.instanceMarketOptions?.marketType);
        const onGroup = read(() => group.props.placementGroup as string | undefined);
        const onTemplate = read(() => lt.props.placement?.groupName as string | undefined);
        const named = [onGroup, onTemplate].map((r) => (r.known ? r.value || undefined : "(known after apply)")).find((v) => v !== undefined);
        out.push({
            group, template: lt, capacityBlock: marketType === "capacity-block", placementGroup: named,
            placementGroupResources: dependenciesOf(group, "placementGroup", TYPES.placementGroup),
        });
    }
    return out;
}

export const awsEfaPlacementCapacityBlock: StackValidationPolicy = {
    name: "aws-efa-placement-capacity-block",
    description: "An EFA Auto Scaling group whose launch template targets a Capacity Block has no placement group.",
    enforcementLevel: "mandatory",
    remediationSteps:
        "Remove placementGroup from the Auto Scaling group (and placement.groupName from the launch template): a Capacity Block already " +
        "places its instances in an EC2 UltraCluster (rdmakit: leave cluster.aws.placementGroup unset with capacityBlock).",
    // source: aws-efa.md §2.3 (PC PlacementGroupCapacityTypeValidator: a placement group with a Capacity Block can cause
    // insufficient-capacity errors), §2.5 (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/capacity-blocks-launch.html)
    validateStack: (args, report) => {
        const groups = efaGroups(args.resources);
        if (groups.length === 0) args.notApplicable("no auto scaling group launches an EFA launch template");
        for (const g of groups) {
            if (g.capacityBlock && g.placementGroup !== undefined) {
                report(`auto scaling group ${g.group.name}: launch template ${g.template.name} targets a Capacity Block (marketType "capacity-block") and the group also sets placement group ${g.placementGroup}`, g.group.urn);
            }
        }
    },
};

export const awsEfaPlacementGroup: StackValidationPolicy = {
    name: "aws-efa-placement-group",
    description: "An EFA Auto Scaling group launches into a cluster placement group, unless its launch template targets a Capacity Block.",
    enforcementLevel: "advisory",
    remediationSteps:
        "Create an aws.ec2.PlacementGroup with strategy \"cluster\" and set it as the group's placementGroup (rdmakit does this unless " +
        "cluster.aws.placementGroup is false), or launch into a Capacity Block.",
    // source: aws-efa.md §2.3 (PC EfaPlacementGroupValidator: EFA without a placement group is a warning, "better performance
    // using a placement group"; PC-managed groups use strategy cluster). Advisory: the spec lets a user turn it off.
    validateStack: (args, report) => {
        const groups = efaGroups(args.resources);
        if (groups.length === 0) args.notApplicable("no auto scaling group launches an EFA launch template");
        for (const g of groups) {
            if (g.capacityBlock) continue;
            if (g.placementGroup === undefined) {
                report(`auto scaling group ${g.group.name} (launch template ${g.template.name}) has no placement group and no Capacity Block, so its EFA nodes may land far apart`, g.group.urn);
            }
            for (const pg of g.placementGroupResources) {
                const strategy = knownOr(() => pg.props.strategy);
                if (strategy !== "cluster") report(`auto scaling group ${g.group.name}: placement group ${pg.name} has strategy ${show(strategy)}, not "cluster"`, g.group.urn);
            }
        }
    },
};
