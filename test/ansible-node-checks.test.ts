/**
 * Node checks that need no test host, each on localhost in one ansible run.
 *
 * node_prep's Secure Boot check (playbooks/roles/node_prep/tasks/secure_boot.yml) on efivarfs trees laid out as the
 * kernel shows them: each variable a file of 4 attribute bytes then the value (https://docs.kernel.org/filesystems/
 * efivarfs.html; attributes 0x06 = boot-service and runtime access, 0x07 adds non-volatile), read the way mokutil
 * --sb-state reads them (lcp/mokutil src/mokutil.c print_sb_state). The trees are constructed here from that grammar,
 * not captured. One inventory name per case.
 *
 * The ofed role's apt pin that keeps DOCA's dkms out (vars/main.yml ofed_doca_dkms_pin), given to apt-cache with the
 * DOCA online repository's index laid out in a scratch apt tree (lists file named as apt names it for that source
 * URI; the Release file is written here: its real Label is not published, so the case is a Label other than Azure's).
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { stringify } from "yaml";

const ROOT = path.resolve(__dirname, "..");
const hasAnsible = spawnSync("sh", ["-c", "command -v ansible-playbook"]).status === 0;
const GLOBAL = "8be4df61-93ca-11d2-aa0d-00e098032b8c";

test("Secure Boot on fails node_prep with what to do; off, shim validation off, no EFI, or an enrolled MOK pass",
    { skip: hasAnsible ? false : "no ansible-playbook", timeout: 120_000 }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sb-"));
        try {
            const efi = (name: string, vars: Record<string, number>) => {
                const d = path.join(dir, name);
                fs.mkdirSync(d);
                for (const [v, value] of Object.entries(vars)) fs.writeFileSync(path.join(d, v), Buffer.from([0x06, 0, 0, 0, value]));
                return d;
            };
            const on = { [`SecureBoot-${GLOBAL}`]: 1, [`SetupMode-${GLOBAL}`]: 0 };
            const cases: Record<string, Record<string, unknown>> = {
                sb_on: { node_prep_efivars_dir: efi("on", on) },
                sb_on_allowed: { node_prep_efivars_dir: efi("on-allowed", on), node_prep_allow_secure_boot: true },
                // shim's MokSBStateRT (any GUID suffix) is "SecureBoot validation is disabled in shim"
                sb_shim_off: { node_prep_efivars_dir: efi("shim", { ...on, "MokSBStateRT-605dab50-e046-4300-abb6-3dd810dd8b23": 1 }) },
                sb_off: { node_prep_efivars_dir: efi("off", { [`SecureBoot-${GLOBAL}`]: 0, [`SetupMode-${GLOBAL}`]: 0 }) },
                // Setup Mode: no keys enrolled, nothing is checked ("SecureBoot disabled / Platform is in Setup Mode")
                sb_setup: { node_prep_efivars_dir: efi("setup", { [`SecureBoot-${GLOBAL}`]: 1, [`SetupMode-${GLOBAL}`]: 1 }) },
                no_efi: { node_prep_efivars_dir: path.join(dir, "absent") },
            };
            const inv = path.join(dir, "inventory.yml");
            fs.writeFileSync(inv, stringify({ all: { hosts: Object.fromEntries(Object.entries(cases).map(([h, v]) =>
                [h, { ...v, ansible_connection: "local", ansible_python_interpreter: "/usr/bin/python3" }])) } }));
            fs.writeFileSync(path.join(dir, "play.yml"), [
                "- hosts: all", "  gather_facts: false", "  tasks:",
                "    - ansible.builtin.include_role:", "        name: node_prep", "        tasks_from: secure_boot",
                "    - ansible.builtin.debug:", "        msg: \"PASSED {{ inventory_hostname }}: {{ node_prep_secure_boot_probe.stdout_lines | join('; ') }}\"",
                "",
            ].join("\n"));
            const r = spawnSync("ansible-playbook", ["-i", inv, path.join(dir, "play.yml")],
                { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1", ANSIBLE_ROLES_PATH: path.join(ROOT, "playbooks", "roles") } });
            const out = r.stdout + r.stderr;
            assert.equal(r.status, 2, out);
            const passed = [...out.matchAll(/"msg": "PASSED (\w+): (.*)"/g)].map((m) => [m[1], m[2]]).sort();
            // without efivarfs the role asks mokutil where it is installed (here it may or may not be)
            const noEfi = passed.find(([h]) => h === "no_efi");
            assert.ok(noEfi && /^(no-efi|mokutil: (?!SecureBoot enabled).*)$/.test(noEfi[1]), JSON.stringify(noEfi));
            assert.deepEqual(passed.filter(([h]) => h !== "no_efi"), [
                ["sb_off", "SecureBoot disabled"],
                ["sb_on_allowed", "SecureBoot enabled"],
                ["sb_setup", "SecureBoot disabled"],
                ["sb_shim_off", "SecureBoot enabled; SecureBoot validation is disabled in shim"],
            ]);
            const failed = /fatal: \[sb_on\]: FAILED! => (.*)/.exec(out);
            assert.ok(failed, out);
            assert.match(failed[1], /sb_on boots with UEFI Secure Boot on \(SecureBoot enabled\)/);
            assert.match(failed[1], /securityProfile\.uefiSettings\.secureBootEnabled false/);
            assert.match(failed[1], /node_prep_allow_secure_boot=true/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

test("DOCA's dkms stays out whatever Label the online repository's Release carries: the pin also matches its host",
    { skip: hasAnsible && spawnSync("sh", ["-c", "command -v apt-cache"]).status === 0 ? false : "no ansible or apt-cache", timeout: 120_000 }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-docapin-"));
        try {
            const r = spawnSync("ansible", ["localhost", "-m", "debug", "-a", "msg={{ ofed_doca_dkms_pin | to_json }}",
                "-e", `@${path.join(ROOT, "playbooks/roles/ofed/vars/main.yml")}`, "-e", `@${path.join(ROOT, "playbooks/roles/ofed/defaults/main.yml")}`],
            { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1" } });
            assert.equal(r.status, 0, r.stdout + r.stderr);
            const pin = JSON.parse(JSON.parse(/"msg": ("(?:[^"\\]|\\.)*")/.exec(r.stdout)![1])) as string;
            const etc = path.join(dir, "etc"), lists = path.join(dir, "lists");
            fs.mkdirSync(path.join(etc, "preferences.d"), { recursive: true });
            fs.mkdirSync(path.join(lists, "partial"), { recursive: true });
            fs.mkdirSync(path.join(dir, "cache", "archives", "partial"), { recursive: true });
            fs.writeFileSync(path.join(dir, "status"), "");
            // the repository line the role writes for DOCA 3.2.1 on Ubuntu 22.04 (tasks/doca_debian.yml)
            fs.writeFileSync(path.join(etc, "sources.list"), "deb [trusted=yes] https://linux.mellanox.com/public/repo/doca/3.2.1/ubuntu22.04/x86_64/ ./\n");
            fs.writeFileSync(path.join(etc, "preferences.d", "rdmakit-doca-dkms"), pin);
            const base = path.join(lists, "linux.mellanox.com_public_repo_doca_3.2.1_ubuntu22.04_x86%5f64_._");
            fs.writeFileSync(`${base}Packages`, "Package: dkms\nVersion: 3.0.99-1\nArchitecture: all\nFilename: ./dkms_3.0.99-1_all.deb\nSize: 1\nDescription: DOCA's dkms\n\n");
            const policy = (label: string) => {
                fs.writeFileSync(`${base}Release`, `Origin: NVIDIA\nLabel: ${label}\nArchitectures: amd64\n`);
                return spawnSync("apt-cache", ["-o", `Dir::State::Lists=${lists}`, "-o", `Dir::State::status=${path.join(dir, "status")}`,
                    "-o", `Dir::Etc::SourceList=${path.join(etc, "sources.list")}`, "-o", `Dir::Etc::SourceParts=${path.join(etc, "sources.list.d")}`,
                    "-o", `Dir::Etc::Preferences=${path.join(etc, "preferences")}`, "-o", `Dir::Etc::PreferencesParts=${path.join(etc, "preferences.d")}`,
                    "-o", `Dir::Cache=${path.join(dir, "cache")}`, "policy", "dkms"], { encoding: "utf8" });
            };
            for (const label of ["DOCA-HOST 3.2.1", "NVIDIA DOCA online"]) {
                const p = policy(label);
                assert.equal(p.status, 0, p.stderr);
                assert.match(p.stdout, /Candidate: \(none\)/, `${label}:\n${p.stdout}`);
                assert.match(p.stdout, /3\.0\.99-1 -1/, p.stdout);
            }
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });

// nvidia_driver's Fabric Manager probe (tasks/probe.yml) answered by the real dpkg-query over a dpkg database laid out
// here (DPKG_ADMINDIR, dpkg-query(1)): a status file in dpkg's format and the per-package file lists. The case is the
// Ubuntu archive's transitional scheme (an old-branch name that only depends on the next branch, carrying another
// version: NVIDIA/apt-packaging-fabric-manager#3 lists `cuda-drivers-fabricmanager-460 510.85.02 Transitional package
// for cuda-drivers-fabricmanager-510`), which sorts before the package that ships nv-fabricmanager.
test("the Fabric Manager version is the one of the package that owns nv-fabricmanager, not of a transitional name",
    { skip: hasAnsible && spawnSync("sh", ["-c", "command -v dpkg-query"]).status === 0 ? false : "no ansible or dpkg-query", timeout: 120_000 }, () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-fmprobe-"));
        try {
            fs.mkdirSync(path.join(dir, "info"), { recursive: true });
            fs.mkdirSync(path.join(dir, "updates"), { recursive: true });
            /** One package's status stanza; its file list goes to info/<name>.list as dpkg keeps it. */
            const pkg = (name: string, status: string, version: string, files: string[], extra = ""): string => {
                fs.writeFileSync(path.join(dir, "info", `${name}.list`), ["/.", ...files].join("\n") + "\n");
                return `Package: ${name}\nStatus: ${status}\nPriority: optional\nSection: utils\nInstalled-Size: 10\nMaintainer: test\n`
                    + `Architecture: amd64\nVersion: ${version}\n${extra}Description: ${name}\n\n`;
            };
            fs.writeFileSync(path.join(dir, "status"),
                pkg("nvidia-fabricmanager-470", "install ok installed", "510.85.02-0ubuntu0.22.04.1", ["/usr", "/usr/share", "/usr/share/doc", "/usr/share/doc/nvidia-fabricmanager-470"], "Depends: nvidia-fabricmanager-510\n")
                + pkg("nvidia-fabricmanager-510", "hold ok installed", "510.108.03-0ubuntu0.22.04.1", ["/usr", "/usr/bin", "/usr/bin/nv-fabricmanager"]));
            fs.writeFileSync(path.join(dir, "play.yml"), [
                "- hosts: localhost", "  connection: local", "  gather_facts: false",
                `  environment: {DPKG_ADMINDIR: "${dir}"}`, "  tasks:",
                "    - ansible.builtin.include_role:", "        name: nvidia_driver", "        tasks_from: probe",
                "    - ansible.builtin.debug:", "        msg: \"FM={{ nvidia_driver_fm_found }}\"", "",
            ].join("\n"));
            const r = spawnSync("ansible-playbook", ["-i", "localhost,", path.join(dir, "play.yml")],
                { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1", ANSIBLE_ROLES_PATH: path.join(ROOT, "playbooks", "roles") } });
            assert.equal(r.status, 0, r.stdout + r.stderr);
            // what the name glob would have read first: the transitional package's version
            const glob = spawnSync("dpkg-query", ["-W", "-f=${Version}\\n", "nvidia-fabricmanager*"], { encoding: "utf8", env: { ...process.env, DPKG_ADMINDIR: dir } });
            assert.equal(glob.stdout.split("\n")[0], "510.85.02-0ubuntu0.22.04.1");
            // the Debian revision is dropped: Fabric Manager must equal the driver's upstream version
            assert.match(r.stdout, /"msg": "FM=510\.108\.03"/, r.stdout);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
