/**
 * Every rdmakit policy, in report order. Both the pack (index.ts) and the offline evaluator (evaluate.ts) read this
 * list, so `rdmakit plan` and `pulumi preview --policy-pack policies` run the same rules.
 */
import type { Policies } from "@pulumi/policy";
import {
    awsEfaImdsv2Required, awsEfaLaunchTemplateInterfaces, awsEfaLaunchTemplateNoPublicIp, awsEfaPlacementCapacityBlock,
    awsEfaPlacementGroup, awsEfaSgSelfIngressEgress,
} from "./rules/aws";
import { azureIbNoPasswordLogin, azureIbVmssSinglePartition, azureIbVnetRdmaRange } from "./rules/azure";
import { roceQosConsistency } from "./rules/roce";

export const ALL_POLICIES: Policies = [
    awsEfaSgSelfIngressEgress,
    awsEfaLaunchTemplateNoPublicIp,
    awsEfaLaunchTemplateInterfaces,
    awsEfaImdsv2Required,
    awsEfaPlacementCapacityBlock,
    awsEfaPlacementGroup,
    azureIbVmssSinglePartition,
    azureIbVnetRdmaRange,
    azureIbNoPasswordLogin,
    roceQosConsistency,
];
