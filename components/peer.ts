import * as fs from "fs";
import * as path from "path";
import { PACKAGE_ROOT } from "./assets";

/*
 * The cloud SDKs are optional peer dependencies (package.json peerDependenciesMeta): a team on bare-metal RoCE needs
 * neither, an AWS-only team not @pulumi/azure-native (over 100 MB installed). Only the fabric module that uses one
 * loads it (components/aws/sdk.ts, components/azure/sdk.ts); each asks here first, so a missing SDK ends with the
 * package to install, not Node's "Cannot find module" from deep inside the kit.
 */

/** The cloud SDK each cloud fabric needs, and where its component is exported. */
export const FABRIC_SDKS = {
    "aws-efa": { sdk: "@pulumi/aws", subpath: "rdmakit/aws" },
    "azure-ib": { sdk: "@pulumi/azure-native", subpath: "rdmakit/azure" },
} as const;
export type CloudFabric = keyof typeof FABRIC_SDKS;

/** A cloud fabric was used where its SDK is not installed. */
export class MissingSdkError extends Error {
    constructor(readonly fabric: CloudFabric, readonly sdk: string, readonly range: string) {
        super(`rdmakit: the ${fabric} fabric needs the package ${sdk}, which is not installed where rdmakit can load it. ` +
            `Install it beside rdmakit: npm install ${sdk}@"${range}" (an optional peer dependency of rdmakit: ` +
            `only the fabrics a program uses need their SDK)`);
        this.name = "MissingSdkError";
    }
}

/** The version range rdmakit's package.json asks of a peer: one source of truth for the advice. */
export function peerRange(sdk: string): string {
    const manifest = JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, "package.json"), "utf8")) as { peerDependencies?: Record<string, string> };
    return manifest.peerDependencies?.[sdk] ?? "*";
}

/**
 * Throws MissingSdkError unless the fabric's SDK resolves from this package (resolving reads no module). `resolve`
 * is the caller's own require.resolve, so the SDK is looked up where the fabric module will load it from.
 */
export function assertSdk(fabric: CloudFabric, resolve: (id: string) => string = require.resolve): void {
    const { sdk } = FABRIC_SDKS[fabric];
    try {
        resolve(sdk);
    } catch (e) {
        if ((e as NodeJS.ErrnoException).code === "MODULE_NOT_FOUND") throw new MissingSdkError(fabric, sdk, peerRange(sdk));
        throw e;
    }
}

/** Whether the error is a missing cloud SDK (thrown by assertSdk while a fabric module loads). */
export function isMissingSdk(e: unknown): e is MissingSdkError {
    return e instanceof MissingSdkError;
}
