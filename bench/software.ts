/*
 * Software-step benchmark: site.yml with a fixed small role set (the plays every run has, plus roce_host) on 2, 4 and 8 systemd-nspawn test hosts (test/hosts/testhost.sh), reached as `pulumi up` reaches nodes:
 * the kit's inventory (renderInventory) through a bastion (the first host) with the shared jump connection, forks
 * from the plan's rule (one per host here). Prints, per size, the wall time and the controller's CPU time (the
 * ansible-playbook process tree and its SSH clients and masters, counted in a cpuacct cgroup of their own; the test
 * hosts' sshd and modules run outside it), per host, the growth from the smallest to the largest run, and the
 * controller CPU a 1,000-node run would cost on a straight-line fit (a + b * hosts). Needs root, debootstrap,
 * systemd-nspawn and ansible-playbook. Not part of `npm test`.
 *
 *   npm run bench:software            # 2, 4, 8 hosts
 *   npm run bench:software -- 2 6     # sizes of your choice
 */
import { execFile, spawn, spawnSync } from "child_process";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { promisify } from "util";
import { planCluster } from "../components/plan";
import { inventoryHosts } from "../components/provision/nodes";
import { renderInventory } from "../components/provision/inventory";
import { parseAnsibleLog } from "../components/provision/summarise";
import { parseClusterSpec } from "../components/spec";
import { freePort } from "../test/fixtures/ports";

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

export interface SoftwareBenchRow {
    hosts: number;
    wallSeconds: number;
    /** controller CPU seconds (user + system), or null where no cpuacct cgroup could be made */
    cpuSeconds: number | null;
    /**
     * CPU seconds of ansible-playbook's main process alone (the strategy loop, variables, forks, callbacks): one
     * process, so at most one core, whatever the controller has; null where it could not be read
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

/** One size: boot `n` hosts, run the role set once on the fresh hosts, tear down. */
export async function benchSoftware(n: number): Promise<SoftwareBenchRow> {
    fs.mkdirSync(CACHE, { recursive: true });
    const runDir = fs.mkdtempSync(path.join(CACHE, `bench-${n}-`));
    const names = Array.from({ length: n }, (_, i) => `b${n}h${i + 1}`);
    const cpuDir = path.join(CPUACCT, `rdmakit-bench-${process.pid}-${n}`);
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
        await run(HARNESS, ["base", CACHE], { maxBuffer: 1 << 24 });
        const ports = await Promise.all(names.map(() => freePort()));
        const addresses = names.map((_, i) => `127.0.16.${100 + i}`);
        await Promise.all(names.map((h, i) => run(HARNESS, ["up", CACHE, runDir, h, String(ports[i]), `${key}.pub`, addresses[i]])));
        const spec = parseClusterSpec({
            name: "rdmakit-bench", fabric: "roce", ssh: { allowedCidrs: ["127.0.0.0/8"] },
            software: { ofedSource: "inbox", gpudirect: "dmabuf" },
            roce: {
                nicModel: "ConnectX-7",
                hosts: names.map((name, i) => ({ name, address: addresses[i], sshUser: "root", railNics: ["mlx5_0", "mlx5_1"],
                    bootstrapNic: "eth0", gpu: { model: "H100", count: 8 } })),
                switches: [{ name: "leaf", os: "sonic", managementAddress: "127.0.16.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: names.flatMap((_, i) => [`Ethernet${i * 16}`, `Ethernet${i * 16 + 8}`]),
                    speedGbps: 400, cableLengthM: 5 }],
            },
        });
        const plan = planCluster(spec);
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
        return { hosts: n, wallSeconds: t.wall, cpuSeconds: cpu, mainSeconds: Number.isFinite(main) ? main : null, ok };
    } finally {
        await Promise.all(names.map((h) => run(HARNESS, ["down", runDir, h]).catch(() => undefined)));
        if (cgroup) {
            for (const pid of fs.readFileSync(path.join(cgroup, "cgroup.procs"), "utf8").split("\n").filter(Boolean)) {
                fs.writeFileSync(path.join(CPUACCT, "cgroup.procs"), pid);
            }
            fs.rmdirSync(cgroup);
        }
        if (!process.env.RDMAKIT_BENCH_KEEP) fs.rmSync(runDir, { recursive: true, force: true });
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
export function formatSoftwareBench(rows: SoftwareBenchRow[], cores: number, target = 1000, otherCores = 16): string {
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
    const sizes = process.argv.slice(2).map(Number).filter((n) => Number.isInteger(n) && n >= 1);
    void (async () => {
        if (process.getuid?.() !== 0 || spawnSync("sh", ["-c", "command -v systemd-nspawn && command -v ansible-playbook"]).status !== 0) {
            console.error("bench:software needs root, systemd-nspawn, debootstrap and ansible-playbook");
            process.exit(2);
        }
        const rows: SoftwareBenchRow[] = [];
        for (const n of sizes.length ? sizes : [2, 4, 8]) rows.push(await benchSoftware(n));
        console.log(`software step: site.yml --tags ${TAGS} on fresh nspawn hosts through a bastion; forks = hosts`);
        console.log(formatSoftwareBench(rows, os.cpus().length));
        process.exit(rows.every((r) => r.ok) ? 0 : 1);
    })();
}
