/**
 * Review of round 8's NIC/PCIe/NVLink changes, read as the operator of a healthy cluster: can a healthy node now be
 * named failing? LnkSta "Width x0" on a function that answers config reads is not a link that is down (the reads cross
 * that link): a virtual function the name does not mark, or a hypervisor's copy of the register, is not checked.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";

const H100 = stack("examples/azure-h100.yaml");

test("an H100 whose LnkSta reads 'Speed unknown, Width x0' while its config space answers: pcie not checked, never failing (was: 'link is not up')", () => {
    // constructed from the real gpud H100 capture: GPU 19:00.0's LnkSta replaced by the form a VF shows (the kvm list
    // capture, lspci-vv.cx7-pf-gen4x8-vf-unknown-kvm-clg.txt); the rest of its config space (BARs, capabilities) still reads
    const real = cap("lspci-vv.h100-gpud.txt");
    const text = real.replace(/(19:00\.0 3D controller[\s\S]*?)LnkSta:\tSpeed 32GT\/s \(ok\), Width x16 \(ok\)/, "$1LnkSta:\tSpeed unknown (downgraded), Width x0 (downgraded)");
    assert.notEqual(text, real);
    const exp = only({ ...H100, fabric: "aws-efa" }, ["pcie"]);
    // the node's nvidia-smi says nothing here: the GPU's P-state is unknown, so a P0-only rule cannot be what saves it
    const h = grade({ "lspci-vv.txt": text }, exp);
    assert.deepEqual(summary(h), { verdict: "incomplete", findings: [], notChecked: ["pcie"] });
    assert.match(h.notChecked[0].reason, /^GPU 19:00\.0 shows LnkSta width x0 \(capable of x16\) while it answers config reads/);
    // the untouched capture stays healthy
    assert.equal(grade({ "lspci-vv.txt": real }, exp).verdict, "healthy");
});

test("a dual-port card with one port cabled (ibstat lists both under one CA): the Down port beside the Active one is a note; a device with no Active port, or a cabled port not Active, still fails", () => {
    // the real dual-port ConnectX-3 capture (linux-rdma list: mlx4_0, port 1 InfiniBand Down/Polling, port 2 Ethernet
    // Down/Disabled), with port 1 set Active/LinkUp in memory: the card cabled on port 1 only, its VPI port 2 unused
    const real = cap("ibstat.mlx4-ib-port-down-linux-rdma.txt");
    const text = real.replace(/(Port 1:\n\s+State: )Down(\n\s+Physical state: )Polling/, "$1Active$2LinkUp");
    assert.notEqual(text, real);
    const exp = only({ ...H100, nics: { ...H100.nics, names: ["mlx4_0"], count: 1, rateGbps: 10 } }, ["nic"]);
    const h = grade({ "ibstat.txt": text }, exp);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => n.startsWith("mlx4_0 port 2 Down beside an Active port of the same device")), h.notes.join("\n"));
    // the same second port cabled but not Active (Initializing: no subnet manager has brought it up): failing
    const init = text.replace(/(Port 2:\n\s+State: )Down/, "$1Initializing");
    assert.notEqual(init, text);
    assert.equal(grade({ "ibstat.txt": init }, exp).verdict, "failing");
    // the capture as published, no port Active: the rail fails on port 1 (and port 2's Ethernet link layer) as before
    assert.deepEqual(summary(grade({ "ibstat.txt": real }, exp)).findings.map((f) => f[1]), [
        "mlx4_0 port 1 is Down, expected Active", "mlx4_0 port 2 has link layer Ethernet, expected InfiniBand", "mlx4_0 port 2 is Down, expected Active",
    ]);
});
