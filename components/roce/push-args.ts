/**
 * The arguments of a switch push command as components/roce/push.ts writes it (`exec bash <push.sh> --os … --switch …
 * --config <kept file> --config-sha256 <hex> …`), read back by the policy pack (policies/rules/roce.ts) and by tests.
 * No imports: the pack bundles this file and nothing of the kit's runtime.
 */

/** What a push command's line says: the switch, its OS, the kept file of its text and that text's sha256. */
export interface PushArgs {
    os: string;
    switch: string;
    config: string;
    configSha256: string;
}

/** Reads the arguments of a push command (`create` as pushCommandFor writes it); undefined for any other command. */
export function parsePushCommand(create: string): PushArgs | undefined {
    const words = shellWords(create.replace(/\\\n/g, " "));
    if (!words || words[0] !== "exec" || words[1] !== "bash" || !/(^|\/)push\.sh$/.test(words[2] ?? "")) return undefined;
    const opt = (name: string) => {
        const i = words.indexOf(name);
        return i > 0 && i + 1 < words.length ? words[i + 1] : undefined;
    };
    const [os, sw, config, configSha256] = [opt("--os"), opt("--switch"), opt("--config"), opt("--config-sha256")];
    if (!os || !sw || !config || !configSha256) return undefined;
    return { os, switch: sw, config, configSha256 };
}

/** Words of a line of plain words, single-quoted parts and backslash escapes (what shq writes); undefined for anything else. */
function shellWords(line: string): string[] | undefined {
    const words: string[] = [];
    const re = /\s*((?:[^\s'"\\$`]+|'[^']*'|\\.)+)/y;
    for (;;) {
        if (/^\s*$/.test(line.slice(re.lastIndex))) return words;
        const m = re.exec(line);
        if (!m) return undefined;
        words.push(m[1].replace(/'([^']*)'|\\(.)/g, (_all, quoted: string | undefined, escaped: string | undefined) => quoted ?? escaped ?? ""));
    }
}
