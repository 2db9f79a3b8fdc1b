// `rdmakit/roce`: the bare-metal fabric (also on the package root: it needs no cloud SDK).
export { RoceCluster, ROCE_CLUSTER_TOKEN, type RoceClusterArgs } from "./cluster";
export { planQos, type QosPlan } from "./qos";
export { renderSwitchConfigs, type RenderedSwitchConfig } from "./render";
export { checkConsistency, formatViolation, type Violation } from "./consistency";
