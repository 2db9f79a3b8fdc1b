/**
 * `nvidia-smi nvlink --status` (`-s`) → links per GPU. Forms read (sources in test/fixtures/health/README.md):
 *   GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-...)          a GPU line, then one line per link:
 *            Link 0: 25 GB/s                              active, at that speed (A100 "25 GB/s", H100 "26.562 GB/s")
 *            Link 3: <inactive>                           down (Azure/azhpc-diagnostics#73, a V100 capture)
 *   NVML: Unable to retrieve NVLink information as all links are inActive    every link of that GPU down (leptonai/gpud#1085)
 * An empty output is a machine without NVLink (leptonai/gpud testdata nvidia-smi.nvlink.status.a10 is empty).
 */
import { boundedLines } from "./text";
import { HealthParseError } from "./types";

export interface NvlinkGpu {
    index: number;
    line: string;
    links: Array<{ id: number; gbps?: number; line: string }>;
    /** the "all links are inactive" line, when nvidia-smi printed it for this GPU */
    allInactive?: string;
}

/** nvidia-smi's own failures: it could not ask the driver (no GPU, no driver, a version mismatch) */
const SMI_ERROR = /^(Failed to initialize NVML|NVIDIA-SMI has failed|No devices were found|Unable to determine the device handle)/i;

/**
 * The other `nvidia-smi nvlink` subcommands print the same "GPU N:" / "Link N:" frame with other values: `-R`
 * "Link 0: Remote Device 00000000:D5:00.0: Link 0" (as published, HPE-Japan-Presales/e-learning
 * gpu/h100/mgmt_gpu_on_dl380agen11.md); the error counters (`-e`) and throughput (`-gt`) carry words no link state
 * holds ("Errors", "Tx", "Rx"; no published capture of them was found, so only those words are matched). Refused by
 * name, never read as a link state.
 */
function otherNvlink(value: string): string | undefined {
    if (/^Remote Device /i.test(value)) return "nvidia-smi nvlink -R (remote devices)";
    if (/Errors?:/i.test(value)) return "nvidia-smi nvlink -e (error counters)";
    if (/^(Data|Raw) (Tx|Rx)/i.test(value)) return "nvidia-smi nvlink -gt (throughput)";
    return undefined;
}

export function parseNvlinkStatus(text: string): { gpus: NvlinkGpu[]; errors: string[] } {
    const gpus: NvlinkGpu[] = [];
    const errors: string[] = [];
    let cur: NvlinkGpu | undefined;
    for (const raw of boundedLines(text)) {
        const line = raw.trim();
        // "# cmd: ..." lines are a person's note above a pasted capture, never the tool's
        if (!line || line.startsWith("#")) continue;
        if (SMI_ERROR.test(line)) {
            errors.push(line);
            continue;
        }
        // R535+ print the library's version after "Driver/library version mismatch" ("NVML library version: 570.211")
        if (errors.length && /^NVML library version: \S+$/i.test(line)) {
            errors[errors.length - 1] += `; ${line}`;
            continue;
        }
        const g = /^GPU (\d+): .*$/.exec(line);
        if (g) {
            cur = { index: Number(g[1]), line, links: [] };
            gpus.push(cur);
            continue;
        }
        // `nvidia-smi nvlink -c` prints "Link 0, P2P is supported: true" (no colon after the number)
        if (/^Link \d+, /.test(line)) throw new HealthParseError(`is nvidia-smi nvlink -c (capabilities) output ("${line.slice(0, 80)}"), not nvidia-smi nvlink --status`);
        const l = /^Link (\d+):\s*(.*)$/.exec(line);
        if (l && cur) {
            const speed = /^([\d.]+)\s*GB\/s$/.exec(l[2]);
            if (!speed && !/^<inactive>$/i.test(l[2])) {
                const other = otherNvlink(l[2]);
                if (other) throw new HealthParseError(`is ${other} output ("${line.slice(0, 80)}"), not nvidia-smi nvlink --status`);
                throw new HealthParseError(`link line "${line}" is neither "<N> GB/s" nor "<inactive>"`);
            }
            cur.links.push({ id: Number(l[1]), gbps: speed ? Number(speed[1]) : undefined, line });
            continue;
        }
        if (/all links are inactive/i.test(line) && cur) {
            cur.allInactive = line;
            continue;
        }
        throw new HealthParseError(`line "${line.slice(0, 120)}" is not nvidia-smi nvlink --status output ("GPU N: <name> (UUID: ...)", "Link N: <speed> GB/s | <inactive>")`);
    }
    return { gpus, errors };
}
