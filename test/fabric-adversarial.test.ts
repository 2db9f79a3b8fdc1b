/**
 * `rdmakit fabric check` against hostile answers: what a switch or host prints is untrusted, so each reader must stay
 * linear in the answer's size, print a bounded report, and read one device's text as that device's only. Every input
 * here is generated (constructed, no fixture); each case names what it took before the fix it guards. Bounds are wide
 * for a shared 2-core machine: each case takes well under a second now. Wall time of this file: ~5 s.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { checkViews, readSwitchView } from "../components/roce/consistency";
import { fabricDrift, formatDriftReport, MAX_REPORT_LINE, type HostReading, type SwitchReading } from "../components/roce/drift";
import { MAX_RAIL_ERRORS } from "../components/roce/fabric-state";
import { planQos } from "../components/roce/qos";
import { parseSonicOper } from "../components/roce/sonic-oper";
import { renderSwitchConfigs } from "../components/roce/render";
import { spec } from "./fixtures/roce/helpers";

const BOUND_MS = 5000;
const PLAN = planQos(spec());
const SW = (os: string) => PLAN.switches.find((s) => s.os === os)!;
const HOST = PLAN.hosts[0];

function check(switches: SwitchReading[], hosts: HostReading[] = []) {
    const t0 = performance.now();
    const report = fabricDrift(PLAN, switches, hosts);
    const text = formatDriftReport(report);
    return { report, text, ms: performance.now() - t0 };
}

/** The host read script's answer with one rail and one section body (fabric-state.ts hostReadScript). */
const hostAnswer = (section: string, body: string) =>
    `@@rdmakit-host-state 1\n@@rail ${HOST.railNics[0]} ${HOST.railNetdevs![0]}\n@@${section}\n${body}\n@@rail ${HOST.railNics[1]} ${HOST.railNetdevs![1]}\n@@end\n`;

test("a SONiC CONFIG_DB of 20k ports and 20k CABLE_LENGTH rows is read in linear time", () => {
    // before: each port searched every CABLE_LENGTH row (10k of each: 15 s; 20k: about a minute)
    const db: Record<string, Record<string, Record<string, string>>> = { PORT: {}, PORT_QOS_MAP: {}, CABLE_LENGTH: {} };
    for (let i = 0; i < 20_000; i++) {
        db.PORT[`Ethernet${i}`] = { mtu: "9100" };
        db.PORT_QOS_MAP[`Ethernet${i}`] = { pfc_enable: "3,4" };
        db.CABLE_LENGTH[`T${i}`] = { [`Ethernet${i}`]: "5m" };
    }
    const r = check([{ switch: SW("sonic").name, config: JSON.stringify(db) }]);
    assert.ok(r.ms < BOUND_MS, `${r.ms} ms`);
    assert.deepEqual(r.report.read.switches, [SW("sonic").name]);
});

test("a SONiC key `__proto__|x` stays that switch's row: nothing lands on Object.prototype", () => {
    // before: the flat form was nested into a plain object, so `__proto__|polluted` set Object.prototype.polluted, and
    // `__proto__|pfc_enable` would have given every PORT_QOS_MAP row of every switch read after it a PFC list
    const config = JSON.stringify({ "__proto__|polluted": { x: "1" }, "__proto__|pfc_enable": { y: "2" }, "PORT|Ethernet0": { mtu: "9100" }, "PORT_QOS_MAP|Ethernet0": { pfc_enable: "3" } });
    const r = check([{ switch: SW("sonic").name, config }]);
    assert.equal(({} as Record<string, unknown>).polluted, undefined);
    assert.equal(({} as Record<string, unknown>).pfc_enable, undefined);
    assert.deepEqual(r.report.read.switches, [SW("sonic").name]);
});

test("a CONFIG_DB key of 5 MB is quoted in 40 characters, and no report line passes MAX_REPORT_LINE", () => {
    // before: the refusal listed the whole key: a 5,000,269-character report
    const r = check([{ switch: SW("sonic").name, config: JSON.stringify({ ["K".repeat(5_000_000)]: 1 }) }]);
    assert.match(r.text, new RegExp(`^UNREADABLE ${SW("sonic").name}: the running configuration could not be parsed as sonic output: no PORT or PORT_QOS_MAP table among K{40}\\.\\.\\.: not CONFIG_DB`, "m"));
    assert.ok(r.text.length < 2000, `${r.text.length} characters`);
    const eos = check([{ switch: SW("eos").name, error: `show running-config all: exit 1: ${"e".repeat(100_000)}` }]);
    assert.ok(eos.text.split("\n").every((l) => l.length <= MAX_REPORT_LINE + 40), "a line past the bound");
    assert.match(eos.text, /e\.\.\. \(\d+ more characters\)$/m);
});

test("an NVUE op list of 300k ops is read, not refused with a stack overflow", () => {
    // before: the ops were spread into one Object.assign call: "Maximum call stack size exceeded", read as unreadable
    const ops = [{ set: { qos: { roce: { mode: "lossless" } } } }, ...Array.from({ length: 300_000 }, () => ({ set: { system: {} } }))];
    const r = check([{ switch: SW("nvue").name, config: JSON.stringify(ops) }]);
    assert.ok(r.ms < BOUND_MS, `${r.ms} ms`);
    assert.doesNotMatch(r.text, /call stack/);
    assert.deepEqual(r.report.read.switches, [SW("nvue").name]);
});

test("an EOS value range past DSCP's 0-63 is refused by name, never built", () => {
    // before: `qos map dscp 0-4000000000` built the whole range (an array past V8's limit threw "Invalid array
    // length"; 0-100000000 took seconds and gigabytes)
    const r = check([{ switch: SW("eos").name, config: "qos map dscp 0-100000000 to traffic-class 1\n" }]);
    assert.ok(r.ms < BOUND_MS, `${r.ms} ms`);
    assert.match(r.text, /^UNREADABLE leaf-eos: the running configuration could not be parsed as eos output: value 0-100000000 is out of 0-63 in EOS line 'qos map dscp 0-100000000 to traffic-class 1'$/m);
});

test("host sections of 200k blank lines or a 200k-digit run are read in linear time", () => {
    // before: /^\s*enabled…$/m and /^\s*RX:…$/m let \s* run across lines (80k blank lines: 5 s and 10 s), and
    // /(\d+)\s*$/ backtracked on a digit run (80k digits: 10 s)
    for (const [section, body] of [["mlnx_qos", "\n".repeat(200_000)], ["ethtool-a", "\n".repeat(200_000)], ["traffic_class", "1".repeat(200_000) + "x"]] as const) {
        const r = check([], [{ host: HOST.name, output: hostAnswer(section, body) }]);
        assert.ok(r.ms < BOUND_MS, `${section}: ${r.ms} ms`);
        assert.ok(r.text.length < 4000, `${section}: ${r.text.length} characters`);
    }
    const bad = check([], [{ host: HOST.name, output: hostAnswer("mlnx_qos", "\n".repeat(1000)) }]);
    assert.match(bad.text, new RegExp(`^UNREADABLE ${HOST.name}:${HOST.railNetdevs![0]}: mlnx_qos: expected a 'Priority trust state:' line`, "m"));
});

test("a host's own @@error and @@rail lines are bounded: errors per rail, unplanned rails once, a missing rail unreadable", () => {
    // before: 80k @@error lines made 80k report lines (2 MB), and 8k invented rails 1 MB of report and 5 s
    const errors = `@@rdmakit-host-state 1\n@@rail ${HOST.railNics[0]} x\n${"@@error ecn forged\n".repeat(100_000)}@@rail ${HOST.railNics[1]} y\n@@end\n`;
    const e = check([], [{ host: HOST.name, output: errors }]);
    assert.equal(e.text.match(/: ecn: forged$/gm)?.length, MAX_RAIL_ERRORS);
    assert.match(e.text, new RegExp(`^UNREADABLE ${HOST.name}:x: \\(and ${100_000 - MAX_RAIL_ERRORS} more errors\\)$`, "m"));
    const invented = `@@rdmakit-host-state 1\n${Array.from({ length: 10_000 }, (_, i) => `@@rail mlx5_${i + 100} e${i}\n@@mtu\n${1000 + i}`).join("\n")}\n@@rail ${HOST.railNics[0]} ${HOST.railNetdevs![0]}\n@@end\n`;
    const r = check([], [{ host: HOST.name, output: invented }]);
    assert.ok(r.ms < BOUND_MS, `${r.ms} ms`);
    assert.match(r.text, new RegExp(`^UNREADABLE ${HOST.name}: sent 10000 rail section\\(s\\) the plan does not give it or that repeat one \\(first: 'mlx5_100'\\): not read$`, "m"));
    assert.match(r.text, new RegExp(`^UNREADABLE ${HOST.name}:${HOST.railNics[1]}: the host's answer has no section for this rail NIC$`, "m"));
    assert.ok(r.text.length < 4000, `${r.text.length} characters`);
    assert.doesNotMatch(r.text, /e9999/);
});

test("16k rails that each read differently are grouped in linear time", () => {
    // before: each rail searched the groups, stringifying each (16k distinct rails: 22 s)
    const planned = renderSwitchConfigs(PLAN).map(readSwitchView);
    const rails = Array.from({ length: 16_000 }, (_, i) => ({ ...HOST, name: `${HOST.name}:r${i}`, vars: { ...HOST.vars, roce_host_mtu: 1000 + i } }));
    const t0 = performance.now();
    const v = checkViews({ ...PLAN, hosts: rails }, planned);
    assert.ok(performance.now() - t0 < BOUND_MS, `${performance.now() - t0} ms`);
    assert.ok(v.some((x) => x.rule === "C9" && x.devices.includes(`${HOST.name}:r0`)));
});

test("a SONiC operational answer with a section named after an inherited property is read, not a TypeError", () => {
    // before: `section in body` found Object.prototype's names, and body["constructor"].push threw
    for (const name of ["constructor", "__proto__", "toString"]) {
        const o = parseSonicOper(`@@rdmakit-sonic-oper\n@@${name}\nx\n@@pfc\nInterface    Lossless priorities\n-----------  ---------------------\nEthernet0    3,4\n@@end\n`);
        assert.deepEqual(o.pfc, new Map([["Ethernet0", [3, 4]]]), name);
    }
});
