import { describe, it } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Command } from "commander";
import { parse as parseYaml } from "yaml";
import { registerSwitchConfig, switchConfigFromStackFile } from "../components/roce/cli";
import { parseClusterSpec } from "../components/spec";
import { yangAvailable, yanglint } from "./fixtures/roce/helpers";

const EXAMPLE = path.join(__dirname, "..", "examples", "roce-h100.yaml");

describe("examples/roce-h100.yaml", () => {
    it("is a valid cluster spec: 4 hosts x 8 ConnectX-7 rails, one SONiC and one NVUE leaf, a SONiC spine", () => {
        const raw = parseYaml(fs.readFileSync(EXAMPLE, "utf8")).config["rdmakit:cluster"];
        const s = parseClusterSpec(raw);
        assert.equal(s.fabric, "roce");
        assert.equal(s.roce!.hosts.length, 4);
        assert.ok(s.roce!.hosts.every((h) => h.railNics.length === 8 && h.gpu.model === "H100" && h.gpu.count === 8));
        assert.deepEqual(s.roce!.switches.map((w) => [w.os, w.role, w.hostPorts.length, w.uplinks.length]), [["sonic", "leaf", 16, 2], ["nvue", "leaf", 16, 2], ["sonic", "spine", 0, 0]]);
        assert.ok(s.roce!.switches.every((w) => /^ssh-ed25519 /.test(w.hostKey)), "every switch pins its host key");
    });
    it("renders without issues or consistency violations, and its config_db.json passes yanglint", (t) => {
        const r = switchConfigFromStackFile(EXAMPLE);
        assert.deepEqual(r.issues, []);
        assert.deepEqual(r.violations, []);
        assert.deepEqual(r.configs.map((c) => c.fileName), ["leaf-sonic.config_db.json", "leaf-nvue.nvue.yaml", "spine.config_db.json"]);
        const avail = yangAvailable();
        if (!avail.ok) return t.skip(avail.why);
        for (const c of [r.configs[0], r.configs[2]]) {
            const y = yanglint(JSON.parse(c.text));
            assert.equal(y.status, 0, `${c.fileName}: ${y.output}`);
        }
    });
});

describe("rdmakit switch-config", () => {
    const run = async (args: string[]) => {
        const program = new Command("rdmakit").exitOverride();
        registerSwitchConfig(program);
        const out: string[] = [];
        const err: string[] = [];
        const ow = process.stdout.write.bind(process.stdout);
        const ew = process.stderr.write.bind(process.stderr);
        process.stdout.write = ((s: string) => { out.push(String(s)); return true; }) as typeof process.stdout.write;
        process.stderr.write = ((s: string) => { err.push(String(s)); return true; }) as typeof process.stderr.write;
        const before = process.exitCode;
        try {
            await program.parseAsync(["node", "rdmakit", "switch-config", ...args]);
            return { out: out.join(""), err: err.join(""), code: process.exitCode };
        } finally {
            process.stdout.write = ow;
            process.stderr.write = ew;
            process.exitCode = before;
        }
    };

    it("--switch prints exactly that switch's file", async () => {
        const r = await run(["--config", EXAMPLE, "--switch", "leaf-nvue"]);
        const expected = switchConfigFromStackFile(EXAMPLE, "leaf-nvue").configs[0].text;
        assert.equal(r.out, expected);
        assert.equal(r.code, 0);
    });
    it("--out writes one file per switch", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sw-"));
        try {
            const r = await run(["--config", EXAMPLE, "--out", dir]);
            assert.deepEqual(fs.readdirSync(dir).sort(), ["leaf-nvue.nvue.yaml", "leaf-sonic.config_db.json", "spine.config_db.json"]);
            const sonic = JSON.parse(fs.readFileSync(path.join(dir, "leaf-sonic.config_db.json"), "utf8"));
            assert.equal(sonic.DSCP_TO_TC_MAP.RDMAKIT_ROCE["26"], "3");
            assert.match(r.out, /leaf-sonic\.config_db\.json {2}sha256 [0-9a-f]{64}/);
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
    it("reports spec problems with field paths and exit code 2 (bad input)", async () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sw-"));
        try {
            const bad = fs.readFileSync(EXAMPLE, "utf8").replace("cnpDscp: 48", "cnpDscp: 99").replace("os: nvue", "os: junos");
            const f = path.join(dir, "Pulumi.bad.yaml");
            fs.writeFileSync(f, bad);
            const r = await run(["--config", f]);
            assert.equal(r.code, 2);
            assert.match(r.err, /cluster\.roce\.qos\.cnpDscp: CNP DSCP must be at most 63 \(got 99\)/);
            assert.match(r.err, /cluster\.roce\.switches\[1\]\.os: network OS must be one of/);
            assert.equal(r.out, "");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
    it("an unknown --switch is an error listing the known ones", () => {
        const r = switchConfigFromStackFile(EXAMPLE, "leaf-x");
        assert.equal(r.issues[0].path, "--switch");
        assert.equal(r.issues[0].allowed, "leaf-sonic, leaf-nvue, spine");
    });
    it("a non-roce stack file is refused", () => {
        const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sw-"));
        try {
            const f = path.join(dir, "Pulumi.aws.yaml");
            fs.writeFileSync(f, "config:\n  rdmakit:cluster:\n    fabric: aws-efa\n");
            assert.equal(switchConfigFromStackFile(f).issues[0].path, "cluster.fabric");
        } finally {
            fs.rmSync(dir, { recursive: true, force: true });
        }
    });
});
