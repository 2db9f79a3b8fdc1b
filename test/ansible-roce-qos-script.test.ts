// The program the roce_host role installs (playbooks/roles/roce_host/files/rdmakit-roce-qos) run against a fake sysfs
// tree (RDMAKIT_SYSFS_ROOT) with stand-ins for ip, ethtool, mlnx_qos and mlxreg that record their arguments and answer
// like the real tools. The nspawn real-run test has no RDMA NIC, so this is where the commands and sysfs/configfs
// writes that reach a ConnectX NIC are checked: what is written, what is read back, and the GID check's messages.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const SCRIPT = path.resolve(__dirname, "..", "playbooks", "roles", "roce_host", "files", "rdmakit-roce-qos");

/** The plan's default lossless values for two rails, as roce-qos.env.j2 writes them. */
const ENV = {
    RDMAKIT_ROCE_DEVICES: "mlx5_0 mlx5_1", RDMAKIT_ROCE_INTERFACES: "", RDMAKIT_ROCE_TRUST: "dscp",
    RDMAKIT_ROCE_DSCP2PRIO: "26,3 48,6", RDMAKIT_ROCE_PFC_VECTOR: "0,0,0,1,0,0,0,0", RDMAKIT_ROCE_GLOBAL_PAUSE: "off",
    RDMAKIT_ROCE_CC_PRIO_MASK: "8", RDMAKIT_ROCE_CNP_DSCP: "48", RDMAKIT_ROCE_CNP_PRIORITY: "6", RDMAKIT_ROCE_TOS: "106",
    RDMAKIT_ROCE_MODE: "RoCE v2", RDMAKIT_ROCE_MTU: "9000", RDMAKIT_ROCE_CABLE_LEN: "5", RDMAKIT_ROCE_LOSSY_TUNING: "0",
    RDMAKIT_ROCE_GID_INDEX: "3",
};

function write(file: string, text: string, mode = 0o644): void {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, text, { mode });
}

/** A fake /sys with mlx5_0 (OFED: ecn and tc files) and mlx5_1 (inbox-like: neither), plus the stand-in tools. */
function fakeHost(opts: { pfcShown?: string; dcbxShown?: string } = {}): { root: string; bin: string; read: (p: string) => string; calls: () => string[] } {
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-roceqos-"));
    const sys = path.join(root, "sys");
    [["mlx5_0", "0000:17:00.0", "ens1f0np0"], ["mlx5_1", "0000:2a:00.0", "ens2f0np0"]].forEach(([dev, bdf, ifc], i) => {
        fs.mkdirSync(path.join(sys, "devices/pci0000:00", bdf, "net", ifc), { recursive: true });
        fs.mkdirSync(path.join(sys, "class/infiniband", dev, "ports/1/gids"), { recursive: true });
        fs.symlinkSync(path.join(sys, "devices/pci0000:00", bdf), path.join(sys, "class/infiniband", dev, "device"));
        write(path.join(sys, "class/net", ifc, "mtu"), "1500\n");
        write(path.join(sys, "kernel/config/rdma_cm", dev, "ports/1/default_roce_tos"), "0\n");
        write(path.join(sys, "kernel/config/rdma_cm", dev, "ports/1/default_roce_mode"), "IB/RoCE v1\n");
        if (i === 0) {
            write(path.join(sys, "class/infiniband", dev, "tc/1/traffic_class"), "");
            for (const point of ["roce_np", "roce_rp"]) for (let p = 0; p < 8; p++) write(path.join(sys, "class/net", ifc, "ecn", point, "enable", String(p)), "1\n");
            write(path.join(sys, "class/net", ifc, "ecn/roce_np/cnp_dscp"), "0\n");
            write(path.join(sys, "class/net", ifc, "ecn/roce_np/cnp_802p_prio"), "0\n");
            write(path.join(sys, "class/infiniband", dev, "ports/1/gid_attrs/types/3"), "RoCE v2\n");
            write(path.join(sys, "class/infiniband", dev, "ports/1/gids/3"), "0000:0000:0000:0000:0000:ffff:0a00:0001\n");
        }
    });
    const bin = path.join(root, "bin");
    const log = path.join(root, "calls.log");
    const stub = (name: string, body: string) => write(path.join(bin, name), `#!/bin/sh\necho "${name} $*" >>"${log}"\n${body}\n`, 0o755);
    stub("ip", `if [ "$1 $2" = "link set" ]; then echo "$6" >"${sys}/class/net/$4/mtu"; fi
if [ "$1 $2 $3" = "-4 -o addr" ] && [ "$6" = ens1f0np0 ]; then echo "5: ens1f0np0    inet 10.0.0.1/24 brd 10.0.0.255 scope global ens1f0np0"; fi`);
    stub("ethtool", `if [ "$1" = -a ]; then printf 'Pause parameters for %s:\\nAutonegotiate:\\toff\\nRX:\\t\\toff\\nTX:\\t\\toff\\n' "$2"; fi`);
    stub("mlnx_qos", `if [ $# -eq 2 ]; then printf 'DCBX mode: ${opts.dcbxShown ?? "OS controlled"}\\nPriority trust state: dscp\\nPFC configuration:\\n\\tpriority    0   1   2   3   4   5   6   7\\n\\tenabled     ${(opts.pfcShown ?? "0 0 0 1 0 0 0 0").split(" ").join("   ")}\\n'; fi`);
    stub("mlxreg", "");
    return {
        root, bin,
        read: (p) => fs.readFileSync(path.join(root, p), "utf8").trim(),
        calls: () => (fs.existsSync(log) ? fs.readFileSync(log, "utf8").trim().split("\n") : []),
    };
}

function runScript(h: { root: string; bin: string }, args: string[], env: Record<string, string> = {}) {
    return spawnSync("/bin/sh", [SCRIPT, ...args], {
        encoding: "utf8",
        env: { PATH: `${h.bin}:/usr/bin:/bin`, RDMAKIT_SYSFS_ROOT: h.root, ...ENV, ...env },
    });
}

test("apply: every value of the plan reaches the NIC and is read back", () => {
    const h = fakeHost();
    try {
        const r = runScript(h, ["apply"]);
        assert.equal(r.status, 0, r.stderr);
        const calls = h.calls();
        for (const [dev, ifc] of [["mlx5_0", "ens1f0np0"], ["mlx5_1", "ens2f0np0"]]) {
            // netdev resolved from /sys/class/infiniband/<dev>/device/net/ (no roce_host_interfaces given)
            assert.ok(calls.includes(`ip link set dev ${ifc} mtu 9000`), calls.join("\n"));
            assert.equal(h.read(`sys/class/net/${ifc}/mtu`), "9000");
            assert.ok(calls.includes(`ethtool -A ${ifc} rx off tx off`));
            assert.ok(calls.includes(`mlnx_qos -i ${ifc} --dcbx os`));
            assert.ok(calls.indexOf(`mlnx_qos -i ${ifc} --dcbx os`) < calls.indexOf(`mlnx_qos -i ${ifc} --trust dscp --pfc 0,0,0,1,0,0,0,0 --cable_len 5`));
            assert.ok(calls.includes(`mlnx_qos -i ${ifc} --trust dscp --pfc 0,0,0,1,0,0,0,0 --cable_len 5`));
            assert.ok(calls.includes(`mlnx_qos -i ${ifc} --dscp2prio set,26,3`));
            assert.ok(calls.includes(`mlnx_qos -i ${ifc} --dscp2prio set,48,6`));
            const bdf = dev === "mlx5_0" ? "0000:17:00.0" : "0000:2a:00.0";
            assert.ok(calls.includes(`mlxreg -y -d ${bdf} --reg_name ROCE_ACCL --set roce_adp_retrans_en=0,roce_tx_window_en=0,roce_slow_restart_en=0`));
            assert.equal(h.read(`sys/kernel/config/rdma_cm/${dev}/ports/1/default_roce_tos`), "106");
            assert.equal(h.read(`sys/kernel/config/rdma_cm/${dev}/ports/1/default_roce_mode`), "RoCE v2");
        }
        // ECN notification and reaction points only on the priorities of the mask (8 = priority 3); CNP marking.
        for (let p = 0; p < 8; p++) {
            for (const point of ["roce_np", "roce_rp"]) assert.equal(h.read(`sys/class/net/ens1f0np0/ecn/${point}/enable/${p}`), p === 3 ? "1" : "0");
        }
        assert.equal(h.read("sys/class/net/ens1f0np0/ecn/roce_np/cnp_dscp"), "48");
        assert.equal(h.read("sys/class/net/ens1f0np0/ecn/roce_np/cnp_802p_prio"), "6");
        assert.equal(h.read("sys/class/infiniband/mlx5_0/tc/1/traffic_class"), "106");
        // The inbox-like rail says what it could not set instead of failing.
        assert.match(r.stderr, /ens2f0np0: .*\/ecn absent \(these files come with DOCA\/MLNX OFED\)/);
        assert.match(r.stderr, /mlx5_1: .*tc\/1\/traffic_class absent/);
    } finally {
        fs.rmSync(h.root, { recursive: true, force: true });
    }
});

test("apply: a PFC vector the NIC does not show, a missing device, or lossy without mlxreg fail", () => {
    const h = fakeHost({ pfcShown: "0 0 0 0 0 0 0 0" });
    try {
        const pfc = runScript(h, ["apply"]);
        assert.equal(pfc.status, 1);
        assert.match(pfc.stderr, /ens1f0np0: PFC enabled row is '0 0 0 0 0 0 0 0', expected 0,0,0,1,0,0,0,0/);
        const fw = fakeHost({ dcbxShown: "Firmware controlled" });
        try {
            const r = runScript(fw, ["apply"]);
            assert.equal(r.status, 1);
            assert.match(r.stderr, /ens1f0np0: DCBX is firmware controlled \(willing\)/);
        } finally {
            fs.rmSync(fw.root, { recursive: true, force: true });
        }
        const missing = runScript(h, ["apply"], { RDMAKIT_ROCE_DEVICES: "mlx5_0 mlx5_7" });
        assert.equal(missing.status, 1);
        assert.match(missing.stderr, /mlx5_7: no such RDMA device/);
        fs.rmSync(path.join(h.bin, "mlxreg"));
        const lossy = runScript(h, ["apply"], { RDMAKIT_ROCE_LOSSY_TUNING: "1", RDMAKIT_ROCE_PFC_VECTOR: "0,0,0,0,0,0,0,0" });
        assert.equal(lossy.status, 1);
        assert.match(lossy.stderr, /mlx5_0: lossy fabric but neither mlxreg \(mft\) nor mstreg \(mstflint\) is installed/);
    } finally {
        fs.rmSync(h.root, { recursive: true, force: true });
    }
});

test("verify-gid: RoCE v2 with the rail's IPv4 address passes; anything else names device, index and what was seen", () => {
    const h = fakeHost();
    const gidDir = path.join(h.root, "sys/class/infiniband/mlx5_1/ports/1");
    try {
        const one = runScript(h, ["verify-gid"], { RDMAKIT_ROCE_DEVICES: "mlx5_0" });
        assert.equal(one.status, 0, one.stderr);
        assert.equal(one.stdout.trim(), "mlx5_0 port 1 GID index 3: RoCE v2 10.0.0.1 on ens1f0np0");

        const cases: [string | undefined, string | undefined, RegExp][] = [
            [undefined, undefined, /mlx5_1 port 1 GID index 3: type '\(none\)', gid \(none\); expected 'RoCE v2' with an IPv4-mapped address/],
            ["IB/RoCE v1", "0000:0000:0000:0000:0000:ffff:0a00:0101", /mlx5_1 port 1 GID index 3: type 'IB\/RoCE v1', gid 0000:0000:0000:0000:0000:ffff:0a00:0101; expected 'RoCE v2'/],
            ["RoCE v2", "fe80:0000:0000:0000:0e42:a1ff:fe00:0001", /mlx5_1 port 1 GID index 3: type 'RoCE v2' but gid fe80:0000:0000:0000:0e42:a1ff:fe00:0001 is not IPv4-mapped/],
            ["RoCE v2", "0000:0000:0000:0000:0000:ffff:0a00:0101", /mlx5_1 port 1 GID index 3: RoCE v2 GID for 10\.0\.1\.1, but rail netdev 'ens2f0np0' does not hold 10\.0\.1\.1/],
        ];
        for (const [type, gid, expected] of cases) {
            if (type) write(path.join(gidDir, "gid_attrs/types/3"), `${type}\n`);
            if (gid) write(path.join(gidDir, "gids/3"), `${gid}\n`);
            const r = runScript(h, ["verify-gid"]);
            assert.equal(r.status, 1, `${type} ${gid}: ${r.stdout}`);
            assert.match(r.stderr, expected);
            assert.match(r.stdout, /^mlx5_0 port 1 GID index 3: RoCE v2 10\.0\.0\.1 on ens1f0np0$/m);
        }
    } finally {
        fs.rmSync(h.root, { recursive: true, force: true });
    }
});
