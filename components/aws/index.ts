export { AwsEfaCluster, AwsEfaClusterArgs, AwsFabricSummary } from "./cluster";
export { AwsNode, GROUP_CAPACITY_WAIT_SECONDS, GROUP_REPLACEMENT } from "./lifecycle";
export { checkAwsClusterInput } from "./checks";
export { DLAMI_NAME_PATTERN, DLAMI_SSH_USER, nodeAmiQuery, bastionAmiQuery } from "./ami";
export { carveVpc, ipsPerNode, VpcLayout } from "./network";
