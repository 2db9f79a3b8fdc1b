import type {
    AnsibleMode, AwsAccess, AwsNetworkInput, AwsSpecInput, AzureImageInput, AzureSpecInput, ClusterSpecInput, GpuDirectMode, HealthComponent, HealthValidationSpecInput, ImageGeneration,
    OfedSource, QosMode, SchedulerSpecInput, SchedulerType, RoceEcnInput, RoceQosInput, RoceSpecInput, RoceSwitchInput, RoceSwitchRole, RoceUplinkInput, SoftwareComponentName, SoftwareSpecInput, SshSpecInput, ValidationSpecInput, AnsibleSpecInput,
} from "./types";

/*
 * The cluster spec after parseClusterSpec: the typed input (./types.ts) with every default applied. Written out
 * rather than inferred from the zod schema so that the package's declarations never load zod's own (which do not
 * compile in a consumer without esModuleInterop and skipLibCheck); test/spec-types.test.ts fails the type check when
 * these and `z.output` of the schema disagree.
 */

export interface SshSpec extends SshSpecInput {
    allowedCidrs: string[];
    allowInternet: boolean;
    maxPublicShare: number;
}

export interface SoftwareSpec extends SoftwareSpecInput {
    replace: SoftwareComponentName[];
    openKernelModules: boolean;
    gpudirect: GpuDirectMode;
    ofedSource: OfedSource;
}

export interface ValidationSpec extends ValidationSpecInput {
    enabled: boolean;
    minFraction: number;
    iterations: number;
    timeoutMinutes: number;
    maxFailedNodes: number;
    health: HealthValidationSpec;
}

export interface HealthValidationSpec extends HealthValidationSpecInput {
    require: HealthComponent[];
    xidWindowMinutes: number;
    dcgmLevel: number;
}

export interface AnsibleSpec extends AnsibleSpecInput {
    maxFailPercentage: number;
    exclude: string[];
    maxForks: number;
    mode: AnsibleMode;
}

export interface AwsNetwork extends AwsNetworkInput {
    vpcCidr: string;
}

export interface AwsSpec extends AwsSpecInput {
    rootVolumeGiB: number;
    network: AwsNetwork;
    allowNoGpuDirect: boolean;
    access: AwsAccess;
    containersUseInstanceRole: boolean;
    bastionInstanceType: string;
}

export interface AzureImage extends AzureImageInput {
    version: string;
    generation: ImageGeneration;
}

export interface AzureSpec extends AzureSpecInput {
    /** the CIDRs and jump host size are those of the network the kit creates; unused with `network` */
    vnetCidr: string;
    subnetCidr: string;
    image?: AzureImage;
    osDiskGiB: number;
    quotaRaised: boolean;
    passwordAuthentication: boolean;
    jumpHostSize: string;
}

export interface RoceEcn extends RoceEcnInput {
    minBytes: number;
    maxBytes: number;
    maxProbabilityPct: number;
}

export interface RoceQos extends RoceQosInput {
    mode: QosMode;
    roceDscp: number;
    rocePriority: number;
    cnpDscp: number;
    cnpPriority: number;
    ecn: RoceEcn;
    mtu: number;
    gidIndex: number;
}

export interface RoceSwitch extends RoceSwitchInput {
    role: RoceSwitchRole;
    hostPorts: string[];
    uplinks: RoceUplinkInput[];
}

export interface RoceSpec extends RoceSpecInput {
    switches: RoceSwitch[];
    qos: RoceQos;
}

export interface ClusterSpec extends ClusterSpecInput {
    /** GPU node count; on bare metal the number of hosts when the spec leaves it out */
    nodes: number;
    ssh: SshSpec;
    provision: boolean;
    software: SoftwareSpec;
    validation: ValidationSpec;
    ansible: AnsibleSpec;
    tags: Record<string, string>;
    aws?: AwsSpec;
    azure?: AzureSpec;
    roce?: RoceSpec;
    /** with the fabric's defaults applied (components/slurm/spec.ts resolveScheduler) */
    scheduler: SchedulerSpec;
}

export interface SchedulerSpec extends SchedulerSpecInput {
    type: SchedulerType;
    partition: string;
    homeNfs: boolean;
}
