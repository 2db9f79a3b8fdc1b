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
