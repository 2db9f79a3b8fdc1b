/**
 * How a rendered configuration reaches its switch: pure functions that build the shell scripts the
 * `@pulumi/command` resources run. The digest of the rendered text is written into the script, so the command's
 * inputs change exactly when the configuration changes (then Pulumi runs `update`), and the script refuses to apply
 * a file whose digest does not match what was planned.
 *
 * - nvue, sonic: `remote.Command` over SSH (both run Linux with bash). The text arrives on stdin, is kept on the
 *   switch as ~/rdmakit/roce-qos.<ext> (the previous one as .prev) and applied with the OS's own loader.
 * - eos: `local.Command` running `ansible-playbook` with arista.eos.eos_config (the EOS login shell is the CLI, not
 *   bash); the applied text is kept under out/<stack>/switches/ and eos_config backs up the running config first.
 */
import * as path from "node:path";
import type { RenderedSwitchConfig } from "./render";
import type { SwitchPlan } from "./qos";
import { assetPath } from "../assets";

export interface PushCommand {
    /** remote: run on the switch over SSH; local: run here (Ansible). */
    via: "remote" | "local";
    create: string;
    update: string;
    delete: string;
    stdin: string;
    environment: Record<string, string>;
}

/** Single-quote a value for POSIX sh. */
export function shq(s: string): string {
    return `'${s.replace(/'/g, `'\\''`)}'`;
}

/**
 * Where the EOS push playbook lives (shipped with the kit), relative to the program's directory where the command
 * runs: an absolute path would change the push command's input, and so re-push, whenever the checkout moves.
 */
export const EOS_PLAYBOOK = path.relative(process.cwd(), assetPath("components", "roce", "playbooks", "eos-push.yml"));

// Applying: NVUE stages the file with `nv config patch` (absolute path required) and commits it with
// `nv config apply -y`; `nv config save` persists it to /etc/nvue.d/startup.yaml.
// source: CumulusNetworks/docs (NVUE-CLI command table; NVUE snippets: "requires you to use the fully qualified path")
// SONiC: `config load -y <file>` writes the JSON into CONFIG_DB key by key (sonic-cfggen -j … --write-to-db, which
// updates fields and keeps other keys), `config save -y` persists /etc/sonic/config_db.json.
// source: sonic-net/sonic-utilities:config/main.py (load, save); roce.md §7 (plain load does not YANG-validate, so the
// kit validates with yanglint before it ships a config).
const APPLY: Readonly<Record<"nvue" | "sonic", string>> = {
    nvue: `nv config patch "$f.new" && nv config apply -y && nv config save`,
    sonic: `sudo config load -y "$f.new" && sudo config save -y`,
};

function switchScript(cfg: RenderedSwitchConfig, os: "nvue" | "sonic"): string {
    const ext = cfg.fileName.slice(cfg.fileName.indexOf(".") + 1);
    return [
        "set -eu",
        `# rdmakit RoCE QoS for ${cfg.switch} (${cfg.format}), sha256 ${cfg.digest}`,
        `d="$HOME/rdmakit"; f="$d/roce-qos.${ext}"`,
        `mkdir -p "$d"`,
        `cat > "$f.new"`,
        `echo ${shq(`${cfg.digest}  `)}"$f.new" | sha256sum -c --quiet -`,
        `if [ -f "$f" ]; then cp "$f" "$f.prev"; fi`,
        APPLY[os],
        `mv "$f.new" "$f"`,
        `echo "rdmakit: applied ${cfg.digest} to ${cfg.switch}"`,
    ].join("\n");
}

function eosScript(cfg: RenderedSwitchConfig, sw: SwitchPlan, outDir: string): string {
    const file = path.join(outDir, cfg.fileName);
    return [
        "set -eu",
        `# rdmakit RoCE QoS for ${cfg.switch} (${cfg.format}), sha256 ${cfg.digest}`,
        `mkdir -p ${shq(outDir)}`,
        `cat > ${shq(file + ".new")}`,
        `echo ${shq(`${cfg.digest}  ${file}.new`)} | sha256sum -c --quiet -`,
        `key=""; if [ -n "\${RDMAKIT_SSH_KEY:-}" ]; then key=$(mktemp); trap 'rm -f "$key"' EXIT; printf '%s\\n' "$RDMAKIT_SSH_KEY" > "$key"; chmod 600 "$key"; fi`,
        // host keys stay checked; a switch seen for the first time is added (network_cli host_key_auto_add, env
        // ANSIBLE_HOST_KEY_AUTO_ADD: docs.ansible.com ansible.netcommon.network_cli), a changed key fails the push
        `ANSIBLE_HOST_KEY_AUTO_ADD=True ansible-playbook -i ${shq(`${sw.managementAddress},`)} -u ${shq(sw.sshUser)} ` +
            `\${key:+--private-key "$key"} -e ansible_port=${sw.sshPort} ` +
            `-e rdmakit_config_file=${shq(file + ".new")} -e rdmakit_backup_dir=${shq(path.join(outDir, "backup"))} ${shq(EOS_PLAYBOOK)}`,
        `if [ -f ${shq(file)} ]; then cp ${shq(file)} ${shq(file + ".prev")}; fi`,
        `mv ${shq(file + ".new")} ${shq(file)}`,
        `echo "rdmakit: applied ${cfg.digest} to ${cfg.switch}"`,
    ].join("\n");
}

/**
 * The command that applies `cfg` to `sw`. `outDir` is where EOS copies are kept (out/<stack>/switches).
 * Deleting the resource leaves the switch configured: pulling QoS from a live fabric would drop RoCE traffic.
 */
export function pushCommandFor(cfg: RenderedSwitchConfig, sw: SwitchPlan, outDir: string): PushCommand {
    if (cfg.switch !== sw.name || cfg.os !== sw.os) throw new Error(`pushCommandFor: config for ${cfg.switch}/${cfg.os} given with switch ${sw.name}/${sw.os}`);
    const script = sw.os === "eos" ? eosScript(cfg, sw, outDir) : switchScript(cfg, sw.os);
    return {
        via: sw.os === "eos" ? "local" : "remote",
        create: script,
        update: script,
        delete: `echo "rdmakit: leaving the RoCE QoS on ${sw.name} in place (remove it by hand if the fabric is retired)"`,
        stdin: cfg.text,
        environment: { RDMAKIT_CONFIG_DIGEST: cfg.digest },
    };
}
