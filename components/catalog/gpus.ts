import { GpuModel } from "./types";

/**
 * GPU models seen in the AWS, Azure and bare-metal catalogs.
 * source: NVIDIA data sheets as quoted in ../shared/research/aws-efa.md §1 and azure-ib.md §1
 * (A100 40/80 GB, H100 80 GB, H200 141 GB, MI300X 192 GB). A10G/L4 24 GB and L40S 48 GB: NVIDIA product
 * pages (https://www.nvidia.com/en-us/data-center/l4/, /l40s/; A10G per https://aws.amazon.com/ec2/instance-types/g5/).
 *
 * PCIe and NVLink (the node health grade, components/health):
 * - A100: "PCIe Gen4: 64GB/s", "NVLink: 600GB/s" (https://www.nvidia.com/content/dam/en-zz/Solutions/Data-Center/a100/pdf/nvidia-a100-datasheet-us-nvidia-1758950-r4-web.pdf);
 *   twelve third-generation NVLink links per GPU (NVIDIA A100 Tensor Core GPU Architecture whitepaper, "NVLink"); a
 *   real 8x A100-SXM4-80GB `nvidia-smi nvlink --status` lists Link 0-11 per GPU (leptonai/gpud testdata, test/fixtures/health/README.md).
 * - H100 / H200 SXM: "PCIe Gen5: 128GB/s", "NVLink: 900GB/s" (https://resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet,
 *   https://www.nvidia.com/en-us/data-center/h200/); 18 fourth-generation NVLink links per GPU (NVIDIA H100 Tensor Core GPU Architecture
 *   whitepaper); a real HGX H100 `lspci -vv` shows each GPU at LnkCap Speed 32GT/s, Width x16 (gpud testdata).
 * - L4, L40S: "PCIe Gen4 x16" and no NVLink (the product pages above). B200: 18 NVLink links (its entry). B200's PCIe, B300,
 *   A10G, MI300X: not stated here, left unknown.
 */
export const GPUS: Record<string, GpuModel> = {
    "A100-40GB": { name: "A100-40GB", memoryGiB: 40, collectives: "nccl", family: "ampere", pcie: { gen: 4, width: 16 }, nvlinkLinks: 12 },
    "A100-80GB": { name: "A100-80GB", memoryGiB: 80, collectives: "nccl", family: "ampere", pcie: { gen: 4, width: 16 }, nvlinkLinks: 12 },
    "H100-80GB": { name: "H100-80GB", memoryGiB: 80, collectives: "nccl", family: "hopper", pcie: { gen: 5, width: 16 }, nvlinkLinks: 18 },
    "H200-141GB": { name: "H200-141GB", memoryGiB: 141, collectives: "nccl", family: "hopper", pcie: { gen: 5, width: 16 }, nvlinkLinks: 18 },
    // source: aws-efa.md §1 "8x B200 (~179 GiB each)". NVLink: fifth generation, 1.8 TB/s GPU-to-GPU per GPU
    // (https://www.nvidia.com/en-us/data-center/hgx/, HGX B200), twice the H100's 900 GB/s over the same 18 links; a real
    // GB200 (the same Blackwell GPU) `nvidia-smi nvlink -s` lists Link 0-17 (NVIDIA/k8s-test-infra#371, test/fixtures/health/README.md)
    "B200": { name: "B200", memoryGiB: 179, collectives: "nccl", family: "blackwell", nvlinkLinks: 18 },
    "B300": { name: "B300", collectives: "nccl", family: "blackwell" },
    "A10G": { name: "A10G", memoryGiB: 24, collectives: "nccl", family: "ampere" },
    "L4": { name: "L4", memoryGiB: 24, collectives: "nccl", family: "ada", pcie: { gen: 4, width: 16 } },
    "L40S": { name: "L40S", memoryGiB: 48, collectives: "nccl", family: "ada", pcie: { gen: 4, width: 16 } },
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
