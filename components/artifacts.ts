import * as path from "path";
import { evaluatePolicies, verdictDetail } from "../policies/evaluate";
import { OfflineResult } from "./offline";
import { renderInventory } from "./provision/inventory";
import { KIT_HOST_KEY_ALGORITHMS, knownHostsPath } from "./provision/knownhosts";
import { inventoryHosts } from "./provision/nodes";
import { checkConsistency, formatViolation, RULES } from "./roce/consistency";
import { renderSwitchConfigs } from "./roce/render";
import { SpecError } from "./errors";
import { pairRuns, renderHostfile, validationVars, type ValidationVars } from "./validate/component";
import { validationArgsFromPlan } from "./validate/fromPlan";

/** A named check the plan verb prints; mandatory failures make `rdmakit plan` exit 1. */
export interface PlanCheck {
    name: string;
    ok: boolean;
    mandatory: boolean;
    detail?: string;
    /** the check could not be made (no figures to judge by): printed as "skip", never as "ok" */
    skipped?: boolean;
}

export interface PlanArtifacts {
    /** file name (relative to out/<stack>/) → content */
    files: Record<string, string>;
    checks: PlanCheck[];
}

/** `KEY=value` lines, shell- and systemd-EnvironmentFile-compatible. */
export function renderEnvFile(env: Record<string, string>): string {
    return Object.entries(env).map(([k, v]) => `${k}=${/^[A-Za-z0-9_./:,^=-]*$/.test(v) ? v : JSON.stringify(v)}`).join("\n") + "\n";
}

/**
 * nccl-commands.sh: every nccl-tests run validate.yml makes, in its order, from the playbook variables; each pair's
 * line filled in from the one pair command as the role fills it in (validate/component.ts pairRuns).
 */
export function ncclCommandsScript(vars: ValidationVars): string {
    const rounds = pairRuns(vars);
    const out = [
        "# nccl-tests runs that validate.yml makes during `pulumi up` (rendered by `rdmakit plan` from the same variables).",
        "# A list, not a script: each line runs on the node named above it. The all-node runs read the hostfile",
        `# (${vars.nccl_validate_hostfile_path} on the first node; its content is in the file hostfile beside this one).`,
        "",
        "# on every node, alone (NVLink/NVSwitch), at the fixed size:",
        vars.nccl_validate_single_cmd,
        "",
        "# on the first node, all nodes at the fixed size (nccl-tests exits non-zero below NCCL_TESTS_MIN_BW):",
        vars.nccl_validate_all_fixed_cmd,
        "",
        "# on the first node, all nodes, sweep:",
        vars.nccl_validate_all_sweep_cmd,
    ];
    if (rounds.length > 0) {
        const when = vars.nccl_validate_pairwise === "always" ? "always"
            : vars.nccl_validate_pairwise === "never" ? "never (pairwise: never)" : "only when the all-node fixed-size run fails";
        out.push("", `# pairs, to name a slow node: ${when}; the pairs of a round run at once, on their first node`);
        rounds.forEach((round, i) => {
            out.push(`# round ${i + 1}`);
            for (const p of round) out.push(`# ${p.a} + ${p.b} -> ${p.log}`, p.cmd);
        });
    }
    return out.join("\n") + "\n";
}

/**
 * Everything the plan verb writes beside plan.json, rendered from the plan alone with the same functions
 * `pulumi up` uses. On clouds the node addresses are not known offline and say so.
 */
export function planArtifacts(r: OfflineResult): PlanArtifacts {
    const { plan } = r;
    const files: Record<string, string> = {};
    const checks: PlanCheck[] = [];
    files["nccl.env"] = renderEnvFile(plan.ncclEnv);
    if (r.spec.provision) {
        checks.push({
            name: r.hasSecretKey ? "rdmakit:sshPrivateKey is set as a secret (Ansible needs it during pulumi up)"
                : "rdmakit:sshPrivateKey is not set (Ansible needs it during pulumi up)",
            ok: r.hasSecretKey, mandatory: false,
            detail: r.hasSecretKey ? undefined : "pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519",
        });
    }

    const known = plan.fabric === "roce";
    // cloud node addresses are not known offline: a readable placeholder stands in (the renderer takes host-like words)
    const shown = known ? r.spec.roce!.hosts.map((h) => h.address) : plan.validation.hostNames.map((_, i) => `unknown-until-apply-${i}`);
    // no entry host: the nodes are reached directly (an Azure cluster in an existing subnet has no jump host)
    const entry = known || plan.entry === undefined ? undefined : { address: "unknown-until-apply-bastion", user: plan.sshUser };
    // a cloud stack pins the host keys it makes (components/cluster.ts pinHostKeys), as pulumi up's inventory does
    const pin = known ? {} : { knownHostsFile: knownHostsPath(r.stack), pinnedHostKeys: true, hostKeyAlgorithms: KIT_HOST_KEY_ALGORITHMS };
    files["inventory.yml"] = renderInventory({ hosts: inventoryHosts(plan, shown), bastion: entry, vars: plan.ansibleVars, ...pin });

    // The variables validate.yml gets during `pulumi up`, from the same arguments (validationArgsFromPlan) and the same
    // function (validationVars); only the node addresses differ on clouds, where they are unknown until apply.
    try {
        const vars = validationVars(validationArgsFromPlan(plan, r.stack), shown, path.join("out", r.stack, "nccl"));
        files["hostfile"] = renderHostfile(vars);
        files["nccl-commands.sh"] = ncclCommandsScript(vars);
    } catch (e) {
        if (!(e instanceof SpecError)) throw e;
        checks.push({ name: "the validation runs can be built from the plan", ok: false, mandatory: true, detail: e.message });
    }

    if (plan.roce) {
        // every switch pins its SSH host key (the spec refuses one without); the headroom rule C16 needs catalog figures
        const unsized = plan.roce.qos.mode === "lossless"
            ? plan.roce.qos.switches.filter((s) => s.buffer.headroomBytes === undefined || s.buffer.poolBytes === undefined) : [];
        if (unsized.length) {
            checks.push({
                name: "C16 headroom vs switch buffer, where the catalog has no published figures", ok: true, mandatory: false, skipped: true,
                detail: unsized.map((s) => `${s.name} (${s.model ?? "no model given"})`).join(", "),
            });
        }
        const rendered = renderSwitchConfigs(plan.roce.qos);
        for (const c of rendered) files[`switches/${c.fileName}`] = c.text;
        const violations = checkConsistency(plan.roce.qos, rendered);
        for (const [id, rule] of Object.entries(RULES)) {
            const broken = violations.filter((v) => v.rule === id);
            checks.push({
                name: `${id} ${rule}`, ok: broken.length === 0, mandatory: true,
                detail: broken.length ? broken.map(formatViolation).join("; ") : undefined,
            });
        }
    }

    // The policy pack's verdicts on the resources the program registered (policies/evaluate.ts runs the same rules
    // as `pulumi preview --policy-pack policies`). A mandatory violation fails the plan; a policy that cannot run
    // before the cloud answers is advisory, as the policy engine reports it; policies for other fabrics are left out.
    // The spec's quotaRaised is what a team's policy config would say: the partition policy gets the plan's limit.
    const config = plan.azure ? { "azure-ib-vmss-partition-capacity": { partitionLimit: plan.azure.partitionLimit } } : undefined;
    for (const v of evaluatePolicies(r.resources, { stack: r.stack, config })) {
        if (v.notApplicable) continue;
        const violated = v.violations.length > 0;
        checks.push({
            name: v.policy, ok: v.ok,
            mandatory: violated ? v.enforcementLevel === "mandatory" : false,
            detail: verdictDetail(v),
        });
    }
    return { files, checks };
}
