import * as pulumi from "@pulumi/pulumi";
import { providerRegionIssues } from "./components/checks";
import { RdmaCluster } from "./components/cluster";
import { SpecError } from "./components/errors";
import { takeClusterConfig } from "./components/spec";
import type { ClusterSpecInput } from "./components/types";

/*
 * The `pulumi up` program: stack config → spec → RdmaCluster → stack outputs. `rdmakit plan` runs this same
 * file on Pulumi's mock engine.
 */
const config = new pulumi.Config("rdmakit");
// read once (each read parses the JSON text again: 2 MB at 2,048 RoCE hosts); a missing key is refused below.
// `rdmakit plan` read and parsed this same text's cluster before the program ran (components/offline.ts) and left it
// here: taken as it is (spec.ts takeClusterConfig); under the engine nothing is left, and the SDK parses the text.
const clusterConfig = (takeClusterConfig(() => config.get("cluster")) as ClusterSpecInput | undefined) ?? config.getObject<ClusterSpecInput>("cluster");
// aws:region beside cluster.aws.region: one region, refused before anything is registered (components/checks.ts)
const regionIssues = providerRegionIssues(clusterConfig, new pulumi.Config("aws").get("region"));
if (regionIssues.length > 0) throw new pulumi.RunError(new SpecError(regionIssues).message);
// A fixed logical name, so `pulumi stack rename` leaves the cluster in place. Stacks made before it was fixed named
// the component after the stack: the alias keeps them (children named `<name>-…` follow through the SDK's
// inherited child aliases), so they are not replaced.
const cluster = specErrorsAsRunErrors(() => new RdmaCluster("cluster", {
    spec: clusterConfig ?? config.requireObject<ClusterSpecInput>("cluster"),
    sshPrivateKey: config.getSecret("sshPrivateKey"),
    sshPrivateKeyIsSecret: isSecretConfig("rdmakit:sshPrivateKey"),
    // bare metal: the switches' own key, never the nodes' (docs/keys.md)
    switchSshPrivateKey: config.getSecret("switchSshPrivateKey"),
    switchSshPrivateKeyIsSecret: isSecretConfig("rdmakit:switchSshPrivateKey"),
}, { aliases: [{ name: pulumi.getStack() }] }));

/**
 * A bad spec ends `pulumi up` with the kit's list of problems alone. The components throw InputPropertiesError (what
 * a component provider's Construct reports per property); thrown from a program, @pulumi/pulumi's cmd/run prints
 * that as "failed with an unhandled exception" with a stack trace, and only a RunError's message is shown bare
 * (@pulumi/pulumi 3.248.0 cmd/run/run.js uncaughtHandler; seen with the real engine, test/engine/roce-up.test.ts).
 */
function specErrorsAsRunErrors<T>(build: () => T): T {
    try {
        return build();
    } catch (e) {
        if (pulumi.InputPropertiesError.isInstance(e)) throw new pulumi.RunError(e.message);
        throw e;
    }
}

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
/** name, address and cloud instance id of every node: a node the cloud replaced shows here with its new id */
export const nodeInstances = cluster.nodeInstances;
export const entryAddress = cluster.entryAddress;
export const sshUser = cluster.plan.sshUser;
export const ncclEnv = cluster.plan.ncclEnv;
export const expectedBusbw = cluster.plan.validation.allNodes;
export const validation = cluster.validation;
/** Nodes the node-software step left failed (within cluster.ansible.maxFailPercentage) or that the spec excludes. */
export const provisioning = cluster.provisioning;
/**
 * The cluster's operating state, nothing secret (components/day2/state.ts): what `rdmakit status | check | ssh |
 * repair --stack <name>` read from any checkout through the stack's backend.
 */
export const rdmakitState = cluster.state;
