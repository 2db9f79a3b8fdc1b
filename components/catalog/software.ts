/**
 * What `ofed_info -s` prints for each DOCA-OFED release line: DOCA 2.9 / 3.0 / 3.2 ship OFED-internal 24.10 / 25.04 /
 * 25.10. The ofed role skips the install when the installed stack starts with this prefix.
 * source: ../shared/research/ansible-stack.md §1 "Detecting the installed version" (mapping read off public scripts,
 * not an NVIDIA table: medium confidence).
 */
export const DOCA_OFED_INFO_PREFIX: Record<string, string> = {
    "2.9": "OFED-internal-24.10",
    "3.0": "OFED-internal-25.04",
    "3.2": "OFED-internal-25.10",
};

/** The `ofed_info -s` prefix for a DOCA version such as 3.2.1, or undefined when the release line is not mapped. */
export function ofedInfoPrefix(docaVersion: string): string | undefined {
    return DOCA_OFED_INFO_PREFIX[docaVersion.split(".").slice(0, 2).join(".")];
}
