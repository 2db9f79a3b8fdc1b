/*
 * Software-step benchmark: site.yml with a fixed small role set (the plays every run has, plus roce_host) on
 * systemd-nspawn test hosts (test/hosts/testhost.sh), reached as `pulumi up` reaches nodes: the kit's inventory
 * (renderInventory) through a bastion (the first host) with the shared jump connection. Two modes
 * (cluster.ansible.mode): node-local (the default: the component's own run script, test/fixtures/node-local-run.ts;
 * the fan-out sends the bundle and each host runs the roles on itself) and controller (ansible-playbook here, forks
 * from the plan's rule). Prints, per size, the wall time and the controller's CPU time (the run's process tree: the
 * agent, the fan-out or ansible-playbook, every SSH client and master, counted in a cpuacct cgroup of their own; the
 * test hosts' sshd and their own Ansible run outside it), per host, the growth, and a straight-line fit (a + b * hosts)
 * out to 1,000 and 4,096 hosts. The bundle is made before the measurement (once per content, not per host). Needs
 * root, debootstrap, systemd-nspawn (and ansible-playbook for controller mode). Not part of `npm test`.
 *
 * --slurm (node-local only, as the munge key needs the node-local session) adds the Slurm rows: the same GPU hosts,
 * a bare-metal `scheduler.controller` head node as one more host, the inventory `pulumi up` builds with it
 * (components/provision/head.ts) and `--tags roce,slurm`, the munge key on each host's session. The hosts start with
 * Debian's Slurm packages unpacked (bench/slurm-layer.sh, as an image that carries Slurm), so the role configures and
 * starts the daemons without a download. Per host is per GPU host: the head node's share is counted in the figures.
 * The hosts share one network namespace, so only one slurmd holds port 6818; the others exit after systemd started
 * them. Neither changes what the controller does per host (each host runs the role on itself).
 *
 *   npm run bench:software                                # node-local, 2, 4, 8 hosts
 *   npm run bench:software -- --json rows.json 4 12       # sizes of your choice, rows also as JSON
 *   npm run bench:software -- --mode controller 2 6       # push mode
 *   npm run bench:software -- --slurm 4 12                # each size without and with Slurm, alternating
 */
import { execFile, spawn, spawnSync } from "child_process";
import { createHash, randomBytes } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { planCluster } from "../components/plan";
import { inventoryHosts } from "../components/provision/nodes";
import { slurmHeadHost, slurmHeadVars } from "../components/provision/head";
import { renderInventory } from "../components/provision/inventory";
import { parseAnsibleLog } from "../components/provision/summarise";
import { parseClusterSpec } from "../components/spec";
import { freePort } from "../test/fixtures/ports";
import { nodeLocalSetup, runNodeLocal } from "../test/fixtures/node-local-run";
import { serveKeyLocally } from "../components/provision/keysocket";

export type BenchMode = "node-local" | "controller";

const run = promisify(execFile);
const ROOT = path.join(__dirname, "..");
const CACHE = path.join(ROOT, ".testhosts");
const HARNESS = path.join(ROOT, "test", "hosts", "testhost.sh");
const CPUACCT = "/sys/fs/cgroup/cpuacct";
/**
 * The role set every size runs: roce_host (files, templates, a systemd unit; no package downloads, so the mirror's
 * speed does not enter the figures), plus the plays every run has (tag always: the variable checks, the connection
 * wait, facts, the software report).
 */
const TAGS = "roce";
/** With --slurm: the same, and the slurm play (site.yml "Set up Slurm") on the nodes and the head node. */
const SLURM_TAGS = "roce,slurm";
const LAYER_SCRIPT = path.join(ROOT, "bench", "slurm-layer.sh");
/**
 * Seconds one node-local run may take before it is stopped (the row then says NO): 12 hosts took 96 s without Slurm
 * on a quiet machine (docs/development.md), so this leaves room for a loaded one. Booting is bounded by testhost.sh
 * (60 s a host, all at once), building the Slurm layer (once) by apt's own timeouts.
 */
const RUN_LIMIT_S = 900;

export interface SoftwareBenchRow {
    hosts: number;
    mode: BenchMode;
    /** true: Slurm on (a head node in the inventory, the slurm role on every host) */
    slurm?: boolean;
    wallSeconds: number;
    /** controller CPU seconds (user + system), or null where no cpuacct cgroup could be made */
    cpuSeconds: number | null;
    /**
     * CPU seconds of the one process that drives the run, so at most one core whatever the controller has:
     * ansible-playbook's main process (the strategy loop, variables, forks, callbacks) in controller mode, the
     * fan-out's Node process in node-local mode; null where it could not be read
     */
    mainSeconds: number | null;
    ok: boolean;
}

/**
 * Runs ansible-playbook's own entry point (ansible.cli.playbook main, what /usr/bin/ansible-playbook calls) in a Python
 * that writes its main process's CPU seconds (getrusage RUSAGE_SELF: not the workers it forks) to argv[1] at exit.
 */
const MAIN_CPU_PY = [
    "import resource, sys",
    "from ansible.cli.playbook import main",
    "out = sys.argv.pop(1)",
    "try:",
    "    rc = main([\"ansible-playbook\"] + sys.argv[1:])",
    "finally:",
    "    r = resource.getrusage(resource.RUSAGE_SELF)",
    "    open(out, \"w\").write(\"%.3f\\n\" % (r.ru_utime + r.ru_stime))",
    "sys.exit(rc)",
    "",
].join("\n");

/** The Python ansible-playbook runs under (its #! line). */
function ansiblePython(): string {
    const bin = spawnSync("sh", ["-c", "command -v ansible-playbook"], { encoding: "utf8" }).stdout.trim();
    const first = fs.readFileSync(bin, "utf8").split("\n")[0];
    const m = /^#!\s*(\S+)(?:\s+(\S+))?/.exec(first);
    if (!m) return "python3";
    return m[1].endsWith("/env") && m[2] ? m[2] : m[1];
}

/** Runs a shell command, with everything it starts, inside the cpuacct cgroup `cpuDir`; returns its wall time. */
async function timed(cmd: string, env: NodeJS.ProcessEnv, cpuDir: string | undefined): Promise<{ wall: number; rc: number }> {
    const start = process.hrtime.bigint();
    const wrapped = cpuDir ? `echo $$ > ${cpuDir}/cgroup.procs && exec /bin/sh -c '${cmd.replace(/'/g, "'\\''")}'` : cmd;
    const rc = await new Promise<number>((resolve) => {
        const child = spawn("/bin/sh", ["-c", wrapped], { cwd: ROOT, env, stdio: "ignore" });
        child.on("close", (code) => resolve(code ?? -1));
    });
    const wall = Number(process.hrtime.bigint() - start) / 1e9;
    return { wall, rc };
}

/** The Slurm layer's tarball beside the base one (built once per content of bench/slurm-layer.sh, under a lock). */
async function slurmLayer(baseTar: string): Promise<string> {
    const hash = createHash("sha256").update(fs.readFileSync(LAYER_SCRIPT)).digest("hex").slice(0, 16);
    const layer = path.join(path.dirname(baseTar), `bookworm-slurm-${hash}.tar`);
    if (!fs.existsSync(layer)) {
        await run("flock", [`${layer}.lock`, "sh", "-c", `[ -s "$2" ] || exec "$0" build "$1" "$2"`, LAYER_SCRIPT, baseTar, layer], { maxBuffer: 1 << 24 });
    }
    return layer;
}

/** One size: boot `n` hosts (and with `slurm` a head node), run the role set once on the fresh hosts, tear down. */
export async function benchSoftware(n: number, mode: BenchMode = "node-local", slurm = false): Promise<SoftwareBenchRow> {
    if (slurm && mode !== "node-local") throw new Error("bench:software --slurm runs in node-local mode only (the munge key travels on each node's session)");
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, `bench-${n}${slurm ? "s" : ""}-`));
    const names = Array.from({ length: n }, (_, i) => `b${n}h${i + 1}`);
    const head = { name: `b${n}head`, address: "127.0.16.99" };
    const booted = slurm ? [...names, head.name] : names;
    const cpuDir = path.join(CPUACCT, `rdmakit-bench-${process.pid}-${n}${slurm ? "s" : ""}`);
    let cgroup: string | undefined;
    try {
        fs.mkdirSync(cpuDir);
        cgroup = cpuDir;
    } catch {
        cgroup = undefined;
    }
    try {
        const key = path.join(runDir, "id");
        await run("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]);
        const baseTar = (await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 })).stdout.trim().split("\n").pop()!;
        const prepare = slurm ? { RDMAKIT_TESTHOST_PREPARE: `${LAYER_SCRIPT} apply ${await slurmLayer(baseTar)}` } : {};
        const ports = await Promise.all(booted.map(() => freePort()));
        const addresses = names.map((_, i) => `127.0.16.${100 + i}`);
        const bootAddresses = slurm ? [...addresses, head.address] : addresses;
        await Promise.all(booted.map((h, i) => run(HARNESS, ["up", CACHE, runDir, h, String(ports[i]), `${key}.pub`, bootAddresses[i]],
            { env: { ...process.env, ...prepare } })));
        const hostKey = slurm ? fs.readFileSync(path.join(runDir, head.name, "etc", "ssh", "ssh_host_ed25519_key.pub"), "utf8").trim().split(" ").slice(0, 2).join(" ") : "";
        const spec = parseClusterSpec({
            name: "rdmakit-bench", fabric: "roce", ssh: { allowedCidrs: ["127.0.0.0/8"] },
            software: { ofedSource: "inbox", gpudirect: "dmabuf" },
            // node: figures every container host meets (slurmd drains a node reporting fewer; the bench runs no job)
            ...(slurm ? { scheduler: { type: "slurm", controller: { name: head.name, address: head.address, sshUser: "root", hostKey },
                node: { cpus: 1, sockets: 1, coresPerSocket: 1, threadsPerCore: 1, realMemory: 100 } } } : {}),
            roce: {
                nicModel: "ConnectX-7",
                hosts: names.map((name, i) => ({ name, address: addresses[i], sshUser: "root", railNics: ["mlx5_0", "mlx5_1"],
                    bootstrapNic: "eth0", gpu: { model: "H100", count: 8 } })),
                switches: [{ name: "leaf", os: "sonic", managementAddress: "127.0.16.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: names.flatMap((_, i) => [`Ethernet${i * 16}`, `Ethernet${i * 16 + 8}`]),
                    speedGbps: 400, cableLengthM: 5 }],
            },
        });
        const plan = planCluster(spec);
        if (mode === "node-local") {
            return await benchNodeLocal(n, runDir, key, plan, addresses, ports, cgroup, slurm ? { ...head, port: ports[n] } : undefined);
        }
        const inventory = path.join(runDir, "inventory.yml");
        fs.writeFileSync(inventory, renderInventory({
            hosts: inventoryHosts(plan, addresses).map((h, i) => ({ ...h, port: ports[i] })),
            bastion: { address: addresses[0], user: "root", port: ports[0] },
            vars: { ...plan.ansibleVars, rdmakit_require_hardware: false },
            knownHostsFile: path.join(runDir, "known_hosts"),
            privateKeyFile: key,
        }));
        const env = {
            ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            ANSIBLE_FORKS: String(plan.provision.forks), ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(runDir, "cp"),
        };
        const log = path.join(runDir, "ansible.log");
        const mainCpu = path.join(runDir, "main-cpu");
        fs.writeFileSync(path.join(runDir, "main-cpu.py"), MAIN_CPU_PY);
        // the SSH masters (ControlPersist) are closed inside the cgroup so their CPU counts, as the kit's script does;
        // the progress lines go where the kit's script sends them (fd 3), here to /dev/null
        const cmd = `RDMAKIT_PROGRESS_FD=3 RDMAKIT_PROGRESS_LABEL=site ${ansiblePython()} ${path.join(runDir, "main-cpu.py")} ${mainCpu} ` +
            `-i ${inventory} --tags ${TAGS} playbooks/site.yml 3>/dev/null >${log} 2>&1; rc=$?; ` +
            `for s in ${path.join(runDir, "cp")}/*; do [ -S "$s" ] && ssh -o ControlPath="$s" -O exit x >/dev/null 2>&1; done; exit $rc`;
        const before = cgroup ? BigInt(fs.readFileSync(path.join(cgroup, "cpuacct.usage"), "utf8").trim()) : 0n;
        const t = await timed(cmd, env, cgroup);
        // masters exit a moment after -O exit; wait until the cgroup is empty so their last CPU is counted
        for (let i = 0; cgroup && i < 50 && fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").trim() !== ""; i++) {
            await new Promise((r) => setTimeout(r, 100));
        }
        const cpu = cgroup ? Number(BigInt(fs.readFileSync(path.join(cgroup, "cpuacct.usage"), "utf8").trim()) - before) / 1e9 : null;
        const recap = parseAnsibleLog(fs.readFileSync(log, "utf8")).recap;
        const ok = t.rc === 0 && recap.length === n && recap.every((r) => r.failed === 0 && r.unreachable === 0);
        if (!ok) process.stderr.write(`bench: ${n} hosts: ansible-playbook exited ${t.rc}; log kept at ${log}\n`);
        const main = fs.existsSync(mainCpu) ? Number(fs.readFileSync(mainCpu, "utf8")) : NaN;
        return { hosts: n, mode, wallSeconds: t.wall, cpuSeconds: cpu, mainSeconds: Number.isFinite(main) ? main : null, ok };
    } finally {
        await Promise.all(booted.map((h) => run(HARNESS, ["down", runDir, h]).catch(() => undefined)));
        if (cgroup) {
            for (const pid of fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
                fs.writeFileSync(path.join(CPUACCT, "cgroup.procs"), pid);
            }
            fs.rmdirSync(cgroup);
        }
        if (!process.env.RDMAKIT_BENCH_KEEP) fs.rmSync(runDir, { recursive: true, force: true });
    }
}

/** The cgroup's CPU seconds so far. */
function cgroupSeconds(cgroup: string | undefined): bigint {
    return cgroup ? BigInt(fs.readFileSync(path.join(cgroup, "cpuacct.usage"), "utf8").trim()) : 0n;
}

/** Waits (at most 5 s) until the cgroup's processes are gone, so their last CPU is counted. */
async function cgroupDrained(cgroup: string | undefined): Promise<void> {
    for (let i = 0; cgroup && i < 50 && fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").trim() !== ""; i++) {
        await new Promise((r) => setTimeout(r, 100));
    }
}

/**
 * The node-local run of one size: the component's script, in the cgroup; the key served from this process. With
 * `head`, the Slurm head node joins the inventory as `pulumi up` adds it (head.ts) and a cluster munge key rides on
 * each host's session.
 */
async function benchNodeLocal(n: number, runDir: string, key: string, plan: ReturnType<typeof planCluster>, addresses: string[], ports: number[],
    cgroup: string | undefined, head?: { name: string; address: string; port: number }): Promise<SoftwareBenchRow> {
    const at = head ? { address: head.address } : undefined;
    const headHost = at ? slurmHeadHost(plan, at, false) : undefined;
    const inventory = renderInventory({
        hosts: [...inventoryHosts(plan, addresses).map((h, i) => ({ ...h, port: ports[i] })), ...(headHost ? [{ ...headHost, port: head!.port }] : [])],
        bastion: { address: addresses[0], user: "root", port: ports[0] },
        vars: { ...plan.ansibleVars, ...(at ? slurmHeadVars(plan, at, addresses) : {}), rdmakit_require_hardware: false },
        knownHostsFile: path.join(runDir, "known_hosts"),
    });
    const setup = nodeLocalSetup(path.join(runDir, "out"));
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    const mainCpu = path.join(runDir, "main-cpu");
    const log = path.join(runDir, "out", "ansible-site.log");
    try {
        const before = cgroupSeconds(cgroup);
        const start = process.hrtime.bigint();
        const r = await runNodeLocal(setup, {
            inventory, extraVars: {}, log, key: served.env,
            env: {
                ANSIBLE_RUN_TAGS: head ? SLURM_TAGS : TAGS, RDMAKIT_FANOUT_CPU_FILE: mainCpu, RDMAKIT_FANOUT_PARALLEL: String(plan.provision.forks),
                ...(head ? { RDMAKIT_MUNGE_KEY: randomBytes(1024).toString("base64") } : {}),
            },
            // the run is bounded: timeout(1) stops it, with everything in its process group, after RUN_LIMIT_S
            wrap: (cmd) => ["timeout", "-k", "10", String(RUN_LIMIT_S),
                ...(cgroup ? ["/bin/sh", "-c", `echo $$ > ${cgroup}/cgroup.procs && exec "$@"`, "sh", ...cmd] : cmd)],
        });
        const wall = Number(process.hrtime.bigint() - start) / 1e9;
        await cgroupDrained(cgroup);
        const cpu = cgroup ? Number(cgroupSeconds(cgroup) - before) / 1e9 : null;
        const recap = fs.existsSync(log) ? parseAnsibleLog(fs.readFileSync(log, "utf8")).recap : [];
        const ok = r.status === 0 && recap.length === n + (head ? 1 : 0) && recap.every((x) => x.failed === 0 && x.unreachable === 0);
        if (!ok) process.stderr.write(`bench: ${n} hosts${head ? " and a Slurm head node" : ""} (node-local): the run exited ${r.status}: ${r.stderr.slice(-2000)}\n`);
        const main = fs.existsSync(mainCpu) ? Number(fs.readFileSync(mainCpu, "utf8")) : NaN;
        return { hosts: n, mode: "node-local", ...(head ? { slurm: true } : {}), wallSeconds: wall, cpuSeconds: cpu, mainSeconds: Number.isFinite(main) ? main : null, ok };
    } finally {
        served.close();
    }
}

/** Least-squares line y = a + b x. */
export function fitLine(xs: number[], ys: number[]): { a: number; b: number } {
    const n = xs.length;
    const mx = xs.reduce((s, x) => s + x, 0) / n;
    const my = ys.reduce((s, y) => s + y, 0) / n;
    const sxx = xs.reduce((s, x) => s + (x - mx) ** 2, 0);
    const b = sxx === 0 ? 0 : xs.reduce((s, x, i) => s + (x - mx) * (ys[i] - my), 0) / sxx;
    return { a: my - b * mx, b };
}

/**
 * The table the bench prints. Pure. The extrapolation is a straight-line fit of the measured sizes (so it leaves out
 * whatever grows faster than the host count at 1,000 hosts: the main process's memory, hence each fork, grows with
 * the inventory), and the wall time it gives is the controller's floor: the CPU spread over the cores, but never less
 * than the main process's own CPU, which runs on one core.
 */
export function formatSoftwareBench(rows: SoftwareBenchRow[], cores: number, targets = [1000, 4096], otherCores = 16): string {
    const f = (x: number | null, d = 2): string => (x === null ? "n/a" : x.toFixed(d));
    const out = ["hosts  wall s  wall/host s  controller CPU s  CPU/host s  main process CPU s  ok"];
    for (const r of rows) {
        out.push(`${String(r.hosts).padStart(5)}  ${f(r.wallSeconds, 1).padStart(6)}  ${f(r.wallSeconds / r.hosts).padStart(11)}  ` +
            `${f(r.cpuSeconds).padStart(16)}  ${f(r.cpuSeconds === null ? null : r.cpuSeconds / r.hosts).padStart(10)}  ` +
            `${f(r.mainSeconds).padStart(18)}  ${r.ok ? "yes" : "NO"}`);
    }
    const lo = rows[0];
    const hi = rows[rows.length - 1];
    if (rows.length >= 2) {
        const x = hi.hosts / lo.hosts;
        out.push(`growth ${lo.hosts} -> ${hi.hosts} hosts (x${x.toFixed(1)}): wall x${(hi.wallSeconds / lo.wallSeconds).toFixed(2)}, ` +
            `wall per host x${((hi.wallSeconds / hi.hosts) / (lo.wallSeconds / lo.hosts)).toFixed(2)}` +
            (lo.cpuSeconds !== null && hi.cpuSeconds !== null
                ? `, controller CPU x${(hi.cpuSeconds / lo.cpuSeconds).toFixed(2)}, CPU per host x${((hi.cpuSeconds / hi.hosts) / (lo.cpuSeconds / lo.hosts)).toFixed(2)}`
                : ""));
    }
    const measured = rows.filter((r) => r.cpuSeconds !== null);
    if (measured.length >= 2) {
        const { a: pa, b: pb } = fitLine(measured.map((r) => r.hosts), measured.map((r) => r.cpuSeconds as number));
        out.push(`controller CPU per host at ${hi.hosts} hosts: ${((hi.cpuSeconds ?? 0) / hi.hosts).toFixed(3)} s; marginal per added host: ${pb.toFixed(3)} s (fit ${pa.toFixed(2)} s + ${pb.toFixed(3)} s/host)`);
    }
    for (const target of measured.length >= 2 ? targets : []) {
        const { a, b } = fitLine(measured.map((r) => r.hosts), measured.map((r) => r.cpuSeconds as number));
        const cpu = a + b * target;
        const withMain = measured.filter((r) => r.mainSeconds !== null);
        const main = withMain.length >= 2
            ? (({ a: ma, b: mb }) => ma + mb * target)(fitLine(withMain.map((r) => r.hosts), withMain.map((r) => r.mainSeconds as number)))
            : null;
        const floor = (c: number): string => `${(Math.max(cpu / c, main ?? 0) / 60).toFixed(1)} min on ${c} cores`;
        out.push(`controller CPU at ${target} hosts (fit ${a.toFixed(2)} s + ${b.toFixed(3)} s/host): ${(cpu / 60).toFixed(1)} CPU-min` +
            (main !== null ? `, of which the main process (one core) ${(main / 60).toFixed(1)} min` : "") +
            `; controller time at least ${floor(cores)} (this machine), ${floor(otherCores)}`);
    }
    return out.join("\n");
}

if (require.main === module) {
    const argv = process.argv.slice(2);
    const flag = (name: string): string | undefined => { const i = argv.indexOf(name); return i >= 0 ? argv.splice(i, 2)[1] : undefined; };
    const json = flag("--json");
    const mode = (flag("--mode") ?? "node-local") as BenchMode;
    const slurmAt = argv.indexOf("--slurm");
    const slurm = slurmAt >= 0;
    if (slurm) argv.splice(slurmAt, 1);
    if (slurm && mode !== "node-local") { console.error("bench:software: --slurm runs in node-local mode only (the munge key travels on each node's session)"); process.exit(2); }
    if (mode !== "node-local" && mode !== "controller") { console.error(`bench:software: --mode must be node-local or controller (got ${String(mode)})`); process.exit(2); }
    const sizes = argv.map(Number).filter((n) => Number.isInteger(n) && n >= 1);
    void (async () => {
        if (process.getuid?.() !== 0 || spawnSync("sh", ["-c", `command -v systemd-nspawn${mode === "controller" ? " && command -v ansible-playbook" : ""}`]).status !== 0) {
            console.error("bench:software needs root, systemd-nspawn, debootstrap and ansible-playbook");
            process.exit(2);
        }
        const rows: SoftwareBenchRow[] = [];
        const withSlurm: SoftwareBenchRow[] = [];
        // with --slurm each size runs without and then with Slurm, so both rows of a size see the same load
        for (const n of sizes.length ? sizes : slurm ? [4, 12] : [2, 4, 8]) {
            rows.push(await benchSoftware(n, mode));
            if (slurm) withSlurm.push(await benchSoftware(n, mode, true));
        }
        if (json) fs.writeFileSync(json, JSON.stringify([...rows, ...withSlurm], null, 2) + "\n");
        console.log(`software step (${mode}): site.yml --tags ${TAGS} on fresh nspawn hosts through a bastion; ` +
            (mode === "node-local" ? "every host at once, each running the roles on itself" : "forks = hosts"));
        console.log(formatSoftwareBench(rows, os.cpus().length));
        if (slurm) {
            console.log(`\nwith Slurm: site.yml --tags ${SLURM_TAGS}, the same hosts and a head node (slurmctld) in the inventory, the munge key on ` +
                "each session; hosts = GPU hosts (the head node's share is in the figures)");
            console.log(formatSoftwareBench(withSlurm, os.cpus().length));
        }
        process.exit([...rows, ...withSlurm].every((r) => r.ok) ? 0 : 1);
    })();
}
