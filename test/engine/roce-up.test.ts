// `pulumi up` / `preview` / `destroy` of the project's own program (Pulumi.yaml + index.ts at the repository root)
// through the real Pulumi CLI (test/engine/build.sh) as an Automation API inline program, with a local file backend.
// The stack is a bare-metal RoCE cluster with provision: false: the two components and the stack outputs, no
// command resources, since the command provider cannot be built here (test/engine/pins.sh, build.sh --status).
// Run with `npm run test:engine`; RDMAKIT_SKIP_ENGINE_TESTS=1 skips it, missing binaries fail it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { planCluster } from "../../components/plan";
import { renderSwitchConfigs } from "../../components/roce/render";
import { parseClusterSpec } from "../../components/spec";
import { Engine, engineBins, keyNeedles, ROOT, SKIP, type PulumiRun } from "./harness";

/** Two 2-rail GPU hosts on a SONiC and a Cumulus (NVUE) leaf, shaped as examples/roce-h100.yaml. */
function cluster(qos: Record<string, unknown> = {}): Record<string, unknown> {
    const host = (i: number) => ({
        name: `gpu0${i}`, address: `10.20.0.1${i}`, sshUser: "ubuntu", railNics: ["mlx5_0", "mlx5_1"],
        railNetdevs: ["ens1f0np0", "ens2f0np0"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 },
    });
    return {
        name: "roce-engine", fabric: "roce", provision: false, ssh: { allowedCidrs: ["203.0.113.0/24"] },
        roce: {
            nicModel: "ConnectX-7", hosts: [host(1), host(2)],
            switches: [
                { name: "leaf-sonic", os: "sonic", managementAddress: "10.20.1.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", sshUser: "admin", hostPorts: ["Ethernet0", "Ethernet8"], speedGbps: 400, cableLengthM: 5 },
                { name: "leaf-nvue", os: "nvue", managementAddress: "10.20.1.2", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", sshUser: "cumulus", hostPorts: ["swp1", "swp2"], speedGbps: 400, cableLengthM: 5 },
            ],
            qos: { mode: "lossless", roceDscp: 26, rocePriority: 3, cnpDscp: 48, cnpPriority: 6, mtu: 9000, gidIndex: 3, ...qos },
        },
    };
}

interface StateResource { urn: string; type: string; custom?: boolean; parent?: string; outputs?: Record<string, any> }
interface Checkpoint { checkpoint: { latest?: { resources?: StateResource[] } } }

const readState = (eng: Engine, stack: string): Checkpoint => JSON.parse(fs.readFileSync(eng.stateFile(stack), "utf8"));
const resources = (eng: Engine, stack: string) => readState(eng, stack).checkpoint.latest?.resources ?? [];
const show = (r: PulumiRun) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

test("the real engine runs the project's program on a bare-metal RoCE stack", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 10 * 60_000 }, async (t) => {
    const bins = engineBins();
    const eng = new Engine(bins);
    t.after(() => eng.remove());
    const stack = `engine-roce-${process.pid}`;
    const outputs: PulumiRun[] = [];
    const keep = (r: PulumiRun) => { outputs.push(r); return r; };

    // A real key, set as a user sets it (README: pulumi config set --secret rdmakit:sshPrivateKey < ~/.ssh/id_ed25519).
    const keyFile = path.join(eng.tmp, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-engine", "-f", keyFile]);
    const privateKey = fs.readFileSync(keyFile, "utf8");
    await eng.initStack(stack, cluster());
    await eng.setSecret(stack, "sshPrivateKey", privateKey);

    const expected = (qos: Record<string, unknown> = {}) => {
        const plan = planCluster(parseClusterSpec(cluster(qos)));
        return { plan, digests: Object.fromEntries(renderSwitchConfigs(plan.roce!.qos).map((r) => [r.switch, r.digest])) };
    };

    await t.test("pulumi up --yes creates the stack, its components and the outputs the plan decides", async () => {
        const r = keep(await eng.onStack(stack, "up"));
        assert.equal(r.code, 0, show(r));
        const state = resources(eng, stack);
        assert.deepEqual(state.map((s) => s.type), ["pulumi:pulumi:Stack", "rdmakit:index:RdmaCluster", "rdmakit:index:RoceCluster"]);
        const [stackRes, rdma, roce] = state;
        assert.equal(rdma.parent, stackRes.urn);
        assert.equal(roce.parent, rdma.urn);
        assert.ok(state.every((s) => !s.custom), "no custom resource: provision is false");
        const { plan, digests } = expected();
        assert.deepEqual(roce.outputs!.switchConfigDigests, digests);
        assert.deepEqual(roce.outputs!.ncclEnv, plan.ncclEnv);
        assert.deepEqual(stackRes.outputs!.nodePrivateIps, ["10.20.0.11", "10.20.0.12"]);
        assert.deepEqual(stackRes.outputs!.ncclEnv, plan.ncclEnv);
        assert.equal(stackRes.outputs!.fabric, "roce");
        // `rdmakit plan` on the same stack file (Pulumi's mock engine) shows the resources the engine made.
        const planned = spawnSync(process.execPath, ["--import", require.resolve("tsx"), path.join(ROOT, "bin", "rdmakit.ts"), "plan",
            "--config", eng.configFile(stack), "--json", "--out", path.join(eng.tmp, "plan")], { cwd: ROOT, encoding: "utf8" });
        assert.equal(planned.status, 0, planned.stderr);
        const urnName = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);
        assert.deepEqual(JSON.parse(planned.stdout).resources.map((x: { type: string; name: string }) => `${x.type} ${x.name}`),
            state.slice(1).map((x) => `${x.type} ${urnName(x.urn)}`));
        const out = JSON.parse((keep(await eng.pulumi(["stack", "output", "--json", "--show-secrets=false", "--stack", stack]))).stdout);
        assert.deepEqual(out.nodePrivateIps, ["10.20.0.11", "10.20.0.12"]);
        assert.equal(out.ncclEnv.NCCL_IB_HCA, plan.ncclEnv.NCCL_IB_HCA);
    });

    await t.test("a second pulumi up reports no changes", async () => {
        const p = keep(await eng.onStack(stack, "preview", { expectNoChanges: true }));
        assert.equal(p.code, 0, show(p));
        const r = keep(await eng.onStack(stack, "up", { expectNoChanges: true }));
        assert.equal(r.code, 0, show(r));
        assert.match(r.stdout, /3 unchanged/);
    });

    await t.test("a changed QoS value changes the switch digests and nothing else is replaced", async () => {
        eng.setCluster(stack, cluster({ roceDscp: 24 }));
        const p = keep(await eng.onStack(stack, "preview", { diff: true }));
        assert.equal(p.code, 0, show(p));
        // The engine's diff: the NCCL traffic class the hosts get follows the new DSCP; every resource stays.
        const tc = (dscp: number) => expected({ roceDscp: dscp }).plan.ncclEnv.NCCL_IB_TC;
        assert.match(p.stdout, new RegExp(`~ NCCL_IB_TC\\s*: "${tc(26)}" => "${tc(24)}"`), show(p));
        assert.match(p.stdout, /Resources:\n\s+3 unchanged\n/, show(p));
        const before = expected().digests, after = expected({ roceDscp: 24 }).digests;
        assert.notDeepEqual(before, after);
        const r = keep(await eng.onStack(stack, "up"));
        assert.equal(r.code, 0, show(r));
        const roce = resources(eng, stack).find((s) => s.type === "rdmakit:index:RoceCluster")!;
        assert.deepEqual(roce.outputs!.switchConfigDigests, after);
        assert.deepEqual(resources(eng, stack)[0].outputs!.ncclEnv, expected({ roceDscp: 24 }).plan.ncclEnv);
    });

    await t.test("an invalid spec fails pulumi up with the kit's message and changes nothing", async () => {
        const beforeState = fs.readFileSync(eng.stateFile(stack), "utf8");
        eng.setCluster(stack, cluster({ roceDscp: 64 }));
        const r = keep(await eng.onStack(stack, "up"));
        assert.notEqual(r.code, 0, show(r));
        // the kit's problem list alone: no "unhandled exception", no stack trace
        assert.match(r.stdout, /error: invalid cluster spec: 1 problem\n\s+- cluster\.roce\.qos\.roceDscp: is too large \(got 64\); allowed: <= 63\n/, show(r));
        assert.doesNotMatch(r.stdout + r.stderr, /unhandled exception|at new RdmaCluster/, show(r));
        assert.ok(!(r.stdout + r.stderr).includes("\u001b["), "no terminal colour codes in the error");
        const after = resources(eng, stack);
        assert.deepEqual(after.map((s) => s.urn), JSON.parse(beforeState).checkpoint.latest.resources.map((s: StateResource) => s.urn));
        eng.setCluster(stack, cluster({ roceDscp: 24 }));
    });

    await t.test("pulumi destroy removes every resource and stack rm the state", async () => {
        const r = keep(await eng.onStack(stack, "destroy"));
        assert.equal(r.code, 0, show(r));
        assert.deepEqual(resources(eng, stack), []);
        // --preserve-config: the stack's Pulumi.<stack>.yaml stays for the key check below (stack rm deletes it)
        const rm = keep(await eng.pulumi(["stack", "rm", "--yes", "--preserve-config", "--stack", stack]));
        assert.equal(rm.code, 0, show(rm));
        assert.ok(!fs.existsSync(eng.stateFile(stack)), "stack rm leaves the checkpoint");
    });

    await t.test("the private key is in no state file, backup, history or engine output", () => {
        const body = keyNeedles(privateKey);
        const files = execFileSync("find", [eng.backend, "-type", "f"], { encoding: "utf8" }).trim().split("\n").filter(Boolean);
        assert.ok(files.length > 0, "the backend holds the stack's history");
        for (const f of files) {
            const text = fs.readFileSync(f, "utf8");
            for (const line of body) assert.ok(!text.includes(line), `${f} contains the SSH private key`);
        }
        for (const r of outputs) for (const line of body) assert.ok(!(r.stdout + r.stderr).includes(line), "pulumi printed the private key");
        // The stack config holds it only encrypted.
        const cfg = fs.readFileSync(eng.configFile(stack), "utf8");
        assert.match(cfg, /rdmakit:sshPrivateKey:\s*\n\s*secure: /);
        for (const line of body) assert.ok(!cfg.includes(line));
    });
});

test("with provision on, a missing or plain-text SSH key ends pulumi up before anything is created", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 5 * 60_000 }, async (t) => {
    const eng = new Engine(engineBins());
    t.after(() => eng.remove());
    const stack = `engine-key-${process.pid}`;
    const provisioned = { ...cluster(), provision: true };
    await eng.initStack(stack, provisioned);
    const onlyTheStack = () => assert.deepEqual(resources(eng, stack).map((s) => s.type), ["pulumi:pulumi:Stack"]);

    const missing = await eng.onStack(stack, "up");
    assert.notEqual(missing.code, 0, show(missing));
    assert.match(missing.stdout, /- rdmakit:sshPrivateKey: is missing: Ansible needs it to reach the nodes; allowed: pulumi config set --secret rdmakit:sshPrivateKey/, show(missing));
    onlyTheStack();

    // Set without --secret: the CLI lists the secret keys for the program (the inline program's RunRequest
    // configSecretKeys, automation/server.js), and this one is not among them.
    const keyFile = path.join(eng.tmp, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-engine", "-f", keyFile]);
    const privateKey = fs.readFileSync(keyFile, "utf8");
    const set = await eng.pulumi(["config", "set", "--stack", stack, "rdmakit:sshPrivateKey"], { input: privateKey });
    assert.equal(set.code, 0, show(set));
    const plain = await eng.onStack(stack, "up");
    assert.notEqual(plain.code, 0, show(plain));
    assert.match(plain.stdout, /- rdmakit:sshPrivateKey: is stored in plain text \(got "\(hidden\)"\); allowed: a secret: pulumi config set --secret/, show(plain));
    for (const line of keyNeedles(privateKey)) {
        assert.ok(!(plain.stdout + plain.stderr).includes(line), "pulumi up printed the plain-text key");
    }
    onlyTheStack();
});
