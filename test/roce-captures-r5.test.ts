// Round 5 of `rdmakit fabric check`'s readers against other people's published outputs (test/fixtures/roce/running/,
// each with its source in that folder's README): mlnx_qos with an empty `default priority:` row and rate limits, a
// pasted mlnx_qos cut before its PFC table, ethtool on a driver without pause support (stderr first, as `2>&1` into a
// pipe prints it), and two EOS configurations written by Arista's own generator (aristanetworks/avd). Each case runs
// the whole check (fabricDrift) as a user does: a drifted device is named by rule, device and port, and what cannot
// be read is refused by name, never read as planned.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fabricDrift, formatDriftReport, type DriftReport } from "../components/roce/drift";
import { eosRunningGlobals, parseHostState, runningSwitchView } from "../components/roce/fabric-state";
import { planQos, type QosPlan } from "../components/roce/qos";
import { roceSpecSchema } from "../components/roce/spec";
import { fabricSpecInput } from "./fixtures/roce/helpers";
import { fixture, hostOutput, PLAN } from "./fixtures/roce/running-host";

const GPU01 = PLAN.hosts.find((h) => h.name === "gpu01")!;
const hostDrift = (output: string): DriftReport => fabricDrift(PLAN, [], [{ host: "gpu01", output }]);
const show = (r: DriftReport) => formatDriftReport(r);
const on = (r: DriftReport, device: string) => r.findings.filter((f) => f.device.split(", ").includes(device));

/** The test fabric with leaf-eos's host ports and uplink on the given AVD interface names (AVD writes `EthernetN`). */
function eosPlan(hostPorts: [string, string], uplink: string): QosPlan {
    const s = fabricSpecInput();
    s.switches[2].hostPorts = hostPorts;
    s.switches[2].uplinks![0].port = uplink;
    s.hosts.forEach((h, i) => { h.railPorts = [`leaf-nvue:swp${i + 1}`, `leaf-eos:${hostPorts[i]}`]; });
    return planQos(roceSpecSchema.parse(s));
}

describe("mlnx_qos captures, round 5", () => {
    it("PCP trust with rate limits and an empty `default priority:` row (magnate3 'vlan qos'): read whole, trust and PFC drift by rail", () => {
        const text = fixture("mlnx_qos-magnate3-vlan-qos-ratelimit.txt");
        const rail = parseHostState(hostOutput(GPU01, { mlnxQos: text })).rails[0];
        // no dscp2prio rows under PCP trust, the empty default-priority row adds none; `25.0 Gbps` rows are not PFC rows
        assert.deepEqual([rail.dcbxMode, rail.trust, rail.pfcEnabled, rail.cableLenM, rail.dscp2prio, rail.errors], ["OS controlled", "pcp", [], 7, undefined, []]);
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: text }));
        assert.deepEqual(r.unreadable, [], show(r));
        for (const ifc of GPU01.railNetdevs!) {
            const rules = on(r, `gpu01:${ifc}`);
            assert.deepEqual(rules.find((f) => f.rule === "C5")?.found, { roce_host_trust: "pcp" }, show(r));
            assert.deepEqual(rules.find((f) => f.rule === "C12")?.found, { roce_host_pfc_vector: "0,0,0,0,0,0,0,0" }, show(r));
        }
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
    it("a paste cut after the DSCP map ('... # many other outputs'): every rail UNREADABLE by name, never read as planned", () => {
        const text = fixture("mlnx_qos-magnate3-husky-cut.txt");
        const rail = parseHostState(hostOutput(GPU01, { mlnxQos: text })).rails[0];
        // what it does show is read (trust dscp, DSCP 26 on priority 3), the missing PFC table is not taken as planned
        assert.deepEqual([rail.trust, rail.dscp2prio?.[26], rail.pfcEnabled], ["dscp", 3, undefined]);
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: text }));
        assert.deepEqual(r.unreadable.map((u) => u.device), GPU01.railNetdevs!.map((ifc) => `gpu01:${ifc}`), show(r));
        for (const u of r.unreadable) assert.match(u.why, /^mlnx_qos: .*found no PFC row; first line 'DCBX mode: OS controlled'/);
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
});

describe("ethtool -a captures, round 5", () => {
    it("a driver without pause support (ravens/docker-vyos#1: the error before the header): UNREADABLE by rail, no pause state invented", () => {
        const out = hostOutput(GPU01, { ethtool: fixture("ethtool-a-vyos-not-supported.txt") });
        const rail = parseHostState(out).rails[0];
        assert.equal(rail.globalPause, undefined);
        const r = hostDrift(out);
        assert.deepEqual(r.findings, [], show(r));
        assert.deepEqual(r.unreadable.map((u) => u.device), GPU01.railNetdevs!.map((ifc) => `gpu01:${ifc}`), show(r));
        for (const u of r.unreadable) assert.match(u.why, /^ethtool -a: expected 'RX:' and 'TX:' pause rows .*Cannot get device pause settings: Operation not supported/);
    });
});

describe("EOS configurations from Arista's generator (aristanetworks/avd molecule intended configs)", () => {
    it("ethernet-interfaces.cfg: PFC on priority 5 (no-drop) and priority 5 drop are drift on the planned ports, named by switch and port", () => {
        const plan = eosPlan(["Ethernet1", "Ethernet2"], "Ethernet4");
        const r = fabricDrift(plan, [{ switch: "leaf-eos", config: fixture("eos-avd-ethernet-interfaces.cfg") }], []);
        assert.deepEqual(r.unreadable, [], show(r));
        // Ethernet1: `priority-flow-control on` + `priority 5 drop` is no lossless priority; MTU 1500
        assert.deepEqual(on(r, "leaf-eos:Ethernet1").find((f) => f.rule === "C3")?.found, { pfcPriorities: [], strictQueues: [] }, show(r));
        assert.deepEqual(on(r, "leaf-eos:Ethernet1").find((f) => f.rule === "C9")?.found, { mtu: 1500 }, show(r));
        // Ethernet2: `priority 5 no-drop`, where the hosts pause on 3
        assert.deepEqual(on(r, "leaf-eos:Ethernet2").find((f) => f.rule === "C2")?.found, { pfcPriorities: [5] }, show(r));
        // Ethernet4 (the uplink): `priority-flow-control on` without a priority
        assert.deepEqual(on(r, "leaf-eos:Ethernet4").find((f) => f.rule === "C14")?.found, { pfcPriorities: [] }, show(r));
    });
    it("qos.cfg: `qos map dscp … to traffic-class 4 drop-precedence 2` and the TC→COS/TC→DSCP rewrite maps of other classes are read, not refused", () => {
        const plan = eosPlan(["Ethernet1", "Ethernet6"], "Ethernet7");
        const sw = plan.switches.find((s) => s.name === "leaf-eos")!;
        const v = runningSwitchView(sw, fixture("eos-avd-qos.cfg"));
        const e1 = v.ports.find((p) => p.port === "Ethernet1")!;
        // DSCP 26 is in the drop-precedence line (TC 4), 46 in `to traffic-class 5`; trust dscp and ECN on queues 2, 4 from profile `test`
        assert.deepEqual([e1.dscpToTc[26], e1.dscpToTc[46], e1.trustDscp, [...e1.ecnQueues].sort()], [4, 5, true, [2, 4]]);
        const r = fabricDrift(plan, [{ switch: "leaf-eos", config: fixture("eos-avd-qos.cfg") }], []);
        assert.deepEqual(r.unreadable, [], show(r));
        assert.match(on(r, "leaf-eos:Ethernet1").find((f) => f.rule === "C1")?.message ?? "", /maps it to TC 4 \/ queue 4/, show(r));
    });
    it("a DSCP rewrite of the RoCE class while `qos rewrite dscp` is on refuses the switch by name; without the rewrite switch it is left out", () => {
        const plan = eosPlan(["Ethernet1", "Ethernet6"], "Ethernet7");
        // constructed from qos.cfg: its `qos map traffic-class 1 to dscp 56` moved to the RoCE class 3
        const text = fixture("eos-avd-qos.cfg").replace("qos map traffic-class 1 to dscp 56", "qos map traffic-class 1-3 to dscp 56");
        const r = fabricDrift(plan, [{ switch: "leaf-eos", config: text }], []);
        assert.equal(r.unreadable.length, 1, show(r));
        assert.match(r.unreadable[0].why, /'qos map traffic-class 1-3 to dscp 56' rewrites the DSCP of traffic class 3 \(RoCE or CNP\)/);
        const off = fabricDrift(plan, [{ switch: "leaf-eos", config: text.replace("qos rewrite dscp\n", "") }], []);
        assert.deepEqual(off.unreadable, [], show(off));
    });
    it("`priority-flow-control all off` (qos.cfg's global line) turns PFC off on every port, whatever the interface says", () => {
        const plan = eosPlan(["Ethernet1", "Ethernet2"], "Ethernet4");
        const sw = plan.switches.find((s) => s.name === "leaf-eos")!;
        const base = fixture("eos-avd-ethernet-interfaces.cfg");
        const allOff = fixture("eos-avd-qos.cfg").split("\n").find((l) => l === "priority-flow-control all off")!;
        assert.equal(allOff, "priority-flow-control all off", "the global line as AVD writes it");
        // constructed: ethernet-interfaces.cfg (Ethernet2 runs PFC on 5) with qos.cfg's global line appended
        const text = `${base}${allOff}\n`;
        assert.deepEqual(runningSwitchView(sw, base).ports.find((p) => p.port === "Ethernet2")?.pfcPriorities, [5]);
        const v = runningSwitchView(sw, text);
        assert.deepEqual([v.mode, v.ports.find((p) => p.port === "Ethernet2")?.pfcPriorities], ["lossy", []]);
        assert.equal(eosRunningGlobals(sw, text).pfcAllOff, true);
        const r = fabricDrift(plan, [{ switch: "leaf-eos", config: text }], []);
        assert.ok(r.findings.some((f) => f.rule === "C12" && f.device === "leaf-eos"), show(r));
        assert.deepEqual(on(r, "leaf-eos:Ethernet2").find((f) => f.rule === "C2")?.found, { pfcPriorities: [] }, show(r));
    });
});
