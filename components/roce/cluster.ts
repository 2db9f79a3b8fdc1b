/**
 * RoceCluster: the bare-metal RoCEv2 fabric component. It creates no cloud resources. It validates the spec, plans
 * the QoS, renders every switch's configuration, refuses to go on if the plan breaks
 * any of rules C1–C17, pushes each switch's configuration with one `@pulumi/command` resource per switch, then
 * reads every switch back (`rdmakit fabric check --switches-only`, one command resource after all pushes).
 * Nothing is created per GPU host: hosts are configured by the roce_host Ansible role from the outputs here.
 */
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { SpecError, toInputPropertiesError, type SpecIssue } from "../errors";
import { checkConsistency, formatViolation, type Violation } from "./consistency";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../assets";
import { FABRIC_KEY_ENV, fabricCheckCommand } from "./fabric-cli";
import { pushCommandFor } from "./push";
import { planQos, type QosPlan, type RoceHostVars } from "./qos";
import { renderSwitchConfigs, type RenderedSwitchConfig } from "./render";
import { Internals } from "../internal";
import { parseSpecArg } from "../spec";
import type { ClusterSpecInput } from "../types";

export const ROCE_CLUSTER_TOKEN = "rdmakit:index:RoceCluster";

export interface RoceClusterArgs {
    /**
     * The cluster spec, fabric `roce`: its `roce` section lists the hosts, the switches and the QoS intent. Checked
     * by the same schema as the stack config before anything is created.
     */
    spec: ClusterSpecInput;
    /** SSH private key (PEM/OpenSSH) for the switches; keep it secret. @default the SSH agent */
    sshPrivateKey?: pulumi.Input<string>;
    /**
     * Push the rendered configurations to the switches. When false, configs are rendered and exported only.
     * @default spec.provision
     */
    pushSwitchConfig?: boolean;
}

/** One GPU host as the Ansible run needs it. */
export interface RoceAnsibleHost {
    name: string;
    address: string;
    sshUser?: string;
    vars: RoceHostVars;
}

/** What TypeScript callers read and the multi-language schema leaves out (see components/internal.ts). */
interface RoceParts {
    qos: QosPlan;
    switchConfigs: RenderedSwitchConfig[];
    hosts: pulumi.Output<RoceAnsibleHost[]>;
    pushes: Record<string, command.remote.Command | command.local.Command>;
    fabricCheck?: command.local.Command;
}
const parts = new Internals<RoceCluster, RoceParts>();

export class RoceCluster extends pulumi.ComponentResource {
    /** The QoS plan everything was rendered from. */
    get qos(): QosPlan { return parts.of(this).qos; }
    /** The rendered switch configurations (text + digest). */
    get switchConfigs(): RenderedSwitchConfig[] { return parts.of(this).switchConfigs; }
    /** Hosts with their roce_host_* variables, for the Ansible inventory. */
    get hosts(): pulumi.Output<RoceAnsibleHost[]> { return parts.of(this).hosts; }
    /** The push commands, by switch name (empty when pushSwitchConfig is false). */
    get pushes(): Record<string, command.remote.Command | command.local.Command> { return parts.of(this).pushes; }
    /** `rdmakit fabric check --switches-only` after the pushes: fails the update on drift (unset without pushes). */
    get fabricCheck(): command.local.Command | undefined { return parts.of(this).fabricCheck; }
    /** Names of the switches the configuration is pushed to. */
    public readonly pushedSwitches: string[];
    /** sha256 of each switch's rendered configuration, by switch name. */
    public readonly switchConfigDigests: pulumi.Output<Record<string, string>>;
    /** NCCL variables shared by all hosts. */
    public readonly ncclEnv: pulumi.Output<Record<string, string>>;
    /** Full NCCL environment per host (HCA list and GID index may differ per host). */
    public readonly hostNcclEnv: pulumi.Output<Record<string, Record<string, string>>>;

    constructor(name: string, args: RoceClusterArgs, opts?: pulumi.ComponentResourceOptions) {
        // Validate before creating anything, this component included.
        const spec = parseSpecArg(args.spec, `RoceCluster ${name}`);
        if (spec.fabric !== "roce" || !spec.roce) {
            const issues: SpecIssue[] = [{ path: "cluster.fabric", value: spec.fabric, message: "is not roce", allowed: "roce, with a cluster.roce section" }];
            throw toInputPropertiesError(new SpecError(issues, `RoceCluster ${name}: invalid spec`));
        }
        const roce = spec.roce;
        const plan = planQos(roce);
        const rendered = renderSwitchConfigs(plan);
        const violations: Violation[] = checkConsistency(plan, rendered);
        if (violations.length) {
            throw new pulumi.InputPropertiesError({
                message: `RoceCluster ${name}: the QoS plan breaks ${violations.length} consistency rule(s):\n` + violations.map((v) => "  - " + formatViolation(v)).join("\n"),
                errors: violations.map((v) => ({ propertyPath: `qos (${v.rule}: ${v.devices.join(", ")})`, reason: formatViolation(v) })),
            });
        }
        super(ROCE_CLUSTER_TOKEN, name, {}, opts);
        const push = args.pushSwitchConfig ?? spec.provision;
        const key = args.sshPrivateKey === undefined ? undefined : pulumi.secret(args.sshPrivateKey);
        const pushes: RoceParts["pushes"] = {};
        if (push) {
            const byName = new Map(plan.switches.map((s) => [s.name, s]));
            for (const cfg of rendered) {
                const sw = byName.get(cfg.switch)!;
                const cmd = pushCommandFor(cfg, sw, plan.mode === "lossless");
                const resName = `${name}-${sw.name}-qos`;
                if (cmd.via === "remote") {
                    pushes[sw.name] = new command.remote.Command(resName, {
                        connection: {
                            host: sw.managementAddress, port: sw.sshPort, user: sw.sshUser, ...(key ? { privateKey: key } : {}),
                            // spec.ts requires it: @pulumi/command verifies the switch against it
                            hostKey: sw.hostKey,
                        },
                        create: cmd.create,
                        update: cmd.update,
                        delete: cmd.delete,
                        stdin: cmd.stdin,
                        // No `environment` here: remote env needs sshd AcceptEnv; the digest is in the script itself.
                        addPreviousOutputInEnv: false,
                    }, { parent: this });
                } else {
                    pushes[sw.name] = new command.local.Command(resName, {
                        create: cmd.create,
                        update: cmd.update,
                        delete: cmd.delete,
                        stdin: cmd.stdin,
                        environment: key ? pulumi.all([key]).apply(([k]) => ({ ...cmd.environment, RDMAKIT_SSH_KEY: k })) : cmd.environment,
                        addPreviousOutputInEnv: false,
                    }, { parent: this, additionalSecretOutputs: ["environment"] });
                }
            }
        }

        // After the pushes, the same rules read back from every switch's running state (drift.ts): a switch that did
        // not take the configuration, or that someone changed by hand since, fails the update with the drift report.
        let fabricCheck: command.local.Command | undefined;
        if (push) {
            const runDir = path.relative(process.cwd(), PACKAGE_ROOT) || ".";
            const chk = fabricCheckCommand(roce, rendered.map((r) => r.digest), runDir);
            fabricCheck = new command.local.Command(`${name}-fabric-check`, {
                create: chk.create,
                update: chk.create,
                delete: "true",
                stdin: chk.stdin,
                dir: chk.dir,
                triggers: chk.triggers,
                ...(key ? { environment: pulumi.all([key]).apply(([k]) => ({ [FABRIC_KEY_ENV.switch]: k })) } : {}),
                addPreviousOutputInEnv: false,
            }, { parent: this, dependsOn: Object.values(pushes), additionalSecretOutputs: ["environment"] });
        }

        const hosts = pulumi.output(plan.hosts.map((h): RoceAnsibleHost => ({ name: h.name, address: h.address, ...(h.sshUser ? { sshUser: h.sshUser } : {}), vars: h.vars })));
        this.switchConfigDigests = pulumi.output(Object.fromEntries(rendered.map((r) => [r.switch, r.digest])));
        this.ncclEnv = pulumi.output(plan.ncclEnv);
        this.hostNcclEnv = pulumi.output(Object.fromEntries(plan.hosts.map((h) => [h.name, h.ncclEnv])));

        this.pushedSwitches = Object.keys(pushes);
        parts.set(this, { qos: plan, switchConfigs: rendered, hosts, pushes, fabricCheck });
        this.registerOutputs({
            pushedSwitches: this.pushedSwitches,
            switchConfigDigests: this.switchConfigDigests,
            ncclEnv: this.ncclEnv,
            hostNcclEnv: this.hostNcclEnv,
        });
    }
}
