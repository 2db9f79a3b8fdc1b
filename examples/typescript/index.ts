import * as pulumi from "@pulumi/pulumi";
import * as aws from "@pulumi/aws";
import { RdmaCluster } from "rdmakit";

// A team's own program: its VPC and private subnet, and an rdmakit cluster of 2 × p5.48xlarge inside them.
// The subnet id reaches the cluster as an Output, like any id from another resource or stack.
const config = new pulumi.Config();
const region = "us-east-2";
const zone = "us-east-2b";

const vpc = new aws.ec2.Vpc("ml", { cidrBlock: "10.20.0.0/16", enableDnsHostnames: true, region });
const subnet = new aws.ec2.Subnet("ml-gpu", { vpcId: vpc.id, cidrBlock: "10.20.0.0/20", availabilityZone: zone, region });

// Without a key only the fabric is built; with one (pulumi config set --secret sshPrivateKey < key) the node
// software and nccl-tests run too.
const sshPrivateKey = config.getSecret("sshPrivateKey");

const cluster = new RdmaCluster("training", {
    spec: {
        name: "ml-p5",
        fabric: "aws-efa",
        nodes: 2,
        provision: sshPrivateKey !== undefined,
        ssh: {
            allowedCidrs: ["10.0.0.0/8"],
            publicKey: config.get("sshPublicKey") ?? "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u rdmakit-example",
        },
        aws: {
            region,
            availabilityZone: zone,
            instanceType: "p5.48xlarge",
            access: "ssm",
            network: { vpcId: vpc.id, subnets: [{ id: subnet.id, availabilityZone: zone }] },
        },
    },
    sshPrivateKey,
});

export const nodeIps = cluster.nodePrivateIps;
export const ncclEnv = cluster.ncclEnv;
export const gpusPerNode = cluster.plan.nodes.gpusPerNode;
// the cluster's operating state: `rdmakit status|check|ssh|repair --stack <stack>` read it from this stack output
export const rdmakitState = cluster.state;
