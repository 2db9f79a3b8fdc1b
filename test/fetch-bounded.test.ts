// playbooks/roles/fetch_bounded, run for real by ansible-playbook on hosts that are this machine (local connection):
// what a node sends is untrusted, so a file over the bound, or one that is not a regular file (a link to /dev/zero),
// is refused by name before it is sent, and a copy over the bound on the controller is removed and refused; a
// refusal is written beside the copy's place and the health grade names the capture UNREADABLE with it. Files are
// generated here. Bound: ~20 s (skipped without ansible-playbook).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { gradeHealthDir } from "../components/health/report";
import { stack } from "./fixtures/health/stacks";

const ROOT = path.resolve(__dirname, "..");

test("fetch_bounded: a file over the bound or not a regular file is refused per node by name; the others are fetched", { timeout: 120_000 }, (t) => {
    if (spawnSync("sh", ["-c", "command -v ansible-playbook"]).status !== 0) return t.skip("ansible-playbook is not installed: the role was not run");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fetch-bounded-"));
    const node = path.join(dir, "node");
    const out = path.join(dir, "out");
    fs.mkdirSync(node);
    fs.writeFileSync(path.join(node, "small.log"), "# nccl-tests\n");
    fs.writeFileSync(path.join(node, "big.log"), "x".repeat(2048));
    fs.symlinkSync("/dev/zero", path.join(node, "zero.log"));
    // n4: nothing on the node and a copy over the bound already here: what the check after the fetch sees when a node
    // wrote more between its size and the fetch (that race is not made here; the second check is)
    fs.mkdirSync(path.join(out, "n4"), { recursive: true });
    fs.writeFileSync(path.join(out, "n4", "late.log"), "y".repeat(4096));
    const host = (src: string, extra: Record<string, unknown> = {}) => ({ ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3", src: path.join(node, src), ...extra });
    const hosts = {
        n1: host("small.log"), n2: host("big.log"), n3: host("zero.log"),
        n4: host("late.log", { missing_ok: true }), n5: host("big.log", { fails: false }),
    };
    fs.writeFileSync(path.join(dir, "inventory.json"), JSON.stringify({ all: { hosts } }));
    fs.writeFileSync(path.join(dir, "play.yml"), [
        "- hosts: all", "  gather_facts: false", "  tasks:",
        "    - ansible.builtin.include_role:", "        name: fetch_bounded", "      vars:",
        "        fetch_bounded_src: \"{{ src }}\"",
        `        fetch_bounded_dest: "${out}/{{ inventory_hostname }}/{{ src | basename }}"`,
        "        fetch_bounded_max_bytes: 1024",
        "        fetch_bounded_fail_on_missing: \"{{ not (missing_ok | default(false)) }}\"",
        "        fetch_bounded_refuse_fails: \"{{ fails | default(true) }}\"",
        "    - ansible.builtin.debug:", "        msg: went on", "",
    ].join("\n"));
    const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inventory.json"), path.join(dir, "play.yml")], {
        encoding: "utf8", timeout: 100_000, env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_ROLES_PATH: path.join(ROOT, "playbooks", "roles"), ANSIBLE_NOCOLOR: "1" },
    });
    const all = r.stdout + r.stderr;
    const recap = (h: string) => new RegExp(`^${h}\\s+: ok=\\d+\\s+changed=\\d+\\s+unreachable=0\\s+failed=(\\d+)`, "m").exec(all)?.[1];
    assert.deepEqual(["n1", "n2", "n3", "n4", "n5"].map(recap), ["0", "1", "1", "1", "0"], all);
    assert.equal(fs.readFileSync(path.join(out, "n1", "small.log"), "utf8"), "# nccl-tests\n");
    assert.ok(!fs.existsSync(path.join(out, "n1", "small.log.refused")));
    assert.ok(all.includes(`n2: ${path.join(node, "big.log")} is 2048 bytes, over 1024: not fetched, not read`), all);
    assert.ok(all.includes(`n3: ${path.join(node, "zero.log")} is not a regular file: not fetched, not read`), all);
    assert.ok(all.includes(`n4: ${path.join(node, "late.log")} sent 4096 bytes, over 1024: removed on the controller, not read`), all);
    for (const [h, f] of [["n2", "big.log"], ["n3", "zero.log"], ["n4", "late.log"], ["n5", "big.log"]]) {
        assert.ok(!fs.existsSync(path.join(out, h, f)), `${h}: no copy kept`);
        assert.ok(fs.existsSync(path.join(out, h, `${f}.refused`)), `${h}: the refusal is written`);
    }
    assert.equal(fs.readFileSync(path.join(out, "n5", "big.log.refused"), "utf8"), "is 2048 bytes, over 1024: not fetched, not read\n");
    fs.rmSync(dir, { recursive: true, force: true });
});

test("health grade: a capture the fetch refused is UNREADABLE with the refusal, never missing or healthy", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fetch-refused-"));
    fs.mkdirSync(path.join(dir, "gpu01"));
    fs.writeFileSync(path.join(dir, "gpu01", "dmesg.txt.refused"), "is 70000000 bytes, over 67108864: not fetched, not read\n");
    const [h] = gradeHealthDir(dir, stack("examples/aws-p5.yaml"));
    assert.equal(h.verdict, "unreadable");
    assert.deepEqual(h.unreadable.filter((u) => u.file === "dmesg.txt"), [{ file: "dmesg.txt", reason: "was refused at the fetch: is 70000000 bytes, over 67108864: not fetched, not read" }]);
    fs.rmSync(dir, { recursive: true, force: true });
});
