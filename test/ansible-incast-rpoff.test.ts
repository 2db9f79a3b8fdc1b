// The reaction-point-off phase of playbooks/roles/nccl_validate/tasks/incast.yml, run for real on this machine
// (connection local, three inventory names for one host): each sender's enable file is read, set to 0 for the second
// incast only, and written back in the block's `always` even when a task of that phase fails. The enable files are
// plain files in a temporary folder standing in for /sys/class/net/<if>/ecn/roce_rp/enable/<p>; the commands have
// the shape components/validate/incast-rpoff.ts renders (write, then print what the file reads).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { spawnSync } from "node:child_process";

const TASKS = path.join(__dirname, "..", "playbooks", "roles", "nccl_validate", "tasks", "incast.yml");

test("incast.yml: the second incast runs with the senders' reaction point off and restores it, also when that phase fails", { timeout: 240_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-rpoff-"));
    const st = (h: string) => path.join(dir, "st", h);
    fs.mkdirSync(path.join(dir, "st"));
    fs.writeFileSync(st("s1"), "1\n");
    fs.writeFileSync(st("s2"), "0\n");
    const w = (h: string, v: string) => `echo ${v} > "${st(h)}"; cat "${st(h)}"`;
    const rp = (h: string) => ({ read: `cat "${st(h)}"`, off: w(h, "0"), restore_on: w(h, "1"), restore_off: w(h, "0") });
    // the receiver listens on both senders' ports for 3 s; s1 prints its enable file, and in the second phase (file
    // at 0) deletes its client log, so that phase's fetch fails on s1
    const listen = `python3 -c 'import socket,time\nss=[socket.create_server(("127.0.0.1",p)) for p in (28615,28616)]\ntime.sleep(3)'`;
    const vars = {
        nccl_validate_incast: {
            plan: { receiver: { name: "r" }, senders: [{ name: "s1", port: 28615 }, { name: "s2", port: 28616 }], durationSeconds: 1 },
            hosts: ["r", "s1", "s2"], receiver_cmd: listen,
            sender_cmds: { s1: `bash -c 'cat "${st("s1")}"; [ "$(cat "${st("s1")}")" = 1 ] || rm -f ${dir}/rem/s1/incast-rpoff-client.log'`, s2: `cat "${st("s2")}"` },
            snapshot_cmds: { r: "echo r", s1: "echo s1", s2: "echo s2" },
            rp_cmds: { s1: rp("s1"), s2: rp("s2") },
        },
        nccl_validate_remote_dir: `${dir}/rem/{{ inventory_hostname }}`,
        nccl_validate_incast_dir: `${dir}/out`,
    };
    fs.writeFileSync(path.join(dir, "inv"), "[all]\nr ansible_connection=local\ns1 ansible_connection=local\ns2 ansible_connection=local\n");
    fs.writeFileSync(path.join(dir, "pb.yml"), `- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_tasks: ${TASKS}\n`);
    // the role's files/ as the play's: `script: private-dir.sh` is looked up there outside the role (Ansible's search path)
    fs.mkdirSync(path.join(dir, "files"));
    fs.symlinkSync(path.join(path.dirname(path.dirname(TASKS)), "files", "private-dir.sh"), path.join(dir, "files", "private-dir.sh"));
    // with the kit's ansible.cfg, as its validate runs have it (its poll interval spares the CPU Ansible's default burns)
    const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inv"), "-e", JSON.stringify(vars), path.join(dir, "pb.yml")],
        { encoding: "utf8", timeout: 200_000, env: { ...process.env, ANSIBLE_CONFIG: path.join(__dirname, "..", "playbooks", "ansible.cfg") } });
    const out = (f: string) => fs.readFileSync(path.join(dir, "out", f), "utf8");
    // s1's second phase failed (its client log is gone), and the play says so
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stdout, /fatal: \[s1\]/);
    // the first incast ran with the files as configured, the second with 0, and both were written back
    assert.deepEqual([out("s1-client.log"), out("s2-client.log"), out("rpoff-s2-client.log")], ["1\n", "0\n", "0\n"]);
    assert.deepEqual([out("rpoff-s1-rp.txt"), out("rpoff-s2-rp.txt")], ["0\n", "0\n"]);
    assert.ok(!fs.existsSync(path.join(dir, "out", "rpoff-s1-client.log")));
    assert.deepEqual([fs.readFileSync(st("s1"), "utf8"), fs.readFileSync(st("s2"), "utf8")], ["1\n", "0\n"], "each sender's value restored");
    fs.rmSync(dir, { recursive: true, force: true });
});
