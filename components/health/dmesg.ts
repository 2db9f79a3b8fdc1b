/**
 * The kernel log since boot (`dmesg`, `dmesg -T`, `journalctl -k`, `/dev/kmsg` records) → NVIDIA Xid events and mlx5
 * errors. Line prefixes read: "[  12.345678] ", "[Sun Feb 23 16:24:18 2025] " (-T), "2025-02-23T16:24:18,123456+00:00 "
 * (--time-format iso), "Feb 23 16:24:18 host kernel: " (syslog/journalctl), "6,3964,206764307,-;" (kmsg),
 * "[Feb23 16:24] " / "[  +0.000123] " (-H), "kern  :info  : " (-x), or none.
 * Xid forms (NVIDIA's Xid catalog, https://docs.nvidia.com/deploy/xid-errors/index.html, and the captures in
 * test/fixtures/health/README.md): "NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <text>" and the older
 * "NVRM: Xid (0000:01:00): 31, Ch 0000000b, ...".
 * mlx5 errors (the mlx5_core driver's messages, drivers/net/ethernet/mellanox/mlx5/core/health.c and cmd.c in Linux):
 * a compromised device health, a firmware fatal/internal error, a command timeout, a cable/module error.
 */
import { HealthParseError } from "./types";

export interface XidEvent {
    pci: string;
    code: number;
    line: string;
}

export interface DmesgReport {
    xids: XidEvent[];
    mlx5Errors: string[];
    /** the tool said it could not read the log ("Operation not permitted") */
    denied?: string;
    lines: number;
}

const PREFIXES = [
    /^\[\s*\d+\.\d+\]/, // [  12.345678]
    /^\[[A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4}\]/, // [Sun Feb 23 16:24:18 2025]
    /^\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d/, // ISO
    /^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \S+ /, // syslog / journalctl
    /^\d+,\d+,\d+,[-c];/, // kmsg
    /^\[[A-Z][a-z]{2}\s?\d+ \d\d:\d\d\]/, // -H / --time-format reltime: [Feb23 16:24]
    /^\[\s*\+\d+\.\d+\]/, // -H / -d deltas: [  +0.000123]
    /^\w+\s*:\w+\s*: /, // -x: "kern  :info  : "
];

const XID = /NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)\): (\d+)\b/;
const MLX5_ERROR = /mlx5_core[^:]*:.*(health compromised|fw_fatal|firmware internal error|fatal error|internal error|cmd_work_handler.*timeout|wait_func.*timeout|command timeout|Cable error|module.*(?:error|power budget)|pci_channel_io_perm_failure|PCIe.*(?:error|failed))/i;

export function parseDmesg(text: string): DmesgReport {
    const lines = text.split(/\r?\n/).filter((l) => l.trim());
    const denied = lines.find((l) => /^dmesg: read kernel buffer failed|Operation not permitted/i.test(l.trim()));
    if (denied) return { xids: [], mlx5Errors: [], denied: denied.trim(), lines: lines.length };
    // a kernel log: most lines carry one of the prefixes (a few continuation lines may not)
    const prefixed = lines.filter((l) => PREFIXES.some((re) => re.test(l.trimStart()))).length;
    if (lines.length > 0 && prefixed === 0 && !lines.some((l) => XID.test(l))) {
        throw new HealthParseError("has no line in a kernel-log form (\"[  12.345678] \", \"[Sun Feb 23 16:24:18 2025] \", ISO time, syslog \"Feb 23 16:24:18 host kernel:\", kmsg \"6,1,2,-;\")");
    }
    const xids: XidEvent[] = [];
    const mlx5Errors: string[] = [];
    for (const l of lines) {
        const x = XID.exec(l);
        if (x) xids.push({ pci: x[1].toLowerCase(), code: Number(x[2]), line: l.trim() });
        else if (MLX5_ERROR.test(l)) mlx5Errors.push(l.trim());
    }
    return { xids, mlx5Errors, lines: lines.length };
}
