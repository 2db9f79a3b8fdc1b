/** Redaction of key material in text that is printed or written (pure: no SDK, so light modules can use it). */

// PEM armour (RFC 7468 §2: `-----BEGIN <label>-----` … `-----END <label>-----`), which PKCS#1/PKCS#8 keys and
// OpenSSH's own private key format share (openssh-portable PROTOCOL.key: "-----BEGIN OPENSSH PRIVATE KEY-----").
// A block cut short (no END line) is hidden to the end of the text.
const PEM_BLOCK = /-----BEGIN [^\r\n]*?-----[\s\S]*?(?:-----END [^\r\n]*?-----|$)/g;
// A base64 run of 40+ characters (30+ bytes: an Ed25519 seed is 32, a PKCS#8 Ed25519 key 48 bytes) with upper case,
// lower case and a digit, which file paths and words rarely have and random key bytes almost always do.
// A `/` written JSON-escaped (`\/`, as PHP's json_encode and others write it) stays inside the run: split there, a
// body's pieces between its slashes were each too short to be hidden.
const BASE64_RUN = /(?:[A-Za-z0-9+/]|\\\/){40,}={0,2}/g;
// A hex run of 64+ characters: a raw 32-byte key written in hex, also where a word character touches it (`0x…`,
// `key_…`, which \b would not bound: the run was shown whole).
const HEX_RUN = /(?<![0-9A-Fa-f])[0-9A-Fa-f]{64,}(?![0-9A-Fa-f])/g;
const REDACTED = "[redacted: looks like key material]";
// A segment of a resource path as clouds spell them: a word in lower or camel case, digits only at its end
// (`resourceGroups`, `Microsoft`, `virtualNetworks`, `vnet1`, `subnets`).
const PATH_WORD = /^[A-Za-z][a-z]+(?:[A-Z][a-z]+)*[0-9]*$/;

/**
 * A base64-alphabet run that is a resource path, not key bytes: three or more `/`-separated words (an Azure resource
 * id's `resourceGroups/rg/providers/Microsoft.Network/virtualNetworks/vnet1/subnets/gpu` runs between its `-` and
 * `.`). Random key bytes put `/` at 1 in 64 characters, and the pieces between are no camel-case words: counted
 * exactly over this pattern (a state machine over the 64 characters), a uniform random run passes as a path with
 * probability 7.9e-9 at 40 characters and 1.2e-12 at 64 (a PEM line), far below the 2e-5 of a 64-character line
 * without a digit, which the class test above already leaves whole. An OpenSSH body's first line (`b3BlbnNzaC1rZXkt…`,
 * "openssh-key-v1") and a PKCS#8 body's (`MC4CAQAw…`, `MIIE…`) have digits inside a word: never a path.
 */
function resourcePath(run: string): boolean {
    const parts = run.split("/").filter((p) => p.length > 0);
    return parts.length >= 3 && parts.every((p) => PATH_WORD.test(p));
}

/**
 * The text with everything that looks like private key material replaced: PEM/OpenSSH armoured blocks, long base64
 * bodies, long hex runs (and the short tail line of a base64 body that follows one). Every path that echoes user input
 * (showValue, SpecError, InputPropertiesError, the CLI's last-resort error line) goes through it.
 */
export function redactSecrets(text: string): string {
    return text
        .replace(PEM_BLOCK, REDACTED)
        .replace(BASE64_RUN, (run) => (/[A-Z]/.test(run) && /[a-z]/.test(run) && /[0-9]/.test(run) && !resourcePath(run) ? REDACTED : run))
        .replace(HEX_RUN, REDACTED)
        // the last, shorter line of a multi-line body (64 characters a line, RFC 7468 §2)
        .replace(/(\[redacted: looks like key material\](?:\\n|\s)+)(?:[A-Za-z0-9+/]|\\\/)+={0,2}/g, "$1" + REDACTED)
        .replace(/\[redacted: looks like key material\](?:(?:\\n|\s)+\[redacted: looks like key material\])+/g, REDACTED);
}


/** The text with every PEM/OpenSSH armoured block hidden, and nothing else (for output that keeps public keys). */
export function redactPemBlocks(text: string): string {
    // plan.json is 20 MB at 2,048 hosts and has no armour: a scan for the opening dashes answers that at a tenth of the cost
    return text.includes("-----BEGIN ") ? text.replace(PEM_BLOCK, REDACTED) : text;
}

/**
 * One line of printed output with every C0 and C1 control character and DEL made a blank. A line of a report can carry a
 * node's or a switch's own text (a capture's evidence line, a preflight `seen`, an ssh error): an escape sequence
 * there would reach the operator's terminal (OSC 52 writes the clipboard, CSI moves the cursor and erases, so one node
 * could overwrite another node's verdict on screen), and a newline would start a line the report never wrote.
 * source: ECMA-48 5th ed. §5 (C0 00-1F and C1 80-9F control functions; ESC 1B introduces CSI/OSC; C1 9B is CSI).
 */
export function printableLine(line: string): string {
    // eslint-disable-next-line no-control-regex
    return line.replace(/[\u0000-\u001f\u007f-\u009f]/g, " ");
}
