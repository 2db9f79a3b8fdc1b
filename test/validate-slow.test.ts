/**
 * Pair planner and slow-node finder. Inputs are real logs assigned to hosts: the EFA run of aws-do-eks stands for
 * a good pair (2.83 GB/s at 1 GiB), its socket-fallback twin for a pair through a bad node (2.00 GB/s).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { parseNcclLog } from "../components/validate/parse";
import { findSlowNodes, measure, planFollowUp, planPairRounds, type PairLog } from "../components/validate/slow";
import type { Expectation } from "../components/validate/types";

const FIX = path.resolve(__dirname, "fixtures/nccl");
const GOOD = parseNcclLog(fs.readFileSync(path.join(FIX, "aws-do-eks-karpenter-efa.log"), "utf8"), { name: "efa" });
const BAD = parseNcclLog(fs.readFileSync(path.join(FIX, "aws-do-eks-karpenter-socket.log"), "utf8"), { name: "socket" });
const GiB = 1024 ** 3;

function checkRounds(hosts: string[]): void {
    const rounds = planPairRounds(hosts);
    assert.ok(rounds.length <= 3, `${hosts.length} hosts: ${rounds.length} rounds`);
    const partners = new Map<string, Set<string>>(hosts.map((h) => [h, new Set()]));
    for (const round of rounds) {
        const used = round.flat();
        assert.equal(new Set(used).size, used.length, "pairs of a round are disjoint");
        for (const [a, b] of round) {
            assert.notEqual(a, b);
            partners.get(a)!.add(b);
            partners.get(b)!.add(a);
        }
    }
    for (const [h, p] of partners) assert.equal(p.size, hosts.length === 2 ? 1 : 2, `${h} has two different partners`);
}

test("pair rounds: i with i+N/2 first, every node with two partners, at most 3 rounds", () => {
    const hosts = (n: number) => Array.from({ length: n }, (_, i) => `n${i}`);
    assert.deepEqual(planPairRounds(hosts(1)), []);
    assert.deepEqual(planPairRounds(hosts(2)), [[["n0", "n1"]]]);
    assert.deepEqual(planPairRounds(hosts(6))[0], [["n0", "n3"], ["n1", "n4"], ["n2", "n5"]]);
    assert.deepEqual(planPairRounds(hosts(6))[1], [["n3", "n1"], ["n4", "n2"], ["n5", "n0"]]);
    assert.deepEqual(planPairRounds(hosts(3)), [[["n0", "n1"]], [["n1", "n2"]], [["n2", "n0"]]]);
    for (const n of [2, 3, 4, 5, 7, 8, 16, 33, 1000]) checkRounds(hosts(n));
});

test("follow-up: suspects against known-good nodes, avoiding pairs already run", () => {
    assert.deepEqual(planFollowUp(["s1", "s2", "s3"], ["g1", "g2"]), [[["s1", "g1"], ["s2", "g2"]], [["s3", "g1"]]]);
    assert.deepEqual(planFollowUp(["s1"], ["g1", "g2"], [["g1", "s1"]]), [[["s1", "g2"]]]);
    assert.deepEqual(planFollowUp(["s1"], []), []);
});

test("measure: graded figure from the real rows", () => {
    assert.deepEqual(measure(GOOD, GiB), { busbwGBps: (2.83 + 2.82) / 2, completed: true, wrong: false });
    assert.deepEqual(measure(BAD, GiB), { busbwGBps: (2.0 + 1.98) / 2, completed: true, wrong: false });
});

/** Pairs from the planner; a pair is slow when it contains one of `slow`. */
function scenario(hosts: string[], slow: string[]): PairLog[] {
    return planPairRounds(hosts).flat().map(([a, b]) => ({ hosts: [a, b], log: slow.includes(a) || slow.includes(b) ? BAD : GOOD }));
}

test("one slow node among 6 is named from the pairs alone (relative threshold)", () => {
    const hosts = ["a", "b", "c", "d", "e", "f"];
    const r = findSlowNodes({ pairs: scenario(hosts, ["e"]) });
    assert.deepEqual(r.slow.map((s) => s.host), ["e"]);
    assert.match(r.slow[0].reason, /every pair is slow/);
    assert.deepEqual(r.suspects, []);
    assert.deepEqual(r.good.sort(), ["a", "b", "c", "d", "f"]);
});

test("the same with the plan's threshold, and two slow nodes among 8", () => {
    const exp: Expectation = { minBusbwGBps: 2.5, gradeFromBytes: GiB, transport: "any", requireGdr: false, source: "test" };
    const hosts = ["h0", "h1", "h2", "h3", "h4", "h5", "h6", "h7"];
    const r = findSlowNodes({ pairs: scenario(hosts, ["h1", "h6"]), pairExpectation: exp });
    assert.deepEqual(r.slow.map((s) => s.host).sort(), ["h1", "h6"]);
    assert.deepEqual(r.suspects, []);
});

test("a single-node failure names the node; its pairs are explained by it", () => {
    const hosts = ["a", "b", "c", "d"];
    const singleNode = Object.fromEntries(hosts.map((h) => [h, h === "c" ? BAD : GOOD]));
    const r = findSlowNodes({ singleNode, pairs: scenario(hosts, ["c"]) });
    assert.deepEqual(r.slow.map((s) => s.host), ["c"]);
    assert.match(r.slow[0].reason, /single-node run/);
});

test("two nodes with one slow pair cannot be separated: both suspects, no follow-up partner", () => {
    const r = findSlowNodes({ pairs: [{ hosts: ["a", "b"], log: BAD }, { hosts: ["c", "d"], log: GOOD }, { hosts: ["c", "e"], log: GOOD }] });
    assert.deepEqual(r.slow, []);
    assert.deepEqual(r.suspects.sort(), ["a", "b"]);
    assert.deepEqual(r.followUp, [[["a", "c"], ["b", "d"]]]);
});

test("a slow pair whose nodes are good elsewhere points at the path between them", () => {
    const pairs: PairLog[] = [
        { hosts: ["a", "b"], log: BAD }, { hosts: ["a", "c"], log: GOOD }, { hosts: ["b", "d"], log: GOOD }, { hosts: ["c", "d"], log: GOOD },
    ];
    const r = findSlowNodes({ pairs });
    assert.deepEqual(r.slow, []);
    assert.deepEqual(r.suspects, []);
    assert.ok(r.lines.some((l) => /pair a \+ b is slow/.test(l)));
});

test("all pairs healthy: nobody is blamed", () => {
    const r = findSlowNodes({ pairs: scenario(["a", "b", "c", "d", "e"], []) });
    assert.deepEqual(r.slow, []);
    assert.deepEqual(r.suspects, []);
    assert.equal(r.good.length, 5);
});
