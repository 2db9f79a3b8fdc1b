/*
 * The rdmakit policy pack: `pulumi preview --policy-pack policies`. This file only constructs the pack: the
 * PolicyPack constructor starts the analyzer's gRPC server, so nothing else may import it (tests and
 * `rdmakit plan` use policies/evaluate.ts over policies/all.ts instead).
 */
import { PolicyPack } from "@pulumi/policy";
import { ALL_POLICIES } from "./all";

new PolicyPack("rdmakit", {
    description: "Fabric settings of rdmakit RDMA GPU clusters (AWS EFA, Azure InfiniBand, RoCEv2), checked before anything is created.",
    policies: ALL_POLICIES,
});
