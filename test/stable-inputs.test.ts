// The same stacks planned from two checkouts at different paths register commands with the same inputs: nothing
// that a command runs (Ansible, validation, switch pushes, the capacity wait) depends on where the kit lies, so a
// moved checkout, or a colleague's, re-runs nothing. The kit is copied twice (its node_modules linked), and
// test/fixtures/checkouts/program.ts runs in each on the mock engine with the clouds' recorded answers.
import { after, test } from "node:test";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import assert from "node:assert/strict";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.resolve(__dirname, "..");
const COPIED = ["components", "playbooks", "bin", "examples", "package.json", "tsconfig.json", path.join("test", "fixtures")];
const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-checkouts-"));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

function checkout(rel: string): string {
    const dir = path.join(scratch, rel);
    for (const p of COPIED) fs.cpSync(path.join(ROOT, p), path.join(dir, p), { recursive: true });
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(dir, "node_modules"));
    return dir;
}

function commandInputs(dir: string): Record<string, unknown> {
    const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join("test", "fixtures", "checkouts", "program.ts")], {
        cwd: dir, encoding: "utf8", timeout: 120_000,
    });
    assert.equal(r.status, 0, r.stderr);
    return JSON.parse(r.stdout.trim().split("\n").pop()!);
}

test("two checkouts, the same command inputs; none names the checkout", { timeout: 240_000 }, () => {
    const a = checkout("a");
    const b = checkout(path.join("much", "deeper", "second-checkout"));
    const first = commandInputs(a);
    const second = commandInputs(b);
    // every command the stacks run: Ansible and validation per fabric, the switch pushes (leaves and the spine, local
    // scripts over ssh), the canary's check and the fabric check after them, the AWS capacity wait and topology read, each Slurm cluster's
    // munge key
    assert.deepEqual(Object.keys(first).sort(), [
        "command:local:Command aws-aws-capacity", "command:local:Command aws-aws-ec2-topology", "command:local:Command aws-munge-key", "command:local:Command aws-software-run", "command:local:Command aws-validation-nccl",
        "command:local:Command azure-munge-key", "command:local:Command azure-software-run", "command:local:Command azure-validation-nccl",
        "command:local:Command eos-munge-key", "command:local:Command eos-roce-fabric-check", "command:local:Command eos-roce-leaf-eos-qos", "command:local:Command eos-roce-leaf-sonic-qos",
        "command:local:Command eos-roce-spine-qos", "command:local:Command eos-roce-stage0-check", "command:local:Command eos-software-run", "command:local:Command eos-validation-nccl",
        "command:local:Command roce-munge-key", "command:local:Command roce-roce-fabric-check", "command:local:Command roce-roce-leaf-nvue-qos", "command:local:Command roce-roce-leaf-sonic-qos",
        "command:local:Command roce-roce-spine-qos", "command:local:Command roce-roce-stage0-check", "command:local:Command roce-software-run", "command:local:Command roce-validation-nccl",
    ]);
    for (const name of Object.keys(first)) assert.deepEqual(second[name], first[name], name);
    const text = JSON.stringify(first) + JSON.stringify(second);
    for (const dir of [a, b, scratch, fs.realpathSync(scratch)]) assert.ok(!text.includes(dir), `an input names ${dir}`);
});
