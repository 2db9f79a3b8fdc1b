#!/usr/bin/env -S node --import tsx
import { Command } from "commander";
import { registerPlan } from "../components/cli/plan";
import { registerNcclReport } from "../components/validate/cli";
import { registerCheck } from "../components/validate/check";
import { registerSwitchConfig } from "../components/roce/cli";

/** The rdmakit command line. Each verb lives beside the code it drives; this file only wires them. */
const program = new Command("rdmakit")
    .description("RDMA GPU clusters on Pulumi: plan offline, grade nccl-tests logs, render switch configs")
    .showHelpAfterError();

registerPlan(program);
registerNcclReport(program);
registerCheck(program);
registerSwitchConfig(program);

program.parseAsync(process.argv).catch((e: unknown) => {
    console.error(`rdmakit: ${(e as Error).message ?? String(e)}`);
    process.exit(2);
});
