/**
 * F4, F6, F7 and F8 of the red-team review (issue 25), as the red team ran them: stack files through the real
 * `rdmakit plan`. F4: `ssh.maxPublicShare: 1` admitted 0.0.0.0/0 without allowInternet, and the refusal suggested
 * raising the share. F6: a plain-text `rdmakit:switchSshPrivateKey` was accepted. F7: free-form strings took a
 * private key and `$(id)` into the summary and plan.json. F8: a key in a tag value was copied onto every resource.
 * Each is now refused with the field named and what is allowed, and no key is echoed.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import { generateKeyPairSync } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml, stringify as toYaml } from "yaml";
import { parseClusterSpec } from "../components/spec";
import { EC2_INSTANCE_TYPE, AZURE_VM_SIZE, SHORT_MODEL } from "../components/grammars";
import { AWS_INSTANCE_TYPES } from "../components/catalog/aws";
import { AZURE_VM_SIZES } from "../components/catalog/azure";
import { GPUS } from "../components/catalog/gpus";
import { SWITCH_MODELS } from "../components/catalog/switches";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const ROOT = join(__dirname, "..");
const KEY = generateKeyPairSync("ed25519").privateKey.export({ type: "pkcs8", format: "pem" }).toString();
const BODY = KEY.split("\n").filter((l) => l && !l.startsWith("-----")).join("");

function plan(doc: unknown): { code: number | null; text: string; out: string } {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-grammar-"));
    try {
        const file = join(dir, "Pulumi.red.yaml");
        writeFileSync(file, toYaml(doc));
        const out = join(dir, "out");
        const r = spawnSync(process.execPath, [...TS_NODE_ARGS, join(ROOT, "bin", "rdmakit.ts"), "plan", "--config", file, "--out", out], { cwd: ROOT, encoding: "utf8", timeout: 120_000 });
        const written = existsSync(join(out, "plan.json")) ? readFileSync(join(out, "plan.json"), "utf8") : "";
        return { code: r.status, text: r.stdout + r.stderr, out: written };
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
}

const example = (name: string) => parseYaml(readFileSync(join(ROOT, "examples", `${name}.yaml`), "utf8"));
const noKey = (text: string) => {
    for (let i = 0; i + 12 <= BODY.length; i += 6) assert.ok(!text.includes(BODY.slice(i, i + 12)), `a piece of the key is echoed: ${BODY.slice(i, i + 12)}`);
};

test("F7/F8: a private key and $(id) in the free-form fields and a tag are refused, each field named, nothing echoed", { timeout: 130_000 }, () => {
    const doc = example("aws-p5");
    const c = doc.config["rdmakit:cluster"];
    c.aws.bastionInstanceType = KEY;
    c.aws.instanceType = "p5.48xlarge$(id)";
    c.tags = { team: BODY.slice(0, 60), owner: "gpu team" };
    // the other fabrics' free-form fields, in the same file (every problem is reported at once)
    c.azure = { location: "eastus", vmSize: "Standard_ND96isr_H100_v5", jumpHostSize: "$(id)", image: { publisher: "x;id", offer: KEY, sku: "2204", version: "`id`" } };
    c.roce = { ...example("roce-h100").config["rdmakit:cluster"].roce };
    c.roce.hosts = c.roce.hosts.map((h: Record<string, any>, i: number) => (i === 0 ? { ...h, gpu: { model: KEY, count: 8 } } : h));
    c.roce.switches = c.roce.switches.map((s: Record<string, any>, i: number) => (i === 0 ? { ...s, model: "SN4700\n$(id)", hostPorts: [BODY.slice(0, 48), ...s.hostPorts.slice(1)] } : s));
    const r = plan(doc);
    assert.equal(r.code, 2, r.text);
    for (const field of ["cluster.aws.bastionInstanceType", "cluster.aws.instanceType", "cluster.tags.team", "cluster.azure.jumpHostSize",
        "cluster.azure.image.publisher", "cluster.azure.image.offer", "cluster.azure.image.version", "cluster.roce.hosts[0].gpu.model", "cluster.roce.switches[0].model", "cluster.roce.switches[0].hostPorts[0]"]) {
        assert.ok(r.text.includes(field), `${field} is not named:\n${r.text}`);
    }
    assert.match(r.text, /cluster\.aws\.bastionInstanceType: must be an EC2 instance type such as t3\.micro/);
    assert.match(r.text, /cluster\.azure\.jumpHostSize: must be an Azure VM size such as Standard_B2s/);
    assert.match(r.text, /cluster\.tags\.team: looks like key material/);
    assert.equal(r.out, "", "no plan.json for a refused spec");
    noKey(r.text);
});

test("F4: maxPublicShare 1 with 0.0.0.0/0 and no allowInternet is refused, and the text does not suggest raising the share", { timeout: 130_000 }, () => {
    const doc = example("aws-p5");
    Object.assign(doc.config["rdmakit:cluster"].ssh, { allowedCidrs: ["0.0.0.0/0"], maxPublicShare: 1 });
    const r = plan(doc);
    assert.equal(r.code, 2, r.text);
    assert.match(r.text, /cluster\.ssh\.allowedCidrs: opens SSH to the whole internet .*; allowed: your office\/VPN ranges, together at most 100 % of the public IPv4 space; opening SSH to the internet on purpose takes cluster\.ssh\.allowInternet: true/);
    assert.doesNotMatch(r.text, /raise/);
    // the same spec, pure: two halves add up to the internet as well; allowInternet is the only way
    const spec = (extra: Record<string, unknown>) => { const d = example("aws-p5").config["rdmakit:cluster"]; Object.assign(d.ssh, extra); return d; };
    assert.throws(() => parseClusterSpec(spec({ allowedCidrs: ["0.0.0.0/1", "128.0.0.0/1"], maxPublicShare: 1 })), /whole internet/);
    assert.ok(parseClusterSpec(spec({ allowedCidrs: ["0.0.0.0/0"], allowInternet: true })));
});

test("F6: a plain-text rdmakit:switchSshPrivateKey is refused like sshPrivateKey, without the key", { timeout: 130_000 }, () => {
    const doc = example("roce-h100");
    doc.config["rdmakit:switchSshPrivateKey"] = KEY;
    const r = plan(doc);
    assert.equal(r.code, 2, r.text);
    assert.match(r.text, /config\.rdmakit:switchSshPrivateKey: is stored in plain text \(got "\(hidden\)"\); allowed: a Pulumi secret: pulumi config set --secret rdmakit:switchSshPrivateKey/);
    noKey(r.text);
});

test("the grammars take every name the catalogs hold", () => {
    for (const t of AWS_INSTANCE_TYPES) assert.match(t.name, EC2_INSTANCE_TYPE);
    for (const t of ["t3.micro", "m7i-flex.large", "c7i.metal-48xl", "u-6tb1.112xlarge"]) assert.match(t, EC2_INSTANCE_TYPE);
    for (const z of AZURE_VM_SIZES) assert.match(z.name, AZURE_VM_SIZE);
    for (const z of ["Standard_B2s", "Standard_E4-2ds_v4", "Standard_NC24ads_A100_v4"]) assert.match(z, AZURE_VM_SIZE);
    for (const g of Object.keys(GPUS)) assert.match(g, SHORT_MODEL);
    for (const s of SWITCH_MODELS) assert.match(s, SHORT_MODEL);
});
