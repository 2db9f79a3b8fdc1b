import { test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { linkSync, mkdtempSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { readKeptText, type ReadPass } from "../policies/rules/roce";

// The policy pack reads each pushed switch's kept text (policies/rules/roce.ts readKeptText); in one pass a file that
// several names link to (kept-input.ts links switches alike to one file) is read once, and every name is still checked
// against its own push's digest. Constructed texts: two short strings, not switch configurations.
const sha = (s: string) => createHash("sha256").update(s).digest("hex");

test("one pass: names of one file share its reading; another file, or a file replaced under the name, is read as it is", () => {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-kept-read-"));
    try {
        const [a, b, c] = ["a.yaml", "b.yaml", "c.yaml"].map((n) => join(dir, n));
        writeFileSync(a, "text one\n");
        linkSync(a, b);
        writeFileSync(c, "text two\n");
        const pass: ReadPass = new Map();
        assert.deepEqual(readKeptText(a, sha("text one\n"), pass), { text: "text one\n" });
        assert.deepEqual(readKeptText(b, sha("text one\n"), pass), { text: "text one\n" });
        assert.equal(pass.size, 1, "the two names are one file, read once");
        // the same file under a push that declares another digest: refused, naming what the file holds
        const other = readKeptText(b, sha("text two\n"), pass);
        assert.ok("why" in other && other.why.includes(`has sha256 ${sha("text one\n")}`), JSON.stringify(other));
        // another file with other content is read for itself
        assert.deepEqual(readKeptText(c, sha("text two\n"), pass), { text: "text two\n" });
        const wrong = readKeptText(c, sha("text one\n"), pass);
        assert.ok("why" in wrong && wrong.why.includes(`has sha256 ${sha("text two\n")}`), JSON.stringify(wrong));
        // a name replaced by another file (a rename over it, as the program writes): its new content, not the pass's
        writeFileSync(join(dir, "new"), "text three\n");
        renameSync(join(dir, "new"), b);
        const replaced = readKeptText(b, sha("text one\n"), pass);
        assert.ok("why" in replaced && replaced.why.includes(`has sha256 ${sha("text three\n")}`), JSON.stringify(replaced));
        assert.deepEqual(readKeptText(a, sha("text one\n"), pass), { text: "text one\n" });
        // no file: not found, with or without a pass
        for (const p of [pass, undefined]) {
            const none = readKeptText(join(dir, "none.yaml"), sha("text one\n"), p);
            assert.ok("why" in none && /is not found/.test(none.why), JSON.stringify(none));
        }
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
});
