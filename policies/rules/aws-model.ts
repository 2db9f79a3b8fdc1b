/**
 * AWS resources as the EFA rules see them: which launch templates, instances and Auto Scaling groups are on an EFA
 * fabric (the scope of every aws-efa-* policy), and their network interfaces read from the raw provider inputs
 * (@pulumi/aws 7.x names: aws.ec2.LaunchTemplate `networkInterfaces[].{networkCardIndex, deviceIndex, interfaceType,
 * securityGroups, subnetId, associatePublicIpAddress}`; `associatePublicIpAddress` is a string there, "true"/"false").
 * Facts about instance types come from the catalog (components/catalog/aws.ts), never from here.
 */
import type { PolicyConfigSchema, PolicyResource } from "@pulumi/policy";
import { AWS_INSTANCE_TYPES, awsInstanceType, type AwsInstanceType } from "../../components/catalog/aws";
import { get, items, known, knownItems, resolveRefs, show, TYPES, UNKNOWN, type Maybe } from "../support";

/** EFA interface types. source: aws-efa.md §2.1 (`efa` = EFA + ENA, `efa-only` = EFA device only, `interface` = ENA) */
export const EFA_TYPES: readonly string[] = ["efa", "efa-only"];

/**
 * Instance families whose templates are on an EFA fabric even before they ask for an EFA interface: the catalog's
 * types with GPUDirect RDMA over EFA (P-series from p4d on; aws-efa.md §1). The g-series support EFA but are also
 * used alone for inference, so a g5 template is in scope only when it asks for EFA.
 */
export const DEFAULT_FAMILIES: string[] = [...new Set(AWS_INSTANCE_TYPES.filter((t) => t.gpuDirectRdma).map((t) => familyOf(t.name)))];

export function familyOf(instanceType: string): string {
    return instanceType.split(".")[0];
}

/** The scope setting every aws-efa-* policy takes. */
export const SCOPE_SCHEMA: PolicyConfigSchema["properties"] = {
    instanceFamilies: {
        type: "array", items: { type: "string" }, default: DEFAULT_FAMILIES,
        description: "Instance families (the part before the dot) whose launch templates and instances are checked even without an EFA interface; anything with an efa or efa-only interface is always checked.",
    },
};
export interface ScopeConfig {
    instanceFamilies: string[];
}

export interface Nic {
    index: number;
    card: Maybe<number>;
    device: Maybe<number>;
    type: Maybe<string>;
    publicIp: Maybe<unknown>;
    groups: Maybe<unknown[] | undefined>;
    subnet: Maybe<unknown>;
}

const num = (v: unknown): Maybe<number> => (v === UNKNOWN ? UNKNOWN : typeof v === "number" ? v : v === undefined || v === null ? 0 : Number(v));

/** A launch template's interfaces (UNKNOWN when the list itself is unknown). An unset interfaceType is `interface`. */
export function templateNics(props: Record<string, any>): Maybe<Nic[]> {
    const list = items(() => props.networkInterfaces);
    if (list === UNKNOWN) return UNKNOWN;
    return (list ?? []).map((raw, index) => {
        const i = (raw !== null && typeof raw === "object" ? raw : {}) as Record<string, any>;
        const type = get(() => i.interfaceType as string | undefined);
        return {
            index,
            card: num(get(() => i.networkCardIndex)),
            device: num(get(() => i.deviceIndex)),
            type: raw === UNKNOWN ? UNKNOWN : type === UNKNOWN ? UNKNOWN : type || "interface",
            publicIp: get(() => i.associatePublicIpAddress),
            groups: items(() => i.securityGroups),
            subnet: get(() => i.subnetId),
        };
    });
}

export const isEfa = (n: Nic) => typeof n.type === "string" && EFA_TYPES.includes(n.type);

export function nicLabel(n: Nic): string {
    return `networkInterfaces[${n.index}] (card ${n.card === UNKNOWN ? "?" : n.card}, device ${n.device === UNKNOWN ? "?" : n.device})`;
}

export type Scope = { in: true; why: string } | { in: false; why: string } | { in: "unknown"; why: string };

/**
 * Whether a launch template or instance is on an EFA fabric. In scope: an efa/efa-only interface (for an instance,
 * an attached aws.ec2.NetworkInterface of that type, when `resources` are given), or an instance type of a family
 * in scope. Unknown: the instance type is not known yet and nothing else says EFA.
 */
export function awsScope(r: PolicyResource, families: string[], resources?: PolicyResource[]): Scope {
    const efa = r.type === TYPES.launchTemplate ? launchTemplateHasEfa(r) : resources ? instanceEnis(r, resources).some((e) => EFA_TYPES.includes(String(known(() => e.props.interfaceType)))) : false;
    if (efa) return { in: true, why: "asks for an EFA interface" };
    const t = get(() => r.props.instanceType as string | undefined);
    if (t === UNKNOWN) return { in: "unknown", why: `whether ${r.name} is on an EFA fabric: its instance type is not known yet` };
    if (typeof t === "string" && families.includes(familyOf(t))) return { in: true, why: `instance type ${t}` };
    // a template an Auto Scaling group launches as another type (mixedInstancesPolicy overrides) is on the fabric
    // when the group launches it as a type in scope
    if (r.type === TYPES.launchTemplate && resources) {
        const l = launchedAs(r, resources);
        const rdma = l.types.find((x) => families.includes(familyOf(x.type)));
        if (rdma) return { in: true, why: `auto scaling group ${rdma.group} launches it as ${rdma.type} (mixedInstancesPolicy overrides)` };
        if (l.open.length > 0) return { in: "unknown", why: l.open.join("; ") };
    }
    return { in: false, why: `${r.name} has no EFA interface and instance type ${show(t)} is not in the families in scope (${families.join(", ")})` };
}

function launchTemplateHasEfa(r: PolicyResource): boolean {
    const nics = templateNics(r.props);
    return nics !== UNKNOWN && nics.some(isEfa);
}

/** The catalog entry of a node's instance type, when the type is known and in the catalog. */
export function catalogType(r: { props: Record<string, any> }): AwsInstanceType | undefined {
    const t = known(() => r.props.instanceType as string | undefined);
    return typeof t === "string" ? awsInstanceType(t) : undefined;
}

/** The aws.ec2.NetworkInterface resources an instance attaches (by known id, else through its property dependencies). */
export function instanceEnis(inst: PolicyResource, resources: PolicyResource[]): PolicyResource[] {
    const enis = resources.filter((x) => x.type === TYPES.networkInterface);
    const ids = [
        ...knownItems(() => inst.props.networkInterfaces).map((n) => known(() => (n as any).networkInterfaceId)),
        known(() => inst.props.primaryNetworkInterface?.networkInterfaceId),
    ].filter((x) => x !== undefined);
    const byId = enis.filter((e) => ids.includes(known(() => e.props.id)));
    const deps = [...(inst.propertyDependencies.networkInterfaces ?? []), ...(inst.propertyDependencies.primaryNetworkInterface ?? [])].filter((d) => d.type === TYPES.networkInterface);
    return [...new Set([...byId, ...deps])];
}

/** Launch templates and instances of the stack that are on an EFA fabric, and those whose scope is not known yet. */
export function efaNodes(resources: PolicyResource[], families: string[]): { nodes: PolicyResource[]; unknown: string[] } {
    const nodes: PolicyResource[] = [];
    const unknown: string[] = [];
    for (const r of resources) {
        if (r.type !== TYPES.launchTemplate && r.type !== TYPES.instance) continue;
        const s = awsScope(r, families, resources);
        if (s.in === true) nodes.push(r);
        else if (s.in === "unknown") unknown.push(s.why);
    }
    return { nodes, unknown };
}

export interface EfaGroup {
    group: PolicyResource;
    template: PolicyResource;
}

/**
 * Auto Scaling groups that launch one of `templates` (launchTemplate.id/name, or the mixed-instances policy's
 * launchTemplateSpecification), matched by known id or name, else through the engine's property dependencies.
 * `unknown`: groups whose template cannot be traced yet.
 */
export function groupsLaunching(resources: PolicyResource[], templates: PolicyResource[]): { groups: EfaGroup[]; unknown: string[] } {
    const groups: EfaGroup[] = [];
    const unknown: string[] = [];
    for (const g of resources.filter((r) => r.type === TYPES.autoscalingGroup)) {
        const refs: Maybe<unknown>[] = [
            get(() => g.props.launchTemplate?.id), get(() => g.props.launchTemplate?.name),
            get(() => g.props.mixedInstancesPolicy?.launchTemplate?.launchTemplateSpecification?.launchTemplateId),
            get(() => g.props.mixedInstancesPolicy?.launchTemplate?.launchTemplateSpecification?.launchTemplateName),
        ].filter((v) => v !== undefined);
        const deps = [...dependenciesOfAny(g, ["launchTemplate", "mixedInstancesPolicy"])].filter((d) => d.type === TYPES.launchTemplate);
        let template = templates.find((t) => deps.includes(t));
        if (!template) {
            const ids = refs.filter((v): v is string => typeof v === "string");
            template = templates.find((t) => ids.some((id) => id === known(() => t.props.id) || id === known(() => t.props.name)));
        }
        if (template) groups.push({ group: g, template });
        else if (deps.length === 0 && refs.some((v) => v === UNKNOWN)) unknown.push(`the launch template of auto scaling group ${g.name} is not known yet and no dependency names it`);
    }
    return { groups, unknown };
}

/**
 * The instance types Auto Scaling groups launch `lt` as: `mixedInstancesPolicy.launchTemplate.overrides[].instanceType`
 * (an override's type replaces the template's; @pulumi/aws autoscaling.Group). `open`: what stops the answer, an
 * override that picks types by attributes (`instanceRequirements`, EC2 attribute-based instance type selection) or
 * a type not known yet.
 * source: https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_LaunchTemplateOverrides.html
 */
export function launchedAs(lt: PolicyResource, resources: PolicyResource[]): { types: { type: string; group: string }[]; open: string[] } {
    const types: { type: string; group: string }[] = [];
    const open: string[] = [];
    for (const { group } of groupsLaunching(resources, [lt]).groups) {
        const overrides = items(() => group.props.mixedInstancesPolicy?.launchTemplate?.overrides);
        if (overrides === UNKNOWN) {
            open.push(`the instance type overrides of auto scaling group ${group.name} (which launches ${lt.name}) are not known yet`);
            continue;
        }
        for (const o of (overrides ?? []) as Record<string, any>[]) {
            const t = get(() => o.instanceType);
            if (t === UNKNOWN) open.push(`an instance type override of auto scaling group ${group.name} is not known yet`);
            else if (typeof t === "string" && t !== "") types.push({ type: t, group: group.name });
            else if (get(() => o.instanceRequirements) !== undefined) {
                open.push(`auto scaling group ${group.name} picks the instance types of ${lt.name} by attributes (instanceRequirements), so whether it is on an EFA fabric cannot be verified`);
            }
        }
    }
    return { types, open };
}

function dependenciesOfAny(r: PolicyResource, properties: string[]): PolicyResource[] {
    return properties.flatMap((p) => r.propertyDependencies[p] ?? []);
}

/** The security groups of each interface: in this stack (matched by id or dependency) or outside it (id only). */
export function nicGroups(lt: PolicyResource, nic: Nic, resources: PolicyResource[]): { found: PolicyResource[]; outside: string[]; untraced: boolean } {
    const sgs = resources.filter((r) => r.type === TYPES.securityGroup);
    return resolveRefs(lt, "networkInterfaces", TYPES.securityGroup, nic.groups === undefined ? [] : nic.groups, sgs, (c, v) => known(() => c.props.id) === v);
}
