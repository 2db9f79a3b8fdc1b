// The `--plan` lines of a switch push (components/roce/push.ts planLines): what the switch's text is made from, in
// words, with its ports grouped by cable and headroom. Constructed switch plans (the fields planLines reads).
import { test } from "node:test";
import assert from "node:assert/strict";
import { planLines } from "../components/roce/push";
import type { PortPlan, SwitchPlan } from "../components/roce/qos";

const layout = (n: number) => ({ priority: n, trafficClass: n, queue: n, priorityGroup: n });
function switchWith(ports: Array<Pick<PortPlan, "cableLengthM" | "headroomBytes">>): SwitchPlan {
    return {
        name: "leaf", os: "nvue", mtu: 9216, cableLengthM: 5, roce: layout(3), cnp: layout(6), other: layout(0),
        ports: ports.map((p, i) => ({ name: `swp${i + 1}`, kind: "host", speedGbps: 400, ...p })),
    } as unknown as SwitchPlan;
}

test("a push's --plan lines group the ports by cable and headroom, in the order each group's first port comes", () => {
    const lines = planLines(switchWith([
        { cableLengthM: 5, headroomBytes: 250880 }, { cableLengthM: 40, headroomBytes: 410624 }, { cableLengthM: 5, headroomBytes: 250880 },
        { cableLengthM: 5, headroomBytes: undefined }, { cableLengthM: 40, headroomBytes: 410624 }, { cableLengthM: 5, headroomBytes: 250880 },
        { cableLengthM: 5, headroomBytes: 300000 }, { cableLengthM: -0, headroomBytes: 1 }, { cableLengthM: 0, headroomBytes: 1 },
    ]));
    assert.deepEqual(lines, [
        "mtu 9216, default cable 5 m",
        "roce priority 3 tc 3 queue 3 pg 3; cnp priority 6 tc 6 queue 6 pg 6; other priority 0 tc 0 queue 0 pg 0",
        "cable 5 m, headroom 250880 B: 3 ports",
        "cable 40 m, headroom 410624 B: 2 ports",
        "cable 5 m: 1 port",
        "cable 5 m, headroom 300000 B: 1 port",
        // 0 and -0 print alike, so they are one group
        "cable 0 m, headroom 1 B: 2 ports",
    ]);
    assert.deepEqual(planLines(switchWith([])).slice(2), [], "no ports, no group lines");
});
