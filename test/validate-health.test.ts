/**
 * The Azure preflight for real: VALIDATE_SCRIPT runs the real ansible-playbook and validate.yml against this machine
 * (local connection) as an azure-ib node of the examples/azure-h100.yaml plan. These stand-ins, nothing else:
 *  - `run-health-checks.sh`, writing its log in the format of Azure/azurehpc-health-checks (run-health-checks.sh
 *    meta-data header, NHC's `[pid] - SUCCESS:  nhc:  Health check passed:  ...` / `ERROR:  nhc:  Health check
 *    failed:  ...` lines, the entrypoint's `Health checks completed with exit code: N.`) and exiting with NHC's status.
 *    The failure texts are the ones its distributed_nhc/README.md shows from real runs.
 *  - a sysfs tree of one IB HCA (ports/1/state, rate, link_layer, pkeys/*) in place of /sys/class/infiniband.
 *  - in the first test, the node health tools (nvidia-smi, lspci, ibstat, dmesg) printing real captures.
 * There is no GPU here, so gpu-count fails for real; the test reads the verdicts of the checks it is about.
 */
import { after, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "fs";
import * as os from "os";
import * as path from "path";
import { spawnSync } from "child_process";
import { parse as parseYaml } from "yaml";
import { RUN_INTERPRETER, sha256 } from "../components/provision/ansible";
import { parseClusterSpec } from "../components/spec";
import { planCluster } from "../components/plan";
import { summariserScript } from "../components/provision/summarise";
import { serveKeyLocally } from "../components/provision/keysocket";
import { SUMMARISER_NAME, VALIDATE_SCRIPT, parseResultLine, validationVars, varsDigest } from "../components/validate/component";
import { validationArgsFromPlan } from "../components/validate/fromPlan";
import { AN0_PANIC, ibstatStandIn } from "./fixtures/ibstat-standin";
import { nodeSendEnv } from "../components/provision/node-send";

const ROOT = path.resolve(__dirname, "..");
const missing = ["ansible-playbook", "ssh-agent", "ssh-add", "ssh-keygen", "python3"]
    .filter((t) => spawnSync("sh", ["-c", `command -v ${t}`]).status !== 0);
const dirs: string[] = [];
after(() => { for (const d of dirs) fs.rmSync(d, { recursive: true, force: true }); });

/** A health-check script that writes `lines` the way run-health-checks.sh and NHC do, then exits `rc`. */
function nhcStandIn(dir: string, lines: string[], rc: number): string {
    const file = path.join(dir, "run-health-checks.sh");
    const body = [
        "#!/bin/bash",
        'out=./health.log; while [ $# -gt 0 ]; do [ "$1" = "-o" ] && out="$2"; shift; done',
        'echo "Azure Healthcheck log" > "$out"',
        'printf -- "------ VM Meta Data ------\\nVM SKU: standard_nd96isr_h100_v5\\n" >> "$out"',
        ...lines.map((l) => `echo ${JSON.stringify(`[4242] - ${l}`)} >> "$out"`),
        `echo "Health checks completed with exit code: ${rc}." | tee -a "$out"`,
        `exit ${rc}`,
    ];
    fs.writeFileSync(file, body.join("\n") + "\n", { mode: 0o755 });
    return file;
}

/** One HCA mlx5_ib0, port 1 ACTIVE at 400 Gb/s, with these partition keys. */
function sysfs(dir: string, pkeys: string[]): string {
    const port = path.join(dir, "sys", "mlx5_ib0", "ports", "1");
    fs.mkdirSync(path.join(port, "pkeys"), { recursive: true });
    fs.writeFileSync(path.join(port, "state"), "4: ACTIVE\n");
    fs.writeFileSync(path.join(port, "rate"), "400 Gb/sec (4X NDR)\n");
    fs.writeFileSync(path.join(port, "link_layer"), "InfiniBand\n");
    pkeys.forEach((k, i) => fs.writeFileSync(path.join(port, "pkeys", String(i)), k + "\n"));
    return path.join(dir, "sys");
}

/**
 * Stand-ins for the node health tools (playbooks/roles/node_health) that print real captures
 * (test/fixtures/health/README.md), lspci with a ConnectX-7 at Gen4 x8; dcgmi is left out, so no dcgmi-diag.txt is fetched.
 */
function healthTools(dir: string): string {
    const cap = (n: string): string => path.join(ROOT, "test", "fixtures", "health", "captures", n);
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    const tool = (name: string, body: string): void => fs.writeFileSync(path.join(bin, name), `#!/bin/sh\n${body}\n`, { mode: 0o755 });
    tool("nvidia-smi", `case "$1" in -q) cat '${cap("nvidia-smi-q.h100-565.57.01.txt")}';; nvlink) cat '${cap("nvidia-smi-nvlink.h100x8-constructed.txt")}';; *) exit 1;; esac`);
    tool("lspci", `cat '${cap("lspci-vv.h100-gpud-nic-downgraded.txt")}'`);
    // an Azure VM with Accelerated Networking: mlx5_an0 first, which ibstat cannot open (the role asks each device)
    fs.writeFileSync(path.join(bin, "ibstat"), ibstatStandIn(cap("ibstat.h100-ib-400.txt"), true), { mode: 0o755 });
    tool("dmesg", `cat '${cap("dmesg.kmsg-clean.txt")}'`);
    // the role's listing of /sys/class/infiniband (this machine has none); every other ls is the real one
    tool("ls", `if [ "$*" = "-l /sys/class/infiniband/" ]; then cat '${cap("rdma-devices.h100-gpud-constructed.txt")}'; else exec /bin/ls "$@"; fi`);
    return bin;
}

function run(nhc: { lines: string[]; rc: number } | null, pkeys: string[], withHealthTools = false) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-health-"));
    dirs.push(dir);
    const key = path.join(dir, "id");
    assert.equal(spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", key]).status, 0);
    const out = path.join(dir, "out", "dev");
    fs.mkdirSync(out, { recursive: true });
    fs.writeFileSync(path.join(out, SUMMARISER_NAME), summariserScript());
    const doc = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "azure-h100.yaml"), "utf8"));
    const plan = planCluster(parseClusterSpec(doc.config["rdmakit:cluster"]));
    const args = validationArgsFromPlan(plan, "dev");
    const vars = {
        ...validationVars({ ...args, hosts: ["localhost"], preflight: { ...args.preflight, rdmaDevices: 1, nvswitch: false } }, ["127.0.0.1"], path.join(out, "nccl")),
        nccl_validate_nhc_script: nhc ? nhcStandIn(dir, nhc.lines, nhc.rc) : path.join(dir, "absent", "run-health-checks.sh"),
        nccl_validate_sysfs_ib: sysfs(dir, pkeys),
        nccl_validate_remote_dir: path.join(dir, "remote"),
        // the stand-ins need no root, and this test may run as a user without sudo
        node_health_become: false,
        node_health_dcgm_level: 1,
    };
    const bin = withHealthTools ? healthTools(dir) : undefined;
    const varsJson = JSON.stringify(vars);
    const inventory = "all:\n  hosts:\n    localhost:\n      ansible_connection: local\n";
    const served = serveKeyLocally(fs.readFileSync(key, "utf8"));
    const r = spawnSync(RUN_INTERPRETER[0], [...RUN_INTERPRETER.slice(1), VALIDATE_SCRIPT], {
        cwd: ROOT, encoding: "utf8", timeout: 240_000, input: JSON.stringify({ inventory, extraVars: varsJson }),
        env: {
            PATH: bin ? `${bin}:${process.env.PATH}` : process.env.PATH, HOME: process.env.HOME ?? dir, RDMAKIT_OUT: out, ...served.env,
            RDMAKIT_FAIL_ON_FAILURE: "true", RDMAKIT_RERUN_ON: "", ...nodeSendEnv(ROOT), RDMAKIT_ANSIBLE_SUMMARISER: path.join(out, SUMMARISER_NAME),
            ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1",
            RDMAKIT_INVENTORY_HASH: sha256(inventory), RDMAKIT_VARS_HASH: varsDigest(varsJson),
            RDMAKIT_EXPECT: JSON.stringify({ all: args.expectations.all }), RDMAKIT_FABRIC_ARGS: "",
            ...(bin ? { RDMAKIT_HEALTH_EXPECT: JSON.stringify(args.health) } : {}),
        },
    });
    served.close();
    const checks = JSON.parse(fs.readFileSync(path.join(out, "preflight", "localhost.json"), "utf8")).checks as
        Array<{ check: string; ok: boolean; seen: string; expected: string }>;
    return { ...r, out, checks, check: (name: string) => checks.find((c) => c.check === name) };
}

const skip = { skip: missing.length ? `missing ${missing.join(", ")}` : false };

test("Azure: failing health checks fail the node, with NHC's own failure lines in the report", skip, () => {
    const r = run({
        lines: [
            "SUCCESS:  nhc:  Health check passed:  check_gpu_count: Expected 8 and found 8",
            "ERROR:  nhc:  Health check failed:  check_hw_ib: No IB port mlx5_ib7:1 is ACTIVE (LinkUp 400 Gb/sec).",
            "ERROR:  nhc:  Health check failed:  check_gpu_ecc: GPU id 3: SRAM Uncorrectable ECC error count detected, (0,1)",
        ], rc: 1,
    }, ["0x8001"], true);
    const nhc = r.check("azure-health-checks");
    assert.equal(nhc?.ok, false);
    assert.match(nhc!.seen, /^exit 1: check_hw_ib: No IB port mlx5_ib7:1 is ACTIVE \(LinkUp 400 Gb\/sec\)\. \| check_gpu_ecc: GPU id 3/);
    assert.equal(r.status, 1);
    assert.match(r.stdout, /bad node\(s\): localhost/);
    assert.match(r.stdout, /x azure-health-checks \[preflight localhost\]: expected run-health-checks\.sh exits 0 with no 'Health check failed' line; seen exit 1: check_hw_ib/);
    assert.deepEqual(parseResultLine(r.stdout)?.badNodes, ["localhost"]);
    // the node health captures: six tools' outputs fetched under their fixed names, none for the missing dcgmi; the
    // report grades them (a ConnectX-7 rail at Gen4 x8) beside the node's nccl-tests verdict
    const captured = path.join(r.out, "health", "localhost");
    assert.deepEqual(fs.readdirSync(captured).sort(), ["dmesg.txt", "ibstat.txt", "lspci-vv.txt", "nvidia-smi-nvlink.txt", "nvidia-smi-q.txt", "rdma-devices.txt"]);
    // each device asked on its own: the panic of mlx5_an0, then every HCA's block as the capture has them
    assert.equal(fs.readFileSync(path.join(captured, "ibstat.txt"), "utf8"),
        `${AN0_PANIC}\n` + fs.readFileSync(path.join(ROOT, "test/fixtures/health/captures/ibstat.h100-ib-400.txt"), "utf8").replace(/\n?$/, "\n"));
    assert.match(r.stdout, /FAIL node health: 0 of 1 node\(s\) healthy; bad node\(s\): localhost/);
    assert.match(r.stdout, /localhost\s+health FAILING\s+nccl-tests -\s+pcie: RDMA NIC 1a:00\.0 \(ConnectX-7\) link trained at 16GT\/s x8, capable of 32GT\/s x16 \(rail mlx5_0\)/);
    // the full-member key 0x8001 is there: the partition check passes on its own
    assert.equal(r.check("ib-pkey")?.ok, true, r.check("ib-pkey")?.seen);
    assert.equal(r.check("rdma-ports")?.ok, true, r.check("rdma-ports")?.seen);
});

test("Azure: passing health checks pass; a node with only a limited-member key fails ib-pkey", skip, () => {
    const r = run({ lines: ["SUCCESS:  nhc:  Health check passed:  check_gpu_count: Expected 8 and found 8",
        "SUCCESS:  nhc:  Health check passed:  check_ib_link_flapping: No IB link flapping found"], rc: 0 }, ["0x7fff"]);
    assert.deepEqual({ ok: r.check("azure-health-checks")?.ok, seen: r.check("azure-health-checks")?.seen }, { ok: true, seen: "exit 0: 2 checks passed" });
    const pkey = r.check("ib-pkey");
    assert.equal(pkey?.ok, false);
    assert.equal(pkey?.seen, "keys 0x7fff; full-member none");
    assert.match(pkey!.expected, /full-member partition key \(0x8000 bit set\)/);
});

test("Azure: an image without the health-check script skips it, and says so", skip, () => {
    const r = run(null, ["0x8001", "0x7fff"]);
    const nhc = r.check("azure-health-checks");
    assert.equal(nhc?.ok, true);
    assert.match(nhc!.seen, /^not on this image \(.*run-health-checks\.sh\): skipped$/);
    assert.equal(r.check("ib-pkey")?.seen, "keys 0x7fff,0x8001; full-member 0x8001");
});

// Found by the trust review (w10), fixed in w11: the node's health.log came back whole through slurp (into the
// controller's memory, base64), whatever its size. A log over 1 MiB is not read and fails the check by its size.
test("Azure: a health-check log over 1 MiB is not read: the check fails, naming its size", skip, () => {
    const r = run({ lines: [`SUCCESS:  nhc:  Health check passed:  check_gpu_count: ${"x".repeat(1_100_000)}`], rc: 0 }, ["0x8001"]);
    const nhc = r.check("azure-health-checks");
    assert.equal(nhc?.ok, false);
    assert.match(nhc!.seen, /^health\.log is 11\d{5} bytes, over 1048576: not read$/);
});
