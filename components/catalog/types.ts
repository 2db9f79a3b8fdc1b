/** A published nccl-tests all_reduce_perf bus bandwidth, as measured by someone else on that hardware. */
export interface BusbwFigure {
    /** in-place busbw in GB/s at `bytes` */
    gbps: number;
    /** message size the figure holds at */
    bytes: number;
    /** nodes in the run (1 = NVLink/NVSwitch inside one node) */
    nodes: number;
    /** where the number comes from */
    source: string;
    /** the kind of source: a health-check pass threshold, or a measured result */
    kind: "measured" | "threshold";
    /**
     * measured with SHARP in-network reduction on (NCCL_COLLNET_ENABLE=1 and the SHARP plugin): not a floor for the
     * kit's validation, which forces NCCL's own IB transport (NCCL_NET=IB) and so never runs SHARP
     */
    withSharp?: boolean;
}

export const GiB = 1024 ** 3;

/** GPU models the kit knows about; facts shared by every fabric. */
export interface GpuModel {
    name: string;
    /** undefined where no public source states it */
    memoryGiB?: number;
    /** vendor of the collective library: NCCL (NVIDIA) or RCCL (AMD) */
    collectives: "nccl" | "rccl";
    /** CUDA/ROCm architecture family, for driver and NCCL choices */
    family: "ampere" | "hopper" | "blackwell" | "ada" | "cdna3";
    /** host PCIe link the GPU is built for (generation, lanes); undefined where no public source states it */
    pcie?: { gen: number; width: number };
    /** NVLink links per GPU on the SXM/HGX board; undefined where no public source states it (or no NVLink) */
    nvlinkLinks?: number;
}
