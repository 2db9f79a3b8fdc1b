/**
 * Round 11 of the capture hunt (test/fixtures/health/README.md, "Round 11"): whole `nvidia-smi -q` of two data-centre
 * PCIe cards (A10, L4) on R550, kernel logs of newer drivers (Xid 154 "GPU recovery action changed" in talosctl's form,
 * Xid 38 / 109 under a Polish journal, Xid 79 pasted without prefixes around a "..." elision), dcgmi refusing to run
 * beside a MIG GPU, and the R565+ "GPU Recovery Action" and Fabric values that say nothing. Each is graded the way
 * `rdmakit health` reads a node: a node folder holding the capture under the grader's file name, through
 * gradeHealthDir, with only the components it answers required. "before" is the verdict of main at d900835.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { cap, gradeNode as grade, only, stack, summary } from "./fixtures/health/stacks";
import { parseDcgmText } from "../components/health/dcgm";
import { parseNvidiaSmiQ } from "../components/health/nvidia-smi";

const ROCE = stack("examples/roce-h100.yaml");
const AZURE = stack("examples/azure-h100.yaml");
const aws = (instanceType: string) => stack("examples/aws-p5.yaml", (c) => { c.aws.instanceType = instanceType; c.aws.allowNoGpuDirect = true; });
const dmesg = (file: string) => grade({ "dmesg.txt": cap(file) }, only(ROCE, ["xid"]));

test("nvidia-smi -q of one A10 (550.90.12, idle in P8 at Gen1): healthy where an A10 is planned; on a g5 (A10G) failing, naming the other model (before: the same)", () => {
    const text = cap("nvidia-smi-q.a10-550.90.12.txt");
    const a10 = only({ ...AZURE, gpus: 1, gpuModel: "A10", gpuMemoryGiB: 24, gpuPcie: { gen: 4, width: 16 }, nvswitch: false, nvlinkLinks: 0 }, ["gpu", "ecc", "clocks"]);
    const h = grade({ "nvidia-smi-q.txt": text }, a10);
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => /PCIe Gen1 of Gen4 in P8/.test(n)), h.notes.join("\n"));
    // a g5 carries A10G (components/catalog/aws.ts): an A10 there is another board, not a healthy g5
    const g5 = grade({ "nvidia-smi-q.txt": text }, only(aws("g5.8xlarge"), ["gpu", "ecc", "clocks"]));
    assert.deepEqual(summary(g5).findings, [["gpu", "GPU 00000000:08:00.0 is a NVIDIA A10, expected A10G"]]);
});

test("nvidia-smi -q of one L4 (550.90.07, P8, Gen1 x8 of Gen4 x16) grades healthy on g6.8xlarge; both idle link readings are notes (before: the same)", () => {
    const h = grade({ "nvidia-smi-q.txt": cap("nvidia-smi-q.l4-550.90.07.txt") }, only(aws("g6.8xlarge"), ["gpu", "ecc", "clocks"]));
    assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(h.notes.some((n) => /PCIe x8 of x16 in P8/.test(n)) && h.notes.some((n) => /PCIe Gen1 of Gen4 in P8/.test(n)), h.notes.join("\n"));
});

test("talosctl dmesg: back-to-back GSP RPC timeouts, then Xid 154 'from 0x0 (None) to 0x1 (GPU Reset Required)': failing xid, transient (before: the same)", () => {
    const h = dmesg("dmesg.talosctl-xid154-reset-required-back-to-back-gsp-ogkm446.txt");
    assert.deepEqual(summary(h).findings, [["xid", "Xid 154 (GPU Recovery Action Changed) on GPU 0000:0b:00, 0 min before the log's last line (window 120 min)"]]);
    assert.equal(h.findings[0].persistence, "transient");
    // the falcon dump names no GPU: a note, not a second finding
    assert.ok(h.notes.some((n) => n.startsWith("the driver dumped the GSP's falcon")), h.notes.join("\n"));
    // the same line with the action back to None is a note (docs/health.md, Xid 154), so the finding comes from "0x1"
    const none = grade({ "dmesg.txt": cap("dmesg.talosctl-xid154-reset-required-back-to-back-gsp-ogkm446.txt").replace("to 0x1 (GPU Reset Required)", "to 0x0 (None)") }, only(ROCE, ["xid"]));
    assert.equal(none.verdict, "healthy");
});

test("a Polish journal ('kwi 15 07:56:59 testowy kernel: ...'): Xid 38 is a note, Xid 109 CTX SWITCH TIMEOUT fails, untimed (before: the same)", () => {
    const h = dmesg("dmesg.journal-polish-month-xid38-109-ogkm1045.txt");
    assert.deepEqual(summary(h).findings, [["xid", "Xid 109 (Context Switch Timeout Error) on GPU 0000:07:00 (the line has no time: cannot show it is old)"]]);
    assert.ok(h.notes.some((n) => n.startsWith("Xid 38 (Driver firmware error) on GPU 0000:07:00")), h.notes.join("\n"));
});

test("bare 'NVRM: ...' lines of an RTX 5090 (580 / 595) with the reporter's '...': Xid 79 fails once, the elision does not stop the read (before: the same)", () => {
    const h = dmesg("dmesg.rtx5090-580-xid79-elided-no-prefix-ogkm1151.txt");
    assert.deepEqual(summary(h), { verdict: "failing", findings: [["xid", "Xid 79 (GPU has fallen off the bus) on GPU 0000:06:00 (the line has no time: cannot show it is old)"]], notChecked: [] });
});

test("dcgmi refusing to run beside a MIG GPU ('GPU 2's MIG configuration is incompatible with the diagnostic ...'): dcgm not checked, the message named (before: unreadable, 'is not dcgmi diag output')", () => {
    const text = cap("dcgmi-diag.3.1.3-mig-incompatible-dcgm70.txt");
    assert.deepEqual(parseDcgmText(text), { tests: [], error: "GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU." });
    const h = grade({ "dcgmi-diag.txt": text }, only(ROCE, ["dcgm"]));
    assert.equal(h.verdict, "incomplete");
    assert.deepEqual(h.notChecked.map((n) => [n.component, n.reason]), [["dcgm", "dcgmi did not run the diagnostic: GPU 2's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU."]]);
    // only nvvs's own sentence is read as its refusal: other text without a table stays refused
    assert.throws(() => parseDcgmText("MIG configuration is fine\n"), /is not dcgmi diag output/);
});

/** the whole HGX H100 capture (565.57.01, every GPU "GPU Recovery Action : None") with its first GPU's value set */
const recovery = (value: string): string => {
    const whole = cap("nvidia-smi-q.h100-565.57.01.txt");
    const line = /^( {4}GPU Recovery Action\s+: )None$/m;
    assert.match(whole, line);
    return whole.replace(line, `$1${value}`);
};

test("GPU Recovery Action values that say nothing (Not Supported, [Not Supported], N/A, the R570 'Requested functionality has been deprecated') are no finding (before: failing gpu, 'the driver asks for a recovery action', for all but N/A)", () => {
    // constructed: the H100 capture's first "GPU Recovery Action : None" replaced by each value
    for (const value of ["Not Supported", "[Not Supported]", "N/A", "Requested functionality has been deprecated"]) {
        const h = grade({ "nvidia-smi-q.txt": recovery(value) }, only(ROCE, ["gpu", "ecc", "clocks"]));
        assert.deepEqual(summary(h), { verdict: "healthy", findings: [], notChecked: [] }, value);
    }
});

test("GPU Recovery Action Reset / Reboot / Drain P2P / Drain and Reset fail gpu; a value the kit does not know (Recover IMEX Domain) is a note (before: all five failing)", () => {
    for (const value of ["Reset", "Reboot", "Drain P2P", "Drain and Reset"]) {
        const h = grade({ "nvidia-smi-q.txt": recovery(value) }, only(ROCE, ["gpu", "ecc", "clocks"]));
        assert.deepEqual(summary(h).findings, [["gpu", "GPU 00000000:18:00.0: the driver asks for a recovery action"]], value);
        assert.match(h.findings[0].evidence ?? "", new RegExp(`GPU Recovery Action\\s+: ${value}$`));
    }
    const imex = grade({ "nvidia-smi-q.txt": recovery("Recover IMEX Domain") }, only(ROCE, ["gpu", "ecc", "clocks"]));
    assert.deepEqual(summary(imex), { verdict: "healthy", findings: [], notChecked: [] });
    assert.ok(imex.notes.some((n) => /GPU Recovery Action\s+: Recover IMEX Domain \(a recovery action the kit does not know; not graded\)/.test(n)), imex.notes.join("\n"));
});

test("Fabric State 'Not Supported' and a Health Summary 'Not Supported' are no answer on an NVSwitch stack; 'Not Started' still fails (before: the two 'Not Supported' failing nvlink too)", () => {
    const whole = cap("nvidia-smi-q.h100-565.57.01.txt");
    const state = /^( {8}State\s+: )Completed$/m;
    assert.match(whole, state);
    const exp = only(ROCE, ["gpu", "nvlink"]);
    // the node's nvlink file: the constructed eight-GPU H100 one (README), so nvlink is answered by both files
    const node = (smi: string) => ({ "nvidia-smi-q.txt": smi, "nvidia-smi-nvlink.txt": cap("nvidia-smi-nvlink.h100x8-constructed.txt") });
    assert.equal(grade(node(whole), exp).verdict, "healthy");
    // constructed: the first GPU's Fabric State replaced
    assert.equal(grade(node(whole.replace(state, "$1Not Supported")), exp).verdict, "healthy");
    const notStarted = grade(node(whole.replace(state, "$1Not Started")), exp);
    assert.deepEqual(summary(notStarted).findings, [["nvlink", "GPU 00000000:18:00.0 has not joined the NVLink fabric (Fabric Manager)"]]);
    // constructed: the first GPU's "Health > Bandwidth : N/A" preceded by a Summary line (R580's first Health field)
    const bw = /^( {12})Bandwidth(\s+): N\/A$/m;
    assert.match(whole, bw);
    const summaryNs = whole.replace(bw, "$1Summary  $2: Not Supported\n$1Bandwidth$2: N/A");
    assert.equal(parseNvidiaSmiQ(summaryNs).gpus[0].fabricHealth, undefined);
    assert.equal(grade(node(summaryNs), exp).verdict, "healthy");
    const unhealthy = whole.replace(bw, "$1Summary  $2: Unhealthy\n$1Bandwidth$2: N/A");
    assert.deepEqual(summary(grade(node(unhealthy), exp)).findings, [["nvlink", "GPU 00000000:18:00.0: the NVLink fabric reports it unhealthy"]]);
});

test("nvidia-smi -q -x of R580 (580.95.05, nvsmi_device_v13.dtd) is refused by name; so is the same XML pasted from a later element, without its head (before: the head refused by name, the headless paste refused only as 'not nvidia-smi -q output')", () => {
    const text = cap("nvidia-smi-q-x.gtx1050-580.95.05-head-1panel10990.xml.txt");
    const exp = only(ROCE, ["gpu"]);
    const xml = /is nvidia-smi -q -x \(XML\); the kit reads the text form of nvidia-smi -q/;
    const h = grade({ "nvidia-smi-q.txt": text }, exp);
    assert.equal(h.verdict, "unreadable");
    assert.match(h.unreadable[0].reason, xml);
    // constructed: the capture from its <gpu id="..."> element on, the indentation kept (a paste cut before the head)
    const headless = text.slice(text.indexOf("        <gpu id="));
    assert.throws(() => parseNvidiaSmiQ(headless), xml);
    assert.throws(() => parseNvidiaSmiQ(text.slice(text.indexOf("                <product_name>"))), xml);
});

test("dcgmi diag -j --iterations (each run's document under \"iterations\", then \"Overall Result\") is read run by run (before: unreadable, 'not dcgmi diag -j output')", () => {
    // constructed from the real DCGM 3.1.0 document (dcgmi-diag.3.1.0-warning-nulls.json, every test PASS) in the
    // shape dcgmi/Diag.cpp writes for --iterations (NVIDIA/DCGM at 4.6.0): {"iterations": [run, ...], "Overall Result": ...}
    const raw = cap("dcgmi-diag.3.1.0-warning-nulls.json");
    const run = JSON.parse(raw.slice(raw.indexOf("{"))) as Record<string, any>;
    const exp = only(ROCE, ["dcgm"]);
    const node = (doc: unknown) => grade({ "dcgmi-diag.json": JSON.stringify(doc, null, 4) }, exp);
    assert.deepEqual(summary(node({ iterations: [run, run], "Overall Result": "Pass" })), { verdict: "healthy", findings: [], notChecked: [] });
    // the loop stopped on an error with every stored test passing: the last run did not complete, not a pass
    const stopped = node({ iterations: [run], "Overall Result": "Fail", Warning: "The NVVS process was killed" });
    assert.equal(stopped.verdict, "incomplete");
    assert.match(stopped.notChecked[0].reason, /stopped with "Overall Result": "Fail" \(The NVVS process was killed\)/);
    // a test that failed in the second run fails, naming the run
    const failed = structuredClone(run);
    const t = failed["DCGM GPU Diagnostic"].test_categories.flatMap((c: any) => c?.tests ?? []).find((x: any) => x?.name === "NVML Library");
    t.results[0].status = "FAIL";
    const h = node({ iterations: [run, failed], "Overall Result": "Fail", Warning: "Diagnostic failure" });
    assert.deepEqual(summary(h).findings, [["dcgm", "DCGM test \"Deployment/NVML Library (iteration 2 of 2)\" failed"]]);
    // an "Overall Result" that is none of Pass / Fail is refused, never read as a pass
    assert.equal(node({ iterations: [run], "Overall Result": "Maybe" }).verdict, "unreadable");
});
