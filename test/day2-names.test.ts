// A cloud node keeps its name when its machine is replaced (components/day2/names.ts), the replacement is kept in
// the state (bounded) and the repair decision reads it (no loop). Pure. Bound: < 1 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { MAX_REPLACEMENTS, previousNames, stableNodes } from "../components/day2/names";
import { operatingState, parseOperatingState } from "../components/day2/state";
import { decideRepairs } from "../components/day2/repair";
import { previousValue } from "../components/day2/previous";

const names = ["gpu-0", "gpu-1", "gpu-2", "gpu-3"];
const first = [["i-a", "10.0.0.10"], ["i-b", "10.0.0.11"], ["i-c", "10.0.0.12"], ["i-d", "10.0.0.13"]].map(([instanceId, address]) => ({ instanceId, address }));
const AT = "2026-12-05T07:00:00.000Z";

test("first deployment: names by position; a replaced machine (new id, an address that sorts first) keeps the old name, recorded once", () => {
    const one = stableNodes(names, first, undefined, AT);
    assert.deepEqual(one.nodes.map((n) => [n.name, n.instanceId]), [["gpu-0", "i-a"], ["gpu-1", "i-b"], ["gpu-2", "i-c"], ["gpu-3", "i-d"]]);
    assert.deepEqual(one.replacements, []);
    // the cloud replaced i-b; the AWS component lists by address, so the new one comes first
    const listed = [{ instanceId: "i-z", address: "10.0.0.4" }, first[0], first[2], first[3]];
    const two = stableNodes(names, listed, previousNames({ nodes: one.nodes, replacements: [] }), AT);
    assert.deepEqual(two.nodes.map((n) => [n.name, n.instanceId, n.address]), [["gpu-0", "i-a", "10.0.0.10"], ["gpu-1", "i-z", "10.0.0.4"], ["gpu-2", "i-c", "10.0.0.12"], ["gpu-3", "i-d", "10.0.0.13"]]);
    assert.deepEqual(two.replacements, [{ node: "gpu-1", at: AT, fromInstance: "i-b", toInstance: "i-z" }]);
    // nothing changed at the next deployment: the same names, the record kept, nothing added
    const three = stableNodes(names, listed, previousNames({ nodes: two.nodes, replacements: two.replacements }), "2026-12-06T00:00:00.000Z");
    assert.deepEqual(three, two);
});

test("the previous state exported as JSON text (RdmaCluster.operatingState, a Python program's export) names the nodes as the object does", () => {
    const one = stableNodes(names, first, undefined, AT);
    const listed = [{ instanceId: "i-z", address: "10.0.0.4" }, first[0], first[2], first[3]];
    const previous = { nodes: one.nodes, replacements: [] };
    assert.deepEqual(previousNames(previousValue(JSON.stringify(previous))), previousNames(previous));
    assert.equal(stableNodes(names, listed, previousNames(previousValue(JSON.stringify(previous))), AT).nodes[1].name, "gpu-1", "the replaced machine keeps its name");
    // text that is not JSON is no previous state: the nodes are named by position, as on a first deployment
    assert.equal(previousNames(previousValue("{not json")), undefined);
});

test("the JSON text of the largest cluster the spec takes (65,531 AWS nodes, each with a health verdict) is read, as its object is", () => {
    const nodes = Array.from({ length: 65_531 }, (_, i) => ({ name: `p5-demo-${String(i).padStart(5, "0")}`, address: `10.${i >> 16}.${(i >> 8) & 255}.${i & 255}`, instanceId: `i-0${(2 ** 48 + i).toString(16)}` }));
    const st = operatingState({
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {}, nodes, group: { cloud: "aws", region: "us-east-2", autoScalingGroup: "g" },
        validation: { pass: true, health: nodes.map((n) => ({ node: n.name, verdict: "healthy" as const, findings: [] })) },
    });
    const text = JSON.stringify(st);
    assert.ok(text.length > 8 * 1024 * 1024, `${text.length} characters`);
    assert.equal(parseOperatingState(text, "the stack").nodes.length, 65_531);
    assert.equal(previousNames(previousValue(text))?.nodes.length, 65_531, "a replaced machine keeps its name (not named by position)");
});

test("scale: a grown cluster names its new instances with the new names (no replacement); a shrunk one keeps the survivors' names where it can", () => {
    const before = stableNodes(names, first, undefined, AT);
    const six = ["gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5"];
    const grown = stableNodes(six, [{ instanceId: "i-e", address: "10.0.0.5" }, ...first, { instanceId: "i-f", address: "10.0.0.20" }], previousNames({ nodes: before.nodes }), AT);
    assert.deepEqual(grown.nodes.map((n) => [n.name, n.instanceId]), [["gpu-0", "i-a"], ["gpu-1", "i-b"], ["gpu-2", "i-c"], ["gpu-3", "i-d"], ["gpu-4", "i-e"], ["gpu-5", "i-f"]]);
    assert.deepEqual(grown.replacements, []);
    // 4 → 2 where the group kept i-a and i-d: gpu-0 stays, i-d takes the free gpu-1 (a rename, not a replacement)
    const shrunk = stableNodes(["gpu-0", "gpu-1"], [first[0], first[3]], previousNames({ nodes: before.nodes }), AT);
    assert.deepEqual(shrunk.nodes.map((n) => [n.name, n.instanceId]), [["gpu-0", "i-a"], ["gpu-1", "i-d"]]);
    assert.deepEqual(shrunk.replacements, []);
});

test("the history is bounded, and a previous state that is not this shape is not trusted: named by position", () => {
    const many = Array.from({ length: 40 }, (_, k) => ({ node: "gpu-1", at: AT, fromInstance: `i-${k}`, toInstance: `i-${k + 1}` }));
    const prev = previousNames({ nodes: [{ name: "gpu-0", instanceId: "i-a" }], replacements: [...many, { node: "x; rm -rf /", at: AT }, { node: "gpu-2", at: "yesterday" }] });
    assert.equal(prev?.replacements?.length, MAX_REPLACEMENTS);
    assert.equal(prev?.replacements?.at(-1)?.toInstance, "i-40", "the newest kept");
    assert.equal(previousNames("[secret]"), undefined);
    assert.deepEqual(previousNames({ nodes: [{ name: "$(id)", instanceId: "i-a" }, { name: "gpu-1", instanceId: 7 }] })?.nodes, []);
    const s = operatingState({ stack: "p", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {}, nodes: [], replacements: many });
    assert.equal(s.replacements?.length, MAX_REPLACEMENTS);
    assert.throws(() => parseOperatingState({ ...s, replacements: [...many] }, "stack p"), /replacements is not a list of at most 16/);
    assert.throws(() => parseOperatingState({ ...s, replacements: [{ node: "a b", at: AT }] }, "stack p"), /replacements is not a list/);
});

test("the decision reads the state's replacements: failing on the instance that replaced its last one is reported; on a later instance it may be replaced", () => {
    const failing = (instanceId: string, replacements: Array<{ node: string; at: string; fromInstance: string; toInstance: string }>) => operatingState({
        stack: "p", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {},
        nodes: [{ name: "gpu-0", address: "10.0.0.10", instanceId: "i-a" }, { name: "gpu-1", address: "10.0.0.4", instanceId }],
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: "g" }, replacements,
        validation: { pass: false, health: [{ node: "gpu-0", verdict: "healthy", findings: [] }, { node: "gpu-1", verdict: "failing", findings: [{ component: "ecc", message: "row remapping failed", persistence: "persistent" }] }] },
    });
    const decide = (s: ReturnType<typeof failing>) => decideRepairs(s, { policy: "replace", cap: 1, classify: (f) => f.persistence ?? "unknown", history: s.replacements ?? [] }).actions[0];
    const again = decide(failing("i-z", [{ node: "gpu-1", at: AT, fromInstance: "i-b", toInstance: "i-z" }]));
    assert.equal(again.kind, "report");
    assert.match((again as { why: string }).why, /failed again after its replacement at 2026-12-05T07:00:00.000Z: not replaced in a loop/);
    // a record for an earlier instance only: the node's machine now is not the one a replacement gave it
    assert.equal(decide(failing("i-y", [{ node: "gpu-1", at: AT, fromInstance: "i-b", toInstance: "i-z" }])).kind, "replace");
});

test("rdmakit status lists the replacements, newest first", async () => {
    const { formatStatus } = await import("../components/day2/status");
    const s = operatingState({
        stack: "p", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {}, nodes: [{ name: "gpu-1", address: "10.0.0.4", instanceId: "i-z" }],
        replacements: [{ node: "gpu-1", at: "2026-12-04T07:00:00.000Z", fromInstance: "i-a", toInstance: "i-b" }, { node: "gpu-1", at: AT, fromInstance: "i-b", toInstance: "i-z" }],
    });
    const text = formatStatus(s, "stack p", decideRepairs(s, { policy: "replace", cap: 1, classify: () => "unknown", history: [] }), new Date("2026-12-05T09:00:00.000Z"));
    assert.match(text, /^replaced \(newest first, 2 of 2 kept\):\n {2}gpu-1: i-b → i-z, 2h 0m ago\n {2}gpu-1: i-a → i-b, 26h 0m ago$/m);
});
