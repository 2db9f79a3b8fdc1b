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

// EL9's openmpi-devel layout (Fedora's openmpi.spec, which EL9 is built from: --prefix=%{_libdir}/openmpi,
// --includedir=%{_includedir}/openmpi-%{_arch}; %files: bin/mpi[er]*, lib/*.so.40*, devel lib/*.so and
// %{_includedir}/openmpi-<arch>/*; source in playbooks/roles/nccl_tests/vars/RedHat.yml) laid out under a scratch root
// at the paths the RedHat map names, then the role's mpi_layout.yml run against it. nccl-tests compiles with
// -I$(MPI_HOME)/include and links with -L$(MPI_HOME)/lib -lmpi (NVIDIA/nccl-tests@a0b82b2:src/Makefile lines 23-25):
// that is what the test runs with the MPI_HOME the role hands the build, with gcc, on a real header and library.
test("EL9 layout: the MPI_HOME nccl-tests builds with finds mpi.h in /usr/include/openmpi-x86_64 and libmpi in /usr/lib64/openmpi/lib",
    { skip: hasAnsible ? false : "no ansible-playbook", timeout: 120_000 }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-el9mpi-"));
        const ansible = (play: string[], extra: Record<string, string>) => {
            fs.writeFileSync(path.join(dir, "play.yml"), play.join("\n") + "\n");
            const r = spawnSync("ansible-playbook", ["-i", "localhost,", path.join(dir, "play.yml"), "-e", JSON.stringify(extra)],
                { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1", ANSIBLE_ROLES_PATH: ROLES } });
            assert.equal(r.status, 0, r.stdout + r.stderr);
            const m = /"msg": "RENDER (.*)"$/m.exec(r.stdout);
            assert.ok(m, r.stdout);
            return JSON.parse(m[1].replace(/\\"/g, '"')) as Record<string, string>;
        };
        try {
            const el9 = ansible([
                "- hosts: localhost", "  connection: local", "  gather_facts: false", "  tasks:",
                `    - ansible.builtin.include_vars: ${path.join(ROLES, "nccl_tests", "vars", "RedHat.yml")}`,
                "    - ansible.builtin.debug:",
                "        msg: \"RENDER {{ {'home': nccl_tests_os_mpi_home, 'include': nccl_tests_os_mpi_include, 'launch': nccl_tests_os_mpi_launch_home} | to_json }}\"",
            ], { ansible_architecture: "x86_64" });
            assert.deepEqual(el9, { home: "/usr/lib64/openmpi", include: "/usr/include/openmpi-x86_64", launch: "/usr/lib64/openmpi" });

            // openmpi + openmpi-devel as the spec installs them: a real header, a real shared library and its dev link
            const root = path.join(dir, "root");
            const home = path.join(root, el9.home), inc = path.join(root, el9.include);
            fs.mkdirSync(path.join(home, "bin"), { recursive: true });
            fs.mkdirSync(path.join(home, "lib"), { recursive: true });
            fs.mkdirSync(inc, { recursive: true });
            fs.writeFileSync(path.join(inc, "mpi.h"), "/* EL9-like layout: openmpi-devel's header */\nint MPI_Init(int *argc, char ***argv);\n");
            fs.writeFileSync(path.join(dir, "libmpi.c"), "int MPI_Init(int *argc, char ***argv) { (void)argc; (void)argv; return 0; }\n");
            const cc = (args: string[]) => spawnSync("gcc", args, { encoding: "utf8", cwd: dir });
            const lib = cc(["-shared", "-fPIC", "-Wl,-soname,libmpi.so.40", "-o", path.join(home, "lib", "libmpi.so.40"), "libmpi.c"]);
            assert.equal(lib.status, 0, lib.stderr);
            fs.symlinkSync("libmpi.so.40", path.join(home, "lib", "libmpi.so"));
            fs.writeFileSync(path.join(home, "bin", "mpirun"), "#!/bin/sh\nexit 0\n", { mode: 0o755 });
            fs.writeFileSync(path.join(dir, "uses_mpi.c"), "#include <mpi.h>\nint main(int c, char **v) { return MPI_Init(&c, &v); }\n");
            const nvccLike = (mpiHome: string) => cc(["-o", "uses_mpi", "uses_mpi.c", `-I${mpiHome}/include`, `-L${mpiHome}/lib`, `-L${mpiHome}/lib64`, "-lmpi"]);
            // the old build passed MPI_HOME=/usr/lib64/openmpi: its include folder has no mpi.h
            assert.match(nvccLike(home).stderr, /mpi\.h: No such file or directory/);

            const out = ansible([
                "- hosts: localhost", "  connection: local", "  gather_facts: false", "  tasks:",
                "    - ansible.builtin.include_role:", "        name: nccl_tests", "        tasks_from: mpi_layout",
                "    - ansible.builtin.debug:",
                "        msg: \"RENDER {{ {'build': nccl_tests_mpi_build_home, 'prefix': nccl_tests_mpi_prefix} | to_json }}\"",
            ], {
                nccl_tests_mpi: "distro", nccl_tests_os_mpi_home: home, nccl_tests_os_mpi_include: inc,
                nccl_tests_install_dir: path.join(root, "opt/rdmakit/nccl-tests"),
            });
            assert.equal(out.prefix, home);
            assert.equal(out.build, path.join(root, "opt/rdmakit/nccl-tests-mpi"));
            const built = nvccLike(out.build);
            assert.equal(built.status, 0, built.stderr);
            assert.equal(fs.realpathSync(path.join(out.build, "include", "mpi.h")), path.join(inc, "mpi.h"));

            // a prefix that holds its own headers (Debian's libopenmpi-dev, the EFA installer's Open MPI) is used as is
            const same = ansible([
                "- hosts: localhost", "  connection: local", "  gather_facts: false", "  tasks:",
                "    - ansible.builtin.include_role:", "        name: nccl_tests", "        tasks_from: mpi_layout",
                "    - ansible.builtin.debug:", "        msg: \"RENDER {{ {'build': nccl_tests_mpi_build_home} | to_json }}\"",
            ], { nccl_tests_mpi: "path", nccl_tests_mpi_home: out.build, nccl_tests_install_dir: path.join(root, "opt/other") });
            assert.equal(same.build, out.build);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

// DOCA on EL: the repository folder per major from the 3.2 line (rhel9), per minor before it (rhel9.6); and the DPLL
// check of tasks/dpll.yml on kernel trees laid out here: a dpll.h with the EL 9.8 callback (the line Azure's
// install_doca.sh greps for, `struct dpll_ffo_param *ffo,`) and one without it. One ansible run, one host per case.
test("DOCA on EL: repository per major from 3.2; an EL 9.8 DPLL kernel stops the install unless mlnx-ofa_kernel patches are given, which DKMS is handed",
    { skip: hasAnsible ? false : "no ansible-playbook", timeout: 120_000 }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-doca-el-"));
        try {
            const kernel = (name: string, ffo: string) => {
                const d = path.join(dir, name, "include", "linux");
                fs.mkdirSync(d, { recursive: true });
                fs.writeFileSync(path.join(d, "dpll.h"), `struct dpll_pin_ops {\n\tint (*ffo_get)(const struct dpll_pin *pin, void *pin_priv,\n\t\t       const struct dpll_device *dpll, void *dpll_priv,\n\t\t       ${ffo}\n\t\t       struct netlink_ext_ack *extack);\n};\n`);
                return path.join(dir, name);
            };
            const patch = path.join(dir, "dpll-ffo-param.patch");
            fs.writeFileSync(patch, "--- a/drivers/net/ethernet/mellanox/mlx5/core/dpll.c\n+++ b/drivers/net/ethernet/mellanox/mlx5/core/dpll.c\n");
            const hosts: Record<string, Record<string, unknown>> = {
                el98: { ofed_kernel_src_dir: kernel("k98", "struct dpll_ffo_param *ffo,") },
                el98_patched: { ofed_kernel_src_dir: kernel("k98p", "struct dpll_ffo_param *ffo,"), ofed_doca_dkms_patches: [patch] },
                el96: { ofed_kernel_src_dir: kernel("k96", "s64 *ffo,") },
                // a kernel without DPLL at all (no dpll.h)
                el_nodpll: { ofed_kernel_src_dir: path.join(dir, "none") },
            };
            const inv = path.join(dir, "inventory.yml");
            fs.writeFileSync(inv, JSON.stringify({ all: { hosts: Object.fromEntries(Object.entries(hosts).map(([h, v]) =>
                [h, { ...v, ofed_dkms_conf_dir: path.join(dir, `dkms-${h}`), ansible_kernel: "5.14.0-611.el9_8.x86_64", ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3" }])) } }));
            fs.writeFileSync(path.join(dir, "play.yml"), [
                "- hosts: all", "  gather_facts: false", "  tasks:",
                "    - ansible.builtin.include_role:", "        name: ofed", "        tasks_from: dpll", "        public: true",
                "    - ansible.builtin.include_vars: " + path.join(ROLES, "ofed", "vars", "RedHat-9.yml"),
                "    - ansible.builtin.debug:",
                "        msg: \"PASSED {{ inventory_hostname }} {{ ofed_os_doca_os }} {{ ofed_dpll_needs_patch }}\"",
                "      vars: {ansible_distribution_version: '9.8', ansible_distribution_major_version: '9'}",
                "",
            ].join("\n"));
            const r = spawnSync("ansible-playbook", ["-i", inv, path.join(dir, "play.yml")],
                { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1", ANSIBLE_ROLES_PATH: ROLES } });
            const out = r.stdout + r.stderr;
            assert.equal(r.status, 2, out);
            const passed = [...out.matchAll(/"msg": "PASSED (\S+) (\S+) (\S+)"/g)].map((m) => [m[1], m[2], m[3]]).sort();
            // DOCA 3.2.1 (the role's default): rhel9 on 9.8
            assert.deepEqual(passed, [["el96", "rhel9", "False"], ["el98_patched", "rhel9", "True"], ["el_nodpll", "rhel9", "False"]], out);
            assert.match(out, /fatal: \[el98\]: FAILED! => .*has the newer DPLL callback .*DOCA 3\.2\.1 \(MLNX OFED 25\.10\) does not build.*ofed_doca_dkms_patches/);
            assert.equal(fs.readFileSync(path.join(dir, "dkms-el98_patched", "mlnx-ofa_kernel.conf"), "utf8"),
                "# Managed by rdmakit (ofed role): patches for this kernel's DPLL API\nPATCH[0]=\"dpll-ffo-param.patch\"\n");
            assert.ok(fs.existsSync(path.join(dir, "dkms-el98_patched", "mlnx-ofa_kernel", "patches", "dpll-ffo-param.patch")));
            assert.ok(!fs.existsSync(path.join(dir, "dkms-el96")), "a kernel with the old callback got a DKMS patch");

            // before the 3.2 line the folder is per minor
            const old = spawnSync("ansible", ["localhost", "-m", "debug", "-a", "msg={{ ofed_os_doca_os }}",
                "-e", `@${path.join(ROLES, "ofed", "vars", "RedHat-9.yml")}`, "-e", "ofed_doca_version=3.1.0",
                "-e", "ansible_distribution_version=9.6", "-e", "ansible_distribution_major_version=9"], { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1" } });
            assert.match(old.stdout, /"msg": "rhel9\.6"/, old.stdout + old.stderr);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
