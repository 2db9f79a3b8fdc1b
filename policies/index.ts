/*
 * The rdmakit policy pack: `pulumi preview --policy-pack policies` (after `npm install && npm run build` here), or
 * published with `pulumi policy publish`. Pulumi's runner requires package.json `main`, the bundle dist/index.js that
 * `npm run build` makes from this file, the rules and the catalog facts they read (build.mjs). This file only
 * constructs the pack: the PolicyPack constructor starts the analyzer's gRPC server, so nothing else may import it
 * (tests and `rdmakit plan` use policies/evaluate.ts over policies/rules/index.ts instead).
 */
import { PolicyPack } from "@pulumi/policy";
import { rdmakitPolicies } from "./rules";

new PolicyPack("rdmakit", {
    description: "Fabric settings of RDMA GPU clusters (AWS EFA, Azure InfiniBand, RoCEv2), checked before anything is created. Applies only to resources on an RDMA fabric.",
    policies: rdmakitPolicies(),
});
