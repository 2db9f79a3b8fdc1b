import { OfflineResult } from "./offline";

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

/** Everything the plan verb writes beside plan.json, rendered from the plan alone. */
export function planArtifacts(r: OfflineResult): PlanArtifacts {
    const files: Record<string, string> = {};
    const checks: PlanCheck[] = [];
    files["nccl.env"] = renderEnvFile(r.plan.ncclEnv);
    return { files, checks };
}
