/**
 * `rdmakit check` (day 2) against the stand-in the validate tests use: this machine as the one node, reached with a
 * local connection, through the inventory a `pulumi up` would have left in out/<stack>/. The real ansible-playbook
 * and validate.yml run; with no GPU here the preflight fails for real and the report must name the node. Usage
 * errors exit 2 before anything runs.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawn, spawnSync } from "child_process";
import { keySocketDir } from "../components/provision/keysocket";
import { findInventory, inventoryHosts, limitInventory, runCheck } from "../components/validate/check";
import { parseResultLine } from "../components/validate/component";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.resolve(__dirname, "..");
const missing = ["ansible-playbook", "ssh-agent", "ssh-add", "ssh-keygen", "python3"]
    .filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

const INVENTORY = "# Rendered by rdmakit (components/provision/inventory.ts); do not edit.\n" +
    "all:\n  hosts:\n    localhost:\n      ansible_host: 127.0.0.1\n      ansible_connection: local\n" +
    "    node-9:\n      ansible_host: 10.0.1.19\n" +
    // the stack's Slurm head node (the aws-p5 example runs Slurm, its head named <cluster>-head): no GPU node
    "    p5-demo-head:\n      ansible_host: 127.0.0.1\n      ansible_connection: local\n      slurm_role: controller\n" +
    "  vars:\n    ansible_ssh_common_args: -o StrictHostKeyChecking=accept-new\n";

/**
 * A project folder: the stack file (examples/aws-p5.yaml as Pulumi.dev.yaml; push mode, `cluster.ansible.mode:
 * controller`, unless `mode` says otherwise: the stand-in node is this machine over a local connection) and out/dev/
 * as pulumi up left it.
 */
function project(withInventory = true, mode: "controller" | "node-local" = "controller") {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-check-"));
    dirs.push(dir);
    const doc = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    const cluster = doc.config["rdmakit:cluster"];
    cluster.ansible = { ...(cluster.ansible ?? {}), mode };
    fs.writeFileSync(path.join(dir, "Pulumi.dev.yaml"), stringifyYaml(doc));
    fs.mkdirSync(path.join(dir, "out", "dev"), { recursive: true });
    if (withInventory) fs.writeFileSync(path.join(dir, "out", "dev", "inventory-p5-software.yml"), INVENTORY);
    const key = path.join(dir, "id");
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);
    return { dir, key };
}

test("inventory helpers: hosts with their addresses, a limited copy, validation's own inventory first", () => {
    assert.deepEqual(inventoryHosts(INVENTORY), [{ name: "localhost", address: "127.0.0.1" }, { name: "node-9", address: "10.0.1.19" }, { name: "p5-demo-head", address: "127.0.0.1" }]);
    const limited = limitInventory(INVENTORY, ["localhost"]);
    assert.deepEqual(inventoryHosts(limited).map((h) => h.name), ["localhost"]);
    assert.match(limited, /ansible_ssh_common_args: -o StrictHostKeyChecking=accept-new/);
    // a string the renderer tagged !unsafe (markUnsafe: Jinja-looking) keeps its tag in the limited copy, or Ansible
    // would template it; the text is not re-wrapped or re-quoted into something else
    const tagged = INVENTORY.replace("    node-9:\n", "    node-9:\n      note: !unsafe '{{ lookup(\"pipe\", \"id\") }}'\n") +
        "    motd: !unsafe \"{% raw %}x\"\n";
    const kept = limitInventory(tagged, ["node-9"]);
    assert.match(kept, /^# Limited by rdmakit check/);
    assert.match(kept, /note: !unsafe '\{\{ lookup\("pipe", "id"\) \}\}'/);
    assert.match(kept, /motd: !unsafe "\{% raw %\}x"/);
    assert.deepEqual(inventoryHosts(kept), [{ name: "node-9", address: "10.0.1.19" }]);
    assert.throws(() => limitInventory("all: [1]\n", ["a"]), /no all.hosts mapping/);
    const { dir } = project();
    const out = path.join(dir, "out", "dev");
    assert.equal(findInventory(out), path.join(out, "inventory-p5-software.yml"));
    fs.writeFileSync(path.join(out, "inventory-validation.yml"), INVENTORY);
    assert.equal(findInventory(out), path.join(out, "inventory-validation.yml"));
    assert.equal(findInventory(path.join(dir, "nowhere")), undefined);
});

test("usage errors exit 2 and say what is missing", { skip: missing.includes("ssh-keygen") ? "no ssh-keygen" : false }, async () => {
    const { dir, key } = project();
    const env = { PATH: process.env.PATH };
    assert.match((await runCheck({}, dir, env)).stderr, /give --stack NAME .* or --config FILE/);
    assert.match((await runCheck({ config: "Pulumi.prod.yaml", sshKey: key }, dir, env)).stderr, /Pulumi\.prod\.yaml does not exist/);
    const r = (await runCheck({ config: "Pulumi.dev.yaml", nodes: "localhost,node-7", sshKey: key }, dir, env));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /--nodes: unknown node\(s\) node-7; the inventory .* has localhost, node-9/);
    assert.match((await runCheck({ config: "Pulumi.dev.yaml" }, dir, env)).stderr, /no SSH key: give --ssh-key FILE or set RDMAKIT_SSH_PRIVATE_KEY/);
    const bare = project(false);
    assert.match((await runCheck({ config: "Pulumi.dev.yaml", sshKey: bare.key }, bare.dir, env)).stderr, /no inventory in .*out\/dev .*run pulumi up first/);
});

test("rdmakit check --config Pulumi.dev.yaml --nodes localhost: preflight and validation again, the bad node named, exit 1",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const { dir, key } = project();
        const stackFile = fs.readFileSync(path.join(dir, "Pulumi.dev.yaml"), "utf8");
        // run from the project folder, as a user would; tsx from the kit's node_modules (the project has none)
        // the head node's sinfo: a stand-in printing what `sinfo -h -R -o '%n|%t|%E'` prints, a line about a node the
        // stack does not have, and a line no sinfo prints; check reads it from the head and shows the stack's nodes only
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        fs.writeFileSync(path.join(bin, "sinfo"), "#!/bin/sh\nprintf '%s\\n' 'localhost|drain|rdmakit health: nvlink GPU 3 link 3 inactive' " +
            "'intruder|down|not in the stack' 'garbage'\n", { mode: 0o755 });
        const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin", "rdmakit.ts"), "check", "--config", "Pulumi.dev.yaml", "--nodes", "localhost", "--ssh-key", key],
            { cwd: dir, encoding: "utf8", timeout: 300_000, env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME ?? dir } });
        assert.equal(r.status, 1, r.stderr);
        assert.match(r.stderr, /rdmakit check: 1 node\(s\) from out\/dev\/inventory-p5-software\.yml; logs and report in out\/dev\/check/);
        assert.match(r.stdout, /FAIL preflight: 0 of 1 node\(s\) pass; bad node\(s\): localhost/);
        assert.match(r.stdout, /x gpu-count \[preflight localhost\]: expected 8 GPUs/);
        assert.deepEqual(parseResultLine(r.stdout)?.badNodes, ["localhost"]);
        // 'garbage' is no line sinfo prints: counted as not read, never shown
        assert.match(r.stdout, /\nSlurm \(sinfo -R on p5-demo-head\): 1 of 1 node\(s\) drained or down\n {2}localhost {2}drain {3}rdmakit health: nvlink GPU 3 link 3 inactive\n {2}1 line\(s\) not read: longer than 1024 characters or not name\|state\|reason\n$/);
        assert.doesNotMatch(r.stdout, /garbage|intruder/);
        // node-9 was left out of the run; the head node is in it (its drain states) but was no GPU node; nothing of the project changed
        const ran = fs.readFileSync(path.join(dir, "out", "dev", "check", "inventory-validation.yml"), "utf8");
        assert.deepEqual(inventoryHosts(ran).map((h) => h.name), ["localhost", "p5-demo-head"]);
        assert.equal(fs.readFileSync(path.join(dir, "Pulumi.dev.yaml"), "utf8"), stackFile);
        assert.equal(fs.readFileSync(path.join(dir, "out", "dev", "inventory-p5-software.yml"), "utf8"), INVENTORY);
        assert.deepEqual(fs.readdirSync(path.join(dir, "out", "dev", "check", "preflight")), ["localhost.json"]);
    });

test("rdmakit check in node-local mode (the default) on an inventory host it cannot reach by SSH: a usage error naming it and the way out", async () => {
    const { dir, key } = project(true, "node-local");
    const r = (await runCheck({ config: "Pulumi.dev.yaml", nodes: "localhost", sshKey: key }, dir, { ...process.env }));
    assert.equal(r.code, 2);
    assert.match(r.stderr, /inventory host localhost has no ansible_host or ansible_user; node-local mode reaches each node by them \(or set cluster\.ansible\.mode: controller\)/);
});

test("rdmakit check stopped by SIGTERM: the run, its ssh-agent (the key loaded) and the key socket end with it; exit 143",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false, timeout: 120_000 }, async () => {
        const { dir, key } = project();
        // a stand-in ansible-playbook that says where it runs, then hangs as a stuck node would
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        const seen = path.join(dir, "stub-seen");
        fs.writeFileSync(path.join(bin, "ansible-playbook"), `#!/bin/sh\necho "$$ $SSH_AUTH_SOCK" >"${seen}.tmp" && mv "${seen}.tmp" "${seen}"\nexec sleep 300\n`, { mode: 0o755 });
        const child = spawn(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin", "rdmakit.ts"), "check", "--config", "Pulumi.dev.yaml", "--nodes", "localhost", "--ssh-key", key],
            { cwd: dir, stdio: "ignore", env: { PATH: `${bin}:${process.env.PATH}`, HOME: process.env.HOME ?? dir } });
        const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
        const deadline = Date.now() + 90_000;
        while (!fs.existsSync(seen) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 200));
        assert.ok(fs.existsSync(seen), "the run never reached ansible-playbook");
        const [stubPid, agentSocket] = fs.readFileSync(seen, "utf8").trim().split(" ");
        assert.ok(agentSocket && fs.existsSync(agentSocket), `the run's agent socket ${agentSocket} exists while it runs`);
        const sockets = () => fs.existsSync(keySocketDir()) ? fs.readdirSync(keySocketDir()).filter((f) => f.startsWith(`local-${child.pid}-`)) : [];
        assert.equal(sockets().length, 1, "the check serves its key socket while the run goes on");
        child.kill("SIGTERM");
        const code = await Promise.race([exited, new Promise<"hung">((r) => setTimeout(() => r("hung"), 30_000))]);
        assert.equal(code, 143, "rdmakit check ends within 30 s of SIGTERM, with 128 + 15");
        // a process that got the run's TERM: gone, or a zombie waiting for its new parent to reap it
        const alive = (pid: number) => {
            try { return !/^\d+ \(.*\) Z /.test(fs.readFileSync(`/proc/${pid}/stat`, "utf8")); } catch { return false; }
        };
        const stopBy = Date.now() + 10_000;
        while (alive(Number(stubPid)) && Date.now() < stopBy) await new Promise((r) => setTimeout(r, 100));
        assert.equal(alive(Number(stubPid)), false, "the stuck ansible-playbook was stopped within 10 s");
        // ssh-agent removes its socket when it exits; give it its poll interval
        const gone = Date.now() + 15_000;
        while (fs.existsSync(agentSocket) && Date.now() < gone) await new Promise((r) => setTimeout(r, 200));
        assert.equal(fs.existsSync(agentSocket), false, "the run's ssh-agent (holding the key) is gone");
        assert.deepEqual(sockets(), [], "the key socket file is removed");
    });
