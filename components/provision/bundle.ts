/**
 * The bundle node-local mode ships to every node: the playbooks folder, ansible-core with its dependencies unpacked
 * for each supported Python (node-python.ts), the collection modules the roles use, and the launcher. Made on the
 * controller once per content (its digest names it: out/<stack>/bundle-<digest>.tar.gz); a node unpacks it into
 * /opt/rdmakit/<digest>/ and keeps it there, so the next run with the same digest sends nothing, and removes the
 * folders of other digests. It holds no variable and no key: the run's variables travel with each run
 * (fanout.ts), the key never leaves the controller's agent.
 */
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { inflateRawSync } from "node:zlib";
import { NODE_ANSIBLE_SETS, NODE_PYTHON_ARTIFACTS, NODE_PYTHON_RANGE, PythonArtifact, artifactsDigest, ensurePythonArtifacts } from "./node-python";
import { INPUT_PY } from "./node-scripts";

/** The files of a zip archive (a wheel): name and content. Stored and deflated entries; no zip64 (none is needed). */
export function readZip(buf: Buffer): Array<{ name: string; data: () => Buffer }> {
    // End of central directory record: signature 0x06054b50, within the last 64 KiB + 22 bytes
    // source: PKWARE APPNOTE.TXT 4.3.16 (EOCD), 4.3.12 (central directory header), 4.3.7 (local file header)
    let eocd = -1;
    for (let i = buf.length - 22; i >= Math.max(0, buf.length - 65557); i--) {
        if (buf.readUInt32LE(i) === 0x06054b50) { eocd = i; break; }
    }
    if (eocd < 0) throw new Error("not a zip archive (no end of central directory record)");
    const count = buf.readUInt16LE(eocd + 10);
    let p = buf.readUInt32LE(eocd + 16);
    const out: Array<{ name: string; data: () => Buffer }> = [];
    for (let n = 0; n < count; n++) {
        if (buf.readUInt32LE(p) !== 0x02014b50) throw new Error("zip central directory is damaged");
        const method = buf.readUInt16LE(p + 10);
        const csize = buf.readUInt32LE(p + 20);
        const nameLen = buf.readUInt16LE(p + 28);
        const extraLen = buf.readUInt16LE(p + 30);
        const commentLen = buf.readUInt16LE(p + 32);
        const local = buf.readUInt32LE(p + 42);
        const name = buf.toString("utf8", p + 46, p + 46 + nameLen);
        p += 46 + nameLen + extraLen + commentLen;
        out.push({
            name,
            data: () => {
                const start = local + 30 + buf.readUInt16LE(local + 26) + buf.readUInt16LE(local + 28);
                const raw = buf.subarray(start, start + csize);
                if (method === 0) return Buffer.from(raw);
                if (method === 8) return inflateRawSync(raw);
                throw new Error(`zip entry ${name}: compression method ${method} not supported`);
            },
        });
    }
    return out;
}

/** Whether a wheel entry goes into a set's site folder: not compiled code, not scripts, not ansible-test. */
export function keepWheelEntry(name: string): boolean {
    const top = name.split("/")[0];
    if (name.endsWith("/") || name.endsWith(".so") || top.endsWith(".libs") || top.endsWith(".data") || top === "ansible_test") return false;
    return !name.split("/").some((part) => part === ".." || part === "");
}

/**
 * The node-side preparation (Python, run with `-I -S` from the unpacked bundle): picks the set for this Python,
 * writes its path and the interpreter's into the bundle, or exits 96 naming the Python it found and the range.
 */
export function prepareScript(): string {
    const sets = NODE_ANSIBLE_SETS.map((s) => ({ id: s.id, min: s.python.min, max: s.python.max, core: s.ansibleCore }));
    return [
        "# rdmakit node-local bundle: choose the ansible-core set for this Python (components/provision/bundle.ts)",
        "import json, os, sys",
        `SETS = json.loads(${JSON.stringify(JSON.stringify(sets))})`,
        "here = os.path.dirname(os.path.abspath(__file__))",
        "v = list(sys.version_info[:2])",
        "pick = [s for s in SETS if s['min'] <= v <= s['max']]",
        "if not pick:",
        `    sys.stderr.write('rdmakit: this node runs Python %d.%d (%s); node-local mode needs Python ${NODE_PYTHON_RANGE} ` +
            "(or cluster.ansible.mode: controller)\\n' % (v[0], v[1], sys.executable))",
        "    sys.exit(96)",
        "open(os.path.join(here, 'set'), 'w').write(pick[0]['id'] + '\\n')",
        "open(os.path.join(here, 'python'), 'w').write(sys.executable + '\\n')",
        "print('rdmakit: ansible-core %s on Python %d.%d' % (pick[0]['core'], v[0], v[1]))",
        "",
    ].join("\n");
}

/** The launcher: ansible-playbook from the set's folder alone (argv[1]: that folder). */
export const LAUNCHER = [
    "# rdmakit node-local bundle: ansible-playbook from the bundle's own site folder (components/provision/bundle.ts)",
    "import sys",
    "site = sys.argv.pop(1)",
    "sys.path.insert(0, site)",
    "sys.argv[0] = 'ansible-playbook'",
    "from ansible.cli.playbook import main",
    "sys.exit(main())",
    "",
].join("\n");

/** The bundle's digest: the playbooks (their hashFolder digest), the pins and the node-side scripts. Pure. */
export function bundleDigest(playbooksHash: string): string {
    return createHash("sha256").update([playbooksHash, artifactsDigest(), prepareScript(), LAUNCHER, INPUT_PY].join("\n")).digest("hex");
}

function writeEntry(root: string, rel: string, data: Buffer): void {
    const file = path.join(root, rel);
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, data);
}

function copyFolder(from: string, to: string): void {
    fs.mkdirSync(to, { recursive: true });
    for (const e of fs.readdirSync(from, { withFileTypes: true })) {
        if (e.name === "__pycache__") continue;
        const src = path.join(from, e.name);
        const dst = path.join(to, e.name);
        if (e.isDirectory()) {
            copyFolder(src, dst);
        } else if (e.isFile()) {
            fs.copyFileSync(src, dst);
        }
    }
}

/** Unpacks one artifact into the staging folder: its set folders, or the listed collection files. */
function unpackArtifact(stage: string, cache: string, a: PythonArtifact): void {
    const entries = readZip(fs.readFileSync(path.join(cache, a.file)));
    if (a.only) {
        for (const want of a.only) {
            const e = entries.find((x) => x.name === want);
            if (!e) throw new Error(`rdmakit: ${a.file} has no ${want}`);
            writeEntry(path.join(stage, "collections"), want, e.data());
        }
        return;
    }
    for (const e of entries) {
        if (!keepWheelEntry(e.name)) continue;
        const data = e.data();
        for (const set of a.sets) writeEntry(path.join(stage, "py", set), e.name, data);
    }
}

/**
 * Makes `outDir/bundle-<digest>.tar.gz` unless it is there already; returns its path and digest. Fetches the pinned
 * files first (node-python.ts ensurePythonArtifacts). Needs `tar` on the controller.
 */
export function buildBundle(playbooksDir: string, playbooksHash: string, outDir: string, cache?: string): { file: string; digest: string } {
    const digest = bundleDigest(playbooksHash);
    const file = path.join(outDir, `bundle-${digest}.tar.gz`);
    if (fs.existsSync(file)) return { file, digest };
    const dir = ensurePythonArtifacts(cache);
    const stage = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-bundle-"));
    try {
        copyFolder(playbooksDir, path.join(stage, "playbooks"));
        for (const a of NODE_PYTHON_ARTIFACTS) unpackArtifact(stage, dir, a);
        fs.writeFileSync(path.join(stage, "prepare.py"), prepareScript());
        fs.writeFileSync(path.join(stage, "launch.py"), LAUNCHER);
        fs.writeFileSync(path.join(stage, "input.py"), INPUT_PY);
        fs.writeFileSync(path.join(stage, "digest"), `${digest}\n`);
        fs.mkdirSync(outDir, { recursive: true });
        const tmp = `${file}.${process.pid}.tmp`;
        const tar = spawnSync("tar", ["-czf", tmp, "-C", stage, "."], { encoding: "utf8" });
        if (tar.status !== 0) throw new Error(`rdmakit: could not make the node bundle (tar: ${(tar.stderr || String(tar.error)).trim()})`);
        // older bundles of this stack go: the nodes keep only the newest, and so does the controller
        for (const old of fs.readdirSync(outDir).filter((f) => /^bundle-[0-9a-f]{64}\.tar\.gz$/.test(f))) fs.rmSync(path.join(outDir, old), { force: true });
        fs.renameSync(tmp, file);
    } finally {
        fs.rmSync(stage, { recursive: true, force: true });
    }
    return { file, digest };
}
