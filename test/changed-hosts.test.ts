// Which hosts the software step runs on after a clean run when the inventory changed (components/provision/
// changed-hosts.ts): a replaced or added node alone; anything shared changed, a failed node, or files that do not
// match the record: every host. Pure, on renderInventory's own text. Bound: < 1 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { changedHosts, planChangedHosts } from "../components/provision/changed-hosts";
import { renderInventory } from "../components/provision/inventory";
import type { RunRecord } from "../components/provision/resume";

const sha = (s: string) => createHash("sha256").update(s).digest("hex");
const inv = (ids: string[], vars: Record<string, unknown> = { rdmakit_fabric: "aws-efa", slurm_files: { "slurm.conf": "NodeName=gpu-0 NodeAddr=10.0.0.10" } }) =>
    renderInventory({ hosts: ids.map((id, i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, user: "ubuntu", vars: { rdmakit_instance_id: id } })), vars });
const before = inv(["i-0", "i-1", "i-2"]);
const digests = { vars: "a".repeat(64), playbooks: "b".repeat(64) };
const clean: RunRecord = { inventory: sha(before), ...digests, attempt: 0, hosts: 3, limit: [], failed: [] };

test("a replaced node (a new instance id) runs alone; an added node alone; the others are not visited", () => {
    const replaced = inv(["i-0", "i-9", "i-2"]);
    assert.deepEqual(planChangedHosts(clean, { inventory: sha(replaced), ...digests }, before, replaced), { attempt: 1, hosts: 3, nodes: ["gpu-1"] });
    const grown = inv(["i-0", "i-1", "i-2", "i-3", "i-4"]);
    assert.deepEqual(changedHosts(before, grown), ["gpu-3", "gpu-4"]);
    // after a limited run, the next one counts on from its attempt
    assert.equal(planChangedHosts({ ...clean, attempt: 2, limit: ["gpu-2"] }, { inventory: sha(replaced), ...digests }, before, replaced)?.attempt, 3);
});

test("every host runs when something shared changed, a node failed, the variables or playbooks changed, or the file is not the record's", () => {
    const shared = inv(["i-0", "i-9", "i-2"], { rdmakit_fabric: "aws-efa", slurm_files: { "slurm.conf": "NodeName=gpu-0 NodeAddr=10.0.0.99" } });
    const replaced = inv(["i-0", "i-9", "i-2"]);
    const now = { inventory: sha(replaced), ...digests };
    assert.equal(changedHosts(before, shared), undefined, "slurm.conf (the group's variables) changed");
    assert.equal(planChangedHosts(clean, { inventory: sha(shared), ...digests }, before, shared), undefined);
    assert.equal(planChangedHosts({ ...clean, failed: ["gpu-0"] }, now, before, replaced), undefined);
    assert.equal(planChangedHosts({ ...clean, vars: "c".repeat(64) }, now, before, replaced), undefined);
    assert.equal(planChangedHosts({ ...clean, playbooks: "c".repeat(64) }, now, before, replaced), undefined);
    assert.equal(planChangedHosts(clean, now, before + "\n# edited\n", replaced), undefined, "not the inventory the record ran with");
    assert.equal(planChangedHosts(clean, now, undefined, replaced), undefined, "another checkout: no file");
    assert.equal(planChangedHosts(undefined, now, before, replaced), undefined);
    assert.equal(planChangedHosts(clean, { inventory: sha(before), ...digests }, before, before), undefined, "nothing changed: resume.ts decides");
    // a host removed, the rest the same: nothing to run on (the command still runs: every host)
    assert.equal(planChangedHosts(clean, { inventory: sha(inv(["i-0", "i-1"])), ...digests }, before, inv(["i-0", "i-1"])), undefined);
    assert.equal(changedHosts("not: [yaml", replaced), undefined);
});
