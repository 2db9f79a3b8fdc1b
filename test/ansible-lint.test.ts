// Static checks of the node-software playbooks: ansible-lint (production profile) over the whole playbooks/ folder,
// ansible-playbook --syntax-check, the plan's variables for every example passing every role's argument spec, and
// the argument specs rejecting bad variables with a message that names the variable. The argument-spec cases run
// site.yml against localhost in --check mode with tags that stop at the validation tasks (or at a role's first check),
// so nothing on this machine is changed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
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

function playbook(extraVars: Record<string, unknown>, tags: string) {
    return spawnSync("ansible-playbook", ["-i", "localhost,", "-c", "local", "--check", "--tags", tags,
        "-e", JSON.stringify(extraVars), "playbooks/site.yml"], { cwd: ROOT, env, encoding: "utf8" });
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
        const r = playbook(exampleVars(example), "never");
        assert.equal(r.status, 0, `${example}:\n${r.stdout.slice(-3000)}`);
        // Role name -> result of its "Validating arguments against arg spec" task.
        const validated = new Map([...r.stdout.matchAll(/TASK \[(\w+) : Validating arguments[^\n]*\n(ok|skipping|fatal)/g)].map((m) => [m[1], m[2]]));
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
    const r = playbook({ ...GOOD_VARS, rdmakit_gpu_count: "eight" }, "never");
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /argument 'rdmakit_gpu_count' is of type <class 'str'> and we were unable to convert to int/);
});

test("an unknown fabric is rejected with the allowed values", () => {
    const r = playbook({ ...GOOD_VARS, rdmakit_fabric: "slingshot" }, "never");
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /value of rdmakit_fabric must be one of: aws-efa, azure-ib, roce, got: slingshot/);
});

test("peermem with inbox rdma-core is rejected (nvidia_peermem needs OFED's ib_core)", () => {
    const r = playbook({ ...GOOD_VARS, gpudirect_method: "peermem" }, "never");
    assert.notEqual(r.status, 0);
    assert.match(r.stdout, /gpudirect_method=peermem needs ofed_source=doca/);
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
    for (const [bad, tag, expected] of cases) {
        const vars: Record<string, unknown> = { ...GOOD_VARS, ...bad };
        for (const k of Object.keys(vars)) if (vars[k] === undefined) delete vars[k];
        const r = playbook(vars, tag);
        assert.notEqual(r.status, 0, `${JSON.stringify(bad)} was accepted`);
        assert.match(r.stdout, expected, `${JSON.stringify(bad)}:\n${r.stdout.slice(-2000)}`);
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
