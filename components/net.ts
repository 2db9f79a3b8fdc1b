/** Small IPv4 CIDR helpers (pure). */
export interface Cidr {
    base: number;
    prefix: number;
}

export function parseCidr(text: string): Cidr | undefined {
    const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})\/(\d{1,2})$/.exec(text);
    if (!m) return undefined;
    const octets = m.slice(1, 5).map(Number);
    const prefix = Number(m[5]);
    if (octets.some((o) => o > 255) || prefix > 32) return undefined;
    const addr = ((octets[0] << 24) | (octets[1] << 16) | (octets[2] << 8) | octets[3]) >>> 0;
    return { base: (addr & mask(prefix)) >>> 0, prefix };
}

function mask(prefix: number): number {
    return prefix === 0 ? 0 : (0xffffffff << (32 - prefix)) >>> 0;
}

/** True when the two blocks share at least one address. */
export function cidrsOverlap(a: Cidr, b: Cidr): boolean {
    const p = Math.min(a.prefix, b.prefix);
    return ((a.base & mask(p)) >>> 0) === ((b.base & mask(p)) >>> 0);
}

/**
 * IPv4 blocks that are not reachable from the public internet: "this network", private-use, shared (CGN), loopback,
 * link-local, IETF protocol assignments, the three documentation ranges, benchmarking, multicast and reserved.
 * source: IANA IPv4 Special-Purpose Address Registry (https://www.iana.org/assignments/iana-ipv4-special-registry/),
 * RFC 6890; multicast 224.0.0.0/4 (RFC 5771) and 240.0.0.0/4 (RFC 1112) complete it.
 */
export const NON_PUBLIC_IPV4 = [
    "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12", "192.0.0.0/24",
    "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
];

type Range = [number, number];

/** Merged, sorted [first, last] address ranges of the blocks. */
function union(blocks: Cidr[]): Range[] {
    const ranges = blocks.map((c): Range => [c.base, c.base + 2 ** (32 - c.prefix) - 1]).sort((a, b) => a[0] - b[0]);
    const out: Range[] = [];
    for (const r of ranges) {
        const last = out[out.length - 1];
        if (last && r[0] <= last[1] + 1) last[1] = Math.max(last[1], r[1]);
        else out.push([r[0], r[1]]);
    }
    return out;
}

function size(ranges: Range[]): number {
    return ranges.reduce((n, [a, b]) => n + (b - a + 1), 0);
}

/** Public IPv4 addresses in all: 2^32 less NON_PUBLIC_IPV4 (about 3.7 billion). */
export const PUBLIC_IPV4_ADDRESSES = 2 ** 32 - size(union(NON_PUBLIC_IPV4.map((c) => parseCidr(c)!)));

/**
 * How many public IPv4 addresses the blocks reach together (overlaps counted once), and that as a share of all public
 * addresses. `0.0.0.0/1` with `128.0.0.0/1` covers all of it, as `0.0.0.0/0` does. Pure.
 */
export function publicCoverage(cidrs: string[]): { addresses: number; share: number } {
    const given = union(cidrs.map(parseCidr).filter((c): c is Cidr => c !== undefined));
    const hidden = union(NON_PUBLIC_IPV4.map((c) => parseCidr(c)!));
    let overlap = 0;
    for (const [a, b] of given) {
        for (const [c, d] of hidden) {
            const lo = Math.max(a, c), hi = Math.min(b, d);
            if (lo <= hi) overlap += hi - lo + 1;
        }
    }
    const addresses = size(given) - overlap;
    return { addresses, share: addresses / PUBLIC_IPV4_ADDRESSES };
}
