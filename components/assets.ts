import * as fs from "fs";
import * as path from "path";

/**
 * The root of the rdmakit package this code was loaded from: the repository when it runs from source,
 * `node_modules/rdmakit` when a program imports the package, from `components/` and from the compiled `dist/components/`
 * alike. Runtime assets (playbooks/, the switch push playbooks, the examples) are found from here, never from the
 * working directory.
 */
export const PACKAGE_ROOT = findPackageRoot(__dirname);

function findPackageRoot(start: string): string {
    for (let dir = start; ; dir = path.dirname(dir)) {
        const manifest = path.join(dir, "package.json");
        if (fs.existsSync(manifest) && (JSON.parse(fs.readFileSync(manifest, "utf8")) as { name?: string }).name === "rdmakit") return dir;
        if (path.dirname(dir) === dir) throw new Error(`rdmakit: no package.json named rdmakit above ${start}; the package is incomplete`);
    }
}

/** A path inside the package (e.g. `assetPath("playbooks", "site.yml")`). */
export function assetPath(...parts: string[]): string {
    return path.join(PACKAGE_ROOT, ...parts);
}
