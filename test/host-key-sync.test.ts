// The stack's known_hosts after a node is replaced at the same address (components/provision/knownhosts.ts): a real
// sshd (test/fixtures/sshd.ts) is reached with host-key checking on and recorded; it is then started again at the
// same address and port with new host keys (what a replaced node shows), which ssh refuses; after the kit's
// syncPinnedHostKeys with the new keys, ssh accepts it with StrictHostKeyChecking=yes (checking never turned off).
// What is under test is the client side (ssh and the file the kit keeps), so the server need not be a booted host.
// Needs root, ssh and openssh-server; fails without them unless RDMAKIT_SKIP_HOST_TESTS=1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePort } from "./fixtures/ports";
import { startSshd, sshdMissing } from "./fixtures/sshd";
import { knownHostsName, syncPinnedHostKeys } from "../components/provision/knownhosts";

const SKIP = process.env.RDMAKIT_SKIP_HOST_TESTS === "1";
// an address of this test's own (issue 16) so that parallel host tests do not meet it
const ADDRESS = "127.0.16.1";

test("a node re-created with new host keys at the same address: refused, then accepted once the kit drops its old entry",
    { skip: SKIP ? "RDMAKIT_SKIP_HOST_TESTS=1" : false, timeout: 60_000 }, async (t) => {
        assert.equal(sshdMissing(), "", "set RDMAKIT_SKIP_HOST_TESTS=1 to skip");
        const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kh-"));
        let server: Awaited<ReturnType<typeof startSshd>> | undefined;
        t.after(async () => {
            await server?.stop();
            fs.rmSync(runDir, { recursive: true, force: true });
        });
        const key = path.join(runDir, "id");
        assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);
        const port = await freePort();
        const knownHosts = path.join(runDir, "known_hosts");
        const ssh = (strict: "yes" | "accept-new") => spawnSync("ssh", ["-F", "/dev/null", "-i", key, "-p", String(port),
            "-o", `StrictHostKeyChecking=${strict}`, "-o", `UserKnownHostsFile=${knownHosts}`, "-o", "HashKnownHosts=yes",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", `root@${ADDRESS}`, "echo reached"], { encoding: "utf8" });
        /** A node's host keys as a fresh machine makes them (ed25519 and ECDSA); the public halves, as the kit pins them. */
        const makeHostKeys = (generation: string): { files: string[]; keys: string[] } => {
            const files = ["ed25519", "ecdsa"].map((type) => {
                const file = path.join(runDir, `host_${generation}_${type}`);
                assert.equal(spawnSync("ssh-keygen", ["-q", "-t", type, "-N", "", "-C", "", "-f", file]).status, 0);
                return file;
            });
            return { files, keys: files.map((f) => fs.readFileSync(`${f}.pub`, "utf8").trim()) };
        };
        const original = makeHostKeys("old");
        const oldKeys = original.keys;
        server = await startSshd(runDir, { address: ADDRESS, port, hostKeyFiles: original.files, authorizedKey: `${key}.pub` });
        const first = ssh("accept-new");
        assert.equal(first.status, 0, first.stderr);
        assert.equal(first.stdout.trim(), "reached");

        // the node is replaced: same address and port, new host keys
        await server.stop();
        const replaced = makeHostKeys("new");
        server = await startSshd(runDir, { address: ADDRESS, port, hostKeyFiles: replaced.files, authorizedKey: `${key}.pub` });
        const newKeys = replaced.keys;
        assert.notDeepEqual(newKeys, oldKeys);
        const refused = ssh("accept-new");
        assert.equal(refused.status, 255);
        assert.match(refused.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED/);

        // the kit pins the new node's keys: the old entry (hashed) goes, the pinned ones come in
        const name = knownHostsName(ADDRESS, port);
        assert.deepEqual(syncPinnedHostKeys(knownHosts, [{ address: ADDRESS, port, keys: newKeys }]), { dropped: [name], written: [name] });
        assert.ok(!fs.existsSync(`${knownHosts}.old`));
        const accepted = ssh("yes");
        assert.equal(accepted.status, 0, accepted.stderr);
        assert.equal(accepted.stdout.trim(), "reached");
        // a second sync finds the file right and leaves it alone
        const before = fs.readFileSync(knownHosts, "utf8");
        assert.deepEqual(syncPinnedHostKeys(knownHosts, [{ address: ADDRESS, port, keys: newKeys }]), { dropped: [], written: [] });
        assert.equal(fs.readFileSync(knownHosts, "utf8"), before);
        // pinning the old keys again (a wrong pin) makes ssh refuse: the file holds only what is pinned
        syncPinnedHostKeys(knownHosts, [{ address: ADDRESS, port, keys: oldKeys }]);
        assert.equal(ssh("yes").status, 255);
    });
