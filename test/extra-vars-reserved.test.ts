/**
 * F1 of the red-team review (issue 25): extra variables have Ansible's highest precedence, so an
 * `ansible_ssh_executable` or `ansible_ssh_common_args` among AnsiblePlaybook's extraVars ran any program on this
 * machine and turned host-key pinning off. The attack as the red team ran it: the kit's own run script (the one the
 * component's command runs) with the real ansible-playbook, the variables as the component turns them into the run's
 * input; and a team's program through `rdmakit plan --program`. Every variable Ansible's own connection, become and
 * shell plugins read (ansible-doc --json of this machine's Ansible) is refused.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ANSIBLE_RUN_SCRIPT, checkAnsiblePlaybookArgs, extraVarsText, RUN_INTERPRETER, sha256 } from "../components/provision/ansible";
import { serveKeyLocally } from "../components/provision/keysocket";
import { extraVarProblem, RESERVED_VARS, renderInventory, checkInventoryArgs } from "../components/provision/inventory";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";
import { nodeSendEnv } from "../components/provision/node-send";

const ROOT = path.join(__dirname, "..");
const missing = ["ansible-playbook", "ansible-doc", "ssh-agent", "ssh-keygen"].filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
const skip = missing.length ? `missing ${missing.join(", ")}` : false;
let dir: string;
before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-extravars-")); });
after(() => fs.rmSync(dir, { recursive: true, force: true }));

/** What the component's apply does with the variables once they are known (extraVarsJson): the text, or the refusal. */
const settle = (v: Record<string, unknown>) => { try { return { ok: true as const, v: extraVarsText("extra", v) }; } catch (e) { return { ok: false as const, e: e as Error }; } };

test("every variable of Ansible's ssh, paramiko, local connections, sudo/su become and sh shell is refused as an extra variable", { skip, timeout: 60_000 }, () => {
    const names = new Set<string>();
    for (const [type, plugins] of [["connection", ["ssh", "paramiko_ssh", "local"]], ["become", ["sudo", "su"]], ["shell", ["sh"]]] as const) {
        const r = spawnSync("ansible-doc", ["-t", type, "--json", ...plugins], { encoding: "utf8", timeout: 30_000 });
        assert.equal(r.status, 0, r.stderr);
        for (const p of Object.values(JSON.parse(r.stdout) as Record<string, { doc: { options?: Record<string, { vars?: { name: string }[] }> } }>)) {
            for (const o of Object.values(p.doc.options ?? {})) for (const v of o.vars ?? []) if (/^[A-Za-z_]\w*$/.test(v.name)) names.add(v.name);
        }
    }
    assert.ok(names.has("ansible_ssh_executable") && names.has("ansible_become_exe") && names.has("ansible_host_key_checking"), [...names].join(" "));
    const accepted = [...names].filter((n) => extraVarProblem(n) === undefined);
    assert.deepEqual(accepted, [], "extra variables Ansible reads for the connection that the kit lets through");
    // the interpreters are per-language variables no plugin lists (ansible_<lang>_interpreter)
    assert.ok(extraVarProblem("ansible_python_interpreter"));
    assert.equal(extraVarProblem("nccl_validate_iters"), undefined);
    // the inventory's own variables refuse what undoes its pinning or runs another program, and keep the interpreter free
    for (const n of ["ansible_ssh_executable", "ansible_ssh_args", "ansible_host_key_checking", "ansible_ssh_extra_args"]) assert.ok(RESERVED_VARS.includes(n), n);
    const inv = checkInventoryArgs({ hosts: [{ name: "h", address: "10.0.0.1", user: "root", vars: { ansible_ssh_executable: "/tmp/x", ansible_python_interpreter: "/usr/bin/python3" } }], vars: { ansible_host_key_checking: false } });
    assert.deepEqual(inv.map((i) => i.path).sort(), ["hosts[0].vars.ansible_ssh_executable", "vars.ansible_host_key_checking"]);
});

test("plain extraVars with ansible_ssh_executable / ansible_ssh_common_args: refused before anything is created, the field named", () => {
    const issues = checkAnsiblePlaybookArgs({ inventory: "", sshPrivateKey: "k", extraVars: { ansible_ssh_executable: "/tmp/pwn", ansible_ssh_common_args: "-o StrictHostKeyChecking=no", rdma_ok: 1 } }, "extra");
    assert.deepEqual(issues.map((i) => i.path).sort(), ["extraVars.ansible_ssh_common_args", "extraVars.ansible_ssh_executable"]);
    for (const i of issues) assert.match(i.allowed ?? "", /not starting with ansible_/);
});

test("the attack through the kit's own run with the real ansible-playbook: the resolved variables are refused, and no program runs", { skip, timeout: 120_000 }, () => {
    const marker = path.join(dir, "ran");
    const fake = path.join(dir, "fake-ssh");
    fs.writeFileSync(fake, `#!/bin/sh\necho "$@" >> ${marker}\nexit 255\n`, { mode: 0o755 });
    const books = path.join(dir, "books");
    fs.mkdirSync(books);
    fs.writeFileSync(path.join(books, "ansible.cfg"), "[defaults]\ninterpreter_python = auto_silent\nnocows = True\n");
    fs.writeFileSync(path.join(books, "play.yml"), "- name: Reach the host\n  hosts: all\n  gather_facts: false\n  tasks:\n    - name: Ping\n      ansible.builtin.ping:\n");
    const known = path.join(dir, "known_hosts");
    fs.writeFileSync(known, "");
    // a host reached over ssh with pinned keys, as the kit's inventory reaches nodes (port 9 on loopback: nothing listens)
    const inventory = renderInventory({ hosts: [{ name: "n1", address: "127.0.0.1", port: 9, user: "root" }], vars: {}, knownHostsFile: known, pinnedHostKeys: true });
    const key = path.join(dir, "id");
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);

    const runWith = (extraVars: string) => {
        const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
        try {
            return spawnSync(RUN_INTERPRETER[0], [...RUN_INTERPRETER.slice(1), ANSIBLE_RUN_SCRIPT], {
                cwd: ROOT, encoding: "utf8", timeout: 100_000, input: JSON.stringify({ inventory, extraVars }),
                env: {
                    PATH: process.env.PATH, HOME: dir, ANSIBLE_CONFIG: path.join(books, "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
                    RDMAKIT_PLAYBOOK: path.join(books, "play.yml"), RDMAKIT_ANSIBLE_LOG: path.join(dir, "ansible.log"),
                    ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(dir, "none.cjs"), RDMAKIT_INVENTORY_FILE: path.join(dir, "inventory.yml"),
                    RDMAKIT_INVENTORY_HASH: sha256(inventory), RDMAKIT_VARS_HASH: sha256(extraVars), ...served.env,
                },
            });
        } finally { served.close(); }
    };

    // the same run with an innocent variable reaches ssh (nothing listens: unreachable) and runs no other program
    const clean = settle({ team_var: "x" });
    assert.ok(clean.ok);
    const r0 = runWith(clean.v);
    assert.notEqual(r0.status, 0);
    assert.match(fs.readFileSync(path.join(dir, "ansible.log"), "utf8"), /UNREACHABLE/);
    assert.equal(fs.existsSync(marker), false);

    // the red team's variables as an Output resolves to them (the name check at construction cannot see an Output)
    const got = settle({ ansible_ssh_executable: fake, ansible_ssh_common_args: "-o StrictHostKeyChecking=no", team_var: "x" });
    if (got.ok) runWith(got.v); // before the fix: the variables reach ansible-playbook, which runs the fake ssh
    assert.equal(fs.existsSync(marker), false, `a program named by an extra variable ran: ${fs.existsSync(marker) ? fs.readFileSync(marker, "utf8") : ""}`);
    assert.equal(got.ok, false);
    if (!got.ok) {
        assert.match(got.e.message, /extraVars\.ansible_ssh_executable: is one of Ansible's own variables/);
        assert.match(got.e.message, /extraVars\.ansible_ssh_common_args/);
        assert.match(got.e.message, /allowed: a name not starting with ansible_/);
    }
});

test("rdmakit plan --program: a team program whose extraVars Output resolves to ansible_ssh_executable exits 2 naming the field", { timeout: 120_000 }, () => {
    const prog = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-program-"));
    try {
        fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(prog, "node_modules"));
        fs.writeFileSync(path.join(prog, "Pulumi.yaml"), "name: gpu-team\nruntime: nodejs\n");
        fs.writeFileSync(path.join(prog, "index.ts"), [
            'import * as pulumi from "@pulumi/pulumi";',
            `import { AnsiblePlaybook } from ${JSON.stringify(path.join(ROOT, "components", "provision", "index"))};`,
            'const tools = pulumi.output({ ansible_ssh_executable: "/tmp/pwn.sh", team_var: "x" });',
            'new AnsiblePlaybook("extra", { inventory: "all:\\n  hosts:\\n    n1:\\n", extraVars: tools, sshPrivateKey: pulumi.secret("k") });',
            "",
        ].join("\n"));
        const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin", "rdmakit.ts"), "plan", "--program", prog], { cwd: ROOT, encoding: "utf8", timeout: 110_000 });
        assert.equal(r.status, 2, r.stdout + r.stderr);
        assert.match(r.stderr, /invalid AnsiblePlaybook extra: 1 problem\n {2}- extraVars\.ansible_ssh_executable: is one of Ansible's own variables/);
    } finally {
        fs.rmSync(prog, { recursive: true, force: true });
    }
});
