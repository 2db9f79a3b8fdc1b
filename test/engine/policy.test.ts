// The policy pack under the real CLI: `pulumi preview --policy-pack policies` of the project's program on a
// bare-metal RoCE stack (provision: false), as an Automation API inline program. With no nodejs language host, the
// CLI starts the pack through its analyzer shim (plugins/pulumi-analyzer-policy-nodejs; analyzer_plugin.go
// NewPolicyAnalyzer@v3.248.0), the pack's own @pulumi/pulumi/cmd/run-policy-pack from policies/node_modules.
// Needs policies/ built (`cd policies && npm install && npm run build`, as test/policy-pack.test.ts does; this test
// runs the same two commands). RDMAKIT_SKIP_ENGINE_TESTS=1 skips it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFile, execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { Engine, engineBins, keyNeedles, processesHolding, ROOT, SKIP, type PulumiRun } from "./harness";

const run = promisify(execFile);
const POLICIES = path.join(ROOT, "policies");
const show = (r: PulumiRun) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

const CLUSTER = {
    name: "policy-engine", fabric: "roce", provision: false, ssh: { allowedCidrs: ["203.0.113.0/24"] },
    roce: {
        nicModel: "ConnectX-7",
        hosts: [1, 2].map((i) => ({ name: `gpu0${i}`, address: `10.40.0.1${i}`, sshUser: "ubuntu", railNics: ["mlx5_0"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 } })),
        switches: [{ name: "leaf1", os: "sonic", managementAddress: "10.40.1.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: ["Ethernet0", "Ethernet8"], speedGbps: 400, cableLengthM: 5 }],
    },
};

interface Summary { resourceUrn?: string; policyPackName: string; policyPackVersion: string; passed?: string[]; failed?: string[] }
/**
 * The pack's summaries from the engine's event log: per resource its Analyze and Remediate summaries, and the stack
 * summary (apitype Policy{Analyze,Remediate,AnalyzeStack}SummaryEvent@v3.248.0: passed/failed policy names; a
 * policy that reported itself not applicable is in neither list), and the violations (policyEvent).
 */
function summaries(file: string): { analyze: Summary[]; remediate: Summary[]; stack: Summary[]; violations: unknown[] } {
    const events = fs.readFileSync(file, "utf8").trim().split("\n").filter(Boolean).map((l) => JSON.parse(l));
    const of = (k: string) => events.flatMap((e) => (e[k] ? [e[k] as Summary] : []));
    return { analyze: of("policyAnalyzeSummaryEvent"), remediate: of("policyRemediateSummaryEvent"), stack: of("policyAnalyzeStackSummaryEvent"), violations: of("policyEvent") };
}

test("policy pack: pulumi preview --policy-pack runs the rdmakit pack on a bare-metal stack", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 10 * 60_000 }, async (t) => {
    const NPM = ["--prefer-offline", "--no-audit", "--no-fund", "--loglevel=error"];
    await run("npm", ["install", ...NPM], { cwd: POLICIES });
    await run("npm", ["run", "build", "--silent"], { cwd: POLICIES });
    const eng = new Engine(engineBins());
    t.after(() => eng.remove());
    const stack = `engine-policy-${process.pid}`;
    await eng.initStack(stack, CLUSTER);
    // The stack holds a secret, as every provisioned stack does (README: pulumi config set --secret ...).
    const keyFile = path.join(eng.tmp, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-policy", "-f", keyFile]);
    const key = fs.readFileSync(keyFile, "utf8");
    await eng.setSecret(stack, "sshPrivateKey", key);
    const version = JSON.parse(fs.readFileSync(path.join(POLICIES, "package.json"), "utf8")).version as string;

    let ranByDefault: string[] = [];
    await t.test("the pack starts, gets every resource of the stack and its summary is in the output", async () => {
        const events = path.join(eng.tmp, "events-default.jsonl");
        // While the pack runs, no process may hold the decrypted key in its environment: the CLI hands a pack the
        // stack's decrypted config in PULUMI_CONFIG (engine/update.go, analyzer_plugin.go constructEnv@v3.248.0),
        // which the shim drops, since rdmakit's pack reads no stack config.
        const needles = keyNeedles(key);
        const holders = new Set<string>();
        const poll = setInterval(() => { for (const h of processesHolding(needles)) holders.add(h); }, 100);
        const r = await eng.onStack(stack, "preview", { policyPacks: [POLICIES] }, { events }).finally(() => clearInterval(poll));
        assert.equal(r.code, 0, show(r));
        // the shim's own first instant (sh, then env, until it starts itself again without PULUMI_CONFIG) aside
        const shim = (h: string) => / (pulumi-analyzer|env) \(environ\)$/.test(h);
        assert.deepEqual([...holders].filter((h) => !shim(h)), [], "a process held the stack's secret in its environment or command line during the preview");
        for (const line of needles) assert.ok(!(r.stdout + r.stderr).includes(line), "the preview printed the key");
        // the CLI's own summary: pack name@version, passed, from the local folder
        assert.match(r.stdout, new RegExp(`Policies:\\n\\s+✅ rdmakit@v${version.replace(/\./g, "\\.")} \\(local: ${POLICIES.replace(/[/.]/g, "\\$&")}\\)`), show(r));
        assert.doesNotMatch(r.stdout + r.stderr, /using pulumi-analyzer-policy-nodejs from \$PATH/, "the shim comes from the project's plugins, not PATH");
        const s = summaries(events);
        // every resource the program registers is analyzed by the pack (the stack and the two components)
        const typesOf = (xs: Summary[]) => xs.map((x) => x.resourceUrn!.split("::")[2]).sort();
        const registered = ["pulumi:pulumi:Stack", "rdmakit:index:RdmaCluster", "rdmakit:index:RdmaCluster$rdmakit:index:RoceCluster"];
        assert.deepEqual(typesOf(s.analyze), registered, JSON.stringify(s.analyze));
        assert.deepEqual(typesOf(s.remediate), registered, JSON.stringify(s.remediate));
        assert.equal(s.stack.length, 1, "one stack summary");
        for (const x of [...s.analyze, ...s.remediate, ...s.stack]) {
            assert.equal(x.policyPackName, "rdmakit");
            assert.equal(x.policyPackVersion, version);
            assert.deepEqual(x.failed ?? [], [], "no policy fails on a stack of components only");
        }
        // The pack's rules read cloud resources and switch-push commands: on components every one reports that it
        // does not apply (in neither list of the Analyze and stack summaries). The Remediate summary counts every
        // enabled resource policy that remediated nothing and did not say "not applicable" as passed
        // (resource/analyzer/summary.go@v3.248.0 newPolicySummary): that is the pack's enabled resource policies.
        assert.deepEqual(s.analyze.flatMap((x) => x.passed ?? []), [], JSON.stringify(s.analyze));
        assert.deepEqual(s.stack.flatMap((x) => x.passed ?? []), [], JSON.stringify(s.stack));
        ranByDefault = s.remediate[0].passed ?? [];
        assert.ok(ranByDefault.length > 0, JSON.stringify(s.remediate));
        for (const x of s.remediate) assert.deepEqual(x.passed, ranByDefault, "the same policies ran on every resource");
        assert.deepEqual(s.violations, []);
        t.diagnostic(`enabled resource policies (Remediate summary): ${ranByDefault.length} (${ranByDefault.slice(0, 3).join(", ")}, ...); every Analyze and stack policy: not applicable`);
    });

    await t.test("--policy-pack-config changes what the pack runs and reports", async () => {
        // every policy disabled but one made mandatory: the pack still starts and is listed, and the summaries
        // count exactly that one policy
        const one = "aws-efa-no-public-ip";
        const cfg = path.join(eng.tmp, "policy-one.json");
        fs.writeFileSync(cfg, JSON.stringify({ all: "disabled", [one]: "mandatory" }));
        const events = path.join(eng.tmp, "events-one.jsonl");
        const r = await eng.onStack(stack, "preview", { policyPacks: [POLICIES], policyPackConfigs: [cfg] }, { events });
        assert.equal(r.code, 0, show(r));
        assert.match(r.stdout, /Policies:\n\s+✅ rdmakit@v/, show(r));
        const s = summaries(events);
        assert.equal(s.remediate.length, 3, JSON.stringify(s.remediate));
        assert.ok(ranByDefault.length > 1 && ranByDefault.includes(one), `the default run had more enabled: ${ranByDefault.join(", ")}`);
        for (const x of s.remediate) assert.deepEqual(x.passed, [one], JSON.stringify(s.remediate));
        // a value the pack's config schema refuses: the CLI validates it against the pack's schema and says so
        const bad = path.join(eng.tmp, "policy-bad.json");
        fs.writeFileSync(bad, JSON.stringify({ "roce-switch-config-digest": "sometimes" }));
        const b = await eng.onStack(stack, "preview", { policyPacks: [POLICIES], policyPackConfigs: [bad] });
        assert.notEqual(b.code, 0, show(b));
        assert.match(b.stdout + b.stderr, /roce-switch-config-digest/, show(b));
        assert.match(b.stdout + b.stderr, /sometimes/, show(b));
    });

    await t.test("a pack whose dependencies are not installed fails with the CLI's own message", async () => {
        const bare = path.join(eng.tmp, "bare-pack");
        fs.mkdirSync(path.join(bare, "dist"), { recursive: true });
        for (const f of ["PulumiPolicy.yaml", "package.json", path.join("dist", "index.js")]) fs.copyFileSync(path.join(POLICIES, f), path.join(bare, f));
        const r = await eng.onStack(stack, "preview", { policyPacks: [bare] });
        assert.notEqual(r.code, 0, show(r));
        assert.match(r.stdout + r.stderr, new RegExp(`it looks like the policy pack's dependencies are not installed; try running npm install or yarn install in "${bare.replace(/[/.]/g, "\\$&")}"`), show(r));
    });

    await t.test("pulumi policy publish needs Pulumi Cloud: on a local backend it says so and uploads nothing", async () => {
        // policy_publish.go@v3.248.0 asks the backend for the pack first (requirePolicyPackForBackend); the file
        // backend refuses (backend/diy/backend.go GetPolicyPack) before the pack is started or `npm pack` runs.
        const r = await eng.pulumi(["policy", "publish"], { cwd: POLICIES });
        assert.notEqual(r.code, 0, show(r));
        assert.match(r.stdout + r.stderr, /error: DIY backend does not support resource policy/, show(r));
        assert.deepEqual(fs.readdirSync(POLICIES).filter((f) => f.endsWith(".tgz")), [], "no tarball was packed");
    });
});
