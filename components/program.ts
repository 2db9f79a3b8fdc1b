import * as fs from "fs";
import { createRequire } from "module";
import * as path from "path";
import * as YAML from "yaml";
import { SpecError } from "./errors";
import type { RecordedResource } from "./offline";
import { withDependencies } from "./record";

/**
 * `rdmakit plan --program`: a team's own Pulumi program (TypeScript or JavaScript) run on Pulumi's mock engine in
 * preview mode, offline, recording every resource it registers with its URN and dependencies, so the policy pack
 * can be evaluated over it. The program's own @pulumi/pulumi is the one mocked (a program has its own node_modules).
 * TypeScript is loaded through tsx (transpiled, not type-checked).
 */

export interface ProgramRun {
    program: string;
    project: string;
    stack: string;
    resources: RecordedResource[];
    /** the stack config has rdmakit:cluster but no rdmakit:sshPrivateKey: a placeholder stood in, as `rdmakit plan` does */
    keyMissing?: boolean;
    /** the stack file's `rdmakit:cluster` value, when it has one */
    cluster?: unknown;
}

const issue = (p: string, message: string, allowed?: string) => new SpecError([{ path: p, message, allowed }], "invalid program or stack file");

/**
 * The program's entry, as the Node language host picks it: Pulumi.yaml `main`, else package.json `main`, else
 * index.ts / index.js in the folder (source: pulumi-runtime.md §3.3). A file is its own entry.
 */
export function programEntry(target: string): { entry: string; dir: string; project: string } {
    if (!fs.existsSync(target)) throw issue(target, "does not exist", "a Pulumi program folder (with Pulumi.yaml) or its entry file (.ts or .js)");
    const dir = fs.statSync(target).isDirectory() ? target : path.dirname(target);
    const yamlFile = path.join(dir, "Pulumi.yaml");
    const project = fs.existsSync(yamlFile) ? (YAML.parse(fs.readFileSync(yamlFile, "utf8"))?.name as string | undefined) : undefined;
    if (!fs.statSync(target).isDirectory()) return { entry: target, dir, project: project ?? path.basename(dir) };
    const main = fs.existsSync(yamlFile) ? YAML.parse(fs.readFileSync(yamlFile, "utf8"))?.main : undefined;
    const pkg = path.join(dir, "package.json");
    const pkgMain = fs.existsSync(pkg) ? JSON.parse(fs.readFileSync(pkg, "utf8")).main : undefined;
    for (const c of [main, pkgMain, "index.ts", "index.js"].filter((x): x is string => typeof x === "string")) {
        const f = path.resolve(dir, c);
        if (fs.existsSync(f) && fs.statSync(f).isFile()) return { entry: f, dir, project: project ?? path.basename(dir) };
    }
    throw issue(target, "has no program entry", "Pulumi.yaml main, package.json main, index.ts or index.js");
}

/**
 * A Pulumi.<stack>.yaml's `config:` as the engine hands it to a program (PULUMI_CONFIG: `<ns>:<key>` → string, objects
 * as JSON; a bare key belongs to the project). `secure:` values cannot be decrypted offline: they become a placeholder
 * secret, never the ciphertext.
 */
export function stackConfig(file: string | undefined, project: string): { config: Record<string, string>; secrets: string[] } {
    if (!file) return { config: {}, secrets: [] };
    let doc: any;
    try {
        doc = YAML.parse(fs.readFileSync(file, "utf8"));
    } catch (e) {
        throw issue(file, `cannot be read as a Pulumi stack settings file: ${(e as Error).message}`);
    }
    const raw = doc?.config ?? {};
    if (typeof raw !== "object" || Array.isArray(raw)) throw issue(`${file}: config`, "is not a mapping", "config: { <namespace>:<key>: value }");
    const config: Record<string, string> = {};
    const secrets: string[] = [];
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
        const key = k.includes(":") ? k : `${project}:${k}`;
        if (v && typeof v === "object" && "secure" in v) {
            config[key] = "offline-placeholder-secret";
            secrets.push(key);
        } else {
            config[key] = typeof v === "string" ? v : JSON.stringify(v);
        }
    }
    return { config, secrets };
}

/** Runs the program under the mocks of its own @pulumi/pulumi; returns what it registered. */
export async function runTeamProgram(target: string, stackFile?: string): Promise<ProgramRun> {
    const { entry, dir, project } = programEntry(path.resolve(target));
    const stack = stackFile ? path.basename(stackFile).replace(/\.ya?ml$/, "").replace(/^Pulumi\./, "") : "dev";
    const { config, secrets } = stackConfig(stackFile, project);
    // `rdmakit plan --config` plans a stack without its key and warns (components/offline.ts): the same stack planned
    // through a program that reads the key from config gets the same placeholder and the same warning, not a refusal
    const keyMissing = config["rdmakit:cluster"] !== undefined && config["rdmakit:sshPrivateKey"] === undefined;
    if (keyMissing) {
        config["rdmakit:sshPrivateKey"] = "offline-placeholder-secret";
        secrets.push("rdmakit:sshPrivateKey");
    }
    const req = createRequire(path.join(dir, "noop.js"));
    let pulumi: typeof import("@pulumi/pulumi");
    let mocks: typeof import("@pulumi/pulumi/runtime/mocks");
    try {
        pulumi = req("@pulumi/pulumi");
        mocks = req("@pulumi/pulumi/runtime/mocks");
    } catch {
        throw issue(dir, "cannot load @pulumi/pulumi from the program's folder", "run npm install there first");
    }
    const resources: RecordedResource[] = [];
    const run = async (): Promise<ProgramRun> => {
        await pulumi.runtime.setMocks({
            newResource(args) {
                resources.push({ type: args.type, name: args.name, custom: args.custom ?? true, inputs: args.inputs });
                // only inputs are known before the cloud answers: every computed output stays unknown
                return { id: undefined, state: { ...args.inputs } };
            },
            call() {
                return {}; // invoke results are the cloud's: unknown offline
            },
        }, project, stack, true);
        pulumi.runtime.setAllConfig(config, secrets);
        const failures: unknown[] = [];
        // A failed apply (an input refused once it is known) rejects a registration that the mock engine's disconnect
        // then waits for with nothing left to run: the first failure ends the wait.
        let failed: () => void = () => undefined;
        const firstFailure = new Promise<void>((resolve) => { failed = resolve; });
        const onRejection = (e: unknown) => { failures.push(e); failed(); };
        process.on("unhandledRejection", onRejection);
        try {
            // eslint-disable-next-line @typescript-eslint/no-require-imports
            const mod = require(entry);
            // a program may export a (async) function, which the language host calls
            const main = typeof mod === "function" ? mod : typeof mod?.default === "function" ? mod.default : undefined;
            if (main) await Promise.race([main(), firstFailure]);
            await Promise.race([pulumi.runtime.disconnect(), firstFailure]);
        } finally {
            process.off("unhandledRejection", onRejection);
        }
        if (failures.length > 0) throw failures[0];
        let cluster: unknown;
        try {
            cluster = config["rdmakit:cluster"] !== undefined ? JSON.parse(config["rdmakit:cluster"]) : undefined;
        } catch {
            cluster = undefined; // a plain string, not the cluster object: nothing to plan
        }
        return { program: entry, project, stack, resources, ...(keyMissing ? { keyMissing } : {}), ...(cluster !== undefined ? { cluster } : {}) };
    };
    return withDependencies(run, mocks.MockMonitor);
}
