/**
 * Address ranges as sets (IPv4 and IPv6), for "does this set of ranges cover the Internet" questions. Pure.
 * A range set is a sorted list of disjoint inclusive [lo, hi] intervals of BigInt addresses, one list per family.
 */
export type Family = 4 | 6;
export type Interval = [bigint, bigint];
export interface RangeSet {
    4: Interval[];
    6: Interval[];
}

const BITS: Record<Family, number> = { 4: 32, 6: 128 };

function v4(text: string): bigint | undefined {
    const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text);
    if (!m) return undefined;
    const o = m.slice(1).map(Number);
    if (o.some((x) => x > 255)) return undefined;
    return o.reduce((a, x) => a * 256n + BigInt(x), 0n);
}

function v6(text: string): bigint | undefined {
    if (!/^[0-9a-f:.]+$/i.test(text) || text.split("::").length > 2) return undefined;
    const [head, tail] = text.includes("::") ? text.split("::") : [text, undefined];
    const parts = (s: string | undefined) => (s ? s.split(":") : []);
    const h = parts(head);
    const t = parts(tail);
    const fill = tail === undefined ? 0 : 8 - h.length - t.length;
    const all = [...h, ...Array(Math.max(fill, 0)).fill("0"), ...t];
    if (all.length !== 8 || all.some((g) => !/^[0-9a-f]{1,4}$/i.test(g))) return undefined;
    return all.reduce((a, g) => a * 65536n + BigInt(parseInt(g, 16)), 0n);
}

/** "a.b.c.d/n", "x::y/n" or a bare address → its family and interval; undefined for anything else. */
export function parseRange(text: string): { family: Family; interval: Interval } | undefined {
    const [addr, len, extra] = text.trim().split("/");
    if (extra !== undefined) return undefined;
    for (const family of [4, 6] as Family[]) {
        const a = family === 4 ? v4(addr) : v6(addr);
        if (a === undefined) continue;
        const bits = BITS[family];
        const prefix = len === undefined ? bits : Number(len);
        if (!/^\d+$/.test(String(prefix)) || prefix > bits) return undefined;
        const size = 1n << BigInt(bits - prefix);
        const lo = (a / size) * size;
        return { family, interval: [lo, lo + size - 1n] };
    }
    return undefined;
}

export const empty = (): RangeSet => ({ 4: [], 6: [] });

function normalize(list: Interval[]): Interval[] {
    const sorted = [...list].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
    const out: Interval[] = [];
    for (const [lo, hi] of sorted) {
        const last = out[out.length - 1];
        if (last && lo <= last[1] + 1n) last[1] = hi > last[1] ? hi : last[1];
        else out.push([lo, hi]);
    }
    return out;
}

export function add(set: RangeSet, family: Family, interval: Interval): void {
    set[family] = normalize([...set[family], interval]);
}

export function union(a: RangeSet, b: RangeSet): RangeSet {
    return { 4: normalize([...a[4], ...b[4]]), 6: normalize([...a[6], ...b[6]]) };
}

/** a minus b. */
export function subtract(a: RangeSet, b: RangeSet): RangeSet {
    const cut = (list: Interval[], minus: Interval[]) => {
        let out = list;
        for (const [mlo, mhi] of minus) {
            out = out.flatMap(([lo, hi]): Interval[] => {
                if (mhi < lo || mlo > hi) return [[lo, hi]];
                const keep: Interval[] = [];
                if (lo < mlo) keep.push([lo, mlo - 1n]);
                if (hi > mhi) keep.push([mhi + 1n, hi]);
                return keep;
            });
        }
        return out;
    };
    return { 4: cut(a[4], b[4]), 6: cut(a[6], b[6]) };
}

export const isEmpty = (s: RangeSet) => s[4].length === 0 && s[6].length === 0;

export function fromRanges(texts: string[]): RangeSet {
    const s = empty();
    for (const t of texts) {
        const r = parseRange(t);
        if (r) add(s, r.family, r.interval);
    }
    return s;
}

/**
 * Address space that is not the public Internet. IPv4: the IANA IPv4 Special-Purpose Address Registry blocks
 * (RFC 6890: this network, private, shared CGN, loopback, link-local, IETF protocol assignments, documentation,
 * benchmarking, multicast, reserved; https://www.iana.org/assignments/iana-ipv4-special-registry/). IPv6: everything
 * outside global unicast 2000::/3 (RFC 4291 §2.4; https://www.iana.org/assignments/ipv6-address-space/), plus the
 * documentation prefix 2001:db8::/32 (RFC 3849).
 */
export const NOT_INTERNET: RangeSet = union(fromRanges([
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24",
    "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
    "::/3", "4000::/2", "8000::/1", "2001:db8::/32",
]), empty());

/** Every address of both families. */
export const EVERYTHING: RangeSet = fromRanges(["0.0.0.0/0", "::/0"]);

/** The public Internet, per family: everything minus {@link NOT_INTERNET}. */
export const INTERNET: RangeSet = subtract(EVERYTHING, NOT_INTERNET);

/** Whether `s` admits every public address of a family (0.0.0.0/0, or any set of ranges that adds up to it). */
export function coversInternet(s: RangeSet): Family[] {
    return ([4, 6] as Family[]).filter((f) => INTERNET[f].length > 0 && subtract({ ...empty(), [f]: INTERNET[f] } as RangeSet, s)[f].length === 0);
}

/**
 * The share (0..1) of a family's public Internet that `s` admits, and how many public addresses that is. "The
 * Internet minus one address" is a share just under 1, not the whole, so a rule on shares catches it where
 * coversInternet does not.
 */
export function publicShare(s: RangeSet, f: Family): { share: number; addresses: bigint } {
    const count = (list: Interval[]) => list.reduce((a, [lo, hi]) => a + hi - lo + 1n, 0n);
    const addresses = count(subtract(s, NOT_INTERNET)[f]);
    return { share: Number(addresses) / Number(count(INTERNET[f])), addresses };
}

/** The public addresses of `s` outside `allowed`. */
export function publicOutside(s: RangeSet, allowed: RangeSet): RangeSet {
    return subtract(subtract(s, NOT_INTERNET), allowed);
}

export function formatInterval(family: Family, [lo, hi]: Interval): string {
    const fmt = (a: bigint) => family === 4
        ? [24n, 16n, 8n, 0n].map((s) => String((a >> s) & 255n)).join(".")
        : Array.from({ length: 8 }, (_, i) => ((a >> BigInt(112 - 16 * i)) & 0xffffn).toString(16)).join(":");
    return lo === hi ? fmt(lo) : `${fmt(lo)}–${fmt(hi)}`;
}
