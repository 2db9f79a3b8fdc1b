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
