// The stack's host keys on their way to the nodes (components/provision/hostkeys.ts, jump.ts): the #cloud-config that
// cloud-init's cc_ssh reads, the known_hosts entries that pin them, and what a malformed key does (refused, never
// shown). The real sshd that serves such a key: test/known-hosts.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { hostKeyCloudConfig, hostKeyCloudConfigLines } from "../components/provision/hostkeys";
import { jumpHostCloudConfig, JUMP_HOST_SSHD_SETTINGS } from "../components/provision/jump";
import { ed25519HostKey, groupKnownHosts, renderKnownHosts } from "../components/provision/knownhosts";
import { jumpCustomData, nodeCustomData } from "../components/azure/settings";
import { validationVars } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import * as fs from "node:fs";
import * as path from "node:path";

const pub = (k: { publicKey: string }) => k.publicKey.split(" ").slice(0, 2).join(" ");

test("the nodes' #cloud-config: the one Ed25519 host key, the image's keys deleted, no other type generated", () => {
    const k = ed25519HostKey("ignored-comment");
    const text = hostKeyCloudConfig(k);
    assert.ok(text.startsWith("#cloud-config\n"));
    const doc = parseYaml(text);
    assert.deepEqual(doc, {
        ssh_deletekeys: true,
        ssh_genkeytypes: [],
        ssh_keys: { ed25519_private: k.privateKey, ed25519_public: pub(k) },
    });
    // Azure takes customData base64; the same document
    assert.equal(Buffer.from(nodeCustomData(k), "base64").toString(), text);
});

test("the jump host's #cloud-config keeps its sshd settings and adds its own host key", () => {
    const k = ed25519HostKey();
    const doc = parseYaml(jumpHostCloudConfig(k));
    assert.equal(doc.write_files[0].content, JUMP_HOST_SSHD_SETTINGS);
    assert.deepEqual(doc.runcmd, [["systemctl", "try-reload-or-restart", "ssh.service"]]);
    assert.deepEqual(doc.ssh_keys, { ed25519_private: k.privateKey, ed25519_public: pub(k) });
    assert.equal(parseYaml(jumpHostCloudConfig()).ssh_keys, undefined, "without a key: the settings only");
    assert.equal(Buffer.from(jumpCustomData(k), "base64").toString(), jumpHostCloudConfig(k));
});

test("a host key that is not an OpenSSH Ed25519 pair is refused, and neither half is shown", () => {
    const k = ed25519HostKey();
    const pkcs8 = "-----BEGIN PRIVATE KEY-----\nMC4CAQAwBQYDK2VwBCIEIGtoaXNpc25vdGFyZWFsa2V5YnV0bG9va3NsaWtlb25l\n-----END PRIVATE KEY-----\n";
    const injected = `${k.privateKey}ssh_authorized_keys: [ssh-ed25519 AAAAevil]\n`;
    for (const bad of [{ ...k, privateKey: pkcs8 }, { ...k, privateKey: injected }, { ...k, publicKey: "ssh-rsa AAAAB3Nza" },
        { ...k, publicKey: `${pub(k)}\nssh_authorized_keys: []` }]) {
        assert.throws(() => hostKeyCloudConfigLines(bad), (e: Error) => {
            assert.match(e.message, /host (public )?key is not/);
            assert.ok(!e.message.includes("MC4CAQAw") && !e.message.includes(k.privateKey.split("\n")[1]) && !e.message.includes("AAAA"), e.message);
            return true;
        });
    }
});

test("known_hosts of a cloud stack: each node address with the group's key, the bastion with its own", () => {
    const node = ed25519HostKey(), bastion = ed25519HostKey();
    const text = renderKnownHosts(groupKnownHosts(["10.0.0.12", "10.0.0.11"], node.publicKey, { address: "203.0.113.7", publicKey: bastion.publicKey }));
    assert.equal(text, `10.0.0.11 ${pub(node)}\n10.0.0.12 ${pub(node)}\n203.0.113.7 ${pub(bastion)}\n`);
});

test("mpirun's pinned host keys reach validate.yml only as key lines", () => {
    const doc = parseYaml(fs.readFileSync(path.join(__dirname, "..", "examples", "aws-p5.yaml"), "utf8"));
    const args = validationArgsFromPlan(planCluster(parseClusterSpec(doc.config["rdmakit:cluster"])), "dev");
    const hosts = args.hosts.map((_, i) => `10.0.0.${10 + i}`);
    const k = pub(ed25519HostKey());
    assert.deepEqual(validationVars(args, hosts, "out/dev/nccl", [k]).nccl_validate_host_keys, [k]);
    // a second line would be a known_hosts entry of its own (for any host)
    assert.throws(() => validationVars(args, hosts, "out/dev/nccl", [`${k}\n* ssh-ed25519 AAAAevil`]), /hostKeys\[0\]/);
});
