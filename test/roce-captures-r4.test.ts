// Round 4 of `rdmakit fabric check`'s readers against other people's published outputs (test/fixtures/roce/running/,
// each with its source in that folder's README): mlnx_qos from two more hosts (a DSCP map edited by hand, PCP trust),
// ethtool -a from the ice driver's patches, and SONiC CONFIG_DBs of two more SKUs from sonic-utilities' db_migrator
// inputs. Each case runs the whole check (fabricDrift) as a user does: the planned state passes, a drifted one is
// named by rule, device and port, and what cannot be read is refused by name.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fabricDrift, formatDriftReport, type DriftReport } from "../components/roce/drift";
import { parseHostState, runningSwitchView } from "../components/roce/fabric-state";
import { fixture, hostOutput, PLAN } from "./fixtures/roce/running-host";

const GPU01 = PLAN.hosts.find((h) => h.name === "gpu01")!;

const hostDrift = (output: string): DriftReport => fabricDrift(PLAN, [], [{ host: "gpu01", output }]);
const show = (r: DriftReport) => formatDriftReport(r);
const on = (r: DriftReport, device: string) => r.findings.filter((f) => f.device.split(", ").includes(device));

describe("mlnx_qos captures, round 4", () => {
    it("a hand-edited DSCP map (DSCP 30 moved to priority 6, so priority 6 wraps to a second row), CRLF as published: read whole, as planned", () => {
        const text = fixture("mlnx_qos-magnate3-dscp-remap.txt");
        assert.ok(text.includes("\r\n"), "the fixture keeps the published CRLF line ends");
        const rail = parseHostState(hostOutput(GPU01, { mlnxQos: text })).rails[0];
        assert.deepEqual([rail.dcbxMode, rail.trust, rail.pfcEnabled, rail.cableLenM, rail.errors], ["OS controlled", "dscp", [3], 7, []]);
        assert.deepEqual([rail.dscp2prio?.[26], rail.dscp2prio?.[30], rail.dscp2prio?.[48], rail.dscp2prio?.[49], Object.keys(rail.dscp2prio ?? {}).length], [3, 6, 6, 6, 64]);
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: text }));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
    });
    it("PCP trust with PFC on 3 (the same host after --trust pcp): C5 on every rail, trust pcp where dscp is planned", () => {
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: fixture("mlnx_qos-magnate3-pcp.txt") }));
        assert.deepEqual(r.unreadable, [], show(r));
        for (const ifc of GPU01.railNetdevs!) {
            const f = on(r, `gpu01:${ifc}`).find((x) => x.rule === "C5");
            assert.deepEqual([f?.expected?.roce_host_trust, f?.found?.roce_host_trust], ["dscp", "pcp"], show(r));
        }
    });
    it("a host as the driver leaves it (PCP trust, no PFC): trust and PFC drift by rail, never read as planned", () => {
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: fixture("mlnx_qos-magnate3-centos12-pcp.txt") }));
        assert.deepEqual(r.unreadable, [], show(r));
        const rules = on(r, "gpu01:ens1f0np0").map((f) => f.rule);
        assert.ok(rules.includes("C5") && rules.includes("C12"), show(r));
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
});

describe("ethtool -a captures, round 4", () => {
    it("ice with the netlink statistics block and single-spaced negotiated rows, pause off: as planned", () => {
        const st = parseHostState(hostOutput(GPU01, { ethtool: fixture("ethtool-a-ice-stats.txt") }));
        assert.deepEqual([st.rails[0].globalPause, st.rails[0].pauseAutoneg], [{ rx: false, tx: false }, true]);
        const r = hostDrift(hostOutput(GPU01, { ethtool: fixture("ethtool-a-ice-stats.txt") }));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
        // constructed: the same capture with CRLF line ends reads the same
        const crlf = parseHostState(hostOutput(GPU01, { ethtool: fixture("ethtool-a-ice-stats.txt").replace(/\n/g, "\r\n") }));
        assert.deepEqual([crlf.rails[0].globalPause, crlf.rails[0].pauseAutoneg, crlf.rails[0].errors], [{ rx: false, tx: false }, true, []]);
    });
    it("ice with link pause on both ways (the driver's default): C5 by rail", () => {
        const r = hostDrift(hostOutput(GPU01, { ethtool: fixture("ethtool-a-ice-lp-advertising.txt") }));
        for (const ifc of GPU01.railNetdevs!) {
            const f = on(r, `gpu01:${ifc}`).find((x) => x.rule === "C5");
            assert.deepEqual([f?.expected, f?.found], [{ roce_host_global_pause: false }, { roce_host_global_pause: true }], show(r));
        }
    });
});

describe("SONiC CONFIG_DB captures, round 4", () => {
    const sw = PLAN.switches.find((s) => s.name === "leaf-sonic")!;
    const legacy = fixture("sonic-dbmigrator-qos_tables_db_field_value_reference_format_3_0_1.json");
    const current = fixture("sonic-dbmigrator-qos_tables_db_field_value_reference_format_3_0_3.json");
    it("a DellEMC Z9264f CONFIG_DB in the [TABLE|name] reference form reads as its migrated twin, port by port", () => {
        const a = runningSwitchView(sw, legacy), b = runningSwitchView(sw, current);
        assert.deepEqual(a.ports, b.ports);
        const p = a.ports.find((x) => x.port === "Ethernet0")!;
        // pg_lossless_100000_40m_profile on 3-4, AZURE_LOSSLESS WRED (ECN) on queues 3 and 4, DSCP 26 → TC 1
        assert.deepEqual([p.pfcPriorities, p.losslessPgs, [...p.ecnQueues].sort(), p.dscpToTc[26], p.dscpToTc[3], p.mtu], [[3, 4], [3, 4], [3, 4], 1, 3, 9100]);
    });
    it("against the plan both forms are the same drift, named by switch and port (two lossless priorities C3, DSCP 26 not in the RoCE queue C1)", () => {
        const ra = fabricDrift(PLAN, [{ switch: sw.name, config: legacy }], []);
        const rb = fabricDrift(PLAN, [{ switch: sw.name, config: current }], []);
        assert.deepEqual(ra.findings, rb.findings);
        assert.deepEqual(ra.unreadable, [], show(ra));
        const rules = on(ra, "leaf-sonic:Ethernet0").map((f) => f.rule);
        assert.ok(rules.includes("C3") && rules.includes("C1"), show(ra));
    });
    it("a Mellanox SN2700 with only the dynamic buffer tables (no PORT_QOS_MAP): every planned port named as without QoS, not read as matching", () => {
        const r = fabricDrift(PLAN, [{ switch: sw.name, config: fixture("sonic-dbmigrator-reclaiming-buffer-dynamic-double-pools-input.json") }], []);
        assert.deepEqual(r.unreadable, [], show(r));
        // host ports under C5, uplinks under C14, each named `switch:port` and said to be missing from the running configuration
        for (const port of sw.ports.map((p) => p.name)) {
            const f = on(r, `leaf-sonic:${port}`).find((x) => x.rule === "C5" || x.rule === "C14");
            assert.deepEqual([f?.expected, f?.found], [{ roceQos: "configured" }, { roceQos: "absent" }], `${port}\n${show(r)}`);
            assert.match(f!.message, /without RoCE QoS in the running configuration/);
        }
        assert.ok(r.findings.some((f) => f.rule === "C12" && f.device === "leaf-sonic"), show(r));
    });
});
