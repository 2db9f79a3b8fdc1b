/**
 * rdmakit's public API: what a platform team imports into its own Pulumi program (`import … from "rdmakit"`).
 * Components: RdmaCluster (the whole cluster: fabric, node software, validation) and RoceCluster here; the cloud
 * fabrics' own components on their subpaths, `rdmakit/aws` (AwsEfaCluster) and `rdmakit/azure`
 * (AzureInfinibandCluster), because each loads its cloud SDK, an optional peer dependency: importing this file loads
 * neither SDK, and RdmaCluster loads one only for its fabric (components/peer.ts).
 * Decisions without resources: parseClusterSpec, planCluster, planQos, expectationFor, the nccl-tests parser and grader.
 * Building blocks with resources of their own live on subpaths: `rdmakit/provision` (AnsiblePlaybook),
 * `rdmakit/validate` (ClusterValidation); facts on `rdmakit/catalog`. The multi-language component package
 * (PulumiPlugin.yaml) has its own list with all four components: components/package-components.ts.
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
export * from "./roce";
export { MissingSdkError } from "./peer";
export { renderInventory, type InventoryArgs } from "./provision/inventory";
export * from "./validate/logs";
