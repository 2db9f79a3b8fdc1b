import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { formatIssue } from "../components/errors";
import { checkRoceSpec, parseRoceSpec, roceSpecSchema } from "../components/roce/spec";
import { spec, specInput } from "./fixtures/roce/helpers";

const paths = (input: unknown) => parseRoceSpec(input).issues.map((i) => i.path);
function mutate(f: (s: any) => void): unknown {  
    const s = structuredClone(specInput());
    f(s);
    return s;
}

describe("roceSpecSchema defaults", () => {
    it("fills NVIDIA's lossless plan when qos is left out", () => {
        const s = roceSpecSchema.parse({ ...specInput(), qos: undefined });
        assert.deepEqual(s.qos, {
            mode: "lossless", roceDscp: 26, rocePriority: 3, cnpDscp: 48, cnpPriority: 6,
            ecn: { minBytes: 150000, maxBytes: 1500000, maxProbabilityPct: 100 }, mtu: 9000, gidIndex: 3,
        });
        assert.deepEqual(parseRoceSpec(specInput()).issues, []);
    });
});

describe("schema issues name the field", () => {
    it("a key-looking port name is refused wherever it repeats, and a clean one passes wherever it repeats", () => {
        // constructed: 48 characters of base64 with upper case, lower case and digits (redact.ts BASE64_RUN's kind of run)
        const keyLike = "AAAAC3NzaC1lZDI1NTE5AAAAIGx0ZXN0a2V5Zm9ycmRtYWtp";
        for (let round = 0; round < 2; round++) {
            const r = parseRoceSpec(mutate((s) => {
                for (const sw of s.switches) if (sw.hostPorts?.length) sw.hostPorts[0] = keyLike;
            }));
            const refused = r.issues.filter((i) => /looks like key material/.test(i.message)).map((i) => i.path);
            assert.deepEqual(refused, [0, 1, 2].map((i) => `cluster.roce.switches[${i}].hostPorts[0]`), r.issues.map(formatIssue).join("\n"));
            assert.deepEqual(parseRoceSpec(specInput()).issues, [], "the clean ports, after the refused one");
        }
    });
    it("DSCP out of 0..63, priority out of 0..7, unknown mode", () => {
        const r = parseRoceSpec(mutate((s) => { s.qos = { roceDscp: 64, rocePriority: 8, mode: "pfc-only" }; }));
        const byPath = Object.fromEntries(r.issues.map((i) => [i.path, i]));
        assert.match(byPath["cluster.roce.qos.roceDscp"].message, /RoCE DSCP must be at most 63/);
        assert.equal(byPath["cluster.roce.qos.roceDscp"].value, 64);
        assert.match(byPath["cluster.roce.qos.rocePriority"].message, /at most 7/);
        assert.match(byPath["cluster.roce.qos.mode"].message, /lossless .* or lossy/);
    });
    it("unknown OS, bad rail NIC name, unknown key", () => {
        const r = parseRoceSpec(mutate((s) => { s.switches[1].os = "junos"; s.hosts[0].railNics[1] = "mlx5 1"; s.hosts[1].nics = 8; }));
        const msgs = r.issues.map(formatIssue);
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.switches[1].os: network OS must be one of nvue, sonic, eos")), msgs.join("\n"));
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[0].railNics[1]: must be an RDMA device name")), msgs.join("\n"));
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[1]: unknown field nics")), msgs.join("\n"));
    });
    it("an address that is neither a DNS name nor IPv4", () => {
        assert.deepEqual(paths(mutate((s) => { s.switches[0].managementAddress = "10.0.0.1/24"; })), ["cluster.roce.switches[0].managementAddress"]);
    });
});

describe("checkRoceSpec cross-field checks", () => {
    const issuesOf = (f: (s: any) => void) => checkRoceSpec(roceSpecSchema.parse(mutate(f)));  
    it("passes the fixture spec", () => assert.deepEqual(checkRoceSpec(spec()), []));
    it("duplicate host and switch names and addresses", () => {
        const is = issuesOf((s) => { s.hosts[1].name = "gpu01"; s.hosts[1].address = "10.0.0.11"; s.switches[2].name = "leaf-sonic"; });
        assert.deepEqual(is.map((i) => i.path), ["cluster.roce.hosts[1].name", "cluster.roce.hosts[1].address", "cluster.roce.switches[2].name"]);
        assert.match(is[0].message, /duplicate host name \(also hosts\[0\]\)/);
    });
    it("a priority used twice and a DSCP used twice", () => {
        const is = issuesOf((s) => { s.qos = { rocePriority: 6, cnpDscp: 26 }; });
        const byPath = Object.fromEntries(is.map((i) => [i.path, i]));
        assert.match(byPath["cluster.roce.qos.cnpPriority"].message, /priority used twice/);
        assert.match(byPath["cluster.roce.qos.cnpDscp"].message, /same DSCP as qos.roceDscp/);
    });
    it("priority 0 for RoCE is refused", () => {
        assert.deepEqual(issuesOf((s) => { s.qos = { rocePriority: 0 }; }).map((i) => i.path), ["cluster.roce.qos.rocePriority"]);
    });
    it("DSCP out of range is caught even when a spec was built without the schema", () => {
        const s = spec();
        s.qos.roceDscp = 70;
        const is = checkRoceSpec(s);
        assert.equal(is[0].path, "cluster.roce.qos.roceDscp");
        assert.equal(is[0].allowed, "an integer 0..63");
    });
    it("rail count vs GPU count", () => {
        const more = issuesOf((s) => { s.hosts[0].gpu.count = 1; });
        assert.equal(more[0].path, "cluster.roce.hosts[0].railNics");
        assert.match(more[0].message, /2 rails for 1 GPUs/);
        const uneven = issuesOf((s) => { s.hosts[1].railNics = ["mlx5_0", "mlx5_1", "mlx5_2"]; s.hosts[1].railNetdevs = ["a0", "a1", "a2"]; });
        assert.match(uneven[0].message, /do not divide 8 GPUs evenly/);
    });
    it("duplicate ports, wrong port names for the OS, unsupported speed", () => {
        const is = issuesOf((s) => { s.switches[0].hostPorts = ["Ethernet0", "Ethernet0", "swp3"]; s.switches[1].speedGbps = 800; });
        assert.deepEqual(is.map((i) => i.path), ["cluster.roce.switches[0].hostPorts[2]", "cluster.roce.switches[0].hostPorts[1]", "cluster.roce.switches[1].speedGbps"]);
        assert.equal(is[0].allowed, "Ethernet0, Ethernet8");
        assert.match(is[2].message, /ConnectX-7 does not run at this speed/);
    });
    it("bootstrap NIC on a rail, netdev count mismatch, too few switch ports", () => {
        const is = issuesOf((s) => { s.hosts[0].bootstrapNic = "ens1f0np0"; s.hosts[1].railNetdevs = ["ens1f0np0"]; s.switches = [s.switches[0]]; });
        assert.deepEqual(is.map((i) => i.path), ["cluster.roce.hosts[0].bootstrapNic", "cluster.roce.hosts[1].railNetdevs", "cluster.roce.switches"]);
        assert.match(is[2].message, /4 rail NICs but only 2 host-facing switch ports/);
    });
    it("switch MTU below host MTU or above the OS maximum", () => {
        assert.deepEqual(issuesOf((s) => { s.qos = { mtu: 9000, switchMtu: 4500 }; }).map((i) => i.path), ["cluster.roce.qos.switchMtu"]);
        const eos = issuesOf((s) => { s.qos = { switchMtu: 9216 }; });
        assert.equal(eos.length, 1);
        assert.match(eos[0].message, /leaf-eos runs eos, whose ports take at most 9214/);
    });
    it("ECN max below min", () => {
        const is = issuesOf((s) => { s.qos = { ecn: { minBytes: 200000, maxBytes: 100000 } }; });
        assert.equal(is[0].path, "cluster.roce.qos.ecn.maxBytes");
    });
});

describe("switch fabric fields: host keys, models, uplinks, spines", () => {
    const msgs = (input: unknown) => parseRoceSpec(input).issues.map(formatIssue);
    it("a switch without a pinned host key is refused, naming the field (EOS included)", () => {
        const m = msgs(mutate((s) => { delete s.switches[2].hostKey; }));
        assert.ok(m.some((x) => x.startsWith("cluster.roce.switches[2].hostKey: is required")), m.join("\n"));
    });
    it("an eos switch needs a catalog model (its queue keyword), a model must be known", () => {
        const a = msgs(mutate((s) => { delete s.switches[2].model; }));
        assert.ok(a.some((x) => x.startsWith("cluster.roce.switches[2].model: an eos switch needs its model") && x.includes("7060DX4-32")), a.join("\n"));
        const b = msgs(mutate((s) => { s.switches[0].model = "SN9999"; }));
        assert.ok(b.some((x) => x.startsWith("cluster.roce.switches[0].model: not a switch model the catalog knows") && x.includes("SN5600")), b.join("\n"));
    });
    it("uplinks must go to a listed spine, on a port that is not cabled twice; a spine has no host ports and is used", () => {
        const spine = { name: "spine1", os: "sonic", role: "spine", managementAddress: "10.0.2.1", hostKey: specInput().switches[0].hostKey, speedGbps: 400, cableLengthM: 40 };
        const up = (peer: string, peerPort: string) => ({ port: "Ethernet248", peer, peerPort, cableLengthM: 40 });
        const m = msgs(mutate((s) => {
            s.switches.push(spine, { ...spine, name: "spine2", managementAddress: "10.0.2.2", hostPorts: ["Ethernet0"] });
            s.switches[0].uplinks = [up("spine1", "Ethernet0")];
            s.switches[1].uplinks = [{ ...up("spine1", "Ethernet0"), port: "swp64" }, { ...up("leaf-eos", "Ethernet9/1"), port: "swp65" }, { ...up("nowhere", "x"), port: "swp66" }];
        }));
        for (const want of [
            "cluster.roce.switches[1].uplinks[0].peerPort: spine1:Ethernet0 is already cabled to leaf-sonic:Ethernet248",
            "cluster.roce.switches[1].uplinks[1].peer: uplinks go to a spine; leaf-eos is a leaf",
            "cluster.roce.switches[1].uplinks[2].peer: no switch of that name",
            "cluster.roce.switches[4].hostPorts: a spine faces leaves only",
        ]) assert.ok(m.some((x) => x.startsWith(want)), `${want}\n---\n${m.join("\n")}`);
        const lonely = msgs(mutate((s) => { s.switches.push(spine); }));
        assert.ok(lonely.some((x) => x.startsWith("cluster.roce.switches[3]: a spine no leaf uplink points at")), lonely.join("\n"));
    });
    it("a port listed as host port and uplink, a portOverrides entry for a port the switch does not list", () => {
        const m = msgs(mutate((s) => {
            s.switches.push({ name: "spine1", os: "sonic", role: "spine", managementAddress: "10.0.2.1", hostKey: s.switches[0].hostKey, speedGbps: 400, cableLengthM: 40 });
            s.switches[0].uplinks = [{ port: "Ethernet8", peer: "spine1", peerPort: "Ethernet0", cableLengthM: 40 }];
            s.switches[1].portOverrides = { swp9: { cableLengthM: 30 }, swp1: { speedGbps: 999 } };
        }));
        assert.ok(m.some((x) => x.startsWith("cluster.roce.switches[0].uplinks[0].port: port listed twice")), m.join("\n"));
        assert.ok(m.some((x) => x.startsWith("cluster.roce.switches[1].portOverrides.swp9: not one of this switch's hostPorts")), m.join("\n"));
        assert.ok(m.some((x) => x.startsWith("cluster.roce.switches[1].portOverrides.swp1.speedGbps: ConnectX-7 does not run at this speed")), m.join("\n"));
    });
});

describe("hosts[].railPorts (the cabling fabric check compares with LLDP)", () => {
    it("each rail's `leaf:port` must be a host port of a listed switch, once, one per rail", () => {
        const ok = mutate((s) => { s.hosts[0].railPorts = ["leaf-nvue:swp1", "leaf-eos:Ethernet1/1"]; s.hosts[1].railPorts = ["leaf-nvue:swp2", "leaf-eos:Ethernet2/1"]; });
        assert.deepEqual(parseRoceSpec(ok).issues, []);
        const r = parseRoceSpec(mutate((s) => {
            s.hosts[0].railPorts = ["leaf-nvue:swp9", "leaf-x:Ethernet1/1"];
            s.hosts[1].railPorts = ["leaf-nvue:swp9"];
        }));
        const msgs = r.issues.map(formatIssue);
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[0].railPorts[0]: swp9 is not one of leaf-nvue's hostPorts")), msgs.join("\n"));
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[0].railPorts[1]: no switch of that name")), msgs.join("\n"));
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[1].railPorts: lists 1 ports for 2 rail NICs")), msgs.join("\n"));
        assert.ok(msgs.some((m) => m.startsWith("cluster.roce.hosts[1].railPorts[0]: leaf-nvue:swp9 is already the port of gpu01 rail 0")), msgs.join("\n"));
        assert.deepEqual(paths(mutate((s) => { s.hosts[0].railPorts = ["swp1", "leaf-eos:Ethernet1/1"]; })), ["cluster.roce.hosts[0].railPorts[0]"]);
    });
});

describe("what a switch OS cannot run", () => {
    it("NVUE in a lossless fabric at RoCE priority 2 is refused naming qos.rocePriority (its lossless pool stays on 3)", () => {
        const r = parseRoceSpec(mutate((s) => { s.qos = { rocePriority: 2 }; }));
        assert.deepEqual(r.issues.map((i) => i.path), ["cluster.roce.qos.rocePriority"]);
        assert.match(formatIssue(r.issues[0]), /switches\[1\] \(leaf-nvue\) runs NVUE, whose lossless traffic pool stays on switch priority 3/);
        assert.match(formatIssue(r.issues[0]), /3 while an NVUE switch is in a lossless fabric \(or qos\.mode: lossy\)/);
        // lossy, or a fabric without NVUE, takes priority 2
        assert.deepEqual(parseRoceSpec(mutate((s) => { s.qos = { rocePriority: 2, mode: "lossy" }; })).issues, []);
        assert.deepEqual(parseRoceSpec(mutate((s) => { s.qos = { rocePriority: 2 }; s.switches.splice(1, 1); s.hosts.forEach((h: any) => { h.railNics = ["mlx5_0"]; h.railNetdevs = ["ens1f0np0"]; h.gpu.count = 8; }); })).issues, []);
    });
});
