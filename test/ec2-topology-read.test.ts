// The EC2 instance topology read at pulumi up (components/slurm/ec2-topology.ts EC2_TOPOLOGY_SCRIPT), run as the AWS
// component runs it (node -e) against a stand-in `aws` on PATH that answers with the AWS CLI's response shape
// (test/fixtures/aws/ec2-topology.ts) and records its arguments; then its output read as topology.conf's input.
// Bounded: every run has a 20 s limit, the waits are 0-2 s; the whole file takes about 2 s.
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import assert from "node:assert/strict";
import { EC2_TOPOLOGY_SCRIPT, ec2TopologyFromRead } from "../components/slurm/ec2-topology";
import { ec2Tree } from "../components/slurm/render";
import { topologyAnswer } from "./fixtures/aws/ec2-topology";

const id = (n: number) => `i-0aaa${String(n).padStart(13, "0")}`;

/** A stand-in `aws`: answers the n-th describe-instance-topology call with answers[n] (the last repeats), or fails. */
function stubAws(answers: unknown[], fail?: string): { dir: string; calls: () => string[][] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-topo-"));
    answers.forEach((a, i) => fs.writeFileSync(path.join(dir, `answer-${i}.json`), JSON.stringify(a)));
    fs.writeFileSync(path.join(dir, "aws"), [
        "#!/usr/bin/env node",
        "const fs = require('fs'), p = require('path'), d = __dirname, a = process.argv.slice(2);",
        "fs.appendFileSync(p.join(d, 'calls'), JSON.stringify(a) + '\\n');",
        fail ? `console.error(${JSON.stringify(fail)}); process.exit(254);` : "",
        "const n = fs.readFileSync(p.join(d, 'calls'), 'utf8').trim().split('\\n').length - 1;",
        "const ids = a.slice(a.indexOf('--instance-ids') + 1, a.indexOf('--region'));",
        `const all = JSON.parse(fs.readFileSync(p.join(d, 'answer-' + Math.min(n, ${Math.max(answers.length - 1, 0)}) + '.json'), 'utf8'));`,
        // the API lists the asked instances only
        "process.stdout.write(JSON.stringify({ Instances: all.Instances.filter((i) => ids.includes(i.InstanceId)) }));",
    ].join("\n"), { mode: 0o755 });
    return { dir, calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n").map((l) => JSON.parse(l)) };
}

function read(dir: string, ids: string[], env: Record<string, string> = {}) {
    return spawnSync("node", ["-e", EC2_TOPOLOGY_SCRIPT], {
        encoding: "utf8", timeout: 20_000,
        env: { PATH: `${dir}:${path.dirname(process.execPath)}`, RDMAKIT_INSTANCE_IDS: ids.join(","), RDMAKIT_REGION: "us-west-2",
            RDMAKIT_WAIT_SECONDS: "2", RDMAKIT_POLL_SECONDS: "0", ...env },
    });
}

test("polls until every node is listed with its network nodes (eventual consistency), then the tree has no unplaced node", () => {
    const ids = [id(1), id(2), id(3)];
    const early = topologyAnswer([{ id: ids[0], leaf: "nn-3333333333example" }, { id: ids[1] }]);
    const full = topologyAnswer([{ id: ids[0], leaf: "nn-3333333333example" }, { id: ids[1], leaf: "nn-4444444444example" }, { id: ids[2], leaf: "nn-3333333333example" }]);
    const aws = stubAws([early, full]);
    const r = read(aws.dir, ids);
    assert.equal(r.status, 0, r.stderr);
    const calls = aws.calls();
    assert.equal(calls.length, 2, "asked again while a node was missing");
    assert.deepEqual(calls[0], ["ec2", "describe-instance-topology", "--instance-ids", ...ids, "--region", "us-west-2", "--output", "json"]);
    const got = ec2TopologyFromRead(r.stdout, { "c-000": ids[0], "c-001": ids[1], "c-002": ids[2] });
    assert.equal(got.warning, undefined);
    const t = ec2Tree(["c-000", "c-001", "c-002"], got.topology!);
    assert.equal(t.kind, "tree");
    if (t.kind !== "tree") return;
    assert.deepEqual(new Map(t.switches.map((s) => [s.name, s.nodes ?? s.switches])), new Map<string, string[]>([
        ["nn-3333333333example", ["c-000", "c-002"]], ["nn-4444444444example", ["c-001"]],
        ["nn-1111111111example", ["nn-2222222222example"]], ["nn-2222222222example", ["nn-3333333333example", "nn-4444444444example"]],
    ]));
    assert.deepEqual(t.warnings, []);
});

test("at its deadline it goes on with what it has: the missing node under ec2-unplaced, with a warning", () => {
    const ids = [id(1), id(2)];
    const aws = stubAws([topologyAnswer([{ id: ids[0], leaf: "nn-3333333333example" }])]);
    const r = read(aws.dir, ids, { RDMAKIT_WAIT_SECONDS: "0" });
    assert.equal(r.status, 0, r.stderr);
    const t = ec2Tree(["c-000", "c-001"], ec2TopologyFromRead(r.stdout, { "c-000": ids[0], "c-001": ids[1] }).topology!);
    assert.ok(t.kind === "tree" && t.switches.some((s) => s.name === "ec2-unplaced" && s.nodes?.[0] === "c-001"));
});

test("more than 100 nodes: one call per 100 ids (the API's limit)", () => {
    const ids = Array.from({ length: 150 }, (_, i) => id(i));
    const aws = stubAws([topologyAnswer(ids.map((x) => ({ id: x, leaf: "nn-3333333333example" })))]);
    const r = read(aws.dir, ids);
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(aws.calls().map((c) => c.indexOf("--region") - c.indexOf("--instance-ids") - 1), [100, 50]);
    assert.equal(ec2TopologyFromRead(r.stdout, {}).topology!.instances.length, 150);
});

test("no permission or no CLI: the deployment goes on, the warning names ec2:DescribeInstanceTopology; a hostile answer is refused", () => {
    const denied = stubAws([], "An error occurred (UnauthorizedOperation) when calling the DescribeInstanceTopology operation: You are not authorized to perform this operation.");
    const r = read(denied.dir, [id(1)]);
    assert.equal(r.status, 0, r.stderr);
    const got = ec2TopologyFromRead(r.stdout, { "c-000": id(1) });
    assert.equal(got.topology, undefined);
    assert.match(got.warning!, /UnauthorizedOperation.*every node under one switch.*ec2:DescribeInstanceTopology/);
    const none = spawnSync("node", ["-e", EC2_TOPOLOGY_SCRIPT], { encoding: "utf8", timeout: 20_000,
        env: { PATH: path.dirname(process.execPath), RDMAKIT_INSTANCE_IDS: id(1), RDMAKIT_REGION: "us-west-2", RDMAKIT_WAIT_SECONDS: "0", RDMAKIT_POLL_SECONDS: "0" } });
    assert.match(ec2TopologyFromRead(none.stdout, {}).warning!, /AWS CLI \(aws\) is not installed/);
    // a network node id that would write another line into topology.conf
    const bad = JSON.stringify({ Instances: [{ InstanceId: id(1), NetworkNodes: ["nn-1\nSwitchName=evil Nodes=ALL"] }] });
    assert.match(ec2TopologyFromRead(bad, { "c-000": id(1) }).warning!, /refused.*NetworkNodes/);
    assert.match(ec2TopologyFromRead("not json", {}).warning!, /no JSON/);
});
