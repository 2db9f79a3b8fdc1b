/**
 * The multi-language component package's entry (PulumiPlugin.yaml): package.json `main` for the plugin's runtime
 * (@pulumi/pulumi cmd/run-plugin requires the package folder) and exports "." `default` for Pulumi's schema analyzer,
 * which reads this file's component classes. Unlike the TypeScript entry (components/index.ts) it loads both cloud SDKs,
 * so the plugin's folder needs both installed (they are this repository's devDependencies).
 */
export { RdmaCluster } from "./cluster";
export { AwsEfaCluster } from "./aws/cluster";
export { AzureInfinibandCluster } from "./azure/cluster";
export { RoceCluster } from "./roce/cluster";
