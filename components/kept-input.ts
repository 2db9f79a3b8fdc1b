/**
 * A bulky input that several commands of one deployment read, kept once outside the stack's state: the program writes
 * it at every deployment under out/<stack>/inputs/, named by its SHA-256, and each command carries only the file's
 * path and digest among its inputs (and checks the digest before it reads). A change of content is a change of digest,
 * so the commands still run again exactly when what they read changes; the state, which Pulumi sends on every
 * checkpoint, no longer holds one copy of the fabric per command.
 *
 * The file is written by the same `pulumi up` (the program always runs before any resource operation), so no file of
 * an earlier run has to still exist; a preview writes nothing (its commands do not run).
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

/** Where `text` is kept and its digest; writes it (0600, once) when `write`. */
export function keepInput(outDir: string, name: string, ext: string, text: string, write: boolean): KeptInput {
    const digest = createHash("sha256").update(text).digest("hex");
    const file = path.join(outDir, "inputs", `${name}-${digest}.${ext}`);
    if (write && !fs.existsSync(file)) {
        fs.mkdirSync(path.dirname(file), { recursive: true });
        // written beside, then renamed: a command never reads half a file
        const tmp = `${file}.${process.pid}.tmp`;
        fs.writeFileSync(tmp, text, { mode: 0o600 });
        fs.renameSync(tmp, file);
    }
    return { file, digest };
}

/** The content of a kept input, refused (naming the file and both digests) unless its SHA-256 is `digest`. */
export function readKeptInput(file: string, digest: string): string {
    const text = fs.readFileSync(file, "utf8");
    const got = createHash("sha256").update(text).digest("hex");
    if (got !== digest) throw new Error(`${file}: sha256 ${got}, the plan expects ${digest}; the file changed since the program wrote it (run pulumi up again)`);
    return text;
}
