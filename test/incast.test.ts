// The RoCE incast proof (components/validate/incast.ts, incast-switch.ts, incast-files.ts): the parsers on published
// outputs (test/fixtures/incast/README.md), the sender choice on the bench's rail fabric, the grade on counter pairs,
// the report through `nccl-report --incast`, and the variables validate.yml gets from the RoCE example's plan.
//
// The before/after counter values below are test inputs, not measurements: no one publishes both snapshots of one
// incast. They use the counter names the kernel's mlx5 driver prints (see incast.ts) in the shape the kit's own
// snapshot command prints them.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import {
    formatIncast, gradeIncast, MAX_COUNTERS, parseEthtoolStats, parsePerftestBw, parseSnapshot, planIncast, receiverCommand, senderCommand,
    snapshotCommand, type IncastHost, type IncastPlan, type IncastRun, type Snapshot,
} from "../components/validate/incast";
import { parseSonicPfcCounters, sonicPauseDelta, switchCounterCommands } from "../components/validate/incast-switch";
import { runNcclReport } from "../components/validate/cli";
import { validationVars } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";

const fixture = (name: string) => fs.readFileSync(path.join(__dirname, "fixtures", "incast", name), "utf8");
const PERFTEST = fixture("perftest-write-bw-gbits.txt");

test("parsers read the published outputs: ib_write_bw's result row, ethtool -S, SONiC's PFC table", () => {
    assert.deepEqual(parsePerftestBw(PERFTEST), { sizeBytes: 8, iterations: 224958464, avgGbps: 0.48 });
    assert.equal(parsePerftestBw(PERFTEST.split("\n").slice(0, 16).join("\n")), undefined, "a run cut before its result has none");
    const stats = parseEthtoolStats(fixture("ethtool-mlx5-cx4-head.txt"));
    assert.equal(Object.keys(stats).length, 23);
    assert.equal(stats.rx_packets, 845320277);
    assert.equal(stats.tx_tso_bytes, 1822751919330);
    assert.ok(!("NIC statistics" in stats));
    const pfc = parseSonicPfcCounters(fixture("sonic-show-pfc-counters.txt"));
    assert.deepEqual(Object.keys(pfc), ["Ethernet0", "Ethernet4", "Ethernet8"]);
    assert.deepEqual(pfc.Ethernet0.rx, [1200, 201, 202, 203, 204, 205, 206, 207]);
    assert.deepEqual(pfc.Ethernet8.tx, [1810, 811, 812, 813, 814, 815, 816, 817]);
    assert.equal(sonicPauseDelta(pfc, pfc, 3), 0);
    const later = { ...pfc, Ethernet4: { rx: [...pfc.Ethernet4.rx], tx: pfc.Ethernet4.tx.map((v, i) => (i === 3 ? v + 50 : v)) } };
    assert.equal(sonicPauseDelta(pfc, later, 3), 50);
    assert.deepEqual(switchCounterCommands("nvue", ["swp1"]), ["nv show interface swp1 qos roce counters -o json"]);
    assert.ok(switchCounterCommands("sonic", []).includes("show pfc counters"));
    assert.ok(switchCounterCommands("eos", []).every((c) => c.startsWith("show ")), "read-only show commands");
});

test("the snapshot command's output reads back as the two counter sets", () => {
    const host: IncastHost = { name: "gpu01", address: "10.0.0.1", device: "mlx5_0", netdev: "ens1f0np0" };
    const cmd = snapshotCommand(host);
    assert.match(cmd, /ethtool -S ens1f0np0/);
    assert.match(cmd, /\/sys\/class\/infiniband\/mlx5_0\/ports\/1\/hw_counters\/\*/);
    assert.match(snapshotCommand({ ...host, netdev: undefined }), /ls \/sys\/class\/infiniband\/mlx5_0\/device\/net\//);
    const s = parseSnapshot(`### ethtool ens1f0np0\n${fixture("ethtool-mlx5-cx4-head.txt")}### hw_counters mlx5_0\nnp_cnp_sent 12\nout_of_sequence 0\n`);
    assert.equal(s.ethtool.rx_packets, 845320277);
    assert.deepEqual(s.hw, { np_cnp_sent: 12, out_of_sequence: 0 });
});

/** Hosts on the bench's rail fabric layout: 64 hosts a leaf, rail 0 of host i on leaf-r0-<i/64>. */
const railHosts = (n: number): IncastHost[] => Array.from({ length: n }, (_, i) => ({
    name: `gpu${i}`, address: `10.0.${i >> 8}.${i & 255}`, device: "mlx5_0", leaf: `leaf-r0-${Math.floor(i / 64)}`,
}));
const base = { priority: 3, trafficClass: 106, gidIndex: 3, mode: "lossless" as const };

test("senders: one per other leaf first, at most eight, each on its own server port; the plan says when it cannot cross leaves", () => {
    const plan = planIncast({ ...base, hosts: railHosts(640) })!;
    assert.equal(plan.receiver.name, "gpu0");
    assert.equal(plan.senders.length, 8);
    assert.ok(plan.crossesLeaves);
    assert.equal(new Set(plan.senders.map((s) => s.leaf)).size, 8, "eight different leaves");
    assert.ok(plan.senders.every((s) => s.leaf !== "leaf-r0-0"));
    assert.deepEqual(plan.senders.map((s) => s.port), [18515, 18516, 18517, 18518, 18519, 18520, 18521, 18522]);
    // two leaves: the second leaf's hosts fill the senders
    const two = planIncast({ ...base, hosts: railHosts(80) })!;
    assert.ok(two.crossesLeaves);
    assert.ok(two.senders.every((s) => s.leaf === "leaf-r0-1"));
    // one leaf, or leaves unknown: the incast stays possible and says so
    const one = planIncast({ ...base, hosts: railHosts(5) })!;
    assert.equal(one.crossesLeaves, false);
    assert.match(one.note, /stays on its leaf/);
    const unknown = planIncast({ ...base, hosts: railHosts(5).map(({ leaf: _leaf, ...h }) => h) })!;
    assert.match(unknown.note, /railPorts/);
    assert.equal(planIncast({ ...base, hosts: railHosts(2) }), undefined, "one sender cannot congest a port of its own speed");
    // both ends of each pair agree on device, GID, traffic class and port
    const srv = receiverCommand(plan, "/tmp/x");
    for (const s of plan.senders) {
        assert.match(srv, new RegExp(`ib_write_bw -d mlx5_0 -x 3 --tclass=106 .* -p ${s.port} >/tmp/x/server-${s.port}.log 2>&1 &`));
        assert.equal(senderCommand(plan, s), `ib_write_bw -d mlx5_0 -x 3 --tclass=106 -s 65536 -q 4 -D 20 --report_gbits -F -p ${s.port} 10.0.0.0`);
    }
    assert.match(srv, /\nwait$/);
});

/** A snapshot in the kit's shape with the given counters. */
const snap = (ethtool: Record<string, number>, hw: Record<string, number>): Snapshot => ({ ethtool, hw });
const quiet = (p = 3) => snap({ [`rx_prio${p}_pause`]: 10, [`tx_prio${p}_pause`]: 10, rx_discards_phy: 5 }, { np_cnp_sent: 0, rp_cnp_handled: 0, out_of_sequence: 2, packet_seq_err: 1, implied_nak_seq_err: 0, local_ack_timeout_err: 4 });
/** PFC acted: the receiver paused its leaf, the leaf paused the senders. */
const paused = (r: string) => (h: string, s: Snapshot) => { s.ethtool[h === r ? "tx_prio3_pause" : "rx_prio3_pause"] += 400; return s; };
function phase(plan: IncastPlan, after: (host: string, s: Snapshot) => Snapshot, log = PERFTEST) {
    const names = [plan.receiver.name, ...plan.senders.map((s) => s.name)];
    return {
        before: Object.fromEntries(names.map((n) => [n, quiet()])),
        after: Object.fromEntries(names.map((n) => [n, after(n, structuredClone(quiet()))])),
        clients: Object.fromEntries(plan.senders.map((s) => [s.name, log])),
    };
}
/** A run; in lossless mode with the reaction-point-off phase (by default: PFC paused, nothing dropped, every rp file 0). */
function run(plan: IncastPlan, after: (host: string, s: Snapshot) => Snapshot, rpOff: ((host: string, s: Snapshot) => Snapshot) | null = paused(plan.receiver.name)): IncastRun {
    return {
        plan, ...phase(plan, after),
        ...(plan.rpOffPhase && rpOff ? { rpOff: { ...phase(plan, rpOff), rpRead: Object.fromEntries(plan.senders.map((s) => [s.name, "0\n"])) } } : {}),
    };
}

test("the grade: pass when PFC or ECN acted and nothing dropped or retransmitted; fail, naming host and counter, otherwise", () => {
    const plan = planIncast({ ...base, hosts: railHosts(200) })!;
    const r = plan.receiver.name;
    // the receiver's leaf port congests: the receiver pauses the switch, the switch pauses the senders
    const pfc = gradeIncast(run(plan, paused(r)));
    assert.equal(pfc.pass, true, pfc.failures.join("; "));
    assert.deepEqual([pfc.pfcActed, pfc.ecnActed], [true, false]);
    assert.equal(pfc.totalGbps, 0.48 * plan.senders.length);
    // ECN alone: enough in lossy mode, and with DCQCN on in lossless mode when the reaction-point-off phase shows PFC
    const ecnOnly = (h: string, s: Snapshot) => { s.hw[h === r ? "np_cnp_sent" : "rp_cnp_handled"] += 9000; return s; };
    const lossyPlan = { ...plan, mode: "lossy" as const, rpOffPhase: false };
    const ecn = gradeIncast(run(lossyPlan, ecnOnly));
    assert.deepEqual([ecn.pass, ecn.ecnActed, ecn.pfcActed, ecn.rpOff], [true, true, false, undefined]);
    const ecnThenPfc = gradeIncast(run(plan, ecnOnly));
    assert.equal(ecnThenPfc.pass, true, ecnThenPfc.failures.join("; "));
    assert.deepEqual([ecnThenPfc.pfcActed, ecnThenPfc.rpOff?.pfcActed], [false, true]);
    // lossless, only ECN acted, and PFC never paused even with the senders' reaction point off: PFC is broken
    const ecnLossless = gradeIncast(run(plan, ecnOnly, ecnOnly));
    assert.equal(ecnLossless.pass, false);
    assert.deepEqual(ecnLossless.failures, ["reaction point off: lossless mode, but PFC never paused under the 8:1 incast without DCQCN (no tx/rx_prio3_pause): PFC does not act on priority 3"]);
    // a NIC with PFC off on the priority prints no pause counters for it: the grade says so
    const pfcOffNic = run(plan, ecnOnly, ecnOnly);
    for (const side of ["before", "after"] as const) for (const k of ["rx_prio3_pause", "tx_prio3_pause"]) delete pfcOffNic.rpOff![side][r].ethtool[k];
    assert.match(gradeIncast(pfcOffNic).failures.join("\n"), /PFC does not act on priority 3; ethtool -S of gpu0 has no prio3 pause counters, which the mlx5 driver prints only while PFC is on for that priority$/);
    // lossless without the reaction-point-off phase proves nothing about PFC
    const noPhase = gradeIncast(run(plan, paused(r), null));
    assert.equal(noPhase.pass, false);
    assert.match(noPhase.failures.join("\n"), /^reaction point off: lossless mode, but the incast with the senders' reaction point off did not run/);
    // the phase must have run with the reaction point off (the file read back 0) and lost nothing
    const notOff = run(plan, paused(r), (h, s) => { paused(r)(h, s); if (h === plan.senders[3].name) s.ethtool.rx_discards_phy += 3; return s; });
    notOff.rpOff!.rpRead[plan.senders[0].name] = "1\n";
    delete notOff.rpOff!.rpRead[plan.senders[1].name];
    assert.deepEqual(gradeIncast(notOff).failures, [
        `reaction point off: ${plan.senders[0].name}: roce_rp/enable/3 read "1" after writing 0 (0 expected; the file comes with DOCA/MLNX OFED), so DCQCN may have slowed it`,
        `reaction point off: ${plan.senders[1].name}: roce_rp/enable/3 read nothing after writing 0 (0 expected; the file comes with DOCA/MLNX OFED), so DCQCN may have slowed it`,
        `reaction point off: ${plan.senders[3].name} (sender): rx_discards_phy grew by 3 under incast (packets dropped)`,
    ]);
    // a requester that timed out waiting for an ACK retransmitted: loss, even with PFC acting
    const timeout = gradeIncast(run(plan, (h, s) => {
        s.ethtool[h === r ? "tx_prio3_pause" : "rx_prio3_pause"] += 400;
        if (h === plan.senders[0].name) { s.hw.local_ack_timeout_err += 2; s.hw.implied_nak_seq_err += 1; }
        return s;
    }));
    assert.deepEqual(timeout.failures, [
        `${plan.senders[0].name} (sender): implied_nak_seq_err grew by 1 under incast (lost packets were retransmitted)`,
        `${plan.senders[0].name} (sender): local_ack_timeout_err grew by 2 under incast (lost packets were retransmitted)`,
    ]);
    // neither acted
    const none = gradeIncast(run(plan, (_h, s) => s));
    assert.equal(none.pass, false);
    assert.match(none.failures.join("\n"), /neither ECN nor PFC acted under the 8:1 incast/);
    // a drop on a sender and a retransmit on the receiver, with PFC acting
    const lossy = gradeIncast(run(plan, (h, s) => {
        s.ethtool[h === r ? "tx_prio3_pause" : "rx_prio3_pause"] += 400;
        if (h === plan.senders[1].name) s.ethtool.rx_discards_phy += 7;
        if (h === r) s.hw.out_of_sequence += 3;
        return s;
    }));
    assert.equal(lossy.pass, false);
    assert.deepEqual(lossy.failures, [
        `${r} (receiver): out_of_sequence grew by 3 under incast (lost packets were retransmitted)`,
        `${plan.senders[1].name} (sender): rx_discards_phy grew by 7 under incast (packets dropped)`,
    ]);
    // a sender without a result and a host whose NIC lacks the counters
    const broken = run(plan, (h, s) => { s.ethtool.rx_prio3_pause += 1; return s; });
    delete broken.clients[plan.senders[0].name];
    const noDiscards = parseEthtoolStats(fixture("ethtool-mlx5-cx4-head.txt"));
    broken.before[plan.senders[2].name] = snap(noDiscards, {});
    broken.after[plan.senders[2].name] = snap(noDiscards, {});
    const g = gradeIncast(broken);
    assert.equal(g.totalGbps, null);
    for (const want of [`${plan.senders[0].name} (sender): ib_write_bw printed no result`,
        `${plan.senders[2].name}: ethtool -S has no rx_discards_phy, so drops cannot be ruled out`,
        `${plan.senders[2].name}: hw_counters has no out_of_sequence, so retransmits cannot be ruled out`]) {
        assert.ok(g.failures.includes(want), `${want}\nnot in\n${g.failures.join("\n")}`);
    }
    // the report shows every counter per host
    const text = formatIncast(plan, lossy);
    assert.match(text, /^incast 8:1 to gpu0 \(mlx5_0, priority 3, tclass 106, lossless\): FAIL/);
    assert.match(text, new RegExp(`${plan.senders[1].name}\\s+sender\\s+rx_discards_phy\\s+5\\s+12\\s+7`));
    assert.match(text, /gpu0\s+receiver\s+tx_prio3_pause\s+10\s+410\s+400/);
});

test("the throughput floor: half the rails' line rate, in each phase; unknown without a line rate", () => {
    const hosts = railHosts(200);
    assert.equal(planIncast({ ...base, hosts })!.floorGbps, null, "no line rate, no floor");
    const plan = planIncast({ ...base, hosts, lineRateGbps: 400 })!;
    assert.equal(plan.floorGbps, 200);
    // the published run's 0.48 Gb/s per sender, 3.84 in all: far under the floor, in both phases
    const slow = gradeIncast(run(plan, paused(plan.receiver.name)));
    assert.deepEqual(slow.failures, [
        "the senders' total 3.84 Gb/s is under the floor of 200 Gb/s (50 % of the rails' line rate): the fabric stalls the incast instead of carrying it",
        "reaction point off: the senders' total 3.84 Gb/s is under the floor of 200 Gb/s (50 % of the rails' line rate): the fabric stalls the incast instead of carrying it",
    ]);
    // the same output with its BW average set to 48.00 Gb/s (8 senders: 384 Gb/s) — edited input, not a capture
    const fast = PERFTEST.replace(/^( 8\s+224958464\s+0\.00\s+)0\.48/m, "$148.00");
    assert.notEqual(fast, PERFTEST);
    const ok = { ...run(plan, paused(plan.receiver.name)) };
    ok.clients = Object.fromEntries(plan.senders.map((s) => [s.name, fast]));
    ok.rpOff!.clients = { ...ok.clients };
    const g = gradeIncast(ok);
    assert.equal(g.pass, true, g.failures.join("; "));
    assert.deepEqual([g.totalGbps, g.rpOff?.totalGbps], [384, 384]);
    assert.match(formatIncast(plan, g), /senders' total 384 Gb\/s; floor 200 Gb\/s\n {2}senders' reaction point off: PFC acted; senders' total 384 Gb\/s/);
});

test("nccl-report --incast grades the fetched folder with the rest of the run and fails the run when the incast fails", () => {
    const plan = planIncast({ ...base, hosts: railHosts(200) })!;
    const write = (r: IncastRun) => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-incast-"));
        fs.writeFileSync(path.join(dir, "plan.json"), JSON.stringify(r.plan));
        const text = (s: Snapshot) => `### ethtool ens1f0np0\n${Object.entries(s.ethtool).map(([k, v]) => `     ${k}: ${v}`).join("\n")}\n### hw_counters mlx5_0\n${Object.entries(s.hw).map(([k, v]) => `${k} ${v}`).join("\n")}\n`;
        for (const [prefix, ph] of [["", r], ["rpoff-", r.rpOff]] as const) {
            if (!ph) continue;
            for (const [h, s] of Object.entries(ph.before)) fs.writeFileSync(path.join(dir, `${prefix}${h}-before.txt`), text(s));
            for (const [h, s] of Object.entries(ph.after)) fs.writeFileSync(path.join(dir, `${prefix}${h}-after.txt`), text(s));
            for (const [h, log] of Object.entries(ph.clients)) fs.writeFileSync(path.join(dir, `${prefix}${h}-client.log`), log);
        }
        for (const [h, v] of Object.entries(r.rpOff?.rpRead ?? {})) fs.writeFileSync(path.join(dir, `rpoff-${h}-rp.txt`), v);
        return dir;
    };
    const preflight = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-incast-pre-"));
    fs.writeFileSync(path.join(preflight, "gpu0.json"), JSON.stringify({ host: "gpu0", checks: [{ check: "gpu-count", expected: "8 GPUs", seen: "8 GPUs", ok: true }] }));
    const good = runNcclReport([], { preflight, incast: write(run(plan, (h, s) => { s.ethtool[h === "gpu0" ? "tx_prio3_pause" : "rx_prio3_pause"] += 5; return s; })) });
    assert.equal(good.code, 0, good.stdout + good.stderr);
    assert.match(good.stdout, /incast 8:1 to gpu0 .*: PASS/);
    const bad = runNcclReport([], { preflight, incast: write(run(plan, (_h, s) => s)), resultLine: true });
    assert.equal(bad.code, 1);
    assert.match(bad.stdout, /neither ECN nor PFC acted/);
    assert.match(bad.stdout, /rdmakit-result: \{"pass":false/);
    // lossless: ECN acted, and with the senders' reaction point off PFC still never paused
    const ecnOnly = (h: string, s: Snapshot) => { s.hw[h === "gpu0" ? "np_cnp_sent" : "rp_cnp_handled"] += 50; return s; };
    const noPfc = runNcclReport([], { preflight, incast: write(run(plan, ecnOnly, ecnOnly)) });
    assert.equal(noPfc.code, 1, noPfc.stdout);
    assert.match(noPfc.stdout, /- reaction point off: lossless mode, but PFC never paused under the 8:1 incast without DCQCN/);
    assert.match(noPfc.stdout, /reaction point off:\n {2}host .*\n {2}gpu0\s+receiver\s+rx_prio3_pause/);
    const missing = runNcclReport([], { preflight, incast: preflight });
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /plan\.json: cannot read the incast plan \(ENOENT\)/);
});

test("validate.yml gets the incast from the RoCE plan (rail 0, RoCE priority, the hosts' ToS and GID); clouds get none", () => {
    const load = (f: string) => planCluster(parseClusterSpec(parse(fs.readFileSync(path.join(__dirname, "..", "examples", f), "utf8")).config["rdmakit:cluster"]));
    // the example without its cabling (hosts[].railPorts): the incast the plan makes when it does not know the leaves
    const raw = parse(fs.readFileSync(path.join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    for (const h of raw.roce.hosts) delete h.railPorts;
    const roce = planCluster(parseClusterSpec(raw));
    const args = validationArgsFromPlan(roce, "dev");
    const vars = validationVars(args, roce.roce!.qos.hosts.map((h) => h.address), "out/dev/nccl");
    const inc = vars.nccl_validate_incast!;
    assert.deepEqual(inc.hosts, ["gpu01", "gpu02", "gpu03", "gpu04"]);
    assert.equal(inc.plan.priority, roce.roce!.qos.roce.priority);
    assert.equal(inc.plan.trafficClass, roce.roce!.qos.tos);
    assert.equal(inc.sender_cmds.gpu02, "ib_write_bw -d mlx5_0 -x 3 --tclass=106 -s 65536 -q 4 -D 20 --report_gbits -F -p 18515 10.20.0.11");
    assert.match(inc.snapshot_cmds.gpu03, /ethtool -S ens1f0np0/);
    // lossless: the senders' reaction point off for the second phase, the floor from the rails' line rate
    assert.equal(inc.plan.rpOffPhase, roce.roce!.qos.mode === "lossless");
    assert.equal(inc.plan.floorGbps, roce.validation.preflight.portRateGbps! / 2);
    const p = roce.roce!.qos.roce.priority;
    assert.deepEqual(inc.rp_cmds?.gpu02, {
        read: `cat "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"`,
        off: `echo 0 > "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"; cat "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"`,
        restore_on: `echo 1 > "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"; cat "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"`,
        restore_off: `echo 0 > "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"; cat "/sys/class/net/ens1f0np0/ecn/roce_rp/enable/${p}"`,
    });
    assert.equal(inc.rp_cmds?.gpu01, undefined, "the receiver keeps its reaction point");
    // the example does not say which leaf port each rail uses, and the plan says what that means for the proof
    assert.match(inc.plan.note, /railPorts/);
    const aws = load("aws-p5.yaml");
    const awsVars = validationVars(validationArgsFromPlan(aws, "dev"), aws.validation.hostNames.map((_, i) => `10.0.0.${i + 1}`), "out/dev/nccl");
    assert.equal(awsVars.nccl_validate_incast, undefined);
});

test("with the cabling in the spec (hosts[].railPorts), the plan's incast sends from the other leaf into the receiver", () => {
    const raw = parse(fs.readFileSync(path.join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    // gpu01 and gpu02 on leaf-sonic, gpu03 and gpu04 on leaf-nvue: each rail on its own port, in rail order
    raw.roce.hosts.forEach((h: { railPorts?: string[] }, i: number) => {
        h.railPorts = i < 2
            ? Array.from({ length: 8 }, (_, r) => `leaf-sonic:Ethernet${(i * 8 + r) * 8}`)
            : Array.from({ length: 8 }, (_, r) => `leaf-nvue:swp${(i - 2) * 8 + r + 1}`);
    });
    const plan = planCluster(parseClusterSpec(raw));
    const inc = validationVars(validationArgsFromPlan(plan, "dev"), plan.roce!.qos.hosts.map((h) => h.address), "out/dev/nccl").nccl_validate_incast!;
    // the receiver is gpu01 on leaf-sonic; the senders that cross leaves come first
    assert.deepEqual(Object.keys(inc.sender_cmds).slice(0, 2).sort(), ["gpu03", "gpu04"]);
    assert.doesNotMatch(inc.plan.note, /railPorts/);
});

test("rail-optimized cabling (rail r of every host on leaf r): senders use a rail on another leaf, so the incast crosses the spine; each end its own GID", () => {
    const raw = parse(fs.readFileSync(path.join(__dirname, "..", "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    // the example's layout: rails 0-3 of every host on leaf-sonic, rails 4-7 on leaf-nvue
    raw.roce.hosts.forEach((h: { railPorts?: string[]; gidIndex?: number }, i: number) => {
        h.railPorts = Array.from({ length: 8 }, (_, r) => (r < 4 ? `leaf-sonic:Ethernet${(i * 4 + r) * 8}` : `leaf-nvue:swp${i * 4 + r - 3}`));
        if (i === 2) h.gidIndex = 5;
    });
    const plan = planCluster(parseClusterSpec(raw));
    const inc = validationVars(validationArgsFromPlan(plan, "dev"), plan.roce!.qos.hosts.map((h) => h.address), "out/dev/nccl").nccl_validate_incast!;
    assert.equal(inc.plan.receiver.device, "mlx5_0");
    assert.ok(inc.plan.crossesLeaves, inc.plan.note);
    assert.deepEqual(inc.plan.senders.map((s) => [s.name, s.device, s.leaf]), [["gpu02", "mlx5_4", "leaf-nvue"], ["gpu03", "mlx5_4", "leaf-nvue"], ["gpu04", "mlx5_4", "leaf-nvue"]]);
    assert.match(inc.sender_cmds.gpu03, /^ib_write_bw -d mlx5_4 -x 5 /);
    assert.match(inc.sender_cmds.gpu02, /^ib_write_bw -d mlx5_4 -x 3 /);
    assert.match(inc.snapshot_cmds.gpu03, /ethtool -S ens5f0np0/);
});

// Found by the w11 audit: a node's counter snapshot is untrusted. A value longer than a u64 read as Infinity, so the
// table printed Infinity and NaN and a drop counter of "Infinity" before and after graded as no drop; a snapshot of
// 1.5 million counter lines kept every one of them until the grade (2.3 s and hundreds of MB per snapshot).
test("incast snapshots from a hostile node: values past a u64 are not counters, at most MAX_COUNTERS are read, the grade fails closed", () => {
    const plan = planIncast({ ...base, hosts: railHosts(200) })!;
    const huge = "9".repeat(400);
    const st = parseSnapshot(`### ethtool ens1f0np0\n     rx_discards_phy: ${huge}\n     rx_prio3_pause: 18446744073709551615\n### hw_counters mlx5_0\nout_of_sequence ${huge}\n`);
    assert.deepEqual(st, { ethtool: { rx_prio3_pause: Number("18446744073709551615") }, hw: {} });
    const junk = Array.from({ length: MAX_COUNTERS + 10 }, (_, i) => `     junk${i}: ${i}`).join("\n");
    const t0 = process.cpuUsage();
    const many = parseSnapshot(`### ethtool ens1f0np0\n${junk}\n     rx_discards_phy: 5\n### hw_counters mlx5_0\n`);
    const c = process.cpuUsage(t0);
    assert.ok((c.user + c.system) / 1000 < 2000, `${(c.user + c.system) / 1000} ms`);
    assert.equal(Object.keys(many.ethtool).length, MAX_COUNTERS);
    assert.equal(many.ethtool.rx_discards_phy, undefined, "read past the bound");
    assert.equal(Object.keys(parseEthtoolStats(junk)).length, MAX_COUNTERS);
    // the receiver's drop counter unreadable before and after: no drop ruled out, never a pass, nothing non-finite shown
    const hostile = run(plan, paused(plan.receiver.name));
    const text = `### ethtool x\n     rx_discards_phy: ${huge}\n### hw_counters m\n`;
    hostile.before[plan.receiver.name] = parseSnapshot(text);
    hostile.after[plan.receiver.name] = parseSnapshot(text);
    const hg = gradeIncast(hostile);
    assert.equal(hg.pass, false);
    assert.ok(hg.failures.some((f) => f === `${plan.receiver.name}: ethtool -S has no rx_discards_phy, so drops cannot be ruled out`), hg.failures.join("\n"));
    assert.ok(!/NaN|Infinity/.test(formatIncast(plan, hg)), formatIncast(plan, hg));
});
