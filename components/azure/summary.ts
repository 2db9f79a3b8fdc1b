import { FabricPlan } from "../plan";

/** What the cluster's fabric is and what nccl-tests must reach on it; an output of AzureInfinibandCluster. */
export interface AzureFabricSummary {
    vmSize: string;
    nodes: number;
    gpuModel: string;
    gpusPerNode: number;
    /** InfiniBand HCAs per VM and their guest names (mlx5_ib0..) */
    hcasPerNode: number;
    hcaNames: string[];
    hcaRateGbps?: number;
    rdmaGbpsPerNode: number;
    gpuDirectRdma: boolean;
    /** `publisher:offer:sku:version` of the node image */
    image: string;
    /** NCCL_TOPO_FILE the Ubuntu-HPC image ships for the size; undefined where it ships none */
    ncclTopoFile?: string;
    /** most VMs the scale set (= one InfiniBand partition) may hold */
    partitionLimit: number;
    /** all_reduce busbw (GB/s) across all nodes: the pass floor, the published figure, and where both come from */
    minBusbwGBps: number;
    expectedBusbwGBps?: number;
    busbwSource: string;
}

/** Pure: the summary, read from the plan (which decided all of it). */
export function azureFabricSummary(plan: FabricPlan): AzureFabricSummary {
    const az = plan.azure!;
    const all = plan.validation.allNodes;
    const img = az.image;
    return {
        vmSize: az.vmSize,
        nodes: plan.nodes.count,
        gpuModel: plan.nodes.gpuModel,
        gpusPerNode: plan.nodes.gpusPerNode,
        hcasPerNode: plan.nics.perNode.length,
        hcaNames: plan.nics.perNode.map((n) => n.name),
        hcaRateGbps: plan.nics.perNode[0]?.rateGbps,
        rdmaGbpsPerNode: plan.nics.rdmaGbpsPerNode,
        gpuDirectRdma: plan.nics.gpuDirectRdma,
        image: `${img.publisher}:${img.offer}:${img.sku}:${img.version}`,
        ncclTopoFile: az.topoFile,
        partitionLimit: az.partitionLimit,
        minBusbwGBps: all.minBusbwGBps,
        expectedBusbwGBps: all.expectedBusbwGBps,
        busbwSource: all.source,
    };
}
