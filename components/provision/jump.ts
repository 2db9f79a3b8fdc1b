import { bootcmdLines, HostKeyCloud, hostKeyCloudConfigLines } from "./hostkeys";

/**
 * The bastion / jump host's sshd, tuned for the kit's Ansible runs. Every node's connection goes through it: the
 * inventory's ProxyCommand shares one master connection (inventory.ts), but the first wave of a run starts up to
 * `forks` hops at once before that master exists, and stock sshd drops unauthenticated connections beyond 10 at a
 * time (MaxStartups 10:30:100: from 10 pending, refuse 30 %, rising to all at 100). source: OpenSSH sshd_config(5)
 * MaxStartups. The limit here lets a full wave of the default cap on forks (plan/provision.ts, cluster.ansible.maxForks
 * 100) through; the security group / NSG still admits only cluster.ssh.allowedCidrs. Ubuntu's sshd_config reads
 * /etc/ssh/sshd_config.d/*.conf (Include, Ubuntu 20.04 and later); cloud-init writes the file before sshd starts
 * (write_files, init stage) and the reload covers a boot where sshd was up first.
 */

/** The drop-in's settings. */
export const JUMP_HOST_SSHD_SETTINGS = "MaxStartups 100:30:1000\n";

/**
 * cloud-init user data (#cloud-config) that installs the settings on the jump host and, when given, the stack's host
 * key for it as its only SSH host key (hostkeys.ts), so the first contact is checked against the pinned key, with
 * the cloud's boot script beside it (hostkeys.ts bootcmdLines: IMDS for root only on AWS, the agent's key type on
 * Azure). Pure.
 */
export function jumpHostCloudConfig(hostKey: { privateKey: string; publicKey: string } | undefined, cloud: HostKeyCloud): string {
    return [
        "#cloud-config",
        "# rdmakit: sshd of the jump host, tuned for the Ansible runs (components/provision/jump.ts)",
        "write_files:",
        "  - path: /etc/ssh/sshd_config.d/60-rdmakit-jump.conf",
        "    owner: root:root",
        "    permissions: '0644'",
        "    content: |",
        ...JUMP_HOST_SSHD_SETTINGS.trimEnd().split("\n").map((l) => `      ${l}`),
        ...(hostKey ? hostKeyCloudConfigLines(hostKey) : []),
        ...bootcmdLines(cloud),
        "runcmd:",
        "  - [systemctl, try-reload-or-restart, ssh.service]",
        "",
    ].join("\n");
}
