/**
 * The kernel log since boot (`dmesg`, `dmesg -T`, `journalctl -k`, `/dev/kmsg` records) → NVIDIA Xid events with their
 * time, mlx5 errors, uncorrected PCIe AER errors. Line prefixes read: "[  12.345678] " (seconds since boot),
 * "[Sun Feb 23 16:24:18 2025] " (-T), "2025-02-23T16:24:18,123456+00:00 " (--time-format iso), "Feb 23 16:24:18 host
 * kernel: " (syslog/journalctl; the locale's month: "Feb", "sep", "jan.", "фев"; only English ones give a time), "6,3964,206764307,-;" (kmsg: microseconds since boot), "[Feb23 16:24] " /
 * "[  +0.000123] " (-H), "kern  :info  : " (-x), talosctl dmesg's "10.0.0.2: kern: warning: [2026-04-22T21:27:51.29Z]: ", or none (then the line has no time).
 * Xid forms (NVIDIA's Xid catalog, https://docs.nvidia.com/deploy/xid-errors/index.html; open-gpu-kernel-modules
 * nvErrorLog): "NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., <text>", the older "NVRM: Xid (0000:01:00): 31, ...",
 * and under MIG "NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, ..." (the GPU instance after the bus id).
 * mlx5 errors (drivers/net/ethernet/mellanox/mlx5/core/health.c and cmd.c in Linux): a compromised device health, a
 * firmware fatal/internal error, a command timeout, a cable/module error. PCIe AER (drivers/pci/pcie/aer.c
 * aer_print_error): "AER: PCIe Bus Error: severity=Correctable|Uncorrected (Non-Fatal)|Uncorrected (Fatal), ..." on
 * any device: corrected errors are counted and retried by the link (a note); uncorrected ones fail the device's node.
 * A GPU the driver lost without an Xid (NVIDIA/open-gpu-kernel-modules@df1c9a3d): at probe, osapi.c prints over three
 * lines "NVRM: The NVIDIA GPU 0000:5d:00.0" / "NVRM: (PCI ID: 10de:2330) installed in this system has" / "NVRM: fallen off
 * the bus and is not responding to commands." (only the first names the GPU; a dmesg capture indents the other two
 * without a prefix); osinit.c's NV_DEV_PRINTF lines "NVRM: GPU 0000:5d:00.0: GPU has fallen off the bus." and
 * "NVRM: GPU 0000:5d:00.0: RmInitAdapter failed! (0x..)"; and the kernel's driver core refusing the device, "nvidia: probe
 * of 0000:5d:00.0 failed with error -1" (drivers/base/dd.c before 6.x) or "nvidia 0000:5d:00.0: probe with driver nvidia
 * failed with error -1" (after). Each is a lost GPU in `lost`, read as an Xid 79 would be.
 * A GPU the driver refuses as unsupported (osapi.c rm_is_supported_device: "NVRM: The NVIDIA GPU <fn> (PCI ID: v:d)" then
 * "NVRM: installed in this system is not supported by open" / "... by the" (a release that does not know it), the
 * vGPU host form "installed in this vGPU host system is not supported by"; drivers up to ~3xx print "(PCI ID: v:d)
 * installed" / "NVRM: in this system is not supported by the 280.13 NVIDIA Linux"; nv-pci.c nv_pci_probe: "NVRM:
 * ignoring the legacy GPU <fn>") goes to `refused`: its probe failure that follows is the refusal, not a lost GPU.
 * NVSwitch SXids (open-gpu-kernel-modules src/common/nvswitch/kernel/inc/common_nvswitch.h NVSWITCH_PRINT_SXID):
 * "nvidia-nvswitch3: SXid (PCI:0000:05:00.0): 12028, Non-fatal, Link 32 egress non-posted PRIV error (First)": the
 * switch's device name, its PCI function, the SXid as %05d, then the message. An event's first line carries the
 * driver's word for it, "Fatal, " / "Non-fatal, " / "Correctable, " (intr_nvswitch.h, error_nvswitch.h NVSWITCH_REPORT_*),
 * its "Severity %d Engine instance ..." line the same as a number (NVSWITCH_ERROR_SEVERITY_TYPE: 0 non-fatal, 1 fatal;
 * error_nvswitch.c), its "Data {...}" lines none.
 * "Operation not permitted" counts as the tool's refusal only as dmesg's own message ("dmesg: read kernel buffer
 * failed: Operation not permitted", util-linux dmesg.c), never when a kernel line says it.
 */
import { boundedLines } from "./text";
import type { SxidSeverity } from "../catalog/sxid";
import { HealthParseError } from "./types";

/** A line's time: seconds since boot, or seconds of the wall clock (dated forms; the year may be a guess, see wallTime) */
export interface LogTime {
    kind: "boot" | "wall";
    s: number;
}

export interface XidEvent {
    pci: string;
    code: number;
    line: string;
    /** "GPU-I:05": the MIG GPU instance the driver attributed it to */
    gpuInstance?: string;
    time?: LogTime;
}

export interface AerEvent {
    /** the device as the line names it, e.g. "mlx5_core 0000:1a:00.0" or "pcieport 0000:00:01.0" */
    device: string;
    severity: "corrected" | "uncorrected";
    line: string;
}

export interface SxidEvent {
    /** the NVSwitch's PCI function as the line names it, e.g. "0000:05:00.0" */
    pci: string;
    /** the driver's device name, e.g. "nvswitch3" */
    device?: string;
    code: number;
    /** the driver's word on this line; undefined on a line that carries none (Data lines) */
    severity?: SxidSeverity;
    /** "Link NN" of the first line */
    link?: number;
    line: string;
    time?: LogTime;
}

/** A GPU the driver says it lost (fell off the bus, failed to initialise, refused at probe) on a line that is no Xid. */
export interface LostGpu {
    /** the GPU's function as the line names it, e.g. "0000:5d:00.0" */
    pci: string;
    line: string;
    time?: LogTime;
}

/** A GPU the loaded driver refuses to drive (not supported by this release or by the open module, or a legacy GPU). */
export interface RefusedGpu {
    pci: string;
    /** "10de:2331", where the message gives it */
    pciId?: string;
    /** the driver's reason in a few words */
    reason: string;
    line: string;
    time?: LogTime;
}

/** A "GSP Timeout" banner: the GSP stopped answering an RPC (what Xid 119 reports). */
export interface GspTimeout {
    /** "GPU6": the driver's instance number where the line gives it (newer drivers) */
    instance?: string;
    line: string;
    time?: LogTime;
}

export interface DmesgReport {
    xids: XidEvent[];
    sxids: SxidEvent[];
    lost: LostGpu[];
    refused: RefusedGpu[];
    mlx5Errors: string[];
    aer: AerEvent[];
    /** dmesg said it could not read the log */
    denied?: string;
    /** the driver's "GSP Timeout" banners (see GSP_TIMEOUT): they name the GPU by the driver's instance, not by bus */
    gspTimeouts: GspTimeout[];
    /** the first falcon core-dump line (kflcnCoreDumpNondestructive), which names no GPU */
    gspDump?: string;
    lines: number;
    /** the newest time the log holds, of each kind: the stand-in for "now" when judging how old an Xid is */
    newest: { boot?: number; wall?: number };
}

const MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
// a dated form without a year (syslog, -H) is placed in one fixed year: lines of one log compare among themselves
const NO_YEAR = 2000;

/** journalctl and dmesg -T print the month as the locale's strftime "%b": "Sep", or "sep" (journalctl under es_ES, nl_NL,
 * CachyOS/linux-cachyos#1019); English abbreviations are read in either case, other languages' leave the line without a time */
function wallTime(y: number, mon: string, d: number, hh: number, mm: number, ss: number): number | undefined {
    const m = mon.length === 3 ? MONTHS.indexOf(mon.charAt(0).toUpperCase() + mon.slice(1).toLowerCase()) : -1;
    return m < 0 ? undefined : Date.UTC(y, m, d, hh, mm, ss) / 1000;
}

const BOOT = /^\[\s*(\d+)\.(\d+)\]/;
const CTIME = /^\[[A-Z][a-z]{2} ([A-Z][a-z]{2}) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d) (\d{4})\]/;
const ISO = /^(\d{4})-(\d\d)-(\d\d)[T ](\d\d):(\d\d):(\d\d)/;
// journalctl's default "short" and "-o short-precise" ("Feb 23 16:24:18.123456 host kernel: "). The month is the
// locale's "%b" (glibc localedata abmon): "Feb", "feb", "jan." (nb_NO, hirschmann/nbfc#181), "фев" (ru_RU,
// GSConnect/gnome-shell-extension-gsconnect#1052): two to five letters of any script, maybe a dot. Only English
// abbreviations give the line a time (wallTime); the others are read without one
const SYSLOG = /^(\p{L}{2,5}\.?) {1,2}(\d{1,2}) (\d\d):(\d\d):(\d\d)(?:\.\d+)? \S+ /u;
const KMSG = /^\d+,\d+,(\d+),[-c];/;
const HUMAN = /^\[([A-Z][a-z]{2}) ?(\d{1,2}) (\d\d):(\d\d)\]/;
const DELTA = /^\[\s*\+\d+\.\d+\]/;
// talosctl dmesg (siderolabs/talos website/content/docs/v0.14/Guides/logging.md): "172.20.1.2: kern:    info:
// [2021-11-10T10:09:37.662764956Z]: <message>", the node first, the facility and level padded, an RFC 3339 UTC time
const TALOS = /^(?:[\w.:-]{1,64}: )?[a-z]{2,8}: {1,8}[a-z]{2,8}: \[(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.\d{1,9})?Z\]: /;
// dmesg -x "kern  :info  : " and dmesg -r "<6>": a facility/level in front of the time, if any
const LEVEL = /^[a-z]+ *:[a-z]+ *: |^<\d{1,3}>/;

/** The line's time and whether it carries a kernel-log prefix at all. Each pattern is anchored and linear. */
function prefix(line: string): { known: boolean; time?: LogTime } {
    let m: RegExpExecArray | null = LEVEL.exec(line);
    const l = m ? line.slice(m[0].length) : line;
    const level = m !== null;
    if ((m = TALOS.exec(line))) return { known: true, time: { kind: "wall", s: Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000 } };
    if ((m = KMSG.exec(l))) return { known: true, time: { kind: "boot", s: Number(m[1]) / 1e6 } };
    if ((m = BOOT.exec(l))) return { known: true, time: { kind: "boot", s: Number(`${m[1]}.${m[2]}`) } };
    if ((m = CTIME.exec(l))) {
        const s = wallTime(Number(m[6]), m[1], Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
        return { known: true, time: s === undefined ? undefined : { kind: "wall", s } };
    }
    if ((m = ISO.exec(l))) return { known: true, time: { kind: "wall", s: Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6])) / 1000 } };
    if ((m = SYSLOG.exec(l))) {
        // journalctl -k / syslog lines often carry the kernel's own "[  966.503025]" after "kernel: ": boot time wins
        const rest = l.slice(m[0].length);
        const k = /^kernel: \[\s*(\d+)\.(\d+)\]/.exec(rest);
        if (k) return { known: true, time: { kind: "boot", s: Number(`${k[1]}.${k[2]}`) } };
        const s = wallTime(NO_YEAR, m[1], Number(m[2]), Number(m[3]), Number(m[4]), Number(m[5]));
        return { known: true, time: s === undefined ? undefined : { kind: "wall", s } };
    }
    if ((m = HUMAN.exec(l))) {
        const s = wallTime(NO_YEAR, m[1], Number(m[2]), Number(m[3]), Number(m[4]), 0);
        return { known: true, time: s === undefined ? undefined : { kind: "wall", s } };
    }
    return { known: DELTA.test(l) || level };
}

const PCI_FN = "([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\\.[0-7])";
// osinit.c NV_DEV_PRINTF: "NVRM: GPU <fn>: GPU has fallen off the bus." / "NVRM: GPU <fn>: RmInitAdapter failed!"
const LOST_DEV = new RegExp(`NVRM: GPU ${PCI_FN}: (?:GPU has fallen off the bus|RmInitAdapter failed)`);
// osapi.c: the first of the three lines names the GPU, the third says what happened
const LOST_PROBE_HEAD = new RegExp(`NVRM: The NVIDIA GPU ${PCI_FN}$`);
// drivers/base/dd.c: "<driver>: probe of <dev> failed with error <n>" (before 6.x), "<driver> <dev>: probe with driver <driver> failed with error <n>"
const PROBE_FAILED = new RegExp(`\\bnvidia(?:: probe of ${PCI_FN}| ${PCI_FN}: probe with driver nvidia) failed with error`);
// osapi.c rm_is_supported_device's first line, and the older drivers' one-line start of the same message
const REFUSED_HEAD = new RegExp(`NVRM: The NVIDIA GPU ${PCI_FN} \\(PCI ID: ([0-9A-Fa-f]{4}:[0-9A-Fa-f]{4})\\)`);
// what the next lines say (read joined, without their "NVRM: " prefixes): the driver's reason
const REFUSED_WHY = /installed (?:in this (?:vGPU host )?system )?is not supported by (open nvidia\.ko|the NVIDIA [\w.-]+ driver release|the [\w.-]+ NVIDIA Linux)/;
// kernel_gsp.c (NVIDIA/open-gpu-kernel-modules src/nvidia/src/kernel/gpu/gsp): when the GSP stops answering an RPC the
// driver prints a "*** GSP Timeout ***" banner and logs the Xid right after it (_kgspLogXid119: Xid 119; at 595.45.04
// _kgspLogRpcTimeout, "GPU<n> " in front: Xid 119, or 175 MEMORY_SUBSYSTEM_ERROR where _kgspClassifyGspTimeout finds a
// memory subsystem error), then dumps the falcon (kflcnCoreDumpNondestructive)
const GSP_TIMEOUT = /NVRM: (?:(GPU\d{1,3}) )?(?:_kgspLogXid119|_kgspLogRpcTimeout): \*{1,80} ?GSP Timeout ?\*{1,80}/;
const GSP_DUMP = /NVRM: (?:GPU\d{1,3} )?kflcnCoreDumpNondestructive/;
const LEGACY = new RegExp(`NVRM: ignoring the legacy GPU ${PCI_FN}`);
// the driver's form; older captures without the device name before "SXid" are read too
const SXID = new RegExp(`(?:\\bnvidia-(nvswitch\\d{1,3}): )?SXid \\(PCI:${PCI_FN}\\): (\\d{1,6}), ?`);
const XID = /NVRM: Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)(?: (GPU-I:\d+))?\): (\d+)\b/;
// mlx5_core's own failures; each a fixed phrase, matched one at a time (no ".*" between alternatives)
const MLX5_PHRASES = ["health compromised", "fw_fatal", "firmware internal error", "fatal error", "internal error", "command timeout",
    "cable error", "pci_channel_io_perm_failure", "power budget"];
// aer.c aer_error_severity_string: "Uncorrected (Non-Fatal)", "Uncorrected (Fatal)", "Corrected"; kernels before 4.19
// print the line without the "AER: " prefix
const AER = /(?:AER: )?PCIe Bus Error: severity=(Corrected|Correctable|Uncorrected|Uncorrectable)/i;

function mlx5Error(l: string): boolean {
    const at = l.indexOf("mlx5_core");
    if (at < 0) return false;
    const low = l.slice(at).toLowerCase();
    if (MLX5_PHRASES.some((p) => low.includes(p))) return true;
    // cmd.c: "cmd_work_handler:...: ... timeout", "wait_func:...: ... timeout"; "module N: ... error" (port module events)
    if ((low.includes("cmd_work_handler") || low.includes("wait_func")) && low.includes("timeout")) return true;
    return /\bmodule \d+/.test(low) && low.includes("error");
}

/** The driver's severity word and the link, from what follows "SXid (PCI:...): NNNNN, ". */
function sxidWords(rest: string): { severity?: SxidSeverity; link?: number } {
    const w = /^(Fatal|Non-fatal|Correctable), (?:Link (\d{1,3})\b)?/.exec(rest);
    if (w) return { severity: w[1] === "Fatal" ? "fatal" : w[1] === "Non-fatal" ? "non-fatal" : "correctable", link: w[2] === undefined ? undefined : Number(w[2]) };
    const s = /^Severity (\d) /.exec(rest);
    if (s) return { severity: s[1] === "1" ? "fatal" : "non-fatal" };
    return {};
}

/** A refusal that starts on line `l` (the message's next lines in `next`), or undefined. */
function refusal(l: string, next: readonly string[]): Omit<RefusedGpu, "line" | "time"> | undefined {
    const legacy = LEGACY.exec(l);
    if (legacy) return { pci: legacy[1].toLowerCase(), reason: "a legacy GPU this driver does not support" };
    const head = REFUSED_HEAD.exec(l);
    if (!head) return undefined;
    // the head's own rest and the next two lines, each without its time prefix and "NVRM: " (dmesg indents continuations)
    const words = [l.slice(head.index + head[0].length), ...next.map((n) => n.replace(/^.*?NVRM:\s*/, ""))].join(" ").replace(/\s+/g, " ");
    const why = REFUSED_WHY.exec(words);
    if (!why) return undefined;
    return { pci: head[1].toLowerCase(), pciId: head[2].toLowerCase(), reason: `not supported by ${why[1]}` };
}

// pdsh and clush put "<host>: " in front of each line of a remote command's output (pdsh(1): "-N Disable hostname:
// labels"); e.g. openucx/ucx#7738's "b1360: [14280.445220] mlx5_core ..."
const HOST_LABEL = /^([A-Za-z0-9][\w.-]{0,63}): /;

/** Lines whose every one carries one host's pdsh/clush label before a kernel-log prefix lose the label; labels of
 * several hosts are refused (one node's log per file). Any other text is returned as it is. */
function withoutHostLabel(lines: string[]): string[] {
    const labels = lines.map((l) => HOST_LABEL.exec(l));
    if (labels.some((m) => !m) || !labels.some((m, i) => prefix(lines[i].slice(m![0].length)).known)) return lines;
    const hosts = [...new Set(labels.map((m) => m![1]))];
    if (hosts.length > 1) throw new HealthParseError(`holds the kernel logs of ${hosts.length} hosts (pdsh/clush "<host>: " labels: ${hosts.slice(0, 3).join(", ")}${hosts.length > 3 ? ", ..." : ""}): the kit reads one node's log per file`);
    return lines.map((l, i) => l.slice(labels[i]![0].length));
}

export function parseDmesg(text: string): DmesgReport {
    const lines = withoutHostLabel(boundedLines(text).filter((l) => l.trim()));
    // util-linux dmesg's own refusal is its only output; a kernel line that merely says "Operation not permitted" is not
    const denied = lines.find((l) => /^dmesg: (?:read kernel buffer failed|klogctl failed)/i.test(l.trim()))
        ?? (lines.length <= 3 ? lines.find((l) => /^(?:dmesg|journalctl)\b.*Operation not permitted/i.test(l.trim())) : undefined);
    const report: DmesgReport = { xids: [], sxids: [], lost: [], refused: [], mlx5Errors: [], aer: [], gspTimeouts: [], lines: lines.length, newest: {} };
    // the GPU named by the last "NVRM: The NVIDIA GPU <fn>" line, for the "fallen off the bus" line two lines below it
    let probeHead: { pci: string; at: number; time?: LogTime } | undefined;
    if (denied) return { ...report, denied: denied.trim() };
    let prefixed = 0;
    for (let i = 0; i < lines.length; i++) {
        const l = lines[i].trimStart();
        const p = prefix(l);
        if (p.known) prefixed++;
        if (p.time) report.newest[p.time.kind] = Math.max(report.newest[p.time.kind] ?? -Infinity, p.time.s);
        const x = l.includes("NVRM: Xid") ? XID.exec(l) : null;
        if (x) {
            report.xids.push({ pci: x[1].toLowerCase(), code: Number(x[3]), line: l.trim(), gpuInstance: x[2], time: p.time });
            continue;
        }
        const sx = l.includes("SXid (PCI:") ? SXID.exec(l) : null;
        if (sx) {
            report.sxids.push({ ...sxidWords(l.slice(sx.index + sx[0].length)), pci: sx[2].toLowerCase(), device: sx[1], code: Number(sx[3]), line: l.trim(), time: p.time });
            continue;
        }
        if (l.includes("NVRM") || l.includes("nvidia")) {
            const head = LOST_PROBE_HEAD.exec(l.trimEnd());
            if (head) probeHead = { pci: head[1].toLowerCase(), at: i, time: p.time };
            const refused = refusal(l, lines.slice(i + 1, i + 3));
            if (refused) {
                report.refused.push({ ...refused, line: l.trim(), time: p.time });
                continue;
            }
            const gsp = l.includes("GSP Timeout") ? GSP_TIMEOUT.exec(l) : null;
            if (gsp && report.gspTimeouts.length < 64) report.gspTimeouts.push({ instance: gsp[1], line: l.trim(), time: p.time });
            if (report.gspDump === undefined && GSP_DUMP.test(l)) report.gspDump = l.trim();
            const dev = LOST_DEV.exec(l) ?? PROBE_FAILED.exec(l);
            if (dev) report.lost.push({ pci: (dev[1] ?? dev[2]).toLowerCase(), line: l.trim(), time: p.time });
            else if (probeHead && i - probeHead.at <= 2 && l.includes("NVRM: fallen off the bus and is not responding to commands")) {
                // dmesg indents the message's third line without a prefix: the event's time is its first line's
                report.lost.push({ pci: probeHead.pci, line: l.trim(), time: p.time ?? probeHead.time });
                probeHead = undefined;
            }
        }
        const a = l.includes("Bus Error: severity=") ? AER.exec(l) : null;
        if (a) {
            const dev = /([\w-]+ [0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]): (?:AER: )?PCIe Bus Error/i.exec(l)?.[1] ?? "a PCIe device";
            report.aer.push({ device: dev, severity: /^correct/i.test(a[1]) ? "corrected" : "uncorrected", line: l.trim() });
            continue;
        }
        if (mlx5Error(l)) report.mlx5Errors.push(l.trim());
    }
    if (lines.length > 0 && prefixed === 0 && report.xids.length === 0 && report.sxids.length === 0) {
        throw new HealthParseError("has no line in a kernel-log form (\"[  12.345678] \", \"[Sun Feb 23 16:24:18 2025] \", ISO time, syslog \"Feb 23 16:24:18 host kernel:\", kmsg \"6,1,2,-;\")");
    }
    return report;
}
