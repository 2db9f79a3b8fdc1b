import * as pulumi from "@pulumi/pulumi";
import { authorization } from "./sdk";
import type { SpecIssue } from "../errors";
import type { ClusterSpec } from "../spec-types";
import { azureVmSize } from "../catalog/azure";
import { AzureImage, azureImage } from "../plan/azure";
import { parseCidr } from "../net";
import { askExistingSubnet, existingSubnetCheckList, gradeExistingSubnet, subnetPrefixes } from "./network";
import { DEFAULT_HEAD_VM_SIZE } from "../slurm/spec";

/*
 * What AzureInfinibandCluster asks Azure before it creates anything: whether the VM size, the jump host's size and the
 * Slurm head VM's size are offered in the location and not restricted for the subscription, whether the size families'
 * vCPU quotas and the regional vCPU quota leave room for the nodes, the jump host and the head VM, and whether the nodes' image version exists there. @pulumi/azure-native 3.x has no invoke for either question (compute/ has no
 * resource-SKU or usage function, quota/ only management-group GroupQuota; checked in node_modules 3.28.0), so the
 * kit asks ARM itself with the provider's own credentials: `authorization.getClientConfig` (subscription) and
 * `authorization.getClientToken` (a bearer token for ARM from the login the provider uses: CLI, service principal,
 * OIDC or managed identity), then three GETs (four when the image version is missing and its versions are listed; two
 * more for an existing subnet and its VNet, ./network.ts). The token is held in memory for those calls only and never printed.
 * Grading is the pure `gradeAzureCloud`.
 */

/**
 * ARM's host per cloud, as the azure-native provider's `environment` setting names them (public, usgovernment, china;
 * @pulumi/azure-native config/vars.d.ts). source: Azure/azure-sdk-for-go:sdk/azcore/cloud/cloud.go (armMetadata:
 * resourceManager of AzureCloud, AzureUSGovernment, AzureChinaCloud)
 */
export const ARM_HOSTS: Record<string, string> = {
    public: "https://management.azure.com",
    usgovernment: "https://management.usgovcloudapi.net",
    china: "https://management.chinacloudapi.cn",
};

/**
 * The ARM host for the provider's cloud: `azure-native:environment` from the stack config, else ARM_ENVIRONMENT (the
 * variable the provider reads), else public. Throws for a custom metadataHost (Azure Stack) or a name the provider
 * does not take, rather than asking the public cloud with a token for another. An explicit provider resource passed in
 * opts is not seen here: its environment must match the stack's. Pure.
 */
export function armHost(settings: { environment?: string; metadataHost?: string; envVar?: string }): string {
    if (settings.metadataHost) {
        throw new Error(`rdmakit: azure-native:metadataHost ${JSON.stringify(settings.metadataHost)} is set; the kit asks ARM only in the public, usgovernment and china clouds (azure-native:environment)`);
    }
    const env = (settings.environment ?? settings.envVar ?? "public").toLowerCase();
    const host = ARM_HOSTS[env];
    if (!host) throw new Error(`rdmakit: azure-native:environment ${JSON.stringify(env)} is not one the kit knows; allowed: ${Object.keys(ARM_HOSTS).join(", ")}`);
    return host;
}

/** armHost from the stack's azure-native settings and the process environment. */
export function providerArmHost(): string {
    const c = new pulumi.Config("azure-native");
    return armHost({ environment: c.get("environment"), metadataHost: c.get("metadataHost") ?? process.env.ARM_METADATA_HOSTNAME, envVar: process.env.ARM_ENVIRONMENT });
}
/**
 * Resource SKUs - List, filtered to one location (resourceType, name, family, locations, restrictions[type,
 * values, reasonCode], capabilities[vCPUs]). source: https://learn.microsoft.com/rest/api/compute/resource-skus/list
 */
export const SKUS_API_VERSION = "2021-07-01";
/** Usage - List: per-family and total regional vCPUs (name.value, currentValue, limit). source: https://learn.microsoft.com/rest/api/compute/usage/list */
export const USAGES_API_VERSION = "2024-07-01";

/** One entry of Resource SKUs - List (the fields read here). */
export interface ResourceSku {
    resourceType: string;
    name: string;
    family?: string;
    locations?: string[];
    capabilities?: Array<{ name: string; value: string }>;
    restrictions?: Array<{ type: "Location" | "Zone"; values: string[]; reasonCode?: string; restrictionInfo?: { locations?: string[]; zones?: string[] } }>;
}

/** One entry of Usage - List. */
export interface ComputeUsage {
    name: { value: string; localizedValue?: string };
    currentValue: number;
    limit: number;
    unit?: string;
}

/**
 * Virtual Machine Images - Get of one version (name, location, properties.hyperVGeneration, architecture), or, when
 * ARM answered 404, the versions Virtual Machine Images - List gives for the SKU (a bare JSON array of {name,
 * location, id}). source: https://learn.microsoft.com/rest/api/compute/virtual-machine-images/get and /list
 */
export type ImageAnswer =
    | { found: true; version: string; hyperVGeneration?: string }
    | { found: false; versions: string[] };

export interface AzureCloudAnswers {
    skus?: ResourceSku[];
    usages?: ComputeUsage[];
    image?: ImageAnswer;
}

/** Virtual Machine Images - Get/List. source: https://learn.microsoft.com/rest/api/compute/virtual-machine-images/get */
export const IMAGES_API_VERSION = "2024-07-01";

/** The Slurm head VM's size when the stack makes one (scheduler slurm on azure-ib: components/azure/slurm-head.ts). Pure. */
export function headVmSize(spec: ClusterSpec): string | undefined {
    return spec.scheduler.type === "slurm" ? spec.scheduler.controller?.vmSize ?? DEFAULT_HEAD_VM_SIZE : undefined;
}

/** The VMs besides the nodes that the stack makes, each asked about and counted: the jump host, the Slurm head VM. Pure. */
function otherVms(spec: ClusterSpec): Array<{ path: string; size: string; what: string }> {
    const a = spec.azure!;
    const head = headVmSize(spec);
    return [
        // an existing subnet: no jump host is made, so none is asked about
        ...(a.network === undefined ? [{ path: "cluster.azure.jumpHostSize", size: a.jumpHostSize, what: "jump host" }] : []),
        ...(head ? [{ path: "cluster.scheduler.controller.vmSize", size: head, what: "Slurm head VM" }] : []),
    ];
}

/** The checks, in words, for `rdmakit plan` ("runs at pulumi up"). Pure. */
export function azureCloudCheckList(spec: ClusterSpec): string[] {
    const a = spec.azure!;
    const image = nodeImage(spec);
    const others = otherVms(spec);
    return [
        `${[a.vmSize, ...others.map((o) => `the ${o.what}'s ${o.size}`)].join(others.length > 1 ? ", " : " and ").replace(/, ([^,]*)$/, " and $1")} offered in ${a.location} and not restricted for the subscription (Microsoft.Compute/skus)`,
        `the size families' vCPU quotas and Total Regional vCPUs in ${a.location} cover ${spec.nodes} nodes${others.map((o) => ` and the ${o.what}`).join("")} (vCPUs from Microsoft.Compute/skus; Microsoft.Compute/locations/usages)`,
        `image ${image.publisher}:${image.offer}:${image.sku}:${image.version} exists in ${a.location}${image.version === "latest" ? " (at least one version)" : "; if not, the newest versions are listed"} (Microsoft.Compute/locations/publishers/artifacttypes/vmimage)`,
        ...(a.network === undefined ? [] : existingSubnetCheckList(spec)),
    ];
}

/** Image versions (`22.04.2026072901`) newest first: by each dot-separated part as a number. Pure. */
export function newestFirst(versions: readonly string[]): string[] {
    const parts = (v: string) => v.split(".").map((p) => Number(p));
    return [...versions].sort((x, y) => {
        const a = parts(x), b = parts(y);
        for (let i = 0; i < Math.max(a.length, b.length); i++) {
            const d = (b[i] ?? -1) - (a[i] ?? -1);
            if (d !== 0 && Number.isFinite(d)) return d;
        }
        return y.localeCompare(x);
    });
}

/** Usage names compared as Azure spells them in different places: case and whitespace aside. */
function sameQuotaName(a: string, b: string): boolean {
    const n = (s: string) => s.replace(/\s+/g, "").toLowerCase();
    return n(a) === n(b);
}

/** The image the nodes boot: the spec's, else the catalog's pinned ubuntu-hpc for the size. Pure. */
export function nodeImage(spec: ClusterSpec): AzureImage {
    const a = spec.azure!;
    // the size is one of the catalog's: parseClusterSpec refused any other
    return azureImage(a, azureVmSize(a.vmSize)!);
}

function skuIn(skus: ResourceSku[], name: string, loc: string): ResourceSku | undefined {
    return skus.find((s) => s.resourceType === "virtualMachines" && s.name.toLowerCase() === name.toLowerCase()
        && (s.locations ?? []).some((l) => l.toLowerCase() === loc));
}

/** Where a size fails: not offered, or a Location restriction (a regional VM or scale set ignores Zone ones). */
function sizeIssues(sku: ResourceSku | undefined, path: string, size: string, location: string): SpecIssue[] {
    const loc = location.toLowerCase();
    if (!sku) {
        return [{
            path, value: size, message: `is not offered in ${location} (Microsoft.Compute/skus lists no such virtualMachines size there)`,
            allowed: "a location that offers the size (az vm list-skus --size <size> --all lists them), or another size",
        }];
    }
    const blocked = (sku.restrictions ?? []).find((r) => r.type === "Location"
        && [...r.values, ...(r.restrictionInfo?.locations ?? [])].some((v) => v.toLowerCase() === loc));
    if (!blocked) return [];
    return [{
        path, value: size,
        message: `is restricted in ${location} for this subscription (${blocked.reasonCode ?? "no reason code"}, Microsoft.Compute/skus)`,
        allowed: blocked.reasonCode === "NotAvailableForSubscription"
            ? "ask Azure support to enable the size for the subscription in this region, or another location"
            : "another location, or the subscription offer that carries the size",
    }];
}

function vcpusOf(sku: ResourceSku | undefined): number | undefined {
    const n = Number(sku?.capabilities?.find((c) => c.name === "vCPUs")?.value);
    return Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * Grades ARM's answers; every issue names the field, what Azure said and what to do. Missing answers (offline) pass.
 * A quota row ARM does not list (no usage whose name matches the size family, or no `cores`) is not a pass in
 * silence: `warn` says "family quota not found", and the cluster goes on, as Azure itself will refuse a size whose
 * quota is short. Pure apart from `warn`.
 */
export function gradeAzureCloud(spec: ClusterSpec, answers: AzureCloudAnswers, warn: (m: string) => void = () => {}): SpecIssue[] {
    const a = spec.azure!;
    const issues: SpecIssue[] = [...imageIssues(spec, answers.image)];
    if (!answers.skus) return issues;
    const loc = a.location.toLowerCase();
    const sku = skuIn(answers.skus, a.vmSize, loc);
    const others = otherVms(spec).map((o) => ({ ...o, sku: skuIn(answers.skus!, o.size, loc) }));
    issues.push(...sizeIssues(sku, "cluster.azure.vmSize", a.vmSize, a.location), ...others.flatMap((o) => sizeIssues(o.sku, o.path, o.size, a.location)));
    if (!sku || !answers.usages) return issues;
    const nodeVcpus = vcpusOf(sku);
    if (nodeVcpus === undefined) return issues;
    const counted = others.map((o) => ({ ...o, vcpus: vcpusOf(o.sku) ?? 0 })).filter((o) => o.vcpus > 0);
    // what this cluster takes of each quota row: the nodes' family, each other VM's family, the regional total
    const need = new Map<string, number>();
    const add = (key: string | undefined, n: number) => { if (key && n > 0) need.set(key, (need.get(key) ?? 0) + n); };
    add(sku.family, spec.nodes * nodeVcpus);
    for (const o of counted) add(o.sku?.family, o.vcpus);
    add("cores", spec.nodes * nodeVcpus + counted.reduce((n, o) => n + o.vcpus, 0));
    for (const [key, want] of need) {
        const u = answers.usages.find((x) => sameQuotaName(x.name.value, key));
        if (!u) {
            warn(`rdmakit: family quota not found: Microsoft.Compute/locations/${a.location}/usages lists no ${key} row, so the vCPU quota for it is not checked (Azure refuses the VMs if it is short)`);
            continue;
        }
        const free = u.limit - u.currentValue;
        if (want <= free) continue;
        const label = u.name.localizedValue ?? u.name.value;
        // the other VMs in this row, and whether only they are (a family the nodes do not use)
        const parts = counted.filter((o) => key === "cores" || sameQuotaName(key, o.sku?.family ?? ""));
        const partVcpus = parts.reduce((n, o) => n + o.vcpus, 0);
        const othersOnly = key !== "cores" && !sameQuotaName(key, sku.family ?? "");
        const said = `need ${want} vCPUs of ${label} in ${a.location}` +
            (parts.length > 0 ? ` (${parts.map((o, i) => `${o.vcpus}${i === 0 ? " of them" : ""} for the ${o.size} ${o.what}`).join(", ")})` : "") +
            `; the subscription uses ${u.currentValue} of its ${u.limit}`;
        issues.push(othersOnly
            ? {
                path: parts[0].path, value: parts[0].size, message: said,
                allowed: `a ${parts[0].what} size of another family, or a quota increase for ${label} (Azure portal: Quotas, Compute)`,
            }
            : {
                path: "cluster.nodes", value: spec.nodes, message: said,
                allowed: `at most ${Math.max(0, Math.floor((free - partVcpus) / nodeVcpus))} nodes, or a quota increase for ${label} (Azure portal: Quotas, Compute)`,
            });
    }
    return issues;
}

/** The image version against ARM's answer: missing (with the newest versions), or Gen1 for a Gen2-only size. Pure. */
export function imageIssues(spec: ClusterSpec, answer: ImageAnswer | undefined): SpecIssue[] {
    if (!answer) return [];
    const a = spec.azure!;
    const img = nodeImage(spec);
    const urn = `${img.publisher}:${img.offer}:${img.sku}`;
    const given = a.image !== undefined;
    if (!answer.found) {
        const newest = newestFirst(answer.versions).slice(0, 5);
        if (newest.length === 0) {
            return [{
                path: given ? "cluster.azure.image.sku" : "cluster.azure.vmSize", value: given ? img.sku : a.vmSize,
                message: `${urn} has no image versions in ${a.location} (Microsoft.Compute vmimage lists none)`,
                allowed: `an image URN that exists there (az vm image list --publisher ${img.publisher} --offer ${img.offer} --all --location ${a.location})`,
            }];
        }
        return [{
            path: "cluster.azure.image.version", value: img.version,
            message: `is not a version of ${urn} in ${a.location} (ARM answered 404 NotFound)${given ? "" : "; it is the kit's pinned default"}`,
            allowed: `one of the newest: ${newest.join(", ")} (set cluster.azure.image with that version; the kit's reuse of the image's stack reads the pinned release's manifest, so another release is probed on the node)`,
        }];
    }
    const size = azureVmSize(a.vmSize);
    if (size?.gen2Only && answer.hyperVGeneration && answer.hyperVGeneration.toUpperCase() !== "V2") {
        return [{
            path: "cluster.azure.image", value: `${urn}:${answer.version}`,
            message: `is a ${answer.hyperVGeneration} image according to ARM; ${a.vmSize} boots Gen2 (V2) images only`,
            allowed: "a Gen2 SKU of the image (ubuntu-hpc 2204 and 2404 are Gen2)",
        }];
    }
    return [];
}

/** ARM's error text for a failed call: status, code and message (never the token). */
function armError(url: string, status: number, body: { error?: { code?: string; message?: string } }): Error {
    return new Error(`ARM ${new URL(url).pathname} answered ${status}${body.error ? `: ${body.error.code ?? ""} ${body.error.message ?? ""}`.trimEnd() : ""}`);
}

/** One ARM GET: the parsed body, or `undefined` on 404; throws with ARM's words on any other failure. */
export async function armGet<T>(url: string, token: string, fetchImpl: typeof fetch = fetch): Promise<T | undefined> {
    const res = await fetchImpl(url, { headers: { Authorization: `Bearer ${token}`, Accept: "application/json" } });
    const body = await res.json().catch(() => ({})) as T & { error?: { code?: string; message?: string } };
    if (res.status === 404) return undefined;
    if (!res.ok) throw armError(url, res.status, body);
    return body;
}

/** GET an ARM list, following nextLink; throws with the status and ARM's error code and message (never the token). */
export async function armList<T>(url: string, token: string, fetchImpl: typeof fetch = fetch): Promise<T[]> {
    const out: T[] = [];
    for (let next: string | undefined = url; next;) {
        const res = await fetchImpl(next, { headers: { Authorization: `Bearer ${token}`, Accept: "application/json" } });
        const body = await res.json().catch(() => ({})) as { value?: T[]; nextLink?: string; error?: { code?: string; message?: string } };
        if (!res.ok) throw armError(next, res.status, body);
        out.push(...(body.value ?? []));
        next = body.nextLink;
    }
    return out;
}

/**
 * Asks ARM for the image version: Get of the version, and on 404 (or for `latest`) the List of the SKU's versions,
 * which ARM answers as a bare array (404 too when the publisher, offer or SKU does not exist there).
 */
export async function askImage(host: string, subscription: string, location: string, img: AzureImage, token: string, fetchImpl?: typeof fetch): Promise<ImageAnswer> {
    const e = encodeURIComponent;
    const sku = `${host}/subscriptions/${e(subscription)}/providers/Microsoft.Compute/locations/${e(location)}/publishers/${e(img.publisher)}` +
        `/artifacttypes/vmimage/offers/${e(img.offer)}/skus/${e(img.sku)}/versions`;
    if (img.version !== "latest") {
        const got = await armGet<{ name?: string; properties?: { hyperVGeneration?: string } }>(`${sku}/${e(img.version)}?api-version=${IMAGES_API_VERSION}`, token, fetchImpl);
        if (got) return { found: true, version: got.name ?? img.version, hyperVGeneration: got.properties?.hyperVGeneration };
    }
    const list = await armGet<Array<{ name?: string }>>(`${sku}?api-version=${IMAGES_API_VERSION}`, token, fetchImpl);
    const versions = Array.isArray(list) ? list.map((v) => v.name).filter((n): n is string => typeof n === "string") : [];
    if (img.version === "latest" && versions.length > 0) return { found: true, version: newestFirst(versions)[0] };
    return { found: false, versions };
}

function unknown(v: unknown): boolean {
    return v === undefined || v === pulumi.runtime.unknownValue || pulumi.isUnknown(v);
}

/** What the pre-create checks found, and the existing subnet's ranges (empty when the kit makes the subnet or offline). */
export interface AzureCloudVerdict {
    issues: SpecIssue[];
    subnetPrefixes: string[];
}

/**
 * Asks ARM with the provider's credentials and grades the answers; with an existing subnet (`existing`: its checked
 * id, and the start of this cluster's scale set name) also the subnet and its VNet (./network.ts). Without a token
 * (the offline plan answers the invokes with unknowns) nothing is asked and nothing is refused. A failed read is a
 * refusal that says so: the cluster would otherwise be created on a guess. Needs a real ARM to mean anything: the
 * tests answer with recorded shapes (test/fixtures/azure/arm-answers.ts).
 */
export function askAzureCloud(
    spec: ClusterSpec, parent: pulumi.Resource, fetchImpl?: typeof fetch,
    existing?: { subnetId: pulumi.Output<string>; scaleSetPrefix: string },
): pulumi.Output<AzureCloudVerdict> {
    const a = spec.azure!;
    const opts = { parent };
    const warn = (m: string) => { void pulumi.log.warn(m, parent); };
    return (existing?.subnetId ?? pulumi.output("")).apply(async (subnetId): Promise<AzureCloudVerdict> => {
        const [config, tok] = await Promise.all([authorization.getClientConfig(opts), authorization.getClientToken({}, opts)]);
        if (unknown(tok?.token) || unknown(config?.subscriptionId)) return { issues: [], subnetPrefixes: [] };
        try {
            const host = providerArmHost();
            const base = `${host}/subscriptions/${encodeURIComponent(config.subscriptionId)}/providers/Microsoft.Compute`;
            const [skus, usages, image, net] = await Promise.all([
                armList<ResourceSku>(`${base}/skus?api-version=${SKUS_API_VERSION}&$filter=${encodeURIComponent(`location eq '${a.location}'`)}`, tok.token, fetchImpl),
                armList<ComputeUsage>(`${base}/locations/${encodeURIComponent(a.location)}/usages?api-version=${USAGES_API_VERSION}`, tok.token, fetchImpl),
                askImage(host, config.subscriptionId, a.location, nodeImage(spec), tok.token, fetchImpl),
                existing ? askExistingSubnet(host, subnetId, config.subscriptionId, (url) => armGet(url, tok.token, fetchImpl)) : undefined,
            ]);
            const issues = gradeAzureCloud(spec, { skus, usages, image }, warn);
            if (net && existing) issues.push(...gradeExistingSubnet(spec, subnetId, net, existing.scaleSetPrefix, warn));
            // the IPv4 ranges the nodes' addresses come from (a dual-stack subnet also lists IPv6 ones)
            return { issues, subnetPrefixes: subnetPrefixes(net?.subnet).filter((p) => parseCidr(p) !== undefined) };
        } catch (e) {
            return {
                issues: [{
                    path: "cluster.azure.location", value: a.location,
                    message: `could not be checked for ${a.vmSize} (size availability, vCPU quota, image version${existing ? ", the existing subnet" : ""}): ${String((e as Error)?.message ?? e)}`,
                    allowed: `a login whose role may read Microsoft.Compute/skus, usages and vmimage${existing ? ", and the subnet and its VNet (Reader on them)" : ""} (Reader on the subscription)`,
                }],
                subnetPrefixes: [],
            };
        }
    });
}
