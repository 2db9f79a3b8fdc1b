/**
 * Round 10 of the capture hunt (test/fixtures/health/README.md, "Round 10"): kernel logs with PCIe AER lines (an
 * uncorrected fatal error on the root port above a GPU, corrected ones under three log forms, two of them in a
 * non-English locale), mlx5 RoCE CQE lines, and two ibstat pastes. Each is graded the way `rdmakit health` reads a
 * node: a node folder holding the capture under the grader's file name, through gradeHealthDir, with only the
 * components it answers required. "before" is the verdict of main at 08f994e.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDmesg } from "../components/health/dmesg";

const ROCE = stack("examples/roce-h100.yaml");
const AZURE = stack("examples/azure-h100.yaml");
const dmesg = (file: string) => grade({ "dmesg.txt": cap(file) }, only(ROCE, ["xid"]));

test("an uncorrected fatal AER (CmpltTO) on the root port above an NVIDIA GPU, dmesg -H deltas: failing pcie, naming the port (before: the same)", () => {
    const h = dmesg("dmesg.delta-aer-uncorrected-fatal-cmpltto-returnn1500.txt");
    assert.deepEqual(summary(h).findings, [["pcie", "uncorrected PCIe error on pcieport 0000:00:03.0"]]);
    assert.equal(h.verdict, "failing");
});

test("corrected AER lines under a Norwegian journal ('jan. 29 ...') are read: a note, healthy (before: unreadable, no kernel-log form)", () => {
    const h = dmesg("dmesg.journal-dotted-month-aer-corrected-nbfc181.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => n.startsWith("1 corrected PCIe AER error line(s)")), h.notes.join("\n"));
});

test("corrected AER lines under a Russian journal ('фев 12 ...', no host name) are read: a note, healthy (before: unreadable)", () => {
    const h = dmesg("dmesg.journal-cyrillic-month-aer-corrected-gsconnect1052.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => n.startsWith("3 corrected PCIe AER error line(s)")), h.notes.join("\n"));
    // a non-English month gives the line no wall time (only English abbreviations are mapped), so nothing is dated
    assert.equal(parseDmesg(cap("dmesg.journal-cyrillic-month-aer-corrected-gsconnect1052.txt")).newest.wall, undefined);
    // an English month in the same form is dated, as before
    assert.notEqual(parseDmesg("Feb 12 00:48:02 kernel: pcieport 0000:00:1c.5: AER: Corrected error received: 0000:00:1c.5\n").newest.wall, undefined);
});

test("a localised month followed by no whole HH:MM:SS time is still no kernel-log form: refused", () => {
    // constructed: the same line with its time cut to "00:48" is no kernel-log form
    assert.throws(() => parseDmesg("фев 12 00:48 kernel: pcieport 0000:00:1c.5: AER: Corrected error received\n"), /no line in a kernel-log form/);
});

test("correctable AER (Timeout, BadTLP) on an AMD root port in /var/log/syslog form: a note, healthy (before: the same)", () => {
    const h = dmesg("dmesg.syslog-aer-correctable-amd-rootport-pop3363.txt");
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => n.startsWith("3 corrected PCIe AER error line(s)")), h.notes.join("\n"));
});

test("mlx5 responder CQEs with syndrome 0x5 (a flushed work request: a QP in error, not a device fault) are no mlx5 device error: healthy (before: the same)", () => {
    // syndrome 0x5 is MLX5_CQE_SYNDROME_WR_FLUSH_ERR (linux include/linux/mlx5/device.h; rdma-core providers/mlx5):
    // work requests flushed once their QP went to the error state, an application/connection event
    const h = dmesg("dmesg.cx-roce-responder-cqe-flush-nvmecli3268.txt");
    assert.deepEqual(parseDmesg(cap("dmesg.cx-roce-responder-cqe-flush-nvmecli3268.txt")).mlx5Errors, []);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
});

test("ibstat of two ConnectX-6 Dx RoCE ports Active at 100: on an 8-rail 400G RoCE stack, failing naming the missing rails and the speed; on Azure IB, no InfiniBand device (before: the same)", () => {
    const text = cap("ibstat.cx6dx-roce-100-two-active-l2fwdnv6.txt");
    assert.deepEqual(summary(grade({ "ibstat.txt": text }, only(ROCE, ["nic"]))).findings, [
        ["nic", "RDMA device(s) mlx5_2, mlx5_3, mlx5_4, mlx5_5, mlx5_6, mlx5_7 missing: 2 of the 8 expected are listed"],
        ["nic", "mlx5_0 port 1 at 100 Gb/s, expected 400 Gb/s"],
        ["nic", "mlx5_1 port 1 at 100 Gb/s, expected 400 Gb/s"],
    ]);
    assert.deepEqual(summary(grade({ "ibstat.txt": text }, only(AZURE, ["nic"]))).findings, [["nic", "0 InfiniBand RDMA device(s), expected 8"]]);
});

test("ibstat pasted with '...' before one ConnectX-7 at 400 (the other HCAs elided): refused, named as an excerpt (before: the same)", () => {
    for (const exp of [ROCE, AZURE]) {
        const h = grade({ "ibstat.txt": cap("ibstat.elided-head-cx7-ib-400-mlx5_5-nccl1591.txt") }, only(exp, ["nic"]));
        assert.equal(h.verdict, "unreadable");
        assert.equal(h.unreadable[0].file, "ibstat.txt");
        assert.match(h.unreadable[0].reason, /holds a "\.\.\." line \(someone's elision\): an excerpt/);
    }
});

test("a ConnectX-6 whose firmware stopped answering ('device's health compromised - reached miss count', synd 0x7 irisc not responding): failing nic, the line as evidence (before: the same)", () => {
    const h = dmesg("dmesg.cx6-health-compromised-miss-count-irisc-charm2635.txt");
    // before: "mlx5 driver error", the device only in the evidence
    assert.deepEqual(summary(h).findings, [["nic", "mlx5 driver error on mlx5_core 0000:5e:00.0"]]);
    assert.match(h.findings[0].evidence ?? "", /mlx5_core 0000:5e:00\.0: device's health compromised - reached miss count/);
});

test("pdsh output of one host ('b1360: [14280.445220] mlx5_core ...: wait_func ... timeout'): the label is dropped, the command timeouts fail nic (before: unreadable, no kernel-log form)", () => {
    const text = cap("dmesg.pdsh-mlx5-cmd-timeout-create-dct-ucx7738.txt");
    assert.equal(parseDmesg(text).newest.boot, 14280.445244);
    const h = dmesg("dmesg.pdsh-mlx5-cmd-timeout-create-dct-ucx7738.txt");
    assert.equal(h.verdict, "failing");
    // one finding for the device, not one per line (before: five identical "mlx5 driver error" findings)
    assert.deepEqual(summary(h).findings, [["nic", "mlx5 driver error on mlx5_core 0000:61:00.0 (8 lines)"]]);
    assert.match(h.findings[0].evidence ?? "", /^\[14280\.445220\] mlx5_core 0000:61:00\.0: wait_func_handle_exec_timeout/);
    // constructed: the second line relabelled as another host's: two nodes' logs in one file are refused, naming both
    const two = text.replace("b1360: [14280.445224]", "b1361: [14280.445224]");
    assert.throws(() => parseDmesg(two), /holds the kernel logs of 2 hosts \(pdsh\/clush "<host>: " labels: b1360, b1361\)/);
    const h2 = grade({ "dmesg.txt": two }, only(ROCE, ["xid"]));
    assert.equal(h2.verdict, "unreadable");
    assert.equal(h2.unreadable[0].file, "dmesg.txt");
});

test("`nvidia-smi -q | grep -A8 'Clocks Throttle'` (the section alone, Idle Active, HW Slowdown Not Active): refused, named as no nvidia-smi -q output (before: the same)", () => {
    const h = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.grep-a8-clocks-throttle-kubeflow68.txt") }, only(ROCE, ["gpu", "clocks", "ecc"]));
    assert.equal(h.verdict, "unreadable");
    assert.deepEqual(h.unreadable.map((u) => u.file), ["nvidia-smi-q.txt"]);
    assert.match(h.unreadable[0].reason, /^is not nvidia-smi -q output \(no "==============NVSMI LOG==============" header, no "Attached GPUs"/);
});
