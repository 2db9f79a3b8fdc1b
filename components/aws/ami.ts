/*
 * Which AMI the nodes and the bastion boot. Pure: returns the arguments of one `aws.ec2.getAmi` invoke each.
 */

/** Plain arguments for `aws.ec2.getAmiOutput` (a subset of `GetAmiOutputArgs`). */
export interface AmiQuery {
    /** absent for an AMI pinned by id: it may be the user's own or shared with them */
    owners?: string[];
    mostRecent: boolean;
    filters: Array<{ name: string; values: string[] }>;
}

/**
 * Name patterns of the Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04): NVIDIA open driver, CUDA,
 * EFA installer, aws-ofi-nccl, Fabric Manager, GDRCopy, with a date suffix YYYYMMDD (the `????????`).
 * source: https://docs.aws.amazon.com/dlami/latest/devguide/find-dlami-id.html (describe-images with
 *   `Name=name,Values=Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) ????????`, owner amazon)
 * source: https://docs.aws.amazon.com/dlami/latest/devguide/aws-deep-learning-base-gpu-ami-ubuntu-22-04.html
 * source: https://docs.aws.amazon.com/dlami/latest/devguide/appendix-ami-release-notes.html ("Deep Learning ARM64
 *   Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) 20261006": the arm64 twin, for P6e-GB200 / G5g)
 * One image line for every type of the catalog (components/catalog/aws.ts), all x86_64: the Ubuntu 22.04 base DLAMI
 * lists "G4dn, G5, G6, Gr6, G6e, P4d, P4de, P5, P5e, P5en, P6-B200, P6-B300" as supported instances (release notes
 * gpubasesinglecuda-ul2204-2026-01-02, ../shared/research/images.md §1.3). The 22.04 type that AWS dropped, P6e-GB300,
 * is the arm64 Grace system (the arm64 22.04 notes list G5g, P6e-GB200 from Sep 2026; 24.04 adds P6e-GB300), which the
 * catalog does not offer. The x86_64 multi-CUDA variant's own per-release pages were not found (images.md §1.3:
 * unconfirmed), so that this line keeps P6-B300 after January 2026 is inferred from its single-CUDA sibling.
 */
export const DLAMI_NAME_PATTERN = {
    x86_64: "Deep Learning Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) ????????",
    arm64: "Deep Learning ARM64 Base OSS Nvidia Driver GPU AMI (Ubuntu 22.04) ????????",
} as const;

export { DLAMI_SSH_USER } from "../catalog/aws";

/**
 * The one AMI lookup for the GPU nodes. With `ami` given, the lookup pins that id and still checks that it exists
 * in the region and matches the instance architecture (a wrong-architecture AMI fails here, at preview, rather
 * than as a launch error inside the Auto Scaling group). Without it, the newest DLAMI for the architecture.
 */
export function nodeAmiQuery(arch: "x86_64" | "arm64", ami?: string): AmiQuery {
    const common = [
        { name: "architecture", values: [arch] },
        { name: "state", values: ["available"] },
    ];
    if (ami !== undefined) {
        // No owner filter: the image-id filter makes the match exact.
        return { mostRecent: false, filters: [{ name: "image-id", values: [ami] }, ...common] };
    }
    return { owners: ["amazon"], mostRecent: true, filters: [{ name: "name", values: [DLAMI_NAME_PATTERN[arch]] }, ...common] };
}

/**
 * Canonical's account that publishes the official Ubuntu AMIs, and the Ubuntu 22.04 server name pattern.
 * source: https://documentation.ubuntu.com/aws/aws-how-to/instances/find-ubuntu-images/
 */
export const CANONICAL_OWNER_ID = "099720109477";

/** The bastion: a plain Ubuntu 22.04 server (same login user as the nodes, so one ProxyJump user works). */
export function bastionAmiQuery(arch: "x86_64" | "arm64"): AmiQuery {
    const deb = arch === "arm64" ? "arm64" : "amd64";
    return {
        owners: [CANONICAL_OWNER_ID],
        mostRecent: true,
        filters: [
            { name: "name", values: [`ubuntu/images/hvm-ssd/ubuntu-jammy-22.04-${deb}-server-*`] },
            { name: "architecture", values: [arch] },
            { name: "state", values: ["available"] },
        ],
    };
}
