// The known_hosts sync runs from the program (components/provision/nodes.ts nodeInventory with pinned host keys), on
// Pulumi's mock engine: at a deployment the stack's file is made to hold exactly each address's pinned keys before the
// inventory resolves (a replaced node's old entry at a reused address dropped, other hosts' entries kept), and the
// inventory checks every host against that file alone; a preview writes nothing. The real ssh side of the same sync
// is test/host-key-sync.test.ts. Needs ssh-keygen (openssh-client).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";

const unwrap = <T>(o: pulumi.Output<T>): Promise<T> => new Promise((r) => o.apply((v) => { r(v); return v; }));
const example = parseYaml(fs.readFileSync(path.join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];

function hostKeyLine(dir: string, name: string): string {
    const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", name, "-f", path.join(dir, name)]);
    assert.equal(r.status, 0, String(r.stderr));
    return fs.readFileSync(path.join(dir, `${name}.pub`), "utf8").trim();
}

for (const dryRun of [false, true]) {
    test(`nodeInventory with pinned host keys, ${dryRun ? "preview: writes nothing" : "deployment: the stale entry of a reused address is dropped first"}`, async () => {
        await pulumi.runtime.setMocks({ newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }), call: () => ({}) }, "rdmakit", "pin", dryRun);
        const { parseClusterSpec } = await import("../components/spec");
        const { planCluster } = await import("../components/plan");
        const { nodeInventory } = await import("../components/provision/nodes");
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-pin-"));
        try {
            const plan = planCluster(parseClusterSpec(example));
            const addresses: string[] = example.roce.hosts.map((h: { address: string }) => h.address);
            const file = path.join(dir, "out", "pin", "known_hosts");
            fs.mkdirSync(path.dirname(file), { recursive: true });
            // the file as the last run left it: the first node's old key (its machine was since replaced) and an
            // unrelated host's entry
            const old = hostKeyLine(dir, "old");
            const other = hostKeyLine(dir, "other");
            const before = `${addresses[0]} ${old.split(" ").slice(0, 2).join(" ")}\n192.0.2.99 ${other.split(" ").slice(0, 2).join(" ")}\n`;
            fs.writeFileSync(file, before);
            const fresh = addresses.map((_, i) => hostKeyLine(dir, `n${i}`));
            const inventory = await unwrap(nodeInventory(plan, pulumi.output(addresses), undefined, undefined, undefined, {
                file, hosts: pulumi.secret(addresses.map((address, i) => ({ address, keys: [fresh[i]] }))),
            }));
            // every hop checks against the stack's file only, refusing a key not pinned there
            const common = String(parseYaml(inventory).all.vars.ansible_ssh_common_args);
            assert.ok(common.includes(`-o StrictHostKeyChecking=yes -o UserKnownHostsFile=${file}`), common);
            const text = fs.readFileSync(file, "utf8");
            if (dryRun) {
                assert.equal(text, before);
                return;
            }
            assert.ok(!text.includes(old.split(" ")[1]), "the replaced node's old key is still there");
            assert.ok(text.includes(`192.0.2.99 ${other.split(" ").slice(0, 2).join(" ")}`), "another host's entry was touched");
            addresses.forEach((a, i) => {
                const found = spawnSync("ssh-keygen", ["-F", a, "-f", file], { encoding: "utf8" }).stdout;
                assert.ok(found.includes(fresh[i].split(" ")[1]), `${a}: pinned key missing`);
            });
            assert.ok(!fs.existsSync(`${file}.old`));
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
}
