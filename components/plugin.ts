/**
 * The provider plugin's entry: package.json `main`. The engine starts a source-based Node.js package as
 * `node @pulumi/pulumi/cmd/run-plugin <package folder> <engine address>` (pulumi-language-nodejs RunPlugin;
 * pulumi-resource-rdmakit does the same), and run-plugin requires the folder, i.e. this file. Exported component
 * classes there would make run-plugin serve Pulumi's plain ComponentProvider; a function instead is called and
 * awaited (@pulumi/pulumi 3.248.0 cmd/run-plugin/run.js), so this module exports only the function that serves
 * rdmakit's own provider (components/provider.ts: key inputs secret). Programs importing "rdmakit" get the library
 * through package.json `exports`, which Node reads before `main`.
 */
import { serveProvider } from "./provider";

export = function servePlugin(): Promise<void> {
    return serveProvider();
};
