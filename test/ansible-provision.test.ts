// Pulumi side of the Ansible run: inventory rendering, the failure summariser (on real ansible-playbook logs kept in
// test/fixtures/ansible/, see its README.md) and the AnsiblePlaybook component under Pulumi mocks.
import { test } from "node:test";
import { parseInventory } from "../components/provision/inventory-read";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse } from "yaml";
import { keySocketPath } from "../components/provision/keysocket";
import { fanoutNodes } from "../components/provision/fanout";
import { nodeSendEnv } from "../components/provision/node-send";

interface Recorded { type: string; name: string; inputs: Record<string, unknown>; }
const recorded: Recorded[] = [];
/** stdout the mocked engine reports for a Command, by resource name */
const stdoutFor = new Map<string, string>();

const fixture = (name: string): string => fs.readFileSync(path.join(__dirname, "fixtures", "ansible", name), "utf8");
const unwrap = <T>(o: pulumi.Output<T>): Promise<T> => new Promise((r) => o.apply((v) => { r(v); return v; }));

test("AnsiblePlaybook, inventory and summariser", async (t) => {
    await pulumi.runtime.setMocks({
        newResource: (args) => {
            recorded.push({ type: args.type, name: args.name, inputs: args.inputs });
            const stdout = stdoutFor.get(args.name);
            return { id: `${args.name}-id`, state: stdout === undefined ? args.inputs : { ...args.inputs, stdout } };
        },
        call: () => ({}),
    }, "rdmakit", "teststack", false);
    const { renderInventory, sshCommonArgs } = await import("../components/provision/inventory");
    const summarise = await import("../components/provision/summarise");
    const ansible = await import("../components/provision/ansible");
    const resume = await import("../components/provision/resume");

    await t.test("renderInventory: hosts, typed vars, ProxyCommand through the bastion, host-key policy", () => {
        const text = renderInventory({
            hosts: [{ name: "node-1", address: "10.0.0.11", user: "ubuntu" }, { name: "node-0", address: "10.0.0.10", user: "ubuntu", port: 2200 }],
            bastion: { address: "203.0.113.7", user: "admin" },
            vars: { rdmakit_gpu_count: 8, rdmakit_require_hardware: true, roce_host_interfaces: ["eth1", "eth2"] },
            knownHostsFile: "out/dev/known_hosts",
            privateKeyFile: "/run/key",
        });
        const doc = parseInventory(text) as { all: { hosts: Record<string, Record<string, unknown>>; vars: Record<string, unknown> } };
        assert.deepEqual(doc.all.hosts["node-0"], { ansible_host: "10.0.0.10", ansible_port: 2200, ansible_user: "ubuntu" });
        assert.deepEqual(doc.all.hosts["node-1"], { ansible_host: "10.0.0.11", ansible_port: 22, ansible_user: "ubuntu" });
        // YAML keeps the types (INI [all:vars] would turn them into strings).
        assert.equal(doc.all.vars.rdmakit_gpu_count, 8);
        assert.equal(doc.all.vars.rdmakit_require_hardware, true);
        assert.deepEqual(doc.all.vars.roce_host_interfaces, ["eth1", "eth2"]);
        assert.equal(doc.all.vars.ansible_ssh_private_key_file, "/run/key");
        assert.equal(doc.all.vars.ansible_ssh_common_args,
            "-o ForwardAgent=no -o ClearAllForwardings=yes -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=out/dev/known_hosts " +
            '-o ProxyCommand="ssh -o ForwardAgent=no -o ClearAllForwardings=yes -o ControlMaster=auto -o ControlPersist=30m -o ControlPath=${ANSIBLE_SSH_CONTROL_PATH_DIR:-$HOME/.ansible/cp}/jump-%%C ' +
            '-W %h:%p -p 22 -o StrictHostKeyChecking=accept-new -o UserKnownHostsFile=out/dev/known_hosts -i /run/key admin@203.0.113.7"');
        assert.ok(!text.includes("StrictHostKeyChecking=no"));
        assert.equal(sshCommonArgs({}), "-o ForwardAgent=no -o ClearAllForwardings=yes -o StrictHostKeyChecking=accept-new");
    });

    await t.test("renderInventory: every bad field reported with its path", () => {
        assert.throws(() => renderInventory({
            hosts: [{ name: "a", address: "10.0.0.1", user: "u" }, { name: "a", address: "10.0.0.2; rm", user: "u", port: 70000 }],
            bastion: { address: "b", user: "x y" },
            vars: { "bad-name": 1, ansible_host: "x" },
        }), (e: Error) => {
            for (const needle of ["hosts[1].name: is used twice", "hosts[1].address", "hosts[1].port: must be a TCP port (got 70000)",
                "bastion.user", "vars.bad-name: is not a valid Ansible variable name", "vars.ansible_host: is set by the inventory itself"]) {
                assert.ok(e.message.includes(needle), `missing "${needle}" in:\n${e.message}`);
            }
            return true;
        });
        assert.throws(() => renderInventory({ hosts: [], vars: {} }), /hosts: needs at least one host/);
    });

    await t.test("summariser: a real run where the hardware check failed on both hosts", () => {
        const s = summarise.parseAnsibleLog(fixture("site-require-hardware-failed.log"));
        assert.deepEqual(s.failures.map((f) => [f.host, f.task, f.kind]), [
            ["h1", "node_prep : Require a VM or bare-metal node for the kernel steps", "failed"],
            ["h2", "node_prep : Require a VM or bare-metal node for the kernel steps", "failed"],
        ]);
        assert.match(s.failures[0].message, /^node_prep: h1 runs in a container/);
        assert.deepEqual(s.recap.map((r) => [r.host, r.failed, r.changed]), [["h1", 1, 0], ["h2", 1, 0]]);
        const text = summarise.formatAnsibleFailures(s, "out/dev/ansible-site.log");
        assert.equal(text.split("\n")[0], "ansible-playbook failed on 2 of 2 hosts (full log: out/dev/ansible-site.log):");
        // Same task, same reason: one line naming both hosts.
        assert.equal(text.split("\n").length, 2);
        assert.match(text.split("\n")[1], /^ {2}h1, h2: failed at task "node_prep : Require a VM or bare-metal node for the kernel steps": node_prep: <host> runs in a container/);
    });

    await t.test("summariser: an unreachable host among healthy ones", () => {
        const s = summarise.parseAnsibleLog(fixture("site-roce-unreachable.log"));
        assert.deepEqual(s.failures.map((f) => [f.host, f.task, f.kind]), [["h3", "Gathering Facts", "unreachable"]]);
        assert.deepEqual(s.recap.map((r) => [r.host, r.unreachable]), [["h1", 0], ["h2", 0], ["h3", 1]]);
        assert.match(summarise.formatAnsibleFailures(s, "x.log"), /failed on 1 of 3 hosts[^]*h3: unreachable at task "Gathering Facts": Data could not be sent/);
    });

    await t.test("summariser: a wrong-typed plan variable names the variable", () => {
        const s = summarise.parseAnsibleLog(fixture("site-bad-variable.log"));
        assert.equal(s.failures.length, 2);
        assert.equal(s.failures[0].task, "Validate the plan's cluster-wide variables");
        assert.match(s.failures[0].message, /^invalid variables: argument 'rdmakit_gpu_count' is of type <class 'str'>/);
    });

    await t.test("summariser: a failure Ansible prints as multi-line JSON (an assert without quiet)", () => {
        // produced here, by a real ansible-playbook run on localhost
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-summarise-"));
        fs.writeFileSync(path.join(dir, "p.yml"), [
            "- name: Fail an assert the verbose way",
            "  hosts: localhost",
            "  gather_facts: false",
            "  tasks:",
            "    - name: Check the rails",
            "      ansible.builtin.assert:",
            "        that: [false]",
            "        fail_msg: rails mlx5_0 and mlx5_1 are not ACTIVE",
        ].join("\n") + "\n");
        const run = spawnSync("ansible-playbook", ["-i", "localhost,", "-c", "local", path.join(dir, "p.yml")], {
            encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1" },
        });
        assert.notEqual(run.status, 0);
        assert.match(run.stdout, /FAILED! => \{\s*$/m, "Ansible printed the result over several lines");
        const s = summarise.parseAnsibleLog(run.stdout);
        assert.deepEqual(s.failures.map((f) => [f.host, f.task, f.message]), [["localhost", "Check the rails", "rails mlx5_0 and mlx5_1 are not ACTIVE"]]);
    });

    await t.test("summariser: playbook-level ERROR! and loop items", () => {
        const s = summarise.parseAnsibleLog([
            "ERROR! the role 'nope' was not found in /x/roles",
            "",
            "The error appears to be in '/x/site.yml': line 3, column 7",
            "TASK [nccl : Hold libnccl2 and libnccl-dev] *****",
            'failed: [n1] (item=libnccl2) => {"ansible_loop_var": "item", "changed": false, "item": "libnccl2", "msg": "dpkg failed", "rc": 1, "stderr": "a\\nb\\nc\\nd"}',
        ].join("\n"));
        assert.deepEqual(s.failures[0], { host: "(ansible-playbook)", task: "(loading the playbook)", kind: "error",
            message: "the role 'nope' was not found in /x/roles" });
        assert.deepEqual(s.failures[1], { host: "n1", task: "nccl : Hold libnccl2 and libnccl-dev", kind: "failed",
            item: "libnccl2", message: "dpkg failed; rc=1; stderr: b | c | d" });
    });

    await t.test("summariser script: the generated Node script prints the same summary", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-summ-"));
        const script = path.join(dir, "s.cjs");
        fs.writeFileSync(script, summarise.summariserScript());
        const log = path.join(__dirname, "fixtures", "ansible", "site-roce-unreachable.log");
        const r = spawnSync(process.execPath, [script, log], { encoding: "utf8" });
        assert.equal(r.status, 0);
        assert.equal(r.stdout, "");
        assert.equal(r.stderr.trimEnd(), summarise.formatAnsibleFailures(summarise.parseAnsibleLog(fs.readFileSync(log, "utf8")), log));
        fs.rmSync(dir, { recursive: true });
    });

    await t.test("AnsiblePlaybook: one Command with the exact inputs; key secret; hashes in the environment", async () => {
        recorded.length = 0;
        const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-out-"));
        const inventory = "all:\n  hosts:\n    n0: {ansible_host: 10.0.0.1}\n";
        const pb = new ansible.AnsiblePlaybook("prov", {
            inventory: pulumi.output(inventory),
            extraVars: { b: 2, a: pulumi.output("x") },
            sshPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----\nabc\n-----END OPENSSH PRIVATE KEY-----",
            outDir,
            forks: 24,
            maxFailPercentage: 5,
            mode: "controller",
        });
        const env = await unwrap(pb.run.environment as pulumi.Output<Record<string, string>>);
        assert.deepEqual(recorded.map((r) => [r.type, r.name]), [
            ["rdmakit:index:AnsiblePlaybook", "prov"],
            ["command:local:Command", "prov-run"],
        ]);
        const cmd = recorded[1].inputs;
        // the command text is one line (a failed command's error quotes it); the script travels in the environment
        assert.equal(cmd.create, 'eval "$RDMAKIT_RUN_SCRIPT"');
        assert.equal(cmd.update, 'eval "$RDMAKIT_RUN_SCRIPT"');
        // bash under the run's own ssh-agent (dash runs no EXIT trap on a signal)
        assert.deepEqual(cmd.interpreter, ["ssh-agent", "/bin/bash", "-c"]);
        // stdout (progress lines and the outcome) streams; stderr (the failure summary) goes only into the error
        assert.equal(cmd.logging, "stdout");
        assert.equal(cmd.addPreviousOutputInEnv, false);
        assert.equal(cmd.triggers, undefined, "triggers would force a replacement");
        const playbooksHash = ansible.hashFolder("playbooks");
        assert.deepEqual(env, {
            RDMAKIT_RUN_SCRIPT: ansible.ANSIBLE_RUN_SCRIPT,
            ANSIBLE_CONFIG: "playbooks/ansible.cfg",
            ANSIBLE_NOCOLOR: "1",
            ANSIBLE_FORKS: "24",
            RDMAKIT_MAX_FAIL_PERCENTAGE: "5",
            RDMAKIT_PROGRESS_LABEL: "site",
            RDMAKIT_PLAYBOOK: "playbooks/site.yml",
            RDMAKIT_ANSIBLE_LOG: path.join(outDir, "ansible-site.log"),
            ...nodeSendEnv(process.cwd()), RDMAKIT_ANSIBLE_SUMMARISER: path.join(outDir, "ansible-summarise.cjs"),
            RDMAKIT_INVENTORY_FILE: path.join(outDir, "inventory-prov.yml"),
            // the record the run leaves (resume.ts); no retry variables: there is no record yet
            RDMAKIT_RUN_RECORD: path.join(outDir, "outcome-prov.json"),
            // where the run fetches the key from: the program's socket, not an input
            RDMAKIT_KEY_SOCKET: keySocketPath("rdmakit", "teststack"),
            RDMAKIT_KEY_NAME: "prov-run",
            RDMAKIT_PLAYBOOKS_HASH: playbooksHash,
            RDMAKIT_INVENTORY_HASH: ansible.sha256(inventory),
            // the inventory kept beside the stack once (kept-input.ts), named by its digest
            RDMAKIT_INVENTORY_INPUT: path.join(outDir, "inputs", `inventory-${ansible.sha256(inventory)}.yml`),
            RDMAKIT_VARS_HASH: ansible.sha256('{"a":"x","b":2}'),
        });
        // the variables travel on stdin, the inventory (2.7 MB at 2,048 hosts) as the kept file's path and digest: known
        // at a preview, where the policy pack reads it; their digests in the environment
        assert.deepEqual(JSON.parse(cmd.stdin as string), {
            extraVars: '{"a":"x","b":2}', inventoryFile: env.RDMAKIT_INVENTORY_INPUT, inventorySha256: ansible.sha256(inventory),
        });
        assert.equal(fs.readFileSync(env.RDMAKIT_INVENTORY_INPUT, "utf8"), inventory);
        assert.deepEqual(ansible.readAnsibleRunInput(cmd.stdin as string), { inventory, extraVars: '{"a":"x","b":2}' });
        assert.equal(pb.playbooksHash, playbooksHash);
        assert.equal(pb.logPath, path.join(outDir, "ansible-site.log"));
        assert.equal(await unwrap(pb.inventoryFile), path.join(outDir, "inventory-prov.yml"));
        assert.equal(fs.readFileSync(path.join(outDir, "ansible-summarise.cjs"), "utf8"), summarise.summariserScript());
        // The key is in none of the command's inputs (test/run-key.test.ts runs the script for real).
        assert.ok(!JSON.stringify(recorded[1].inputs).includes("abc\\n-----END"), "the key is not an input of the command");
        assert.doesNotMatch(ansible.ANSIBLE_RUN_SCRIPT, /RDMAKIT_SSH_PRIVATE_KEY|--private-key|\$tmp\/id/);
        assert.match(ansible.ANSIBLE_RUN_SCRIPT, /umask 077/);
        fs.rmSync(outDir, { recursive: true });
    });

    await t.test("AnsiblePlaybook, node-local (the default): the fan-out script, the bundle's digest, the targets kept beside the stack", async () => {
        recorded.length = 0;
        const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-out-"));
        const inventory = renderInventory({
            hosts: [{ name: "n0", address: "10.0.0.10", user: "ubuntu" }, { name: "n1", address: "10.0.0.11", user: "ubuntu", vars: { roce_host_mtu: 4200 } }],
            bastion: { address: "203.0.113.7", user: "admin" }, vars: { rdmakit_gpu_count: 8, nccl_debug: "{{ lookup('pipe', 'id') }}" },
            knownHostsFile: "out/dev/known_hosts",
        });
        const pb = new ansible.AnsiblePlaybook("nl", { inventory, sshPrivateKey: "k", outDir, forks: 2 });
        const env = await unwrap(pb.run.environment as pulumi.Output<Record<string, string>>);
        const { bundleDigest } = await import("../components/provision/bundle");
        const digest = bundleDigest(ansible.hashFolder("playbooks"));
        assert.equal(env.RDMAKIT_RUN_SCRIPT, ansible.NODE_LOCAL_RUN_SCRIPT);
        assert.equal(env.RDMAKIT_BUNDLE_DIGEST, digest);
        assert.equal(env.RDMAKIT_BUNDLE_FILE, path.join(outDir, `bundle-${digest}.tar.gz`));
        assert.equal(env.RDMAKIT_FANOUT_PARALLEL, "2");
        assert.equal(env.RDMAKIT_NODE_LOG_DIR, path.join(outDir, "nodes"));
        // a deployment wrote the fan-out script and the bundle (a preview writes neither)
        assert.ok(fs.statSync(env.RDMAKIT_BUNDLE_FILE).size > 1_000_000);
        assert.match(fs.readFileSync(env.RDMAKIT_FANOUT, "utf8"), /^\/\/ Generated by rdmakit \(components\/provision\/fanout\.ts\)/);
        // the targets: each node as the inventory reaches it (its hop, its user) and its own one-host inventory
        const input = ansible.readAnsibleRunInput(recorded.find((r) => r.name === "nl-run")!.inputs.stdin as string);
        assert.equal(input.inventory, inventory);
        // the targets are not in the run's input (10 KB a node with the group's variables): the file kept beside the stack, by digest
        assert.deepEqual(Object.keys(JSON.parse(recorded.find((r) => r.name === "nl-run")!.inputs.stdin as string)).sort(), ["extraVars", "inventoryFile", "inventorySha256"]);
        const nodesText = fs.readFileSync(env.RDMAKIT_NODES_FILE, "utf8");
        assert.equal(createHash("sha256").update(nodesText).digest("hex"), env.RDMAKIT_NODES_HASH);
        assert.equal(env.RDMAKIT_NODES_FILE, path.join(outDir, "inputs", `nodes-${env.RDMAKIT_NODES_HASH}.json`));
        // the group's variables once in the file, joined into each node's own inventory by the fan-out
        const nodes = fanoutNodes(JSON.parse(nodesText));
        assert.deepEqual(nodes.map((n) => [n.name, n.address, n.port, n.user]), [["n0", "10.0.0.10", 22, "ubuntu"], ["n1", "10.0.0.11", 22, "ubuntu"]]);
        assert.equal(nodes[0].sshArgs, sshCommonArgs({ bastion: { address: "203.0.113.7", user: "admin" }, knownHostsFile: "out/dev/known_hosts" }));
        const own = parse(nodes[1].inventory, { customTags: [{ tag: "!unsafe", resolve: (v: string) => `unsafe:${v}` }] }) as { all: { hosts: Record<string, Record<string, unknown>>; vars: Record<string, unknown> } };
        assert.deepEqual(Object.keys(own.all.hosts), ["n1"]);
        assert.equal(own.all.hosts.n1.roce_host_mtu, 4200);
        assert.equal(own.all.vars.rdmakit_gpu_count, 8);
        // a Jinja-looking value stays one Ansible never templates; the controller's connection variables stay here
        assert.equal(own.all.vars.nccl_debug, "unsafe:{{ lookup('pipe', 'id') }}");
        assert.equal(own.all.vars.ansible_ssh_common_args, undefined);
        fs.rmSync(outDir, { recursive: true });
    });

    await t.test("AnsiblePlaybook: bad arguments rejected before anything is created", () => {
        recorded.length = 0;
        assert.throws(() => new ansible.AnsiblePlaybook("bad", { inventory: "x", sshPrivateKey: "k", playbook: "nope.yml" }),
            (e: Error) => /playbook: does not exist in playbooks \(got "nope.yml"\); allowed: .*site\.yml/.test(e.message));
        assert.throws(() => new ansible.AnsiblePlaybook("bad2", { inventory: "x", sshPrivateKey: "k", playbooksDir: "no/such/dir" }),
            /playbooksDir: is not a folder/);
        assert.deepEqual(recorded.filter((r) => r.type === "command:local:Command"), []);
    });

    await t.test("decideRun: any failed host fails the step by default; within maxFailPercentage it passes and lists them", () => {
        const s = summarise.parseAnsibleLog(fixture("site-roce-unreachable.log"));
        const strict = summarise.decideRun(s, 4, 0, "x.log");
        assert.equal(strict.ok, false);
        assert.deepEqual(strict.failed, [{ host: "h3", task: "Gathering Facts", kind: "unreachable" }]);
        assert.match(strict.summary ?? "", /^ansible-playbook failed on 1 of 3 hosts/);
        // 1 of 3 hosts is 33.3 %
        assert.equal(summarise.decideRun(s, 4, 33, "x.log").ok, false);
        assert.equal(summarise.decideRun(s, 4, 34, "x.log").ok, true);
        // every host failing, a playbook error or another exit status is never tolerated
        const all = summarise.parseAnsibleLog(fixture("site-require-hardware-failed.log"));
        assert.equal(summarise.decideRun(all, 2, 99, "x.log").ok, false);
        const loadError = summarise.parseAnsibleLog("ERROR! the role 'nope' was not found\n");
        assert.equal(summarise.decideRun(loadError, 1, 99, "x.log").ok, false);
        assert.equal(summarise.decideRun(s, 1, 99, "x.log").ok, false);
        assert.deepEqual(summarise.decideRun({ failures: [], recap: [] }, 0, 0, "x.log"), { ok: true, hosts: 0, failed: [] });
        // a failure a rescue block absorbed (recap failed=0) is not a failed host
        const rescued = summarise.parseAnsibleLog([
            "TASK [try] ***", 'fatal: [n1]: FAILED! => {"msg": "first try"}', "", "PLAY RECAP ***",
            "n1                         : ok=3    changed=0    unreachable=0    failed=0    skipped=0    rescued=1    ignored=0",
        ].join("\n"));
        assert.deepEqual(summarise.decideRun(rescued, 0, 0, "x.log"), { ok: true, hosts: 1, failed: [] });
    });

    await t.test("summariser script, verdict mode: exit status, summary on stderr or stdout, outcome line", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-summ-"));
        const script = path.join(dir, "s.cjs");
        fs.writeFileSync(script, summarise.summariserScript());
        const log = path.join(__dirname, "fixtures", "ansible", "site-roce-unreachable.log");
        const failed = spawnSync(process.execPath, [script, log, "4", "0"], { encoding: "utf8" });
        assert.equal(failed.status, 4);
        assert.match(failed.stderr, /^ansible-playbook failed on 1 of 3 hosts[^]*h3: unreachable at task "Gathering Facts"/);
        assert.deepEqual(summarise.parseRunOutcome(failed.stdout), { ok: false, hosts: 3, failed: [{ host: "h3", task: "Gathering Facts", kind: "unreachable" }] });
        const tolerated = spawnSync(process.execPath, [script, log, "4", "50"], { encoding: "utf8" });
        assert.equal(tolerated.status, 0);
        assert.equal(tolerated.stderr, "");
        assert.match(tolerated.stdout, /^rdmakit-provision: \{"ok":true,[^\n]*\nansible-playbook failed on 1 of 3 hosts/);
        assert.equal(summarise.parseRunOutcome(tolerated.stdout)?.ok, true);
        fs.rmSync(dir, { recursive: true });
    });

    await t.test("progress plugin: one line per play and task with counts, nothing else, only with RDMAKIT_PROGRESS_FD", () => {
        // a real ansible-playbook run on three local hosts, one failing a task; a no_log variable must not show
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-progress-"));
        fs.writeFileSync(path.join(dir, "p.yml"), [
            "- name: Prepare", "  hosts: all", "  gather_facts: false", "  vars:", "    token: tok-77e1-never-shown", "  tasks:",
            "    - name: Use the token", "      ansible.builtin.debug:", "        msg: \"{{ token }}\"",
            "    - name: Break on b", "      ansible.builtin.fail:", "        msg: \"disk full {{ token }}\"", "      when: inventory_hostname == 'b'",
            "- name: Install", "  hosts: all", "  gather_facts: false", "  strategy: free", "  tasks:",
            "    - name: Build", "      ansible.builtin.command: \"true\"", "      changed_when: false",
        ].join("\n") + "\n");
        const base = { ...process.env, ANSIBLE_CONFIG: path.join(__dirname, "..", "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" };
        const args = ["/bin/sh", "-c", "ansible-playbook -i a,b,c, -c local p.yml 3>&1 >ansible.log 2>&1"];
        const r = spawnSync(args[0], args.slice(1), { cwd: dir, encoding: "utf8", env: { ...base, RDMAKIT_PROGRESS_FD: "3", RDMAKIT_PROGRESS_LABEL: "site" } });
        assert.equal(r.status, 2, fs.readFileSync(path.join(dir, "ansible.log"), "utf8"));
        assert.deepEqual(r.stdout.trimEnd().split("\n"), [
            "[site] PLAY Prepare \u2014 3 hosts",
            "[site] TASK Use the token \u2014 3/3 ok",
            "[site] TASK Break on b \u2014 2/3 ok, 1 failed",
            "[site] PLAY Install \u2014 3 hosts",
            "[site] TASK Build \u2014 2/3 ok, 1 failed",
            "[site] RECAP \u2014 2/3 hosts ok, 1 failed or unreachable",
        ]);
        assert.ok(!r.stdout.includes("tok-77e1") && !r.stdout.includes("disk full"));
        // the full output is in the log as before
        assert.match(fs.readFileSync(path.join(dir, "ansible.log"), "utf8"), /fatal: \[b\]: FAILED! => \{"changed": false, "msg": "disk full tok-77e1-never-shown"\}/);
        const quiet = spawnSync(args[0], args.slice(1), { cwd: dir, encoding: "utf8", env: base });
        assert.equal(quiet.stdout, "");
        fs.rmSync(dir, { recursive: true });
    });

    await t.test("AnsiblePlaybook: failedNodes from the run's outcome line, node and task only, not secret", async () => {
        const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-out-"));
        const outcome = `${summarise.PROVISION_RESULT_PREFIX}${JSON.stringify({ ok: true, hosts: 3, failed: [{ host: "n2", task: "nccl : Install libnccl2", kind: "failed" }] })}`;
        stdoutFor.set("tol-run", `[site] RECAP \u2014 2/3 hosts ok\n${outcome}`);
        const pb = new ansible.AnsiblePlaybook("tol", { inventory: "x", sshPrivateKey: "k", outDir, maxFailPercentage: 40, mode: "controller" });
        assert.deepEqual(await unwrap(pb.failedNodes), [{ node: "n2", task: "nccl : Install libnccl2" }]);
        assert.equal(await pulumi.isSecret(pb.failedNodes), false);
        fs.rmSync(outDir, { recursive: true });
    });

    await t.test("resume: the summariser's record of a tolerated run, then a retry limited to the failed node", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-resume-"));
        const script = path.join(dir, "s.cjs");
        fs.writeFileSync(script, summarise.summariserScript());
        const record = path.join(dir, "outcome-sw.json");
        const digests = { RDMAKIT_INVENTORY_HASH: "a".repeat(64), RDMAKIT_VARS_HASH: "b".repeat(64), RDMAKIT_PLAYBOOKS_HASH: "c".repeat(64) };
        const now = { inventory: "a".repeat(64), vars: "b".repeat(64), playbooks: "c".repeat(64) };
        const env = { ...process.env, ...digests, RDMAKIT_RUN_RECORD: record };
        // h3 of 3 unreachable, tolerated at 50 %: the record names it, and the next run retries it (attempt 1, h3 only)
        const tolerated = spawnSync(process.execPath, [script, path.join(__dirname, "fixtures", "ansible", "site-roce-unreachable.log"), "4", "50"], { encoding: "utf8", env });
        assert.equal(tolerated.status, 0, tolerated.stderr);
        assert.ok(tolerated.stdout.includes(summarise.RETRY_NOTE), tolerated.stdout);
        const first = resume.readRunRecord(record);
        assert.deepEqual(first, { ...now, attempt: 0, hosts: 3, limit: [], failed: ["h3"] });
        const retry = resume.planRetry(first, now);
        assert.deepEqual(retry, { attempt: 1, hosts: 3, nodes: ["h3"] });
        assert.deepEqual(resume.retryEnvironment(retry), { RDMAKIT_RETRY_ATTEMPT: "1", RDMAKIT_RETRY_HOSTS: "3", RDMAKIT_RETRY_NODES: "h3" });
        // the retry visits h3 alone and h3 fails again: 1 of the step's 3 hosts, not 1 of 1, so 50 % still tolerates it;
        // the outcome line counts the step's hosts and says which attempt this was
        const limitedLog = path.join(dir, "retry.log");
        fs.writeFileSync(limitedLog, [
            "PLAY [Wait until every node answers over SSH] ***", "", "TASK [Wait for the connection] ***",
            'fatal: [h3]: UNREACHABLE! => {"changed": false, "msg": "ssh: connect to host 10.0.0.3 port 22: No route to host", "unreachable": true}', "",
            "PLAY RECAP ***", "h3                         : ok=0    changed=0    unreachable=1    failed=0    skipped=0    rescued=0    ignored=0", "",
        ].join("\n"));
        const again = spawnSync(process.execPath, [script, limitedLog, "4", "50"], { encoding: "utf8", env: { ...env, ...resume.retryEnvironment(retry) } });
        assert.equal(again.status, 0, again.stderr);
        assert.deepEqual(summarise.parseRunOutcome(again.stdout), { ok: true, hosts: 3, failed: [{ host: "h3", task: "Wait for the connection", kind: "unreachable" }], attempt: 1 });
        const second = resume.readRunRecord(record);
        assert.deepEqual(second, { ...now, attempt: 1, hosts: 3, limit: ["h3"], failed: ["h3"] });
        // still failing: the next `pulumi up` makes attempt 2, so the inputs change again
        assert.deepEqual(resume.planRetry(second, now), { attempt: 2, hosts: 3, nodes: ["h3"] });
        // without the tolerance (the default 0 %) the retry fails the step, and the record still leads to the next attempt
        const strict = spawnSync(process.execPath, [script, limitedLog, "4", "0"], { encoding: "utf8", env: { ...env, ...resume.retryEnvironment(retry) } });
        assert.equal(strict.status, 4);
        assert.match(strict.stderr, /^ansible-playbook failed on 1 of 3 hosts \(a retry of the 1 that failed before\)[^]*rdmakit: the next `pulumi up` retries the failed nodes/);
        // h3 healed: the record keeps the attempt, and planRetry gives that same attempt again (the state's inputs)
        const healedLog = path.join(dir, "healed.log");
        fs.writeFileSync(healedLog, "PLAY RECAP ***\nh3                         : ok=9    changed=4    unreachable=0    failed=0    skipped=0    rescued=0    ignored=0\n");
        const healed = spawnSync(process.execPath, [script, healedLog, "0", "50"], { encoding: "utf8", env: { ...env, ...resume.retryEnvironment(retry) } });
        assert.equal(healed.status, 0, healed.stderr);
        const third = resume.readRunRecord(record);
        assert.deepEqual(third, { ...now, attempt: 1, hosts: 3, limit: ["h3"], failed: [] });
        assert.deepEqual(resume.planRetry(third, now), retry);
        // a clean full run, another inventory, or no record: no retry at all
        assert.equal(resume.planRetry({ ...third, attempt: 0, limit: [] }, now), undefined);
        assert.equal(resume.planRetry(first, { ...now, inventory: "d".repeat(64) }), undefined);
        assert.equal(resume.planRetry(resume.readRunRecord(path.join(dir, "missing.json")), now), undefined);
        // a playbook that did not load, or an interrupted run, settles nothing: no record, so the next run is full
        fs.writeFileSync(path.join(dir, "error.log"), "ERROR! the role 'nope' was not found\n");
        fs.rmSync(record);
        assert.equal(spawnSync(process.execPath, [script, path.join(dir, "error.log"), "1", "50"], { env }).status, 1);
        assert.equal(spawnSync(process.execPath, [script, healedLog, "130", "50"], { env }).status, 130);
        assert.equal(fs.existsSync(record), false);
        // a record that is not one (a node name with a space, a digest that is not one) is ignored
        assert.equal(resume.parseRunRecord(JSON.stringify({ ...first, failed: ["h 3"] })), undefined);
        assert.equal(resume.parseRunRecord(JSON.stringify({ ...first, vars: "x" })), undefined);
        fs.rmSync(dir, { recursive: true });
    });

    await t.test("AnsiblePlaybook: a record of failed nodes makes the next run a retry; a healed or stale one changes no input", async () => {
        const outDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-out-"));
        const inventory = "all:\n  hosts:\n    n0: {}\n    n1: {}\n";
        const now = { inventory: ansible.sha256(inventory), vars: ansible.sha256("{}"), playbooks: ansible.hashFolder("playbooks") };
        const envOf = async (name: string): Promise<Record<string, string>> => {
            recorded.length = 0;
            const pb = new ansible.AnsiblePlaybook(name, { inventory, sshPrivateKey: "k", outDir, maxFailPercentage: 50, mode: "controller" });
            return unwrap(pb.run.environment as pulumi.Output<Record<string, string>>);
        };
        const write = (name: string, r: object) => fs.writeFileSync(path.join(outDir, `outcome-${name}.json`), JSON.stringify(r));
        const clean = await envOf("fresh");
        assert.equal(clean.RDMAKIT_RETRY_NODES, undefined);
        write("failing", { ...now, attempt: 0, hosts: 2, limit: [], failed: ["n1"] });
        const failing = await envOf("failing");
        assert.deepEqual([failing.RDMAKIT_RETRY_ATTEMPT, failing.RDMAKIT_RETRY_HOSTS, failing.RDMAKIT_RETRY_NODES], ["1", "2", "n1"]);
        // the rest of the environment is what a run without a record gets
        const strip = (e: Record<string, string>) => Object.fromEntries(Object.entries(e).filter(([k]) => !/^RDMAKIT_(RETRY_|KEY_NAME|RUN_RECORD|INVENTORY_FILE)/.test(k)));
        assert.deepEqual(strip(failing), strip(clean));
        write("healed", { ...now, attempt: 1, hosts: 2, limit: ["n1"], failed: [] });
        assert.equal((await envOf("healed")).RDMAKIT_RETRY_ATTEMPT, "1");
        write("stale", { ...now, inventory: "0".repeat(64), attempt: 0, hosts: 2, limit: [], failed: ["n1"] });
        assert.equal((await envOf("stale")).RDMAKIT_RETRY_NODES, undefined);
        fs.rmSync(outDir, { recursive: true });
    });

    await t.test("hashFolder and stableJson: content-sensitive, order-insensitive", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-hash-"));
        fs.mkdirSync(path.join(dir, "roles", "r"), { recursive: true });
        fs.writeFileSync(path.join(dir, "site.yml"), "a");
        fs.writeFileSync(path.join(dir, "roles", "r", "main.yml"), "b");
        const h1 = ansible.hashFolder(dir);
        assert.equal(ansible.hashFolder(dir), h1);
        fs.writeFileSync(path.join(dir, "roles", "r", "main.yml"), "c");
        assert.notEqual(ansible.hashFolder(dir), h1);
        // the bytecode Python leaves beside a callback plugin does not count
        const h2 = ansible.hashFolder(dir);
        fs.mkdirSync(path.join(dir, "callback_plugins", "__pycache__"), { recursive: true });
        fs.writeFileSync(path.join(dir, "callback_plugins", "__pycache__", "p.cpython-311.pyc"), "x");
        assert.equal(ansible.hashFolder(dir), h2);
        assert.equal(ansible.stableJson({ b: [1, { d: 1, c: 2 }], a: null }), '{"a":null,"b":[1,{"c":2,"d":1}]}');
        fs.rmSync(dir, { recursive: true });
    });
});
