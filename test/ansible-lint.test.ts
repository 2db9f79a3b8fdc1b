// Static checks of the node-software playbooks: ansible-lint (production profile) over the whole playbooks/ folder,
// ansible-playbook --syntax-check, the plan's variables for every example passing every role's argument spec, and
// the argument specs rejecting bad variables with a message that names the variable. The argument-spec cases run
// site.yml against localhost (several inventory names at once, one per case) in --check mode with tags that stop at the validation tasks (or at a role's first check),
// so nothing on this machine is changed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";

const ROOT = path.resolve(__dirname, "..");
const PLAYBOOKS = path.join(ROOT, "playbooks");
/** The roles site.yml composes (issue 5). Other playbooks in playbooks/ are linted by their own tests. */
const ROLES = ["node_prep", "efa", "ofed", "cuda_repo", "nvidia_driver", "gpudirect", "nccl", "aws_ofi_nccl", "nccl_tests", "roce_host"];
const env = { ...process.env, ANSIBLE_CONFIG: path.join(PLAYBOOKS, "ansible.cfg"), ANSIBLE_NOCOLOR: "1", NO_COLOR: "1" };

/** Every playbook and every role in playbooks/, as ansible-lint is given them (a folder argument is linted as one role). */
const LINT_TARGETS = [
    ...fs.readdirSync(PLAYBOOKS).filter((f) => /\.ya?ml$/.test(f)).sort(),
    ...fs.readdirSync(path.join(PLAYBOOKS, "roles")).sort().map((r) => `roles/${r}`),
];

/** What `pulumi up` sends for an example stack: the plan's group vars and, on bare metal, the first host's vars. */
function exampleVars(example: string): Record<string, unknown> {
    const raw = parseYaml(fs.readFileSync(path.join(ROOT, "examples", example), "utf8")).config["rdmakit:cluster"];
    const plan = planCluster(parseClusterSpec(raw));
    return { ...plan.ansibleVars, ...(plan.roce?.qos.hosts[0].vars ?? {}), rdmakit_require_hardware: false };
}

const GOOD_VARS = { ...exampleVars("roce-h100.yaml"), ofed_source: "inbox", gpudirect_method: "dmabuf" };

/** One host's part of a run: each task's result by task title, its fatal lines, and its recap's failed count. */
interface HostResult { tasks: Map<string, string>; fatal: string; failed: number }

/**
 * site.yml in --check mode against localhost under several inventory names at once, each with its own variables (as
 * host variables, where the plan puts a bare-metal host's), so one ansible-playbook start serves many cases. Each
 * host stops at its own first failure; the others go on.
 */
function playbookHosts(hosts: Record<string, Record<string, unknown>>, tags: string): { output: string; host: (name: string) => HostResult } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-argspec-"));
    const inventory = path.join(dir, "inventory.yml");
    const entries = Object.fromEntries(Object.entries(hosts).map(([name, vars]) =>
        [name, { ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3", ...vars }]));
    fs.writeFileSync(inventory, JSON.stringify({ all: { hosts: entries } }));
    const r = spawnSync("ansible-playbook", ["-i", inventory, "--check", "--tags", tags, "playbooks/site.yml"],
        { cwd: ROOT, env, encoding: "utf8" });
    fs.rmSync(dir, { recursive: true, force: true });
    const output = r.stdout + r.stderr;
    // The recap must list every host: a run that never reached them proves nothing.
    for (const name of Object.keys(hosts)) assert.match(output, new RegExp(`^${name}\\s+: ok=`, "m"), `no recap for ${name}:\n${output.slice(-3000)}`);
    const host = (name: string): HostResult => {
        const tasks = new Map<string, string>();
        let task = "";
        const fatal: string[] = [];
        for (const line of output.split("\n")) {
            const t = /^TASK \[(.*)\] \**$/.exec(line);
            if (t) { task = t[1]; continue; }
            const m = /^(ok|skipping|changed|fatal|failed): \[([^\]]+)\]/.exec(line);
            if (m?.[2] === name) {
                tasks.set(task, m[1]);
                if (m[1] === "fatal" || m[1] === "failed") fatal.push(line);
            }
        }
        const failed = Number(new RegExp(`^${name}\\s+: .*failed=(\\d+)`, "m").exec(output)?.[1] ?? -1);
        return { tasks, fatal: fatal.join("\n"), failed };
    };
    return { output, host };
}

/** The cases that stop at the argument checks (tag never: only the validation tasks and the checks tagged always). */
const NEVER_CASES: Record<string, Record<string, unknown>> = {
    "aws-p5": exampleVars("aws-p5.yaml"),
    "azure-h100": exampleVars("azure-h100.yaml"),
    "roce-h100": exampleVars("roce-h100.yaml"),
    "gpu-count-eight": { ...GOOD_VARS, rdmakit_gpu_count: "eight" },
    "fabric-slingshot": { ...GOOD_VARS, rdmakit_fabric: "slingshot" },
    "peermem-inbox": { ...GOOD_VARS, gpudirect_method: "peermem" },
};
let neverRun: ReturnType<typeof playbookHosts> | undefined;
/** One run for all of NEVER_CASES, shared by the tests below that read it. */
function neverCases(): ReturnType<typeof playbookHosts> {
    neverRun ??= playbookHosts(NEVER_CASES, "never");
    return neverRun;
}

test("every role has argument specs, defaults, and distro maps where it installs packages", () => {
    for (const role of ROLES) {
        const dir = path.join(PLAYBOOKS, "roles", role);
        for (const f of ["meta/argument_specs.yml", "tasks/main.yml"]) {
            assert.ok(fs.existsSync(path.join(dir, f)), `${role}: ${f} missing`);
        }
        assert.ok(fs.existsSync(path.join(dir, "defaults/main.yml")), `${role}: defaults/main.yml missing`);
        // Role-prefixed variables only, in defaults.
        const defaults = fs.readFileSync(path.join(dir, "defaults/main.yml"), "utf8");
        for (const m of defaults.matchAll(/^([A-Za-z_][A-Za-z0-9_]*):/gm)) {
            assert.ok(m[1].startsWith(`${role}_`), `${role}: default ${m[1]} is not prefixed with ${role}_`);
        }
    }
    for (const role of ["node_prep", "ofed", "cuda_repo", "nvidia_driver", "nccl"]) {
        for (const distro of ["Ubuntu-22", "Ubuntu-24", "RedHat-9", "Debian-12"]) {
            assert.ok(fs.existsSync(path.join(PLAYBOOKS, "roles", role, "vars", `${distro}.yml`)), `${role}: vars/${distro}.yml missing`);
        }
    }
});

test("ansible-lint --profile production is clean on every playbook and role in playbooks/", () => {
    assert.ok(LINT_TARGETS.includes("validate.yml") && LINT_TARGETS.includes("roles/nccl_validate"), LINT_TARGETS.join(" "));
    for (const role of ROLES) assert.ok(LINT_TARGETS.includes(`roles/${role}`), role);
    const r = spawnSync("ansible-lint", ["--offline", "--nocolor", "--profile", "production", ...LINT_TARGETS],
        { cwd: PLAYBOOKS, env, encoding: "utf8" });
    assert.equal(r.error, undefined, `ansible-lint could not run: ${r.error}`);
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 0, out);
    assert.match(out, /Passed with production profile: 0 failure\(s\), 0 warning\(s\)/);
    // It really looked at the roles (a run that finds no files also "passes").
    const files = Number(/on (\d+) files/.exec(out)?.[1] ?? 0);
    assert.ok(files >= 100, `ansible-lint checked only ${files} files:\n${out}`);
});

test("ansible-playbook --syntax-check is clean on every playbook", () => {
    for (const pb of LINT_TARGETS.filter((t) => !t.startsWith("roles/"))) {
        const r = spawnSync("ansible-playbook", ["--syntax-check", "-i", "localhost,", `playbooks/${pb}`], { cwd: ROOT, env, encoding: "utf8" });
        assert.equal(r.status, 0, `${pb}: ${r.stdout}${r.stderr}`);
    }
});

test("the variables the plan sends for every example pass every role's argument spec", () => {
    const expected: Record<string, string[]> = {
        "aws-p5.yaml": ["node_prep", "efa", "cuda_repo", "nvidia_driver", "gpudirect", "nccl", "aws_ofi_nccl", "nccl_tests"],
        "azure-h100.yaml": ["node_prep", "ofed", "cuda_repo", "nvidia_driver", "gpudirect", "nccl", "nccl_tests"],
        "roce-h100.yaml": ["node_prep", "ofed", "cuda_repo", "nvidia_driver", "gpudirect", "nccl", "nccl_tests", "roce_host"],
    };
    for (const [example, roles] of Object.entries(expected)) {
        const r = neverCases().host(example.replace(/\.yaml$/, ""));
        assert.equal(r.failed, 0, `${example}:\n${r.fatal}`);
        // Role name -> result of its "Validating arguments against arg spec" task.
        const validated = new Map([...r.tasks].filter(([t]) => / : Validating arguments/.test(t)).map(([t, v]) => [t.split(" : ")[0], v]));
        for (const role of ROLES) {
            assert.equal(validated.get(role), roles.includes(role) ? "ok" : "skipping", `${example}: ${role} argument spec`);
        }
    }
});

test("yamllint finds no syntax errors in playbooks/", () => {
    const r = spawnSync("yamllint", ["-d", "{extends: relaxed, rules: {line-length: disable}}", "-f", "parsable", ...LINT_TARGETS],
        { cwd: PLAYBOOKS, env, encoding: "utf8" });
    assert.equal(r.error, undefined, `yamllint could not run: ${r.error}`);
    assert.equal(r.stdout.split("\n").filter((l) => /\[error\]/.test(l)).join("\n"), "");
});

test("a wrong-typed plan variable is rejected with its name", () => {
    const r = neverCases().host("gpu-count-eight");
    assert.equal(r.failed, 1);
    assert.match(r.fatal, /argument 'rdmakit_gpu_count' is of type <class 'str'> and we were unable to convert to int/);
});

test("an unknown fabric is rejected with the allowed values", () => {
    const r = neverCases().host("fabric-slingshot");
    assert.equal(r.failed, 1);
    assert.match(r.fatal, /value of rdmakit_fabric must be one of: aws-efa, azure-ib, roce, got: slingshot/);
});

test("peermem with inbox rdma-core is rejected (nvidia_peermem needs OFED's ib_core)", () => {
    const r = neverCases().host("peermem-inbox");
    assert.equal(r.failed, 1);
    assert.match(r.fatal, /gpudirect_method=peermem needs ofed_source=doca/);
});

test("role argument specs reject bad role variables, naming them", () => {
    const cases: [Record<string, unknown>, string, RegExp][] = [
        [{ gpudirect_method: "rdma", ofed_source: "doca" }, "gpudirect", /value of gpudirect_method must be one of: peermem, dmabuf, got: rdma/],
        [{ roce_host_mtu: "jumbo" }, "roce", /argument 'roce_host_mtu' is of type <class 'str'> and we were unable to convert to int/],
        [{ roce_host_rdma_devices: undefined }, "roce", /missing required arguments: roce_host_rdma_devices/],
        [{ roce_host_roce_mode: "RoCE v3" }, "roce", /value of roce_host_roce_mode must be one of: RoCE v2, IB\/RoCE v1, got: RoCE v3/],
        [{ roce_host_pfc_vector: "0,0,0,0,1,0,0,0" }, "roce", /pfc_vector=0,0,0,0,1,0,0,0 \(expected 0,0,0,1,0,0,0,0/],
        [{ roce_host_tos: 104, roce_host_dscp: 24 }, "roce", /tos=104 \(tos >> 2 must be the DSCP\)/],
        [{ nccl_conf: ["NCCL_IB_TC=106"] }, "nccl", /argument 'nccl_conf' is of type <class 'list'> and we were unable to convert to dict/],
        [{ ofed_source: "mofed" }, "ofed", /value of ofed_source must be one of: doca, inbox, got: mofed/],
        [{ nccl_cuda_toolkit: "perhaps" }, "nccl", /argument 'nccl_cuda_toolkit' is of type <class 'str'> and we were unable to convert to bool/],
    ];
    // one run per tag, every case of that tag a host of its own
    for (const tag of new Set(cases.map((c) => c[1]))) {
        const ofTag = cases.filter((c) => c[1] === tag);
        const hosts = Object.fromEntries(ofTag.map(([bad], i) => {
            const vars: Record<string, unknown> = { ...GOOD_VARS, ...bad };
            for (const k of Object.keys(vars)) if (vars[k] === undefined) delete vars[k];
            return [`${tag}-${i}`, vars];
        }));
        const run = playbookHosts(hosts, tag);
        ofTag.forEach(([bad, , expected], i) => {
            const r = run.host(`${tag}-${i}`);
            assert.equal(r.failed, 1, `${JSON.stringify(bad)} was accepted`);
            assert.match(r.fatal, expected, `${JSON.stringify(bad)}:\n${r.fatal.slice(-2000)}`);
        });
    }
});

test("package tasks wait for the lock and never downgrade: module_defaults in site.yml, no allow_downgrade, no raw apt-get", () => {
    const site = parseYaml(fs.readFileSync(path.join(PLAYBOOKS, "site.yml"), "utf8")) as Array<Record<string, any>>;
    const install = site.find((p) => p.name === "Install the RDMA GPU node stack")!;
    for (const m of ["ansible.builtin.apt", "ansible.builtin.dnf"]) {
        assert.match(String(install.module_defaults?.[m]?.lock_timeout), /node_prep_lock_timeout/, `site.yml: ${m} has no lock_timeout default`);
    }
    for (const role of fs.readdirSync(path.join(PLAYBOOKS, "roles"))) {
        const dir = path.join(PLAYBOOKS, "roles", role, "tasks");
        if (!fs.existsSync(dir)) continue;
        for (const f of fs.readdirSync(dir)) {
            const text = fs.readFileSync(path.join(dir, f), "utf8");
            assert.ok(!/allow_downgrade:\s*true/.test(text), `${role}/tasks/${f}: allow_downgrade`);
            assert.ok(!/\b(apt-get|yum|dnf) (-y )?install\b/.test(text), `${role}/tasks/${f}: a raw package install bypasses the lock wait`);
            assert.ok(!/ansible\.builtin\.yum\b/.test(text), `${role}/tasks/${f}: yum module`);
        }
    }
});
