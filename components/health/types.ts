/**
 * Node health gate: shared words. A node folder holds the outputs of seven tools under fixed names (FILES); parsers
 * turn each into facts, the grader (grade.ts) compares the facts with what the stack's hardware should show.
 */

/** The files of one node folder, out/<stack>/health/<node>/, and the command that writes each. */
export const FILES = {
    smi: { name: "nvidia-smi-q.txt", command: "nvidia-smi -q" },
    nvlink: { name: "nvidia-smi-nvlink.txt", command: "nvidia-smi nvlink --status" },
    dcgm: { name: "dcgmi-diag.txt", command: "dcgmi diag -r <level>" },
    dcgmJson: { name: "dcgmi-diag.json", command: "dcgmi diag -r <level> -j" },
    lspci: { name: "lspci-vv.txt", command: "lspci -vv (as root)" },
    ibstat: { name: "ibstat.txt", command: "ibstat" },
    fiInfo: { name: "fi_info.txt", command: "fi_info -p efa" },
    dmesg: { name: "dmesg.txt", command: "dmesg (the kernel log since boot)" },
    rdmaDevices: { name: "rdma-devices.txt", command: "ls -l /sys/class/infiniband/" },
} as const;

export const HEALTH_COMPONENTS = ["gpu", "ecc", "pcie", "nvlink", "nic", "xid", "nvswitch", "dcgm", "clocks"] as const;
export type Component = (typeof HEALTH_COMPONENTS)[number];

/**
 * What a node must have checked to pass, by default: everything but DCGM, which not every image carries (the
 * node_health role runs dcgmi only where it is installed); cluster.validation.health.require can add it. One rule for
 * `rdmakit health` and the validation gate: a node passes with no finding, every file readable, and every required
 * component checked; a component not required that could not be checked is a note.
 */
export const DEFAULT_HEALTH_REQUIRE: readonly Component[] = ["gpu", "ecc", "pcie", "nvlink", "nic", "xid", "nvswitch", "clocks"];

/** dcgmi diag -r level (1 quick, 2 medium: a few minutes, 3 long, 4 extended; NVIDIA DCGM user guide, "Run Levels"). */
export const DEFAULT_DCGM_LEVEL = 2;

/**
 * How lasting a finding is (README "Node health"): "persistent" the node's current state shows it (a GPU missing, a
 * link down, a reset required, a DCGM test failed); "transient" an event in the kernel log within the Xid window or a
 * one-snapshot reading (clocks held down) while the current state shows nothing: check again before acting;
 * "note" does not fail the node. An NVSwitch SXid (component "nvswitch", kernel log) is never persistent: no file of the
 * node folder holds the switch's own state. Findings carry "persistent" or "transient"; notes are NodeHealth.notes.
 */
export type Persistence = "persistent" | "transient" | "note";

/** One reason a node fails: the component, what is wrong, and the line of the tool's output that shows it. */
export interface Finding {
    component: Component;
    message: string;
    file: string;
    /** the output line (trimmed) that shows it; absent when the finding is an absence (a GPU missing) */
    evidence?: string;
    persistence: Exclude<Persistence, "note">;
}

/** true when the finding is an event or a snapshot that the node's current state does not confirm: never replace a node on it. */
export function isTransient(f: Pick<Finding, "persistence">): boolean {
    return f.persistence !== "persistent";
}

/** A check that could not run: the file is missing, or the tool said it could not answer. Never healthy. */
export interface NotChecked {
    component: Component;
    file: string;
    reason: string;
}

/** A file the grader could not read as the tool's output: exit 2. */
export interface Unreadable {
    file: string;
    reason: string;
}

export interface NodeHealth {
    node: string;
    /** healthy: every check ran and passed; failing: at least one finding; incomplete: no finding, some not checked; unreadable: a file is not the tool's output */
    verdict: "healthy" | "failing" | "incomplete" | "unreadable";
    findings: Finding[];
    notChecked: NotChecked[];
    unreadable: Unreadable[];
    /** facts that do not fail the node but a reader wants (an application's Xid 13, a DCGM warning) */
    notes: string[];
}

/** What every node of the stack should show (from the plan and the catalog; expect.ts). */
export interface HealthExpectation {
    /** e.g. "p5.48xlarge", "Standard_ND96isr_H100_v5", "bare metal" */
    hostType: string;
    gpus: number;
    gpuModel: string;
    /** NVIDIA GPUs: nvidia-smi, NVLink and DCGM apply; AMD (rccl) GPUs: they do not */
    nvidia: boolean;
    /** catalog memory of the GPU model in GiB, when known */
    gpuMemoryGiB?: number;
    /** catalog PCIe link of the GPU model, when known */
    gpuPcie?: { gen: number; width: number };
    /** NVLink links per GPU when the board has NVSwitch and the catalog knows the count; 0 when no NVLink is expected */
    nvlinkLinks?: number;
    nvswitch: boolean;
    fabric: "aws-efa" | "azure-ib" | "roce";
    /** RDMA devices: EFA devices (AWS), IB HCAs (Azure, by name), RoCE rails (by name) */
    nics: { names: string[]; count: number; rateGbps?: number; linkLayer: "InfiniBand" | "Ethernet" | "efa" };
    /** Xids older than this (minutes before the log's newest line) fail only while the GPU's state still asks for action; default XID_WINDOW_MINUTES */
    xidWindowMinutes?: number;
    /** components a node must have checked to pass; default DEFAULT_HEALTH_REQUIRE */
    require?: Component[];
    /** dcgmi diag -r level the node_health role runs; default DEFAULT_DCGM_LEVEL */
    dcgmLevel?: number;
}

/** The one pass rule, as the reports print it. */
export function healthRule(exp: Pick<HealthExpectation, "require">): string {
    const req = exp.require ?? DEFAULT_HEALTH_REQUIRE;
    const optional = HEALTH_COMPONENTS.filter((c) => !req.includes(c));
    return `a node passes with no finding, every file readable, and ${req.join(", ")} checked` +
        (optional.length ? ` (${optional.join(", ")} not required: a note when not checked; cluster.validation.health.require)` : "");
}

/**
 * Default Xid window: 120 minutes. An Xid that still needs action leaves "Reset Required" / "GPU Recovery Action" /
 * "Pending" set in nvidia-smi -q (R510+/R565+ drivers), which fails the node at any age; the window covers drivers
 * without those fields and events during or just before the validation run. Two hours is AzNHC's default for its Xid
 * check (Azure/azurehpc-health-checks customTests/azure_gpu_xid.nhc, time_threshold=2 hours, commit 0e0a1ac2);
 * spec field validation.health.xidWindowMinutes.
 */
export const XID_WINDOW_MINUTES = 120;

/** Thrown by a parser on text that is not the tool's output; the message says what was expected. */
export class HealthParseError extends Error {
    constructor(message: string) {
        super(message);
        this.name = "HealthParseError";
    }
}

/** PCIe transfer rate per lane (GT/s) of each generation. source: PCI-SIG, as lspci prints them (pciutils ls-caps.c link_speed; 128GT/s since commit 3ec74c7, "Add support to decode Gen7 speed"). */
export const PCIE_GTS: Readonly<Record<number, number>> = { 1: 2.5, 2: 5, 3: 8, 4: 16, 5: 32, 6: 64, 7: 128 };

/** The generation of a GT/s figure, or undefined. */
export function pcieGen(gts: number): number | undefined {
    const hit = Object.entries(PCIE_GTS).find(([, v]) => v === gts);
    return hit ? Number(hit[0]) : undefined;
}
