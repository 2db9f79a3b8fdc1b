// The slurm role's parts that need no host (the real install is test/hosts/slurm.ts, run by test/ansible-hosts.test.ts): the health program graded
// against the published captures of test/fixtures/health through stand-in tools (its dry run: the reason it would
// drain with), shellcheck-clean; the role's copy of the application Xids equals the catalog's; the munge key travels
// as the session's third stdin section and never as a word of the command; Debian's real slurmd, started the way its
// unit starts it with the role's drop-in, takes the plan's node name on a host of another name. Bound: ~30 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { parse } from "yaml";
import { XID_CATALOG } from "../components/catalog/xid";
import { NODE_RUN_SCRIPT, MUNGE_KEY_STAGE } from "../components/provision/node-scripts";
import { fanoutScript } from "../components/provision/fanout";
import { drainReason, gateCommands, parseDrainStates } from "../components/slurm/gate";
import { freePort } from "./fixtures/ports";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { slurmFiles } from "../components/slurm/render";
import { ibstatStandIn } from "./fixtures/ibstat-standin";

const ROOT = path.resolve(__dirname, "..");
const ROLE = path.join(ROOT, "playbooks", "roles", "slurm");
const HEALTH = path.join(ROLE, "files", "rdmakit-slurm-health");
const CAPTURES = path.join(ROOT, "test", "fixtures", "health", "captures");

/** The health program's dry run with stand-ins printing the named captures, and what it expects. */
function grade(tools: Record<string, string>, expect: Record<string, string | number>): { rc: number | null; out: string } {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-health-"));
    try {
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        // "tool" or "tool first-arg" -> capture: one stand-in per tool, a case over its first argument
        const byTool = new Map<string, string[]>();
        for (const [key, file] of Object.entries(tools)) {
            const [name, arg] = key.split(" ");
            byTool.set(name, [...(byTool.get(name) ?? []), `${arg ?? "*"}) cat '${path.join(CAPTURES, file)}' ;;`]);
        }
        // the tools this machine has (dmesg among them) are shadowed by silent ones unless a capture is named;
        // nvidia-smi is absent unless named (a node without GPUs)
        for (const t of ["ibstat", "fi_info", "dmesg"]) if (!byTool.has(t)) byTool.set(t, ["*) ;;"]);
        for (const [name, cases] of byTool) fs.writeFileSync(path.join(bin, name), `#!/bin/sh\ncase "$1" in\n${cases.join("\n")}\nesac\n`, { mode: 0o755 });
        if (tools.ibstat) fs.writeFileSync(path.join(bin, "ibstat"), ibstatStandIn(path.join(CAPTURES, tools.ibstat), expect.AN0 === 1), { mode: 0o755 });
        const env = path.join(dir, "env");
        fs.writeFileSync(env, Object.entries(expect).map(([k, v]) => `RDMAKIT_HEALTH_${k}=${v}\n`).join(""));
        // the program sets its own PATH first (slurmd runs it bare); the stand-ins go where it looks first
        // as slurmd runs it: no environment at all (env -i)
        const r = spawnSync("env", ["-i", "/bin/bash", "--norc", "--noprofile", "-c", `PATH_PREFIX=${bin}; sed "s|^export PATH=|export PATH=$PATH_PREFIX:|" "$0" | bash --norc --noprofile -s -- --dry-run --node n1 --env "$1"`, HEALTH, env],
            { encoding: "utf8", timeout: 20_000 });
        return { rc: r.status, out: (r.stdout + r.stderr).trim() };
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("the health program drains with the component named, from real failing captures; healthy captures pass", () => {
    const healthy = { "nvidia-smi -q": "nvidia-smi-q.h100-565.57.01.txt", "nvidia-smi nvlink": "nvidia-smi-nvlink.h100x8-constructed.txt" };
    assert.deepEqual(grade(healthy, { GPUS: 8 }), { rc: 0, out: "ok" });
    assert.deepEqual(grade({ ...healthy, "nvidia-smi nvlink": "nvidia-smi-nvlink.v100-inactive.txt" }, { GPUS: 8 }),
        { rc: 1, out: "rdmakit health: nvlink GPU 3 link 3 inactive" });
    assert.deepEqual(grade({ ...healthy, "nvidia-smi -q": "nvidia-smi-q.h100-535.183.01-cut-short.txt" }, { GPUS: 8 }),
        { rc: 1, out: "rdmakit health: gpu 1 of 8 GPUs answered nvidia-smi -q" });
    assert.deepEqual(grade({ ...healthy, "nvidia-smi -q": "nvidia-smi-q.titanv-560.35.03.txt" }, { GPUS: 8 }),
        { rc: 1, out: "rdmakit health: gpu 1 of 8 GPUs attached" });
    assert.deepEqual(grade({ ...healthy, "nvidia-smi -q": "nvidia-smi-q.a100-510-remap-pending-excerpt.txt" }, { GPUS: 1 }),
        { rc: 1, out: "rdmakit health: gpu GPU 0 remapped rows pending" });
    assert.deepEqual(grade({ ...healthy, dmesg: "dmesg.h100-xid119.txt" }, { GPUS: 8, NODE_XIDS: "'79 119'" }),
        { rc: 1, out: "rdmakit health: xid Xid 119 on GPU 0000:9b:00" });
    assert.deepEqual(grade({ ...healthy, dmesg: "dmesg.h100-xid119.txt" }, { GPUS: 8, NODE_XIDS: "'79 95'" }), { rc: 0, out: "ok" });
    assert.deepEqual(grade({ ...healthy, ibstat: "ibstat.h100-ib-400.txt" }, { GPUS: 8, RDMA_DEVICES: 8, FABRIC: "azure-ib" }), { rc: 0, out: "ok" });
    assert.deepEqual(grade({ ...healthy, ibstat: "ibstat.h100-roce-polling.txt" }, { GPUS: 8, RDMA_DEVICES: 12, FABRIC: "roce" }),
        { rc: 1, out: "rdmakit health: rdma 10 of 12 RDMA ports active (ibstat)" });
    // an Azure VM with Accelerated Networking: ibstat cannot open mlx5_an0 (listed first), the 8 IB HCAs are active.
    // Plain ibstat stopped there, so every such node was drained with "rdma 0 of 8"
    assert.deepEqual(grade({ ...healthy, ibstat: "ibstat.h100-ib-400.txt" }, { GPUS: 8, RDMA_DEVICES: 8, FABRIC: "azure-ib", AN0: 1 }), { rc: 0, out: "ok" });
    assert.deepEqual(grade({ ...healthy, fi_info: "fi_info.no-efa.txt" }, { GPUS: 8, RDMA_DEVICES: 4, FABRIC: "aws-efa" }),
        { rc: 1, out: "rdmakit health: efa 0 of 4 EFA devices (fi_info -p efa)" });
    assert.deepEqual(grade({ ...healthy, fi_info: "fi_info.p4de-4efa.txt" }, { GPUS: 8, RDMA_DEVICES: 4, FABRIC: "aws-efa" }), { rc: 0, out: "ok" });
    // a node without GPUs expected and no nvidia-smi (the head node's kind) is healthy
    assert.deepEqual(grade({}, { GPUS: 0 }), { rc: 0, out: "ok" });
    // GPUs expected and no nvidia-smi at all; an nvidia-smi that fails
    assert.deepEqual(grade({}, { GPUS: 8 }), { rc: 1, out: "rdmakit health: gpu nvidia-smi -q failed or did not answer within 20s" });
    assert.deepEqual(grade({ "nvidia-smi -q": "does-not-exist.txt" }, { GPUS: 0 }),
        { rc: 1, out: "rdmakit health: gpu nvidia-smi -q failed or did not answer within 20s" });
});

test("the health program ends before slurmd's 60 s kill: slow tools drain the node within its deadline, the drain's scontrol bounded too", () => {
    // slurmd kills the program at 60 s (slurm.conf(5) HealthCheckProgram; slurmd.c run_script_health_check): here the
    // deadline is 8 s, scontrol's share 2 x (2 + 1) s, so the probes have 2 s; each stand-in takes 3 s to answer healthy
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-health-late-"));
    try {
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        const calls = path.join(dir, "scontrol.calls");
        const q = path.join(CAPTURES, "nvidia-smi-q.h100-565.57.01.txt");
        const nv = path.join(CAPTURES, "nvidia-smi-nvlink.h100x8-constructed.txt");
        fs.writeFileSync(path.join(bin, "nvidia-smi"), `#!/bin/sh\nsleep 3\ncase "$1" in -q) cat '${q}' ;; *) cat '${nv}' ;; esac\n`, { mode: 0o755 });
        for (const t of ["ibstat", "fi_info", "dmesg"]) fs.writeFileSync(path.join(bin, t), "#!/bin/sh\nsleep 3\n", { mode: 0o755 });
        // scontrol show hangs (a controller that does not answer); update records its arguments
        fs.writeFileSync(path.join(bin, "scontrol"), `#!/bin/sh\n[ "$1" = show ] && exec sleep 100\necho "$@" >>'${calls}'\n`, { mode: 0o755 });
        const env = path.join(dir, "env");
        fs.writeFileSync(env, "RDMAKIT_HEALTH_GPUS=8\nRDMAKIT_HEALTH_DEADLINE=8\nRDMAKIT_HEALTH_CTL_TIMEOUT=2\n");
        const started = Date.now();
        const r = spawnSync("env", ["-i", "/bin/bash", "--norc", "--noprofile", "-c", `sed "s|^export PATH=|export PATH=${bin}:|" "$0" | bash --norc --noprofile -s -- --node n1 --env "$1"`, HEALTH, env],
            { encoding: "utf8", timeout: 30_000 });
        const took = (Date.now() - started) / 1000;
        assert.equal(r.status, 0, r.stderr);
        assert.ok(took < 8, `the program took ${took} s, past its 8 s deadline`);
        assert.equal(fs.readFileSync(calls, "utf8"), "update nodename=n1 state=drain reason=rdmakit health: gpu probes did not finish within 2s\n");
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the health program is shellcheck-clean and every probe runs under timeout", () => {
    const r = spawnSync("shellcheck", [HEALTH], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stdout);
    const text = fs.readFileSync(HEALTH, "utf8");
    assert.doesNotMatch(text, /dcgmi/);
    for (const l of text.split("\n").filter((x) => /\b(nvidia-smi|ibstat|fi_info|dmesg|scontrol) /.test(x) && !x.trim().startsWith("#"))) {
        assert.match(l, /probe |timeout |command -v|echo /, l);
    }
});

test("on a Slurm without cgroup/v2 (21.08, Ubuntu 22.04's) the role writes slurm.conf with jobs tracked by process, the same on every host; an unreadable release on a cgroup v2 node is refused", () => {
    // local hosts, each its own cgroup root (v2 alone: cgroup.controllers at the root), release and folder; the plan's
    // real slurm.conf of the bundled AWS example (Slurm by default on the clouds)
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-cgroup-"));
    try {
        const plan = planCluster(parseClusterSpec((parse(fs.readFileSync(path.join(ROOT, "examples", "aws-p5.yaml"), "utf8")) as { config: Record<string, unknown> }).config["rdmakit:cluster"]));
        const files = slurmFiles(plan);
        fs.writeFileSync(path.join(dir, "vars.json"), JSON.stringify({ slurm_files: files }));
        const hosts = { old_v2: ["21.08.5", true, "node"], old_head: ["21.08.5", false, "controller"], new_v2: ["22.05.8", true, "node"], unknown_v2: ["unknown", true, "node"], unknown_v1: ["unknown", false, "node"] } as const;
        const inv = ["[all]"];
        for (const [h, [version, v2, role]] of Object.entries(hosts)) {
            fs.mkdirSync(path.join(dir, h, "etc"), { recursive: true });
            if (v2) fs.writeFileSync(path.join(dir, h, "cgroup.controllers"), "cpuset cpu io memory hugetlb pids rdma misc\n");
            inv.push(`${h} ansible_connection=local slurm_role=${role} slurm_found_version=${version} slurm_cgroup_root=${path.join(dir, h)} slurm_conf_dir=${path.join(dir, h, "etc")}`);
        }
        fs.writeFileSync(path.join(dir, "inv"), inv.join("\n") + "\n");
        const me = os.userInfo().username;
        fs.writeFileSync(path.join(dir, "pb.yml"), [
            "- hosts: all", "  gather_facts: false", "  tasks:",
            `    - ansible.builtin.include_tasks: ${path.join(ROLE, "tasks", "cgroup.yml")}`,
            // the role's own write (files.yml)
            `    - ansible.builtin.include_tasks: ${path.join(ROLE, "tasks", "files.yml")}`,
            "  handlers:", "    - { name: Reconfigure slurmctld, ansible.builtin.debug: { msg: reconfigure } }", "    - { name: Restart slurmd, ansible.builtin.debug: { msg: restart } }", "",
        ].join("\n"));
        const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inv"), path.join(dir, "pb.yml"), "-e", `@${path.join(dir, "vars.json")}`, "-e", `ansible_user=${me}`],
            { encoding: "utf8", timeout: 120_000, env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } });
        assert.equal(r.status, 2, r.stdout + r.stderr);
        const failed = [...r.stdout.matchAll(/fatal: \[(\w+)\]/g)].map((m) => m[1]).sort();
        assert.deepEqual(failed, ["unknown_v2"], r.stdout);
        assert.match(r.stdout, /unknown_v2 mounts cgroup v2 alone .* its Slurm release could not be read \(unknown\)/);
        const conf = (h: string) => fs.readFileSync(path.join(dir, h, "etc", "slurm.conf"), "utf8");
        // 21.08 on the node and on the head: one file, by process; every other line as planned
        assert.equal(conf("old_v2"), conf("old_head"));
        assert.match(conf("old_v2"), /^ProctrackType=proctrack\/linuxproc$/m);
        assert.match(conf("old_v2"), /^TaskPlugin=task\/affinity$/m);
        assert.equal(conf("old_v2").replace(/^(ProctrackType|TaskPlugin)=.*$/gm, ""), files["slurm.conf"].replace(/^(ProctrackType|TaskPlugin)=.*$/gm, ""));
        // 22.05, and a release unread on a cgroup v1 node: the plan's file as it is
        assert.equal(conf("new_v2"), files["slurm.conf"]);
        assert.equal(conf("unknown_v1"), files["slurm.conf"]);
        // slurmd 21.08 reads cgroup.conf and loads its CgroupPlugin at every start, whatever slurm.conf tracks jobs with
        // (slurm-21-08-5-1 src/slurmd/slurmd/slurmd.c _slurmd_init: cgroup_g_init(), else "slurmd initialization
        // failed"); autodetect is cgroup/v2 on this host, a plugin 21.08 does not have: there it names cgroup/v1, on
        // every host alike, and the 22.05 host keeps the plan's file
        const cg = (h: string) => fs.readFileSync(path.join(dir, h, "etc", "cgroup.conf"), "utf8");
        assert.equal(cg("old_v2"), cg("old_head"));
        assert.match(cg("old_v2"), /^CgroupPlugin=cgroup\/v1$/m);
        assert.doesNotMatch(cg("old_v2"), /autodetect/);
        assert.equal(cg("old_v2").replace(/^CgroupPlugin=.*$/m, ""), files["cgroup.conf"].replace(/^CgroupPlugin=.*$/m, ""));
        assert.equal(cg("new_v2"), files["cgroup.conf"]);
        for (const f of ["gres.conf", "topology.conf"]) assert.equal(fs.readFileSync(path.join(dir, "old_v2", "etc", f), "utf8"), files[f as keyof typeof files], f);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the role drains a node before its first slurmd start, never over an operator's drain (its reason survives), and fails closed where slurmctld cannot be asked", () => {
    // a stand-in scontrol: `-o show node <n>` prints state.<n> (fails without one, as for a name slurmctld does not
    // know); `update nodename=<n> state=drain reason=<r>` records its arguments and drains the name, as slurmctld does
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-predrain-"));
    try {
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        fs.writeFileSync(path.join(bin, "scontrol"), `#!/bin/sh\nif [ "$2" = show ]; then cat '${dir}'/state."$4" 2>/dev/null || { echo "Node $4 not found" >&2; exit 1; }; exit 0; fi\n` +
            `echo "$*" >>'${dir}/calls'\nn=\${2#nodename=}; r=\${4#reason=}\necho "NodeName=$n CPUTot=224 State=IDLE+DRAIN ThreadsPerCore=2 Reason=$r [root@2026-12-06T02:00:00]" >'${dir}'/state."$n"\n`, { mode: 0o755 });
        // lines as Debian's scontrol 22.05 prints them (-o), cut to the fields that matter
        const states: Record<string, string> = {
            operator: "NodeName=operator CPUTot=224 State=IDLE+DRAIN ThreadsPerCore=2 Reason=bad DIMM, RMA [root@2026-12-05T07:00:00]",
            health: "NodeName=health CPUTot=224 State=DOWN+DRAIN+NOT_RESPONDING ThreadsPerCore=2 Reason=rdmakit health: nvlink GPU 3 link 3 inactive [root@2026-12-05T07:00:00]",
            gone: "NodeName=gone CPUTot=224 State=DOWN+NOT_RESPONDING ThreadsPerCore=2 Reason=Not responding [slurm@2026-12-05T07:00:00]",
            idle: "NodeName=idle CPUTot=224 State=IDLE ThreadsPerCore=2",
            // a name slurmctld knows from a line of no State, no slurmd registered yet
            fresh: "NodeName=fresh CPUTot=224 State=UNKNOWN+NOT_RESPONDING ThreadsPerCore=2",
        };
        for (const [n, line] of Object.entries(states)) fs.writeFileSync(path.join(dir, `state.${n}`), line + "\n");
        fs.writeFileSync(path.join(dir, "inv"), ["[all]", ...["operator", "health", "gone", "idle", "fresh", "unknown"].map((h) => `${h} ansible_connection=local`)].join("\n") + "\n");
        const vars = { slurm_not_validated_reason: "rdmakit: not validated yet", slurm_predrain_retries: 1, slurm_predrain_delay_s: 0, slurm_predrain_try_s: 25, slurm_predrain_again: 6, slurm_controller_address: "10.0.0.5" };
        fs.writeFileSync(path.join(dir, "pb.yml"), `- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_tasks: ${path.join(ROLE, "tasks", "predrain.yml")}\n`);
        const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inv"), "-f", "1", "-e", JSON.stringify(vars), path.join(dir, "pb.yml")],
            { encoding: "utf8", timeout: 120_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } });
        // the name slurmctld does not know fails that host (its slurmd would join before validation); the others pass
        assert.equal(r.status, 2, r.stdout + r.stderr);
        assert.match(r.stdout, /fatal: \[unknown\]: FAILED![^\n]*slurmctld at 10\.0\.0\.5 does not answer for this node \(Node unknown not found\): its slurmd is not started/);
        assert.doesNotMatch(r.stdout, /fatal: \[(operator|health|gone|idle|fresh)\]/);
        const calls = fs.readFileSync(path.join(dir, "calls"), "utf8").trim().split("\n").sort();
        assert.deepEqual(calls, ["fresh", "gone", "health", "idle"].map((n) => `update nodename=${n} state=drain reason=rdmakit: not validated yet`));
        // an operator's drain and its reason stand
        assert.match(fs.readFileSync(path.join(dir, "state.operator"), "utf8"), /Reason=bad DIMM, RMA/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the wait for slurmctld outlasts a try that hangs (a head node still booting drops packets) and a drain refused while slurmctld restarts: each is tried again; a head that never answers fails the host naming it", () => {
    // a stand-in scontrol that hangs (as scontrol to an address that drops packets: some 30 s a try) on its first
    // `show` for "booting" and on every one for "silent", refuses each node's first `update` as scontrol does while
    // slurmctld restarts, else answers as slurmctld does
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-wait-"));
    try {
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        fs.writeFileSync(path.join(bin, "scontrol"), `#!/bin/sh\nd='${dir}'\nif [ "$2" = show ]; then\n` +
            `  if [ "$4" = silent ] || [ ! -e "$d/tried.$4" ]; then : >"$d/tried.$4"; exec sleep 40; fi\n` +
            `  cat "$d/state.$4" 2>/dev/null || { echo "Node $4 not found" >&2; exit 1; }; exit 0\nfi\n` +
            `n=\${2#nodename=}; r=\${4#reason=}\n` +
            `if [ ! -e "$d/updated.$n" ]; then : >"$d/updated.$n"; echo "slurm_update error: Unable to contact slurm controller (connect failure)" >&2; exit 1; fi\n` +
            `echo "NodeName=$n State=IDLE+DRAIN Reason=$r [root@2026-12-06T02:00:00]" >"$d/state.$n"\n`, { mode: 0o755 });
        for (const n of ["booting", "silent"]) fs.writeFileSync(path.join(dir, `state.${n}`), `NodeName=${n} CPUTot=224 State=UNKNOWN+NOT_RESPONDING ThreadsPerCore=2\n`);
        fs.writeFileSync(path.join(dir, "inv"), "[all]\nbooting ansible_connection=local\nsilent ansible_connection=local\n");
        const vars = { slurm_not_validated_reason: "rdmakit: not validated yet", slurm_predrain_retries: 3, slurm_predrain_again: 2, slurm_predrain_delay_s: 0, slurm_predrain_try_s: 1, slurm_controller_address: "10.0.0.5" };
        fs.writeFileSync(path.join(dir, "pb.yml"), `- hosts: all\n  gather_facts: false\n  tasks:\n    - ansible.builtin.include_tasks: ${path.join(ROLE, "tasks", "predrain.yml")}\n`);
        const started = Date.now();
        const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inv"), "-f", "2", "-e", JSON.stringify(vars), path.join(dir, "pb.yml")],
            { encoding: "utf8", timeout: 120_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } });
        assert.equal(r.status, 2, r.stdout + r.stderr);
        assert.doesNotMatch(r.stdout, /fatal: \[booting\]/);
        assert.match(fs.readFileSync(path.join(dir, "state.booting"), "utf8"), /State=IDLE\+DRAIN Reason=rdmakit: not validated yet/);
        assert.match(r.stdout, /fatal: \[silent\]: FAILED![^\n]*does not answer for this node \(no answer in 1 s\): its slurmd is not started/);
        // neither waited out a 40 s try
        assert.ok(Date.now() - started < 35_000, `took ${Date.now() - started} ms`);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("a node whose slurmd is not running is kept from starting it at boot before slurm.conf is written, and enabled again only by the start after its drain", () => {
    // Debian's slurmd package enables the unit at install (slurmd 22.05.8-4+deb12u3 postinst: deb-systemd-helper
    // enable); only ConditionPathExists=/etc/slurm/slurm.conf holds it back until the role writes that file. A reboot
    // between that file and the drain (a drain that failed closed, an interrupted run) would register the node IDLE.
    const main = parse(fs.readFileSync(path.join(ROLE, "tasks", "main.yml"), "utf8")) as Array<Record<string, unknown>>;
    const node = parse(fs.readFileSync(path.join(ROLE, "tasks", "node.yml"), "utf8")) as Array<Record<string, unknown>>;
    const at = (name: string) => main.findIndex((t) => t.name === name);
    const look = at("Look at slurmd before this run starts it");
    const keep = at("Keep slurmd from starting at boot until this node has drained itself");
    const files = at("Write the plan's Slurm files");
    const start = at("Start the Slurm daemon ({{ slurm_role }})");
    assert.ok(look >= 0 && keep > look && files > keep && start > files, `order: look ${look}, keep ${keep}, files ${files}, start ${start}`);
    assert.deepEqual((main[start]["ansible.builtin.systemd"] as Record<string, unknown>).enabled, true);
    // the drain is decided on the same reading, taken before this run could start slurmd
    const predrain = node.find((t) => t["ansible.builtin.include_tasks"] === "predrain.yml");
    assert.match(String(predrain?.when), /slurm_slurmd_before\.status\.ActiveState/);
    assert.ok(!node.some((t) => t.register === "slurm_slurmd_before"), "node.yml reads slurmd again after slurm.conf is written");

    // the two tasks as written, run against a stand-in systemctl: `show` prints the unit's state, `is-enabled` and
    // `disable` read and drop an "enabled" mark, every call is recorded
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-boot-"));
    try {
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        fs.writeFileSync(path.join(bin, "systemctl"), "#!/bin/sh\nd=$RDMAKIT_SD; echo \"$*\" >>\"$d/calls\"\ncase \"$1\" in\n" +
            "show) printf 'Id=slurmd.service\\nLoadState=loaded\\nActiveState=%s\\n' \"$(cat \"$d/active\")\" ;;\n" +
            "is-enabled) if [ -e \"$d/enabled\" ]; then echo enabled; else echo disabled; exit 1; fi ;;\n" +
            "disable) rm -f \"$d/enabled\" ;;\n*) exit 1 ;;\nesac\n", { mode: 0o755 });
        const hosts: Record<string, string> = { fresh: "inactive", failed: "failed", running: "active" };
        for (const [h, active] of Object.entries(hosts)) {
            fs.mkdirSync(path.join(dir, h));
            fs.writeFileSync(path.join(dir, h, "active"), active + "\n");
            fs.writeFileSync(path.join(dir, h, "enabled"), "");
        }
        fs.writeFileSync(path.join(dir, "inv"), ["[all]", ...Object.keys(hosts).map((h) => `${h} ansible_connection=local`)].join("\n") + "\n");
        const play = [{ hosts: "all", gather_facts: false, vars: { slurm_role: "node" }, environment: { RDMAKIT_SD: `${dir}/{{ inventory_hostname }}` }, tasks: [main[look], main[keep]] }];
        fs.writeFileSync(path.join(dir, "pb.yml"), JSON.stringify(play));
        const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inv"), "-f", "1", path.join(dir, "pb.yml")],
            { encoding: "utf8", timeout: 120_000, env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } });
        assert.equal(r.status, 0, r.stdout + r.stderr);
        // not running (never started, or crashed): no longer enabled; a running slurmd (a node past its drain) untouched
        for (const h of ["fresh", "failed"]) assert.ok(!fs.existsSync(path.join(dir, h, "enabled")), `${h} is still enabled`);
        assert.ok(fs.existsSync(path.join(dir, "running", "enabled")));
        assert.doesNotMatch(fs.readFileSync(path.join(dir, "running", "calls"), "utf8"), /disable|start/);
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("the health program drains on an Xid within the window only: a line older than it (a GPU reset since, no reboot) is past; a line without a time counts", (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-uptime-"));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const healthy = { "nvidia-smi -q": "nvidia-smi-q.h100-565.57.01.txt", "nvidia-smi nvlink": "nvidia-smi-nvlink.h100x8-constructed.txt", dmesg: "dmesg.h100-525-xid79.txt" };
    // the capture's Xid 79 is at 4254 s after boot; /proc/uptime as the kernel would print it at three moments
    const uptime = (s: number) => { const f = path.join(dir, `uptime-${s}`); fs.writeFileSync(f, `${s}.42 ${s * 2}.00\n`); return f; };
    const at = (s: number) => grade(healthy, { GPUS: 8, NODE_XIDS: "79", XID_WINDOW_S: 7200, UPTIME_FILE: uptime(s) });
    assert.deepEqual(at(4300), { rc: 1, out: "rdmakit health: xid Xid 79 on GPU 0000:5d:00" });
    assert.deepEqual(at(4254 + 7200), { rc: 1, out: "rdmakit health: xid Xid 79 on GPU 0000:5d:00" });
    assert.deepEqual(at(4254 + 7201), { rc: 0, out: "ok" });
    // the window is the stack's (a day here)
    assert.deepEqual(grade(healthy, { GPUS: 8, NODE_XIDS: "79", XID_WINDOW_S: 86400, UPTIME_FILE: uptime(20000) }).rc, 1);
    // no readable clock: the line cannot be shown old
    assert.deepEqual(grade(healthy, { GPUS: 8, NODE_XIDS: "79", XID_WINDOW_S: 7200, UPTIME_FILE: path.join(dir, "none") }).rc, 1);
    // dmesg -T's wall-clock prefix carries no seconds since boot: the line counts whatever the clock says
    assert.deepEqual(grade({ ...healthy, dmesg: "dmesg.h100-xid119.txt" }, { GPUS: 8, NODE_XIDS: "119", XID_WINDOW_S: 7200, UPTIME_FILE: uptime(999999) }).rc, 1);
});

test("the role drains on exactly the catalog's node-action Xids (grade node)", () => {
    const defaults = parse(fs.readFileSync(path.join(ROLE, "defaults", "main.yml"), "utf8")) as { slurm_health_node_xids: number[] };
    const catalog = Object.values(XID_CATALOG).filter((x) => x.grade === "node").map((x) => x.code).sort((a, b) => a - b);
    assert.deepEqual(defaults.slurm_health_node_xids, catalog);
});

test("the munge key: a stdin section after the input ($10 bytes), staged 0400 on tmpfs; the fan-out drops it from its environment", () => {
    assert.equal(MUNGE_KEY_STAGE, "/run/rdmakit/munge.key");
    assert.match(NODE_RUN_SCRIPT, /head -c "\$8" >"\$I"\nif \[ "\$\{10:-0\}" -gt 0 \]; then trap "rm -f \$I \/run\/rdmakit\/munge\.key" EXIT; mkdir -p -m 0700 \/run\/rdmakit && \(umask 0377; rm -f \/run\/rdmakit\/munge\.key; head -c "\$\{10\}" >\/run\/rdmakit\/munge\.key\)/);
    const f = fanoutScript();
    assert.match(f, /secret: env\.RDMAKIT_MUNGE_KEY \? Buffer\.from\(env\.RDMAKIT_MUNGE_KEY, 'base64'\) : undefined/);
    assert.match(f, /\ndelete env\.RDMAKIT_MUNGE_KEY;\n/);
    // the key's length is a word of the command, never the key
    assert.match(f, /String\(input\.length\),\s*String\(bundleSize\),\s*String\(secret\.length\)/);
    assert.doesNotMatch(fs.readFileSync(path.join(ROLE, "defaults", "main.yml"), "utf8"), /munge_key/);
});

test("the munge key staged by a session that ends before the slurm role (here: no Python on the node) is not left behind", () => {
    // the node script as the node runs it, its stage moved into a scratch folder; a PATH with the tools it needs, no python3
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-munge-stage-"));
    try {
        const stage = path.join(dir, "run", "munge.key");
        const script = NODE_RUN_SCRIPT.split(MUNGE_KEY_STAGE).join(stage).split("/run/rdmakit").join(path.join(dir, "run"));
        const bin = path.join(dir, "bin");
        fs.mkdirSync(bin);
        for (const t of ["head", "mktemp", "mkdir", "rm", "cat"]) fs.symlinkSync(execFileSync("sh", ["-c", `command -v ${t}`], { encoding: "utf8" }).trim(), path.join(bin, t));
        const input = "{}";
        const key = "k".repeat(1368);
        const r = spawnSync("/bin/bash", ["-c", script, "node-run", "a".repeat(64), "site.yml", "n1", "site", "-", "-", "-", String(input.length), "0", String(key.length)],
            { input: input + key, encoding: "utf8", env: { PATH: bin }, timeout: 20_000 });
        assert.match(r.stdout, /@@rdmakit no-python/, r.stdout + r.stderr);
        assert.ok(!fs.existsSync(stage), "the staged munge key is still there after the session ended");
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test("gateCommands: the passed nodes resumed in hostlist chunks, each failed node drained with its component named", () => {
    const nodes = [...Array.from({ length: 4 }, (_, i) => ({ name: `gpu0${i + 1}`, ok: true })),
        { name: "gpu05", ok: false, why: "health: pcie GPU 3 at x8" }, { name: "gpu06", ok: false, why: "slow, 31% below the others" },
        { name: "gpu07", ok: false, why: 'bad "quote" $(reboot)\nnext' }];
    assert.deepEqual(gateCommands(nodes), [
        "scontrol update NodeName=gpu[01-04] State=RESUME",
        'scontrol update NodeName=gpu05 State=DRAIN Reason="rdmakit health: pcie GPU 3 at x8"',
        'scontrol update NodeName=gpu06 State=DRAIN Reason="rdmakit: slow, 31% below the others"',
        'scontrol update NodeName=gpu07 State=DRAIN Reason="rdmakit: bad quote (reboot) next"',
    ]);
    assert.equal(drainReason("x".repeat(500)).length, 200);
});

test("parseDrainStates: sinfo -R from the head, untrusted: the plan's nodes only, each once, cleaned and bounded", () => {
    const text = [
        "gpu05|drain|rdmakit health: pcie GPU 3 at x8",
        "gpu06|drain*|rdmakit: slow, 31% below the others",
        "gpu05|down|a second line for gpu05",
        "intruder|drain|not in the plan",
        "garbage line",
        `gpu07|down|${"\u001b[31m"}Not responding${"x".repeat(400)}`,
    ].join("\n");
    const got = parseDrainStates(text, ["gpu05", "gpu06", "gpu07", "gpu08"]);
    assert.deepEqual(got.map((d) => [d.node, d.state]), [["gpu05", "drain"], ["gpu06", "drain*"], ["gpu07", "down"]]);
    assert.equal(got[0].reason, "rdmakit health: pcie GPU 3 at x8");
    assert.ok(got[2].reason.startsWith("[31mNot responding") && got[2].reason.length === 200, got[2].reason);
    assert.deepEqual(parseDrainStates("gpu05|drain|r\n".repeat(10), ["gpu05"], 0), []);
});

/**
 * The role's template rendered by Jinja2 (what Ansible's template module uses) with the given variables; Ansible's
 * `quote` filter is shlex.quote (ansible-core plugins/filter/core.py).
 */
function renderTemplate(name: string, vars: Record<string, unknown>): string {
    const py = "import jinja2, json, shlex, sys; e = jinja2.Environment(keep_trailing_newline=True); e.filters['quote'] = shlex.quote; " +
        "print(e.from_string(open(sys.argv[1]).read()).render(**json.loads(sys.argv[2])), end='')";
    const r = spawnSync("python3", ["-c", py, path.join(ROLE, "templates", name), JSON.stringify(vars)], { encoding: "utf8" });
    assert.equal(r.status, 0, r.stderr);
    return r.stdout;
}

/**
 * Debian's slurmd as its unit starts it (/lib/systemd/system/slurmd.service ExecStart, $SLURMD_OPTIONS from the
 * environment), on a private configuration and port; what it printed once it started or gave up (at most 20 s).
 */
async function slurmdAs(options: string, nodeName: string): Promise<string> {
    const unit = fs.readFileSync("/lib/systemd/system/slurmd.service", "utf8");
    const exec = /^ExecStart=(.*)$/m.exec(unit)![1].trim().split(/\s+/);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurmd-"));
    try {
        const [ctld, port] = [await freePort(), await freePort()];
        fs.writeFileSync(path.join(dir, "slurm.conf"), [
            "ClusterName=rdmakit-nodename", `SlurmctldHost=localhost(127.0.0.1)`, `SlurmctldPort=${ctld}`, `SlurmdPort=${port}`,
            `SlurmdSpoolDir=${dir}/spool`, `SlurmdPidFile=${dir}/slurmd.pid`, "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
            `NodeName=${nodeName} NodeAddr=127.0.0.1 CPUs=1 RealMemory=100 State=UNKNOWN`, `PartitionName=p Nodes=${nodeName} Default=YES`, "",
        ].join("\n"));
        // $SLURMD_OPTIONS as systemd expands an unquoted $VAR: split at white space
        const argv = exec.flatMap((w) => (w === "$SLURMD_OPTIONS" ? options.split(/\s+/).filter(Boolean) : [w]));
        const child = spawn(argv[0], [...argv.slice(1), "-f", path.join(dir, "slurm.conf")], { stdio: ["ignore", "pipe", "pipe"] });
        let out = "";
        return await new Promise<string>((resolve) => {
            const done = () => { clearTimeout(timer); child.kill("SIGKILL"); resolve(out); };
            const timer = setTimeout(done, 20_000);
            const seen = (d: Buffer) => { out += d; if (/slurmd started on|fatal:/.test(out)) done(); };
            child.stdout.on("data", seen);
            child.stderr.on("data", seen);
            child.on("close", done);
        });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
}

test("slurmd starts under the plan's node name on a host called otherwise (the role's drop-in, Debian's real slurmd)", async (t) => {
    if (!fs.existsSync("/lib/systemd/system/slurmd.service")) {
        assert.fail("slurmd is not installed: .ci/run installs slurmctld slurmd munge libpmix2 (README's test command)");
    }
    const name = "p5-demo-000";
    assert.notEqual(os.hostname().split(".")[0], name);
    const dropIn = renderTemplate("slurmd-nodename.conf.j2", { inventory_hostname: name });
    assert.match(dropIn, /^\[Service\]$/m);
    const env = /^Environment="SLURMD_OPTIONS=([^"]*)"$/m.exec(dropIn);
    assert.ok(env, dropIn);
    assert.equal(env[1], `-N ${name}`);
    // without the drop-in (the unit's own empty options) slurmd looks for a node named after this host, and stops
    assert.match(await slurmdAs("", name), /fatal: Unable to determine this slurmd's NodeName/);
    const out = await slurmdAs(env[1], name);
    t.diagnostic(out.split("\n").filter((l) => /started on/.test(l)).join(""));
    assert.match(out, new RegExp(`^slurmd-${name}: slurmd started on`, "m"), out);
    // the node's health program drains the plan's name too (slurmd's SLURMD_NODENAME aside): the role writes it
    assert.match(renderTemplate("slurm-health.env.j2", {
        slurm_fabric: "aws-efa", slurm_gpu_count: 8, slurm_rdma_device_count: 32, slurm_health_node_xids: [79], slurm_health_probe_timeout: 20, slurm_health_xid_window_s: 7200,
        inventory_hostname: name,
    }), new RegExp(`^RDMAKIT_HEALTH_NODE=${name}$`, "m"));
});

test("the role refuses a node without the reason it drains itself with, naming the variable, before anything is installed", (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-slurm-inputs-"));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const files = Object.fromEntries(["slurm.conf", "gres.conf", "cgroup.conf", "topology.conf"].map((f) => [f, ""]));
    const vars = { slurm_role: "node", slurm_files: files, slurm_job_env: {}, slurm_controller_address: "10.0.0.5", slurm_not_validated_reason: "" };
    fs.writeFileSync(path.join(dir, "pb.yml"), `- hosts: all\n  gather_facts: false\n  roles:\n    - role: ${ROLE}\n`);
    const r = spawnSync("ansible-playbook", ["-i", "n1,", "-c", "local", "-e", JSON.stringify(vars), path.join(dir, "pb.yml")],
        { encoding: "utf8", timeout: 120_000, env: { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" } });
    assert.equal(r.status, 2, r.stdout + r.stderr);
    assert.match(r.stdout, /TASK \[.*Check the Slurm inputs\][\s\S]*fatal: \[n1\][^\n]*a node needs slurm_controller_address and slurm_not_validated_reason/);
    assert.doesNotMatch(r.stdout, /Install munge and Slurm/);
});
