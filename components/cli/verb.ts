import * as path from "path";
import type { Command } from "commander";

/**
 * The exit status of every verb: 0 ok, 1 a check failed (a rule, a grade, a node, drift), 2 bad input or unreadable
 * (a flag, a missing or invalid stack file, a file that is not the tool's output). README.md "The command line" and docs/cli.md document it, and
 * test/cli-contract.test.ts holds every verb to it.
 */
export const EXIT = { ok: 0, failed: 1, badInput: 2 } as const;

/** What a verb's run returns: its output and the exit status. */
export interface VerbOutput { stdout?: string; stderr?: string; code: number }

/** A verb's usage errors exit 2 and its help (or version) exits 0, as every verb of the CLI documents. */
export function exitOnUsage(cmd: Command): Command {
    return cmd.exitOverride((e) => {
        if (e.code === "commander.helpDisplayed" || e.code === "commander.help" || e.code === "commander.version") process.exit(0);
        process.exit(2);
    });
}

/** Prints what a verb's run returned and sets the exit status from it. */
export function printOutput(r: VerbOutput): void {
    if (r.stdout) process.stdout.write(r.stdout);
    if (r.stderr) process.stderr.write(r.stderr);
    process.exitCode = r.code;
}

/** The two ways every verb that reads a stack takes it. */
export interface StackOptions { stack?: string; config?: string }

/** Adds `--stack NAME` and `--config FILE`, worded alike on every verb. */
export function stackOptions(cmd: Command): Command {
    return cmd
        .option("--stack <name>", "the stack: read Pulumi.<name>.yaml from the current directory")
        .option("--config <file>", "read this stack settings file (Pulumi.<stack>.yaml; the stack is its name without Pulumi. and .yaml)");
}

/**
 * The stack file and stack name of `--stack` / `--config`; undefined when neither is given; a string (the usage
 * error, exit 2) when both are.
 */
export function stackFileOf(opts: StackOptions, cwd = process.cwd()): { file: string; stack: string } | string | undefined {
    if (opts.stack !== undefined && opts.config !== undefined) return "give --stack or --config, not both";
    if (opts.stack !== undefined) return { file: path.join(cwd, `Pulumi.${opts.stack}.yaml`), stack: opts.stack };
    if (opts.config === undefined) return undefined;
    const file = path.resolve(cwd, opts.config);
    return { file, stack: path.basename(file).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "") };
}
