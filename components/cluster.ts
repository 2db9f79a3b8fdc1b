import * as pulumi from "@pulumi/pulumi";
import { AwsEfaCluster } from "./aws/cluster";
import { AzureInfinibandCluster } from "./azure/cluster";
import { fabricIssues } from "./checks";
import { SpecError, SpecIssue, toInputPropertiesError } from "./errors";
import { FabricPlan, planCluster } from "./plan";
import { AnsiblePlaybook, sha256 } from "./provision/ansible";
import { nodeInventory } from "./provision/nodes";
import { RoceCluster } from "./roce/cluster";
import { ClusterSpec, parseClusterSpec } from "./spec";
import { ClusterValidation } from "./validate/component";
import { validationArgsFromPlan } from "./validate/fromPlan";

export const RDMA_CLUSTER_TOKEN = "rdmakit:index:RdmaCluster";

export interface RdmaClusterArgs {
    /** The cluster spec: the raw `rdmakit:cluster` config value, or a spec from `parseClusterSpec`. */
    spec: unknown;
    /**
     * SSH private key for Ansible (and the switches on bare metal). Required when `spec.provision` is true.
     * Pass it as a secret (`config.requireSecret`); it is written to a 0600 file only while Ansible runs.
     */
    sshPrivateKey?: pulumi.Input<string>;
    /**
     * Whether the key came from Pulumi secret config. A key stored in plain text is refused.
     * @default true
     */
    sshPrivateKeyIsSecret?: boolean;
}

export interface ValidationOutputs {
    verdict: pulumi.Output<string>;
    busbwGBps: pulumi.Output<number | null>;
    slowNodes: pulumi.Output<string[]>;
    reportDir: string;
}

/**
 * An RDMA GPU cluster: the fabric component the spec names, then the node software (site.yml), then nccl-tests
 * (validate.yml) graded against the plan. Every decision comes from `planCluster`; this class only wires.
 */
export class RdmaCluster extends pulumi.ComponentResource {
    public readonly spec: ClusterSpec;
    public readonly plan: FabricPlan;
    /** Private addresses of the GPU nodes (bare metal: the host addresses). */
    public readonly nodePrivateIps: pulumi.Output<string[]>;
    /** Bastion / jump host address, when the fabric has one. */
    public readonly entryAddress: pulumi.Output<string | undefined>;
    public readonly fabric: AwsEfaCluster | AzureInfinibandCluster | RoceCluster;
    public readonly software?: AnsiblePlaybook;
    public readonly validation?: ValidationOutputs;

    constructor(name: string, args: RdmaClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Everything is checked before the first resource (this component included) is registered.
        const { spec, plan: decided } = decide(args);
        super(RDMA_CLUSTER_TOKEN, name, {}, opts);
        this.spec = spec;
        this.plan = decided;
        const plan = this.plan;
        const parent = { parent: this };

        let entryAddress: pulumi.Output<string | undefined> | undefined;
        switch (spec.fabric) {
            case "aws-efa": {
                const aws = new AwsEfaCluster(`${name}-aws`, { spec, plan }, parent);
                this.fabric = aws;
                this.nodePrivateIps = aws.nodePrivateIps;
                entryAddress = aws.bastionAddress;
                break;
            }
            case "azure-ib": {
                const az = new AzureInfinibandCluster(`${name}-azure`, { spec, plan }, parent);
                this.fabric = az;
                this.nodePrivateIps = az.nodePrivateIps;
                entryAddress = az.jumpHostAddress;
                break;
            }
            case "roce": {
                const roce = new RoceCluster(`${name}-roce`, {
                    spec: spec.roce!, qos: plan.roce!.qos, sshPrivateKey: args.sshPrivateKey, pushSwitchConfig: spec.provision,
                }, parent);
                this.fabric = roce;
                this.nodePrivateIps = pulumi.output(spec.roce!.hosts.map((h) => h.address));
                break;
            }
        }
        this.entryAddress = entryAddress ?? pulumi.output(undefined);
        const entry = plan.entry ? { address: this.entryAddress, user: plan.entry.user } : undefined;

        if (spec.provision) {
            const inventory = nodeInventory(plan, this.nodePrivateIps, entry);
            this.software = new AnsiblePlaybook(`${name}-software`, {
                stack: pulumi.getStack(),
                playbook: "site.yml",
                inventory,
                sshPrivateKey: args.sshPrivateKey!,
            }, { parent: this, dependsOn: [this.fabric] });
            if (spec.validation.enabled) {
                const v = new ClusterValidation(`${name}-validation`, validationArgsFromPlan(plan, pulumi.getStack(), {
                    inventory,
                    sshPrivateKey: args.sshPrivateKey!,
                    // validate again whenever the software step ran with other playbooks or hosts
                    rerunOn: inventory.apply((inv) => sha256(`${this.software!.playbooksHash}\n${inv}`)),
                    mpiHosts: this.nodePrivateIps,
                }), { parent: this, dependsOn: [this.software] });
                this.validation = { verdict: v.verdict, busbwGBps: v.busbwGBps, slowNodes: v.slowNodes, reportDir: v.reportDir };
            }
        }

        this.registerOutputs({
            nodePrivateIps: this.nodePrivateIps,
            entryAddress: this.entryAddress,
            ncclEnv: plan.ncclEnv,
            validation: this.validation,
        });
    }
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
    const issues: SpecIssue[] = fabricIssues(spec, plan);
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
    if (issues.length > 0) throw toInputPropertiesError(new SpecError(issues));
    return { spec, plan };
}
