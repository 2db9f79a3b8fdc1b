/**
 * AWS EFA rules on one launch template or instance: its network interfaces, public IPs, IMDS and instance type.
 * Facts from shared/research/aws-efa.md §1–2 (cited per rule) and components/catalog/aws.ts.
 * Each applies only to resources on an EFA fabric (aws-model.ts awsScope); everything else is not applicable.
 */
import type { ResourceValidationArgs } from "@pulumi/policy";
import { awsInstanceType } from "../../components/catalog/aws";
import { CannotVerify, Findings, get, items, show, TYPES, UNKNOWN } from "../support";
import { awsScope, catalogType, EFA_TYPES, efaNodes, instanceEnis, isEfa, launchedAs, nicLabel, SCOPE_SCHEMA, templateNics, type Nic, type ScopeConfig } from "./aws-model";
import { resourcePolicy, stackPolicy, type PolicyMeta } from "./define";

/**
 * A resource policy over EFA launch templates (and instances, where `instances`): not applicable outside the scope,
 * "cannot be verified yet" while the scope is unknown.
 */
type EfaCheck = (args: ResourceValidationArgs, f: Findings, nics: Nic[] | undefined) => void;

/** Every per-template check, by policy name: awsEfaTemplateLaunchedAsRdma runs them on templates only a group puts in scope. */
const TEMPLATE_CHECKS: { name: string; check: EfaCheck }[] = [];

function efaResource(meta: Omit<PolicyMeta, "configSchema">, instances: boolean, check: EfaCheck) {
    TEMPLATE_CHECKS.push({ name: meta.name, check });
    return resourcePolicy<ScopeConfig>({ ...meta, configSchema: { properties: SCOPE_SCHEMA } }, (args, f, config) => {
        const types: string[] = instances ? [TYPES.launchTemplate, TYPES.instance] : [TYPES.launchTemplate];
        if (!types.includes(args.type)) args.notApplicable(`applies to ${types.join(" and ")}`);
        const scope = awsScope({ ...args, dependencies: [], propertyDependencies: {} }, config.instanceFamilies);
        if (scope.in === false) args.notApplicable(`not on an EFA fabric: ${scope.why}`);
        if (scope.in === "unknown") {
            f.cannotVerify(scope.why);
            return;
        }
        let nics: Nic[] | undefined;
        if (args.type === TYPES.launchTemplate) {
            const n = templateNics(args.props);
            if (n === UNKNOWN) {
                f.cannotVerify(`the network interfaces of launch template ${args.name} are not known yet`);
                return;
            }
            nics = n;
        }
        check(args, f, nics);
    });
}

const what = (args: { type: string; name: string }) => `${args.type === TYPES.launchTemplate ? "launch template" : "instance"} ${args.name}`;

export const awsEfaInterfacePresent = stackPolicy<ScopeConfig>({
    name: "aws-efa-interface-present",
    description: "A launch template or instance of an RDMA instance family asks for at least one efa or efa-only interface.",
    remediationSteps:
        "Declare the interfaces explicitly: card 0 device 0 `interface` (or `efa`), then `efa-only` on every further EFA card " +
        "(rdmakit's components/plan/aws.ts builds this layout). Without an EFA interface NCCL falls back to TCP sockets. If the " +
        "family is used without EFA on purpose (single-node inference), remove it from this policy's instanceFamilies.",
    severity: "high",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html",
    enforcementLevel: "advisory",
    configSchema: { properties: SCOPE_SCHEMA },
}, (args, f, config) => {
    const { nodes, unknown } = efaNodes(args.resources, config.instanceFamilies);
    unknown.forEach((u) => f.cannotVerify(u));
    if (nodes.length === 0 && unknown.length === 0) args.notApplicable("no launch template or instance on an EFA fabric");
    for (const r of nodes) {
        if (r.type === TYPES.launchTemplate) {
            const nics = templateNics(r.props);
            if (nics === UNKNOWN) f.cannotVerify(`the network interfaces of launch template ${r.name} are not known yet`);
            else if (!nics.some(isEfa)) f.violation(`launch template ${r.name} (${show(get(() => r.props.instanceType))}): none of its ${nics.length} interfaces is efa or efa-only (interfaceType ${show([...new Set(nics.map((n) => n.type === UNKNOWN ? "(unknown)" : n.type))])}), so the nodes get no EFA device`, r.urn);
        } else if (!instanceEnis(r, args.resources).some((e) => EFA_TYPES.includes(String(get(() => e.props.interfaceType))))) {
            f.violation(`instance ${r.name} (${show(get(() => r.props.instanceType))}) attaches no aws.ec2.NetworkInterface with interfaceType efa or efa-only`, r.urn);
        }
    }
});

/**
 * Cards that take an EFA: all of them when MaximumEfaInterfaces == MaximumNetworkCards, else card 0 is ENA-only.
 * source: aws-efa.md §2.1 (aws-parallelcluster queues_stack.py `nci0SupportsEfa`; p6-b300 card 0 ENA-only).
 */
function efaCards(t: { networkCards: number; maxEfaInterfaces: number }): number[] {
    const first = t.maxEfaInterfaces === t.networkCards ? 0 : 1;
    return Array.from({ length: t.networkCards - first }, (_, i) => i + first);
}

export const awsEfaInterfaceEveryCard = efaResource({
    name: "aws-efa-interface-every-card",
    description: "An EFA launch template puts an EFA interface on every network card of its instance type that supports one, and no interface on a card the type does not have.",
    remediationSteps:
        "Add one `efa-only` interface (networkCardIndex n, deviceIndex 0 or 1) for each EFA card the catalog lists for the type; " +
        "a missing card is a missing rail and costs its share of the all-reduce bandwidth. Remove interfaces on card indexes " +
        "past the type's MaximumNetworkCards: EC2 refuses the launch.",
    severity: "high",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const t = catalogType(args);
    if (!t) args.notApplicable(`instance type ${show(get(() => args.props.instanceType))} is not in rdmakit's catalog, so its network cards are not known`);
    const list = nics ?? [];
    if (list.some((n) => n.card === UNKNOWN || n.type === UNKNOWN)) f.cannotVerify(`some interfaces of ${args.name} have a card index or type not known yet`);
    const cards = new Set(list.filter((n) => isEfa(n) && typeof n.card === "number").map((n) => n.card as number));
    const missing = efaCards(t!).filter((c) => !cards.has(c));
    if (missing.length > 0 && !list.some((n) => n.card === UNKNOWN)) {
        f.violation(`${what(args)} (${t!.name}, ${t!.networkCards} network cards, ${t!.maxEfaInterfaces} EFA): no EFA interface on card${missing.length > 1 ? "s" : ""} ${missing.join(", ")} (source: ${t!.source})`);
    }
    for (const n of list) {
        if (typeof n.card === "number" && n.card >= t!.networkCards) f.violation(`${what(args)}: ${nicLabel(n)} is on card ${n.card}, but ${t!.name} has cards 0–${t!.networkCards - 1}`);
    }
});

export const awsEfaInterfaceUniqueSlot = efaResource({
    name: "aws-efa-interface-unique-slot",
    description: "An EFA launch template declares at most one interface per (networkCardIndex, deviceIndex) pair.",
    remediationSteps: "Give each interface its own pair: on a card with two interfaces, deviceIndex 0 and 1. EC2 refuses a template with a repeated pair.",
    severity: "high",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_LaunchTemplateInstanceNetworkInterfaceSpecificationRequest.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const seen = new Map<string, Nic>();
    for (const n of nics ?? []) {
        if (n.card === UNKNOWN || n.device === UNKNOWN) {
            f.cannotVerify(`${nicLabel(n)} of ${args.name} has a card or device index not known yet`);
            continue;
        }
        const key = `${n.card}/${n.device}`;
        const first = seen.get(key);
        if (first) f.violation(`${what(args)}: ${nicLabel(n)} repeats networkCardIndex ${n.card} / deviceIndex ${n.device} of networkInterfaces[${first.index}]`);
        else seen.set(key, n);
    }
});

export const awsEfaInterfaceEfaOnlySecondary = efaResource({
    name: "aws-efa-interface-efa-only-secondary",
    description: "The primary interface (card 0, device 0) of an EFA launch template is `interface` or `efa`, never `efa-only`.",
    remediationSteps: "Make card 0 device 0 an `interface` (ENA) or `efa`, and put the efa-only device at card 0 device 1.",
    severity: "high",
    // source: aws-efa.md §2.1 (efa-only "can only be configured as a secondary interface")
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const list = nics ?? [];
    const primary = list.filter((n) => n.card === 0 && n.device === 0);
    if (primary.length === 0 && list.some((n) => n.card === UNKNOWN || n.device === UNKNOWN)) f.cannotVerify(`which interface of ${args.name} is the primary is not known yet`);
    for (const n of primary) {
        if (n.type === UNKNOWN) f.cannotVerify(`the type of the primary interface of ${args.name} is not known yet`);
        else if (n.type === "efa-only") f.violation(`${what(args)}: ${nicLabel(n)} is efa-only, which cannot be the primary interface (card 0, device 0)`);
    }
});

export const awsEfaInterfaceTypeValid = efaResource({
    name: "aws-efa-interface-type-valid",
    description: "Every interfaceType of an EFA launch template is interface, efa or efa-only; EFA interfaces stay within the type's MaximumEfaInterfaces and off a card that is ENA-only.",
    remediationSteps:
        "Use `interface`, `efa` or `efa-only`. On types with fewer EFA interfaces than network cards (p6-b300), card 0 is ENA-only: " +
        "give it `interface` and put EFA on cards 1..N.",
    severity: "high",
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const list = nics ?? [];
    for (const n of list) {
        const t = n.type;
        if (t === UNKNOWN) f.cannotVerify(`the interfaceType of ${nicLabel(n)} of ${args.name} is not known yet`);
        else if (!["interface", "efa", "efa-only"].includes(t)) f.violation(`${what(args)}: ${nicLabel(n)} has interfaceType ${show(t)}; allowed: "interface", "efa", "efa-only"`);
    }
    const t = catalogType(args);
    if (!t) return;
    const efa = list.filter(isEfa);
    if (efa.length > t.maxEfaInterfaces) f.violation(`${what(args)}: ${efa.length} EFA interfaces, but ${t.name} takes at most ${t.maxEfaInterfaces} (source: ${t.source})`);
    if (t.maxEfaInterfaces < t.networkCards) {
        for (const n of efa) if (n.card === 0) f.violation(`${what(args)}: ${nicLabel(n)} is ${String(n.type)} on card 0, which is ENA-only on ${t.name} (${t.maxEfaInterfaces} EFA on ${t.networkCards} cards)`);
    }
});

export const awsEfaInterfaceSecurityGroups = efaResource({
    name: "aws-efa-interface-security-groups",
    description: "Each interface of an EFA launch template names its security groups, and the template sets no vpcSecurityGroupIds/securityGroupNames.",
    remediationSteps: "Set securityGroups on every interface (the EFA security group) and drop vpcSecurityGroupIds and securityGroupNames from the template.",
    severity: "high",
    // source: aws-efa.md §2.3 ("security groups must be set per interface (Groups), because SecurityGroupIds cannot be used")
    url: "https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const list = nics ?? [];
    for (const n of list) {
        if (n.groups !== UNKNOWN && (n.groups === undefined || n.groups.length === 0)) f.violation(`${what(args)}: ${nicLabel(n)} has no securityGroups (${show(n.groups)}); a template with networkInterfaces takes its groups per interface`);
    }
    for (const field of ["vpcSecurityGroupIds", "securityGroupNames"]) {
        const v = items(() => args.props[field]);
        if (list.length > 0 && (v === UNKNOWN || (v !== undefined && v.length > 0))) f.violation(`${what(args)}: sets ${field} ${show(v)} together with networkInterfaces; EC2 takes the groups per interface only`);
    }
});

export const awsEfaInterfaceSingleSubnet = efaResource({
    name: "aws-efa-interface-single-subnet",
    description: "All interfaces of an EFA launch template are in one subnet.",
    remediationSteps: "Give every interface the same subnetId (the one node subnet): EFA OS-bypass traffic does not cross subnets.",
    severity: "high",
    // source: aws-efa.md §2.3 ("EFA OS-bypass traffic is limited to a single subnet"; PC and PCS templates use one subnet)
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa.html",
    enforcementLevel: "mandatory",
}, false, (args, f, nics) => {
    const list = nics ?? [];
    const subnets = [...new Set(list.map((n) => n.subnet).filter((s) => s !== undefined && s !== UNKNOWN))];
    if (subnets.length > 1) f.violation(`${what(args)}: its interfaces are in ${subnets.length} subnets (${subnets.map(show).join(", ")}); EFA traffic stays within one subnet`);
    else if (list.some((n) => n.subnet === UNKNOWN) && subnets.length === 1) f.cannotVerify(`some subnets of ${args.name} are not known yet`);
});

export const awsEfaNoPublicIp = efaResource({
    name: "aws-efa-no-public-ip",
    description: "An EFA launch template or instance with more than one network interface does not ask for a public IP.",
    remediationSteps:
        "Set associatePublicIpAddress \"false\" (or leave it out), put the nodes in a private subnet with a NAT gateway and reach them " +
        "through a bastion or SSM; attach an Elastic IP to the primary interface after launch if one is needed.",
    severity: "high",
    // source: aws-efa.md §2.2 ("You cannot specify more than one network interface in the request" with AssociatePublicIpAddress)
    url: "https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceNetworkInterfaceSpecification.html",
    enforcementLevel: "mandatory",
}, true, (args, f, nics) => {
    if (args.type === TYPES.instance) {
        const attached = items(() => args.props.networkInterfaces);
        const count = attached === UNKNOWN || attached === undefined ? 0 : attached.length;
        const v = get(() => args.props.associatePublicIpAddress);
        if (v === UNKNOWN && count > 1) f.cannotVerify(`associatePublicIpAddress of ${args.name} is not known yet`);
        if (count > 1 && (v === true || v === "true")) f.violation(`instance ${args.name}: associatePublicIpAddress ${show(v)} with ${count} network interfaces; EC2 refuses to launch it`);
        return;
    }
    const list = nics ?? [];
    if (list.length <= 1) return;
    for (const n of list) {
        if (n.publicIp === UNKNOWN) f.cannotVerify(`associatePublicIpAddress of ${nicLabel(n)} of ${args.name} is not known yet`);
        if (n.publicIp === true || n.publicIp === "true") f.violation(`launch template ${args.name}: ${nicLabel(n)} sets associatePublicIpAddress ${show(n.publicIp)} on a template with ${list.length} interfaces; EC2 refuses to launch it`);
    }
});

export const awsEfaImdsv2Required = efaResource({
    name: "aws-efa-imdsv2-required",
    description: "EFA launch templates and instances require IMDSv2 (metadataOptions.httpTokens \"required\").",
    remediationSteps: "Set metadataOptions: { httpEndpoint: \"enabled\", httpTokens: \"required\", httpPutResponseHopLimit: 1 } (1 keeps containers on the node from the instance role; 2 only where they need it).",
    severity: "medium",
    // source: the page below (httpTokens required = IMDSv2 only; the provider's default is "optional")
    url: "https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/configuring-IMDS-new-instances.html",
    enforcementLevel: "mandatory",
}, true, (args, f) => {
    const tokens = get(() => args.props.metadataOptions?.httpTokens);
    if (tokens === UNKNOWN) f.cannotVerify(`metadataOptions.httpTokens of ${args.name} is not known yet`);
    else if (tokens !== "required") f.violation(`${what(args)}: metadataOptions.httpTokens is ${show(tokens)}, not "required"; IMDSv1 stays open to SSRF on a node that holds SSH keys and role credentials`);
});

export const awsEfaGpudirectInstanceType = efaResource({
    name: "aws-efa-gpudirect-instance-type",
    description: "An EFA GPU launch template or instance uses a type with GPUDirect RDMA over EFA, so GPU memory goes to the wire without a copy through the host.",
    remediationSteps:
        "Use a P-series type from p4d on (p4d, p5, p5en, p6-b200, p6-b300). The g-series take EFA but move GPU data through host memory, " +
        "so multi-node bandwidth stays far below the P-series; set this policy to advisory or disabled if that is intended.",
    severity: "medium",
    // source: aws-efa.md §1 (GPUDirect RDMA over EFA only on P-series from p4d; https://github.com/aws/aws-ofi-nccl/issues/547)
    url: "https://github.com/aws/aws-ofi-nccl/issues/547",
    enforcementLevel: "advisory",
}, true, (args, f) => {
    const name = get(() => args.props.instanceType as string | undefined);
    if (name === UNKNOWN) {
        f.cannotVerify(`the instance type of ${args.name} is not known yet`);
        return;
    }
    const t = typeof name === "string" ? awsInstanceType(name) : undefined;
    if (!t) args.notApplicable(`instance type ${show(name)} is not a GPU type in rdmakit's catalog`);
    if (!t!.gpuDirectRdma) f.violation(`${what(args)}: ${t!.name} (${t!.gpu.count} × ${t!.gpu.model}) has no GPUDirect RDMA over EFA (source: ${t!.source})`);
});

/** Thrown by the stand-in `notApplicable` of a check run on another resource's behalf. */
class Skip extends Error {}

export const awsEfaTemplateLaunchedAsRdma = stackPolicy<ScopeConfig>({
    name: "aws-efa-template-launched-as-rdma",
    description: "A launch template with no RDMA instance type or EFA interface of its own, which an Auto Scaling group launches as an RDMA type (mixedInstancesPolicy overrides), passes every aws-efa-* launch template check for that type; one whose group picks types by attributes cannot be verified.",
    remediationSteps:
        "Fix what the named aws-efa-* check reports on the template (IMDSv2 required, no public IP, an EFA interface on every card), " +
        "or give the template its instance type and interfaces so that the per-template checks see it directly.",
    severity: "high",
    url: "https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_LaunchTemplateOverrides.html",
    enforcementLevel: "mandatory",
    configSchema: { properties: SCOPE_SCHEMA },
}, (args, f, config) => {
    const templates = args.resources.filter((r) => r.type === TYPES.launchTemplate && awsScope(r, config.instanceFamilies).in !== true);
    let checked = 0;
    for (const lt of templates) {
        const scope = awsScope(lt, config.instanceFamilies, args.resources);
        if (scope.in === "unknown") f.cannotVerify(scope.why);
        if (scope.in !== true) continue;
        const nics = templateNics(lt.props);
        if (nics === UNKNOWN) {
            f.cannotVerify(`the network interfaces of launch template ${lt.name} are not known yet`);
            continue;
        }
        for (const { type, group } of launchedAs(lt, args.resources).types.filter((x) => config.instanceFamilies.includes(x.type.split(".")[0]))) {
            checked++;
            // the template as the group launches it: the override's type in place of the template's (a proxy, not a
            // copy: at preview a property the engine does not know throws when read, and the checks read through get())
            const props = new Proxy(lt.props, { get: (t, k) => (k === "instanceType" ? type : Reflect.get(t, k)) });
            const as = { type: lt.type, name: lt.name, urn: lt.urn, props, notApplicable: (why: string) => { throw new Skip(why); } } as unknown as ResourceValidationArgs;
            for (const c of TEMPLATE_CHECKS) {
                const inner = new Findings((m) => f.violation(`${c.name}: ${m} (as auto scaling group ${group} launches it: ${type})`, lt.urn));
                try {
                    c.check(as, inner, nics);
                    inner.done();
                } catch (e) {
                    if (e instanceof CannotVerify) f.cannotVerify(`${c.name}: ${e.message}`);
                    else if (!(e instanceof Skip)) throw e;
                }
            }
        }
    }
    // it decides (passes) in every stack with an EFA node: that none of its templates is launched as another type is its answer
    if (checked === 0 && efaNodes(args.resources, config.instanceFamilies).nodes.length === 0 && templates.every((lt) => awsScope(lt, config.instanceFamilies, args.resources).in === false)) {
        args.notApplicable("no launch template or instance on an EFA fabric");
    }
});
