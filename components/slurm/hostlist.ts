/**
 * Slurm hostlist expressions (`gpu[01-04],head`), pure: names that share a prefix and a fixed-width number
 * compress into ranges, so a NodeName or SwitchName line for 2,048 nodes stays short. The expansion is Slurm's own
 * (slurm.schedmd.com/slurm.conf.html "NodeName ... hostlist expression"); the kit only writes it.
 */
export function compressHostlist(names: string[]): string[] {
    const out: string[] = [];
    let run: { prefix: string; width: number; from: number; to: number; fromText: string; toText: string } | undefined;
    const flush = () => {
        if (!run) return;
        out.push(run.from === run.to ? `${run.prefix}${run.fromText}` : `${run.prefix}[${run.fromText}-${run.toText}]`);
        run = undefined;
    };
    for (const n of names) {
        const m = /^(.*?)(\d+)$/.exec(n);
        if (!m) {
            flush();
            out.push(n);
            continue;
        }
        const [, prefix, digits] = m;
        const value = Number(digits);
        if (run && run.prefix === prefix && run.width === digits.length && value === run.to + 1 && Number.isSafeInteger(value)) {
            run.to = value;
            run.toText = digits;
        } else {
            flush();
            run = { prefix, width: digits.length, from: value, to: value, fromText: digits, toText: digits };
        }
    }
    flush();
    // a range of leading-zero numbers keeps its width on both ends ("001-128"), which is how Slurm reads the width
    return out;
}

/** Hostlist tokens packed into comma-joined chunks of at most `maxChars` (one token longer than that stands alone). */
export function hostlistChunks(names: string[], maxChars = 400): string[] {
    const chunks: string[] = [];
    let cur = "";
    for (const t of compressHostlist(names)) {
        if (cur && cur.length + 1 + t.length > maxChars) {
            chunks.push(cur);
            cur = t;
        } else cur = cur ? `${cur},${t}` : t;
    }
    if (cur) chunks.push(cur);
    return chunks;
}
