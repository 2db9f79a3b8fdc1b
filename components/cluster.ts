import * as pulumi from "@pulumi/pulumi";
import { AwsEfaCluster } from "./aws/cluster";
import { AzureInfinibandCluster } from "./azure/cluster";
import { fabricIssues } from "./checks";
import { SpecError, SpecIssue, toInputPropertiesError } from "./errors";
import { FabricPlan, planCluster } from "./plan";
import { AnsiblePlaybook, type FailedNode, sha256 } from "./provision/ansible";
import { HostKeyPin, NodeInstance, nodeInstances, nodeInventory } from "./provision/nodes";
import { groupKnownHosts, KIT_HOST_KEY_ALGORITHMS, knownHostsPath, writeKnownHosts } from "./provision/knownhosts";
import { PACKAGE_ROOT } from "./assets";
import * as path from "path";
import { keepNodes, provisionIssues } from "./plan/provision";
import { RoceCluster } from "./roce/cluster";
import { Internals } from "./internal";
import { ClusterSpec, parseClusterSpec } from "./spec";
import type { ClusterSpecInput } from "./types";
import { ClusterValidation } from "./validate/component";
import { mungeKey } from "./slurm/munge-key";
import { validationArgsFromPlan } from "./validate/fromPlan";
import { type OperatingState, type ValidationNodes, operatingState, repairPolicyOf, writeStateFile } from "./day2/state";

export const RDMA_CLUSTER_TOKEN = "rdmakit:index:RdmaCluster";

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
     * partition; null when no gate ran (the nodes then stay drained as slurm.conf starts them)
     */
    drainedNodes?: pulumi.Output<Array<{ node: string; reason: string }> | null>;
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
    /** Private addresses of the GPU nodes (bare metal: the host addresses). */
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

    /** The parsed spec, defaults applied. */
    get spec(): ClusterSpec { return parts.of(this).spec; }
    /** Every decision about the cluster (planCluster of the spec). */
    get plan(): FabricPlan { return parts.of(this).plan; }
    /** The fabric component the spec names. */
    get fabric(): AwsEfaCluster | AzureInfinibandCluster | RoceCluster { return parts.of(this).fabric; }
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
        const { spec, plan: decided } = decide(args);
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
        let hostKeys: { node: pulumi.Output<string>; entry: pulumi.Output<string | undefined> } | undefined;
        let group: pulumi.Output<OperatingState["group"]> = pulumi.output(undefined);
        switch (spec.fabric) {
            case "aws-efa": {
                const aws = new AwsEfaCluster(`${name}-aws`, { spec }, parent);
                fabric = aws;
                this.nodePrivateIps = aws.nodePrivateIps;
                instanceIds = aws.nodes.apply((ns) => ns.map((n) => n.instanceId));
                entryAddress = aws.bastionAddress;
                hostKeys = { node: aws.nodeHostPublicKey, entry: aws.bastionHostPublicKey };
                group = aws.groupName.apply((g) => ({ cloud: "aws" as const, region: spec.aws!.region, autoScalingGroup: g }));
                break;
            }
            case "azure-ib": {
                const az = new AzureInfinibandCluster(`${name}-azure`, { spec }, parent);
                fabric = az;
                this.nodePrivateIps = az.nodePrivateIps;
                instanceIds = az.nodes.apply((ns) => ns.map((n) => n.instanceId));
                entryAddress = az.jumpHostAddress;
                hostKeys = { node: az.nodeHostPublicKey, entry: az.jumpHostPublicKey };
                group = pulumi.all([az.resourceGroupName, az.vmssName]).apply(([rg, vmss]) => ({ cloud: "azure" as const, resourceGroup: rg, scaleSet: vmss }));
                break;
            }
            case "roce": {
                const roce = new RoceCluster(`${name}-roce`, { spec, sshPrivateKey: args.switchSshPrivateKey }, parent);
                fabric = roce;
                this.nodePrivateIps = pulumi.output(spec.roce!.hosts.map((h) => h.address));
                break;
            }
        }
        this.entryAddress = entryAddress ?? pulumi.output(undefined);
        this.nodeInstances = pulumi.all([this.nodePrivateIps, instanceIds]).apply(([ips, ids]) => nodeInstances(plan, ips, ids));
        const entry = plan.entry && plan.entry.kind !== "ssm" ? { address: this.entryAddress, user: plan.entry.user } : undefined;
        // the stack's AWS CLI profile, if its provider uses one, for the Session Manager hop of each SSH connection
        const awsProfile = new pulumi.Config("aws").get("profile");
        const ssm = plan.entry?.kind === "ssm" ? { region: plan.entry.region, ...(awsProfile ? { profile: awsProfile } : {}) } : undefined;

        if (spec.provision) {
            const pin = hostKeys ? pinHostKeys(hostKeys, this.nodeInstances, this.entryAddress, ssm !== undefined) : undefined;
            const inventory = nodeInventory(plan, this.nodePrivateIps, entry, instanceIds, ssm, pin?.software);
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
                    inventory: pin ? nodeInventory(plan, this.nodePrivateIps, entry, instanceIds, ssm, pin.validation) : inventory,
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
                    ...(plan.scheduler.type === "slurm" ? { drainedNodes: v.drainedNodes } : {}),
                };
            }
        }

        const stack = pulumi.getStack();
        // unsecret: every string in it went through cleanText (key-looking text hidden) or is a public key line, and
        // a secret output would reach other checkouts as "[secret]" (the node-software command's outputs may inherit
        // the secret-ness of its inputs)
        const state = pulumi.unsecret(pulumi.all([
            this.nodeInstances, group, this.entryAddress, hostKeys?.node, hostKeys?.entry, validationResult,
            this.provisioning?.failedNodes ?? pulumi.output([]), drained,
        ]).apply(([nodes, grp, entryAddr, nodeKey, entryKey, result, failed, gateDrained]) => {
            const state = operatingState({
                stack, fabric: spec.fabric, sshUser: plan.sshUser, nodes, group: grp, spec: args.spec,
                entry: plan.entry?.kind === "ssm" ? { kind: "ssm", region: plan.entry.region }
                    : plan.entry && entryAddr ? { kind: "bastion", address: entryAddr, user: plan.entry.user, ...(entryKey ? { hostKey: entryKey } : {}) } : undefined,
                nodeHostKey: nodeKey, repair: repairPolicyOf(spec.repair, false), validation: result,
                softwareFailed: failed.map((f) => ({ name: f.node, task: f.task })), excluded: plan.provision.excluded,
                ...(plan.scheduler.type === "slurm" ? { scheduler: { type: "slurm" as const, drained: gateDrained ?? [] } } : {}),
            });
            // beside known_hosts, for `--out` on the machine that ran pulumi up; a preview writes nothing
            if (!pulumi.runtime.isDryRun()) writeStateFile(state, path.join("out", stack));
            return state;
        }));

        parts.set(this, { spec, plan, fabric, software, state });
        this.registerOutputs({
            nodePrivateIps: this.nodePrivateIps,
            nodeInstances: this.nodeInstances,
            entryAddress: this.entryAddress,
            ncclEnv: plan.ncclEnv,
            validation: this.validation,
            provisioning: this.provisioning,
            state,
        });
    }
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
    keys: { node: pulumi.Output<string>; entry: pulumi.Output<string | undefined> },
    nodes: pulumi.Output<NodeInstance[]>, entryAddress: pulumi.Output<string | undefined>, viaSsm: boolean,
): { software: HostKeyPin; validation: HostKeyPin } {
    const file = knownHostsPath(pulumi.getStack());
    const written = pulumi.all([keys.node, keys.entry, nodes, entryAddress]).apply(([nodeKey, entryKey, ns, entry]) => {
        const addresses = ns.map((n) => (viaSsm ? n.instanceId ?? n.address : n.address));
        const entries = groupKnownHosts(addresses, nodeKey, entry && entryKey ? { address: entry, publicKey: entryKey } : undefined);
        if (!pulumi.runtime.isDryRun()) writeKnownHosts(entries, file);
        return file;
    });
    const fromKit = path.relative(PACKAGE_ROOT, path.resolve(file));
    return {
        software: { knownHostsFile: file, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS, written },
        validation: { knownHostsFile: fromKit, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS, written },
    };
}

/** Parses the spec, plans, and checks the arguments; throws InputPropertiesError with every problem. */
function decide(args: RdmaClusterArgs): { spec: ClusterSpec; plan: FabricPlan } {
    let spec: ClusterSpec;
    try {
        spec = parseClusterSpec(args.spec);
    } catch (e) {
        if (e instanceof SpecError) throw toInputPropertiesError(e);
        throw e;
    }
    const plan = planCluster(spec);
    const issues: SpecIssue[] = [...fabricIssues(spec, plan), ...provisionIssues(spec, plan.validation.hostNames)];
    if (spec.provision && args.sshPrivateKey === undefined) {
        issues.push({
            path: "rdmakit:sshPrivateKey", message: "is missing: Ansible needs it to reach the nodes",
            allowed: "pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519, or cluster.provision: false",
        });
    }
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
    if (issues.length > 0) throw toInputPropertiesError(new SpecError(issues));
    return { spec, plan };
}
