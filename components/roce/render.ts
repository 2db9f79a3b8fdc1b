/**
 * One entry point over the three renderers: the text each switch takes, its file name and its digest. The digest
 * goes into the push command's inputs, so a switch is re-configured exactly when its rendered text changes.
 */
import { createHash } from "node:crypto";
import type { QosPlan, SwitchPlan } from "./qos";
import type { NetworkOs } from "./spec";
import { renderEosText } from "./switches/eos";
import { renderNvueText } from "./switches/nvue";
import { renderSonicText } from "./switches/sonic";

export interface RenderedSwitchConfig {
    switch: string;
    os: NetworkOs;
    /** nvue: YAML for `nv config patch`; sonic: config_db.json; eos: CLI lines. */
    format: "nvue-yaml" | "config_db-json" | "eos-cli";
    /** Suggested file name, e.g. `leaf1.nvue.yaml`. */
    fileName: string;
    text: string;
    /** sha256 of `text`, hex. */
    digest: string;
}

export const FORMAT: Readonly<Record<NetworkOs, { format: RenderedSwitchConfig["format"]; ext: string }>> = {
    nvue: { format: "nvue-yaml", ext: "nvue.yaml" },
    sonic: { format: "config_db-json", ext: "config_db.json" },
    eos: { format: "eos-cli", ext: "eos.cfg" },
};

export function sha256(text: string): string {
    return createHash("sha256").update(text, "utf8").digest("hex");
}

export function renderSwitchConfig(plan: QosPlan, sw: SwitchPlan): RenderedSwitchConfig {
    const text = sw.os === "nvue" ? renderNvueText(plan, sw) : sw.os === "sonic" ? renderSonicText(plan, sw) : renderEosText(plan, sw);
    return { switch: sw.name, os: sw.os, format: FORMAT[sw.os].format, fileName: `${sw.name}.${FORMAT[sw.os].ext}`, text, digest: sha256(text) };
}

/** Every switch's configuration, in spec order. */
export function renderSwitchConfigs(plan: QosPlan): RenderedSwitchConfig[] {
    return plan.switches.map((sw) => renderSwitchConfig(plan, sw));
}
