/**
 * Switch models the RoCE fabric knows: ASIC, the queue keyword EOS uses on it, and buffer facts that size the headroom
 * check (rule C16). Every figure carries its source; a figure nobody published stays undefined (the check then says
 * "unknown" instead of guessing). Notes: ../shared/research/roce.md §6 and roce-operations.md §4, §6.
 */

export type AsicVendor = "mellanox" | "broadcom";

export interface SwitchModel {
    asic: string;
    vendor: AsicVendor;
    /**
     * Ingress lossless buffer pool SONiC programs for this SKU, in bytes: the pool lossless headroom and the shared
     * lossless buffer come out of. A configured pool, not the datasheet total.
     */
    losslessPoolBytes?: number;
    /**
     * Lossless PG size (xon + xoff, bytes) by port speed (Gb/s) and cable length (m): rows of the SKU's traditional
     * buffer lookup table. A cable between two rows takes the longer row; beyond the last row the size is unknown.
     */
    pgHeadroom?: Record<number, Array<{ cableM: number; bytes: number }>>;
    /**
     * EOS only: Strata platforms (Trident/Tomahawk) split unicast and multicast queues and take `uc-tx-queue`; Sand
     * platforms (Jericho) take `tx-queue`.
     */
    eosQueueKeyword?: "uc-tx-queue" | "tx-queue";
    source: string;
}

// source: sonic-net/sonic-buildimage@086b03bd70f9 device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/pg_profile_lookup.ini
// (rows 400000/800000 × 5m/40m/300m, column size), quoted in roce-operations.md §6
const SN5600_PG: SwitchModel["pgHeadroom"] = {
    400: [{ cableM: 5, bytes: 250_880 }, { cableM: 40, bytes: 303_104 }, { cableM: 300, bytes: 697_344 }],
    800: [{ cableM: 5, bytes: 304_128 }, { cableM: 40, bytes: 410_624 }, { cableM: 300, bytes: 1_198_080 }],
};

// Strata vs Sand queue keyword: AVD docs/tables/qos-profiles.md (uc_tx_queues / mc_tx_queues beside tx_queues);
// published RoCE configs for 7060DX4-32 and 7060PX5-64E use `uc-tx-queue` (docs.habana.ai Configuration_Files_Example_L2);
// Sand (7280R/7500R/7800R) exposes `tx-queue 0-7` (arista.com/jp/support/toi/tag/voq). roce-operations.md §4 (M).
export const SWITCH_CATALOG: Readonly<Record<string, SwitchModel>> = {
    SN2700: { asic: "Spectrum-1", vendor: "mellanox", source: "roce-operations.md §6 (BI device/*/ACS-MSN2700)" },
    SN3700: { asic: "Spectrum-2", vendor: "mellanox", source: "roce-operations.md §6 (BI device/*/ACS-MSN3700)" },
    SN4700: { asic: "Spectrum-3", vendor: "mellanox", source: "roce-operations.md §6 (BI device/*/ACS-MSN4700)" },
    SN5600: {
        asic: "Spectrum-4", vendor: "mellanox",
        // ingress_lossless_pool 52 161 690 B (T1 profile; the T0 profile has 67 737 959): the smaller, so the check is
        // never optimistic. source: BI device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600/buffers_defaults_t{0,1}.j2
        losslessPoolBytes: 52_161_690,
        pgHeadroom: SN5600_PG,
        source: "sonic-net/sonic-buildimage@086b03bd70f9 device/mellanox/x86_64-nvidia_sn5600-r0/ACS-SN5600 (roce-operations.md §6)",
    },
    "7050CX3-32S": {
        asic: "Trident3", vendor: "broadcom", eosQueueKeyword: "uc-tx-queue",
        source: "roce-operations.md §6 (BI Arista-7050CX3-32S), §4 (Strata: uc-tx-queue)",
    },
    "7060DX4-32": { asic: "Tomahawk4", vendor: "broadcom", eosQueueKeyword: "uc-tx-queue", source: "roce-operations.md §4 (HABANA-CFG 7060DX4-32 uses uc-tx-queue)" },
    "7060PX5-64E": { asic: "Tomahawk5", vendor: "broadcom", eosQueueKeyword: "uc-tx-queue", source: "roce-operations.md §4 (HABANA-CFG 7060PX5-64E uses uc-tx-queue)" },
    "7060X6-64PE": { asic: "Tomahawk5", vendor: "broadcom", eosQueueKeyword: "uc-tx-queue", source: "roce-operations.md §6 (BI Arista-7060X6-64PE), §4 (Strata)" },
    "7280R3": { asic: "Jericho2", vendor: "broadcom", eosQueueKeyword: "tx-queue", source: "roce-operations.md §4 (Sand: tx-queue 0-7)" },
    "7800R3": { asic: "Jericho2", vendor: "broadcom", eosQueueKeyword: "tx-queue", source: "roce-operations.md §4 (Sand: tx-queue 0-7)" },
};

export const SWITCH_MODELS = Object.keys(SWITCH_CATALOG);

/** Lossless PG size for one port from the model's table, or undefined when the table has no row that covers it. */
export function pgHeadroomBytes(model: SwitchModel | undefined, speedGbps: number, cableM: number): number | undefined {
    const rows = model?.pgHeadroom?.[speedGbps];
    return rows?.find((r) => r.cableM >= cableM)?.bytes;
}
