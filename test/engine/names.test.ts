// Stable names through the real engine: the project's program names its component "cluster" (index.ts), so
// `pulumi stack rename` changes nothing, and a stack made when the component was named after the stack is kept by
// the alias, its children through the SDK's inherited child aliases: no replacement, no delete.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { Engine, engineBins, ROOT, SKIP, type PulumiRun } from "./harness";

const show = (r: PulumiRun) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;

/** A two-host bare-metal cluster without provisioning: components and outputs only (no command provider here). */
const CLUSTER = {
    name: "names", fabric: "roce", provision: false, ssh: { allowedCidrs: ["203.0.113.0/24"] },
    roce: {
        nicModel: "ConnectX-7",
        hosts: [1, 2].map((i) => ({ name: `gpu0${i}`, address: `10.30.0.1${i}`, sshUser: "ubuntu", railNics: ["mlx5_0", "mlx5_1"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 } })),
        switches: [{ name: "leaf1", os: "sonic", managementAddress: "10.30.1.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: ["Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"], speedGbps: 400, cableLengthM: 5 }],
    },
};

/**
 * The program as it was before the name was fixed: the component named after the stack. A JavaScript copy of the
 * old index.ts, on the compiled library (dist/), run as the inline program instead of index.ts.
 */
function oldProgram(file: string): void {
    fs.writeFileSync(file, [
        `const pulumi = require(${JSON.stringify(path.join(ROOT, "node_modules", "@pulumi", "pulumi"))});`,
        `const { RdmaCluster } = require(${JSON.stringify(path.join(ROOT, "dist", "components", "index.js"))});`,
        `const config = new pulumi.Config("rdmakit");`,
        `const cluster = new RdmaCluster(pulumi.getStack(), { spec: config.requireObject("cluster") });`,
        `exports.nodePrivateIps = cluster.nodePrivateIps;`,
    ].join("\n"));
}

test("stable names: a stack rename and a stack from the stack-named program both change nothing", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 10 * 60_000 }, async (t) => {
    assert.ok(fs.existsSync(path.join(ROOT, "dist", "components", "index.js")), "dist/ is missing: run `npm run build`");
    const eng = new Engine(engineBins());
    t.after(() => eng.remove());

    await t.test("stack rename: the next preview has no changes", async () => {
        const stack = `names-a-${process.pid}`;
        await eng.initStack(stack, CLUSTER);
        const up = await eng.onStack(stack, "up");
        assert.equal(up.code, 0, show(up));
        const renamed = `${stack}-renamed`;
        const mv = await eng.pulumi(["stack", "rename", renamed, "--stack", stack]);
        assert.equal(mv.code, 0, show(mv));
        // the CLI moves Pulumi.<stack>.yaml along with the stack (a user's rename keeps its config)
        if (fs.existsSync(eng.configFile(stack))) fs.renameSync(eng.configFile(stack), eng.configFile(renamed));
        const p = await eng.onStack(renamed, "preview", { expectNoChanges: true, diff: true });
        assert.equal(p.code, 0, show(p));
        // resources only: the rdmakitState output names the stack, so a rename changes that output (outputs are no resources)
        assert.doesNotMatch(p.stdout.replace(/--outputs:--[\s\S]*?\n\s*Resources:/, "Resources:"), /\+\+|--|replace/, show(p));
        const down = await eng.onStack(renamed, "destroy");
        assert.equal(down.code, 0, show(down));
    });

    await t.test("a stack made by the stack-named program: the alias keeps every resource", async () => {
        const stack = `names-b-${process.pid}`;
        await eng.initStack(stack, CLUSTER);
        const old = path.join(eng.tmp, "old-program.js");
        oldProgram(old);
        eng.program = old;
        const first = await eng.onStack(stack, "up");
        eng.program = path.join(ROOT, "index.ts");
        assert.equal(first.code, 0, show(first));
        assert.match(first.stdout, new RegExp(`rdmakit:index:RdmaCluster\\s+${stack}\\s+creating`), show(first));
        const p = await eng.onStack(stack, "preview", { diff: true });
        assert.equal(p.code, 0, show(p));
        assert.doesNotMatch(p.stdout, /\bdelete\b|\breplace\b|\+ rdmakit:/, show(p));
        const up = await eng.onStack(stack, "up");
        assert.equal(up.code, 0, show(up));
        assert.doesNotMatch(up.stdout, /deleted|replaced/, show(up));
        const again = await eng.onStack(stack, "preview", { expectNoChanges: true });
        assert.equal(again.code, 0, show(again));
        const down = await eng.onStack(stack, "destroy");
        assert.equal(down.code, 0, show(down));
    });
});
