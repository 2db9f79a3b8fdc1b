// `rdmakit fabric check`'s readers fed outputs published from other people's hosts and switches
// (test/fixtures/roce/running/, each with its source in that folder's README). Pure: the host's answer is assembled
// in the layout hostReadScript prints (@@ sections) around the captured tool output, and fabricDrift runs on it, so
// each case shows what a user sees: the planned state passes, a drifted one names the rule and the device, an
// unreadable one is refused by name.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { fabricDrift, formatDriftReport, type DriftReport, type SwitchReading } from "../components/roce/drift";
import { parseHostState, parseLldp, runningSwitchView, sonicConfigDb } from "../components/roce/fabric-state";
import { readSonic } from "../components/roce/consistency";
import { renderSwitchConfigs } from "../components/roce/render";
import { fixture, hostOutput, PLAN } from "./fixtures/roce/running-host";

const GPU01 = PLAN.hosts.find((h) => h.name === "gpu01")!;

const hostDrift = (output: string): DriftReport => fabricDrift(PLAN, [], [{ host: "gpu01", output }]);
const show = (r: DriftReport) => formatDriftReport(r);
const rulesOn = (r: DriftReport, device: string) => r.findings.filter((f) => f.device.split(", ").includes(device)).map((f) => f.rule);

describe("host captures: mlnx_qos", () => {
    it("the kit's own layout passes (the baseline every case below changes one section of)", () => {
        const r = hostDrift(hostOutput(GPU01));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
    });
    it("MLNX_OFED 4.x on a host set for lossless RoCE (att/netarbiter): trust dscp, PFC on 3, no buffer row, tsa vendor: as planned", () => {
        const st = parseHostState(hostOutput(GPU01, { mlnxQos: fixture("mlnx_qos-netarbiter-ofed4.txt") }));
        const rail = st.rails[0];
        assert.deepEqual([rail.dcbxMode, rail.trust, rail.pfcEnabled, rail.cableLenM, rail.dscp2prio?.[26], rail.dscp2prio?.[48], rail.errors], ["OS controlled", "dscp", [3], 7, 3, 6, []]);
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: fixture("mlnx_qos-netarbiter-ofed4.txt") }));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
    });
    it("the published DOC-2792 state (PFC on 0,2,6,7) is drift named by rule and rail (C2, C3)", () => {
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: fixture("mlnx_qos-doc2792.txt") }));
        for (const ifc of GPU01.railNetdevs!) assert.ok(["C2", "C3"].every((x) => rulesOn(r, `gpu01:${ifc}`).includes(x as never)), show(r));
    });
    it("the 2017 'Priority trust mode:' line (mlnx-tools@5c00758 pretty_print) is read; no trust line at all is refused by rail", () => {
        // constructed: the planned layout with the trust line as that version printed it
        const old = fixture("mlnx_qos-planned.txt").replace("Priority trust state: dscp", "Priority trust mode: dscp");
        assert.deepEqual(hostDrift(hostOutput(GPU01, { mlnxQos: old })).findings, []);
        const none = fixture("mlnx_qos-planned.txt").replace("Priority trust state: dscp\n", "");
        const r = hostDrift(hostOutput(GPU01, { mlnxQos: none }));
        assert.match(r.unreadable.map((u) => `${u.device} ${u.why}`).join("\n"), /gpu01:ens1f0np0 mlnx_qos: expected a 'Priority trust state:' line .* found no trust line/, show(r));
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
});

describe("host captures: ethtool -a", () => {
    it("pause autonegotiated off on both ends (openwrt/openwrt#14988): as planned", () => {
        const r = hostDrift(hostOutput(GPU01, { ethtool: fixture("ethtool-a-openwrt14988.txt") }));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
    });
    it("pause on, with the netlink statistics block (netdev, hibmcge patch): 802.3x pause where PFC runs is C5", () => {
        const r = hostDrift(hostOutput(GPU01, { ethtool: fixture("ethtool-a-hibmcge-stats.txt") }));
        const f = r.findings.find((x) => x.rule === "C5" && x.device.includes("gpu01:ens1f0np0"));
        assert.deepEqual([f?.expected, f?.found], [{ roce_host_global_pause: false }, { roce_host_global_pause: true }], show(r));
    });
    it("RX/TX off but negotiated on (netdev <aSa8Gkl1AP1U2C9j@pengutronix.de>, indented): configured off, as planned", () => {
        // the negotiated rows are ethtool's userspace guess from the advertisements (netlink/pause.c), and the kernel
        // applies no link-wide pause where PFC runs (Documentation/networking/flow_control.rst): RX/TX decide
        const st = parseHostState(hostOutput(GPU01, { ethtool: fixture("ethtool-a-netdev-negotiated.txt") }));
        assert.deepEqual([st.rails[0].globalPause, st.rails[0].pauseAutoneg], [{ rx: false, tx: false }, true]);
        const r = hostDrift(hostOutput(GPU01, { ethtool: fixture("ethtool-a-netdev-negotiated.txt") }));
        assert.deepEqual([r.findings, r.unreadable], [[], []], show(r));
    });
    it("RX/TX on but negotiated off (a constructed variant of the openwrt#14988 capture, RX/TX set on): configured on, C5", () => {
        const text = fixture("ethtool-a-openwrt14988.txt").replace(/^RX:( +)off$/m, "RX:$1on").replace(/^TX:( +)off$/m, "TX:$1on");
        assert.match(text, /^RX: +on$/m);
        assert.ok(rulesOn(hostDrift(hostOutput(GPU01, { ethtool: text })), "gpu01:ens1f0np0").includes("C5"));
    });
    it("a NIC without pause support is refused by rail, naming what was expected", () => {
        const r = hostDrift(hostOutput(GPU01, { ethtool: "Cannot get device pause settings: Operation not supported\n" }));
        assert.match(r.unreadable.map((u) => `${u.device} ${u.why}`).join("\n"), /gpu01:ens1f0np0 ethtool -a: expected 'RX:' and 'TX:' pause rows .*Cannot get device pause settings/, show(r));
    });
});

describe("LLDP captures", () => {
    const json0 = parseLldp("host", fixture("lldpctl-json0-neighbors.json"));
    it("lldpctl's plain -f json (lldpd's test expectation) reads as the same neighbour as json0", () => {
        assert.deepEqual(parseLldp("host", fixture("lldpctl-json-neighbors.json")), json0);
        // several interfaces: a list of one-key objects; a neighbour without a system name: the chassis fields bare
        const two = { lldp: { interface: [{ eth0: { chassis: { id: { type: "mac", value: "x" }, "mgmt-ip": ["192.0.2.1", "fe80::1"] }, port: { id: { type: "ifname", value: "swp1" } } } }, { eth1: { chassis: { "leaf-nvue": { id: { type: "mac", value: "y" } } }, port: { id: { type: "ifname", value: "swp2" }, descr: "swp2" } } }] } };
        assert.deepEqual(parseLldp("host", JSON.stringify(two)), [
            { local: "eth0", sysName: undefined, mgmtIps: ["192.0.2.1", "fe80::1"], portId: "swp1", portDescr: undefined },
            { local: "eth1", sysName: "leaf-nvue", mgmtIps: [], portId: "swp2", portDescr: "swp2" },
        ]);
        assert.throws(() => parseLldp("host", "{\"error\": \"lldpd not running\"}"), /no lldp object in the lldpctl output/);
    });
    it("a host whose lldpctl prints plain json is cabling-checked: its neighbour is not the planned leaf port (C18)", () => {
        const r = hostDrift(hostOutput(GPU01, { lldp: fixture("lldpctl-json-neighbors.json") }));
        const f = r.findings.find((x) => x.rule === "C18" && x.device === "gpu01:ens1f0np0");
        assert.deepEqual([f?.expected, f?.found], [{ neighbour: "leaf-nvue:swp1" }, { neighbour: "(none)" }], show(r));
    });
    it("EOS show lldp neighbors | json from a vEOS (napalm's mocked data): read, and the planned uplink hears nobody (C18)", () => {
        assert.deepEqual(parseLldp("eos", fixture("eos-lldp-neighbors-napalm.json")).map((n) => [n.local, n.sysName, n.portId]), [["Ethernet1", "precise64", "0800.274f.332d"], ["Ethernet2", "precise64", "0800.27ca.c5be"]]);
        const eos = PLAN.switches.find((s) => s.os === "eos")!;
        const config = renderedRunning(eos.name);
        const r = fabricDrift(PLAN, [{ switch: eos.name, config, lldp: fixture("eos-lldp-neighbors-napalm.json") }], []);
        assert.deepEqual(r.findings.find((x) => x.rule === "C18" && x.device === "leaf-eos:Ethernet32/1")?.found, { neighbour: "(none)" }, show(r));
    });
});

/** The kit's rendered text for one switch, as the running configuration a push leaves (EOS: the CLI lines). */
function renderedRunning(name: string): string {
    return renderSwitchConfigs(PLAN).find((x) => x.switch === name)!.text.split("\n").filter((l) => !l.startsWith("no ")).join("\n");
}

describe("SONiC CONFIG_DB captures", () => {
    const sw = PLAN.switches.find((s) => s.name === "leaf-sonic")!;
    it("sonic-utilities' mock CONFIG_DB (redis-key form) is read by table, not as a switch with no QoS", () => {
        const db = sonicConfigDb(JSON.parse(fixture("sonic-mock-config_db.json")));
        assert.equal(db.PORT_QOS_MAP.Ethernet0.pfc_enable, "3,4");
        const v = runningSwitchView(sw, fixture("sonic-mock-config_db.json"));
        const p = v.ports.find((x) => x.port === "Ethernet0")!;
        // its QUEUE rows are per index with [SCHEDULER|…] references; queues 3 and 4 carry AZURE_LOSSLESS (ECN)
        assert.deepEqual([p.pfcPriorities, p.ecnQueues.sort(), p.watchdogAction, p.losslessPgs], [[3, 4], [3, 4], "drop", [3, 4]]);
    });
    it("against the plan it is drift on the planned ports: PFC on two priorities (C3), no DSCP map (C5), named by port", () => {
        const r = fabricDrift(PLAN, [{ switch: sw.name, config: fixture("sonic-mock-config_db.json") }], []);
        assert.deepEqual(r.unreadable, [], show(r));
        assert.ok(rulesOn(r, "leaf-sonic:Ethernet0").includes("C3"), show(r));
        assert.ok(rulesOn(r, "leaf-sonic:Ethernet0").includes("C5"), show(r));
    });
    it("a QUEUE range row (`Ethernet0|0-2`) covers every queue of the range", () => {
        const db = { PORT: { Ethernet0: { mtu: "9100" } }, PORT_QOS_MAP: { Ethernet0: { pfc_enable: "3" } }, SCHEDULER: { s: { type: "STRICT" } }, QUEUE: { "Ethernet0|0-2": { scheduler: "s" } } };
        assert.deepEqual(runningSwitchView(sw, JSON.stringify(db)).ports.find((x) => x.port === "Ethernet0")!.strictQueues, [0, 1, 2]);
    });
    it("keys naming several ports (`QUEUE|Ethernet0,Ethernet4|3`, `PORT_QOS_MAP|Ethernet0,Ethernet4`) apply to each port, as orchagent reads them", () => {
        // constructed from the mock CONFIG_DB: every QUEUE row of Ethernet0 whose twin on Ethernet4 holds the same fields
        // becomes one `Ethernet0,Ethernet4|<i>` row (the port list orchagent's qosorch.cpp tokenizes at ','), and the two
        // PORT_QOS_MAP rows one `Ethernet0,Ethernet4` row with Ethernet4's fields
        const flat = JSON.parse(fixture("sonic-mock-config_db.json")) as Record<string, Record<string, string>>;
        const grouped: Record<string, Record<string, string>> = { ...flat };
        let merged = 0;
        for (const k of Object.keys(flat).filter((x) => x.startsWith("QUEUE|Ethernet0|"))) {
            const twin = k.replace("|Ethernet0|", "|Ethernet4|");
            if (JSON.stringify(flat[k]) !== JSON.stringify(flat[twin])) continue;
            delete grouped[k];
            delete grouped[twin];
            grouped[k.replace("|Ethernet0|", "|Ethernet0,Ethernet4|")] = flat[k];
            merged++;
        }
        delete grouped["PORT_QOS_MAP|Ethernet0"];
        delete grouped["PORT_QOS_MAP|Ethernet4"];
        grouped["PORT_QOS_MAP|Ethernet0,Ethernet4"] = flat["PORT_QOS_MAP|Ethernet4"];
        assert.ok(merged >= 3, `merged ${merged}`);
        const view = (db: unknown, port: string) => {
            const p = readSonic("s", sonicConfigDb(db)).ports.find((x) => x.port === port);
            return p && [p.pfcPriorities, [...p.ecnQueues].sort(), [...p.strictQueues].sort()];
        };
        for (const port of ["Ethernet0", "Ethernet4"]) assert.deepEqual(view(grouped, port), view(flat, port), port);
        assert.deepEqual(view(grouped, "Ethernet0")![1], [3, 4]);
    });
    it("what is not CONFIG_DB is refused by switch, never read as a switch without QoS", () => {
        const refuse = (config: string) => fabricDrift(PLAN, [{ switch: sw.name, config } as SwitchReading], []).unreadable.find((u) => u.device === sw.name)?.why ?? "";
        assert.match(refuse("[]"), /could not be parsed as sonic output: expected a JSON object of CONFIG_DB tables/);
        assert.match(refuse(JSON.stringify({ error: "Redis connection refused" })), /no PORT or PORT_QOS_MAP table among error/);
        assert.match(refuse("Error: sonic-cfggen: command not found\n"), /could not be parsed as sonic output/);
    });
    it("db_migrator's PORT_QOS_MAP|global (written on Broadcom ASICs) is the DSCP map of the ports that bind none", () => {
        // the mock CONFIG_DB's ports bind no DSCP map; the db_migrator vectors hold a DSCP_TO_TC_MAP|AZURE, before the
        // migration (no global row) and after it (`PORT_QOS_MAP|global` naming AZURE: migrate_port_qos_map_global)
        const mock = JSON.parse(fixture("sonic-mock-config_db.json")) as Record<string, unknown>;
        const port = (vector: string) => {
            const db = { ...mock, ...(JSON.parse(fixture(vector)) as Record<string, unknown>) };
            const p = runningSwitchView(sw, JSON.stringify(db)).ports.find((x) => x.port === "Ethernet0")!;
            return [p.dscpToTc, p.trustDscp, p.pfcPriorities];
        };
        assert.deepEqual(port("sonic-dbmigrator-qos_map_table_global_input.json"), [{}, false, [3, 4]]);
        assert.deepEqual(port("sonic-dbmigrator-qos_map_table_global_expected.json"), [{ 0: 0, 1: 1 }, true, [3, 4]]);
        // the global row is no port of its own
        const db = { ...mock, ...(JSON.parse(fixture("sonic-dbmigrator-qos_map_table_global_expected.json")) as Record<string, unknown>) };
        assert.ok(!readSonic("s", sonicConfigDb(db)).ports.some((x) => x.port === "global"));
    });
});

describe("NVUE configuration shapes", () => {
    const sw = PLAN.switches.find((s) => s.name === "leaf-nvue")!;
    it("an op list without a set, or an object with none of the tree's roots, is refused rather than read as empty", () => {
        const why = (config: string) => fabricDrift(PLAN, [{ switch: sw.name, config }], []).unreadable.find((u) => u.device === sw.name)?.why ?? "";
        assert.match(why(JSON.stringify([{ header: { "rev-id": "1.0" } }])), /the NVUE op list has no 'set' object/);
        assert.match(why(JSON.stringify({ title: "Forbidden", status: 403 })), /no interface, qos or system object in the NVUE configuration/);
    });
});
