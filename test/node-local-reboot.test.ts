/**
 * The reboot path of node-local mode, for real, on one Debian nspawn test host (test/hosts/testhost.sh) that can
 * reboot (RDMAKIT_TESTHOST_REBOOT=1: nspawn is started again when the container's systemd reboots). The playbook
 * is a stand-in install that notifies the efa role's own handlers (playbooks/roles/efa/handlers/main.yml, imported
 * as they are, efa_reboot: true): in node-local mode they leave /run/rdmakit-reboot-required and fail the play, the
 * node script reboots the node (node-scripts.ts), and the fan-out (fanout.ts) waits, reconnects and runs again.
 *  - a host that reboots: rebooted for real (a marker under /run, a tmpfs per boot, is gone and PID 1 is new), the
 *    second pass runs and passes, the run ends ok, the status line showed it rebooting, the log says after 1 reboot;
 *  - a host that does not come back (no restart on reboot) within rebootTimeoutS: unreachable, at the task
 *    "Wait for the node after its reboot".
 * Own loopback address (127.0.28.1) and machine name (nlr1): no other test uses them. Two boots.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { renderInventory } from "../components/provision/inventory";
import { serveKeyLocally } from "../components/provision/keysocket";
import { nodeLocalSetup, runNodeLocal } from "./fixtures/node-local-run";
import { freePort } from "./fixtures/ports";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
const NAME = "nlr1";
const ADDRESS = "127.0.28.1";

const missing = process.getuid?.() !== 0 ? ["root"] : ["systemd-nspawn", "debootstrap", "ssh-agent", "tar"].filter((t) =>
    !process.env.PATH?.split(":").some((d) => fs.existsSync(path.join(d, t))));
const skip = process.env.RDMAKIT_SKIP_HOST_TESTS === "1" ? "RDMAKIT_SKIP_HOST_TESTS=1" : missing.length ? `needs ${missing.join(", ")}` : false;

// A stand-in install (changed until its file is there) that notifies the efa role's handlers, imported unchanged; each
// pass records whether this boot's /run marker (written by the test before the run) was there.
const PLAYBOOK = `---
- name: An install that asks for a reboot (test/node-local-reboot.test.ts)
  hosts: all
  gather_facts: false
  vars:
    efa_reboot: true
  tasks:
    - name: Note the pass
      ansible.builtin.shell: "if [ -e /run/rdmakit-test-boot ]; then echo before-reboot; else echo after-reboot; fi >>/var/lib/rdmakit-test-passes"
      changed_when: false
    - name: Install the stand-in driver
      ansible.builtin.copy:
        dest: /var/lib/rdmakit-test-installed
        content: "installed\\n"
        mode: "0644"
      notify: Reboot after the EFA install
  handlers:
    - name: The efa role's handlers
      ansible.builtin.import_tasks: roles/efa/handlers/main.yml
`;

const dirs: string[] = [];
after(() => { if (!process.env.RDMAKIT_KEEP_TESTHOSTS) for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

test("a role's reboot in node-local mode: the node reboots, the fan-out reconnects and runs again", { skip, timeout: 240_000 }, async (t) => {
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, "nlr-"));
    dirs.push(runDir);
    t.after(async () => { await run(HARNESS, ["down", runDir, NAME]).catch(() => undefined); });
    const key = path.join(runDir, "id");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
    const port = await freePort();
    const tree = path.join(runDir, NAME);
    const ssh = async (cmd: string) => (await run("ssh", ["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null",
        "-o", "LogLevel=ERROR", "-i", key, "-p", String(port), `root@${ADDRESS}`, cmd])).stdout.trim();
    // PID 1's start time (proc(5) /proc/[pid]/stat field 22, clock ticks since the host booted): new after a reboot
    const pid1Start = () => ssh("cut -d' ' -f22 /proc/1/stat");

    // the kit's playbooks folder (ansible.cfg, the progress callback, the efa role) with the test playbook beside
    const playbooks = path.join(runDir, "playbooks");
    fs.cpSync(path.join(ROOT, "playbooks"), playbooks, { recursive: true });
    fs.writeFileSync(path.join(playbooks, "reboot-test.yml"), PLAYBOOK);
    const setup = nodeLocalSetup(path.join(runDir, "out"), playbooks);
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    t.after(() => served.close());
    const inventory = renderInventory({ hosts: [{ name: NAME, address: ADDRESS, user: "root", port }], vars: {}, knownHostsFile: path.join(runDir, "known_hosts") });
    const fanout = (log: string, env: NodeJS.ProcessEnv) => runNodeLocal(setup, { inventory, extraVars: {}, log, key: served.env,
        env: { RDMAKIT_PLAYBOOK_NAME: "reboot-test.yml", ...env } });
    // setup.env names site.yml; this run's playbook is the test's
    setup.env.RDMAKIT_PLAYBOOK_NAME = "reboot-test.yml";

    await t.test("the node reboots, comes back, and the second pass passes", async () => {
        await run(HARNESS, ["up", CACHE, runDir, NAME, String(port), `${key}.pub`, ADDRESS], { env: { ...process.env, RDMAKIT_TESTHOST_REBOOT: "1" } });
        await ssh("echo one >/run/rdmakit-test-boot");
        const before = await pid1Start();
        const log = path.join(runDir, "out", "ansible-reboot.log");
        const started = Date.now();
        const r = await fanout(log, { RDMAKIT_FANOUT_REBOOT_TIMEOUT_S: "120" });
        const seconds = (Date.now() - started) / 1000;
        assert.equal(r.status, 0, r.stdout + r.stderr);
        // really rebooted: this boot's /run has no marker, PID 1 is another process, nspawn was started again
        assert.equal(await ssh("test -e /run/rdmakit-test-boot && echo kept || echo gone"), "gone");
        assert.notEqual(await pid1Start(), before, "PID 1 started again");
        assert.match(fs.readFileSync(path.join(runDir, `${NAME}.console.log`), "utf8"), /rdmakit testhost: rebooted/);
        // one pass before the reboot (its handler asked for it), one after, and the install done once
        assert.deepEqual(fs.readFileSync(path.join(tree, "var", "lib", "rdmakit-test-passes"), "utf8").trim().split("\n"), ["before-reboot", "after-reboot"]);
        assert.equal(fs.readFileSync(path.join(tree, "var", "lib", "rdmakit-test-installed"), "utf8"), "installed\n");
        assert.ok(!fs.existsSync(path.join(tree, "run", "rdmakit-reboot-required")), "the reboot request is gone");
        // the progress showed the node rebooting, then done; the log says it passed after its reboot
        assert.match(r.stdout, /\[site\] nodes: 0 done, 0 running, 1 rebooting, 0 failed, 0 waiting \(of 1\)/);
        assert.match(r.stdout, /\[site\] RECAP — 1\/1 hosts ok/);
        const text = fs.readFileSync(log, "utf8");
        assert.match(text, /^# rdmakit node-local: nlr1 ok \(ansible-playbook exit 0\) after 1 reboot, [\d.]+ s$/m);
        assert.match(text, /^nlr1 +: ok=\d+ +changed=0 +unreachable=0 +failed=0/m, "the second pass changed nothing and failed nothing");
        assert.ok(seconds < 90, `the run took ${seconds.toFixed(0)} s`);
    });

    await t.test("a node that does not come back within rebootTimeoutS is unreachable, at the wait after its reboot", async () => {
        // the same tree (its host key, its bundle) without the install, booted again without the restart on reboot:
        // the reboot it asks for ends the container for good
        fs.rmSync(path.join(tree, "var", "lib", "rdmakit-test-installed"));
        await run(HARNESS, ["restart", runDir, NAME, String(port), ADDRESS], { env: { ...process.env, RDMAKIT_TESTHOST_REBOOT: "" } });
        const log = path.join(runDir, "out", "ansible-lost.log");
        const r = await fanout(log, { RDMAKIT_FANOUT_REBOOT_TIMEOUT_S: "1", RDMAKIT_FANOUT_RETRIES: "0" });
        assert.equal(r.status, 4, r.stdout + r.stderr);
        const text = fs.readFileSync(log, "utf8");
        assert.match(text, /^# rdmakit node-local: nlr1 unreachable after 1 reboot, [\d.]+ s$/m);
        assert.match(text, /^TASK \[Wait for the node after its reboot \(rdmakit node-local\)\] \*\*\*\nfatal: \[nlr1\]: UNREACHABLE! => .*"unreachable":true/m);
        assert.match(r.stdout, /\[site\] RECAP — 0\/1 hosts ok, 1 failed or unreachable/);
        assert.match(fs.readFileSync(path.join(runDir, `${NAME}.console.log`), "utf8"), /rdmakit testhost: rebooted/);
    });
});
