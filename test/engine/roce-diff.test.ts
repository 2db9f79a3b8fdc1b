// `pulumi preview --diff` of a QoS change on a bare-metal RoCE stack whose state holds the switch pushes, under the
// real CLI and the real pulumi-resource-command provider (test/engine/build.sh; built from a checkout with
// RDMAKIT_COMMAND_SRC where the module proxy refuses it, README.md). Issue 37: the diff names only the pushes whose
// switch text changes (and the check that reads those switches back), shows the changed parameters, and no line of a
// push's diff is longer than 300 characters.
//
// How the state gets its pushes honestly: a real `pulumi up` in which the provider runs every push and stage check
// for real, against stand-in switches. PATH starts with a small `ssh` dispatcher: the checks' read-only commands
// (components/roce/fabric-state.ts SWITCH_READS) go to test/fixtures/roce/read-stubs/ssh, which answers from files
// written here as each switch runs its planned text (the way test/roce-drift.test.ts builds them); everything else
// (the pushes' sessions) goes to test/fixtures/roce/stubs/ssh, which runs the remote part here against the stand-in
// switch commands of test/roce-push.test.ts (nv, sudo; EOS: the CLI on stdin). No address is ever connected to.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as path from "node:path";
import { parse as parseYaml } from "yaml";
import { planCluster } from "../../components/plan";
import { SWITCH_READS } from "../../components/roce/fabric-state";
import { renderSwitchConfigs } from "../../components/roce/render";
import { parseClusterSpec } from "../../components/spec";
import { Engine, engineBins, SKIP, type PulumiRun } from "./harness";

const HOST_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u";
const PUSH_STUBS = path.join(__dirname, "..", "fixtures", "roce", "stubs");
const READ_STUBS = path.join(__dirname, "..", "fixtures", "roce", "read-stubs");
const RUNNING = path.join(__dirname, "..", "fixtures", "roce", "running");
/** The longest line a push's diff may have (issue 37). */
const MAX_LINE = 300;

/**
 * Three hosts, two EOS leaves and an NVUE leaf: rollout stages [leaf-eos1], [leaf-eos2, leaf-nvue] (push.ts
 * rolloutStages), so the state holds three pushes, the canary's check and the fabric check. `nvueCableM` is the NVUE
 * leaf's host cable length, which sizes its PFC headroom (nvue.ts: a cable-length per PFC profile); EOS sizes headroom
 * itself (eos.ts), so changing it changes the NVUE leaf's text alone.
 */
function cluster(nvueCableM: number): Record<string, unknown> {
    const host = (i: number) => ({
        name: `gpu0${i}`, address: `10.20.0.1${i}`, sshUser: "ubuntu", railNics: ["mlx5_0", "mlx5_1"],
        railNetdevs: ["ens1f0np0", "ens2f0np0"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 },
    });
    const eos = (i: number) => ({ name: `leaf-eos${i}`, os: "eos", model: "7060DX4-32", managementAddress: `10.20.1.${i}`, hostKey: HOST_KEY, sshUser: "admin", hostPorts: ["Ethernet1/1", "Ethernet2/1"], speedGbps: 400, cableLengthM: 5 });
    return {
        name: "roce-diff", fabric: "roce", provision: false, ssh: { allowedCidrs: ["203.0.113.0/24"] },
        roce: {
            nicModel: "ConnectX-7", hosts: [host(1), host(2), host(3)],
            switches: [eos(1), eos(2), { name: "leaf-nvue", os: "nvue", managementAddress: "10.20.1.3", hostKey: HOST_KEY, sshUser: "cumulus", hostPorts: ["swp1", "swp2"], speedGbps: 400, cableLengthM: nvueCableM }],
            qos: { mode: "lossless" },
        },
    };
}

const slug = (cmd: string) => cmd.replace(/[^A-Za-z0-9]/g, "_");

/**
 * The stand-in fabric in `dir`: the ssh dispatcher in dir/bin, and each switch running the planned text of `spec`
 * (read-stub answers under dir/<address>/, and the NVUE applied tree the push's own verify reads, dir/nvue-*.json).
 * Constructed here from the rendered texts; the EOS and LLDP shapes are those test/roce-drift.test.ts answers with.
 */
function standInFabric(dir: string, spec: Record<string, unknown>): void {
    const plan = planCluster(parseClusterSpec(spec)).roce!.qos;
    const write = (f: string, text: string, mode?: number) => { fs.mkdirSync(path.dirname(f), { recursive: true }); fs.writeFileSync(f, text, { mode }); };
    const reads = Object.values(SWITCH_READS).flatMap((r) => [r.config, r.lldp]).concat("nv show qos roce -o json");
    write(path.join(dir, "bin", "ssh"), [
        "#!/bin/sh",
        "# stand-in dispatcher (test/engine/roce-diff.test.ts): a switch's read-only commands to the read stub, the rest to the push stub",
        'for a in "$@"; do last=$a; done',
        `case "$last" in ${reads.map((r) => `'${r}'`).join("|")}) exec ${READ_STUBS}/ssh "$@" ;; esac`,
        `exec ${PUSH_STUBS}/ssh "$@"`, "",
    ].join("\n"), 0o755);
    for (const r of renderSwitchConfigs(plan)) {
        const sw = plan.switches.find((s) => s.name === r.switch)!;
        const at = path.join(dir, sw.managementAddress);
        if (r.os === "nvue") {
            const doc = parseYaml(r.text) as Array<{ set: Record<string, any> }>;
            const set = structuredClone(doc[0].set);
            set.interface = { ...set.interface, eth0: { type: "eth", ip: { address: { dhcp: {} } } }, lo: { type: "loopback" } };
            set.system = { hostname: sw.name };
            write(path.join(at, slug("nv config show -o json")), JSON.stringify([{ header: { model: "VX", "nvue-api-version": "nvue_v1", "rev-id": "1.0", version: "Cumulus Linux 5.9.0" } }, { set }]));
            const roce = JSON.stringify({ enable: set.qos.roce.enable, mode: set.qos.roce.mode });
            write(path.join(at, slug("nv show qos roce -o json")), roce);
            write(path.join(at, slug("sudo lldpctl -f json0")), JSON.stringify({ lldp: [{ interface: [] }] }));
            // what the push's verify reads through the nv stand-in (test/fixtures/roce/stubs/nv)
            write(path.join(dir, "nvue-applied.json"), JSON.stringify(doc));
            write(path.join(dir, "nvue-roce.json"), roce);
        } else if (r.os === "eos") {
            const kit = r.text.split("\n").filter((l) => !l.startsWith("no ")).join("\n");
            write(path.join(at, slug("show running-config all")), `! Command: show running-config all\n! device: ${sw.name} (DCS-7060DX4-32, EOS-4.31.2F)\n!\nhostname ${sw.name}\n!\n${kit}interface Management1\n   ip address ${sw.managementAddress}/24\n!\nend\n`);
            write(path.join(at, slug("show lldp neighbors | json")), JSON.stringify({ ...JSON.parse(fs.readFileSync(path.join(RUNNING, "eos-lldp-neighbors.json"), "utf8")), lldpNeighbors: [] }));
        } else {
            throw new Error(`no stand-in for ${r.os}`);
        }
    }
}

interface StateResource { urn: string; type: string; inputs?: Record<string, any> }
const show = (r: PulumiRun) => `exit ${r.code}\n--- stdout\n${r.stdout}\n--- stderr\n${r.stderr}`;
const urnName = (urn: string) => urn.slice(urn.lastIndexOf("::") + 2);

/**
 * The diff's lines per resource name. The CLI prints each resource as a header (`~ command:local:Command: (update)`),
 * its `[id=…]`, `[urn=…]` and `[provider=…]`, then its changed properties; the stack's outputs follow `--outputs:--`
 * (pkg/backend/display/diff.go@v3.248.0 as observed in this test's output).
 */
function diffBlocks(stdout: string): Map<string, string[]> {
    const blocks = new Map<string, string[]>();
    let current: string[] | undefined;
    for (const line of stdout.split("\n")) {
        if (/^\s*(\+-|[~+-])?\s*[\w-]+:[\w-]+:[\w-]+: \([\w-]+\)$/.test(line)) { current = [line]; continue; }
        if (/^\s*--outputs:--$|^Resources:/.test(line)) { current = undefined; continue; }
        if (!current) continue;
        current.push(line);
        const urn = line.match(/^\s*\[urn=(urn:pulumi:[^\]]+)\]$/)?.[1];
        if (urn) blocks.set(urnName(urn), current);
    }
    return blocks;
}

test("pulumi preview --diff of a QoS change names only the changed pushes, readably", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 10 * 60_000 }, async (t) => {
    const bins = engineBins();
    const provider = bins.status.get("pulumi-resource-command") ?? "missing (not listed by build.sh --status)";
    if (!provider.startsWith("ok ")) { t.skip(`pulumi-resource-command ${provider}`); return; }
    const eng = new Engine(bins, { providers: [{ name: "command", path: path.dirname(provider.slice(3)) }] });
    t.after(() => eng.remove());
    eng.program = path.join(__dirname, "programs", "roce-pushes.ts");
    const fabric = path.join(eng.tmp, "fabric");
    eng.extraEnv = {
        PATH: `${path.join(fabric, "bin")}:${PUSH_STUBS}:${bins.dir}:${process.env.PATH}`,
        STUB_DIR: fabric, STUB_LOG: path.join(fabric, "log"),
    };
    const stack = `engine-diff-${process.pid}`;
    const before = cluster(5), after = cluster(30);
    const digests = (c: Record<string, unknown>) => Object.fromEntries(renderSwitchConfigs(planCluster(parseClusterSpec(c)).roce!.qos).map((r) => [r.switch, r.digest]));
    const changed = Object.keys(digests(before)).filter((s) => digests(before)[s] !== digests(after)[s]);
    assert.deepEqual(changed, ["leaf-nvue"], "the change moves the NVUE leaf's text alone");

    standInFabric(fabric, before);
    fs.writeFileSync(path.join(fabric, "log"), "");
    await eng.initStack(stack, before);
    const up = await eng.onStack(stack, "up", {}, { timeoutMs: 6 * 60_000 });
    assert.equal(up.code, 0, show(up) + "\n--- stand-in log\n" + fs.readFileSync(path.join(fabric, "log"), "utf8"));
    const state = JSON.parse(fs.readFileSync(eng.stateFile(stack), "utf8")).checkpoint.latest.resources as StateResource[];
    const commands = state.filter((r) => r.type === "command:local:Command").map((r) => urnName(r.urn));
    assert.deepEqual(commands.sort(), ["roce-fabric-check", "roce-leaf-eos1-qos", "roce-leaf-eos2-qos", "roce-leaf-nvue-qos", "roce-stage0-check"]);
    // every push really ran against its stand-in: the EOS sessions were confirmed, the NVUE apply confirmed
    const log = fs.readFileSync(path.join(fabric, "log"), "utf8");
    assert.equal((log.match(/configure session rdmakit-[0-9a-f]{12} commit;/g) ?? []).length, 2, log);
    assert.match(log, /nv config apply --confirm/, log);

    eng.setCluster(stack, after);
    const events = path.join(eng.tmp, "preview-events.jsonl");
    const p = await eng.onStack(stack, "preview", { diff: true }, { events });
    assert.equal(p.code, 0, show(p));
    // Which resources the engine would change, from its own events (resourcePreEvent's metadata.op; a replacement is
    // create-replacement, replace and delete-replaced)
    const ops = new Map<string, Set<string>>();
    for (const line of fs.readFileSync(events, "utf8").split("\n").filter(Boolean)) {
        const md = JSON.parse(line).resourcePreEvent?.metadata;
        if (md) ops.set(urnName(md.urn), (ops.get(urnName(md.urn)) ?? new Set()).add(md.op));
    }
    const touched = [...ops].filter(([, o]) => !(o.size === 1 && o.has("same"))).map(([n, o]) => `${n} ${[...o].sort().join(",")}`).sort();
    // The pushes: the NVUE leaf's alone, updated in place (the provider runs `create` again; no delete). The checks:
    // the fabric check, which reads the NVUE leaf back, is replaced (its `triggers` hold the switches' digests, and the
    // command provider replaces on a trigger change: pulumi-command@v1.2.1 provider/pkg/provider/common/inputs.go
    // `provider:"replaceOnChanges"`); the canary's check is updated too although its switch's text is unchanged,
    // because its command names the kept spec file by the whole spec's sha256 (components/roce/fabric-cli.ts
    // fabricCheckCommand), so it reads leaf-eos1 back once more.
    assert.deepEqual(touched, [
        "roce-fabric-check create-replacement,delete-replaced,replace",
        "roce-leaf-nvue-qos update",
        "roce-stage0-check update",
    ], show(p));

    // The text diff: the changed push's block shows the parameters that changed (the kept file and its sha256), the
    // unchanged pushes have no block, and no line of a push's block is longer than MAX_LINE.
    const blocks = diffBlocks(p.stdout);
    for (const name of ["roce-leaf-eos1-qos", "roce-leaf-eos2-qos"]) assert.ok(!blocks.has(name), `${name} in the diff:\n${p.stdout}`);
    const push = blocks.get("roce-leaf-nvue-qos");
    assert.ok(push, `no block for the changed push:\n${p.stdout}`);
    const text = push.join("\n");
    const [d0, d1] = [digests(before)["leaf-nvue"], digests(after)["leaf-nvue"]];
    assert.match(text, new RegExp(`-.*--config-sha256 ${d0}`), text);
    assert.match(text, new RegExp(`\\+.*--config-sha256 ${d1}`), text);
    assert.match(text, new RegExp(`\\+ +--config '[^']*-${d1}\\.nvue\\.yaml' \\\\$`, "m"), text);
    assert.match(text, /^\s*~ create: $/m, text);
    // and what the text is made from, in words (push.ts planLines): the cable of the leaf's ports, 5 m then 30 m
    assert.match(text, /^\s*- +--plan 'mtu \d+, default cable 5 m' \\$/m, text);
    assert.match(text, /^\s*\+ +--plan 'mtu \d+, default cable 30 m' \\$/m, text);
    assert.match(text, /^\s*- +--plan 'cable 5 m(, headroom \d+ B)?: \d+ ports?' \\$/m, text);
    assert.match(text, /^\s*\+ +--plan 'cable 30 m(, headroom \d+ B)?: \d+ ports?' \\$/m, text);
    // the lines around the change stay as context, the rest is elided; no other property of the push changes
    assert.match(text, /^\s*\.\.\.$/m, text);
    assert.deepEqual(push.slice(1).filter((l) => /^\s*[~+-] \w+\s*:/.test(l)).map((l) => l.trim().split(/\s*:/)[0]), ["~ create"], text);
    for (const line of push) assert.ok(line.length <= MAX_LINE, `a line of ${line.length} characters in the push's diff: ${line.slice(0, 120)}…`);
    // the checks' commands are one option a line too
    for (const name of ["roce-fabric-check", "roce-stage0-check"]) {
        for (const line of blocks.get(name) ?? []) assert.ok(line.length <= MAX_LINE, `a line of ${line.length} characters in ${name}'s diff: ${line.slice(0, 120)}…`);
    }
    process.stderr.write(`roce-diff: the changed push's diff:\n${text}\n`);
});
