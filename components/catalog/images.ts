/*
 * What the images the kit boots already carry, per node-software component, from the vendors' own manifests.
 * Each value says whether a public manifest states it (`sourced: true`) or whether it is our inference (`false`);
 * a value nobody publishes is left out (`version` undefined), never guessed. Collected in
 * ../shared/research/images.md; the keys below ([DLAMI-RN], [AZ]) are that note's source keys.
 */

import { SoftwareComponentName } from "../types";

/** The node-software components the plan decides on, in the order the roles run them (the spec's names, ../types.ts). */
export const SOFTWARE_COMPONENTS = Object.values(SoftwareComponentName) as [SoftwareComponentName, ...SoftwareComponentName[]];
export type SoftwareComponent = SoftwareComponentName;

export const COMPONENT_LABEL: Record<SoftwareComponent, string> = {
    ofed: "DOCA-OFED",
    driver: "NVIDIA driver",
    fabricManager: "Fabric Manager",
    nvlsm: "NVLSM",
    efa: "EFA installer",
    awsOfiNccl: "aws-ofi-nccl",
    cuda: "CUDA toolkit",
    nccl: "NCCL",
    mpi: "MPI",
    ncclTests: "nccl-tests",
};

export interface ShippedComponent {
    /** the version the manifest states; undefined when the image ships it but no one publishes which */
    version?: string;
    /** where it lives on the image, for the report */
    where?: string;
    /** other versions installed side by side (the DLAMI's CUDA toolkits), each usable by pinning it */
    alsoInstalled?: string[];
    /** true when a public manifest states the version; false when it is our inference */
    sourced: boolean;
    note?: string;
}

export interface ImageManifest {
    id: string;
    title: string;
    os: "ubuntu22.04" | "ubuntu24.04" | "rhel9";
    /** the release the values were read at (AMI date, azhpc-images tag) */
    release: string;
    ships: Partial<Record<SoftwareComponent, ShippedComponent>>;
    source: string;
}

const DLAMI_RN = "https://docs.aws.amazon.com/dlami/latest/devguide/appendix-ami-release-notes.html (images.md §1.2, [DLAMI-RN])";

/**
 * Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04), the AWS default (components/aws/ami.ts, newest
 * release). The x86_64 per-release pages were not found: the values are the arm64 twin's 20261006 release
 * (driver 595.91.07, default /usr/local/cuda-13.2 with 12.8/12.9/13.0/13.2 installed, EFA installer 1.50.0,
 * aws-ofi-nccl 1.21.1), which the x86 single-CUDA sibling of the same train matches on driver/EFA/plugin
 * (images.md §1.3); so each is `sourced: false` for x86.
 */
export const DLAMI_BASE_OSS_U2204: ImageManifest = {
    id: "dlami-base-oss-ubuntu22.04",
    title: "AWS Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04)",
    os: "ubuntu22.04",
    release: "20261006 (arm64 twin's release notes)",
    ships: {
        driver: { version: "595.91.07", where: "modinfo nvidia", sourced: false, note: "arm64 release notes; x86 inferred" },
        // Fabric Manager is not a field of the release tables (images.md §1.2): present on the NVSwitch types is
        // what the AMI description says (ami.ts), its version is not published; it must equal the driver's.
        fabricManager: { where: "nvidia-fabricmanager", sourced: false, note: "not in the release tables" },
        cuda: { version: "13.2", alsoInstalled: ["12.8", "12.9", "13.0"], where: "/usr/local/cuda -> cuda-13.2", sourced: false },
        // one NCCL build per CUDA directory; its version is not in the release tables (images.md §1.4)
        nccl: { where: "/usr/local/cuda/lib/libnccl.so.2.*", sourced: false, note: "version not published" },
        efa: { version: "1.50.0", where: "/opt/amazon/efa_installed_packages", sourced: false },
        awsOfiNccl: { version: "1.21.1", where: "/etc/ld.so.conf.d/100_ofinccl.conf", sourced: false },
        // Open MPI 4 at /opt/amazon/openmpi comes with every EFA installer (aws-efa.md §3.1)
        mpi: { where: "/opt/amazon/openmpi (EFA installer's Open MPI)", sourced: true },
        ncclTests: { where: "/usr/local/cuda-X.Y/efa/test-cuda-X.Y", sourced: true, note: "awsome-distributed-ai nccl-tests-ami.sbatch" },
    },
    source: DLAMI_RN,
};

const AZ = "Azure/azhpc-images@67a1b094eeed8767e611bbb4e9d86013288ca377 versions.json (tag ubuntu-hpc-2026072901, images.md §2.2)";

/** Azure's ubuntu-hpc images at tag ubuntu-hpc-2026072901. DOCA, driver and NCCL per versions.json. */
function ubuntuHpc(os: "ubuntu22.04" | "ubuntu24.04", doca: string, driver: string): ImageManifest {
    return {
        id: `ubuntu-hpc-${os.slice(6).replace(".", "")}`,
        title: `Azure microsoft-dsvm:ubuntu-hpc:${os.slice(6).replace(".", "")}`,
        os,
        release: "ubuntu-hpc-2026072901",
        ships: {
            ofed: { version: doca, where: "ofed_info -s (OFED-internal-25.10-...)", sourced: true },
            driver: { version: driver, where: "nvidia-open via nvidia-driver-pinning", sourced: true },
            // install_nvidia_fabric_manager.sh pins Fabric Manager to the driver's version ([AZ])
            fabricManager: { version: driver, where: "nvidia-fabricmanager", sourced: true },
            cuda: { version: "13.0", where: "cuda-toolkit-13-0", sourced: true },
            // built by Azure from the NCCL tag as libnccl2 <ver>+cuda13.0 and held (images.md §2.3, §3.2)
            nccl: { version: "2.30.4-1", where: "libnccl2 2.30.4-1+cuda13.0 (held)", sourced: true },
            mpi: { version: "HPC-X 2.25.1", where: "/opt/hpcx-v2.25.1-*", sourced: true },
            ncclTests: { where: "/opt/nccl-tests", sourced: true },
        },
        source: AZ,
    };
}

export const UBUNTU_HPC_2204 = ubuntuHpc("ubuntu22.04", "3.2.1", "580.126.16");
export const UBUNTU_HPC_2404 = ubuntuHpc("ubuntu24.04", "3.2.3", "580.173.02");

/**
 * The marketplace version of ubuntu-hpc the kit pins by default, per SKU, instead of `latest` (which mixes
 * releases on scale-out). Format `22.04.YYYYMMDDNN` as in URNs pinned in public scripts (images.md §2.1); that
 * the marketplace version carries the repo tag's digits (ubuntu-hpc-2026072901) is our inference, unconfirmed.
 */
export const UBUNTU_HPC_PINNED_VERSION: Record<string, { version: string; manifest: ImageManifest }> = {
    "2204": { version: "22.04.2026072901", manifest: UBUNTU_HPC_2204 },
    "2404": { version: "24.04.2026072901", manifest: UBUNTU_HPC_2404 },
};

/** A plain distribution image: none of the stack; the kit installs everything. */
export function plainImage(os: ImageManifest["os"]): ImageManifest {
    return { id: `plain-${os}`, title: `plain ${os}`, os, release: "-", ships: {}, source: "distribution image: no GPU/RDMA stack" };
}
