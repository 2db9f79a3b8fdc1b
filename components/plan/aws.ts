import { AwsInstanceType } from "../catalog/aws";
import { AwsSpec } from "../spec";

/** One entry of the launch template's networkInterfaces list. */
export interface EfaInterface {
    networkCardIndex: number;
    deviceIndex: number;
    /** `interface` = ENA; `efa` = EFA + ENA with an IP; `efa-only` = EFA device, no IP */
    interfaceType: "interface" | "efa" | "efa-only";
}

/**
 * The interface per network card that gives every card its EFA device, as AWS documents it today.
 * source: https://docs.aws.amazon.com/AWSEC2/latest/UserGuide/efa-acc-inst-types.html (aws-efa.md §2.1):
 *  - card 0 / device 0 is an ENA `interface` (efa-only cannot be primary);
 *  - when card 0 supports EFA (MaximumEfaInterfaces == MaximumNetworkCards, the rule of
 *    aws/aws-parallelcluster:cli/src/pcluster/templates/queues_stack.py) it gets `efa-only` at device 1,
 *    or, when card 0 takes a single interface, the primary becomes `efa` instead;
 *  - every other card gets `efa-only` at device 0 (p6-b300: cards 1-16, card 0 ENA only,
 *    https://github.com/aws/aws-parallelcluster/issues/7143).
 */
export function efaInterfaceLayout(type: AwsInstanceType): EfaInterface[] {
    const card0SupportsEfa = type.maxEfaInterfaces === type.networkCards;
    const layout: EfaInterface[] = [];
    if (card0SupportsEfa && type.enisPerCard < 2) {
        layout.push({ networkCardIndex: 0, deviceIndex: 0, interfaceType: "efa" });
    } else {
        layout.push({ networkCardIndex: 0, deviceIndex: 0, interfaceType: "interface" });
        if (card0SupportsEfa) layout.push({ networkCardIndex: 0, deviceIndex: 1, interfaceType: "efa-only" });
    }
    for (let card = 1; card < type.networkCards; card++) {
        layout.push({ networkCardIndex: card, deviceIndex: 0, interfaceType: "efa-only" });
    }
    return layout;
}

export function efaDeviceCount(layout: EfaInterface[]): number {
    return layout.filter((i) => i.interfaceType !== "interface").length;
}

export type AwsPlacement =
    | { kind: "placement-group"; strategy: "cluster" }
    | { kind: "capacity-block"; reservationId: string; instanceCount: number }
    | { kind: "capacity-reservation"; reservationId: string; instanceCount: number; placementGroup: boolean }
    | { kind: "none" };

/**
 * Where the nodes land. A capacity block places instances in an UltraCluster and warns against a placement
 * group (aws-parallelcluster PlacementGroupCapacityTypeValidator, aws-efa.md §2.3); otherwise EFA wants a
 * cluster placement group (EfaPlacementGroupValidator).
 */
export function awsPlacement(aws: AwsSpec): AwsPlacement {
    if (aws.capacityBlock) {
        return { kind: "capacity-block", reservationId: aws.capacityBlock.reservationId, instanceCount: aws.capacityBlock.instanceCount };
    }
    if (aws.capacityReservation) {
        // a new placement group is unrelated to the reservation: ParallelCluster warns against that, and an ODCR
        // only gives proximity when it was made in a placement group (aws-efa.md §2.5); opt in explicitly
        const pg = aws.placementGroup ?? false;
        return {
            kind: "capacity-reservation", reservationId: aws.capacityReservation.reservationId,
            instanceCount: aws.capacityReservation.instanceCount, placementGroup: pg,
        };
    }
    return aws.placementGroup ?? true ? { kind: "placement-group", strategy: "cluster" } : { kind: "none" };
}

/**
 * NCCL environment for EFA. Only what the current stack still needs (aws/aws-ofi-nccl:doc/efa-env-var.md via
 * aws-efa.md §4): FI_PROVIDER=efa is harmless and still set by AWS scripts; NCCL_SOCKET_IFNAME keeps the
 * bootstrap off docker/loopback; FI_EFA_USE_DEVICE_RDMA / RDMAV_FORK_SAFE / NCCL_PROTO are deliberately absent.
 */
export function awsNcclEnv(): Record<string, string> {
    return {
        FI_PROVIDER: "efa",
        NCCL_SOCKET_IFNAME: "^docker,lo,veth",
    };
}

/**
 * What validation sets to make a fallback fail rather than run slow. The plugin names itself "AWS Libfabric" up to
 * v1.12 and "Libfabric" from v1.13, and accepts "AWS Libfabric" as an alias (aws/aws-ofi-nccl:
 * src/nccl_ofi_interface_nvidia.cpp, aws-efa.md §3.2), so this value forces the plugin with old and new releases.
 */
export const AWS_FORCED_NET: Record<string, string> = { NCCL_NET: "AWS Libfabric" };
