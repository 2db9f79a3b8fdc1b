/**
 * The RHEL 9 path of the node roles, as far as it can run on a Debian machine (no dnf here): the order site.yml and the
 * roles run it in (EPEL and the CUDA repository before the driver; the driver's version read back, then locked with
 * Fabric Manager), and the names the RedHat-9 distro maps give for the plan's variables, rendered by ansible itself on
 * localhost with the facts of a RHEL 9 and a Rocky 9 host. What stays unproven here: that dnf resolves these names
 * and streams against NVIDIA's repository (no RHEL host or repository mirror in CI).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";

const ROOT = path.resolve(__dirname, "..");
const ROLES = path.join(ROOT, "playbooks", "roles");
const names = (file: string): string[] => (parseYaml(fs.readFileSync(path.join(ROLES, file), "utf8")) as Array<{ name: string }>).map((t) => t.name);
const hasAnsible = spawnSync("sh", ["-c", "command -v ansible-playbook"]).status === 0;

test("site.yml adds EPEL and the CUDA repository before the driver; the driver is read back, then locked with Fabric Manager", () => {
    const site = parseYaml(fs.readFileSync(path.join(ROOT, "playbooks", "site.yml"), "utf8")) as Array<{ roles?: Array<{ role: string }> }>;
    const roles = site.flatMap((p) => p.roles ?? []).map((r) => r.role);
    assert.ok(roles.indexOf("cuda_repo") >= 0 && roles.indexOf("cuda_repo") < roles.indexOf("nvidia_driver"), roles.join(", "));
    const repo = names("cuda_repo/tasks/redhat.yml");
    const at = (list: string[], re: RegExp) => list.findIndex((n) => re.test(n));
    assert.ok(at(repo, /EPEL key/) < at(repo, /^Add EPEL/) && at(repo, /^Add EPEL/) < at(repo, /CUDA repository/), repo.join(" | "));
    const install = names("nvidia_driver/tasks/install.yml");
    assert.ok(at(install, /^Install the driver/) < at(install, /Read back/) && at(install, /Read back/) < at(install, /Lock the driver packages/), install.join(" | "));
    const fm = names("nvidia_driver/tasks/fabric_manager.yml");
    assert.ok(at(fm, /\(dnf\)/) >= 0 && at(fm, /\(dnf\)/) < at(fm, /Lock Fabric Manager/), fm.join(" | "));
});

test("the RedHat-9 maps name the driver stream, Fabric Manager per branch, EPEL per distribution and the locks",
    { skip: hasAnsible ? false : "no ansible-playbook" }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-rhel-"));
        try {
            fs.writeFileSync(path.join(dir, "render.yml"), [
                "- hosts: localhost",
                "  connection: local",
                "  gather_facts: false",
                "  tasks:",
                `    - ansible.builtin.include_vars: ${path.join(ROLES, "nvidia_driver", "vars", "main.yml")}`,
                `    - ansible.builtin.include_vars: ${path.join(ROLES, "nvidia_driver", "vars", "RedHat-9.yml")}`,
                `    - ansible.builtin.include_vars: ${path.join(ROLES, "cuda_repo", "vars", "main.yml")}`,
                `    - ansible.builtin.include_vars: ${path.join(ROLES, "cuda_repo", "vars", "RedHat-9.yml")}`,
                "    - ansible.builtin.debug:",
                "        msg: \"RENDER {{ {'open': nvidia_driver_os_packages_open, 'proprietary': nvidia_driver_os_packages_proprietary,",
                "          'fm': nvidia_driver_os_fabric_manager_package, 'version': nvidia_driver_os_version_package,",
                "          'lock': nvidia_driver_os_versionlock, 'epel': cuda_repo_epel_package, 'repo': cuda_repo_url} | to_json }}\"",
                "",
            ].join("\n"));
            const render = (facts: Record<string, string>) => {
                const r = spawnSync("ansible-playbook", ["-i", "localhost,", path.join(dir, "render.yml"),
                    ...Object.entries(facts).flatMap(([k, v]) => ["-e", `${k}=${v}`])], { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1" } });
                assert.equal(r.status, 0, r.stdout + r.stderr);
                const m = /"msg": "RENDER (.*)"$/m.exec(r.stdout);
                assert.ok(m, r.stdout);
                return JSON.parse(m[1].replace(/\\"/g, '"'));
            };
            const base = { ansible_architecture: "x86_64", cuda_repo_base: "https://developer.download.nvidia.com/compute/cuda/repos", nvidia_driver_found: "" };
            const rhel = render({ ...base, ansible_distribution: "RedHat", nvidia_driver_branch: "580" });
            assert.deepEqual(rhel, {
                open: ["@nvidia-driver:580-open"], proprietary: ["@nvidia-driver:580-dkms"], fm: "nvidia-fabricmanager", version: "nvidia-driver",
                lock: ["nvidia-driver*", "kmod-nvidia*"], epel: "https://dl.fedoraproject.org/pub/epel/epel-release-latest-9.noarch.rpm",
                repo: "https://developer.download.nvidia.com/compute/cuda/repos/rhel9/x86_64",
            });
            // below 580 the Fabric Manager package keeps its hyphen; Rocky and Alma install EPEL by name
            const old = render({ ...base, ansible_distribution: "Rocky", nvidia_driver_branch: "570" });
            assert.deepEqual([old.fm, old.epel, old.open], ["nvidia-fabric-manager", "epel-release", ["@nvidia-driver:570-open"]]);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
