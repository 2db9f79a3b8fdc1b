/**
 * The `cluster.scheduler` block of the cluster spec: whether Slurm runs on the validated nodes, its
 * controller, partition and /home export. Schema (zod 4, strict objects), the fabric-dependent defaults and the
 * cross-field checks. Every refusal names the field, the value and what is allowed.
 */
import { z } from "zod";
import { EC2_INSTANCE_TYPE, AZURE_VM_SIZE, named } from "../grammars";
import type { SpecIssue } from "../errors";
import type { SchedulerType } from "../types";

// A DNS name (RFC 1123 labels) or a dotted IPv4 address, as for roce.hosts[].address (components/roce/spec.ts).
const IPV4 = /^(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)(\.(25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)){3}$/;
const HOSTNAME = /^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$/;

/**
 * Slurm partition names: slurm.conf has no grammar beyond "a name"; the kit keeps to letters, digits, '_' and '-'
 * (at most 32) so the name is safe in slurm.conf, in `sbatch -p` and in a shell line without quoting.
 */
export const PARTITION_NAME = /^[A-Za-z][A-Za-z0-9_-]{0,31}$/;

/**
 * Head-node sizes when the spec gives none. m7i.2xlarge: 8 vCPU, 32 GiB; slurmctld for a few thousand nodes and
 * an NFS /home fit (SchedMD's high-throughput guide asks for fast cores and memory, not many). Standard_D8s_v5:
 * the Azure size of the same shape (8 vCPU, 32 GiB).
 * source: https://docs.aws.amazon.com/ec2/latest/instancetypes/gp.html (m7i.2xlarge 8 vCPU, 32 GiB);
 * https://learn.microsoft.com/azure/virtual-machines/sizes/general-purpose/dsv5-series (Standard_D8s_v5 8 vCPU, 32 GiB)
 */
export const DEFAULT_HEAD_INSTANCE_TYPE = "m7i.2xlarge";
export const DEFAULT_HEAD_VM_SIZE = "Standard_D8s_v5";
export const DEFAULT_PARTITION = "gpu";

/**
 * One GPU node's figures as `slurmd -C` prints them (`CPUs= Boards= SocketsPerBoard= CoresPerSocket= ThreadsPerCore=
 * RealMemory=`, slurmd(8) -C). slurm.conf(5): a NodeName line without them means CPUs=1 (Sockets, CoresPerSocket,
 * ThreadsPerCore default to 1 and CPUs to their product) and RealMemory=1 MiB, and slurmctld schedules a node by its
 * line, never by what its slurmd reports (src/slurmctld/node_mgr.c validate_node_specs only compares the report with
 * the line, slurm-22-05-8-1), so a node of unknown size takes one task and 1 MiB. `sockets` is Boards x
 * SocketsPerBoard; `realMemory` MiB as printed (the kit writes 95 % of it, plan/scheduler.ts REAL_MEMORY_MARGIN).
 */
const count = (max: number) => z.int().min(1).max(max);
export const slurmNodeSchema = z.strictObject({
    cpus: count(65535).describe("CPUs= of `slurmd -C`: logical CPUs, sockets x cores per socket x threads per core"),
    sockets: count(1024).describe("SocketsPerBoard= (times Boards= when more than 1)"),
    coresPerSocket: count(1024).describe("CoresPerSocket="),
    threadsPerCore: count(16).describe("ThreadsPerCore="),
    realMemory: count(2 ** 40).describe("RealMemory= in MiB (the node's MemTotal); the kit writes 95 % of it so hosts of the same model with a few MiB less still register"),
});

/** @internal */
export const schedulerSchema = z.strictObject({
    type: z.enum(["none", "slurm"]).optional()
        .describe("slurm or none; default: slurm on aws-efa and azure-ib, on roce slurm when a controller is named, else none"),
    controller: z.strictObject({
        name: z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, "must be lower-case letters, digits and '-', 1-63 characters (a Slurm and inventory host name)").optional()
            .describe("inventory and Slurm name of the controller; bare metal: required (a host of its own, not one of roce.hosts); cloud: default <cluster>-head"),
        address: z.string().regex(new RegExp(`${IPV4.source}|${HOSTNAME.source}`), "must be a DNS name or an IPv4 address (e.g. 10.20.0.5 or head01.lab)").optional()
            .describe("bare metal: the address SSH and the nodes reach the controller at (required)"),
        sshUser: z.string().regex(/^[a-z_][a-z0-9_-]{0,31}$/, "must be a Linux user name (lower case, digits, _ and -)").optional()
            .describe("bare metal: SSH login on the controller; default: the GPU hosts' login user"),
        hostKey: z.string().regex(/^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/=]+( .*)?$/, "must be an OpenSSH public host key line (ssh-keyscan -t ed25519 <controller>)").optional()
            .describe("bare metal: the controller's SSH host key line (required): the kit never trusts it on first contact"),
        instanceType: named(EC2_INSTANCE_TYPE, "must be an EC2 instance type such as m7i.2xlarge").optional()
            .describe(`aws-efa: the head node's instance type; default ${DEFAULT_HEAD_INSTANCE_TYPE}`),
        vmSize: named(AZURE_VM_SIZE, "must be an Azure VM size such as Standard_D8s_v5").optional()
            .describe(`azure-ib: the head node's VM size; default ${DEFAULT_HEAD_VM_SIZE}`),
    }).optional().describe("the host that runs slurmctld: bare metal a named existing host, cloud a head node the kit creates"),
    partition: z.string().regex(PARTITION_NAME, "must be a Slurm partition name: a letter, then letters, digits, '_' or '-', at most 32").optional()
        .describe(`the Slurm partition the GPU nodes form; default ${DEFAULT_PARTITION}`),
    homeNfs: z.boolean().optional()
        .describe("export /home from the controller over NFS to every node; default true on aws-efa and azure-ib, false on roce (sites have their own shared filesystem)"),
    node: slurmNodeSchema.optional()
        .describe("one GPU node's CPUs and memory as `slurmd -C` prints them on it; required on bare metal and for a cloud size the kit has no figures for (Slurm takes a NodeName line without them as 1 CPU and 1 MiB)"),
}).describe("the job scheduler on the validated nodes");

type SchedulerRaw = z.infer<typeof schedulerSchema>;

/** The scheduler block after the fabric's defaults. */
export interface SchedulerSpecResolved {
    type: SchedulerType;
    controller?: NonNullable<SchedulerRaw["controller"]>;
    partition: string;
    homeNfs: boolean;
    node?: NonNullable<SchedulerRaw["node"]>;
}

type Fabric = "aws-efa" | "azure-ib" | "roce";

/** The defaults: Slurm where the kit owns the nodes (clouds), on bare metal only with a named controller. */
export function resolveScheduler(fabric: Fabric, raw: SchedulerRaw | undefined): SchedulerSpecResolved {
    const cloud = fabric !== "roce";
    const type = raw?.type ?? (cloud || raw?.controller !== undefined ? "slurm" : "none");
    return {
        type,
        ...(raw?.controller ? { controller: raw.controller } : {}),
        partition: raw?.partition ?? DEFAULT_PARTITION,
        // off without Slurm: a resolved spec parses again to the same (the fabric components parse what RdmaCluster gives them)
        homeNfs: raw?.homeNfs ?? (cloud && type === "slurm"),
        ...(raw?.node ? { node: raw.node } : {}),
    };
}

/**
 * Checks that need the fabric and the hosts: what each fabric requires or refuses of the controller, and the node
 * figures. `catalogued`: the node type's CPUs and memory are in the kit's catalog (components/catalog), false on bare
 * metal, undefined when the type itself is unknown (refused elsewhere).
 */
export function schedulerIssues(fabric: Fabric, raw: SchedulerRaw | undefined, hosts: { name: string; address: string }[], catalogued?: boolean): SchedulerIssue[] {
    const issues: SchedulerIssue[] = [];
    const p = "cluster.scheduler";
    const type = resolveScheduler(fabric, raw).type;
    if (type === "slurm") issues.push(...nodeFigureIssues(raw?.node, catalogued));
    if (!raw) return issues;
    const c = raw.controller;
    if (type === "none") {
        if (raw.node) issues.push({ path: `${p}.node`, value: "{…}", message: "is set but scheduler.type is none", allowed: "type: slurm, or leave node out" });
        if (c) issues.push({ path: `${p}.controller`, value: "{…}", message: "is set but scheduler.type is none", allowed: "type: slurm, or leave controller out" });
        if (raw.homeNfs === true) issues.push({ path: `${p}.homeNfs`, value: true, message: "needs a scheduler head node to export /home from, and scheduler.type is none", allowed: "type: slurm, or false" });
        return issues;
    }
    if (fabric === "roce") {
        if (!c) {
            issues.push({ path: `${p}.controller`, message: "is required for Slurm on bare metal: the kit creates no host there, so name the one that runs slurmctld", allowed: "{ name, address, hostKey, sshUser? } of an existing host (may be a non-GPU host)" });
        } else {
            for (const k of ["name", "address", "hostKey"] as const) {
                if (c[k] === undefined) issues.push({ path: `${p}.controller.${k}`, message: "is required for Slurm on bare metal", allowed: k === "hostKey" ? "the line `ssh-keyscan -t ed25519 <controller>` prints" : k === "name" ? "a host name (lower case, digits, '-')" : "a DNS name or IPv4 address" });
            }
            for (const k of ["instanceType", "vmSize"] as const) {
                if (c[k] !== undefined) issues.push({ path: `${p}.controller.${k}`, value: c[k], message: "applies to a cloud head node; on bare metal the controller is an existing host", allowed: "leave it out" });
            }
            const same = hosts.find((h) => h.name === c.name);
            if (same && c.address !== undefined && same.address !== c.address) {
                issues.push({ path: `${p}.controller.address`, value: c.address, message: `differs from roce.hosts entry ${same.name} (${same.address}), whose name the controller shares`, allowed: `${same.address}, or another name for a separate controller host` });
            } else if (same) {
                // the slurm role makes a host either the controller or a node (slurm_role), and site.yml keeps the GPU
                // node stack off the controller: one host cannot be both yet
                issues.push({ path: `${p}.controller.name`, value: c.name, message: "is one of roce.hosts: the kit runs slurmctld on a host of its own, not on a GPU node", allowed: "a separate host (a small non-GPU server is enough)" });
            }
            const clash = hosts.find((h) => h.address === c.address && h.name !== c.name);
            if (clash) {
                issues.push({ path: `${p}.controller.name`, value: c.name, message: `names the host at ${c.address}, which roce.hosts calls ${clash.name}`, allowed: clash.name });
            }
        }
    } else {
        const own = fabric === "aws-efa" ? "instanceType" : "vmSize";
        const other = fabric === "aws-efa" ? "vmSize" : "instanceType";
        for (const k of ["address", "hostKey", "sshUser", other] as const) {
            if (c?.[k] !== undefined) issues.push({ path: `${p}.controller.${k}`, value: c[k], message: `does not apply to fabric ${fabric}: the kit creates the head node`, allowed: `name and ${own}, or leave them out` });
        }
        if (c?.name !== undefined && hosts.some((h) => h.name === c.name)) {
            issues.push({ path: `${p}.controller.name`, value: c.name, message: "is the name of a GPU node", allowed: "another name (default <cluster>-head)" });
        }
    }
    return issues;
}

type SchedulerIssue = SpecIssue;

/** `scheduler.node`: required where the catalog has no figures, refused where it has (one source), and consistent. */
function nodeFigureIssues(node: SchedulerRaw["node"], catalogued: boolean | undefined): SchedulerIssue[] {
    const p = "cluster.scheduler.node";
    const allowed = "{ cpus, sockets, coresPerSocket, threadsPerCore, realMemory } as `slurmd -C` prints them on one GPU node (CPUs, SocketsPerBoard, CoresPerSocket, ThreadsPerCore, RealMemory)";
    if (catalogued === false && !node) {
        return [{ path: p, message: "is required: the kit has no CPU and memory figures for these nodes, and Slurm takes a NodeName line without them as 1 CPU and 1 MiB (every job step of more than one task refused, every job confined to a few MiB)", allowed }];
    }
    if (!node) return [];
    if (catalogued === true) {
        return [{ path: p, value: "{…}", message: "is set, but the kit's catalog has this node type's CPUs and memory (slurm.conf takes those)", allowed: "leave node out" }];
    }
    const product = node.sockets * node.coresPerSocket * node.threadsPerCore;
    if (node.cpus !== product) {
        return [{ path: `${p}.cpus`, value: node.cpus, message: `differs from sockets x coresPerSocket x threadsPerCore (${product}), which slurmd -C prints it as`, allowed: String(product) }];
    }
    return [];
}
