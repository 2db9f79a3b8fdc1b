import { evaluatePolicies, verdictDetail } from "../policies/evaluate";
import { OfflineResult } from "./offline";
import { renderInventory } from "./provision/inventory";
import { inventoryHosts } from "./provision/nodes";
import { checkConsistency, formatViolation, RULES } from "./roce/consistency";
import { renderSwitchConfigs } from "./roce/render";
import { buildNcclCommands } from "./validate/commands";

/** A named check the plan verb prints; mandatory failures make `rdmakit plan` exit 1. */
export interface PlanCheck {
    name: string;
    ok: boolean;
    mandatory: boolean;
    detail?: string;
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
            name: "rdmakit:sshPrivateKey is set as a secret (Ansible needs it during pulumi up)",
            ok: r.hasSecretKey, mandatory: false,
            detail: r.hasSecretKey ? undefined : "pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519",
        });
    }

    const known = plan.fabric === "roce";
    // cloud node addresses are not known offline: a readable placeholder stands in (the renderer takes host-like words)
    const shown = known ? r.spec.roce!.hosts.map((h) => h.address) : plan.validation.hostNames.map((_, i) => `unknown-until-apply-${i}`);
    const entry = known ? undefined : { address: "unknown-until-apply-bastion", user: plan.sshUser };
    files["inventory.yml"] = renderInventory({ hosts: inventoryHosts(plan, shown), bastion: entry, vars: plan.ansibleVars });

    const cmds = buildNcclCommands({
        fabric: plan.fabric, hosts: shown, gpusPerNode: plan.nodes.gpusPerNode,
        ncclEnv: { ...plan.ncclEnv, ...plan.validation.forcedNet },
        nccltestsDir: plan.validation.ncclTestsDir, mpiHome: plan.validation.mpiHome,
        fixedBytes: plan.validation.allNodes.gradeFromBytes, sweepMaxBytes: plan.validation.maxBytes,
        iters: plan.validation.iterations, timeoutSeconds: plan.validation.timeoutMinutes * 60,
    });
    files["hostfile"] = cmds.hostfile;
    files["nccl-commands.sh"] = [
        "# nccl-tests runs that validate.yml makes (from the first node)",
        `# single node:\n${cmds.singleNode.shell}`,
        `# all nodes, fixed size:\n${cmds.allNodeFixed.shell}`,
        `# all nodes, sweep:\n${cmds.allNodeSweep.shell}`,
        "",
    ].join("\n\n");

    if (plan.roce) {
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
    for (const v of evaluatePolicies(r.resources, { stack: r.stack })) {
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
