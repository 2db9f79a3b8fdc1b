// Every push script, run for real by bash against stand-ins of the switch commands (test/fixtures/roce/stubs: nv,
// sonic-cfggen, config, sudo, systemd-run, systemctl, sonic-db-cli, ssh, which runs the remote part here as sshd
// would) that fail at each step in turn: the script exits non-zero, names the switch and the step, never saves or
// confirms, and rolls back what went live. The SONiC stand-in applies the JSON patch to a CONFIG_DB file, so the
// patch the switch would get is checked for what it leaves behind (yanglint, the rules); its dead-man timer fires for
// real (after STUB_DEADMAN_S seconds) when a test drops the session mid-apply.
import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { readSonic } from "../components/roce/consistency";
import { keepInput } from "../components/kept-input";
import { pushCommandFor, type PushCommand } from "../components/roce/push";
import { roceScript } from "../components/scripts";
import { planQos, type QosPlan } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import { FACTORY_CONFIG_DB, HOST_KEY, spec, yangAvailable, yanglint } from "./fixtures/roce/helpers";

type Db = Record<string, Record<string, Record<string, string>>>;
const STUBS = path.join(__dirname, "fixtures", "roce", "stubs");
const FACTORY: Db = FACTORY_CONFIG_DB;

/** A push command with the rendered text it sends (`stdin`, kept in `file` as the program keeps it) and its digest. */
interface Push extends PushCommand { stdin: string; file: string; digest: string }

function pushes(qos: Record<string, unknown> = {}): { plan: QosPlan; cmd: Record<string, Push> } {
    const plan = planQos(spec(qos));
    const cmd: Record<string, Push> = {};
    const kept = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kept-"));
    for (const r of renderSwitchConfigs(plan)) {
        const config = keepInput(kept, r.switch, "txt", r.text, true);
        cmd[r.switch] = { ...pushCommandFor(r, plan.switches.find((s) => s.name === r.switch)!, plan.mode === "lossless", { config }), stdin: r.text, file: config.file, digest: r.digest };
    }
    return { plan, cmd };
}

interface Run { status: number | null; stdout: string; stderr: string; log: string[]; dir: string }

/**
 * Runs a push command under bash with the stubs first on PATH; `dir` keeps the switch's state between runs. The kept
 * file holds `cmd.stdin` (a test that hands another text has it written there, as a file changed after the plan).
 */
function run(cmd: Push, env: Record<string, string> = {}, dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"))): Run {
    fs.mkdirSync(path.join(dir, "home"), { recursive: true });
    const log = path.join(dir, "log");
    fs.writeFileSync(log, "");
    fs.writeFileSync(cmd.file, cmd.stdin);
    const r = spawnSync("bash", ["-c", cmd.create], {
        encoding: "utf8", timeout: 30_000,
        env: { PATH: `${STUBS}:${process.env.PATH}`, HOME: path.join(dir, "home"), STUB_DIR: dir, STUB_LOG: log, RDMAKIT_HEADROOM_WAIT_S: "2", ...env },
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr, log: fs.readFileSync(log, "utf8").split("\n").filter(Boolean), dir };
}

const has = (r: Run, s: string) => r.log.some((l) => l.includes(s));
const log = (dir: string) => fs.readFileSync(path.join(dir, "log"), "utf8").split("\n").filter(Boolean);
const db0 = (r: Run): Db => JSON.parse(fs.readFileSync(path.join(r.dir, "configdb.json"), "utf8"));

/** The push started in a process group of its own (so a test can drop the whole session at once). */
function spawnPush(cmd: Push, dir: string, env: Record<string, string>) {
    fs.mkdirSync(path.join(dir, "home"), { recursive: true });
    fs.writeFileSync(path.join(dir, "log"), "");
    fs.writeFileSync(cmd.file, cmd.stdin);
    const p = spawn("bash", ["-c", cmd.create], {
        detached: true, stdio: ["ignore", "ignore", "ignore"],
        env: { PATH: `${STUBS}:${process.env.PATH}`, HOME: path.join(dir, "home"), STUB_DIR: dir, STUB_LOG: path.join(dir, "log"), RDMAKIT_HEADROOM_WAIT_S: "2", ...env },
    });
    return p;
}

async function until(ok: () => boolean, ms: number, what: string): Promise<void> {
    const end = Date.now() + ms;
    while (!ok()) {
        if (Date.now() > end) throw new Error(`timed out waiting until ${what}`);
        await new Promise((r) => setTimeout(r, 200));
    }
}

/** The stub apply has written half its changes and hangs (STUB_APPLY_HANG). */
const half = (dir: string) => log(dir).some((l) => l.startsWith("config apply-patch /")) && JSON.stringify(JSON.parse(fs.readFileSync(path.join(dir, "configdb.json"), "utf8"))) !== JSON.stringify(FACTORY);

/** Whether the detached apply job (its process group) still runs. */
function running(dir: string): boolean {
    const job = fs.readdirSync(path.join(dir, "home", "rdmakit")).find((f) => f.startsWith("job-"));
    if (!job) return false;
    const pid = Number(fs.readFileSync(path.join(dir, "home", "rdmakit", job, "pid"), "utf8"));
    try { process.kill(-pid, 0); return true; } catch { return false; }
}
const show = (r: Run) => `exit ${r.status}\n--- stderr\n${r.stderr}\n--- log\n${r.log.join("\n")}`;

/** The applied tree `nv config show -o json` prints after a good apply: what the file set. */
function nvueApplied(dir: string, text: string, edit?: (set: Record<string, any>) => void): void {
    const doc = parseYaml(text) as Array<{ set: Record<string, any> }>;
    edit?.(doc[0].set);
    fs.writeFileSync(path.join(dir, "nvue-applied.json"), JSON.stringify(doc));
    // `nv show qos roce -o json`: the operational RoCE object (its enable and mode are what the verify reads)
    fs.writeFileSync(path.join(dir, "nvue-roce.json"), JSON.stringify({ enable: doc[0].set.qos.roce.enable, mode: doc[0].set.qos.roce.mode }));
}

/** CONFIG_DB, and the APPL_DB rows the dynamic buffer manager would write for the kit's lossless PGs (xoff > 0). */
function sonicState(dir: string, db: Db = FACTORY, xoff = "61440", pg = 3): void {
    fs.writeFileSync(path.join(dir, "configdb.json"), JSON.stringify(db));
    const appl: Record<string, Record<string, string>> = { "BUFFER_PROFILE_TABLE:pg_lossless_400000_3m_profile": { xon: "19456", xoff, size: "80896", pool: "ingress_lossless_pool", dynamic_th: "0" } };
    for (const p of ["Ethernet0", "Ethernet8"]) appl[`BUFFER_PG_TABLE:${p}:${pg}`] = { profile: "pg_lossless_400000_3m_profile" };
    fs.writeFileSync(path.join(dir, "appldb.json"), JSON.stringify(appl));
}
const sonicDb = (dir: string): Db => JSON.parse(fs.readFileSync(path.join(dir, "configdb.json"), "utf8"));


/** The switch's config_db after a push passes SONiC's YANG models (yanglint), or the test is skipped saying why not. */
function yangValid(t: { skip: (why: string) => void }, db: Parameters<typeof yanglint>[0]): void {
    const avail = yangAvailable();
    if (!avail.ok) { t.skip(avail.why); return; }
    const y = yanglint(db);
    assert.equal(y.status, 0, y.output);
}
describe("NVUE push: apply --confirm, verify, confirm, save", () => {
    const { cmd } = pushes();
    const c = cmd["leaf-nvue"];
    const fresh = () => { const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-")); nvueApplied(dir, c.stdin); return dir; };

    it("succeeds in order: detach, unset the kit's sections, patch, apply with a timer, verify, confirm, save", () => {
        const r = run(c, {}, fresh());
        assert.equal(r.status, 0, show(r));
        const order = ["nv config detach", "nv unset qos", "nv config patch", "nv config apply --confirm 600s -y", "nv config show -o json", "nv show qos roce -o json", "nv config apply --confirm-yes -y", "nv config save"];
        const seen = r.log.map((l) => order.findIndex((o) => l.startsWith(o))).filter((i) => i >= 0);
        assert.deepEqual([...new Set(seen)], [0, 1, 2, 3, 4, 5, 6, 7], show(r));
        // only the QoS objects the file sets are unset, never the whole qos tree (an operator's other QoS stays)
        assert.ok(!r.log.includes("nv unset qos"), show(r));
        assert.deepEqual(r.log.filter((l) => l.startsWith("nv unset qos")), ["nv unset qos roce", "nv unset qos mapping default-global", "nv unset qos egress-queue-mapping default-global", "nv unset qos egress-scheduler default-global", "nv unset qos congestion-control default-global", "nv unset qos pfc default-global", "nv unset qos pfc-watchdog"]);
        assert.match(r.stdout, new RegExp(`applied [0-9a-f]{64} to leaf-nvue`));
        // the next push replaces the qos of the ports this one owned
        const again = run(c, {}, r.dir);
        assert.equal(again.status, 0, show(again));
        assert.ok(has(again, "nv unset interface swp1 qos") && has(again, "nv unset interface swp2 qos"), show(again));
        assert.ok(again.log.findIndex((l) => l.startsWith("nv unset interface")) < again.log.findIndex((l) => l.startsWith("nv config patch")));
    });

    const steps: Array<[string, string, boolean]> = [
        // [the call that fails, the step the message names, whether the change was live (rolled back with --confirm-no)]
        ["nv config detach", "nv config detach", false],
        ["nv unset qos", "nv unset qos", false],
        ["nv config patch", "nv config patch", false],
        ["nv config apply --confirm 600s", "nv config apply --confirm 600s", false],
        ["nv config show", "read the applied configuration", true],
        ["nv show qos roce", "read the operational RoCE state", true],
        ["nv config apply --confirm-yes", "nv config apply --confirm-yes", true],
    ];
    for (const [call, stepName, live] of steps) {
        it(`a failing '${call}' stops the push before anything is confirmed or saved`, () => {
            const r = run(c, { STUB_FAIL: call }, fresh());
            assert.notEqual(r.status, 0, show(r));
            assert.match(r.stderr, new RegExp(`rdmakit: leaf-nvue: step '${stepName.replace(/[-]/g, "\\-")}[^']*' failed`), show(r));
            assert.ok(!has(r, "nv config save"), show(r));
            assert.equal(has(r, "nv config apply --confirm-no"), live, show(r));
            if (!live && call !== "nv config detach") assert.ok(r.log.filter((l) => l === "nv config detach").length >= 2, "pending edits discarded");
        });
    }
    it("a failing save after the confirm names the step and says the change is live but unsaved", () => {
        const r = run(c, { STUB_FAIL: "nv config save" }, fresh());
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /step 'nv config save' failed .*live, but not saved/);
    });
    it("an apply that prints an error but exits 0 is rolled back (netlab saw NVUE do this)", () => {
        const r = run(c, { STUB_NV_APPLY_OUTPUT: "Error: Invalid config [qos.pfc]" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /printed an error/);
        assert.ok(has(r, "nv config apply --confirm-no") && !has(r, "--confirm-yes"), show(r));
    });
    it("what the switch prints reaches the push's output without its control characters (an escape sequence from a switch never reaches a terminal)", () => {
        // a switch answering with an OSC 52 clipboard write and a clear-screen among its error words
        const r = run(c, { STUB_NV_APPLY_OUTPUT: "Error: bad\u001b]52;c;ZXZpbA==\u0007\u001b[2J\rdone" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /Error: bad\]52;c;ZXZpbA==\[2Jdone/);
        const control = [...(r.stderr + r.stdout)].filter((ch) => { const c = ch.charCodeAt(0); return (c < 0x20 && c !== 9 && c !== 10) || c === 0x7f; });
        assert.deepEqual(control, []);
    });
    it("C1 controls reach no terminal either: U+0080-U+009F as UTF-8 (0xC2 0x9B is CSI) and a lone 0x9B byte are taken out, other UTF-8 kept", () => {
        // found by the trust review (w10): shown() took out C0 and DEL only. The stand-in switch prints, among its error
        // words, CSI 2J as U+009B, CSI 31m as the one byte 0x9B, an OSC as U+009D, a broken sequence (0xE2 0x80) and
        // an overlong '/' (0xC0 0xAF); then well-formed text: é (2 bytes), — (3), ⛄ (3, its middle byte 0x9B), 𝄞 (4)
        const r = run(c, { STUB_NV_APPLY_OUTPUT_ESC: "Error: bad\\0302\\02332J|\\023331m|\\0302\\0235x|\\0342\\0200|\\0300\\0257|é — ⛄ 𝄞 end" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.ok(r.stderr.includes("Error: bad2J|31m|x|||é — ⛄ 𝄞 end"), show(r));
        // no C1 control as a character, and no byte that is not UTF-8 (node decodes such a byte to U+FFFD)
        assert.deepEqual([...r.stderr + r.stdout].filter((ch) => { const x = ch.codePointAt(0)!; return (x >= 0x80 && x <= 0x9f) || x === 0xfffd; }), []);
    });
    it("verify: an applied tree without the rendered PFC priority is rolled back, not confirmed", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
        nvueApplied(dir, c.stdin, (set) => { delete set.qos.pfc["default-global"]["switch-priority"]["3"]; });
        const r = run(c, {}, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify[^']*' failed/);
        assert.match(r.stderr, /switch-priority\/3/);
        assert.ok(has(r, "nv config apply --confirm-no") && !has(r, "--confirm-yes") && !has(r, "nv config save"), show(r));
    });
    it("verify on what the switch operates: an applied tree that switchd runs lossy is rolled back", () => {
        const dir = fresh();
        fs.writeFileSync(path.join(dir, "nvue-roce.json"), JSON.stringify({ enable: "on", mode: "lossy" }));
        const r = run(c, {}, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify \(the switch operates the rendered RoCE mode\)' failed/);
        assert.match(r.stderr, /operates RoCE mode lossy, rendered lossless/);
        assert.ok(has(r, "nv config apply --confirm-no") && !has(r, "--confirm-yes"), show(r));
    });
    it("verify reads the operational RoCE object as the docs print it: enable left empty passes, state disabled fails", () => {
        // CL docs "Verify RoCE Configuration": the operational `enable` cell is empty in one example; later pages print
        // `state enabled`
        const ok = fresh();
        fs.writeFileSync(path.join(ok, "nvue-roce.json"), JSON.stringify({ enable: "", mode: "lossless" }));
        assert.equal(run(c, {}, ok).status, 0);
        const off = fresh();
        fs.writeFileSync(path.join(off, "nvue-roce.json"), JSON.stringify({ state: "disabled", mode: "lossless" }));
        const r = run(c, {}, off);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /operates RoCE state disabled/);
    });
    it("moving RoCE to lossy unsets the PFC profile and watchdog the last applied file set", () => {
        const first = run(c, {}, fresh());
        assert.equal(first.status, 0, show(first));
        const lossy = pushes({ mode: "lossy" }).cmd["leaf-nvue"];
        nvueApplied(first.dir, lossy.stdin);
        const r = run(lossy, {}, first.dir);
        assert.equal(r.status, 0, show(r));
        assert.ok(has(r, "nv unset qos pfc default-global") && has(r, "nv unset qos pfc-watchdog"), show(r));
    });
    // Auto-save (CL 5.9+ default) would write an unconfirmed apply to startup.yaml: it is off for the push window only.
    const autosave = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, "nvue-autosave.json"), "utf8"));
    const before = (r: Run, a: string, b: string) => r.log.findIndex((l) => l.startsWith(a)) >= 0 && r.log.findIndex((l) => l.startsWith(a)) < r.log.findIndex((l) => l.startsWith(b));
    it("auto-save on: turned off (its own apply) before the change, put back after the save", () => {
        const r = run(c, {}, fresh());
        assert.equal(r.status, 0, show(r));
        assert.ok(before(r, "nv set system config auto-save state disabled", "nv config patch"), show(r));
        const i = r.log.indexOf("nv set system config auto-save state disabled");
        assert.equal(r.log[i + 1], "nv config apply -y", show(r));
        assert.ok(before(r, "nv config save", "nv set system config auto-save state enabled"), show(r));
        assert.deepEqual(autosave(r.dir), { state: "enabled" });
        assert.ok(!fs.existsSync(path.join(r.dir, "home", "rdmakit", "auto-save.orig")));
    });
    it("auto-save off by the operator: left off, nothing set; 5.9-style `enable on` is switched with its own syntax", () => {
        const dir = fresh();
        fs.writeFileSync(path.join(dir, "nvue-autosave.json"), JSON.stringify({ state: "disabled" }));
        const off = run(c, {}, dir);
        assert.equal(off.status, 0, show(off));
        assert.ok(!off.log.some((l) => l.startsWith("nv set system config auto-save")), show(off));
        assert.deepEqual(autosave(dir), { state: "disabled" });
        const old = fresh();
        fs.writeFileSync(path.join(old, "nvue-autosave.json"), JSON.stringify({ enable: "on" }));
        const r = run(c, {}, old);
        assert.equal(r.status, 0, show(r));
        assert.ok(has(r, "nv set system config auto-save enable off") && has(r, "nv set system config auto-save enable on"), show(r));
        assert.deepEqual(autosave(old), { enable: "on" });
    });
    for (const call of ["nv config patch", "nv config apply --confirm 600s", "nv show qos roce", "nv config apply --confirm-yes", "nv config save"]) {
        it(`a failing '${call}' puts the operator's auto-save back`, () => {
            const r = run(c, { STUB_FAIL: call }, fresh());
            assert.notEqual(r.status, 0, show(r));
            assert.ok(has(r, "nv set system config auto-save state disabled") && has(r, "nv set system config auto-save state enabled"), show(r));
            assert.deepEqual(autosave(r.dir), { state: "enabled" });
        });
    }
    it("a session that drops after the apply leaves auto-save recorded on the switch; the next push restores it", async () => {
        const dir = fresh();
        // the stub `nv show qos roce` hangs: the push is inside its confirm window when the session goes
        const hang = path.join(dir, "hangbin");
        fs.mkdirSync(hang);
        fs.writeFileSync(path.join(hang, "nv"), `#!/bin/sh\ncase "$*" in "show qos roce -o json") echo "nv $*" >> "$STUB_LOG"; sleep 30 ;; esac\nexec ${path.join(STUBS, "nv")} "$@"\n`, { mode: 0o755 });
        const p = spawnPush(c, dir, { PATH: `${hang}:${STUBS}:${process.env.PATH}` });
        await until(() => log(dir).includes("nv show qos roce -o json"), 20_000, "the push reads the operational state");
        process.kill(-p.pid!, "SIGKILL");
        // what the confirm timer leaves: the revision before the change, the one with auto-save off
        assert.deepEqual(autosave(dir), { state: "disabled" });
        assert.equal(fs.readFileSync(path.join(dir, "home", "rdmakit", "auto-save.orig"), "utf8").trim(), "state enabled");
        const next = run(c, {}, dir);
        assert.equal(next.status, 0, show(next));
        assert.deepEqual(autosave(dir), { state: "enabled" });
    });
    it("an auto-save answer it cannot read stops the push before any change, naming the command and the keys", () => {
        const dir = fresh();
        fs.writeFileSync(path.join(dir, "nvue-autosave.json"), JSON.stringify({ "auto-save": "?" }));
        const r = run(c, {}, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'read the auto-save setting' failed/);
        assert.match(r.stderr, /nv show system config auto-save -o json has no 'state' .* or 'enable'/);
        assert.ok(!has(r, "nv config patch") && !has(r, "nv config apply --confirm"), show(r));
    });
    it("a text whose digest is not the planned one is refused before the switch is touched", () => {
        const r = run({ ...c, stdin: c.stdin + "# edited\n" }, {}, fresh());
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /step 'digest check' failed/);
        assert.deepEqual(r.log.filter((l) => !l.startsWith("ssh-args")), []);
    });
});

describe("SONiC push: checkpoint, dry run, dead-man timer, detached apply/verify/save, timer cancelled last", () => {
    const { cmd } = pushes();
    const c = cmd["leaf-sonic"];
    const fresh = (db: Db = FACTORY) => { const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-")); sonicState(dir, db); return dir; };

    it("replaces the factory QoS of its ports: the result has no factory key, passes yanglint and the rules", (t) => {
        const r = run(c, {}, fresh());
        assert.equal(r.status, 0, show(r));
        const order = ["sudo config checkpoint", "sudo config apply-patch --dry-run", "sudo systemd-run", "sudo config apply-patch /", "sonic-db-cli APPL_DB HGET BUFFER_PG_TABLE:Ethernet0:3", "sudo config save -y", "sudo systemctl stop rdmakit-deadman-", "sudo config delete-checkpoint"];
        assert.deepEqual(r.log.map((l) => order.findIndex((o) => l.startsWith(o))).filter((i) => i >= 0), [0, 1, 2, 3, 4, 4, 5, 6, 7].filter((i, k, a) => k === 0 || a[k - 1] !== i || i !== 4), show(r));
        // the timer runs `config rollback` after 600 s, and is cancelled (not fired)
        assert.match(r.log.find((l) => l.startsWith("sudo systemd-run"))!, /--unit=rdmakit-deadman-rdmakit-[0-9a-f]{12} --on-active=600 \/bin\/bash \S+\/deadman\.sh /);
        assert.equal(fs.readFileSync(path.join(r.dir, fs.readdirSync(r.dir).find((f) => /^timer-rdmakit-deadman-[^.]+$/.test(f))!), "utf8").trim(), "stopped");
        // no PORT speed is written, only checked
        for (const p of ["Ethernet0", "Ethernet8"]) assert.equal(db0(r).PORT[p].speed, FACTORY.PORT[p].speed);
        assert.ok(!JSON.parse(c.stdin).PORT.Ethernet0.speed, "the fragment holds no speed");
        const db = sonicDb(r.dir);
        for (const p of ["Ethernet0", "Ethernet8"]) {
            assert.equal(db.QUEUE[`${p}|4`], undefined, "factory lossless queue 4 removed");
            assert.equal(db.BUFFER_PG[`${p}|3-4`], undefined, "factory PG 3-4 replaced");
            assert.equal(db.BUFFER_QUEUE[`${p}|3-4`], undefined, "factory queue buffers 3-4 replaced");
            assert.deepEqual(db.BUFFER_PG[`${p}|3`], { profile: "NULL" });
            assert.equal(db.PORT_QOS_MAP[p].pfc_enable, "3");
            assert.equal(db.PORT_QOS_MAP[p].pfc_to_pg_map, "RDMAKIT_ROCE");
            assert.equal(db.PORT[p].lanes, FACTORY.PORT[p].lanes, "platform fields stay");
        }
        // ports the kit does not own keep the factory rows
        assert.equal(db.PORT_QOS_MAP.Ethernet16.pfc_enable, "3,4");
        assert.ok(db.DSCP_TO_TC_MAP.AZURE, "factory maps other ports use stay");
        const view = readSonic("leaf-sonic", db);
        assert.deepEqual(view.ports.filter((p) => ["Ethernet0", "Ethernet8"].includes(p.port)).map((p) => [p.port, p.dscpToTc[26], p.losslessPgs]), [["Ethernet0", 3, [3]], ["Ethernet8", 3, [3]]]);
        yangValid(t, db);
    });

    it("moving RoCE from priority 3 to 4 removes PFC, the ECN queue and the lossless PG of priority 3", (t) => {
        const first = run(c, {}, fresh());
        assert.equal(first.status, 0, show(first));
        const moved = pushes({ rocePriority: 4 }).cmd["leaf-sonic"];
        sonicState(first.dir, sonicDb(first.dir), "61440", 4); // what the buffer manager makes of PG 4
        const r = run(moved, {}, first.dir);
        assert.equal(r.status, 0, show(r));
        const db = sonicDb(r.dir);
        for (const p of ["Ethernet0", "Ethernet8"]) {
            assert.equal(db.PORT_QOS_MAP[p].pfc_enable, "4");
            assert.equal(db.PORT_QOS_MAP[p].pfcwd_sw_enable, "4");
            assert.equal(db.QUEUE[`${p}|3`], undefined, "no scheduler/ECN left on queue 3");
            assert.deepEqual(db.QUEUE[`${p}|4`], { scheduler: "RDMAKIT_ROCE_DWRR", wred_profile: "RDMAKIT_ROCE_ECN" });
            assert.equal(db.BUFFER_PG[`${p}|3`], undefined);
            assert.deepEqual(db.BUFFER_PG[`${p}|4`], { profile: "NULL" });
            assert.deepEqual(db.BUFFER_QUEUE[`${p}|4`], { profile: "egress_lossless_profile" });
        }
        assert.deepEqual(db.PFC_PRIORITY_TO_PRIORITY_GROUP_MAP.RDMAKIT_ROCE, { 4: "4" });
        assert.equal(db.DSCP_TO_TC_MAP.RDMAKIT_ROCE["26"], "4");
        yangValid(t, db);
    });

    it("moving from lossless to lossy removes PFC, the watchdog rows and the lossless PG, and keeps ECN", (t) => {
        const first = run(c, {}, fresh());
        assert.equal(first.status, 0, show(first));
        const r = run(pushes({ mode: "lossy" }).cmd["leaf-sonic"], {}, first.dir);
        assert.equal(r.status, 0, show(r));
        assert.ok(!has(r, "buffer_model"), "a lossy plan needs no dynamic buffer model");
        const db = sonicDb(r.dir);
        assert.equal(db.PORT_QOS_MAP.Ethernet0.pfc_enable, "");
        assert.equal(db.PFC_WD.Ethernet0, undefined);
        assert.equal(db.BUFFER_PG["Ethernet0|3"], undefined);
        assert.deepEqual(db.QUEUE["Ethernet0|3"], { scheduler: "RDMAKIT_ROCE_DWRR", wred_profile: "RDMAKIT_ROCE_ECN" });
        yangValid(t, db);
    });

    const steps: Array<[string, string, "none" | "checkpoint" | "rollback"]> = [
        ["buffer_model", "read DEVICE_METADATA.localhost.buffer_model", "none"],
        ["--print-data", "read CONFIG_DB", "none"],
        ["config checkpoint", "config checkpoint", "none"],
        ["apply-patch --dry-run", "config apply-patch --dry-run (YANG validation)", "checkpoint"],
        ["systemd-run", "arm the dead-man timer (600 s, then config rollback)", "checkpoint"],
        ["apply-patch /", "config apply-patch", "rollback"],
        ["sonic-db-cli", "verify (the buffer manager gave each lossless PG headroom)", "rollback"],
        ["config save", "config save", "rollback"],
    ];
    for (const [call, stepName, undo] of steps) {
        it(`a failing '${call}' stops the push, nothing saved${undo === "rollback" ? ", CONFIG_DB rolled back to the checkpoint" : ""}, no timer left`, () => {
            const r = run(c, { STUB_FAIL: call }, fresh());
            assert.notEqual(r.status, 0, show(r));
            assert.ok(r.stderr.includes(`step '${stepName}' failed`), show(r));
            assert.match(r.stderr, /rdmakit: leaf-sonic: step '[^']+' failed/);
            assert.ok(!fs.existsSync(path.join(r.dir, "saved.json")), "nothing saved");
            assert.equal(has(r, "sudo config rollback"), undo === "rollback", show(r));
            assert.deepEqual(sonicDb(r.dir), FACTORY, "CONFIG_DB as it was");
            // an armed timer is cancelled on the way out; a checkpoint is removed
            if (has(r, "sudo systemd-run") && call !== "systemd-run") assert.ok(has(r, "sudo systemctl stop rdmakit-deadman-"), show(r));
            if (undo !== "none") assert.ok(has(r, "sudo config delete-checkpoint"), show(r));
        });
    }
    it("verify on operational state: a lossless PG the buffer manager gave no headroom (xoff 0) is rolled back, not saved", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
        sonicState(dir, FACTORY, "0");
        const r = run(c, {}, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify \(the buffer manager gave each lossless PG headroom\)' failed \(APPL_DB BUFFER_PG_TABLE:Ethernet0:3 has profile 'pg_lossless_400000_3m_profile' with xoff '0'/);
        assert.ok(has(r, "sudo config rollback") && !fs.existsSync(path.join(r.dir, "saved.json")), show(r));
        assert.deepEqual(sonicDb(r.dir), FACTORY);
    });
    it("verify on operational state: a lossless PG without any profile in APPL_DB is refused too", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
        sonicState(dir, FACTORY, "61440", 4); // the buffer manager only has rows for PG 4
        const r = run(c, {}, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /BUFFER_PG_TABLE:Ethernet0:3 has profile 'none'/);
        assert.deepEqual(sonicDb(r.dir), FACTORY);
    });
    it("a PFC watchdog change GCU refuses on this ASIC/image stops at the dry run, saying so, before any change", () => {
        const r = run(c, { STUB_GCU_REFUSE_PFCWD: "1" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'config apply-patch --dry-run \(YANG validation\)' failed \(exit 1: GCU refuses the PFC watchdog change on this switch/);
        assert.ok(!has(r, "systemd-run") && !log(r.dir).some((l) => l.startsWith("config apply-patch /")), show(r));
        assert.deepEqual(sonicDb(r.dir), FACTORY);
    });
    it("a port whose running speed is not the planned one is refused read-only, before any change", () => {
        const db = structuredClone(FACTORY);
        db.PORT.Ethernet8.speed = "100000";
        const r = run(c, {}, fresh(db));
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'check the port speeds \(read-only\)' failed/);
        assert.match(r.stderr, /PORT\|Ethernet8 runs speed 100000 Mb\/s, the plan says 400000/);
        assert.ok(!has(r, "config checkpoint") && !has(r, "apply-patch"), show(r));
    });
    it("verify: a switch that reports success but drops a change is rolled back, not saved", () => {
        const r = run(c, { STUB_PATCH_DROP: "1" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify[^']*' failed/);
        assert.match(r.stderr, /CONFIG_DB differs from the rendered configuration/);
        assert.ok(has(r, "sudo config rollback") && !fs.existsSync(path.join(r.dir, "saved.json")), show(r));
        assert.deepEqual(sonicDb(r.dir), FACTORY);
    });
    it("a switch on the traditional buffer model is refused with the reason, untouched", () => {
        const r = run(c, { STUB_BUFFER_MODEL: "traditional" }, fresh());
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /step 'buffer model check' failed \(buffer_model is 'traditional'; the lossless PGs need the dynamic model/);
        assert.ok(!has(r, "config checkpoint"));
    });

    // The session drops mid-apply: the job goes on detached, or, when it hangs, the switch's own timer stops it and
    // restores the checkpoint. STUB_DEADMAN_S: the stub timer fires after that many seconds instead of 600.
    it("the session dies while the apply hangs half-done: the dead-man timer fires and restores the checkpoint", async () => {
        const dir = fresh();
        const p = spawnPush(c, dir, { STUB_APPLY_HANG: "1", STUB_DEADMAN_S: "3" });
        await until(() => half(dir), 20_000, "the apply wrote half its changes");
        assert.notDeepEqual(sonicDb(dir), FACTORY, "the switch is half-configured now");
        process.kill(-p.pid!, "SIGKILL"); // the session (and the ssh it ran) is gone
        await until(() => log(dir).some((l) => /^timer rdmakit-deadman-\S+ fired$/.test(l)), 20_000, "the dead-man timer fired");
        await until(() => JSON.stringify(sonicDb(dir)) === JSON.stringify(FACTORY), 20_000, "CONFIG_DB restored");
        assert.ok(log(dir).some((l) => /^config rollback rdmakit-[0-9a-f]{12}$/.test(l)), log(dir).join("\n"));
        assert.ok(!fs.existsSync(path.join(dir, "saved.json")), "nothing saved");
        await until(() => !running(dir), 10_000, "the hung job was stopped");
    });
    it("the session stays while the apply hangs: it reports that the dead-man timer undid the change", () => {
        const r = run(c, { STUB_APPLY_HANG: "1", STUB_DEADMAN_S: "3" }, fresh());
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'apply job' failed \(it did not finish within 600 s\); the dead-man timer undid the change \(rolled back to rdmakit-/);
        assert.deepEqual(sonicDb(r.dir), FACTORY);
        assert.ok(!fs.existsSync(path.join(r.dir, "saved.json")));
    });
    it("the session dies while a slow apply runs: the detached job finishes, saves and cancels the timer", async () => {
        const dir = fresh();
        const p = spawnPush(c, dir, { STUB_APPLY_SLOW: "2", STUB_DEADMAN_S: "30" });
        await until(() => log(dir).some((l) => l.startsWith("config apply-patch /")), 20_000, "the real apply started");
        process.kill(-p.pid!, "SIGKILL");
        await until(() => fs.existsSync(path.join(dir, "saved.json")), 20_000, "the job saved");
        await until(() => log(dir).some((l) => l.startsWith("systemctl stop rdmakit-deadman-")), 10_000, "the timer was cancelled");
        const db = sonicDb(dir);
        assert.deepEqual(db.BUFFER_PG["Ethernet0|3"], { profile: "NULL" });
        assert.deepEqual(JSON.parse(fs.readFileSync(path.join(dir, "saved.json"), "utf8")), db);
        assert.ok(!log(dir).some((l) => l.startsWith("config rollback")), log(dir).join("\n"));
    });
});


describe("EOS push: configure session, commit timer, verify, confirm, save, over ssh with the pinned host key", () => {
    const { cmd } = pushes();
    const c = cmd["leaf-eos"];
    const session = `rdmakit-${c.digest.slice(0, 12)}`;

    it("stages the rendered lines in a session, commits with a timer, verifies, confirms and saves", () => {
        const r = run(c);
        assert.equal(r.status, 0, show(r));
        const calls = r.log.filter((l) => l.startsWith("ssh "));
        assert.match(calls[0], /^ssh enable;configure session rdmakit-[0-9a-f]{12};! rdmakit RoCE QoS/);
        assert.ok(calls[0].includes(";no qos profile RDMAKIT_ROCE;qos profile RDMAKIT_ROCE;"));
        assert.match(calls[1], /configure session rdmakit-[0-9a-f]{12};commit timer 00:10:00;$/);
        assert.match(calls[2], /show session-config named rdmakit-[0-9a-f]{12} diffs/);
        assert.match(calls[3], /;configure session rdmakit-[0-9a-f]{12} commit;$/);
        assert.match(calls[4], /copy running-config startup-config/);
        // the host key is the one the spec pins, and nothing else is trusted
        assert.equal(fs.readFileSync(path.join(r.dir, "known_hosts.seen"), "utf8"), `10.0.1.3 ${HOST_KEY}\n`);
        const args = r.log.find((l) => l.startsWith("ssh-args "))!;
        assert.match(args, /-o StrictHostKeyChecking=yes/);
        assert.match(args, /-o GlobalKnownHostsFile=\/dev\/null/);
        assert.match(args, /admin@10\.0\.1\.3$/);
    });

    // Found by the trust audit (w10): what the switch answered went to a file here without a bound, so a switch
    // answering without end filled the controller's disk until the ssh timeout
    it("a switch that answers without end is stopped at ANSWER_KIB, the session aborted, nothing saved", () => {
        const r = run(c, { STUB_EOS_FLOOD: "show session-config named" });
        assert.notEqual(r.status, 0, show(r));
        assert.ok(r.stderr.includes("rdmakit: leaf-eos: step 'verify (session and running config agree)' failed (the switch answered more than 65536 KiB: stopped at the file size limit"), show(r));
        assert.ok(has(r, "abort;"), show(r));
        assert.ok(!has(r, "copy running-config"), show(r));
    });

    const steps: Array<[string, string, boolean]> = [
        ["qos trust dscp", "configure session (stage the configuration)", true],
        ["commit timer", "commit timer", true],
        ["show session-config named", "verify (session and running config agree)", true],
        [`${session} commit`, "confirm (configure session commit)", true],
    ];
    for (const [call, stepName, aborted] of steps) {
        it(`a failing '${call.trim()}' aborts the session; nothing confirmed or saved`, () => {
            const r = run(c, { STUB_FAIL: call });
            assert.notEqual(r.status, 0, show(r));
            assert.ok(r.stderr.includes(`rdmakit: leaf-eos: step '${stepName}' failed`), show(r));
            assert.ok(!has(r, "copy running-config"), show(r));
            assert.equal(has(r, "abort;"), aborted, show(r));
            if (!call.endsWith(" commit")) assert.ok(!r.log.some((l) => / commit;$/.test(l) && !l.includes("timer")), show(r));
        });
        it(`a line the switch refuses at '${call.trim()}' ('% Invalid input') is a failure too`, () => {
            const r = run(c, { STUB_EOS_REFUSE: call });
            assert.notEqual(r.status, 0, show(r));
            assert.ok(r.stderr.includes(`step '${stepName}' failed (the switch refused a line)`), show(r));
            assert.ok(!has(r, "copy running-config"));
        });
    }
    it("verify: a running config that differs from the session is aborted", () => {
        const r = run(c, { STUB_EOS_DIFF: "--- system:/running-config\n+++ session:/rdmakit-x\n+   priority-flow-control priority 3 no-drop\n" });
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /the running config differs from the session/);
        assert.ok(has(r, "abort;") && !has(r, "copy running-config"));
    });
    it("a failing save names the step and says the change is committed but unsaved", () => {
        const r = run(c, { STUB_FAIL: "copy running-config" });
        assert.notEqual(r.status, 0);
        assert.match(r.stderr, /step 'copy running-config startup-config' failed .*not saved to startup-config/);
    });
});

describe("rendered changes when RoCE moves from priority 3 to 4 (NVUE, EOS)", () => {
    it("NVUE: the new file has PFC, the switch-priority map and ECN only for priority 4, and the push unsets qos first", () => {
        const c = pushes({ rocePriority: 4 }).cmd["leaf-nvue"];
        const set = (parseYaml(c.stdin) as Array<{ set: Record<string, any> }>)[0].set;
        assert.deepEqual(Object.keys(set.qos.pfc["default-global"]["switch-priority"]), ["4"]);
        assert.deepEqual(set.qos["egress-queue-mapping"]["default-global"]["switch-priority"]["3"], { "traffic-class": 0 });
        assert.deepEqual(set.qos["egress-queue-mapping"]["default-global"]["switch-priority"]["4"], { "traffic-class": 3 });
        const script = roceScript("nvue_push.sh");
        assert.ok(script.indexOf("nv unset $p") > 0 && script.indexOf("nv unset $p") < script.indexOf("nv config patch \"$f.new\""));
    });
    it("EOS: the profile is removed and written again with no-drop on 4 only", () => {
        const L = pushes({ rocePriority: 4 }).cmd["leaf-eos"].stdin.split("\n");
        assert.ok(L.indexOf("no qos profile RDMAKIT_ROCE") < L.indexOf("qos profile RDMAKIT_ROCE"));
        assert.deepEqual(L.filter((l) => /no-drop$/.test(l)), ["   priority-flow-control priority 4 no-drop"]);
        assert.ok(L.includes("qos map dscp 26 to traffic-class 4"));
    });
});

/** Every file and folder under ~/rdmakit with its mode, and the dumps the push read back that are still there. */
function switchSide(dir: string): { modes: Array<[string, string]>; dumps: string[] } {
    const root = path.join(dir, "home", "rdmakit");
    const modes: Array<[string, string]> = [];
    const dumps: string[] = [];
    const walk = (p: string, rel: string) => {
        const st = fs.statSync(p);
        modes.push([rel, (st.mode & 0o777).toString(8)]);
        if (/^(applied|roce-oper|running|after)\.json$/.test(path.basename(p))) dumps.push(rel);
        if (st.isDirectory()) for (const f of fs.readdirSync(p)) walk(path.join(p, f), `${rel}/${f}`);
    };
    walk(root, "~/rdmakit");
    return { modes, dumps };
}

// issue 34 finding 11: a switch whose login umask is 022 (the ssh stand-in starts the remote part under it) must not
// be left with a world-readable ~/rdmakit or CONFIG_DB dumps (TACACS/RADIUS keys, SNMP communities).
describe("switch-side files under a login umask of 022: private, and no dump of the switch's state left behind", () => {
    const { cmd } = pushes();
    const privateOnly = (r: Run) => {
        const { modes, dumps } = switchSide(r.dir);
        assert.deepEqual(dumps, [], `dumps left on the switch:\n${show(r)}`);
        const open = modes.filter(([, m]) => (parseInt(m, 8) & 0o077) !== 0);
        assert.deepEqual(open, [], "every file and folder under ~/rdmakit is owner-only");
    };
    for (const [sw, prep] of [
        ["leaf-nvue", (dir: string) => nvueApplied(dir, cmd["leaf-nvue"].stdin)],
        ["leaf-sonic", (dir: string) => sonicState(dir)],
    ] as const) {
        it(`${sw}: a good push leaves ~/rdmakit 0700 with owner-only files and no dump`, () => {
            const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
            prep(dir);
            // an earlier push (or the operator) left the folder open: it is made private too
            fs.mkdirSync(path.join(dir, "home", "rdmakit"), { recursive: true, mode: 0o755 });
            fs.chmodSync(path.join(dir, "home", "rdmakit"), 0o755);
            const r = run(cmd[sw], { STUB_LOGIN_UMASK: "022" }, dir);
            assert.equal(r.status, 0, show(r));
            privateOnly(r);
        });
    }
    it("leaf-nvue: a verify that fails removes the dumps it read too", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
        nvueApplied(dir, cmd["leaf-nvue"].stdin, (set) => { delete set.qos.pfc["default-global"]["switch-priority"]["3"]; });
        const r = run(cmd["leaf-nvue"], { STUB_LOGIN_UMASK: "022" }, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify[^']*' failed/);
        privateOnly(r);
    });
    it("leaf-sonic: a verify that fails in the apply job removes the CONFIG_DB it read back", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-push-"));
        sonicState(dir);
        const r = run(cmd["leaf-sonic"], { STUB_LOGIN_UMASK: "022", STUB_PATCH_DROP: "1" }, dir);
        assert.notEqual(r.status, 0, show(r));
        assert.match(r.stderr, /step 'verify[^']*' failed/);
        privateOnly(r);
    });
});
