// The stack's host keys on their way to the nodes (components/provision/hostkeys.ts, jump.ts): the #cloud-config that
// cloud-init's cc_ssh reads, the known_hosts entries that pin them, and what a malformed key does (refused, never
// shown). The real sshd that serves such a key: test/known-hosts.test.ts.
import { test } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml } from "yaml";
import { hostKeyCloudConfig, hostKeyCloudConfigLines, IMDS_ROOT_ONLY, WAAGENT_ED25519 } from "../components/provision/hostkeys";
import { spawnSync } from "node:child_process";
import * as os from "node:os";
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

test("the nodes' #cloud-config: the one Ed25519 host key, the image's keys deleted, no other type generated; the cloud's boot script", () => {
    const k = ed25519HostKey("ignored-comment");
    const text = hostKeyCloudConfig(k, "aws");
    assert.ok(text.startsWith("#cloud-config\n"));
    const doc = parseYaml(text);
    assert.deepEqual(doc, {
        ssh_deletekeys: true,
        ssh_genkeytypes: [],
        ssh_keys: { ed25519_private: k.privateKey, ed25519_public: pub(k) },
        // every boot (cc_bootcmd): IMDS, which serves this user data, for root only
        bootcmd: [IMDS_ROOT_ONLY.join("\n") + "\n"],
    });
    // Azure takes customData base64; the same key, and the agent told to wait for the ed25519 key instead of rsa
    const azure = parseYaml(Buffer.from(nodeCustomData(k), "base64").toString());
    assert.deepEqual(azure, { ...doc, bootcmd: [WAAGENT_ED25519.join("\n") + "\n"] });
});

/** Runs a boot script with sh, PATH holding only the given stand-in commands (each records its args and stdin). */
function runBootScript(script: string[], tools: string[]): { stderr: string; calls: string[] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-boot-"));
    try {
        const log = path.join(dir, "calls");
        for (const t of tools) {
            // nft: `list table` fails until `-f -` has read a table; iptables: `-C` fails until `-I` added the rule
            fs.writeFileSync(path.join(dir, t), `#!/bin/sh\n[ "$1" = -f ] && { echo "${t} $* <<$(/usr/bin/tr '\\n' ' ')" >> ${log}; /bin/touch ${dir}/${t}.added; exit 0; }\n` +
                `[ "$1" = -C ] || [ "$2" = list ] || [ "$1" = list ] && { [ -e ${dir}/${t}.added ]; exit $?; }\n` +
                `echo "${t} $*" >> ${log}; /bin/touch ${dir}/${t}.added\n`, { mode: 0o755 });
        }
        const r = spawnSync("/bin/sh", ["-c", script.join("\n")], { encoding: "utf8", env: { PATH: dir }, timeout: 10_000 });
        assert.equal(r.status, 0, r.stderr);
        return { stderr: r.stderr, calls: fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : [] };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("IMDS for root only: nft where it exists (IPv4 and IPv6 IMDS), else iptables and ip6tables; neither is said, not hidden", () => {
    const nft = runBootScript(IMDS_ROOT_ONLY, ["nft"]);
    assert.equal(nft.calls.length, 1, nft.calls.join("\n"));
    assert.match(nft.calls[0], /^nft -f - <<table inet rdmakit_imds \{\s+chain out \{\s+type filter hook output priority 0; policy accept;\s+ip daddr 169\.254\.169\.254 meta skuid != 0 reject\s+ip6 daddr fd00:ec2::254 meta skuid != 0 reject\s+\}\s+\}$/);
    assert.match(nft.stderr, /rdmakit: IMDS limited to root \(nft table inet rdmakit_imds\)/);
    const ipt = runBootScript(IMDS_ROOT_ONLY, ["iptables", "ip6tables"]);
    assert.deepEqual(ipt.calls, [
        "iptables -I OUTPUT 1 -d 169.254.169.254 -p tcp -m owner ! --uid-owner 0 -j REJECT --reject-with tcp-reset",
        "ip6tables -I OUTPUT 1 -d fd00:ec2::254 -p tcp -m owner ! --uid-owner 0 -j REJECT --reject-with tcp-reset",
    ]);
    assert.match(ipt.stderr, /IMDS limited to root \(iptables OUTPUT owner rule\)/);
    const none = runBootScript(IMDS_ROOT_ONLY, []);
    assert.deepEqual(none.calls, []);
    assert.match(none.stderr, /could not limit IMDS to root: neither nft nor iptables is installed; the user data .* is readable by every local user/);
});

test("Azure's agent is set to wait for the ed25519 host key, on Ubuntu's own waagent.conf; a conf without the line gets it", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-waagent-"));
    try {
        const conf = path.join(dir, "waagent.conf");
        const script = WAAGENT_ED25519.map((l) => l.replace("/etc/waagent.conf", conf));
        const real = fs.readFileSync(path.join(__dirname, "fixtures", "waagent", "ubuntu-waagent.conf"), "utf8");
        for (const start of [real, real.replace(/^Provisioning\.SshHostKeyPairType=.*\n/m, "")]) {
            fs.writeFileSync(conf, start);
            for (let run = 0; run < 2; run++) {
                // bootcmd runs at every boot: the edit is the same the second time
                const r = spawnSync("/bin/sh", ["-c", script.join("\n")], { encoding: "utf8", timeout: 10_000 });
                assert.equal(r.status, 0, r.stderr);
            }
            const after = fs.readFileSync(conf, "utf8");
            assert.deepEqual(after.match(/^Provisioning\.SshHostKeyPairType=.*$/gm), ["Provisioning.SshHostKeyPairType=ed25519"]);
            // the agent's path for it: /etc/ssh/ssh_host_<type>_key.pub (WALinuxAgent conf.get_ssh_key_public_path) = the key cc_ssh writes
            assert.equal(after.replace(/^Provisioning\.SshHostKeyPairType=.*\n/m, ""), start.replace(/^Provisioning\.SshHostKeyPairType=.*\n/m, ""), "nothing else changed");
        }
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the jump host's #cloud-config keeps its sshd settings and adds its own host key", () => {
    const k = ed25519HostKey();
    const doc = parseYaml(jumpHostCloudConfig(k, "aws"));
    assert.equal(doc.write_files[0].content, JUMP_HOST_SSHD_SETTINGS);
    assert.deepEqual(doc.runcmd, [["systemctl", "try-reload-or-restart", "ssh.service"]]);
    assert.deepEqual(doc.ssh_keys, { ed25519_private: k.privateKey, ed25519_public: pub(k) });
    assert.deepEqual(doc.bootcmd, [IMDS_ROOT_ONLY.join("\n") + "\n"], "the bastion's user data holds its key: IMDS for root only there too");
    assert.equal(parseYaml(jumpHostCloudConfig(undefined, "aws")).ssh_keys, undefined, "without a key: the settings only");
    assert.equal(Buffer.from(jumpCustomData(k), "base64").toString(), jumpHostCloudConfig(k, "azure"));
    assert.deepEqual(parseYaml(jumpHostCloudConfig(k, "azure")).bootcmd, [WAAGENT_ED25519.join("\n") + "\n"]);
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
