import { AzureVmSize } from "../catalog/azure";
import { UBUNTU_HPC_PINNED_VERSION } from "../catalog/images";
import { AzureSpec } from "../spec";

export interface AzureImage {
    publisher: string;
    offer: string;
    sku: string;
    version: string;
}

/**
 * Default image: the Gen2 Ubuntu HPC image, which ships DOCA-OFED, the driver, NCCL, topology files and
 * nccl-tests, at the release whose manifest the software plan reads. source: Azure/azhpc-images:README.md (microsoft-dsvm:ubuntu-hpc:2204 / 2404, azure-ib.md §3)
 */
export function azureImage(az: AzureSpec, size: AzureVmSize): AzureImage {
    if (az.image) {
        const { publisher, offer, sku, version } = az.image;
        return { publisher, offer, sku, version };
    }
    // an exact release, not `latest`: a scale-out weeks later would boot another stack (catalog/images.ts)
    return { publisher: "microsoft-dsvm", offer: "ubuntu-hpc", sku: size.defaultImageSku, version: UBUNTU_HPC_PINNED_VERSION[size.defaultImageSku]?.version ?? "latest" };
}

/**
 * NCCL environment on ND sizes, as the Ubuntu-HPC image writes /etc/nccl.conf and as Azure's own NCCL runs
 * set it (Azure/azhpc-images:components/customizations/ndv4.sh, ndv5.sh; Azure/azurehpc-health-checks
 * customTests/azure_nccl_allreduce.nhc; azure-ib.md §4). NCCL_IB_HCA=mlx5_ib is a prefix that keeps the
 * AccelNet VF (mlx5_an*) out of the data path (third-party scripts, azure-ib.md §4 "optional guard").
 */
export function azureNcclEnv(size: AzureVmSize): Record<string, string> {
    const env: Record<string, string> = {
        NCCL_IB_PCI_RELAXED_ORDERING: "1",
        NCCL_SOCKET_IFNAME: "eth0",
        CUDA_DEVICE_ORDER: "PCI_BUS_ID",
        NCCL_IB_HCA: "mlx5_ib",
    };
    if (size.ncclTopoFile) {
        env.NCCL_TOPO_FILE = size.ncclTopoFile;
        env.NCCL_IGNORE_CPU_AFFINITY = "1";
    }
    return env;
}

/**
 * NCCL's own verbs transport (InfiniBand, and RoCE too): with this set a fallback to sockets fails instead of
 * running slow (NCCL_NET, NVIDIA NCCL environment variable docs).
 */
export const IB_FORCED_NET: Record<string, string> = { NCCL_NET: "IB" };
