/**
 * The cluster's munge key: 1,024 random bytes (the size of the MUNGE Installation Guide's
 * `dd if=/dev/urandom bs=1 count=1024` key, github.com/dun/munge/wiki/Installation-Guide), made once per cluster by a
 * local command whose output is a Pulumi secret (encrypted in the stack state, never logged: logging none). It reaches the hosts only through the software step's environment and each node's own session
 * (provision/fanout.ts, node-scripts.ts MUNGE_KEY_STAGE); never plan.json, the bundle, the inventory or a file here.
 * Rotation: replace this resource (`pulumi up --replace <its URN>`); the next software run installs the new key on
 * every host and restarts munge (playbooks/roles/slurm/tasks/munge.yml).
 */
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";

/** The command that prints the key (base64 of 1,024 bytes of /dev/urandom, one line, nothing written to disk). */
export const MUNGE_KEY_COMMAND = "head -c 1024 /dev/urandom | base64 -w0";

export function mungeKey(name: string, parent: pulumi.Resource): pulumi.Output<string> {
    const key = new command.local.Command(name, { create: MUNGE_KEY_COMMAND, logging: "none" }, { parent, additionalSecretOutputs: ["stdout"] });
    return pulumi.secret(key.stdout);
}
