// The SONiC operational parser (components/roce/sonic-oper.ts) fed the outputs sonic-utilities' own tests expect
// (test/fixtures/roce/running/sonic-show-*.txt, sources in that folder's README), and the read script run by sh
// against stand-ins of `show` and `sonic-db-cli` that answer as those tools do (HGET of a missing field: an empty line).
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { planQos } from "../components/roce/qos";
import { parseSonicOper, sonicOperFindings, sonicOperScript } from "../components/roce/sonic-oper";
import { spec } from "./fixtures/roce/helpers";

const RUNNING = path.join(__dirname, "fixtures", "roce", "running");
const fixture = (f: string) => fs.readFileSync(path.join(RUNNING, f), "utf8");
const wrap = (pfc: string, pfcwd: string, pg = "") => `@@rdmakit-sonic-oper\n@@pfc\n${pfc}@@pfcwd\n${pfcwd}${pg}@@end\n`;

describe("SONiC operational parser: sonic-utilities' own outputs", () => {
    it("reads `show pfc priority` (single ASIC, namespace line empty)", () => {
        const o = parseSonicOper(wrap(fixture("sonic-show-pfc-priority.txt"), fixture("sonic-show-pfcwd-config.txt")));
        assert.deepEqual([...(o.pfc as Map<string, number[]>)], [["Ethernet0", [3, 4]], ["Ethernet4", [3, 4]]]);
    });
    it("reads `show pfcwd config` with and without the HISTORY column, and on a multi-ASIC switch", () => {
        for (const f of ["sonic-show-pfcwd-config.txt", "sonic-show-pfcwd-config-nohistory.txt"]) {
            const wd = parseSonicOper(wrap(fixture("sonic-show-pfc-priority.txt"), fixture(f))).pfcwd as Map<string, unknown>;
            assert.deepEqual(wd.get("Ethernet8"), { action: "drop", detection: "600", restoration: "600" }, f);
            assert.equal(wd.size, 3, f);
        }
        const m = parseSonicOper(wrap(fixture("sonic-show-pfc-priority.txt"), fixture("sonic-show-pfcwd-config-masic.txt"))).pfcwd as Map<string, unknown>;
        assert.deepEqual([...m.keys()], ["Ethernet0", "Ethernet4", "Ethernet-BP0", "Ethernet-BP4", "Ethernet-BP256", "Ethernet-BP260"]);
    });
    it("refuses what it cannot read: no script header, an unknown row, a failed command", () => {
        assert.throws(() => parseSonicOper(fixture("sonic-show-pfc-priority.txt")), /not the kit's SONiC operational read/);
        const bad = parseSonicOper(wrap(fixture("sonic-show-pfc-priority.txt").replace("3,4\n", "3 4\n"), "@@error pfcwd show pfcwd config: exit 2\n"));
        assert.match((bad.pfc as { error: string }).error, /cannot read the row 'Ethernet0 {4}3 4'/);
        assert.match((bad.pfcwd as { error: string }).error, /show pfcwd config: exit 2/);
    });
    it("against the plan: the published 3,4 ports with a 600 ms watchdog are drift for a plan of PFC on 3, 300 ms", () => {
        const plan = planQos(spec());
        const sw = { ...plan.switches.find((s) => s.os === "sonic")!, ports: plan.switches.find((s) => s.os === "sonic")!.ports.map((p, i) => ({ ...p, name: ["Ethernet0", "Ethernet4"][i] })) };
        const pg = sw.ports.map((p) => `@@pg ${p.name}:3 profile=pg_lossless_400000_5m_profile xoff=38912\n`).join("");
        const { findings, unreadable } = sonicOperFindings(plan, sw, parseSonicOper(wrap(fixture("sonic-show-pfc-priority.txt"), fixture("sonic-show-pfcwd-config.txt"), pg)));
        assert.deepEqual(unreadable, []);
        assert.deepEqual(findings.map((f) => [f.device, f.found]), [
            [`${sw.name}:Ethernet0`, { pfcPriorities: [3, 4] }], [`${sw.name}:Ethernet0`, { action: "drop", detection: "600" }],
            [`${sw.name}:Ethernet4`, { pfcPriorities: [3, 4] }], [`${sw.name}:Ethernet4`, { action: "drop", detection: "600" }],
        ]);
    });
});

describe("SONiC operational read script", () => {
    it("runs under sh against show / sonic-db-cli stand-ins; a missing PG row reads as no profile", () => {
        const plan = planQos(spec());
        const sw = plan.switches.find((s) => s.os === "sonic")!;
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-soper-"));
        try {
            fs.writeFileSync(path.join(dir, "show"), `#!/bin/sh\ncase "$*" in "pfc priority") cat "${RUNNING}/sonic-show-pfc-priority.txt" ;; "pfcwd config") cat "${RUNNING}/sonic-show-pfcwd-config.txt" ;; *) exit 2 ;; esac\n`, { mode: 0o755 });
            // HGET: the value, or an empty line for a missing key (sonic-swss-common redisreply.cpp formatReply)
            fs.writeFileSync(path.join(dir, "sonic-db-cli"), `#!/bin/sh\ncase "$3 $4" in "BUFFER_PG_TABLE:${sw.ports[0].name}:3 profile") echo "[BUFFER_PROFILE_TABLE:pg_lossless_400000_3m_profile]" ;; "BUFFER_PROFILE_TABLE:pg_lossless_400000_3m_profile xoff") echo 61440 ;; *) echo ;; esac\n`, { mode: 0o755 });
            const r = spawnSync("sh", ["-s"], { input: sonicOperScript(sw), encoding: "utf8", timeout: 10_000, env: { PATH: `${dir}:${process.env.PATH}` } });
            assert.equal(r.status, 0, r.stderr);
            const o = parseSonicOper(r.stdout);
            assert.deepEqual(o.pgs.get(`${sw.ports[0].name}:3`), { profile: "pg_lossless_400000_3m_profile", xoff: "61440" });
            assert.deepEqual(o.pgs.get(`${sw.ports[1].name}:3`), { profile: "", xoff: "" });
            const f = sonicOperFindings(plan, sw, o).findings.filter((x) => /headroom/.test(x.message));
            assert.deepEqual(f.map((x) => x.device), [`${sw.name}:${sw.ports[1].name}`]);
        } finally { fs.rmSync(dir, { recursive: true, force: true }); }
    });
});
