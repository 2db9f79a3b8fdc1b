// Public API of the provisioning step: the inventory renderer, the Ansible run as a Pulumi resource and the log
// summariser it uses.
export { renderInventory, checkInventoryArgs, sshCommonArgs, markUnsafe } from "./inventory";
export type { InventoryArgs, InventoryHost, InventoryBastion } from "./inventory";
export { AnsiblePlaybook, ANSIBLE_RUN_SCRIPT, RUN_INTERPRETER, checkAnsiblePlaybookArgs, hashFolder, stableJson, sha256 } from "./ansible";
// the key's way into a run (no input, no file, no environment) and the pinned host identities
export { serveKeyLocally, serveSshKey, type KeyEnv } from "./keysocket";
export { ed25519HostKey, groupKnownHosts, KIT_HOST_KEY_ALGORITHMS, knownHostsPath, renderKnownHosts, writeKnownHosts, type HostKeyPair, type KnownHost } from "./knownhosts";
export { hostKeyCloudConfig } from "./hostkeys";
export type { AnsiblePlaybookArgs } from "./ansible";
export { parseAnsibleLog, formatAnsibleFailures, summariserScript } from "./summarise";
export type { AnsibleFailure, AnsibleRecap, AnsibleLogSummary } from "./summarise";
