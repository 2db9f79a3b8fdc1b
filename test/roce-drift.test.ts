// `rdmakit fabric check` end to end against stand-ins: a stub ssh (test/fixtures/roce/read-stubs/ssh) answers each
// switch's read-only commands with its running configuration and LLDP table in the OS's own output shape, and runs
// the real host read script against a fake /sys and /etc with stand-ins for mlnx_qos, ethtool and lldpctl. Each case
// changes one thing by hand (as an operator would) and expects the device, the rule and expected vs found; a
// switch that is down, hangs, presents another host key or prints garbage is unreadable, never passing.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { fabricDrift, formatDriftReport, type DriftReport } from "../components/roce/drift";
import { fabricCheckCommand } from "../components/roce/fabric-cli";
import { keepInput } from "../components/kept-input";
import { readFabric } from "../components/roce/fabric-read";
import { parseHostState, parseLldp, runningSwitchView } from "../components/roce/fabric-state";
import { planQos, type QosPlan } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import { SONIC_OWNERSHIP } from "../components/roce/sonic-patch";
import { roceSpecSchema, type RoceSpecInput } from "../components/roce/spec";
import { mergeConfigDb } from "../components/roce/switches/sonic-yang";
import { FACTORY_CONFIG_DB, fabricSpecInput } from "./fixtures/roce/helpers";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

type Db = Record<string, Record<string, Record<string, string>>>;
const ROOT = path.join(__dirname, "..");
const STUBS = path.join(__dirname, "fixtures", "roce", "read-stubs");
const RUNNING = path.join(__dirname, "fixtures", "roce", "running");
const fixture = (f: string) => fs.readFileSync(path.join(RUNNING, f), "utf8");
const slug = (cmd: string) => cmd.replace(/[^A-Za-z0-9]/g, "_");

/** The two-tier fabric of the other RoCE tests, with each rail's leaf port declared (rails 0 → NVUE, 1 → EOS). */
function input(): RoceSpecInput {
    const s = fabricSpecInput();
    s.hosts.forEach((h, i) => { h.railPorts = [`leaf-nvue:swp${i + 1}`, `leaf-eos:Ethernet${i + 1}/1`]; });
    return s;
}
const PLAN: QosPlan = planQos(roceSpecSchema.parse(input()));

/** Edits one device's state before it is written: what an operator changed by hand. */
interface Edits {
    nvue?: Partial<Record<string, (set: Record<string, any>) => void>>;
    /** `nv show qos roce -o json`: what switchd runs (undefined: the switch does not answer that read) */
    nvueOper?: Partial<Record<string, (roce: Record<string, any>) => Record<string, any> | undefined>>;
    sonic?: Partial<Record<string, (db: Db) => void>>;
    /** SONiC's operational answers: the `show pfc priority` / `show pfcwd config` rows and APPL_DB (sonic-oper.ts) */
    sonicOper?: Partial<Record<string, (o: SonicAnswers) => void>>;
    eos?: Partial<Record<string, (text: string) => string>>;
    lldp?: Partial<Record<string, (n: Record<string, { sys: string; port: string }>) => void>>;
    host?: Partial<Record<string, (h: HostFiles) => void>>;
}
interface SonicAnswers { pfc: string[][]; pfcwd: string[][]; appl: Record<string, Record<string, string>>; pfcText?: string; pfcwdText?: string }

/** A table in tabulate's "simple" layout, as sonic-utilities prints them (fixtures sonic-show-*.txt). */
function simpleTable(header: string[], rows: string[][], right: boolean): string {
    const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i].length)));
    const line = (r: string[]) => r.map((c, i) => (right ? c.padStart(w[i]) : c.padEnd(w[i]))).join("  ").trimEnd();
    return [line(header), w.map((n) => "-".repeat(n)).join("  "), ...rows.map(line)].join("\n") + "\n";
}

interface HostFiles { mlnxQos: Record<string, string>; mtu: Record<string, string>; ecnOff: Record<string, number[]>; willing?: string; lldp: Record<string, { sys: string; port: string }>; nccl: string }

function lldpJson0(n: Record<string, { sys: string; port: string }>): string {
    return JSON.stringify({ lldp: [{ interface: Object.entries(n).map(([name, x]) => ({
        name, via: "LLDP", rid: "1",
        chassis: [{ id: [{ type: "mac", value: "0c:42:a1:00:00:01" }], name: [{ value: x.sys }], "mgmt-ip": [{ value: "192.0.2.1" }] }],
        port: [{ id: [{ type: "ifname", value: x.port }], descr: [{ value: x.port }], ttl: [{ value: "120" }] }],
    })) }] });
}

/** Writes every device's answers under a fresh STUB_DIR: the fabric as the plan's pushes and host role leave it. */
function fabric(edits: Edits = {}): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-drift-"));
    const write = (f: string, text: string, mode?: number) => { fs.mkdirSync(path.dirname(f), { recursive: true }); fs.writeFileSync(f, text, { mode }); };
    const aliasOf = (port: string) => (FACTORY_CONFIG_DB.PORT[port] as Record<string, string> | undefined)?.alias ?? port;
    for (const r of renderSwitchConfigs(PLAN)) {
        const sw = PLAN.switches.find((s) => s.name === r.switch)!;
        const at = path.join(dir, sw.managementAddress);
        if (r.os === "nvue") {
            const set = structuredClone((parseYaml(r.text) as Array<{ set: Record<string, any> }>)[0].set);
            set.interface = { ...set.interface, eth0: { type: "eth", ip: { address: { dhcp: {} } } }, lo: { type: "loopback" } };
            set.system = { hostname: sw.name };
            edits.nvue?.[sw.name]?.(set);
            write(path.join(at, slug("nv config show -o json")), JSON.stringify([{ header: { model: "VX", "nvue-api-version": "nvue_v1", "rev-id": "1.0", version: "Cumulus Linux 5.9.0" } }, { set }]));
            // the operational RoCE object: enable and mode as the applied tree has them (the rest of the object left out)
            const oper = (edits.nvueOper?.[sw.name] ?? ((x) => x))({ enable: set.qos.roce.enable, mode: set.qos.roce.mode });
            if (oper) write(path.join(at, slug("nv show qos roce -o json")), JSON.stringify(oper));
        } else if (r.os === "sonic") {
            const db: Db = structuredClone(FACTORY_CONFIG_DB);
            const owned = new Set(sw.ports.map((p) => p.name));
            for (const t of SONIC_OWNERSHIP.portTables) for (const k of Object.keys(db[t] ?? {})) if (owned.has(k.split("|")[0])) delete db[t][k];
            const live = mergeConfigDb(db, JSON.parse(r.text));
            edits.sonic?.[sw.name]?.(live);
            write(path.join(at, slug("sudo sonic-cfggen -d --print-data")), JSON.stringify(live, null, 4));
            // what the switch runs: PFC and the watchdog as CONFIG_DB says, headroom from the dynamic buffer manager
            const ans: SonicAnswers = {
                pfc: Object.entries(live.PORT_QOS_MAP ?? {}).map(([k, v]) => [k, v.pfc_enable || "N/A"]),
                pfcwd: Object.entries(live.PFC_WD ?? {}).filter(([k]) => k !== "GLOBAL").map(([k, v]) => [k, v.action ?? "drop", v.detection_time ?? "N/A", v.restoration_time ?? "infinite", "disable"]),
                appl: { "BUFFER_PROFILE_TABLE:pg_lossless_400000_40m_profile": { xon: "19456", xoff: "61440", size: "80896", pool: "ingress_lossless_pool", dynamic_th: "0" } },
            };
            for (const p of sw.ports) ans.appl[`BUFFER_PG_TABLE:${p.name}:${sw.roce.priorityGroup}`] = { profile: "pg_lossless_400000_40m_profile" };
            edits.sonicOper?.[sw.name]?.(ans);
            write(path.join(at, "pfc.txt"), ans.pfcText ?? "\n" + simpleTable(["Interface", "Lossless priorities"], ans.pfc, false) + "\n");
            write(path.join(at, "pfcwd.txt"), ans.pfcwdText ?? `Changed polling interval to ${live.PFC_WD?.GLOBAL?.POLL_INTERVAL ?? 200}ms\n` + simpleTable(["PORT", "ACTION", "DETECTION TIME", "RESTORATION TIME", "HISTORY"], ans.pfcwd, true));
            write(path.join(at, "appldb.json"), JSON.stringify(ans.appl));
            write(path.join(at, "bin", "show"), `#!/bin/sh\ncase "$*" in "pfc priority") cat "${at}/pfc.txt" ;; "pfcwd config") cat "${at}/pfcwd.txt" ;; *) echo "stub show: $*" >&2; exit 2 ;; esac\n`, 0o755);
            write(path.join(at, "bin", "sonic-db-cli"), `#!/bin/sh\n[ "$1 $2" = "APPL_DB HGET" ] || exit 2\npython3 -c 'import json,sys; v=json.load(open(sys.argv[1])).get(sys.argv[2],{}).get(sys.argv[3]); print("" if v is None else v)' "${at}/appldb.json" "$3" "$4"\n`, 0o755);
        } else {
            const kit = r.text.split("\n").filter((l) => !l.startsWith("no ")).join("\n");
            const text = `! Command: show running-config all\n! device: ${sw.name} (DCS-7060DX4-32, EOS-4.31.2F)\n!\nhostname ${sw.name}\n!\n${kit}interface Ethernet3/1\n   shutdown\n!\ninterface Management1\n   ip address ${sw.managementAddress}/24\n!\nend\n`;
            write(path.join(at, slug("show running-config all")), edits.eos?.[sw.name]?.(text) ?? text);
        }
        // LLDP: every fabric port hears its peer (a SONiC peer advertises its port alias); host ports hear the rail
        const n: Record<string, { sys: string; port: string }> = {};
        for (const p of sw.ports) {
            if (p.peer) {
                const [peer, peerPort] = p.peer.split(":");
                n[p.name] = { sys: peer, port: PLAN.switches.find((s) => s.name === peer)!.os === "sonic" ? aliasOf(peerPort) : peerPort };
            }
        }
        for (const h of PLAN.hosts) h.railPorts!.forEach((rp, i) => { const [s, p] = rp.split(":"); if (s === sw.name) n[p] = { sys: h.name, port: h.railNetdevs![i] }; });
        edits.lldp?.[sw.name]?.(n);
        if (sw.os === "eos") write(path.join(at, slug("show lldp neighbors | json")), JSON.stringify({ ...JSON.parse(fixture("eos-lldp-neighbors.json")), lldpNeighbors: Object.entries(n).map(([port, x]) => ({ ttl: 120, neighborDevice: x.sys, neighborPort: x.port, port })) }));
        else write(path.join(at, slug(sw.os === "sonic" ? "docker exec lldp lldpctl -f json0" : "sudo lldpctl -f json0")), lldpJson0(n));
    }
    for (const h of PLAN.hosts) {
        const at = path.join(dir, h.address);
        const files: HostFiles = {
            mlnxQos: Object.fromEntries(h.railNetdevs!.map((i) => [i, fixture("mlnx_qos-planned.txt")])),
            mtu: Object.fromEntries(h.railNetdevs!.map((i) => [i, "9000"])),
            ecnOff: {},
            lldp: Object.fromEntries(h.railNetdevs!.map((ifc, i) => { const [s, p] = h.railPorts![i].split(":"); return [ifc, { sys: s, port: p }]; })),
            nccl: Object.entries(h.ncclEnv).map(([k, v]) => `${k}=${v}`).join("\n") + "\n",
        };
        edits.host?.[h.name]?.(files);
        const sys = path.join(at, "root", "sys");
        h.railNetdevs!.forEach((ifc, i) => {
            write(path.join(sys, "class/net", ifc, "mtu"), files.mtu[ifc] + "\n");
            const mask = h.vars.roce_host_cc_prio_mask;
            for (const point of ["roce_np", "roce_rp"]) for (let p = 0; p < 8; p++) write(path.join(sys, "class/net", ifc, "ecn", point, "enable", String(p)), ((mask >> p) & 1 && !(files.ecnOff[ifc] ?? []).includes(p) ? "1" : "0") + "\n");
            write(path.join(sys, "class/net", ifc, "ecn/roce_np/cnp_dscp"), `${h.vars.roce_host_cnp_dscp}\n`);
            write(path.join(sys, "class/net", ifc, "ecn/roce_np/cnp_802p_prio"), `${h.vars.roce_host_cnp_priority}\n`);
            write(path.join(at, "qos", ifc), files.mlnxQos[ifc]);
            fs.mkdirSync(path.join(sys, "class/infiniband", h.railNics[i], "tc/1"), { recursive: true });
            write(path.join(sys, "class/infiniband", h.railNics[i], "tc/1/traffic_class"), `${h.vars.roce_host_tos}\n`);
        });
        write(path.join(at, "root/etc/nccl.conf"), files.nccl);
        write(path.join(at, "lldp.json"), lldpJson0(files.lldp));
        const bin = path.join(at, "bin");
        write(path.join(bin, "mlnx_qos"), `#!/bin/sh\n[ "$1" = -i ] && [ $# -eq 2 ] && cat "${at}/qos/$2"\n`, 0o755);
        write(path.join(bin, "ethtool"), `#!/bin/sh\n[ "$1" = -a ] && sed "s/IFC/$2/" "${RUNNING}/ethtool-a.txt"\n`, 0o755);
        write(path.join(bin, "lldpctl"), `#!/bin/sh\ncat "${at}/lldp.json"\n`, 0o755);
        if (files.willing) write(path.join(bin, "lldptool"), `#!/bin/sh\necho "${files.willing}"\n`, 0o755);
    }
    return dir;
}

// 30 s a device: the stub switches answer in well under a second, but a loaded test machine (three test files at
// once beside the host scenarios) can take seconds to start their programs; the hang case sets its own 2 s.
async function check(dir: string, env: Record<string, string> = {}, timeoutS = 30): Promise<DriftReport> {
    const saved = { ...process.env };
    Object.assign(process.env, { PATH: `${STUBS}:${process.env.PATH}`, STUB_DIR: dir, STUB_LOG: path.join(dir, "log"), ...env });
    try {
        const { switches, hosts } = await readFabric(PLAN, { timeoutS });
        return fabricDrift(PLAN, switches, hosts);
    } finally {
        process.env = saved;
    }
}
const show = (r: DriftReport) => formatDriftReport(r);
const finding = (r: DriftReport, rule: string, device: string) => r.findings.find((f) => f.rule === rule && f.device.split(", ").includes(device));

describe("fabric check: the fabric as the plan left it", () => {
    it("passes: every switch and host read, no finding, nothing unreadable", async () => {
        const r = await check(fabric());
        assert.deepEqual(r.findings, [], show(r));
        assert.deepEqual(r.unreadable, [], show(r));
        assert.deepEqual(r.read.switches.sort(), PLAN.switches.map((s) => s.name).sort());
        assert.deepEqual(r.read.hosts.sort(), ["gpu01", "gpu02"]);
        assert.match(show(r), /^rdmakit fabric check: PASS/);
    });
});

describe("fabric check: a switch changed by hand is named with the rule it breaks", () => {
    it("NVUE: PFC also on priority 4 (C3), expected vs found", async () => {
        const r = await check(fabric({ nvue: { "leaf-nvue": (set) => { set.qos.pfc["default-global"]["switch-priority"]["4"] = {}; } } }));
        const f = finding(r, "C3", "leaf-nvue:swp1");
        assert.ok(f, show(r));
        assert.deepEqual(f.expected, { pfcPriorities: [3] });
        assert.deepEqual(f.found, { pfcPriorities: [3, 4] });
        assert.ok(r.findings.every((x) => x.device.split(", ").every((d) => d.startsWith("leaf-nvue") || d.startsWith("spine-"))), show(r));
    });
    it("NVUE: a switch that runs RoCE lossy while its applied configuration says lossless (C20)", async () => {
        const r = await check(fabric({ nvueOper: { "leaf-nvue": (o) => ({ ...o, mode: "lossy" }) } }));
        const f = r.findings.find((x) => x.rule === "C20" && x.device === "leaf-nvue");
        assert.ok(f, show(r));
        assert.deepEqual([f.expected, f.found], [{ enable: "on", mode: "lossless" }, { enable: "on", mode: "lossy" }]);
        // no answer to the read: not checked, said so; an answer that is not the object: unreadable
        const none = await check(fabric({ nvueOper: { "leaf-nvue": () => undefined } }));
        assert.match(none.notChecked.map((n) => `${n.device}: ${n.what}`).join("\n"), /leaf-nvue: operational state \(C20\): nv show qos roce -o json: exit 1/);
        const bad = await check(fabric({ nvueOper: { "leaf-nvue": () => ({ roce: "?" }) } }));
        assert.ok(bad.unreadable.some((u) => u.device === "leaf-nvue" && /printed no object with an operational mode/.test(u.why)), show(bad));
    });
    it("SONiC: a lossless PG the buffer manager gave no headroom, a port without the watchdog, PFC off (C20)", async () => {
        const r = await check(fabric({ sonicOper: { "leaf-sonic": (o) => {
            o.appl["BUFFER_PROFILE_TABLE:pg_lossless_400000_40m_profile"].xoff = "0";
            delete o.appl["BUFFER_PG_TABLE:Ethernet8:3"];
            o.pfcwd = o.pfcwd.filter((row) => row[0] !== "Ethernet248");
            o.pfc = o.pfc.map((row) => (row[0] === "Ethernet240" ? [row[0], "N/A"] : row));
        } } }));
        const zero = finding(r, "C20", "leaf-sonic:Ethernet0");
        assert.ok(zero && /no headroom/.test(zero.message), show(r));
        assert.deepEqual(zero.found, { profile: "pg_lossless_400000_40m_profile", xoff: "0" });
        assert.ok(/no profile/.test(finding(r, "C20", "leaf-sonic:Ethernet8")?.message ?? ""), show(r));
        assert.ok(/watchdog is not armed/.test(finding(r, "C20", "leaf-sonic:Ethernet248")?.message ?? ""), show(r));
        assert.deepEqual(finding(r, "C20", "leaf-sonic:Ethernet240")?.found, { pfcPriorities: [] }, show(r));
        // the spine, which is as planned, has no C20 finding
        assert.ok(!r.findings.some((f) => f.rule === "C20" && f.device.startsWith("spine-sonic")), show(r));
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
    it("SONiC: operational output it cannot read is unreadable, naming the command", async () => {
        const r = await check(fabric({ sonicOper: { "leaf-sonic": (o) => { o.pfcText = "Usage: show [OPTIONS] COMMAND [ARGS]...\nError: No such command \"pfc\".\n"; o.pfcwdText = "     PORT    ACTION\nEthernet0 drop\n"; } } }));
        const why = r.unreadable.filter((u) => u.device === "leaf-sonic").map((u) => u.why).join("\n");
        assert.match(why, /operational PFC \(C20\): show pfc priority: no 'Interface {2}Lossless priorities' header/, show(r));
        assert.match(why, /operational PFC watchdog \(C20\): show pfcwd config: no 'PORT ACTION DETECTION TIME RESTORATION TIME' header/, show(r));
    });
    it("SONiC: DSCP 26 classified to the lossy TC 1 (C1) on the kit's map", async () => {
        const r = await check(fabric({ sonic: { "leaf-sonic": (db) => { for (const m of Object.keys(db.DSCP_TO_TC_MAP)) if (m.startsWith("RDMAKIT")) db.DSCP_TO_TC_MAP[m]["26"] = "1"; } } }));
        const f = finding(r, "C1", "leaf-sonic:Ethernet0");
        assert.ok(f, show(r));
        assert.deepEqual((f.expected as any).dscpToTc, { 26: 3 });
        assert.deepEqual((f.found as any).dscpToTc, { 26: 1 });
    });
    // sonic-swss orchagent/qosorch.cpp handleGlobalQosMap: PORT_QOS_MAP|global's dscp_to_tc_map is the switch-level map
    // a port without a binding of its own classifies by (fabric-state.ts withGlobalDscpMap)
    it("SONiC: ports that bind no DSCP map of their own classify by PORT_QOS_MAP|global: the kit's map there is no drift, another map is (C1)", async () => {
        const unbind = (db: Db) => { for (const [k, row] of Object.entries(db.PORT_QOS_MAP)) if (k !== "global") delete (row as Record<string, string>).dscp_to_tc_map; };
        const ok = await check(fabric({ sonic: { "leaf-sonic": unbind } }));
        assert.equal(ok.findings.filter((f) => f.device.includes("leaf-sonic")).length, 0, show(ok));
        assert.ok(ok.read.switches.includes("leaf-sonic"), show(ok));
        const other = await check(fabric({ sonic: { "leaf-sonic": (db) => {
            unbind(db);
            const kit = Object.keys(db.DSCP_TO_TC_MAP).find((m) => m.startsWith("RDMAKIT"))!;
            db.DSCP_TO_TC_MAP.OTHER = { ...db.DSCP_TO_TC_MAP[kit], 26: "1" };
            db.PORT_QOS_MAP.global = { dscp_to_tc_map: "OTHER" };
        } } }));
        const f = finding(other, "C1", "leaf-sonic:Ethernet0");
        assert.ok(f, show(other));
        assert.deepEqual((f.found as any).dscpToTc, { 26: 1 });
        // a port's own binding wins over the global one: the kit's ports bound to the kit's map, global elsewhere
        const own = await check(fabric({ sonic: { "leaf-sonic": (db) => {
            const kit = Object.keys(db.DSCP_TO_TC_MAP).find((m) => m.startsWith("RDMAKIT"))!;
            db.DSCP_TO_TC_MAP.OTHER = { ...db.DSCP_TO_TC_MAP[kit], 26: "1" };
            db.PORT_QOS_MAP.global = { dscp_to_tc_map: "OTHER" };
        } } }));
        assert.equal(own.findings.filter((x) => x.device.includes("leaf-sonic")).length, 0, show(own));
    });
    it("SONiC spine: a downlink left on the factory PFC 3,4 (C3) and a port whose watchdog is gone (C11)", async () => {
        const r = await check(fabric({ sonic: { "spine-sonic": (db) => { db.PORT_QOS_MAP.Ethernet8.pfc_enable = "3,4"; delete db.PFC_WD.Ethernet16; } } }));
        assert.ok(finding(r, "C3", "spine-sonic:Ethernet8"), show(r));
        assert.ok(finding(r, "C11", "spine-sonic:Ethernet16"), show(r));
    });
    it("EOS: a port MTU lowered to 1500 (C9)", async () => {
        const r = await check(fabric({ eos: { "leaf-eos": (t) => t.replace("interface Ethernet1/1\n   mtu 9214", "interface Ethernet1/1\n   mtu 1500") } }));
        const f = finding(r, "C9", "leaf-eos:Ethernet1/1");
        assert.ok(f, show(r));
        assert.deepEqual([f.expected, f.found], [{ mtu: 9214 }, { mtu: 1500 }]);
    });
    it("EOS: a host port that lost the kit's service profile has no RoCE QoS (C5)", async () => {
        const r = await check(fabric({ eos: { "leaf-eos": (t) => t.replace("interface Ethernet2/1\n   mtu 9214\n   flowcontrol send off\n   flowcontrol receive off\n   service-profile RDMAKIT_ROCE\n", "interface Ethernet2/1\n   mtu 9214\n   flowcontrol send off\n   flowcontrol receive off\n") } }));
        assert.ok(r.findings.some((f) => f.device.startsWith("leaf-eos") && /Ethernet2\/1/.test(f.device + f.message)), show(r));
    });
});

describe("fabric check: hosts", () => {
    it("a NIC with the published mlnx_qos state (PFC on 0,2,6,7) breaks C2/C3, named by host and rail", async () => {
        const r = await check(fabric({ host: { gpu02: (h) => { h.mlnxQos.ens1f0np0 = fixture("mlnx_qos-doc2792.txt"); } } }));
        const f = finding(r, "C3", "gpu02:ens1f0np0");
        assert.ok(f && finding(r, "C2", "gpu02:ens1f0np0"), show(r));
        assert.deepEqual(f.expected, { roce_host_pfc_vector: "0,0,0,1,0,0,0,0" });
        assert.deepEqual(f.found, { roce_host_pfc_vector: "1,0,1,0,0,0,1,1" });
        assert.ok(!r.findings.some((x) => x.device.includes("gpu01")), show(r));
    });
    it("MTU 1500 (C9), ECN reaction off on the RoCE priority (C7), /etc/nccl.conf with another traffic class (C8)", async () => {
        const r = await check(fabric({ host: { gpu01: (h) => { h.mtu.ens2f0np0 = "1500"; h.ecnOff.ens1f0np0 = [3]; h.nccl = h.nccl.replace("NCCL_IB_TC=106", "NCCL_IB_TC=104"); } } }));
        assert.deepEqual(finding(r, "C9", "gpu01:ens2f0np0")?.found, { roce_host_mtu: 1500 }, show(r));
        assert.ok(finding(r, "C7", "gpu01:ens1f0np0"), show(r));
        assert.ok(finding(r, "C8", "gpu01:ens1f0np0"), show(r));
    });
    it("a rail's MTU above its port's (C9) is named on the port that rail is cabled to (railPorts), not on every port", async () => {
        const r = await check(fabric({ host: { gpu02: (h) => { h.mtu.ens2f0np0 = "9500"; } } }));
        const f = finding(r, "C9", "gpu02:ens2f0np0");
        assert.deepEqual(f?.found, { roce_host_mtu: 9500 }, show(r));
        // rail 1 of gpu02 is cabled to leaf-eos:Ethernet2/1 (MTU 9214); other hosts' ports and the spines are not its
        assert.match(f!.message, /^leaf-eos:Ethernet2\/1 MTU 9214 is below host MTU 9500/, show(r));
        assert.doesNotMatch(f!.message, /more switch port/, show(r));
        assert.equal(r.findings.filter((x) => x.rule === "C9").length, 1, show(r));
    });
    it("DCBX under firmware control or lldpad willing breaks C19", async () => {
        const r = await check(fabric({ host: { gpu01: (h) => { h.mlnxQos.ens1f0np0 = h.mlnxQos.ens1f0np0.replace("DCBX mode: OS controlled", "DCBX mode: Firmware controlled"); }, gpu02: (h) => { h.willing = "willing=yes"; } } }));
        assert.deepEqual(finding(r, "C19", "gpu01:ens1f0np0")?.found, { dcbxMode: "Firmware controlled" }, show(r));
        assert.ok(finding(r, "C19", "gpu02:ens1f0np0") && finding(r, "C19", "gpu02:ens2f0np0"), show(r));
        assert.ok(!finding(r, "C19", "gpu01:ens2f0np0"), show(r));
    });
});

describe("fabric check: cabling against LLDP (C18)", () => {
    it("two rails swapped on the host side, and an uplink on the wrong spine port", async () => {
        const r = await check(fabric({
            host: { gpu01: (h) => { h.lldp.ens1f0np0 = { sys: "leaf-nvue", port: "swp2" }; } },
            lldp: { "leaf-nvue": (n) => { n.swp64 = { sys: "spine-sonic", port: "etp4" }; } },
        }));
        const f = finding(r, "C18", "gpu01:ens1f0np0");
        assert.deepEqual([f?.expected, f?.found], [{ neighbour: "leaf-nvue:swp1" }, { neighbour: "leaf-nvue:swp2" }], show(r));
        assert.deepEqual(finding(r, "C18", "leaf-nvue:swp64")?.expected, { neighbour: "spine-sonic:Ethernet8" }, show(r));
        // SONiC's advertised alias (etp32 for Ethernet248) is understood: the correct uplinks raise nothing
        assert.equal(r.findings.filter((x) => x.rule === "C18").length, 2, show(r));
    });
    it("an uplink that hears nobody", async () => {
        const r = await check(fabric({ lldp: { "spine-sonic": (n) => { delete n.Ethernet16; } } }));
        assert.deepEqual(finding(r, "C18", "spine-sonic:Ethernet16")?.found, { neighbour: "(none)" }, show(r));
    });
});

describe("fabric check: a device that cannot be read is unreadable, never passing", () => {
    it("down, hanging, another host key, garbage output: each named; the others are still checked", async () => {
        const dir = fabric();
        fs.writeFileSync(path.join(dir, "10.0.1.2", slug("nv config show -o json")), "Error: nvued is not running\n");
        const t0 = Date.now();
        const r = await check(dir, { STUB_DOWN: "10.0.1.3", STUB_HANG: "10.0.2.2", STUB_BADKEY: "10.0.0.12" }, 2);
        assert.ok(Date.now() - t0 < 10_000, "the timeout bounds the wait");
        const why = Object.fromEntries(r.unreadable.map((u) => [u.device, u.why]));
        assert.match(why["leaf-eos"] ?? "", /Connection refused/, show(r));
        assert.match(why["spine-nvue"] ?? "", /no answer within 2 s/, show(r));
        assert.match(why.gpu02 ?? "", /Host key verification failed/, show(r));
        assert.match(why["leaf-nvue"] ?? "", /could not be parsed as nvue/, show(r));
        assert.ok(r.read.switches.includes("leaf-sonic") && r.read.hosts.includes("gpu01"));
        assert.match(show(r), /^rdmakit fabric check: FAIL/);
    });
    it("each switch is reached with its pinned key only, in batch mode", async () => {
        const dir = fabric();
        await check(dir);
        const seen = fs.readFileSync(path.join(dir, "known_hosts.seen"), "utf8");
        for (const s of PLAN.switches) assert.ok(seen.includes(`${s.managementAddress} ${s.hostKey.split(" ").slice(0, 2).join(" ")}`), s.name);
        const log = fs.readFileSync(path.join(dir, "log"), "utf8");
        assert.ok(log.split("\n").filter(Boolean).every((l) => l.includes("BatchMode=yes") && l.includes("StrictHostKeyChecking=yes")));
    });
});

describe("fabric check: parsers on the published output shapes", () => {
    it("mlnx_qos (DOC-2792), lldpctl json0 (lldpd's test), EOS lldp json (sonic-mgmt)", () => {
        const st = parseHostState(`@@rdmakit-host-state 1\n@@rail mlx5_0 eth2\n@@mlnx_qos\n${fixture("mlnx_qos-doc2792.txt")}@@end\n`);
        assert.deepEqual([st.rails[0].trust, st.rails[0].pfcEnabled, st.rails[0].cableLenM, st.rails[0].dcbxMode, st.rails[0].dscp2prio?.[26]], ["dscp", [0, 2, 6, 7], 10, "OS controlled", 3]);
        assert.deepEqual(parseLldp("host", fixture("lldpctl-json0-neighbors.json")), [{ local: "eth0", sysName: "ns-2.example.com", mgmtIps: ["fe80::200:ff:fe00:2"], portId: "00:00:00:00:00:02", portDescr: "eth1" }]);
        assert.deepEqual(parseLldp("eos", fixture("eos-lldp-neighbors.json")).map((n) => [n.local, n.sysName, n.portId]), [["Ethernet4", "vlab-03", "fortyGigE0/12"], ["Ethernet7", "ARISTA02T1", "fortyGigE0/0"]]);
        assert.throws(() => parseHostState("Permission denied\n"), /not the kit's host state/);
    });
    it("what the plan itself breaks is reported as the plan's, not as any device's drift", () => {
        const bad = structuredClone(PLAN);
        bad.hosts[0].vars.roce_host_mtu = 1500;
        const r = fabricDrift(bad, [], []);
        assert.ok(r.planViolations.some((v) => /\[C9\] gpu01/.test(v)), r.planViolations.join("\n"));
        assert.deepEqual(r.findings, []);
        assert.match(formatDriftReport(r), /^rdmakit fabric check: FAIL[^]*\nPLAN \[C9\]/);
    });
    it("the running view keeps only the plan's ports (factory QoS elsewhere is not the kit's)", () => {
        const sw = PLAN.switches.find((s) => s.name === "leaf-sonic")!;
        const v = runningSwitchView(sw, JSON.stringify(FACTORY_CONFIG_DB));
        assert.deepEqual(v.ports.map((p) => p.port).sort(), sw.ports.map((p) => p.name).sort());
    });
});

describe("rdmakit fabric check (the command)", () => {
    it("exits 1 with the drift report on stderr (the pulumi up script), 0 when the fabric is as planned (--config)", () => {
        const stack = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-drift-cli-")), "Pulumi.lab.yaml");
        fs.writeFileSync(stack, toYaml({ config: { "rdmakit:cluster": { name: "lab", fabric: "roce", ssh: { allowedCidrs: ["10.0.0.0/8"] }, roce: input() } } }));
        const cli = (dir: string) => spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin", "rdmakit.ts"), "fabric", "check", "--config", stack, "--timeout", "30"], {
            encoding: "utf8", cwd: ROOT, timeout: 60_000,
            env: { ...process.env, PATH: `${STUBS}:${process.env.PATH}`, STUB_DIR: dir, STUB_LOG: path.join(dir, "log") },
        });
        // the drifted case through the script `pulumi up` runs after its pushes (cluster.ts), spec on stdin
        const kept = keepInput(path.dirname(stack), "roce-spec", "json", JSON.stringify(roceSpecSchema.parse(input())), true);
        const chk = fabricCheckCommand({ file: path.relative(ROOT, kept.file), digest: kept.digest }, [], ".");
        const dir = fabric({ sonic: { "leaf-sonic": (db) => { db.PORT_QOS_MAP.Ethernet8.pfc_enable = "3,4"; } } });
        const bad = spawnSync("bash", ["-c", chk.create], {
            encoding: "utf8", cwd: path.join(ROOT, chk.dir), timeout: 60_000,
            env: { ...process.env, PATH: `${STUBS}:${process.env.PATH}`, STUB_DIR: dir, STUB_LOG: path.join(dir, "log") },
        });
        assert.equal(bad.status, 1, bad.stderr + bad.stdout);
        assert.match(bad.stderr, /read 5 switch\(es\), 0 host\(s\)/, "--switches-only reads no host");
        assert.match(bad.stderr, /DRIFT leaf-sonic:Ethernet8 \[C3\]/);
        assert.match(bad.stderr, /expected \{"pfcPriorities":\[3\]\}/);
        const good = cli(fabric());
        assert.equal(good.status, 0, good.stderr + good.stdout);
        assert.match(good.stdout, /PASS: read 5 switch\(es\), 2 host\(s\)/);
        // a spec file that is not the one the program wrote (its digest) is refused before any switch is read
        fs.appendFileSync(kept.file, " ");
        const changed = spawnSync("bash", ["-c", chk.create], { encoding: "utf8", cwd: path.join(ROOT, chk.dir), timeout: 60_000, env: { ...process.env, PATH: `${STUBS}:${process.env.PATH}`, STUB_DIR: dir, STUB_LOG: path.join(dir, "log2") } });
        assert.equal(changed.status, 2, changed.stderr);
        assert.match(changed.stderr, /--spec-file: .*roce-spec-.*: sha256 .*, the plan expects .*; the file changed since the program wrote it/);
        assert.ok(!fs.existsSync(path.join(dir, "log2")), "no switch was read");
    });
});

// EOS configurations as operators write them, not as the kit renders them. Constructed here from the EOS forms the
// reader documents (consistency.ts readEos): the PFC and queue statements on the interface itself instead of a qos
// profile, the older `priority-flow-control mode on`, and what `show running-config all` adds (the defaults).
describe("EOS running configurations in other people's forms", () => {
    const sw = PLAN.switches.find((s) => s.os === "eos")!;
    const port = sw.ports[0].name;
    const dscp = Array.from({ length: 64 }, (_, d) => d).filter((d) => d !== 26 && d !== 48);
    const head = `! Command: show running-config all\n${dscp.map((d) => `qos map dscp ${d} to traffic-class 0`).join("\n")}\nqos map dscp 26 to traffic-class 3\nqos map dscp 48 to traffic-class 6\nqos map traffic-class 0 to tx-queue 0\nqos map traffic-class 3 to tx-queue 3\nqos map traffic-class 6 to tx-queue 6\n!\n`;
    const iface = (pfc: string) => `interface ${port}\n   mtu 9216\n   flowcontrol send off\n   flowcontrol receive off\n   qos trust dscp\n${pfc}   uc-tx-queue 3\n      bandwidth percent 50\n      random-detect ecn minimum-threshold 150 kbytes maximum-threshold 1500 kbytes max-mark-probability 100\n   uc-tx-queue 6\n      priority strict\n!\n`;
    it("reads PFC, trust, ECN and strict queues written on the interface (no qos profile)", () => {
        const v = runningSwitchView(sw, head + iface("   priority-flow-control on\n   priority-flow-control priority 3 no-drop\n   priority-flow-control pause watchdog\n"));
        const p = v.ports.find((x) => x.port === port)!;
        assert.deepEqual([p.pfcPriorities, p.trustDscp, p.ecnQueues, p.strictQueues, p.linkPause, p.mtu, p.dscpToTc[26]], [[3], true, [3], [6], false, 9216, 3]);
        assert.equal(p.ecnMinBytes[3], 150 * 1024);
        assert.equal(v.mode, "lossless");
    });
    it("reads the older `priority-flow-control mode on`, and `priority 3 drop` as no PFC on 3", () => {
        const on = runningSwitchView(sw, head + iface("   priority-flow-control mode on\n   priority-flow-control priority 3 no-drop\n")).ports.find((x) => x.port === port)!;
        assert.deepEqual(on.pfcPriorities, [3]);
        const drop = runningSwitchView(sw, head + iface("   priority-flow-control on\n   priority-flow-control priority 3 drop\n")).ports.find((x) => x.port === port)!;
        assert.deepEqual(drop.pfcPriorities, []);
    });
    it("refuses a PFC or flowcontrol line it cannot read, so the switch is unreadable rather than read wrong", () => {
        assert.throws(() => runningSwitchView(sw, head + iface("   priority-flow-control priority 3 lossless\n")), /cannot read the EOS PFC line 'priority-flow-control priority 3 lossless'/);
        assert.throws(() => runningSwitchView(sw, head + iface("").replace("flowcontrol send off", "flowcontrol send auto")), /cannot read the EOS line 'flowcontrol send auto'/);
        const r = fabricDrift(PLAN, [{ switch: sw.name, config: head + iface("   priority-flow-control priority 3 lossless\n") }], []);
        assert.match(r.unreadable.map((u) => u.why).join("\n"), /could not be parsed as eos output: cannot read the EOS PFC line/);
    });
});
