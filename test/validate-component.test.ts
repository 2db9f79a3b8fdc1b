/**
 * ClusterValidation on Pulumi's mock engine: the one Command it registers, with its exact inputs; outputs read
 * from the `rdmakit-result:` line that `nccl-report --result-line` prints (the mock answers with a line the real
 * CLI printed for a fixture, see the CLI test).
 */
import { after, before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "crypto";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import * as pulumi from "@pulumi/pulumi";
import type * as ComponentModule from "../components/validate/component";
import type { Expectation } from "../components/validate/types";
import { summariserScript } from "../components/provision/summarise";
import { buildNcclCommands } from "../components/validate/commands";
import { keySocketPath } from "../components/provision/keysocket";
import { hashFolder } from "../components/provision/ansible";
import { bundleDigest } from "../components/provision/bundle";
import { fanoutNodes, fanoutScript } from "../components/provision/fanout";
import { nodeSendEnv } from "../components/provision/node-send";

interface Registered { type: string; name: string; inputs: Record<string, any>; parent?: string }
let registered: Registered[] = [];
let commandStdout = "";

let mod: typeof ComponentModule;

before(async () => {
    await pulumi.runtime.setMocks(
        {
            newResource(args: pulumi.runtime.MockResourceArgs) {
                registered.push({ type: args.type, name: args.name, inputs: args.inputs });
                const state: Record<string, unknown> = { ...args.inputs };
                if (args.type === "command:local:Command") state.stdout = commandStdout;
                return { id: `${args.name}-id`, state };
            },
            call(args: pulumi.runtime.MockCallArgs) {
                throw new Error(`unexpected invoke ${args.token}`);
            },
        },
        "rdmakit",
        "test",
        false,
    );
    mod = await import("../components/validate/component");
});

beforeEach(() => {
    registered = [];
});

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => o.apply(resolve));
}

const GiB = 1024 ** 3;
const INVENTORY = "all:\n  hosts:\n    node-0: {ansible_host: 10.0.1.10}\n";
const ALL: Expectation = { minBusbwGBps: 389.6, expectedBusbwGBps: 487, gradeFromBytes: 8 * GiB, transport: "efa", requireGdr: true, source: "catalog" };
const SINGLE: Expectation = { minBusbwGBps: 386.7, gradeFromBytes: 16 * GiB, transport: "any", requireGdr: false, source: "catalog" };
// the component writes the Ansible failure summariser under <repoRoot>/out/<stack>/, so the root is a scratch folder
const ROOT = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-validation-"));
after(() => fs.rmSync(ROOT, { recursive: true, force: true }));

function args(over: Partial<ComponentModule.ClusterValidationArgs> = {}): ComponentModule.ClusterValidationArgs {
    return {
        stack: "dev", inventory: INVENTORY, sshPrivateKey: pulumi.secret("test-key-not-real"), fabric: "aws-efa",
        hosts: ["node-0", "node-1", "node-2", "node-3"], mpiHosts: ["10.0.1.10", "10.0.1.11", "10.0.1.12", "10.0.1.13"],
        gpusPerNode: 8, ncclEnv: { NCCL_SOCKET_IFNAME: "^docker,lo,veth" }, nccltestsDir: "/opt/nccl-tests/build", mpiHome: "/opt/amazon/openmpi",
        expectations: { all: ALL, single: SINGLE }, fixedBytes: 16 * GiB, sweepMaxBytes: 16 * GiB,
        preflight: { gpus: 8, rdmaDevices: 32, gpudirect: "either", nvswitch: true },
        repoRoot: ROOT,
        // push mode's exact inputs; node-local's are the last test's
        mode: "controller",
        ...over,
    };
}

async function settle(c: ComponentModule.ClusterValidation) {
    return {
        verdict: await unwrap(c.verdict), busbw: await unwrap(c.busbwGBps), size: await unwrap(c.largestSizeBytes), slow: await unwrap(c.slowNodes),
    };
}

test("registers the component and one local Command with exact inputs", async () => {
    commandStdout = "playbook output\nrdmakit-result: {\"pass\":true,\"busbwGBps\":487.9,\"sizeBytes\":17179869184,\"slowNodes\":[]}\n";
    // written afresh by this program run, in the program's folder (the kit's root is elsewhere here)
    fs.rmSync(path.join("out", "dev", "ansible-summarise.cjs"), { force: true });
    const c = new mod.ClusterValidation("val", args());
    const out = await settle(c);
    assert.deepEqual(out, { verdict: "PASS", busbw: 487.9, size: 17179869184, slow: [] });
    assert.deepEqual(registered.map((r) => [r.type, r.name]), [["rdmakit:index:ClusterValidation", "val"], ["command:local:Command", "val-nccl"]]);
    const cmd = registered[1].inputs;
    assert.equal(cmd.create, mod.VALIDATE_SCRIPT);
    // every path relative: the command runs in the kit's root as seen from the program's folder
    assert.equal(cmd.dir, path.relative(process.cwd(), ROOT));
    assert.deepEqual(cmd.interpreter, ["ssh-agent", "/bin/bash", "-c"]);
    // reports go to the program's own out/<stack>, not the kit's folder; given relative to where the command runs
    const outDir = path.relative(ROOT, path.resolve("out", "dev"));
    assert.ok(!path.isAbsolute(outDir));
    const expectedVars = mod.validationVars(args(), ["10.0.1.10", "10.0.1.11", "10.0.1.12", "10.0.1.13"], path.join(outDir, "nccl"));
    const expectJson = JSON.stringify({ all: ALL, single: SINGLE });
    // the variables travel on stdin (no size limit); the inventory is the provisioning run's, kept once beside the stack
    // (out/<stack>/inputs, named from where the command runs) and read by its digest; both digests in the environment
    assert.deepEqual(JSON.parse(cmd.stdin), { extraVars: JSON.stringify(expectedVars) });
    assert.equal(cmd.environment.RDMAKIT_INVENTORY_INPUT, path.join(outDir, "inputs", `inventory-${createHash("sha256").update(INVENTORY).digest("hex")}.yml`));
    assert.equal(fs.readFileSync(path.join(ROOT, cmd.environment.RDMAKIT_INVENTORY_INPUT), "utf8"), INVENTORY);
    const digest = createHash("sha256").update(JSON.stringify(expectedVars)).digest("hex");
    const invDigest = createHash("sha256").update(INVENTORY).digest("hex");
    assert.equal(mod.varsDigest(JSON.stringify(expectedVars)), digest);
    // the key is no input of the command: the run fetches it from the program (provision/keysocket.ts)
    assert.ok(!JSON.stringify(cmd).includes("test-key-not-real"));
    assert.deepEqual(cmd.environment, {
        RDMAKIT_INVENTORY_INPUT: path.join(outDir, "inputs", `inventory-${invDigest}.yml`),
        RDMAKIT_INVENTORY_HASH: invDigest,
        RDMAKIT_VARS_HASH: digest,
        RDMAKIT_EXPECT: expectJson,
        // the grade must prove one 4 x 8 EFA job (components/validate/fabric.ts)
        RDMAKIT_FABRIC_ARGS: "--fabric efa --nodes 4 --gpus-per-node 8",
        RDMAKIT_OUT: outDir,
        RDMAKIT_FAIL_ON_FAILURE: "true",
        RDMAKIT_KEY_SOCKET: keySocketPath("rdmakit", "test"),
        RDMAKIT_KEY_NAME: "val-nccl",
        RDMAKIT_RERUN_ON: "",
        ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(outDir, "ansible-summarise.cjs"),
        ANSIBLE_CONFIG: path.join("playbooks", "ansible.cfg"),
        ANSIBLE_NOCOLOR: "1",
    });
    assert.deepEqual(cmd.triggers, [digest, invDigest, expectJson, "--fabric efa --nodes 4 --gpus-per-node 8"]);
    assert.equal(cmd.addPreviousOutputInEnv, false);
    assert.equal(c.reportDir, path.join("out", "dev"));
    // the summariser the script runs on a failed playbook is the provision step's, written beside the reports
    assert.equal(fs.readFileSync(path.join("out", "dev", "ansible-summarise.cjs"), "utf8"), summariserScript());
    // the script runs the playbook into its log, then grades with the CLI and exits with its status
    // with the logs' folder made absolute at run time (fetch would take a relative one from the playbook's folder);
    // no --private-key: the key is in the run's agent only
    assert.match(mod.VALIDATE_SCRIPT, /\nout_abs=\$\(cd "\$RDMAKIT_OUT" && pwd\) \|\| exit 1\n/);
    assert.match(mod.VALIDATE_SCRIPT, /\n {2}ansible-playbook -i "\$RDMAKIT_INVENTORY_FILE" playbooks\/validate\.yml -e "@\$vars" \$\{drop:\+-e "@\$drop"\} -e "nccl_validate_out_dir=\$out_abs\/nccl" \$\{skip:\+--skip-tags "\$skip"\} >>"\$log" 2>&1 9>&- &/);
    // ... from the file stdin was written to, before anything else could read stdin
    assert.ok(mod.VALIDATE_SCRIPT.startsWith("exec 3<&0 </dev/null\n"));
    assert.match(mod.VALIDATE_SCRIPT, /\nvars="\$tmp\/vars\.json"\nexport RDMAKIT_INVENTORY_FILE="\$tmp\/inventory\.yml"\nnode -e "[^"]+" "\$vars" "\$tmp\/nodes\.json" <&3 9>&- \|\| exit 1\nexec 3<&-\n/);
    assert.match(mod.VALIDATE_SCRIPT, /node --import tsx bin\/rdmakit\.ts nccl-report "\$@" --expect "\$RDMAKIT_EXPECT" \$\{RDMAKIT_FABRIC_ARGS:-\} --preflight "\$RDMAKIT_OUT\/preflight" --out "\$RDMAKIT_OUT" --result-line 9>&-/);
    // one node has no fabric run to prove; IB and RoCE clusters prove their own transport
    assert.equal(mod.fabricReportArgs({ fabric: "azure-ib", hosts: ["a"], gpusPerNode: 8 }), "");
    assert.equal(mod.fabricReportArgs({ fabric: "azure-ib", hosts: ["a", "b"], gpusPerNode: 8 }), "--fabric ib --nodes 2 --gpus-per-node 8");
    assert.equal(mod.fabricReportArgs({ fabric: "roce", hosts: ["a", "b", "c"], gpusPerNode: 4 }), "--fabric roce --nodes 3 --gpus-per-node 4");
});

test("a relative and an absolute repo root give the same command inputs, none of them absolute", async () => {
    const rel = path.relative(process.cwd(), ROOT);
    assert.ok(!path.isAbsolute(rel));
    commandStdout = "";
    await settle(new mod.ClusterValidation("rel", args({ repoRoot: rel })));
    await settle(new mod.ClusterValidation("abs", args({ repoRoot: ROOT })));
    const [a, b] = registered.filter((r) => r.type === "command:local:Command").map((r) => r.inputs);
    // the key's name is the component's ("rel-nccl", "abs-nccl"); everything else is equal
    const withoutKeyName = (i: any) => ({ ...i, environment: { ...i.environment, RDMAKIT_KEY_NAME: undefined } });
    assert.deepEqual(withoutKeyName(a), withoutKeyName(b));
    assert.equal(a.dir, rel);
    // the key socket is under $TMPDIR (keysocket.ts), never under the checkout
    for (const [k, v] of Object.entries(a.environment as Record<string, string>)) if (k !== "RDMAKIT_KEY_SOCKET") assert.ok(!path.isAbsolute(v), `${k}=${v}`);
    assert.ok(!JSON.parse(JSON.parse(a.stdin).extraVars).nccl_validate_out_dir.startsWith("/"));
});

test("the playbook variables: commands for the mpirun addresses, pair rounds by inventory name", () => {
    const v = mod.validationVars(args(), ["10.0.1.10", "10.0.1.11", "10.0.1.12", "10.0.1.13"], "/repo/out/dev/nccl");
    // the host list, from which the role renders the hostfile (templates/hostfile.j2) and fills in the pairs
    assert.deepEqual(v.nccl_validate_hosts, [
        { name: "node-0", address: "10.0.1.10" }, { name: "node-1", address: "10.0.1.11" },
        { name: "node-2", address: "10.0.1.12" }, { name: "node-3", address: "10.0.1.13" },
    ]);
    assert.equal(v.nccl_validate_gpus_per_node, 8);
    assert.equal(mod.renderHostfile(v), "10.0.1.10 slots=8\n10.0.1.11 slots=8\n10.0.1.12 slots=8\n10.0.1.13 slots=8\n");
    // every fixed run at fixedBytes: the single-node one too, although the all-node expectation grades from 8 GiB
    // (the single-node one from 16 GiB: at 8 GiB it would hold no graded row and always fail)
    assert.match(v.nccl_validate_single_cmd, /-np 8 .* -b 17179869184 -e 17179869184 /);
    assert.match(v.nccl_validate_all_fixed_cmd, /-np 32 --hostfile \/tmp\/rdmakit-nccl\/hostfile .* -b 17179869184 -e 17179869184 /);
    assert.match(v.nccl_validate_all_fixed_cmd, / NCCL_TESTS_MIN_BW=432\.889 /);
    assert.match(v.nccl_validate_all_sweep_cmd, / -b 8 -e 17179869184 /);
    // pairs as indexes into the host list; one command line for all of them, with the addresses left open
    assert.deepEqual(v.nccl_validate_pair_rounds, [[[0, 2], [1, 3]], [[2, 1], [3, 0]]]);
    assert.match(v.nccl_validate_pair_cmd, / --host @PAIR_A@:8,@PAIR_B@:8 /);
    assert.match(v.nccl_validate_pair_cmd, / -b 17179869184 -e 17179869184 /);
    const rounds = mod.pairRuns(v);
    assert.deepEqual(rounds.map((r) => r.map((p) => p.log)), [
        ["pair-r1-node-0+node-2.log", "pair-r1-node-1+node-3.log"],
        ["pair-r2-node-2+node-1.log", "pair-r2-node-3+node-0.log"],
    ]);
    assert.deepEqual(rounds.map((r) => r.map((p) => [p.round, p.a, p.b])), [
        [[1, "node-0", "node-2"], [1, "node-1", "node-3"]],
        [[2, "node-2", "node-1"], [2, "node-3", "node-0"]],
    ]);
    assert.match(rounds[0][0].cmd, / --host 10\.0\.1\.10:8,10\.0\.1\.12:8 /);
    for (const p of rounds.flat()) assert.match(p.cmd, / -b 17179869184 -e 17179869184 /);
    // each filled-in line is exactly the pair command commands.ts builds for the two addresses
    const cmds = buildNcclCommands({
        fabric: "aws-efa", hosts: v.nccl_validate_hosts.map((h) => h.address), gpusPerNode: 8, ncclEnv: { NCCL_SOCKET_IFNAME: "^docker,lo,veth" },
        nccltestsDir: "/opt/nccl-tests/build", mpiHome: "/opt/amazon/openmpi", fixedBytes: 16 * GiB, sweepMaxBytes: 16 * GiB, minBusbwGBps: ALL.minBusbwGBps,
    });
    const address = new Map(v.nccl_validate_hosts.map((h) => [h.name, h.address]));
    for (const p of rounds.flat()) assert.equal(p.cmd, cmds.pair(address.get(p.a)!, address.get(p.b)!).shell, p.log);
    // the sweep ends at sweepMaxBytes, a size of its own
    const small = mod.validationVars(args({ fixedBytes: 16 * GiB, sweepMaxBytes: 32 * GiB }), ["10.0.1.10", "10.0.1.11", "10.0.1.12", "10.0.1.13"], "/x");
    assert.match(small.nccl_validate_all_sweep_cmd, / -b 8 -e 34359738368 /);
    assert.match(small.nccl_validate_all_fixed_cmd, / -b 17179869184 -e 17179869184 /);
    assert.equal(v.nccl_validate_expected_rdma_devices, 32);
    assert.equal(v.nccl_validate_nvswitch, true);
    assert.equal(v.nccl_validate_check_pkey, false);
    assert.equal(v.nccl_validate_group, "gpu_nodes");
    assert.throws(() => mod.validationVars(args(), ["10.0.1.10"], "/x"), /has 1 addresses for 4 hosts/);
});

test("a failed grade with a slow node comes out in the outputs", async () => {
    commandStdout = "rdmakit-result: {\"pass\":false,\"busbwGBps\":2,\"sizeBytes\":1073741824,\"slowNodes\":[\"node-2\"]}\n";
    const c = new mod.ClusterValidation("val2", args({ failOnFailure: false, pairwise: "always" }));
    assert.deepEqual(await settle(c), { verdict: "FAIL", busbw: 2, size: 1073741824, slow: ["node-2"] });
    const cmd = registered.find((r) => r.type === "command:local:Command")!.inputs;
    assert.equal(cmd.environment.RDMAKIT_FAIL_ON_FAILURE, "false");
    const input = JSON.parse(cmd.stdin);
    assert.equal(JSON.parse(input.extraVars).nccl_validate_pairwise, "always");
    assert.equal(cmd.environment.RDMAKIT_VARS_HASH, createHash("sha256").update(input.extraVars).digest("hex"));
});

test("the plan's health expectation reaches the grade (RDMAKIT_HEALTH_EXPECT) and re-runs the validation when it changes", async () => {
    commandStdout = "rdmakit-result: {\"pass\":true,\"busbwGBps\":400,\"sizeBytes\":1073741824,\"slowNodes\":[]}\n";
    const health = {
        hostType: "p5.48xlarge", gpus: 8, gpuModel: "H100-80GB", nvidia: true, gpuPcie: { gen: 5, width: 16 }, nvlinkLinks: 18, nvswitch: true,
        fabric: "aws-efa" as const, nics: { names: [], count: 32, linkLayer: "efa" as const },
    };
    const c = new mod.ClusterValidation("val3", args({ health }));
    await settle(c);
    const cmd = registered.find((r) => r.type === "command:local:Command" && r.name === "val3-nccl")!.inputs;
    assert.deepEqual(JSON.parse(cmd.environment.RDMAKIT_HEALTH_EXPECT), health);
    assert.equal(cmd.triggers[cmd.triggers.length - 1], JSON.stringify(health));
    assert.match(mod.VALIDATE_SCRIPT, /--health "\$RDMAKIT_OUT\/health" --health-expect "\$RDMAKIT_HEALTH_EXPECT"/);
});

test("bad arguments fail before anything is registered, every problem with its path", () => {
    assert.throws(
        () => new mod.ClusterValidation("bad", args({ stack: "a/b", hosts: ["x", "x"], gpusPerNode: 0, pairwise: "sometimes" as any })),
        (e: any) => {
            const paths = (e.errors ?? []).map((x: any) => x.propertyPath).sort();
            assert.deepEqual(paths, ["gpusPerNode", "hosts", "pairwise", "stack"]);
            return true;
        },
    );
    assert.deepEqual(registered, []);
});

test("sizes that cannot pass are refused: a fixed size below a graded size, a sweep that stops short", () => {
    const paths = (over: Partial<ComponentModule.ClusterValidationArgs>) => mod.validateArgs(args(over)).map((i) => `${i.path}: ${i.message}`);
    assert.deepEqual(paths({}), []);
    // below the single-node expectation's 16 GiB (the all-node one grades from 8 GiB)
    const below = paths({ fixedBytes: 8 * GiB });
    assert.equal(below.length, 1);
    assert.match(below[0], /^fixedBytes: is below expectations\.single\.gradeFromBytes \(17179869184\): the single-node fixed-size run would hold no graded size/);
    // the sweep doubles from 8 bytes: 12 GiB is never reached
    assert.match(paths({ sweepMaxBytes: 12 * GiB }).join("\n"), /sweepMaxBytes: must be a power of two >= 8/);
    assert.match(paths({ fixedBytes: 32 * GiB, sweepMaxBytes: 16 * GiB }).join("\n"), /fixedBytes: is larger than sweepMaxBytes/);
    assert.match(paths({ fixedBytes: 0 }).join("\n"), /fixedBytes: must be an integer >= 1/);
    assert.throws(() => new mod.ClusterValidation("sizes", args({ fixedBytes: 8 * GiB })), (e: any) => {
        assert.deepEqual((e.errors ?? []).map((x: any) => x.propertyPath), ["fixedBytes"]);
        return true;
    });
    // validationVars refuses them too (rdmakit plan calls it without the component)
    assert.throws(() => mod.validationVars(args({ fixedBytes: 8 * GiB }), ["a", "b", "c", "d"], "/x"), /expectations\.single\.gradeFromBytes/);
});

test("result line parsing", () => {
    assert.equal(mod.parseResultLine("no line"), null);
    assert.deepEqual(mod.parseResultLine("rdmakit-result: {\"pass\":true,\"busbwGBps\":null,\"sizeBytes\":null,\"slowNodes\":[]}\nrdmakit-result: {\"pass\":false,\"busbwGBps\":1,\"sizeBytes\":2,\"slowNodes\":[\"a\"]}"),
        { pass: false, busbwGBps: 1, sizeBytes: 2, slowNodes: ["a"] });
});

test("node-local (the default): the fan-out's targets kept beside the stack, the fan-out and the bundle written and named relative to the run", async () => {
    fs.cpSync(path.join(__dirname, "..", "playbooks"), path.join(ROOT, "playbooks"), { recursive: true });
    const inventory = "all:\n  hosts:\n    node-0: {ansible_host: 10.0.1.10, ansible_user: ubuntu}\n";
    const { mode: _push, ...nodeLocal } = args({ inventory, hosts: ["node-0"], mpiHosts: ["10.0.1.10"] });
    await settle(new mod.ClusterValidation("nl", nodeLocal));
    const cmd = registered.find((r) => r.type === "command:local:Command")!.inputs;
    const outDir = path.relative(ROOT, path.resolve("out", "dev"));
    assert.deepEqual(Object.keys(JSON.parse(cmd.stdin)), ["extraVars"]);
    assert.equal(cmd.environment.RDMAKIT_NODES_FILE, path.join(outDir, "inputs", `nodes-${cmd.environment.RDMAKIT_NODES_HASH}.json`));
    const nodes = fanoutNodes(JSON.parse(fs.readFileSync(path.join(ROOT, cmd.environment.RDMAKIT_NODES_FILE), "utf8")));
    assert.deepEqual(nodes.map((n: { name: string; address: string; user: string }) => [n.name, n.address, n.user]), [["node-0", "10.0.1.10", "ubuntu"]]);
    const digest = bundleDigest(hashFolder(path.join(ROOT, "playbooks")));
    assert.equal(cmd.environment.RDMAKIT_FANOUT, path.join(outDir, "ansible-fanout.cjs"));
    assert.equal(cmd.environment.RDMAKIT_BUNDLE_DIGEST, digest);
    assert.equal(cmd.environment.RDMAKIT_BUNDLE_FILE, path.join(outDir, "bundle-validate", `bundle-${digest}.tar.gz`));
    // written from the program's folder, where the run (in the kit's root) finds them by those names
    assert.equal(fs.readFileSync(path.join("out", "dev", "ansible-fanout.cjs"), "utf8"), fanoutScript());
    assert.ok(fs.existsSync(path.join("out", "dev", "bundle-validate", `bundle-${digest}.tar.gz`)));
    assert.match(mod.VALIDATE_SCRIPT, /ANSIBLE_RUN_TAGS=health,preflight .*RDMAKIT_COLLECT=nccl_validate_out_dir=nccl RDMAKIT_COLLECT_DIR="\$out_abs" .*node "\$RDMAKIT_FANOUT" "\$tmp\/nodes\.json" "\$vars"/);
});
