// The switch pushes of examples/roce-h100.yaml as `rdmakit plan` records them (the real index.ts on Pulumi's mock
// engine, with each resource's dependencies): one canary push depends on nothing, its check depends on it, every other
// push depends on an earlier stage's check, and the whole-fabric check comes after every push.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as path from "node:path";
import { runProgramOffline } from "../components/offline";

test("examples/roce-h100.yaml: exactly one switch push starts without depending on another push or its check", { timeout: 120_000 }, async () => {
    const root = path.join(__dirname, "..");
    const r = await runProgramOffline(path.join(root, "examples", "roce-h100.yaml"), "roce-h100", path.join(root, "index.ts"));
    const cmds = r.resources.filter((x) => x.type === "command:local:Command");
    const pushes = cmds.filter((x) => x.name.endsWith("-qos"));
    const checks = cmds.filter((x) => x.name.endsWith("-check"));
    assert.equal(pushes.length, 3, pushes.map((p) => p.name).join(", "));
    const urns = new Map([...pushes, ...checks].map((x) => [x.urn!, x.name]));
    const deps = (x: (typeof cmds)[number]) => (x.dependencies ?? []).filter((u) => urns.has(u)).map((u) => urns.get(u)!);
    const free = pushes.filter((p) => deps(p).length === 0);
    assert.deepEqual(free.map((p) => p.name), ["cluster-roce-leaf-sonic-qos"], "the canary, alone");
    for (const p of pushes.filter((x) => !free.includes(x))) assert.ok(deps(p).some((d) => d.endsWith("-check")), `${p.name} waits for a check: ${deps(p)}`);
    const canaryCheck = checks.find((c) => deps(c).includes(free[0].name));
    assert.ok(canaryCheck && /--only leaf-sonic/.test(String((canaryCheck.inputs as { create: string }).create)), "the canary's own check");
    const whole = checks.find((c) => c.name.endsWith("-fabric-check"))!;
    assert.deepEqual(deps(whole).sort(), pushes.filter((p) => !free.includes(p)).map((p) => p.name).sort(), "the whole-fabric check after the last stage");
});
