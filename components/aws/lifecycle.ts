import { sha256, stableJson } from "../provision/ansible";
import { sortIpv4 } from "./network";

/*
 * The node group after it exists: waiting for its capacity, what a launch-template change does to running nodes,
 * and which instances are the nodes (their identity for the inventory). Pure values and static script text; the
 * component (./cluster.ts) maps them to resources.
 */

/**
 * How long `pulumi up` waits for every node of the group to be InService and healthy. 32-interface P5/P6 instances
 * are often slower than the provider's default 10 minutes to launch, and a group still short of capacity after half
 * an hour is better reported, with AWS's reason, than waited on.
 */
export const GROUP_CAPACITY_WAIT_SECONDS = 30 * 60;
/** Between two looks at the group while it fills. */
export const GROUP_CAPACITY_POLL_SECONDS = 15;

/**
 * Why the kit waits for capacity itself instead of the provider's `waitForCapacityTimeout`. The provider's wait
 * (terraform-provider-aws internal/service/autoscaling/group.go, statusGroupCapacity/waitGroupCapacitySatisfied)
 * either fails on the first failed scaling activity (ignoreFailedScalingActivities false: one transient
 * InsufficientInstanceCapacity in a placement group fails `pulumi up` while the group keeps retrying), or, with it
 * true, reads no activity at all and times out with only "last state: ... healthy instances" — never AWS's reason.
 * And a group whose create failed is never followed by anything in the program, so a check after it could not speak.
 * So the group is created without the provider's wait (`waitForCapacityTimeout: "0"`, its documented "skip all
 * capacity waiting") and this script waits: it polls DescribeAutoScalingGroups until `RDMAKIT_DESIRED` instances are
 * InService and Healthy, keeps waiting through failed activities (the group retries them), and when
 * `RDMAKIT_WAIT_SECONDS` pass it fails with the newest failed (else newest) scaling activity's status and message.
 * source: https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_DescribeScalingActivities.html (newest first,
 *   StatusCode/StatusMessage), https://docs.aws.amazon.com/autoscaling/ec2/APIReference/API_Instance.html
 *   (LifecycleState InService, HealthStatus Healthy), AWS CLI v2 `aws autoscaling describe-auto-scaling-groups` /
 *   `describe-scaling-activities` (--output json prints the API's response shape).
 * It needs the AWS CLI where `pulumi up` runs (as `access: ssm` does), with the credentials the provider uses; the
 * component passes the region and the stack's `aws:profile`. Run as `node -e` (node is what runs the program).
 * It prints one line on success: `{"inService":[<instance ids>]}`.
 */
export const CAPACITY_WAIT_SCRIPT = String.raw`
const { execFileSync } = require("child_process");
const env = process.env;
const group = env.RDMAKIT_GROUP, want = Number(env.RDMAKIT_DESIRED);
const deadline = Date.now() + Number(env.RDMAKIT_WAIT_SECONDS) * 1000;
const pause = Number(env.RDMAKIT_POLL_SECONDS) * 1000;
function aws(args) {
  const all = [...args, "--region", env.RDMAKIT_REGION, "--output", "json"];
  try {
    return JSON.parse(execFileSync("aws", all, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] }));
  } catch (e) {
    if (e && e.code === "ENOENT") {
      console.error("rdmakit: waiting for the node group " + group + " needs the AWS CLI (aws) where pulumi up runs: install it (https://docs.aws.amazon.com/cli/latest/userguide/getting-started-install.html) with the credentials the AWS provider uses");
      process.exit(127);
    }
    console.error("rdmakit: aws " + args.slice(0, 2).join(" ") + " failed: " + String((e && (e.stderr || e.message)) || e).trim());
    process.exit(1);
  }
}
for (;;) {
  const g = (aws(["autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", group]).AutoScalingGroups || [])[0];
  if (!g) { console.error("rdmakit: the node group " + group + " does not exist according to EC2 Auto Scaling"); process.exit(1); }
  const ready = (g.Instances || []).filter((i) => i.LifecycleState === "InService" && i.HealthStatus === "Healthy");
  if (ready.length >= want) {
    console.log(JSON.stringify({ inService: ready.map((i) => i.InstanceId).sort() }));
    process.exit(0);
  }
  if (Date.now() >= deadline) {
    const acts = aws(["autoscaling", "describe-scaling-activities", "--auto-scaling-group-name", group, "--max-items", "20"]).Activities || [];
    const last = acts.find((a) => a.StatusCode === "Failed" || a.StatusCode === "Cancelled") || acts[0];
    const why = last
      ? "the last scaling activity (" + last.StatusCode + (last.StartTime ? ", " + last.StartTime : "") + "): " + (last.StatusMessage || last.Description || "(no message)")
      : "the group reports no scaling activity";
    console.error("rdmakit: node group " + group + " has " + ready.length + " of " + want + " nodes InService after " + Math.round(Number(env.RDMAKIT_WAIT_SECONDS) / 60) + " minutes; " + why);
    console.error("rdmakit: the group keeps trying; fix the cause (capacity in the zone, a quota, the reservation) and run pulumi up again, or lower cluster.nodes");
    process.exit(1);
  }
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(pause, Math.max(0, deadline - Date.now())));
}
`;

/**
 * What a change to the nodes' definition does to a running cluster: the group is REPLACED, old group first. Chosen
 * over the group's own `instanceRefresh` because the provider starts a refresh and does not wait for it
 * (@pulumi/aws types/input.d.ts GroupInstanceRefresh: "This resource does not wait for the instance refresh to
 * complete"), so the same `pulumi up` would run Ansible and nccl-tests on nodes that are being terminated, and the
 * new ones would join after it returned, unprovisioned. A replacement is one step the engine waits for and orders:
 * `pulumi preview` shows the group as replaced (the operator sees every node go), the old group is deleted before
 * the new one launches (deleteBeforeReplace: a Capacity Block or ODCR sized to the cluster has no room for both; the
 * provider's delete waits for the instances to drain), then the capacity wait, the inventory (new instance ids) and
 * so the software and validation steps follow in that order.
 * What counts as the nodes' definition is `nodeShape`: image, type, interface layout, root volume, placement,
 * instance profile and the host key their user data installs. Its digest is in the group's name prefix (an Auto Scaling group cannot be renamed, so the
 * provider replaces it). Not the launch template's version: a rotated SSH key makes a new key pair and so a new
 * version, and must not cost the cluster its nodes (the group moves to the new version in place, for the nodes it
 * launches later). The node count changes in place too. A newer default DLAMI does not change the template
 * (ignoreChanges imageId); pin `cluster.aws.ami` to move on.
 */
export const GROUP_REPLACEMENT = { deleteBeforeReplace: true } as const;

/** What the nodes are, for the group's name: a change here replaces every node. */
export interface NodeShape {
    /** the image the launch template holds (not the newest lookup, which the template ignores) */
    imageId: string;
    instanceType: string;
    interfaces: ReadonlyArray<{ networkCardIndex: number; deviceIndex: number; interfaceType: string }>;
    rootVolumeGiB: number;
    placement: unknown;
    instanceProfile: boolean;
    /**
     * The SSH host key the nodes' user data installs (public line). cloud-init writes it at an instance's first boot
     * only, so nodes that run with another one (launched before the key, or before a new one) would fail the pin:
     * a new key means new nodes. @default none (a shape from before the kit pinned host keys)
     */
    hostKey?: string;
}

/** `<cluster>-nodes-<8 hex of the shape's digest>-`: the group's name prefix. Pure. */
export function groupNamePrefix(cluster: string, shape: NodeShape): string {
    return `${cluster}-nodes-${sha256(stableJson(shape)).slice(0, 8)}-`;
}

/** One GPU node as EC2 has it. */
export interface AwsNode {
    instanceId: string;
    privateIp: string;
}

/**
 * The group's running instances from `aws.ec2.getInstances` (whose `ids` and `privateIps` are built in one loop
 * over the same instances, terraform-provider-aws internal/service/ec2/ec2_instances_data_source.go), paired and
 * sorted by address. Throws when the two lists cannot be paired (an instance without a private IP), or, given
 * `expect`, when the count is not the cluster's.
 */
export function pairNodes(ids: readonly string[], privateIps: readonly string[], expect?: { nodes: number; group: string }): AwsNode[] {
    if (ids.length !== privateIps.length) {
        throw new Error(`rdmakit: EC2 lists ${ids.length} running node instances but ${privateIps.length} private IPs; ` +
            "an instance without an address cannot be provisioned; check the group's instances, then run pulumi up again");
    }
    // A later pulumi up does not run the capacity wait again (nothing it waits on changed), so the group may be
    // between a terminated node and its replacement: Ansible and the validation would then run on fewer nodes, and
    // a graded run on N-1 nodes would pass for the wrong reason.
    if (expect && ids.length > expect.nodes) {
        // the nodes are protected from scale-in (cluster.ts): the group keeps them until the chosen ones lose it
        throw new Error(`rdmakit: EC2 lists ${ids.length} running instances in node group ${expect.group}, more than cluster.nodes (${expect.nodes}); ` +
            "its nodes are protected from scale-in, so the group terminates only the nodes whose protection is taken off. " +
            `Choose and drain the ${ids.length - expect.nodes} node(s) to go, then: aws autoscaling set-instance-protection --no-protected-from-scale-in ` +
            `--auto-scaling-group-name ${expect.group} --instance-ids <their ids> (docs/day2.md, Scale changes), and run pulumi up again once they are gone`);
    }
    if (expect && ids.length !== expect.nodes) {
        throw new Error(`rdmakit: EC2 lists ${ids.length} running instance${ids.length === 1 ? "" : "s"} in node group ${expect.group}, expected ${expect.nodes} (cluster.nodes); ` +
            "the group is replacing a node or is short of capacity (its activity history says which: aws autoscaling describe-scaling-activities); " +
            "run pulumi up again once every node is InService");
    }
    const byIp = new Map(privateIps.map((ip, i) => [ip, ids[i]]));
    return sortIpv4(privateIps).map((ip) => ({ instanceId: byIp.get(ip)!, privateIp: ip }));
}
