/**
 * SONiC's operational reads for `rdmakit fabric check` (rule C20): a read-only script the check sends over ssh
 * (`sh -s`), its pure parser, and the findings against the plan. What it reads, per port the plan puts on the RoCE path:
 *
 * - `show pfc priority`: the lossless priorities per port. Output as sonic-utilities prints it
 *   (sonic-net/sonic-utilities@691b1bbc4fd2:pfc/main.py showPfcPrio: a line with the namespace ("Namespace asicN" on a
 *   multi-ASIC switch, empty otherwise), then tabulate "simple" with the header `Interface  Lossless priorities`, one row
 *   per PORT_QOS_MAP key with its pfc_enable, or `N/A` when the row has none; tests/pfc_input/assert_show_output.py
 *   pfc_show_priority_all is the expected text).
 * - `show pfcwd config`: the watchdog per port (pfcwd/main.py collect_config/config: optional lines
 *   "Changed polling interval to <n>ms[ on <ns>]" and "BIG_RED_SWITCH status is <x>[ on <ns>]", then a right-aligned
 *   table PORT, ACTION, DETECTION TIME, RESTORATION TIME and, in images with pfc_stat_history, HISTORY; a port without
 *   a PFC_WD row is not listed, i.e. not armed; tests/pfcwd_input/pfcwd_test_vectors.py pfcwd_show_config_output and
 *   show_pfc_config_all are the expected texts).
 * - APPL_DB `BUFFER_PG_TABLE:<port>:<pg>` profile and the xoff of `BUFFER_PROFILE_TABLE:<profile>`: the headroom the
 *   dynamic buffer manager computed (sonic-net/sonic-swss@e6b0c5b5d2ab:cfgmgr/buffermgrdyn.cpp). A lossless PG
 *   without a profile or with zero xoff drops under pause (sonic-net/SONiC#480).
 *
 * `sonic-db-cli <DB> HGET <key> <field>` prints the value as it is, and an empty line for a missing key or field: it
 * mimics redis-cli's non-tty output; a string or nil reply goes through RedisReply::formatReply(command, str, len),
 * which returns the bytes (none for nil). source: sonic-net/sonic-swss-common@85a39d8004ad:sonic-db-cli/sonic-db-cli.cpp
 * executeCommands and common/redisreply.cpp to_string / formatReply (confirmed from that code; HGETALL instead prints
 * a Python-dict-like `{'k': 'v'}`, which is why the script reads single fields with HGET).
 */
import type { Finding } from "./drift";
import type { QosPlan, SwitchPlan } from "./qos";

/** What the script printed, parsed. A section that could not be read carries its error instead. */
export interface SonicOper {
    /** Port → lossless priorities from `show pfc priority` ([] for N/A); or why the section is unreadable. */
    pfc: Map<string, number[]> | { error: string };
    /** Port → watchdog row from `show pfcwd config`; or why the section is unreadable. */
    pfcwd: Map<string, { action: string; detection: string; restoration: string }> | { error: string };
    /** `<port>:<pg>` → the profile APPL_DB names and that profile's xoff ("" when absent). */
    pgs: Map<string, { profile: string; xoff: string } | { error: string }>;
}

/**
 * The read-only script for one switch: the two show commands and, for each port's RoCE priority group, the two HGETs.
 * Sections start with `@@<name>`; a command that fails prints `@@error <section> <why>`.
 */
export function sonicOperScript(sw: SwitchPlan): string {
    const pgs = sw.ports.map((p) => `${p.name}:${sw.roce.priorityGroup}`);
    return [
        "echo '@@rdmakit-sonic-oper'",
        "echo '@@pfc'; show pfc priority 2>&1 || echo \"@@error pfc show pfc priority: exit $?\"",
        "echo '@@pfcwd'; show pfcwd config 2>&1 || echo \"@@error pfcwd show pfcwd config: exit $?\"",
        `for pg in ${pgs.join(" ")}; do`,
        '  p=$(sonic-db-cli APPL_DB HGET "BUFFER_PG_TABLE:$pg" profile) || { echo "@@error pg:$pg sonic-db-cli APPL_DB HGET BUFFER_PG_TABLE:$pg profile: exit $?"; continue; }',
        // older images wrote the reference as [BUFFER_PROFILE_TABLE:<name>] (buffermgrdyn.cpp history); both are read
        '  p=${p#[}; p=${p%]}; p=${p#BUFFER_PROFILE_TABLE:}; x=""',
        '  if [ -n "$p" ]; then x=$(sonic-db-cli APPL_DB HGET "BUFFER_PROFILE_TABLE:$p" xoff) || { echo "@@error pg:$pg sonic-db-cli APPL_DB HGET BUFFER_PROFILE_TABLE:$p xoff: exit $?"; continue; }; fi',
        '  echo "@@pg $pg profile=$p xoff=$x"',
        "done",
        "echo '@@end'",
    ].join("\n") + "\n";
}

const NUM_LIST = /^\d(,\d)*$/;

function parsePfc(lines: string[]): SonicOper["pfc"] {
    const h = lines.findIndex((l) => /^Interface\s+Lossless priorities\s*$/.test(l));
    if (h < 0) return { error: `show pfc priority: no 'Interface  Lossless priorities' header in '${lines.join(" / ").slice(0, 200)}'` };
    const out = new Map<string, number[]>();
    for (const l of lines.slice(h + 1)) {
        if (!l.trim() || /^-+\s+-+\s*$/.test(l) || l.startsWith("Namespace ")) continue;
        const m = l.trim().match(/^(\S+)\s+(\S+)$/);
        if (!m || (m[2] !== "N/A" && !NUM_LIST.test(m[2]))) return { error: `show pfc priority: cannot read the row '${l.trim()}' (expected '<port> <priorities like 3,4 or N/A>')` };
        out.set(m[1], m[2] === "N/A" ? [] : m[2].split(",").map(Number));
    }
    return out;
}

function parsePfcwd(lines: string[]): SonicOper["pfcwd"] {
    const h = lines.findIndex((l) => /^\s*PORT\s+ACTION\s+DETECTION TIME\s+RESTORATION TIME(\s+HISTORY)?\s*$/.test(l));
    if (h < 0) return { error: `show pfcwd config: no 'PORT ACTION DETECTION TIME RESTORATION TIME' header in '${lines.join(" / ").slice(0, 200)}'` };
    const cols = /HISTORY/.test(lines[h]) ? 5 : 4;
    const out = new Map<string, { action: string; detection: string; restoration: string }>();
    for (const l of lines.slice(h + 1)) {
        if (!l.trim() || /^[-\s]+$/.test(l)) continue;
        const f = l.trim().split(/\s+/);
        if (f.length !== cols) return { error: `show pfcwd config: cannot read the row '${l.trim()}' (expected ${cols} columns)` };
        out.set(f[0], { action: f[1], detection: f[2], restoration: f[3] });
    }
    return out;
}

/** Parses what sonicOperScript printed. Throws when the output is not the script's (no header or no end marker). */
export function parseSonicOper(text: string): SonicOper {
    const lines = text.split("\n");
    if (lines[0]?.trim() !== "@@rdmakit-sonic-oper") throw new Error("the output is not the kit's SONiC operational read (no @@rdmakit-sonic-oper line first)");
    if (!lines.some((l) => l.trim() === "@@end")) throw new Error("the SONiC operational read ends early (no @@end line)");
    const body: Record<string, string[]> = { pfc: [], pfcwd: [] };
    const errors: Record<string, string> = {};
    const pgs: SonicOper["pgs"] = new Map();
    let section = "";
    for (const l of lines.slice(1)) {
        const err = l.match(/^@@error (\S+) (.*)$/);
        if (err) { errors[err[1]] = err[2]; continue; }
        const pg = l.match(/^@@pg (\S+) profile=(\S*) xoff=(.*)$/);
        if (pg) { pgs.set(pg[1], { profile: pg[2], xoff: pg[3].trim() }); section = ""; continue; }
        if (l.startsWith("@@")) { section = l.slice(2).trim(); continue; }
        // own sections only: `in` also finds what every object inherits (@@constructor, @@__proto__ threw a TypeError)
        if (Object.hasOwn(body, section)) body[section].push(l);
    }
    for (const [k, why] of Object.entries(errors)) if (k.startsWith("pg:")) pgs.set(k.slice(3), { error: why });
    return {
        pfc: errors.pfc ? { error: `${errors.pfc}: ${body.pfc.join(" / ").trim().slice(0, 200)}` } : parsePfc(body.pfc),
        pfcwd: errors.pfcwd ? { error: `${errors.pfcwd}: ${body.pfcwd.join(" / ").trim().slice(0, 200)}` } : parsePfcwd(body.pfcwd),
        pgs,
    };
}

const isError = (x: unknown): x is { error: string } => !!x && typeof x === "object" && "error" in x;

/**
 * C20 for SONiC: what the switch runs against the plan, per port on the RoCE path. Lossless: PFC on exactly the
 * plan's priorities, the watchdog armed with the planned action and detection time, and headroom (xoff > 0) on the
 * RoCE priority group. Lossy: no PFC priorities. `unreadable` gets what could not be read, never a pass.
 */
export function sonicOperFindings(plan: QosPlan, sw: SwitchPlan, o: SonicOper): { findings: Finding[]; unreadable: Array<{ device: string; why: string }> } {
    const findings: Finding[] = [], unreadable: Array<{ device: string; why: string }> = [];
    const lossless = plan.mode === "lossless";
    const want = plan.pfc.priorities;
    if (isError(o.pfc)) unreadable.push({ device: sw.name, why: `operational PFC (C20): ${o.pfc.error}` });
    if (lossless && isError(o.pfcwd)) unreadable.push({ device: sw.name, why: `operational PFC watchdog (C20): ${o.pfcwd.error}` });
    for (const p of sw.ports) {
        const device = `${sw.name}:${p.name}`;
        if (!isError(o.pfc)) {
            const got = o.pfc.get(p.name);
            if (got === undefined) findings.push({ device, rule: "C20", message: `show pfc priority lists no PORT_QOS_MAP row for ${p.name}, so the switch runs no PFC there`, expected: { pfcPriorities: want }, found: { pfcPriorities: "(no row)" } });
            else if (JSON.stringify([...got].sort()) !== JSON.stringify([...want].sort())) findings.push({ device, rule: "C20", message: `show pfc priority says ${p.name} is lossless on [${got.join(",")}], the plan on [${want.join(",")}]`, expected: { pfcPriorities: want }, found: { pfcPriorities: got } });
        }
        if (!lossless) continue;
        if (!isError(o.pfcwd)) {
            const wd = o.pfcwd.get(p.name);
            const w = plan.pfc.watchdog;
            if (!wd) findings.push({ device, rule: "C20", message: `show pfcwd config does not list ${p.name}: the PFC watchdog is not armed there, so a pause storm stalls the RoCE queue`, expected: { watchdog: { action: w.action, detectionMs: w.detectionMs } }, found: { watchdog: "(not armed)" } });
            else if (wd.action !== w.action || wd.detection !== String(w.detectionMs)) findings.push({ device, rule: "C20", message: `the PFC watchdog on ${p.name} runs action ${wd.action}, detection ${wd.detection} ms; the plan says ${w.action}, ${w.detectionMs} ms`, expected: { action: w.action, detection: String(w.detectionMs) }, found: { action: wd.action, detection: wd.detection } });
        }
        const key = `${p.name}:${sw.roce.priorityGroup}`;
        const pg = o.pgs.get(key);
        if (pg === undefined) unreadable.push({ device, why: `operational headroom (C20): the read printed nothing for APPL_DB BUFFER_PG_TABLE:${key}` });
        else if (isError(pg)) unreadable.push({ device, why: `operational headroom (C20): ${pg.error}` });
        else if (!pg.profile || !/^\d+$/.test(pg.xoff) || Number(pg.xoff) === 0) {
            findings.push({ device, rule: "C20", message: `APPL_DB BUFFER_PG_TABLE:${key} has ${pg.profile ? `profile ${pg.profile} with xoff '${pg.xoff || "none"}'` : "no profile"}: the buffer manager gave the lossless PG no headroom, so PFC cannot keep it lossless (sonic-net/SONiC#480)`, expected: { xoff: "> 0" }, found: { profile: pg.profile || "(none)", xoff: pg.xoff || "(none)" } });
        }
    }
    return { findings, unreadable };
}
