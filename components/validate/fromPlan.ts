/**
 * The one mapping from the plan to the validation's arguments. `pulumi up` (RdmaCluster → ClusterValidation) and
 * `rdmakit plan` (components/artifacts.ts → validationVars) both call it, so the commands the plan verb shows are the
 * commands the cluster runs. Pure.
 */
import { healthExpectation } from "../health/expect";
import type { FabricPlan } from "../plan";
import type { ClusterValidationArgs, IncastArgs, IncastRail, ValidationRunArgs } from "./component";

/**
 * The inventory group validate.yml targets: the kit's inventory (components/provision/inventory.ts renderInventory)
 * lists the GPU nodes directly under `all`; the bastion is reached through ProxyCommand, never as a host.
 */
export const KIT_INVENTORY_GROUP = "all";

/**
 * Open MPI refuses to start as root unless both variables are set (Open MPI 4+ mpirun man page, "Running as root");
 * bare-metal hosts reached as root are common.
 */
export const OPEN_MPI_AS_ROOT: Record<string, string> = { OMPI_ALLOW_RUN_AS_ROOT: "1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM: "1" };

/**
 * Microsoft's NCCL tuning for the ND H100 v5 multi-node baseline the all-node floor is measured with, applied to the
 * validation runs on the Hopper ND v5 sizes (H100, H200: same 8 x 400 Gb/s NDR ConnectX-7 rails and NVLink,
 * azure-ib.md §1), so the kit runs what the baseline ran. Not included: SHARP (NCCL_COLLNET_ENABLE with the
 * nccl-rdma-sharp-plugins on LD_LIBRARY_PATH), which the baseline also had on; the kit forces NCCL's own IB
 * transport (NCCL_NET=IB), which carries no CollNet, so the baseline's figure is reported beside the result but is
 * not the floor (catalog BusbwFigure.withSharp; plan/expectation.ts grades by the line-rate rule instead).
 * source: Azure/ai-infrastructure-on-azure:infrastructure_validations/slurm/NCCL/configs/hopper.conf
 * (/work/shared/research/azure-ib.md §4: NCCL_MIN_NCHANNELS 32, NCCL_PXN_DISABLE 1, NCCL_P2P_NET_CHUNKSIZE 2097152,
 * NCCL_IB_QPS_PER_CONNECTION 4).
 */
export const AZURE_HOPPER_BASELINE_TUNING: Record<string, string> = {
    NCCL_MIN_NCHANNELS: "32",
    NCCL_PXN_DISABLE: "1",
    NCCL_P2P_NET_CHUNKSIZE: "2097152",
    NCCL_IB_QPS_PER_CONNECTION: "4",
};

/** The Hopper ND v5 sizes the baseline tuning is for. */
function hopperNdV5(plan: FabricPlan): boolean {
    return plan.fabric === "azure-ib" && /^Standard_ND96isrf?_H(?:100|200)_v5$/.test(plan.azure?.vmSize ?? "");
}

/** What the plan cannot know: how the nodes are reached and what a failure does. */
export type ValidationSiteArgs = Omit<ClusterValidationArgs, keyof ValidationRunArgs>;

/** Choices that are not the plan's: the inventory group (@default "all") and when pairs run (@default "auto"). */
export type ValidationRunOptions = Partial<Pick<ValidationRunArgs, "group" | "pairwise">>;

/** What runs, from the plan: for `rdmakit plan`, which has no nodes to reach. */
export function validationArgsFromPlan(plan: FabricPlan, stack: string, options?: ValidationRunOptions): ValidationRunArgs;
/** ClusterValidation's arguments: what runs, from the plan, plus the site (inventory, key, addresses). */
export function validationArgsFromPlan(plan: FabricPlan, stack: string, extras: ValidationSiteArgs & ValidationRunOptions): ClusterValidationArgs;
export function validationArgsFromPlan(
    plan: FabricPlan, stack: string, extras: Partial<ValidationSiteArgs> & ValidationRunOptions = {},
): ValidationRunArgs | ClusterValidationArgs {
    const v = plan.validation;
    return {
        ...extras,
        stack,
        group: extras.group ?? KIT_INVENTORY_GROUP,
        fabric: plan.fabric,
        // the nodes cluster.ansible.exclude leaves out are neither provisioned nor graded
        hosts: v.hostNames.filter((n) => !plan.provision.excluded.includes(n)),
        gpusPerNode: plan.nodes.gpusPerNode,
        // the plan's environment as every job gets it, plus the network forced for validation only
        ncclEnv: {
            ...plan.ncclEnv, ...(hopperNdV5(plan) ? AZURE_HOPPER_BASELINE_TUNING : {}), ...v.forcedNet,
            ...(plan.sshUser === "root" ? OPEN_MPI_AS_ROOT : {}),
        },
        nccltestsDir: v.ncclTestsDir,
        mpiHome: v.mpiHome,
        expectations: { all: v.allNodes, single: v.singleNode, pair: v.pair },
        fixedBytes: v.fixedBytes,
        sweepMaxBytes: v.maxBytes,
        preflight: v.preflight,
        health: healthExpectation(plan),
        iters: v.iterations,
        timeoutSeconds: v.timeoutMinutes * 60,
        ...(v.maxFailedNodes > 0 ? { maxFailedNodes: v.maxFailedNodes } : {}),
        mode: plan.provision.mode,
        ...(plan.scheduler.type === "slurm"
            ? { slurm: { head: plan.scheduler.controller.name, partition: plan.scheduler.partition, mpi: plan.scheduler.mpiDefault } } : {}),
        ...(plan.roce ? { incast: { ...incastArgs(plan.roce.qos), ...(v.preflight.portRateGbps ? { lineRateGbps: v.preflight.portRateGbps } : {}) } } : {}),
    };
}

/**
 * The incast's settings from the RoCE plan: per host one rail (device, netdev, and its leaf where the host's `railPorts`
 * — `<leaf>:<port>` per rail, the fabric model's cabling — names it), its own GID index, the RoCE priority, the ToS the
 * hosts send RoCE with as the GRH traffic class, the QoS mode. The receiver (the first host) uses rail 0; every other
 * host its first rail on another leaf than that, so the incast crosses the spine: in a rail-optimized fabric rail 0 of
 * every host sits on one leaf, and a rail-0 incast never leaves it.
 */
function incastArgs(qos: NonNullable<FabricPlan["roce"]>["qos"]): IncastArgs {
    const leafOf = (h: (typeof qos.hosts)[number], r: number) => h.railPorts?.[r]?.split(":")[0];
    const receiverLeaf = qos.hosts[0] ? leafOf(qos.hosts[0], 0) : undefined;
    return {
        priority: qos.roce.priority, trafficClass: qos.tos, mode: qos.mode,
        gidIndex: qos.hosts[0]?.gidIndex ?? 3,
        rails: Object.fromEntries(qos.hosts.map((h, i) => {
            const other = i === 0 || receiverLeaf === undefined ? -1 : h.railNics.findIndex((_, r) => { const l = leafOf(h, r); return l !== undefined && l !== receiverLeaf; });
            const r = other < 0 ? 0 : other;
            const leaf = leafOf(h, r);
            const rail: IncastRail = { device: h.railNics[r], ...(h.railNetdevs?.[r] ? { netdev: h.railNetdevs[r] } : {}), ...(leaf ? { leaf } : {}), gidIndex: h.gidIndex };
            return [h.name, rail];
        })),
    };
}
