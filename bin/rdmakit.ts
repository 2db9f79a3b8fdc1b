#!/usr/bin/env -S node --import tsx
import { Command, CommanderError } from "commander";
import { registerPlan } from "../components/cli/plan";
import { registerNcclReport } from "../components/validate/cli";
import { registerCheck } from "../components/validate/check";
import { registerSwitchConfig } from "../components/roce/cli";
import { redactSecrets } from "../components/errors";

/** The rdmakit command line. Each verb lives beside the code it drives; this file only wires them. */
const program = new Command("rdmakit")
    .description("RDMA GPU clusters on Pulumi: plan offline, grade nccl-tests logs, render switch configs")
    .showHelpAfterError()
    // usage errors exit 2 (1 means "a mandatory check failed"); subcommands inherit this when registered after it
    .exitOverride();

registerPlan(program);
registerNcclReport(program);
registerCheck(program);
registerSwitchConfig(program);

program.parseAsync(process.argv).catch((e: unknown) => {
    if (e instanceof CommanderError) {
        // commander has printed the message (and the help) already; --help and --version are not errors
        process.exit(e.code === "commander.helpDisplayed" || e.code === "commander.version" || e.code === "commander.help" ? 0 : 2);
    }
    console.error(redactSecrets(`rdmakit: ${(e as Error).message ?? String(e)}`));
    process.exit(2);
});
