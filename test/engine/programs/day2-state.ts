/**
 * The engine test of day 2 (test/engine/day2.test.ts): a stack whose outputs are what RdmaCluster exports on a cloud
 * after a validation run, made through the real CLI without the cloud and command providers this machine cannot
 * build (test/engine/README.md). The same `operatingState` the component calls, on a recorded verdict set: the
 * result line `rdmakit nccl-report --health ... --result-line` printed for real captures (the test writes it), the
 * node addresses and instance ids as the cloud lists them, and the node group's host key made as the stack makes
 * it. Its private half is exported as a secret, as a tls.PrivateKey's is in a real stack, so the test can see that
 * the only secret in the outputs is the one marked secret. The nodes are named as the component names them
 * (day2/names.ts on the stack's own previous state through a StackReference to itself, day2/previous.ts), so a
 * second `up` with a replaced instance shows the name kept and the replacement recorded.
 */
import * as fs from "node:fs";
import * as pulumi from "@pulumi/pulumi";
import { operatingState } from "../../../components/day2/state";
import { parseResultLine } from "../../../components/validate/component";
import { ed25519HostKey } from "../../../components/provision/knownhosts";
import { previousNames, stableNodes } from "../../../components/day2/names";
import { previousState } from "../../../components/day2/previous";

const config = new pulumi.Config("day2");
const recorded = config.requireObject<{
    resultFile: string; spec: unknown; seedHex: string; bastion: string; group: string;
    nodes: Array<{ name: string; address: string; instanceId: string }>;
}>("recorded");
const hostKey = ed25519HostKey("rdmakit-node", Buffer.from(recorded.seedHex, "hex"));
const bastionKey = ed25519HostKey("rdmakit-bastion", Buffer.from(recorded.seedHex.split("").reverse().join(""), "hex"));

const names = recorded.nodes.map((n) => n.name);
export const rdmakitState = previousState("day2").apply((prev) => {
    const named = stableNodes(names, recorded.nodes.map((n) => ({ instanceId: n.instanceId, address: n.address })), previousNames(prev), new Date().toISOString());
    return operatingState({
        stack: pulumi.getStack(), fabric: "aws-efa", sshUser: "ubuntu", nodes: named.nodes, spec: recorded.spec,
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: recorded.group },
        entry: { kind: "bastion", address: recorded.bastion, user: "ubuntu", hostKey: bastionKey.publicKey },
        nodeHostKey: hostKey.publicKey, repair: "replace", replacements: named.replacements,
        validation: parseResultLine(fs.readFileSync(recorded.resultFile, "utf8")),
    });
});
export const nodeHostPrivateKey = pulumi.secret(hostKey.privateKey);
