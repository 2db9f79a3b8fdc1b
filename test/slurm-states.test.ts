/**
 * The node states `sinfo -h -R -o '%n|%t|%E'` can print (Slurm 22.05 to 25.11), read by parseDrainStates and judged by
 * unavailableNodes. The states come from Slurm's own source (test/fixtures/slurm-states/README.md): before this test
 * the reader dropped the line of a node in eight of them ("alloc+", "canc_r", "pow_dn", "pow_up", "powered_dn",
 * "powering_up", "powring_dn", "?"), so a node powered down by name was never seen as drained or down.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parseDrainStates } from "../components/slurm/gate";
import { unavailableNodes } from "../components/validate/select";

const STATES = fs.readFileSync(path.join(__dirname, "fixtures", "slurm-states", "compact-states.txt"), "utf8")
    .split("\n").filter((l) => l && !l.startsWith("#")).map((s) => s.toLowerCase());

test("every compact state Slurm 22.05-25.11 prints is read, with its reason (spaces, a bar, brackets kept)", () => {
    assert.equal(STATES.length, 100);
    for (const s of ["drain*", "mix-", "down~", "plnd", "alloc+", "pow_dn", "powering_up", "canc_r", "?", "ext"]) assert.ok(STATES.includes(s), s);
    for (const state of STATES) {
        const got = parseDrainStates(`gpu01|${state}|Kill task failed [root@2024-05-01T10:00:00]|x\n`, ["gpu01"]);
        assert.deepEqual(got, [{ node: "gpu01", state, reason: "Kill task failed [root@2024-05-01T10:00:00]|x" }], state);
    }
});

test("a node powered down or in a state Slurm cannot name is not given to the run, even under rdmakit's reason", () => {
    const hosts = ["gpu01", "gpu02", "gpu03", "gpu04", "gpu05"];
    const text = [
        "gpu01|pow_dn|rdmakit: not validated yet",
        "gpu02|powering_up|rdmakit: not validated yet",
        "gpu03|?|rdmakit: not validated yet",
        // rdmakit's own drain of a node that answers: the hold resumes it, so the run takes it
        "gpu04|drain|rdmakit: not validated yet",
        // an operator's drain: kept out whatever its state
        "gpu05|drng|Not responding",
    ].join("\n");
    assert.deepEqual(unavailableNodes(text, hosts).map((n) => [n.node, n.why]), [
        ["gpu01", "Slurm: pow_dn, rdmakit: not validated yet"],
        ["gpu02", "Slurm: powering_up, rdmakit: not validated yet"],
        ["gpu03", "Slurm: ?, rdmakit: not validated yet"],
        ["gpu05", "Slurm: drng, Not responding"],
    ]);
    // the state words are matched whole: "unk" is, "idle" and "alloc+" (jobs completing) are not unavailable
    assert.deepEqual(unavailableNodes("gpu01|unk*|rdmakit: x\ngpu02|alloc+|rdmakit: x\ngpu03|idle|rdmakit: x\n", hosts).map((n) => n.node), ["gpu01"]);
});
