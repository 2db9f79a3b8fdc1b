import type { Command } from "commander";

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
