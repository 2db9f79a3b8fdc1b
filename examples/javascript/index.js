"use strict";
const pulumi = require("@pulumi/pulumi");
const { RdmaCluster } = require("rdmakit");

// A JavaScript program: a bare-metal RoCE cluster from the team's own host list. The spec is the same object the
// stack config key rdmakit:cluster holds; bad input is refused with the field before anything is created.
const config = new pulumi.Config();
const hosts = ["gpu01", "gpu02"].map((name, i) => ({
    name,
    address: `10.0.0.${11 + i}`,
    railNics: ["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_4", "mlx5_5", "mlx5_6", "mlx5_7"],
    bootstrapNic: "eno1",
    gpu: { model: "H100", count: 8 },
}));

const cluster = new RdmaCluster("lab", {
    spec: {
        name: "lab",
        fabric: "roce",
        ssh: { user: "ubuntu", allowedCidrs: ["10.0.0.0/8"] },
        provision: config.getBoolean("provision") ?? false,
        roce: {
            nicModel: "ConnectX-7",
            hosts,
            switches: [{
                name: "leaf1", os: "sonic", managementAddress: "10.0.1.1",
                // `ssh-keyscan -t ed25519 10.0.1.1` prints the switch's key; every push verifies it (placeholder: replace)
                hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBsYWNlaG9sZGVyLWxlYWYxLXJlcGxhY2UtLS0tLS0t leaf1",
                hostPorts: Array.from({ length: 16 }, (_, i) => `Ethernet${i * 8}`), speedGbps: 400, cableLengthM: 3,
            }],
        },
    },
    sshPrivateKey: config.getSecret("sshPrivateKey"),
});

exports.ncclEnv = cluster.ncclEnv;
exports.nodes = cluster.nodePrivateIps;
// the cluster's operating state: `rdmakit status|check|ssh|repair --stack <stack>` read it from this stack output
exports.rdmakitState = cluster.state;
