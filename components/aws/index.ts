export { AwsEfaCluster, AwsEfaClusterArgs, AwsFabricSummary, GROUP_CAPACITY_TIMEOUT } from "./cluster";
export { checkAwsClusterInput } from "./checks";
export { DLAMI_NAME_PATTERN, DLAMI_SSH_USER, nodeAmiQuery, bastionAmiQuery } from "./ami";
export { carveVpc, ipsPerNode, VpcLayout } from "./network";
