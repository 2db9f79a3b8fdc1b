// Inputs kept once beside the stack (components/kept-input.ts, issue 37): the run's unpacking line (UNPACK_INPUT) reads
// the node list and, for validation, the inventory from the files the program kept, and refuses any file whose
// digest is not the planned one, before anything runs. Bound: a few node processes, under 10 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { keepNodeTargets, sha256, unpackRunInput } from "../components/provision/ansible";
import { keepInput, readKeptInput } from "../components/kept-input";
import { fanoutNodes } from "../components/provision/fanout";
import { nodeTargets } from "../components/provision/node-local";

const INVENTORY = "all:\n  hosts:\n    n0: {ansible_host: 10.0.0.10, ansible_user: ubuntu}\n    n1: {ansible_host: 10.0.0.11, ansible_user: ubuntu}\n";
const VARS = '{"a":1}';

function unpack(dir: string, stdin: object, env: Record<string, string>) {
    const r = spawnSync("bash", ["-c", unpackRunInput(`"${dir}/vars.json"`, 0, `"${dir}/nodes.json"`)], {
        cwd: dir, input: JSON.stringify(stdin), encoding: "utf8", timeout: 20_000,
        env: { PATH: process.env.PATH, RDMAKIT_INVENTORY_FILE: path.join(dir, "inventory.yml"), RDMAKIT_INVENTORY_HASH: sha256(INVENTORY), RDMAKIT_VARS_HASH: sha256(VARS), ...env },
    });
    return r;
}

test("the node list and the inventory come from the kept files, by digest; a changed file stops the run", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kept-"));
    const nodes = keepNodeTargets(path.join(dir, "out"), INVENTORY, true, dir);
    const inv = keepInput(path.join(dir, "out"), "inventory", "yml", INVENTORY, true);
    assert.equal(inv.digest, sha256(INVENTORY));
    assert.equal((fs.statSync(path.join(dir, nodes.RDMAKIT_NODES_FILE)).mode & 0o777).toString(8), "600");
    // validation's input: the variables only, the inventory from its kept file
    const ok = unpack(dir, { extraVars: VARS }, { ...nodes, RDMAKIT_INVENTORY_INPUT: inv.file });
    assert.equal(ok.status, 0, ok.stderr);
    assert.equal(fs.readFileSync(path.join(dir, "inventory.yml"), "utf8"), INVENTORY);
    // the kept list carries the group's variables once; the fan-out joins them into each node's own inventory
    const kept = JSON.parse(fs.readFileSync(path.join(dir, "nodes.json"), "utf8"));
    assert.deepEqual(kept.nodes.map((n: { name: string; address: string }) => [n.name, n.address]), [["n0", "10.0.0.10"], ["n1", "10.0.0.11"]]);
    assert.deepEqual(fanoutNodes(kept), nodeTargets(INVENTORY));
    // a node list someone edited since the program wrote it
    fs.appendFileSync(path.join(dir, nodes.RDMAKIT_NODES_FILE), " ");
    const bad = unpack(dir, { inventory: INVENTORY, extraVars: VARS }, nodes);
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /the node list file .*nodes-[0-9a-f]{64}\.json is not the planned one/);
    // an inventory file that is not the planned one, or none at all
    fs.writeFileSync(inv.file, INVENTORY.replace("10.0.0.11", "10.9.9.9"));
    const swapped = unpack(dir, { extraVars: VARS }, { RDMAKIT_INVENTORY_INPUT: inv.file });
    assert.equal(swapped.status, 1);
    assert.match(swapped.stderr, /the inventory file .* is not the planned one/);
    const gone = unpack(dir, { extraVars: VARS }, { RDMAKIT_INVENTORY_INPUT: path.join(dir, "nope.yml") });
    assert.equal(gone.status, 1);
    assert.match(gone.stderr, /the inventory file .*nope\.yml cannot be read \(ENOENT\)/);
    assert.throws(() => readKeptInput(inv.file, inv.digest), /sha256 [0-9a-f]{64}, the plan expects [0-9a-f]{64}/);
});

test("content-addressed: the same content is one file, a preview writes none", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kept-"));
    const a = keepInput(dir, "nodes", "json", "[1]", true);
    const b = keepInput(dir, "nodes", "json", "[1]", true);
    const c = keepInput(dir, "nodes", "json", "[2]", false);
    assert.equal(a.file, b.file);
    assert.deepEqual(fs.readdirSync(path.join(dir, "inputs")), [path.basename(a.file)]);
    assert.ok(!fs.existsSync(c.file));
});

test("one text kept under two names: the second is a link to the first this process wrote, or written when that one is gone", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kept-"));
    const text = `leaf text ${dir}\n`;
    const a = keepInput(dir, "switch-leaf-0", "nvue.yaml", text, true);
    const b = keepInput(dir, "switch-leaf-1", "nvue.yaml", text, true, a.digest);
    assert.equal(b.digest, sha256(text));
    assert.equal(fs.statSync(b.file).ino, fs.statSync(a.file).ino);
    for (const k of [a, b]) {
        assert.equal(readKeptInput(k.file, k.digest), text);
        assert.equal((fs.statSync(k.file).mode & 0o777).toString(8), "600");
    }
    fs.rmSync(a.file);
    fs.rmSync(b.file);
    const c = keepInput(dir, "switch-leaf-2", "nvue.yaml", text, true);
    assert.equal(readKeptInput(c.file, c.digest), text);
    assert.deepEqual(fs.readdirSync(path.join(dir, "inputs")), [path.basename(c.file)]);
});
