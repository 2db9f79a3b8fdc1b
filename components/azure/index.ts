export { AZURE_INFINIBAND_CLUSTER_TOKEN, AzureInfinibandCluster } from "./cluster";
export type { AzureInfinibandClusterArgs } from "./cluster";
export { azureFabricSummary } from "./summary";
export type { AzureFabricSummary } from "./summary";
export { NSG_PRIORITY, nsgRules } from "./nsg";
export type { NsgRule } from "./nsg";
