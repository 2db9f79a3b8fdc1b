import { BusbwFigure, GiB } from "./types";

/**
 * Azure VM sizes with InfiniBand. Facts from ../shared/research/azure-ib.md §1, §4, §5, which cites
 * MicrosoftDocs/azure-compute-docs size pages and Azure/azurehpc-health-checks conf files.
 */
export interface AzureVmSize {
    name: string;
    /** undefined for CPU-only HPC sizes */
    gpu?: { count: number; model: string };
    /** InfiniBand HCAs per VM and the rate each must link at (NHC `check_hw_ib <rate>`) */
    ib: { hcas: number; rateGbps: number; generation: "HDR" | "NDR" };
    /** guest device names of the IB HCAs on the Azure HPC images (persistent naming) */
    hcaNames: string[];
    arch: "x86_64" | "arm64";
    /** every ND GPU size with IB runs only Gen2 images */
    gen2Only: boolean;
    nvswitch: boolean;
    /** NCCL topology file the Ubuntu-HPC image ships for the size */
    ncclTopoFile?: string;
    /** GPU-to-HCA pairing is 1:1 with GPUDirect RDMA on the ND sizes */
    gpuDirectRdma: boolean;
    busbw: BusbwFigure[];
    /** default image SKU of microsoft-dsvm:ubuntu-hpc for the size */
    defaultImageSku: string;
    source: string;
}

const NHC = "Azure/azurehpc-health-checks:conf";
const mlx = (n: number) => Array.from({ length: n }, (_, i) => `mlx5_ib${i}`);

export const AZURE_VM_SIZES: AzureVmSize[] = [
    {
        name: "Standard_ND96asr_v4",
        gpu: { count: 8, model: "A100-40GB" },
        ib: { hcas: 8, rateGbps: 200, generation: "HDR" },
        hcaNames: mlx(8),
        arch: "x86_64",
        gen2Only: true,
        nvswitch: true,
        // source: Azure/azhpc-images:components/customizations/ndv4.sh
        ncclTopoFile: "/opt/microsoft/ndv4-topo.xml",
        gpuDirectRdma: true,
        // source: Azure/azurehpc-health-checks:conf/nd96asr_v4.conf (single-node NVLink >= 228 GB/s at 8G)
        busbw: [{ gbps: 228, bytes: 8 * GiB, nodes: 1, kind: "threshold", source: `${NHC}/nd96asr_v4.conf` }],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-docs:articles/virtual-machines/nda100-v4-series.md",
    },
    {
        name: "Standard_ND96amsr_A100_v4",
        gpu: { count: 8, model: "A100-80GB" },
        ib: { hcas: 8, rateGbps: 200, generation: "HDR" },
        hcaNames: mlx(8),
        arch: "x86_64",
        gen2Only: true,
        nvswitch: true,
        ncclTopoFile: "/opt/microsoft/ndv4-topo.xml",
        gpuDirectRdma: true,
        busbw: [{ gbps: 228, bytes: 16 * GiB, nodes: 1, kind: "threshold", source: `${NHC}/nd96amsr_a100_v4.conf` }],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-docs:articles/virtual-machines/ndm-a100-v4-series.md",
    },
    {
        name: "Standard_ND96isr_H100_v5",
        gpu: { count: 8, model: "H100-80GB" },
        ib: { hcas: 8, rateGbps: 400, generation: "NDR" },
        hcaNames: mlx(8),
        arch: "x86_64",
        gen2Only: true,
        nvswitch: true,
        // source: Azure/azhpc-images:components/customizations/ndv5.sh
        ncclTopoFile: "/opt/microsoft/ndv5-topo.xml",
        gpuDirectRdma: true,
        busbw: [
            { gbps: 460, bytes: 16 * GiB, nodes: 1, kind: "threshold", source: `${NHC}/nd96isr_h100_v5.conf` },
            // source: Azure/ai-infrastructure-on-azure:skills/slurm/sku_performance_baseline/SKILL.md (~450 GB/s at 16G, 8 nodes,
            // SHARP on with hopper.conf's tuning, azure-ib.md §4-5): shown beside the result, never the floor (withSharp)
            { gbps: 450, bytes: 16 * GiB, nodes: 8, kind: "measured", withSharp: true, source: "Azure/ai-infrastructure-on-azure:skills/slurm/sku_performance_baseline/SKILL.md" },
        ],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/gpu-accelerated/includes/ndh100v5-series-summary.md",
    },
    {
        name: "Standard_ND96isr_H200_v5",
        gpu: { count: 8, model: "H200-141GB" },
        ib: { hcas: 8, rateGbps: 400, generation: "NDR" },
        hcaNames: mlx(8),
        arch: "x86_64",
        gen2Only: true,
        nvswitch: true,
        ncclTopoFile: "/opt/microsoft/ndv5-topo.xml",
        gpuDirectRdma: true,
        // the conf says 431 (its README table says 480); the conf is what NHC enforces. No multi-node figure is
        // published for H200 v5; it has the H100 v5's rails (8 x 400 Gb/s NDR ConnectX-7, the series summaries), and
        // the H100's one multi-node figure was measured with SHARP, which validation does not run: both sizes grade
        // multi-node runs by the same line-rate rule (plan/expectation.ts).
        busbw: [{ gbps: 431, bytes: 16 * GiB, nodes: 1, kind: "threshold", source: `${NHC}/nd96isr_h200_v5.conf` }],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/gpu-accelerated/includes/nd-h200-v5-series-summary.md",
    },
    {
        name: "Standard_ND96isr_MI300X_v5",
        gpu: { count: 8, model: "MI300X" },
        ib: { hcas: 8, rateGbps: 400, generation: "NDR" },
        hcaNames: mlx(8),
        arch: "x86_64",
        gen2Only: true,
        nvswitch: false,
        gpuDirectRdma: true,
        // RCCL, not NCCL: source Azure/azurehpc-health-checks:conf/nd96isr_mi300x_v5.conf (314 GB/s at 16G)
        busbw: [{ gbps: 314, bytes: 16 * GiB, nodes: 1, kind: "threshold", source: `${NHC}/nd96isr_mi300x_v5.conf` }],
        // source: Azure/azhpc-images:README.md (ubuntu-hpc 2204-rocm for MI300X)
        defaultImageSku: "2204-rocm",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/gpu-accelerated/includes/ndmi300xv5-series-summary.md",
    },
    {
        name: "Standard_HB120rs_v3",
        ib: { hcas: 1, rateGbps: 200, generation: "HDR" },
        hcaNames: mlx(1),
        arch: "x86_64",
        gen2Only: false,
        nvswitch: false,
        gpuDirectRdma: false,
        busbw: [],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/includes/hbv3-series-summary.md",
    },
    {
        name: "Standard_HB176rs_v4",
        ib: { hcas: 1, rateGbps: 400, generation: "NDR" },
        hcaNames: mlx(1),
        arch: "x86_64",
        gen2Only: false,
        nvswitch: false,
        gpuDirectRdma: false,
        busbw: [],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/includes/hbv4-series-summary.md",
    },
    {
        name: "Standard_HX176rs",
        ib: { hcas: 1, rateGbps: 400, generation: "NDR" },
        hcaNames: mlx(1),
        arch: "x86_64",
        gen2Only: false,
        nvswitch: false,
        gpuDirectRdma: false,
        busbw: [],
        defaultImageSku: "2204",
        source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/hx-series.md",
    },
];

/**
 * Sizes that exist without InfiniBand, so a user who picks one gets a precise message rather than
 * "unknown size". source: azure-ib.md §1 (`Standard_ND96is_H100_v5` has no `r`, its NHC conf has no IB checks).
 */
export const AZURE_NON_IB_SIZES: Record<string, string> = {
    "Standard_ND96is_H100_v5": "Standard_ND96isr_H100_v5",
    "Standard_ND96is_H200_v5": "Standard_ND96isr_H200_v5",
};

/**
 * One InfiniBand partition = one VM scale set with singlePlacementGroup=true: 100 VMs by default, 300 after a
 * support request. source: MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/high-performance-compute/setup-infiniband.md
 */
export const AZURE_IB_PARTITION = { defaultMaxVms: 100, raisedMaxVms: 300 };

/** Admin user of the Azure HPC docs' examples; any name Azure allows works (components/azure checks them). */
export const AZURE_DEFAULT_ADMIN = "azureuser";

/** Azure reserves this range for its RDMA network; the VNet must not overlap it. source: setup-infiniband.md */
export const AZURE_RDMA_RESERVED_CIDR = "172.16.0.0/16";

const BY_NAME = new Map(AZURE_VM_SIZES.map((s) => [s.name.toLowerCase(), s]));

/** Azure size names are case-insensitive in the API; the catalog keeps the documented spelling. */
export function azureVmSize(name: string): AzureVmSize | undefined {
    return BY_NAME.get(name.toLowerCase());
}

/**
 * vCPUs and memory of the ND sizes, for Slurm's NodeName line (azure-ib.md §1, from the size pages the entries above
 * cite). Azure's size pages give neither cores nor threads per core, so the line carries CPUs only; a size missing
 * here needs cluster.scheduler.node, the figures `slurmd -C` prints (slurm/spec.ts).
 */
export const AZURE_HOST_CPU_MEMORY: Readonly<Record<string, { vcpus: number; memoryMiB: number; source: string }>> = {
    // source: azure-ib.md §1 "AMD EPYC 7V12, 900 GiB" (nda100-v4-series.md); 96 vCPUs: the size name's number (vm-naming-conventions)
    Standard_ND96asr_v4: { vcpus: 96, memoryMiB: 900 * 1024, source: "MicrosoftDocs/azure-docs:articles/virtual-machines/nda100-v4-series.md" },
    // source: azure-ib.md §1 "1900 GiB RAM" (ndm-a100-v4-series.md)
    Standard_ND96amsr_A100_v4: { vcpus: 96, memoryMiB: 1900 * 1024, source: "MicrosoftDocs/azure-docs:articles/virtual-machines/ndm-a100-v4-series.md" },
    // source: azure-ib.md §1 "Sapphire Rapids, 1900 GiB" (ndh100v5-series-summary.md)
    Standard_ND96isr_H100_v5: { vcpus: 96, memoryMiB: 1900 * 1024, source: "MicrosoftDocs/azure-compute-docs:articles/virtual-machines/sizes/gpu-accelerated/includes/ndh100v5-series-summary.md" },
    // source: microsoft/aspire@5bd693ae:src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs, "Standard_ND96isr_H200_v5 --
    // 96 vCPUs -- 1850 GB RAM -- 8 GPU(s)" (the same list gives ND96isr_H100_v5 1900 GB, the size page's 1900 GiB)
    Standard_ND96isr_H200_v5: { vcpus: 96, memoryMiB: 1850 * 1024, source: "microsoft/aspire:src/Aspire.Hosting.Azure.Kubernetes/AksNodeVmSizes.cs" },
};
