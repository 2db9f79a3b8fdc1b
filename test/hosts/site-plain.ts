// Real run of playbooks/site.yml (fabric roce, inbox rdma-core) on two Debian bookworm containers booted with
// systemd-nspawn (test/hosts/testhost.sh), reached over SSH with the inventory the Pulumi side renders: a roce spec
// whose hosts are the containers goes through parseClusterSpec -> planCluster -> inventoryHosts -> renderInventory
// with the plan's ansibleVars, exactly as RdmaCluster does (components/cluster.ts, provision/nodes.ts); the test only
// adds the container ports, rdmakit_require_hardware: false, the local CUDA repository, and the first host as
// bastion for both (the ProxyCommand path the cloud fabrics use). NCCL comes from a local
// stand-in of NVIDIA's CUDA repository (test/hosts/local-cuda-repo.sh) so the keyring, pin and hold logic runs.
// Every run is the component's node-local step (the default, cluster.ansible.mode: node-local) through the exact shell
// script the AnsiblePlaybook component runs: the bundle goes to each node through the bastion, each node runs
// site.yml on itself. Run 1 must succeed; run 2 must change nothing and send no bundle again;
// run 3 (hardware required) must fail with a summary naming the hosts and the task; then, on the plays every run has,
// a node made to fail is named with its task, and the retry its run record asks for visits that node alone.
// Run by test/ansible-hosts.test.ts, at the same time as the other host scenario.
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import { freePort } from "../fixtures/ports";
import * as path from "node:path";
import { promisify } from "node:util";
import { renderInventory, InventoryArgs } from "../../components/provision/inventory";
import { parseInventory } from "../../components/provision/inventory-read";
import { inventoryHosts } from "../../components/provision/nodes";
import { planCluster } from "../../components/plan";
import { parseClusterSpec } from "../../components/spec";
import { hashFolder, sha256 } from "../../components/provision/ansible";
import { nodeLocalSetup, nodeLog, runNodeLocal } from "../fixtures/node-local-run";
import { planRetry, readRunRecord, retryEnvironment } from "../../components/provision/resume";
import { serveKeyLocally } from "../../components/provision/keysocket";
import { parseAnsibleLog, parseRunOutcome, RETRY_NOTE } from "../../components/provision/summarise";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "..", "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
/** A variable value the progress lines must never show. */
const SECRET_VAR = "tok-4f1c9e-never-shown";

/** What the host tests need and this machine lacks (test/ansible-hosts.test.ts checks it first). */
export function missingTools(): string[] {
    const missing: string[] = [];
    if (process.getuid?.() !== 0) missing.push("root");
    for (const tool of ["debootstrap", "systemd-nspawn", "ansible-playbook", "ssh-keygen", "ssh-agent", "dpkg-deb", "dpkg-scanpackages", "gpg", "python3"]) {
        if (spawnSync("sh", ["-c", `command -v ${tool}`]).status !== 0) missing.push(tool);
    }
    return missing;
}

/** dpkg's view of a package inside a container tree: "<status> <version>" or undefined. */
function dpkgStatus(rootDir: string, pkg: string): string | undefined {
    const status = fs.readFileSync(path.join(rootDir, "var/lib/dpkg/status"), "utf8");
    const block = status.split("\n\n").find((b) => b.startsWith(`Package: ${pkg}\n`));
    if (!block) return undefined;
    const field = (name: string): string => (new RegExp(`^${name}: (.*)$`, "m").exec(block)?.[1] ?? "");
    return `${field("Status")} ${field("Version")}`;
}

/** site.yml on two plain nspawn hosts: succeeds, then changes nothing; then the failure, partial-failure and retry runs. */
export async function plainHostsScenario(t: TestContext): Promise<void> {
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, "run-"));
    const hosts = ["h1", "h2"];
    let http: ChildProcess | undefined;
    t.after(async () => {
        http?.kill("SIGTERM");
        await Promise.all(hosts.map((h) => run(HARNESS, ["down", runDir, h]).catch(() => undefined)));
        fs.rmSync(runDir, { recursive: true, force: true });
    });

    // Hosts, key, ports.
    const key = path.join(runDir, "id_ed25519");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-test", "-f", key]);
    await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
    const ports = [await freePort(), await freePort()];
    // Each container's sshd on its own loopback address: the spec rejects two hosts with one address.
    const addresses = hosts.map((_, i) => `127.0.0.${i + 1}`);
    await Promise.all(hosts.map((h, i) => run(HARNESS, ["up", CACHE, runDir, h, String(ports[i]), `${key}.pub`, addresses[i]])));

    // Local CUDA repository, served over HTTP on 127.0.0.1.
    const repoPort = await freePort();
    const repoBase = `http://127.0.0.1:${repoPort}/compute/cuda/repos`;
    await run(path.join(ROOT, "test", "hosts", "local-cuda-repo.sh"), [path.join(runDir, "cudarepo"), repoBase]);
    http = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(repoPort), "--directory", path.join(runDir, "cudarepo", "www")],
        { stdio: "ignore" });
    for (let i = 0; i < 50; i++) {
        if (await new Promise<boolean>((r) => { const s = net.connect(repoPort, "127.0.0.1", () => { s.end(); r(true); }); s.on("error", () => r(false)); })) break;
        await new Promise((r) => setTimeout(r, 100));
    }

    // The cluster as a user would write it: two 8-GPU hosts with two rails each, netdevs left to the role (resolved
    // from /sys/class/infiniband/<dev>/device/net/), inbox rdma-core (no DOCA repository here) hence DMA-BUF.
    const spec = parseClusterSpec({
        name: "rdmakit-test", fabric: "roce", ssh: { allowedCidrs: ["127.0.0.0/8"] },
        software: { ofedSource: "inbox", gpudirect: "dmabuf" },
        roce: {
            nicModel: "ConnectX-7",
            hosts: hosts.map((name, i) => ({ name, address: addresses[i], sshUser: "root", railNics: ["mlx5_0", "mlx5_1"],
                bootstrapNic: "eth0", gpu: { model: "H100", count: 8 } })),
            switches: [{ name: "leaf", os: "sonic", managementAddress: "127.0.0.10", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: ["Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"],
                speedGbps: 400, cableLengthM: 5 }],
        },
    });
    const plan = planCluster(spec);
    const hostPlans = plan.roce!.qos.hosts;
    const invHosts = inventoryHosts(plan, spec.roce!.hosts.map((h) => h.address)).map((h, i) => ({ ...h, port: ports[i] }));
    const vars = {
        ...plan.ansibleVars, rdmakit_require_hardware: false, cuda_repo_base: repoBase,
        cuda_repo_key_fingerprint: fs.readFileSync(path.join(runDir, "cudarepo", "key-fingerprint"), "utf8").trim(),
    };
    const invArgs: InventoryArgs = {
        hosts: invHosts,
        bastion: { address: addresses[0], user: "root", port: ports[0] },
        vars,
        knownHostsFile: path.join(runDir, "known_hosts"),
        privateKeyFile: key,
    };
    const inventoryFile = path.join(runDir, "inventory.yml");
    fs.writeFileSync(inventoryFile, renderInventory(invArgs));
    // What Ansible reads is what the plan decided: group vars = ansibleVars (+ the test's three), host vars = each
    // host's roce_host_* set and its NCCL environment.
    const inv = parseInventory(fs.readFileSync(inventoryFile, "utf8")) as any;
    for (const [k, v] of Object.entries(plan.ansibleVars)) assert.deepEqual(inv.all.vars[k], v, `group var ${k}`);
    hostPlans.forEach((hp, i) => {
        for (const [k, v] of Object.entries(hp.vars)) assert.deepEqual(inv.all.hosts[hosts[i]][k], v, `${hosts[i]}: host var ${k}`);
        assert.equal(inv.all.hosts[hosts[i]].ansible_host, addresses[i]);
    });
    // The component's node-local step (components/provision/ansible.ts NODE_LOCAL_RUN_SCRIPT) under the run's own
    // agent: the key from this process's socket into the agent (no key file anywhere, so the bastion hop authenticates
    // through the agent too), the bundle sent to each node, site.yml run there with `-c local`, summary on failure.
    const { privateKeyFile: _unused, ...agentArgs } = invArgs;
    const agentInventory = renderInventory(agentArgs);
    const outDir = path.join(runDir, "out");
    const setup = nodeLocalSetup(outDir);
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    const runTmp = path.join(runDir, "run-tmp");
    fs.mkdirSync(runTmp);
    t.after(() => served.close());
    // the run's own temporary folders, so the check below sees this run's files and no one else's
    const componentRun = (extraVars: Record<string, unknown>, log: string, more: NodeJS.ProcessEnv = {}) =>
        runNodeLocal(setup, { inventory: agentInventory, extraVars, log, key: served.env, env: { TMPDIR: runTmp, ...more } });
    const bundleDir = (h: string) => path.join(runDir, h, "opt", "rdmakit", setup.bundle.digest);

    await t.test("run 1 succeeds on every host and reports the missing hardware", async () => {
        const log = path.join(outDir, "ansible-site-run1.log");
        const r = await componentRun({}, log);
        const output = hosts.map((h) => nodeLog(path.join(runDir, h))).join("\n");
        fs.writeFileSync(path.join(CACHE, "last-run1.log"), output);
        const recap = parseAnsibleLog(fs.readFileSync(log, "utf8")).recap;
        assert.equal(r.status, 0, `run 1 failed (node logs: .testhosts/last-run1.log):\n${r.stderr}\n${output.slice(-3000)}`);
        assert.deepEqual(recap.map((x) => [x.host, x.failed, x.unreachable]), [["h1", 0, 0], ["h2", 0, 0]]);
        assert.ok(recap.every((x) => x.changed > 0), "a first run on fresh hosts must change something");
        for (const needle of [
            "node_prep: h1 runs in a container",
            "ofed: h2 has 0 RDMA device(s) in /sys/class/infiniband, expected 2",
            "nvidia_driver: h1 has no NVIDIA GPU on the PCI bus",
            "gpudirect: h2: DMA-BUF GPUDirect is not usable yet; missing: NVIDIA open kernel modules",
            // the toolkit directory the nccl role installed (cuda-toolkit-13-0 ships version.json, not nvcc, here)
            "nccl_tests: h1: no CUDA toolkit (/usr/local/cuda-13.0/bin/nvcc absent)",
            "roce_host: h2: missing mlx5_0, mlx5_1 (/sys/class/infiniband",
            "rdmakit software on h1: ofed distro rdma-core (installed); driver none (not installed (no GPU)",
            "nccl 2.28.9-1 (installed)",
        ]) assert.ok(output.includes(needle), `run 1 output lacks "${needle}"`);
        // each node ran the bundle's own ansible-core (the 2.15 set, for its Python 3.11) from /opt/rdmakit/<digest>/;
        // the image's Python got nothing: no Ansible, no pip, no venv
        for (const h of hosts) {
            assert.equal(fs.readFileSync(path.join(bundleDir(h), "set"), "utf8"), "core2.15\n", h);
            assert.equal(fs.readFileSync(path.join(bundleDir(h), "python"), "utf8"), "/usr/bin/python3\n", h);
            for (const pkg of ["ansible", "ansible-core", "python3-pip", "python3-venv"]) assert.equal(dpkgStatus(path.join(runDir, h), pkg), undefined, `${h}: ${pkg} installed`);
            assert.ok(!fs.existsSync(path.join(runDir, h, "usr/lib/python3/dist-packages/ansible")), `${h}: Ansible in the image's Python`);
        }
    });

    await t.test("packages, pins, holds and persisted configs are in place", () => {
        for (const h of hosts) {
            const root = path.join(runDir, h);
            for (const pkg of ["rdma-core", "ibverbs-utils", "perftest", "infiniband-diags", "openmpi-bin", "libopenmpi-dev"]) {
                assert.match(dpkgStatus(root, pkg) ?? "absent", /^install ok installed /, `${h}: ${pkg}`);
            }
            // The plan's pair for a plain host: the pin keeps 2.28.9-1+cuda13.0 although the repository also offers
            // 2.30.4-1+cuda13.2; both packages are held.
            assert.equal(dpkgStatus(root, "libnccl2"), "hold ok installed 2.28.9-1+cuda13.0");
            assert.equal(dpkgStatus(root, "libnccl-dev"), "hold ok installed 2.28.9-1+cuda13.0");
            assert.match(dpkgStatus(root, "cuda-toolkit-13-0") ?? "absent", /^install ok installed 13\.0\.2-1$/);
            assert.match(fs.readFileSync(path.join(root, "etc/apt/preferences.d/rdmakit-nccl"), "utf8"),
                /Package: libnccl2 libnccl-dev\nPin: version 2\.28\.9-1\+cuda13\.0\nPin-Priority: 1001/);
            // the run reports what it did per component, and leaves the apt timers as it found them
            const sw = JSON.parse(fs.readFileSync(path.join(root, "etc/rdmakit/software.json"), "utf8"));
            assert.deepEqual(sw.nccl, { version: "2.28.9-1", action: "installed" });
            assert.deepEqual(sw.driver, { version: "none", action: "not installed (no GPU)" });
            assert.ok(!fs.existsSync(path.join(root, "etc/systemd/system/apt-daily.timer")), `${h}: apt-daily.timer left masked`);
            // The persisted QoS values are the plan's for this host (qos.ts RoceHostVars), nothing re-derived.
            const hv = hostPlans[hosts.indexOf(h)].vars;
            const qos = fs.readFileSync(path.join(root, "etc/rdmakit/roce-qos.env"), "utf8").split("\n");
            for (const line of [`RDMAKIT_ROCE_DEVICES="${hv.roce_host_rdma_devices.join(" ")}"`, 'RDMAKIT_ROCE_INTERFACES=""',
                `RDMAKIT_ROCE_TRUST=${hv.roce_host_trust}`, `RDMAKIT_ROCE_DSCP2PRIO="${hv.roce_host_dscp},${hv.roce_host_priority} ${hv.roce_host_cnp_dscp},${hv.roce_host_cnp_priority}"`,
                `RDMAKIT_ROCE_PFC_VECTOR=${hv.roce_host_pfc_vector}`, "RDMAKIT_ROCE_GLOBAL_PAUSE=off", `RDMAKIT_ROCE_CC_PRIO_MASK=${hv.roce_host_cc_prio_mask}`,
                `RDMAKIT_ROCE_CNP_DSCP=${hv.roce_host_cnp_dscp}`, `RDMAKIT_ROCE_CNP_PRIORITY=${hv.roce_host_cnp_priority}`, `RDMAKIT_ROCE_TOS=${hv.roce_host_tos}`,
                `RDMAKIT_ROCE_MODE="${hv.roce_host_roce_mode}"`, `RDMAKIT_ROCE_MTU=${hv.roce_host_mtu}`, `RDMAKIT_ROCE_CABLE_LEN=${hv.roce_host_cable_length_m}`,
                `RDMAKIT_ROCE_LOSSY_TUNING=${hv.roce_host_lossy_tuning ? 1 : 0}`, `RDMAKIT_ROCE_GID_INDEX=${hv.roce_host_gid_index}`]) {
                assert.ok(qos.includes(line), `${h}: roce-qos.env lacks ${line}`);
            }
            // The default lossless plan, spelled out once: DSCP 26 -> priority 3 with PFC, ToS 106, CNP 48 -> 6.
            for (const line of ['RDMAKIT_ROCE_DSCP2PRIO="26,3 48,6"', "RDMAKIT_ROCE_PFC_VECTOR=0,0,0,1,0,0,0,0", "RDMAKIT_ROCE_TOS=106", "RDMAKIT_ROCE_CC_PRIO_MASK=8"]) {
                assert.ok(qos.includes(line), `${h}: roce-qos.env lacks ${line}`);
            }
            // /etc/nccl.conf: this host's NCCL environment from the plan, one KEY=value per line.
            const ncclEnv = hostPlans[hosts.indexOf(h)].ncclEnv;
            const ncclConf = fs.readFileSync(path.join(root, "etc/nccl.conf"), "utf8").split("\n").filter((l) => l && !l.startsWith("#"));
            assert.deepEqual(ncclConf, Object.keys(ncclEnv).sort().map((k) => `${k}=${ncclEnv[k]}`));
            assert.ok(ncclConf.includes("NCCL_IB_TC=106") && ncclConf.includes("NCCL_IB_HCA==mlx5_0:1,mlx5_1:1"), ncclConf.join("\n"));
            assert.ok(fs.lstatSync(path.join(root, "etc/systemd/system/multi-user.target.wants/rdmakit-roce-qos.service")).isSymbolicLink(),
                `${h}: rdmakit-roce-qos.service not enabled`);
            assert.equal(fs.statSync(path.join(root, "usr/local/sbin/rdmakit-roce-qos")).mode & 0o777, 0o755);
            assert.match(fs.readFileSync(path.join(root, "etc/security/limits.d/90-rdmakit.conf"), "utf8"), /\*\s+hard\s+memlock\s+unlimited/);
            assert.match(fs.readFileSync(path.join(root, "etc/systemd/system.conf.d/90-rdmakit-limits.conf"), "utf8"), /DefaultLimitMEMLOCK=infinity/);
            assert.match(fs.readFileSync(path.join(root, "etc/sysctl.d/90-rdmakit.conf"), "utf8"), /net\.ipv4\.neigh\.default\.gc_thresh3\s*=\s*16384/);
            assert.ok(!fs.existsSync(path.join(root, "etc/modules-load.d/rdmakit-nvidia-peermem.conf")), "dmabuf must not autoload peermem");
        }
    });

    await t.test("run 2 (the component's script) reports changed=0 on every host and sends no bundle again", async () => {
        const log = path.join(outDir, "ansible-site.log");
        const ready = hosts.map((h) => fs.statSync(path.join(bundleDir(h), ".ready")).mtimeMs);
        const r = await componentRun({ rdmakit_test_token: SECRET_VAR }, log);
        const output = fs.readFileSync(log, "utf8");
        fs.writeFileSync(path.join(CACHE, "last-run2.log"), output);
        assert.equal(r.status, 0, `run 2 failed: ${r.stderr}\n${output.slice(-3000)}`);
        const recap = parseAnsibleLog(output).recap;
        assert.deepEqual(recap.map((x) => [x.host, x.changed, x.failed, x.unreachable]), [["h1", 0, 0, 0], ["h2", 0, 0, 0]],
            `second run changed something:\n${output.split("\n").filter((l) => /^(TASK|changed)/.test(l)).join("\n")}`);
        // stdout is what `pulumi up` streams: one short line per play and task with host counts, then the outcome
        const lines = r.stdout.trimEnd().split("\n");
        for (const line of ["[site] PLAY Install the RDMA GPU node stack \u2014 2 hosts", "[site] TASK nccl : Hold libnccl2 and libnccl-dev \u2014 2/2 ok",
            "[site] RECAP \u2014 2/2 hosts ok", 'rdmakit-provision: {"ok":true,"hosts":2,"failed":[]}']) {
            assert.ok(lines.includes(line), `stdout lacks "${line}":\n${r.stdout}`);
        }
        assert.ok(lines.every((l) => l.startsWith("[site] ") || l.startsWith("rdmakit-provision: ")), r.stdout);
        // nothing secret: not the key, not a variable's value
        assert.ok(!r.stdout.includes("PRIVATE KEY") && !r.stdout.includes(SECRET_VAR), r.stdout);
        assert.equal(r.stderr, "");
        // the aggregated lines end with the slowest nodes
        assert.ok(lines.some((l) => /^\[site\] slowest nodes: h[12] \d+ s, h[12] \d+ s \(median \d+ s of 2\)$/.test(l)), r.stdout);
        // the bundle of this digest stayed as run 1 left it: nothing was sent again
        assert.deepEqual(hosts.map((h) => fs.statSync(path.join(bundleDir(h), ".ready")).mtimeMs), ready);
    });

    await t.test("run 3 with hardware required fails and names the hosts and the task", async () => {
        const log = path.join(outDir, "ansible-site-hw.log");
        const r = await componentRun({ rdmakit_require_hardware: true }, log);
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, new RegExp(`^ansible-playbook failed on 2 of 2 hosts \\(full log: ${log.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\):\n` +
            '  (h1, h2|h2, h1): failed at task "node_prep : Require a VM or bare-metal node for the kernel steps": node_prep: <host> runs in a container'));
        assert.ok(!r.stderr.includes("PRIVATE KEY") && !r.stdout.includes("PRIVATE KEY"));
        // each failed node's own log came back to out/<stack>/nodes/<node>.log
        for (const h of hosts) assert.match(fs.readFileSync(path.join(outDir, "nodes", `${h}.log`), "utf8"), /TASK \[node_prep : Require a VM or bare-metal node for the kernel steps\]/);
        // No key file, nor the runs' temporary folders, is left behind (the agent's own socket folder goes with it).
        const keyBody = fs.readFileSync(key, "utf8").split("\n")[2];
        const left = fs.readdirSync(runTmp, { recursive: true, withFileTypes: true }).filter((e) => e.isFile())
            .filter((e) => fs.readFileSync(path.join(e.parentPath ?? e.path, e.name), "utf8").includes(keyBody));
        assert.deepEqual(left, []);
        assert.deepEqual(fs.readdirSync(runTmp).filter((n) => n.startsWith("tmp.")), []);
    });
    // Partial failure and resume, on the plays every run has (tag "always": the variable checks, the connection
    // wait, the software report), so the three runs below take seconds: h2 is made to fail the report's first
    // write, then fixed. ANSIBLE_RUN_TAGS selects no role (ansible-core config TAGS_RUN).
    // The record the run leaves (components/provision/resume.ts) and the digests a program would compare it with.
    const record = path.join(outDir, "outcome-software.json");
    const digests = { inventory: sha256(agentInventory), vars: sha256(JSON.stringify({})), playbooks: hashFolder(path.join(ROOT, "playbooks")) };
    const narrow = { ANSIBLE_RUN_TAGS: "rdmakit_none", RDMAKIT_RUN_RECORD: record, RDMAKIT_PLAYBOOKS_HASH: digests.playbooks };
    const h2Dir = path.join(runDir, "h2", "etc", "rdmakit");
    await t.test("a node that fails a task fails the step, named with its task; the other node completes", async () => {
        fs.rmSync(h2Dir, { recursive: true, force: true });
        fs.writeFileSync(h2Dir, "not a folder\n");
        const log = path.join(outDir, "ansible-site-partial.log");
        const r = await componentRun({}, log, narrow);
        assert.equal(r.status, 2, `${r.stderr}\n${r.stdout}`);
        // the error text is the summary: the failed host, its task and the first line of why
        assert.match(r.stderr, /^ansible-playbook failed on 1 of 2 hosts \(full log: .*ansible-site-partial\.log\):\n {2}h2: failed at task "Create \/etc\/rdmakit": /);
        // the summary's two lines, then the note that the next `pulumi up` retries h2
        assert.deepEqual(r.stderr.trimEnd().split("\n").slice(2), [RETRY_NOTE], r.stderr);
        assert.deepEqual(parseRunOutcome(r.stdout), { ok: false, hosts: 2, failed: [{ host: "h2", task: "Create /etc/rdmakit", kind: "failed" }] });
        assert.ok(r.stdout.includes("[site] TASK Create /etc/rdmakit \u2014 1/2 ok, 1 failed"), r.stdout);
        const recap = parseAnsibleLog(fs.readFileSync(log, "utf8")).recap;
        assert.deepEqual(recap.map((x) => [x.host, x.failed]), [["h1", 0], ["h2", 1]]);
        assert.deepEqual(readRunRecord(record)?.failed, ["h2"]);
        // the same run with cluster.ansible.maxFailPercentage 50: the step passes and lists h2 (the summariser on this log)
        const tolerated = spawnSync(process.execPath, [setup.env.RDMAKIT_ANSIBLE_SUMMARISER, log, "2", "50"], { encoding: "utf8" });
        assert.equal(tolerated.status, 0, tolerated.stderr);
        assert.deepEqual(parseRunOutcome(tolerated.stdout)?.failed, [{ host: "h2", task: "Create /etc/rdmakit", kind: "failed" }]);
        assert.equal(tolerated.stderr, "");
        assert.equal(spawnSync(process.execPath, [setup.env.RDMAKIT_ANSIBLE_SUMMARISER, log, "2", "49"], { encoding: "utf8" }).status, 2);
    });

    await t.test("fixed and run again: the retry the record asks for visits only the failed node, which passes", async () => {
        fs.rmSync(h2Dir, { force: true });
        // what the program makes of the failed run's record: attempt 1 on h2, of the step's 2 hosts
        const retry = planRetry(readRunRecord(record), digests);
        assert.deepEqual(retry, { attempt: 1, hosts: 2, nodes: ["h2"] });
        const log = path.join(outDir, "ansible-site-resume.log");
        const r = await componentRun({}, log, { ...narrow, ...retryEnvironment(retry) });
        const output = fs.readFileSync(log, "utf8");
        assert.equal(r.status, 0, `${r.stderr}\n${output.slice(-2000)}`);
        assert.deepEqual(parseRunOutcome(r.stdout), { ok: true, hosts: 2, failed: [], attempt: 1 });
        const recap = parseAnsibleLog(output).recap;
        assert.deepEqual(recap.map((x) => [x.host, x.failed]), [["h2", 0]], "the done node h1 is not visited again");
        assert.ok(recap[0].changed > 0, "h2 was retried: its report is written now");
        assert.ok(fs.statSync(h2Dir).isDirectory());
        // healed: the next program run keeps the same retry inputs (the state's), so nothing runs again
        assert.deepEqual(planRetry(readRunRecord(record), digests), retry);
    });
}
