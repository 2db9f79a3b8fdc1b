import type { SpecIssue } from "./errors";

/*
 * How a refused value is told to the person who typed it: the closest known name (a typo'd key or enum value),
 * what a value of the wrong type most likely was in the YAML (a quoted number, `no` read as text, an empty value),
 * and a typo'd key told once rather than as an unknown key and a missing field. Pure functions over plain data.
 */

/** A name as compared for a suggestion: lower case, without - _ and spaces (availability_zone ~ availabilityZone). */
const norm = (s: string) => s.toLowerCase().replace(/[-_\s]/g, "");

/**
 * The known name closest to `given`, or undefined when none is close: the same name in another case or with other
 * separators; one containing the other (`memory` ~ realMemory, `nodeCount` ~ nodes, `p5.48xl` ~ p5.48xlarge); or an
 * edit distance (a swap of two neighbours counts one) of at most a third of the name. A name of three letters or less
 * is suggested only by containment: `pfc` is no typo of ecn. Names that both hold numbers are another thing, not a
 * typo, where the letters before the first digit differ or a number differs (sameKind): gpu10 is not gpu01, leaf3 not
 * leaf1, p5.24xlarge not g5.24xlarge, Standard_ND96isr_H100_v6 not …_v5.
 */
export function closest(given: string, known: readonly string[]): string | undefined {
    const g = norm(given);
    if (g.length === 0) return undefined;
    let best: string | undefined;
    let bestDist = Infinity;
    for (const k of known) {
        const n = norm(k);
        if (n === g) return k;
        if (!sameKind(given, k)) continue;
        const stem = n.length > 3 && n.endsWith("s") ? n.slice(0, -1) : n;
        const d = editDistance(g, n);
        const contains = Math.min(g.length, stem.length) >= 3 && (g.includes(stem) || n.includes(g));
        const near = g.length > 3 && d <= Math.max(1, Math.floor(g.length / 3));
        if ((contains || near) && d < bestDist) [best, bestDist] = [k, d];
    }
    return best;
}

/**
 * False where both names hold digits and they name different things: the text before the first digit differs (an
 * instance family: p5 / g5, Standard_NC / Standard_ND), or a number differs where both have one (the numbers compared
 * in order as integers, so p5-demo-3 ~ p5-demo-003 and p5e ~ p5e.48xlarge). Read on the names as written: without
 * their separators, H100_5 would read as the number 1005.
 */
function sameKind(a: string, b: string): boolean {
    const numbers = (s: string) => (s.match(/\d+/g) ?? []).map((d) => BigInt(d));
    const [na, nb] = [numbers(a), numbers(b)];
    if (na.length === 0 || nb.length === 0) return true;
    if (norm(a.slice(0, a.search(/\d/))) !== norm(b.slice(0, b.search(/\d/)))) return false;
    return na.slice(0, nb.length).every((x, i) => x === nb[i]);
}

/** " (did you mean X?)" for the closest known name, when one is close. */
export function suggest(given: string, known: readonly string[]): string {
    const best = closest(given, known);
    return best === undefined ? "" : ` (did you mean ${best}?)`;
}

/** Optimal string alignment distance: insertions, deletions, substitutions and swaps of neighbours, one each. */
function editDistance(a: string, b: string): number {
    const rows: number[][] = [Array.from({ length: b.length + 1 }, (_, j) => j)];
    for (let i = 1; i <= a.length; i++) {
        const row = [i];
        for (let j = 1; j <= b.length; j++) {
            const cost = a[i - 1] === b[j - 1] ? 0 : 1;
            let d = Math.min(rows[i - 1][j] + 1, row[j - 1] + 1, rows[i - 1][j - 1] + cost);
            if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, rows[i - 2][j - 2] + 1);
            row.push(d);
        }
        rows.push(row);
    }
    return rows[a.length][b.length];
}

/** YAML 1.1 booleans that YAML 1.2 (js-yaml's core schema here, Go yaml.v3 in the Pulumi CLI) reads as text. */
const YAML11_BOOLEANS: Record<string, boolean> = { yes: true, no: false, on: true, off: false, y: true, n: false };

/** Where a key with nothing after it (`nodes:`) or `~` left null: said as an empty value. */
export const EMPTY_VALUE = "is empty (nothing after the colon, which YAML reads as null)";

/**
 * The message for a value of the wrong type, from what it most likely was in the YAML. `expected` as zod names it
 * (number, int, boolean, string, object, array, record).
 */
export function wrongTypeMessage(value: unknown, expected: string): string {
    if (value === null) return EMPTY_VALUE;
    const text = typeof value === "string" ? value.trim() : undefined;
    if (expected === "number" || expected === "int") {
        if (typeof value === "number") return Number.isNaN(value) ? "must be a number, not NaN (YAML .nan)" : "must be a finite number";
        // YAML 1.2's core schema (rdmakit plan's reader) has no _ in numbers; Go yaml.v3 (pulumi up's) drops them
        if (text !== undefined && /^[-+]?\d[\d_]*_\d+$/.test(text)) return `must be a number: write ${text.replace(/_/g, "")}, without the _ (YAML 1.2 reads ${text} as text)`;
        if (text !== undefined && /^[-+]?(\d|\.\d)/.test(text)) {
            return Number.isFinite(Number(text)) ? `must be a number, not text: write ${text} without quotes` : "must be a plain number, without a unit or quotes";
        }
        return `must be ${expected === "int" ? "an integer" : "a number"}`;
    }
    if (expected === "boolean") {
        const lower = text?.toLowerCase();
        if (lower === "true" || lower === "false") return `must be true or false, not text: write ${lower} without quotes`;
        if (lower !== undefined && lower in YAML11_BOOLEANS) return `must be true or false: YAML reads ${text} as text; write ${YAML11_BOOLEANS[lower]}`;
        return "must be true or false";
    }
    if (expected === "string") {
        if (typeof value === "number" || typeof value === "boolean") {
            return `must be text: YAML read it as the ${typeof value} ${String(value)}; put the value in quotes`;
        }
        return "must be text";
    }
    if (expected === "array") {
        if (text !== undefined) return `must be a list: [${text}], or one '- ' line per entry`;
        if (typeof value === "object" && value !== null) return "must be a list (entries starting with '- '), not a mapping";
        return "must be a list";
    }
    if (expected === "record") return "must be a mapping of names to values (name: value lines)";
    if (expected === "object") return Array.isArray(value) ? "must be a mapping of fields (name: value lines), not a list" : "must be a mapping of fields (name: value lines)";
    return `must be ${/^[aeiou]/.test(expected) ? "an" : "a"} ${expected}`;
}

/**
 * A typo'd key is one mistake, not two: an unknown key whose closest name is a missing sibling field (or, with no
 * close name, the one unknown key beside the one missing field of the same mapping) is told once, on the unknown key,
 * and the missing field's own line is dropped. `unknown` the unknown keys' issues with their mapping's path and key.
 */
export function foldTypos(issues: SpecIssue[], unknown: ReadonlyMap<SpecIssue, { parent: string; key: string; known: string[] }>): SpecIssue[] {
    const missing = new Map(issues.filter((i) => i.value === undefined && /^is missing\b/.test(i.message)).map((i) => [i.path, i]));
    const unknownIn = new Map<string, SpecIssue[]>();
    for (const [issue, { parent }] of unknown) unknownIn.set(parent, [...(unknownIn.get(parent) ?? []), issue]);
    const dropped = new Set<SpecIssue>();
    const replaced = new Map<SpecIssue, SpecIssue>();
    for (const [issue, { parent, key, known }] of unknown) {
        const missingHere = known.filter((k) => missing.has(`${parent}.${k}`) && !dropped.has(missing.get(`${parent}.${k}`)!));
        let meant = closest(key, known);
        if (meant === undefined && missingHere.length === 1 && unknownIn.get(parent)?.length === 1) meant = missingHere[0];
        if (meant === undefined || !missingHere.includes(meant)) continue;
        dropped.add(missing.get(`${parent}.${meant}`)!);
        replaced.set(issue, { ...issue, message: `is not a known field (did you mean ${meant}? ${parent}.${meant} is missing)` });
    }
    return issues.filter((i) => !dropped.has(i)).map((i) => replaced.get(i) ?? i);
}

/** The first issue of each path. */
export function firstPerPath(issues: SpecIssue[]): SpecIssue[] {
    const seen = new Set<string>();
    return issues.filter((i) => (seen.has(i.path) ? false : (seen.add(i.path), true)));
}
