/**
 * A TypeScript program that uses rdmakit's RdmaCluster across the plugin boundary, as a program in another language
 * does: a remote component (the last argument of ComponentResource's constructor), which the engine hands to the
 * provider plugin named by the project (plugins.providers: pulumi-resource-rdmakit) to Construct. This class is
 * what a generated Node.js SDK holds for a component (outputs registered as undefined inputs, filled from the
 * Construct response); the Node.js SDK generator needs the nodejs language host, which cannot be built here.
 */
import * as pulumi from "@pulumi/pulumi";

class RdmaCluster extends pulumi.ComponentResource {
    declare readonly nodePrivateIps: pulumi.Output<string[]>;
    declare readonly ncclEnv: pulumi.Output<Record<string, string>>;
    declare readonly fabricKind: pulumi.Output<string>;

    constructor(name: string, args: { spec: pulumi.Input<Record<string, unknown>> }, opts?: pulumi.ComponentResourceOptions) {
        super("rdmakit:index:RdmaCluster", name, { spec: args.spec, nodePrivateIps: undefined, ncclEnv: undefined, fabricKind: undefined }, opts, true);
    }
}

const config = new pulumi.Config("rdmakit");
const cluster = new RdmaCluster("cluster", { spec: config.requireObject<Record<string, unknown>>("cluster") });
export const nodePrivateIps = cluster.nodePrivateIps;
export const ncclEnv = cluster.ncclEnv;
export const fabric = cluster.fabricKind;
