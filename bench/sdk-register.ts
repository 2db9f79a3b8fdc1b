/*
 * What one resource costs `rdmakit plan` in Pulumi's Node SDK alone: a program of N command:local:Command resources
 * (inputs the size of a RoCE switch push's, ~1.6 KB) run by the kit's own offline runner (components/offline.ts
 * runProgramOffline, with its SDK trims: no stack traces, no promise tags), after the 8-host RoCE example's spec is
 * checked. Each size is its own process; the figure is the CPU (user + system, this process and its threads) of the
 * run, and the slope between the sizes is the SDK's cost per resource. A 2,048-host rail fabric pushes to 384 switches,
 * one command each (docs/state-size.md).
 *
 *   npx tsx bench/sdk-register.ts            # 8 and 384 resources, three runs each
 *   npx tsx bench/sdk-register.ts 8 1000     # sizes of your choice
 */
import { spawnSync } from "child_process";
import { join } from "path";

const ROOT = join(__dirname, "..");

/** One run in a fresh process: the CPU seconds the offline run of `n` commands took. */
export function registerCpu(n: number): number {
    const r = spawnSync(process.execPath, ["--import", "tsx", "--import", join(ROOT, "bin", "node-modules.cjs"), __filename, "--child", String(n)], {
        cwd: ROOT, encoding: "utf8", timeout: 120_000,
    });
    const m = /^cpu ([\d.]+)$/m.exec(r.stdout ?? "");
    if (r.status !== 0 || !m) throw new Error(`bench/sdk-register.ts: the run of ${n} resources failed (${r.status}): ${(r.stderr ?? "").slice(-400)}`);
    return Number(m[1]);
}

async function child(n: number): Promise<void> {
    const { runProgramOffline } = await import("../components/offline");
    process.env.RDMAKIT_BENCH_COMMANDS = String(n);
    const before = process.cpuUsage();
    const result = await runProgramOffline(join(ROOT, "examples", "roce-h100.yaml"), "bench", join(ROOT, "bench", "sdk-register-program.ts"));
    const used = process.cpuUsage(before);
    const commands = result.resources.filter((r) => r.type === "command:local:Command").length;
    if (commands !== n) throw new Error(`registered ${commands} commands, expected ${n}`);
    console.log(`cpu ${((used.user + used.system) / 1e6).toFixed(3)}`);
}

function median(xs: number[]): number {
    const s = [...xs].sort((a, b) => a - b);
    return s[Math.floor(s.length / 2)];
}

if (process.argv[2] === "--child") {
    child(Number(process.argv[3])).catch((e) => {
        console.error(e);
        process.exit(1);
    });
} else if (require.main === module) {
    const sizes = process.argv.slice(2).map(Number);
    const [small, large] = sizes.length === 2 ? sizes : [8, 384];
    const runs: Record<number, number[]> = { [small]: [], [large]: [] };
    for (let i = 0; i < 3; i++) for (const n of [small, large]) runs[n].push(registerCpu(n));
    const a = median(runs[small]), b = median(runs[large]);
    console.log(`resources  CPU s (median of 3)`);
    console.log(`${String(small).padStart(9)}  ${a.toFixed(2)}`);
    console.log(`${String(large).padStart(9)}  ${b.toFixed(2)}`);
    console.log(`per resource: ${(((b - a) / (large - small)) * 1000).toFixed(2)} ms of CPU`);
}
