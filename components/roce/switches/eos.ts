/**
 * Arista EOS renderer: configuration-mode CLI lines (what `arista.eos.eos_config src=` or a config session takes).
 * Command forms are those aristanetworks/avd eos_cli_config_gen renders:
 * python-avd/pyavd/_eos_cli_config_gen/j2templates/eos/{qos-profiles.j2, ethernet-interface-tx-queues.j2,
 * priority-flow-control.j2} (roce.md §4c), and the Arista 7388 DCQCN example in
 * ROCm/gpu-cluster-networking:docs/how-to/roce-network-config.rst.
 */
import type { QosPlan, SwitchRenderInput } from "../qos";

/** Name of the qos profile applied to host ports with `service-profile`. */
export const EOS_PROFILE = "RDMAKIT_ROCE";

// `qos map dscp <dscps> to traffic-class <tc>` takes a list; eight values per line keeps each command short (L: the
// per-command limit is not documented in the sources read).
const DSCP_PER_LINE = 8;

/** Seconds as EOS watchdog timers take them (decimal seconds, e.g. 0.3). */
function seconds(ms: number): string {
    return String(ms / 1000);
}

/** Renders the EOS CLI for one switch. Pure. */
export function renderEos(plan: QosPlan, sw: SwitchRenderInput): string[] {
    if (sw.os !== "eos") throw new Error(`renderEos: the switch runs ${sw.os}`);
    const lossless = plan.mode === "lossless";
    const L: string[] = [];
    L.push(`! rdmakit RoCE QoS (${plan.mode}): DSCP ${plan.roce.dscp} -> priority ${sw.roce.priority}, CNP DSCP ${plan.cnp.dscp} -> priority ${sw.cnp.priority}`);

    // Classification: every DSCP explicitly, so only RoCE reaches the lossless class (rule C3).
    const others = Array.from({ length: 64 }, (_, d) => d).filter((d) => d !== plan.roce.dscp && d !== plan.cnp.dscp);
    for (let i = 0; i < others.length; i += DSCP_PER_LINE) {
        L.push(`qos map dscp ${others.slice(i, i + DSCP_PER_LINE).join(" ")} to traffic-class ${sw.other.trafficClass}`);
    }
    L.push(`qos map dscp ${plan.roce.dscp} to traffic-class ${sw.roce.trafficClass}`);
    L.push(`qos map dscp ${plan.cnp.dscp} to traffic-class ${sw.cnp.trafficClass}`);
    // The traffic-class → tx-queue default is platform-dependent, so pin it (roce.md §4c, L).
    for (const c of [sw.other, sw.roce, sw.cnp]) L.push(`qos map traffic-class ${c.trafficClass} to tx-queue ${c.queue}`);

    if (lossless) {
        // Global watchdog timers and action (priority-flow-control.j2).
        L.push("!");
        L.push(`priority-flow-control pause watchdog default timeout ${seconds(plan.pfc.watchdog.detectionMs)}`);
        L.push(`priority-flow-control pause watchdog default polling-interval ${seconds(plan.pfc.watchdog.pollMs)}`);
        L.push(`priority-flow-control pause watchdog default recovery-time ${seconds(plan.pfc.watchdog.restorationMs)}`);
        L.push(`priority-flow-control pause watchdog action ${plan.pfc.watchdog.action}`);
    }

    // The profile (qos-profiles.j2): trust, tx-queues, PFC. The kit owns it: removed and written again inside the
    // configure session (push.ts), so a queue or PFC priority of an earlier plan does not survive; the session commits
    // only the difference to the running config (EOS-SESS, roce-operations.md §1c).
    L.push("!");
    L.push(`no qos profile ${EOS_PROFILE}`);
    L.push(`qos profile ${EOS_PROFILE}`);
    L.push("   qos trust dscp");
    const queues = [
        { q: sw.other.queue, lines: ["no priority", `bandwidth percent ${plan.ets.otherWeightPct}`] },
        {
            q: sw.roce.queue,
            lines: [
                "no priority",
                `bandwidth percent ${plan.ets.roceWeightPct}`,
                // random-detect ecn minimum-threshold X <units> maximum-threshold Y <units> max-mark-probability P
                `random-detect ecn minimum-threshold ${plan.ecn.minBytes} bytes maximum-threshold ${plan.ecn.maxBytes} bytes max-mark-probability ${plan.ecn.maxProbabilityPct}`,
            ],
        },
        { q: sw.cnp.queue, lines: ["priority strict"] },
    ].sort((a, b) => a.q - b.q);
    // Strata (Trident/Tomahawk) splits unicast and multicast queues and takes uc-tx-queue; Sand takes tx-queue
    // (catalog/switches.ts). spec.ts refuses an eos switch without a catalog model, so the keyword is always known.
    const kw = sw.eosQueueKeyword ?? "tx-queue";
    for (const { q, lines } of queues) {
        L.push("   !");
        L.push(`   ${kw} ${q}`);
        for (const l of lines) L.push(`      ${l}`);
    }
    L.push("   !");
    if (lossless) {
        L.push("   priority-flow-control on");
        for (const p of plan.pfc.priorities) L.push(`   priority-flow-control priority ${p} no-drop`);
        L.push("   priority-flow-control pause watchdog");
        L.push(`   priority-flow-control pause watchdog port action ${plan.pfc.watchdog.action}`);
    } else {
        L.push("   no priority-flow-control");
    }

    // every port on the RoCE path: host ports, uplinks, a spine's downlinks (EOS sizes headroom itself)
    for (const p of sw.ports) {
        L.push("!");
        L.push(`interface ${p.name}`);
        L.push(`   mtu ${sw.mtu}`);
        // 802.3x link pause off wherever PFC runs (rule C5).
        L.push("   flowcontrol send off");
        L.push("   flowcontrol receive off");
        L.push(`   service-profile ${EOS_PROFILE}`);
    }
    L.push("!");
    return L;
}

export function renderEosText(plan: QosPlan, sw: SwitchRenderInput): string {
    return renderEos(plan, sw).join("\n") + "\n";
}
