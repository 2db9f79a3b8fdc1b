// Loads CommonJS files from node_modules the way Node itself does, after tsx has registered its loader.
//
// tsx hooks Node's ".js" loader to transform TypeScript and ES modules; for every plain CommonJS file it loads it also
// scans the whole text for ES module syntax first. @pulumi/pulumi requires TypeScript's 9 MB compiler when it loads
// (runtime/closure/parseFunction.js), so every process of the kit paid about a second of CPU for that scan alone
// (measured: `require("@pulumi/pulumi")` 1.4 s plain, 3.0 s under tsx, 1.8 s with this file).
// A file under node_modules whose package is not "type": "module" is CommonJS by Node's own rule (Node's docs,
// "Determining module system"): it is compiled as Node would compile it; anything else (the kit's TypeScript, ES
// module packages, tsx's query-tagged paths) still goes through tsx.
// Loaded after tsx: `require("tsx/cjs")` then this file (bin/rdmakit.cjs), or `--import tsx --import ./bin/node-modules.cjs`.
"use strict";
const fs = require("node:fs");
const path = require("node:path");
const Module = require("node:module");

const NODE_MODULES = `${path.sep}node_modules${path.sep}`;
/** A folder's nearest package.json "type" ("commonjs" when none says otherwise), cached by folder. */
const typeOf = new Map();
function packageType(dir) {
    const known = typeOf.get(dir);
    if (known !== undefined) return known;
    let type = "commonjs";
    const file = path.join(dir, "package.json");
    let found = false;
    try {
        type = JSON.parse(fs.readFileSync(file, "utf8")).type === "module" ? "module" : "commonjs";
        found = true;
    } catch (e) {
        if (e.code !== "ENOENT" && e.code !== "ENOTDIR") type = "unknown";
    }
    const parent = path.dirname(dir);
    if (!found && type !== "unknown" && parent !== dir && !dir.endsWith(`${path.sep}node_modules`)) type = packageType(parent);
    typeOf.set(dir, type);
    return type;
}

const viaTsx = Module._extensions[".js"];
Module._extensions[".js"] = function loadJs(module, filename) {
    if (filename.includes(NODE_MODULES) && !filename.includes("?") && packageType(path.dirname(filename)) === "commonjs") {
        module._compile(fs.readFileSync(filename, "utf8"), filename);
        return;
    }
    viaTsx.call(this, module, filename);
};
// Two packages @pulumi/pulumi requires as it loads and uses only to serialise a JavaScript function into an asset
// (runtime/closure/: codePaths.js's `@npmcli/arborist`, which brings pacote and sigstore, and parseFunction.js's
// TypeScript compiler, each read only inside the functions that serialise), something the kit never asks of it: those
// two requires get a stand-in that loads the real module at its first use, so a process that never serialises a
// function never loads them (measured on the AWS cluster program of test/aws-cloud.test.ts: about 0.5 s of CPU of 1.6).
// The stand-in says `__esModule`, so TypeScript's __importStar hands it on as it is instead of copying its keys.
// source: @pulumi/pulumi 3.248.0 runtime/closure/codePaths.js (arborist used in computeCodePaths' findWorkspaceRoot
// path only), parseFunction.js (`ts` used inside parseFunction's helpers only).
const LAZY = [
    [`${path.sep}@pulumi${path.sep}pulumi${path.sep}runtime${path.sep}closure${path.sep}codePaths.js`, "@npmcli/arborist"],
    [`${path.sep}@pulumi${path.sep}pulumi${path.sep}runtime${path.sep}closure${path.sep}parseFunction.js`, "../../typescript-shim"],
];
function onFirstUse(load) {
    let real;
    const it = () => (real === undefined ? (real = load()) : real);
    return new Proxy({}, {
        get: (_, key) => (key === "__esModule" ? true : Reflect.get(it(), key)),
        has: (_, key) => key === "__esModule" || Reflect.has(it(), key),
        ownKeys: () => Reflect.ownKeys(it()),
        getOwnPropertyDescriptor: (_, key) => {
            const d = Reflect.getOwnPropertyDescriptor(it(), key);
            return d === undefined ? undefined : { ...d, configurable: true };
        },
    });
}
const loadModule = Module._load;
Module._load = function load(request, parent, isMain) {
    const from = parent && parent.filename;
    if (from && LAZY.some(([file, req]) => req === request && from.endsWith(file))) {
        return onFirstUse(() => loadModule.call(this, request, parent, isMain));
    }
    return loadModule.call(this, request, parent, isMain);
};
module.exports = {};
