// A Jinja payload handed to Ansible stays a literal string: through AnsiblePlaybook's extra variables (-e @file JSON),
// through inventory variables (renderInventory) and through the NCCL environment in validation's command lines.
// A real ansible-playbook run on this machine (connection local), started by ANSIBLE_RUN_SCRIPT as the component does.
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { ANSIBLE_RUN_SCRIPT, RUN_INTERPRETER, sha256, stableJson } from "../components/provision/ansible";
import { serveKeyLocally } from "../components/provision/keysocket";
import { markUnsafe, renderInventory } from "../components/provision/inventory";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { validationVars } from "../components/validate/component";
import { nodeSendEnv } from "../components/provision/node-send";

const ROOT = path.join(__dirname, "..");
const missing = ["ansible-playbook", "ssh-agent", "ssh-keygen"].filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
let dir: string;

before(() => { dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-unsafe-")); });
after(() => fs.rmSync(dir, { recursive: true, force: true }));

test("markUnsafe tags exactly the strings Jinja could read as templates", () => {
    const text = renderInventory({
        hosts: [{ name: "h1", address: "10.0.0.1", user: "root", vars: { a: "{{ x }}", b: "plain", c: ["{% if %}", 3] } }],
        vars: { d: { e: "{# c #}" }, f: 7 },
    });
    assert.match(text, /a: !unsafe "\{\{ x \}\}"/);
    assert.match(text, /b: plain/);
    assert.match(text, /- !unsafe "\{% if %\}"/);
    assert.match(text, /e: !unsafe "\{# c #\}"/);
    // without a `{` the inventory is as before: no tag a YAML reader would have to know
    assert.doesNotMatch(renderInventory({ hosts: [{ name: "h1", address: "10.0.0.1", user: "root" }], vars: { x: "a b" } }), /!unsafe/);
    assert.deepEqual(markUnsafe({ n: 1, b: true, s: "s" }), { n: 1, b: true, s: "s" });
});

test("a {{ lookup('pipe', ...) }} payload in extra vars, inventory vars and the NCCL environment stays text in a real run",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false, timeout: 120_000 }, () => {
        const marker = path.join(dir, "pwned");
        const payload = (tag: string) => `{{ lookup('pipe', 'touch ${marker}-${tag} && echo ran') }}`;
        // the NCCL environment of a real plan, with the payload as one more variable: it reaches Ansible inside the
        // nccl-tests command line validationVars builds
        const spec = parseClusterSpec(parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"]);
        const plan = planCluster(spec);
        const vArgs = validationArgsFromPlan(plan, "unsafe");
        const vvars = validationVars({ ...vArgs, ncclEnv: { ...vArgs.ncclEnv, NCCL_RDMAKIT_TEST: payload("nccl") } },
            plan.validation.hostNames.map((_, i) => `10.0.0.${i + 1}`), path.join(dir, "nccl"));

        const books = path.join(dir, "books");
        fs.mkdirSync(books);
        fs.writeFileSync(path.join(books, "ansible.cfg"), "[defaults]\ninterpreter_python = auto_silent\nnocows = True\n");
        const out = path.join(dir, "rendered.txt");
        fs.writeFileSync(path.join(books, "play.yml"), [
            "- name: Render what the variables hold",
            "  hosts: all",
            "  gather_facts: false",
            "  tasks:",
            "    - name: Write them, also through a filter",
            "      ansible.builtin.copy:",
            "        dest: \"{{ out_file }}\"",
            "        content: \"{{ payload }}|{{ inv_payload }}|{{ nested.values_list[0] }}|{{ payload | lower }}|{{ nccl_validate_single_cmd }}\\n\"",
            "        mode: \"0600\"",
            "",
        ].join("\n"));
        const inventory = renderInventory({
            hosts: [{ name: "localhost", address: "127.0.0.1", user: "root",
                vars: { ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3", inv_payload: payload("inventory") } }],
            vars: { nested: { values_list: [payload("group")] } },
        });
        const extraVars = stableJson({ out_file: out, payload: payload("extravars"), nccl_validate_single_cmd: vvars.nccl_validate_single_cmd });
        const key = path.join(dir, "id");
        assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);
        const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
        const log = path.join(dir, "ansible.log");
        const r = spawnSync(RUN_INTERPRETER[0], [...RUN_INTERPRETER.slice(1), ANSIBLE_RUN_SCRIPT], {
            cwd: ROOT, encoding: "utf8", timeout: 110_000, input: JSON.stringify({ inventory, extraVars }),
            env: {
                PATH: process.env.PATH, HOME: process.env.HOME ?? dir, ANSIBLE_CONFIG: path.join(books, "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
                RDMAKIT_PLAYBOOK: path.join(books, "play.yml"), RDMAKIT_ANSIBLE_LOG: log,
                ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(dir, "none.cjs"), RDMAKIT_INVENTORY_FILE: path.join(dir, "inventory.yml"),
                RDMAKIT_INVENTORY_HASH: sha256(inventory), RDMAKIT_VARS_HASH: sha256(extraVars), ...served.env,
            },
        });
        served.close();
        const logText = fs.existsSync(log) ? fs.readFileSync(log, "utf8") : "";
        assert.equal(r.status, 0, `${r.stderr}\n${logText.slice(-3000)}`);
        const pwned = fs.readdirSync(dir).filter((f) => f.startsWith("pwned"));
        assert.deepEqual(pwned, [], "a payload ran");
        const [fromVars, fromInventory, fromGroup, filtered, cmd] = fs.readFileSync(out, "utf8").trimEnd().split("|");
        assert.equal(fromVars, payload("extravars"));
        assert.equal(fromInventory, payload("inventory"));
        assert.equal(fromGroup, payload("group"));
        assert.equal(filtered, payload("extravars").toLowerCase());
        // the command line arrives as validationVars built it, the payload shell-quoted inside it and not run
        assert.equal(cmd, vvars.nccl_validate_single_cmd);
        assert.ok(cmd.includes("lookup("), cmd);
    });
