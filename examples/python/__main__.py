"""A Python program: an rdmakit RoCE cluster through the component package.

`pulumi package add <path or git URL of rdmakit>` in this folder generates the `pulumi_rdmakit` SDK from the
components' schema and records it in Pulumi.yaml; the component then runs in rdmakit's Node.js provider.
"""
import pulumi
import pulumi_rdmakit as rdmakit

config = pulumi.Config()
hosts = [
    rdmakit.RoceHostInputArgs(
        name=name,
        address=f"10.0.0.{11 + i}",
        rail_nics=[f"mlx5_{r}" for r in range(8)],
        bootstrap_nic="eno1",
        gpu=rdmakit.RoceGpuInputArgs(model="H100", count=8),
    )
    for i, name in enumerate(["gpu01", "gpu02"])
]

cluster = rdmakit.RdmaCluster(
    "lab",
    spec=rdmakit.ClusterSpecInputArgs(
        name="lab",
        fabric=rdmakit.Fabric.ROCE,
        ssh=rdmakit.SshSpecInputArgs(user="ubuntu", allowed_cidrs=["10.0.0.0/8"]),
        provision=config.get_bool("provision") or False,
        roce=rdmakit.RoceSpecInputArgs(
            nic_model=rdmakit.RoceNicModel.CONNECT_X7,
            hosts=hosts,
            switches=[
                rdmakit.RoceSwitchInputArgs(
                    name="leaf1",
                    os=rdmakit.NetworkOs.SONIC,
                    management_address="10.0.1.1",
                    # `ssh-keyscan -t ed25519 10.0.1.1` prints the switch's key; every push verifies it (placeholder: replace)
                    host_key="ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBsYWNlaG9sZGVyLWxlYWYxLXJlcGxhY2UtLS0tLS0t leaf1",
                    host_ports=[f"Ethernet{i * 8}" for i in range(16)],
                    speed_gbps=400,
                    cable_length_m=3,
                )
            ],
        ),
    ),
    ssh_private_key=config.get_secret("sshPrivateKey"),
)

pulumi.export("ncclEnv", cluster.nccl_env)
pulumi.export("nodes", cluster.node_private_ips)
# the cluster's operating state (JSON text): `rdmakit status|check|ssh|repair --stack <stack>` read it from here
pulumi.export("rdmakitState", cluster.operating_state)
