// A preview writes nothing: the Ansible steps' summariser script is written only when the deployment runs
// (components/provision/ansible.ts, components/validate/component.ts guard it with pulumi.runtime.isDryRun()).
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";

test("AnsiblePlaybook at preview: the Command is registered, no file is written", async () => {
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
    assert.equal(fs.existsSync(outDir), false, "preview wrote into out/<stack>");
    fs.rmSync(path.dirname(path.dirname(outDir)), { recursive: true });
});
