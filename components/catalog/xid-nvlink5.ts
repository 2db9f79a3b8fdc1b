/**
 * NVLink5 Xids 144-150: NVIDIA's decode of each line into a resolution.
 * source: NVIDIA, "Analyzing Xid Errors with the Xid Catalog" (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html),
 * sheet "XID 144-150 Decode", as generated 2025-10-29 into leptonai/gpud components/accelerator/nvidia/xid/catalog_generated.go
 * (commit b9842de2, nvlinkRules), with the page's action-2 columns and its "150 MSE Degraded" row that gpud leaves out;
 * test/fixtures/health/xid-nvlink5-decode.tsv holds the rows and test/health-xid-r7.test.ts checks this table against them.
 * The line (catalog, resolution WORKFLOW_NVLINK5_ERR): "Xid (PCI:0000:BB:DF): <Xid> <sub component> <fatal vs nonfatal>
 * <Crosscontain> <injected> <link> (<intrInfo> <errorStatus> <errorDebugData[0]> ...)", e.g. "149, NETIR_LINK_EVT Fatal XC0
 * i0 Link 00 (0x025001c6 0x00000000 ...)". A row applies when the sub component is one of its names (drivers before R575
 * print the first, R575+ the second), intrInfo matches its V1 (<R575) or V2 (>=R575) bit pattern and, where the sheet
 * gives one, the error status is equal. The kit grades by the sheet's immediate resolution, not by the severity word:
 * NETIR_LINK_EVT link-down reasons 0x26 and 0x28 (IntrInfo bits 25:20) print "Fatal", and the sheet's own severity
 * column says "Link Fatal" / "Fatal" for them too (gpud's Severity field), but their immediate resolution is IGNORE
 * (gpud grades them a fatal event with no repair action); RLW_RXPIPE is non-fatal but needs a GPU reset when its
 * action-2 bit is set. The "150 MSE Degraded" row can match no line as the kit reads it (the sub component is read as
 * one word); it is kept as transcribed.
 */

/** the resolutions the sheet uses: RESET_GPU needs the node's owner; IGNORE does not; XID_154_EVAL: "If an XID 154 is
 * seen along with this error, take that action. If no XID 154 present, RESTART_APP" (the Xid 154 line is graded itself) */
export type Nvlink5Resolution = "IGNORE" | "RESET_GPU" | "XID_154_EVAL";

/** [xid, sub component(s), IntrInfo V1 pattern, V2 pattern, error status ("" none), resolution, action 2: [V1, V2, resolution]] */
type Row = readonly [number, string, string, string, string, Nvlink5Resolution, (readonly [string, string, Nvlink5Resolution])?];

export const NVLINK5_DECODE: ReadonlyArray<Row> = [
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000001", "IGNORE"],
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000002", "RESET_GPU"],
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000004", "IGNORE"],
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000008", "IGNORE"],
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000010", "RESET_GPU"],
    [144, "SAW_MVB", "------000000----------0000100001", "------000000-------------0000001", "0x00000020", "IGNORE"],
    [145, "RLW_CTRL", "------000000----------0001100010", "------000000-------------0000011", "0x80000000", "IGNORE"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000001", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000002", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000004", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000008", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000010", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000020", "XID_154_EVAL"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000040", "RESET_GPU"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000080", "RESET_GPU"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000100", "IGNORE"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x00000200", "IGNORE"],
    [145, "RLW_REMAP", "------000000----------0010000010", "------000000-------------0000100", "0x80000000", "IGNORE"],
    [145, "RLW_RSPCOL", "------000000----------0010100010", "------000000-------------0000101", "0x00000001", "IGNORE"],
    [145, "RLW_RSPCOL", "------000000----------0010100010", "------000000-------------0000101", "0x00000002", "RESET_GPU"],
    [145, "RLW_RSPCOL", "------000000----------0010100010", "------000000-------------0000101", "0x80000000", "IGNORE"],
    [145, "RLW_RXPIPE", "------000000---------00011000010", "------000000------------00000110", "0x00000001", "IGNORE", ["------000000---------10011000010", "------000000------------10000110", "RESET_GPU"]],
    [145, "RLW_RXPIPE", "------000000---------00011000010", "------000000------------00000110", "0x00000002", "IGNORE", ["------000000---------10011000010", "------000000------------10000110", "RESET_GPU"]],
    [145, "RLW_RXPIPE", "------000000---------00011000010", "------000000------------00000110", "0x00000004", "IGNORE", ["------000000---------10011000010", "------000000------------10000110", "RESET_GPU"]],
    [145, "RLW_RXPIPE", "------000000----------0011000010", "------000000-------------0000110", "0x00000008", "IGNORE"],
    [145, "RLW_RXPIPE", "------000000----------0011000010", "------000000-------------0000110", "0x80000000", "IGNORE"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000001", "RESET_GPU"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000002", "IGNORE"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000004", "XID_154_EVAL"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000008", "XID_154_EVAL"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000010", "RESET_GPU"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x00000020", "RESET_GPU"],
    [145, "RLW_SRC_TRACK", "------000000----------0011100010", "------000000-------------0000111", "0x80000000", "IGNORE"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x00000001", "IGNORE"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x00000002", "RESET_GPU"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x00010000", "IGNORE"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x00020000", "RESET_GPU"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x00100000", "RESET_GPU"],
    [145, "RLW_TAGSTATE", "------000000----------0100000010", "------000000-------------0001000", "0x80000000", "IGNORE"],
    [146, "TLW_CTRL", "------000000----------0100100011", "------000000-------------0001001", "0x00000001", "IGNORE"],
    [146, "TLW_CTRL", "------000000----------0100100011", "------000000-------------0001001", "0x00000002", "IGNORE"],
    [146, "TLW_CTRL", "------000000----------0100100011", "------000000-------------0001001", "0x00000004", "RESET_GPU"],
    [146, "TLW_CTRL", "------000000----------0100100011", "------000000-------------0001001", "0x80000000", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE0", "------000000----------0101000011", "------000000-------------0001010", "0x00000001", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE0", "------000000----------0101000011", "------000000-------------0001010", "0x00000002", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE0", "------000000----------0101000011", "------000000-------------0001010", "0x00000004", "RESET_GPU"],
    [146, "TLW_RX/TLW_RX_PIPE0", "------000000----------0101000011", "------000000-------------0001010", "0x80000000", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE1", "------000000----------0101000011", "------000000-------------0001011", "0x00000001", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE1", "------000000----------0101000011", "------000000-------------0001011", "0x00000002", "IGNORE"],
    [146, "TLW_RX/TLW_RX_PIPE1", "------000000----------0101000011", "------000000-------------0001011", "0x00000004", "RESET_GPU"],
    [146, "TLW_RX/TLW_RX_PIPE1", "------000000----------0101000011", "------000000-------------0001011", "0x80000000", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE0", "------000000----------0101100011", "------000000-------------0001100", "0x00000001", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE0", "------000000----------0101100011", "------000000-------------0001100", "0x00000002", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE0", "------000000----------0101100011", "------000000-------------0001100", "0x00000004", "RESET_GPU"],
    [146, "TLW_TX/TLW_TX_PIPE0", "------000000----------0101100011", "------000000-------------0001100", "0x80000000", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE1", "------000000----------0101100011", "------000000-------------0001101", "0x00000001", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE1", "------000000----------0101100011", "------000000-------------0001101", "0x00000002", "IGNORE"],
    [146, "TLW_TX/TLW_TX_PIPE1", "------000000----------0101100011", "------000000-------------0001101", "0x00000004", "RESET_GPU"],
    [146, "TLW_TX/TLW_TX_PIPE1", "------000000----------0101100011", "------000000-------------0001101", "0x80000000", "IGNORE"],
    [147, "TREX", "------000000----------0110000100", "------000000-------------0001110", "0x00000001", "IGNORE"],
    [147, "TREX", "------000000----------0110000100", "------000000-------------0001110", "0x80000000", "IGNORE"],
    [148, "NVLPW_CTRL/NVLPW", "------000000----------0000000101", "------000000-------------0001111", "0x80000000", "IGNORE"],
    [149, "NETIR/NETIR_INT", "------000000----------0000000110", "------000000-------------0011000", "0x00000000", "RESET_GPU"],
    [149, "NETIR_BER_EVENT", "------000000----------1000100110", "------000000-------------0010011", "0x00000000", "IGNORE"],
    [149, "NETIR_BER_EVENT", "------000000----------1000100110", "------000000-------------0010011", "0x00000001", "IGNORE"],
    [149, "NETIR_BER_EVENT", "------000000----------1000100110", "------000000-------------0010011", "0x00000002", "IGNORE"],
    [149, "NETIR_BER_EVENT", "------000000----------1000100110", "------000000-------------0010011", "0x00000003", "IGNORE"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------000000----------0111000110", "------000000-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------000001----------0111000110", "------000001-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------000010----------0111000110", "------000010-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------000100----------0111000110", "------000100-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------001010----------0111000110", "------001010-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------001111----------0111000110", "------001111-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------010000----------0111000110", "------010000-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------010001----------0111000110", "------010001-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------010010----------0111000110", "------010010-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------010101----------0111000110", "------010101-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------010110----------0111000110", "------010110-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100000----------0111000110", "------100000-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100001----------0111000110", "------100001-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100010----------0111000110", "------100010-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100011----------0111000110", "------100011-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100100----------0111000110", "------100100-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100101----------0111000110", "------100101-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------100110----------0111000110", "------100110-------------0010001", "", "IGNORE"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------101000----------0111000110", "------101000-------------0010001", "", "IGNORE"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------101010----------0111000110", "------101010-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_LINK_EVT/NETIR_LINK_DOWN", "------101011----------0111000110", "------101011-------------0010001", "", "RESET_GPU"],
    [149, "NETIR_MFDE_EVENT", "------000000----------1001000110", "------000000-------------0010100", "0x00000001", "RESET_GPU"],
    [149, "NETIR_MFDE_EVENT", "------000000----------1001000110", "------000000-------------0010100", "0x00000003", "IGNORE"],
    [149, "NETIR_MFDE_EVENT", "------000000----------1001000110", "------000000-------------0010100", "0x00000004", "RESET_GPU"],
    [149, "NETIR_MFDE_EVENT", "------000000----------1001000110", "------000000-------------0010100", "0x00000005", "RESET_GPU"],
    [149, "NETIR_MFDE_EVENT", "------000000----------1001000110", "------000000-------------0010100", "0x00000007", "RESET_GPU"],
    [150, "MSE Degraded", "------000000----------0000000000", "------000000-------------0000000", "0xffffffff", "RESET_GPU"],
    [150, "MSE_WATCHDOG", "------000000----------0000000000", "------000000-------------0000000", "0x00000000", "RESET_GPU"],
];

/** Whether a 32-bit value fits a pattern of 32 characters, bit 31 first, '-' any bit. */
export function fitsPattern(pattern: string, value: number): boolean {
    if (pattern.length !== 32) return false;
    for (let i = 0; i < 32; i++) {
        const want = pattern[i];
        if (want === "-") continue;
        const bit = (value >>> (31 - i)) & 1;
        if (String(bit) !== want) return false;
    }
    return true;
}

export interface Nvlink5Decode {
    unit: string;
    intrInfo: number;
    errorStatus: number;
    resolution: Nvlink5Resolution;
}

/** the code, R550+'s optional "pid=<p>, name=<proc>, " (gpud's kmsg tests), the sub component, then the first two registers */
const LINE = /\b(14[4-9]|150),\s+(?:pid=[^,\s]{1,40},\s*name=[^,]{0,64},\s*)?([A-Za-z0-9_]+)\s[^(]{0,120}\(\s*0x([0-9a-fA-F]{1,8})\s+0x([0-9a-fA-F]{1,8})\b/;

/**
 * The sheet's resolution for one Xid 144-150 line; undefined where the line is not in the form above, no row applies, or
 * the rows that apply disagree (the caller then reads the line's severity word).
 */
export function decodeNvlink5(code: number, line: string): Nvlink5Decode | undefined {
    const m = LINE.exec(line.slice(0, 400));
    if (!m || Number(m[1]) !== code) return undefined;
    const unit = m[2].toUpperCase();
    const intrInfo = parseInt(m[3], 16);
    const errorStatus = parseInt(m[4], 16);
    const found = new Set<Nvlink5Resolution>();
    for (const [xid, units, v1, v2, status, resolution, action2] of NVLINK5_DECODE) {
        if (xid !== code || !units.toUpperCase().split("/").includes(unit)) continue;
        if (status !== "" && parseInt(status, 16) !== errorStatus) continue;
        if (action2 && (fitsPattern(action2[0], intrInfo) || fitsPattern(action2[1], intrInfo))) found.add(action2[2]);
        else if (fitsPattern(v1, intrInfo) || fitsPattern(v2, intrInfo)) found.add(resolution);
    }
    if (found.size !== 1) return undefined;
    return { unit, intrInfo, errorStatus, resolution: [...found][0] };
}
