/**
 * How a rendered configuration reaches its switch: pure functions that build the shell scripts the `@pulumi/command`
 * resources run. Every script runs one command per line, each under an explicit check (no `set -e`, no `a && b`
 * chains: a failure anywhere stops the script with a message that names the switch and the step), and every push is
 * a transaction in the switch OS's own terms: nothing is saved or confirmed unless every step before succeeded, and a
 * failure after the change went live rolls it back.
 *
 * - nvue (remote, bash on the switch): discard stale pending edits, drop the kit's sections (`nv unset qos`, the qos
 *   of the ports an earlier push owned), `nv config patch` the rendered file, `nv config apply --confirm 600s`
 *   (reverts by itself unless confirmed), verify the applied tree holds the file, confirm, save.
 * - sonic (remote): refuse a switch on the traditional buffer model, compute an RFC 6902 patch against the running
 *   CONFIG_DB that replaces the kit's rows (sonic-patch.ts), `config checkpoint`, `config apply-patch --dry-run`
 *   (YANG validation), `config apply-patch`, verify (the patch against the new CONFIG_DB is empty), `config save`;
 *   `config rollback` to the checkpoint on any failure after the apply.
 * - eos (local, plain ssh with the pinned host key, since the EOS login shell is the CLI): a configure session with
 *   the rendered lines, `commit timer 00:10:00` (reverts by itself), verify (the session and running config agree),
 *   confirm with `configure session <s> commit`, `copy running-config startup-config`; `abort` on failure.
 *
 * The digest of the rendered text is written into each script, so the command's inputs change exactly when the
 * configuration changes, and the script refuses a text whose digest is not what was planned.
 */
import type { RenderedSwitchConfig } from "./render";
import type { SwitchPlan } from "./qos";
import { SONIC_OWNERSHIP, SONIC_PATCH_PY } from "./sonic-patch";

export interface PushCommand {
    /** remote: run on the switch over SSH; local: run here (EOS, over plain ssh). */
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
 * Seconds a change stays live unconfirmed before NVUE / EOS revert it by themselves: long enough for the verify step
 * over a slow management network, short enough that a push that died mid-way heals within minutes.
 */
export const CONFIRM_TIMEOUT_S = 600;

/** The first lines of every push script: header (read by the policy pack), strict variables, the failure helper. */
function prelude(cfg: RenderedSwitchConfig, rollback: string): string[] {
    return [
        `# rdmakit RoCE QoS for ${cfg.switch} (${cfg.format}), sha256 ${cfg.digest}`,
        "set -u",
        `sw=${shq(cfg.switch)}`,
        // fail <step> <why>: stop, undo what the step's stage requires, say which switch and step
        `undo=""; state="nothing was saved or confirmed"`,
        `fail() { if [ -n "$undo" ]; then echo "rdmakit: $sw: rolling back ($undo)" >&2; eval "$undo" >&2 || echo "rdmakit: $sw: the rollback failed too; check the switch by hand" >&2; fi; echo "rdmakit: $sw: step '$1' failed ($2); $state" >&2; exit 1; }`,
        `rollback=${shq(rollback)}`,
    ];
}

/** `cmd || fail "<step>" "exit $?"`: the exit status of `cmd` is what `$?` holds when fail's arguments expand. */
function step(name: string, cmd: string): string {
    return `${cmd} || fail ${shq(name)} "exit $?"`;
}

function nvueScript(cfg: RenderedSwitchConfig, sw: SwitchPlan): string {
    const ports = sw.ports.map((p) => p.name);
    return [
        ...prelude(cfg, "nv config apply --confirm-no -y"),
        `verify=${shq(NVUE_VERIFY_PY)}`,
        `d="$HOME/rdmakit"; f="$d/roce-qos.nvue.yaml"; owned="$d/roce-qos.ports"`,
        step("mkdir ~/rdmakit", `mkdir -p "$d"`),
        step("receive the configuration", `cat > "$f.new"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$f.new" | sha256sum -c --quiet -`),
        // Pending edits someone left would ride along with this apply. source: NVUE-REF `nv config detach`
        // ("discards all pending changes since the last apply") — roce-operations.md §1a
        step("nv config detach (discard stale pending changes)", "nv config detach"),
        `undo="nv config detach"`,
        // The kit owns the QoS tree and its ports' qos: unset, then patch, replaces them (a moved priority leaves nothing
        // behind). Separate commands, since one patch must not set and unset the same object (NVUE-CLI, §1a).
        step("nv unset qos", "nv unset qos"),
        `if [ -f "$owned" ]; then`,
        `  while read -r p; do [ -n "$p" ] || continue; nv unset interface "$p" qos || fail "nv unset interface $p qos" "exit $?"; done < "$owned"`,
        `fi`,
        step("nv config patch", `nv config patch "$f.new"`),
        // --confirm: live, reverted unless confirmed (NVUE-REF: "nv config apply --confirm 60 requires you to confirm
        // within one hour"; an explicit unit as the 5.14 CLI page writes it, roce-operations.md §1a).
        step(`nv config apply --confirm ${CONFIRM_TIMEOUT_S}s`, `nv config apply --confirm ${CONFIRM_TIMEOUT_S}s -y > "$d/apply.log" 2>&1`),
        `undo="$rollback"`,
        // apply can print errors and still exit 0 (github.com/ipspace/netlab/pull/1726, roce-operations.md §1a)
        `if grep -qiE '(^|[^a-z])(error|invalid)' "$d/apply.log"; then cat "$d/apply.log" >&2; fail "nv config apply --confirm ${CONFIRM_TIMEOUT_S}s" "it printed an error"; fi`,
        step("read the applied configuration", `nv config show -o json > "$d/applied.json"`),
        step("verify (the applied configuration holds every rendered value)", `python3 -c "$verify" "$f.new" "$d/applied.json"`),
        // Confirming form: `nv config apply --confirm-yes` (NAPALM Cumulus driver napalm_cumulus/cumulus.py
        // confirm_commit; NVIDIA's docs do not show the CLI form, roce-operations.md §1a: M)
        step("nv config apply --confirm-yes", "nv config apply --confirm-yes -y"),
        `undo=""; state="the change is confirmed and live, but not saved: push again"`,
        step("nv config save", "nv config save"),
        step("record the applied file", `mv "$f.new" "$f"`),
        step("record the owned ports", `printf '%s\\n' ${ports.map(shq).join(" ")} > "$owned"`),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
}

/**
 * Verify for NVUE: every leaf the rendered `- set:` document holds is in `nv config show -o json` (the applied tree,
 * NVUE-CLI "nv config show: applied config"), compared as text since NVUE may print numbers as strings. PyYAML is
 * what NVUE itself is built on (L: not confirmed from a Cumulus package list).
 */
const NVUE_VERIFY_PY = String.raw`
import json, sys, yaml
# YAML 1.1 (PyYAML) reads a bare on/off as a boolean; NVUE prints them as strings
def norm(x):
    return "on" if x is True else "off" if x is False else str(x)
want = {}
for op in yaml.safe_load(open(sys.argv[1])):
    want.update(op.get("set", {}))
doc = json.load(open(sys.argv[2]))
have = {}
for op in (doc if isinstance(doc, list) else [{"set": doc}]):
    if isinstance(op, dict):
        have.update(op.get("set", op))
def walk(w, h, path):
    if isinstance(w, dict):
        for k, v in w.items():
            if not isinstance(h, dict) or str(k) not in {str(x) for x in h}:
                sys.exit("applied configuration lacks %s" % "/".join(path + [str(k)]))
            walk(v, {str(x): y for x, y in h.items()}[str(k)], path + [str(k)])
    elif norm(w) != norm(h):
        sys.exit("applied %s is %s, rendered %s" % ("/".join(path), h, w))
walk(want, have, [])
`;

function sonicScript(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless: boolean): string {
    const cp = `rdmakit-${cfg.digest.slice(0, 12)}`;
    const own = JSON.stringify(SONIC_OWNERSHIP);
    const ports = JSON.stringify(sw.ports.map((p) => p.name));
    return [
        ...prelude(cfg, `sudo config rollback ${cp} && sudo config delete-checkpoint ${cp}`),
        `PY=${shq(SONIC_PATCH_PY)}`,
        `d="$HOME/rdmakit"; f="$d/roce-qos.config_db.json"; cp=${shq(cp)}`,
        step("mkdir ~/rdmakit", `mkdir -p "$d"`),
        step("receive the configuration", `cat > "$f.new"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$f.new" | sha256sum -c --quiet -`),
        // Lossless PGs are rendered with profile NULL, which only the dynamic buffer model computes (roce.md §4b);
        // switching models is a `config qos reload` + swss restart, not a patch (roce-operations.md §2), so refuse.
        ...(lossless ? [
            step("read DEVICE_METADATA.localhost.buffer_model", `model=$(sudo sonic-cfggen -d -v DEVICE_METADATA.localhost.buffer_model)`),
            `[ "$model" = dynamic ] || fail "buffer model check" "buffer_model is '$model'; the lossless PGs need the dynamic model (config qos reload, then restart swss)"`,
        ] : []),
        // SU-main: `sonic-cfggen -d --print-data` dumps ConfigDB as config_db JSON (roce-operations.md §1b)
        step("read CONFIG_DB", `sudo sonic-cfggen -d --print-data > "$d/running.json"`),
        step("compute the patch", `python3 -c "$PY" patch "$f.new" "$d/running.json" ${shq(own)} ${shq(ports)} > "$d/patch.json"`),
        // GCU-design: checkpoint → apply-patch → on error rollback; apply-patch does not persist (config save -y)
        step("config checkpoint", `sudo config checkpoint "$cp"`),
        `undo="sudo config delete-checkpoint $cp"`,
        step("config apply-patch --dry-run (YANG validation)", `sudo config apply-patch --dry-run "$d/patch.json"`),
        `undo="$rollback"`,
        step("config apply-patch", `sudo config apply-patch "$d/patch.json"`),
        step("read CONFIG_DB after the patch", `sudo sonic-cfggen -d --print-data > "$d/after.json"`),
        step("verify (CONFIG_DB holds every rendered row)", `python3 -c "$PY" verify "$f.new" "$d/after.json" ${shq(own)} ${shq(ports)}`),
        step("config save", "sudo config save -y"),
        `undo=""; state="the change is applied and saved"`,
        step("config delete-checkpoint (the configuration is applied and saved)", `sudo config delete-checkpoint "$cp"`),
        step("record the applied file", `mv "$f.new" "$f"`),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
}

function eosScript(cfg: RenderedSwitchConfig, sw: SwitchPlan): string {
    const session = `rdmakit-${cfg.digest.slice(0, 12)}`;
    const known = sw.sshPort === 22 ? sw.managementAddress : `[${sw.managementAddress}]:${sw.sshPort}`;
    // the EOS CLI takes commands on stdin over ssh; `enable` first (a no-op for a privilege-15 login)
    const cli = (name: string, lines: string[]) => [
        `printf '%s\\n' enable ${lines.map(shq).join(" ")} > "$t/in"`,
        step(name, `sw_ssh < "$t/in" > "$t/out" 2>&1`),
        // the CLI reports a refused line with '% ' and carries on (eos.arista.com, CLI error format; L for the exit status)
        `if grep -q '^% ' "$t/out"; then cat "$t/out" >&2; fail ${shq(name)} "the switch refused a line"; fi`,
    ];
    return [
        ...prelude(cfg, `printf '%s\\n' enable 'configure session ${session} abort' | sw_ssh`),
        step("temporary directory", `t=$(mktemp -d)`),
        `trap 'rm -rf "$t"' EXIT`,
        step("receive the configuration", `cat > "$t/config"`),
        step("digest check", `echo ${shq(`${cfg.digest}  `)}"$t/config" | sha256sum -c --quiet -`),
        // the switch is trusted only with the key the spec pins: no first-contact trust, no global known_hosts
        step("write the pinned host key", `printf '%s %s\\n' ${shq(known)} ${shq(sw.hostKey.split(" ").slice(0, 2).join(" "))} > "$t/known_hosts"`),
        `key=""`,
        `if [ -n "\${RDMAKIT_SSH_KEY:-}" ]; then key="$t/id"; printf '%s\\n' "$RDMAKIT_SSH_KEY" > "$key" || fail "write the SSH key" "exit $?"; chmod 600 "$key" || fail "chmod the SSH key" "exit $?"; fi`,
        `sw_ssh() { ssh -T -o BatchMode=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile="$t/known_hosts" -o GlobalKnownHostsFile=/dev/null -p ${sw.sshPort} \${key:+-i "$key"} ${shq(`${sw.sshUser}@${sw.managementAddress}`)}; }`,
        `{ echo enable; echo ${shq(`configure session ${session}`)}; cat "$t/config"; echo end; } > "$t/in" || fail "build the session" "exit $?"`,
        // from here a session exists on the switch (perhaps half-staged): abort it on any failure
        `undo="$rollback"`,
        step("configure session (stage the configuration)", `sw_ssh < "$t/in" > "$t/out" 2>&1`),
        `if grep -q '^% ' "$t/out"; then cat "$t/out" >&2; fail "configure session (stage the configuration)" "the switch refused a line"; fi`,
        // EOS-SESS / commit-timer TOI: live now, reverted when the timer ends unless committed again
        ...cli("commit timer", [`configure session ${session}`, "commit timer 00:10:00"]),
        ...cli("verify (session and running config agree)", [`show session-config named ${session} diffs`]),
        `if grep -qE '^[-+][^-+]' "$t/out"; then cat "$t/out" >&2; fail "verify (session and running config agree)" "the running config differs from the session"; fi`,
        ...cli("confirm (configure session commit)", [`configure session ${session} commit`]),
        `undo=""; state="the change is committed and live, but not saved to startup-config: push again"`,
        // a commit does not write startup-config (NVCM-EOS, roce-operations.md §1c)
        ...cli("copy running-config startup-config", ["copy running-config startup-config"]),
        `echo "rdmakit: applied ${cfg.digest} to $sw"`,
    ].join("\n");
}

/**
 * The command that applies `cfg` to `sw`. Deleting the resource leaves the switch configured: pulling QoS from a
 * live fabric would drop RoCE traffic.
 */
export function pushCommandFor(cfg: RenderedSwitchConfig, sw: SwitchPlan, lossless = true): PushCommand {
    if (cfg.switch !== sw.name || cfg.os !== sw.os) throw new Error(`pushCommandFor: config for ${cfg.switch}/${cfg.os} given with switch ${sw.name}/${sw.os}`);
    const script = sw.os === "eos" ? eosScript(cfg, sw) : sw.os === "sonic" ? sonicScript(cfg, sw, lossless) : nvueScript(cfg, sw);
    return {
        via: sw.os === "eos" ? "local" : "remote",
        create: script,
        update: script,
        delete: `echo "rdmakit: leaving the RoCE QoS on ${sw.name} in place (remove it by hand if the fabric is retired)"`,
        stdin: cfg.text,
        environment: { RDMAKIT_CONFIG_DIGEST: cfg.digest },
    };
}
