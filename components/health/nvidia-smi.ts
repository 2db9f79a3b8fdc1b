/**
 * `nvidia-smi -q` (text) → per-GPU facts. The output is an indented tree (four spaces a level) of `Key : value` lines
 * and section headers; the parser builds the tree and reads fields by path, so fields added or moved between
 * drivers do not disturb it. Forms read (source: real captures in test/fixtures/health/README.md and NVIDIA's
 * nvidia-smi manual, https://docs.nvidia.com/deploy/nvidia-smi/index.html):
 *  - "Clocks Throttle Reasons" (drivers before R530) and "Clocks Event Reasons" (R530 on); a "Clocks Event Reasons
 *    Counters" section (durations, R570+) is not a reason and is ignored
 *  - ECC counts as "Single Bit / Double Bit ... Total" (older), "SRAM/DRAM Correctable/Uncorrectable" (R510),
 *    "SRAM Uncorrectable Parity / SEC-DED" (R535+); "N/A" wherever the GPU does not report a field
 *  - "Retired Pages ... Pending Page Blacklist" / "Pending Page Retirement" / "Pending"; "Remapped Rows" (A100 on)
 *    with "Pending" and "Remapping Failure Occurred", or "Remapped Rows : N/A"
 *  - "GPU Reset Status: Reset Required / Drain and Reset Recommended" (R510+), "GPU Recovery Action" (R565+),
 *    "SRAM Threshold Exceeded" (R535+), "Fabric: State / Status" (NVSwitch)
 *  - the driver's own failures: "No devices were found", "NVIDIA-SMI has failed because it couldn't communicate with
 *    the NVIDIA driver", "Unable to determine the device handle for GPU ...: <error>"
 * XML (`-q -x`) and CSV (`--query-gpu`) are other grammars and are refused by name.
 */
import { boundedLines, keyValue } from "./text";
import { HealthParseError } from "./types";

interface Node {
    key: string;
    value?: string;
    line: string;
    children: Node[];
}

export interface SmiGpu {
    busId: string;
    /** the section header line, e.g. "GPU 00000000:19:00.0" */
    header: string;
    productName?: string;
    performanceState?: string;
    pcie: { genMax?: number; genCurrent?: number; widthMax?: number; widthCurrent?: number; lines: string[] };
    /** uncorrectable ECC counts that are not zero, as "<section> <field> : N" lines */
    uncorrectable: string[];
    retiredPending?: string;
    remapPending?: string;
    remapFailure?: string;
    resetRequired?: string;
    /** "GPU Recovery Action" (R565+) when it asks for a reset, a reboot or a drain (see RECOVERY) */
    recoveryAction?: string;
    /** "GPU Recovery Action" with a value neither "none" (RECOVERY.nothing) nor one of RECOVERY.act: a note */
    recoveryActionUnknown?: string;
    /** "SRAM Threshold Exceeded : Yes" (R535+): the GPU's SRAM error count passed NVIDIA's RMA threshold */
    sramThreshold?: string;
    drainRecommended?: string;
    /** active clock event reasons that slow the GPU down, as their lines */
    slowdowns: string[];
    fabric?: { state?: string; status?: string; line: string };
    /** R580 "Fabric > Health > Summary" when it is not Healthy or N/A */
    fabricHealth?: string;
    /**
     * "Fabric > Health" fields (R570 on; R570 prints them without a Summary) whose value says a problem, as
     * "Fabric Health <key> : <value>"; `transient` for a route recovery in progress (the fabric is rerouting now)
     */
    fabricHealthFields: Array<{ line: string; transient: boolean }>;
    /** "Fabric > Health" fields whose value is neither clear nor a known problem: a note */
    fabricHealthUnknown: string[];
    migMode?: string;
    /** "ECC Mode > Current" (Enabled, Disabled, N/A) */
    eccMode?: string;
    /** R580 "Channel Repair Pending" / "TPC Repair Pending" lines whose value is not No or N/A ("GPU requires reset") */
    repairPending: string[];
    /** R580 "Unrepairable Memory : Yes" */
    unrepairable?: string;
    /** "FB Memory Usage > Total" in MiB */
    memoryMiB?: number;
    /** "Remapped Rows > Uncorrectable Error : N" above zero: rows already repaired by remapping */
    remappedUncorrectable?: string;
    /**
     * the section holds its "Processes" field. Every GPU section of a whole `nvidia-smi -q` has one, near its end (last
     * before R560, followed only by "Capabilities" since: every capture in test/fixtures/health, drivers 470 to 565), so
     * a section without it was cut short, or is `nvidia-smi -q -d <sections>`: what follows the cut is not checked
     */
    complete: boolean;
}

export interface SmiReport {
    driverVersion?: string;
    /** "Attached GPUs": what the driver sees; the GPU sections may be fewer (`nvidia-smi -q -i <n>`, or a capture cut short) */
    attached?: number;
    gpus: SmiGpu[];
    /** the driver said it cannot answer (no GPU, no driver, a GPU without a handle): each line as printed */
    driverErrors: string[];
}

function tree(lines: string[]): Node[] {
    const root: Node = { key: "", line: "", children: [] };
    const stack: Array<{ indent: number; node: Node }> = [{ indent: -1, node: root }];
    for (const raw of lines) {
        const line = raw.replaceAll("\t", "    ").trimEnd();
        if (!line.trim() || line.startsWith("#") || /^=+\s*NVSMI LOG\s*=+$/.test(line.trim())) continue;
        const indent = line.length - line.trimStart().length;
        const gpuHeader = /^GPU [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f]$/.test(line.trim());
        const m = gpuHeader ? undefined : keyValue(line);
        const node: Node = m ? { key: m.key, value: m.value, line: line.trim(), children: [] } : { key: line.trim(), line: line.trim(), children: [] };
        while (stack.length > 1 && stack[stack.length - 1].indent >= indent) stack.pop();
        stack[stack.length - 1].node.children.push(node);
        stack.push({ indent, node });
    }
    return root.children;
}

const child = (n: Node | undefined, key: string): Node | undefined => n?.children.find((c) => c.key.toLowerCase() === key.toLowerCase());
const at = (n: Node | undefined, ...path: string[]): Node | undefined => path.reduce<Node | undefined>((acc, k) => child(acc, k), n);
const val = (n: Node | undefined, ...path: string[]): string | undefined => at(n, ...path)?.value;
const num = (s: string | undefined): number | undefined => {
    const m = /^(\d+)x?$/.exec(s?.trim() ?? "");
    return m ? Number(m[1]) : undefined;
};

/** Every node under `n` (any depth) whose key matches: fields that moved between drivers are found wherever they are. */
function find(n: Node, key: RegExp): Node[] {
    const out: Node[] = [];
    const walk = (x: Node): void => {
        for (const c of x.children) {
            if (key.test(c.key)) out.push(c);
            walk(c);
        }
    };
    walk(n);
    return out;
}

/** Uncorrectable counts under "ECC Errors" (every driver's naming) that are a number above zero. */
function uncorrectable(ecc: Node | undefined): string[] {
    const out: string[] = [];
    const walk = (n: Node, trail: string[]): void => {
        for (const c of n.children) {
            const path = [...trail, c.key];
            const isUncorr = /uncorrectable|double bit/i.test(path.join(" ")) && !/sources/i.test(path.join(" "));
            // "Double Bit" sections list per-memory counts and a Total: the Total alone, so one error is one finding
            const isLeaf = c.children.length === 0 && c.value !== undefined;
            const inDoubleBit = path.some((p) => /double bit/i.test(p));
            if (isLeaf && isUncorr && (!inDoubleBit || /^total$/i.test(c.key)) && /^\d+$/.test(c.value ?? "") && Number(c.value) > 0) {
                out.push(`${trail.join(" ")} ${c.line}`.trim());
            }
            walk(c, path);
        }
    };
    if (ecc) walk(ecc, []);
    return out;
}

function clocks(gpu: Node): string[] {
    const sec = child(gpu, "Clocks Event Reasons") ?? child(gpu, "Clocks Throttle Reasons");
    const out: string[] = [];
    const walk = (n: Node): void => {
        for (const c of n.children) {
            if (/slowdown|power brake/i.test(c.key) && /^active$/i.test(c.value ?? "")) out.push(c.line);
            walk(c);
        }
    };
    if (sec) walk(sec);
    // "HW Slowdown : Active" is the parent of its cause; keep the causes when they are shown
    return out.length > 1 ? out.filter((l) => !/^HW Slowdown\s*:/i.test(l)) : out;
}

/**
 * The fields of "Fabric > Health" that NVML's fabric health mask carries (nvml.h NVML_GPU_FABRIC_HEALTH_MASK_*: degraded
 * bandwidth, route recovery in progress, route unhealthy, access timeout recovery, incorrect configuration), with the
 * values nvidia-smi prints for a problem: "Bandwidth : Degraded" (healthy "Full": kubernetes-sigs/dra-driver-nvidia-gpu#626),
 * "True" for the three conditions ("False" when clear), an "Incorrect Configuration" naming one of NVML's causes (wrong
 * SysGUID or chassis serial, no partition, insufficient NVLinks, incompatible GPU firmware, invalid location; "None" when
 * clear). gpud reads the same mask as one issue each (leptonai/gpud pkg/nvidia/nvml/device/fabric_state.go
 * getHealthMaskIssues). "N/A" (R570 prints it on every GPU without a fabric: test/fixtures/health
 * nvidia-smi-q.rtx5090-570.124.06.txt), "Not Supported" and a bracketed "[...]" read as nothing; a value neither clear nor
 * a known problem is a note, never a finding (a wording not seen yet must not fail a healthy node). "Summary" is read on
 * its own (fabricHealth); "Partition Assigned" (R580) names no problem.
 */
const NOTHING = /^(n\/a|not supported|\[.*\])$/i;

/**
 * "GPU Recovery Action" (R565+). nvidia-smi prints NVML's nvmlDeviceGpuRecoveryAction_t as "None", "Reset", "Reboot",
 * "Drain P2P", "Drain and Reset" (NVIDIA, "A100 GPU memory error management", Error Recovery and Response Flags,
 * https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html; the same words
 * utkuozdemir/nvidia_gpu_exporter#448 maps); NVML later adds RECOVER_IMEX_DOMAIN, BUS_RESET and SYSTEM_REBOOT
 * (cuda.bindings.nvml.DeviceGpuRecoveryAction). A value that asks for a reset, a reboot or a drain fails the GPU; "None",
 * N/A, "Not Supported", a bracketed "[...]" and "Requested functionality has been deprecated" (what R570+ prints for a
 * field it dropped: Reset Required of the RTX 5090 capture) say nothing; any other value (e.g. an IMEX domain
 * recovery, which asks nothing of this GPU: kubernetes-sigs/dra-driver-nvidia-gpu#1441) is a note, never a finding.
 */
const RECOVERY = { nothing: /^(none|n\/a|not supported|\[.*\]|requested functionality has been deprecated)$/i, act: /\b(reset|reboot|drain)\b/i };
const FABRIC_HEALTH: Array<{ key: RegExp; clear: RegExp; bad: RegExp; transient?: boolean }> = [
    { key: /^Bandwidth$/i, clear: /^full$/i, bad: /^degraded$/i },
    { key: /^Route Recovery in progress$/i, clear: /^(false|no)$/i, bad: /^(true|yes)$/i, transient: true },
    { key: /^Route Unhealthy$/i, clear: /^(false|no)$/i, bad: /^(true|yes)$/i },
    { key: /^Access Timeout Recovery$/i, clear: /^(false|no)$/i, bad: /^(true|yes)$/i },
    { key: /^Incorrect Configuration$/i, clear: /^(none|false|no)$/i, bad: /incorrect|insufficient|incompatible|invalid|no partition/i },
];

function fabricHealthFields(health: Node | undefined): { bad: SmiGpu["fabricHealthFields"]; unknown: string[] } {
    const bad: SmiGpu["fabricHealthFields"] = [];
    const unknown: string[] = [];
    for (const c of health?.children ?? []) {
        const rule = FABRIC_HEALTH.find((r) => r.key.test(c.key));
        const v = (c.value ?? "").trim();
        if (!rule || !v || NOTHING.test(v) || rule.clear.test(v)) continue;
        const line = `Fabric Health ${c.key} : ${v}`;
        if (rule.bad.test(v)) bad.push({ line, transient: rule.transient === true });
        else unknown.push(line);
    }
    return { bad, unknown };
}

function recovery(n: Node | undefined): Pick<SmiGpu, "recoveryAction" | "recoveryActionUnknown"> {
    const v = (n?.value ?? "").trim();
    if (!n || !v || RECOVERY.nothing.test(v)) return {};
    return RECOVERY.act.test(v) ? { recoveryAction: n.line } : { recoveryActionUnknown: n.line };
}

function gpuFacts(n: Node): SmiGpu {
    const link = at(n, "PCI", "GPU Link Info");
    const gen = child(link, "PCIe Generation");
    const width = child(link, "Link Width");
    const retired = child(n, "Retired Pages");
    const retiredPending = retired?.children.find((c) => /pending/i.test(c.key));
    const remap = child(n, "Remapped Rows");
    const fabric = child(n, "Fabric");
    const health = fabricHealthFields(at(fabric, "Health"));
    return {
        busId: n.key.replace(/^GPU\s+/, ""),
        header: n.line,
        productName: val(n, "Product Name"),
        performanceState: val(n, "Performance State"),
        pcie: {
            genMax: num(val(gen, "Max")), genCurrent: num(val(gen, "Current")),
            widthMax: num(val(width, "Max")), widthCurrent: num(val(width, "Current")),
            lines: [at(gen, "Current")?.line, at(gen, "Max")?.line, at(width, "Current")?.line, at(width, "Max")?.line].filter((l): l is string => !!l),
        },
        uncorrectable: uncorrectable(child(n, "ECC Errors")),
        retiredPending: retiredPending && /^yes$/i.test(retiredPending.value ?? "") ? retiredPending.line : undefined,
        remapPending: /^yes$/i.test(val(remap, "Pending") ?? "") ? at(remap, "Pending")?.line : undefined,
        remapFailure: /^yes$/i.test(val(remap, "Remapping Failure Occurred") ?? "") ? at(remap, "Remapping Failure Occurred")?.line : undefined,
        resetRequired: /^yes$/i.test(val(n, "GPU Reset Status", "Reset Required") ?? "") ? at(n, "GPU Reset Status", "Reset Required")?.line : undefined,
        drainRecommended: /^yes$/i.test(val(n, "GPU Reset Status", "Drain and Reset Recommended") ?? "")
            ? at(n, "GPU Reset Status", "Drain and Reset Recommended")?.line : undefined,
        slowdowns: clocks(n),
        ...recovery(child(n, "GPU Recovery Action")),
        sramThreshold: /^yes$/i.test(val(n, "ECC Errors", "Aggregate", "SRAM Threshold Exceeded") ?? "") ? at(n, "ECC Errors", "Aggregate", "SRAM Threshold Exceeded")?.line : undefined,
        // evidence as "Key : value" without the tool's column padding (R580 widened it to 55 characters), sections left out
        fabric: fabric && fabric.children.length
            ? { state: val(fabric, "State"), status: val(fabric, "Status"), line: fabric.children.filter((c) => c.value !== undefined).map((c) => `${c.key} : ${c.value}`).join(", ") }
            : undefined,
        migMode: val(n, "MIG Mode", "Current"),
        eccMode: val(n, "ECC Mode", "Current"),
        repairPending: find(n, /^(Channel|TPC) Repair Pending$/i).filter((c) => !/^(no|n\/a)$/i.test(c.value ?? "")).map((c) => c.line),
        unrepairable: find(n, /^Unrepairable Memory$/i).find((c) => /^yes$/i.test(c.value ?? ""))?.line,
        memoryMiB: num(/^(\d+) MiB$/.exec(val(n, "FB Memory Usage", "Total") ?? "")?.[1]),
        remappedUncorrectable: /^[1-9]\d*$/.test(val(remap, "Uncorrectable Error") ?? "") ? at(remap, "Uncorrectable Error")?.line : undefined,
        complete: child(n, "Processes") !== undefined,
        fabricHealthFields: health.bad,
        fabricHealthUnknown: health.unknown,
        fabricHealth: (() => {
            const h = at(fabric, "Health", "Summary");
            // "Not Supported" / "[...]" say nothing, as for the fields (NOTHING); GB200 trays report the Summary so
            // (leptonai/gpud#1106: a healthy GB200's fabric state with summary and health fields "Not Supported")
            return h && !/^healthy$/i.test(h.value ?? "") && !NOTHING.test((h.value ?? "").trim()) ? `Fabric Health ${h.key} : ${h.value ?? ""}` : undefined;
        })(),
    };
}

const DRIVER_ERRORS = [
    /^No devices were found/i,
    /^NVIDIA-SMI has failed because/i,
    /^Unable to determine the device handle for GPU/i,
    /^Failed to initialize NVML/i,
    /^Unable to (?:query|retrieve)/i,
];

/** Parses `nvidia-smi -q`; throws HealthParseError on anything else. */
export function parseNvidiaSmiQ(text: string): SmiReport {
    const lines = boundedLines(text);
    const head = text.trimStart();
    // the XML form: its declaration, its DOCTYPE or root element, or (a paste cut before them) any element's tag first;
    // no line of the text form starts with "<" (every capture in test/fixtures/health)
    if (/^<(?:\?xml|!DOCTYPE\b|[A-Za-z_][\w.-]*(?:\s[^>]*)?\/?>)/.test(head)) throw new HealthParseError("is nvidia-smi -q -x (XML); the kit reads the text form of nvidia-smi -q");
    const driverErrors = lines.map((l) => l.trim()).filter((l) => DRIVER_ERRORS.some((re) => re.test(l)));
    const nodes = tree(lines);
    const gpus = nodes.filter((n) => /^GPU [0-9A-Fa-f]{4,8}:/.test(n.key)).map(gpuFacts);
    const attachedText = nodes.find((n) => n.key === "Attached GPUs")?.value;
    const attached = attachedText !== undefined && /^\d+$/.test(attachedText) ? Number(attachedText) : undefined;
    const isLog = lines.some((l) => l.includes("NVSMI LOG")) || attached !== undefined || gpus.length > 0;
    if (!isLog && driverErrors.length === 0) {
        throw new HealthParseError("is not nvidia-smi -q output (no \"==============NVSMI LOG==============\" header, no \"Attached GPUs\", no \"GPU <bus id>\" section)");
    }
    // R610+ prints "KMD Version" and keeps "Driver Version : 610.57.04 [Deprecated; will be removed in CUDA 14.0. Use KMD
    // Version instead]" (nvidia-smi -q of 610.57.04, ggml-org/llama.cpp#27415): the version is the first word either way
    const version = nodes.find((n) => n.key === "KMD Version")?.value ?? nodes.find((n) => n.key === "Driver Version")?.value;
    return { driverVersion: version?.split(/\s+/)[0] || undefined, attached, gpus, driverErrors };
}
