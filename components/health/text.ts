/**
 * Bounded, linear reading of a tool's text output: what every health parser does before looking at a line. A node's
 * files are untrusted (issue 34 finding 7: a line of 200k spaces cost the old nvidia-smi parser ~63 s), so a file
 * above MAX_FILE_CHARS or a line above MAX_LINE_CHARS is refused by name, and no parser runs a regex whose cost can
 * grow faster than the line (no unanchored `\s+$`, no `^\s*x?\s*`, no `.*` between two alternatives).
 * Bounds: the kernel caps one printk record at 1024 bytes before 6.x and 2048 after (kernel/printk/internal.h
 * PRINTK_MESSAGE_MAX), nvidia-smi -q, dcgmi, lspci -vv and ibstat lines are under 200 characters in every capture
 * in test/fixtures/health; 4096 leaves room for a timestamp prefix. The log ring of the largest kernel config is
 * 32 MiB (CONFIG_LOG_BUF_SHIFT max 25), so 64 MiB holds any since-boot log with journalctl's prefixes.
 */
import { HealthParseError } from "./types";

export const MAX_LINE_CHARS = 4096;
export const MAX_FILE_CHARS = 64 * 1024 * 1024;

/** The file's lines without "\r"; throws HealthParseError on a file or a line past the bounds. */
export function boundedLines(text: string): string[] {
    if (text.length > MAX_FILE_CHARS) throw new HealthParseError(`is ${text.length} characters long; no capture the kit reads is longer than ${MAX_FILE_CHARS}`);
    const lines = text.split("\n");
    for (let i = 0; i < lines.length; i++) {
        let l = lines[i];
        if (l.endsWith("\r")) l = lines[i] = l.slice(0, -1);
        if (l.length > MAX_LINE_CHARS) throw new HealthParseError(`line ${i + 1} is ${l.length} characters long; no line of this tool's output is longer than ${MAX_LINE_CHARS}`);
    }
    return lines;
}

/** "key : value" split at the first colon, both trimmed; undefined when the line has no colon or no key. Linear. */
export function keyValue(line: string): { key: string; value: string } | undefined {
    const i = line.indexOf(":");
    if (i < 0) return undefined;
    const key = line.slice(0, i).trim();
    if (!key) return undefined;
    return { key, value: line.slice(i + 1).trim() };
}
