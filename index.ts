import * as pulumi from "@pulumi/pulumi";
import { RdmaCluster } from "./components/cluster";
import type { ClusterSpecInput } from "./components/types";

/*
 * The `pulumi up` program: stack config → spec → RdmaCluster → stack outputs. `rdmakit plan` runs this same
 * file on Pulumi's mock engine.
 */
const config = new pulumi.Config("rdmakit");
// A fixed logical name, so `pulumi stack rename` leaves the cluster in place. Stacks made before it was fixed named
// the component after the stack: the alias keeps them (children named `<name>-…` follow through the SDK's
// inherited child aliases), so they are not replaced.
const cluster = new RdmaCluster("cluster", {
    spec: config.requireObject<ClusterSpecInput>("cluster"),
    sshPrivateKey: config.getSecret("sshPrivateKey"),
    sshPrivateKeyIsSecret: isSecretConfig("rdmakit:sshPrivateKey"),
}, { aliases: [{ name: pulumi.getStack() }] });

/** Whether Pulumi holds the key as a secret (set with --secret); a plain-text key is refused. */
function isSecretConfig(key: string): boolean {
    // The SDK keeps the secret-key list in PULUMI_CONFIG_SECRET_KEYS (@pulumi/pulumi runtime/config.ts).
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const runtimeConfig = require("@pulumi/pulumi/runtime/config") as { isConfigSecret?: (k: string) => boolean };
    return runtimeConfig.isConfigSecret?.(key) ?? false;
}

export const fabric = cluster.plan.fabric;
export const nodes = cluster.plan.nodes;
export const nodePrivateIps = cluster.nodePrivateIps;
export const entryAddress = cluster.entryAddress;
export const sshUser = cluster.plan.sshUser;
export const ncclEnv = cluster.plan.ncclEnv;
export const expectedBusbw = cluster.plan.validation.allNodes;
export const validation = cluster.validation;
