/**
 * The stack's own known_hosts file (`out/<stack>/known_hosts`) after nodes were replaced: a private address that
 * comes back with a new host (group replacement, destroy + up) must not fail the run on its old entry, and checking
 * must stay on. For every node whose host keys the kit has pinned, the file's entries for its address are made
 * exactly the pinned keys: an entry with another key (the replaced node's) is dropped with `ssh-keygen -R`, then the
 * pinned keys are written. Entries of other hosts stay as they are.
 * ssh-keygen -F finds an address's entries also when the file stores hashed names (HashKnownHosts, on in Debian's
 * ssh_config); -R removes them all and keeps a copy as <file>.old, which is removed here.
 * source: OpenSSH ssh-keygen(1) -F, -R, -f; sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT" ([host]:port for a port other than 22).
 */
import { spawnSync } from "child_process";
import * as fs from "fs";

/** The host keys a node must present, as the kit pinned them. */
export interface PinnedHost {
    address: string;
    /** @default 22 */
    port?: number;
    /** public key lines, `<type> <base64> [comment]` (e.g. the contents of /etc/ssh/ssh_host_ed25519_key.pub) */
    keys: string[];
}

/** The name a known_hosts entry gives an address: `addr`, or `[addr]:port` off port 22. */
export function knownHostsName(address: string, port = 22): string {
    return port === 22 ? address : `[${address}]:${port}`;
}

/** `<type> <base64>` of a public key line (the comment dropped). */
function keyId(line: string): string {
    return line.trim().split(/\s+/).slice(0, 2).join(" ");
}

/** The keys the file holds for `name` (`<type> <base64>` each), through ssh-keygen -F. */
function entriesFor(file: string, name: string): string[] {
    const r = spawnSync("ssh-keygen", ["-F", name, "-f", file], { encoding: "utf8" });
    if (r.error) throw new Error(`ssh-keygen is needed to update ${file}: ${r.error.message}`);
    // lines: "# Host <name> found: line N", then the entry: [@marker] <hosts> <type> <base64> [comment]
    return r.stdout.split("\n").filter((l) => l.trim() !== "" && !l.startsWith("#"))
        .map((l) => l.trim().split(/\s+/)).map((f) => (f[0].startsWith("@") ? f.slice(2) : f.slice(1)).slice(0, 2).join(" "));
}

/**
 * Makes `file`'s entries for every pinned host exactly its pinned keys. Returns the names whose old entries were
 * dropped (a replaced node) and those that were written. The file is created (0600) when missing.
 */
export function syncPinnedHostKeys(file: string, pinned: PinnedHost[]): { dropped: string[]; written: string[] } {
    if (!fs.existsSync(file)) fs.writeFileSync(file, "", { mode: 0o600 });
    const dropped: string[] = [];
    const written: string[] = [];
    for (const host of pinned) {
        const name = knownHostsName(host.address, host.port);
        const want = new Set(host.keys.map(keyId).filter((k) => k.includes(" ")));
        if (want.size === 0) continue;
        const have = entriesFor(file, name);
        const stale = have.some((k) => !want.has(k));
        if (stale) {
            const r = spawnSync("ssh-keygen", ["-R", name, "-f", file], { encoding: "utf8" });
            if (r.status !== 0) throw new Error(`ssh-keygen -R ${name} -f ${file} failed: ${r.stderr.trim()}`);
            fs.rmSync(`${file}.old`, { force: true });
            dropped.push(name);
        }
        const left = new Set(stale ? [] : have);
        const missing = [...want].filter((k) => !left.has(k));
        if (missing.length > 0) {
            const text = fs.readFileSync(file, "utf8");
            fs.appendFileSync(file, (text === "" || text.endsWith("\n") ? "" : "\n") + missing.map((k) => `${name} ${k}\n`).join(""));
            written.push(name);
        }
    }
    return { dropped, written };
}
