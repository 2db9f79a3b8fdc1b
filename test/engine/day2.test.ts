// Day 2 from another machine, through the real Pulumi CLI (test/engine/build.sh) and a local file backend: a stack
// holds the operating state (test/engine/programs/day2-state.ts: the component's own `operatingState` on a recorded
// verdict set, since the cloud and command providers cannot run here; the project's own program on a bare-metal
// stack shows the component exports it too), then a second, fresh checkout that has only the backend URL and the
// passphrase runs `rdmakit status` and `rdmakit check --stack` and sees the first checkout's nodes, host keys and
// verdicts; `pulumi stack output --json --show-secrets` holds no secret beyond the one marked secret.
// A second `up` with one instance replaced keeps the node's name and records the replacement (the program reads the
// stack's own previous state through a StackReference to itself, as RdmaCluster does).
// Bound: ~3-4 min (three `up`s, a few CLI reads, one check run that fails fast on unreachable addresses).
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { planCluster } from "../../components/plan";
import { parseClusterSpec } from "../../components/spec";
import { healthExpectation } from "../../components/health/expect";
import { runNcclReport } from "../../components/validate/cli";
import { parseResultLine } from "../../components/validate/component";
import { ed25519HostKey } from "../../components/provision/knownhosts";
import { Engine, engineBins, keyNeedles, ROOT, SKIP, type PulumiRun } from "./harness";

const show = (r: { code?: number | null; status?: number | null; stdout: string; stderr: string }) =>
    `exit ${r.code ?? r.status}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
const CAP = path.join(ROOT, "test", "fixtures", "health", "captures");

/** Two node folders of real captures (test/fixtures/health/README.md); gpu-1's kernel log has an Xid 119. */
function captures(dir: string, nodes: string[]): void {
    nodes.forEach((n, i) => {
        const d = path.join(dir, n);
        fs.mkdirSync(d, { recursive: true });
        fs.copyFileSync(path.join(CAP, "nvidia-smi-q.h100-565.57.01.txt"), path.join(d, "nvidia-smi-q.txt"));
        fs.copyFileSync(path.join(CAP, "lspci-vv.h100-gpud.txt"), path.join(d, "lspci-vv.txt"));
        fs.copyFileSync(path.join(CAP, i === 1 ? "dmesg.h100-xid119.txt" : "dmesg.kmsg-clean.txt"), path.join(d, "dmesg.txt"));
    });
}

test("day 2 from a fresh checkout: the stack's state read through the real CLI", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 8 * 60_000 }, async (t) => {
    const bins = engineBins();
    const eng = new Engine(bins);
    t.after(() => eng.remove());
    const stack = `engine-day2-${process.pid}`;
    const spec = (parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8")) as { config: Record<string, unknown> }).config["rdmakit:cluster"] as Record<string, unknown>;
    const cluster = { ...spec, nodes: 2 };
    const plan = planCluster(parseClusterSpec(cluster));
    const names = plan.validation.hostNames;

    // the recorded verdict set: nccl-report's result line for the captures, graded against the plan's hardware
    const health = path.join(eng.tmp, "health");
    captures(health, names);
    const report = runNcclReport([], { health, healthExpect: JSON.stringify(healthExpectation(plan)), resultLine: true });
    const result = parseResultLine(report.stdout);
    assert.ok(result?.health?.length === 2, report.stdout + report.stderr);
    const resultFile = path.join(eng.tmp, "result.txt");
    fs.writeFileSync(resultFile, report.stdout);
    const seedHex = "11".repeat(32);
    const nodeKey = ed25519HostKey("rdmakit-node", Buffer.from(seedHex, "hex"));
    const nodes = names.map((name, i) => ({ name, address: "127.0.0.1", instanceId: `i-0abc00000000000${i}` }));
    // only the bastion is 127.0.0.2 and no node is reachable: check fails fast after naming them
    nodes[1].address = "127.0.0.3";

    // A real key in the stack's secret config, as a user sets it: it must be in no output.
    const keyFile = path.join(eng.tmp, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-engine", "-f", keyFile]);
    const privateKey = fs.readFileSync(keyFile, "utf8");
    await eng.initStack(stack, cluster);
    await eng.setSecret(stack, "sshPrivateKey", privateKey);
    const cfg = parseYaml(fs.readFileSync(eng.configFile(stack), "utf8")) as { config: Record<string, unknown> };
    cfg.config["day2:recorded"] = { resultFile, spec: cluster, seedHex, bastion: "127.0.0.2", group: "p5-demo-nodes", nodes };
    fs.writeFileSync(eng.configFile(stack), JSON.stringify(cfg));
    eng.program = path.join(__dirname, "programs", "day2-state.ts");
    const up = await eng.onStack(stack, "up");
    assert.equal(up.code, 0, show(up));

    // The second checkout: a clone (Pulumi.yaml, no Pulumi.<stack>.yaml, no out/), its own PULUMI_HOME, and only the
    // backend URL and the passphrase in the environment.
    const fresh = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-checkout-"));
    t.after(() => fs.rmSync(fresh, { recursive: true, force: true }));
    fs.copyFileSync(path.join(eng.project, "Pulumi.yaml"), path.join(fresh, "Pulumi.yaml"));
    fs.mkdirSync(path.join(fresh, ".home"));
    const env = {
        PATH: `${bins.dir}:${process.env.PATH}`, HOME: fresh, PULUMI_HOME: path.join(fresh, ".home"),
        PULUMI_BACKEND_URL: `file://${eng.backend}`, PULUMI_CONFIG_PASSPHRASE: eng.passphrase,
        PULUMI_SKIP_UPDATE_CHECK: "true", PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION: "true",
    };
    const rdmakit = (...args: string[]) => spawnSync(process.execPath, ["--import", require.resolve("tsx"), path.join(ROOT, "bin", "rdmakit.ts"), ...args],
        { cwd: fresh, env, encoding: "utf8", timeout: 180_000 });

    await t.test("rdmakit status --stack: the first checkout's nodes, host keys and verdicts", () => {
        const r = rdmakit("status", "--stack", stack, "--json");
        assert.ok(r.status === 0 || r.status === 1, show(r));
        const got = JSON.parse(r.stdout) as { state: { nodes: Array<{ name: string; address: string; instanceId: string; health?: { verdict: string } }>; nodeHostKey: string; validation: { verdict: string; at: string } }; from: string };
        assert.equal(got.from, `stack ${stack}`);
        assert.deepEqual(got.state.nodes.map((n) => [n.name, n.address, n.instanceId]), nodes.map((n) => [n.name, n.address, n.instanceId]));
        assert.equal(got.state.nodeHostKey, nodeKey.publicKey.split(" ").slice(0, 2).join(" "));
        assert.deepEqual(got.state.nodes.map((n) => n.health?.verdict), result!.health!.map((h) => h.verdict));
        assert.equal(got.state.validation.verdict, result!.pass ? "PASS" : "FAIL");
        assert.equal(got.state.validation.at, result!.at);
        const text = rdmakit("status", "--stack", stack);
        for (const n of nodes) assert.match(text.stdout, new RegExp(`^${n.name}\\s+${n.address.replace(/\./g, "\\.")}\\s+${n.instanceId}`, "m"));
        assert.match(text.stdout, /node host key pinned \(ssh-ed25519 /);
        assert.match(text.stdout, /^repair \(replace/m);
        assert.equal(text.status, r.status, show(text));
    });

    await t.test("rdmakit check --stack: the stack's nodes through its bastion, checked against its pinned keys", () => {
        const r = rdmakit("check", "--stack", stack, "--ssh-key", keyFile);
        // nothing answers at these addresses: the run fails (1), after naming where its nodes came from
        assert.equal(r.status, 1, show(r));
        assert.match(r.stderr, new RegExp(`rdmakit check: 2 node\\(s\\) from stack ${stack}; logs and report in out/${stack}/check`));
        const inv = fs.readFileSync(path.join(fresh, "out", stack, "check", "inventory-validation.yml"), "utf8");
        for (const n of nodes) assert.match(inv, new RegExp(`${n.name}:\\n\\s+ansible_host: ${n.address.replace(/\./g, "\\.")}`));
        assert.match(inv, /StrictHostKeyChecking=yes/);
        assert.match(inv, /ProxyCommand="ssh .*ubuntu@127\.0\.0\.2"/);
        const known = /UserKnownHostsFile=(\S+)/.exec(inv)![1];
        assert.ok(!fs.existsSync(known), `the temporary known_hosts ${known} is removed after the run`);
        assert.ok(!JSON.stringify(fs.readdirSync(fresh, { recursive: true })).includes("Pulumi.") || !fs.existsSync(path.join(fresh, `Pulumi.${stack}.yaml`)),
            "the fresh checkout got no stack file");
    });

    await t.test("pulumi stack output --json --show-secrets: no secret beyond the one marked secret", async () => {
        const shown = await eng.pulumi(["stack", "output", "--json", "--show-secrets", "--stack", stack], { cwd: fresh, env });
        assert.equal(shown.code, 0, show(shown));
        const outputs = JSON.parse(shown.stdout) as Record<string, unknown>;
        const plain = await eng.pulumi(["stack", "output", "--json", "--stack", stack], { cwd: fresh, env });
        const masked = JSON.parse(plain.stdout) as Record<string, unknown>;
        // marked secret: the host key's private half (as a tls.PrivateKey's in a real stack) shows only with --show-secrets
        assert.equal(masked.nodeHostPrivateKey, "[secret]");
        assert.equal(outputs.nodeHostPrivateKey, nodeKey.privateKey);
        const state = JSON.stringify(outputs.rdmakitState);
        assert.deepEqual(masked.rdmakitState, outputs.rdmakitState, "the state is not secret and shows the same either way");
        for (const needle of [...keyNeedles(privateKey), ...keyNeedles(nodeKey.privateKey)]) assert.ok(!state.includes(needle), "no private key in the state");
        assert.doesNotMatch(state, /PRIVATE KEY|BEGIN /);
        assert.ok(!shown.stdout.includes(eng.passphrase));
        for (const needle of keyNeedles(privateKey)) assert.ok(!shown.stdout.includes(needle), "the stack's SSH key is in no output");
    });

    await t.test("the cloud replaced a node's machine: the next up keeps its name (the stack's own previous state) and records the replacement", async () => {
        // the group lists the new instance first (its address sorts first); node 0's machine is unchanged
        const c = JSON.parse(fs.readFileSync(eng.configFile(stack), "utf8")) as { config: Record<string, { nodes: typeof nodes }> };
        // (the program takes the plan's names from the list's names, in order, and the instances as the cloud lists them)
        const listed = [{ name: names[0], address: "127.0.0.1", instanceId: "i-0abc000000000000f" }, { ...nodes[0], name: names[1] }];
        c.config["day2:recorded"].nodes = listed;
        fs.writeFileSync(eng.configFile(stack), JSON.stringify(c));
        const again = await eng.onStack(stack, "up");
        assert.equal(again.code, 0, show(again));
        const r = rdmakit("status", "--stack", stack, "--json");
        assert.ok(r.status === 0 || r.status === 1, show(r));
        const got = JSON.parse(r.stdout) as { state: { nodes: Array<{ name: string; instanceId: string }>; replacements: Array<{ node: string; fromInstance: string; toInstance: string; at: string }> } };
        assert.deepEqual(got.state.nodes.map((n) => [n.name, n.instanceId]), [[names[0], nodes[0].instanceId], [names[1], "i-0abc000000000000f"]]);
        assert.deepEqual(got.state.replacements.map((x) => [x.node, x.fromInstance, x.toInstance]), [[names[1], nodes[1].instanceId, "i-0abc000000000000f"]]);
        assert.match(rdmakit("status", "--stack", stack).stdout, new RegExp(`^ {2}${names[1]}: ${nodes[1].instanceId} → i-0abc000000000000f, \\d+s ago$`, "m"));
    });

    await t.test("the project's own program exports the state too (bare metal: nodes, no pinned key)", async () => {
        eng.program = path.join(ROOT, "index.ts");
        const bare = `${stack}-roce`;
        const roce = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8")) as { config: Record<string, unknown> };
        await eng.initStack(bare, { ...(roce.config["rdmakit:cluster"] as object), provision: false });
        const r: PulumiRun = await eng.onStack(bare, "up");
        assert.equal(r.code, 0, show(r));
        const s = rdmakit("status", "--stack", bare, "--json");
        const got = JSON.parse(s.stdout) as { state: { fabric: string; nodes: Array<{ name: string }>; nodeHostKey?: string; repair: string } };
        assert.equal(got.state.fabric, "roce");
        const rocePlan = planCluster(parseClusterSpec({ ...(roce.config["rdmakit:cluster"] as object), provision: false }));
        assert.deepEqual(got.state.nodes.map((n) => n.name), rocePlan.validation.hostNames);
        assert.equal(got.state.nodeHostKey, undefined);
        assert.equal(got.state.repair, "report", "provision false: rdmakit runs no scheduler, so report");
    });
});
