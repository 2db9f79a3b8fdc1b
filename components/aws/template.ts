import type * as pulumi from "@pulumi/pulumi";
import type { AwsPlacement, EfaInterface } from "../plan/aws";

/*
 * Pure mapping from the plan to launch-template blocks. The component passes the ids of resources it created;
 * nothing here decides anything the plan has not decided already.
 */

/** One `networkInterfaces[]` entry as `aws.ec2.LaunchTemplate` takes it. */
export interface TemplateInterface {
    networkCardIndex: number;
    deviceIndex: number;
    interfaceType: EfaInterface["interfaceType"];
    /**
     * Security groups go on every interface: a launch template with `networkInterfaces` cannot use
     * `vpcSecurityGroupIds`. source: https://docs.aws.amazon.com/pcs/latest/userguide/working-with_networking_efa_create-lt.html
     */
    securityGroups: pulumi.Input<string>[];
    /** every interface in the one subnet: EFA OS-bypass traffic is not routed between subnets (aws-efa.md §2.3) */
    subnetId: pulumi.Input<string>;
    deleteOnTermination: "true";
    /**
     * Only on the primary (card 0 / device 0), and always "false": AWS refuses a public IP on a launch with several
     * interfaces. source: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_InstanceNetworkInterfaceSpecification.html
     */
    associatePublicIpAddress?: "false";
}

/** The plan's interfaces, one per entry, in plan order, each with the EFA security group and the node subnet. */
export function templateInterfaces(
    interfaces: readonly EfaInterface[],
    securityGroupId: pulumi.Input<string>,
    subnetId: pulumi.Input<string>,
): TemplateInterface[] {
    return interfaces.map((i) => ({
        networkCardIndex: i.networkCardIndex,
        deviceIndex: i.deviceIndex,
        interfaceType: i.interfaceType,
        securityGroups: [securityGroupId],
        subnetId,
        deleteOnTermination: "true",
        ...(i.networkCardIndex === 0 && i.deviceIndex === 0 ? { associatePublicIpAddress: "false" as const } : {}),
    }));
}

/** How the placement plan shows up on the launch template and the group. */
export interface PlacementSettings {
    /** create a `cluster` placement group and put the group in it */
    placementGroup: boolean;
    /** `instanceMarketOptions.marketType` */
    marketType?: "capacity-block";
    /** `capacityReservationSpecification.capacityReservationTarget.capacityReservationId` */
    reservationId?: string;
}

/**
 * source: https://docs.aws.amazon.com/AWSEC2/latest/APIReference/API_LaunchTemplateInstanceMarketOptionsRequest.html
 *   (MarketType `capacity-block`) and https://docs.aws.amazon.com/autoscaling/ec2/userguide/launch-template-capacity-blocks.html
 *   (a Capacity Block is a targeted reservation named in the launch template; the group launches into it);
 * an ODCR is targeted the same way without the market type; the placement group choice is the plan's.
 */
export function placementSettings(placement: AwsPlacement): PlacementSettings {
    switch (placement.kind) {
        case "placement-group":
            return { placementGroup: true };
        case "capacity-block":
            return { placementGroup: false, marketType: "capacity-block", reservationId: placement.reservationId };
        case "capacity-reservation":
            return { placementGroup: placement.placementGroup, reservationId: placement.reservationId };
        case "none":
            return { placementGroup: false };
    }
}
