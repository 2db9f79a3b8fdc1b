/**
 * `ls -l /sys/class/infiniband/` → which PCI function each RDMA device sits on. The kernel links every RDMA device of
 * the class to its device's sysfs folder (Documentation/ABI/stable/sysfs-class-infiniband; the PCI function's
 * folder is named by its address, drivers/pci/probe.c pci_setup_device, "%04x:%02x:%02x.%d"), so `ls -l` prints:
 *   lrwxrwxrwx 1 root root 0 Jun  5 10:00 mlx5_0 -> ../../devices/pci0000:15/0000:15:01.0/.../0000:1a:00.0/infiniband/mlx5_0
 * the last address before `/infiniband/<name>` is the function; a software device (rxe, siw) lives under
 * devices/virtual and has none. Several devices may share one function (XDR's `smi1` beside `mlx5_0`, Mellanox/rdmamap
 * PR #17). `ls: cannot access '/sys/class/infiniband/': No such file or directory` is the answer of a kernel with no
 * RDMA device registered. This is what tells a Mellanox function that is an RDMA rail from one that is not (lspci
 * alone names the model, never the rail: test/fixtures/health/README.md).
 * Spellings people send (test/fixtures/health/README.md, round 4): `ls -la` adds the folder's own `.` and `..` lines
 * (gnosia93/training-on-eks, an EFA node), SELinux hosts print `lrwxrwxrwx.` (the same), `ls -l` of the device paths
 * names each device by its path with the link's target ending in "/" (Linux commit a9d2e9ae953f's message:
 * "/sys/class/infiniband/rxe0 -> ../../devices/virtual/infiniband/rxe0/").
 */
import { otherTool } from "./ibstat";
import { boundedLines } from "./text";
import { HealthParseError } from "./types";

export interface RdmaDevices {
    /** RDMA device name → PCI function ("0000:1a:00.0"), undefined for a device on no PCI function */
    devices: Map<string, string | undefined>;
    /** the line saying the class folder is not there (no RDMA device at all), when ls printed one */
    noClass?: string;
}

const BDF = /^(?:[0-9a-f]{4}:)?[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$/i;

/** One PCI function's key whatever the spelling: "1a:00.0" (lspci without -D) and "0000:1a:00.0" meet. */
export function functionKey(bdf: string): string {
    const parts = bdf.trim().toLowerCase().split(":");
    const domain = parts.length === 3 ? parseInt(parts[0], 16) : 0;
    return `${domain}:${parts.slice(-2).join(":")}`;
}

/** The text without its trailing "/"s; a loop, not an unanchored regex (text.ts: linear on any line). */
function trimSlashes(s: string): string {
    let end = s.length;
    while (end > 0 && s[end - 1] === "/") end--;
    return s.slice(0, end);
}

export function parseRdmaDevices(text: string): RdmaDevices {
    const devices = new Map<string, string | undefined>();
    let noClass: string | undefined;
    let listed = false;
    for (const raw of boundedLines(text)) {
        const line = raw.trim();
        if (!line || /^total \d+$/.test(line)) continue;
        // `ls -la`: the class folder itself and its parent, directories named "." and ".."
        if (/^d\S* .* \.{1,2}$/.test(line)) continue;
        if (/^ls: cannot access .*\/sys\/class\/infiniband\/?'?: No such file or directory$/.test(line)) {
            noClass = line;
            continue;
        }
        const arrow = line.indexOf(" -> ");
        // rdma link / rdma dev / ibdev2netdev name no PCI function: refused by name (ibstat.ts OTHER_TOOLS)
        const tool = arrow < 0 ? otherTool(line) : undefined;
        // bare names here are most likely `ls` without -l
        const other = tool?.startsWith("ibstat -l") ? "a list of device names (ls without -l, or ibstat -l)" : tool;
        if (other) throw new HealthParseError(`is ${other}${tool === other ? " output" : ""} ("${line.slice(0, 80)}"), which names no PCI function: the kit reads ls -l /sys/class/infiniband/`);
        if (arrow < 0) throw new HealthParseError(`line "${line.slice(0, 120)}" is not an ls -l line of /sys/class/infiniband ("<name> -> ../../devices/.../infiniband/<name>")`);
        // the device's own name, also where ls was given its path (".../infiniband/rxe0")
        const name = trimSlashes(line.slice(0, arrow).split(" ").pop() ?? "").split("/").pop() ?? "";
        const target = trimSlashes(line.slice(arrow + 4)).split("/");
        // the link ends in infiniband/<its own name>; the folder above is the device's
        if (target.length < 3 || target[target.length - 1] !== name || target[target.length - 2] !== "infiniband") {
            throw new HealthParseError(`"${line.slice(0, 160)}" does not link ${name || "a device"} to a .../infiniband/${name || "<name>"} folder`);
        }
        const parent = target[target.length - 3];
        devices.set(name, BDF.test(parent) ? parent.toLowerCase() : undefined);
        listed = true;
    }
    if (!listed && !noClass) throw new HealthParseError("lists no RDMA device and no \"cannot access\" answer: not the output of ls -l /sys/class/infiniband/");
    return { devices, noClass };
}
