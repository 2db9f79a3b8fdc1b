/**
 * What a Slurm head node's `sinfo` printed, read as untrusted text: bounded in size and line length, walked once
 * (linear in its length), and refused with a message naming the bound when it is over it, never read in part as if
 * it were the whole answer. gate.ts (`sinfo -R` drain reasons) and day2/scale-live.ts (`sinfo -N -o '%N %T'`) read
 * through it.
 */
import * as fs from "node:fs";

/**
 * The most of one `sinfo` answer the kit reads. `sinfo -h -R -o '%n|%t|%E'` prints one line per drained or down node
 * (sinfo(1) `-R`, `%n`): a name, a state code and the reason; 4 MiB holds 16,384 nodes with 250-character lines, more
 * than the largest plan the kit makes (bench/: 2,048 hosts). source: https://slurm.schedmd.com/sinfo.html
 */
export const MAX_SINFO_CHARS = 4 * 1024 * 1024;

/**
 * The longest line read: a node name (at most 128 characters here), a state code and a reason; the kit writes reasons
 * of at most 200 characters (gate.ts MAX_REASON), an operator's may be longer, and they are cut to 200 when shown.
 */
export const MAX_SINFO_LINE = 1024;

export class SinfoError extends Error {}

/**
 * The lines of `text`, each once, in order; a line longer than MAX_SINFO_LINE comes as `undefined` (not read: the
 * caller counts it). Throws SinfoError when the text is over MAX_SINFO_CHARS, naming `what`.
 */
export function* sinfoLines(text: string, what: string): Generator<string | undefined> {
    if (text.length > MAX_SINFO_CHARS) throw new SinfoError(`${what}: the answer is over ${MAX_SINFO_CHARS} characters: not read`);
    for (let start = 0; start < text.length;) {
        let end = text.indexOf("\n", start);
        if (end < 0) end = text.length;
        yield end - start > MAX_SINFO_LINE ? undefined : text.slice(start, end);
        start = end + 1;
    }
}

/** A file that holds an answer of sinfo (the playbooks write it), read only when it is within MAX_SINFO_CHARS bytes. */
export function readSinfoFile(file: string, what: string): string {
    const size = fs.statSync(file).size;
    if (size > MAX_SINFO_CHARS) throw new SinfoError(`${what} (${file}): ${size} bytes, over ${MAX_SINFO_CHARS}: not read`);
    return fs.readFileSync(file, "utf8");
}
