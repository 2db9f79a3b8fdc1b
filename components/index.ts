/**
 * rdmakit's public API: what a platform team imports into its own Pulumi program.
 * The whole cluster: RdmaCluster. One fabric only: AwsEfaCluster, AzureInfinibandCluster, RoceCluster.
 * Decisions without resources: parseClusterSpec, planCluster, planQos, expectationFor.
 */
export { RdmaCluster, RDMA_CLUSTER_TOKEN, type RdmaClusterArgs, type ValidationOutputs } from "./cluster";
export { parseClusterSpec, clusterSchema, type ClusterSpec, type AwsSpec, type AzureSpec, type Fabric } from "./spec";
export { SpecError, type SpecIssue, formatIssue, toInputPropertiesError } from "./errors";
export { planCluster, type FabricPlan, type PlannedNic } from "./plan";
export { efaInterfaceLayout, awsPlacement, type EfaInterface, type AwsPlacement } from "./plan/aws";
export { expectationFor, expectationFromFacts, hardwareFacts } from "./plan/expectation";
export { AWS_INSTANCE_TYPES, awsInstanceType, type AwsInstanceType } from "./catalog/aws";
export { AZURE_VM_SIZES, azureVmSize, type AzureVmSize } from "./catalog/azure";
export { NIC_CATALOG, nicInfo, type NicModel } from "./catalog/nics";
export * from "./aws";
export * from "./azure";
export { RoceCluster, type RoceClusterArgs } from "./roce/cluster";
export { planQos, type QosPlan } from "./roce/qos";
export { renderSwitchConfigs, type RenderedSwitchConfig } from "./roce/render";
export { checkConsistency, formatViolation, type Violation } from "./roce/consistency";
export { AnsiblePlaybook, type AnsiblePlaybookArgs } from "./provision/ansible";
export { renderInventory, type InventoryArgs } from "./provision/inventory";
export * from "./validate";
