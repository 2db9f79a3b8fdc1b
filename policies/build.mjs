// Bundles the pack (index.ts), its rules and the catalog facts they read from ../components into dist/index.js, so the
// published pack carries everything and never reaches outside its folder at run time. @pulumi/* stay external: the
// runner and the policy server must be the pack's own installed copies (package.json dependencies).
// esbuild resolves from here upwards: it is a devDependency of the repository root.
import { build } from "esbuild";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
await build({
    entryPoints: [join(here, "index.ts")],
    outfile: join(here, "dist", "index.js"),
    bundle: true,
    platform: "node",
    target: "node20",
    format: "cjs",
    external: ["@pulumi/*"],
    legalComments: "inline",
    logLevel: "warning",
});
