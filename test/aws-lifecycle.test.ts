// The capacity wait of the AWS node group (components/aws/lifecycle.ts CAPACITY_WAIT_SCRIPT), run as the component
// runs it (node -e) against a stand-in `aws` on PATH that prints the recorded CLI answers
// (test/fixtures/aws/autoscaling-answers.ts) and records its arguments: it waits through a group that is still
// filling, succeeds with the instance ids, and at its deadline fails with the last failed scaling activity's message.
import { test } from "node:test";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import assert from "node:assert/strict";
import { CAPACITY_WAIT_SCRIPT, pairNodes } from "../components/aws/lifecycle";
import { activitiesAnswer, GROUP, groupAnswer, INSUFFICIENT_CAPACITY } from "./fixtures/aws/autoscaling-answers";

/** A stand-in `aws`: answers the n-th describe-auto-scaling-groups call with groups[n] (the last one repeats). */
function stubAws(groups: unknown[], activities: unknown): { dir: string; calls: () => string[][] } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-aws-"));
    groups.forEach((g, i) => fs.writeFileSync(path.join(dir, `group-${i}.json`), JSON.stringify(g)));
    fs.writeFileSync(path.join(dir, "activities.json"), JSON.stringify(activities));
    fs.writeFileSync(path.join(dir, "aws"), [
        "#!/usr/bin/env node",
        "const fs = require('fs'), p = require('path'), d = __dirname, a = process.argv.slice(2);",
        "fs.appendFileSync(p.join(d, 'calls'), JSON.stringify(a) + '\\n');",
        "if (a[1] === 'describe-auto-scaling-groups') {",
        "  const n = fs.readFileSync(p.join(d, 'calls'), 'utf8').split('\\n').filter((l) => l.includes('describe-auto-scaling-groups')).length - 1;",
        `  const f = p.join(d, 'group-' + Math.min(n, ${groups.length - 1}) + '.json');`,
        "  process.stdout.write(fs.readFileSync(f, 'utf8'));",
        "} else if (a[1] === 'describe-scaling-activities') process.stdout.write(fs.readFileSync(p.join(d, 'activities.json'), 'utf8'));",
        "else { console.error('unexpected call'); process.exit(2); }",
    ].join("\n"), { mode: 0o755 });
    return { dir, calls: () => fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n").map((l) => JSON.parse(l)) };
}

function wait(dir: string | undefined, env: Record<string, string>) {
    return spawnSync("node", ["-e", CAPACITY_WAIT_SCRIPT], {
        encoding: "utf8", timeout: 20_000,
        env: {
            PATH: dir ? `${dir}:${path.dirname(process.execPath)}` : path.dirname(process.execPath),
            RDMAKIT_GROUP: GROUP, RDMAKIT_DESIRED: "4", RDMAKIT_REGION: "us-east-2", RDMAKIT_WAIT_SECONDS: "30", RDMAKIT_POLL_SECONDS: "0", ...env,
        },
    });
}

test("waits while the group fills (a failed launch in between), then prints the InService instance ids", () => {
    const filling = groupAnswer([["i-0aaa0000000000001", "InService", "Healthy"], ["i-0aaa0000000000002", "Pending", "Healthy"]]);
    const full = groupAnswer([
        ["i-0aaa0000000000004", "InService", "Healthy"], ["i-0aaa0000000000001", "InService", "Healthy"],
        ["i-0aaa0000000000003", "InService", "Healthy"], ["i-0aaa0000000000002", "InService", "Healthy"],
    ]);
    const aws = stubAws([filling, filling, full], activitiesAnswer());
    const r = wait(aws.dir, {});
    assert.equal(r.status, 0, r.stderr);
    assert.deepEqual(JSON.parse(r.stdout), { inService: ["i-0aaa0000000000001", "i-0aaa0000000000002", "i-0aaa0000000000003", "i-0aaa0000000000004"] });
    const calls = aws.calls();
    assert.equal(calls.length, 3, "three looks at the group, no activity read while it fills");
    assert.deepEqual(calls[0], ["autoscaling", "describe-auto-scaling-groups", "--auto-scaling-group-names", GROUP, "--region", "us-east-2", "--output", "json"]);
});

test("an InService node that is Unhealthy does not count", () => {
    const aws = stubAws([groupAnswer([
        ["i-1", "InService", "Healthy"], ["i-2", "InService", "Healthy"], ["i-3", "InService", "Healthy"], ["i-4", "InService", "Unhealthy"],
    ])], activitiesAnswer());
    const r = wait(aws.dir, { RDMAKIT_WAIT_SECONDS: "0" });
    assert.equal(r.status, 1);
    assert.match(r.stderr, /has 3 of 4 nodes InService/);
});

test("at the deadline: fails with the last failed scaling activity's status and message, and what to do", () => {
    const aws = stubAws([groupAnswer([["i-1", "InService", "Healthy"], ["i-2", "InService", "Healthy"]])], activitiesAnswer());
    const r = wait(aws.dir, { RDMAKIT_WAIT_SECONDS: "0" });
    assert.equal(r.status, 1);
    assert.ok(r.stderr.includes(`rdmakit: node group ${GROUP} has 2 of 4 nodes InService after 0 minutes; the last scaling activity (Failed, 2026-12-01T10:20:05.000Z): ${INSUFFICIENT_CAPACITY}`), r.stderr);
    assert.match(r.stderr, /run pulumi up again, or lower cluster\.nodes/);
    assert.deepEqual(aws.calls()[1], ["autoscaling", "describe-scaling-activities", "--auto-scaling-group-name", GROUP, "--max-items", "20", "--region", "us-east-2", "--output", "json"]);
});

test("without the AWS CLI: exit 127 with what to install; a CLI error is passed on", () => {
    const none = wait(undefined, {});
    assert.equal(none.status, 127);
    assert.match(none.stderr, /needs the AWS CLI \(aws\) where pulumi up runs/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-aws-"));
    fs.writeFileSync(path.join(dir, "aws"), "#!/bin/sh\necho 'An error occurred (AccessDenied) when calling the DescribeAutoScalingGroups operation' >&2\nexit 254\n", { mode: 0o755 });
    const denied = wait(dir, {});
    assert.equal(denied.status, 1);
    assert.match(denied.stderr, /aws autoscaling describe-auto-scaling-groups failed: An error occurred \(AccessDenied\)/);
});

test("nodes are paired id to address and sorted by address; lists that cannot be paired are refused", () => {
    assert.deepEqual(pairNodes(["i-b", "i-a"], ["10.0.0.20", "10.0.0.3"]), [{ instanceId: "i-a", privateIp: "10.0.0.3" }, { instanceId: "i-b", privateIp: "10.0.0.20" }]);
    assert.throws(() => pairNodes(["i-a", "i-b"], ["10.0.0.3"]), /lists 2 running node instances but 1 private IPs/);
    // a later pulumi up during a replacement: N-1 running instances are refused, not provisioned and graded
    assert.throws(() => pairNodes(["i-a"], ["10.0.0.3"], { nodes: 2, group: "train-nodes-1a2b3c4d-x" }),
        /EC2 lists 1 running instance in node group train-nodes-1a2b3c4d-x, expected 2 \(cluster\.nodes\); the group is replacing a node or is short of capacity.*run pulumi up again once every node is InService/);
    assert.equal(pairNodes(["i-a", "i-b"], ["10.0.0.3", "10.0.0.4"], { nodes: 2, group: "g" }).length, 2);
    // nodes lowered while every node is protected from scale-in: the group keeps them; the message says what to do
    assert.throws(() => pairNodes(["i-a", "i-b", "i-c"], ["10.0.0.3", "10.0.0.4", "10.0.0.5"], { nodes: 2, group: "g" }),
        /EC2 lists 3 running instances in node group g, more than cluster\.nodes \(2\); its nodes are protected from scale-in.*drain the 1 node\(s\) to go, then: aws autoscaling set-instance-protection --no-protected-from-scale-in --auto-scaling-group-name g/);
});
