/**
 * Parse once: the structure each rendered text was serialised from (NVUE operation list, SONiC tables, EOS lines, the
 * Ansible inventory), kept by the text itself, so the readers of those texts (roce/consistency.ts, the RoCE policies,
 * run by RoceCluster, `rdmakit plan` and the policy pack on the same texts in one process) never parse a text this
 * process rendered. A text from elsewhere (a hand edit, another
 * process) is not here and is parsed as usual. Bounded, the oldest entries going first, by a figure above the texts one
 * plan renders (a 2,048-host rail fabric has 384 switches and one inventory), so none of them is evicted before it is read.
 */
export const MAX_REMEMBERED = 4096;
const byText = new Map<string, unknown>();

export function rememberParsed(text: string, value: unknown): void {
    if (byText.size >= MAX_REMEMBERED) byText.delete(byText.keys().next().value!);
    byText.set(text, value);
}

export function parsedOf(text: string): unknown {
    return byText.get(text);
}
