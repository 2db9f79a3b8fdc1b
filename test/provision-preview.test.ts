// A preview writes no program: the Ansible steps' summariser script is written only when the deployment runs
// (components/provision/ansible.ts, components/validate/component.ts guard it with pulumi.runtime.isDryRun()). The
// inventory the run names by digest is kept at a preview too (kept-input.ts), as the switch texts are: the policy pack
// reads the hosts from it before anything is created.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";

test("AnsiblePlaybook at preview: the Command is registered, only the kept inventory is written", async () => {
    const registered: string[] = [];
    await pulumi.runtime.setMocks({
        newResource: (args) => { registered.push(args.type); return { id: `${args.name}-id`, state: args.inputs }; },
        call: () => ({}),
    }, "rdmakit", "preview", true);
    const { AnsiblePlaybook } = await import("../components/provision/ansible");
    const outDir = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-preview-")), "out", "dev");
    new AnsiblePlaybook("sw", { inventory: "all: {}\n", sshPrivateKey: "k", outDir });
    await new Promise((r) => setImmediate(r));
    assert.deepEqual(registered, ["rdmakit:index:AnsiblePlaybook", "command:local:Command"]);
    const written = fs.existsSync(outDir) ? fs.readdirSync(outDir, { recursive: true }).map(String).sort() : [];
    assert.deepEqual(written.filter((f) => !/^inputs(\/inventory-[0-9a-f]{64}\.yml)?$/.test(f)), [], "preview wrote more than the kept inventory into out/<stack>");
    assert.equal(fs.readFileSync(path.join(outDir, written.find((f) => f.startsWith("inputs/"))!), "utf8"), "all: {}\n");
    fs.rmSync(path.dirname(path.dirname(outDir)), { recursive: true });
});
