/**
 * Validation at 1,024 nodes, from the real plan (examples/aws-p5.yaml with nodes: 1024 → parseClusterSpec →
 * planCluster → validationArgsFromPlan → ClusterValidation on Pulumi's mock engine). Linux refuses any single
 * argument or environment string over 128 KiB (MAX_ARG_STRLEN, include/uapi/linux/binfmts.h: 32 pages): the
 * Command's environment and argv must stay far below it at any node count, the variables go on stdin (a pipe), and
 * they grow only by the host list and the pair indexes, not by a command line per pair.
 */
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type * as ComponentModule from "../components/validate/component";
import { parseClusterSpec } from "../components/spec";
import { planCluster, type FabricPlan } from "../components/plan";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { buildNcclCommands } from "../components/validate/commands";

interface Registered { type: string; name: string; inputs: Record<string, any> }
const registered: Registered[] = [];
let mod: typeof ComponentModule;

before(async () => {
    await pulumi.runtime.setMocks(
        {
            newResource(args: pulumi.runtime.MockResourceArgs) {
                registered.push({ type: args.type, name: args.name, inputs: args.inputs });
                return { id: `${args.name}-id`, state: { ...args.inputs, stdout: "" } };
            },
            call(args: pulumi.runtime.MockCallArgs) {
                throw new Error(`unexpected invoke ${args.token}`);
            },
        },
        "rdmakit", "scale", false,
    );
    mod = await import("../components/validate/component");
});

const ROOT = path.resolve(__dirname, "..");
// the component writes the Ansible failure summariser under <repoRoot>/out/<stack>/, so the root is a scratch folder
const SCRATCH = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-vscale-"));
// node-local validation (the default mode) bundles the kit's playbooks from the root it runs in
fs.symlinkSync(path.join(ROOT, "playbooks"), path.join(SCRATCH, "playbooks"));
after(() => fs.rmSync(SCRATCH, { recursive: true, force: true }));

const KiB = 1024;
/** Far below the kernel's 128 KiB per string, so the Command's own inputs never get near it. */
const LIMIT = 32 * KiB;

function p5Plan(nodes: number): FabricPlan {
    const raw = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"];
    raw.nodes = nodes;
    return planCluster(parseClusterSpec(raw));
}

/** Private addresses as a VPC hands them out (the longest dotted form, 15 characters, for most of them). */
function addresses(n: number): string[] {
    return Array.from({ length: n }, (_, i) => `10.100.${100 + Math.floor(i / 150)}.${100 + (i % 150)}`);
}

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => o.apply(resolve));
}

test("1,024 nodes: no environment value or argument of the Command exceeds 32 KiB; the variables go whole on stdin", async () => {
    const plan = p5Plan(1024);
    assert.equal(plan.validation.hostNames.length, 1024);
    const ips = addresses(1024);
    const c = new mod.ClusterValidation("big", validationArgsFromPlan(plan, "big", {
        inventory: "all: {}\n", sshPrivateKey: pulumi.secret("test-key-not-real"), mpiHosts: ips, repoRoot: SCRATCH,
    }));
    await unwrap(c.verdict);
    const cmd = registered.find((r) => r.type === "command:local:Command" && r.name === "big-nccl")!.inputs;
    const env = cmd.environment as Record<string, string>;
    assert.ok(Object.keys(env).length >= 10, "the environment was read");
    assert.match(env.RDMAKIT_BUNDLE_DIGEST ?? "", /^[0-9a-f]{16,}$/, "the node-local validation's bundle is named");
    for (const [k, v] of Object.entries(env)) assert.ok(Buffer.byteLength(v) <= LIMIT, `environment ${k}: ${Buffer.byteLength(v)} bytes`);
    // argv of the process the provider starts: the interpreter and the script
    for (const a of [...cmd.interpreter, cmd.create]) assert.ok(Buffer.byteLength(a) <= LIMIT, `argument of ${Buffer.byteLength(a)} bytes`);
    // and what the state keeps besides: the triggers are a digest and the expectations
    for (const t of cmd.triggers) assert.ok(Buffer.byteLength(t) <= LIMIT, `trigger of ${Buffer.byteLength(t)} bytes`);
    assert.ok(!JSON.stringify(env).includes(ips[500]), "no node address in the environment");
    // nor the last run's report, which the provider would otherwise add to it (source: pulumi/pulumi-command
    // provider/pkg/provider/local/commandOutputs.go, PULUMI_COMMAND_STDOUT unless addPreviousOutputInEnv is false)
    assert.equal(cmd.addPreviousOutputInEnv, false);

    // stdin holds every variable: the whole host list, every pair, the commands
    const input = JSON.parse(cmd.stdin) as { inventory: string; extraVars: string };
    const vars = JSON.parse(input.extraVars) as ComponentModule.ValidationVars;
    assert.deepEqual(vars, mod.validationVars(validationArgsFromPlan(plan, "big"), ips,
        // the program's out/<stack>, as the command sees it from the kit's root where it runs
        path.join(path.relative(SCRATCH, path.resolve("out", "big")), "nccl")));
    assert.equal(vars.nccl_validate_hosts.length, 1024);
    assert.deepEqual(vars.nccl_validate_hosts[1023], { name: plan.validation.hostNames[1023], address: ips[1023] });
    assert.equal(vars.nccl_validate_pair_rounds.flat().length, 1024, "every node in two pairs");
    assert.equal(env.RDMAKIT_VARS_HASH, createHash("sha256").update(input.extraVars).digest("hex"));
    assert.ok(input.extraVars.length < 128 * KiB, `${input.extraVars.length} bytes in the state (it was 739 KB, twice)`);

    // what rdmakit plan renders from them: the hostfile and each pair's line, as commands.ts builds them
    const cmds = buildNcclCommands({
        fabric: "aws-efa", hosts: ips, gpusPerNode: 8, ncclEnv: { ...plan.ncclEnv, ...plan.validation.forcedNet },
        nccltestsDir: plan.validation.ncclTestsDir, mpiHome: plan.validation.mpiHome, fixedBytes: plan.validation.fixedBytes,
        sweepMaxBytes: plan.validation.maxBytes, iters: plan.validation.iterations, timeoutSeconds: plan.validation.timeoutMinutes * 60,
        minBusbwGBps: plan.validation.allNodes.minBusbwGBps,
    });
    assert.equal(mod.renderHostfile(vars), cmds.hostfile);
    assert.equal(vars.nccl_validate_all_fixed_cmd, cmds.allNodeFixed.shell);
    assert.match(vars.nccl_validate_all_fixed_cmd, / -np 8192 --hostfile /);
    const runs = mod.pairRuns(vars).flat();
    for (const p of [runs[0], runs[511], runs[1023]]) {
        const i = plan.validation.hostNames.indexOf(p.a);
        const j = plan.validation.hostNames.indexOf(p.b);
        assert.equal(p.cmd, cmds.pair(ips[i], ips[j]).shell, p.log);
    }
});

test("the variables stay flat from 8 to 1,024 nodes except the host list and the pair indexes", () => {
    const sizes = [8, 16, 64, 256, 1024].map((n) => {
        const vars = mod.validationVars(validationArgsFromPlan(p5Plan(n), "big"), addresses(n), "/repo/out/big/nccl");
        const total = JSON.stringify(vars).length;
        const hosts = JSON.stringify(vars.nccl_validate_hosts).length;
        const rounds = JSON.stringify(vars.nccl_validate_pair_rounds).length;
        return { n, total, hosts, rounds, rest: total - hosts - rounds };
    });
    const base = sizes[0];
    for (const s of sizes) {
        // the commands and settings: only `-np <ranks>` of the two all-node lines gains digits (64 → 8192), and with
        // Slurm (the p5 example's default) the srun lines' `--nodes=<n>` and the nodelist's one range (`[0001-1024]`)
        assert.ok(s.rest - base.rest <= 24, `n=${s.n}: ${s.rest} bytes besides the lists, ${base.rest} at 8 nodes`);
        // one {"name", "address"} entry per node: the address list itself
        assert.ok(s.hosts <= s.n * 56, `n=${s.n}: host list ${s.hosts} bytes`);
        // one [a,b] pair of indexes per node (every node launches or joins two pairs, n pairs in all)
        assert.ok(s.rounds <= s.n * 12, `n=${s.n}: pair rounds ${s.rounds} bytes`);
    }
    const big = sizes[sizes.length - 1];
    assert.ok(big.total - base.total <= (big.n - base.n) * (56 + 12), `growth ${big.total - base.total} bytes for ${big.n - base.n} nodes`);
    assert.ok(big.total < 96 * KiB, `${big.total} bytes at 1,024 nodes`);
});
