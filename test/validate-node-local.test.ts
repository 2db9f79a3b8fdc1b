/**
 * Validation's per-node plays in node-local mode, for real: VALIDATE_SCRIPT with the fan-out (as ClusterValidation and
 * `rdmakit check` run it) against two Debian nspawn test hosts (test/hosts/testhost.sh) through the first as bastion.
 * Each node runs validate.yml's health and preflight plays on itself from the bundle and sends its results back, into
 * the very files push mode writes (out/<stack>/preflight/<host>.json, health/<host>/<capture>); the nccl-tests plays
 * then run from the controller, only when every node passed its preflight (the play is any_errors_fatal).
 *  - v1 has stand-ins for the GPU tools (8 GPUs), two RDMA ports ACTIVE at 400 Gb/s in a sysfs tree of its own, and
 *    bash's answer to the memlock probe, so its preflight passes; dmesg is its own.
 *  - v2's python3 is a stand-in for a Python 3.6: it must fail at the Python check, named, with the way out, and be
 *    sent nothing.
 * Then a local user (uid 12345) squats the old fixed /tmp working folders with links in them: nothing is written
 * through them (issue 34, finding 1).
 * Own loopback addresses (127.0.27.1/.2) and machine names (vnl1, vnl2): no other test uses them. One boot, three runs.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { promisify } from "node:util";
import { keepNodeTargets, RUN_INTERPRETER, sha256 } from "../components/provision/ansible";
import { renderInventory } from "../components/provision/inventory";
import { inventoryHosts } from "../components/provision/nodes";
import { serveKeyLocally } from "../components/provision/keysocket";
import { summariserScript } from "../components/provision/summarise";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { SUMMARISER_NAME, VALIDATE_NODE_LOGS, VALIDATE_SCRIPT, nodeLocalValidateEnv, validationVars, varsDigest } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { freePort } from "./fixtures/ports";
import { nodeSendEnv } from "../components/provision/node-send";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
const CAP = path.join(ROOT, "test", "fixtures", "health", "captures");

const missing = process.getuid?.() !== 0 ? ["root"] : ["systemd-nspawn", "debootstrap", "ssh-agent", "tar"].filter((t) =>
    !process.env.PATH?.split(":").some((d) => fs.existsSync(path.join(d, t))));
const skip = process.env.RDMAKIT_SKIP_HOST_TESTS === "1" ? "RDMAKIT_SKIP_HOST_TESTS=1" : missing.length ? `needs ${missing.join(", ")}` : false;

/** The prepare hook (testhost.sh RDMAKIT_TESTHOST_PREPARE) of each host: stand-ins written into its tree before boot. */
function prepareHook(dir: string, name: string, body: string[]): string {
    const file = path.join(dir, `prepare-${name}.sh`);
    fs.writeFileSync(file, ["#!/bin/sh", "set -eu", 'T="$1"', ...body, ""].join("\n"), { mode: 0o755 });
    return file;
}

const GOOD_NODE = [
    'mkdir -p "$T/usr/local/bin"',
    // nvidia-smi as the preflight (--query-gpu) and the health capture (-q) call it; the -q output is a real capture
    `cp ${path.join(CAP, "nvidia-smi-q.h100-565.57.01.txt")} "$T/usr/local/share-nvidia-smi-q.txt"`,
    `printf '%s\\n' '#!/bin/sh' 'case "$1" in -q) cat /usr/local/share-nvidia-smi-q.txt;; --query-gpu=*) for i in 0 1 2 3 4 5 6 7; do echo "NVIDIA H100 80GB HBM3"; done;; *) exit 1;; esac' >"$T/usr/local/bin/nvidia-smi"`,
    'chmod 755 "$T/usr/local/bin/nvidia-smi"',
    // two RoCE ports ACTIVE at 400 Gb/s, in the files the preflight reads (sysfs-class-infiniband)
    'for d in mlx5_0 mlx5_1; do p="$T/srv/fake-ib/$d/ports/1"; mkdir -p "$p"; echo "4: ACTIVE" >"$p/state"; echo "400 Gb/sec (4X NDR)" >"$p/rate"; echo Ethernet >"$p/link_layer"; done',
    // memlock: the preflight's probe is bash's `ulimit -l`; this sandbox cannot raise the limit (no CAP_SYS_RESOURCE,
    // `ulimit -l unlimited` is refused even to root), so bash answers that one probe as a node set up for RDMA would
    'mv "$T/usr/bin/bash" "$T/usr/bin/bash.real"',
    `printf '%s\\n' '#!/usr/bin/bash.real' 'if [ "$1" = -c ] && [ "$2" = "ulimit -l" ]; then echo unlimited; exit 0; fi' 'exec /usr/bin/bash.real "$@"' >"$T/usr/bin/bash"`,
    'chmod 755 "$T/usr/bin/bash"',
];
// python3 (and every python3.x) replaced by a stand-in that is a 3.6
const OLD_PYTHON = [
    'for p in "$T"/usr/bin/python3*; do [ -e "$p" ] && mv "$p" "$p.real"; done',
    `printf '%s\\n' '#!/bin/sh' 'echo 3.6' 'exit 1' >"$T/usr/bin/python3"`,
    'chmod 755 "$T/usr/bin/python3"',
];

const dirs: string[] = [];
after(() => { if (!process.env.RDMAKIT_KEEP_TESTHOSTS) for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

test("validate.yml's per-node plays run on the nodes, their results come back as push mode writes them", { skip, timeout: 420_000 }, async (t) => {
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, "vnl-"));
    dirs.push(runDir);
    const hosts = ["vnl1", "vnl2"];
    const addresses = ["127.0.27.1", "127.0.27.2"];
    t.after(async () => { await Promise.all(hosts.map((h) => run(HARNESS, ["down", runDir, h]).catch(() => undefined))); });
    const key = path.join(runDir, "id");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
    await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
    const ports = [await freePort(), await freePort()];
    const hooks = [prepareHook(runDir, "vnl1", GOOD_NODE), prepareHook(runDir, "vnl2", OLD_PYTHON)];
    await Promise.all(hosts.map((h, i) => run(HARNESS, ["up", CACHE, runDir, h, String(ports[i]), `${key}.pub`, addresses[i]],
        { env: { ...process.env, RDMAKIT_TESTHOST_PREPARE: hooks[i] } })));

    const plan = planCluster(parseClusterSpec({
        name: "rdmakit-vnl", fabric: "roce", ssh: { allowedCidrs: ["127.0.0.0/8"] },
        software: { ofedSource: "inbox", gpudirect: "dmabuf" },
        roce: {
            nicModel: "ConnectX-7",
            hosts: hosts.map((name, i) => ({ name, address: addresses[i], sshUser: "root", railNics: ["mlx5_0", "mlx5_1"], bootstrapNic: "eth0", gpu: { model: "H100", count: 8 } })),
            switches: [{ name: "leaf", os: "sonic", managementAddress: "127.0.27.10", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u",
                hostPorts: ["Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"], speedGbps: 400, cableLengthM: 5 }],
        },
    }));
    const args = validationArgsFromPlan(plan, "vnl");
    assert.equal(args.mode, "node-local", "the plan's default mode");
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    t.after(() => served.close());

    /** One validation run on `names` as the component runs it (VALIDATE_SCRIPT under the run's agent, node-local env). */
    const validate = (names: string[], out: string) => {
        fs.mkdirSync(out, { recursive: true });
        fs.writeFileSync(path.join(out, SUMMARISER_NAME), summariserScript());
        const idx = names.map((n) => hosts.indexOf(n));
        const inventory = renderInventory({
            hosts: inventoryHosts(plan, addresses).filter((h) => names.includes(h.name)).map((h) => ({ ...h, port: ports[hosts.indexOf(h.name)] })),
            bastion: { address: addresses[0], user: "root", port: ports[0] },
            vars: { ...plan.ansibleVars }, knownHostsFile: path.join(runDir, "known_hosts"),
        });
        const varsJson = JSON.stringify({
            ...validationVars({ ...args, hosts: names, preflight: { ...args.preflight, gpudirect: "none", nvswitch: false } }, idx.map((i) => addresses[i]), path.join(out, "nccl")),
            nccl_validate_sysfs_ib: "/srv/fake-ib", node_health_dcgm_level: 1,
        });
        const env = {
            PATH: process.env.PATH, HOME: process.env.HOME ?? runDir, RDMAKIT_OUT: out, ...served.env,
            RDMAKIT_FAIL_ON_FAILURE: "true", RDMAKIT_RERUN_ON: "", ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(out, SUMMARISER_NAME),
            ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            RDMAKIT_INVENTORY_HASH: sha256(inventory), RDMAKIT_VARS_HASH: varsDigest(varsJson),
            RDMAKIT_EXPECT: JSON.stringify({ all: args.expectations.all }), RDMAKIT_FABRIC_ARGS: "",
            ...nodeLocalValidateEnv(path.join(ROOT, "playbooks"), out, out, true),
            ...keepNodeTargets(out, inventory, true, ROOT),
        };
        return new Promise<{ status: number; stdout: string; stderr: string }>((resolve) => {
            const child = spawn(RUN_INTERPRETER[0], [...RUN_INTERPRETER.slice(1), VALIDATE_SCRIPT], { cwd: ROOT, env });
            let stdout = "";
            let stderr = "";
            child.stdout.on("data", (d) => { stdout += d; });
            child.stderr.on("data", (d) => { stderr += d; });
            child.on("close", (rc) => resolve({ status: rc ?? -1, stdout, stderr }));
            child.stdin.end(JSON.stringify({ inventory, extraVars: varsJson }));
        });
    };

    await t.test("both nodes: v2's Python 3.6 fails it by name and it is sent nothing; v1's results come back; no nccl-tests", async () => {
        const out = path.join(runDir, "out-both");
        const r = await validate(hosts, out);
        const log = fs.readFileSync(path.join(out, "ansible-validate.log"), "utf8");
        assert.equal(r.status, 1, r.stdout + r.stderr);
        assert.match(r.stderr, /vnl2: failed at task "Check the node's Python \(rdmakit node-local\)": vnl2 has Python 3\.6 at \/usr\/bin\/python3; node-local mode needs Python 3\.9-3\.12 .*cluster\.ansible\.mode: controller/);
        assert.ok(!fs.existsSync(path.join(runDir, "vnl2", "opt", "rdmakit")), "a node without a usable Python is sent no bundle");
        assert.match(fs.readFileSync(path.join(out, VALIDATE_NODE_LOGS, "vnl2.log"), "utf8"), /FAILED!.*Python 3\.6/);
        // v1's preflight result, in push mode's shape, with its software record (none: site.yml did not run here)
        const v1 = JSON.parse(fs.readFileSync(path.join(out, "preflight", "vnl1.json"), "utf8"));
        assert.deepEqual(Object.keys(v1).sort(), ["checks", "host", "software"]);
        assert.equal(v1.host, "vnl1");
        assert.deepEqual(v1.checks.map((c: { check: string; ok: boolean }) => [c.check, c.ok]), [["gpu-count", true], ["rdma-ports", true], ["memlock", true]]);
        assert.deepEqual(fs.readdirSync(path.join(out, "preflight")), ["vnl1.json"]);
        // the health captures: v1's own tools' output under health/<host>/
        assert.equal(fs.readFileSync(path.join(out, "health", "vnl1", "nvidia-smi-q.txt"), "utf8"), fs.readFileSync(path.join(CAP, "nvidia-smi-q.h100-565.57.01.txt"), "utf8"));
        assert.ok(fs.existsSync(path.join(out, "health", "vnl1", "dmesg.txt")));
        // any_errors_fatal: a failed node stops the run before the controller's nccl-tests plays
        assert.doesNotMatch(log, /PLAY \[Single-node nccl-tests/);
        assert.deepEqual(fs.readdirSync(path.join(out, "nccl")), []);
    });

    await t.test("a local user who made the old /tmp working folders first, with links in them, gets nothing written through them", async () => {
        // uid 12345 (no account needed) makes the fixed folders the roles used, world-writable, and plants links where
        // root used to write the kernel log and the single-node log (issue 34, finding 1)
        const onV1 = (cmd: string) => run("ssh", ["-i", key, "-p", String(ports[0]), "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=no",
            "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR", `root@${addresses[0]}`, cmd]);
        // (the runs before made them as root: gone, as after a reboot, so the user is first)
        await onV1("rm -rf /tmp/rdmakit-health /tmp/rdmakit-nccl");
        await onV1("setpriv --reuid=12345 --regid=12345 --clear-groups sh -c '" +
            "mkdir -m 0777 /tmp/rdmakit-health /tmp/rdmakit-nccl && " +
            "ln -s /etc/rdmakit-owned-health /tmp/rdmakit-health/dmesg.txt && ln -s /etc/rdmakit-owned-nccl /tmp/rdmakit-nccl/single-vnl1.log'");
        const out = path.join(runDir, "out-squat");
        const r = await validate(["vnl1"], out);
        for (const f of ["rdmakit-owned-health", "rdmakit-owned-nccl"]) {
            assert.ok(!fs.existsSync(path.join(runDir, "vnl1", "etc", f)), `root wrote through the planted link to /etc/${f}`);
        }
        // nothing of root's in any folder the user owns (only what they made themselves)
        const { stdout: foreign } = await onV1("for d in $(find /tmp -maxdepth 1 -user 12345); do find \"$d\" -mindepth 1 ! -user 12345; done");
        assert.equal(foreign, "", "the run wrote into a folder another user owns");
        // the nccl working folder in use is root's own and private
        assert.equal((await onV1("stat -c '%u %a' /tmp/rdmakit-nccl")).stdout.trim(), "0 700");
        // the run still did its work: v1's kernel log and single-node log came back
        assert.ok(fs.existsSync(path.join(out, "health", "vnl1", "dmesg.txt")), r.stdout + r.stderr);
        assert.ok(fs.existsSync(path.join(out, "nccl", "single-vnl1.log")), r.stdout + r.stderr);
        assert.equal(r.status, 2, r.stdout + r.stderr);
    });

    await t.test("v1 alone passes its preflight on itself; the nccl-tests plays then run from the controller, and only they", async () => {
        const out = path.join(runDir, "out-v1");
        const ready = () => fs.readdirSync(path.join(runDir, "vnl1", "opt", "rdmakit")).filter((n) => /^[0-9a-f]{64}$/.test(n))
            .map((n) => [n, fs.statSync(path.join(runDir, "vnl1", "opt", "rdmakit", n, ".ready")).mtimeMs]);
        const before = ready();
        const r = await validate(["vnl1"], out);
        const log = fs.readFileSync(path.join(out, "ansible-validate.log"), "utf8");
        assert.match(r.stdout, /\[validate\] RECAP \u2014 1\/1 hosts ok/, r.stdout + r.stderr);
        assert.equal(JSON.parse(fs.readFileSync(path.join(out, "preflight", "vnl1.json"), "utf8")).checks.every((c: { ok: boolean }) => c.ok), true);
        // the push run skipped the per-node plays' tasks (they ran on the node), ran the single-node one and fetched its
        // logs and the all-node ones (which fail the grade here: no mpirun on a test host)
        assert.match(log, /TASK \[nccl_validate : Fetch the single-node log\]/);
        assert.doesNotMatch(log, /TASK \[Capture nvidia-smi|TASK \[Check GPUs, RDMA devices/);
        assert.deepEqual(fs.readdirSync(path.join(out, "nccl")).sort(), ["all-fixed.log", "all-sweep.log", "single-vnl1.log"]);
        assert.equal(r.status, 2, "nccl-report: the fetched logs hold no nccl-tests output");
        // the second run found the bundle on v1: nothing sent or unpacked again
        assert.equal(before.length, 1);
        assert.deepEqual(ready(), before);
    });
});
