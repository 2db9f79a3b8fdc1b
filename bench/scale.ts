/*
 * Scale benchmark: `rdmakit plan` (index.ts on Pulumi's mock engine) for growing clusters of each fabric.
 * Each run is its own process, as `pulumi up` would be. Prints nodes, resources registered and wall time.
 *
 *   npm run bench                 # default sizes
 *   npm run bench -- 8 1024 4096  # AWS sizes of your choice (Azure is capped at one 300-VM partition)
 */
import { spawnSync } from "child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "fs";
import { tmpdir } from "os";
import { join } from "path";
import { pathToFileURL } from "url";
import { parse, stringify } from "yaml";

const ROOT = join(__dirname, "..");

/** A copy of a bundled example with `nodes` GPU nodes. */
export function scaledStack(example: string, nodes: number): unknown {
    const doc = parse(readFileSync(join(ROOT, "examples", example), "utf8"));
    const c = doc.config["rdmakit:cluster"];
    if (c.fabric === "roce") {
        const host = c.roce.hosts[0];
        c.roce.hosts = Array.from({ length: nodes }, (_, i) => ({
            ...host, name: `gpu${String(i + 1).padStart(4, "0")}`, address: `10.${20 + ((i + 1) >> 16)}.${((i + 1) >> 8) & 255}.${(i + 1) & 255}`,
        }));
        // one NVUE leaf per rail, each with a port per host
        const rails = host.railNics.length;
        c.roce.switches = Array.from({ length: rails }, (_, r) => ({
            name: `rail${r}`, os: "nvue", managementAddress: `10.99.0.${r + 1}`, sshUser: "cumulus",
            hostPorts: Array.from({ length: nodes }, (_, i) => `swp${i + 1}`), speedGbps: 400, cableLengthM: 5,
        }));
    } else {
        c.nodes = nodes;
        if (c.azure && nodes > 100) c.azure.quotaRaised = true;
    }
    return doc;
}

export interface BenchRow {
    example: string;
    nodes: number;
    resources: number;
    seconds: number;
    code: number | null;
}

/** Plans one scaled stack in a child process; returns what it registered and how long it took. */
export function benchOne(example: string, nodes: number): BenchRow {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-bench-"));
    const file = join(dir, "Pulumi.bench.yaml");
    writeFileSync(file, stringify(scaledStack(example, nodes), { aliasDuplicateObjects: false }));
    const tsx = pathToFileURL(join(ROOT, "node_modules", "tsx", "dist", "loader.mjs")).href;
    const start = process.hrtime.bigint();
    const r = spawnSync(process.execPath, ["--import", tsx, join(ROOT, "bin", "rdmakit.ts"), "plan", "--config", file, "--out", join(dir, "out")], {
        encoding: "utf8", timeout: 600_000,
    });
    const seconds = Number(process.hrtime.bigint() - start) / 1e9;
    let resources = -1;
    try {
        resources = JSON.parse(readFileSync(join(dir, "out", "plan.json"), "utf8")).resources.length;
    } catch {
        process.stderr.write(r.stderr);
    }
    return { example, nodes, resources, seconds: Math.round(seconds * 100) / 100, code: r.status };
}

if (require.main === module) {
    const awsSizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
    const runs: Array<[string, number]> = [
        ...(awsSizes.length ? awsSizes : [8, 128, 1024, 4096]).map((n) => ["aws-p5.yaml", n] as [string, number]),
        ["azure-h100.yaml", 4], ["azure-h100.yaml", 300],
        ["roce-h100.yaml", 8], ["roce-h100.yaml", 1024],
    ];
    console.log("example          nodes  resources  seconds");
    for (const [example, nodes] of runs) {
        const row = benchOne(example, nodes);
        console.log(`${example.padEnd(16)} ${String(nodes).padStart(5)}  ${String(row.resources).padStart(9)}  ${row.seconds.toFixed(2).padStart(7)}${row.code === 0 ? "" : `  (exit ${row.code})`}`);
    }
}
