// cluster.ansible: forks from the node count with a cap, failure tolerance, excluded nodes (components/plan/provision.ts)
// as the inventory, the validation arguments and RdmaCluster's argument checks read them.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { keepNodes, provisionIssues } from "../components/plan/provision";
import { inventoryHosts } from "../components/provision/nodes";
import { validationArgsFromPlan } from "../components/validate/fromPlan";

const example = (name: string): Record<string, unknown> =>
    parse(fs.readFileSync(path.join(__dirname, "..", "examples", name), "utf8")).config["rdmakit:cluster"];

function awsSpec(nodes: number, ansible?: Record<string, unknown>) {
    return parseClusterSpec({ ...example("aws-p5.yaml"), nodes, ...(ansible ? { ansible } : {}) });
}

test("forks: the node count, up to the cap; the tolerance passes through; defaults", () => {
    assert.deepEqual(planCluster(awsSpec(8)).provision, { forks: 8, maxFailPercentage: 0, excluded: [], mode: "node-local" });
    assert.equal(planCluster(awsSpec(1000)).provision.forks, 100);
    assert.equal(planCluster(awsSpec(1000, { maxForks: 250 })).provision.forks, 250);
    assert.equal(planCluster(awsSpec(16, { maxFailPercentage: 5 })).provision.maxFailPercentage, 5);
});

test("cluster.ansible: bad values name the field", () => {
    assert.throws(() => awsSpec(8, { maxFailPercentage: 100 }), /cluster\.ansible\.maxFailPercentage/);
    assert.throws(() => awsSpec(8, { maxForks: 0 }), /cluster\.ansible\.maxForks/);
    assert.throws(() => awsSpec(8, { exclude: ["bad name"] }), /cluster\.ansible\.exclude\.0|cluster\.ansible\.exclude\[0\]/);
    assert.throws(() => awsSpec(8, { retries: 2 }), /cluster\.ansible.*retries/);
    assert.throws(() => awsSpec(8, { mode: "pull" }), /cluster\.ansible\.mode/);
});

test("mode: node-local unless the spec asks for the controller; every example plans node-local", () => {
    assert.equal(planCluster(awsSpec(8, { mode: "controller" })).provision.mode, "controller");
    const examples = fs.readdirSync(path.join(__dirname, "..", "examples")).filter((f) => f.endsWith(".yaml"));
    assert.ok(examples.length >= 3, examples.join(", "));
    for (const f of examples) assert.equal(planCluster(parseClusterSpec(example(f))).provision.mode, "node-local", f);
});

test("exclude: unknown, twice, or every node is refused with the field path", () => {
    const spec = awsSpec(3);
    const names = planCluster(spec).validation.hostNames;
    const issues = provisionIssues({ ...spec, ansible: { ...spec.ansible, exclude: ["nope", names[1], names[1]] } }, names);
    assert.deepEqual(issues.map((i) => [i.path, i.message]), [
        ["cluster.ansible.exclude[0]", "names no node of this cluster"],
        ["cluster.ansible.exclude[2]", "is listed twice"],
    ]);
    assert.match(String(issues[0].allowed), new RegExp(`^node names: ${names[0]}, ${names[1]}, ${names[2]}$`));
    const all = provisionIssues({ ...spec, ansible: { ...spec.ansible, exclude: names } }, names);
    assert.deepEqual(all.map((i) => i.path), ["cluster.ansible.exclude"]);
    assert.match(all[0].message, /leaves no node to provision/);
    assert.deepEqual(provisionIssues({ ...spec, provision: false, ansible: { ...spec.ansible, exclude: names } }, names), []);
});

test("an excluded node is in neither the inventory nor the validation; the others keep their addresses and order", () => {
    const base = awsSpec(4);
    const names = planCluster(base).validation.hostNames;
    const plan = planCluster(awsSpec(4, { exclude: [names[2]] }));
    assert.deepEqual(plan.provision, { forks: 3, maxFailPercentage: 0, excluded: [names[2]], mode: "node-local" });
    const ips = ["10.0.0.10", "10.0.0.11", "10.0.0.12", "10.0.0.13"];
    assert.deepEqual(inventoryHosts(plan, ips).map((h) => [h.name, h.address]), [[names[0], ips[0]], [names[1], ips[1]], [names[3], ips[3]]]);
    assert.deepEqual(validationArgsFromPlan(plan, "dev").hosts, [names[0], names[1], names[3]]);
    assert.deepEqual(keepNodes(names, ips, [names[2]]).values, [ips[0], ips[1], ips[3]]);
    // the plan still reports every node; only the Ansible steps leave one out
    assert.deepEqual(plan.validation.hostNames, names);
});

test("the jump host's user data: a cloud-config that installs the sshd drop-in with the raised MaxStartups", async () => {
    const { jumpHostCloudConfig, JUMP_HOST_SSHD_SETTINGS } = await import("../components/provision/jump");
    const text = jumpHostCloudConfig(undefined, "aws");
    assert.ok(text.startsWith("#cloud-config\n"));
    const doc = parse(text);
    assert.deepEqual(doc.write_files, [{ path: "/etc/ssh/sshd_config.d/60-rdmakit-jump.conf", owner: "root:root", permissions: "0644", content: JUMP_HOST_SSHD_SETTINGS }]);
    // at least the default cap on forks (cluster.ansible.maxForks) may be pending at once
    const start = Number(/^MaxStartups (\d+):/m.exec(JUMP_HOST_SSHD_SETTINGS)?.[1]);
    assert.ok(start >= parseClusterSpec({ ...example("aws-p5.yaml") }).ansible.maxForks);
    assert.deepEqual(doc.runcmd, [["systemctl", "try-reload-or-restart", "ssh.service"]]);
});
