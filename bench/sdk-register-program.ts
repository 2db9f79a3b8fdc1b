// The program bench/sdk-register.ts runs offline: RDMAKIT_BENCH_COMMANDS command:local:Command resources under one
// component, each with inputs shaped like a switch push's (components/roce/push.ts): a ~1.6 KB `create`, a `delete`,
// the interpreter, and each depending on the one before it, as rollout stages do.
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";

const n = Number(process.env.RDMAKIT_BENCH_COMMANDS ?? "8");
const ports = Array.from({ length: 96 }, (_, i) => `swp${i + 1}`).join(" ");

class Pushes extends pulumi.ComponentResource {
    constructor(name: string) {
        super("rdmakit:bench:Pushes", name, {}, {});
        // rollout stages: each push after the stage before it, here one resource (the first of the previous batch of 64)
        let after: pulumi.Resource[] = [];
        let first: pulumi.Resource | undefined;
        for (let i = 0; i < n; i++) {
            const sw = `leaf-${i}`;
            const create = [`exec bash components/scripts/roce/push.sh --os nvue --switch '${sw}' --address '10.100.${i >> 8}.${i & 255}'`,
                `--config 'out/bench/inputs/switch-${sw}.nvue.yaml' --config-sha256 ${"0".repeat(64)} --scripts-sha256 ${"1".repeat(64)}`,
                `--plan 'mtu 9216, default cable 5 m' --ports '${ports}' --ports '${ports}'`].join(" \\\n    ");
            const c = new command.local.Command(`${name}-${sw}-qos`, {
                create, delete: `echo leaving ${sw}`, interpreter: ["/bin/bash", "-c"], addPreviousOutputInEnv: false,
            }, { parent: this, dependsOn: after });
            if (i % 64 === 0) {
                after = first ? [first] : [];
                first = c;
            }
        }
        this.registerOutputs({});
    }
}

new Pushes("bench");
