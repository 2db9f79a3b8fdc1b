import { checkAwsClusterInput } from "./aws/checks";
import { layoutIssues } from "./azure/settings";
import { SpecIssue } from "./errors";
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
