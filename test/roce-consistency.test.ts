import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { checkConsistency, checkViews, formatViolation, readSwitchView, RULES, type RuleId, type Violation } from "../components/roce/consistency";
import { planQos, type QosPlan } from "../components/roce/qos";
import { renderSwitchConfigs, type RenderedSwitchConfig } from "../components/roce/render";
import { fabricSpec, NON_DEFAULT_LOSSY, spec } from "./fixtures/roce/helpers";
import { parseClusterSpec } from "../components/spec";
import { scaledStack } from "../bench/scale";

type Db = Record<string, Record<string, Record<string, string>>>;
type Obj = Record<string, any>;  

function setup(qos: Record<string, unknown> = {}) {
    const plan = planQos(spec(qos));
    return { plan, rendered: renderSwitchConfigs(plan) };
}
function editSonic(r: RenderedSwitchConfig[], f: (db: Db) => void): RenderedSwitchConfig[] {
    return r.map((c) => { if (c.os !== "sonic") return c; const db = JSON.parse(c.text) as Db; f(db); return { ...c, text: JSON.stringify(db) }; });
}
function editNvue(r: RenderedSwitchConfig[], f: (set: Obj) => void): RenderedSwitchConfig[] {
    return r.map((c) => { if (c.os !== "nvue") return c; const doc = parseYaml(c.text) as Obj[]; f(doc[0].set); return { ...c, text: stringifyYaml(doc) }; });
}
function editEos(r: RenderedSwitchConfig[], f: (lines: string[]) => string[]): RenderedSwitchConfig[] {
    return r.map((c) => (c.os !== "eos" ? c : { ...c, text: f(c.text.split("\n")).join("\n") }));
}
function editHost(plan: QosPlan, f: (h: QosPlan["hosts"][number]) => void): QosPlan {
    const p = structuredClone(plan);
    f(p.hosts[0]);
    return p;
}
function only(vs: Violation[], rule: RuleId): Violation[] {
    const hit = vs.filter((v) => v.rule === rule);
    assert.ok(hit.length > 0, `expected a ${rule} violation, got: ${vs.map(formatViolation).join(" | ") || "none"}`);
    return hit;
}

describe("checkConsistency: passing plans", () => {
    for (const [label, qos] of [["default lossless", {}], ["DSCP 24 / priority 4 lossy", NON_DEFAULT_LOSSY], ["DSCP 24 / priority 4 lossless", { roceDscp: 24, rocePriority: 4 }], ["CNP on DSCP 46 / priority 5", { cnpDscp: 46, cnpPriority: 5 }]] as const) {
        it(`${label}: host, NCCL and all three switch configs agree (no violation of C1-C13)`, () => {
            const { plan, rendered } = setup(qos);
            assert.deepEqual(checkConsistency(plan, rendered).map(formatViolation), []);
        });
    }
    it("documents all seventeen rules", () => {
        assert.deepEqual(Object.keys(RULES), ["C1", "C2", "C3", "C4", "C5", "C6", "C7", "C8", "C9", "C10", "C11", "C12", "C13", "C14", "C15", "C16", "C17"]);
    });
    for (const [label, qos] of [["default lossless", {}], ["DSCP 24 / priority 4 lossless", { roceDscp: 24, rocePriority: 4 }], ["lossy", NON_DEFAULT_LOSSY]] as const) {
        it(`two-tier fabric, ${label}: leaves, uplinks and both spines agree (no violation)`, () => {
            const plan = planQos(fabricSpec(qos));
            assert.deepEqual(checkConsistency(plan, renderSwitchConfigs(plan)).map(formatViolation), []);
        });
    }
});

describe("checkConsistency: each rule catches its violation", () => {
    it("C1: SONiC's default trap, DSCP 26 → TC 1, names the hosts, the port and the TC", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(plan, editSonic(rendered, (db) => { db.DSCP_TO_TC_MAP.RDMAKIT_ROCE["26"] = "1"; })), "C1");
        assert.deepEqual(vs[0].devices, ["gpu01", "gpu02", "leaf-sonic:Ethernet0"]);
        assert.equal(vs[0].values.dscp, 26);
        assert.equal(vs[0].values.trafficClass, 1);
        assert.deepEqual(vs[0].values.losslessQueues, [3]);
    });
    it("C1: host rdma_cm ToS and NCCL_IB_TC name different DSCPs", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_tos = 98; }), rendered), "C1");
        assert.deepEqual(vs[0].devices, ["gpu01"]);
        assert.deepEqual(vs[0].values, { roce_host_tos: 98, NCCL_IB_TC: 106 });
    });
    it("C2: SONiC pfc_enable 4 while RoCE rides priority 3 (YANG accepts this; the rule does not)", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(plan, editSonic(rendered, (db) => { db.PORT_QOS_MAP.Ethernet8.pfc_enable = "4"; db.PORT_QOS_MAP.Ethernet8.pfcwd_sw_enable = "4"; })), "C2");
        assert.ok(vs.some((v) => v.devices.includes("leaf-sonic:Ethernet8") && v.values.hostPriority === 3 && (v.values.switchPfc as number[])[0] === 4));
    });
    it("C2: NVUE classifies the RoCE DSCP to another switch priority than the host", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(plan, editNvue(rendered, (set) => { set.qos.mapping["default-global"].dscp["26"]["switch-priority"] = 2; })), "C2");
        assert.ok(vs.some((v) => v.values.switchPriority === 2 && v.values.hostPriority === 3));
    });
    it("C2: priority 3 pauses a queue that is not the RoCE queue (MAP_PFC_PRIORITY_TO_QUEUE)", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(plan, editSonic(rendered, (db) => { db.MAP_PFC_PRIORITY_TO_QUEUE.RDMAKIT_ROCE["3"] = "4"; })), "C2");
        assert.deepEqual(vs[0].values, { priority: 3, pausedQueue: 4, roceQueue: 3 });
    });
    it("C3: two lossless priorities on a switch port, and on a host", () => {
        const { plan, rendered } = setup();
        only(checkConsistency(plan, editSonic(rendered, (db) => { db.PORT_QOS_MAP.Ethernet0.pfc_enable = "3,4"; db.PORT_QOS_MAP.Ethernet0.pfcwd_sw_enable = "3,4"; })), "C3");
        const vs = only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_pfc_vector = "0,0,0,1,1,0,0,0"; }), rendered), "C3");
        assert.deepEqual(vs[0].values.pfc, [3, 4]);
    });
    it("C3: PFC on the CNP priority", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(plan, editEos(rendered, (L) => L.flatMap((l) => (l === "   priority-flow-control priority 3 no-drop" ? [l, "   priority-flow-control priority 6 no-drop"] : [l])))), "C3");
        assert.ok(vs.some((v) => v.values.cnpPriority === 6));
    });
    it("C4: the RoCE PG has no lossless BUFFER_PG, and a cable length that is not the real cable", () => {
        const { plan, rendered } = setup();
        const a = only(checkConsistency(plan, editSonic(rendered, (db) => { delete db.BUFFER_PG["Ethernet0|3"]; })), "C4");
        assert.deepEqual(a[0].devices, ["leaf-sonic:Ethernet0"]);
        const b = only(checkConsistency(plan, editNvue(rendered, (set) => { set.qos.pfc["default-global"]["cable-length"] = 100; })), "C4");
        assert.deepEqual(b[0].values, { configured: 100, actual: 7.5 });
        // a plan that knows no cable (the policy pack's: cableLengthM NaN, no ports) compares none; the PG part stays
        const blind = { ...plan, switches: plan.switches.map((s) => ({ ...s, ports: undefined, cableLengthM: Number.NaN })) } as unknown as QosPlan;
        const c = checkConsistency(blind, editNvue(rendered, (set) => { set.qos.pfc["default-global"]["cable-length"] = 100; }));
        assert.deepEqual(c.filter((v) => v.rule === "C4"), []);
        const d = only(checkConsistency(blind, editSonic(rendered, (db) => { delete db.BUFFER_PG["Ethernet0|3"]; })), "C4");
        assert.deepEqual(d.map((v) => v.devices), [["leaf-sonic:Ethernet0"]]);
    });
    it("C5: EOS port without DSCP trust or with link pause left on; host trusting PCP", () => {
        const { plan, rendered } = setup();
        only(checkConsistency(plan, editEos(rendered, (L) => L.filter((l) => l !== "   qos trust dscp"))), "C5");
        const pause = only(checkConsistency(plan, editEos(rendered, (L) => L.filter((l) => !l.includes("flowcontrol send off")))), "C5");
        assert.ok(pause.every((v) => v.values.linkPause === true));
        const host = only(checkConsistency(editHost(plan, (h) => { (h.vars as { roce_host_trust: string }).roce_host_trust = "pcp"; }), rendered), "C5");
        assert.deepEqual(host[0].devices, ["gpu01"]);
    });
    it("C6: CNPs on DSCP 4 (nic-configuration-operator's mlxconfig value) miss the strict CNP queue", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_cnp_dscp = 4; }), rendered), "C6");
        assert.ok(vs.every((v) => v.devices[0] === "gpu01" && v.values.cnpDscp === 4));
        assert.equal(new Set(vs.map((v) => v.devices[1].split(":")[0])).size, 3, "reported on every switch");
    });
    it("C7: ECN off on the RoCE TC of NVUE; DCQCN off on a host", () => {
        const { plan, rendered } = setup();
        const a = only(checkConsistency(plan, editNvue(rendered, (set) => { set.qos["congestion-control"]["default-global"]["traffic-class"]["3"].ecn = "disable"; })), "C7");
        assert.deepEqual(a[0].values, { queue: 3, ecnQueues: [] });
        only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_ecn = false; }), rendered), "C7");
    });
    it("C8: NCCL_IB_TC 104 (DSCP 26 without ECT) is flagged with the right value", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(editHost(plan, (h) => { h.ncclEnv.NCCL_IB_TC = "104"; h.vars.roce_host_tos = 104; }), rendered), "C8");
        assert.equal(vs[0].values.expected, 106);
    });
    it("C9: a switch port MTU below the host MTU, and a host MTU below 4200", () => {
        const { plan, rendered } = setup();
        const a = only(checkConsistency(plan, editEos(rendered, (L) => L.map((l) => (l === "   mtu 9214" ? "   mtu 1500" : l)))), "C9");
        assert.deepEqual(a[0].values, { switchMtu: 1500, hostMtu: 9000 });
        only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_mtu = 1500; }), rendered), "C9");
    });
    it("C10: NCCL_IB_GID_INDEX differs from the index the role verifies", () => {
        const { plan, rendered } = setup();
        const vs = only(checkConsistency(editHost(plan, (h) => { h.ncclEnv.NCCL_IB_GID_INDEX = "1"; }), rendered), "C10");
        assert.deepEqual(vs[0].values, { NCCL_IB_GID_INDEX: "1", roce_host_gid_index: 3, verify: true });
    });
    it("C11: watchdog missing on a PFC priority, or acting as forward", () => {
        const { plan, rendered } = setup();
        only(checkConsistency(plan, editSonic(rendered, (db) => { db.PORT_QOS_MAP.Ethernet0.pfcwd_sw_enable = ""; })), "C11");
        const b = only(checkConsistency(plan, editSonic(rendered, (db) => { db.PFC_WD.Ethernet8.action = "forward"; })), "C11");
        assert.equal(b[0].values.action, "forward");
        only(checkConsistency(plan, editNvue(rendered, (set) => { delete set.interface.swp1.qos; })), "C11");
        only(checkConsistency(plan, editSonic(rendered, (db) => { db.PFC_WD.GLOBAL.POLL_INTERVAL = "500"; })), "C11");
    });
    it("C12: NVUE in lossy mode under a lossless plan; a host with lossy tuning", () => {
        const { plan, rendered } = setup();
        const a = only(checkConsistency(plan, editNvue(rendered, (set) => { set.qos.roce.mode = "lossy"; })), "C12");
        assert.deepEqual(a[0].values, { switchMode: "lossy", planMode: "lossless" });
        only(checkConsistency(editHost(plan, (h) => { h.vars.roce_host_lossy_tuning = true; }), rendered), "C12");
    });
    it("C12: a lossy plan against a switch still running PFC", () => {
        const { plan, rendered } = setup(NON_DEFAULT_LOSSY);
        const vs = only(checkConsistency(plan, editSonic(rendered, (db) => { db.PORT_QOS_MAP.Ethernet0.pfc_enable = "4"; })), "C12");
        assert.deepEqual(vs[0].devices, ["leaf-sonic"]);
    });
    it("C13: NCCL_IB_HCA with a non-rail NIC or without exact match; NCCL_SOCKET_IFNAME on a rail", () => {
        const { plan, rendered } = setup();
        const a = only(checkConsistency(editHost(plan, (h) => { h.ncclEnv.NCCL_IB_HCA = "=mlx5_0:1,mlx5_1:1,mlx5_bond_0:1"; }), rendered), "C13");
        assert.deepEqual(a[0].values.railNics, ["mlx5_0", "mlx5_1"]);
        only(checkConsistency(editHost(plan, (h) => { h.ncclEnv.NCCL_IB_HCA = "mlx5_0:1,mlx5_1:1"; }), rendered), "C13");
        const c = only(checkConsistency(editHost(plan, (h) => { h.ncclEnv.NCCL_SOCKET_IFNAME = "=ens1f0np0"; }), rendered), "C13");
        assert.equal(c[0].values.bootstrapNic, "eno1");
    });
    it("a host port missing from the rendered config is reported", () => {
        const { plan, rendered } = setup();
        const vs = checkConsistency(plan, editSonic(rendered, (db) => { delete db.PORT_QOS_MAP.Ethernet8; }));
        assert.ok(vs.some((v) => v.rule === "C5" && (v.values.missing as string[]).includes("Ethernet8")), vs.map(formatViolation).join("\n"));
    });
    it("C14: an uplink left out of the rendered config, or lossy on one end, is named with its peer", () => {
        const plan = planQos(fabricSpec());
        const rendered = renderSwitchConfigs(plan);
        const gone = only(checkConsistency(plan, editSonic(rendered.filter((c) => c.switch === "leaf-sonic"), (db) => { delete db.PORT_QOS_MAP.Ethernet248; })), "C14");
        assert.deepEqual(gone[0].values.missing, ["Ethernet248"]);
        const spine = rendered.map((c) => (c.switch !== "spine-sonic" ? c : { ...c, text: c.text.replace(/"pfc_enable": "3"/g, '"pfc_enable": ""').replace(/"pfcwd_sw_enable": "3"/g, '"pfcwd_sw_enable": ""') }));
        const vs = only(checkConsistency(plan, spine), "C14");
        assert.ok(vs.some((v) => v.devices.includes("leaf-nvue:swp64") && v.devices.includes("spine-sonic:Ethernet8")), vs.map(formatViolation).join("\n"));
    });
    it("C15: a SONiC port whose PFC priority maps to no lossless PG never sends pause", () => {
        const { plan, rendered } = setup({ rocePriority: 5, cnpPriority: 6 });
        const a = only(checkConsistency(plan, editSonic(rendered, (db) => { delete db.PORT_QOS_MAP.Ethernet0.pfc_to_pg_map; })), "C15");
        assert.deepEqual(a.map((v) => v.devices[0]), ["leaf-sonic:Ethernet0"]);
        const b = only(checkConsistency(plan, editSonic(rendered, (db) => { db.PFC_PRIORITY_TO_PRIORITY_GROUP_MAP.RDMAKIT_ROCE["5"] = "0"; })), "C15");
        assert.equal(b[0].values.pg, 0);
    });
    it("C16: headroom beyond the SN5600 lossless pool is refused; a model without published figures stays unchecked", () => {
        const s = fabricSpec();
        const plan = planQos(s);
        const sp = plan.switches.find((x) => x.name === "spine-sonic")!;
        // 3 downlinks × 40 m at 400G: 303 104 B each (SN5600 pg_profile_lookup.ini)
        assert.deepEqual([sp.buffer.headroomBytes, sp.buffer.poolBytes], [3 * 303_104, 52_161_690]);
        assert.equal(plan.switches.find((x) => x.name === "spine-nvue")!.buffer.headroomBytes, undefined, "no model: unknown");
        // 200 leaves on 300 m cables reserve 200 × 697 344 B > 52 MB
        const big = structuredClone(s);
        const leaf = big.switches[0];
        leaf.uplinks = [...leaf.uplinks.filter((u) => u.peer === "spine-nvue"),
            ...Array.from({ length: 100 }, (_, i) => ({ port: `Ethernet${1000 + i * 8}`, peer: "spine-sonic", peerPort: `Ethernet${200 + i * 8}`, cableLengthM: 300 }))];
        big.switches[1].uplinks = Array.from({ length: 100 }, (_, i) => ({ port: `swp${100 + i}`, peer: "spine-sonic", peerPort: `Ethernet${2000 + i * 8}`, cableLengthM: 300 }));
        big.switches[2].uplinks = [];
        const bp = planQos(big);
        const vs = only(checkConsistency(bp, renderSwitchConfigs(bp)), "C16");
        assert.deepEqual(vs.map((v) => v.devices), [["spine-sonic"]]);
        assert.equal(vs[0].values.headroomBytes, 200 * 697_344);
    });
    it("C17: an ECN minimum above the pause point of the SN5600 pool never marks before PFC", () => {
        const plan = planQos(fabricSpec({ ecn: { minBytes: 30_000_000, maxBytes: 40_000_000, maxProbabilityPct: 100 } }));
        const vs = only(checkConsistency(plan, renderSwitchConfigs(plan)), "C17");
        assert.ok(vs.every((v) => v.devices[0].startsWith("spine-sonic:")), vs.map(formatViolation).join("\n"));
        assert.equal(vs[0].values.pausePointBytes, Math.floor((52_161_690 - 3 * 303_104) / 2));
    });
    it("formatViolation names the rule and devices", () => {
        assert.equal(formatViolation({ rule: "C8", devices: ["gpu01"], message: "m", values: {} }), "[C8] gpu01: m");
    });
});

describe("checkConsistency: switches that share one text", () => {
    it("a port that breaks a rule is reported under every switch with that text, as each switch alone reports it", () => {
        // bench/scale.ts's rail fabric: 128 hosts on 8 rails are 16 leaves of one text and 8 spines of another, so the
        // leaves' port views are one set of objects (readSwitchView); host port swp1s0 of every leaf loses its QoS (C11)
        const cluster = (scaledStack("roce-h100.yaml", 128) as { config: Record<string, { roce: unknown }> }).config["rdmakit:cluster"];
        const plan = planQos(parseClusterSpec(cluster).roce!);
        const broken = editNvue(renderSwitchConfigs(plan), (set) => { delete ((set.interface as Obj).swp1s0 as Obj).qos; });
        const leaves = broken.filter((c) => c.os === "nvue");
        assert.equal(leaves.length, 16);
        assert.equal(new Set(leaves.map((c) => c.text)).size, 1, "the leaves share one text");
        const all = checkConsistency(plan, broken);
        // each leaf checked alone (with the spines its uplinks reach) finds what the whole fabric finds for it
        const spines = broken.filter((c) => c.os !== "nvue");
        const alone = leaves.flatMap((leaf) => checkConsistency(plan, [leaf, ...spines]).filter((v) => v.devices.some((d) => d.startsWith(`${leaf.switch}:`) || d === leaf.switch)));
        const onLeaves = all.filter((v) => v.devices.some((d) => leaves.some((l) => d.startsWith(`${l.switch}:`) || d === l.switch)));
        assert.ok(onLeaves.length >= 16, onLeaves.map(formatViolation).join("\n"));
        assert.deepEqual(new Set(onLeaves.map(formatViolation)), new Set(alone.map(formatViolation)));
        for (const l of leaves) assert.ok(onLeaves.some((v) => v.devices.includes(`${l.switch}:swp1s0`)), `${l.switch}:swp1s0 is reported`);
    });
    it("a port view clean for one switch is checked again for a switch whose plan differs there (C4 cable, C17 buffer)", () => {
        const cluster = (scaledStack("roce-h100.yaml", 128) as { config: Record<string, { roce: unknown }> }).config["rdmakit:cluster"];
        const plan = structuredClone(planQos(parseClusterSpec(cluster).roce!));
        const rendered = renderSwitchConfigs(plan);
        assert.deepEqual(checkConsistency(plan, rendered), []);
        // the third leaf's plan says swp1s0 is on a 100 m cable: its text (the other leaves' text) says 5 m
        const third = plan.switches.filter((s) => s.os === "nvue")[2];
        third.ports.find((p) => p.name === "swp1s0")!.cableLengthM = 100;
        // and a spine past the first has a pool so small that every ECN minimum is above its pause point
        const spine = plan.switches.filter((s) => s.os === "sonic")[1];
        spine.buffer = { ...spine.buffer, poolBytes: (spine.buffer.headroomBytes ?? 0) + 2 };
        const vs = checkViews(plan, rendered.map(readSwitchView));
        assert.deepEqual(vs.filter((v) => v.rule === "C4").map((v) => v.devices), [[`${third.name}:swp1s0`]]);
        const c17 = vs.filter((v) => v.rule === "C17");
        assert.deepEqual(new Set(c17.map((v) => v.devices[0].split(":")[0])), new Set([spine.name]));
        assert.equal(c17.length, spine.ports.length);
    });
});

describe("checkViews: hosts that each read differently", () => {
    it("is not hosts × ports: 4,096 rails of distinct MTUs on a 512-host fabric, the few bad ones reported on every port", () => {
        // a fabric check's rails are untrusted and may each differ (observedHost), which made as many host groups as
        // rails, each compared with every switch port (before: 4,096 groups × every port, 5 s of CPU here)
        const cluster = (scaledStack("roce-h100.yaml", 512) as { config: Record<string, { roce: unknown }> }).config["rdmakit:cluster"];
        const plan = planQos(parseClusterSpec(cluster).roce!);
        const views = renderSwitchConfigs(plan).map(readSwitchView);
        const base = plan.hosts[0];
        const bad = new Set([17, 2000, 4000]);
        // every rail's MTU differs; all but three fit the switch ports (4200-4711.875 B), those three do not (9300 B)
        const rails = Array.from({ length: 4096 }, (_, i) => ({
            ...base, name: `${base.name}:r${i}`, vars: { ...base.vars, roce_host_mtu: bad.has(i) ? 9300 + i : 4200 + i / 8 },
        }));
        const t0 = process.cpuUsage();
        const v = checkViews({ ...plan, hosts: rails }, views);
        const ms = (process.cpuUsage(t0).user + process.cpuUsage(t0).system) / 1000;
        assert.ok(ms < 3000, `${ms} ms of CPU`);
        // each bad rail on each port whose MTU is below its own (and on a SONiC switch whose lossless pattern's is), in
        // the order of the switches, their ports and the rails; nothing else
        const mtu = (i: number) => 9300 + i;
        const expected: string[] = [];
        let ports = 0;
        for (const s of views) {
            for (const p of s.ports) {
                ports++;
                for (const i of [...bad].sort((a, b) => a - b)) {
                    if (p.mtu !== undefined && p.mtu < mtu(i)) expected.push(`[C9] ${base.name}:r${i}, ${s.name}:${p.port}`);
                    if (s.os === "sonic" && (s.losslessPatternMtu ?? 1024) < mtu(i)) expected.push(`[C9] ${base.name}:r${i}, ${s.name}`);
                }
            }
        }
        assert.ok(ports > 8000, `${ports} ports`);
        assert.ok(expected.length >= 3 * 8000, `${expected.length}`);
        assert.deepEqual(v.map((x) => formatViolation(x).replace(/: .*/, "")), expected);
    });
});

describe("checkViews: a fabric whose cabling is declared (hosts[].railPorts)", () => {
    const planOf = (nodes: number) => {
        const cluster = (scaledStack("roce-h100.yaml", nodes) as { config: Record<string, { roce: unknown }> }).config["rdmakit:cluster"];
        return planQos(parseClusterSpec(cluster).roce!);
    };
    /** `[C9] host, switch:port` for each port each host is cabled to whose MTU is below the host's, in checkViews' order. */
    const expectedC9 = (views: ReturnType<typeof readSwitchView>[], hosts: QosPlan["hosts"]) => {
        const at = new Map(hosts.flatMap((h) => h.railPorts!.map((rp) => [rp, h] as const)));
        const out: string[] = [];
        for (const s of views) for (const p of s.ports) {
            const h = at.get(`${s.name}:${p.port}`);
            if (h && p.mtu !== undefined && p.mtu < h.vars.roce_host_mtu) out.push(`[C9] ${h.name}, ${s.name}:${p.port}`);
        }
        return out;
    };
    it("2,048 hosts of distinct MTUs, each above every port's: each named on its own 8 ports, in linear time", () => {
        // railFabric (bench/scale.ts): 2,048 hosts x 8 rails on 256 NVUE leaves and 128 SONiC spines; every host's MTU is
        // its own and too big for the switch ports, so before, each host was a group compared with each of the ~32k ports
        // (2,048 x 32k violations); now each rail is compared with the port it is cabled to
        const plan = planOf(2048);
        const views = renderSwitchConfigs(plan).map(readSwitchView);
        const top = Math.max(...views.flatMap((s) => s.ports.map((p) => p.mtu ?? 0)));
        const hosts = plan.hosts.map((h, i) => ({ ...h, vars: { ...h.vars, roce_host_mtu: top + 1 + i } }));
        const t0 = process.cpuUsage();
        const v = checkViews({ ...plan, hosts }, views);
        const cpu = process.cpuUsage(t0);
        const ms = (cpu.user + cpu.system) / 1000;
        assert.ok(ms < 5000, `${ms} ms of CPU`);
        const expected = expectedC9(views, hosts);
        assert.equal(expected.length, 2048 * 8);
        assert.deepEqual(v.map((x) => formatViolation(x).replace(/: .*/, "")), expected);
        assert.equal(new Set(v.map((x) => x.devices[0])).size, 2048);
    });
    it("a host with its own MTU is named on the ports it is cabled to, not on another host's or a fabric port", () => {
        const plan = planOf(8);
        const views = renderSwitchConfigs(plan).map(readSwitchView);
        assert.deepEqual(checkViews(plan, views), []);
        const top = Math.max(...views.flatMap((s) => s.ports.map((p) => p.mtu ?? 0)));
        const hosts = plan.hosts.map((h, i) => (i === 1 ? { ...h, vars: { ...h.vars, roce_host_mtu: top + 100 } } : h));
        const v = checkViews({ ...plan, hosts }, views).map((x) => formatViolation(x).replace(/: .*/, ""));
        assert.deepEqual(v, expectedC9(views, hosts));
        assert.deepEqual(v.map((x) => x.split(", ")[1].replace(/:.*/, "")), plan.hosts[1].railPorts!.map((rp) => rp.split(":")[0]));
        // the planned switches' fabric ports are compared with the plan's host values, naming the hosts that hold them
        const spine = views.find((s) => s.os === "sonic")!;
        const lowered = { ...spine, ports: spine.ports.map((p, i) => (i === 0 ? { ...p, mtu: 1500 } : p)) };
        const w = checkViews(plan, views.map((s) => (s === spine ? lowered : s)));
        assert.deepEqual(w.map((x) => formatViolation(x).replace(/: .*/, "")), [`[C9] ${plan.hosts.map((h) => h.name).join(", ")}, ${spine.name}:${spine.ports[0].port}`]);
        // a host without declared cabling: every host compared with every port, as before
        const uncabled = hosts.map((h, i) => (i === 0 ? { ...h, railPorts: undefined } : h));
        const all = checkViews({ ...plan, hosts: uncabled }, views).filter((x) => x.devices[0] === plan.hosts[1].name);
        assert.equal(all.length, views.reduce((n, s) => n + s.ports.filter((p) => p.mtu !== undefined && p.mtu < top + 100).length, 0) + views.filter((s) => s.os === "sonic").reduce((n, s) => n + s.ports.length, 0));
    });
});
