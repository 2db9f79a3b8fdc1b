/**
 * The incast's second phase (lossless mode): the senders' DCQCN reaction point off on the RoCE priority, so the
 * senders do not slow on CNPs and only PFC can keep the incast loss-free. incast.yml reads each sender's enable file,
 * writes 0, runs the incast again, and writes the value it read back in an `always` section, whatever failed.
 *
 * The file: `/sys/class/net/<if>/ecn/roce_rp/enable/<priority>` (1 on, 0 off), from DOCA/MLNX OFED.
 * source: shared/research/roce.md §2; docs.nvidia.com/networking/display/mlnxofedv24103250lts/explicit+congestion+notification+(ecn)
 * (the same file playbooks/roles/roce_host/files/rdmakit-roce-qos writes)
 */
import type { IncastHost } from "./incast";

/** Files of this phase carry this prefix in the incast folder (`rpoff-<host>-before.txt`, …; incast-files.ts). */
export const RP_OFF_PREFIX = "rpoff-";

/** The sender's enable file as a shell word (the netdev resolved on the host from sysfs when the spec does not name it). */
export function rpEnablePath(host: IncastHost, priority: number): string {
    const netdev = host.netdev ?? `$(ls /sys/class/infiniband/${host.device}/device/net/ | head -n 1)`;
    return `"/sys/class/net/${netdev}/ecn/roce_rp/enable/${priority}"`;
}

/** Read the file (what the restore writes back). */
export function rpReadCommand(host: IncastHost, priority: number): string {
    return `cat ${rpEnablePath(host, priority)}`;
}

/** Write `value` and print what the file reads after (the grade checks the phase ran with 0). */
export function rpWriteCommand(host: IncastHost, priority: number, value: string): string {
    if (!/^[01]$/.test(value)) throw new Error(`roce_rp enable value ${JSON.stringify(value)}: 0 or 1 expected`);
    const f = rpEnablePath(host, priority);
    return `echo ${value} > ${f}; cat ${f}`;
}
