/**
 * NVIDIA Xid errors the node health grade (components/health) names: what each means and whether it condemns the
 * node or is most often the application's own fault.
 * source: NVIDIA, "Xid Errors" (https://docs.nvidia.com/deploy/xid-errors/index.html): the catalog's name per code and
 * its "possible causes" (HW error / driver error / user application error / bus error / thermal / FB corruption).
 * The GPU debug guide (https://docs.nvidia.com/deploy/gpu-debug-guidelines/index.html) sends 48, 63, 64, 74, 79, 92,
 * 94, 95, 119, 120 to a GPU reset, a node drain or an RMA; the Ampere-and-later catalog
 * (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html) has the resolution bucket of every code. Codes the catalog lists only as an application's error (13,
 * 31, 43, 45, 68, 69) are shown but do not fail the node: a user's broken kernel would otherwise condemn good hardware.
 */
export interface XidInfo {
    code: number;
    meaning: string;
    /** true: the hardware (or its driver state) needs attention, the node is failing; false: most often the application */
    nodeFault: boolean;
}

const X = (code: number, meaning: string, nodeFault: boolean): XidInfo => ({ code, meaning, nodeFault });

export const XID_CATALOG: Readonly<Record<number, XidInfo>> = Object.fromEntries([
    X(13, "Graphics Engine Exception", false),
    X(31, "GPU memory page fault", false),
    X(43, "GPU stopped processing", false),
    X(45, "Preemptive cleanup, due to previous errors", false),
    X(48, "Double Bit ECC Error", true),
    X(61, "Internal micro-controller breakpoint/warning", true),
    X(62, "Internal micro-controller halt", true),
    X(63, "ECC page retirement or row remapping recording event", true),
    X(64, "ECC page retirement or row remapper recording failure", true),
    X(68, "NVDEC0 Exception", false),
    X(69, "Graphics Engine class error", false),
    X(74, "NVLINK Error", true),
    X(79, "GPU has fallen off the bus", true),
    X(92, "High single-bit ECC error rate", true),
    X(94, "Contained ECC error", true),
    X(95, "Uncontained ECC error", true),
    X(119, "GSP RPC Timeout", true),
    X(120, "GSP Error", true),
    X(121, "C2C Link Error", true),
    X(140, "Unrecovered ECC Error", true),
    X(143, "GPU Initialization Failure", true),
    X(144, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(145, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(146, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(147, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(148, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(149, "NVLink error (the catalog's NVLink range 144-150)", true),
    X(150, "NVLink error (the catalog's NVLink range 144-150)", true),
    // logged by R550+ drivers when the GPU's recovery action changes, e.g. "from 0x0 (None) to 0x1 (GPU Reset Required)"
    X(154, "GPU recovery action changed", true),
].map((x) => [x.code, x]));

/** The catalog entry, or an entry that says the code is outside the kit's table (then it fails the node: unknown is not healthy). */
export function xidInfo(code: number): XidInfo {
    return XID_CATALOG[code] ?? { code, meaning: "not in the kit's table; see https://docs.nvidia.com/deploy/xid-errors/index.html", nodeFault: true };
}
