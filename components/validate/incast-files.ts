/**
 * The incast's files as playbooks/roles/nccl_validate/tasks/incast.yml fetches them into one folder: `plan.json` (the
 * IncastPlan the run followed), `<host>-before.txt` / `<host>-after.txt` (snapshotCommand's output) and
 * `<sender>-client.log` (its ib_write_bw output). A missing snapshot or log is left out, and the grade names it.
 */
import * as fs from "fs";
import * as path from "path";
import { parseSnapshot, type IncastPlan, type IncastRun, type Snapshot } from "./incast";

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
    const before: Record<string, Snapshot> = {};
    const after: Record<string, Snapshot> = {};
    const clients: Record<string, string> = {};
    for (const h of [plan.receiver, ...plan.senders]) {
        const b = read(`${h.name}-before.txt`);
        const a = read(`${h.name}-after.txt`);
        if (b !== undefined) before[h.name] = parseSnapshot(b);
        if (a !== undefined) after[h.name] = parseSnapshot(a);
    }
    for (const s of plan.senders) {
        const log = read(`${s.name}-client.log`);
        if (log !== undefined) clients[s.name] = log;
    }
    return { plan, before, after, clients };
}
