/**
 * One entry point over the three renderers: the text each switch takes, its file name and its digest. The digest
 * goes into the push command's inputs, so a switch is re-configured exactly when its rendered text changes.
 */
import { createHash } from "node:crypto";
import { switchRenderInput, type QosPlan, type SwitchPlan, type SwitchRenderInput } from "./qos";
import type { NetworkOs } from "./spec";
import { MAX_REMEMBERED, rememberParsed } from "../parsed";
import { renderEos } from "./switches/eos";
import { nvueText, renderNvue } from "./switches/nvue";
import { renderSonic } from "./switches/sonic";

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

/** The text each OS takes and the structure it was serialised from. */
function render(plan: QosPlan, sw: SwitchRenderInput): { text: string; value: unknown } {
    if (sw.os === "nvue") {
        const value = renderNvue(plan, sw);
        return { value, text: nvueText(value) };
    }
    if (sw.os === "sonic") {
        const value = renderSonic(plan, sw);
        return { value, text: JSON.stringify(value, null, 4) + "\n" };
    }
    const value = renderEos(plan, sw);
    return { value, text: value.join("\n") + "\n" };
}

/**
 * What a switch's text depends on: what the renderers read of the switch (qos.ts SwitchRenderInput: not its name or
 * peers) and the fabric-wide QoS (not the hosts). Switches alike in those are rendered once (a rail fabric of 384
 * switches renders 2 texts), and `pulumi up` and `rdmakit plan` render the same switches again (the component, then
 * the plan's artifacts): a lookup.
 */
const rendered = new Map<string, { text: string; value: unknown; digest: string }>();
function renderOnce(plan: QosPlan, sw: SwitchPlan): { text: string; value: unknown; digest: string } {
    const input = switchRenderInput(sw);
    const key = JSON.stringify([plan.mode, plan.roce, plan.cnp, plan.pfc, plan.ecn, plan.ets, plan.hostMtu, input]);
    const hit = rendered.get(key);
    if (hit) return hit;
    // the text's digest with it: hashed once per text, not once per render (hundreds of kilobytes a fabric, each time).
    // A text another switch rendered already (a rail fabric's leaves share one text, as do its spines) is that
    // switch's: one string, its digest and its parsed structure, not one copy of each per switch
    const fresh = render(plan, input);
    const r = byText.get(fresh.text) ?? { ...fresh, digest: sha256(fresh.text) };
    if (byText.size >= MAX_REMEMBERED) byText.delete(byText.keys().next().value!);
    byText.set(r.text, r);
    if (rendered.size >= MAX_REMEMBERED) rendered.delete(rendered.keys().next().value!);
    rendered.set(key, r);
    return r;
}
const byText = new Map<string, { text: string; value: unknown; digest: string }>();

/** The sha256 of `text` when this process rendered that very text (any string of the same characters), else undefined. */
export function renderedDigest(text: string): { text: string; digest: string } | undefined {
    const r = byText.get(text);
    return r && { text: r.text, digest: r.digest };
}

export function renderSwitchConfig(plan: QosPlan, sw: SwitchPlan): RenderedSwitchConfig {
    return renderWithValue(plan, sw).config;
}

/** A switch's configuration and the structure its text was serialised from, remembered by the text (parsed.ts). */
function renderWithValue(plan: QosPlan, sw: SwitchPlan): { config: RenderedSwitchConfig; value: unknown } {
    const { text, value, digest } = renderOnce(plan, sw);
    rememberParsed(text, value);
    return { config: { switch: sw.name, os: sw.os, format: FORMAT[sw.os].format, fileName: `${sw.name}.${FORMAT[sw.os].ext}`, text, digest }, value };
}

/**
 * Every switch's configuration, in spec order. A plan is read-only and shared (qos.ts planQos), and one `rdmakit plan`
 * renders the same plan three times (the CLI's check, RoceCluster, the artifacts): a plan rendered before is answered
 * from that render (its texts remembered again, as a render remembers them), each switch's entry a fresh object as
 * before, without the render key of each of its hundreds of switches made again.
 */
export function renderSwitchConfigs(plan: QosPlan): RenderedSwitchConfig[] {
    let all = renderedPlans.get(plan);
    if (!all) {
        const each = plan.switches.map((sw) => renderWithValue(plan, sw));
        all = { configs: each.map((r) => r.config), values: new Map(each.map((r) => [r.config.text, r.value])) };
        renderedPlans.set(plan, all);
    } else {
        for (const [text, value] of all.values) rememberParsed(text, value);
    }
    return all.configs.map((r) => ({ ...r }));
}
/** Each plan's configurations, and the structure of each distinct text of them. */
const renderedPlans = new WeakMap<QosPlan, { configs: readonly RenderedSwitchConfig[]; values: ReadonlyMap<string, unknown> }>();
