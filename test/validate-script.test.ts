/**
 * VALIDATE_SCRIPT run for real, as the Command runs it (bash -c in the repository root): the playbook's output must go
 * to out/<stack>/ansible-validate.log, never to stdout; a failed playbook must leave a short summary and the log's path
 * on stderr; stdout carries the nccl-report summary and its result line.
 *
 * 1. The real ansible-playbook and validate.yml against this machine (local connection) as an aws-efa node: there is
 *    no GPU here, so the preflight fails for real. A stand-in `fi_info` prints published libfabric 2.x output
 *    (test/fixtures/efa, one device listed under two fabrics) and the preflight must count one EFA device.
 * 2. A stand-in ansible-playbook that "fetches" a real single-node log (../shared/ref/nccl-tests-logs 05, p5, 16 GiB
 *    rows) and prints noise: the grade against the p5 plan's single-node expectation passes, the noise stays out.
 */
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
import { SUMMARISER_NAME, VALIDATE_LOG_NAME, VALIDATE_SCRIPT, parseResultLine, validationVars } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";

const ROOT = path.resolve(__dirname, "..");
const REF = path.resolve(ROOT, "../shared/ref/nccl-tests-logs");
const FI_INFO = path.join(ROOT, "test", "fixtures", "efa", "fi_info-p-efa-libfabric2.txt");

const missing = ["ansible-playbook", "ssh-agent", "ssh-add", "ssh-keygen", "python3"]
    .filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);

function p5Plan() {
    const doc = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
    return planCluster(parseClusterSpec(doc.config["rdmakit:cluster"]));
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

function runScript(s: ReturnType<typeof scratch>, env: Record<string, string>) {
    const r = spawnSync("/bin/bash", ["-c", VALIDATE_SCRIPT], {
        cwd: ROOT, encoding: "utf8", timeout: 240_000,
        env: {
            PATH: `${s.bin}:${process.env.PATH}`, HOME: process.env.HOME ?? s.dir,
            RDMAKIT_OUT: s.out, RDMAKIT_SSH_PRIVATE_KEY: s.key, RDMAKIT_FAIL_ON_FAILURE: "true", RDMAKIT_RERUN_ON: "",
            RDMAKIT_ANSIBLE_SUMMARISER: path.join(s.out, SUMMARISER_NAME),
            ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            ...env,
        },
    });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

test("a failed preflight: Ansible output only in the log, a short summary on stderr, one EFA device counted once",
    { skip: missing.length ? `missing ${missing.join(", ")}` : false }, () => {
        const s = scratch();
        // fi_info -p efa -t TYPE: the fixture's blocks of that endpoint type, as libfabric filters them
        stub(s.bin, "fi_info", [
            'type=""; while [ $# -gt 0 ]; do [ "$1" = "-t" ] && type="$2"; shift; done',
            `awk -v t="$type" '/^provider:/ { if (b != "" && (t == "" || b ~ "type: " t "\\n")) printf "%s", b; b = "" } { b = b $0 "\\n" }` +
            ` END { if (b != "" && (t == "" || b ~ "type: " t "\\n")) printf "%s", b }' ${JSON.stringify(FI_INFO)}`,
        ].join("\n"));
        const seen = spawnSync(path.join(s.bin, "fi_info"), ["-p", "efa", "-t", "FI_EP_RDM"], { encoding: "utf8" }).stdout;
        assert.equal((seen.match(/^\s*domain:/gm) ?? []).length, 2, "the RDM view lists the one device twice");

        const plan = p5Plan();
        const args = validationArgsFromPlan(plan, "dev");
        const vars = validationVars(
            { ...args, hosts: ["localhost"], preflight: { ...args.preflight, rdmaDevices: 1, nvswitch: false } },
            ["127.0.0.1"], path.join(s.out, "nccl"),
        );
        const inventory = path.join(s.dir, "inventory.yml");
        fs.writeFileSync(inventory, "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n");
        const r = runScript(s, { RDMAKIT_INVENTORY: inventory, RDMAKIT_VALIDATE_VARS: JSON.stringify(vars), RDMAKIT_EXPECT: "{}" });

        const log = fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8");
        assert.match(log, /PLAY RECAP/);
        assert.doesNotMatch(r.stdout, /TASK \[|PLAY |ok: \[/, "no playbook output on stdout");
        // the summariser's lines: which host, which task, why; then where the full log and the preflight results are
        assert.match(r.stderr, new RegExp(`ansible-playbook failed on 1 of 1 host \\(full log: ${path.join(s.out, VALIDATE_LOG_NAME).replace(/[.*+?^${}()|[\]\\]/g, "\\$&")}\\):`));
        assert.match(r.stderr, /localhost: failed at task "nccl_validate : Require every preflight check to pass": preflight localhost: gpu-count: expected 8 GPUs/);
        assert.match(r.stderr, /per-node preflight results: .*\/preflight\//);
        assert.ok(r.stderr.split("\n").length < 12, `stderr stays short:\n${r.stderr}`);
        assert.equal(r.code, 2, "no nccl-tests log was fetched");

        const checks = JSON.parse(fs.readFileSync(path.join(s.out, "preflight", "localhost.json"), "utf8")).checks as Array<{ check: string; ok: boolean; seen: string }>;
        const efa = checks.find((c) => c.check === "efa-devices");
        assert.deepEqual({ ok: efa?.ok, seen: efa?.seen }, { ok: true, seen: "1 EFA devices" });
        assert.equal(checks.find((c) => c.check === "gpu-count")?.ok, false);
    });

test("a healthy run: stdout is the nccl-report summary and its result line, nothing from the playbook",
    { skip: missing.length ? `missing ${missing.join(", ")}` : !fs.existsSync(REF) ? `no ${REF}` : false }, () => {
        const s = scratch();
        const single = path.join(REF, "05-nvlink-p5-1node-awsbatch-allreduce.log");
        // stands in for validate.yml: the log lands where single.yml fetches it; the chatter must stay in the log file
        stub(s.bin, "ansible-playbook", [
            'echo "PLAY [Single-node nccl-tests on every node] ****"',
            'echo "TASK [nccl_validate : Run nccl-tests on this node alone] ****"',
            `cp ${JSON.stringify(single)} "$RDMAKIT_OUT/nccl/single-node-0.log"`,
            'echo "argv: $*" >&2',
        ].join("\n"));
        const plan = p5Plan();
        const expect = JSON.stringify({ all: plan.validation.allNodes, single: plan.validation.singleNode });
        const r = runScript(s, { RDMAKIT_INVENTORY: path.join(s.dir, "inventory.yml"), RDMAKIT_VALIDATE_VARS: "{}", RDMAKIT_EXPECT: expect });
        assert.equal(r.code, 0, r.stdout + r.stderr);
        assert.doesNotMatch(r.stdout + r.stderr, /PLAY \[|TASK \[|argv:/);
        assert.match(fs.readFileSync(path.join(s.out, VALIDATE_LOG_NAME), "utf8"), /TASK \[nccl_validate : Run nccl-tests on this node alone\][\s\S]*argv: -i .* playbooks\/validate\.yml -e \{\}/);
        const lines = r.stdout.trim().split("\n");
        assert.ok(lines.length < 40, `a short summary:\n${r.stdout}`);
        assert.deepEqual(parseResultLine(r.stdout)?.pass, true);
        assert.ok(lines[lines.length - 1].startsWith("rdmakit-result: "));
        assert.ok(fs.existsSync(path.join(s.out, "nccl-summary.txt")));
    });
