import * as pulumi from "@pulumi/pulumi";
import * as authorization from "@pulumi/azure-native/authorization";
import type { SpecIssue } from "../errors";
import type { ClusterSpec } from "../spec-types";

/*
 * What AzureInfinibandCluster asks Azure before it creates anything: whether the VM size is offered in the location
 * and not restricted for the subscription, and whether the size family's vCPU quota and the regional vCPU quota
 * leave room for the nodes. @pulumi/azure-native 3.x has no invoke for either question (compute/ has no
 * resource-SKU or usage function, quota/ only management-group GroupQuota; checked in node_modules 3.28.0), so the
 * kit asks ARM itself with the provider's own credentials: `authorization.getClientConfig` (subscription) and
 * `authorization.getClientToken` (a bearer token for ARM from the login the provider uses: CLI, service principal,
 * OIDC or managed identity), then two GETs. The token is held in memory for those calls only and never printed.
 * Grading is the pure `gradeAzureCloud`.
 */

const ARM = "https://management.azure.com";
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

export interface AzureCloudAnswers {
    skus?: ResourceSku[];
    usages?: ComputeUsage[];
}

/** The checks, in words, for `rdmakit plan` ("runs at pulumi up"). Pure. */
export function azureCloudCheckList(spec: ClusterSpec): string[] {
    const a = spec.azure!;
    return [
        `${a.vmSize} offered in ${a.location} and not restricted for the subscription (Microsoft.Compute/skus)`,
        `the size family's vCPU quota and Total Regional vCPUs in ${a.location} cover ${spec.nodes} nodes (Microsoft.Compute/locations/usages)`,
    ];
}

/** Grades ARM's answers; every issue names the field, what Azure said and what to do. Missing answers pass. Pure. */
export function gradeAzureCloud(spec: ClusterSpec, answers: AzureCloudAnswers): SpecIssue[] {
    const a = spec.azure!;
    const issues: SpecIssue[] = [];
    if (!answers.skus) return issues;
    const loc = a.location.toLowerCase();
    const sku = answers.skus.find((s) => s.resourceType === "virtualMachines" && s.name.toLowerCase() === a.vmSize.toLowerCase()
        && (s.locations ?? []).some((l) => l.toLowerCase() === loc));
    if (!sku) {
        issues.push({
            path: "cluster.azure.vmSize", value: a.vmSize, message: `is not offered in ${a.location} (Microsoft.Compute/skus lists no such virtualMachines size there)`,
            allowed: "a location that offers the size (az vm list-skus --size <size> --all lists them), or another IB size of the catalog",
        });
        return issues;
    }
    // The scale set is regional (no zones), so only a Location restriction stops it; a Zone restriction would not.
    const blocked = (sku.restrictions ?? []).find((r) => r.type === "Location"
        && [...r.values, ...(r.restrictionInfo?.locations ?? [])].some((v) => v.toLowerCase() === loc));
    if (blocked) {
        issues.push({
            path: "cluster.azure.vmSize", value: a.vmSize,
            message: `is restricted in ${a.location} for this subscription (${blocked.reasonCode ?? "no reason code"}, Microsoft.Compute/skus)`,
            allowed: blocked.reasonCode === "NotAvailableForSubscription"
                ? "ask Azure support to enable the size for the subscription in this region, or another location"
                : "another location, or the subscription offer that carries the size",
        });
    }
    const vcpus = Number(sku.capabilities?.find((c) => c.name === "vCPUs")?.value);
    if (!answers.usages || !Number.isFinite(vcpus) || vcpus <= 0) return issues;
    const need = spec.nodes * vcpus;
    for (const key of [sku.family, "cores"]) {
        const u = key ? answers.usages.find((x) => x.name.value.toLowerCase() === key.toLowerCase()) : undefined;
        if (!u) continue;
        const free = u.limit - u.currentValue;
        if (need > free) {
            const label = u.name.localizedValue ?? u.name.value;
            issues.push({
                path: "cluster.nodes", value: spec.nodes,
                message: `need ${need} vCPUs of ${label} in ${a.location}; the subscription uses ${u.currentValue} of its ${u.limit}`,
                allowed: `at most ${Math.max(0, Math.floor(free / vcpus))} nodes, or a quota increase for ${label} (Azure portal: Quotas, Compute)`,
            });
        }
    }
    return issues;
}

/** GET an ARM list, following nextLink; throws with the status and ARM's error code and message (never the token). */
export async function armList<T>(url: string, token: string, fetchImpl: typeof fetch = fetch): Promise<T[]> {
    const out: T[] = [];
    for (let next: string | undefined = url; next;) {
        const res = await fetchImpl(next, { headers: { Authorization: `Bearer ${token}`, Accept: "application/json" } });
        const body = await res.json().catch(() => ({})) as { value?: T[]; nextLink?: string; error?: { code?: string; message?: string } };
        if (!res.ok) {
            throw new Error(`ARM ${new URL(next).pathname} answered ${res.status}${body.error ? `: ${body.error.code ?? ""} ${body.error.message ?? ""}`.trimEnd() : ""}`);
        }
        out.push(...(body.value ?? []));
        next = body.nextLink;
    }
    return out;
}

function unknown(v: unknown): boolean {
    return v === undefined || v === pulumi.runtime.unknownValue || pulumi.isUnknown(v);
}

/**
 * Asks ARM with the provider's credentials and grades the answers. Without a token (the offline plan answers the
 * invokes with unknowns) nothing is asked and nothing is refused. A failed read is a refusal that says so: the
 * cluster would otherwise be created on a guess.
 */
export function askAzureCloud(spec: ClusterSpec, parent: pulumi.Resource, fetchImpl?: typeof fetch): pulumi.Output<SpecIssue[]> {
    const a = spec.azure!;
    const opts = { parent };
    const answer = Promise.all([authorization.getClientConfig(opts), authorization.getClientToken({}, opts)]).then(async ([config, tok]) => {
        if (unknown(tok?.token) || unknown(config?.subscriptionId)) return [];
        const base = `${ARM}/subscriptions/${encodeURIComponent(config.subscriptionId)}/providers/Microsoft.Compute`;
        try {
            const [skus, usages] = await Promise.all([
                armList<ResourceSku>(`${base}/skus?api-version=${SKUS_API_VERSION}&$filter=${encodeURIComponent(`location eq '${a.location}'`)}`, tok.token, fetchImpl),
                armList<ComputeUsage>(`${base}/locations/${encodeURIComponent(a.location)}/usages?api-version=${USAGES_API_VERSION}`, tok.token, fetchImpl),
            ]);
            return gradeAzureCloud(spec, { skus, usages });
        } catch (e) {
            return [{
                path: "cluster.azure.location", value: a.location,
                message: `could not be checked for ${a.vmSize} (size availability and vCPU quota): ${String((e as Error)?.message ?? e)}`,
                allowed: "a login whose role may read Microsoft.Compute/skus and usages (Reader on the subscription)",
            }];
        }
    });
    return pulumi.output(answer);
}
