/**
 * Where day-2 verbs get the operating state: the stack itself, through the Pulumi CLI of the user's own login and
 * backend (`pulumi stack output --json --stack <name>`, run in the checkout, so Pulumi.yaml names the project and
 * PULUMI_BACKEND_URL / `pulumi login` the backend), from any machine. Only when the user points at a folder
 * (`--out out/<stack>`) is the file the last `pulumi up` wrote there read instead (state.json).
 * Secrets are never asked for: no --show-secrets; the state holds none (state.ts).
 */
import * as fs from "node:fs";
import * as path from "node:path";
import { spawnSync } from "node:child_process";
import { type OperatingState, STATE_FILE, STATE_OUTPUT, StateError, parseOperatingState } from "./state";

export interface StateSource {
    /** the stack name, as `pulumi stack select` takes it (`prod`, `org/project/prod`) */
    stack?: string;
    /** a folder holding state.json (out/<stack>/ of the machine that ran pulumi up) */
    out?: string;
}

/** Pulumi's stack names: `name`, `org/name` or `org/project/name` (letters, digits, - _ .). */
const STACK = /^[A-Za-z0-9._-]+(\/[A-Za-z0-9._-]+){0,2}$/;

/** The operating state and where it came from, or throws StateError saying what to do. */
export function readState(src: StateSource, cwd = process.cwd(), env: NodeJS.ProcessEnv = process.env): { state: OperatingState; from: string } {
    if ((src.stack === undefined) === (src.out === undefined)) throw new StateError("give --stack NAME (read from the stack's backend) or --out DIR (a folder with state.json)");
    if (src.out !== undefined) {
        const file = path.join(path.resolve(cwd, src.out), STATE_FILE);
        let text: string;
        try {
            text = fs.readFileSync(file, "utf8");
        } catch (e) {
            throw new StateError(`--out: cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message}); pulumi up writes it at every deployment`);
        }
        return { state: parseOperatingState(parseJson(text, file), file), from: file };
    }
    const stack = src.stack as string;
    if (!STACK.test(stack)) throw new StateError(`--stack ${JSON.stringify(stack)}: not a stack name (name, org/name or org/project/name)`);
    const outputs = stackOutputs(stack, cwd, env);
    return { state: parseOperatingState(outputs[STATE_OUTPUT], `stack ${stack}`), from: `stack ${stack}` };
}

/** `pulumi stack output --json --stack <name>` in `cwd`: the outputs, secrets shown as "[secret]". */
export function stackOutputs(stack: string, cwd: string, env: NodeJS.ProcessEnv): Record<string, unknown> {
    const r = spawnSync("pulumi", ["stack", "output", "--json", "--stack", stack, "--non-interactive"], {
        cwd, env, encoding: "utf8", maxBuffer: 256 * 1024 * 1024, timeout: 120_000,
    });
    if (r.error) {
        const why = (r.error as NodeJS.ErrnoException).code === "ENOENT" ? "the pulumi CLI is not on PATH" : r.error.message;
        throw new StateError(`cannot read stack ${stack}: ${why}`);
    }
    if (r.status !== 0) {
        const said = (r.stderr || r.stdout).trim().split("\n").slice(-3).join(" ").slice(0, 400);
        throw new StateError(`pulumi stack output --stack ${stack} failed (exit ${r.status}): ${said}. Log in to the stack's backend ` +
            "(pulumi login <url>; PULUMI_CONFIG_PASSPHRASE for a passphrase stack) and run this in a checkout of the project");
    }
    const v = parseJson(r.stdout, `pulumi stack output --stack ${stack}`);
    if (typeof v !== "object" || v === null) throw new StateError(`pulumi stack output --stack ${stack}: not a JSON object`);
    return v as Record<string, unknown>;
}

function parseJson(text: string, where: string): unknown {
    try {
        return JSON.parse(text);
    } catch (e) {
        throw new StateError(`${where}: not JSON (${(e as Error).message})`);
    }
}
