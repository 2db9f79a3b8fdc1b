// Private key material pasted where it does not belong is never echoed: not by the spec parser, not by a component's
// InputPropertiesError, not by the CLI. Keys are made here (node:crypto, ssh-keygen); none is committed.
import { before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { spawnSync } from "node:child_process";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml, stringify } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { redactSecrets, showValue, SpecError } from "../components/errors";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = join(__dirname, "..");

/** The key's secret part as text: every base64 line between the armour lines, joined. */
function body(pem: string): string {
    return pem.split("\n").filter((l) => l && !l.startsWith("-----")).join("");
}

/** Fails when any 12 consecutive characters of the key body appear in `text` (9 bytes of the key). */
function assertNoKey(text: string, pem: string, where: string): void {
    const b = body(pem);
    for (let i = 0; i + 12 <= b.length; i++) {
        const piece = b.slice(i, i + 12);
        assert.ok(!text.includes(piece), `${where} echoes part of the private key (${piece}):\n${text}`);
    }
}

const pkcs8 = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const rsa = generateKeyPairSync("rsa", { modulusLength: 2048 }).privateKey.export({ type: "pkcs8", format: "pem" }).toString();
let openssh = "";

function example(): any {
    return parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"];
}

function specErrorText(raw: unknown): string {
    try {
        parseClusterSpec(raw);
    } catch (e) {
        assert.ok(e instanceof SpecError, String(e));
        return e.message;
    }
    assert.fail("the spec was accepted");
}

before(() => {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-secrets-"));
    const r = spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", join(dir, "id")]);
    assert.equal(r.status, 0, String(r.stderr));
    openssh = readFileSync(join(dir, "id"), "utf8");
});

describe("redactSecrets", () => {
    it("hides PEM, OpenSSH and bare base64 key bodies, whole or cut short, JSON-escaped or not", () => {
        for (const key of [pkcs8, rsa, openssh]) {
            for (const text of [key, key.slice(0, 90), JSON.stringify({ publicKey: key }), body(key), `prefix ${body(key).slice(0, 48)} suffix`]) {
                assertNoKey(redactSecrets(text), text.includes("-----") || text.startsWith("{") ? key : text.replace(/^prefix | suffix$/g, ""), "redactSecrets");
                assert.match(redactSecrets(text), /redacted/);
            }
        }
    });

    it("leaves ordinary messages, paths, public key type names and short values alone", () => {
        for (const text of [
            "cluster.aws.instanceType: is not a known instance type (got \"p5.48xlarge-x\")",
            "/opt/amazon/openmpi/bin/mpirun", "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libcudart.so.13",
            "ssh-ed25519", "10.0.0.0/8", "Ethernet2/5/1",
            // an Azure resource id, whose words run 40+ base64-alphabet characters between its `-` and `.`
            "/subscriptions/00000000-1111-2222-3333-444444444444/resourceGroups/hub-rg/providers/Microsoft.Network/virtualNetworks/vnet1/subnets/gpu2",
        ]) assert.equal(redactSecrets(text), text);
    });

    it("still hides random key bytes whatever their slashes: 2,000 random 48-byte bodies", () => {
        for (let i = 0; i < 2000; i++) {
            const b64 = randomBytes(48).toString("base64");
            const out = redactSecrets(`key ${b64}`);
            assert.equal(out, "key [redacted: looks like key material]", b64);
        }
    });

    it("hides a 32-byte key in hex where a word character touches it (0x…, key_…), and in a spec message", () => {
        const hex = randomBytes(32).toString("hex");
        for (const [text, key] of [[hex, hex], [`0x${hex}`, hex], [`key_${hex}`, hex], [`0X${hex.toUpperCase()}`, hex.toUpperCase()]]) {
            assertNoKey(redactSecrets(text), `-----\n${key}\n-----`, "redactSecrets");
        }
        const c = example();
        c.nodes = `0x${hex}`;
        c.ssh.allowedCidrs = `key_${hex}`;
        assertNoKey(specErrorText(c), `-----\n${hex}\n-----`, "parseClusterSpec");
    });

    it("hides a bare key body whose slashes are JSON-escaped (\\/): 500 random 96-byte bodies", () => {
        for (let i = 0; i < 500; i++) {
            const b64 = randomBytes(96).toString("base64");
            const out = redactSecrets(JSON.stringify({ key: b64 }).replace(/\//g, "\\/"));
            assertNoKey(out.replace(/\\\//g, "/"), `-----\n${b64}\n-----`, "redactSecrets");
        }
    });

    it("cuts after redacting, so no prefix of a key is left behind", () => {
        const shown = showValue(pkcs8);
        assertNoKey(shown, pkcs8, "showValue");
        assert.ok(shown.length <= 80);
    });
});

describe("a private key in the stack config", () => {
    it("is not echoed from ssh.publicKey (PKCS#8 PEM, bare PKCS#8 body, OpenSSH)", () => {
        for (const key of [pkcs8, body(pkcs8), openssh, rsa]) {
            const c = example();
            c.ssh.publicKey = key;
            const msg = specErrorText(c);
            assert.match(msg, /cluster\.ssh\.publicKey/);
            assertNoKey(msg, key.includes("-----") ? key : `-----\n${key}\n-----`, "parseClusterSpec");
        }
    });

    it("is not echoed from an unknown field, nor from a list or a tag", () => {
        const c = example();
        c.ssh.key = pkcs8;
        c.tags.deployKey = openssh;
        c.ssh.allowedCidrs = [body(pkcs8)];
        const msg = specErrorText(c);
        for (const p of ["cluster.ssh.key", "cluster.ssh.allowedCidrs"]) assert.ok(msg.includes(p), `${p} not named:\n${msg}`);
        assertNoKey(msg, pkcs8, "parseClusterSpec");
        assertNoKey(msg, openssh, "parseClusterSpec");
    });

    it("is not echoed by a component's InputPropertiesError (message and every reason)", async () => {
        await pulumi.runtime.setMocks({ newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }), call: (a) => a.inputs }, "rdmakit", "test", false);
        const { AwsEfaCluster } = await import("../components/aws/cluster");
        const { RdmaCluster } = await import("../components/cluster");
        const c = example();
        c.ssh.publicKey = pkcs8;
        c.ssh.privateKeyText = openssh;
        for (const make of [() => new AwsEfaCluster("k", { spec: c }), () => new RdmaCluster("k", { spec: c, sshPrivateKey: "x" })]) {
            let err: unknown;
            try { make(); } catch (e) { err = e; }
            assert.ok(err instanceof pulumi.InputPropertiesError, String(err));
            const text = [err.message, ...err.errors.map((x) => `${x.propertyPath} ${x.reason}`)].join("\n");
            assert.match(text, /cluster\.ssh\.publicKey/);
            assertNoKey(text, pkcs8, "component");
            assertNoKey(text, openssh, "component");
        }
    });

    it("a plain-text switch key is refused by pulumi up's program like the node key (issue 25 F6), without the key", async () => {
        await pulumi.runtime.setMocks({ newResource: (a) => ({ id: `${a.name}-id`, state: a.inputs }), call: (a) => a.inputs }, "rdmakit", "test", false);
        const { RdmaCluster } = await import("../components/cluster");
        const roce = parseYaml(readFileSync(join(ROOT, "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
        let err: unknown;
        try { new RdmaCluster("k", { spec: roce, switchSshPrivateKey: openssh, switchSshPrivateKeyIsSecret: false }); } catch (e) { err = e; }
        assert.ok(err instanceof pulumi.InputPropertiesError, String(err));
        const text = [err.message, ...err.errors.map((x) => `${x.propertyPath} ${x.reason}`)].join("\n");
        assert.match(text, /rdmakit:switchSshPrivateKey: is stored in plain text .*allowed: a secret: pulumi config set --secret rdmakit:switchSshPrivateKey/);
        assertNoKey(text, openssh, "component");
    });

    it("is not echoed by `rdmakit plan`", () => {
        const dir = mkdtempSync(join(tmpdir(), "rdmakit-secrets-"));
        const doc = parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"));
        doc.config["rdmakit:cluster"].ssh.publicKey = pkcs8;
        doc.config["rdmakit:cluster"].ssh.keyMaterial = openssh;
        const file = join(dir, "Pulumi.leak.yaml");
        writeFileSync(file, stringify(doc));
        const r = spawnSync(process.execPath, [...TS_NODE_ARGS, join(ROOT, "bin", "rdmakit.ts"), "plan", "--config", file, "--out", dir],
            { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
        assert.equal(r.status, 2, r.stderr);
        assert.match(r.stderr, /cluster\.ssh\.publicKey/);
        assert.match(r.stderr, /cluster\.ssh\.keyMaterial/);
        assertNoKey(r.stdout + r.stderr, pkcs8, "rdmakit plan");
        assertNoKey(r.stdout + r.stderr, openssh, "rdmakit plan");
    });
});
