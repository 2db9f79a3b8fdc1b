// site.yml on test hosts that carry the published state of the two images the kit boots by default
// (test/hosts/image-state.sh): a DLAMI-like host (driver 595.91.07 stand-in, CUDA 12.8-13.2 with a per-CUDA NCCL, EFA
// installer 1.50.0 with aws-ofi-nccl's ld.so.conf entry, Fabric Manager 595.91.07 held) planned as a p5.48xlarge, and an
// ubuntu-hpc-like host (DOCA ofed_info, driver 580.126.16 through the pinning package, Fabric Manager and libnccl2
// 2.30.4-1+cuda13.0 held, CUDA 13.0, sku-customizations.service rewriting /etc/nccl.conf at boot) planned as an
// ND H100 v5. Both boot at once (nspawn, test/hosts/testhost.sh) and run site.yml at once, node-local (the kit's
// default: the bundle goes to each host, which runs the roles on itself), cut off from any Debian mirror. What must hold: the image's stack is
// reused and untouched (no downgrade, no removal, no second driver), the run reports each component as reused, the kit's
// NCCL settings survive a reboot of the host, and the second run reports changed=0. The package sets the roles would
// install on a plain host are resolved with `apt-get install -s` against the local repository with the vendors' names.
// Run by test/ansible-hosts.test.ts, at the same time as the other host scenario.
import type { TestContext } from "node:test";
import assert from "node:assert/strict";
import { ChildProcess, execFile, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as path from "node:path";
import { pathToFileURL } from "node:url";
import { promisify } from "node:util";
import { stringify } from "yaml";
import { freePort } from "../fixtures/ports";
import { renderInventory } from "../../components/provision/inventory";
import { inventoryHosts } from "../../components/provision/nodes";
import { planCluster } from "../../components/plan";
import { parseClusterSpec } from "../../components/spec";
import { parseAnsibleLog } from "../../components/provision/summarise";
import { serveKeyLocally } from "../../components/provision/keysocket";
import { nodeLocalSetup, nodeLog, runNodeLocal } from "../fixtures/node-local-run";

const run = promisify(execFile);
const ROOT = path.resolve(__dirname, "..", "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
const KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5Zm9ycmRtYWtpdHRlc3RzMDEyMzQ1Njc4OQ rdmakit-test";

function ansiblePlaybook(args: string[], env: NodeJS.ProcessEnv): Promise<{ rc: number; output: string }> {
    return new Promise((resolve) => {
        const child = spawn("ansible-playbook", args, { cwd: ROOT, env });
        let output = "";
        child.stdout.on("data", (d) => { output += d; });
        child.stderr.on("data", (d) => { output += d; });
        child.on("close", (rc) => resolve({ rc: rc ?? -1, output }));
    });
}

/** "<selection> <status> <version>" of every package dpkg knows in a tree, by name. */
function dpkgState(rootDir: string): Map<string, string> {
    const out = new Map<string, string>();
    for (const block of fs.readFileSync(path.join(rootDir, "var/lib/dpkg/status"), "utf8").split("\n\n")) {
        const field = (name: string): string => (new RegExp(`^${name}: (.*)$`, "m").exec(block)?.[1] ?? "");
        if (field("Package")) out.set(field("Package"), `${field("Status")} ${field("Version")}`);
    }
    return out;
}

/** A path inside a host's tree with every symlink followed as the host sees it (absolute targets stay in the tree). */
function inTree(root: string, p: string): string {
    let parts = p.split("/").filter(Boolean);
    const done: string[] = [];
    for (let hops = 0; parts.length > 0 && hops < 40; hops++) {
        const next = parts.shift()!;
        const here = path.join(root, ...done, next);
        const st = fs.lstatSync(here, { throwIfNoEntry: false });
        if (!st?.isSymbolicLink()) { done.push(next); continue; }
        const target = fs.readlinkSync(here);
        parts = [...target.split("/").filter(Boolean), ...parts];
        if (target.startsWith("/")) done.length = 0;
    }
    return "/" + done.join("/");
}

const STACK_PACKAGES = ["nvidia-open", "nvidia-driver-pinning-580.126.16", "nvidia-fabricmanager", "libnvidia-nscq", "libnccl2", "libnccl-dev", "cuda-toolkit-13-0"];

/** site.yml on DLAMI-like and ubuntu-hpc-like hosts: reuses the image's stack, survives a reboot, then changes nothing. */
export async function imageHostsScenario(t: TestContext): Promise<void> {
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, "img-"));
    const hosts = [
        { name: "dlami", kind: "dlami", address: "127.0.0.21", port: await freePort() },
        { name: "hpc", kind: "ubuntu-hpc", address: "127.0.0.22", port: await freePort() },
    ];
    let http: ChildProcess | undefined;
    t.after(async () => {
        http?.kill("SIGTERM");
        await Promise.all(hosts.map((h) => run(HARNESS, ["down", runDir, h.name]).catch(() => undefined)));
        fs.rmSync(runDir, { recursive: true, force: true });
    });

    const key = path.join(runDir, "id_ed25519");
    await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-test", "-f", key]);
    await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
    const repoPort = await freePort();
    const repoBase = `http://127.0.0.1:${repoPort}/compute/cuda/repos`;
    const repoDir = path.join(runDir, "cudarepo");
    await run(path.join(ROOT, "test", "hosts", "local-cuda-repo.sh"), [repoDir, repoBase]);
    http = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(repoPort), "--directory", path.join(repoDir, "www")], { stdio: "ignore" });
    for (let i = 0; i < 50; i++) {
        if (await new Promise<boolean>((r) => { const s = net.connect(repoPort, "127.0.0.1", () => { s.end(); r(true); }); s.on("error", () => r(false)); })) break;
        await new Promise((r) => setTimeout(r, 100));
    }
    await Promise.all(hosts.map((h) => run(HARNESS, ["up", CACHE, runDir, h.name, String(h.port), `${key}.pub`, h.address],
        { env: { ...process.env, RDMAKIT_TESTHOST_PREPARE: `${path.join(ROOT, "test", "hosts", "image-state.sh")} ${repoDir} ${h.kind}` } })));
    // Cut off from any package mirror: the hosts have no Debian source left, and they have no pip, no
    // ensurepip (so the stdlib's venv cannot make one) and no Ansible; what the node-local run needs comes in the
    // kit's bundle. (The only repository left is the local stand-in of NVIDIA's, which the plan's cuda_repo_base names.)
    // What the two images carry and a minbase tree lacks, installed from the mirror here before the hosts are cut off:
    // python3-apt, which Ansible's apt module needs on the node in either mode (Ubuntu's cloud images ship
    // unattended-upgrades, which depends on it), and node_prep's base packages (playbooks/roles/node_prep/vars/
    // Debian-12.yml: pciutils, kmod, ethtool, iproute2, numactl, ca-certificates, gnupg), which both GPU images have.
    await Promise.all(hosts.map((h) => run("chroot", [path.join(runDir, h.name), "sh", "-c",
        "apt-get update -q >/dev/null && apt-get install -y -q --no-install-recommends python3-apt pciutils kmod ethtool iproute2 numactl ca-certificates gnupg >/dev/null"],
    { maxBuffer: 1 << 24 })));
    for (const h of hosts) {
        const tree = path.join(runDir, h.name);
        fs.rmSync(path.join(tree, "etc/apt/sources.list.d/debian.sources"), { force: true });
        // no Debian source at all (a dead one fails every apt cache refresh), only the vendor repository stand-in
        fs.writeFileSync(path.join(tree, "etc/apt/sources.list"), "");
        for (const m of ["usr/lib/python3/dist-packages/pip", "usr/lib/python3.11/ensurepip", "usr/lib/python3/dist-packages/ansible"]) {
            assert.ok(!fs.existsSync(path.join(tree, m)), `${h.name}: ${m} is there`);
        }
    }
    const before = new Map(hosts.map((h) => [h.name, dpkgState(path.join(runDir, h.name))]));

    // The clusters as users write them, defaults only: the plan reads each image's manifest.
    const common = { name: "img", nodes: 1, ssh: { allowedCidrs: ["127.0.0.0/8"], publicKey: KEY } };
    const specs = {
        dlami: { ...common, fabric: "aws-efa", aws: { region: "us-east-1", availabilityZone: "us-east-1a", instanceType: "p5.48xlarge" } },
        hpc: { ...common, fabric: "azure-ib", azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" } },
    };
    const plans = { dlami: planCluster(parseClusterSpec(specs.dlami)), hpc: planCluster(parseClusterSpec(specs.hpc)) };
    for (const p of Object.values(plans)) {
        for (const c of ["driver", "cuda", "nccl", "ncclTests"]) assert.equal(p.software.rows.find((r) => r.component === c)?.decision, "reuse", c);
    }
    const fingerprint = fs.readFileSync(path.join(repoDir, "key-fingerprint"), "utf8").trim();
    const invArgs = hosts.map((h) => {
        const plan = plans[h.name as keyof typeof plans];
        return {
            hosts: inventoryHosts(plan, [h.address]).map((x) => ({ ...x, name: h.name, user: "root", port: h.port })),
            vars: { ...plan.ansibleVars, rdmakit_require_hardware: false, cuda_repo_base: repoBase, cuda_repo_key_fingerprint: fingerprint },
            knownHostsFile: path.join(runDir, "known_hosts"),
        };
    });
    // with the key file (the push-mode runs below and rdmakit check), and without (the node-local runs: the agent)
    const inventories = hosts.map((h, i) => {
        const file = path.join(runDir, `${h.name}.yml`);
        fs.writeFileSync(file, renderInventory({ ...invArgs[i], privateKeyFile: key }));
        return file;
    });
    const env = { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1", ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(runDir, "cp") };
    // site.yml as the component runs it, node-local (the default): one step per cluster, both at once
    const setup = nodeLocalSetup(path.join(runDir, "out"));
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    t.after(() => served.close());
    const agentInventories = invArgs.map((a) => renderInventory(a));
    const siteRun = async (i: number, label: string, extraVars: Record<string, unknown> = {}, more: NodeJS.ProcessEnv = {}) => {
        const log = path.join(runDir, "out", `ansible-${label}-${hosts[i].name}.log`);
        const r = await runNodeLocal(setup, { inventory: agentInventories[i], extraVars, log, key: served.env, name: hosts[i].name, env: more });
        const output = nodeLog(path.join(runDir, hosts[i].name));
        fs.writeFileSync(path.join(CACHE, `last-${label}-${hosts[i].name}.log`), output);
        assert.equal(r.status, 0, `${hosts[i].name} ${label} failed (log .testhosts/last-${label}-${hosts[i].name}.log):\n${r.stderr}\n${output.slice(-3000)}`);
        return { rc: r.status, output, recap: parseAnsibleLog(fs.readFileSync(log, "utf8")).recap };
    };
    const siteOnAll = (label: string) => Promise.all(hosts.map((_, i) => siteRun(i, label)));

    await t.test("a run that fails after masking the apt timers leaves a record of what the kit masked", async () => {
        // a package that does not exist fails node_prep's install, after the apt timers were masked: the run stops
        // there, before the play that unmasks them (a killed or failed run, as on a real node)
        const r = await ansiblePlaybook(["-i", inventories[1], "playbooks/site.yml", "-e", JSON.stringify({ node_prep_extra_packages: ["rdmakit-no-such-package"] })], env);
        fs.writeFileSync(path.join(CACHE, "last-image-failed-hpc.log"), r.output);
        assert.notEqual(r.rc, 0, r.output.slice(-3000));
        assert.match(r.output, /rdmakit-no-such-package/);
        const hpc = path.join(runDir, "hpc");
        assert.equal(fs.readlinkSync(path.join(hpc, "etc/systemd/system/apt-daily.timer")), "/dev/null", "the failed run did not mask apt-daily.timer");
        assert.ok(JSON.parse(fs.readFileSync(path.join(hpc, "etc/rdmakit/masked.json"), "utf8")).units.includes("apt-daily.timer"));
    });

    await t.test("run 1 reuses the image's stack and reports it", async () => {
        const [dl, hpc] = await siteOnAll("image-run1");
        assert.ok(dl.output.includes("rdmakit software on dlami: driver 595.91.07 (reused); fabricManager 595.91.07 (reused); efa 1.50.0 (reused); cuda 13.2 (reused); nccl 2.27.7 (reused)"), dl.output.slice(-3000));
        assert.ok(hpc.output.includes("rdmakit software on hpc: ofed OFED-internal-25.10-1.7.1: (reused); driver 580.126.16 (reused); fabricManager 580.126.16 (reused)"), hpc.output.slice(-3000));
        assert.match(hpc.output, /cuda 13\.0 \(reused\); nccl 2\.30\.4-1 \(reused\)/);
        // the image's nccl-tests, found through the libmpi its all_reduce_perf links: nothing built, no git checkout
        assert.match(hpc.output, /ncclTests image build at \/opt\/nccl-tests\/build \(reused\); mpi \/opt\/hpcx-v2\.25\.1-gcc-doca_ofed-ubuntu22\.04-cuda13-x86_64\/ompi \(reused\)/);
        assert.match(dl.output, /ncclTests image build at \/usr\/local\/cuda-13\.2\/efa\/test-cuda-13\.2 \(reused\); mpi \/opt\/amazon\/openmpi \(reused\)/);
        const HPCX = "/opt/hpcx-v2.25.1-gcc-doca_ofed-ubuntu22.04-cuda13-x86_64";
        // validation runs <ncclTestsDir>/all_reduce_perf with <mpiHome>/bin/mpirun: the image's build, and a wrapper
        // that sets up the environment the build needs and then runs the image's mpirun (whose stand-in prints the
        // environment and arguments it got): HPC-X's (hpcx-init.sh, as `module load mpi/hpcx`) on hpc; on the
        // DLAMI the toolkit's NCCL folder first on LD_LIBRARY_PATH, as AWS's nccl-tests-ami.sbatch sets it
        const launched: Array<[string, string, RegExp]> = [
            ["hpc", "/opt/nccl-tests/build", new RegExp(`mpirun \\(${HPCX}/ompi/bin/mpirun\\) OPAL_PREFIX=${HPCX}/ompi LD_LIBRARY_PATH=${HPCX}/ompi/lib:${HPCX}/ucx/lib args: -x LD_LIBRARY_PATH -x OPAL_PREFIX -np 2 probe$`, "m")],
            ["dlami", "/usr/local/cuda-13.2/efa/test-cuda-13.2", /mpirun \(\/opt\/amazon\/openmpi\/bin\/mpirun\) OPAL_PREFIX= LD_LIBRARY_PATH=\/usr\/local\/cuda-13\.2\/lib args: -x LD_LIBRARY_PATH -np 2 probe$/m],
        ];
        for (const [h, bin, env] of launched) {
            const root = path.join(runDir, h);
            assert.equal(inTree(root, plans.hpc.validation.ncclTestsDir), bin, h);
            assert.equal(inTree(root, plans.hpc.validation.mpiHome), "/opt/rdmakit/nccl-tests-launch", h);
            const mpirun = spawnSync("chroot", [root, "env", "-i", "PATH=/usr/bin:/bin", `${plans.hpc.validation.mpiHome}/bin/mpirun`, "-np", "2", "probe"], { encoding: "utf8" });
            assert.match(mpirun.stderr, env, `${h}: ${mpirun.stderr}`);
            assert.ok(!fs.existsSync(path.join(root, "opt/rdmakit/nccl-tests-2.19.6")), `${h}: nccl-tests built beside the image's`);
        }
        // which libnccl the DLAMI's build loads: none through the loader as it is, the toolkit's with its folder
        const ldd = spawnSync("chroot", [path.join(runDir, "dlami"), "ldd", "/usr/local/cuda-13.2/efa/test-cuda-13.2/all_reduce_perf"], { encoding: "utf8" });
        assert.match(ldd.stdout, /libnccl\.so\.2 => not found/);
        assert.equal(JSON.parse(fs.readFileSync(path.join(runDir, "dlami", "etc/rdmakit/software.json"), "utf8")).ncclTests.libnccl,
            "/usr/local/cuda-13.2/lib/libnccl.so.2.27.7");
    });

    await t.test("the image's packages and files are untouched: no downgrade, no removal, no second driver", () => {
        for (const h of hosts) {
            const root = path.join(runDir, h.name);
            const after = dpkgState(root);
            for (const pkg of STACK_PACKAGES) assert.equal(after.get(pkg), before.get(h.name)!.get(pkg), `${h.name}: ${pkg} moved`);
            // nothing of another driver or NCCL was added beside the image's
            for (const pkg of ["nvidia-open", "nvidia-driver-pinning-580.126.16", "cuda-toolkit-13-0", "libnccl2"]) {
                if (!before.get(h.name)!.has(pkg)) assert.equal(after.get(pkg), undefined, `${h.name}: ${pkg} installed beside the image's stack`);
            }
            assert.ok(!fs.existsSync(path.join(root, "etc/apt/preferences.d/rdmakit-nccl")), `${h.name}: an NCCL pin was written over the image's NCCL`);
        }
        const hpc = path.join(runDir, "hpc");
        assert.equal(dpkgState(hpc).get("libnccl2"), "hold ok installed 2.30.4-1+cuda13.0");
        assert.ok(fs.existsSync(path.join(hpc, "usr/bin/ofed_info")) && fs.existsSync(path.join(hpc, "opt/nccl-tests/build/all_reduce_perf")), "image files removed");
        assert.ok(!fs.existsSync(path.join(hpc, "etc/apt/sources.list.d/rdmakit-doca.list")), "DOCA repository added over the image's OFED");
        // DMA-BUF mode (the plan's default with the open modules) leaves the image's own peermem autoload alone
        assert.equal(fs.readFileSync(path.join(hpc, "etc/modules-load.d/nvidia-peermem.conf"), "utf8"), "nvidia_peermem\n");
        const dl = path.join(runDir, "dlami");
        assert.match(fs.readFileSync(path.join(dl, "opt/amazon/efa_installed_packages"), "utf8"), /# EFA installer version: 1\.50\.0/);
        assert.ok(!fs.existsSync(path.join(dl, "var/cache/rdmakit/efa")), "the EFA installer was downloaded over the image's");
        assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dl, "etc/rdmakit/software.json"), "utf8")).efa, { version: "1.50.0", action: "reused" });
    });

    await t.test("the kit's NCCL settings survive a reboot that runs the image's sku-customizations.service", async () => {
        const kit = fs.readFileSync(path.join(runDir, "hpc", "etc/rdmakit/nccl.conf"), "utf8");
        assert.match(kit, /^NCCL_IB_HCA=mlx5_ib$/m);
        await Promise.all(hosts.map((h) => run(HARNESS, ["restart", runDir, h.name, String(h.port), h.address])));
        // sku-customizations.service ran at this boot (the image's content is in its log of units) and ours after it
        const ours = spawnSync("chroot", [path.join(runDir, "hpc"), "systemctl", "is-enabled", "rdmakit-nccl-conf.service"], { encoding: "utf8" });
        assert.equal(ours.stdout.trim(), "enabled");
        let now = "";
        for (let i = 0; i < 40 && now !== kit; i++) {
            await new Promise((r) => setTimeout(r, 250));
            now = fs.readFileSync(path.join(runDir, "hpc", "etc/nccl.conf"), "utf8");
        }
        assert.equal(now, kit, "after the reboot /etc/nccl.conf is not the kit's");
        // the timers the failed run left masked on hpc were unmasked by run 1, which read them from the record
        for (const h of hosts) {
            assert.ok(!fs.existsSync(path.join(runDir, h.name, "etc/systemd/system/apt-daily.timer")), `${h.name}: apt-daily.timer left masked`);
            assert.ok(!fs.existsSync(path.join(runDir, h.name, "etc/rdmakit/masked.json")), `${h.name}: the record of masked units was left`);
        }
    });

    await t.test("run 2 after the reboot reports changed=0 on both hosts", async () => {
        // Ubuntu's apt hook (image-state.sh) touches update-success-stamp after every successful refresh, and ansible's
        // apt module reads the cache's age from that stamp and reports changed when a refresh moved it. The stamp is
        // set two hours back, past node_prep_apt_cache_valid_time (1 h): run 2 refreshes for real, as any run an hour
        // after the last one does, and must still report nothing changed.
        const old = new Date(Date.now() - 2 * 3600_000);
        for (const h of hosts) fs.utimesSync(path.join(runDir, h.name, "var/lib/apt/periodic/update-success-stamp"), old, old);
        const rs = await siteOnAll("image-run2");
        // the lists were refreshed in this run: the hook moved the stamp
        for (const h of hosts) {
            assert.ok(fs.statSync(path.join(runDir, h.name, "var/lib/apt/periodic/update-success-stamp")).mtimeMs > old.getTime() + 3600_000,
                `${h.name}: run 2 did not refresh the package lists`);
        }
        rs.forEach((r, i) => {
            const recap = r.recap;
            assert.deepEqual(recap.map((x) => [x.host, x.changed, x.failed]), [[hosts[i].name, 0, 0]],
                `second run changed something:\n${r.output.split("\n").filter((l) => /^(TASK|changed)/.test(l)).join("\n")}`);
        });
    });

    await t.test("OFED changing under the image's driver rebuilds its DKMS modules (nvidia_peermem); the record keeps the rest", async () => {
        // the driver role alone (site.yml --tags driver), told the ofed role just changed OFED; no reboot of the test host
        const r = await siteRun(1, "image-dkms", { ofed_changed: true, nvidia_driver_reboot: false }, { ANSIBLE_RUN_TAGS: "driver" });
        const kernel = spawnSync("uname", ["-r"], { encoding: "utf8" }).stdout.trim();
        assert.equal(fs.readFileSync(path.join(runDir, "hpc", "var/log/rdmakit-test-dkms.log"), "utf8"), `dkms install --force nvidia/580.126.16 -k ${kernel}\n`);
        assert.match(r.output, /rdmakit software on hpc: .*driver 580\.126\.16 \(reused\)/);
        // the tag-limited run did not erase what the full runs recorded for the other components
        const rec = JSON.parse(fs.readFileSync(path.join(runDir, "hpc", "etc/rdmakit/software.json"), "utf8"));
        assert.deepEqual(Object.keys(rec).sort(), ["cuda", "driver", "fabricManager", "mpi", "nccl", "ncclTests", "ofed"]);
        for (const pkg of STACK_PACKAGES) assert.equal(dpkgState(path.join(runDir, "hpc")).get(pkg), before.get("hpc")!.get(pkg), `hpc: ${pkg} moved`);
    });

    await t.test("the driver role's install path runs for real where its packages are present: names, read-back version, FM held", async () => {
        const r = await ansiblePlaybook(["-i", inventories[1], "test/hosts/driver-install.yml", "-e", "nvidia_driver_reboot=false"],
            { ...env, ANSIBLE_ROLES_PATH: path.join(ROOT, "playbooks", "roles") });
        fs.writeFileSync(path.join(CACHE, "last-image-driver-install-hpc.log"), r.output);
        assert.equal(r.rc, 0, r.output.slice(-3000));
        assert.match(r.output, /rdmakit-test driver install path: installed 580\.126\.16, Fabric Manager nvidia-fabricmanager 580\.126\.16/);
        assert.deepEqual(parseAnsibleLog(r.output).recap.map((x) => [x.host, x.changed, x.failed]), [["hpc", 0, 0]], r.output.slice(-3000));
    });

    await t.test("rdmakit check on both hosts: the report lists what each node runs, reused, and names the node that fails", async () => {
        const tsx = pathToFileURL(path.join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
        const rs = await Promise.all(hosts.map((h, i) => {
            // a project folder as pulumi up leaves it: the stack file and out/<stack>/ with validation's inventory
            const dir = path.join(runDir, `project-${h.name}`);
            fs.mkdirSync(path.join(dir, "out", h.name), { recursive: true });
            fs.writeFileSync(path.join(dir, `Pulumi.${h.name}.yaml`), stringify({ config: { "rdmakit:cluster": specs[h.name as keyof typeof specs] } }));
            fs.copyFileSync(inventories[i], path.join(dir, "out", h.name, "inventory-validation.yml"));
            return new Promise<{ rc: number; out: string }>((resolve) => {
                const child = spawn(process.execPath, ["--import", tsx, path.join(ROOT, "bin", "rdmakit.ts"), "check", "--config", `Pulumi.${h.name}.yaml`, "--ssh-key", key],
                    { cwd: dir, env: { PATH: process.env.PATH, HOME: process.env.HOME ?? dir } });
                let out = "";
                child.stdout.on("data", (d) => { out += d; });
                child.stderr.on("data", (d) => { out += d; });
                child.on("close", (rc) => resolve({ rc: rc ?? -1, out }));
            });
        }));
        const [dl, hpc] = rs;
        // no GPU in a container: the preflight fails for real, names the node, and the software comes from its record
        for (const [i, r] of rs.entries()) {
            assert.equal(r.rc, 1, r.out);
            assert.match(r.out, new RegExp(`FAIL preflight: 0 of 1 node\\(s\\) pass; bad node\\(s\\): ${hosts[i].name}`));
            assert.match(r.out, new RegExp(`x gpu-count \\[preflight ${hosts[i].name}\\]: expected 8 GPUs`));
        }
        assert.match(hpc.out, /DOCA-OFED\s+OFED-internal-25\.10-1\.7\.1: reused \(1 node\)/);
        assert.match(hpc.out, /nccl-tests\s+image build at \/opt\/nccl-tests\/build reused \(1 node\)/);
        assert.match(hpc.out, /MPI\s+\/opt\/hpcx-v2\.25\.1-.*\/ompi reused \(1 node\)/);
        assert.match(dl.out, /EFA installer\s+1\.50\.0 reused \(1 node\)/);
        assert.match(dl.out, /NVIDIA driver\s+595\.91\.07 reused \(1 node\)/);
        // day 2 changed nothing on the nodes
        for (const h of hosts) {
            const after = dpkgState(path.join(runDir, h.name));
            for (const pkg of STACK_PACKAGES) assert.equal(after.get(pkg), before.get(h.name)!.get(pkg), `${h.name}: ${pkg} moved by check`);
        }
    });

    await t.test("the package sets the roles install on a plain host resolve against the vendors' names", () => {
        const sim = (host: string, pkgs: string[]) => spawnSync("chroot", [path.join(runDir, host), "apt-get", "install", "-s", "-q", ...pkgs], { encoding: "utf8" });
        // the driver with its pinning package, NVLSM, the toolkit and the NCCL pair of the plan's defaults
        // (catalog/software.ts), named as playbooks/roles/nvidia_driver/vars and nccl/vars name them; on the DLAMI-like
        // host, which has none of them as packages
        const plain = sim("dlami", ["nvidia-driver-pinning-580.126.16", "nvidia-open=580.126.16-1", "nvlsm", "cuda-toolkit-13-0",
            "libnccl2=2.28.9-1+cuda13.0", "libnccl-dev=2.28.9-1+cuda13.0"]);
        assert.equal(plain.status, 0, plain.stdout + plain.stderr);
        // Fabric Manager and its library at the driver's exact version (what the ubuntu-hpc-like host holds)
        const fm = sim("hpc", ["nvidia-fabricmanager=580.126.16-1", "libnvidia-nscq=580.126.16-1"]);
        assert.equal(fm.status, 0, fm.stdout + fm.stderr);
        // the old default pair cannot be installed: no such build
        const impossible = sim("dlami", ["libnccl2=2.23.4-1+cuda13.0"]);
        assert.notEqual(impossible.status, 0);
        assert.match(impossible.stderr, /Version '2\.23\.4-1\+cuda13\.0' for 'libnccl2' was not found/);
        // a held package of the image that a install would move is caught
        const moved = sim("hpc", ["-y", "libnccl2=2.30.4-1+cuda13.2"]);
        assert.notEqual(moved.status, 0, moved.stdout);
        assert.match(moved.stdout + moved.stderr, /held packages/i);
    });
}
