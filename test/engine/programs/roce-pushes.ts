/**
 * The engine test of a QoS change's diff (test/engine/roce-diff.test.ts): one RoceCluster on the stack's
 * `rdmakit:cluster` (a bare-metal RoCE spec) with its switch pushes on (`pushSwitchConfig: true`), i.e. the pushes and
 * stage checks the project's own program makes for that spec with provision: true, without the GPU hosts' Ansible
 * run, which would need real hosts. The command resources run under the real pulumi-resource-command provider; the
 * test puts stand-in switches on PATH (see there).
 */
import * as pulumi from "@pulumi/pulumi";
import { RoceCluster } from "../../../components/roce/cluster";
import type { ClusterSpecInput } from "../../../components/types";

const roce = new RoceCluster("roce", { spec: new pulumi.Config("rdmakit").requireObject<ClusterSpecInput>("cluster"), pushSwitchConfig: true });
export const pushedSwitches = roce.pushedSwitches;
export const switchConfigDigests = roce.switchConfigDigests;
