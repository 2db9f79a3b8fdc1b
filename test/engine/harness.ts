/**
 * The real Pulumi CLI for the engine tests: binaries from test/engine/build.sh (or a `pulumi` on PATH), a local file
 * backend and PULUMI_HOME in a temporary directory, the passphrase secrets provider, no update checks and no plugin
 * downloads. Programs run as Automation API inline programs (inline.ts: the SDK serves the program to the CLI over
 * --client), so no language host binary is involved. The project folder is in the temporary directory too: its
 * Pulumi.yaml (name rdmakit, as the repository's) names the analyzer shim the CLI starts policy packs with
 * (plugins/pulumi-analyzer-policy-nodejs), and each stack's config is its Pulumi.<stack>.yaml there, so nothing is
 * written into the clone.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";

export const ROOT = path.resolve(__dirname, "..", "..");
const BUILD = path.join(__dirname, "build.sh");
const INLINE = path.join(__dirname, "inline.ts");
/** the analyzer shim for Node.js policy packs (see the file) */
export const PLUGINS = path.join(__dirname, "plugins");
export const SKIP = process.env.RDMAKIT_SKIP_ENGINE_TESTS === "1";

export interface EngineBins { dir: string; status: Map<string, string>; }

/** Builds (or finds) the binaries; the build's progress goes to stderr. Throws if the CLI is missing. */
export function engineBins(): EngineBins {
    const built = spawnSync("bash", [BUILD], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    if (built.status !== 0) throw new Error(`test/engine/build.sh failed (exit ${built.status}); set RDMAKIT_SKIP_ENGINE_TESTS=1 to skip the engine tests`);
    const dir = built.stdout.trim().split("\n").pop()!;
    const lines = spawnSync("bash", [BUILD, "--status"], { encoding: "utf8" }).stdout.trim().split("\n");
    const status = new Map(lines.map((l) => [l.split(" ")[0], l.slice(l.indexOf(" ") + 1)]));
    need({ dir, status }, "pulumi");
    return { dir, status };
}

/** The path of a binary (or "python-venv") build.sh provides; throws naming why it could not. */
export function need(bins: EngineBins, name: string): string {
    const s = bins.status.get(name) ?? "missing (not listed by build.sh --status)";
    if (s.startsWith("ok ")) return s.slice(3).replace(/ \(from PATH\)$/, "");
    if (fs.existsSync(path.join(bins.dir, name))) return path.join(bins.dir, name);
    throw new Error(`the engine tests need ${name}, which test/engine/build.sh could not provide: ${s}`);
}

/**
 * Lines of an OpenSSH private key that only this key has, to search for it: the base64 body without its first
 * line, which encodes the format header ("openssh-key-v1", cipher "none", ...) that every unencrypted ed25519 key
 * shares (so another program's key would match it).
 */
export function keyNeedles(privateKey: string): string[] {
    const body = privateKey.split("\n").filter((l) => l && !l.startsWith("-----"));
    if (body.length < 3) throw new Error("not an OpenSSH private key");
    return body.slice(1);
}

/** Processes whose environment or command line contains any of `needles`: "<pid> <comm> (environ|cmdline)". */
export function processesHolding(needles: string[]): string[] {
    const found: string[] = [];
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        for (const what of ["environ", "cmdline"]) {
            let text: string;
            try { text = fs.readFileSync(`/proc/${pid}/${what}`, "latin1"); } catch { continue; }
            if (needles.some((n) => text.includes(n))) {
                let comm = "?";
                try { comm = fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim(); } catch { /* gone */ }
                found.push(`${pid} ${comm} (${what})`);
            }
        }
    }
    return found;
}

export interface PulumiRun { code: number; stdout: string; stderr: string; }

export type ProgramVerb = "up" | "preview" | "destroy" | "refresh";

/** Collects a child's output; resolves on exit (SIGKILL after `timeoutMs`). */
function collect(child: ChildProcess, timeoutMs: number, input?: string): Promise<PulumiRun> {
    return new Promise((resolve, reject) => {
        let stdout = "", stderr = "";
        child.stdout!.on("data", (d) => { stdout += d; });
        child.stderr!.on("data", (d) => { stderr += d; });
        const timer = setTimeout(() => {
            try { process.kill(-child.pid!, "SIGKILL"); } catch { child.kill("SIGKILL"); }
        }, timeoutMs);
        child.on("error", reject);
        child.on("close", (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stdout, stderr }); });
        child.stdin?.end(input ?? "");
    });
}

export class Engine {
    readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-engine-"));
    readonly backend = path.join(this.tmp, "state");
    /** the project folder the CLI and the Automation API work in */
    readonly project = path.join(this.tmp, "project");
    readonly passphrase = "rdmakit engine test passphrase";
    /** the program module the inline program requires: the repository's own stack program */
    program = path.join(ROOT, "index.ts");
    /** more environment for every CLI and program run (e.g. stand-in switch commands first on PATH) */
    extraEnv: NodeJS.ProcessEnv = {};

    /**
     * `project`: the Pulumi.yaml name and runtime (default: rdmakit, nodejs, as the repository's) and the provider
     * plugins it names (plugins.providers: [{name, path}], a folder holding pulumi-resource-<name>).
     */
    constructor(readonly bins: EngineBins, readonly projectSettings: { name?: string; runtime?: string; providers?: { name: string; path: string }[] } = {}) {
        fs.mkdirSync(this.backend);
        fs.mkdirSync(path.join(this.tmp, "home"));
        fs.mkdirSync(this.project);
        // The analyzer shim the CLI looks for when no nodejs language host is there (analyzer_plugin.go
        // NewPolicyAnalyzer: plugin "policy-nodejs"), as a project plugin (Pulumi.yaml plugins.analyzers).
        fs.writeFileSync(path.join(this.project, "Pulumi.yaml"), toYaml({
            name: projectSettings.name ?? "rdmakit", runtime: projectSettings.runtime ?? "nodejs",
            plugins: {
                analyzers: [{ name: "policy-nodejs", path: PLUGINS }],
                ...(projectSettings.providers ? { providers: projectSettings.providers } : {}),
            },
        }));
    }

    env(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
        return {
            ...process.env,
            PATH: `${this.bins.dir}:${process.env.PATH}`,
            // https://www.pulumi.com/docs/iac/cli/environment-variables/ (sdk/go/common/env/env.go@v3.248.0)
            PULUMI_HOME: path.join(this.tmp, "home"),
            PULUMI_BACKEND_URL: `file://${this.backend}`,
            PULUMI_CONFIG_PASSPHRASE: this.passphrase,
            PULUMI_SKIP_UPDATE_CHECK: "true",
            PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
            PULUMI_SKIP_CONFIRMATIONS: "true",
            NO_COLOR: "1",
            ...this.extraEnv,
            ...extra,
        };
    }

    /** Runs `pulumi <args>` in the project folder (or `cwd`); never throws on a non-zero exit. */
    pulumi(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<PulumiRun> {
        const child = spawn(path.join(this.bins.dir, "pulumi"), [...args, "--non-interactive", "--color", "never"], {
            cwd: opts.cwd ?? this.project, env: this.env(opts.env), stdio: ["pipe", "pipe", "pipe"],
        });
        return collect(child, opts.timeoutMs ?? 240_000, opts.input);
    }

    /**
     * Starts a program verb through the Automation API (inline.ts) in its own process group, so that a signal to
     * the group reaches the Automation API process and the CLI together, as Ctrl-C in a terminal does.
     */
    startProgram(stack: string, verb: ProgramVerb, opts: Record<string, unknown> = {}, run: { events?: string; holdMs?: number } = {}): ChildProcess {
        const req = {
            workDir: this.project, project: this.projectSettings.name ?? "rdmakit", stack, verb, program: this.program, opts,
            events: run.events, cli: path.dirname(this.bins.dir), holdMs: run.holdMs,
        };
        return spawn(process.execPath, ["--import", require.resolve("tsx"), INLINE, JSON.stringify(req)], {
            cwd: this.project, env: this.env(), stdio: ["ignore", "pipe", "pipe"], detached: true,
        });
    }

    /** A program verb through the Automation API (inline.ts); never throws on a non-zero exit. */
    onStack(stack: string, verb: ProgramVerb, opts: Record<string, unknown> = {}, run: { events?: string; timeoutMs?: number } = {}): Promise<PulumiRun> {
        return collect(this.startProgram(stack, verb, opts, run), run.timeoutMs ?? 240_000);
    }

    configFile(stack: string): string { return path.join(this.project, `Pulumi.${stack}.yaml`); }

    /** `pulumi stack init` with the passphrase provider, then the cluster spec as the stack's config. */
    async initStack(stack: string, cluster: unknown): Promise<void> {
        const r = await this.pulumi(["stack", "init", stack, "--secrets-provider", "passphrase"]);
        if (r.code !== 0) throw new Error(`pulumi stack init ${stack} failed:\n${r.stdout}${r.stderr}`);
        this.setCluster(stack, cluster);
    }

    /** Writes the cluster into the stack's config file as a user does (examples/*.yaml → Pulumi.<stack>.yaml). */
    setCluster(stack: string, cluster: unknown): void {
        const file = this.configFile(stack);
        const doc = (parseYaml(fs.existsSync(file) ? fs.readFileSync(file, "utf8") : "") ?? {}) as { config?: Record<string, unknown> };
        doc.config = { ...doc.config, "rdmakit:cluster": cluster };
        fs.writeFileSync(file, toYaml(doc));
    }

    /** `pulumi config set --secret rdmakit:<key>` with the value on stdin, as a user does with `< ~/.ssh/id_ed25519`. */
    async setSecret(stack: string, key: string, value: string): Promise<void> {
        const r = await this.pulumi(["config", "set", "--stack", stack, "--secret", `rdmakit:${key}`], { input: value });
        if (r.code !== 0) throw new Error(`pulumi config set --secret failed:\n${r.stdout}${r.stderr}`);
    }

    /** The stack's checkpoint as the file backend keeps it (.pulumi/stacks/<project>/<stack>.json). */
    stateFile(stack: string): string {
        return path.join(this.backend, ".pulumi", "stacks", this.projectSettings.name ?? "rdmakit", `${stack}.json`);
    }

    remove(): void {
        fs.rmSync(this.tmp, { recursive: true, force: true });
    }
}
