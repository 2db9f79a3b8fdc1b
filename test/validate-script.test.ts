/**
 * VALIDATE_SCRIPT run for real, as the Command runs it (bash -c in the repository root): the playbook's output must go
 * to out/<stack>/ansible-validate.log, never to stdout; a failed playbook must leave a short summary and the log's path
 * on stderr; stdout carries the nccl-report summary and its result line.
 *
 * 1. The real ansible-playbook and validate.yml against this machine (local connection) as an aws-efa node: there is
 *    no GPU here, so the preflight fails for real. A stand-in `fi_info` prints published libfabric 2.x output
 *    (test/fixtures/efa, one device listed under two fabrics) and the preflight must count one EFA device.
 * 2. A stand-in ansible-playbook that "fetches" a real single-node log (test/fixtures/nccl-ref 05, p5, 16 GiB
 *    rows) and prints noise: the grade against the p5 plan's single-node expectation passes, the noise stays out.
 */
import { RUN_INTERPRETER, sha256 } from "../components/provision/ansible";
import { serveKeyLocally } from "../components/provision/keysocket";
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawnSync } from "child_process";
import { parse as parseYaml } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { summariserScript } from "../components/provision/summarise";
import {
    SUMMARISER_NAME, VALIDATE_LOG_NAME, VALIDATE_SCRIPT, fabricReportArgs, parseGateLine, parseResultLine, pairRuns, renderHostfile, validationVars, varsDigest,
} from "../components/validate/component";
import { buildNcclCommands, shQuote } from "../components/validate/commands";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { nodeSendEnv } from "../components/provision/node-send";

const ROOT = path.resolve(__dirname, "..");
const REF = path.join(ROOT, "test", "fixtures", "nccl-ref");
const FI_INFO = path.join(ROOT, "test", "fixtures", "efa", "fi_info-p-efa-libfabric2.txt");

const missing = ["ansible-playbook", "ssh-agent", "ssh-add", "ssh-keygen", "python3"]
    .filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);

function p5Plan(nodes?: number) {
    const doc = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    const raw = doc.config["rdmakit:cluster"];
    if (nodes !== undefined) raw.nodes = nodes;
    return planCluster(parseClusterSpec(raw));
}

/** Private addresses for n nodes, as a VPC hands them out. */
function addresses(n: number): string[] {
    return Array.from({ length: n }, (_, i) => `10.0.${Math.floor(i / 250)}.${10 + (i % 250)}`);
}

const scratchDirs: string[] = [];
after(() => { for (const d of scratchDirs) fs.rmSync(d, { recursive: true, force: true }); });

/** A scratch folder with an ed25519 key, a bin folder for stand-ins and the report folder. */
function scratch() {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-vscript-"));
    scratchDirs.push(dir);
    const key = path.join(dir, "id");
    const k = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-test", "-f", key]);
    assert.equal(k.status, 0, String(k.stderr));
    const bin = path.join(dir, "bin");
    const out = path.join(dir, "out", "dev");
    fs.mkdirSync(bin);
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, SUMMARISER_NAME), summariserScript());
    return { dir, key: fs.readFileSync(key, "utf8"), bin, out };
}

function stub(bin: string, name: string, body: string): void {
    fs.writeFileSync(path.join(bin, name), `#!/bin/bash\n${body}\n`, { mode: 0o755 });
}

/** fi_info -p efa -t TYPE: the published libfabric 2.x output's blocks of that endpoint type, as libfabric filters them. */
function stubFiInfo(bin: string): void {
    stub(bin, "fi_info", [
        'type=""; while [ $# -gt 0 ]; do [ "$1" = "-t" ] && type="$2"; shift; done',
        `awk -v t="$type" '/^provider:/ { if (b != "" && (t == "" || b ~ "type: " t "\\n")) printf "%s", b; b = "" } { b = b $0 "\\n" }` +
        ` END { if (b != "" && (t == "" || b ~ "type: " t "\\n")) printf "%s", b }' ${JSON.stringify(FI_INFO)}`,
    ].join("\n"));
}

/**
 * VALIDATE_SCRIPT as the Command runs it: inventory and variables on stdin (AnsibleRunInput JSON), their digests in
 * the environment. `stdin` replaces what goes in, to feed a broken input.
 */
function runScript(s: ReturnType<typeof scratch>, inventory: string, varsJson: string, env: Record<string, string>, stdin?: string) {
    const served = serveKeyLocally(s.key);
    const r = spawnSync(RUN_INTERPRETER[0], [...RUN_INTERPRETER.slice(1), VALIDATE_SCRIPT], {
        cwd: ROOT, encoding: "utf8", timeout: 240_000, input: stdin ?? JSON.stringify({ inventory, extraVars: varsJson }),
        env: {
            PATH: `${s.bin}:${process.env.PATH}`, HOME: process.env.HOME ?? s.dir,
            RDMAKIT_OUT: s.out, ...served.env, RDMAKIT_FAIL_ON_FAILURE: "true", RDMAKIT_RERUN_ON: "",
            ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(s.out, SUMMARISER_NAME),
            ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            RDMAKIT_INVENTORY_HASH: sha256(inventory),
            RDMAKIT_VARS_HASH: varsDigest(varsJson),
            ...env,
        },
    });
    served.close();
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("a failed preflight: Ansible output only in the log, a short summary on stderr, one EFA device counted once",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const s = scratch();
        stubFiInfo(s.bin);
        const seen = spawnSync(path.join(s.bin, "fi_info"), ["-p", "efa", "-t", "FI_EP_RDM"], { encoding: "utf8" }).stdout;
        assert.equal((seen.match(/^\s*domain:/gm) ?? []).length, 2, "the RDM view lists the one device twice");

        const plan = p5Plan();
        const args = validationArgsFromPlan(plan, "dev");
        const vars = validationVars(
            { ...args, hosts: ["localhost"], preflight: { ...args.preflight, rdmaDevices: 1, nvswitch: false } },
            ["127.0.0.1"], path.join(s.out, "nccl"),
        );
        const inventory = "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n";
        const r = runScript(s, inventory, JSON.stringify(vars), { RDMAKIT_EXPECT: JSON.stringify({ all: args.expectations.all }) });

        const log = fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8");
        assert.match(log, /PLAY RECAP/);
        assert.doesNotMatch(r.stdout, /TASK \[|PLAY |ok: \[/, "no playbook output on stdout");
        // the summariser's lines: which host, which task, why; then where the full log and the preflight results are
        assert.match(r.stderr, new RegExp(`ansible-playbook failed on 1 of 1 host \\(full log: ${path.join(s.out, VALIDATE_LOG_NAME).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\):`));
        assert.match(r.stderr, /localhost: failed at task "nccl_validate : Require every preflight check to pass": preflight localhost: gpu-count: expected 8 GPUs/);
        assert.match(r.stderr, /per-node preflight results: .*\/preflight\//);
        assert.ok(r.stderr.split("\n").length < 12, `stderr stays short:\n${r.stderr}`);
        // no nccl-tests log was fetched: the report names the bad node from its preflight results
        assert.equal(r.code, 1, r.stderr);
        assert.match(r.stdout, /FAIL preflight: 0 of 1 node\(s\) pass; bad node\(s\): localhost/);
        assert.match(r.stdout, /x gpu-count \[preflight localhost\]: expected 8 GPUs; seen/);
        assert.deepEqual(parseResultLine(r.stdout)?.badNodes, ["localhost"]);

        const checks = JSON.parse(fs.readFileSync(path.join(s.out, "preflight", "localhost.json"), "utf8")).checks as Array<{ check: string; ok: boolean; seen: string }>;
        const efa = checks.find((c) => c.check === "efa-devices");
        assert.deepEqual({ ok: efa?.ok, seen: efa?.seen }, { ok: true, seen: "1 EFA devices" });
        assert.equal(checks.find((c) => c.check === "gpu-count")?.ok, false);
    });

test("a healthy run: stdout is the nccl-report summary and its result line, nothing from the playbook",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const s = scratch();
        const single = path.join(REF, "05-nvlink-p5-1node-awsbatch-allreduce.log");
        // stands in for validate.yml: the log lands where single.yml fetches it; the chatter must stay in the log file;
        // it keeps a copy of the variables file it was given (-e @file) to compare with what went in on stdin
        stub(s.bin, "ansible-playbook", [
            'echo "PLAY [Single-node nccl-tests on every node] ****"',
            'echo "TASK [nccl_validate : Run nccl-tests on this node alone] ****"',
            `cp ${JSON.stringify(single)} "$RDMAKIT_OUT/nccl/single-node-0.log"`,
            'echo "argv: $*" >&2',
            'while [ $# -gt 0 ]; do case "$1$2" in -e@*) cp "${2#@}" "$RDMAKIT_OUT/vars-seen.json";; esac; shift; done',
        ].join("\n"));
        // the variables of a 2,048-node cluster: more than a pipe buffer (64 KiB), so the provider's write waits while the
        // script's prelude runs; all of it must arrive
        const plan = p5Plan(2048);
        const vars = JSON.stringify(validationVars(validationArgsFromPlan(plan, "dev"), addresses(2048), path.join(s.out, "nccl")));
        assert.ok(vars.length > 64 * 1024, `${vars.length} bytes`);
        const expect = JSON.stringify({ all: plan.validation.allNodes, single: plan.validation.singleNode });
        const r = runScript(s, "all: {}\n", vars, { RDMAKIT_EXPECT: expect });
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.doesNotMatch(r.stdout + r.stderr, /PLAY \[|TASK \[|argv:/);
        const log = fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8");
        // no --private-key (the key is in the run's agent only); the logs' folder comes last, made absolute by the
        // script (fetch takes a relative one from the playbook's folder)
        const argv = /^argv: -i \S+ playbooks\/validate\.yml -e @(\S+)\/vars\.json -e nccl_validate_out_dir=(\S+)$/m.exec(log);
        assert.ok(argv, log);
        assert.equal(argv[2], path.join(fs.realpathSync(s.out), "nccl"));
        assert.match(log, /TASK \[nccl_validate : Run nccl-tests on this node alone\]/);
        assert.equal(fs.readFileSync(path.join(s.out, "vars-seen.json"), "utf8"), vars, "the variables arrive whole");
        assert.ok(!fs.existsSync(argv[1]), "the temporary folder with the variables is removed");
        const lines = r.stdout.trim().split("\n");
        assert.ok(lines.length < 40, `a short summary:\n${r.stdout}`);
        assert.deepEqual(parseResultLine(r.stdout)?.pass, true);
        assert.ok(lines[lines.length - 1].startsWith("rdmakit-result: "));
        assert.ok(fs.existsSync(path.join(s.out, "nccl-summary.txt")));
    });

test("variables on stdin that do not match their digest stop the run before the playbook",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const s = scratch();
        stub(s.bin, "ansible-playbook", 'echo ran >"$RDMAKIT_OUT/playbook-ran"');
        const vars = JSON.stringify(validationVars(validationArgsFromPlan(p5Plan(), "dev"), addresses(4), path.join(s.out, "nccl")));
        const whole = JSON.stringify({ inventory: "all: {}\n", extraVars: vars });
        const other = JSON.stringify({ inventory: "all: {}\n", extraVars: vars.replace("nccl_validate", "nccl_valid8") });
        // cut short (as a broken pipe would leave it), empty, and whole but not what the digests name
        for (const [input, why] of [[whole.slice(0, 1000), /not JSON/], ["", /not JSON/], [other, /do not match their digests/]] as const) {
            const r = runScript(s, "all: {}\n", vars, { RDMAKIT_EXPECT: "{}" }, input);
            assert.equal(r.code, 1, r.stdout + r.stderr);
            assert.match(r.stderr, why);
            assert.ok(!fs.existsSync(path.join(s.out, "playbook-ran")), "the playbook did not run");
        }
    });

/** An inventory of n hosts that are all this machine (local connection), named as the plan names the nodes. */
/**
 * The hosts as this machine; with `keysDir`, each host keeps its mpirun key folder and authorized_keys there
 * (validate.yml's run_key.yml), not in this machine's home, which all of them share.
 */
function localInventory(names: string[], keysDir?: string): string {
    return "all:\n  hosts:\n" + names.map((n) => `    ${n}:\n      ansible_connection: local\n` + (keysDir
        ? `      nccl_validate_ssh_dir: ${path.join(keysDir, n, "mpirun")}\n      nccl_validate_authorized_keys: ${path.join(keysDir, n, "authorized_keys")}\n`
        : "")).join("");
}

test("the role renders the hostfile and every pair's command line that commands.ts builds (6 hosts, real ansible-playbook)",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const s = scratch();
        // stands in for the launcher: timeout(1) is the first word of every nccl-tests line; it writes the words it got,
        // one per line, into the log the role fetches (the shell has already taken the line apart by then)
        stub(s.bin, "timeout", "printf '%s\\n' \"$@\"");
        const plan = p5Plan(6);
        const names = plan.validation.hostNames;
        const ips = addresses(6);
        const remote = path.join(s.dir, "remote");
        const args = { ...validationArgsFromPlan(plan, "dev"), group: "all", pairwise: "always" as const };
        const vars = validationVars(args, ips, path.join(s.out, "nccl"));
        // the key folder as a host variable (localInventory), so not among the extra variables, which would win
        const { nccl_validate_ssh_dir: sshDir, ...rest } = vars;
        assert.equal(sshDir, "~/.rdmakit-mpirun");
        const v = { ...rest, nccl_validate_remote_dir: remote, nccl_validate_hostfile_path: path.join(remote, "mpi", "hostfile") };
        const inventory = localInventory(names, path.join(s.dir, "keys"));
        // the all-node and pair plays only: no GPU here for the preflight
        const r = runScript(s, inventory, JSON.stringify(v), { RDMAKIT_EXPECT: "{}", ANSIBLE_RUN_TAGS: "nccl_all,nccl_pairs" });
        const log = fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8");
        assert.match(log, /PLAY RECAP/, log);
        assert.doesNotMatch(log, /failed=[1-9]|unreachable=[1-9]/, log);
        assert.notEqual(r.code, 0, "the stand-in logs hold no nccl-tests output, so the grade fails");

        const cmds = buildNcclCommands({
            fabric: args.fabric, hosts: ips, gpusPerNode: args.gpusPerNode, ncclEnv: args.ncclEnv, nccltestsDir: args.nccltestsDir,
            mpiHome: args.mpiHome, fixedBytes: args.fixedBytes, sweepMaxBytes: args.sweepMaxBytes, iters: args.iters,
            timeoutSeconds: args.timeoutSeconds, minBusbwGBps: args.expectations.all.minBusbwGBps,
        });
        // the hostfile the role wrote on the first node
        assert.equal(fs.readFileSync(path.join(remote, "mpi", "hostfile"), "utf8"), cmds.hostfile);
        assert.equal(cmds.hostfile, ips.map((ip) => `${ip} slots=8\n`).join(""));
        assert.equal(renderHostfile(vars), cmds.hostfile, "rdmakit plan's hostfile is the role's");

        /** The line the shell ran, from the words timeout(1) got: quoted again as commands.ts quotes. */
        const ran = (log: string) => ["timeout", ...fs.readFileSync(path.join(s.out, "nccl", log), "utf8").replace(/\n$/, "").split("\n")].map(shQuote).join(" ");
        assert.equal(ran("all-fixed.log"), cmds.allNodeFixed.shell);
        assert.equal(ran("all-sweep.log"), cmds.allNodeSweep.shell);

        // every pair: launched on its first node, logged under the name nccl-report reads, its line as commands.ts builds it
        const address = new Map(names.map((n, i) => [n, ips[i]]));
        const runs = pairRuns(vars).flat();
        assert.equal(runs.length, 6, "6 hosts: every host in two pairs, two rounds of three");
        const fetched = fs.readdirSync(path.join(s.out, "nccl")).filter((f) => f.startsWith("pair-")).sort();
        assert.deepEqual(fetched, runs.map((p) => p.log).sort());
        assert.match(runs[0].log, new RegExp(`^pair-r1-${names[0]}\\+${names[3]}\\.log$`));
        for (const p of runs) {
            const expected = cmds.pair(address.get(p.a)!, address.get(p.b)!).shell;
            assert.equal(ran(p.log), expected, p.log);
            assert.equal(p.cmd, expected, `rdmakit plan's ${p.log}`);
        }
        assert.match(log, new RegExp(`TASK \\[nccl_validate : Run the pair \\(output kept whatever the exit status\\)\\][\\s\\S]*ok: \\[${names[0]}\\] => \\(item=${names[0]} \\+ ${names[3]}\\)`));
    });

test("Slurm: the report names the launcher and decides the gate, the gate playbook runs on the head node, its line comes back only when it ran there",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const LOG = path.join(REF, "01-efa-p4d-eks-allreduce-oldformat.log");
        const expectation = { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa" as const, requireGdr: true, source: "test" };
        const vars = JSON.stringify(validationVars({
            stack: "dev", group: "all", fabric: "aws-efa", hosts: ["gpu-a", "gpu-b"], gpusPerNode: 8, ncclEnv: {}, nccltestsDir: "/opt/nccl-tests/build",
            mpiHome: "/opt/amazon/openmpi", fixedBytes: 1 << 30, sweepMaxBytes: 1 << 30, expectations: { all: expectation },
            preflight: { gpus: 8, rdmaDevices: 32, gpudirect: "either", nvswitch: true }, slurm: { head: "head01", partition: "gpu", mpi: "pmix" },
        }, ["10.0.0.1", "10.0.0.2"], "nccl"));
        const once = (headRuns: boolean) => {
            const s = scratch();
            // validate.yml: the srun play's log and launcher.txt, each node's preflight result (gpu-b's memlock short);
            // slurm-gate.yml: on the head node when the inventory holds it (it then writes the applied file)
            stub(s.bin, "ansible-playbook", [
                'echo "argv: $*" >>"$RDMAKIT_OUT/argv.txt"',
                'case "$*" in *validate.yml*)',
                `  cp ${JSON.stringify(LOG)} "$RDMAKIT_OUT/nccl/all-fixed.log"; echo "srun --mpi=pmix from head01" >"$RDMAKIT_OUT/launcher.txt"`,
                `  echo '{"host":"gpu-a","checks":[{"check":"memlock","ok":true,"expected":"unlimited","seen":"unlimited"}]}' >"$RDMAKIT_OUT/preflight/gpu-a.json"`,
                `  echo '{"host":"gpu-b","checks":[{"check":"memlock","ok":false,"expected":"unlimited","seen":"8192"}]}' >"$RDMAKIT_OUT/preflight/gpu-b.json";;`,
                "*slurm-gate.yml*)",
                headRuns ? '  for a in "$@"; do case "$a" in slurm_gate_applied_file=*) echo "drained: gpu-b" >"${a#*=}";; esac; done;;' : "  :;;",
                "esac",
            ].join("\n"));
            const r = runScript(s, "all: {}\n", vars, {
                RDMAKIT_EXPECT: JSON.stringify({ all: expectation }), RDMAKIT_FABRIC_ARGS: "--fabric efa --nodes 2 --gpus-per-node 8", RDMAKIT_SLURM_HEAD: "head01",
            });
            return { r, argv: fs.readFileSync(path.join(s.out, "argv.txt"), "utf8") };
        };
        const { r, argv } = once(true);
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.match(r.stdout, /all-node run launched by: srun --mpi=pmix from head01/);
        assert.match(argv, /playbooks\/slurm-gate\.yml -e @\S+\/slurm-gate\.json -e slurm_gate_head=head01 -e slurm_gate_applied_file=\S+/);
        assert.deepEqual(parseGateLine(r.stdout), { resumed: ["gpu-a"], drained: [{ node: "gpu-b", reason: "rdmakit: preflight memlock: seen 8192" }] });
        // no head node in the inventory: the gate playbook matched no host, no gate line, the nodes stay as they are
        const none = once(false);
        assert.equal(none.r.code, 1);
        assert.equal(parseGateLine(none.r.stdout), null);
    });

test("Slurm: a node an operator drained is read from the head node first and left out of the run, named with its reason; the two others are validated and join",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const LOG = path.join(REF, "01-efa-p4d-eks-allreduce-oldformat.log");
        const expectation = { minBusbwGBps: 40, gradeFromBytes: 1 << 30, transport: "efa" as const, requireGdr: true, source: "test" };
        const vars = JSON.stringify(validationVars({
            stack: "dev", group: "all", fabric: "aws-efa", hosts: ["gpu-a", "gpu-b", "gpu-c"], gpusPerNode: 8, ncclEnv: {}, nccltestsDir: "/opt/nccl-tests/build",
            mpiHome: "/opt/amazon/openmpi", fixedBytes: 1 << 30, sweepMaxBytes: 1 << 30, expectations: { all: expectation },
            preflight: { gpus: 8, rdmaDevices: 32, gpudirect: "either", nvswitch: true }, slurm: { head: "head01", partition: "gpu", mpi: "pmix" },
        }, ["10.0.0.1", "10.0.0.2", "10.0.0.3"], "nccl"));
        const s = scratch();
        // slurm-states.yml: what the head node's sinfo -R printed (constructed, sinfo(1) -o '%n|%t|%E'); validate.yml: the
        // nodes it was given (the override's srun node list), two nodes' preflight, the two-node log
        stub(s.bin, "ansible-playbook", [
            'echo "argv: $*" >>"$RDMAKIT_OUT/argv.txt"',
            'case "$*" in *slurm-states.yml*)',
            '  for a in "$@"; do case "$a" in slurm_states_file=*) printf \'gpu-c|drain|operator: PSU swap\\ngpu-a|drain|rdmakit: not validated yet\\n\' >"${a#*=}";; esac; done;;',
            '*validate.yml*)',
            '  for a in "$@"; do case "$a" in @*dropped.json) cp "${a#@}" "$RDMAKIT_OUT/override-seen.json";; esac; done',
            `  cp ${JSON.stringify(LOG)} "$RDMAKIT_OUT/nccl/all-fixed.log"; echo "srun --mpi=pmix from head01" >"$RDMAKIT_OUT/launcher.txt"`,
            `  for h in gpu-a gpu-b; do echo "{\\"host\\":\\"$h\\",\\"checks\\":[{\\"check\\":\\"memlock\\",\\"ok\\":true,\\"expected\\":\\"unlimited\\",\\"seen\\":\\"unlimited\\"}]}" >"$RDMAKIT_OUT/preflight/$h.json"; done;;`,
            "*slurm-gate.yml*)",
            '  for a in "$@"; do case "$a" in slurm_gate_applied_file=*) echo applied >"${a#*=}";; esac; done;;',
            "esac",
        ].join("\n"));
        const r = runScript(s, "all: {}\n", vars, {
            RDMAKIT_EXPECT: JSON.stringify({ all: expectation }), RDMAKIT_FABRIC_ARGS: "--fabric efa --nodes 3 --gpus-per-node 8", RDMAKIT_SLURM_HEAD: "head01",
        });
        const argv = fs.readFileSync(path.join(s.out, "argv.txt"), "utf8");
        assert.match(argv.split("\n")[0], /playbooks\/slurm-states\.yml -e slurm_states_head=head01 /, "the states are read before the validation");
        const seen = JSON.parse(fs.readFileSync(path.join(s.out, "override-seen.json"), "utf8"));
        assert.deepEqual(seen.nccl_validate_dropped, ["gpu-c"]);
        assert.ok(seen.nccl_validate_slurm.fixed_cmd.includes(" --nodelist=gpu-a,gpu-b --nodes=2 "), seen.nccl_validate_slurm.fixed_cmd);
        assert.match(r.stderr, /left out of the all-node runs \(Slurm cannot give it to the run\): gpu-c: Slurm: drain, operator: PSU swap/);
        assert.match(r.stdout, /left out of the all-node runs \(Slurm cannot give them to the run\): 1 node\(s\)/);
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.deepEqual(parseGateLine(r.stdout), { resumed: ["gpu-a", "gpu-b"], drained: [{ node: "gpu-c", reason: "rdmakit: left out of the validation (Slurm: drain, operator: PSU swap)" }] });
    });

/**
 * cluster.validation.maxFailedNodes: three hosts that are all this machine, each running Ansible's modules through its
 * own interpreter wrapper (ansible_python_interpreter) that puts its own tools first on PATH: the third host's
 * nvidia-smi lists 7 GPUs of 8, a failed preflight (gpu-count). nvidia-smi, fi_info, `ulimit -l` and timeout(1) are stand-ins; the
 * all-node launch (timeout is its first word) records its words and prints a real 2-node p5 log. Bound: two playbook
 * runs of three local hosts, the health play skipped (~40 s each here).
 */
function dropScenario(maxFailedNodes: number) {
    const s = scratch();
    const plan = p5Plan(3);
    const names = plan.validation.hostNames;
    const ips = addresses(3);
    const ranDir = path.join(s.dir, "ran");
    fs.mkdirSync(ranDir);
    stubFiInfo(s.bin);
    stub(s.bin, "timeout", [
        `n=$(ls ${JSON.stringify(ranDir)} | wc -l); printf '%s\\n' "$@" >${JSON.stringify(ranDir)}/run-$n.txt`,
        `case " $* " in *" -np 8 "*) cat ${JSON.stringify(path.join(REF, "05-nvlink-p5-1node-awsbatch-allreduce.log"))};;`,
        `  *) cat ${JSON.stringify(path.join(REF, "04-efa-p5-2node-srun-prefix-allreduce.log"))};; esac`,
    ].join("\n"));
    const interp = (n: string, gpus: number) => {
        const own = path.join(s.dir, "tools", n);
        fs.mkdirSync(own, { recursive: true });
        stub(own, "nvidia-smi", `for i in $(seq ${gpus}); do echo "NVIDIA H100 80GB HBM3"; done`);
        // the preflight reads `ulimit -l` through bash; this machine's hard limit cannot be raised, so bash's start-up file
        // (BASH_ENV) answers as a node set up for RDMA does
        fs.writeFileSync(path.join(own, "bashenv"), "ulimit() { echo unlimited; }\n");
        const py = path.join(own, "python");
        fs.writeFileSync(py, `#!/bin/bash\nexport BASH_ENV=${path.join(own, "bashenv")} PATH=${own}:$PATH\nexec python3 "$@"\n`, { mode: 0o755 });
        return py;
    };
    const keys = path.join(s.dir, "keys");
    const inventory = "all:\n  hosts:\n" + names.map((n, i) => `    ${n}:\n      ansible_connection: local\n` +
        `      ansible_python_interpreter: ${interp(n, i === 2 ? 7 : 8)}\n` +
        `      nccl_validate_ssh_dir: ${path.join(keys, n, "mpirun")}\n      nccl_validate_authorized_keys: ${path.join(keys, n, "authorized_keys")}\n`).join("");
    const args = {
        ...validationArgsFromPlan(plan, "dev"), group: "all", pairwise: "never" as const,
        preflight: { ...plan.validation.preflight, rdmaDevices: 1, nvswitch: false, gpudirect: "none" as const },
        ...(maxFailedNodes ? { maxFailedNodes } : {}),
    };
    const remote = path.join(s.dir, "remote");
    const { nccl_validate_ssh_dir: _ssh, ...vars } = validationVars(args, ips, path.join(s.out, "nccl"));
    const v = { ...vars, nccl_validate_remote_dir: remote, nccl_validate_hostfile_path: path.join(remote, "mpi", "hostfile") };
    const r = runScript(s, inventory, JSON.stringify(v), {
        RDMAKIT_EXPECT: JSON.stringify({ all: args.expectations.all, single: args.expectations.single }), RDMAKIT_FABRIC_ARGS: fabricReportArgs(args),
        ANSIBLE_SKIP_TAGS: "health", ...(maxFailedNodes ? { RDMAKIT_MAX_FAILED_NODES: String(maxFailedNodes) } : {}),
    });
    const ran = fs.readdirSync(ranDir).map((f) => fs.readFileSync(path.join(ranDir, f), "utf8").split("\n"));
    const fetched = fs.existsSync(path.join(s.out, "nccl")) ? fs.readdirSync(path.join(s.out, "nccl")).sort() : [];
    return { r, names, ips, ran, fetched, remote, log: fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8") };
}

test("maxFailedNodes 1: a node failing preflight is left out, the all-node runs go on with the two others and the report names it",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false, timeout: 240_000 }, () => {
        const { r, names, ips, ran, fetched, remote, log } = dropScenario(1);
        assert.match(log, /PLAY RECAP/, log);
        // the single-node runs and the all-node runs took the two healthy hosts only: hostfile and rank count from them
        assert.deepEqual(fetched, ["all-fixed.log", "all-sweep.log", `single-${names[0]}.log`, `single-${names[1]}.log`].sort(), r.stderr);
        assert.equal(fs.readFileSync(path.join(remote, "mpi", "hostfile"), "utf8"), `${ips[0]} slots=8\n${ips[1]} slots=8\n`);
        const all = ran.filter((words) => words.includes("--hostfile"));
        assert.equal(all.length, 2, "the fixed-size run and the sweep");
        for (const words of all) assert.equal(words[words.indexOf("-np") + 1], "16");
        assert.ok(!ran.some((w) => w.includes(ips[2])), "nothing ran towards the third host");
        // said on stderr and in the report, with the check, what was expected and what was seen
        assert.match(r.stderr, new RegExp(`left out of the all-node runs \\(cluster.validation.maxFailedNodes 1\\): ${names[2]}: preflight gpu-count: expected 8 GPUs; seen 7 GPUs`));
        assert.match(r.stdout, new RegExp(`left out of the all-node runs \\(cluster.validation.maxFailedNodes\\): 1 node\\(s\\)[^\\n]*\\n    ${names[2]}: preflight gpu-count: expected 8 GPUs; seen 7 GPUs`));
        assert.doesNotMatch(r.stdout, /x gpu-count/, "a left-out node's check fails the run no more");
        const result = parseResultLine(r.stdout);
        assert.deepEqual(result?.badNodes, [names[2]], "still a bad node: the Slurm gate drains it");
        // the all-node log is graded as a run of the two others: no node-count failure
        assert.doesNotMatch(r.stdout, /3 nodes|nodes: 3|expected 24 ranks/);
    });
