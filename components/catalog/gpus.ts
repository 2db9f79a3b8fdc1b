import { GpuModel } from "./types";

/**
 * GPU models seen in the AWS, Azure and bare-metal catalogs.
 * source: NVIDIA data sheets as quoted in ../shared/research/aws-efa.md §1 and azure-ib.md §1
 * (A100 40/80 GB, H100 80 GB, H200 141 GB, MI300X 192 GB). A10G/L4 24 GB and L40S 48 GB: NVIDIA product
 * pages (https://www.nvidia.com/en-us/data-center/l4/, /l40s/; A10G per https://aws.amazon.com/ec2/instance-types/g5/).
 */
export const GPUS: Record<string, GpuModel> = {
    "A100-40GB": { name: "A100-40GB", memoryGiB: 40, collectives: "nccl", family: "ampere" },
    "A100-80GB": { name: "A100-80GB", memoryGiB: 80, collectives: "nccl", family: "ampere" },
    "H100-80GB": { name: "H100-80GB", memoryGiB: 80, collectives: "nccl", family: "hopper" },
    "H200-141GB": { name: "H200-141GB", memoryGiB: 141, collectives: "nccl", family: "hopper" },
    // source: aws-efa.md §1 "8x B200 (~179 GiB each)"
    "B200": { name: "B200", memoryGiB: 179, collectives: "nccl", family: "blackwell" },
    "B300": { name: "B300", collectives: "nccl", family: "blackwell" },
    "A10G": { name: "A10G", memoryGiB: 24, collectives: "nccl", family: "ampere" },
    "L4": { name: "L4", memoryGiB: 24, collectives: "nccl", family: "ada" },
    "L40S": { name: "L40S", memoryGiB: 48, collectives: "nccl", family: "ada" },
    "MI300X": { name: "MI300X", memoryGiB: 192, collectives: "rccl", family: "cdna3" },
};

/** The catalog entry for a model name as users write it: exact ("H100-80GB") or a unique prefix ("H100"). */
export function gpuModel(name: string): GpuModel | undefined {
    if (GPUS[name]) return GPUS[name];
    const matches = Object.values(GPUS).filter((g) => g.name.toLowerCase().startsWith(name.toLowerCase()));
    return matches.length === 1 ? matches[0] : undefined;
}

/**
 * Largest nccl-tests message that fits the GPU: with -c 1 each rank holds the send, receive and expected-result
 * buffers at the largest size (NVIDIA/nccl-tests src/common.cu, AllocateBuffs), so a third of the memory, rounded
 * down to a power of two. undefined when the memory is not known.
 */
export function maxMessageBytes(model: string): number | undefined {
    const mem = gpuModel(model)?.memoryGiB;
    if (mem === undefined) return undefined;
    const third = (mem * 1024 ** 3) / 3;
    return 2 ** Math.floor(Math.log2(third));
}
