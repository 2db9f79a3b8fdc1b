/**
 * The grammars of the spec's name-like strings (instance types, VM sizes, image URN parts, model names), each from the
 * vendor's own naming rules, and the test every free-form string of the spec passes: it must not look like key
 * material (redactSecrets would hide it). A value these refuse never reaches the plan, its summary or plan.json.
 */
import { z } from "zod";
import { redactSecrets } from "./redact";

/**
 * EC2 instance types: the family (series letters, generation digit, attribute letters, e.g. `p5en`, `m7i-flex`,
 * `p6-b200`), a period, the size (`48xlarge`, `micro`, `metal-48xl`).
 * source: https://docs.aws.amazon.com/ec2/latest/instancetypes/instance-type-names.html
 */
export const EC2_INSTANCE_TYPE = /^[a-z][a-z0-9]*(-[a-z0-9]+)*\.[a-z0-9]+(-[a-z0-9]+)*$/;

/**
 * Azure VM sizes: `Standard_` (or `Basic_`), then the family, sub-family, vCPUs, constrained vCPUs after a `-`, the
 * additive features, and `_`-separated accelerator and version parts (`Standard_ND96isr_H100_v5`, `Standard_E4-2ds_v4`).
 * source: https://learn.microsoft.com/azure/virtual-machines/vm-naming-conventions
 */
export const AZURE_VM_SIZE = /^(Standard|Basic)_[A-Za-z0-9]+(-[0-9]+[A-Za-z]*)?(_[A-Za-z0-9]+)*$/;

/**
 * Azure Marketplace image URN parts (`Publisher:Offer:Sku:Version`): publisher, offer and SKU are names of letters,
 * digits, `-`, `_` and `.` (`microsoft-dsvm`, `ubuntu-hpc`, `2204`, `0001-com-ubuntu-server-jammy`, `22_04-lts-gen2`);
 * the version is `latest` or numbers separated by periods (`22.04.202401010`).
 * source: https://learn.microsoft.com/azure/virtual-machines/linux/cli-ps-findimage (the URN and its version)
 */
/**
 * A subnet's ARM id: /subscriptions/<GUID>/resourceGroups/<group>/providers/Microsoft.Network/virtualNetworks/<vnet>/
 * subnets/<subnet> (ARM's segment names are case-insensitive). Resource group: 1-90 of letters, digits, _ ( ) - .,
 * not ending in '.'; VNet: 2-64 and subnet: 1-80 of letters, digits, _ . -, starting with a letter or digit and
 * ending in one or '_'. source: https://learn.microsoft.com/rest/api/virtualnetwork/subnets/get (the id's path);
 * https://learn.microsoft.com/azure/azure-resource-manager/management/resource-name-rules (Microsoft.Resources,
 * Microsoft.Network)
 */
export const AZURE_SUBNET_ID = new RegExp(
    "^/subscriptions/(?<subscription>[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})" +
    "/resourceGroups/(?<resourceGroup>[-\\w.()]{0,89}[-\\w()])/providers/Microsoft\\.Network" +
    "/virtualNetworks/(?<vnet>[a-z0-9][\\w.-]{0,62}\\w)/subnets/(?<subnet>[a-z0-9](?:[\\w.-]{0,78}\\w)?)$", "i");

export const AZURE_IMAGE_PART = /^[A-Za-z0-9][A-Za-z0-9._-]*$/;
export const AZURE_IMAGE_VERSION = /^(latest|\d+(\.\d+){1,3})$/;

/**
 * A short model name as the catalogs write them (GPUs: `H100`, `H100-80GB`, `MI300X`; switches: `SN4700`, `7060X6`):
 * letters and digits, with `-`, `_` or `.` between, at most 32 characters. The kit's own grammar: it looks the name up
 * in components/catalog (gpus.ts, switches.ts) and prints it, and the catalog names are of this form.
 */
export const SHORT_MODEL = /^[A-Za-z0-9]([A-Za-z0-9._-]{0,30}[A-Za-z0-9])?$/;

/**
 * AWS Availability Zone names: the Region code and a letter (`us-east-1a`), or a Local or Wavelength Zone name
 * (`us-west-2-lax-1a`, `us-east-1-wl1-bos-wlz-1`).
 * source: https://docs.aws.amazon.com/global-infrastructure/latest/regions/aws-availability-zones.html
 */
export const AWS_ZONE = /^[a-z]{2}(-gov)?-[a-z]+-\d+[a-z]?(-[a-z0-9]+)*$/;

/** AWS Region codes (`us-east-1`, `us-gov-west-1`), as cluster.aws.region takes them. */
export const AWS_REGION = /^[a-z]{2}(-gov)?-[a-z]+-\d$/;

/** True when the text holds nothing redactSecrets would hide (a PEM block, a long base64 or hex run). */
export function notKeyMaterial(text: string): boolean {
    return redactSecrets(text) === text;
}

/** What the refusal of a key-looking value says. */
export const KEY_MATERIAL = "looks like key material (a PEM block, or a long base64 or hex run), which must never sit in a stack file in plain text";

/** A zod string of `grammar` that also refuses key material; `what` names what is allowed. */
export function named(grammar: RegExp, what: string) {
    return z.string().regex(grammar, what).refine(notKeyMaterial, KEY_MATERIAL);
}
