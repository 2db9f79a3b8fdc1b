/**
 * SSH host identities a cloud stack makes for itself, so the first contact with a node, the bastion or the jump host
 * is already verified (StrictHostKeyChecking=yes against out/<stack>/known_hosts, knownhosts.ts) instead of trusted
 * on first use.
 *
 * One Ed25519 host key per node group (the stack's one Auto Scaling group or scale set), one for the bastion / jump
 * host. Per group, not per node: every node of a group boots from the same launch template or scale-set model, so
 * its user data / customData is one text for all of them, and a key per node would need a resource per node (which
 * docs/architecture.md's scale rule forbids) plus a way to match keys to instances the group starts on its own. The trade-off:
 * root on one node holds the key every node shows, so it could impersonate another node of the same cluster to a
 * client that connects to that node's address (it cannot impersonate the bastion, which has its own key, nor a node
 * of another stack). And the user data can be read back on the node through the instance metadata service (AWS:
 * IMDSv2 with hop limit 1, so not from a container; Azure keeps customData out of IMDS and writes it root-only to
 * /var/lib/waagent) and by whoever may read the launch template or the scale-set model in the cloud account.
 *
 * The key itself is a resource of the stack (hostkey-resource.ts); this file is pure.
 *
 * cloud-init installs it (module cc_ssh, once per instance, at the first boot): with `ssh_keys` given it deletes the
 * image's host keys (`ssh_deletekeys`, on by default), writes /etc/ssh/ssh_host_ed25519_key and its .pub from
 * `ed25519_private` / `ed25519_public`, and generates no other type; `ssh_genkeytypes: []` says so for versions that
 * would generate the missing ones. So sshd has the one key to show.
 * source: canonical/cloud-init cloudinit/config/cc_ssh.py (ssh_deletekeys default true; ssh_keys → KEY_FILE_TPL
 * /etc/ssh/ssh_host_%s_key, 0600; the ssh-keygen branch only without ssh_keys; PER_INSTANCE frequency).
 * sshd, with no HostKey line (Ubuntu's sshd_config has them commented out), loads whichever of the default rsa, ecdsa
 * and ed25519 files exist and logs a missing default one at debug level only (openssh-portable servconf.c
 * fill_default_server_options, sshd.c host_key_file_userprovided), so the ed25519 key alone is what it offers. The
 * clients also ask for nothing else (HostKeyAlgorithms=ssh-ed25519, inventory.ts), so a second key type on a node
 * could not stand in for the pinned one.
 */
const PRIVATE = /^-----BEGIN OPENSSH PRIVATE KEY-----\r?\n[A-Za-z0-9+/=\r\n]+-----END OPENSSH PRIVATE KEY-----\r?\n?$/;
// one line: the type, the key, at most a comment
const PUBLIC = /^ssh-ed25519 [A-Za-z0-9+/]+={0,2}( [^\r\n]*)?$/;

/** `<type> <base64>` of a public key line, the comment dropped. */
export function publicKeyId(line: string): string {
    return line.trim().split(/\s+/).slice(0, 2).join(" ");
}

/**
 * The #cloud-config lines (no header) that install the key pair as the host's only SSH host key. Throws, without
 * showing either half, when the text is not an OpenSSH Ed25519 key pair (nothing else may reach the YAML). Pure.
 */
export function hostKeyCloudConfigLines(key: { privateKey: string; publicKey: string }): string[] {
    if (!key.privateKey || !key.publicKey) {
        // what a mock engine that echoes inputs gives: tests of a program must answer the tls provider's resource too
        throw new Error("rdmakit: the stack's host key (tls.PrivateKey) came back without privateKeyOpenssh/publicKeyOpenssh; " +
            "under Pulumi mocks, answer tls:index/privateKey:PrivateKey with an Ed25519 key in OpenSSH format");
    }
    const pub = publicKeyId(key.publicKey);
    if (!PRIVATE.test(key.privateKey)) throw new Error("rdmakit: the host key is not an OpenSSH private key (-----BEGIN OPENSSH PRIVATE KEY-----)");
    if (!PUBLIC.test(key.publicKey.trim())) throw new Error("rdmakit: the host public key is not an ssh-ed25519 key line");
    return [
        "ssh_deletekeys: true",
        "ssh_genkeytypes: []",
        "ssh_keys:",
        "  ed25519_private: |",
        ...key.privateKey.replace(/\r/g, "").trimEnd().split("\n").map((l) => `    ${l}`),
        `  ed25519_public: ${pub}`,
    ];
}

/** A whole #cloud-config document that installs the host key and nothing else (the nodes' user data). Pure. */
export function hostKeyCloudConfig(key: { privateKey: string; publicKey: string }): string {
    return ["#cloud-config", "# rdmakit: the node group's SSH host key (components/provision/hostkeys.ts)", ...hostKeyCloudConfigLines(key), ""].join("\n");
}
