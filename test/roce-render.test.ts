import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { parse as parseYaml, stringify as stringifyYaml } from "yaml";
import { planQos, switchRenderInput } from "../components/roce/qos";
import { parseClusterSpec } from "../components/spec";
import { scaledStack } from "../bench/scale";
import { renderedDigest, renderSwitchConfig, renderSwitchConfigs, sha256 } from "../components/roce/render";
import { parsedOf } from "../components/parsed";
import { renderSonic, renderSonicText, SONIC_NAMES } from "../components/roce/switches/sonic";
import { nvueText, renderNvue, renderNvueText } from "../components/roce/switches/nvue";
import { renderEos } from "../components/roce/switches/eos";
import { fabricSpec, NON_DEFAULT_LOSSY, spec, yangAvailable, yanglint } from "./fixtures/roce/helpers";

type Db = Record<string, Record<string, Record<string, string>>>;
const sonicOf = (qos: Record<string, unknown> = {}) => {
    const plan = planQos(spec(qos));
    return { plan, sw: plan.switches.find((s) => s.os === "sonic")!, db: renderSonic(plan, plan.switches.find((s) => s.os === "sonic")!) as Db };
};

describe("SONiC config_db.json renderer", () => {
    it("default plan: DSCP 26 → TC 3 (lossless), 48 → TC 6, everything else → TC 0 (not SONiC's DSCP 26 → TC 1)", () => {
        const { db } = sonicOf();
        const map = db.DSCP_TO_TC_MAP[SONIC_NAMES.map];
        assert.equal(Object.keys(map).length, 64);
        assert.equal(map["26"], "3");
        assert.equal(map["48"], "6");
        for (const d of ["0", "3", "4", "24", "46", "63"]) assert.equal(map[d], "0", `DSCP ${d}`);
        assert.deepEqual(db.PORT_QOS_MAP.Ethernet0, {
            dscp_to_tc_map: "RDMAKIT_ROCE", tc_to_pg_map: "RDMAKIT_ROCE", tc_to_queue_map: "RDMAKIT_ROCE", pfc_to_queue_map: "RDMAKIT_ROCE",
            pfc_to_pg_map: "RDMAKIT_ROCE", pfc_enable: "3", pfcwd_sw_enable: "3",
        });
        // the PG that sends pause for priority 3 (SONiC's factory map covers only 3 and 4)
        assert.deepEqual(db.PFC_PRIORITY_TO_PRIORITY_GROUP_MAP.RDMAKIT_ROCE, { 3: "3" });
        assert.equal(db.TC_TO_PRIORITY_GROUP_MAP.RDMAKIT_ROCE["3"], "3");
        assert.equal(db.MAP_PFC_PRIORITY_TO_QUEUE.RDMAKIT_ROCE["3"], "3");
        assert.deepEqual(db.QUEUE["Ethernet8|3"], { scheduler: "RDMAKIT_ROCE_DWRR", wred_profile: "RDMAKIT_ROCE_ECN" });
        assert.deepEqual(db.QUEUE["Ethernet8|6"], { scheduler: "RDMAKIT_CNP_STRICT" });
        assert.equal(db.WRED_PROFILE.RDMAKIT_ROCE_ECN.ecn, "ecn_all");
        assert.equal(db.WRED_PROFILE.RDMAKIT_ROCE_ECN.green_min_threshold, "150000");
        assert.equal(db.WRED_PROFILE.RDMAKIT_ROCE_ECN.green_max_threshold, "1500000");
        assert.equal(db.WRED_PROFILE.RDMAKIT_ROCE_ECN.green_drop_probability, "100");
        assert.deepEqual(db.BUFFER_PG, {
            "Ethernet0|0": { profile: "ingress_lossy_profile" }, "Ethernet0|3": { profile: "NULL" },
            "Ethernet8|0": { profile: "ingress_lossy_profile" }, "Ethernet8|3": { profile: "NULL" },
        });
        assert.deepEqual(Object.keys(db.BUFFER_QUEUE).filter((k) => k.startsWith("Ethernet0|")), ["Ethernet0|0-2", "Ethernet0|4-6", "Ethernet0|3"]);
        assert.equal(db.BUFFER_QUEUE["Ethernet0|3"].profile, "egress_lossless_profile");
        // the buffer model is the switch's: the push checks it, the fragment does not set it
        assert.equal(db.DEVICE_METADATA, undefined);
        assert.deepEqual(db.PFC_WD.GLOBAL, { POLL_INTERVAL: "100" });
        assert.deepEqual(db.PFC_WD.Ethernet0, { action: "drop", detection_time: "300", restoration_time: "300" });
        // MTU only: the kit never writes a port speed (a wrong one downs the link; the push checks it read-only)
        assert.deepEqual(db.PORT.Ethernet0, { mtu: "9216" });
        assert.deepEqual(db.CABLE_LENGTH.AZURE, { Ethernet0: "3m", Ethernet8: "3m" });
        assert.equal(db.LOSSLESS_TRAFFIC_PATTERN.AZURE.mtu, "9000");
    });

    it("DSCP 24 / priority 4, lossy: TC 4, no PFC, no lossless buffers, ECN kept", () => {
        const { db } = sonicOf(NON_DEFAULT_LOSSY);
        assert.equal(db.DSCP_TO_TC_MAP.RDMAKIT_ROCE["24"], "4");
        assert.equal(db.DSCP_TO_TC_MAP.RDMAKIT_ROCE["26"], "0");
        assert.equal(db.PORT_QOS_MAP.Ethernet0.pfc_enable, "");
        assert.equal(db.PORT_QOS_MAP.Ethernet0.pfcwd_sw_enable, "");
        assert.deepEqual(db.BUFFER_PG, { "Ethernet0|0": { profile: "ingress_lossy_profile" }, "Ethernet8|0": { profile: "ingress_lossy_profile" } });
        assert.deepEqual(Object.keys(db.BUFFER_QUEUE).filter((k) => k.startsWith("Ethernet0|")), ["Ethernet0|0-6"]);
        assert.equal(db.PFC_WD, undefined);
        assert.deepEqual(db.QUEUE["Ethernet0|4"], { scheduler: "RDMAKIT_ROCE_DWRR", wred_profile: "RDMAKIT_ROCE_ECN" });
        assert.equal(db.QUEUE["Ethernet0|3"], undefined);
    });

    for (const [label, qos] of [["default", {}], ["DSCP 24 / priority 4 lossy", NON_DEFAULT_LOSSY], ["DSCP 24 / priority 4 lossless", { roceDscp: 24, rocePriority: 4 }]] as const) {
        it(`yanglint accepts the ${label} config_db.json`, (t) => {
            const avail = yangAvailable();
            if (!avail.ok) return t.skip(avail.why);
            const { db } = sonicOf(qos);
            const r = yanglint(db);
            assert.equal(r.status, 0, r.output);
        });
    }

    it("yanglint rejects a dangling map name", (t) => {
        const avail = yangAvailable();
        if (!avail.ok) return t.skip(avail.why);
        const { db } = sonicOf();
        db.PORT_QOS_MAP.Ethernet0.dscp_to_tc_map = "MISSING_MAP";
        const r = yanglint(db);
        assert.notEqual(r.status, 0);
        assert.match(r.output, /leafref|MISSING_MAP/i);
    });

    it("yanglint rejects pfc_enable out of range", (t) => {
        const avail = yangAvailable();
        if (!avail.ok) return t.skip(avail.why);
        const { db } = sonicOf();
        db.PORT_QOS_MAP.Ethernet8.pfc_enable = "3,8";
        const r = yanglint(db);
        assert.notEqual(r.status, 0);
        assert.match(r.output, /pattern|3,8/i);
    });

    it("yanglint rejects a WRED max threshold below its min (a must-expression)", (t) => {
        const avail = yangAvailable();
        if (!avail.ok) return t.skip(avail.why);
        const { db } = sonicOf();
        db.WRED_PROFILE.RDMAKIT_ROCE_ECN.green_max_threshold = "1000";
        const r = yanglint(db);
        assert.notEqual(r.status, 0);
        assert.match(r.output, /max threshold|must/i);
    });
});

describe("NVUE renderer", () => {
    const nvueOf = (qos: Record<string, unknown> = {}) => {
        const plan = planQos(spec(qos));
        const sw = plan.switches.find((s) => s.os === "nvue")!;
        return renderNvue(plan, sw)[0].set as Record<string, any>;  
    };

    it("default plan: roce lossless, DSCP 26 → sp 3 → TC 3, PFC on 3 only, ECN on TC 3, CNP strict, watchdog per port", () => {
        const set = nvueOf();
        assert.deepEqual(set.qos.roce, { enable: "on", mode: "lossless" });
        const m = set.qos.mapping["default-global"];
        assert.equal(m.trust, "both");
        assert.deepEqual(m.dscp["26"], { "switch-priority": 3 });
        assert.deepEqual(m.dscp["48"], { "switch-priority": 6 });
        assert.deepEqual(m.dscp["27"], { "switch-priority": 0 });
        assert.deepEqual(set.qos["egress-queue-mapping"]["default-global"]["switch-priority"]["3"], { "traffic-class": 3 });
        assert.deepEqual(set.qos.pfc["default-global"], { "switch-priority": { "3": {} }, tx: "enable", rx: "enable", "cable-length": 8 });
        assert.deepEqual(set.qos["congestion-control"]["default-global"]["traffic-class"], { "3": { ecn: "enable", "min-threshold": 150000, "max-threshold": 1500000, probability: 100 } });
        assert.deepEqual(set.qos["egress-scheduler"]["default-global"]["traffic-class"]["6"], { mode: "strict" });
        assert.deepEqual(set.qos["pfc-watchdog"], { "polling-interval": 100, robustness: 3 });
        assert.deepEqual(set.interface.swp2, { link: { mtu: 9216 }, qos: { "pfc-watchdog": { state: "enable" } } });
    });

    it("DSCP 24 / priority 4 lossy: sp 4 → TC 3 (NVUE keeps RoCE on TC 3), sp 3 → TC 0, no PFC or watchdog", () => {
        const set = nvueOf(NON_DEFAULT_LOSSY);
        assert.equal(set.qos.roce.mode, "lossy");
        assert.deepEqual(set.qos.mapping["default-global"].dscp["24"], { "switch-priority": 4 });
        const spm = set.qos["egress-queue-mapping"]["default-global"]["switch-priority"];
        assert.deepEqual(spm["4"], { "traffic-class": 3 });
        assert.deepEqual(spm["3"], { "traffic-class": 0 });
        assert.equal(set.qos.pfc, undefined);
        assert.equal(set.qos["pfc-watchdog"], undefined);
        assert.deepEqual(set.interface.swp1, { link: { mtu: 9216 } });
    });

    it("the fast NVUE printer writes what the yaml package writes, and it reads back as the rendered document", () => {
        for (const p of [planQos(spec()), planQos(fabricSpec()), planQos(spec(NON_DEFAULT_LOSSY))]) {
            for (const sw of p.switches.filter((s) => s.os === "nvue")) {
                const doc = renderNvue(p, sw);
                const text = nvueText(doc);
                assert.equal(text, stringifyYaml(doc, { aliasDuplicateObjects: false }), sw.name);
                assert.deepEqual(parseYaml(text), doc);
            }
        }
        // keys and values that are not plain YAML strings are quoted
        assert.equal(nvueText([{ set: { a: { "0": "true", b: "10m", c: "x y", d: 3, e: {} } } }]), '- set:\n    a:\n      "0": "true"\n      b: "10m"\n      c: "x y"\n      d: 3\n      e: {}\n');
    });

    it("text is the `- set:` operation list nv config patch takes", () => {
        const plan = planQos(spec());
        const r = renderSwitchConfig(plan, plan.switches.find((s) => s.os === "nvue")!);
        assert.match(r.text, /^- set:\n {4}qos:\n/);
        const doc = parseYaml(r.text);
        assert.ok(Array.isArray(doc) && doc.length === 1 && doc[0].set.qos);
        assert.equal(r.fileName, "leaf-nvue.nvue.yaml");
    });
});

describe("EOS renderer", () => {
    const eosOf = (qos: Record<string, unknown> = {}) => {
        const plan = planQos(spec(qos));
        return renderEos(plan, plan.switches.find((s) => s.os === "eos")!);
    };

    it("default plan: maps, trust, no-drop on 3, ECN + DWRR on tx-queue 3, strict tx-queue 6, watchdog, ports", () => {
        const L = eosOf();
        for (const line of [
            "qos map dscp 26 to traffic-class 3",
            "qos map dscp 48 to traffic-class 6",
            "qos map traffic-class 3 to tx-queue 3",
            "priority-flow-control pause watchdog default timeout 0.3",
            "priority-flow-control pause watchdog default polling-interval 0.1",
            "priority-flow-control pause watchdog action drop",
            "qos profile RDMAKIT_ROCE",
            "   qos trust dscp",
            "   uc-tx-queue 3",
            "      random-detect ecn minimum-threshold 150000 bytes maximum-threshold 1500000 bytes max-mark-probability 100",
            "   priority-flow-control on",
            "   priority-flow-control priority 3 no-drop",
            "   priority-flow-control pause watchdog",
            "interface Ethernet2/1",
            "   mtu 9214",
            "   flowcontrol receive off",
            "   service-profile RDMAKIT_ROCE",
        ]) assert.ok(L.includes(line), `missing: ${line}`);
        const q6 = L.indexOf("   uc-tx-queue 6");
        assert.equal(L[q6 + 1], "      priority strict");
        // every DSCP mapped exactly once
        const mapped = L.filter((l) => l.startsWith("qos map dscp ")).flatMap((l) => l.replace(/^qos map dscp /, "").replace(/ to traffic-class \d+$/, "").split(" "));
        assert.deepEqual(mapped.map(Number).sort((a, b) => a - b), Array.from({ length: 64 }, (_, i) => i));
    });

    it("DSCP 24 / priority 4 lossy: DSCP 24 → TC 4, ECN on tx-queue 4, PFC off, no watchdog", () => {
        const L = eosOf(NON_DEFAULT_LOSSY);
        assert.ok(L.includes("qos map dscp 24 to traffic-class 4"));
        assert.ok(L.includes("   no priority-flow-control"));
        assert.ok(!L.some((l) => /no-drop|pause watchdog/.test(l)));
        const q4 = L.indexOf("   uc-tx-queue 4");
        assert.ok(q4 > 0 && L[q4 + 3].includes("random-detect ecn"));
    });
});

describe("renderSwitchConfigs", () => {
    it("one config per switch, digest = sha256(text), changes only when the plan changes what the switch gets", () => {
        const a = renderSwitchConfigs(planQos(spec()));
        assert.deepEqual(a.map((c) => [c.switch, c.format]), [["leaf-sonic", "config_db-json"], ["leaf-nvue", "nvue-yaml"], ["leaf-eos", "eos-cli"]]);
        for (const c of a) assert.equal(c.digest, sha256(c.text));
        const again = renderSwitchConfigs(planQos(spec()));
        assert.deepEqual(again.map((c) => c.digest), a.map((c) => c.digest));
        const other = renderSwitchConfigs(planQos(spec({ ecn: { minBytes: 200000, maxBytes: 1500000, maxProbabilityPct: 100 } })));
        for (let i = 0; i < a.length; i++) assert.notEqual(other[i].digest, a[i].digest, a[i].switch);
    });

    it("a plan rendered again gives equal configurations as fresh objects, and the texts' structures stay remembered", () => {
        const plan = planQos(spec());
        const a = renderSwitchConfigs(plan);
        const b = renderSwitchConfigs(plan);
        assert.deepEqual(b, a);
        for (let i = 0; i < a.length; i++) assert.notEqual(b[i], a[i], "each caller may change what it gets");
        b[0].text = "changed by a caller";
        assert.deepEqual(renderSwitchConfigs(plan).map((c) => c.digest), a.map((c) => c.digest));
        assert.equal(renderSwitchConfigs(plan)[0].text, a[0].text);
        for (const c of renderSwitchConfigs(plan)) assert.notEqual(parsedOf(c.text), undefined, c.switch);
    });

    it("renderedDigest: a text read back with the characters of a rendered one has its digest; any other text has none", () => {
        const a = renderSwitchConfigs(planQos(spec()));
        for (const c of a) {
            // a copy of the characters, as a kept file reads back (the policy pack's readKeptText)
            const copy = Buffer.from(c.text, "utf8").toString("utf8");
            assert.deepEqual(renderedDigest(copy), { text: c.text, digest: sha256(c.text) });
            assert.equal(renderedDigest(copy + " "), undefined);
        }
    });
});

describe("switches alike in what the renderers read take one text", () => {
    // the bench's rail fabric at 128 hosts: 8 rails of 2 leaves and 2 spines, leaves alike but for name, address and peers
    const cluster = parseClusterSpec((scaledStack("roce-h100.yaml", 128) as { config: Record<string, unknown> }).config["rdmakit:cluster"]);
    const plan = planQos(cluster.roce!);

    it("switchRenderInput holds the renderers' fields alone, no name, address, key or peer", () => {
        const leaf = plan.switches.find((s) => s.role === "leaf")!;
        const input = switchRenderInput(leaf);
        assert.deepEqual(Object.keys(input).sort(), ["cableLengthM", "cnp", "mtu", "os", "other", "pfcToPgMap", "ports", "roce"]);
        assert.deepEqual(input.ports.map((p) => Object.keys(p)), leaf.ports.map(() => ["name", "cableLengthM"]));
    });

    it("the leaves share one text and the spines another, the same as each renders alone; another cable makes another text", () => {
        const all = renderSwitchConfigs(plan);
        const texts = (role: string) => new Set(all.filter((c) => plan.switches.find((s) => s.name === c.switch)!.role === role).map((c) => c.text));
        assert.equal(texts("leaf").size, 1);
        assert.equal(texts("spine").size, 1);
        // what each switch's own render gives, written out by the renderer without the memory (renderNvueText, renderSonicText)
        for (const sw of plan.switches) {
            const alone = sw.os === "nvue" ? renderNvueText(plan, sw) : renderSonicText(plan, sw);
            assert.equal(all.find((c) => c.switch === sw.name)!.text, alone, sw.name);
        }
        const leaf = plan.switches.find((s) => s.role === "leaf")!;
        const longer = { ...leaf, name: "leaf-longer", ports: leaf.ports.map((p, i) => (i === 0 ? { ...p, cableLengthM: 300 } : p)) };
        assert.notEqual(renderSwitchConfig(plan, longer).text, all.find((c) => c.switch === leaf.name)!.text);
    });
});

describe("every port on the RoCE path: uplinks, spine downlinks, per-port cables", () => {
    const plan = planQos(fabricSpec());
    const sw = (n: string) => plan.switches.find((s) => s.name === n)!;

    it("plans host ports, uplinks and the spines' downlinks with their own speed and cable", () => {
        assert.deepEqual(sw("leaf-sonic").ports.map((p) => [p.name, p.kind, p.cableLengthM, p.peer]), [
            ["Ethernet0", "host", 3, undefined], ["Ethernet8", "host", 3, undefined],
            ["Ethernet248", "uplink", 40, "spine-sonic:Ethernet0"], ["Ethernet240", "uplink", 100, "spine-nvue:swp1"],
        ]);
        assert.deepEqual(sw("spine-sonic").ports.map((p) => [p.name, p.kind, p.peer]), [
            ["Ethernet0", "downlink", "leaf-sonic:Ethernet248"], ["Ethernet8", "downlink", "leaf-nvue:swp64"], ["Ethernet16", "downlink", "leaf-eos:Ethernet32/1"],
        ]);
    });

    it("SONiC: uplinks get the same maps, PFC, PG map, ECN queue and watchdog as host ports, headroom for their cable", () => {
        const db = renderSonic(plan, sw("leaf-sonic")) as Db;
        for (const p of ["Ethernet248", "Ethernet240"]) {
            assert.deepEqual(db.PORT_QOS_MAP[p], db.PORT_QOS_MAP.Ethernet0, p);
            assert.deepEqual(db.QUEUE[`${p}|3`], { scheduler: "RDMAKIT_ROCE_DWRR", wred_profile: "RDMAKIT_ROCE_ECN" });
            assert.deepEqual(db.BUFFER_PG[`${p}|3`], { profile: "NULL" });
            assert.ok(db.PFC_WD[p]);
        }
        assert.deepEqual([db.CABLE_LENGTH.AZURE.Ethernet0, db.CABLE_LENGTH.AZURE.Ethernet248, db.CABLE_LENGTH.AZURE.Ethernet240], ["3m", "40m", "100m"]);
    });

    it("yanglint accepts the SONiC leaf with uplinks and the SONiC spine", (t) => {
        const avail = yangAvailable();
        if (!avail.ok) return t.skip(avail.why);
        for (const n of ["leaf-sonic", "spine-sonic"]) {
            const r = yanglint(renderSonic(plan, sw(n)) as Db);
            assert.equal(r.status, 0, `${n}: ${r.output}`);
        }
    });

    it("NVUE: uplinks and downlinks bind a PFC profile with their own cable length; all eight TCs scheduled, DWRR total 100", () => {
        const leaf = renderNvue(plan, sw("leaf-nvue"))[0].set as Record<string, any>;
        assert.deepEqual(leaf.interface.swp64.qos, { "pfc-watchdog": { state: "enable" }, pfc: { profile: "rdmakit-pfc-40m" } });
        assert.deepEqual(leaf.interface.swp1.qos, { "pfc-watchdog": { state: "enable" } }, "host port on default-global");
        assert.deepEqual(leaf.qos.pfc["rdmakit-pfc-40m"], { "switch-priority": { 3: {} }, tx: "enable", rx: "enable", "cable-length": 40 });
        const spine = renderNvue(plan, sw("spine-nvue"))[0].set as Record<string, any>;
        assert.deepEqual(Object.keys(spine.interface), ["swp1"]);
        assert.equal(spine.qos.pfc["default-global"]["cable-length"], 100);
        const sched = leaf.qos["egress-scheduler"]["default-global"]["traffic-class"] as Record<string, { mode: string; "bw-percent"?: number }>;
        assert.deepEqual(Object.keys(sched), ["0", "1", "2", "3", "4", "5", "6", "7"]);
        assert.equal(Object.values(sched).filter((x) => x.mode === "dwrr").reduce((n, x) => n + (x["bw-percent"] ?? 0), 0), 100);
        assert.deepEqual([sched["3"], sched["6"], sched["0"], sched["1"]], [{ mode: "dwrr", "bw-percent": 50 }, { mode: "strict" }, { mode: "dwrr", "bw-percent": 45 }, { mode: "dwrr", "bw-percent": 1 }]);
    });

    it("EOS: the uplink gets the service profile; Strata models take uc-tx-queue, Sand models tx-queue", () => {
        const L = renderEos(plan, sw("leaf-eos"));
        const i = L.indexOf("interface Ethernet32/1");
        assert.ok(i > 0 && L.slice(i, i + 5).includes("   service-profile RDMAKIT_ROCE"));
        assert.ok(L.includes("   uc-tx-queue 3"));
        const sand = spec();
        sand.switches[2].model = "7280R3";
        const p2 = planQos(sand);
        const S = renderEos(p2, p2.switches[2]);
        assert.ok(S.includes("   tx-queue 3") && !S.some((l) => l.includes("uc-tx-queue")));
    });

    it("SONiC on a Broadcom model: no PFC → PG map (SONiC renders it on Mellanox/Barefoot only)", () => {
        const s = spec();
        s.switches[0].model = "7050CX3-32S";
        const p = planQos(s);
        const db = renderSonic(p, p.switches[0]) as Db;
        assert.equal(db.PFC_PRIORITY_TO_PRIORITY_GROUP_MAP, undefined);
        assert.equal(db.PORT_QOS_MAP.Ethernet0.pfc_to_pg_map, undefined);
    });
});
