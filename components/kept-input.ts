/**
 * A bulky input that several commands of one deployment read, kept once outside the stack's state: the program writes
 * it at every deployment under out/<stack>/inputs/, named by its SHA-256, and each command carries only the file's
 * path and digest among its inputs (and checks the digest before it reads). A change of content is a change of digest,
 * so the commands still run again exactly when what they read changes; the state, which Pulumi sends on every
 * checkpoint, no longer holds one copy of the fabric per command.
 *
 * The file is written by the same `pulumi up` (the program always runs before any resource operation), so no file of
 * an earlier run has to still exist. A preview writes only what the policy pack reads (the switch texts, the
 * provisioning run's inventory: `write` true there); the rest, read only by commands, waits for a deployment.
 */
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as path from "node:path";

export interface KeptInput {
    /** out/<stack>/inputs/<name>-<sha256>.<ext>, relative to the program's directory */
    file: string;
    /** SHA-256 (hex) of the content */
    digest: string;
}

/**
 * Where `text` is kept and its digest; writes it (0600, once) when `write`. `sha256`: the text's SHA-256 where the
 * caller has it already, computed from this very text (a rendered switch text carries its own, roce/render.ts).
 */
export function keepInput(outDir: string, name: string, ext: string, text: string, write: boolean, sha256?: string): KeptInput {
    const digest = sha256 ?? createHash("sha256").update(text).digest("hex");
    const file = path.join(outDir, "inputs", `${name}-${digest}.${ext}`);
    if (write && !fs.existsSync(file)) {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        // written beside, then renamed: a command never reads half a file
        const tmp = `${file}.${process.pid}.tmp`;
        // the same text kept under another name by this process (a rail fabric's 384 switches have 2 texts): a hard
        // link to that file, one system call instead of writing the text again (0.2 s of CPU for 384 files here); where
        // the file system refuses links, or that file is gone, the text is written
        const same = keptHere.get(digest);
        try {
            if (same === undefined) throw new Error("no file of this text yet");
            fs.linkSync(same, tmp);
        } catch {
            fs.rmSync(tmp, { force: true });
            fs.writeFileSync(tmp, text, { mode: 0o600 });
        }
        fs.renameSync(tmp, file);
        if (keptHere.size >= 4096) keptHere.delete(keptHere.keys().next().value!);
        keptHere.set(digest, file);
    }
    return { file, digest };
}
/** A file this process kept, by the SHA-256 of its text. */
const keptHere = new Map<string, string>();

/** The content of a kept input, refused (naming the file and both digests) unless its SHA-256 is `digest`. */
export function readKeptInput(file: string, digest: string): string {
    const text = fs.readFileSync(file, "utf8");
    const got = createHash("sha256").update(text).digest("hex");
    if (got !== digest) throw new Error(`${file}: sha256 ${got}, the plan expects ${digest}; the file changed since the program wrote it (run pulumi up again)`);
    return text;
}
