import { BusbwFigure, GiB } from "./types";

/**
 * EFA-capable EC2 instance types.
 *
 * Network facts are EC2 DescribeInstanceTypes output (NetworkInfo.EfaInfo.MaximumEfaInterfaces,
 * MaximumNetworkCards, NetworkCards[].MaximumNetworkInterfaces) as captured in
 * getmoto/moto:moto/ec2/resources/instance_types.json, summarised in ../shared/research/aws-efa.md §1.
 * Where a figure is not published it is left undefined, never guessed.
 */
export interface AwsInstanceType {
    name: string;
    gpu: { count: number; model: string };
    arch: "x86_64" | "arm64";
    /** MaximumNetworkCards */
    networkCards: number;
    /** EfaInfo.MaximumEfaInterfaces */
    maxEfaInterfaces: number;
    /**
     * NetworkCards[].MaximumNetworkInterfaces for card 0 and for every other card. For the g-series the
     * value is the lowest across the listed sizes (8-15 in the capture); the layout only needs to know
     * whether a card takes more than one interface.
     */
    enisPerCard: number;
    /** total EFA bandwidth of the instance, Gb/s */
    efaGbps: number;
    /** GPUDirect RDMA over EFA (P-series from p4d on) */
    gpuDirectRdma: boolean;
    /** NVSwitch systems need NVIDIA Fabric Manager; HGX B200/B300 also NVLSM */
    nvswitch: boolean;
    nvlsm: boolean;
    /** minimum software that supports the type (aws-ofi-nccl release notes, efa-env-var.md) */
    minVersions?: { nccl?: string; awsOfiNccl?: string; efaInstaller?: string; cuda?: string };
    /** published nccl-tests all_reduce busbw figures, best first per node count */
    busbw: BusbwFigure[];
    source: string;
}

const MOTO = "getmoto/moto:moto/ec2/resources/instance_types.json (via ../shared/research/aws-efa.md §1)";
const AWSOME_NCCL = "aws-samples/awsome-distributed-training:micro-benchmarks/nccl-tests/README.md";

function gSeries(
    family: "g5" | "g6" | "g6e",
    model: string,
    sizes: Array<[string, number, number, number]>,
): AwsInstanceType[] {
    // [size, gpus, network cards, EFA Gb/s] per aws-efa.md §1 table rows g5/g6/g6e
    return sizes.map(([size, gpus, cards, gbps]) => ({
        name: `${family}.${size}`,
        gpu: { count: gpus, model },
        arch: "x86_64",
        networkCards: cards,
        maxEfaInterfaces: cards,
        enisPerCard: 8,
        efaGbps: gbps,
        // source: https://github.com/aws/aws-ofi-nccl/issues/547 (maintainer: no GPUDirect RDMA on g6e; P-series only)
        gpuDirectRdma: false,
        nvswitch: false,
        nvlsm: false,
        busbw: [],
        source: MOTO,
    }));
}

export const AWS_INSTANCE_TYPES: AwsInstanceType[] = [
    {
        name: "p4d.24xlarge",
        gpu: { count: 8, model: "A100-40GB" },
        arch: "x86_64",
        networkCards: 4,
        maxEfaInterfaces: 4,
        enisPerCard: 15,
        efaGbps: 400,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: false,
        busbw: [
            // source: skypilot-org/skypilot:examples/aws_efa/README.md (2x p4d, 2 GiB, 4 EFA)
            { gbps: 77.9, bytes: 2 * GiB, nodes: 2, kind: "measured", source: "skypilot-org/skypilot:examples/aws_efa/README.md" },
        ],
        source: MOTO,
    },
    {
        name: "p4de.24xlarge",
        gpu: { count: 8, model: "A100-80GB" },
        arch: "x86_64",
        networkCards: 4,
        maxEfaInterfaces: 4,
        enisPerCard: 15,
        efaGbps: 400,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: false,
        busbw: [{ gbps: 78.3, bytes: 2 * GiB, nodes: 2, kind: "measured", source: AWSOME_NCCL }],
        source: MOTO,
    },
    {
        name: "p5.48xlarge",
        gpu: { count: 8, model: "H100-80GB" },
        arch: "x86_64",
        networkCards: 32,
        maxEfaInterfaces: 32,
        enisPerCard: 2,
        efaGbps: 3200,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: false,
        // source: aws/aws-ofi-nccl:doc/efa-env-var.md "P5 minimums" (CUDA 12.0, NCCL 2.18.0, plugin 1.7.2, installer 1.29.0)
        minVersions: { nccl: "2.18.0", awsOfiNccl: "1.7.2", efaInstaller: "1.29.0", cuda: "12.0" },
        busbw: [
            // source: awsome-distributed-training:micro-benchmarks/nccl-tests/aws-batch/README.md (1 node, 16 GiB, in-place 483.35)
            { gbps: 483.35, bytes: 16 * GiB, nodes: 1, kind: "measured", source: "aws-samples/awsome-distributed-training:micro-benchmarks/nccl-tests/aws-batch/README.md" },
            { gbps: 487, bytes: 16 * GiB, nodes: 2, kind: "measured", source: AWSOME_NCCL },
            // source: crazyguitar/aws-gpu-communication-benchmark:data/nccl_all_reduce.csv (HyperPod p5, 8 GiB)
            { gbps: 357, bytes: 8 * GiB, nodes: 4, kind: "measured", source: "crazyguitar/aws-gpu-communication-benchmark:data/nccl_all_reduce.csv" },
            { gbps: 354, bytes: 8 * GiB, nodes: 8, kind: "measured", source: "crazyguitar/aws-gpu-communication-benchmark:data/nccl_all_reduce.csv" },
            { gbps: 354, bytes: 8 * GiB, nodes: 16, kind: "measured", source: "crazyguitar/aws-gpu-communication-benchmark:data/nccl_all_reduce.csv" },
            { gbps: 321, bytes: 8 * GiB, nodes: 32, kind: "measured", source: "crazyguitar/aws-gpu-communication-benchmark:data/nccl_all_reduce.csv" },
        ],
        source: MOTO,
    },
    {
        name: "p5e.48xlarge",
        gpu: { count: 8, model: "H200-141GB" },
        arch: "x86_64",
        networkCards: 32,
        maxEfaInterfaces: 32,
        enisPerCard: 2,
        efaGbps: 3200,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: false,
        busbw: [],
        source: MOTO,
    },
    {
        name: "p5en.48xlarge",
        gpu: { count: 8, model: "H200-141GB" },
        arch: "x86_64",
        networkCards: 16,
        maxEfaInterfaces: 16,
        enisPerCard: 4,
        efaGbps: 3200,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: false,
        // source: aws/aws-ofi-nccl:RELEASENOTES.md (P5en support from v1.13.0)
        minVersions: { awsOfiNccl: "1.13.0" },
        busbw: [],
        source: MOTO,
    },
    {
        name: "p6-b200.48xlarge",
        gpu: { count: 8, model: "B200" },
        arch: "x86_64",
        networkCards: 8,
        maxEfaInterfaces: 8,
        enisPerCard: 4,
        efaGbps: 3200,
        gpuDirectRdma: true,
        nvswitch: true,
        // source: https://github.com/awslabs/amazon-eks-ami/pull/2239 (HGX B200 needs NVLSM + ib_umad for Fabric Manager)
        nvlsm: true,
        // source: aws/aws-ofi-nccl:RELEASENOTES.md (P6-B200 support from v1.15.0); CUDA 12.8 is the first toolkit
        // that builds for Blackwell (https://docs.nvidia.com/cuda/blackwell-compatibility-guide/ §1.4.2)
        minVersions: { awsOfiNccl: "1.15.0", cuda: "12.8" },
        busbw: [],
        source: MOTO,
    },
    {
        name: "p6-b300.48xlarge",
        gpu: { count: 8, model: "B300" },
        arch: "x86_64",
        // 17 cards, 16 EFA: card 0 is ENA-only (https://github.com/aws/aws-parallelcluster/issues/7143)
        networkCards: 17,
        maxEfaInterfaces: 16,
        enisPerCard: 4,
        efaGbps: 6400,
        gpuDirectRdma: true,
        nvswitch: true,
        nvlsm: true,
        // source: aws/aws-ofi-nccl:RELEASENOTES.md (P6-B300 support from v1.18.0); B300 is SM103, first built by
        // CUDA 13.0 (NVIDIA/cutlass docs, architectures/blackwell "Supported GPUs" table)
        minVersions: { awsOfiNccl: "1.18.0", cuda: "13.0" },
        busbw: [],
        source: MOTO,
    },
    ...gSeries("g5", "A10G", [["8xlarge", 1, 1, 25], ["12xlarge", 4, 1, 40], ["16xlarge", 1, 1, 25], ["24xlarge", 4, 1, 50], ["48xlarge", 8, 1, 100]]),
    ...gSeries("g6", "L4", [["8xlarge", 1, 1, 25], ["12xlarge", 4, 1, 40], ["16xlarge", 1, 1, 25], ["24xlarge", 4, 1, 50], ["48xlarge", 8, 1, 100]]),
    ...gSeries("g6e", "L40S", [["8xlarge", 1, 1, 25], ["12xlarge", 4, 1, 100], ["16xlarge", 1, 1, 35], ["24xlarge", 4, 2, 200], ["48xlarge", 8, 4, 400]]),
];

/**
 * The aws-ofi-nccl release each EFA installer bundles. source: AWS EFA installer changelog
 * (https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-changelog.html, aws-efa.md §3.1).
 */
export const EFA_INSTALLER_OFI_NCCL: Record<string, string> = {
    "1.38.0": "1.13.2",
    "1.43.2": "1.16.3",
    "1.47.0": "1.18.0",
    "1.50.0": "1.21.1",
    "1.51.0": "1.22.0",
};

/**
 * The Deep Learning AMIs and Canonical's Ubuntu AMIs (the bastion) log in as `ubuntu`.
 * source: https://docs.aws.amazon.com/dlami/latest/devguide/launch-config.html
 */
export const DLAMI_SSH_USER = "ubuntu";

const BY_NAME = new Map(AWS_INSTANCE_TYPES.map((t) => [t.name, t]));

export function awsInstanceType(name: string): AwsInstanceType | undefined {
    return BY_NAME.get(name);
}

/**
 * CPU and memory of an instance type, for Slurm's NodeName line: DescribeInstanceTypes `VCpuInfo.DefaultVCpus`,
 * `DefaultCores`, `DefaultThreadsPerCore` and `MemoryInfo.SizeInMiB`. EC2 publishes no socket count, so the socket
 * layout stays unknown (plan/scheduler.ts says what the NodeName line does about it).
 */
export interface HostCpuMemory {
    vcpus: number;
    cores: number;
    threadsPerCore: number;
    memoryMiB: number;
    source: string;
}

const MOTO_TYPES = "getmoto/moto@0af643a5dbfc98797f08ee64f5be3ef8002d56ff:moto/ec2/resources/instance_types.json (DescribeInstanceTypes capture: VCpuInfo, MemoryInfo)";

/** Per EFA type (AWS_INSTANCE_TYPES by name); a type missing here needs cluster.scheduler.node (slurm/spec.ts). */
export const AWS_HOST_CPU_MEMORY: Readonly<Record<string, HostCpuMemory>> = {
    "p4d.24xlarge": { vcpus: 96, cores: 48, threadsPerCore: 2, memoryMiB: 1179648, source: MOTO_TYPES },
    "p4de.24xlarge": { vcpus: 96, cores: 48, threadsPerCore: 2, memoryMiB: 1179648, source: MOTO_TYPES },
    "p5.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 2097152, source: MOTO_TYPES },
    "p5e.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 2097152, source: MOTO_TYPES },
    "p5en.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 2097152, source: MOTO_TYPES },
    "p6-b200.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 2097152, source: MOTO_TYPES },
    "p6-b300.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 4194304, source: MOTO_TYPES },
    "g5.8xlarge": { vcpus: 32, cores: 16, threadsPerCore: 2, memoryMiB: 131072, source: MOTO_TYPES },
    "g5.12xlarge": { vcpus: 48, cores: 24, threadsPerCore: 2, memoryMiB: 196608, source: MOTO_TYPES },
    "g5.16xlarge": { vcpus: 64, cores: 32, threadsPerCore: 2, memoryMiB: 262144, source: MOTO_TYPES },
    "g5.24xlarge": { vcpus: 96, cores: 48, threadsPerCore: 2, memoryMiB: 393216, source: MOTO_TYPES },
    "g5.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 786432, source: MOTO_TYPES },
    "g6.8xlarge": { vcpus: 32, cores: 16, threadsPerCore: 2, memoryMiB: 131072, source: MOTO_TYPES },
    "g6.12xlarge": { vcpus: 48, cores: 24, threadsPerCore: 2, memoryMiB: 196608, source: MOTO_TYPES },
    "g6.16xlarge": { vcpus: 64, cores: 32, threadsPerCore: 2, memoryMiB: 262144, source: MOTO_TYPES },
    "g6.24xlarge": { vcpus: 96, cores: 48, threadsPerCore: 2, memoryMiB: 393216, source: MOTO_TYPES },
    "g6.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 786432, source: MOTO_TYPES },
    "g6e.8xlarge": { vcpus: 32, cores: 16, threadsPerCore: 2, memoryMiB: 262144, source: MOTO_TYPES },
    "g6e.12xlarge": { vcpus: 48, cores: 24, threadsPerCore: 2, memoryMiB: 393216, source: MOTO_TYPES },
    "g6e.16xlarge": { vcpus: 64, cores: 32, threadsPerCore: 2, memoryMiB: 524288, source: MOTO_TYPES },
    "g6e.24xlarge": { vcpus: 96, cores: 48, threadsPerCore: 2, memoryMiB: 786432, source: MOTO_TYPES },
    "g6e.48xlarge": { vcpus: 192, cores: 96, threadsPerCore: 2, memoryMiB: 1572864, source: MOTO_TYPES },
};
