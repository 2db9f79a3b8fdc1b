// Node-local mode's pure parts and the fan-out against a node it cannot reach (no test host needed): the ssh
// argument splitting Ansible does, the progress grammar of playbooks/callback_plugins/rdmakit_progress.py counted over
// nodes, the log sections the summariser and the run record read, the bundle's contents and digest, the pins.
// The runs on real hosts are in test/hosts/site-plain.ts and test/hosts/site-images.ts (run by test/ansible-hosts.test.ts).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { collectedFile, createProgress, fanoutExitStatus, fanoutNodes, fanoutScript, kexPreference, nodeLogSection, parseNodeProgress, remoteCommand, splitShellWords } from "../components/provision/fanout";
import { decideRun, parseAnsibleLog } from "../components/provision/summarise";
import { bundleDigest, keepWheelEntry, prepareScript, readZip } from "../components/provision/bundle";
import { NODE_PYTHON_ARTIFACTS, distinctProjectBatches, missingArtifacts, requirementsText } from "../components/provision/node-python";
import { keptNodeTargets, nodeTargets } from "../components/provision/node-local";
import { renderInventory, sshCommonArgs } from "../components/provision/inventory";
import { NODE_RUN_SCRIPT, NODE_UPLOAD_SCRIPT } from "../components/provision/node-scripts";

test("splitShellWords splits ansible_ssh_common_args as Ansible's shlex.split does", () => {
    const args = sshCommonArgs({ bastion: { address: "203.0.113.7", user: "admin", port: 2222 }, knownHostsFile: "out/dev/known_hosts", pinnedHostKeys: true, hostKeyAlgorithms: ["ssh-ed25519"] });
    const words = splitShellWords(args);
    assert.deepEqual(words.slice(0, 10), ["-o", "ForwardAgent=no", "-o", "ClearAllForwardings=yes", "-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=out/dev/known_hosts", "-o", "HostKeyAlgorithms=ssh-ed25519"]);
    // the ProxyCommand is one word, its inner `%%C` left for ssh's own expansion
    assert.equal(words[11], "ProxyCommand=ssh -o ForwardAgent=no -o ClearAllForwardings=yes -o ControlMaster=auto -o ControlPersist=30m -o ControlPath=${ANSIBLE_SSH_CONTROL_PATH_DIR:-$HOME/.ansible/cp}/jump-%%C " +
        "-W %h:%p -p 2222 -o StrictHostKeyChecking=yes -o UserKnownHostsFile=out/dev/known_hosts -o HostKeyAlgorithms=ssh-ed25519 admin@203.0.113.7");
    assert.equal(words.length, 12);
    assert.deepEqual(splitShellWords(`a 'b c' "d \\"e\\"" f\\ g`), ["a", "b c", 'd "e"', "f g"]);
    assert.throws(() => splitShellWords("-o 'x"), /unterminated '/);
});

test("parseNodeProgress reads the progress plugin's lines; a heartbeat is no result", () => {
    assert.deepEqual(parseNodeProgress("[site] PLAY Install the RDMA GPU node stack \u2014 1 host"), { kind: "PLAY", name: "Install the RDMA GPU node stack", ok: true });
    assert.deepEqual(parseNodeProgress("[site] TASK nccl : Install libnccl2 \u2014 1/1 ok"), { kind: "TASK", name: "nccl : Install libnccl2", ok: true });
    assert.deepEqual(parseNodeProgress("[site] TASK Create /etc/rdmakit \u2014 0/1 ok, 1 failed"), { kind: "TASK", name: "Create /etc/rdmakit", ok: false });
    assert.deepEqual(parseNodeProgress("[site] HANDLER Apply the RoCE QoS \u2014 1/1 ok"), { kind: "HANDLER", name: "Apply the RoCE QoS", ok: true });
    assert.equal(parseNodeProgress("[site] TASK nvidia_driver : Build \u2014 0/1 ok (running 30s)"), undefined);
    assert.deepEqual(parseNodeProgress("[site] RECAP \u2014 1/1 hosts ok"), { kind: "RECAP", name: "", ok: true });
    assert.equal(parseNodeProgress("@@rdmakit rc 0"), undefined);
    assert.equal(parseNodeProgress("PLAY RECAP ****"), undefined);
});

test("createProgress: a task's line once every node reported it or is out; counts over nodes; the slowest nodes", () => {
    const lines: string[] = [];
    const p = createProgress("site", ["a", "b", "c"], (l) => lines.push(l));
    for (const n of ["a", "b", "c"]) p.phase(n, "running", 0);
    for (const n of ["a", "b", "c"]) p.line(n, { kind: "PLAY", name: "Install", ok: true });
    p.line("a", { kind: "TASK", name: "t1", ok: true });
    p.line("b", { kind: "TASK", name: "t1", ok: false });
    assert.deepEqual(lines, ["[site] PLAY Install \u2014 3 hosts"]);
    assert.match(p.status(), /^nodes: 0 done, 3 running, 0 failed, 0 waiting \(of 3\); at TASK t1 \(2\)$/);
    assert.deepEqual(lines.slice(1), []);
    // b failed t1 (its own line said so): counted as failed before its run has ended
    p.line("c", { kind: "TASK", name: "t1", ok: true });
    assert.deepEqual(lines.slice(1), ["[site] TASK t1 \u2014 2/3 ok, 1 failed"]);
    p.phase("b", "failed", 5000);
    // a task only some nodes run comes out when the others are out
    p.line("a", { kind: "TASK", name: "only on a", ok: true });
    assert.equal(lines.length, 2);
    p.phase("c", "done", 20000);
    assert.equal(lines[2], "[site] TASK only on a \u2014 1/3 ok, 1 failed");
    p.phase("a", "done", 30000);
    assert.equal(lines.length, 3);
    assert.deepEqual(p.summary(), ["[site] RECAP \u2014 2/3 hosts ok, 1 failed or unreachable", "[site] slowest nodes: a 30 s, c 20 s, b 5 s (median 20 s of 3)"]);
});

test("the log sections read back as ansible-playbook's: recap, failure at its task, an unreachable node", () => {
    const ok = nodeLogSection({ name: "n1", kind: "ok", rc: 0, seconds: 41.2,
        recap: "PLAY RECAP *********\nn1                         : ok=15   changed=0    unreachable=0    failed=0    skipped=6    rescued=0    ignored=0   \n" }, parseAnsibleLog);
    const failed = nodeLogSection({ name: "n2", kind: "failed", rc: 2, seconds: 12, recap: "", log: [
        "TASK [Create /etc/rdmakit] ****", 'fatal: [n2]: FAILED! => {"changed": false, "msg": "not a folder"}', "",
        "PLAY RECAP ****", "n2                         : ok=3    changed=0    unreachable=0    failed=1    skipped=0    rescued=0    ignored=0", ""].join("\n") }, parseAnsibleLog);
    const gone = nodeLogSection({ name: "n3", kind: "unreachable", seconds: 90, recap: "", message: "could not connect after 4 tries: ssh: connect to host 10.0.0.3 port 22: No route to host" }, parseAnsibleLog);
    const slow = nodeLogSection({ name: "n4", kind: "failed", seconds: 10800, recap: "", task: "nvidia_driver : Build the DKMS module", message: "the node's run did not finish within 10800 s" }, parseAnsibleLog);
    const summary = parseAnsibleLog([ok, failed, gone, slow].join("\n"));
    assert.deepEqual(summary.recap.map((r) => [r.host, r.failed, r.unreachable]), [["n1", 0, 0], ["n2", 1, 0], ["n3", 0, 1], ["n4", 1, 0]]);
    const outcome = decideRun(summary, fanoutExitStatus([{ name: "n2", kind: "failed", recap: "", seconds: 0 }]), 75, "x.log");
    assert.deepEqual(outcome.failed, [
        { host: "n2", task: "Create /etc/rdmakit", kind: "failed" },
        { host: "n3", task: "Connect to the node (rdmakit node-local)", kind: "unreachable" },
        { host: "n4", task: "nvidia_driver : Build the DKMS module", kind: "failed" },
    ]);
    assert.equal(outcome.ok, true, "3 of 4 within 75 %");
    assert.match(outcome.summary ?? "", /n3: unreachable at task "Connect to the node \(rdmakit node-local\)": could not connect after 4 tries/);
    assert.equal(fanoutExitStatus([]), 0);
    assert.equal(fanoutExitStatus([{ name: "a", kind: "unreachable", recap: "", seconds: 0 }]), 4);
});

test("remoteCommand: the node script in single quotes, plain words only, sudo for a non-root login", () => {
    assert.match(remoteCommand(NODE_RUN_SCRIPT, ["a".repeat(64), "site.yml", "n1", "site", "-", "-", "-", "812", "3359936"], "ubuntu"),
        /^sudo -n sh -c 'set -u\n[^']*' rdmakit a{64} site\.yml n1 site - - - 812 3359936$/);
    assert.match(remoteCommand(NODE_UPLOAD_SCRIPT, ["b".repeat(64)], "root"), /^sh -c 'set -eu\n/);
    assert.throws(() => remoteCommand(NODE_RUN_SCRIPT, ["n1; reboot"], "root"), /not a plain word/);
    assert.throws(() => remoteCommand("echo 'x'", [], "root"), /no single quote/);
});

test("nodeTargets: each host's connection from the inventory, and an inventory of its own with the group's variables", () => {
    const inv = renderInventory({ hosts: [{ name: "h1", address: "10.0.0.1", user: "root", port: 2201, vars: { roce_host_mtu: 4200 } }], vars: { a: "{{ x }}" }, privateKeyFile: "/k" });
    const [t] = nodeTargets(inv);
    assert.deepEqual([t.name, t.address, t.port, t.user, t.keyFile], ["h1", "10.0.0.1", 2201, "root", "/k"]);
    assert.match(t.inventory, /^ {6}roce_host_mtu: 4200$/m);
    assert.match(t.inventory, /a: !unsafe "\{\{ x \}\}"|a: !unsafe '\{\{ x \}\}'/);
    assert.doesNotMatch(t.inventory, /ansible_ssh_private_key_file|ansible_ssh_common_args/);
    assert.throws(() => nodeTargets("all:\n  hosts:\n    h9: {}\n"), /inventory host h9 has no ansible_host or ansible_user/);
});

test("keptNodeTargets: the group's variables once, joined by fanoutNodes into the very inventory each node gets", () => {
    const inv = renderInventory({
        hosts: ["h1", "h2", "h3"].map((name, i) => ({ name, address: `10.0.0.${i + 1}`, user: "root", vars: { roce_host_mtu: 4200 + i } })),
        vars: { a: "{{ x }}", slurm_files: { "slurm.conf": "ClusterName=c\nNodeName=h[1-3]\n" } },
    });
    const kept = keptNodeTargets(inv, ["h2"]);
    assert.deepEqual(kept.nodes.map((n) => [n.name, n.shared]), [["h1", true], ["h3", true]]);
    // the variables are in the shared part only, and each node's own part names that node alone
    assert.match(kept.shared, /^ {2}vars:\n/);
    assert.match(kept.shared, /ClusterName=c/);
    for (const n of kept.nodes) assert.doesNotMatch(n.inventory, /ClusterName|vars:/);
    const joined = fanoutNodes(JSON.parse(JSON.stringify(kept)));
    assert.deepEqual(joined, nodeTargets(inv, ["h2"]));
    assert.equal(joined[1].inventory, kept.nodes[1].inventory + kept.shared);
    assert.ok(!("shared" in joined[0]));
    // `rdmakit check`'s plain list passes as it is; anything else is refused
    assert.equal(fanoutNodes(joined), joined);
    assert.throws(() => fanoutNodes({ nodes: [] }), /neither a list of nodes nor \{ shared, nodes \}/);
    assert.throws(() => fanoutNodes(null), /neither a list of nodes/);
});

test("bundle: wheel entries kept and dropped, a zip read back, the digest follows the playbooks, the pins are complete", () => {
    for (const n of ["ansible/cli/playbook.py", "jinja2/__init__.py", "yaml/__init__.py", "PyYAML-6.0.2.dist-info/METADATA"]) assert.ok(keepWheelEntry(n), n);
    for (const n of ["yaml/_yaml.cpython-311-x86_64-linux-gnu.so", "ansible_test/_internal/x.py", "ansible_core-2.15.13.data/scripts/ansible", "PyYAML.libs/x", "a/../b", "dir/"]) assert.ok(!keepWheelEntry(n), n);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-zip-"));
    fs.mkdirSync(path.join(dir, "src", "pkg"), { recursive: true });
    fs.writeFileSync(path.join(dir, "src", "pkg", "a.py"), "x = 1\n".repeat(200));
    fs.writeFileSync(path.join(dir, "src", "pkg", "b.txt"), "b");
    const made = spawnSync("python3", ["-m", "zipfile", "-c", path.join(dir, "t.zip"), "pkg"], { cwd: path.join(dir, "src") });
    assert.equal(made.status, 0, String(made.stderr));
    const entries = readZip(fs.readFileSync(path.join(dir, "t.zip")));
    assert.deepEqual(entries.filter((e) => !e.name.endsWith("/")).map((e) => [e.name, e.data().toString()]).sort(), [["pkg/a.py", "x = 1\n".repeat(200)], ["pkg/b.txt", "b"]]);
    assert.throws(() => readZip(Buffer.from("not a zip at all, not at all")), /not a zip archive/);
    assert.notEqual(bundleDigest("a".repeat(64)), bundleDigest("b".repeat(64)));
    assert.match(bundleDigest("a".repeat(64)), /^[0-9a-f]{64}$/);
    // every pinned file has a digest and a set (or the collection files it gives); pip gets each with its hash
    for (const a of NODE_PYTHON_ARTIFACTS) {
        assert.match(a.sha256, /^[0-9a-f]{64}$/, a.file);
        assert.ok(a.sets.length > 0 || (a.only ?? []).length > 0, a.file);
    }
    assert.match(requirementsText(), /^ansible-core==2\.15\.13 --hash=sha256:e7f50bbb/m);
    assert.equal(missingArtifacts(dir).length, NODE_PYTHON_ARTIFACTS.length);
    // prepare.py picks the set for this machine's Python 3.11, records it and the interpreter
    fs.writeFileSync(path.join(dir, "prepare.py"), prepareScript());
    const prep = spawnSync("python3", ["-I", "-S", path.join(dir, "prepare.py")], { encoding: "utf8" });
    assert.equal(prep.status, 0, prep.stderr);
    const minor = spawnSync("python3", ["-c", "import sys; print(sys.version_info[1])"], { encoding: "utf8" }).stdout.trim();
    assert.equal(fs.readFileSync(path.join(dir, "set"), "utf8"), Number(minor) <= 11 ? "core2.15\n" : "core2.17\n");
    fs.rmSync(dir, { recursive: true });
});

test("the fan-out against a node that does not answer: unreachable after its tries, named, its log kept, exit 4", { timeout: 60_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fanout-"));
    const script = path.join(dir, "fanout.cjs");
    fs.writeFileSync(script, fanoutScript());
    const inv = renderInventory({ hosts: [{ name: "gone", address: "127.0.0.1", user: "root", port: 9 }], vars: {}, knownHostsFile: path.join(dir, "kh") });
    fs.writeFileSync(path.join(dir, "nodes.json"), JSON.stringify(nodeTargets(inv)));
    fs.writeFileSync(path.join(dir, "vars.json"), "{}");
    const r = spawnSync(process.execPath, [script, path.join(dir, "nodes.json"), path.join(dir, "vars.json")], {
        encoding: "utf8", timeout: 50_000,
        env: { ...process.env, RDMAKIT_BUNDLE_FILE: path.join(dir, "none.tar.gz"), RDMAKIT_BUNDLE_DIGEST: "c".repeat(64), RDMAKIT_PLAYBOOK_NAME: "site.yml",
            RDMAKIT_ANSIBLE_LOG: path.join(dir, "site.log"), RDMAKIT_NODE_LOG_DIR: path.join(dir, "nodes"), ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(dir, "cp"),
            RDMAKIT_FANOUT_RETRIES: "0", SSH_AUTH_SOCK: "" },
    });
    assert.equal(r.status, 4, r.stderr + r.stdout);
    assert.ok(r.stdout.includes("[site] RECAP \u2014 0/1 hosts ok, 1 failed or unreachable"), r.stdout);
    const summary = parseAnsibleLog(fs.readFileSync(path.join(dir, "site.log"), "utf8"));
    assert.deepEqual(summary.failures.map((f) => [f.host, f.task, f.kind]), [["gone", "Connect to the node (rdmakit node-local)", "unreachable"]]);
    assert.match(summary.failures[0].message, /could not connect after 1 tries: .*(Connection refused|port 9)/);
    assert.match(fs.readFileSync(path.join(dir, "nodes", "gone.log"), "utf8"), /UNREACHABLE/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("collectedFile: a node's own results only, no other node's, no path out of the folder", () => {
    for (const ok of ["preflight/n1.json", "health/n1/dmesg.txt"]) assert.ok(collectedFile(ok, "n1"), ok);
    for (const bad of ["preflight/n2.json", "health/n2/dmesg.txt", "n1.json", "health/n1/x/y.txt", "../preflight/n1.json", "preflight/../n1.json", "health/n1/.", "a b/n1.json"]) {
        assert.ok(!collectedFile(bad, "n1"), bad);
    }
});

test("kexPreference: ML-KEM hybrid first where ssh has it, curve25519 before sntrup761, only names this ssh knows", () => {
    // `ssh -Q kex` of OpenSSH 9.2 (Debian 12), in its own order
    const ssh92 = ["diffie-hellman-group1-sha1", "diffie-hellman-group14-sha1", "diffie-hellman-group14-sha256", "diffie-hellman-group16-sha512",
        "diffie-hellman-group18-sha512", "diffie-hellman-group-exchange-sha1", "diffie-hellman-group-exchange-sha256", "ecdh-sha2-nistp256",
        "ecdh-sha2-nistp384", "ecdh-sha2-nistp521", "curve25519-sha256", "curve25519-sha256@libssh.org", "sntrup761x25519-sha512", "sntrup761x25519-sha512@openssh.com"];
    const k = kexPreference(ssh92).split(",");
    assert.deepEqual(k.slice(0, 3), ["curve25519-sha256", "curve25519-sha256@libssh.org", "sntrup761x25519-sha512"]);
    assert.ok(!k.includes("diffie-hellman-group1-sha1") && !k.includes("mlkem768x25519-sha256"));
    assert.equal(kexPreference(["mlkem768x25519-sha256", ...ssh92]).split(",")[0], "mlkem768x25519-sha256");
    assert.equal(kexPreference([]), "");
});

test("distinctProjectBatches: the two ansible-core pins go to pip in separate calls (one requirements file refuses both)", () => {
    const batches = distinctProjectBatches(NODE_PYTHON_ARTIFACTS);
    assert.equal(batches.flat().length, NODE_PYTHON_ARTIFACTS.length);
    for (const b of batches) {
        const names = b.map((a) => a.requirement.split("==")[0].toLowerCase());
        assert.equal(new Set(names).size, names.length);
    }
    assert.equal(batches.length, 2);
});
