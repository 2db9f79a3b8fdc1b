/**
 * rdmakit's public API: what a platform team imports into its own Pulumi program (`import … from "rdmakit"`).
 * Components: RdmaCluster (the whole cluster: fabric, node software, validation) and one per fabric,
 * AwsEfaCluster, AzureInfinibandCluster, RoceCluster. These four are also the multi-language component package
 * (PulumiPlugin.yaml): every component class exported from this file goes into its schema.
 * Decisions without resources: parseClusterSpec, planCluster, planQos, expectationFor, the nccl-tests parser and grader.
 * Building blocks with resources of their own live on subpaths: `rdmakit/provision` (AnsiblePlaybook),
 * `rdmakit/validate` (ClusterValidation); facts on `rdmakit/catalog`.
 */
export { RdmaCluster, RDMA_CLUSTER_TOKEN, type RdmaClusterArgs, type ValidationOutputs } from "./cluster";
export * from "./types";
export { parseClusterSpec } from "./spec";
export type * from "./spec-types";
export { SpecError, type SpecIssue, formatIssue, toInputPropertiesError } from "./errors";
export { planCluster, type FabricPlan, type PlannedNic } from "./plan";
export { efaInterfaceLayout, awsPlacement, type EfaInterface, type AwsPlacement } from "./plan/aws";
export { expectationFor, expectationFromFacts, hardwareFacts } from "./plan/expectation";
export { AWS_INSTANCE_TYPES, awsInstanceType, type AwsInstanceType } from "./catalog/aws";
export { AZURE_VM_SIZES, azureVmSize, type AzureVmSize } from "./catalog/azure";
export { NIC_CATALOG, nicInfo, type NicModel } from "./catalog/nics";
export * from "./aws";
export * from "./azure";
export { RoceCluster, ROCE_CLUSTER_TOKEN, type RoceClusterArgs } from "./roce/cluster";
export { planQos, type QosPlan } from "./roce/qos";
export { renderSwitchConfigs, type RenderedSwitchConfig } from "./roce/render";
export { checkConsistency, formatViolation, type Violation } from "./roce/consistency";
export { renderInventory, type InventoryArgs } from "./provision/inventory";
export * from "./validate/logs";
