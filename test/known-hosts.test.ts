// Pinned host identities, for real: an sshd on 127.0.0.1 (test/fixtures/sshd.ts) runs with a host key the kit made
// (ed25519HostKey, so sshd reads the kit's OpenSSH encoding), taken from the #cloud-config the kit's user data carries
// (hostkeys.ts), and Ansible reaches it through an inventory from renderInventory with the per-stack known_hosts
// from writeKnownHosts. The pinned key is accepted; a host showing another key, or one not in
// the file, is refused on first contact. Needs root, sshd (openssh-server) and ansible.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePort } from "./fixtures/ports";
import { startSshd, sshdMissing, type Sshd } from "./fixtures/sshd";
import { ed25519HostKey, KIT_HOST_KEY_ALGORITHMS, knownHostsPath, renderKnownHosts, writeKnownHosts, type HostKeyPair } from "../components/provision/knownhosts";
import { hostKeyCloudConfig } from "../components/provision/hostkeys";
import { parse as parseYaml } from "yaml";
import { renderInventory } from "../components/provision/inventory";

const ROOT = path.join(__dirname, "..");
const why = sshdMissing() || (spawnSync("sh", ["-c", "command -v ansible"]).status !== 0 ? "no ansible" : "");
let dir: string;
let sshd: Sshd | undefined;
let port = 0;
let hostKey: HostKeyPair;
let clientKey: string;

before(async () => {
    if (why) return;
    dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-knownhosts-"));
    hostKey = ed25519HostKey("rdmakit-test-host");
    // the key as cloud-init's cc_ssh writes it to /etc/ssh/ssh_host_ed25519_key from the kit's user data (hostkeys.ts)
    const installed = parseYaml(hostKeyCloudConfig(hostKey, "aws")).ssh_keys.ed25519_private as string;
    fs.writeFileSync(path.join(dir, "host_key"), installed, { mode: 0o600 });
    clientKey = path.join(dir, "id");
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", clientKey]).status, 0);
    port = await freePort();
    sshd = await startSshd(dir, { address: "127.0.0.1", port, hostKeyFiles: [path.join(dir, "host_key")], authorizedKey: `${clientKey}.pub` });
});
after(async () => {
    // the SSH masters Ansible left (ControlPersist) and their sessions: this test's processes, found by its own folder
    for (const pid of fs.readdirSync("/proc").filter((p) => /^\d+$/.test(p))) {
        try {
            if (dir && fs.readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(dir)) process.kill(Number(pid), "SIGTERM");
        } catch { /* gone */ }
    }
    await sshd?.stop();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/**
 * `ansible -m ping` through an inventory pinned (or not) to `known`; its own SSH masters, so no connection is reused.
 * Pipelining is off here: with it, Ansible's first ssh carries the module on stdin, and when ssh refuses the host while
 * that write is under way Ansible reports the broken pipe instead of ssh's reason (ansible/plugins/connection/ssh.py,
 * _send_initial_data: "Data could not be sent to remote host ... Broken pipe"), a race seen in CI. Without it the first
 * ssh has no stdin data and its refusal is reported with ssh's own words; the pinning under test is the same either way.
 */
function ping(name: string, known: string, pinned: boolean) {
    const kh = path.join(dir, `${name}.known_hosts`);
    fs.writeFileSync(kh, known);
    const inv = path.join(dir, `${name}.yml`);
    fs.writeFileSync(inv, renderInventory({
        hosts: [{ name: "h1", address: "127.0.0.1", port, user: "root", vars: { ansible_python_interpreter: "/usr/bin/python3" } }],
        vars: {}, knownHostsFile: kh, pinnedHostKeys: pinned, privateKeyFile: clientKey,
        // as a cloud stack's inventory has it (components/cluster.ts pinHostKeys)
        ...(pinned ? { hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS } : {}),
    }));
    const r = spawnSync("ansible", ["-i", inv, "all", "-m", "ansible.builtin.ping"], {
        cwd: ROOT, encoding: "utf8", timeout: 60_000,
        env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            ANSIBLE_SSH_CONTROL_PATH_DIR: fs.mkdtempSync(path.join(dir, "cp-")), SSH_AUTH_SOCK: "",
            ANSIBLE_PIPELINING: "False" },
    });
    return { code: r.status, out: r.stdout + r.stderr, known: fs.readFileSync(kh, "utf8") };
}

test("renderKnownHosts: one sorted line per entry, [host]:port off 22, comments dropped, no patterns", () => {
    const a = ed25519HostKey("a"), b = ed25519HostKey("b");
    const text = renderKnownHosts([
        { hosts: ["10.0.0.2"], publicKey: b.publicKey },
        { hosts: ["10.0.0.1", "gpu01"], port: 2222, publicKey: a.publicKey },
    ]);
    assert.equal(text, `10.0.0.2 ${b.publicKey.split(" ").slice(0, 2).join(" ")}\n[10.0.0.1]:2222,[gpu01]:2222 ${a.publicKey.split(" ").slice(0, 2).join(" ")}\n`);
    assert.throws(() => renderKnownHosts([{ hosts: ["10.0.*"], publicKey: a.publicKey }]), /not a host name/);
    assert.throws(() => renderKnownHosts([{ hosts: ["h"], publicKey: "ssh-ed25519" }]), /not an SSH public key/);
    assert.equal(knownHostsPath("prod"), path.join("out", "prod", "known_hosts"));
    // the kit's private key encoding is what ssh-keygen reads: it gives back the same public key
    const f = path.join(os.tmpdir(), `rdmakit-hk-${process.pid}`);
    fs.writeFileSync(f, a.privateKey, { mode: 0o600 });
    const pub = spawnSync("ssh-keygen", ["-y", "-f", f], { encoding: "utf8" });
    fs.rmSync(f);
    assert.equal(pub.stdout.trim().split(" ").slice(0, 2).join(" "), a.publicKey.split(" ").slice(0, 2).join(" "), pub.stderr);
});

test("a pinned host key is accepted; another key, or none, is refused on first contact", { skip: why || false, timeout: 120_000 }, () => {
    const pinned = (key: HostKeyPair) => renderKnownHosts([{ hosts: ["127.0.0.1"], port, publicKey: key.publicKey }]);
    const ok = ping("match", pinned(hostKey), true);
    assert.equal(ok.code, 0, ok.out);
    assert.match(ok.out, /"ping": "pong"/);

    const impostor = pinned(ed25519HostKey("impostor"));
    const other = ping("other", impostor, true);
    assert.notEqual(other.code, 0, other.out);
    assert.match(other.out, /UNREACHABLE/);
    assert.match(other.out, /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/);
    assert.equal(other.known, impostor, "the pinned file is left as it was");

    const unknown = ping("unknown", "", true);
    assert.notEqual(unknown.code, 0, unknown.out);
    assert.match(unknown.out, /Host key verification failed|No ED25519 host key is known/);
    assert.equal(unknown.known, "", "nothing was learned on first contact");

    // the contrast: without pinning the same first contact is accepted and learned (accept-new)
    const tofu = ping("tofu", "", false);
    assert.equal(tofu.code, 0, tofu.out);
    assert.match(tofu.known, /ssh-ed25519/);
});

test("writeKnownHosts writes the per-stack file", () => {
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kh-"));
    const key = ed25519HostKey();
    const file = writeKnownHosts([{ hosts: ["10.0.0.9"], publicKey: key.publicKey }], path.join(d, "out", "s", "known_hosts"));
    assert.equal(fs.readFileSync(file, "utf8"), `10.0.0.9 ${key.publicKey.split(" ").slice(0, 2).join(" ")}\n`);
    fs.rmSync(d, { recursive: true });
});
