/**
 * The node health grade: pure. One node's tool outputs (file name → text) and what the stack's hardware should show
 * → a verdict with each finding's component and evidence line. Nothing is healthy by default: a file that is missing
 * or a tool that said it could not answer is "not checked", and a node with anything not checked is not healthy.
 */
import { sxidInfo, sxidNeedsOwner, type SxidInfo } from "../catalog/sxid";
import { xidInfo, xidNeedsOwner } from "../catalog/xid";
import { parseDcgmJson, parseDcgmText, type DcgmReport } from "./dcgm";
import { parseDmesg, type DmesgReport, type LogTime, type SxidEvent } from "./dmesg";
import { parseFiInfo, parseIbstat } from "./ibstat";
import { parseLspci, type PciBridge, type PciDevice, type PcieLink } from "./lspci";
import { functionKey, parseRdmaDevices } from "./rdma-devices";
import { parseNvidiaSmiQ, type SmiReport } from "./nvidia-smi";
import { parseNvlinkStatus } from "./nvlink";
import { DEFAULT_HEALTH_REQUIRE, FILES, HealthParseError, isTransient, PCIE_GTS, XID_WINDOW_MINUTES, pcieGen, type Component, type Finding, type HealthExpectation, type NodeHealth } from "./types";

export type NodeFiles = Partial<Record<string, string>>;

const clip = (s: string, n = 240): string => (s.length > n ? `${s.slice(0, n - 3)}...` : s);

/**
 * One GPU's key whatever the tool's spelling: the PCI domain as a number, bus, device (the function dropped):
 * nvidia-smi's "00000000:19:00.0", lspci's "0000:19:00.0" or "19:00.0", the Xid line's "0000:19:00" meet, and Azure's
 * per-GPU domains ("00000001:00:00.0" ... "00000008:00:00.0", AzNHC test/data/orig_nvsmi8_output.txt) stay apart.
 */
export function shortBdf(bdf: string): string {
    const m = /^(?:([0-9a-f]{4,8}):)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.[0-7])?$/i.exec(bdf.trim());
    if (!m) return bdf.toLowerCase();
    return `${parseInt(m[1] ?? "0", 16)}:${m[2].toLowerCase()}:${m[3].toLowerCase()}`;
}

class Grader {
    readonly h: NodeHealth;
    constructor(node: string, readonly files: NodeFiles) {
        this.h = { node, verdict: "healthy", findings: [], notChecked: [], unreadable: [], notes: [] };
    }
    fail(component: Component, file: string, message: string, evidence?: string, persistence: Finding["persistence"] = "persistent"): void {
        this.h.findings.push({ component, file, message, evidence, persistence });
    }
    /** the parsed file, or undefined after recording why not (missing: not checked; not the tool's output: unreadable) */
    read<T>(component: Component, file: string, parse: (text: string) => T): T | undefined {
        const text = this.files[file];
        if (text === undefined) {
            this.h.notChecked.push({ component, file, reason: `${file} is missing` });
            return undefined;
        }
        try {
            return parse(text);
        } catch (e) {
            if (!(e instanceof HealthParseError)) throw e;
            this.h.unreadable.push({ file, reason: e.message });
            return undefined;
        }
    }
}

function gradeSmi(g: Grader, exp: HealthExpectation): SmiReport | undefined {
    const f = FILES.smi.name;
    const smi = g.read("gpu", f, parseNvidiaSmiQ);
    if (!smi) return undefined;
    for (const e of smi.driverErrors) g.fail("gpu", f, "nvidia-smi cannot reach a GPU", e);
    const seen = smi.attached ?? smi.gpus.length;
    if (seen !== exp.gpus && smi.driverErrors.length === 0) {
        g.fail("gpu", f, `${seen} GPU(s), expected ${exp.gpus} (${exp.hostType})`, smi.attached !== undefined ? `Attached GPUs : ${smi.attached}` : undefined);
    }
    if (smi.attached !== undefined && smi.gpus.length < smi.attached) {
        g.h.notChecked.push({ component: "gpu", file: f, reason: `${f} holds ${smi.gpus.length} of the ${smi.attached} attached GPUs (nvidia-smi -q -i, or cut short): the others are not checked` });
    }
    const token = exp.gpuModel.split("-")[0];
    for (const gpu of smi.gpus) {
        const where = `GPU ${gpu.busId}`;
        if (!gpu.complete) {
            g.h.notChecked.push({ component: "gpu", file: f, reason: `${f}: the section of ${where} ends before its "Processes" field, which every whole nvidia-smi -q GPU section holds: cut short (or nvidia-smi -q -d), the fields after the cut are not checked` });
        }
        if (gpu.productName && token && !new RegExp(`\\b${token}\\b`, "i").test(gpu.productName)) {
            g.fail("gpu", f, `${where} is a ${gpu.productName}, expected ${exp.gpuModel}`, `Product Name : ${gpu.productName}`);
        } else if (gpu.memoryMiB !== undefined && exp.gpuMemoryGiB && gpu.memoryMiB / 1024 < 0.9 * exp.gpuMemoryGiB) {
            // the same name with less memory (an A100 40GB where the stack plans for 80GB: its sizes, its maxBytes) fails;
            // more memory does not. 10% below: the driver's total is under the marketed figure (an 80GB H100 shows
            // 81559 MiB, the captures in test/fixtures/health)
            g.fail("gpu", f, `${where} has ${gpu.memoryMiB} MiB of memory, ${exp.gpuModel} has ${exp.gpuMemoryGiB} GiB`, `FB Memory Usage Total : ${gpu.memoryMiB} MiB`);
        }
        // ECC off: every error counter reads N/A and DCGM skips its memory test ("because ECC is not enabled",
        // DCGM dcgm_errors.h), so nothing would show a failing memory; an ECC-capable datacenter GPU runs with it on
        if (gpu.eccMode && /^disabled$/i.test(gpu.eccMode)) g.fail("ecc", f, `${where} runs with ECC disabled: memory errors go undetected (nvidia-smi -e 1, then reboot)`, `ECC Mode Current : ${gpu.eccMode}`);
        for (const r of gpu.repairPending) g.fail("ecc", f, `${where} has a memory repair pending (reset the GPU to apply it)`, r);
        if (gpu.unrepairable) g.fail("ecc", f, `${where} has unrepairable memory (replace the GPU)`, gpu.unrepairable);
        if (gpu.remappedUncorrectable) g.h.notes.push(`${where}: ${gpu.remappedUncorrectable} row(s) remapped after uncorrectable errors (repaired; the GPU fails when a remap is pending or fails)`);
        for (const line of gpu.uncorrectable) {
            // DRAM errors of the GPU's life are repaired by row remapping (NVIDIA, "A100 GPU memory error management",
            // https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/index.html); SRAM ones and any since the driver loaded are not
            // (older drivers' "Double Bit ... Total" is mostly device memory too, handled by page retirement)
            if (/^Aggregate/i.test(line) && /DRAM|Double Bit/i.test(line)) g.h.notes.push(`${where}: ${line} (lifetime DRAM count; remapping / page retirement repairs these)`);
            else g.fail("ecc", f, `${where} has uncorrectable ECC errors`, line);
        }
        if (gpu.retiredPending) g.fail("ecc", f, `${where} has pages waiting to be retired (reset the GPU)`, gpu.retiredPending);
        if (gpu.remapPending) g.fail("ecc", f, `${where} has a row remapping pending (reset the GPU to apply it)`, gpu.remapPending);
        if (gpu.remapFailure) g.fail("ecc", f, `${where} failed to remap a row (RMA per NVIDIA's memory error guide)`, gpu.remapFailure);
        if (gpu.resetRequired) g.fail("gpu", f, `${where} needs a reset`, gpu.resetRequired);
        if (gpu.recoveryAction) g.fail("gpu", f, `${where}: the driver asks for a recovery action`, gpu.recoveryAction);
        if (gpu.recoveryActionUnknown) g.h.notes.push(`${where}: ${gpu.recoveryActionUnknown} (a recovery action the kit does not know; not graded)`);
        if (gpu.sramThreshold) g.fail("ecc", f, `${where} passed the SRAM error threshold`, gpu.sramThreshold);
        if (gpu.drainRecommended) g.fail("gpu", f, `${where}: drain and reset recommended`, gpu.drainRecommended);
        // source: NVIDIA MIG user guide, "Application Considerations": no GPU-to-GPU P2P (PCIe or NVLink) under MIG
        if (gpu.migMode && /^enabled$/i.test(gpu.migMode)) g.fail("gpu", f, `${where} runs in MIG mode: no NVLink/P2P, NCCL cannot use the whole GPU`, `MIG Mode Current : ${gpu.migMode}`);
        // "HW Slowdown : Active" alone, without its cause (HW Thermal / HW Power Brake), may be reported during a P-state
        // or clock change (NVML nvmlClocksEventReasonHwSlowdown docs): a note; a named cause fails, as a snapshot
        for (const s of gpu.slowdowns) {
            if (/^HW Slowdown\s*:/i.test(s)) g.h.notes.push(`${where}: ${s} without a cause named (may be a clock change; not graded)`);
            else g.fail("clocks", f, `${where} clocks are held down`, s, "transient");
        }
        const p = gpu.pcie;
        // the current width, like the generation, "may be reduced when the GPU is not in use" (nvidia-smi
        // --help-query-gpu, pcie.link.width.current; Max is "possible with this GPU and system configuration", so a
        // narrower slot lowers Max too): graded in P0 only, a note otherwise
        if (p.widthCurrent !== undefined && p.widthMax !== undefined && p.widthCurrent < p.widthMax) {
            if (gpu.performanceState === "P0") g.fail("pcie", f, `${where} PCIe link at x${p.widthCurrent} in P0, capable of x${p.widthMax}`, p.lines.find((l) => /x$/.test(l)));
            else g.h.notes.push(`${where}: PCIe x${p.widthCurrent} of x${p.widthMax} in ${gpu.performanceState ?? "an unknown P-state"} (idle GPUs may narrow the link; not graded)`);
        }
        // GPUs lower the link speed when idle (P8 at Gen1 in the gpud captures): graded only in P0
        if (p.genCurrent !== undefined && p.genMax !== undefined && p.genCurrent < p.genMax) {
            if (gpu.performanceState === "P0") g.fail("pcie", f, `${where} PCIe Gen${p.genCurrent} in P0, capable of Gen${p.genMax}`, p.lines[0]);
            else g.h.notes.push(`${where}: PCIe Gen${p.genCurrent} of Gen${p.genMax} in ${gpu.performanceState ?? "an unknown P-state"} (idle GPUs lower the link speed; not graded)`);
        }
        if (exp.gpuPcie && p.genMax !== undefined && p.genMax < exp.gpuPcie.gen) {
            g.fail("pcie", f, `${where} PCIe link can reach Gen${p.genMax} only; ${exp.gpuModel} is a Gen${exp.gpuPcie.gen} device`, p.lines[1]);
        }
        // a state of N/A, "Not Supported" or "[...]" is no answer (NVML_GPU_FABRIC_STATE_NOT_SUPPORTED; nvidia_gpu_exporter#448
        // maps "Not Supported" to it): not graded; "Not Started" and "In Progress" are Fabric Manager not done
        if (exp.nvswitch && gpu.fabric && !/^(n\/a|not supported|\[.*\])$/i.test((gpu.fabric.state ?? "").trim()) &&
            (!/^completed$/i.test(gpu.fabric.state ?? "") || !/^success$/i.test(gpu.fabric.status ?? ""))) {
            g.fail("nvlink", f, `${where} has not joined the NVLink fabric (Fabric Manager)`, `Fabric ${gpu.fabric.line}`);
        }
        if (exp.nvswitch && gpu.fabricHealth) g.fail("nvlink", f, `${where}: the NVLink fabric reports it unhealthy`, gpu.fabricHealth);
        // the health fields themselves: R570 prints them without a Summary, so a degraded GPU shows only here
        for (const h of exp.nvswitch ? gpu.fabricHealthFields : []) {
            g.fail("nvlink", f, h.transient ? `${where}: the NVLink fabric is rerouting around a failure` : `${where}: the NVLink fabric reports a problem`, h.line,
                h.transient ? "transient" : "persistent");
        }
        if (exp.nvswitch) for (const u of gpu.fabricHealthUnknown) g.h.notes.push(`${where}: ${u} (a value the kit does not know; not graded)`);
    }
    return smi;
}

function gradeNvlink(g: Grader, exp: HealthExpectation): void {
    const f = FILES.nvlink.name;
    const nv = g.read("nvlink", f, parseNvlinkStatus);
    if (!nv) return;
    // the driver unreachable (a version mismatch after an upgrade without a reboot, no device): the GPUs' fault, not NVLink's
    for (const e of nv.errors) g.fail(/^Failed to initialize NVML|^NVIDIA-SMI has failed|^No devices were found/i.test(e) ? "gpu" : "nvlink", f, "nvidia-smi cannot reach the driver", e);
    if (nv.errors.length && nv.gpus.length === 0) return;
    if (nv.gpus.length !== exp.gpus) g.fail("nvlink", f, `NVLink status for ${nv.gpus.length} GPU(s), expected ${exp.gpus} on an NVSwitch board`);
    // a PCIe board (nvidia-smi names it "... PCIe", "A100-PCIE-40GB", "H100 NVL") has no NVSwitch: its NVLink runs over
    // bridges between pairs, and some links are inactive by design (an H100 PCIe pair lists 18 links, 6 <inactive>:
    // HPE-Japan-Presales/e-learning gpu/h100/mgmt_gpu_on_dl380agen11.md; "the H100 PCIE cards only support 12 out of
    // the 18 available links", Azure/azurehpc-health-checks#162). The stack expects an NVSwitch board, so these links
    // are not graded against it: not checked, never failing, never passing
    const bridged = nv.gpus.filter((x) => /\bPCIE\b|\bNVL\b/i.test(x.line));
    if (bridged.length) {
        const name = /^GPU \d+: (.*?) \(UUID/.exec(bridged[0].line)?.[1] ?? "a PCIe GPU";
        g.h.notChecked.push({ component: "nvlink", file: f, reason: `GPU ${bridged.map((x) => x.index).join(", ")}: ${name}, a PCIe board whose NVLink runs over bridges (some links inactive by design), while the stack expects ${exp.gpuModel} on an NVSwitch board: its NVLink links are not graded` });
    }
    // a link trained at a fraction of the others' speed (1.562 of 26.562 GB/s) is as slow as a missing one
    const fastest = Math.max(0, ...nv.gpus.flatMap((x) => x.links.map((l) => l.gbps ?? 0)));
    for (const gpu of nv.gpus) {
        const slow = gpu.links.filter((l) => l.gbps !== undefined && l.gbps < 0.9 * fastest);
        if (slow.length) g.fail("nvlink", f, `GPU ${gpu.index}: ${slow.length} NVLink link(s) below ${fastest} GB/s (${slow.map((l) => `link ${l.id} ${l.gbps}`).join(", ")})`, slow[0].line);
        if (bridged.includes(gpu)) continue;
        if (gpu.allInactive) {
            g.fail("nvlink", f, `GPU ${gpu.index}: every NVLink link is down`, gpu.allInactive);
            continue;
        }
        const down = gpu.links.filter((l) => l.gbps === undefined);
        if (down.length) g.fail("nvlink", f, `GPU ${gpu.index}: ${down.length} NVLink link(s) inactive (${down.map((l) => l.id).join(", ")})`, down[0].line);
        const up = gpu.links.length - down.length;
        if (exp.nvlinkLinks !== undefined && gpu.links.length < exp.nvlinkLinks) {
            g.fail("nvlink", f, `GPU ${gpu.index}: ${gpu.links.length} NVLink links listed, ${exp.gpuModel} has ${exp.nvlinkLinks}`, gpu.line);
        } else if (up === 0 && !down.length) g.fail("nvlink", f, `GPU ${gpu.index}: no NVLink link listed`, gpu.line);
    }
}

function gradeDcgm(g: Grader): void {
    // -j output when the node wrote it, the table otherwise
    const useJson = g.files[FILES.dcgmJson.name] !== undefined;
    const f = useJson ? FILES.dcgmJson.name : FILES.dcgm.name;
    const r: DcgmReport | undefined = g.read("dcgm", f, useJson ? parseDcgmJson : parseDcgmText);
    if (!r) return;
    if (r.error) {
        g.h.notChecked.push({ component: "dcgm", file: f, reason: `dcgmi did not run the diagnostic: ${r.error}` });
        return;
    }
    if (r.tests.length === 0) {
        g.h.notChecked.push({ component: "dcgm", file: f, reason: `${f} holds no test result` });
        return;
    }
    // every test skipped or not run: nothing was tested, which is no pass
    if (r.tests.every((t) => t.status === "skip")) {
        g.h.notChecked.push({ component: "dcgm", file: f, reason: `${f}: every test was skipped or not run (${r.tests.length})` });
        return;
    }
    // only the Deployment (software) checks ran and every test of the GPU itself was skipped (a GPU DCGM does not
    // support, NVIDIA/DCGM#139; an RTX PRO 6000 on DCGM 3.3.9, test/fixtures/health/README.md round 6): the GPU was not
    // tested, which is no pass. A level-1 run (-r 1) holds Deployment tests only and skips none: graded as it is.
    // A Deployment test that failed is still graded: DCGM skips the GPU tests after one (NVIDIA/DCGM nvvs
    // TestFramework: v3.3.9 sets skipRest after a failed test unless configless without --fail-early; 4.x
    // EntitySet::UpdateSkippedEntities skips a GPU with pending row remaps or page retirements for every later test).
    const gpuTests = r.tests.filter((t) => !/^deployment$/i.test(t.category ?? ""));
    const gpuSkipped = gpuTests.length > 0 && gpuTests.every((t) => t.status === "skip");
    if (gpuSkipped) g.h.notChecked.push({ component: "dcgm", file: f, reason: `${f}: every GPU test was skipped (${[...new Set(gpuTests.map((t) => t.name))].join(", ")}); only the Deployment checks ran` });
    for (const t of gpuSkipped ? r.tests.filter((x) => !gpuTests.includes(x)) : r.tests) {
        if (t.status === "fail") g.fail("dcgm", f, `DCGM test "${t.name}" failed`, clip(t.evidence.join("; ")));
        else if (t.status === "warn") g.h.notes.push(`DCGM test "${t.name}" warned: ${clip(t.evidence.join("; "))}`);
        else if (t.status === "skip") g.h.notes.push(`DCGM test "${t.name}" was skipped (not run)`);
        // the diagnostic broke inside the test (DCGM_FR_INTERNAL, dcgm.ts): that test did not check the GPU
        // persistence mode off (DCGM_FR_PERSISTENCE_MODE): a setting, a warning since DCGM 3.2.5 (dcgm.ts)
        else if (t.status === "persistence") g.h.notes.push(`DCGM test "${t.name}" failed only because persistence mode is off (DCGM_FR_PERSISTENCE_MODE, severity DCGM_ERROR_CONFIG; DCGM 3.2.5 and later report it as Warn): a setting, not a GPU fault; enable it with nvidia-smi -pm 1 (${clip(t.evidence.join("; "), 200)})`);
        else if (t.status === "internal") g.h.notChecked.push({ component: "dcgm", file: f, reason: `DCGM test "${t.name}" did not complete: dcgmi reports an internal error of the diagnostic, not of a GPU (${clip(t.evidence.join("; "), 200)})` });
    }
}

/** Per PCI function (functionKey), the RDMA devices on it, and which device names are the stack's rails. */
interface RailMap { byFunction: Map<string, string[]>; rails: Set<string> }

/**
 * Which Mellanox functions are RDMA rails. lspci names a function's model, never its role: a ConnectX-6 Dx for
 * storage, a BlueField's or a ConnectX-7's Ethernet port on the front-end network, a management function sit beside
 * the rails. The rails are the RDMA devices the stack names (RoCE railNics; Azure's catalog names) where the kernel
 * lists them, else (InfiniBand) those whose ibstat link layer is the fabric's; rdma-devices.txt says which function
 * each device is on. Without it, or without ibstat where the link layer decides, no NIC link can be attributed:
 * "not checked", never a guess.
 */
function railMap(g: Grader, exp: HealthExpectation): RailMap | undefined {
    const f = FILES.rdmaDevices.name;
    const text = g.files[f];
    if (text === undefined) {
        g.h.notChecked.push({ component: "pcie", file: f, reason: `${f} is missing (${FILES.rdmaDevices.command}): which Mellanox functions are RDMA rails is unknown, so no RDMA NIC's PCIe link is graded` });
        return undefined;
    }
    let devices: Map<string, string | undefined>;
    try {
        devices = parseRdmaDevices(text).devices;
    } catch (e) {
        if (!(e instanceof HealthParseError)) throw e;
        g.h.unreadable.push({ file: f, reason: e.message });
        return undefined;
    }
    const byFunction = new Map<string, string[]>();
    for (const [name, bdf] of devices) if (bdf) byFunction.set(functionKey(bdf), [...(byFunction.get(functionKey(bdf)) ?? []), name]);
    // ibstat read quietly here: gradeIbstat reports its problems
    let ib: ReturnType<typeof parseIbstat> | undefined;
    try {
        ib = g.files[FILES.ibstat.name] === undefined ? undefined : parseIbstat(g.files[FILES.ibstat.name]!);
    } catch (e) {
        if (!(e instanceof HealthParseError)) throw e;
    }
    const present = exp.nics.names.filter((n) => devices.has(n));
    let rails: string[];
    if (exp.nics.names.length > 0 && (present.length > 0 || exp.fabric === "roce")) rails = exp.nics.names;
    else if (ib) rails = ib.cas.filter((c) => c.ports.some((p) => p.linkLayer === exp.nics.linkLayer)).map((c) => c.name);
    else {
        g.h.notChecked.push({ component: "pcie", file: f, reason: `which RDMA devices are ${exp.nics.linkLayer} rails needs a readable ${FILES.ibstat.name}: no RDMA NIC's PCIe link is graded` });
        return undefined;
    }
    // a rail ibstat lists that the map does not place: the two captures disagree, its link cannot be attributed (a rail
    // in neither is missing, which gradeIbstat fails)
    const unplaced = rails.filter((n) => !devices.get(n) && ib?.cas.some((c) => c.name === n));
    if (unplaced.length) {
        g.h.notChecked.push({ component: "pcie", file: f, reason: `${f} places no PCI function for ${unplaced.join(", ")}, which ${FILES.ibstat.name} lists: ${unplaced.length === 1 ? "its" : "their"} PCIe link is not graded` });
    }
    return { byFunction, rails: new Set(rails) };
}

/** The rail on a Mellanox function; else undefined, with the function and what is on it added to `others`. */
function railOf(map: RailMap, d: PciDevice, model: string | undefined, others: string[]): string | undefined {
    const names = map.byFunction.get(functionKey(d.bdf)) ?? [];
    const rail = names.find((n) => map.rails.has(n));
    if (!rail) others.push(`${d.bdf} (${[model, names.length ? names.join(", ") : "no RDMA device"].filter(Boolean).join(", ")})`);
    return rail;
}

/** A link's rate as lspci gave it: "32GT/s", or "an unknown rate" where this pciutils could not name it. */
const gtsText = (l: PcieLink): string => (l.gts !== undefined ? `${l.gts}GT/s` : "an unknown rate");

function gradeLspci(g: Grader, exp: HealthExpectation, smi: SmiReport | undefined): void {
    const f = FILES.lspci.name;
    const r = g.read("pcie", f, parseLspci);
    if (!r) return;
    // AWS's rails are EFA devices: a Mellanox function there is never one
    const map = !r.devices.some((d) => d.kind === "nic") ? undefined
        : exp.fabric === "aws-efa" ? { byFunction: new Map<string, string[]>(), rails: new Set<string>() } : railMap(g, exp);
    const others: string[] = [];
    // the GPUs and rails the ACS check looks at (gradeAcs)
    const peers: AcsPeer[] = [];
    const gpus = r.devices.filter((d) => d.kind === "gpu" && !d.virtualFunction);
    if (gpus.length < exp.gpus) g.fail("gpu", f, `lspci lists ${gpus.length} GPU(s), expected ${exp.gpus} (${exp.hostType}): missing from the bus`);
    if (r.devices.some((d) => d.accessDenied && !d.sta)) {
        g.h.notChecked.push({ component: "pcie", file: f, reason: "lspci ran without root (\"Capabilities: <access denied>\"): no link status to grade" });
    }
    const pstate = new Map((smi?.gpus ?? []).map((x) => [shortBdf(x.busId), x.performanceState]));
    for (const d of r.devices) {
        const name = d.kind === "gpu" ? "GPU" : d.kind === "efa" ? "EFA device" : "RDMA NIC";
        const model = /\[([^\]]+)\]\s*(?:\(rev [0-9a-f]+\))?$/i.exec(d.line)?.[1];
        let rail: string | undefined;
        if (d.kind === "nic") {
            // no map: "not checked" was recorded; a function that is no rail is in one note, whatever its link
            if (!map || !(rail = railOf(map, d, model, others))) continue;
        }
        // config reads answered with all ones: the function no longer answers on its link (a GPU as Xid 79 "fallen off
        // the bus"; the kernel keeps listing it). A GPU fails on gpu, an RDMA NIC or EFA device on nic.
        if (d.revFF || d.offBus) {
            const how = d.revFF ? "(rev ff)" : `(${d.offBus!.slice(d.bdf.length + 1)})`;
            g.fail(d.kind === "gpu" ? "gpu" : "nic", f, `${name} ${d.bdf}${model ? ` (${model})` : ""}${rail ? ` (rail ${rail})` : ""} answers config reads with all ones ${how}: fallen off the bus`, d.revFF ? d.line : d.offBus);
            continue;
        }
        if (exp.fabric === "roce" && !d.virtualFunction) peers.push({ who: `${name} ${d.bdf}${rail ? ` (rail ${rail})` : ""}`, kind: d.kind, ats: d.ats, path: d.path });
        const { cap, sta } = d;
        const who = `${name} ${d.bdf}${model ? ` (${model})` : ""}`;
        // an SR-IOV virtual function's link fields are not its own (the PF's link; PCIe SR-IOV spec): Azure's IB VFs
        if (d.virtualFunction) continue;
        // no link to read (a hypervisor that hides the Express capability, lspci -v without the second v): never a pass
        if (d.uncorrectable) g.h.notes.push(`${who}: AER shows an uncorrectable error logged (sticky until cleared; see the kernel log): ${d.uncorrectable}`);
        if ((!cap?.width || sta?.width === undefined) && !d.accessDenied) {
            g.h.notChecked.push({ component: "pcie", file: f, reason: `${who} shows no ${!cap?.width ? "LnkCap" : "LnkSta"} width (lspci -vv as root prints both for a PCIe device): its link is not checked` });
        }
        if (!cap || !sta || sta.width === undefined || !cap.width) continue;
        // "Width x0" (pciutils prints the negotiated width field as read) on a function that answers config reads: those
        // reads travel over that very link (PCIe Base spec: configuration requests are TLPs), so it is up; a function whose
        // link is down is not listed or answers all ones (rev ff, above). x0 here is a Link Status that is not this
        // function's own: an SR-IOV VF whose name does not say so (its LnkSta is reserved, reads 0: the VF in the kvm list
        // mail, test/fixtures/health/README.md) or a hypervisor's copy of the register. Never failing, never passing.
        if (sta.width === 0) {
            g.h.notChecked.push({ component: "pcie", file: f, reason: `${who} shows LnkSta width x0 (capable of x${cap.width})${rail ? ` (rail ${rail})` : ""} while it answers config reads, which cross its link: the register is not its own link's (an SR-IOV virtual function, or a hypervisor's copy), so its link is not checked` });
            continue;
        }
        let narrow = sta.width < cap.width;
        // where one side is a rate this pciutils cannot name, its own "(downgraded)" marker (a comparison of the raw
        // codes) decides; with neither numbers nor a marker (pciutils before 3.6) the speed is not compared: a note
        const comparable = sta.gts !== undefined && cap.gts !== undefined;
        let slow = comparable ? sta.gts! < cap.gts! : sta.speedDowngraded === true;
        // Link training settles on the highest rate and width both ends support (PCI Express Base Specification,
        // Physical Layer Logical Block, LTSSM), while lspci's LnkCap and "(downgraded)" are the function's own (pciutils
        // ls-caps.c link_compare reads LnkSta against the same function's LnkCap): a Gen5 x16 card in a Gen4 or x8 slot
        // trains at what the slot can do, by design. Where the port above it is listed and the link trained at exactly
        // that port's own capability, the slot sets the link: a note, not a fault of the card or its link.
        const up = d.upstream;
        const slotSpeed = slow && comparable && up?.gts !== undefined && sta.gts === up.gts && up.gts < cap.gts!;
        const slotWidth = narrow && up?.width !== undefined && sta.width === up.width && up.width < cap.width;
        if (up && (slotSpeed || slotWidth) && (!slow || slotSpeed) && (!narrow || slotWidth)) {
            g.h.notes.push(`${who}: trained at ${gtsText(sta)} x${sta.width}, capable of ${gtsText(cap)} x${cap.width}; the port above it (${up.bdf}) can do ${gtsText(up)} x${up.width ?? "?"}, so the slot sets the link (not graded)`);
            slow = narrow = false;
        }
        if (!comparable && !sta.speedDowngraded && (sta.speedUnknown || cap.speedUnknown) && !(sta.speedUnknown && cap.speedUnknown) && !/\((ok|downgraded)\)/.test(sta.line)) {
            g.h.notes.push(`${who}: link speed not compared (this lspci prints "Speed unknown" for a rate it does not know and marks no downgrade): ${sta.line.replace(/\s+/g, " ")}`);
        }
        // a GPU's link speed and width "may be reduced when the GPU is not in use" (nvidia-smi --help-query-gpu,
        // pcie.link.gen.current and pcie.link.width.current): LnkSta shows the same link, so both are graded in P0 only,
        // as gradeSmi grades nvidia-smi's own Current/Max
        if ((slow || narrow) && d.kind === "gpu" && pstate.get(shortBdf(d.bdf)) !== "P0") {
            const ps = pstate.get(shortBdf(d.bdf));
            const what = [slow ? `${gtsText(sta)} of ${gtsText(cap)}` : "", narrow ? `x${sta.width} of x${cap.width}` : ""].filter(Boolean).join(", ");
            g.h.notes.push(`${who}: ${what} while ${ps ?? "its P-state is unknown"} (idle GPUs may lower the link speed and width; not graded)`);
            slow = narrow = false;
        }
        if (narrow || slow) {
            const at = `${gtsText(sta)} x${sta.width}`;
            g.fail("pcie", f, `${who} link trained at ${at}, capable of ${gtsText(cap)} x${cap.width}${rail ? ` (rail ${rail})` : ""}`, sta.line.replace(/\s+/g, " "));
        }
        if (d.kind === "gpu" && exp.gpuPcie && cap.gts !== undefined) {
            const want = PCIE_GTS[exp.gpuPcie.gen];
            if (cap.gts < want || cap.width < exp.gpuPcie.width) {
                g.fail("pcie", f, `${who} capable of Gen${pcieGen(cap.gts) ?? "?"} x${cap.width} only; ${exp.gpuModel} is Gen${exp.gpuPcie.gen} x${exp.gpuPcie.width}`, cap.line.replace(/\s+/g, " "));
            }
        }
    }
    if (others.length) g.h.notes.push(`Mellanox functions that are no RDMA rail of the stack, their PCIe links not graded: ${others.join("; ")}`);
    // a port that answers all ones cannot pass anything to the devices below it; each GPU or rail there is graded on its own
    const dark = r.bridges.filter((b) => b.offBus);
    if (dark.length) g.h.notes.push(`PCI bridge(s) answering config reads with all ones (off the bus; whatever sits below cannot be reached): ${dark.slice(0, 8).map((b) => `${b.bdf} (${b.offBus})`).join("; ")}${dark.length > 8 ? `; ${dark.length - 8} more` : ""}`);
    gradeAcs(g, f, peers);
}

/** A GPU or rail as the ACS check sees it: what to call it, its kind, its ATS control, the bridges above it. */
interface AcsPeer { who: string; kind: PciDevice["kind"]; ats?: boolean; path: PciBridge[] }

/**
 * PCIe Access Control Services on bare metal. NCCL's troubleshooting guide ("PCI Access Control Services (ACS)",
 * docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html, Baremetal systems): IO virtualization "can
 * interfere with GPU Direct by redirecting all PCI point-to-point traffic to the CPU root complex, causing a significant
 * performance reduction or even a hang ... If PCI switches have ACS enabled, it needs to be disabled"; in a virtual
 * machine "ACS is needed" and disabling it is not an option, so only the bare-metal (RoCE) stack grades it.
 * What redirects is ACS P2P Request Redirect (PCIe Base spec, ACS Control register; lspci "ReqRedir+"), set on a switch's
 * downstream port (lspci "Express ... Downstream Port"): a peer request from the GPU or NIC below goes up to the root
 * complex instead of across the switch. "SrcValid+" alone (Source Validation) checks the requester ID and redirects
 * nothing; a root port's redirect is not between two devices of one switch. Both stay ungraded. A healthy HGX H100
 * (leptonai/gpud testdata lspci-vvv) shows its Broadcom switch ports all "-", and a PMC-Sierra storage switch beside
 * them with ReqRedir+, above no GPU and no NIC.
 * Linux sets the redirect itself on every ACS-capable port whenever an IOMMU is on, passthrough (iommu=pt) included:
 * detect_intel_iommu (drivers/iommu/intel/dmar.c) and detect_ivrs (drivers/iommu/amd/init.c) call pci_request_acs(),
 * and pci_std_enable_acs (drivers/pci/pci.c) then sets Source Validation, Request and Completion Redirect and Upstream
 * Forwarding, again in pci_restore_state. A setpci write therefore lasts until the next boot (NVIDIA/nccl#304, the fix
 * confirmed there: "the mitigation needs to be reapplied after a reboot"); what lasts is the IOMMU off (BIOS, NCCL's words) or the kernel parameter
 * pci=disable_acs_redir=<port> (Documentation/admin-guide/kernel-parameters.txt: "the PCI ACS redirect capabilities
 * forced off which will allow P2P traffic between devices through bridges without forcing it upstream").
 * What a redirect costs: traffic between the devices below the port and the GPUs and rails below the switch's other
 * ports. A port above the only GPU or rail of its switch changes no path NCCL uses (GPU-NIC traffic to another switch
 * crosses the root complex anyway): a note. Where the switch above it is not listed, it is graded as before.
 * Direct Translated P2P (DirectTrans+) beside the redirect lets ATS-translated requests go straight across; NVIDIA's
 * ATS/ACS setting for ConnectX-8 (NVIDIA AI Enterprise, "ATS and ACS configuration": "ATS must be enabled on the NIC,
 * and ACS on the PCIe switches and root ports must be configured to allow ATS") relies on it: a note where every rail
 * below has ATS on (ATSCtl Enable+); a rail without it sends untranslated requests, which are still redirected.
 */
function gradeAcs(g: Grader, f: string, peers: AcsPeer[]): void {
    const ports = new Map<string, { port: PciBridge; up?: PciBridge; below: AcsPeer[] }>();
    for (const p of peers) {
        p.path.forEach((b, i) => {
            if (b.port !== "Downstream Port" || !b.acsCtl || !/\bReqRedir\+/.test(b.acsCtl)) return;
            const hit = ports.get(b.bdf) ?? { port: b, up: p.path[i + 1], below: [] };
            hit.below.push(p);
            ports.set(b.bdf, hit);
        });
    }
    for (const [bdf, { port, up, below }] of ports) {
        const names = below.map((p) => p.who).join(", ");
        // the GPUs and rails below the same switch's other ports, where lspci lists that switch's upstream port
        const across = up?.port === "Upstream Port" ? peers.filter((p) => p.path.includes(up) && !p.path.includes(port)) : undefined;
        if (across && across.length === 0) {
            g.h.notes.push(`PCIe ACS redirect at switch port ${bdf} above ${names}, but no other GPU or rail sits below switch ${up!.bdf}: their traffic crosses the root complex either way, not graded (${port.acsCtl})`);
            continue;
        }
        const noAts = below.filter((p) => p.kind !== "gpu" && p.ats !== true);
        if (/\bDirectTrans\+/.test(port.acsCtl ?? "") && noAts.length === 0) {
            g.h.notes.push(`PCIe ACS redirect at switch port ${bdf} above ${names} with Direct Translated P2P on and ATS on at the rails below (ATS-translated peer traffic stays on the switch; not graded): ${port.acsCtl}`);
            continue;
        }
        const withAts = /\bDirectTrans\+/.test(port.acsCtl ?? "")
            ? ` (DirectTrans+ passes only ATS-translated requests, and ATS is off at ${noAts.map((p) => p.who).join(", ")}: NVIDIA, "ATS must be enabled on the NIC")` : "";
        const peerNames = across ? ` and ${across.slice(0, 4).map((p) => p.who).join(", ")}${across.length > 4 ? ` and ${across.length - 4} more` : ""}` : "";
        g.fail("pcie", f, `PCIe ACS redirects peer-to-peer requests at switch port ${bdf} above ${names} (ReqRedir+)${withAts}: GPUDirect P2P and RDMA traffic between them${peerNames} is sent up to the root complex (NCCL, bare metal: "If PCI switches have ACS enabled, it needs to be disabled"). Linux turns it on at boot whenever an IOMMU is on, iommu=pt too: turn IO virtualization / VT-d off in the BIOS or boot with pci=disable_acs_redir=${bdf}; setpci -s ${bdf} ECAP_ACS+0x6.w=0000 (that port's ACS Control register) clears it only until the next reboot`, port.acsCtl);
    }
}

function gradeIbstat(g: Grader, exp: HealthExpectation): void {
    const f = FILES.ibstat.name;
    const r = g.read("nic", f, parseIbstat);
    if (!r) return;
    const ports = r.cas.flatMap((c) => c.ports);
    // RoCE rails are named by the spec (railNics: the kernel's names), so a missing name is a missing rail, never made up
    // by other Ethernet ports (BlueField or storage NICs); Azure's IB names come from the catalog and may be spelled
    // otherwise by the kernel: only when none of them is present are the InfiniBand ports counted instead
    const present = exp.nics.names.filter((n) => r.cas.some((c) => c.name === n));
    const byName = exp.nics.names.length > 0 && (present.length > 0 || exp.fabric === "roce");
    const graded = byName ? ports.filter((p) => present.includes(p.ca)) : ports.filter((p) => p.linkLayer === exp.nics.linkLayer);
    // ibstat without arguments stops at the first device it cannot open (ibpanic, "stat of IB device '<name>' failed";
    // rdma-core v54.0+ warns with ibwarn and goes on): on Azure that is the Accelerated Networking VF mlx5_an0, an
    // Ethernet function beside the IB HCAs, on a healthy VM (Azure/azhpc-images#213, Azure/azhpc-diagnostics#59). A device
    // that is not a rail of the stack says nothing about the rails: the devices a panic kept ibstat from listing are not
    // checked, never missing; a named rail that could not be read fails.
    // A panic stopped ibstat only where no device it lists sorts after the one it panicked at: ibstat walks the devices
    // in strcmp order of their names (libibumad umad_sort_ca_device_list, rdma-core v30.0+, commit b51b4cef6), and
    // the kit asks each device on its own (`ibstat -l`, then `ibstat <ca>`: infiniband-diags/ibstat.c main, a device
    // argument stats that one only), where a panic ends that device's ibstat alone and the devices after it are
    // listed. (A plain ibstat of rdma-core v26-v29 walked readdir's order; such a capture may be read as not stopped.)
    const listedAfter = (device: string): boolean => r.cas.some((c) => c.name > device);
    const failed = r.errors.map((e) => {
        const device = /stat of IB device '([^']+)' failed/.exec(e)?.[1];
        return { line: e, device, stopped: /^ibpanic:/.test(e) && device !== undefined && !listedAfter(device) };
    });
    // the tool's own answer that the kernel lists no RDMA device at all (ibstat.ts noDevice): a failure, not a stop
    if (r.noDevice) {
        g.fail("nic", f, `no RDMA device: ${r.tool} found none, expected ${exp.nics.count}`, r.noDevice);
        return;
    }
    for (const e of failed) {
        if (e.device === undefined || exp.nics.names.includes(e.device)) g.fail("nic", f, `${r.tool} could not read a device`, e.line);
        else g.h.notes.push(`ibstat ${e.stopped ? "stopped at" : "could not read"} ${e.device}, which is no RDMA rail of the stack (Azure's Accelerated Networking VF mlx5_an0 is one such device): ${e.line}`);
    }
    const stoppedAt = failed.find((e) => e.stopped && !exp.nics.names.includes(e.device ?? ""))?.device;
    // hidden: the stop explains every missing device (names: each sorts after it, so ibstat would have listed it next)
    const short = (what: string, hidden = true): void => {
        if (stoppedAt && hidden) g.h.notChecked.push({ component: "nic", file: f, reason: `${what}, and ibstat stopped at ${stoppedAt} before listing the rest: they are not checked (ibstat <device> per rail reads each one)` });
        else g.fail("nic", f, what);
    };
    // cut inside a device: that device is not checked, nor is how many there are (the rest may be missing only from the file)
    // (the devices before the cut are still graded below)
    if (r.cut) g.h.notChecked.push({ component: "nic", file: f, reason: `${f} stops inside a device (${r.cut}): cut short, so that device and the device count are not checked` });
    else if (byName) {
        const missing = exp.nics.names.filter((n) => !present.includes(n));
        if (missing.length) short(`RDMA device(s) ${missing.join(", ")} missing: ${present.length} of the ${exp.nics.names.length} expected are listed`, missing.every((n) => stoppedAt !== undefined && n > stoppedAt));
    } else {
        const have = new Set(graded.map((p) => p.ca)).size;
        if (have < exp.nics.count) short(`${have} ${exp.nics.linkLayer} RDMA device(s), expected ${exp.nics.count}`);
    }
    // the stack counts rails as devices (exp.nics.names / count, as `have` above): a device with several ports (mlx4 lists
    // both ports of a dual-port ConnectX-3 under one CA, ibstat.c ca_dump; so does ibv_devinfo) is one rail where one port
    // is up. A port that is Down beside an Active port of the same device is a port left uncabled by design, whatever its
    // link layer (a VPI card's second port set to Ethernet): a note, never failing. A port that is cabled and not Active
    // (Initializing, Armed) still fails, and a device with no Active port fails on each port as before.
    const activeCas = new Set(graded.filter((p) => p.state === "Active").map((p) => p.ca));
    const unused = graded.filter((p) => p.state === "Down" && activeCas.has(p.ca));
    if (unused.length) g.h.notes.push(`${unused.map((p) => `${p.ca} port ${p.port}`).join(", ")} Down beside an Active port of the same device (a second port left uncabled; the stack counts each device as one rail): not graded`);
    for (const p of graded) {
        const id = `${p.ca} port ${p.port}`;
        // a port without its State line (the last of a cut capture): not checked, never read as down or as up
        if (p.state === undefined || unused.includes(p)) continue;
        if (p.linkLayer && p.linkLayer !== exp.nics.linkLayer) g.fail("nic", f, `${id} has link layer ${p.linkLayer}, expected ${exp.nics.linkLayer}`, p.lines.linkLayer);
        if (p.state !== "Active") g.fail("nic", f, `${id} is ${p.state}, expected Active`, p.lines.state);
        else if (p.physicalState !== undefined && p.physicalState !== "LinkUp") g.fail("nic", f, `${id} physical state ${p.physicalState}, expected LinkUp`, p.lines.physicalState);
        if (exp.nics.rateGbps !== undefined && p.rate !== undefined && p.state === "Active" && p.rate < exp.nics.rateGbps) {
            g.fail("nic", f, `${id} at ${p.rate} Gb/s, expected ${exp.nics.rateGbps} Gb/s`, p.lines.rate);
        }
        // rdma-core 2026+ ibstat's "Effective speed" counts PCIe limits and LAG: below the rate is worth a look, not a failure
        if (p.effective && p.rate !== undefined && p.state === "Active" && p.effective.gbps < p.rate) g.h.notes.push(`${id}: effective speed ${p.effective.gbps} Gb/s below its rate ${p.rate} (${p.effective.line})`);
    }
    // ibv_devinfo without -v prints no active_width / active_speed (devinfo.c prints them under -v only)
    const unrated = graded.filter((p) => p.state === "Active" && p.rate === undefined).map((p) => `${p.ca} port ${p.port}`);
    if (exp.nics.rateGbps !== undefined && unrated.length) {
        g.h.notChecked.push({ component: "nic", file: f, reason: `${unrated.join(", ")} show${unrated.length === 1 ? "s" : ""} no rate (${r.tool === "ibv_devinfo" ? "ibv_devinfo prints active_width and active_speed only with -v" : "no \"Rate:\" line"}): the link rate is not checked` });
    }
}

function gradeFiInfo(g: Grader, exp: HealthExpectation): void {
    const f = FILES.fiInfo.name;
    const r = g.read("nic", f, parseFiInfo);
    if (!r) return;
    if (r.devices.length < exp.nics.count) {
        g.fail("nic", f, `${r.devices.length} EFA device(s), expected ${exp.nics.count} (${exp.hostType})`, r.errors[0]);
    }
}

/** GPUs whose current state (nvidia-smi -q) asks for action, by shortBdf key, with the line that says so. */
function gpusNeedingAction(smi: SmiReport | undefined): Map<string, string> {
    const out = new Map<string, string>();
    for (const gpu of smi?.gpus ?? []) {
        const line = gpu.resetRequired ?? gpu.drainRecommended ?? gpu.recoveryAction ?? gpu.remapPending ?? gpu.retiredPending ?? gpu.repairPending[0];
        if (line) out.set(shortBdf(gpu.busId), line);
    }
    return out;
}

/**
 * A kernel-log event against the Xid window, its age taken from the newest line of the same clock: within it (or
 * without a time, so not shown to be old) the text a transient finding carries after the event, past it the text of
 * the note.
 */
function byWindow(time: LogTime | undefined, r: DmesgReport, windowS: number): { within: boolean; text: string } {
    const newest = time ? r.newest[time.kind] : undefined;
    if (!time || newest === undefined) return { within: true, text: " (the line has no time: cannot show it is old)" };
    const ageS = newest - time.s;
    const min = `${Math.round(ageS / 60)} min before the log's last line`;
    return ageS <= windowS ? { within: true, text: `, ${min} (window ${windowS / 60} min)` } : { within: false, text: `: ${min}, past the ${windowS / 60} min window` };
}

/**
 * Xids: NVIDIA's catalog decides whether a code needs the node's owner (catalog/xid.ts); one that does fails the
 * node while the GPU's state still asks for action (persistent), or when it was logged within the window before the
 * log's newest line (transient: the state does not confirm it), or when its time cannot be read (no prefix). Older
 * ones with a clean state, and every "restart the app" / "ignore" / unknown code, are notes.
 */
function gradeDmesg(g: Grader, exp: HealthExpectation, smi: SmiReport | undefined): void {
    const f = FILES.dmesg.name;
    // the kernel log is the only source of NVSwitch SXids: where it is not read, they are not checked on NVSwitch boards
    const sxidsNotChecked = (reason: string): void => {
        if (exp.nvswitch) g.h.notChecked.push({ component: "nvswitch", file: f, reason: `${reason}: no NVSwitch SXid could be read` });
    };
    const r = g.read("xid", f, parseDmesg);
    if (!r) {
        if (g.files[f] === undefined) sxidsNotChecked(`${f} is missing`);
        return;
    }
    if (r.denied) {
        g.h.notChecked.push({ component: "xid", file: f, reason: `the kernel log could not be read: ${r.denied}` });
        sxidsNotChecked(`the kernel log could not be read (${r.denied})`);
        return;
    }
    if (r.lines === 0) {
        g.h.notChecked.push({ component: "xid", file: f, reason: `${f} is empty (dmesg needs root where kernel.dmesg_restrict=1)` });
        sxidsNotChecked(`${f} is empty`);
        return;
    }
    const windowS = (exp.xidWindowMinutes ?? XID_WINDOW_MINUTES) * 60;
    const state = gpusNeedingAction(smi);
    const seen = new Set<string>();
    // an Xid 45 (preemptive cleanup) names the Xid that caused it: kernel_rc.c appends " caused by previous Xid %d"
    // (NVIDIA/open-gpu-kernel-modules@df1c9a3d). Where the log no longer holds that Xid's own line for the GPU (the ring
    // wrapped, or the capture is a grep), the named code is judged from the Xid 45 line, which carries no severity word
    const direct = new Set(r.xids.map((x) => `${shortBdf(x.pci)}/${x.code}`));
    const named = r.xids.flatMap((x) => {
        const m = x.code === 45 ? /caused by previous Xid (\d+)\b/.exec(x.line) : null;
        return m && !direct.has(`${shortBdf(x.pci)}/${m[1]}`) ? [{ ...x, code: Number(m[1]), via45: true }] : [];
    });
    // newest first: the most recent occurrence of a code on a GPU decides
    for (const x of [...r.xids.map((e) => ({ ...e, via45: false })), ...named].reverse()) {
        const key = `${shortBdf(x.pci)}/${x.gpuInstance ?? ""}/${x.code}`;
        if (seen.has(key)) continue;
        seen.add(key);
        const info = xidInfo(x.code);
        const gpu = `GPU ${x.pci}${x.gpuInstance ? ` ${x.gpuInstance}` : ""}`;
        const what = `Xid ${x.code} (${info.meaning}) on ${gpu}${x.via45 ? " (named by an Xid 45 line; its own line is not in the log)" : ""}`;
        if (!exp.nvidia || !xidNeedsOwner(x.code, x.line)) {
            g.h.notes.push(`${what}: NVIDIA's catalog says ${info.resolution ? info.resolution.toLowerCase().replace(/_/g, " ") : "nothing (not listed)"}; not graded`);
            continue;
        }
        const stateLine = state.get(shortBdf(x.pci));
        const age = byWindow(x.time, r, windowS);
        if (stateLine) g.fail("xid", f, `${what}; the GPU still asks for action (${stateLine})`, clip(x.line), "persistent");
        else if (age.within) g.fail("xid", f, `${what}${age.text}`, clip(x.line), "transient");
        else g.h.notes.push(`${what}${age.text}, and the GPU's state asks for nothing`);
    }
    // a GPU lost without an Xid line (at probe, or with the Xid suppressed): judged as the Xid 79 it stands for, once a
    // GPU, and not at all where an Xid 79 of that GPU was graded above
    const lostSeen = new Set(r.xids.filter((x) => x.code === 79).map((x) => shortBdf(x.pci)));
    // a GPU the driver refused as unsupported: its probe failure is that refusal, not a GPU lost
    gradeRefused(g, exp, r, smi, windowS);
    for (const x of r.refused) lostSeen.add(shortBdf(x.pci));
    for (const x of [...r.lost].reverse()) {
        const key = shortBdf(x.pci);
        if (lostSeen.has(key)) continue;
        lostSeen.add(key);
        const what = `GPU ${x.pci} lost by the driver (fallen off the bus or not initialised; what Xid 79 reports)`;
        const age = byWindow(x.time, r, windowS);
        const stateLine = state.get(key);
        if (!exp.nvidia) g.h.notes.push(`${what}: not an NVIDIA stack; not graded`);
        else if (stateLine) g.fail("gpu", f, `${what}; the GPU still asks for action (${stateLine})`, clip(x.line), "persistent");
        else if (age.within) g.fail("gpu", f, `${what}${age.text}`, clip(x.line), "transient");
        else g.h.notes.push(`${what}${age.text}, and the GPU's state asks for nothing`);
    }
    // PCIe AER (drivers/pci/pcie/aer.c): corrected errors are retried by the link and routine on Gen5; uncorrected ones fail
    const aer = r.aer.filter((a) => a.severity === "uncorrected");
    for (const a of aer.slice(0, 5)) g.fail(/mlx5|mlx4/.test(a.device) ? "nic" : /nvidia/.test(a.device) ? "gpu" : "pcie", f, `uncorrected PCIe error on ${a.device}`, clip(a.line), "transient");
    const corrected = r.aer.length - aer.length;
    if (corrected) g.h.notes.push(`${corrected} corrected PCIe AER error line(s) (the link retried them; not graded): ${clip(r.aer.find((a) => a.severity === "corrected")!.line, 160)}`);
    // one finding per device ("mlx5_core 0000:61:00.0", the driver's dev_err prefix), its first line as evidence
    const byDevice = new Map<string, string[]>();
    for (const e of r.mlx5Errors) {
        const dev = /mlx5_core [0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]/.exec(e)?.[0] ?? "mlx5_core";
        byDevice.set(dev, [...(byDevice.get(dev) ?? []), e]);
    }
    for (const [dev, lines] of [...byDevice].slice(0, 5)) {
        g.fail("nic", f, `mlx5 driver error on ${dev}${lines.length > 1 ? ` (${lines.length} lines)` : ""}`, clip(lines[0]), "transient");
    }
    gradeGspTimeouts(g, exp, r, windowS);
    gradeSxids(g, exp, r, windowS);
}

/**
 * A "GSP Timeout" banner is what Xid 119 reports (the driver logs the Xid line after it): graded above through that line,
 * which names the GPU's bus. Where the log holds the banner but no Xid 119/120 (cut short, a grep, or the 595 driver's
 * Xid 175 MEMORY_SUBSYSTEM_ERROR, which the catalog does not list), the newest banner is judged as Xid 119 of the GPU
 * the driver numbers (RESET_GPU: within the window a failure, older a note); a falcon core dump without any banner or
 * Xid names nothing to grade and is shown.
 */
function gradeGspTimeouts(g: Grader, exp: HealthExpectation, r: DmesgReport, windowS: number): void {
    const f = FILES.dmesg.name;
    if (r.xids.some((x) => x.code === 119 || x.code === 120)) return;
    const t = r.gspTimeouts.at(-1);
    if (!t) {
        if (r.gspDump) g.h.notes.push(`the driver dumped the GSP's falcon (${clip(r.gspDump, 160)}) but the log holds no GSP timeout banner or Xid 119/120 line naming a GPU (cut short?); not graded`);
        return;
    }
    const what = `GSP timeout (what Xid 119 reports) on ${t.instance ? `driver GPU instance ${t.instance.slice(3)}` : "a GPU the line does not name"}; the log holds no Xid 119 line naming its bus`;
    const age = byWindow(t.time, r, windowS);
    if (!exp.nvidia) g.h.notes.push(`${what}: not an NVIDIA stack; not graded`);
    else if (age.within) g.fail("xid", f, `${what}${age.text}`, clip(t.line), "transient");
    else g.h.notes.push(`${what}${age.text}; not graded`);
}

/**
 * GPUs the loaded driver refused (not supported by this release or by the open module; a legacy GPU). Where nvidia-smi
 * shows every GPU the node should have, the refused one is not among them (an extra card): a note. Otherwise it may be
 * one of them, and the node fails on it like on a GPU lost at probe, naming the driver's reason: within the Xid window
 * or without a time transient, older a note (nvidia-smi's GPU count is what shows the GPU missing now).
 */
function gradeRefused(g: Grader, exp: HealthExpectation, r: DmesgReport, smi: SmiReport | undefined, windowS: number): void {
    const f = FILES.dmesg.name;
    const seen = new Set<string>();
    for (const x of [...r.refused].reverse()) {
        const key = shortBdf(x.pci);
        if (seen.has(key)) continue;
        seen.add(key);
        const what = `GPU ${x.pci}${x.pciId ? ` (PCI ID ${x.pciId})` : ""} refused by the driver: ${x.reason}`;
        const age = byWindow(x.time, r, windowS);
        if (!exp.nvidia) g.h.notes.push(`${what}: not an NVIDIA stack; not graded`);
        else if (smi !== undefined && smi.gpus.length >= exp.gpus) g.h.notes.push(`${what}; nvidia-smi shows the ${exp.gpus} GPU(s) the node should have, so it is another card`);
        else if (age.within) g.fail("gpu", f, `${what}${age.text}`, clip(x.line), "transient");
        else g.h.notes.push(`${what}${age.text}`);
    }
}

// SXid (switch, code) pairs listed one by one, of each kind (findings, notes); past this a log of many switches and
// codes is summed up in one note (a failing pair is never dropped unseen: the node already fails on the first 20)
const SXID_LISTED = 20;

function guideSays(info: SxidInfo): string {
    if (!info.table) return "the Fabric Manager guide gives no severity for it (unknown)";
    const table = { "non-fatal": "non-fatal", fatal: "fatal", "always-fatal": "always fatal", notable: info.fatal ? "fatal (other notable)" : "not fatal (other notable)" }[info.table];
    return `the Fabric Manager guide lists it ${table}${info.recovery ? ` (recovery: ${info.recovery})` : ""}`;
}

/**
 * NVSwitch SXids: the Fabric Manager guide's table decides whether a code can fail the node, the driver's words for the
 * event whether this one did (catalog/sxid.ts sxidNeedsOwner). Per switch and code, the lines with a word decide: any
 * "Fatal" (or "Severity 1") line makes it fatal, else a "Non-fatal"/"Correctable"/"Severity 0" line makes it not; with
 * no word at all (a capture of its Data lines) the table decides. One that needs the owner is judged as an Xid without
 * a state field is: by its newest deciding line, transient within the window or without a time (no file of the node
 * holds the switch's own state to confirm it), a note past the window. Everything else is a note.
 */
function gradeSxids(g: Grader, exp: HealthExpectation, r: DmesgReport, windowS: number): void {
    const f = FILES.dmesg.name;
    const byKey = new Map<string, SxidEvent[]>();
    for (const e of r.sxids) {
        const key = `${e.pci}/${e.code}`;
        const list = byKey.get(key);
        if (list) list.push(e);
        else byKey.set(key, [e]);
    }
    const fails: Array<[string, string]> = [];
    const notes: string[] = [];
    for (const events of byKey.values()) {
        const { pci, code, device } = events[0];
        const info = sxidInfo(code);
        const fatal = events.filter((e) => e.severity === "fatal");
        const worded = events.filter((e) => e.severity !== undefined);
        const deciding = fatal.length ? fatal : worded.length ? worded : events;
        const severity = deciding[deciding.length - 1].severity;
        const links = [...new Set(events.flatMap((e) => (e.link === undefined ? [] : [e.link])))].sort((a, b) => a - b);
        const what = `SXid ${code} (${info.meaning}) on NVSwitch ${pci}${device ? ` (${device})` : ""}` +
            (links.length ? `, link${links.length > 1 ? "s" : ""} ${links.join(", ")}` : "") + `, ${events.length} line(s)`;
        const said = severity ? `the driver logged it ${severity}` : "no line of it carries the driver's severity word";
        if (!exp.nvidia || !sxidNeedsOwner(code, severity)) {
            notes.push(`${what}: ${guideSays(info)}; ${said}; not graded`);
            continue;
        }
        const line = deciding[deciding.length - 1];
        const why = `${what}: ${guideSays(info)}; ${said}`;
        const age = byWindow(line.time, r, windowS);
        if (age.within) fails.push([`${why}${age.text}`, line.line]);
        else notes.push(`${why}${age.text}; not graded`);
    }
    for (const [message, line] of fails.slice(0, SXID_LISTED)) g.fail("nvswitch", f, message, clip(line), "transient");
    g.h.notes.push(...notes.slice(0, SXID_LISTED));
    const more = Math.max(0, fails.length - SXID_LISTED) + Math.max(0, notes.length - SXID_LISTED);
    if (more) g.h.notes.push(`${more} more NVSwitch SXid (switch, code) pair(s) in the log not listed one by one (the first ${SXID_LISTED} findings and ${SXID_LISTED} notes are)`);
}

/** Grades one node folder's files against the expectation. */
export function gradeNode(node: string, files: NodeFiles, exp: HealthExpectation): NodeHealth {
    const g = new Grader(node, files);
    let smi: SmiReport | undefined;
    if (exp.nvidia) {
        smi = gradeSmi(g, exp);
        if (exp.nvswitch) gradeNvlink(g, exp);
        gradeDcgm(g);
    }
    gradeLspci(g, exp, smi);
    if (exp.fabric === "aws-efa") gradeFiInfo(g, exp);
    else gradeIbstat(g, exp);
    gradeDmesg(g, exp, smi);
    const h = g.h;
    // one rule (healthRule): a component the stack does not require that could not be checked is a note
    const req = exp.require ?? DEFAULT_HEALTH_REQUIRE;
    for (const n of h.notChecked.filter((c) => !req.includes(c.component))) h.notes.push(`${n.component} not checked (not required): ${n.reason}`);
    h.notChecked = h.notChecked.filter((c) => req.includes(c.component));
    h.verdict = h.unreadable.length ? "unreadable" : h.findings.length ? "failing" : h.notChecked.length ? "incomplete" : "healthy";
    capListed(h);
    return h;
}

// Findings and notes listed one by one for a node. A healthy node of 16 GPUs has none; a failing one a handful. Past
// these a node's log is naming more GPUs, codes or errors than a machine has (every (GPU, Xid) pair of a 400k-line
// dmesg once made an 8 MB report): the rest is counted in one note.
const FINDINGS_LISTED = 40;
const NOTES_LISTED = 40;

/**
 * Keeps FINDINGS_LISTED findings in their order: every component's first finding (a flood of one component's findings
 * must not hide that another failed), then persistent ones (what day 2 acts on), then the rest; and the first notes.
 * The note in front counts what is left out, by component.
 */
function capListed(h: NodeHealth): void {
    const over = h.findings.length - FINDINGS_LISTED;
    let counted = "";
    if (over > 0) {
        const keep = new Set<NodeHealth["findings"][number]>();
        const firsts = new Map<string, NodeHealth["findings"][number]>();
        for (const f of h.findings) if (!firsts.has(f.component)) firsts.set(f.component, f);
        const order = [...firsts.values(), ...h.findings.filter((f) => !isTransient(f)), ...h.findings.filter(isTransient)];
        for (const f of order) {
            if (keep.size >= FINDINGS_LISTED) break;
            keep.add(f);
        }
        const left = new Map<string, number>();
        for (const f of h.findings) if (!keep.has(f)) left.set(f.component, (left.get(f.component) ?? 0) + 1);
        counted = ` (${[...left].map(([c, n]) => `${c} ${n}`).join(", ")})`;
        h.findings = h.findings.filter((f) => keep.has(f));
    }
    const notesOver = h.notes.length - NOTES_LISTED;
    if (notesOver > 0) h.notes = h.notes.slice(0, NOTES_LISTED);
    if (over > 0 || notesOver > 0) {
        // first, so the report's few notes show it
        h.notes.unshift(`${over > 0 ? `${over} more finding(s)${counted}` : ""}${over > 0 && notesOver > 0 ? " and " : ""}${notesOver > 0 ? `${notesOver} more note(s)` : ""} ` +
            `on this node not listed one by one (the first ${FINDINGS_LISTED} of each are, every component's first finding and persistent findings first)`);
    }
}
