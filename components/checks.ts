import { checkAwsClusterInput } from "./aws/checks";
import { layoutIssues } from "./azure/settings";
import { SpecIssue } from "./errors";
import { AWS_REGION } from "./grammars";
import { FabricPlan } from "./plan";
import { ClusterSpec } from "./spec";

/**
 * What the fabric components refuse on their own (network limits, names a cloud rejects), asked up front so that
 * `pulumi up` and `rdmakit plan` report it with the spec's problems, before any resource, the cluster's own
 * component included, is registered. Pure.
 */
export function fabricIssues(spec: ClusterSpec, plan: FabricPlan): SpecIssue[] {
    switch (spec.fabric) {
        case "aws-efa":
            return checkAwsClusterInput(spec, plan);
        case "azure-ib":
            return layoutIssues(spec, plan);
        case "roce":
            return []; // checkRoceSpec runs inside parseClusterSpec
    }
}

/**
 * The AWS provider's own region (stack config `aws:region`) against `cluster.aws.region`: the kit's resources carry the
 * spec's region, but the provider's default region is what the CLI account check and any resource of yours without a
 * region use, so the two must be one. Read from the raw value: it is reported beside the spec's own problems.
 */
export function providerRegionIssues(cluster: unknown, awsRegion: string | undefined): SpecIssue[] {
    const c = cluster as { fabric?: unknown; aws?: { region?: unknown } } | null | undefined;
    const region = c?.aws?.region;
    // a cluster.aws.region the spec refuses is told there, not offered here as the region to set
    if (awsRegion === undefined || c?.fabric !== "aws-efa" || typeof region !== "string" || !AWS_REGION.test(region) || region === awsRegion) return [];
    return [{
        path: "aws:region", value: awsRegion,
        message: `differs from cluster.aws.region (${region}); the provider's calls and the kit's resources would be in two regions`,
        allowed: `${region} (pulumi config set aws:region ${region}), or leave aws:region out`,
    }];
}
