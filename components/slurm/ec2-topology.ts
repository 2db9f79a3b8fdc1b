/**
 * `aws ec2 describe-instance-topology` output, parsed as untrusted input: bounded, every id checked against its
 * grammar before it reaches topology.conf.
 *
 * Shape (botocore data/ec2/2016-11-15/service-2.json, DescribeInstanceTopologyResult: `Instances` (list of
 * InstanceTopology: InstanceId, InstanceType, GroupName, NetworkNodes (list of String), AvailabilityZone, ZoneId,
 * CapacityBlockId) and `NextToken`). NetworkNodes run from the top layer to the one the instance attaches to (3 layers
 * for p4d/p5, 4 for p6-b200/b300). Only running instances are listed, and the data is eventually consistent after a
 * launch (docs.aws.amazon.com/AWSEC2/latest/UserGuide/how-ec2-instance-topology-works.html; scheduler.md §4).
 */
import type { Ec2Topology } from "./render";

/** Instance ids: i- and 8 or 17 hex digits (docs.aws.amazon.com/AWSEC2/latest/UserGuide/resource-ids.html). */
const INSTANCE_ID = /^i-[0-9a-f]{8}([0-9a-f]{9})?$/;
/** Network node ids as the API hashes them (`nn-1111111111example` in AWS's docs): kept to a safe switch-name grammar. */
const NETWORK_NODE = /^nn-[0-9A-Za-z]{1,64}$/;
/** Bounds: far more than one cluster's nodes (the kit's largest stacks are 2,048), and AWS's 4 layers with room. */
const MAX_INSTANCES = 100_000;
const MAX_LAYERS = 8;

export class Ec2TopologyError extends Error {}

/** Instances of one response (or a list of pages: the CLI's `--output json` merges them, scripts may not). */
export function parseEc2TopologyResponse(raw: unknown): Ec2Topology["instances"] {
    const pages = Array.isArray(raw) ? raw : [raw];
    const out: Ec2Topology["instances"] = [];
    pages.forEach((page, p) => {
        const instances = (page as { Instances?: unknown })?.Instances;
        if (!Array.isArray(instances)) throw new Ec2TopologyError(`page ${p}: no "Instances" list (expected the output of aws ec2 describe-instance-topology)`);
        instances.forEach((inst: unknown, i: number) => {
            const r = inst as { InstanceId?: unknown; NetworkNodes?: unknown };
            const where = `Instances[${i}]`;
            if (typeof r?.InstanceId !== "string" || !INSTANCE_ID.test(r.InstanceId)) {
                throw new Ec2TopologyError(`${where}.InstanceId: not an instance id (i- and 8 or 17 hex digits)`);
            }
            const nn = r.NetworkNodes;
            if (!Array.isArray(nn) || nn.length > MAX_LAYERS || !nn.every((n) => typeof n === "string" && NETWORK_NODE.test(n))) {
                throw new Ec2TopologyError(`${where}.NetworkNodes: must be a list of at most ${MAX_LAYERS} network node ids (nn-...)`);
            }
            out.push({ instanceId: r.InstanceId, networkNodes: nn as string[] });
            if (out.length > MAX_INSTANCES) throw new Ec2TopologyError(`more than ${MAX_INSTANCES} instances`);
        });
    });
    return out;
}

/** Node name -> instance id, e.g. from the stack's outputs; ids checked as above. */
export function parseInstanceIds(raw: unknown): Record<string, string> {
    if (raw === null || typeof raw !== "object" || Array.isArray(raw)) throw new Ec2TopologyError("instance ids: expected an object of node name -> instance id");
    const out: Record<string, string> = {};
    for (const [name, id] of Object.entries(raw)) {
        if (!/^[a-z0-9][a-z0-9-]{0,62}$/.test(name)) throw new Ec2TopologyError(`instance ids: ${JSON.stringify(name.slice(0, 64))} is not a node name`);
        if (typeof id !== "string" || !INSTANCE_ID.test(id)) throw new Ec2TopologyError(`instance ids: ${name}: not an instance id (i- and 8 or 17 hex digits)`);
        out[name] = id;
    }
    return out;
}

/**
 * Instance types DescribeInstanceTopology answers for among the kit's GPU types: 3 network-node layers for p4d, p4de,
 * p5, p5e, p5en and p6e-gb200, 4 for p6-b200 and p6-b300. Other types are not listed at all, so none is asked for.
 * source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/ec2-instance-topology-prerequisites.html (scheduler.md §4)
 */
export const TOPOLOGY_INSTANCE_TYPES: readonly string[] = [
    "p4d.24xlarge", "p4de.24xlarge", "p5.48xlarge", "p5e.48xlarge", "p5en.48xlarge", "p6e-gb200.36xlarge", "p6-b200.48xlarge", "p6-b300.48xlarge",
];

/**
 * How long `pulumi up` waits for every node to show in the instance topology: the API is eventually consistent right
 * after a launch (AWS names no bound), so the read polls until every node is listed with its network nodes or this
 * passes, then goes on with what it has (ec2Tree puts the rest under ec2-unplaced and warns).
 */
export const TOPOLOGY_WAIT_SECONDS = 120;
export const TOPOLOGY_POLL_SECONDS = 10;
/** Instance ids per call: DescribeInstanceTopology takes at most 100 explicit ids (API reference, InstanceId.N). */
export const TOPOLOGY_IDS_PER_CALL = 100;

/**
 * The read at `pulumi up`, run as `node -e` by a local command after the capacity wait (the same seam: the AWS CLI
 * where pulumi up runs, the stack's profile; aws/lifecycle.ts CAPACITY_WAIT_SCRIPT). Environment: RDMAKIT_INSTANCE_IDS
 * (comma-separated), RDMAKIT_REGION, RDMAKIT_WAIT_SECONDS, RDMAKIT_POLL_SECONDS. Prints one line: the merged response
 * `{"Instances":[...]}`, or `{"error":"..."}` when the CLI cannot answer (no CLI, no ec2:DescribeInstanceTopology
 * permission): the topology is advice to the scheduler, so the read never fails the deployment.
 */
export const EC2_TOPOLOGY_SCRIPT = String.raw`
const { execFileSync } = require("child_process");
const env = process.env;
const ids = String(env.RDMAKIT_INSTANCE_IDS || "").split(",").filter(Boolean);
const deadline = Date.now() + Number(env.RDMAKIT_WAIT_SECONDS) * 1000;
const pause = Number(env.RDMAKIT_POLL_SECONDS) * 1000;
const per = ${TOPOLOGY_IDS_PER_CALL};
function read(chunk) {
  const args = ["ec2", "describe-instance-topology", "--instance-ids", ...chunk, "--region", env.RDMAKIT_REGION, "--output", "json"];
  return JSON.parse(execFileSync("aws", args, { encoding: "utf8", stdio: ["ignore", "pipe", "pipe"], timeout: 120000, maxBuffer: 64 * 1024 * 1024 }));
}
for (;;) {
  const instances = [];
  try {
    for (let i = 0; i < ids.length; i += per) instances.push(...((read(ids.slice(i, i + per)) || {}).Instances || []));
  } catch (e) {
    const why = e && e.code === "ENOENT" ? "the AWS CLI (aws) is not installed where pulumi up runs"
      : String((e && (e.stderr || e.message)) || e).trim().split("\n").pop();
    console.log(JSON.stringify({ error: String(why).slice(0, 500) }));
    process.exit(0);
  }
  const placed = new Set(instances.filter((x) => x && Array.isArray(x.NetworkNodes) && x.NetworkNodes.length > 0).map((x) => x.InstanceId));
  if (ids.every((id) => placed.has(id)) || Date.now() >= deadline) {
    console.log(JSON.stringify({ Instances: instances }));
    process.exit(0);
  }
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.min(pause, Math.max(0, deadline - Date.now())));
}
`;

/**
 * The read's output as the topology for topology.conf, pure: parsed as untrusted input (parseEc2TopologyResponse),
 * paired with the nodes' ids (Slurm node name -> instance id). A failed read or a bad answer gives no topology and a
 * warning naming why and the permission; topology.conf then keeps every node under one switch.
 */
export function ec2TopologyFromRead(stdout: string | undefined, ids: Record<string, string>): { topology?: Ec2Topology; warning?: string } {
    const fallback = "topology.conf puts every node under one switch";
    let raw: unknown;
    try {
        raw = JSON.parse((stdout ?? "").trim() || "null");
    } catch {
        return { warning: `the EC2 instance topology read printed no JSON; ${fallback}` };
    }
    const err = (raw as { error?: unknown } | null)?.error;
    if (raw === null || typeof err === "string") {
        const why = typeof err === "string" ? err.replace(/[^\x20-\x7e]/g, "?").slice(0, 300) : "no answer";
        return { warning: `the EC2 instance topology could not be read (${why}); ${fallback}. The credentials pulumi up runs with need ec2:DescribeInstanceTopology` };
    }
    try {
        return { topology: { instances: parseEc2TopologyResponse(raw), ids: parseInstanceIds(ids) } };
    } catch (e) {
        return { warning: `the EC2 instance topology answer was refused (${(e as Error).message}); ${fallback}` };
    }
}
