/**
 * The stack's own `rdmakitState` as the last deployment left it: a StackReference to this very stack (the engine
 * reads the outputs of the stack's last completed update), for the node names (names.ts). None where the program
 * runs without an organization (the mock engine of unit tests, which sets none) or exports no `rdmakitState`: the
 * nodes are then named by position, as on a first deployment.
 */
import * as pulumi from "@pulumi/pulumi";
import { STATE_OUTPUT, stateValue } from "./state";

export function previousState(name: string, parent?: pulumi.Resource): pulumi.Output<unknown> {
    let org: string;
    try {
        org = pulumi.getOrganization();
    } catch {
        return pulumi.output(undefined);
    }
    const self = `${org}/${pulumi.getProject()}/${pulumi.getStack()}`;
    return new pulumi.StackReference(`${name}-previous-state`, { name: self }, parent ? { parent } : {}).getOutput(STATE_OUTPUT).apply(previousValue);
}

/**
 * The stack output as the object: a program in another language exports the JSON text (RdmaCluster.operatingState).
 * Text that is not a state's JSON is no previous state (undefined): the nodes are then named by position.
 */
export function previousValue(value: unknown): unknown {
    try {
        return stateValue(value, "the previous deployment");
    } catch {
        return undefined;
    }
}
