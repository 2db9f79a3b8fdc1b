/*
 * Scale benchmark: `rdmakit plan` (index.ts on Pulumi's mock engine) for growing clusters of each fabric.
 * Each run is its own process of the installed command (bin/rdmakit.cjs), as a user runs it. Prints nodes, resources
 * registered, wall time, CPU seconds and their ratio to the smallest stack of the same fabric (cpuRatios), and the bytes
 * of resource inputs (what the stack's state keeps and Pulumi sends on every checkpoint), in all and per node.
 *
 * Bare metal (roce-h100.yaml scaled) is a rail-optimised two-tier fabric (railFabric): 2,048 hosts are 8 rails over
 * 256 leaves of 64 host ports and 128 spines, the topology `rdmakit plan` must plan within 3 s.
 *
 *   npm run bench                 # default sizes
 *   npm run bench -- 8 1024 4096  # AWS sizes of your choice (Azure is capped at one 300-VM partition)
 */
import { spawnSync } from "child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { parse, stringify } from "yaml";

const ROOT = join(__dirname, "..");

/** A copy of a bundled example with `nodes` GPU nodes. */
export function scaledStack(example: string, nodes: number, opts: { noScheduler?: boolean } = {}): unknown {
    const doc = parse(readFileSync(join(ROOT, "examples", example), "utf8"));
    const c = doc.config["rdmakit:cluster"];
    // the same stack without Slurm: what the scheduler costs the plan (issue 32: at most 10 % at 2,048 RoCE hosts)
    if (opts.noScheduler) c.scheduler = { type: "none" };
    if (c.fabric === "roce") {
        const host = c.roce.hosts[0];
        // the declared cabling of railFabric: rail r of host i on leaf-r<r>-<i/64>, at its host slot (Slurm's topology derives from it)
        c.roce.hosts = Array.from({ length: nodes }, (_, i) => ({
            ...host, name: `gpu${String(i + 1).padStart(4, "0")}`, address: `10.${20 + ((i + 1) >> 16)}.${((i + 1) >> 8) & 255}.${(i + 1) & 255}`,
            railPorts: host.railNics.map((_nic: string, r: number) => `leaf-r${r}-${Math.floor(i / 64)}:swp${((i % 64) >> 1) + 1}s${(i % 64) & 1}`),
        }));
        c.roce.switches = railFabric(nodes, host.railNics.length, c.roce.switches[0].hostKey);
        // the scaled hosts fill 10.20.x.x, where the example's controller sits: move it out of their way
        if (c.scheduler?.controller) c.scheduler.controller.address = "10.19.0.5";
    } else {
        c.nodes = nodes;
        if (c.azure && nodes > 100) c.azure.quotaRaised = true;
    }
    return doc;
}

/**
 * A rail-optimised two-tier fabric for `nodes` hosts of `rails` rails: rail r of every host lands in rail plane r;
 * each plane has one NVUE leaf (SN5600) per 64 hosts, 64 host ports at 400G (breakout sub-ports swp1s0 … swp32s1) and
 * 32 uplinks at 800G (swp33 … swp64, 40 m) spread evenly over the plane's SONiC spines (SN5600, at most 64 ports
 * each; 16 per plane once there are 32 leaves). 2,048 hosts make 256 leaves and 128 spines.
 */
export function railFabric(nodes: number, rails: number, hostKey: string): unknown[] {
    const HOSTS_PER_LEAF = 64, UPLINKS = 32;
    const leavesPerPlane = Math.ceil(nodes / HOSTS_PER_LEAF);
    // spines per plane: a power of two (so it divides the 32 uplinks), up to 16, each with at most 64 ports
    const SPINES_PER_PLANE = Math.min(16, 2 ** Math.ceil(Math.log2(Math.ceil(leavesPerPlane / 2))));
    const linksPerSpine = UPLINKS / SPINES_PER_PLANE;
    const leaves: Record<string, unknown>[] = [];
    const spines: Record<string, unknown>[] = [];
    const mgmt = (i: number) => `10.${100 + (i >> 16)}.${(i >> 8) & 255}.${i & 255}`;
    let n = 1;
    for (let r = 0; r < rails; r++) {
        for (let s = 0; s < SPINES_PER_PLANE; s++) {
            spines.push({ name: `spine-r${r}-${s}`, os: "sonic", role: "spine", model: "SN5600", managementAddress: mgmt(n++), hostKey, speedGbps: 800, cableLengthM: 40 });
        }
        for (let l = 0; l < leavesPerPlane; l++) {
            const hosts = Math.min(HOSTS_PER_LEAF, nodes - l * HOSTS_PER_LEAF);
            leaves.push({
                name: `leaf-r${r}-${l}`, os: "nvue", model: "SN5600", managementAddress: mgmt(n++), sshUser: "cumulus", hostKey,
                hostPorts: Array.from({ length: hosts }, (_, i) => `swp${(i >> 1) + 1}s${i & 1}`), speedGbps: 400, cableLengthM: 5,
                // uplink u goes to spine u mod SPINES_PER_PLANE of the plane, on that spine's port for (leaf, link)
                uplinks: Array.from({ length: UPLINKS }, (_, u) => ({
                    port: `swp${33 + u}`, peer: `spine-r${r}-${u % SPINES_PER_PLANE}`,
                    peerPort: `Ethernet${(l * linksPerSpine + Math.floor(u / SPINES_PER_PLANE)) * 8}`, cableLengthM: 40, speedGbps: 800,
                })),
            });
        }
    }
    return [...leaves, ...spines];
}

export interface BenchRow {
    example: string;
    nodes: number;
    resources: number;
    seconds: number;
    /** CPU seconds (user + system) of the plan's process and its children: what a loaded machine does not inflate. */
    cpuSeconds: number;
    /**
     * Bytes of resource inputs in plan.json (each resource's inputs as JSON): what Pulumi keeps in the stack's state
     * and sends on every checkpoint. Inputs known only after apply (AWS/Azure node lists) are unknown offline; the
     * mock-engine test test/state-size.test.ts measures those.
     */
    inputBytes: number;
    code: number | null;
}

/** Bytes of every resource's inputs in a plan.json, as JSON text. */
export function inputBytes(plan: { resources: Array<{ inputs?: unknown }> }): number {
    return plan.resources.reduce((n, r) => n + Buffer.byteLength(JSON.stringify(r.inputs ?? {})), 0);
}

/** Plans one scaled stack in a child process; returns what it registered and how long it took. */
export function benchOne(example: string, nodes: number, opts: { noScheduler?: boolean } = {}): BenchRow {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-bench-"));
    const file = join(dir, "Pulumi.bench.yaml");
    writeFileSync(file, stringify(scaledStack(example, nodes, opts), { aliasDuplicateObjects: false }));
    const start = process.hrtime.bigint();
    // what a user runs: the installed command, bin/rdmakit.cjs (package.json "bin"), which registers tsx and loads
    // node_modules' CommonJS files as Node does (bin/node-modules.cjs), in this process's folder (the program keeps its
    // switch texts under out/bench/inputs there, named by digest: a text an earlier run kept is not written again)
    // Under bash, whose `times` prints the CPU its children used (user, then system): the plan's own CPU, not the wall
    // clock of a machine other work shares
    const r = spawnSync("bash", ["-c", '"$@"; rc=$?; times >&2; exit $rc', "bench", process.execPath, join(ROOT, "bin", "rdmakit.cjs"), "plan", "--config", file, "--out", join(dir, "out")], {
        encoding: "utf8", timeout: 600_000,
    });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    // the last line of `times`: the children's user and system time, e.g. `0m12.345s 0m1.234s`
    const cpu = /(\d+)m([\d.]+)s (\d+)m([\d.]+)s\s*$/.exec(r.stderr ?? "");
    const cpuSeconds = cpu ? Number(cpu[1]) * 60 + Number(cpu[2]) + Number(cpu[3]) * 60 + Number(cpu[4]) : -1;
    let resources = -1, bytes = -1;
    try {
        const plan = JSON.parse(readFileSync(join(dir, "out", "plan.json"), "utf8"));
        resources = plan.resources.length;
        bytes = inputBytes(plan);
    } catch {
        process.stderr.write(r.stderr);
    }
    return { example: opts.noScheduler ? `${example} (no scheduler)` : example, nodes, resources, seconds: Math.round(seconds * 100) / 100, cpuSeconds: Math.round(cpuSeconds * 100) / 100, inputBytes: bytes, code: r.status };
}

/**
 * Each row's CPU over the CPU of the smallest stack of its example (its fabric), measured in the same run: issue 37's
 * bounds are such ratios (the 4,096-node AWS plan within 1.5x of the 8-node one, the 2,048-host RoCE plan within 2x
 * of the 8-host one). A row measured variant (no scheduler) is compared with its example's smallest plain row.
 * undefined where there is no such row or a CPU figure is missing (-1: `times` gave none).
 */
export function cpuRatios(rows: readonly BenchRow[]): Array<number | undefined> {
    const fabric = (r: BenchRow) => r.example.replace(/ \(.*\)$/, "");
    return rows.map((r) => {
        const base = rows.filter((b) => b.example === fabric(r)).reduce<BenchRow | undefined>((m, b) => (m === undefined || b.nodes < m.nodes ? b : m), undefined);
        return base === undefined || base.cpuSeconds <= 0 || r.cpuSeconds <= 0 ? undefined : r.cpuSeconds / base.cpuSeconds;
    });
}

if (require.main === module) {
    // smallest first within each fabric, so each ratio's base is printed before the rows compared with it
    const awsSizes = process.argv.slice(2).map(Number).filter((n) => n > 0).sort((a, b) => a - b);
    const runs: Array<[string, number]> = [
        ...(awsSizes.length ? awsSizes : [8, 128, 1024, 4096]).map((n) => ["aws-p5.yaml", n] as [string, number]),
        ["azure-h100.yaml", 4], ["azure-h100.yaml", 300],
        ["roce-h100.yaml", 8], ["roce-h100.yaml", 1024], ["roce-h100.yaml", 2048],
    ];
    console.log("example                        nodes  resources  seconds  CPU s  CPU x  inputs (KB)  KB/node");
    const rows = runs.map(([example, nodes]) => [example, nodes, {}] as const);
    // Slurm's share of the plan: the largest RoCE stack again with scheduler.type none
    const all: Array<readonly [string, number, { noScheduler?: boolean }]> = [...rows, ["roce-h100.yaml", 2048, { noScheduler: true }]];
    const done: BenchRow[] = [];
    for (const [example, nodes, opts] of all) {
        const row = benchOne(example, nodes, opts);
        done.push(row);
        const ratio = cpuRatios(done)[done.length - 1];
        const kb = row.inputBytes / 1024;
        console.log(`${row.example.padEnd(30)} ${String(nodes).padStart(5)}  ${String(row.resources).padStart(9)}  ${row.seconds.toFixed(2).padStart(7)}  ${row.cpuSeconds.toFixed(2).padStart(5)}  ` +
            `${(ratio === undefined ? "-" : `${ratio.toFixed(2)}x`).padStart(5)}  ${kb.toFixed(0).padStart(11)}  ${(kb / nodes).toFixed(2).padStart(7)}${row.code === 0 ? "" : `  (exit ${row.code})`}`);
    }
    console.log("CPU x: the plan's CPU over that of the smallest stack of its example, measured in this run (issue 37: AWS 4,096 nodes within 1.5x, RoCE 2,048 hosts within 2x)");
}
