/**
 * RDMA NIC facts for the RoCE fabric. Only numbers the kit decides with live here: the Ethernet port speeds a
 * model supports (a switch port facing it must run one of them), and which driver/tools family the host role uses.
 */

export type NicModel = "ConnectX-6" | "ConnectX-7" | "BlueField-3";

export interface NicCatalogEntry {
    model: NicModel;
    /** Ethernet speeds (Gb/s) the NIC port supports; the fastest is the usual rail speed. */
    ethernetSpeedsGbps: readonly number[];
    /** Kernel driver; all three are mlx5, so `mlnx_qos`, sysfs `ecn/roce_np|roce_rp` and `cma_roce_tos` apply. */
    driver: "mlx5";
    /** Host software stack that ships the QoS tools. BlueField-3 requires DOCA-Host (no MLNX_OFED). */
    hostStack: "MLNX_OFED or DOCA-Host" | "DOCA-Host";
}

export const NIC_CATALOG: Readonly<Record<NicModel, NicCatalogEntry>> = {
    // source: https://docs.nvidia.com/networking/display/mlnxenv24070610/release+notes (Uplink/Adapter Card table:
    // "ConnectX-6 ... Ethernet: 10GbE, 25GbE, 40GbE, 50GbE, 100GbE, 200GbE", driver mlx5)
    "ConnectX-6": {
        model: "ConnectX-6",
        ethernetSpeedsGbps: [10, 25, 40, 50, 100, 200],
        driver: "mlx5",
        hostStack: "MLNX_OFED or DOCA-Host",
    },
    // source: https://docs.nvidia.com/networking/display/mlnxenv24070610/release+notes ("ConnectX-7 ... Ethernet:
    // 1GbE, 10GbE, 25GbE, 40GbE, 50GbE, 100GbE, 200GbE, 400GbE", driver mlx5)
    "ConnectX-7": {
        model: "ConnectX-7",
        ethernetSpeedsGbps: [1, 10, 25, 40, 50, 100, 200, 400],
        driver: "mlx5",
        hostStack: "MLNX_OFED or DOCA-Host",
    },
    // source: https://docs.nvidia.com/networking/display/bluefield3firmwarev32398002lts/firmware+compatible+products
    // ("Ethernet - 1GbE, 10GbE, 25GbE, 50GbE, 100GbE, 200GbE, 400GbE"); host driver rule from
    // https://docs.nvidia.com/doca/sdk/DOCA+Release+Notes ("BlueField-3 devices are not supported with MLNX_OFED as
    // the host driver. They must use DOCA-Host.")
    "BlueField-3": {
        model: "BlueField-3",
        ethernetSpeedsGbps: [1, 10, 25, 50, 100, 200, 400],
        driver: "mlx5",
        hostStack: "DOCA-Host",
    },
};

export const NIC_MODELS = Object.keys(NIC_CATALOG) as NicModel[];

/** The catalog entry for a model; throws on a name outside the catalog (the spec schema rejects those first). */
export function nicInfo(model: NicModel): NicCatalogEntry {
    const entry = NIC_CATALOG[model];
    if (!entry) throw new Error(`unknown NIC model ${JSON.stringify(model)}; known: ${NIC_MODELS.join(", ")}`);
    return entry;
}
