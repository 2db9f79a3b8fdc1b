/**
 * The components the multi-language package offers: package.json exports "." `default`, the file Pulumi's schema
 * analyzer reads for component classes (@pulumi/pulumi provider/experimental/analyzer.js: exports "." default, then
 * main), and the list the provider serves (components/provider.ts). Unlike the TypeScript entry (components/index.ts)
 * it loads both cloud SDKs, so the plugin's folder needs both installed (they are this repository's devDependencies).
 */
export { RdmaCluster } from "./cluster";
export { AwsEfaCluster } from "./aws/cluster";
export { AzureInfinibandCluster } from "./azure/cluster";
export { RoceCluster } from "./roce/cluster";
