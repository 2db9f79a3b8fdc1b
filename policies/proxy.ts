/**
 * The two values the rules and the offline evaluator take from @pulumi/policy, loaded from the package's proxy module
 * alone. The package index loads its policy server, gRPC and a second copy of @pulumi/pulumi (about 1 s of CPU on
 * every `rdmakit plan`); proxy.js requires nothing. Its published .d.ts is empty (`export {}`), so the types are the
 * index's own re-exports of the same objects (@pulumi/policy index.js: `unknownCheckingProxy` and `UnknownValueError`
 * are getters on require("./proxy")).
 */
import type * as policy from "@pulumi/policy";

// eslint-disable-next-line @typescript-eslint/no-require-imports
const proxy = require("@pulumi/policy/proxy") as Pick<typeof policy, "unknownCheckingProxy" | "UnknownValueError">;

export const unknownCheckingProxy = proxy.unknownCheckingProxy;
export const UnknownValueError = proxy.UnknownValueError;
export type UnknownValueError = policy.UnknownValueError;
