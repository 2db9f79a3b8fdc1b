/**
 * The incast's files as playbooks/roles/nccl_validate/tasks/incast.yml fetches them into one folder: `plan.json` (the
 * IncastPlan the run followed), `<host>-before.txt` / `<host>-after.txt` (snapshotCommand's output) and
 * `<sender>-client.log` (its ib_write_bw output); in lossless mode the same files of the reaction-point-off phase with
 * the `rpoff-` prefix, and `rpoff-<sender>-rp.txt` (its roce_rp enable file after the kit wrote 0). A missing snapshot
 * or log is left out, and the grade names it.
 */
import * as fs from "fs";
import * as path from "path";
import { parseSnapshot, type IncastPhase, type IncastPlan, type IncastRun, type Snapshot } from "./incast";
import { RP_OFF_PREFIX } from "./incast-rpoff";

/** The run in `dir`, or a message saying why it cannot be read. */
export function readIncastDir(dir: string): IncastRun | string {
    let plan: IncastPlan;
    try {
        plan = JSON.parse(fs.readFileSync(path.join(dir, "plan.json"), "utf8")) as IncastPlan;
    } catch (e) {
        return `${dir}/plan.json: cannot read the incast plan (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`;
    }
    if (!plan?.receiver?.name || !Array.isArray(plan.senders)) return `${dir}/plan.json: not an incast plan (receiver and senders expected)`;
    const read = (file: string): string | undefined => {
        try {
            return fs.readFileSync(path.join(dir, file), "utf8");
        } catch {
            return undefined;
        }
    };
    const phase = (prefix: string): IncastPhase => {
        const before: Record<string, Snapshot> = {};
        const after: Record<string, Snapshot> = {};
        const clients: Record<string, string> = {};
        for (const h of [plan.receiver, ...plan.senders]) {
            const b = read(`${prefix}${h.name}-before.txt`);
            const a = read(`${prefix}${h.name}-after.txt`);
            if (b !== undefined) before[h.name] = parseSnapshot(b);
            if (a !== undefined) after[h.name] = parseSnapshot(a);
        }
        for (const s of plan.senders) {
            const log = read(`${prefix}${s.name}-client.log`);
            if (log !== undefined) clients[s.name] = log;
        }
        return { before, after, clients };
    };
    const run: IncastRun = { plan, ...phase("") };
    if (plan.rpOffPhase) {
        const rpRead: Record<string, string> = {};
        for (const s of plan.senders) {
            const v = read(`${RP_OFF_PREFIX}${s.name}-rp.txt`);
            if (v !== undefined) rpRead[s.name] = v;
        }
        const off = phase(RP_OFF_PREFIX);
        // the phase ran when anything of it came back; the grade names what is missing
        if (Object.keys(rpRead).length || Object.keys(off.before).length || Object.keys(off.clients).length) run.rpOff = { ...off, rpRead };
    }
    return run;
}
