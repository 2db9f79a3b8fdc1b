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
 * of another stack).
 *
 * Who else can read the private key on the machine:
 * - AWS: the instance metadata service serves the user data (http://169.254.169.254/latest/user-data, and
 *   [fd00:ec2::254] where IPv6 IMDS is on) to every process that can open a socket, whatever its user; the hop limit
 *   of 1 (aws/cluster.ts) only stops bridged containers, not `--network host` ones, which is how NCCL containers
 *   usually run. So the user data also carries IMDS_ROOT_ONLY, which cloud-init runs at every boot (bootcmd runs each
 *   boot, in cloud-init.service, before sshd and docker start): a firewall rule on the output path that rejects
 *   connections to the IMDS addresses from any user but root (nft `meta skuid`, else iptables/ip6tables `-m owner
 *   --uid-owner`). source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html (the
 *   IPv4 and IPv6 endpoints; "limit access ... using local firewall rules", its iptables owner example);
 *   canonical/cloud-init doc/module-docs/cc_bootcmd (runs on every boot). What is left: a process running as uid 0 in
 *   the host's user namespace (a root container on the host network included) still reads it, as it could read
 *   /etc/ssh/ssh_host_ed25519_key; run NCCL containers as a non-root user or with a user namespace. Nothing the kit
 *   runs needs IMDS as another user: the roles reach no metadata endpoint, aws-ofi-nccl finds the platform from DMI
 *   (/sys/devices/virtual/dmi/id/product_name; aws/aws-ofi-nccl@2daf7d30:include/nccl_ofi_system.h), and the SSM
 *   Agent and cloud-init run as root. A user's own tool that reads the instance role as another user (AWS CLI, SDKs)
 *   is refused too: run it with sudo, or give it credentials of its own. So is EC2 Instance Connect, whose sshd
 *   AuthorizedKeysCommand runs as its own user and reads the pushed key from IMDS (the kit does not use it: the
 *   nodes take the stack's key; source: AWS EC2 User Guide, EC2 Instance Connect setup: `AuthorizedKeysCommand
 *   /opt/aws/bin/eic_run_authorized_keys %u %f`, `AuthorizedKeysCommandUser ec2-instance-connect`, the script "looks up
 *   the keys from the instance metadata"). Which of nft and iptables the DLAMI (Ubuntu 22.04) and
 *   AL2023 images carry is not confirmed here (unconfirmed); the script takes whichever exists, and an image with
 *   neither gets no rule and a line saying so in the cloud-init output log and on the serial console. Needs a real instance to see the rule work (marked in
 *   README); the tests run the script against recording stand-ins for nft and iptables (test/host-keys.test.ts).
 * - Azure: customData is not in IMDS ("deprecated and disabled in IMDS", MicrosoftDocs/azure-compute-docs:
 *   articles/virtual-machines/instance-metadata-service.md, compute schema); cloud-init copies the provisioning
 *   media's ovf-env.xml, which carries it, to /var/lib/waagent (directory 0700) as a 0600 file, root's
 *   (canonical/cloud-init@04eacd06:cloudinit/sources/DataSourceAzure.py write_files), and the media itself is ejected
 *   (same file, "azure removes/ejects the cdrom"). So root only, there.
 * - Both: whoever may read the launch template or the scale-set model in the cloud account.
 *
 * Azure's Linux agent: with cloud-init provisioning (Provisioning.Agent=auto and cloud-init enabled) it waits, up to
 * 1,800 s, for /etc/ssh/ssh_host_<Provisioning.SshHostKeyPairType>_key.pub and reports ProvisioningFailed when the
 * file never appears; the type defaults to rsa, also in Ubuntu's waagent.conf, which azhpc-images installs from the
 * agent's source (setup.py for ubuntu: config/ubuntu/waagent.conf). With the ed25519 key alone the agent would give up
 * on every VM. source: Azure/WALinuxAgent@a976115f:azurelinuxagent/pa/provision/cloudinit.py (wait_for_ssh_host_key),
 * azurelinuxagent/common/conf.py (get_ssh_key_public_path), config/ubuntu/waagent.conf; Azure/azhpc-images@8e9d055f:
 * components/install_waagent.sh. So the Azure customData sets the agent's key type to ed25519 (WAAGENT_ED25519, a
 * bootcmd): the agent's unit starts After=cloud-init.service (WALinuxAgent init/ubuntu/walinuxagent.service), so it
 * reads the setting after the edit and finds the key cc_ssh wrote in the same stage. Chosen over shipping an RSA pair
 * too: no second private key in customData and state, and the clients pin ed25519 only anyway. Needs a real VM to
 * see the agent report Ready; the tests read the customData and run the edit on Ubuntu's waagent.conf.
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

/** The IMDS addresses. source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/instancedata-data-retrieval.html */
export const IMDS_ADDRESSES = { ipv4: "169.254.169.254", ipv6: "fd00:ec2::254" } as const;

/**
 * Shell (sh) run at every boot: IMDS for root only, with nft where it exists, else iptables and ip6tables; each rule
 * is added once (a second run in the same boot finds it). It says on stderr what was done or that nothing could be,
 * which cloud-init copies to /var/log/cloud-init-output.log and the serial console. Exit status 0 always: a boot must not stop on it, and the missing rule is reported instead.
 */
export const IMDS_ROOT_ONLY = [
    `v4=${IMDS_ADDRESSES.ipv4}; v6=${IMDS_ADDRESSES.ipv6}`,
    "say() { echo \"rdmakit: $1\" >&2; }",
    "if command -v nft >/dev/null 2>&1; then",
    "  nft list table inet rdmakit_imds >/dev/null 2>&1 || nft -f - <<EOF",
    "table inet rdmakit_imds {",
    "  chain out {",
    "    type filter hook output priority 0; policy accept;",
    "    ip daddr $v4 meta skuid != 0 reject",
    "    ip6 daddr $v6 meta skuid != 0 reject",
    "  }",
    "}",
    "EOF",
    "  nft list table inet rdmakit_imds >/dev/null 2>&1 && say \"IMDS limited to root (nft table inet rdmakit_imds)\" || say \"could not limit IMDS to root: nft refused the table\"",
    "elif command -v iptables >/dev/null 2>&1; then",
    "  rule=\"-d $v4 -p tcp -m owner ! --uid-owner 0 -j REJECT --reject-with tcp-reset\"",
    "  iptables -C OUTPUT $rule 2>/dev/null || iptables -I OUTPUT 1 $rule",
    "  if command -v ip6tables >/dev/null 2>&1; then",
    "    rule6=\"-d $v6 -p tcp -m owner ! --uid-owner 0 -j REJECT --reject-with tcp-reset\"",
    "    ip6tables -C OUTPUT $rule6 2>/dev/null || ip6tables -I OUTPUT 1 $rule6",
    "  fi",
    "  iptables -C OUTPUT $rule 2>/dev/null && say \"IMDS limited to root (iptables OUTPUT owner rule)\" || say \"could not limit IMDS to root: iptables refused the rule\"",
    "else",
    "  say \"could not limit IMDS to root: neither nft nor iptables is installed; the user data (the node group's SSH host key) is readable by every local user\"",
    "fi",
    "true",
];

/**
 * Shell (sh) for Azure: the Linux agent waits for the ed25519 host key it was given instead of an rsa one (see the
 * header). Edits /etc/waagent.conf in place, or adds the line; nothing where the agent is not installed.
 */
export const WAAGENT_ED25519 = [
    "f=/etc/waagent.conf",
    "if [ -f \"$f\" ]; then",
    "  if grep -q '^Provisioning.SshHostKeyPairType=' \"$f\"; then sed -i 's/^Provisioning.SshHostKeyPairType=.*/Provisioning.SshHostKeyPairType=ed25519/' \"$f\"; else echo 'Provisioning.SshHostKeyPairType=ed25519' >> \"$f\"; fi",
    "fi",
];

/** The cloud a #cloud-config is for: what runs at boot beside the key. */
export type HostKeyCloud = "aws" | "azure";

/** `bootcmd:` with the cloud's boot scripts (IMDS_ROOT_ONLY on AWS, WAAGENT_ED25519 on Azure), as #cloud-config lines. Pure. */
export function bootcmdLines(cloud: HostKeyCloud): string[] {
    const script = cloud === "aws" ? IMDS_ROOT_ONLY : WAAGENT_ED25519;
    return ["bootcmd:", "  - |", ...script.map((l) => `    ${l}`)];
}

/** A whole #cloud-config document that installs the host key and what the cloud needs beside it (the nodes' user data). Pure. */
export function hostKeyCloudConfig(key: { privateKey: string; publicKey: string }, cloud: HostKeyCloud): string {
    return ["#cloud-config", "# rdmakit: the node group's SSH host key (components/provision/hostkeys.ts)", ...hostKeyCloudConfigLines(key), ...bootcmdLines(cloud), ""].join("\n");
}
