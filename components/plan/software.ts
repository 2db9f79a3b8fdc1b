import { awsInstanceType, EFA_INSTALLER_OFI_NCCL } from "../catalog/aws";
import { azureVmSize } from "../catalog/azure";
import { gpuModel } from "../catalog/gpus";
import {
    COMPONENT_LABEL, DLAMI_BASE_OSS_U2204, ImageManifest, plainImage, SoftwareComponent, UBUNTU_HPC_PINNED_VERSION,
} from "../catalog/images";
import {
    driverFloorForCuda, NCCL_BUILDS, NCCL_FIRST_FOR_CUDA, NCCL_TESTS_COMMITS, ofedBase, SOFTWARE_DEFAULTS,
} from "../catalog/software";
import type { SpecIssue } from "../errors";
import type { ClusterSpec } from "../spec";

/*
 * Per node-software component: what the image is expected to carry, what the hardware needs, and the rule
 * - reuse when the image has it at or above what the hardware needs;
 * - install when the image lacks it;
 * - refuse (a spec issue) when the image's copy is too old or conflicts with a pin, unless the component is listed
 *   in software.replace, which upgrades it (never a downgrade, never a driver branch sideways).
 * On the node the roles probe again and apply the same rule to what they find (playbooks/roles/*).
 */

export type Decision = "reuse" | "install" | "refuse" | "not needed";

export interface SoftwareRow {
    component: SoftwareComponent;
    label: string;
    /** what the image manifest says it ships */
    imageHas: string;
    decision: Decision;
    /** the version the node ends up with (reused or installed) */
    version: string;
    why: string;
    issue?: SpecIssue;
}

export interface SoftwarePlan {
    image: { id: string; title: string; release: string; known: boolean };
    rows: SoftwareRow[];
    /** the versions the roles install where the node lacks a component, and the floors they reuse from */
    versions: {
        driverBranch: string; driverVersion?: string; driverFloor?: string;
        cudaVersion: string; cudaFloor?: string;
        ncclVersion: string; ncclFloor?: string;
        efaInstallerVersion: string; efaFloor?: string;
        docaVersion: string; ofedFloor?: string;
        ncclTestsVersion: string; ncclTestsCommit?: string;
    };
    replace: SoftwareComponent[];
}

/** The spec fields the software plan reads. */
export type SoftwareSpec = Pick<ClusterSpec, "fabric" | "software" | "aws" | "azure" | "roce">;

/** Numeric compare of dotted versions (a package revision after "-" counts last); <0, 0, >0. */
export function compareVersions(a: string, b: string): number {
    const parts = (v: string) => v.replace("-", ".").split(".").map((x) => Number.parseInt(x, 10) || 0);
    const pa = parts(a);
    const pb = parts(b);
    for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
        const d = (pa[i] ?? 0) - (pb[i] ?? 0);
        if (d !== 0) return d;
    }
    return 0;
}
const older = (a: string, b: string) => compareVersions(a, b) < 0;

/**
 * 8-GPU A100/H100/H200/B200/B300 servers are HGX boards with NVSwitch (NVIDIA HGX platform docs); PCIe cards are not,
 * also where NVLink bridges join them in pairs or fours: a model named PCIe or NVL ("H100-PCIe", "H100-NVL", "H200NVL":
 * the H100 NVL and H200 NVL are PCIe cards with a 2- or 4-way NVLink bridge, NVIDIA H100 datasheet and H200 product
 * page; A100 PCIe pairs by a bridge, A100 datasheet) gets no Fabric Manager and no NVSwitch expectation.
 */
export function roceHgx(spec: SoftwareSpec): boolean {
    const first = spec.roce?.hosts[0];
    return first !== undefined && first.gpu.count === 8 && /^(A100|H100|H200|B200|B300)/.test(first.gpu.model) && !/PCIE|NVL/i.test(first.gpu.model);
}

interface HardwareNeeds {
    cuda?: string; nccl?: string; efaInstaller?: string; awsOfiNccl?: string; nvswitch: boolean; nvlsm: boolean; what: string;
}

/** What the GPUs and NICs need, from the catalog. */
function hardwareNeeds(spec: SoftwareSpec): HardwareNeeds {
    let model: string | undefined;
    let needs: HardwareNeeds = { nvswitch: false, nvlsm: false, what: "" };
    if (spec.fabric === "aws-efa") {
        const t = awsInstanceType(spec.aws?.instanceType ?? "");
        if (t) {
            model = t.gpu.model;
            needs = { ...t.minVersions, nvswitch: t.nvswitch, nvlsm: t.nvlsm, what: t.name };
            if (t.minVersions?.awsOfiNccl && !t.minVersions.efaInstaller) {
                // the first installer that bundles a plugin new enough (AWS changelog, catalog/aws.ts)
                const floor = t.minVersions.awsOfiNccl;
                const inst = Object.entries(EFA_INSTALLER_OFI_NCCL).sort(([a], [b]) => compareVersions(a, b)).find(([, o]) => !older(o, floor));
                if (inst) needs.efaInstaller = inst[0];
            }
        }
    } else if (spec.fabric === "azure-ib") {
        const s = azureVmSize(spec.azure?.vmSize ?? "");
        model = s?.gpu?.model;
        needs = { nvswitch: s?.nvswitch ?? false, nvlsm: false, what: s?.name ?? "" };
    } else {
        model = spec.roce?.hosts[0]?.gpu.model;
        needs = { nvswitch: roceHgx(spec), nvlsm: false, what: model ?? "" };
    }
    // Blackwell: CUDA >= 12.8 (first sm_100 target) and NCCL >= 2.25.1 (first tag building sm_100) (images.md §4)
    if (model && gpuModel(model)?.family === "blackwell") {
        if (!needs.cuda || older(needs.cuda, "12.8")) needs.cuda = "12.8";
        if (!needs.nccl || older(needs.nccl, "2.25.1")) needs.nccl = "2.25.1";
    }
    return needs;
}

/** The image the nodes boot and what its manifest says; `known: false` for a custom image (probed on the node). */
export function nodeImage(spec: SoftwareSpec): { manifest: ImageManifest; known: boolean; pinnedVersion?: string } {
    if (spec.fabric === "aws-efa") {
        if (spec.aws?.ami) return { manifest: { ...plainImage("ubuntu22.04"), id: "custom-ami", title: `custom AMI ${spec.aws.ami}` }, known: false };
        return { manifest: DLAMI_BASE_OSS_U2204, known: true };
    }
    if (spec.fabric === "azure-ib") {
        const img = spec.azure?.image;
        const sku = img?.sku ?? azureVmSize(spec.azure?.vmSize ?? "")?.defaultImageSku ?? "";
        const pinned = UBUNTU_HPC_PINNED_VERSION[sku];
        if (!img) return pinned ? { manifest: pinned.manifest, known: true, pinnedVersion: pinned.version } : { manifest: plainImage("ubuntu22.04"), known: false };
        if (img.publisher.toLowerCase() === "microsoft-dsvm" && img.offer === "ubuntu-hpc" && pinned) {
            // another release of the same image: the manifest is the pinned release's, the node's probes decide
            return { manifest: { ...pinned.manifest, release: img.version }, known: img.version === pinned.version };
        }
        const os = /24/.test(img.sku) ? "ubuntu24.04" : /rhel|^9/i.test(`${img.offer} ${img.sku}`) ? "rhel9" : "ubuntu22.04";
        const plain = img.publisher.toLowerCase() === "canonical" || img.publisher.toLowerCase() === "redhat";
        return { manifest: { ...plainImage(os), title: `${img.publisher}:${img.offer}:${img.sku}:${img.version}` }, known: plain };
    }
    // bare metal: the hosts' OS as installed; the kit installs what is missing and the probes reuse what is there
    return { manifest: { ...plainImage("ubuntu22.04"), id: "bare-metal", title: "the bare-metal hosts' own OS", release: "as installed" }, known: false };
}

/** The newest known NCCL build for a CUDA minor: a published one first, else one seen in public pins. */
export function ncclBuildFor(cuda: string): string | undefined {
    const builds = NCCL_BUILDS.filter((b) => b.cuda === cuda).sort((a, b) => compareVersions(b.nccl, a.nccl));
    return (builds.find((b) => b.confidence === "published") ?? builds[0])?.nccl;
}

/** Refuses an NCCL build for a CUDA released after that NCCL (NCCL_FIRST_FOR_CUDA); undefined when it can exist. */
export function ncclPairIssue(nccl: string, cuda: string, path = "cluster.software.ncclVersion"): SpecIssue | undefined {
    const first = NCCL_FIRST_FOR_CUDA[cuda];
    if (!first || !older(nccl, first)) return undefined;
    const known = NCCL_BUILDS.filter((b) => b.cuda === cuda).map((b) => `${b.nccl}+cuda${b.cuda}`);
    return {
        path, value: `${nccl}+cuda${cuda}`,
        message: `cannot exist: NCCL ${nccl} predates CUDA ${cuda} (the oldest NCCL built for CUDA ${cuda} is ${first})`,
        allowed: known.length > 0 ? known.join(", ") : `NCCL ${first} or later with CUDA ${cuda}`,
    };
}

const major = (v: string) => v.split(".")[0];

/** The software plan: one row per component, with the versions the roles get. Pure. */
export function planSoftware(spec: SoftwareSpec): SoftwarePlan {
    const sw = spec.software;
    const hw = hardwareNeeds(spec);
    const { manifest, known } = nodeImage(spec);
    const has = manifest.ships;
    const replace = new Set(sw.replace ?? []);
    const rows: SoftwareRow[] = [];
    const shown = (c: SoftwareComponent) => {
        const s = has[c];
        if (!s) return known ? "none" : "not known (probed on the node)";
        return `${s.version ?? "version not published"}${s.sourced ? "" : " (inferred)"}`;
    };
    const row = (component: SoftwareComponent, decision: Decision, version: string, why: string, issue?: SpecIssue) =>
        rows.push({ component, label: COMPONENT_LABEL[component], imageHas: shown(component), decision, version, why, issue });

    /**
     * The rule for one versioned component. `image`: the image's version (undefined: absent or unknown);
     * `want`: the kit's version; `pinned`: whether the user gave it; `floor`: what the hardware needs.
     */
    const decide = (c: SoftwareComponent, field: string, image: string | undefined, want: string, pinned: boolean, floor: string | undefined,
        cmp: (a: string, b: string) => number = compareVersions): { decision: Decision; version: string; why: string; issue?: SpecIssue } => {
        const present = has[c] !== undefined;
        const fix = `add "${c}" to cluster.software.replace to upgrade the image's copy`;
        if (!present) {
            if (floor && cmp(want, floor) < 0) {
                const bundles = c === "efa" && EFA_INSTALLER_OFI_NCCL[want] ? ` (it bundles aws-ofi-nccl ${EFA_INSTALLER_OFI_NCCL[want]})` : "";
                return { decision: "refuse", version: want, why: "too old for the hardware", issue: { path: `cluster.software.${field}`, value: want, message: `is older than ${hw.what} needs${bundles}`, allowed: `>= ${floor}` } };
            }
            return { decision: "install", version: want, why: known ? "the image has none" : "installed where the node has none; reused where it has one at or above the floor" };
        }
        if (image === undefined && pinned && !replace.has(c)) {
            return {
                decision: "refuse", version: want, why: "conflicts with the image",
                issue: { path: `cluster.software.${field}`, value: want, message: `${manifest.title} ships its own ${COMPONENT_LABEL[c]} (version not published); the kit reuses it rather than adding a second one`, allowed: `leave it out, or ${fix}` },
            };
        }
        if (image === undefined && !pinned) return { decision: "reuse", version: "the image's", why: "the node's probe checks it against the floor" + (floor ? ` (>= ${floor})` : "") };
        if (image === undefined) return { decision: "install", version: want, why: "replaces the image's copy (software.replace)" };
        if (replace.has(c)) {
            if (cmp(want, image) < 0) {
                return { decision: "refuse", version: want, why: "would downgrade", issue: { path: `cluster.software.${field}`, value: want, message: `is older than the image's ${image}; replacing never downgrades`, allowed: `>= ${image}, or drop "${c}" from cluster.software.replace` } };
            }
            if (floor && cmp(want, floor) < 0) {
                return { decision: "refuse", version: want, why: "too old for the hardware", issue: { path: `cluster.software.${field}`, value: want, message: `is older than ${hw.what} needs`, allowed: `>= ${floor}` } };
            }
            return { decision: "install", version: want, why: `replaces the image's ${image} (software.replace)` };
        }
        if (pinned && has[c]?.alsoInstalled?.includes(want)) {
            return floor && cmp(want, floor) < 0
                ? { decision: "refuse", version: want, why: "too old for the hardware", issue: { path: `cluster.software.${field}`, value: want, message: `is older than ${hw.what} needs`, allowed: `>= ${floor}` } }
                : { decision: "reuse", version: want, why: `the image also ships ${want}` };
        }
        if (pinned && cmp(want, image) !== 0) {
            return {
                decision: "refuse", version: want, why: "conflicts with the image",
                issue: { path: `cluster.software.${field}`, value: want, message: `conflicts with the ${image} that ${manifest.title} ships; the kit reuses the image's stack and never ${cmp(want, image) < 0 ? "downgrades" : "replaces it unasked"}`, allowed: cmp(want, image) < 0 ? `${image} (or leave it out)` : `${image} (or leave it out), or ${fix}` },
            };
        }
        if (floor && cmp(image, floor) < 0) {
            return { decision: "refuse", version: image, why: "the image's copy is too old", issue: { path: "cluster.software.replace", value: [...replace], message: `${COMPONENT_LABEL[c]} ${image} on ${manifest.title} is older than ${hw.what} needs (${floor})`, allowed: `a list with "${c}", so the kit installs ${want}` } };
        }
        return { decision: "reuse", version: image, why: floor ? `at or above ${floor}` : "the image's stack" };
    };
    const add = (c: SoftwareComponent, d: ReturnType<typeof decide>) => row(c, d.decision, d.version, d.why, d.issue);

    // CUDA first: NCCL's build and the driver floor follow the CUDA the node ends up with
    const cudaWant = sw.cudaVersion ?? SOFTWARE_DEFAULTS.cudaVersion;
    const cuda = decide("cuda", "cudaVersion", has.cuda?.version, cudaWant, sw.cudaVersion !== undefined, hw.cuda);
    const cudaEff = cuda.decision === "reuse" && has.cuda?.version && sw.cudaVersion === undefined ? has.cuda.version : cudaWant;

    // OFED (IB and RoCE): DOCA by OFED base (3.2.1 and 3.2.3 are one base, 25.10)
    if (spec.fabric !== "aws-efa") {
        const doca = sw.docaVersion ?? SOFTWARE_DEFAULTS.docaVersion;
        if (sw.ofedSource === "inbox") {
            row("ofed", "install", "distro rdma-core", "software.ofedSource: inbox");
        } else {
            const byBase = (a: string, b: string) => compareVersions(ofedBase(a) ?? a, ofedBase(b) ?? b);
            add("ofed", decide("ofed", "docaVersion", has.ofed?.version, doca, sw.docaVersion !== undefined, undefined, byBase));
        }
    } else {
        row("ofed", "not needed", "-", "EFA brings its own rdma-core");
    }

    // driver: by branch; the floor is the CUDA's
    const driverFloor = driverFloorForCuda(cudaEff);
    const branchWant = sw.driverBranch ?? (sw.driverVersion ? major(sw.driverVersion) : SOFTWARE_DEFAULTS.driverBranch);
    const versionWant = sw.driverVersion ?? (branchWant === SOFTWARE_DEFAULTS.driverBranch ? SOFTWARE_DEFAULTS.driverVersion : undefined);
    const byBranch = (a: string, b: string) => compareVersions(major(a), major(b));
    const drvImage = has.driver?.version;
    const driver = decide("driver", sw.driverVersion ? "driverVersion" : "driverBranch", drvImage, versionWant ?? branchWant,
        sw.driverBranch !== undefined || sw.driverVersion !== undefined, driverFloor, byBranch);
    if (driver.issue && driver.decision === "refuse" && sw.driverVersion === undefined && sw.driverBranch !== undefined) driver.issue.path = "cluster.software.driverBranch";
    add("driver", driver);
    const driverEff = driver.decision === "reuse" ? (drvImage ?? "the image's") : (versionWant ?? `branch ${branchWant}`);

    // Fabric Manager equals the driver exactly, else NVSwitch nodes fail with CUDA error 802 (aws-efa.md §3.3)
    if (hw.nvswitch) {
        const reuseFm = driver.decision === "reuse" && has.fabricManager !== undefined;
        row("fabricManager", reuseFm ? "reuse" : "install", driverEff, reuseFm ? "must equal the driver (checked on the node)" : "pinned to the driver's version");
    } else {
        row("fabricManager", "not needed", "-", "no NVSwitch");
    }
    if (hw.nvlsm) row("nvlsm", "install", "CUDA repo nvlsm", "HGX B200/B300 NVSwitch fabric needs it; installed where absent");
    else row("nvlsm", "not needed", "-", "no NVLink switch fabric management needed");

    // EFA installer and the plugin it bundles
    const efaWant = sw.efaInstallerVersion ?? SOFTWARE_DEFAULTS.efaInstallerVersion;
    if (spec.fabric === "aws-efa") {
        const efa = decide("efa", "efaInstallerVersion", has.efa?.version, efaWant, sw.efaInstallerVersion !== undefined, hw.efaInstaller);
        add("efa", efa);
        const ofi = efa.decision === "reuse" ? has.awsOfiNccl?.version ?? "the image's" : EFA_INSTALLER_OFI_NCCL[efaWant] ?? "bundled";
        row("awsOfiNccl", efa.decision === "refuse" ? "refuse" : efa.decision, ofi, "comes with the EFA installer");
        row("mpi", efa.decision === "reuse" ? "reuse" : "install", "Open MPI at /opt/amazon/openmpi", "the EFA installer's Open MPI");
    } else {
        row("efa", "not needed", "-", "not an EFA fabric");
        row("awsOfiNccl", "not needed", "-", "not an EFA fabric");
        const imageMpi = has.mpi && has.ncclTests && !replace.has("ncclTests");
        if (imageMpi) row("mpi", "reuse", has.mpi?.version ?? "the image's", "the MPI the image's nccl-tests links; validation launches with it");
        else row("mpi", "install", "distro Open MPI", has.mpi ? `nccl-tests builds against it; the image's ${has.mpi.version ?? "MPI"} stays untouched` : "nccl-tests builds against it");
    }

    // NCCL: the build for the CUDA the node has; a pinned pair that cannot exist is refused
    const ncclWant = sw.ncclVersion ?? ncclBuildFor(cudaEff) ?? SOFTWARE_DEFAULTS.ncclVersion;
    const nccl = decide("nccl", "ncclVersion", has.nccl?.version, ncclWant, sw.ncclVersion !== undefined, hw.nccl);
    const pair = nccl.decision === "install" ? ncclPairIssue(ncclWant, cudaEff) : undefined;
    if (pair) add("nccl", { decision: "refuse", version: `${ncclWant}+cuda${cudaEff}`, why: "no such build", issue: pair });
    else add("nccl", nccl.decision === "install" ? { ...nccl, version: `${ncclWant}+cuda${cudaEff}` } : nccl);
    add("cuda", cuda);

    // nccl-tests: the image's build is reused when it links an MPI (the node's probe reads its libmpi with ldd), and
    // validation launches it with that MPI; software.replace "ncclTests" builds the kit's own instead
    const ncclTestsVersion = sw.ncclTestsVersion ?? SOFTWARE_DEFAULTS.ncclTestsVersion;
    const ncclTestsBuild = `${ncclTestsVersion}${NCCL_TESTS_COMMITS[ncclTestsVersion] ? ` @${NCCL_TESTS_COMMITS[ncclTestsVersion].slice(0, 12)}` : ""}`;
    if (has.ncclTests && !replace.has("ncclTests")) {
        row("ncclTests", "reuse", `the image's build (${has.ncclTests.where ?? "probed"})`, "reused where it links an MPI; else the kit builds " + ncclTestsBuild);
    } else {
        row("ncclTests", "install", ncclTestsBuild, has.ncclTests ? "replaces the image's build (software.replace); the image's copy stays untouched" : "built against the node's MPI, NCCL and CUDA");
    }

    const order = new Map(Object.keys(COMPONENT_LABEL).map((c, i) => [c, i]));
    rows.sort((a, b) => order.get(a.component)! - order.get(b.component)!);
    return {
        image: { id: manifest.id, title: manifest.title, release: manifest.release, known },
        rows,
        versions: {
            driverBranch: driver.decision === "install" ? major(versionWant ?? branchWant) : branchWant,
            driverVersion: versionWant, driverFloor,
            cudaVersion: cudaEff, cudaFloor: hw.cuda,
            ncclVersion: ncclWant, ncclFloor: hw.nccl,
            efaInstallerVersion: efaWant, efaFloor: hw.efaInstaller,
            docaVersion: sw.docaVersion ?? SOFTWARE_DEFAULTS.docaVersion, ofedFloor: undefined,
            ncclTestsVersion, ncclTestsCommit: NCCL_TESTS_COMMITS[ncclTestsVersion],
        },
        replace: [...replace],
    };
}

/**
 * What software.replace does per component; the others have nothing of their own to replace and are refused:
 * Fabric Manager always follows the driver, aws-ofi-nccl and the EFA MPI come with the EFA installer, NVLSM is only
 * ever added, and an image's MPI is never replaced (nccl-tests picks the MPI it is built or launched with).
 */
export const REPLACEABLE: Partial<Record<SoftwareComponent, string>> = {
    ofed: "installs the plan's DOCA-OFED over an older OFED",
    driver: "upgrades the driver branch, with the Fabric Manager that must equal it",
    efa: "runs the plan's EFA installer (and the aws-ofi-nccl it bundles) over an older one",
    cuda: "installs the plan's CUDA toolkit beside an older one",
    nccl: "installs and holds the plan's libnccl2 over an older one",
    ncclTests: "builds the kit's nccl-tests instead of reusing the image's build",
};
const NOT_REPLACEABLE: Partial<Record<SoftwareComponent, string>> = {
    fabricManager: `Fabric Manager always equals the driver: replace "driver" to move both`,
    nvlsm: "NVLSM is installed where absent and never replaced",
    awsOfiNccl: `aws-ofi-nccl comes with the EFA installer: replace "efa"`,
    mpi: `the image's MPI is never replaced; replace "ncclTests" to build nccl-tests against the kit's MPI`,
};

function replaceIssues(spec: SoftwareSpec): SpecIssue[] {
    return (spec.software.replace ?? []).flatMap((c, i) => NOT_REPLACEABLE[c] ? [{
        path: `cluster.software.replace[${i}]`, value: c, message: `cannot be replaced: ${NOT_REPLACEABLE[c]}`,
        allowed: Object.keys(REPLACEABLE).join(", "),
    }] : []);
}

/** The refusals as spec issues, for parseClusterSpec: reported before anything is created. */
export function softwareIssues(spec: SoftwareSpec): SpecIssue[] {
    const bad = replaceIssues(spec);
    if (bad.length) return bad;
    // a spec whose hardware is unknown is reported by the fabric checks; the software plan needs the hardware
    if (spec.fabric === "aws-efa" && !awsInstanceType(spec.aws?.instanceType ?? "")) return [];
    if (spec.fabric === "azure-ib" && !azureVmSize(spec.azure?.vmSize ?? "")) return [];
    if (spec.fabric === "roce" && !spec.roce?.hosts[0]) return [];
    return planSoftware(spec).rows.flatMap((r) => (r.issue ? [r.issue] : []));
}

/** The table `rdmakit plan` prints. */
export function formatSoftwareTable(p: SoftwarePlan): string[] {
    const head = ["component", "image has", "decision", "version"];
    const body = p.rows.filter((r) => r.decision !== "not needed").map((r) => [r.label, r.imageHas, r.decision, r.version]);
    const widths = head.map((h, i) => Math.max(h.length, ...body.map((b) => b[i].length)));
    const line = (cells: string[]) => "  " + cells.map((c, i) => c.padEnd(widths[i])).join("  ").trimEnd();
    return [`software on ${p.image.title} (${p.image.release})${p.image.known ? "" : ": contents not known, the node's probes decide"}:`, line(head), ...body.map(line)];
}
