/**
 * mpirun's per-run SSH identity, for real: the real ansible-playbook runs validate.yml's all-node/pairs play (tags
 * nccl_all,nccl_pairs) on two inventory hosts that are this machine (local connection, a scratch HOME, one key folder
 * per host). Stand-in mpirun commands copy what a launcher has while it runs (its key folder, authorized_keys), so the
 * test sees what mpirun's ssh would use: a key made for the run on each launcher, authorized with `restrict` and the
 * run's marker on every node, a known_hosts of the pinned host key (or, with none pinned, of each node's own host
 * key files), and afterwards nothing: not after a pass, not after a failure, and an earlier run's line is gone too.
 * The fallback with no pinned key (bare metal) runs too: each node's own /etc/ssh host keys, read over Ansible's connection.
 * The operator's own authorized line stays. No agent, no forwarding.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { ed25519HostKey } from "../components/provision/knownhosts";
import { freePort } from "./fixtures/ports";
import { startSshd, sshdMissing } from "./fixtures/sshd";
import { LAUNCH_SSH, MPIRUN_SSH_DIR } from "../components/validate/commands";

const ROOT = path.resolve(__dirname, "..");
const missing = ["ansible-playbook", "ssh-keygen"].filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
const skip = { skip: missing.length ? `missing ${missing.join(", ")}` : false };
const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

const OPERATOR = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOperatorKeyStaysOperatorKeyStaysOperatorKeyS operator@laptop";
const STALE = "restrict ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIStaleKeyOfAnEarlierRunStaleKeyOfAnEarlierR rdmakit-mpirun-run=20260101T000000Z-1 node-b";

/** Runs the play; `fixed` and `pair` stand in for the all-node and the pair mpirun (they record what the launcher has). */
type Where = { home: string; seen: string; remote: string };
function runPlay(hostKeys: string[], fixed: (d: Where) => string, pair: (d: Where) => string) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-runkey-"));
    dirs.push(dir);
    const home = path.join(dir, "home"), seen = path.join(dir, "seen"), remote = path.join(dir, "remote");
    fs.mkdirSync(path.join(home, ".ssh"), { recursive: true, mode: 0o700 });
    fs.mkdirSync(seen);
    const ak = path.join(home, ".ssh", "authorized_keys");
    fs.writeFileSync(ak, `${OPERATOR}\n${STALE}\n`, { mode: 0o600 });
    // both hosts are this machine: each gets its own key folder (on real nodes both are ~/.rdmakit-mpirun)
    const keyDir = (h: string) => path.join(home, `mpirun-${h}`);
    const inventory = ["all:", "  children:", "    gpu_nodes:", "      hosts:",
        ...["node-a", "node-b"].flatMap((h) => [`        ${h}:`, "          ansible_connection: local",
            `          ansible_python_interpreter: ${spawnSync("sh", ["-c", "command -v python3"], { encoding: "utf8" }).stdout.trim()}`,
            `          nccl_validate_ssh_dir: ${keyDir(h)}`])].join("\n") + "\n";
    fs.writeFileSync(path.join(dir, "inventory.yml"), inventory);
    const vars = {
        nccl_validate_out_dir: path.join(dir, "out"), nccl_validate_remote_dir: remote, nccl_validate_fabric: "roce",
        nccl_validate_expected_gpus: 1, nccl_validate_expected_rdma_devices: 1,
        nccl_validate_hosts: [{ name: "node-a", address: "10.0.0.1" }, { name: "node-b", address: "10.0.0.2" }],
        nccl_validate_gpus_per_node: 1, nccl_validate_hostfile_path: path.join(remote, "hostfile"),
        nccl_validate_all_fixed_cmd: fixed({ home, seen, remote }),
        nccl_validate_all_sweep_cmd: "true",
        nccl_validate_pairwise: "always",
        // node-b launches the one pair
        nccl_validate_pair_cmd: `${pair({ home, seen, remote })}; : @PAIR_A@ @PAIR_B@`,
        nccl_validate_pair_rounds: [[[1, 0]]],
        nccl_validate_host_keys: hostKeys,
    };
    fs.writeFileSync(path.join(dir, "vars.json"), JSON.stringify(vars));
    const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inventory.yml"), path.join(ROOT, "playbooks", "validate.yml"),
        "-e", `@${path.join(dir, "vars.json")}`, "--tags", "nccl_all,nccl_pairs"], {
        cwd: ROOT, encoding: "utf8", timeout: 240_000, // the play is about 40 tasks on two hosts: minutes on a loaded 2-core machine
        env: { ...process.env, HOME: home, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_FORKS: "1", ANSIBLE_NOCOLOR: "1" },
    });
    return { r, dir, home, seen, ak, keyDir };
}

function pubOf(file: string): string {
    return fs.readFileSync(file, "utf8").trim().split(" ").slice(0, 2).join(" ");
}

test("mpirun's ssh uses the run's key, IdentitiesOnly and the run's known_hosts, no first-use trust, no tree spawn", () => {
    const args = LAUNCH_SSH[2];
    assert.equal(LAUNCH_SSH[1], "plm_rsh_args");
    for (const o of [`-i ${MPIRUN_SSH_DIR}/id_ed25519`, "-o IdentitiesOnly=yes", "-o StrictHostKeyChecking=yes",
        `-o UserKnownHostsFile=${MPIRUN_SSH_DIR}/known_hosts`, "-o GlobalKnownHostsFile=/dev/null", "-o BatchMode=yes"]) {
        assert.ok(args.includes(o), `${o} in ${args}`);
    }
    assert.doesNotMatch(args, /accept-new|ForwardAgent|-A\b/);
    assert.deepEqual(LAUNCH_SSH.slice(3), ["--mca", "plm_rsh_no_tree_spawn", "1"]);
    assert.doesNotMatch(fs.readFileSync(path.join(ROOT, "playbooks", "validate.yml"), "utf8"), /ForwardAgent/);
});

/**
 * The authorized line the play wrote, as a real sshd reads it: the launcher's own key, from another address than the
 * line's from= (refused), and from that address (accepted). Loopback addresses of this test's own; ssh binds its source.
 */
async function sshdHonoursFrom(line: string, privateKey: string, dir: string): Promise<{ other: number | null; own: number | null }> {
    const listen = "127.0.25.1", own = "127.0.25.2", other = "127.0.25.3";
    const host = path.join(dir, "sshd_host_key");
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", host]).status, 0);
    const authorized = path.join(dir, "sshd_authorized_keys");
    // the play's line, with the launcher's address in from= replaced by the loopback address it connects from here
    fs.writeFileSync(authorized, line.replace(/from="[^"]*"/, `from="${own}"`) + "\n", { mode: 0o600 });
    const port = await freePort();
    const server = await startSshd(dir, { address: listen, port, hostKeyFiles: [host], authorizedKey: authorized });
    try {
        const ssh = (source: string) => spawnSync("ssh", ["-F", "/dev/null", "-i", privateKey, "-o", "IdentitiesOnly=yes", "-o", `BindAddress=${source}`,
            "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "ConnectTimeout=10", "-p", String(port),
            `${os.userInfo().username}@${listen}`, "true"], { encoding: "utf8", timeout: 30_000 }).status;
        return { other: ssh(other), own: ssh(own) };
    } finally {
        await server.stop();
    }
}

test("validate.yml: a key per launcher for the run, restricted, pinned known_hosts; gone after a pass and after a failure", skip, async () => {
    const pinned = ed25519HostKey("rdmakit-nodes").publicKey;
    // node-a launches the all-node runs and passes; node-b launches its pair, whose stand-in removes the working
    // folder, so the fetch after it fails and node-b fails inside the block
    const p = runPlay([pinned],
        ({ home, seen }) => `cp -r ${home}/mpirun-node-a ${seen}/a && cp ${home}/.ssh/authorized_keys ${seen}/ak`,
        ({ home, seen, remote }) => `cp -r ${home}/mpirun-node-b ${seen}/b; rm -rf ${remote}`);
    assert.notEqual(p.r.status, 0, "node-b's failed fetch fails the play");
    assert.match(p.r.stdout, /failed: \[node-b\].*Fetch the pair log|Fetch the pair log[\s\S]*failed: \[node-b\]/);

    // node-a (all-node runs) and node-b (its pair) each had a private key of their own while mpirun ran
    for (const h of ["a", "b"]) {
        assert.match(fs.readFileSync(path.join(p.seen, h, "id_ed25519"), "utf8"), /^-----BEGIN OPENSSH PRIVATE KEY-----/);
        assert.equal(fs.statSync(path.join(p.seen, h, "id_ed25519")).mode & 0o077, 0, "0600");
    }
    const pubA = pubOf(path.join(p.seen, "a", "id_ed25519.pub")), pubB = pubOf(path.join(p.seen, "b", "id_ed25519.pub"));
    assert.notEqual(pubA, pubB);
    // both authorized for the run, restricted and marked; the earlier run's line gone; the operator's kept
    const ak = fs.readFileSync(path.join(p.seen, "ak"), "utf8");
    // each only from its own launcher's address (issue 25 F11: `restrict` alone let the key in from anywhere)
    for (const [pub, from, h] of [[pubA, "10.0.0.1", "a"], [pubB, "10.0.0.2", "b"]]) {
        assert.match(ak, new RegExp(`^restrict,from="${from.replace(/\./g, "\\.")}" ${pub.replace(/[+/]/g, "\\$&")} rdmakit-mpirun-run=\\d{8}T\\d{6}Z-\\d+ node-${h}$`, "m"));
    }
    // and sshd keeps node-a's key to node-a's address: from anywhere else it is refused
    if (!process.env.RDMAKIT_SKIP_HOST_TESTS) {
        assert.equal(sshdMissing(), "", "set RDMAKIT_SKIP_HOST_TESTS=1 to skip");
        const line = ak.split("\n").find((l) => l.startsWith("restrict,from=") && l.endsWith(" node-a"))!;
        const got = await sshdHonoursFrom(line, path.join(p.seen, "a", "id_ed25519"), p.dir);
        assert.deepEqual(got, { other: 255, own: 0 }, "from= another address must be refused, from its own accepted");
    }
    assert.ok(ak.includes(OPERATOR));
    assert.ok(!ak.includes("StaleKeyOfAnEarlierRun"), ak);
    // the launchers' known_hosts: every node's address with the pinned key, nothing else
    for (const h of ["a", "b"]) {
        assert.equal(fs.readFileSync(path.join(p.seen, h, "known_hosts"), "utf8"),
            `10.0.0.1 ${keyOf(pinned)}\n10.0.0.2 ${keyOf(pinned)}\n`);
    }
    // afterwards, on the node that passed and on the one that failed: only the operator's line, no key folder
    assert.equal(fs.readFileSync(p.ak, "utf8"), `${OPERATOR}\n`);
    assert.ok(!fs.existsSync(p.keyDir("node-a")) && !fs.existsSync(p.keyDir("node-b")));
});

function keyOf(line: string): string {
    return line.split(" ").slice(0, 2).join(" ");
}

test("validate.yml with no pinned host key (bare metal): the launchers' known_hosts holds each node's own host keys; gone after", skip, (t) => {
    // what `cat /etc/ssh/ssh_host_*_key.pub` prints on the nodes (both are this machine here), in the shell's glob order
    const own = fs.existsSync("/etc/ssh") ? fs.readdirSync("/etc/ssh").filter((f) => /^ssh_host_.*_key\.pub$/.test(f)).sort() : [];
    if (own.length === 0) { t.skip("this machine has no SSH host keys in /etc/ssh"); return; }
    const p = runPlay([],
        ({ home, seen }) => `cp -r ${home}/mpirun-node-a ${seen}/a`,
        ({ home, seen }) => `cp -r ${home}/mpirun-node-b ${seen}/b`);
    assert.equal(p.r.status, 0, p.r.stdout.slice(-3000));
    const keys = own.map((f) => keyOf(fs.readFileSync(path.join("/etc/ssh", f), "utf8").trim()));
    for (const h of ["a", "b"]) {
        assert.equal(fs.readFileSync(path.join(p.seen, h, "known_hosts"), "utf8"),
            ["10.0.0.1", "10.0.0.2"].flatMap((a) => keys.map((k) => `${a} ${k}\n`)).join(""));
    }
    assert.equal(fs.readFileSync(p.ak, "utf8"), `${OPERATOR}\n`);
    assert.ok(!fs.existsSync(p.keyDir("node-a")) && !fs.existsSync(p.keyDir("node-b")));
});
