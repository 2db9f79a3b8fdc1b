/**
 * `lspci -vv` (pciutils) → the GPUs and RDMA NICs with their PCIe link: capability (LnkCap) and the trained link
 * (LnkSta). Forms read (pciutils lspci.c / ls-caps.c; real captures in test/fixtures/health/README.md):
 *   19:00.0 3D controller: NVIDIA Corporation Device 2330 (rev a1)                 device line (a domain "0000:" prefix
 *   0000:19:00.0 3D controller [0302]: NVIDIA Corporation GH100 [H100 SXM5 80GB] [10de:2330] (rev a1)   with -D / -nn)
 *   	LnkCap:	Port #0, Speed 32GT/s, Width x16, ASPM L1, ...
 *   	LnkSta:	Speed 16GT/s (ok), Width x8 (downgraded)                       pciutils 3.6-3.9 (commit b47b5bd, 2018): "(ok)",
 *                                                                            "(downgraded)", "(strange)" after each value
 *   	LnkSta:	Speed 16GT/s (downgraded), Width x16                           pciutils 3.10+ (commit 9f76812, 2022): nothing when
 *                                                                            equal, "(downgraded)" / "(overdriven)", and nothing
 *                                                                            at all on root and downstream ports
 *   	LnkSta:	Speed 8GT/s, Width x16, TrErr- Train- SlotClk+ DLActive- ...   older pciutils (RHEL 7): no marker
 *   	LnkSta:	Speed unknown (downgraded), Width x0 (downgraded)              a Link Status that is not the function's own
 *                                                                            (ls-caps.c link_speed prints "unknown" for a code
 *                                                                            it does not know, and the width field as read: 0):
 *                                                                            a virtual function shows this always (kvm list, Le
 *                                                                            Goater, 2025-07-28); root and downstream ports with
 *                                                                            no card show it too, but an endpoint that answers
 *                                                                            config reads has its link up (grade.ts)
 *   	Capabilities: <access denied>                                           not run as root: no link information
 * "(rev ff)" on the device line: the device answers config reads with all ones, it has fallen off the bus. Since
 * pciutils 3.8.0 (commits fb570ee, a936caf: the revision comes from sysfs, which the kernel cached at enumeration) the
 * device line keeps its real revision, and the all-ones config space shows below it instead:
 *   	!!! Unknown header type 7f                                                the header type byte read as ff (lspci.c
 *                                                                            show_verbose prints it & 0x7f)
 *   	LnkSta:	Speed unknown (overdriven), Width x63 (overdriven)                 a register read as ffff mid-capture: the
 *                                                                            6-bit width field all ones (ls-caps.c
 *                                                                            cap_express_link); x63 is no width PCIe has
 *   00: ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff ff                          -x / -xxx hex dump (lspci.c show_hex_dump,
 *                                                                            at column 0): the whole first row ff (a
 *                                                                            VF's vendor ID alone reads ffff: allOnes)
 * Each marks the function off the bus (offBus) wherever it shows.
 * Bridges (root and switch ports) are read for the path above each device: the bus below them, their port type
 * ("Express (v2) Downstream Port (Slot+)", ls-caps.c cap_express) and their ACS control (ls-ecaps.c cap_acs,
 * "ACSCtl:\tSrcValid+ TransBlk- ReqRedir+ CmpltRedir+ UpstreamFwd+ EgressCtrl- DirectTrans-").
 * The link is compared by number (LnkSta below LnkCap), so both the old and the new form grade the same.
 * Plain `lspci` / `lspci -nn` (device lines only, no indented detail: leptonai/gpud testdata lspci.gb200, lspci.nn.a10)
 * is another command's output and is refused by name: read as -vv it would show no link, and no link is no finding.
 */
import { boundedLines } from "./text";
import { HealthParseError } from "./types";

export interface PcieLink {
    gts?: number;
    width?: number;
    /** LnkSta's "Speed unknown (downgraded)" / "Speed 32GT/s (downgraded)": pciutils 3.6+ compares the raw speed codes
     * (ls-caps.c link_compare), so the marker holds where a rate it cannot name ("unknown": Gen5 before pciutils 3.6.3,
     * commit caca31a; Gen6 before 3.8.0, commit 5bdf63b) leaves no number to compare */
    speedDowngraded?: boolean;
    /** "Speed unknown": a rate this pciutils cannot name */
    speedUnknown?: boolean;
    line: string;
}

export interface PciDevice {
    bdf: string;
    line: string;
    kind: "gpu" | "nic" | "efa";
    /** the device line says "(rev ff)" */
    revFF: boolean;
    virtualFunction: boolean;
    cap?: PcieLink;
    sta?: PcieLink;
    accessDenied: boolean;
    /** any indented detail line under the device line (lspci -v and more) */
    detailed: boolean;
    /** the AER "UESta:" line when it shows an uncorrectable error bit set ("DLP+", "CmpltTO+"; pciutils ls-ecaps.c) */
    uncorrectable?: string;
    /** the LnkCap of the port above it (the bridge whose secondary bus is this device's bus), where lspci lists it */
    upstream?: PcieLink & { bdf: string };
    /** the line that shows its config space reading all ones after a readable device line (see the header) */
    offBus?: string;
    /** the bridges above it, nearest first, as far as lspci lists them */
    path: PciBridge[];
    /**
     * Its ATS capability's control: "ATSCtl:\tEnable+, Smallest Translation Unit: 00" (pciutils ls-ecaps.c cap_ats)
     * gives true, "Enable-" false; undefined where lspci lists no ATS capability (firmware that has it off hides it:
     * NVIDIA AI Enterprise, "ATS and ACS configuration": mlxconfig ATS_ENABLED, then lspci shows the capability Enable+)
     */
    ats?: boolean;
}

/** A PCI bridge (a root or switch port): the bus below it, what its own link can do, its port type and ACS control. */
export interface PciBridge {
    bdf: string;
    line: string;
    /** "Bus: primary=00, secondary=01, subordinate=01" (pciutils lspci.c show_htype1): the bus right below the port */
    secondary?: number;
    cap?: PcieLink;
    /** the Express capability's port type: "Root Port", "Downstream Port", "Upstream Port", ... */
    port?: string;
    /** the ACSCtl line, trimmed, where lspci printed one */
    acsCtl?: string;
    /** a line showing its config space reading all ones */
    offBus?: string;
}

/** The PCI domain and bus of a bdf as lspci prints it ("0000:1a:00.0", or "1a:00.0" when every device is in domain 0). */
function domainBus(bdf: string): string {
    const parts = bdf.split(":");
    return parts.length === 3 ? `${parts[0]}:${parts[1]}` : `0000:${parts[0]}`;
}

// lspci -x / -xxx / -xxxx: "%02x:" and 16 " %02x" bytes a row, at column 0 (lspci.c show_hex_dump; "100:" past 0xff)
const HEX = /^([0-9a-f]{2,3}):((?: [0-9a-f]{2}){16})$/i;

/**
 * Whether a line of a device's block shows its config space reading all ones: the header type 7f, a link register's
 * width field read as 63, or a hex dump whose first row is ff in all 16 bytes. Vendor ID ffff alone is no sign: an
 * SR-IOV virtual function reads its Vendor and Device ID as ffff by design (pciutils/pciutils#154, merged 2023: "PCI
 * VFs are expected to have a vendor and device ID of 0xffff"; the kernel fills the IDs sysfs shows from the PF), while
 * its command, status, revision and class bytes on the same row are real.
 */
function allOnes(t: string): boolean {
    if (/^!!! Unknown header type 7f\b/i.test(t)) return true;
    if (/^Lnk(Cap|Sta):.*\bWidth x63\b/.test(t)) return true;
    const hex = HEX.exec(t);
    return hex !== null && hex[1] === "00" && /^(?: ff){16}$/i.test(hex[2]);
}

const DEVICE = /^((?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]) ([^:]+?)(?: \[[0-9a-f]{4}\])?: (.*)$/i;

function kindOf(cls: string, desc: string): PciDevice["kind"] | undefined {
    if (/^(3D|VGA compatible|Display) controller$|^Processing accelerators$/i.test(cls) && /NVIDIA|Advanced Micro Devices|AMD/i.test(desc)) return "gpu";
    if (/Elastic Fabric Adapter|EFA\)/i.test(desc)) return "efa";
    if (/^(Ethernet|Infiniband|Network) controller$/i.test(cls) && /Mellanox/i.test(desc)) return "nic";
    return undefined;
}

function link(line: string): PcieLink {
    const speed = /Speed ([\d.]+)GT\/s/.exec(line);
    const width = /Width x(\d+)/.exec(line);
    return {
        gts: speed ? Number(speed[1]) : undefined, width: width ? Number(width[1]) : undefined,
        speedDowngraded: /Speed \S+ \(downgraded\)/.test(line), speedUnknown: /Speed unknown/.test(line), line: line.trim(),
    };
}

export function parseLspci(text: string): { devices: PciDevice[]; bridges: PciBridge[]; total: number } {
    const devices: PciDevice[] = [];
    const bridges: PciBridge[] = [];
    let cur: PciDevice | undefined;
    let bridge: PciBridge | undefined;
    let total = 0;
    let details = 0;
    for (const raw of boundedLines(text)) {
        // pciutils' own warnings (stderr, kept by 2>&1): "pcilib: sysfs_read_vpd: read failed", "lspci: Unable to load libkmod"
        if (!raw.trim() || raw.startsWith("#") || /^(pcilib|lspci): /.test(raw)) continue;
        // lspci -x's hex dump rows and its "WARNING: Cannot show hex-dump of the config space" belong to the block above
        const hexRow = HEX.test(raw.trim()) || /^WARNING: Cannot show hex-dump\b/.test(raw);
        if (!hexRow && !/^\s/.test(raw)) {
            const m = DEVICE.exec(raw.trim());
            if (!m) throw new HealthParseError(`line "${raw.slice(0, 120)}" is neither an lspci device line ("<bus>:<dev>.<fn> <class>: <device>") nor an indented detail line`);
            total++;
            const kind = kindOf(m[2], m[3]);
            cur = kind ? {
                bdf: m[1].toLowerCase(), line: raw.trim(), kind, revFF: /\(rev ff\)/i.test(m[3]),
                virtualFunction: /Virtual Function/i.test(m[3]), accessDenied: false, detailed: false, path: [],
            } : undefined;
            if (cur) devices.push(cur);
            bridge = !kind && /^PCI bridge$/i.test(m[2]) && bridges.length < 4096 ? { bdf: m[1].toLowerCase(), line: raw.trim() } : undefined;
            if (bridge) bridges.push(bridge);
            continue;
        }
        if (!hexRow) details++;
        if (bridge) {
            const t = raw.trim();
            const bus = /^Bus: primary=[0-9a-f]{2}, secondary=([0-9a-f]{2}),/i.exec(t);
            const express = /^Capabilities: \[[0-9a-f]+\] Express (?:\(v\d+\) )?([A-Za-z /-]+?)(?: \(Slot[+-]\))?,/.exec(t);
            if (allOnes(t)) bridge.offBus ??= t.replace(/\s+/g, " ");
            if (bus) bridge.secondary = parseInt(bus[1], 16);
            else if (/^LnkCap:/.test(t)) bridge.cap = link(`${bridge.bdf} ${t}`);
            else if (express) bridge.port = express[1];
            else if (/^ACSCtl:/.test(t)) bridge.acsCtl = t.replace(/\s+/g, " ");
            continue;
        }
        if (!cur) continue;
        const t = raw.trim();
        if (allOnes(t)) cur.offBus ??= `${cur.bdf} ${t.replace(/\s+/g, " ")}`;
        if (hexRow) continue;
        cur.detailed = true;
        if (/^LnkCap:/.test(t)) cur.cap = link(`${cur.bdf} ${t}`);
        else if (/^LnkSta:/.test(t)) cur.sta = link(`${cur.bdf} ${t}`);
        else if (/^Capabilities: <access denied>/.test(t)) cur.accessDenied = true;
        else if (/^ATSCtl:\s*Enable[+-]/.test(t)) cur.ats = /^ATSCtl:\s*Enable\+/.test(t);
        // ls-ecaps.c cap_aer: "UESta:\tDLP- SDES- TLP- ..." with "+" on each status bit set (sticky until cleared)
        else if (/^UESta:/.test(t) && /\w\+/.test(t)) cur.uncorrectable = `${cur.bdf} ${t.replace(/\s+/g, " ")}`;
    }
    // the port above each device: the bridge of its domain whose secondary bus is the device's bus
    const above = new Map<string, PciBridge>();
    for (const b of bridges) {
        if (b.secondary === undefined || !b.cap) continue;
        const [domain] = domainBus(b.bdf).split(":");
        above.set(`${domain}:${b.secondary.toString(16).padStart(2, "0")}`, b);
    }
    // the whole path: every bridge with a secondary bus, whatever it lists of its link
    const parent = new Map<string, PciBridge>();
    for (const b of bridges) {
        if (b.secondary === undefined) continue;
        const [domain] = domainBus(b.bdf).split(":");
        parent.set(`${domain}:${b.secondary.toString(16).padStart(2, "0")}`, b);
    }
    for (const d of devices) {
        const b = above.get(domainBus(d.bdf));
        if (b?.cap) d.upstream = { ...b.cap, bdf: b.bdf };
        // nearest first; a loop in a damaged capture ends at a bridge already on the path
        for (let p = parent.get(domainBus(d.bdf)); p && !d.path.includes(p) && d.path.length < 32; p = parent.get(domainBus(p.bdf))) d.path.push(p);
    }
    if (total === 0) throw new HealthParseError("lists no PCI device: not lspci -vv output");
    if (details === 0) throw new HealthParseError(`lists ${total} device line(s) and no detail under any: plain lspci, not lspci -vv (run as root: lspci -vv)`);
    return { devices, bridges, total };
}
