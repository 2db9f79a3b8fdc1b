import { decodeNvlink5 } from "./xid-nvlink5";

/**
 * NVIDIA Xid codes: NVIDIA's resolution for each, and what that means for the health gate.
 * source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
 * sheet "Catalog", column "Resolution Bucket (Immediate Action)"; codes 1-172 as generated 2025-10-29 into leptonai/gpud
 * components/accelerator/nvidia/xid/catalog_generated.go (commit b9842de2). The catalog is for Ampere and newer GPUs
 * (A100, H100, B100, GB200) and names no driver version per code; test/fixtures/health/xid-catalog.tsv holds its rows
 * and test/health-xid.test.ts checks this table against them.
 * What fails the node: a resolution that needs the node's owner (reset the GPU, reboot, RMA/contact support, check
 * the hardware, update firmware). What is a note: "restart the app", "ignore", and codes the catalog gives no
 * resolution or does not list (a driver newer than the table): a user's broken kernel must not condemn good hardware.
 */
export type XidResolution =
    | "IGNORE" | "RESTART_APP" | "CHECK_UVM" | "WORKFLOW_XID_45" | ""
    | "RESET_GPU" | "RESTART_BM" | "RESTART_VM" | "CONTACT_SUPPORT" | "CHECK_MECHANICALS" | "UPDATE_SWFW"
    | "WORKFLOW_XID_48" | "WORKFLOW_NVLINK_ERR" | "WORKFLOW_NVLINK5_ERR" | "XID_154";

export interface XidInfo {
    code: number;
    meaning: string;
    /** the catalog's immediate resolution; undefined: the code is not in the catalog */
    resolution?: XidResolution;
    /**
     * "node": the resolution needs the node's owner (reset, reboot, RMA); "note": the application's or nothing;
     * "line": decided by the line's own words (NVLink5 Fatal/Nonfatal, Xid 94 RST:/D-RST:, Xid 154's new action)
     */
    grade: "node" | "note" | "line";
}

/** [code, immediate resolution, description], as the catalog states them. */
const CATALOG: ReadonlyArray<readonly [number, XidResolution, string]> = [
    [1, "CONTACT_SUPPORT", "Unused"],
    [2, "CONTACT_SUPPORT", "Unused"],
    [3, "CONTACT_SUPPORT", "Unused"],
    [4, "CONTACT_SUPPORT", "Unused"],
    [5, "CONTACT_SUPPORT", "Unused"],
    [6, "CONTACT_SUPPORT", "Unused"],
    [7, "CONTACT_SUPPORT", "Unused"],
    [8, "RESTART_APP", "GPU stopped processing"],
    [9, "CONTACT_SUPPORT", "Unused"],
    [10, "CONTACT_SUPPORT", "Unused"],
    [11, "RESTART_APP", "Invalid or corrupted push buffer stream"],
    [12, "CONTACT_SUPPORT", "Unused"],
    [13, "RESTART_APP", "Graphics Engine Exception"],
    [14, "IGNORE", "Unused"],
    [15, "CONTACT_SUPPORT", "Unused"],
    [16, "CONTACT_SUPPORT", "Unused"],
    [17, "CONTACT_SUPPORT", "Unused"],
    [18, "CONTACT_SUPPORT", "Unused"],
    [19, "CONTACT_SUPPORT", "Unused"],
    [20, "CONTACT_SUPPORT", "Unused"],
    [21, "CONTACT_SUPPORT", "Unused"],
    [22, "CONTACT_SUPPORT", "Unused"],
    [23, "CONTACT_SUPPORT", "Unused"],
    [24, "CONTACT_SUPPORT", "Unused"],
    [25, "RESTART_APP", "Invalid or illegal push buffer stream"],
    [26, "CONTACT_SUPPORT", "Unused"],
    [27, "CONTACT_SUPPORT", "Unused"],
    [28, "CONTACT_SUPPORT", "Unused"],
    [29, "CONTACT_SUPPORT", "Unused"],
    [30, "CONTACT_SUPPORT", "Unused"],
    [31, "RESTART_APP", "GPU memory page fault"],
    [32, "RESTART_APP", "Invalid or corrupted push buffer stream"],
    [33, "CONTACT_SUPPORT", "Unused"],
    [34, "CONTACT_SUPPORT", "Unused"],
    [35, "CONTACT_SUPPORT", "Unused"],
    [36, "CONTACT_SUPPORT", "Unused"],
    [37, "IGNORE", "Driver firmware error"],
    [38, "IGNORE", "Driver firmware error"],
    [39, "RESTART_APP", "Copy Engine Exception"],
    [40, "RESTART_APP", "Copy Engine Exception"],
    [41, "RESTART_APP", "Copy Engine Exception"],
    [42, "CONTACT_SUPPORT", "Unused"],
    [43, "IGNORE", "GPU stopped processing"],
    [44, "IGNORE", "Graphics Engine fault during context switch"],
    [45, "WORKFLOW_XID_45", "Preemptive cleanup, due to previous errors"],
    [46, "RESET_GPU", "GPU stopped processing"],
    [47, "CONTACT_SUPPORT", "Unused"],
    [48, "WORKFLOW_XID_48", "Double Bit ECC Error"],
    [49, "CONTACT_SUPPORT", "Unused"],
    [50, "CONTACT_SUPPORT", "Unused"],
    [51, "CONTACT_SUPPORT", "Unused"],
    [52, "CONTACT_SUPPORT", "Unused"],
    [53, "CONTACT_SUPPORT", "Unused"],
    [54, "CHECK_MECHANICALS", "Auxiliary power is not connected to the GPU board"],
    [55, "CONTACT_SUPPORT", "Unused"],
    [56, "CONTACT_SUPPORT", "Unused"],
    [57, "CONTACT_SUPPORT", "Unused"],
    [58, "CONTACT_SUPPORT", "Unused"],
    [59, "CONTACT_SUPPORT", "Unused"],
    [60, "RESTART_APP", "Video processor exception"],
    [61, "CONTACT_SUPPORT", "Unused"],
    [62, "RESET_GPU", "Internal micro-controller halt"],
    [63, "IGNORE", "GPU memory remapping event"],
    [64, "RESET_GPU", "GPU memory remapping failure"],
    [65, "CONTACT_SUPPORT", "Unused"],
    [66, "IGNORE", "Illegal access by driver"],
    [67, "IGNORE", "Illegal access by driver"],
    [68, "RESTART_APP", "NVDEC0 Exception"],
    [69, "RESTART_APP", "Graphics Engine class error"],
    [70, "RESTART_APP", "CE3: Unknown Error"],
    [71, "RESTART_APP", "CE4: Unknown Error"],
    [72, "RESTART_APP", "CE5: Unknown Error"],
    [73, "CONTACT_SUPPORT", "Unused"],
    [74, "WORKFLOW_NVLINK_ERR", "NVLINK Error"],
    [75, "RESTART_APP", "CE6: Unknown Error"],
    [76, "RESTART_APP", "CE7: Unknown Error"],
    [77, "RESTART_APP", "CE8: Unknown Error"],
    [78, "UPDATE_SWFW", "vGPU Start Error"],
    [79, "RESTART_BM", "GPU has fallen off the bus"],
    [80, "RESTART_APP", "Corrupted data sent to GPU"],
    [81, "CONTACT_SUPPORT", "Unused"],
    [82, "RESTART_APP", "NVJPG0 Error"],
    [83, "RESTART_APP", "NVDEC1 Error"],
    [84, "RESTART_APP", "NVDEC2 Error"],
    [85, "RESTART_APP", "CE9: Unknown Error"],
    [86, "RESTART_APP", "OFA Exception"],
    [87, "CONTACT_SUPPORT", "Unused"],
    [88, "RESTART_APP", "NVDEC3 Error"],
    [89, "RESTART_APP", "NVDEC4 Error"],
    [90, "CONTACT_SUPPORT", "Unused"],
    [91, "CONTACT_SUPPORT", "Unused"],
    [92, "IGNORE", "High single-bit ECC error rate"],
    [93, "IGNORE", "Non-fatal violation of provisioned InfoROM wear limit"],
    [94, "RESTART_APP", "Contained memory error"],
    [95, "RESET_GPU", "Uncontained memory error"],
    [96, "RESTART_APP", "NVDEC5 Error"],
    [97, "RESTART_APP", "NVDEC6 Error"],
    [98, "RESTART_APP", "NVDEC7 Error"],
    [99, "RESTART_APP", "NVJPG1 Error"],
    [100, "RESTART_APP", "NVJPG2 Error"],
    [101, "RESTART_APP", "NVJPG3 Error"],
    [102, "RESTART_APP", "NVJPG4 Error"],
    [103, "RESTART_APP", "NVJPG5 Error"],
    [104, "RESTART_APP", "NVJPG6 Error"],
    [105, "RESTART_APP", "NVJPG7 Error"],
    [106, "IGNORE", "SMBPBI Test Message"],
    [107, "IGNORE", "SMBPBI Test Message Silent"],
    [108, "IGNORE", "Unused"],
    [109, "RESET_GPU", "Context Switch Timeout Error"],
    [110, "RESET_GPU", "Security Fault Error"],
    [111, "CONTACT_SUPPORT", "Unused"],
    [112, "CONTACT_SUPPORT", "Unused"],
    [113, "CONTACT_SUPPORT", "Unused"],
    [114, "CONTACT_SUPPORT", "Unused"],
    [115, "CONTACT_SUPPORT", "Unused"],
    [116, "CONTACT_SUPPORT", "Unused"],
    [117, "CONTACT_SUPPORT", "Unused"],
    [118, "CONTACT_SUPPORT", "Unused"],
    [119, "RESET_GPU", "GSP RPC Timeout"],
    [120, "RESET_GPU", "GSP Error"],
    [121, "IGNORE", "C2C Error"],
    [122, "CONTACT_SUPPORT", "Unused"],
    [123, "CONTACT_SUPPORT", "Unused"],
    [124, "CONTACT_SUPPORT", "Unused"],
    [125, "CONTACT_SUPPORT", "Unused"],
    [126, "RESTART_APP", "CE10: Unknown Error"],
    [127, "RESTART_APP", "CE11: Unknown Error"],
    [128, "RESTART_APP", "CE12: Unknown Error"],
    [129, "RESTART_APP", "CE13: Unknown Error"],
    [130, "RESTART_APP", "CE14: Unknown Error"],
    [131, "RESTART_APP", "CE15: Unknown Error"],
    [132, "RESTART_APP", "CE16: Unknown Error"],
    [133, "RESTART_APP", "CE17: Unknown Error"],
    [134, "RESTART_APP", "CE18: Unknown Error"],
    [135, "RESTART_APP", "CE19: Unknown Error"],
    [136, "RESET_GPU", "Link Training Failed"],
    [137, "IGNORE", "NVLink Privilege Error"],
    [138, "CONTACT_SUPPORT", "Unused"],
    [139, "RESTART_APP", "OFA1 Error"],
    [140, "RESET_GPU", "ECC Unrecovered Error"],
    [141, "IGNORE", "CUDA Fast Path Error"],
    [142, "CONTACT_SUPPORT", "NVENC3 Error"],
    [143, "RESET_GPU", "GPU Initialization Error"],
    [144, "WORKFLOW_NVLINK5_ERR", "NVLINK: SAW Error"],
    [145, "WORKFLOW_NVLINK5_ERR", "NVLINK: RLW Error"],
    [146, "WORKFLOW_NVLINK5_ERR", "NVLINK: TLW Error"],
    [147, "WORKFLOW_NVLINK5_ERR", "NVLINK: TREX Error"],
    [148, "WORKFLOW_NVLINK5_ERR", "NVLINK: NVLPW_CTRL Error"],
    [149, "WORKFLOW_NVLINK5_ERR", "NVLINK: NETIR Error"],
    [150, "WORKFLOW_NVLINK5_ERR", "NVLINK: MSE Error"],
    [151, "RESTART_VM", "Key rotation Error"],
    [152, "IGNORE", "DLA SMMU Error"],
    [153, "IGNORE", "DLA timeout Error"],
    [154, "XID_154", "GPU Recovery Action Changed"],
    [155, "RESET_GPU", "NVLINK: SW Defined Error"],
    [156, "RESET_GPU", "Resource Retirement Event"],
    [157, "IGNORE", "Resource Retirement Failure"],
    [158, "RESET_GPU", "GPU Fatal Timeout"],
    [159, "CHECK_UVM", "CHI Non-Data Error"],
    [160, "IGNORE", "Channel Retirement Event"],
    [161, "IGNORE", "Channel Retirement Failure"],
    [162, "", "Power Smoothing HW Circuitry capability reengaged"],
    [163, "", "Power Smoothing HW Circuitry capability disengaged"],
    [164, "", "Power Smoothing HW Circuitry low lifetime reached"],
    [165, "", "Power Smoothing HW Circuitry lifetime exhausted"],
    [166, "", "CC traffic seen prior to link properly being configured for encrypted traffic"],
    [167, "", "PCIE_FATAL_TIMEOUT"],
    [168, "", "Errors found in WPR (write protected region)"],
    [169, "", "Internal micro-controller halt"],
    [170, "", "Interrupt seen in CC mode"],
    [171, "", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM"],
    [172, "", "Additional to Xid 48 providing more details on particulars of fault to differentiate DRAM/SRAM"],
];

const NOTE = new Set<XidResolution>(["IGNORE", "RESTART_APP", "CHECK_UVM", "WORKFLOW_XID_45", ""]);
const BY_LINE = new Set<XidResolution>(["WORKFLOW_NVLINK5_ERR", "XID_154"]);

export const XID_CATALOG: Readonly<Record<number, XidInfo>> = Object.fromEntries(CATALOG.map(([code, resolution, meaning]) => [code, {
    code, meaning, resolution,
    // Xid 94's line says whether the driver wants a reset (RST:/D-RST:), see xidLineGrade
    grade: code === 94 || BY_LINE.has(resolution) ? "line" : NOTE.has(resolution) ? "note" : "node",
} satisfies XidInfo]));

/**
 * Codes the driver defines past the catalog's last (172): NVIDIA/open-gpu-kernel-modules src/common/sdk/nvidia/inc/nverror.h
 * at 595.45.04 (commit df1c9a3d), ROBUST_CHANNEL_LAST_ERROR 176. The catalog gives them no resolution, so they stay notes;
 * the driver's name is shown so a reader can look them up.
 */
export const XID_DRIVER_ONLY: Readonly<Record<number, string>> = {
    173: "C2C_FATAL_LINK_FAILURE",
    174: "ROBUST_CHANNEL_RESETCHANNEL_KILL_PROCESS_SILENT",
    175: "MEMORY_SUBSYSTEM_ERROR",
    176: "PCIE_CORRECTABLE_ERROR_FAULT",
};

/** The catalog entry; a code the catalog does not list is a note (a newer driver's code is not evidence of a fault). */
export function xidInfo(code: number): XidInfo {
    const hit = XID_CATALOG[code];
    if (hit) return hit;
    const driver = XID_DRIVER_ONLY[code];
    return { code, meaning: `not in NVIDIA's Xid catalog as the kit carries it${driver ? `; the driver's ${driver}` : ""}`, grade: "note" };
}

/**
 * Whether one logged Xid needs the node's owner, reading the line where the catalog says the line decides:
 *  - Xid 94 (contained memory error, "restart the app"): R535+ drivers end the line with "RST: Yes|No, D-RST: Yes|No"
 *    (open-gpu-kernel-modules src/nvidia/src/kernel/gpu/arch/ampere/kern_gpu_ga100.c): a Yes needs a (drain and) reset
 *  - Xid 144-150 (NVLink5, catalog workflow "XID 144-150 Decode"): the sheet's row for the line's sub component, IntrInfo
 *    and error status decides (catalog/xid-nvlink5.ts: RESET_GPU needs the owner, IGNORE and XID_154_EVAL do not); a line
 *    no row decides is read by the severity word the driver prints, "Fatal" or "Nonfatal" (most Fatal rows are RESET_GPU,
 *    the Non-fatal rows IGNORE)
 *  - Xid 154 (recovery action changed): "... to 0x0 (None)" needs nothing, any other new action does
 */
export function xidNeedsOwner(code: number, line: string): boolean {
    const info = xidInfo(code);
    if (info.grade !== "line") return info.grade === "node";
    if (code === 94) return /\b(?:D-)?RST:\s*Yes\b/i.test(line);
    if (code === 154) return !/\bto 0x0+ \(None\)/i.test(line);
    const decoded = decodeNvlink5(code, line);
    if (decoded) return decoded.resolution === "RESET_GPU";
    // NVLink5: the unit then the severity word, e.g. "145, RLW_REMAP Nonfatal XC0 i0 Link 00 (...)"
    if (/\bNon-?fatal\b/i.test(line)) return false;
    return true;
}
