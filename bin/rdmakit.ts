#!/usr/bin/env -S node --import tsx
import { Command, CommanderError } from "commander";

type Register = (program: Command) => void;
/**
 * Each verb and the module that registers it, loaded only when that verb runs (or for the overall help): `plan`,
 * `check` and `switch-config` load the Pulumi SDK (about a second), `nccl-report` does not, and it runs once per
 * validation step.
 */
const VERBS: Record<string, () => Promise<Register>> = {
    "plan": async () => (await import("../components/cli/plan")).registerPlan,
    "nccl-report": async () => (await import("../components/validate/cli")).registerNcclReport,
    "check": async () => (await import("../components/validate/check")).registerCheck,
    "switch-config": async () => (await import("../components/roce/cli")).registerSwitchConfig,
};

/** The rdmakit command line. Each verb lives beside the code it drives; this file only wires them. */
const program = new Command("rdmakit")
    .description("RDMA GPU clusters on Pulumi: plan offline, grade nccl-tests logs, render switch configs")
    .showHelpAfterError()
    // usage errors exit 2 (1 means "a mandatory check failed"); subcommands inherit this when registered after it
    .exitOverride();

async function main(): Promise<void> {
    const verb = process.argv[2];
    const load = verb !== undefined && Object.hasOwn(VERBS, verb) ? [VERBS[verb]] : Object.values(VERBS);
    for (const register of await Promise.all(load.map((l) => l()))) register(program);
    await program.parseAsync(process.argv);
}

main().catch(async (e: unknown) => {
    if (e instanceof CommanderError) {
        // commander has printed the message (and the help) already; --help and --version are not errors
        process.exit(e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help" ? 0 : 2);
    }
    // loaded here: components/errors loads the Pulumi SDK, which nccl-report otherwise never needs
    const { redactSecrets } = await import("../components/errors");
    console.error(redactSecrets(`rdmakit: ${(e as Error).message ?? String(e)}`));
    process.exit(2);
});
