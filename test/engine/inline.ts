/**
 * One program verb (up, preview, destroy, refresh) of the engine tests, run the way an Automation API user runs a
 * program: @pulumi/pulumi/automation's LocalWorkspace with an inline `program` that requires the program module.
 * The SDK serves that program to the CLI over `--client` (automation/stack.js), so no language host binary runs.
 * A child process per verb, so each run loads the program afresh, as `pulumi up` does, and a signal to the process
 * group reaches this process and the CLI as Ctrl-C in a terminal does.
 *
 *   node --import tsx test/engine/inline.ts '<json: {workDir, project, stack, verb, program, opts, events?, cli, holdMs?}>'
 *
 * The CLI's stdout and stderr are passed through as they come; the exit status is the CLI's. With `events`, the
 * engine events (--event-log) are written there, one JSON object a line.
 */
import * as fs from "node:fs";
import { LocalWorkspace, PulumiCommand } from "@pulumi/pulumi/automation";

interface Request {
    workDir: string;
    /** the project's name (its Pulumi.yaml in workDir) */
    project: string;
    stack: string;
    verb: "up" | "preview" | "destroy" | "refresh";
    /** the program module, required inside the inline function */
    program: string;
    /** the Automation API's options for the verb (UpOptions, PreviewOptions, ...) */
    opts?: Record<string, unknown>;
    events?: string;
    /** the folder holding bin/pulumi */
    cli: string;
    /** after the program module has registered its resources, keep the program running this long (ms), so that an
     * interruption lands while it runs however fast the program is (cancel.test.ts) */
    holdMs?: number;
}

async function main(): Promise<number> {
    const req = JSON.parse(process.argv[2]) as Request;
    const pulumiCommand = await PulumiCommand.get({ root: req.cli });
    const stack = await LocalWorkspace.selectStack({
        stackName: req.stack,
        projectName: req.project,
        program: async () => {
            process.stderr.write(`rdmakit-inline: program ${req.program} started\n`);
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const exported = require(req.program);
            if (req.holdMs) {
                process.stderr.write(`rdmakit-inline: program registered its resources; holding ${req.holdMs} ms\n`);
                await new Promise((r) => setTimeout(r, req.holdMs));
            }
            return exported;
        },
    }, { workDir: req.workDir, pulumiCommand });
    const events = req.events ? fs.openSync(req.events, "a") : undefined;
    const opts = {
        ...req.opts,
        color: "never" as const,
        onOutput: (s: string) => process.stdout.write(s),
        onError: (s: string) => process.stderr.write(s),
        ...(events !== undefined ? { onEvent: (e: unknown) => fs.writeSync(events, JSON.stringify(e) + "\n") } : {}),
    };
    try {
        if (req.verb === "up") await stack.up(opts);
        else if (req.verb === "preview") await stack.preview(opts);
        else if (req.verb === "destroy") await stack.destroy(opts);
        else await stack.refresh(opts);
        return 0;
    } catch (e) {
        // A CommandError carries the CLI's exit status; its message repeats the output already passed through.
        const code = (e as { commandResult?: { code?: number } }).commandResult?.code;
        if (typeof code === "number" && code > 0) return code;
        process.stderr.write(`rdmakit-inline: ${req.verb} failed: ${e instanceof Error ? e.message : String(e)}\n`);
        return 1;
    }
}

// Ctrl-C in a terminal signals the whole process group: the CLI, which cancels the update, and this process, which
// must stay up until the CLI is done with the program it serves.
process.on("SIGINT", () => process.stderr.write("rdmakit-inline: SIGINT; waiting for the CLI\n"));
main().then((code) => process.exit(code), (e) => {
    process.stderr.write(`rdmakit-inline: ${e instanceof Error ? e.stack : String(e)}\n`);
    process.exit(1);
});
