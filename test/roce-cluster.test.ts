import { before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import * as pulumi from "@pulumi/pulumi";
import * as path from "node:path";
import { parsePushCommand, pushScriptsDigest, rolloutStages } from "../components/roce/push";
import { fabricCheckCommand } from "../components/roce/fabric-cli";
import { readKeptInput } from "../components/kept-input";
import { SSH_KEY_PRELUDE } from "../components/provision/ansible";
import { planQos } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import type { RoceSpec } from "../components/roce/spec";
import type { ClusterSpecInput } from "../components/types";
import { HOST_KEY, spec, specInput } from "./fixtures/roce/helpers";

interface Rec { type: string; name: string; inputs: Record<string, any> }  
const created: Rec[] = [];
let mod: typeof import("../components/roce/cluster");

// Secret inputs reach mocks wrapped with Pulumi's secret signature (pulumi/pulumi:sdk/nodejs/runtime/rpc.ts specialSigKey):
// no push or check may carry one.
const SECRET_SIG = "4dabf18193072939515e22adb298388d";
const unwrap = <T>(o: pulumi.Output<T>) => new Promise<T>((r) => o.apply(r));
const commands = (prefix: string) => created.filter((r) => r.type.startsWith("command:") && r.name.startsWith(prefix + "-"));
const byName = (prefix: string) => Object.fromEntries(commands(prefix).map((r) => [r.name.slice(prefix.length + 1), r]));
const byNameOf = byName;

before(async () => {
    await pulumi.runtime.setMocks({
        newResource: (args) => {
            created.push({ type: args.type, name: args.name, inputs: args.inputs });
            return { id: `${args.name}-id`, state: { ...args.inputs, stdout: "ok", stderr: "" } };
        },
        call: (args) => args.inputs,
    }, "rdmakit", "test", false);
    mod = await import("../components/roce/cluster");
});
beforeEach(() => { created.length = 0; });

/** The whole cluster spec around a `cluster.roce` section, as RoceCluster takes it. */
function cluster(roce: RoceSpec): ClusterSpecInput {
    return { name: "lab", fabric: "roce", ssh: { allowedCidrs: ["10.0.0.0/8"] }, roce };
}

/** Builds a cluster and waits until its resources are registered. */
async function build(name: string, s = spec(), extra: Partial<import("../components/roce/cluster").RoceClusterArgs> = {}) {
    const c = new mod.RoceCluster(name, { spec: cluster(s), sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\nfake\n"), ...extra });
    await unwrap(c.switchConfigDigests);
    await new Promise((r) => setTimeout(r, 50));
    return c;
}

describe("RoceCluster under mocks", () => {
    it("every push verifies the switch's pinned host key; a switch without one is refused before anything is created", async () => {
        await build("hk");
        const cmds = byName("hk");
        // every push runs ssh here with the switch's pinned key (push.sh trusts only it, with timeouts on every
        // connection: test/node-trust.test.ts and roce-push.test.ts run it)
        for (const sw of ["leaf-sonic", "leaf-nvue", "leaf-eos"]) {
            assert.equal(parsePushCommand(cmds[`${sw}-qos`].inputs.create)?.switch, sw);
            assert.ok(cmds[`${sw}-qos`].inputs.create.includes(`--host-key '${HOST_KEY.split(" ").slice(0, 2).join(" ")}'`), cmds[`${sw}-qos`].inputs.create);
        }
        const input = specInput();
        delete (input.switches[2] as { hostKey?: string }).hostKey;
        created.length = 0;
        assert.throws(() => new mod.RoceCluster("nokey", { spec: cluster(input as RoceSpec) }), (e: unknown) => e instanceof Error && /cluster\.roce\.switches\[2\]\.hostKey: is missing/.test(e.message));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(commands("nokey").length, 0);
    });

    it("registers the component and one push per switch, each run here under its own ssh-agent, the key never an input", async () => {
        const c = await build("fab");
        assert.equal(created.filter((r) => r.type === "rdmakit:index:RoceCluster").length, 1);
        const cmds = byName("fab");
        assert.deepEqual(Object.keys(cmds).sort(), ["fabric-check", "leaf-eos-qos", "leaf-nvue-qos", "leaf-sonic-qos", "stage0-check"]);
        for (const k of Object.keys(cmds)) {
            assert.equal(cmds[k].type, "command:local:Command", k);
            assert.deepEqual(cmds[k].inputs.interpreter, ["ssh-agent", "/bin/bash", "-c"], k);
            const inputs = JSON.stringify(cmds[k].inputs);
            assert.ok(!inputs.includes("PRIVATE KEY") && !inputs.includes(SECRET_SIG), `${k}: no key and no secret among the inputs`);
            assert.match(cmds[k].inputs.environment.RDMAKIT_KEY_SOCKET, /rdmakit-.*\.sock$/);
            assert.equal(cmds[k].inputs.environment.RDMAKIT_KEY_NAME, "fab-switches");
        }

        const rendered = Object.fromEntries(renderSwitchConfigs(planQos(spec())).map((r) => [r.switch, r]));
        // What is pushed to which switch: the kept file of its rendered text and that text's digest, the scripts' digest;
        // no text, no script, no key prelude among the inputs (the state holds each once, outside)
        const prelude = new Set<string>();
        for (const [sw, user, address] of [["leaf-nvue", "cumulus", "10.0.1.2"], ["leaf-sonic", "admin", "10.0.1.1"], ["leaf-eos", "admin", "10.0.1.3"]]) {
            const inputs = cmds[`${sw}-qos`].inputs;
            const args = parsePushCommand(inputs.create)!;
            assert.equal(args.configSha256, rendered[sw].digest);
            assert.equal(readKeptInput(args.config, args.configSha256), rendered[sw].text);
            assert.match(inputs.create, new RegExp(`--address '${address.replace(/\./g, "\\.")}' --port 22 --user '${user}'`));
            assert.ok(inputs.create.includes(`--scripts-sha256 ${pushScriptsDigest(rendered[sw].os)}`));
            assert.equal(inputs.stdin, undefined);
            // no update command: the provider runs create again on a change, so the command is in the state once
            assert.equal(inputs.update, undefined);
            assert.doesNotMatch(inputs.delete, /unset|config load/);
            assert.ok(inputs.create.split("\n").every((l: string) => l.length <= 300), "short lines, for pulumi preview --diff");
            // what the text is made from, in words (the diff of a QoS change shows these, not only a new digest)
            assert.match(inputs.create, /--plan 'mtu \d+, default cable [\d.]+ m[^']*'/);
            assert.match(inputs.create, /--plan 'roce priority 3 tc 3 queue 3 pg 3; cnp priority 6 [^']*'/);
            assert.match(inputs.create, /--plan 'cable [\d.]+ m(, headroom \d+ B)?: \d+ ports?'/);
            const m = /--key-prelude '([^']+)' \\\n\s*--key-prelude-sha256 ([0-9a-f]{64})/.exec(inputs.create);
            assert.ok(m, inputs.create);
            assert.equal(readKeptInput(m[1], m[2]), SSH_KEY_PRELUDE.join("\n") + "\n");
            prelude.add(m[1]);
        }
        assert.equal(prelude.size, 1, "one kept key prelude for every push");

        // Outputs
        assert.deepEqual(await unwrap(c.switchConfigDigests), Object.fromEntries(Object.values(rendered).map((r) => [r.switch, r.digest])));
        assert.deepEqual(await unwrap(c.ncclEnv), { NCCL_IB_TC: "106", NCCL_IB_HCA: "=mlx5_0:1,mlx5_1:1", NCCL_SOCKET_IFNAME: "=eno1", NCCL_IB_GID_INDEX: "3" });
        // each host's whole environment, known at a preview too, and not the plan's own objects
        const hostEnv = await unwrap(c.hostNcclEnv);
        assert.deepEqual(hostEnv, Object.fromEntries(c.qos.hosts.map((h) => [h.name, h.ncclEnv])));
        assert.notEqual(hostEnv.gpu01, c.qos.hosts[0].ncclEnv);
        assert.equal(await c.hostNcclEnv.isKnown, true);
        assert.equal(await c.switchConfigDigests.isKnown, true);
        const hosts = await unwrap(c.hosts);
        assert.deepEqual(hosts.map((h) => [h.name, h.address, h.vars.roce_host_pfc_vector]), [["gpu01", "10.0.0.11", "0,0,0,1,0,0,0,0"], ["gpu02", "10.0.0.12", "0,0,0,1,0,0,0,0"]]);
    });

    it("a rotated switch key changes no push or check input", async () => {
        await build("rot");
        const a = byName("rot");
        created.length = 0;
        await build("rot", spec(), { sshPrivateKey: pulumi.secret("-----BEGIN OPENSSH PRIVATE KEY-----\nanother\n") });
        const b = byName("rot");
        for (const k of Object.keys(a)) assert.equal(JSON.stringify(b[k].inputs), JSON.stringify(a[k].inputs), k);
    });

    it("stages the rollout: the canary, its check, then the rest after it; one whole-fabric check at the end", async () => {
        const c = await build("stg");
        const sw = Object.keys(c.pushes);
        assert.deepEqual(sw, ["leaf-sonic", "leaf-nvue", "leaf-eos"]);
        assert.deepEqual(c.checks.length, 2);
        const byName = byNameOf("stg");
        assert.match(byName["stage0-check"].inputs.create, /fabric check \\\n\s+--spec-file '[^']+' \\\n\s+--spec-sha256 [0-9a-f]{64} \\\n\s+--switches-only \\\n\s+--only leaf-sonic 9>&- &/);
        assert.deepEqual(byName["stage0-check"].inputs.triggers, [c.switchConfigs[0].digest]);
        assert.doesNotMatch(byName["fabric-check"].inputs.create, /--only/);
        // a 64-switch wave's check: 12 switches to an --only line, every line short enough to read in a diff
        const wave = fabricCheckCommand({ file: "out/s/inputs/roce-spec-x.json", digest: "0".repeat(64) }, [], ".", { only: Array.from({ length: 64 }, (_, i) => `leaf-r${i % 8}-${i}`) });
        assert.equal(wave.create.match(/--only /g)?.length, 6);
        assert.ok(wave.create.split("\n").every((l) => l.length <= 300), wave.create);
        assert.deepEqual(rolloutStages(["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k"], 2, 4), [["a"], ["b", "c"], ["d", "e", "f", "g"], ["h", "i", "j", "k"]]);
        // 384 switches: the canary, then 8, 16, 32 and 64-switch waves (9 stages after the canary)
        const big = rolloutStages(Array.from({ length: 384 }, (_, i) => `s${i}`));
        assert.deepEqual(big.map((s) => s.length), [1, 8, 16, 32, 64, 64, 64, 64, 64, 7]);
        assert.deepEqual(big.flat(), Array.from({ length: 384 }, (_, i) => `s${i}`));
        assert.deepEqual(rolloutStages(["a"]), [["a"]]);
    });

    it("creates nothing per GPU host: 2 or 6 hosts give the same three switch commands, the canary check and one fabric check", async () => {
        const s = spec();
        for (let i = 3; i <= 6; i++) s.hosts.push({ ...structuredClone(s.hosts[0]), name: `gpu0${i}`, address: `10.0.0.1${i}` });
        // 12 rails need 12 host ports: two more per switch.
        const more = { sonic: ["Ethernet16", "Ethernet24"], nvue: ["swp3", "swp4"], eos: ["Ethernet3/1", "Ethernet4/1"] };
        for (const sw of s.switches) sw.hostPorts.push(...more[sw.os]);
        await build("big", s);
        assert.equal(commands("big").length, 5);
        assert.equal(created.length, 6);
    });

    it("inputs change only when the rendered config changes", async () => {
        await build("a");
        const a = byName("a");
        // A host-only change (address, GID index) leaves every switch's push inputs untouched.
        const hostOnly = spec();
        hostOnly.hosts[1].address = "10.0.0.99";
        hostOnly.hosts[1].gidIndex = 5;
        await build("b", hostOnly);
        const b = byName("b");
        const pushes = Object.keys(a).filter((k) => k.endsWith("-qos"));
        for (const k of pushes) assert.equal(b[k].inputs.create, a[k].inputs.create, k);
        // A cable-length change on the SONiC leaf re-pushes that switch only.
        const cable = spec();
        cable.switches[0].cableLengthM = 30;
        await build("c", cable);
        const c = byName("c");
        assert.notEqual(c["leaf-sonic-qos"].inputs.create, a["leaf-sonic-qos"].inputs.create);
        assert.notEqual(parsePushCommand(c["leaf-sonic-qos"].inputs.create)!.configSha256, parsePushCommand(a["leaf-sonic-qos"].inputs.create)!.configSha256);
        assert.equal(c["leaf-nvue-qos"].inputs.create, a["leaf-nvue-qos"].inputs.create);
        assert.equal(c["leaf-eos-qos"].inputs.create, a["leaf-eos-qos"].inputs.create);
        // A QoS change reaches every switch.
        await build("d", spec({ ecn: { minBytes: 100000, maxBytes: 1000000, maxProbabilityPct: 50 } }));
        const d = byName("d");
        for (const k of pushes) assert.notEqual(parsePushCommand(d[k].inputs.create)!.configSha256, parsePushCommand(a[k].inputs.create)!.configSha256, k);
        // the fabric check runs again exactly when a push does
        assert.deepEqual(b["fabric-check"].inputs.triggers, a["fabric-check"].inputs.triggers);
        assert.notDeepEqual(c["fabric-check"].inputs.triggers, a["fabric-check"].inputs.triggers);
    });

    it("after the pushes, one read-only fabric check of the switches through the run's agent; its script is the CLI's", async () => {
        const c = await build("chk");
        const chk = byName("chk")["fabric-check"];
        assert.equal(chk.type, "command:local:Command");
        const m = /node bin\/rdmakit\.cjs fabric check \\\n\s+--spec-file '([^']+)' \\\n\s+--spec-sha256 ([0-9a-f]{64}) \\\n\s+--switches-only/.exec(chk.inputs.create);
        assert.ok(m, chk.inputs.create);
        // the spec is not among the check's inputs: the file (named relative to the kit's root, where the check runs)
        // holds it once for every check, checked by its digest
        assert.equal(chk.inputs.stdin, undefined);
        assert.equal(path.basename(m[1]), `roce-spec-${m[2]}.json`);
        const stages = commands("chk").filter((r) => /-(stage\d+|fabric)-check$/.test(r.name));
        assert.ok(stages.length >= 2 && stages.every((r) => r.inputs.create.includes(`--spec-sha256 ${m[2]}`)), "every stage check reads the same kept spec");
        assert.deepEqual(chk.inputs.triggers, c.switchConfigs.map((r) => r.digest));
        assert.equal(chk.inputs.environment.RDMAKIT_SWITCH_SSH_KEY, undefined);
    });

    it("pushSwitchConfig: false renders and exports but pushes nothing", async () => {
        const c = await build("dry", spec(), { pushSwitchConfig: false });
        assert.equal(commands("dry").length, 0);
        assert.equal(Object.keys(await unwrap(c.switchConfigDigests)).length, 3);
    });

    it("an invalid spec fails before any child is created, naming the field", async () => {
        const s = spec();
        s.qos.cnpDscp = s.qos.roceDscp;
        assert.throws(() => new mod.RoceCluster("bad", { spec: cluster(s) }), (e: unknown) => e instanceof Error && /cluster\.roce\.qos\.cnpDscp/.test(e.message));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(commands("bad").length, 0);
    });

    it("a spec of another fabric is refused before anything is created", async () => {
        const other = { ...cluster(spec()), fabric: "aws-efa" as const };
        assert.throws(() => new mod.RoceCluster("wrongfab", { spec: other }), (e: unknown) => e instanceof Error && /cluster\.roce/.test(e.message));
        await new Promise((r) => setTimeout(r, 20));
        assert.equal(commands("wrongfab").length, 0);
    });
});
