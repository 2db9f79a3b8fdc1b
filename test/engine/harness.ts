/**
 * The real Pulumi CLI for the engine tests: binaries from test/engine/build.sh (or a `pulumi` on PATH), a local file
 * backend and PULUMI_HOME in a temporary directory, the passphrase secrets provider, no update checks and no plugin
 * downloads. Programs run from the repository root with the project's own Pulumi.yaml; each stack's config is a
 * file in the temporary directory passed with --config-file, so nothing is written into the clone but the stack
 * file `pulumi stack init` insists on, which `remove()` deletes.
 */
import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";

export const ROOT = path.resolve(__dirname, "..", "..");
const BUILD = path.join(__dirname, "build.sh");
export const SKIP = process.env.RDMAKIT_SKIP_ENGINE_TESTS === "1";

export interface EngineBins { dir: string; status: Map<string, string>; }

/** Builds (or finds) the binaries; the build's progress goes to stderr. Throws if the CLI or the Node.js host is missing. */
export function engineBins(): EngineBins {
    const built = spawnSync("bash", [BUILD], { encoding: "utf8", stdio: ["ignore", "pipe", "inherit"] });
    if (built.status !== 0) throw new Error(`test/engine/build.sh failed (exit ${built.status}); set RDMAKIT_SKIP_ENGINE_TESTS=1 to skip the engine tests`);
    const dir = built.stdout.trim().split("\n").pop()!;
    const lines = spawnSync("bash", [BUILD, "--status"], { encoding: "utf8" }).stdout.trim().split("\n");
    const status = new Map(lines.map((l) => [l.split(" ")[0], l.slice(l.indexOf(" ") + 1)]));
    for (const need of ["pulumi", "pulumi-language-nodejs"]) {
        const s = status.get(need) ?? "missing";
        if (!s.startsWith("ok") && !fs.existsSync(path.join(dir, need))) {
            throw new Error(`the engine tests need ${need}, which test/engine/build.sh could not provide: ${s}`);
        }
    }
    return { dir, status };
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

export interface PulumiRun { code: number; stdout: string; stderr: string; }

export class Engine {
    readonly tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-engine-"));
    readonly backend = path.join(this.tmp, "state");
    readonly passphrase = "rdmakit engine test passphrase";
    private readonly stacks: string[] = [];

    constructor(readonly bins: EngineBins) {
        fs.mkdirSync(this.backend);
        fs.mkdirSync(path.join(this.tmp, "home"));
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
            ...extra,
        };
    }

    /** Runs `pulumi <args>` in the repository root (or `cwd`); never throws on a non-zero exit. */
    pulumi(args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv; input?: string; timeoutMs?: number } = {}): Promise<PulumiRun> {
        return new Promise((resolve, reject) => {
            const child = spawn(path.join(this.bins.dir, "pulumi"), [...args, "--non-interactive", "--color", "never"], {
                cwd: opts.cwd ?? ROOT, env: this.env(opts.env), stdio: ["pipe", "pipe", "pipe"],
            });
            let stdout = "", stderr = "";
            child.stdout.on("data", (d) => { stdout += d; });
            child.stderr.on("data", (d) => { stderr += d; });
            const timer = setTimeout(() => child.kill("SIGKILL"), opts.timeoutMs ?? 240_000);
            child.on("error", reject);
            child.on("close", (code) => { clearTimeout(timer); resolve({ code: code ?? -1, stdout, stderr }); });
            child.stdin.end(opts.input ?? "");
        });
    }

    /** Starts `pulumi <verb> --stack s --config-file f` and hands back the process (for the cancel test's signals). */
    start(stack: string, verb: string[]): ChildProcess {
        return spawn(path.join(this.bins.dir, "pulumi"), [...verb, "--stack", stack, "--config-file", this.configFile(stack), "--non-interactive", "--color", "never"], {
            cwd: ROOT, env: this.env(), stdio: ["ignore", "pipe", "pipe"],
        });
    }

    configFile(stack: string): string { return path.join(this.tmp, `Pulumi.${stack}.yaml`); }

    /** `pulumi stack init` with the passphrase provider, then the cluster spec as the stack's config. */
    async initStack(stack: string, cluster: unknown): Promise<void> {
        this.stacks.push(stack);
        const r = await this.pulumi(["stack", "init", stack, "--secrets-provider", "passphrase"]);
        if (r.code !== 0) throw new Error(`pulumi stack init ${stack} failed:\n${r.stdout}${r.stderr}`);
        // stack init writes the passphrase salt into Pulumi.<stack>.yaml beside Pulumi.yaml: keep it with the config.
        const written = path.join(ROOT, `Pulumi.${stack}.yaml`);
        const salt = fs.existsSync(written) ? fs.readFileSync(written, "utf8") : "";
        fs.rmSync(written, { force: true });
        fs.writeFileSync(this.configFile(stack), salt);
        this.setCluster(stack, cluster);
    }

    /** Writes the cluster into the stack's config file as a user does (examples/*.yaml → Pulumi.<stack>.yaml). */
    setCluster(stack: string, cluster: unknown): void {
        const file = this.configFile(stack);
        const doc = (parseYaml(fs.readFileSync(file, "utf8")) ?? {}) as { config?: Record<string, unknown> };
        doc.config = { ...doc.config, "rdmakit:cluster": cluster };
        fs.writeFileSync(file, toYaml(doc));
    }

    /** `pulumi config set --secret rdmakit:<key>` with the value on stdin, as a user does with `< ~/.ssh/id_ed25519`. */
    async setSecret(stack: string, key: string, value: string): Promise<void> {
        const r = await this.pulumi(["config", "set", "--stack", stack, "--config-file", this.configFile(stack), "--secret", `rdmakit:${key}`], { input: value });
        if (r.code !== 0) throw new Error(`pulumi config set --secret failed:\n${r.stdout}${r.stderr}`);
    }

    /** `pulumi <verb> --stack s --config-file f ...` */
    onStack(stack: string, verb: string[], opts: Parameters<Engine["pulumi"]>[1] = {}): Promise<PulumiRun> {
        return this.pulumi([...verb, "--stack", stack, "--config-file", this.configFile(stack)], opts);
    }

    /** The stack's checkpoint as the file backend keeps it (.pulumi/stacks/<project>/<stack>.json). */
    stateFile(stack: string): string { return path.join(this.backend, ".pulumi", "stacks", "rdmakit", `${stack}.json`); }

    remove(): void {
        for (const s of this.stacks) fs.rmSync(path.join(ROOT, `Pulumi.${s}.yaml`), { force: true });
        fs.rmSync(this.tmp, { recursive: true, force: true });
    }
}
