/**
 * `nccl-report --fabric`: each rule of the fabric proof against real published logs, one that passes it and one that
 * fails it (test/fixtures/nccl/*.source.md and test/fixtures/nccl-ref/SOURCES.md say where each log comes from).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as path from "path";
import { spawnSync } from "child_process";
import { parseNcclLog } from "../components/validate/parse";
import { gradeLog } from "../components/validate/grade";
import { checkRequirement, fabricOfPlan, type FabricRequirement } from "../components/validate/fabric";
import type { LogGrade, Verdict } from "../components/validate/types";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = path.resolve(__dirname, "..");
const FIX = path.join(ROOT, "test", "fixtures", "nccl");
const REF = path.join(ROOT, "test", "fixtures", "nccl-ref");

function file(name: string): string {
    if (name.startsWith("ref:")) {
        return path.join(REF, name.slice(4));
    }
    return path.join(FIX, name);
}

const NO_BW = { minBusbwGBps: 0, gradeFromBytes: 0, transport: "any" as const, requireGdr: false, source: "test" };

function grade(name: string, req: FabricRequirement): LogGrade | null {
    const p = file(name);
    if (p === "") return null;
    return gradeLog(parseNcclLog(fs.readFileSync(p, "utf8"), { name }), NO_BW, req);
}

/** The verdicts of one check, file-level and per run. */
function verdicts(g: LogGrade, check: string): Verdict[] {
    return [...g.verdicts, ...g.runs.flatMap((r) => r.verdicts)].filter((v) => v.check === check);
}

function expectCheck(name: string, req: FabricRequirement, check: string, ok: boolean, seen?: RegExp): void {
    const g = grade(name, req);
    if (!g) return;
    const vs = verdicts(g, check);
    assert.ok(vs.length > 0, `${name}: no ${check} verdict`);
    if (ok) assert.ok(vs.every((v) => v.ok), `${name} ${check}: ${vs.map((v) => v.seen).join(" | ")}`);
    else {
        const bad = vs.find((v) => !v.ok);
        assert.ok(bad, `${name} ${check} should fail: ${vs.map((v) => v.seen).join(" | ")}`);
        assert.ok(bad.expected.length > 0 && bad.seen.length > 0 && bad.hint, `${name} ${check}: expected, seen and a hint`);
        if (seen) assert.match(bad.seen, seen);
        assert.equal(g.pass, false);
    }
}

const EFA: FabricRequirement = { fabric: "efa", nodes: 2, gpusPerNode: 8 };
const IB: FabricRequirement = { fabric: "ib", nodes: 2, gpusPerNode: 1 };

test("a complete 2 x 8 p5 EFA run proves the fabric: every verdict passes", () => {
    const g = grade("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA);
    if (!g) return;
    const failed = [...g.verdicts, ...g.runs.flatMap((r) => r.verdicts)].filter((v) => !v.ok);
    assert.deepEqual(failed, []);
    assert.equal(g.pass, true);
    for (const c of ["one-job", "multi-node", "net-transport", "gpudirect", "socket-fallback", "correctness", "completed"]) {
        assert.ok(verdicts(g, c).length > 0, c);
    }
    assert.match(verdicts(g, "net-transport")[0].seen, /AWS Libfabric.*efa.*512 NET channel/);
});

test("a complete 2 x 8 H100 InfiniBand run through HPC-X's NCCL RDMA plugin proves the fabric: every verdict passes", () => {
    const g = grade("nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log", { fabric: "ib", nodes: 2, gpusPerNode: 8 })!;
    assert.deepEqual([...g.verdicts, ...g.runs.flatMap((r) => r.verdicts)].filter((v) => !v.ok), []);
    assert.equal(g.pass, true);
    // the plugin's net name carries the channels: `via NET/NCCL RDMA Plugin v8/0/GDRDMA`
    assert.match(verdicts(g, "net-transport")[0].seen, /networks: NCCL RDMA Plugin v8; devices: mlx5_0:1\/IB\/SHARP .*; 16 NET channel/);
    assert.match(verdicts(g, "gpudirect")[0].seen, /^16 of 16 NET channel/);
    expectCheck("nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log", { fabric: "roce" }, "net-transport", false, /devices mlx5_0:1\/IB\/SHARP .* are not RoCE/);
    expectCheck("nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log", { fabric: "ib", nodes: 4 }, "multi-node", false, /2 hosts \(rank list\)/);
});

test("a complete 2-node RoCE run: NET/IB over RoCE, checked and complete pass; no /GDRDMA fails", () => {
    const req: FabricRequirement = { fabric: "roce", nodes: 2, gpusPerNode: 1 };
    const log = "moc-roce-h100-2node-allreduce.log";
    for (const c of ["one-job", "multi-node", "net-transport", "socket-fallback", "correctness", "completed"]) expectCheck(log, req, c, true);
    // its channels go via NET/IB/1, the virtual device NCCL made of the one listed RoCE port
    assert.match(verdicts(grade(log, req)!, "net-transport")[0].seen, /devices: mlx5_5:1\/RoCE; 4 NET channel/);
    expectCheck(log, req, "gpudirect", false, /^0 of 4 NET channel/);
    expectCheck(log, { fabric: "ib" }, "net-transport", false, /devices mlx5_5:1\/RoCE are not IB/);
});

test("one-job: separate one-rank processes (nccl-tests without MPI=1) fail; one job passes", () => {
    expectCheck("nccl-tests-254-separate-rank0.log", { fabric: "ib" }, "one-job", false, /Rank 0 listed 12 times \(dgx01, dgx02\)/);
    expectCheck("nccl-tests-254-separate-rank0.log", { fabric: "ib" }, "multi-node", false, /each process is its own job/);
    expectCheck("nccl-tests-182-separate-jobs.log", { fabric: "ib" }, "one-job", false, /2 parameter lines printed back to back/);
    expectCheck("nccl-tests-350-ib-2node-gather.log", IB, "one-job", true);
});

test("a single-node run that printed `Using network IB` proves no fabric", () => {
    const req: FabricRequirement = { fabric: "roce", nodes: 2, gpusPerNode: 1 };
    expectCheck("nv_peer_memory-78-single-node-using-network-ib.log", req, "multi-node", false, /only k69a05298 \(rank list\)/);
    expectCheck("nv_peer_memory-78-single-node-using-network-ib.log", req, "net-transport", false, /no channel went `via NET\/...`: nothing crossed the network/);
    const g = grade("nv_peer_memory-78-single-node-using-network-ib.log", req);
    assert.match(verdicts(g!, "net-transport")[0].seen, /networks: IB; devices: mlx5_bond_8:1\/RoCE/);
});

test("multi-node: one host, fewer hosts or ranks than asked fail; the asked shape passes", () => {
    // DGX-2, 12 GPUs in one process on one host
    expectCheck("ref:14-nvswitch-dgx2-allgather-oldformat-failed.log", { fabric: "ib" }, "multi-node", false, /only seville \(rank list\)/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", { ...EFA, nodes: 4 }, "multi-node", false, /2 hosts \(rank list\)/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", { ...EFA, gpusPerNode: 4 }, "multi-node", false, /nRanks 16 \(rank list\)/);
    // a run without rank lines proves no hosts
    expectCheck("ref:04-efa-p5-2node-srun-prefix-allreduce.log", EFA, "multi-node", false, /no host printed/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "multi-node", true);
    expectCheck("nccl-tests-350-ib-2node-gather.log", IB, "multi-node", true);
});

test("net-transport: EFA needs aws-ofi-nccl with the efa provider on the channels; IB/RoCE need NET/IB on ports of that link layer", () => {
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "net-transport", true);
    expectCheck("ref:01-efa-p4d-eks-allreduce-oldformat.log", EFA, "net-transport", true);
    // the EKS run with EFA disabled: NCCL on sockets
    expectCheck("aws-do-eks-karpenter-socket.log", { fabric: "efa" }, "net-transport", false, /no `NET\/OFI Selected Provider is efa` line/);
    // with EFA enabled but no channel lines: nothing shows data crossed the network
    expectCheck("aws-do-eks-karpenter-efa.log", { fabric: "efa" }, "net-transport", false, /nothing crossed the network/);
    expectCheck("nccl-tests-350-ib-2node-gather.log", { fabric: "efa" }, "net-transport", false, /channels not on aws-ofi-nccl: 6 via NET\/IB/);
    expectCheck("nccl-tests-350-ib-2node-gather.log", IB, "net-transport", true);
    expectCheck("moc-roce-h100-2node-allreduce.log", { fabric: "roce" }, "net-transport", true);
    // the same log as RoCE: its channels use mlx5_2, an InfiniBand port, not mlx5_0, the RoCE one
    expectCheck("nccl-tests-350-ib-2node-gather.log", { fabric: "roce", nodes: 2 }, "net-transport", false, /channels on mlx5_2:1\/IB, not RoCE/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", { fabric: "ib" }, "net-transport", false, /no `NET\/IB : Using/);
    expectCheck("nccl-tests-82-broadcast-c0.log", { fabric: "roce" }, "net-transport", false, /no `NET\/IB : Using/);
});

test("gpudirect: NET channels without /GDRDMA fail (p3dn EFA, IB without peer memory); all /GDRDMA passes", () => {
    expectCheck("ref:03-efa-p3dn-8node-64gpu-allreduce.log", { fabric: "efa", nodes: 8 }, "gpudirect", false, /^0 of 352 NET channel/);
    expectCheck("nccl-1412-ib-no-gdrdma.log", { fabric: "ib" }, "gpudirect", false, /^0 of 4 NET channel/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "gpudirect", true);
    expectCheck("nccl-tests-350-ib-2node-gather.log", IB, "gpudirect", true);
});

test("socket-fallback: `Using network Socket` fails; none passes", () => {
    expectCheck("aws-do-eks-karpenter-socket.log", { fabric: "efa" }, "socket-fallback", false, /1 line\(s\) show NCCL on sockets/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "socket-fallback", true);
    expectCheck("moc-roce-h100-2node-allreduce.log", { fabric: "roce" }, "socket-fallback", true);
});

test("correctness: a run with -c 0 (validation: 0, N/A check cells) fails; a checked run passes", () => {
    expectCheck("nccl-tests-82-broadcast-c0.log", { fabric: "roce" }, "correctness", false, /validation: 0/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "correctness", true);
    expectCheck("nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log", { fabric: "ib" }, "correctness", true);
});

test("completed: a log without its footer fails; a complete one passes", () => {
    expectCheck("ref:04-efa-p5-2node-srun-prefix-allreduce.log", EFA, "completed", false, /truncated: the log ends mid-table after \d+ row\(s\) .* without its footer/);
    expectCheck("nccl-tests-350-ib-2node-gather.log", IB, "completed", false, /after 9 row\(s\) \(last .*\) without its footer/);
    expectCheck("ref:06-efa-p5-2node-tagged-fragments-allreduce.log", EFA, "completed", true);
    expectCheck("nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log", { fabric: "ib" }, "completed", true);
    expectCheck("moc-roce-h100-2node-allreduce.log", { fabric: "roce" }, "completed", true);
});

test("flags: fabric names, node and GPU counts are checked; the plan's fabric names map to the transports", () => {
    assert.deepEqual(checkRequirement("efa", "2", "8"), { fabric: "efa", nodes: 2, gpusPerNode: 8 });
    assert.equal(checkRequirement(undefined, undefined, undefined), undefined);
    assert.match(String(checkRequirement("nvlink", undefined, undefined)), /--fabric: unknown fabric "nvlink"; allowed: efa, ib, roce/);
    assert.match(String(checkRequirement("ib", "1", undefined)), /--nodes: "1" is not an integer >= 2/);
    assert.match(String(checkRequirement("ib", "2", "0")), /--gpus-per-node: "0"/);
    assert.match(String(checkRequirement(undefined, "2", undefined)), /need --fabric/);
    assert.deepEqual(["aws-efa", "azure-ib", "roce"].map((f) => fabricOfPlan(f as "roce")), ["efa", "ib", "roce"]);
});

test("the CLI: exit 0 when the log proves the fabric, 1 when not, 2 for a bad flag; each failed point printed", () => {
    const cli = (...args: string[]) => {
        const r = spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(ROOT, "bin", "rdmakit.ts"), "nccl-report", ...args], { cwd: ROOT, encoding: "utf8" });
        return { code: r.status, stdout: r.stdout, stderr: r.stderr };
    };
    const log = path.join(FIX, "nccl-tests-350-ib-2node-gather.log");
    const asRoce = cli(log, "--fabric", "roce", "--nodes", "2", "--gpus-per-node", "1");
    assert.equal(asRoce.code, 1);
    assert.match(asRoce.stdout, /net-transport/);
    assert.match(asRoce.stdout, /channels on mlx5_2:1\/IB, not RoCE/);
    assert.equal(cli(log, "--fabric", "nvlink").code, 2);
    assert.equal(cli(log, "--fabric", "ib", "--nodes", "1").code, 2);
    const p06 = file("ref:06-efa-p5-2node-tagged-fragments-allreduce.log");
    if (p06) {
        assert.equal(cli(p06, "--fabric", "efa", "--nodes", "2", "--gpus-per-node", "8").code, 0);
        assert.equal(cli(p06, "--fabric", "ib").code, 1);
    }
});
