// What a Slurm head node's sinfo answers is untrusted (components/slurm/sinfo.ts): the drain-state reader (gate.ts),
// the scale-in wait's reader (day2/scale-live.ts) and the playbook that fetches the answer (playbooks/slurm-states.yml)
// on generated hostile answers: over the bound (refused by name, never read in part), over-long lines, many names.
// Inputs are constructed here in sinfo(1)'s `-o '%n|%t|%E'` and `-o '%N %T'` shapes (https://slurm.schedmd.com/sinfo.html).
// Bound: ~15 s (one ansible-playbook run, skipped without it).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { formatDrainStates, readDrainStates } from "../components/slurm/gate";
import { MAX_SINFO_CHARS, MAX_SINFO_LINE, readSinfoFile, SinfoError } from "../components/slurm/sinfo";
import { drainedStates } from "../components/day2/scale-live";

const ROOT = path.resolve(__dirname, "..");
const cpuMs = (f: () => void): number => { const t0 = process.cpuUsage(); f(); const c = process.cpuUsage(t0); return (c.user + c.system) / 1000; };
const nodes = (n: number) => Array.from({ length: n }, (_, i) => `gpu${String(i).padStart(5, "0")}`);

test("sinfo -R: an answer over MAX_SINFO_CHARS is refused by name, never read in part", () => {
    const line = "gpu00001|drain|rdmakit health: pcie GPU 3 at x8\n";
    const over = line.repeat(Math.ceil((MAX_SINFO_CHARS + 1) / line.length));
    assert.throws(() => readDrainStates(over, ["gpu00001"]), (e: Error) => e instanceof SinfoError &&
        e.message === `sinfo -h -R -o '%n|%t|%E': the answer is over ${MAX_SINFO_CHARS} characters: not read`);
    assert.equal(formatDrainStates(over, ["gpu00001"], "head01"),
        `Slurm: the drain states from head01 were not read (sinfo -h -R -o '%n|%t|%E': the answer is over ${MAX_SINFO_CHARS} characters: not read)\n`);
    // at the bound it is read
    assert.deepEqual(readDrainStates(line.repeat(Math.floor(MAX_SINFO_CHARS / line.length)), ["gpu00001"]).states.map((s) => s.node), ["gpu00001"]);
    // a file over it is not even read into memory
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sinfo-"));
    const file = path.join(dir, "states.txt");
    fs.writeFileSync(file, "");
    fs.truncateSync(file, 1024 * 1024 * 1024);
    assert.throws(() => readSinfoFile(file, "sinfo -R"), new RegExp(`sinfo -R \\(${file}\\): 1073741824 bytes, over ${MAX_SINFO_CHARS}: not read`));
    fs.rmSync(dir, { recursive: true, force: true });
});

test("sinfo readers on a hostile 64 MiB answer: refused before a line is read, in bounded time and memory", () => {
    // 64 MiB is what a node's fetched file may hold (roles' fetch bound); sinfo.ts reads at most MAX_SINFO_CHARS of it,
    // walking lines lazily (sinfoLines is a generator: no split of the whole text), so nothing here grows with the input
    const hostile = "gpu00001|drain|x\n".repeat((64 * 1024 * 1024) / 17);
    const plan = nodes(2_048);
    for (const read of [() => readDrainStates(hostile, plan), () => drainedStates(hostile, plan)]) {
        const heap0 = process.memoryUsage().heapUsed;
        let err: unknown;
        const ms = cpuMs(() => { try { read(); } catch (e) { err = e; } });
        assert.ok(err instanceof SinfoError && /the answer is over 4194304 characters: not read/.test(err.message), String(err));
        assert.ok(ms < 500, `${ms} ms`);
        assert.ok(process.memoryUsage().heapUsed - heap0 < 16 * 1024 * 1024, "no copy or split of the input");
    }
    // within the bound, readDrainStates stops at its line limit (100,000 by default) and reads no further
    const many = "gpu00001|drain|x\n".repeat(100_000) + "gpu00002|down|late\n";
    let got: ReturnType<typeof readDrainStates> | undefined;
    const ms = cpuMs(() => { got = readDrainStates(many, plan); });
    assert.ok(ms < 3000, `${ms} ms`);
    assert.deepEqual(got!.states.map((s) => s.node), ["gpu00001"]);
    assert.deepEqual(readDrainStates(many, plan, Infinity).states.map((s) => s.node), ["gpu00001", "gpu00002"]);
});

test("sinfo -R: linear in its length; over-long and malformed lines counted and said, the others read", () => {
    const plan = nodes(16_384);
    // the bound filled with empty lines, then with one-character lines, then with one line just over MAX_SINFO_LINE
    for (const text of ["\n".repeat(MAX_SINFO_CHARS), "x\n".repeat(MAX_SINFO_CHARS / 2), `gpu00001|drain|${"r".repeat(MAX_SINFO_CHARS - 20)}`]) {
        let got: ReturnType<typeof readDrainStates> | undefined;
        const ms = cpuMs(() => { got = readDrainStates(text, plan, Infinity); });
        assert.ok(ms < 3000, `${ms} ms`);
        assert.equal(got!.states.length, 0);
    }
    const long = `gpu00002|drain|${"r".repeat(MAX_SINFO_LINE)}`;
    const text = ["gpu00001|drain|operator: PSU swap", long, "\u001b]52;c;aGk=\u0007 garbage", "", "gpu00003|down*|Not responding"].join("\n");
    const got = readDrainStates(text, plan);
    assert.deepEqual(got, { states: [{ node: "gpu00001", state: "drain", reason: "operator: PSU swap" }, { node: "gpu00003", state: "down*", reason: "Not responding" }], unread: 2 });
    const shown = formatDrainStates(text, plan, "head01");
    assert.match(shown, new RegExp(`\\n  2 line\\(s\\) not read: longer than ${MAX_SINFO_LINE} characters or not name\\|state\\|reason\\n$`));
    assert.ok(![...shown].some((c) => c !== "\n" && /\p{Cc}/u.test(c)), JSON.stringify(shown));
    // every plan node drained, each with a 200-character reason: read whole, printed in time linear in the nodes
    const all = plan.map((n) => `${n}|drain|${"r".repeat(200)}`).join("\n");
    let out = "";
    const ms = cpuMs(() => { out = formatDrainStates(all, plan, "head01"); });
    assert.ok(ms < 3000, `${ms} ms`);
    assert.equal(out.split("\n").length, plan.length + 2);
});

test("sinfo -R: a ranged node list (what `%N` would print; `%n` never does) is counted as not read, never taken for a node", () => {
    // constructed in sinfo(1)'s -o '%N|%t|%E' shape: one record for three nodes of one state and reason
    // (src/sinfo/sinfo.c _match_node_data merges them unless a `%n` field is in the format)
    const text = "gpu-[001-003]|drain|rdmakit: nccl all_reduce failed\ngpu-004|drain|rdmakit health: Xid 79\n";
    const got = readDrainStates(text, ["gpu-001", "gpu-002", "gpu-003", "gpu-004"]);
    assert.deepEqual(got.states.map((x) => x.node), ["gpu-004"]);
    assert.equal(got.unread, 1);
    assert.match(formatDrainStates(text, ["gpu-001", "gpu-002", "gpu-003", "gpu-004"], "head01"), /1 line\(s\) not read/);
});

test("scale-in's sinfo -N reader: linear in names and lines (no per-line search of the node list), states that are not sinfo's words ignored", () => {
    const asked = nodes(50_000);
    const text = asked.map((n) => `${n} draining`).join("\n");
    let m = new Map<string, string>();
    const ms = cpuMs(() => { m = drainedStates(text, asked); });
    assert.ok(ms < 2000, `${ms} ms for 50,000 names and lines`);
    assert.equal(m.size, asked.length);
    const hostile = drainedStates(`gpu00001 drained\u001b[2J\ngpu00002 ${"d".repeat(5000)}\ngpu00003 drained+cloud~\n`, asked);
    assert.deepEqual([...hostile], [["gpu00003", "drained+cloud"]]);
    assert.throws(() => drainedStates(" ".repeat(MAX_SINFO_CHARS + 1), asked), /sinfo -N -o '%N %T': the answer is over 4194304 characters: not read/);
});

test("slurm-states.yml: at most MAX_SINFO_CHARS + 1 bytes leave the head node; a failing sinfo fails the read", { timeout: 120_000 }, (t) => {
    if (spawnSync("sh", ["-c", "command -v ansible-playbook"]).status !== 0) return t.skip("ansible-playbook is not installed: the playbook was not run");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sinfo-play-"));
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    // the stand-in sinfo: without end (a head node answering more than the bound), or failing
    fs.writeFileSync(path.join(bin, "sinfo"), '#!/bin/sh\n[ -n "${SINFO_FAIL:-}" ] && { echo "slurm_load_partitions: Unable to contact slurm controller" >&2; exit 1; }\nexec yes "gpu00001|drain|a reason"\n', { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "inventory.json"), JSON.stringify({ all: { hosts: { head01: { ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3" } } } }));
    const run = (env: Record<string, string>) => spawnSync("ansible-playbook", ["-i", path.join(dir, "inventory.json"), path.join(ROOT, "playbooks", "slurm-states.yml"),
        "-e", "slurm_states_head=head01", "-e", `slurm_states_file=${path.join(dir, "states.txt")}`], {
        encoding: "utf8", env: { ...process.env, ...env, PATH: `${bin}:${process.env.PATH}`, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg") }, timeout: 100_000 });
    const ok = run({});
    assert.equal(ok.status, 0, ok.stdout + ok.stderr);
    const file = path.join(dir, "states.txt");
    assert.equal(fs.statSync(file).size, MAX_SINFO_CHARS + 2, "4 MiB + 1 byte and the copy's newline");
    // refused before it is read (check.ts prints this as "the drain states from <head> were not read (...)")
    assert.throws(() => readSinfoFile(file, "sinfo -R"), new RegExp(`^Error: sinfo -R \\(${file}\\): 4194306 bytes, over 4194304: not read$`));
    assert.match(formatDrainStates(fs.readFileSync(file, "utf8"), ["gpu00001"], "head01"), /were not read \(.*over 4194304 characters: not read\)/);
    fs.rmSync(file);
    const bad = run({ SINFO_FAIL: "1" });
    assert.notEqual(bad.status, 0, "a sinfo that fails is no empty answer");
    assert.ok(!fs.existsSync(file));
    fs.rmSync(dir, { recursive: true, force: true });
});
