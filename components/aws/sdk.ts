// The parts of @pulumi/aws the kit uses, by module. Importing the package root makes TypeScript load the declarations
// of every AWS service (2,700 files, 31 MB of .d.ts in @pulumi/aws 7.x); these five modules, two root invokes and the shared
// types/ folder are about 14 MB. That is what `tsc`, the build and Pulumi's schema analyzer read for this folder.
// Usage stays `aws.ec2.LaunchTemplate`, as with the root import. @pulumi/aws is an optional peer (components/peer.ts):
// ./sdk-present comes first and names the package when it is missing.
import "./sdk-present";
export * as autoscaling from "@pulumi/aws/autoscaling";
export * as ec2 from "@pulumi/aws/ec2";
export * as iam from "@pulumi/aws/iam";
export * as servicequotas from "@pulumi/aws/servicequotas";
export * as vpc from "@pulumi/aws/vpc";
export { getCallerIdentity } from "@pulumi/aws/getCallerIdentity";
export { getServicePrincipalOutput } from "@pulumi/aws/getServicePrincipal";
