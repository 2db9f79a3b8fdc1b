/** What every node of a stack should show to the health grade: read from the plan and the catalog, decided nowhere else. */
import { gpuModel } from "../catalog/gpus";
import type { FabricPlan } from "../plan";
import type { HealthExpectation } from "./types";

export function healthExpectation(plan: FabricPlan): HealthExpectation {
    const model = gpuModel(plan.nodes.gpuModel);
    const nics = plan.nics.perNode;
    return {
        hostType: plan.nodes.hostType,
        gpus: plan.nodes.gpusPerNode,
        gpuModel: plan.nodes.gpuModel,
        nvidia: (model?.collectives ?? "nccl") === "nccl" && plan.nodes.gpusPerNode > 0,
        gpuPcie: model?.pcie,
        gpuMemoryGiB: model?.memoryGiB,
        nvlinkLinks: plan.nodes.nvswitch ? model?.nvlinkLinks : 0,
        nvswitch: plan.nodes.nvswitch,
        fabric: plan.fabric,
        nics: {
            // EFA devices carry the names the kernel gives them (rdmap…), not the plan's efa-card<N> labels
            names: plan.fabric === "aws-efa" ? [] : nics.map((n) => n.name),
            count: nics.length,
            rateGbps: plan.fabric === "aws-efa" ? undefined : nics[0]?.rateGbps,
            linkLayer: plan.fabric === "aws-efa" ? "efa" : plan.fabric === "azure-ib" ? "InfiniBand" : "Ethernet",
        },
        require: [...plan.validation.health.require],
        xidWindowMinutes: plan.validation.health.xidWindowMinutes,
        dcgmLevel: plan.validation.health.dcgmLevel,
    };
}

/** One line for the report head: "2 x p5.48xlarge: 8 x H100-80GB, 32 EFA devices". */
export function describeExpectation(exp: HealthExpectation): string {
    const nic = exp.fabric === "aws-efa" ? `${exp.nics.count} EFA devices`
        : `${exp.nics.count} ${exp.nics.linkLayer} ports${exp.nics.rateGbps ? ` at ${exp.nics.rateGbps} Gb/s` : ""}`;
    const links = exp.nvswitch && exp.nvlinkLinks ? `, ${exp.nvlinkLinks} NVLink links per GPU` : "";
    const pcie = exp.gpuPcie ? `, PCIe Gen${exp.gpuPcie.gen} x${exp.gpuPcie.width}` : "";
    return `${exp.hostType}: ${exp.gpus} x ${exp.gpuModel}${pcie}${links}, ${nic}`;
}
