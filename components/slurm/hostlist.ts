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

/**
 * Names with their addresses as `NodeName=<range> NodeAddr=<range>` pairs: consecutive entries whose name and address
 * both count up by one (same prefix, same width) share one pair, which Slurm expands in step (slurm.conf NodeAddr: "may
 * also be specified as a hostlist expression", the counts must match). Sequentially numbered hosts on sequential
 * addresses (the usual rack layout) make a few lines for thousands of nodes; anything else falls back to one per host.
 */
export function pairedRanges(names: string[], addrs: string[]): { names: string; addrs: string }[] {
    const out: { names: string; addrs: string }[] = [];
    const split = (s: string) => {
        const m = /^(.*?)(\d+)$/.exec(s);
        return m ? { prefix: m[1], digits: m[2], value: Number(m[2]) } : undefined;
    };
    let i = 0;
    while (i < names.length) {
        const n0 = split(names[i]);
        const a0 = split(addrs[i]);
        let j = i + 1;
        if (n0 && a0) {
            for (; j < names.length; j++) {
                const n = split(names[j]);
                const a = split(addrs[j]);
                const step = j - i;
                if (!n || !a || n.prefix !== n0.prefix || n.digits.length !== n0.digits.length || n.value !== n0.value + step) break;
                // addresses: no leading zeros in an IPv4 octet, so the width may grow (9 -> 10) only where Slurm reads it the same
                if (a.prefix !== a0.prefix || a.value !== a0.value + step || String(a.value) !== a.digits || String(a0.value) !== a0.digits) break;
            }
        }
        if (j - i === 1) out.push({ names: names[i], addrs: addrs[i] });
        else {
            const nl = split(names[j - 1])!;
            const al = split(addrs[j - 1])!;
            out.push({ names: `${n0!.prefix}[${n0!.digits}-${nl.digits}]`, addrs: `${a0!.prefix}[${a0!.digits}-${al.digits}]` });
        }
        i = j;
    }
    return out;
}
