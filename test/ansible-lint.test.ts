// Static checks of the node-software playbooks: ansible-lint (production profile), ansible-playbook --syntax-check,
// and the argument specs rejecting bad variables with a message that names the variable. The argument-spec cases
// run site.yml against localhost in --check mode with tags that stop at the validation tasks, so nothing on this
// machine is changed.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const PLAYBOOKS = path.join(ROOT, "playbooks");
/** The roles site.yml composes (issue 5). Other playbooks in playbooks/ are linted by their own tests. */
const ROLES = ["node_prep", "efa", "ofed", "nvidia_driver", "gpudirect", "nccl", "aws_ofi_nccl", "nccl_tests", "roce_host"];
const env = { ...process.env, ANSIBLE_CONFIG: path.join(PLAYBOOKS, "ansible.cfg"), ANSIBLE_NOCOLOR: "1", NO_COLOR: "1" };

const GOOD_VARS = { rdmakit_fabric: "roce", rdmakit_require_hardware: false, rdmakit_gpu_count: 8, rdmakit_rdma_device_count: 2,
    ofed_source: "inbox", gpudirect_method: "dmabuf", roce_host_interfaces: ["eth1"] };

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
    for (const role of ["node_prep", "ofed", "nvidia_driver", "nccl"]) {
        for (const distro of ["Ubuntu-22", "Ubuntu-24", "RedHat-9", "Debian-12"]) {
            assert.ok(fs.existsSync(path.join(PLAYBOOKS, "roles", role, "vars", `${distro}.yml`)), `${role}: vars/${distro}.yml missing`);
        }
    }
});

test("ansible-lint --profile production is clean on site.yml and its roles", () => {
    const r = spawnSync("ansible-lint", ["--offline", "--nocolor", "--profile", "production", "site.yml",
        ...ROLES.map((x) => `roles/${x}`)], { cwd: PLAYBOOKS, env, encoding: "utf8" });
    assert.equal(r.error, undefined, `ansible-lint could not run: ${r.error}`);
    const out = r.stdout + r.stderr;
    assert.equal(r.status, 0, out);
    assert.match(out, /Passed with production profile: 0 failure\(s\), 0 warning\(s\)/);
    // It really looked at the roles (a run that finds no files also "passes").
    const files = Number(/on (\d+) files/.exec(out)?.[1] ?? 0);
    assert.ok(files >= 60, `ansible-lint checked only ${files} files:\n${out}`);
});

test("ansible-playbook --syntax-check is clean", () => {
    const r = spawnSync("ansible-playbook", ["--syntax-check", "-i", "localhost,", "playbooks/site.yml"], { cwd: ROOT, env, encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout + r.stderr);
});

test("yamllint finds no syntax errors in the roles", () => {
    const r = spawnSync("yamllint", ["-d", "{extends: relaxed, rules: {line-length: disable}}", "-f", "parsable", "site.yml",
        ...ROLES.map((x) => `roles/${x}`)], { cwd: PLAYBOOKS, env, encoding: "utf8" });
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
        [{ roce_host_interfaces: undefined }, "roce", /missing required arguments: roce_host_interfaces/],
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
