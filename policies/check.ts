/**
 * `node --import tsx policies/check.ts <stack file> [--json]`: runs the `pulumi up` program offline (as
 * `rdmakit plan` does) with the dependency recording the stack policies need, and prints each policy's verdict.
 * Exit status: 0 all mandatory policies pass, 1 a mandatory policy reports a violation, 2 the stack file is invalid.
 */
import * as path from "path";
import { SpecError } from "../components/errors";
import { runProgramOffline, type OfflineResult } from "../components/offline";
import { evaluatePolicies, verdictDetail, type PolicySubject } from "./evaluate";

const REPO = path.resolve(__dirname, "..");

async function main(argv: string[]): Promise<number> {
    const file = argv.find((a) => !a.startsWith("--"));
    if (!file) {
        console.error("usage: policies/check.ts <stack file> [--json]");
        return 2;
    }
    const stack = path.basename(file).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "");
    let run: Omit<OfflineResult, "resources"> & { resources: PolicySubject[] };
    try {
        run = await runProgramOffline(path.resolve(file), stack, path.join(REPO, "index.ts"));
    } catch (e) {
        if (e instanceof SpecError) {
            console.error(`${file}: ${e.message}`);
            return 2;
        }
        throw e;
    }
    const verdicts = evaluatePolicies(run.resources, { stack });
    if (argv.includes("--json")) {
        // resources as recorded (inputs raw: unknowns as Pulumi's sentinel, secrets in their envelope), so a caller can evaluate them again
        console.log(JSON.stringify({ stack, verdicts, resources: run.resources }));
    } else {
        for (const v of verdicts) {
            const state = v.notApplicable ? "n/a " : v.ok ? "ok  " : v.violations.length && v.enforcementLevel === "mandatory" ? "FAIL" : "warn";
            const detail = verdictDetail(v);
            console.log(`${state} ${v.policy} (${v.enforcementLevel})${detail ? ` — ${detail}` : ""}`);
        }
    }
    return verdicts.some((v) => v.enforcementLevel === "mandatory" && v.violations.length > 0) ? 1 : 0;
}

main(process.argv.slice(2)).then((code) => {
    process.exitCode = code;
}, (e) => {
    console.error(e);
    process.exitCode = 1;
});
