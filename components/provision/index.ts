// Public API of the provisioning step: the inventory renderer, the Ansible run as a Pulumi resource and the log
// summariser it uses.
export { renderInventory, checkInventoryArgs, sshCommonArgs } from "./inventory";
export type { InventoryArgs, InventoryHost, InventoryBastion } from "./inventory";
export { AnsiblePlaybook, ANSIBLE_RUN_SCRIPT, checkAnsiblePlaybookArgs, hashFolder, stableJson, sha256 } from "./ansible";
export type { AnsiblePlaybookArgs } from "./ansible";
export { parseAnsibleLog, formatAnsibleFailures, summariserScript } from "./summarise";
export type { AnsibleFailure, AnsibleRecap, AnsibleLogSummary } from "./summarise";
