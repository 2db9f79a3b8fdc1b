#!/usr/bin/env -S node --import tsx
import { Command, CommanderError } from "commander";

type Register = (program: Command) => void;
/* eslint-disable @typescript-eslint/no-require-imports -- require, not import(): the installed command loads this file
   through tsx's CommonJS hook (bin/rdmakit.cjs), under which a dynamic import() goes to Node's own ESM loader and
   finds no .ts module */
/**
 * Each verb and the module that registers it, loaded only when that verb runs (or for the overall help): `plan`,
 * `check` and `switch-config` load the Pulumi SDK (about a second), `nccl-report` does not, and it runs once per
 * validation step.
 */
const VERBS: Record<string, () => Register> = {
    "plan": () => (require("../components/cli/plan") as typeof import("../components/cli/plan")).registerPlan,
    "nccl-report": () => (require("../components/validate/cli") as typeof import("../components/validate/cli")).registerNcclReport,
    "check": () => (require("../components/validate/check") as typeof import("../components/validate/check")).registerCheck,
    "switch-config": () => (require("../components/roce/cli") as typeof import("../components/roce/cli")).registerSwitchConfig,
    "fabric": () => (require("../components/roce/fabric-cli") as typeof import("../components/roce/fabric-cli")).registerFabric,
    "slurm-config": () => (require("../components/slurm/cli") as typeof import("../components/slurm/cli")).registerSlurmConfig,
    "health": () => (require("../components/health/cli") as typeof import("../components/health/cli")).registerHealth,
    "status": () => (require("../components/day2/cli") as typeof import("../components/day2/cli")).registerDay2,
    "ssh": () => (require("../components/day2/cli") as typeof import("../components/day2/cli")).registerDay2,
    "repair": () => (require("../components/day2/cli") as typeof import("../components/day2/cli")).registerDay2,
    "scale": () => (require("../components/day2/cli") as typeof import("../components/day2/cli")).registerDay2,
};
/** components/errors loads the Pulumi SDK, which nccl-report otherwise never needs: loaded when an error is printed. */
const redactSecrets = (text: string): string => (require("../components/errors") as typeof import("../components/errors")).redactSecrets(text);
/* eslint-enable @typescript-eslint/no-require-imports */

/** The rdmakit command line. Each verb lives beside the code it drives; this file only wires them. */
const program = new Command("rdmakit")
    .description("RDMA GPU clusters on Pulumi: plan offline, grade nccl-tests logs, render switch configs. " +
        "Every verb exits 0 ok, 1 a check failed, 2 bad input or unreadable")
    // the package's own version (package.json beside bin/, in a checkout and in an installed package alike)
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    .version((require("../package.json") as { version: string }).version, "-V, --version")
    .showHelpAfterError()
    // usage errors exit 2 (1 means "a mandatory check failed"); subcommands inherit this when registered after it
    .exitOverride();

async function main(): Promise<void> {
    const verb = process.argv[2];
    // --version needs no verb; help and an unknown word list them all
    const load = verb === "--version" || verb === "-V" ? [] : verb !== undefined && Object.hasOwn(VERBS, verb) ? [VERBS[verb]] : Object.values(VERBS);
    // one module may register several verbs (status, ssh, repair): each once
    for (const register of new Set(load.map((l) => l()))) register(program);
    await program.parseAsync(process.argv);
}

main().catch((e: unknown) => {
    if (e instanceof CommanderError) {
        // commander has printed the message (and the help) already; --help and --version are not errors
        process.exit(e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help" ? 0 : 2);
    }
    console.error(redactSecrets(`rdmakit: ${(e as Error).message ?? String(e)}`));
    process.exit(2);
});
