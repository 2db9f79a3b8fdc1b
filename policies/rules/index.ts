/**
 * Every rdmakit policy, for the pack (policies/index.ts), the offline evaluator (policies/evaluate.ts, `rdmakit
 * plan`) and for teams that compose their own pack, awsguard-style:
 *
 *   import { PolicyPack } from "@pulumi/policy";
 *   import { rdmakitPolicies } from "rdmakit/policies";
 *   new PolicyPack("my-org", { policies: [
 *       ...rdmakitPolicies({ all: "advisory", "aws-efa-sg-self-ingress": "mandatory",
 *                            "azure-ib-vmss-partition-capacity": { partitionLimit: 300 } }),
 *       ...myOwnPolicies,
 *   ] });
 *
 * Each policy is also a named export, to pick single ones.
 */
import type { EnforcementLevel, Policies, PolicyConfigSchema, ResourceValidationPolicy, StackValidationPolicy } from "@pulumi/policy";
import {
    awsEfaGpudirectInstanceType, awsEfaImdsv2Required, awsEfaInterfaceEfaOnlySecondary, awsEfaInterfaceEveryCard, awsEfaInterfacePresent,
    awsEfaInterfaceSecurityGroups, awsEfaInterfaceSingleSubnet, awsEfaInterfaceTypeValid, awsEfaInterfaceUniqueSlot, awsEfaNoPublicIp,
    awsEfaTemplateLaunchedAsRdma,
} from "./aws";
import { awsEfaAsgSingleSubnet, awsEfaPlacementCapacityBlock, awsEfaPlacementCluster, awsEfaSgSelfEgress, awsEfaSgSelfIngress } from "./aws-network";
import {
    azureIbGen2Image, azureIbNoPasswordLogin, azureIbTrustedLaunchOff, azureIbVmssFaultDomainOne, azureIbVmssNoOverprovision,
    azureIbVmssPartitionCapacity, azureIbVmssSinglePlacementGroup, azureIbVmssUniformOrchestration,
} from "./azure";
import { azureIbAcceleratedNetworking, azureIbVnetRdmaRange } from "./azure-network";
import {
    roceQosC1, roceQosC10, roceQosC11, roceQosC12, roceQosC13, roceQosC2, roceQosC3, roceQosC4, roceQosC5, roceQosC6, roceQosC7, roceQosC8, roceQosC9,
    roceSwitchConfigDigest,
} from "./roce";
import { rdmaSshNotOpenToInternet } from "./ssh";

export * from "./aws";
export * from "./aws-network";
export * from "./azure";
export * from "./azure-network";
export { roceQosC1, roceQosC2, roceQosC3, roceQosC4, roceQosC5, roceQosC6, roceQosC7, roceQosC8, roceQosC9, roceQosC10, roceQosC11, roceQosC12, roceQosC13, roceSwitchConfigDigest } from "./roce";
export { rdmaSshNotOpenToInternet } from "./ssh";

type Policy = ResourceValidationPolicy | StackValidationPolicy;

/** Every rdmakit policy, in report order. */
export const RDMAKIT_POLICIES: readonly Policy[] = [
    awsEfaInterfacePresent, awsEfaInterfaceEveryCard, awsEfaInterfaceUniqueSlot, awsEfaInterfaceEfaOnlySecondary, awsEfaInterfaceTypeValid,
    awsEfaInterfaceSecurityGroups, awsEfaInterfaceSingleSubnet, awsEfaNoPublicIp, awsEfaImdsv2Required, awsEfaGpudirectInstanceType,
    awsEfaTemplateLaunchedAsRdma, awsEfaSgSelfIngress, awsEfaSgSelfEgress, awsEfaAsgSingleSubnet, awsEfaPlacementCluster, awsEfaPlacementCapacityBlock,
    azureIbVmssSinglePlacementGroup, azureIbVmssPartitionCapacity, azureIbVmssFaultDomainOne, azureIbVmssNoOverprovision,
    azureIbVmssUniformOrchestration, azureIbNoPasswordLogin, azureIbGen2Image, azureIbTrustedLaunchOff, azureIbAcceleratedNetworking,
    azureIbVnetRdmaRange,
    roceQosC1, roceQosC2, roceQosC3, roceQosC4, roceQosC5, roceQosC6, roceQosC7, roceQosC8, roceQosC9, roceQosC10, roceQosC11, roceQosC12,
    roceQosC13, roceSwitchConfigDigest,
    rdmaSshNotOpenToInternet,
];

/** Per policy (or `all`): a level, or config values with an optional level, as in a `--policy-pack-config` file. */
export type RdmakitPolicySettings = Record<string, EnforcementLevel | ({ enforcementLevel?: EnforcementLevel } & Record<string, unknown>)>;

/**
 * The rdmakit policies with a team's levels and config applied: a level replaces the policy's own; config values
 * become the schema's defaults (so the engine hands them to the policy, and a `--policy-pack-config` file or a Cloud
 * policy group can still override them). `all` applies first, then each policy's own entry. Unknown policy names or
 * config keys are refused, naming what is allowed.
 */
export function rdmakitPolicies(settings: RdmakitPolicySettings = {}): Policies {
    const names = RDMAKIT_POLICIES.map((p) => p.name);
    for (const key of Object.keys(settings)) {
        if (key !== "all" && !names.includes(key)) throw new Error(`rdmakitPolicies: unknown policy ${JSON.stringify(key)}; allowed: "all", ${names.join(", ")}`);
    }
    const asObject = (v: RdmakitPolicySettings[string] | undefined) => (typeof v === "string" ? { enforcementLevel: v } : v ?? {});
    return RDMAKIT_POLICIES.map((p) => {
        const all = asObject(settings.all);
        const own = asObject(settings[p.name]);
        const { enforcementLevel: allLevel, ...allConfig } = all;
        const { enforcementLevel: level, ...config } = own;
        const keys = Object.keys(p.configSchema?.properties ?? {});
        for (const k of Object.keys(config)) {
            if (!keys.includes(k)) throw new Error(`rdmakitPolicies: policy ${p.name} has no config ${JSON.stringify(k)}; allowed: ${keys.length ? keys.join(", ") : "(none, only a level)"}`);
        }
        // `all` config applies only to the keys a policy has
        const values = { ...Object.fromEntries(Object.entries(allConfig).filter(([k]) => keys.includes(k))), ...config };
        return { ...p, enforcementLevel: level ?? allLevel ?? p.enforcementLevel, configSchema: withDefaults(p.configSchema, values) };
    });
}

function withDefaults(schema: PolicyConfigSchema | undefined, values: Record<string, unknown>): PolicyConfigSchema | undefined {
    if (!schema || Object.keys(values).length === 0) return schema;
    const properties = Object.fromEntries(Object.entries(schema.properties).map(([k, p]) => [k, k in values ? { ...p, default: values[k] } : p]));
    return { ...schema, properties } as PolicyConfigSchema;
}
