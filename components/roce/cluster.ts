/**
 * RoceCluster: the bare-metal RoCEv2 fabric component. It creates no cloud resources. It validates the spec, plans
 * the QoS, renders every switch's configuration, refuses to go on if the plan breaks
 * any of rules C1–C17, pushes each switch's configuration with one `@pulumi/command` resource per switch, staged: one
 * canary switch, its check (`rdmakit fabric check --switches-only --only <it>`), then the rest in batches, each after
 * the previous stage's check, and at the end reads every switch back (`rdmakit fabric check --switches-only`).
 * Nothing is created per GPU host: hosts are configured by the roce_host Ansible role from the outputs here.
 */
import * as pulumi from "@pulumi/pulumi";
import * as command from "@pulumi/command";
import { SpecError, toInputPropertiesError, type SpecIssue } from "../errors";
import { checkConsistency, formatViolation, type Violation } from "./consistency";
import * as path from "node:path";
import { PACKAGE_ROOT } from "../assets";
import { keepInput } from "../kept-input";
import { fabricCheckCommand } from "./fabric-cli";
import { serveSshKey } from "../provision/keysocket";
import { pushCommandFor, rolloutStages } from "./push";
import { planQos, type QosPlan, type RoceHostVars } from "./qos";
import { FORMAT, renderSwitchConfigs, type RenderedSwitchConfig } from "./render";
import { SSH_KEY_PRELUDE } from "../provision/ansible";
import { Internals } from "../internal";
import { type ClusterSpec, parseSpecArg } from "../spec";
import type { ClusterSpecInput } from "../types";

export const ROCE_CLUSTER_TOKEN = "rdmakit:index:RoceCluster";
/** The inputs that hold key material: secret in the package's schema, refused in plain text by Construct (components/provider.ts). */
export const ROCE_CLUSTER_SECRET_INPUTS = ["sshPrivateKey"] as const satisfies readonly (keyof RoceClusterArgs)[];

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
    /** The hosts as plain data; `hosts` makes the Output when a caller first asks (pulumi.output copies all of it). */
    hostList: RoceAnsibleHost[];
    hosts?: pulumi.Output<RoceAnsibleHost[]>;
    pushes: Record<string, command.local.Command>;
    /** Every check, in rollout order: the canary's, each batch's, the whole fabric's (last). */
    checks: command.local.Command[];
    fabricCheck?: command.local.Command;
}
const parts = new Internals<RoceCluster, RoceParts>();

/**
 * The parse of an arguments object's `spec` made before the RoceCluster is built from that very object: RdmaCluster
 * parses the spec it is given (decide) and hands the same value on, so its parse is the one the RoceCluster would make.
 * Kept by the arguments object itself, which the caller makes for this one construction.
 */
const parsedSpecOf = new WeakMap<RoceClusterArgs, ClusterSpec>();

/** Arguments whose `spec` the caller parsed into `parsed` (spec.ts parseClusterSpec of `args.spec`), for RdmaCluster. */
export function roceArgsParsed(args: RoceClusterArgs, parsed: ClusterSpec): RoceClusterArgs {
    parsedSpecOf.set(args, parsed);
    return args;
}

/**
 * A known Output of plain data made here (strings in objects, no Output or promise inside): the value as it is.
 * `pulumi.output` walks and copies every object and array of its argument to lift Outputs out of it (@pulumi/pulumi
 * output.js outputRec), 2,048 hosts' NCCL environments at 2,048 hosts; an apply's result that is not an Output is
 * taken as it is (output.js liftInnerOutput), known and not secret like pulumi.output's.
 */
function plainOutput<T>(value: T): pulumi.Output<T> {
    return pulumi.output(undefined).apply(() => value);
}

export class RoceCluster extends pulumi.ComponentResource {
    /** The QoS plan everything was rendered from. */
    get qos(): QosPlan { return parts.of(this).qos; }
    /** The rendered switch configurations (text + digest). */
    get switchConfigs(): RenderedSwitchConfig[] { return parts.of(this).switchConfigs; }
    /** Hosts with their roce_host_* variables, for the Ansible inventory. */
    get hosts(): pulumi.Output<RoceAnsibleHost[]> {
        const p = parts.of(this);
        return (p.hosts ??= pulumi.output(p.hostList));
    }
    /** The push commands, by switch name (empty when pushSwitchConfig is false). */
    get pushes(): Record<string, command.local.Command> { return parts.of(this).pushes; }
    /** The checks between rollout stages and the whole-fabric check after the last (unset without pushes). */
    get checks(): command.local.Command[] { return parts.of(this).checks; }
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
        const spec = parsedSpecOf.get(args) ?? parseSpecArg(args.spec, `RoceCluster ${name}`);
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
        const pushes: RoceParts["pushes"] = {};
        const checks: command.local.Command[] = [];
        let fabricCheck: command.local.Command | undefined;
        if (push) {
            // The switch key reaches each run from this program's key socket into the run's own ssh-agent
            // (keysocket.ts): no push or check has it among its inputs, so a rotated key re-runs nothing.
            const keyEnv: Record<string, string> = args.sshPrivateKey === undefined ? {} : { ...serveSshKey(`${name}-switches`, args.sshPrivateKey) };
            const agentKey = args.sshPrivateKey !== undefined;
            const byName = new Map(plan.switches.map((s) => [s.name, s]));
            const renderedBy = new Map(rendered.map((r) => [r.switch, r]));
            const runDir = path.relative(process.cwd(), PACKAGE_ROOT) || ".";
            // The spec every check reads, kept once beside the stack (kept-input.ts): each check carries its path and digest,
            // not the fabric (on 2,048 hosts the spec is 1 MB, and a rollout has a check per stage).
            const outDir = path.join("out", pulumi.getStack());
            const kept = keepInput(outDir, "roce-spec", "json", JSON.stringify(roce), !pulumi.runtime.isDryRun());
            // Each switch's rendered text, kept the same way: its push carries the file and the text's sha256, not the
            // text. Written at a preview too, so the policy pack (policies/rules/roce.ts) reads the texts that would be
            // pushed before anything is created.
            // (each with the digest its render computed from the text: 384 texts are not hashed again)
            const configs = new Map(rendered.map((r) => [r.switch, keepInput(outDir, `switch-${r.switch}`, FORMAT[r.os].ext, r.text, true, r.digest)]));
            // With a served key, the run's key prelude (SSH_KEY_PRELUDE) is kept once and each push sources it, so the
            // state holds it once, not once per switch.
            const keyPrelude = agentKey ? keepInput(outDir, "run-key-prelude", "sh", SSH_KEY_PRELUDE.join("\n") + "\n", true) : undefined;
            const specFile = { file: path.relative(PACKAGE_ROOT, path.resolve(kept.file)), digest: kept.digest };
            const check = (resName: string, only: string[] | undefined, after: pulumi.Resource[]) => {
                const chk = fabricCheckCommand(specFile, rendered.filter((r) => !only || only.includes(r.switch)).map((r) => r.digest), runDir, { only, agentKey });
                // no `update`: the provider runs `create` again when the inputs change (pulumi-command CommandArgs.update:
                // "If empty, the create command will be executed instead"), so the script is in the state once
                const c = new command.local.Command(resName, {
                    create: chk.create, delete: "true", dir: chk.dir, triggers: chk.triggers,
                    interpreter: chk.interpreter, environment: keyEnv, addPreviousOutputInEnv: false,
                }, { parent: this, dependsOn: after });
                checks.push(c);
                return c;
            };
            // Staged (rolloutStages): one canary switch, then its check, then the rest in batches, each batch after the
            // previous one's check. A bad plan stops at the canary; a priority or DSCP change still leaves the fabric
            // mixed until the last batch, which is why such a change needs a drain window (README).
            let after: pulumi.Resource[] = [];
            rolloutStages(rendered.map((r) => r.switch)).forEach((stage, i, all) => {
                const stagePushes = stage.map((swName) => {
                    const cfg = renderedBy.get(swName)!;
                    const sw = byName.get(swName)!;
                    const cmd = pushCommandFor(cfg, sw, plan.mode === "lossless", { config: configs.get(swName)!, keyPrelude });
                    return pushes[sw.name] = new command.local.Command(`${name}-${sw.name}-qos`, {
                        // no `update`: `create` runs again on a change (above), one copy of the command in the state
                        create: cmd.create,
                        delete: cmd.delete,
                        interpreter: cmd.interpreter,
                        ...(agentKey ? { environment: keyEnv } : {}),
                        addPreviousOutputInEnv: false,
                    }, { parent: this, dependsOn: after });
                });
                // After the last stage, the same rules read back from every switch's running state (drift.ts), the links
                // between switches included: a switch that did not take its configuration, or that someone changed by
                // hand since, fails the update with the drift report.
                const last = i === all.length - 1;
                after = [check(last ? `${name}-fabric-check` : `${name}-stage${i}-check`, last ? undefined : stage, stagePushes)];
                if (last) fabricCheck = after[0] as command.local.Command;
            });
        }

        const hostList = plan.hosts.map((h): RoceAnsibleHost => ({ name: h.name, address: h.address, ...(h.sshUser ? { sshUser: h.sshUser } : {}), vars: h.vars }));
        this.switchConfigDigests = plainOutput(Object.fromEntries(rendered.map((r) => [r.switch, r.digest])));
        this.ncclEnv = pulumi.output(plan.ncclEnv);
        this.hostNcclEnv = plainOutput(Object.fromEntries(plan.hosts.map((h) => [h.name, { ...h.ncclEnv }])));

        this.pushedSwitches = Object.keys(pushes);
        parts.set(this, { qos: plan, switchConfigs: rendered, hostList, pushes, checks, fabricCheck });
        // hostNcclEnv stays a property, not a registered output: the engine keeps registered outputs in the stack's
        // state, and a copy of every host's environment there is ~170 B a host (354 KB at 2,048 hosts) of what the
        // plan already holds (docs/state-size.md)
        this.registerOutputs({
            pushedSwitches: this.pushedSwitches,
            switchConfigDigests: this.switchConfigDigests,
            ncclEnv: this.ncclEnv,
        });
    }
}
