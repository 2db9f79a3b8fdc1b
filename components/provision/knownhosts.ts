/**
 * Known host identities instead of trust on first use: SSH host keys made by the kit (Ed25519, with node:crypto) and
 * the per-stack known_hosts file that pins them, `out/<stack>/known_hosts`. Ansible (StrictHostKeyChecking=yes with
 * UserKnownHostsFile=that file, inventory.ts) and every hop through the bastion read it, so a host that shows another
 * key is refused on first contact. Pure except writeKnownHosts.
 */
import { createPrivateKey, generateKeyPairSync, randomBytes } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

/** The per-stack known_hosts file, relative to the project folder. */
export function knownHostsPath(stack: string): string {
    return path.join("out", stack, "known_hosts");
}

/** An SSH host key pair: the private key in OpenSSH's own format (what sshd's HostKey reads), the public key line. */
export interface HostKeyPair {
    privateKey: string;
    /** `ssh-ed25519 AAAA... <comment>` */
    publicKey: string;
}

function u32(n: number): Buffer {
    const b = Buffer.alloc(4);
    b.writeUInt32BE(n >>> 0);
    return b;
}

/** An SSH wire-format string: uint32 length, then the bytes (RFC 4251 §5). */
function sshString(data: Buffer | string): Buffer {
    const b = typeof data === "string" ? Buffer.from(data) : data;
    return Buffer.concat([u32(b.length), b]);
}

/**
 * A fresh Ed25519 host key pair. The private key is written as an unencrypted "openssh-key-v1" blob: magic, cipher and
 * KDF "none", one public key, then the private section (two equal check words, key type, public key, seed ‖ public key,
 * comment, padding 1, 2, 3 … to a multiple of 8), base64 in lines of 70 under the OPENSSH PRIVATE KEY armour.
 * source: openssh-portable PROTOCOL.key; openssh-portable sshkey.c (sshkey_private_to_blob2, ed25519 private part);
 * RFC 8709 §4 (ssh-ed25519 public key: string "ssh-ed25519", string key).
 */
export function ed25519HostKey(comment = "rdmakit-host", fromSeed?: Buffer): HostKeyPair {
    // with a 32-byte seed, the key it determines (a PKCS#8 Ed25519 key is a fixed prefix and the seed, RFC 8410 §7):
    // tests use it where a provider's state would hand back the same key at every run
    const privateKey = fromSeed
        ? createPrivateKey({ key: Buffer.concat([Buffer.from("302e020100300506032b657004220420", "hex"), fromSeed]), format: "der", type: "pkcs8" })
        : generateKeyPairSync("ed25519").privateKey;
    const jwk = privateKey.export({ format: "jwk" }) as { d: string; x: string };
    const seed = Buffer.from(jwk.d, "base64url");
    const pub = Buffer.from(jwk.x, "base64url");
    const keyType = "ssh-ed25519";
    const pubBlob = Buffer.concat([sshString(keyType), sshString(pub)]);
    const check = fromSeed ? pub.subarray(0, 4) : randomBytes(4);
    let priv = Buffer.concat([check, check, sshString(keyType), sshString(pub), sshString(Buffer.concat([seed, pub])), sshString(comment)]);
    const pad: number[] = [];
    for (let i = 1; (priv.length + pad.length) % 8 !== 0; i++) pad.push(i);
    priv = Buffer.concat([priv, Buffer.from(pad)]);
    const blob = Buffer.concat([
        Buffer.from("openssh-key-v1\0"), sshString("none"), sshString("none"), sshString(""), u32(1), sshString(pubBlob), sshString(priv),
    ]);
    const b64 = blob.toString("base64").match(/.{1,70}/g)!.join("\n");
    seed.fill(0);
    return {
        privateKey: `-----BEGIN OPENSSH PRIVATE KEY-----\n${b64}\n-----END OPENSSH PRIVATE KEY-----\n`,
        publicKey: `${keyType} ${pubBlob.toString("base64")} ${comment}`,
    };
}

/** Hosts that show one key: addresses or names, and the SSH port (not 22: the entry is `[host]:port`). */
export interface KnownHost {
    hosts: string[];
    port?: number;
    /** The public key line (`ssh-ed25519 AAAA... [comment]`); the comment is dropped. */
    publicKey: string;
}

const KEY_LINE = /^(ssh-ed25519|ecdsa-sha2-nistp(?:256|384|521)|ssh-rsa) ([A-Za-z0-9+/]+={0,2})(?: .*)?$/;
const HOST = /^[A-Za-z0-9._:-]+$/;

/**
 * known_hosts text for the entries, one line each (`host1,host2 type base64`), sorted so that equal input gives equal
 * text. source: OpenBSD sshd(8) "SSH_KNOWN_HOSTS FILE FORMAT" (comma-separated patterns, `[host]:port` for other ports).
 * Throws on a host or key it cannot write (a pattern character would widen the entry).
 */
export function renderKnownHosts(entries: KnownHost[]): string {
    const lines = entries.map((e) => {
        const m = KEY_LINE.exec(e.publicKey.trim());
        if (!m) throw new Error(`rdmakit: not an SSH public key line for ${e.hosts.join(", ")}`);
        const bad = e.hosts.find((h) => !HOST.test(h));
        if (bad !== undefined) throw new Error(`rdmakit: ${JSON.stringify(bad)} is not a host name or address for known_hosts`);
        const names = e.hosts.map((h) => knownHostsName(h, e.port));
        return `${names.join(",")} ${m[1]} ${m[2]}`;
    });
    return lines.sort().join("\n") + (lines.length ? "\n" : "");
}

/** The host key types a cloud stack's keys have (hostkeys.ts): the only ones its ssh clients accept. */
export const KIT_HOST_KEY_ALGORITHMS = ["ssh-ed25519"];

/**
 * A cloud stack's known_hosts entries: every node's SSH address (private IP, or instance id through Session Manager)
 * with the node group's one key, and the bastion / jump host with its own. Pure.
 */
export function groupKnownHosts(nodeAddresses: string[], nodeKey: string, entry?: { address: string; publicKey: string; port?: number }): KnownHost[] {
    return [
        ...nodeAddresses.map((a) => ({ hosts: [a], publicKey: nodeKey })),
        ...(entry ? [{ hosts: [entry.address], port: entry.port, publicKey: entry.publicKey }] : []),
    ];
}

/** Writes `out/<stack>/known_hosts` (or `file`) with the entries, 0644 in a folder made if missing; returns the path. */
export function writeKnownHosts(entries: KnownHost[], file: string): string {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, renderKnownHosts(entries), { mode: 0o644 });
    return file;
}

/** The name a known_hosts entry gives an address: `addr`, or `[addr]:port` off port 22. */
export function knownHostsName(address: string, port = 22): string {
    return port === 22 ? address : `[${address}]:${port}`;
}
