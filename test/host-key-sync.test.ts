// The stack's known_hosts after a node is replaced at the same address, on the path `pulumi up` takes
// (components/cluster.ts pinHostKeys: the whole file written from the stack's pinned keys with writeKnownHosts, every
// hop checking it with StrictHostKeyChecking=yes and HostKeyAlgorithms=ssh-ed25519): a real sshd
// (test/fixtures/sshd.ts) showing the pinned key is accepted; started again at the same address and port with new
// host keys (what a replaced node shows), it is refused; once the kit writes the file from the new pinned key, it is
// accepted (checking never turned off), and a file pinning the old key again refuses it. What is under test is the
// client side (ssh and the file the kit keeps), so the server need not be a booted host.
// Needs root, ssh and openssh-server; fails without them unless RDMAKIT_SKIP_HOST_TESTS=1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { freePort } from "./fixtures/ports";
import { startSshd, sshdMissing } from "./fixtures/sshd";
import { KIT_HOST_KEY_ALGORITHMS, writeKnownHosts } from "../components/provision/knownhosts";

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
        // as the kit's inventory reaches a node (components/provision/inventory.ts with pinned keys)
        const ssh = () => spawnSync("ssh", ["-F", "/dev/null", "-i", key, "-p", String(port),
            "-o", "StrictHostKeyChecking=yes", "-o", `UserKnownHostsFile=${knownHosts}`, "-o", `HostKeyAlgorithms=${KIT_HOST_KEY_ALGORITHMS.join(",")}`,
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=10", `root@${ADDRESS}`, "echo reached"], { encoding: "utf8" });
        /** A node's host keys as a fresh machine makes them (ed25519 and ECDSA); the public halves (ed25519 first). */
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
        // the kit pins the node's key: the file written from the stack's keys, before the first contact
        const pin = (publicKey: string) => writeKnownHosts([{ hosts: [ADDRESS], port, publicKey }], knownHosts);
        pin(oldKeys[0]);
        const first = ssh();
        assert.equal(first.status, 0, first.stderr);
        assert.equal(first.stdout.trim(), "reached");

        // the node is replaced: same address and port, new host keys
        await server.stop();
        const replaced = makeHostKeys("new");
        server = await startSshd(runDir, { address: ADDRESS, port, hostKeyFiles: replaced.files, authorizedKey: `${key}.pub` });
        const newKeys = replaced.keys;
        assert.notDeepEqual(newKeys, oldKeys);
        const refused = ssh();
        assert.equal(refused.status, 255);
        assert.match(refused.stderr, /REMOTE HOST IDENTIFICATION HAS CHANGED/);

        // the next pulumi up writes the file from the stack's new pinned key: the old entry is gone with it
        pin(newKeys[0]);
        assert.ok(!fs.readFileSync(knownHosts, "utf8").includes(oldKeys[0].split(" ")[1]), "the replaced node's old key is still there");
        const accepted = ssh();
        assert.equal(accepted.status, 0, accepted.stderr);
        assert.equal(accepted.stdout.trim(), "reached");
        // the other key type the new node also has does not stand in for the pinned one
        pin(newKeys[1]);
        assert.equal(ssh().status, 255);
        // pinning the old key again (a wrong pin) makes ssh refuse: the file holds only what is pinned
        pin(oldKeys[0]);
        assert.equal(ssh().status, 255);
    });
