/**
 * The node software in the validation report: validate.yml's preflight copies each node's /etc/rdmakit/software.json
 * (what site.yml's probes found and did) into out/<stack>/preflight/<host>.json; nccl-report --preflight lists each
 * component's version and whether it was reused or installed, and fails when the nodes run different versions.
 * The files here are shaped as playbooks/roles/nccl_validate/tasks/main.yml writes them.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runNcclReport } from "../components/validate/cli";

const ok = [{ check: "gpu-count", expected: "8 GPUs", seen: "8 GPUs", ok: true }];
const hpc = {
    ofed: { version: "OFED-internal-25.10-1.7.1:", action: "reused" }, driver: { version: "580.126.16", action: "reused" },
    nccl: { version: "2.30.4-1", action: "reused" }, ncclTests: { version: "image build at /opt/nccl-tests/build", action: "reused" },
    mpi: { version: "/opt/hpcx-v2.25.1-gcc-doca_ofed-ubuntu22.04-cuda13-x86_64/ompi", action: "reused" },
};

function folder(nodes: Record<string, unknown>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sw-report-"));
    for (const [host, software] of Object.entries(nodes)) {
        fs.writeFileSync(path.join(dir, `${host}.json`), JSON.stringify({ host, checks: ok, ...(software === undefined ? {} : { software }) }));
    }
    return dir;
}

test("the report lists each component's version and whether it was reused or installed, from the nodes' records", () => {
    const dir = folder({ "node-000": hpc, "node-001": hpc });
    const r = runNcclReport([], { preflight: dir });
    assert.equal(r.code, 0, r.stdout + r.stderr);
    assert.match(r.stdout, /node software \(each node's probes, \/etc\/rdmakit\/software\.json\):/);
    assert.match(r.stdout, /DOCA-OFED\s+OFED-internal-25\.10-1\.7\.1: reused \(2 nodes\)/);
    assert.match(r.stdout, /nccl-tests\s+image build at \/opt\/nccl-tests\/build reused \(2 nodes\)/);
    assert.match(r.stdout, /MPI\s+\/opt\/hpcx-v2\.25\.1-.*\/ompi reused \(2 nodes\)/);
    // in the roles' order (catalog/images.ts COMPONENT_LABEL): OFED, driver, ..., NCCL, MPI, nccl-tests
    const order = ["DOCA-OFED", "NVIDIA driver", "NCCL", "MPI", "nccl-tests"].map((l) => r.stdout.indexOf(`    ${l} `));
    assert.deepEqual([...order].sort((a, b) => a - b), order);
    const json = JSON.parse(runNcclReport([], { preflight: dir, json: true }).stdout);
    assert.deepEqual(json.software.lines.find((l: { component: string }) => l.component === "nccl").versions,
        [{ version: "2.30.4-1", action: "reused", hosts: ["node-000", "node-001"] }]);
});

test("a component at different versions across the nodes fails, naming which node runs which", () => {
    const dir = folder({ a: hpc, b: { ...hpc, nccl: { version: "2.28.9-1", action: "installed" } }, c: undefined });
    const r = runNcclReport([], { preflight: dir });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /NCCL\s+2\.28\.9-1 installed on b; 2\.30\.4-1 reused on a/);
    assert.match(r.stdout, /x software-versions \[preflight software\]: expected one NCCL version on every node; seen 2\.28\.9-1 \(installed\) on b; 2\.30\.4-1 \(reused\) on a/);
    assert.match(r.stdout, /no record on c \(site\.yml has not finished there\)/);
});

test("a preflight file whose software record is malformed is refused by name", () => {
    const dir = folder({ a: { nccl: "2.30.4-1" } });
    const r = runNcclReport([], { preflight: dir });
    assert.equal(r.code, 2);
    assert.match(r.stderr, /a\.json is not a preflight result .*software\?: \{<component>: \{version, action\}\}/);
});

test("IB partition keys: a node-local run's nodes each with a full-member key, but not the same ones, fail across the nodes", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-pkey-"));
    const pkey = (keys: string) => ({ check: "ib-pkey", expected: "a full-member partition key (0x8000 bit set), compared across the nodes by the report", seen: `keys ${keys}; full-member ${keys}`, ok: true });
    for (const [host, keys] of [["a", "0x8001"], ["b", "0x8001"], ["c", "0x8002"]]) {
        fs.writeFileSync(path.join(dir, `${host}.json`), JSON.stringify({ host, checks: [...ok, pkey(keys)] }));
    }
    const r = runNcclReport([], { preflight: dir });
    assert.equal(r.code, 1);
    assert.match(r.stdout, /x ib-pkey \[preflight partition keys\]: expected the same full-member partition keys on every node; seen 0x8001 on a, b; 0x8002 on c/);
    fs.writeFileSync(path.join(dir, "c.json"), JSON.stringify({ host: "c", checks: [...ok, pkey("0x8001")] }));
    assert.equal(runNcclReport([], { preflight: dir }).code, 0);
});

// found by the review of session 6: a `seen` clipped at its end lost the full-member keys the comparison reads, so
// nodes in the same partitions, each with many keys, were called different
test("IB partition keys: nodes with many keys in the same partitions pass, the keys read from the end of a clipped seen", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-pkey-many-"));
    const all = Array.from({ length: 40 }, (_, i) => `0x${(0x7f00 + i).toString(16)}`).join(",");
    const seen = `keys ${all},0x8001; full-member 0x8001`;
    assert.ok(seen.length > 300);
    // a with 40 limited-member keys beside the full one, b with the full one alone: the same partition
    for (const [host, text] of [["a", seen], ["b", "keys 0x8001; full-member 0x8001"]]) {
        fs.writeFileSync(path.join(dir, `${host}.json`), JSON.stringify({ host, checks: [...ok, { check: "ib-pkey", expected: "x", seen: text, ok: true }] }));
    }
    const r = runNcclReport([], { preflight: dir });
    assert.equal(r.code, 0, r.stdout);
});
