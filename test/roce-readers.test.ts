/*
 * The switch readers on forms real switches and published configurations use that the kit never renders: EOS
 * time-based ECN thresholds, SONiC's older `[TABLE|name]` references, and a host address that is a mistyped IPv4
 * address rather than a DNS name. Pure; well under a second.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { readEos, readSonic } from "../components/roce/consistency";
import { roceSpecSchema } from "../components/roce/spec";

// EOS: the qos profile lines of aristanetworks/avd's eos_cli_config_gen molecule "qos" (intended configuration of
// profile uc_mc_queues_test): a uc-tx-queue whose ECN thresholds are in milliseconds, one in kbytes, one in segments
// with `weight` instead of max-mark-probability.
const EOS_PROFILE = [
    "qos profile uc_mc_queues_test",
    "   uc-tx-queue 1",
    "      no priority",
    "      bandwidth percent 50",
    "      random-detect ecn minimum-threshold 3 milliseconds maximum-threshold 9 milliseconds max-mark-probability 90",
    "   uc-tx-queue 2",
    "      priority strict",
    "      bandwidth percent 10",
    "      random-detect ecn minimum-threshold 320 kbytes maximum-threshold 320 kbytes max-mark-probability 90",
    "   uc-tx-queue 4",
    "      bandwidth guaranteed percent 10",
    "      random-detect ecn minimum-threshold 320 segments maximum-threshold 320 segments weight 10",
    "   uc-tx-queue 5",
    "      random-detect ecn minimum-threshold 50 microseconds maximum-threshold 500 microseconds max-mark-probability 10",
    "!",
    "interface Ethernet1",
    "   service-profile uc_mc_queues_test",
    "!",
];

test("EOS: time-based ECN thresholds are read (the queue marks ECN), never refuse the file; only byte minimums are compared", () => {
    const view = readEos("leaf-eos", EOS_PROFILE.join("\n"));
    const port = view.ports.find((p) => p.port === "Ethernet1");
    assert.ok(port, JSON.stringify(view.ports.map((p) => p.port)));
    assert.deepEqual([...port.ecnQueues].sort(), [1, 2, 4, 5]);
    assert.deepEqual(port.strictQueues, [2]);
    // kbytes become bytes; milliseconds, microseconds and segments are not bytes without the port's rate or cell size
    assert.deepEqual(port.ecnMinBytes, { 2: 320 * 1024 });
    // a unit EOS does not have is still refused, so a switch is unreadable rather than read wrong
    assert.throws(() => readEos("x", EOS_PROFILE.join("\n").replace("3 milliseconds", "3 fortnights")), /cannot read the EOS ECN line/);
});

// SONiC: CONFIG_DB in the reference form that sonic-net/SONiC doc/Configuration.md shows ("Port QoS Map", "Queue") and
// that sonic-utilities scripts/db_migrator.py (version_3_0_2, migrate_qos_fieldval_reference_format) rewrites to bare
// names. Map and profile contents here are the kit's own lossless plan on priority 3, so the reading can be checked.
const LEGACY_DB = {
    DSCP_TO_TC_MAP: { AZURE: { ...Object.fromEntries(Array.from({ length: 64 }, (_, d) => [String(d), "0"])), 26: "3", 48: "6" } },
    TC_TO_QUEUE_MAP: { AZURE: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [String(i), String(i)])) },
    TC_TO_PRIORITY_GROUP_MAP: { AZURE: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [String(i), i === 3 ? "3" : "0"])) },
    MAP_PFC_PRIORITY_TO_QUEUE: { AZURE: Object.fromEntries(Array.from({ length: 8 }, (_, i) => [String(i), String(i)])) },
    WRED_PROFILE: { AZURE_LOSSLESS: { ecn: "ecn_all", green_min_threshold: "250000", green_max_threshold: "2097152", wred_green_enable: "true" } },
    SCHEDULER: { "scheduler.0": { type: "DWRR", weight: "14" }, "scheduler.1": { type: "STRICT" } },
    PORT_QOS_MAP: {
        Ethernet56: {
            tc_to_pg_map: "[TC_TO_PRIORITY_GROUP_MAP|AZURE]",
            tc_to_queue_map: "[TC_TO_QUEUE_MAP|AZURE]",
            pfc_enable: "3,4",
            pfc_to_queue_map: "[MAP_PFC_PRIORITY_TO_QUEUE|AZURE]",
            dscp_to_tc_map: "[DSCP_TO_TC_MAP|AZURE]",
        },
    },
    QUEUE: {
        "Ethernet56|3": { wred_profile: "[WRED_PROFILE|AZURE_LOSSLESS]", scheduler: "[SCHEDULER|scheduler.0]" },
        "Ethernet56|6": { scheduler: "[SCHEDULER|scheduler.1]" },
    },
    BUFFER_PG: { "Ethernet56|3-4": { profile: "[BUFFER_PROFILE|pg_lossless_400000_40m_profile]" } },
};

test("SONiC: the older [TABLE|name] references read as the names they point at", () => {
    const view = readSonic("leaf-sonic", JSON.parse(JSON.stringify(LEGACY_DB)));
    const p = view.ports.find((x) => x.port === "Ethernet56")!;
    assert.equal(p.dscpToTc[26], 3);
    assert.equal(p.dscpToTc[48], 6);
    assert.equal(p.trustDscp, true);
    assert.equal(p.tcToPg[3], 3);
    assert.equal(p.pfcToQueue[3], 3);
    assert.deepEqual(p.pfcPriorities, [3, 4]);
    assert.deepEqual(p.ecnQueues, [3]);
    assert.equal(p.ecnMinBytes[3], 250000);
    assert.deepEqual(p.strictQueues, [6]);
    assert.deepEqual(p.losslessPgs, [3, 4]);
    // the same rows with bare names read the same
    const bare = JSON.parse(JSON.stringify(LEGACY_DB).replace(/"\[[A-Z_]+\|([^\]|]+)\]"/g, '"$1"'));
    assert.deepEqual(readSonic("leaf-sonic", bare).ports, view.ports);
});

test("a host address whose last label is all digits is a mistyped IPv4 address, not a DNS name (RFC 3696 §2)", () => {
    const address = roceSpecSchema.shape.hosts.element.shape.address;
    for (const bad of ["192.0.2.300", "10.0.0.256", "1.2.3", "300", "gpu01.123"]) {
        assert.equal(address.safeParse(bad).success, false, bad);
    }
    for (const good of ["192.0.2.30", "gpu01", "gpu01.lab", "1a.example.com", "node-7.r2"]) {
        assert.equal(address.safeParse(good).success, true, good);
    }
});
