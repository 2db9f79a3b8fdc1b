/**
 * The programs rdmakit runs on switches (roce/) and the controller's ssh for Ansible (ssh/, provision/node-send.ts),
 * shipped as files under components/scripts/ (package.json "files"), linted by test/scripts-lint.test.ts (shellcheck,
 * python3 -m py_compile and pyflakes) rather than kept as strings in the code.
 */
import * as fs from "node:fs";
import { assetPath } from "../assets";

/** The text of components/scripts/roce/<name>, read once. */
export function roceScript(name: string): string {
    return fs.readFileSync(assetPath("components", "scripts", "roce", name), "utf8");
}

/** Every shipped script, relative to the package root (what the lint test checks). */
export function shippedScripts(): string[] {
    return ["roce", "ssh"].flatMap((d) => fs.readdirSync(assetPath("components", "scripts", d)).filter((f) => /\.(sh|py)$/.test(f)).sort()
        .map((f) => `components/scripts/${d}/${f}`));
}
