import * as pulumi from "@pulumi/pulumi";
import type { AwsEfaCluster } from "./aws/cluster";
import type { AzureInfinibandCluster } from "./azure/cluster";
import { fabricIssues } from "./checks";
import { SpecError, SpecIssue, toInputPropertiesError } from "./errors";
import { FabricPlan, planCluster } from "./plan";
import { AnsiblePlaybook, type FailedNode, sha256 } from "./provision/ansible";
import { HostKeyPin, NodeInstance, nodeInstances, nodeInventory, type SlurmHeadInput } from "./provision/nodes";
import type { SlurmHeadAt } from "./provision/head";
import { groupKnownHosts, KIT_HOST_KEY_ALGORITHMS, knownHostsPath, writeKnownHosts } from "./provision/knownhosts";
import { PACKAGE_ROOT } from "./assets";
import * as path from "path";
import { keepNodes, provisionIssues } from "./plan/provision";
import { RoceCluster, roceArgsParsed } from "./roce/cluster";
import { Internals } from "./internal";
import { ClusterSpec, parseClusterSpec } from "./spec";
import type { ClusterSpecInput } from "./types";
import { ClusterValidation } from "./validate/component";
import { mungeKey } from "./slurm/munge-key";
import { FABRIC_SDKS, isMissingSdk } from "./peer";
import { validationArgsFromPlan } from "./validate/fromPlan";
import { type HeadState, type OperatingState, type ValidationNodes, operatingState, repairPolicyOf, writeStateFile } from "./day2/state";
import { previousNames, stableNodes } from "./day2/names";
import { previousState } from "./day2/previous";
import { type Replacement, decisionFor, formatDecision } from "./day2/repair";

export const RDMA_CLUSTER_TOKEN = "rdmakit:index:RdmaCluster";
/**
 * The inputs that hold key material: the package's schema marks them secret, so every generated SDK wraps them as
 * secrets, and the provider's Construct refuses a plain value for one (components/provider.ts).
 */
export const RDMA_CLUSTER_SECRET_INPUTS = ["sshPrivateKey", "switchSshPrivateKey"] as const satisfies readonly (keyof RdmaClusterArgs)[];

export interface RdmaClusterArgs {
    /**
     * The cluster spec: what the stack config key `rdmakit:cluster` holds (a spec from `parseClusterSpec` is one
     * too). Checked by the same schema as the stack config, every problem at once, before anything is created.
     */
    spec: ClusterSpecInput;
    /**
     * SSH private key Ansible reaches the nodes (and the bastion / jump host) with. Required when `spec.provision` is
     * true. Pass it as a secret (`config.requireSecret`). It is no input of any command: the program serves it to each
     * run's own ssh-agent (components/provision/keysocket.ts), so rotating it re-runs nothing.
     */
    sshPrivateKey?: pulumi.Input<string>;
    /**
     * Bare metal: the SSH private key for the switches (stack secret `rdmakit:switchSshPrivateKey`), separate from the
     * nodes' key so that root on a node holds nothing that opens a switch. @default the SSH agent of `pulumi up`
     */
    switchSshPrivateKey?: pulumi.Input<string>;
    /**
     * Whether the key came from Pulumi secret config. A key stored in plain text is refused.
     * @default true
     */
    sshPrivateKeyIsSecret?: boolean;
    /** Whether the switch key came from Pulumi secret config; a switch key stored in plain text is refused. @default true */
    switchSshPrivateKeyIsSecret?: boolean;
}

/** What the validation step found. */
/** A node the Slurm validation gate drained, and why (the component first). A named type: the analyzer types no literals. */
export interface DrainedNode {
    node: string;
    reason: string;
}

export interface ValidationOutputs {
    /** pass or fail, with the cause */
    verdict: pulumi.Output<string>;
    /** all-node busbw at the graded size, GB/s; unset when the run produced none */
    busbwGBps: pulumi.Output<number | undefined>;
    /** nodes the slow-node search named */
    slowNodes: pulumi.Output<string[]>;
    /** folder with the report (text, JSON, chart) */
    reportDir: string;
    /** nodes left out of provisioning and validation (cluster.ansible.exclude): the verdict is about the others */
    excludedNodes: string[];
    /**
     * Slurm: the nodes the validation gate drained, each with its reason (component first); [] when all joined the
     * partition, or when no gate ran (slurmGateRan false: the nodes then stay drained as the role drained them before their first slurmd start).
     * Two outputs, not one nullable list: the component schema has no union types (Pulumi's analyzer refuses them).
     */
    drainedNodes?: pulumi.Output<DrainedNode[]>;
    /** Slurm: whether the validation gate ran on the head node (resumed and drained the nodes) */
    slurmGateRan?: pulumi.Output<boolean>;
}

/** What the node-software step left behind. */
export interface SoftwareOutputs {
    /**
     * nodes the last run left failed (within cluster.ansible.maxFailPercentage), each with its first failing task; the
     * next `pulumi up` retries them, only them, until they pass or cluster.ansible.exclude names them
     */
    failedNodes: pulumi.Output<FailedNode[]>;
    /** nodes left out (cluster.ansible.exclude) */
    excludedNodes: string[];
}

/** What TypeScript callers read and the multi-language schema leaves out (see components/internal.ts). */
interface RdmaClusterParts {
    spec: ClusterSpec;
    plan: FabricPlan;
    fabric: AwsEfaCluster | AzureInfinibandCluster | RoceCluster;
    software?: AnsiblePlaybook;
    state: pulumi.Output<OperatingState>;
}
const parts = new Internals<RdmaCluster, RdmaClusterParts>();

/**
 * An RDMA GPU cluster: the fabric component the spec names, then the node software (site.yml), then nccl-tests
 * (validate.yml) graded against the plan. Every decision comes from `planCluster`; this class only wires.
 */
export class RdmaCluster extends pulumi.ComponentResource {
    /** The fabric: aws-efa, azure-ib or roce. */
    public readonly fabricKind: string;
    /** GPU nodes in the cluster. */
    public readonly nodeCount: number;
    /** Login user on the nodes. */
    public readonly sshUser: string;
    /** Private addresses of the GPU nodes in node-name order (bare metal: the host addresses). */
    public readonly nodePrivateIps: pulumi.Output<string[]>;
    /**
     * Every GPU node: inventory name, address and, on a cloud, its instance id as the cloud lists it at this
     * `pulumi up`. The ids are the nodes' identity: when the cloud replaces a node, the next `pulumi preview` shows the
     * new id here, and the next `pulumi up` provisions and validates again (the inventory carries the ids).
     */
    public readonly nodeInstances: pulumi.Output<NodeInstance[]>;
    /** Bastion / jump host address, when the fabric has one. */
    public readonly entryAddress: pulumi.Output<string | undefined>;
    /** The NCCL environment every rank runs with. */
    public readonly ncclEnv: Record<string, string>;
    /** The validation step's result; unset when provisioning or validation is off. */
    public readonly validation?: ValidationOutputs;
    /** The node-software step's failed and excluded nodes; unset when provisioning is off. */
    public readonly provisioning?: SoftwareOutputs;
    /**
     * The operating state (`state`) as JSON text, for a program in another language (Python, Go, .NET, YAML: the
     * package's schema carries a string, not the state's union-typed shape): export it as the stack output
     * `rdmakitState` (`pulumi.export("rdmakitState", cluster.operating_state)`) and the day-2 verbs read it as they
     * read the object a TypeScript program exports (docs/day2.md).
     */
    public readonly operatingState: pulumi.Output<string>;

    /** The parsed spec, defaults applied. */
    get spec(): ClusterSpec { return parts.of(this).spec; }
    /** Every decision about the cluster (planCluster of the spec). */
    get plan(): FabricPlan { return parts.of(this).plan; }
    /**
     * The fabric component the spec names: an AwsEfaCluster (`rdmakit/aws`), AzureInfinibandCluster (`rdmakit/azure`)
     * or RoceCluster; narrow it with `instanceof`. Typed as a plain component so that this package's root types need
     * no cloud SDK's declarations (the SDKs are optional peers).
     */
    get fabric(): pulumi.ComponentResource { return parts.of(this).fabric; }
    /** The node software step (site.yml); unset when `provision` is false. */
    get software(): AnsiblePlaybook | undefined { return parts.of(this).software; }
    /**
     * The cluster's operating state, nothing secret in it (components/day2/state.ts): nodes, the way in, the pinned
     * host keys (public), the last verdicts per node, failed and drained nodes. The stack output `rdmakitState`, which
     * `rdmakit status | check | ssh | repair --stack` read from any checkout. (A getter: its union-typed shape is not
     * one Pulumi's component schema can carry, like `plan`.)
     */
    get state(): pulumi.Output<OperatingState> { return parts.of(this).state; }

    constructor(name: string, args: RdmaClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Everything is checked before the first resource (this component included) is registered.
        const { spec, plan: decided, cloud } = decide(args);
        super(RDMA_CLUSTER_TOKEN, name, {}, opts);
        const plan = decided;
        this.fabricKind = spec.fabric;
        this.nodeCount = plan.nodes.count;
        this.sshUser = plan.sshUser;
        this.ncclEnv = plan.ncclEnv;
        const parent = { parent: this };
        let fabric: RdmaClusterParts["fabric"];
        let software: AnsiblePlaybook | undefined;
        let validationResult: pulumi.Output<ValidationNodes | null> = pulumi.output(null);
        // Slurm: the nodes the validation gate drained, with reasons (null: no gate ran)
        let drained: pulumi.Output<Array<{ node: string; reason: string }> | null> = pulumi.output(null);

        let entryAddress: pulumi.Output<string | undefined> | undefined;
        let instanceIds: pulumi.Output<string[] | undefined> = pulumi.output(undefined);
        // the host keys a cloud stack made for its nodes and its way in (provision/hostkeys.ts); none on bare metal
        let hostKeys: { node: pulumi.Output<string>; entry: pulumi.Output<string | undefined>; head?: pulumi.Output<HeadKey> } | undefined;
        let group: pulumi.Output<OperatingState["group"]> = pulumi.output(undefined);
        // the Slurm head node for the software run's inventory (provision/head.ts); undefined without Slurm
        let slurmHead: SlurmHeadInput | undefined;
        // and for the operating state (rdmakit ssh / status reach and show it; never validated or repaired)
        let headState: pulumi.Output<HeadState | undefined> = pulumi.output(undefined);
        const headOf = (k: HeadKey): HeadState | undefined => (plan.scheduler.type === "slurm" ? {
            name: plan.scheduler.controller.name, address: k.address, ...(k.instanceId ? { instanceId: k.instanceId } : {}),
            user: plan.scheduler.controller.sshUser, hostKey: k.publicKey,
        } : undefined);
        switch (spec.fabric) {
            case "aws-efa": {
                const aws = new cloud.AwsEfaCluster!(`${name}-aws`, { spec }, parent);
                fabric = aws;
                this.nodePrivateIps = aws.nodePrivateIps;
                instanceIds = aws.nodes.apply((ns) => ns.map((n) => n.instanceId));
                entryAddress = aws.bastionAddress;
                hostKeys = { node: aws.nodeHostPublicKey, entry: aws.bastionHostPublicKey };
                if (aws.slurmHead) {
                    const h = aws.slurmHead;
                    slurmHead = {
                        head: pulumi.all([h.privateIp, h.instanceId]).apply(([address, instanceId]) => ({ address, instanceId })),
                        // topology.conf from the nodes' EC2 instance topology read at this up
                        ...(aws.ec2Topology ? { ec2: aws.ec2Topology } : {}),
                    };
                    hostKeys.head = pulumi.all([h.privateIp, h.instanceId, h.hostPublicKey]).apply(([address, instanceId, publicKey]) => ({ address, instanceId, publicKey }));
                    headState = hostKeys.head.apply(headOf);
                }
                group = aws.groupName.apply((g) => ({ cloud: "aws" as const, region: spec.aws!.region, autoScalingGroup: g }));
                break;
            }
            case "azure-ib": {
                const az = new cloud.AzureInfinibandCluster!(`${name}-azure`, { spec }, parent);
                fabric = az;
                this.nodePrivateIps = az.nodePrivateIps;
                instanceIds = az.nodes.apply((ns) => ns.map((n) => n.instanceId));
                entryAddress = az.jumpHostAddress;
                hostKeys = { node: az.nodeHostPublicKey, entry: az.jumpHostPublicKey };
                if (az.slurmHead) {
                    const h = az.slurmHead;
                    slurmHead = { head: pulumi.all([h.privateIp, h.vmId]).apply(([address, instanceId]) => ({ address, ...(instanceId ? { instanceId } : {}) })) };
                    hostKeys.head = pulumi.all([h.privateIp, h.vmId, h.hostPublicKey]).apply(([address, instanceId, publicKey]) => ({ address, instanceId: instanceId ?? "", publicKey }));
                    headState = hostKeys.head.apply(headOf);
                }
                group = pulumi.all([az.resourceGroupName, az.vmssName]).apply(([rg, vmss]) => ({ cloud: "azure" as const, resourceGroup: rg, scaleSet: vmss }));
                break;
            }
            case "roce": {
                // the spec as given, not as parsed (a parse of the parsed spec was a second full parse, 0.1 s at 2,048
                // hosts), with decide()'s parse of it handed on, so RoceCluster neither parses nor copies it again; its
                // QoS plan is the one planned here from the same parse (qos.ts planQos shares equal specs' plans)
                const roce = new RoceCluster(`${name}-roce`, roceArgsParsed({ spec: args.spec, sshPrivateKey: args.switchSshPrivateKey }, spec), parent);
                fabric = roce;
                this.nodePrivateIps = pulumi.output(spec.roce!.hosts.map((h) => h.address));
                if (plan.scheduler.type === "slurm") {
                    const c = plan.scheduler.controller;
                    slurmHead = { head: bareMetalHead(c, pulumi.getStack()) };
                    // address and hostKey are required for Slurm on bare metal (slurm/spec.ts schedulerIssues)
                    headState = pulumi.output(headOf({ address: c.address!, instanceId: "", publicKey: c.hostKey! }));
                }
                break;
            }
        }
        this.entryAddress = entryAddress ?? pulumi.output(undefined);
        // a cloud node keeps its name when its machine is replaced (day2/names.ts): the names the last deployment
        // gave, read back from the stack's own rdmakitState; new instances take the names of the ones gone
        let replacements: pulumi.Output<Replacement[]> = pulumi.output([]);
        if (spec.fabric !== "roce") {
            const previous = previousState(name, this);
            const named = pulumi.all([this.nodePrivateIps, instanceIds, previous]).apply(([ips, ids, prev]) =>
                stableNodes(plan.validation.hostNames, (ids ?? []).map((instanceId, i) => ({ instanceId, address: ips[i] })), previousNames(prev), new Date().toISOString()));
            this.nodePrivateIps = named.apply((n) => n.nodes.map((x) => x.address));
            instanceIds = named.apply((n) => n.nodes.map((x) => x.instanceId));
            replacements = named.apply((n) => n.replacements);
        }
        this.nodeInstances = pulumi.all([this.nodePrivateIps, instanceIds]).apply(([ips, ids]) => nodeInstances(plan, ips, ids));
        const entry = plan.entry && plan.entry.kind !== "ssm" ? { address: this.entryAddress, user: plan.entry.user } : undefined;
        // the stack's AWS CLI profile, if its provider uses one, for the Session Manager hop of each SSH connection
        const awsProfile = new pulumi.Config("aws").get("profile");
        const ssm = plan.entry?.kind === "ssm" ? { region: plan.entry.region, ...(awsProfile ? { profile: awsProfile } : {}) } : undefined;

        if (spec.provision) {
            const pin = hostKeys ? pinHostKeys(hostKeys, this.nodeInstances, this.entryAddress, ssm !== undefined) : undefined;
            // the head node runs the slurm role in the software run; in validation it launches the all-node runs with
            // srun and applies the gate (validate.yml leaves it out of every per-node play, the fan-out of every session)
            const inventory = nodeInventory(plan, this.nodePrivateIps, entry, instanceIds, ssm, pin?.software, slurmHead);
            const validationHead = slurmHead && { ...slurmHead, head: pulumi.output(slurmHead.head).apply((h) => fromKitRoot(h)) };
            software = new AnsiblePlaybook(`${name}-software`, {
                stack: pulumi.getStack(),
                playbook: "site.yml",
                inventory,
                sshPrivateKey: args.sshPrivateKey!,
                forks: plan.provision.forks,
                maxFailPercentage: plan.provision.maxFailPercentage,
                mode: plan.provision.mode,
                ...(plan.scheduler.type === "slurm" ? { mungeKey: mungeKey(`${name}-munge-key`, this) } : {}),
            }, { parent: this, dependsOn: [fabric] });
            this.provisioning = { failedNodes: software.failedNodes, excludedNodes: plan.provision.excluded };
            const playbooksHash = software.playbooksHash;
            if (spec.validation.enabled) {
                const v = new ClusterValidation(`${name}-validation`, validationArgsFromPlan(plan, pulumi.getStack(), {
                    // the same hosts, with the known_hosts named from where validation runs (the kit's root)
                    inventory: pin || validationHead ? nodeInventory(plan, this.nodePrivateIps, entry, instanceIds, ssm, pin?.validation, validationHead) : inventory,
                    ...(hostKeys ? { hostKeys: hostKeys.node.apply((k) => [k]) } : {}),
                    sshPrivateKey: args.sshPrivateKey!,
                    // validate again whenever the software step ran with other playbooks or hosts, or retried nodes
                    rerunOn: pulumi.all([inventory, software.retryKey]).apply(([inv, retry]) =>
                        sha256(`${playbooksHash}\n${inv}${retry ? `\n${retry}` : ""}`)),
                    mpiHosts: this.nodePrivateIps.apply((ips) => keepNodes(plan.validation.hostNames, ips, plan.provision.excluded).values),
                    excludedNodes: plan.provision.excluded,
                    forks: plan.provision.forks,
                }), { parent: this, dependsOn: [software] });
                validationResult = v.result;
                drained = v.drainedNodes;
                this.validation = {
                    verdict: v.verdict, busbwGBps: v.busbwGBps.apply((b) => b ?? undefined), slowNodes: v.slowNodes, reportDir: v.reportDir,
                    excludedNodes: plan.provision.excluded,
                    ...(plan.scheduler.type === "slurm"
                        ? { drainedNodes: v.drainedNodes.apply((d) => d ?? []), slurmGateRan: v.drainedNodes.apply((d) => d !== null) } : {}),
                };
            }
        }

        const stack = pulumi.getStack();
        // unsecret: every string in it went through cleanText (key-looking text hidden) or is a public key line, and
        // a secret output would reach other checkouts as "[secret]" (the node-software command's outputs may inherit
        // the secret-ness of its inputs)
        const state = pulumi.unsecret(pulumi.all([
            this.nodeInstances, group, this.entryAddress, hostKeys?.node, hostKeys?.entry, validationResult,
            this.provisioning?.failedNodes ?? pulumi.output([]), pulumi.all([replacements, drained, headState]),
        ]).apply(([nodes, grp, entryAddr, nodeKey, entryKey, result, failed, [replaced, gateDrained, head]]) => {
            const state = operatingState({
                stack, fabric: spec.fabric, sshUser: plan.sshUser, nodes, group: grp, spec: args.spec,
                entry: plan.entry?.kind === "ssm" ? { kind: "ssm", region: plan.entry.region }
                    : plan.entry && entryAddr ? { kind: "bastion", address: entryAddr, user: plan.entry.user, ...(entryKey ? { hostKey: entryKey } : {}) } : undefined,
                nodeHostKey: nodeKey, validation: result,
                // the default: drain where the kit runs a scheduler (it installs Slurm only when it provisions), else report
                repair: repairPolicyOf(spec.repair, plan.scheduler.type !== "none" && spec.provision),
                softwareFailed: failed.map((f) => ({ name: f.node, task: f.task })), excluded: plan.provision.excluded,
                replacements: replaced,
                ...(plan.scheduler.type === "slurm" ? { scheduler: { type: "slurm" as const, drained: gateDrained ?? [] } } : {}),
                ...(head ? { head } : {}),
            });
            // beside known_hosts, for `--out` on the machine that ran pulumi up; a preview writes nothing
            if (!pulumi.runtime.isDryRun()) writeStateFile(state, path.join("out", stack));
            // the repair policy on this deployment's verdicts: the decision `rdmakit repair --dry-run` prints from this state
            const repairText = upRepairText(state);
            if (repairText) pulumi.log.warn(repairText, this);
            return state;
        }));

        parts.set(this, { spec, plan, fabric, software, state });
        this.operatingState = state.apply((st) => JSON.stringify(st));
        // `state` is a property and the stack output rdmakitState (index.ts; day-2 reads that output), not a registered
        // output too: the engine keeps registered outputs in the state, and a second copy of the operating state is
        // ~1 KB a host, its spec included (test/state-size.test.ts)
        this.registerOutputs({
            nodePrivateIps: this.nodePrivateIps,
            nodeInstances: this.nodeInstances,
            entryAddress: this.entryAddress,
            ncclEnv: plan.ncclEnv,
            validation: this.validation,
            provisioning: this.provisioning,
        });
    }
}

/**
 * What `pulumi up` says about the repair policy at the end of a deployment: nothing when no node fails on evidence;
 * else the decision, in the very words of `rdmakit repair --dry-run` on the state this deployment exported (one
 * function, repair.ts decisionFor), and how to carry it out. The deployment itself lets no failing node in (the Slurm
 * gate drains it) and starts no replacement: a replacement is proven against a node that passed before it is resumed,
 * which needs the instance the cloud launches after this deployment (`rdmakit repair` waits for it and runs the next
 * `pulumi up`). Pure.
 */
export function upRepairText(state: OperatingState): string | undefined {
    const d = decisionFor(state);
    if (d.actions.length === 0) return undefined;
    const acts = d.actions.some((a) => a.kind !== "report");
    return formatDecision(d, state) + (acts ? `carry it out: rdmakit repair --stack ${state.stack} --yes (or look first: rdmakit repair --stack ${state.stack} --dry-run)\n` : "");
}

/**
 * The stack's known_hosts (out/<stack>/known_hosts), written at every deployment from the host keys the stack made:
 * each node's SSH address (its instance id through Session Manager) with the node group's key, the bastion / jump
 * host with its own. The whole file is the pinned entries, so a replaced node's old entry goes with it. A preview
 * writes nothing. The inventories wait for the write, so Ansible's first contact is checked (StrictHostKeyChecking
 * yes, HostKeyAlgorithms ssh-ed25519). The software step runs in the project folder, validation in the kit's root
 * (validate/component.ts): each inventory names the file from there, relatively, as the other paths of their runs.
 */
function pinHostKeys(
    keys: { node: pulumi.Output<string>; entry: pulumi.Output<string | undefined>; head?: pulumi.Output<HeadKey> },
    nodes: pulumi.Output<NodeInstance[]>, entryAddress: pulumi.Output<string | undefined>, viaSsm: boolean,
): { software: HostKeyPin; validation: HostKeyPin } {
    const file = knownHostsPath(pulumi.getStack());
    const written = pulumi.all([keys.node, keys.entry, nodes, entryAddress, keys.head]).apply(([nodeKey, entryKey, ns, entry, head]) => {
        const addresses = ns.map((n) => (viaSsm ? n.instanceId ?? n.address : n.address));
        const entries = groupKnownHosts(addresses, nodeKey, entry && entryKey ? { address: entry, publicKey: entryKey } : undefined);
        // the Slurm head node with its own key, at the address Ansible uses for it (its instance id through Session Manager)
        if (head) entries.push({ hosts: [viaSsm ? head.instanceId : head.address], publicKey: head.publicKey });
        if (!pulumi.runtime.isDryRun()) writeKnownHosts(entries, file);
        return file;
    });
    const fromKit = kitRelative(file);
    return {
        software: { knownHostsFile: file, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS, written },
        validation: { knownHostsFile: fromKit, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS, written },
    };
}

/** The cloud fabric's component class, loaded only for its fabric: each needs its own SDK (an optional peer). */
interface CloudComponents { AwsEfaCluster?: typeof AwsEfaCluster; AzureInfinibandCluster?: typeof AzureInfinibandCluster }

/**
 * Loads the fabric module the spec names (components/peer.ts): a cloud SDK that is not installed becomes a problem
 * about `cluster.fabric` naming the package, reported with the others before anything is registered.
 */
function loadCloud(fabric: ClusterSpec["fabric"], issues: SpecIssue[]): CloudComponents {
    try {
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on use: the SDK may be absent
        if (fabric === "aws-efa") return { AwsEfaCluster: (require("./aws/cluster") as typeof import("./aws/cluster")).AwsEfaCluster };
        // eslint-disable-next-line @typescript-eslint/no-require-imports -- loaded on use: the SDK may be absent
        if (fabric === "azure-ib") return { AzureInfinibandCluster: (require("./azure/cluster") as typeof import("./azure/cluster")).AzureInfinibandCluster };
    } catch (e) {
        if (!isMissingSdk(e)) throw e;
        issues.push({
            path: "cluster.fabric", value: fabric, message: `needs the package ${e.sdk}, which is not installed`,
            allowed: `npm install ${e.sdk}@"${e.range}" beside rdmakit (an optional peer dependency; the ${FABRIC_SDKS[e.fabric].subpath} component needs it too)`,
        });
    }
    return {};
}

/**
 * The missing node key, said to whoever passes it: rdmakit's own program (project `rdmakit`, index.ts) reads it from
 * the stack secret `rdmakit:sshPrivateKey`; a team's program passes the component argument `sshPrivateKey`, from
 * config of its own project. Pure.
 */
export function missingKeyIssue(project: string): SpecIssue {
    if (project === "rdmakit") {
        return {
            path: "rdmakit:sshPrivateKey", message: "is missing: Ansible needs it to reach the nodes",
            allowed: "pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519, or cluster.provision: false",
        };
    }
    return {
        path: "sshPrivateKey", message: "is missing: the RdmaCluster argument Ansible reaches the nodes with",
        allowed: `sshPrivateKey: new pulumi.Config().requireSecret("sshPrivateKey") in the program, after pulumi config set --secret ${project}:sshPrivateKey < ~/.ssh/id_ed25519; or cluster.provision: false`,
    };
}

/** The cloud Slurm head node's addresses and its host key line (public). */
interface HeadKey { address: string; instanceId: string; publicKey: string }

/**
 * The bare-metal Slurm controller (scheduler.controller): its address, and its host key pinned in a known_hosts file
 * of its own (out/<stack>/slurm-head.known_hosts, written at every deployment; a preview writes nothing), so Ansible
 * refuses a controller that shows another key while the GPU hosts keep the inventory's rule. The inventory waits for
 * the write.
 */
function bareMetalHead(controller: { address?: string; hostKey?: string }, stack: string): pulumi.Output<SlurmHeadAt> {
    // address and hostKey are required for Slurm on bare metal (slurm/spec.ts schedulerIssues): checked before this
    const file = path.join("out", stack, "slurm-head.known_hosts");
    return pulumi.output(controller).apply((c) => {
        if (!pulumi.runtime.isDryRun()) writeKnownHosts([{ hosts: [c.address!], publicKey: c.hostKey! }], file);
        return { address: c.address!, pinnedKnownHostsFile: file };
    });
}

/** A file the program wrote, named from the kit's root, where validation runs. */
const kitRelative = (file: string): string => path.relative(PACKAGE_ROOT, path.resolve(file));

/** The head's own known_hosts file named from the kit's root (as pinHostKeys names the stack's). */
function fromKitRoot(h: SlurmHeadAt): SlurmHeadAt {
    return h.pinnedKnownHostsFile ? { ...h, pinnedKnownHostsFile: kitRelative(h.pinnedKnownHostsFile) } : h;
}

/** Parses the spec, plans, and checks the arguments; throws InputPropertiesError with every problem. */
function decide(args: RdmaClusterArgs): { spec: ClusterSpec; plan: FabricPlan; cloud: CloudComponents } {
    let spec: ClusterSpec;
    try {
        spec = parseClusterSpec(args.spec);
    } catch (e) {
        if (e instanceof SpecError) throw toInputPropertiesError(e);
        throw e;
    }
    const plan = planCluster(spec);
    const issues: SpecIssue[] = [...fabricIssues(spec, plan), ...provisionIssues(spec, plan.validation.hostNames)];
    if (spec.provision && args.sshPrivateKey === undefined) issues.push(missingKeyIssue(pulumi.getProject()));
    if (args.sshPrivateKey !== undefined && args.sshPrivateKeyIsSecret === false) {
        issues.push({
            path: "rdmakit:sshPrivateKey", value: "(hidden)", message: "is stored in plain text",
            allowed: "a secret: pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519",
        });
    }
    if (args.switchSshPrivateKey !== undefined && args.switchSshPrivateKeyIsSecret === false) {
        issues.push({
            path: "rdmakit:switchSshPrivateKey", value: "(hidden)", message: "is stored in plain text",
            allowed: "a secret: pulumi config set --secret rdmakit:switchSshPrivateKey < <the switches' key file>",
        });
    }
    const cloud = loadCloud(spec.fabric, issues);
    if (issues.length > 0) throw toInputPropertiesError(new SpecError(issues));
    return { spec, plan, cloud };
}
