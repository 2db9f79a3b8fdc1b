// The stack's known_hosts from the program (components/cluster.ts pinHostKeys), on Pulumi's mock engine, for an AWS
// stack whose host keys the stack made: at a preview nothing is written; at a deployment the file holds exactly each
// node address with the group's key and the bastion with its own, before the inventory (so any run) resolves, and
// an old entry of a reused address (a node replaced since the last run) is gone. The real ssh side of a replaced
// node is test/host-key-sync.test.ts; the whole cluster under deployment is test/cluster.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import { mockHostKey } from "./fixtures/host-key-mock";
import { MOCK_HEAD_IP, clusterCall, clusterResource } from "./fixtures/cluster-answers";

const unwrap = <T>(o: pulumi.Output<T>): Promise<T> => new Promise((r) => o.apply((v) => { r(v); return v; }));
const NODE_IPS = ["10.0.0.21", "10.0.0.22", "10.0.0.23", "10.0.0.24"];

for (const dryRun of [true, false]) {
    test(`an AWS stack's pinned host keys, ${dryRun ? "preview: nothing written" : "deployment: the file holds exactly the stack's keys"}`, async () => {
        const stack = dryRun ? "pin-preview" : "pin-deploy";
        await pulumi.runtime.setMocks({
            newResource: clusterResource,
            call: (a) => clusterCall(a, { ids: NODE_IPS.map((_, i) => `i-${i}`), privateIps: NODE_IPS }),
        }, "rdmakit", stack, dryRun);
        const { RdmaCluster } = await import("../components/cluster");
        const file = path.join("out", stack, "known_hosts");
        fs.rmSync(path.dirname(file), { recursive: true, force: true });
        // the file as an earlier run left it: the first address with the key of the machine that held it before
        const stale = `${NODE_IPS[0]} ${mockHostKey("old-machine").publicKey}\n`;
        fs.mkdirSync(path.dirname(file), { recursive: true });
        fs.writeFileSync(file, stale);
        try {
            const spec = parseYaml(fs.readFileSync(path.join(__dirname, "..", "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"];
            const c = new RdmaCluster("demo", { spec, sshPrivateKey: pulumi.secret("not-a-real-key") });
            const settle = async () => {
                await (pulumi.runtime as unknown as { waitForRPCs?: () => Promise<void> }).waitForRPCs?.();
                await new Promise((r) => setTimeout(r, 100));
            };
            if (dryRun) {
                // at a preview the nodes' addresses are not known yet: let everything the program started run out
                await settle();
                assert.equal(fs.readFileSync(file, "utf8"), stale, "a preview changed the stack's known_hosts");
                return;
            }
            const [ips, entry] = await Promise.all([unwrap(c.nodePrivateIps), unwrap(c.entryAddress)]);
            await settle();
            const text = fs.readFileSync(file, "utf8");
            const node = mockHostKey("node").publicKey, bastion = mockHostKey("bastion").publicKey, head = mockHostKey("head").publicKey;
            assert.deepEqual(ips, NODE_IPS);
            // and the Slurm head node the example's stack makes, with its own key
            assert.equal(text, [...ips.map((ip) => `${ip} ${node}`), `${entry} ${bastion}`, `${MOCK_HEAD_IP} ${head}`].sort().map((l) => `${l}\n`).join(""));
            assert.ok(!text.includes(mockHostKey("old-machine").publicKey), "the replaced machine's key is still pinned");
        } finally {
            fs.rmSync(path.dirname(file), { recursive: true, force: true });
        }
    });
}
