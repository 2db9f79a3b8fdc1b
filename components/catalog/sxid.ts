/**
 * NVSwitch SXid codes ("switch Xids"): what NVIDIA's Fabric Manager guide says of each, and what that means for the
 * health gate.
 * source: NVIDIA Fabric Manager User Guide DU-09883-001_v1.3 (October 2023), appendix D "NVSwitch SXid errors", tables
 * D.4 Non-Fatal, D.5 Fatal, D.6 Always Fatal and D.7 Other Notable NVSwitch SXid Errors
 * (https://docs.nvidia.com/datacenter/tesla/pdf/fabric-manager-user-guide.pdf), as transcribed into leptonai/gpud
 * components/accelerator/nvidia/sxid/sxid.go (commit 4a8de33a); test/fixtures/health/sxid-catalog.tsv holds those rows
 * and test/health-sxid.test.ts checks this table against them. The guide covers the second- and third-generation
 * NVSwitch (HGX/DGX A100 and H100/H200, the driver's LR10 and LS10); it names no driver version per code.
 * The driver's numbering (NVIDIA/open-gpu-kernel-modules src/common/nvswitch/interface/ctrl_dev_nvswitch.h, enum
 * NVSWITCH_ERR_TYPE, at 595.45.04, commit df1c9a3d): SXids start at 10000 "to be distinguishable from GPU errors", one
 * block of a thousand per hardware unit (SXID_UNITS), 10000-30006 defined there. The guide's tables list 92 of them.
 * What fails the node: an SXid of D.5 or D.6, D.7's Host_unhandled_interrupt ("If it occurs, it is fatal to the
 * fabric/system"), and D.4's 19084, whose recovery is resetting all GPUs and NVSwitches (sxidResetsAll). What is a
 * note: the rest of D.4, the rest of D.7 ("not fatal to the fabric/system"), and every number the guide
 * does not list: no public source gives its severity, and a gate that fails healthy nodes gets switched off.
 */

export type SxidTable = "non-fatal" | "fatal" | "always-fatal" | "notable";

export interface SxidInfo {
    code: number;
    /** the guide's name, or the unit's for a code the guide does not list */
    meaning: string;
    /** the guide's table; undefined: the code is not in the guide */
    table?: SxidTable;
    /** the guide's recovery text, when it gives one */
    recovery?: string;
    /** the guide calls it fatal to the fabric (D.5, D.6, D.7 Host_unhandled_interrupt) */
    fatal: boolean;
}

// the guide's recovery for every D.5 row but 22012, and for every D.6 row
const D5_RECOVERY = "Restart the guest VM to see if the associated NVSwitch comes back up.";
const D6_RECOVERY = "Restart the host to reset the entire fabric/system.";
const NONE = "Not Applicable.";
const LINK_CHECK = "If this issue was not due to an uncoordinated shutdown, check link mechanical connections.";
const RESET_ALL = "Reset all GPUs and all NVSwitches (refer to section D.9).";
const COOLING = "Ensure that the system cooling is sufficient.";

/** [SXid, table, name, recovery]: the guide's rows. */
const ROWS: ReadonlyArray<readonly [number, SxidTable, string, string?]> = [
    [10001, "notable", "Host_priv_error"],
    [10002, "notable", "Host_priv_timeout"],
    [10003, "notable", "Host_unhandled_interrupt", "To recover, it will require a reset to all GPUs and NVSwitches (refer to section D.9)."],
    [10004, "notable", "Host_thermal_event_start", COOLING],
    [10005, "notable", "Host_thermal_event_end", COOLING],
    [11001, "fatal", "ingress invalid command", D5_RECOVERY],
    [11004, "non-fatal", "Ingress invalid ACL", "Validate GPU/NVSwitch fabric partition routing information using the NVSwitch-audit tool. Restart the guest VM."],
    [11009, "fatal", "ingress invalid VCSet", D5_RECOVERY],
    [11012, "non-fatal", "Single bit ECC errors", NONE],
    [11013, "fatal", "ingress header DBE", D5_RECOVERY],
    [11018, "fatal", "ingress RID DBE", D5_RECOVERY],
    [11019, "fatal", "ingress RLAN DBE", D5_RECOVERY],
    [11020, "fatal", "ingress control parity", D5_RECOVERY],
    [11021, "non-fatal", "Single bit ECC errors", NONE],
    [11022, "non-fatal", "Single bit ECC errors", NONE],
    [11023, "non-fatal", "Single bit ECC errors", NONE],
    [12001, "fatal", "egress crossbar overflow", D5_RECOVERY],
    [12002, "fatal", "egress packet route", D5_RECOVERY],
    [12020, "always-fatal", "egress sequence ID error", D6_RECOVERY],
    [12021, "non-fatal", "Single bit ECC errors", NONE],
    [12022, "fatal", "egress input ECC DBE error", D5_RECOVERY],
    [12023, "non-fatal", "Single bit ECC errors", NONE],
    [12024, "fatal", "egress output ECC DBE error", D5_RECOVERY],
    [12025, "fatal", "egress credit overflow", D5_RECOVERY],
    [12026, "fatal", "egress destination request ID error", D5_RECOVERY],
    [12027, "fatal", "egress destination response ID error", D5_RECOVERY],
    [12028, "non-fatal", "egress nonposted PRIV error", "Restart Guest VM."],
    [12030, "fatal", "egress control parity error", D5_RECOVERY],
    [12031, "fatal", "egress credit parity error", D5_RECOVERY],
    [12032, "fatal", "egress flit type mismatch", D5_RECOVERY],
    [14017, "fatal", "TS ATO timeout", D5_RECOVERY],
    [15001, "fatal", "route buffer over/underflow", D5_RECOVERY],
    [15006, "fatal", "route transdone over/underflow", D5_RECOVERY],
    [15008, "non-fatal", "Single bit ECC errors", NONE],
    [15009, "fatal", "route GLT DBE", D5_RECOVERY],
    [15010, "fatal", "route parity", D5_RECOVERY],
    [15011, "non-fatal", "Single bit ECC errors", NONE],
    [15012, "fatal", "route incoming DBE", D5_RECOVERY],
    [15013, "fatal", "route credit parity", D5_RECOVERY],
    [19047, "fatal", "NCISOC HDR ECC DBE Error", D5_RECOVERY],
    [19048, "fatal", "NCISOC DAT ECC DBE Error", D5_RECOVERY],
    [19049, "non-fatal", "Single bit ECC errors", NONE],
    [19054, "fatal", "HDR RAM ECC DBE Error", D5_RECOVERY],
    [19055, "non-fatal", "Single bit ECC errors", NONE],
    [19056, "fatal", "DAT0 RAM ECC DBE Error", D5_RECOVERY],
    [19057, "non-fatal", "Single bit ECC errors", NONE],
    [19058, "fatal", "DAT1 RAM ECC DBE Error", D5_RECOVERY],
    [19059, "non-fatal", "Single bit ECC errors", NONE],
    [19060, "fatal", "CREQ RAM HDR ECC DBE Error", D5_RECOVERY],
    [19061, "fatal", "CREQ RAM DAT ECC DBE Error", D5_RECOVERY],
    [19062, "non-fatal", "Single bit ECC errors", NONE],
    [19063, "fatal", "Response RAM HDR ECC DBE Error", D5_RECOVERY],
    [19064, "fatal", "Response RAM DAT ECC DBE Error", D5_RECOVERY],
    [19065, "non-fatal", "Single bit ECC errors", NONE],
    [19066, "fatal", "COM RAM HDR ECC DBE Error", D5_RECOVERY],
    [19067, "fatal", "COM RAM DAT ECC DBE Error", D5_RECOVERY],
    [19068, "non-fatal", "Single bit ECC errors", NONE],
    [19069, "fatal", "RSP1 RAM HDR ECC DBE Error", D5_RECOVERY],
    [19070, "fatal", "RSP1 RAM DAT ECC DBE Error", D5_RECOVERY],
    [19071, "non-fatal", "Single bit ECC errors", NONE],
    [19084, "non-fatal", "AN1 Heartbeat Timeout Error", RESET_ALL],
    [20001, "non-fatal", "TX Replay Error", NONE],
    [20012, "non-fatal", "Broken/inconsistent connection", LINK_CHECK],
    [20034, "fatal", "LTSSM Fault Up", D5_RECOVERY],
    [22003, "always-fatal", "Minion Halt", D6_RECOVERY],
    [22011, "always-fatal", "Minion exterror", D6_RECOVERY],
    // the guide lists 22012 in both D.4 and D.5; the D.5 row is taken (the driver logs it with "Fatal", intr_lr10.c)
    [22012, "fatal", "Minion Link NA interrupt", LINK_CHECK],
    [22013, "non-fatal", "Minion Link DLREQ interrupt", NONE],
    [23001, "always-fatal", "ingress SRC-VC buffer overflow", D6_RECOVERY],
    [23002, "always-fatal", "ingress SRC-VC buffer underflow", D6_RECOVERY],
    [23003, "always-fatal", "egress DST-VC credit overflow", D6_RECOVERY],
    [23004, "always-fatal", "egress DST-VC credit underflow", D6_RECOVERY],
    [23005, "always-fatal", "ingress packet burst error", D6_RECOVERY],
    [23006, "always-fatal", "ingress packet sticky error", D6_RECOVERY],
    [23007, "always-fatal", "possible bubbles at ingress", D6_RECOVERY],
    [23008, "always-fatal", "ingress packet invalid dst error", D6_RECOVERY],
    [23009, "always-fatal", "ingress packet parity error", D6_RECOVERY],
    [23010, "always-fatal", "ingress SRC-VC buffer overflow", D6_RECOVERY],
    [23011, "always-fatal", "ingress SRC-VC buffer underflow", D6_RECOVERY],
    [23012, "always-fatal", "egress DST-VC credit overflow", D6_RECOVERY],
    [23013, "always-fatal", "egress DST-VC credit underflow", D6_RECOVERY],
    [23014, "always-fatal", "ingress packet burst error", D6_RECOVERY],
    [23015, "always-fatal", "ingress packet sticky error", D6_RECOVERY],
    [23016, "always-fatal", "possible bubbles at ingress", D6_RECOVERY],
    [23017, "always-fatal", "ingress credit parity error", D6_RECOVERY],
    [24001, "non-fatal", "Single bit ECC errors", NONE],
    [24002, "non-fatal", "Single bit ECC errors", NONE],
    [24003, "non-fatal", "Single bit ECC errors", NONE],
    [24004, "fatal", "sourcetrack TCEN0 crubmstore DBE", D5_RECOVERY],
    [24005, "fatal", "sourcetrack TCEN0 TD crubmstore DBE", D5_RECOVERY],
    [24006, "fatal", "sourcetrack TCEN1 crubmstore DBE", D5_RECOVERY],
    [24007, "fatal", "sourcetrack timeout error", D5_RECOVERY],
];

// D.7: "If it occurs, it is fatal to the fabric/system" (Host_unhandled_interrupt); the other D.7 rows are "not fatal"
const NOTABLE_FATAL = new Set([10003]);

export const SXID_CATALOG: Readonly<Record<number, SxidInfo>> = Object.fromEntries(ROWS.map(([code, table, meaning, recovery]) => [code, {
    code, meaning, table, recovery,
    fatal: table === "fatal" || table === "always-fatal" || NOTABLE_FATAL.has(code),
} satisfies SxidInfo]));

/** The driver's hardware unit of each block of a thousand (ctrl_dev_nvswitch.h, the comment above each block's first enumerator). */
export const SXID_UNITS: Readonly<Record<number, string>> = {
    10: "HOST", 11: "NPORT ingress", 12: "NPORT egress", 13: "NPORT fstate", 14: "NPORT tstate", 15: "NPORT route",
    16: "NPORT", 17: "NVLCTRL", 18: "NVLIPT", 19: "NVLTLC TX/RX", 20: "DLPL", 21: "AFS", 22: "MINION", 23: "NXBAR",
    24: "NPORT sourcetrack", 25: "NVLIPT_LNK", 26: "SOE", 27: "CCI", 28: "OSFP thermal", 29: "NPORT multicast tstate",
    30: "NPORT reduction tstate",
};

/** The guide's entry; a code the guide does not list is a note, named by its unit where the driver's numbering has one. */
export function sxidInfo(code: number): SxidInfo {
    const hit = SXID_CATALOG[code];
    if (hit) return hit;
    const unit = SXID_UNITS[Math.floor(code / 1000)];
    return { code, meaning: `not in the Fabric Manager guide's SXid tables${unit ? `; the driver's ${unit} unit` : ""}`, fatal: false };
}

/** How the driver logged one SXid event (intr_nvswitch.h / error_nvswitch.h NVSWITCH_REPORT_*, error_nvswitch.c). */
export type SxidSeverity = "fatal" | "non-fatal" | "correctable";

/**
 * Whether one logged SXid needs the node's owner. The guide's table decides whether a code can be fatal; the driver's
 * own word for the event can only lower that: a code reported through NVSWITCH_REPORT_CONTAIN is logged "Fatal" when
 * the error was contained and "Non-fatal" otherwise (intr_nvswitch.h), so "Non-fatal" or "Correctable" on a D.5/D.6
 * code is a note. The driver's "Fatal" on a code the guide calls not fatal (it logs 10001 as "Fatal, Unexpected PRI
 * error", intr_ls10.c, where the guide says "not fatal to the fabric/system") does not fail the node. No word (a capture
 * holding only the event's Data lines): the guide's table decides.
 */
export function sxidNeedsOwner(code: number, severity: SxidSeverity | undefined): boolean {
    if (sxidResetsAll(code)) return true;
    if (!sxidInfo(code).fatal) return false;
    return severity === undefined || severity === "fatal";
}

/**
 * A row the guide sorts as non-fatal whose recovery is still "Reset all GPUs and all NVSwitches (refer to section
 * D.9)": 19084, AN1 Heartbeat Timeout Error, the only such row of D.4. Non-fatal there means the fabric is not torn
 * down at once, not that nothing is to be done: the guide's recovery for it is a reset of every GPU and switch, which
 * needs the node's owner whatever word the driver logged (its table calls the code non-fatal, so "Non-fatal" is the
 * expected word and cannot lower it).
 */
export function sxidResetsAll(code: number): boolean {
    const info = SXID_CATALOG[code];
    return info !== undefined && info.table === "non-fatal" && info.recovery === RESET_ALL;
}
