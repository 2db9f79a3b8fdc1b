/**
 * What `ofed_info -s` prints for each DOCA-OFED release line: DOCA 2.9 / 3.0 / 3.2 ship OFED-internal 24.10 / 25.04 /
 * 25.10. The ofed role reuses an installed stack whose OFED base is at least this one.
 * source: ../shared/research/ansible-stack.md §1 "Detecting the installed version" (mapping read off public scripts,
 * not an NVIDIA table: medium confidence); images.md §3.3 (DOCA 3.2.x = OFED 25.10 in Azure's builds).
 */
export const DOCA_OFED_INFO_PREFIX: Record<string, string> = {
    "2.9": "OFED-internal-24.10",
    "3.0": "OFED-internal-25.04",
    "3.2": "OFED-internal-25.10",
};

/** The `ofed_info -s` prefix for a DOCA version such as 3.2.1, or undefined when the release line is not mapped. */
export function ofedInfoPrefix(docaVersion: string): string | undefined {
    return DOCA_OFED_INFO_PREFIX[docaVersion.split(".").slice(0, 2).join(".")];
}

/** The OFED base (YY.MM) a DOCA release ships, e.g. 3.2.1 -> 25.10. */
export function ofedBase(docaVersion: string): string | undefined {
    return ofedInfoPrefix(docaVersion)?.replace("OFED-internal-", "");
}

/**
 * Versions the kit installs where the image has none, each from a public source.
 * - NVIDIA driver 580.126.16: installed from the CUDA apt repo through `nvidia-driver-pinning-580.126.16` on both
 *   Ubuntu 22.04 and 24.04 by Azure's images at tag ubuntu-hpc-2026032501, the first after Azure/azhpc-images#499
 *   moved to apt (images.md §2.2, §2.3); branch 580 is the floor for CUDA 13 (images.md §4).
 * - CUDA 13.0: what ubuntu-hpc ships; runs on r580 and covers Turing to Blackwell (images.md §4); p6-b300 needs 13.0.
 * - NCCL 2.28.9-1+cuda13.0: a CUDA-repo build (images.md §3.2, "published (third-party)"); newer than 2.25.1, the
 *   first NCCL that builds Blackwell sm_100.
 * - EFA installer 1.51.0 (aws-ofi-nccl 1.22.0): newest in the AWS changelog (aws-efa.md §3.1).
 * - DOCA 3.2.1: what ubuntu-hpc 22.04 ships (images.md §2.2).
 * - nccl-tests v2.19.6 = commit a0b82b2260cf5152b9f8c061bbf7eaf0ba096432 (git rev-parse v2.19.6^{commit} on a
 *   mirror of NVIDIA/nccl-tests, tag dated 2026-07-09).
 */
export const SOFTWARE_DEFAULTS = {
    driverBranch: "580",
    driverVersion: "580.126.16",
    cudaVersion: "13.0",
    ncclVersion: "2.28.9-1",
    efaInstallerVersion: "1.51.0",
    docaVersion: "3.2.1",
    ncclTestsVersion: "2.19.6",
} as const;

/** The full commit each nccl-tests release tag points to (40 hex digits), so a moved tag stops the build. */
export const NCCL_TESTS_COMMITS: Record<string, string> = {
    // source: git rev-parse v2.19.6^{commit} in a clone of https://github.com/NVIDIA/nccl-tests
    "2.19.6": "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432",
};

export interface NcclBuild {
    nccl: string;
    cuda: string;
    /** published: a file name in NVIDIA's repo quoted by a public source; pinned: an apt pin seen in public scripts */
    confidence: "published" | "pinned";
    source: string;
}

/** libnccl2 `<nccl>+cuda<cuda>` builds known to exist in NVIDIA's CUDA repositories (images.md §3.2). */
export const NCCL_BUILDS: NcclBuild[] = [
    { nccl: "2.23.4-1", cuda: "12.6", confidence: "published", source: "https://docs.nvidia.com/deeplearning/nccl/install-guide/index.html" },
    { nccl: "2.28.7-1", cuda: "12.9", confidence: "published", source: "https://github.com/awslabs/awsome-distributed-ai/pull/925" },
    { nccl: "2.28.9-1", cuda: "13.0", confidence: "published", source: "third-party build log citing the Debian 12 CUDA repo (images.md §3.2)" },
    { nccl: "2.29.2-1", cuda: "13.1", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
    { nccl: "2.29.3-1", cuda: "13.1", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
    { nccl: "2.29.7-1", cuda: "12.9", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
    { nccl: "2.30.4-1", cuda: "12.9", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
    { nccl: "2.30.4-1", cuda: "13.2", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
    { nccl: "2.30.7-1", cuda: "13.3", confidence: "pinned", source: "apt pins in public scripts (images.md §3.2)" },
];

/**
 * The oldest NCCL release known to be built for each CUDA minor: an NCCL older than this cannot have a
 * `+cudaX.Y` build, because that CUDA did not exist when it was released. 13.0: 2.27.7 (local repo
 * nccl-local-repo-ubuntu2404-2.27.7-cuda13.0, images.md §3.2); 12.9: 2.27.5 (PyTorch's cu129 pin, a build for
 * 12.9); 12.8: 2.26.2 (PyTorch's cu128 pin); 12.6: 2.23.4 (NVIDIA's install guide). Others: the oldest in NCCL_BUILDS.
 */
export const NCCL_FIRST_FOR_CUDA: Record<string, string> = {
    "12.6": "2.23.4-1",
    "12.8": "2.26.2-1",
    "12.9": "2.27.5-1",
    "13.0": "2.27.7-1",
    "13.1": "2.29.2-1",
    "13.2": "2.30.4-1",
    "13.3": "2.30.7-1",
};

/**
 * The lowest driver branch a CUDA toolkit runs on. CUDA 13.x: r580 ("ABI-compatible with drivers ... r580 and
 * newer", images.md §4). CUDA 12.8/12.9 on R570 is an inference from the pairing in images.md §4 (unconfirmed);
 * older toolkits: unknown, so no floor.
 */
export function driverFloorForCuda(cuda: string): string | undefined {
    const [major, minor] = cuda.split(".").map(Number);
    if (major >= 13) return "580";
    if (major === 12 && minor >= 8) return "570";
    return undefined;
}
