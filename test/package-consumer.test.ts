// The package as a platform team gets it: `npm pack` of a clean copy of the repository (prepack builds dist/),
// installed into a fresh project laid out as `pulumi new typescript` lays one out (examples/typescript: its
// package.json, and the template's tsconfig: strict, nodenext, no skipLibCheck), compiled with plain `tsc`, then
// run on Pulumi's mock engine. The same tarball serves a JavaScript program (examples/javascript) and ESM import().
// The cloud SDKs are optional peers: the project names @pulumi/aws (its program uses it) and never @pulumi/azure-native,
// so npm installs no azure-native; one test hides @pulumi/aws too, for a team on bare metal (same install, no second).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const work = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-pkg-"));
const app = path.join(work, "app");
let tarball = "";
let files: string[] = [];

/** The version this repository's own install resolved, so the fresh project gets what a team already has. */
const installed = (pkg: string) => (JSON.parse(fs.readFileSync(path.join(ROOT, "node_modules", pkg, "package.json"), "utf8")) as { version: string }).version;

function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv = {}): string {
    const r = spawnSync(cmd, args, { cwd, encoding: "utf8", env: { ...process.env, ...env }, maxBuffer: 64 << 20 });
    assert.equal(r.status, 0, `${cmd} ${args.join(" ")} in ${cwd} failed:\n${r.stdout}\n${r.stderr}`);
    return r.stdout;
}

before(async () => {
    // a clean copy: what git tracks (and new files it does not ignore), no dist/, no out/
    const src = path.join(work, "src");
    const listed = execFileSync("git", ["ls-files", "-co", "--exclude-standard", "-z"], { cwd: ROOT, encoding: "utf8" }).split("\0").filter(Boolean);
    for (const f of listed) {
        if (!fs.existsSync(path.join(ROOT, f))) continue; // deleted in the work tree
        fs.mkdirSync(path.dirname(path.join(src, f)), { recursive: true });
        fs.copyFileSync(path.join(ROOT, f), path.join(src, f));
    }
    fs.symlinkSync(path.join(ROOT, "node_modules"), path.join(src, "node_modules"));
    const packed = JSON.parse(run("npm", ["pack", "--json", "--pack-destination", work], src)) as Array<{ filename: string; files: { path: string }[] }>;
    tarball = path.join(work, packed[0].filename);
    files = packed[0].files.map((f) => f.path);

    fs.cpSync(path.join(ROOT, "examples", "typescript"), app, { recursive: true });
    const pkg = JSON.parse(fs.readFileSync(path.join(app, "package.json"), "utf8"));
    pkg.dependencies = {
        "@pulumi/pulumi": installed("@pulumi/pulumi"),
        "@pulumi/aws": installed("@pulumi/aws"),
        rdmakit: `file:${tarball}`,
    };
    pkg.devDependencies = { "@types/node": installed("@types/node"), typescript: installed("typescript") };
    fs.writeFileSync(path.join(app, "package.json"), JSON.stringify(pkg, null, 2));
    // npm installs the required peers the program does not name (command, tls) itself, not the optional cloud SDKs;
    // --prefer-offline reads them from the cache
    run("npm", ["install", "--no-audit", "--no-fund", "--prefer-offline", "--loglevel=error"], app);
});

after(() => fs.rmSync(work, { recursive: true, force: true }));

test("the tarball ships the compiled library, its declarations and the runtime assets, not the tests", () => {
    for (const f of ["dist/components/index.js", "dist/components/index.d.ts", "dist/components/index.js.map", "playbooks/site.yml",
        "playbooks/ansible.cfg", "components/roce/sonic-patch.ts", "components/scripts/ssh/capped_ssh.py", "PulumiPlugin.yaml", "pulumi-resource-rdmakit", "components/index.ts", "bin/rdmakit.cjs"]) {
        assert.ok(files.includes(f), `${f} is in the tarball`);
    }
    // the provider plugin launcher stays executable once installed (a project's plugins.providers path runs it)
    const launcher = fs.statSync(path.join(app, "node_modules", "rdmakit", "pulumi-resource-rdmakit"));
    assert.ok((launcher.mode & 0o111) !== 0, "pulumi-resource-rdmakit is executable in the installed package");
    assert.ok(!files.some((f) => f.startsWith("test/") || f.startsWith("node_modules/")), "no tests or node_modules");
    const manifest = JSON.parse(fs.readFileSync(path.join(app, "node_modules", "rdmakit", "package.json"), "utf8"));
    // main is the provider plugin's entry (run-plugin requires the folder); `require("rdmakit")` reads exports
    assert.equal(manifest.main, "dist/components/plugin.js");
    assert.equal(manifest.exports["."].require, "./dist/components/index.js");
    // the analyzer's entry: the four components the package offers other languages
    assert.equal(manifest.exports["."].default, "./components/package-components.js");
    for (const peer of ["@pulumi/pulumi", "@pulumi/aws", "@pulumi/azure-native", "@pulumi/command", "@pulumi/tls"]) assert.ok(manifest.peerDependencies[peer], peer);
    assert.deepEqual(manifest.peerDependenciesMeta, { "@pulumi/aws": { optional: true }, "@pulumi/azure-native": { optional: true } });
    assert.equal(manifest.dependencies["@pulumi/pulumi"], undefined, "one SDK instance: the program's own");
    // npm installed the required peers the program did not name, and no cloud SDK it did not name
    assert.ok(fs.existsSync(path.join(app, "node_modules", "@pulumi", "command", "package.json")));
    assert.ok(!fs.existsSync(path.join(app, "node_modules", "@pulumi", "azure-native")), "no @pulumi/azure-native for an AWS-only project");
    assert.ok(!fs.existsSync(path.join(app, "node_modules", "rdmakit", "node_modules", "@pulumi", "pulumi")), "no second @pulumi/pulumi");
});

test("plain tsc compiles the fresh project: the template's nodenext tsconfig and a strict commonjs one, no skipLibCheck", { timeout: 180_000 }, () => {
    const tsc = path.join(app, "node_modules", "typescript", "bin", "tsc");
    // the fabric components from their subpaths, typed: with @pulumi/azure-native absent, neither the package root's
    // declarations nor rdmakit/aws's may need it
    fs.writeFileSync(path.join(app, "subpaths.ts"), SUBPATHS_PROGRAM);
    // the template's tsconfig as it is, checked without emitting (noEmit on top of it)
    fs.writeFileSync(path.join(app, "tsconfig.check.json"), JSON.stringify({ extends: "./tsconfig.json", compilerOptions: { noEmit: true }, files: ["index.ts", "subpaths.ts"] }));
    const cjs = {
        compilerOptions: { strict: true, outDir: "bin", target: "es2020", module: "commonjs", moduleResolution: "node", noImplicitReturns: true, noFallthroughCasesInSwitch: true, forceConsistentCasingInFileNames: true },
        files: ["index.ts", "subpaths.ts"],
    };
    fs.writeFileSync(path.join(app, "tsconfig.cjs.json"), JSON.stringify(cjs));
    // both in one `tsc -b`, which fails when either project has an error and reads the packages' declaration files
    // once for the two (measured here: 26 s of CPU against 33 s for two `tsc -p` runs)
    run(process.execPath, [tsc, "-b", "tsconfig.check.json", "tsconfig.cjs.json"], app);
    assert.ok(fs.existsSync(path.join(app, "bin", "index.js")));
});

/** Uses each fabric component from its subpath, with its own types (node10 resolution reads typesVersions for them). */
const SUBPATHS_PROGRAM = `
import * as pulumi from "@pulumi/pulumi";
import { AwsEfaCluster } from "rdmakit/aws";
import { RoceCluster } from "rdmakit/roce";
import { MissingSdkError, RdmaCluster } from "rdmakit";
export function kinds(c: RdmaCluster): string {
    const f: pulumi.ComponentResource = c.fabric;
    if (f instanceof AwsEfaCluster) return "aws " + String(f.nodePrivateIps !== undefined);
    return f instanceof RoceCluster ? "roce" : "other";
}
export const missing: typeof MissingSdkError = MissingSdkError;
`;

/** Runs a program of the app on Pulumi's mock engine; returns what it registered and its exports. */
function onMocks(program: string, env: NodeJS.ProcessEnv = {}): { resources: { type: string; name: string; inputs: any }[]; exports: Record<string, unknown> } {
    const out = run(process.execPath, [mockHarness(), program], app, env);
    return JSON.parse(out.trim().split("\n").pop()!);
}

function mockHarness(): string {
    const harness = path.join(app, "mock-run.js");
    fs.writeFileSync(harness, MOCK_HARNESS);
    return harness;
}

// Ids in the providers' shapes (vpc-…, subnet-…), answers for the two invokes the AWS component makes.
const MOCK_HARNESS = `
const pulumi = require("@pulumi/pulumi");
const resources = [];
const ids = { "aws:ec2/vpc:Vpc": "vpc-0a1b2c3d4e", "aws:ec2/subnet:Subnet": "subnet-0f1e2d3c4b" };
pulumi.runtime.setMocks({
    newResource: (a) => {
        resources.push({ type: a.type, name: a.name, inputs: a.inputs });
        // the stack's host keys: a real Ed25519 pair, as the tls provider returns it (made with the kit's own encoder)
        if (a.type === "tls:index/privateKey:PrivateKey") {
            const k = require("rdmakit/provision").ed25519HostKey();
            return { id: a.name + "-id", state: { ...a.inputs, privateKeyOpenssh: k.privateKey, publicKeyOpenssh: k.publicKey.split(" ").slice(0, 2).join(" ") + "\\n" } };
        }
        return { id: ids[a.type] || a.name + "-id", state: a.inputs };
    },
    call: (a) => {
        if (a.token === "aws:ec2/getAmi:getAmi") return { id: "ami-0123456789abcdef0", rootDeviceName: "/dev/sda1", architecture: "x86_64" };
        if (a.token === "aws:ec2/getInstances:getInstances") return { ids: ["i-1", "i-0"], privateIps: ["10.20.0.11", "10.20.0.10"], publicIps: [] };
        return a.inputs;
    },
}, "app", "dev", false).then(async () => {
    const mod = require(require("path").resolve(process.argv[2]));
    const exports = {};
    for (const [k, v] of Object.entries(mod)) exports[k] = pulumi.Output.isInstance(v) ? await new Promise((r) => v.apply(r)) : v;
    await new Promise((r) => setTimeout(r, 200));
    console.log(JSON.stringify({ resources, exports }));
});
`;

test("the compiled TypeScript program runs on the mock engine: the cluster registers its resources in the team's VPC", { timeout: 120_000 }, () => {
    const { resources, exports } = onMocks("bin/index.js");
    const types = resources.map((r) => r.type);
    for (const t of ["rdmakit:index:RdmaCluster", "rdmakit:index:AwsEfaCluster", "aws:ec2/securityGroup:SecurityGroup", "aws:ec2/launchTemplate:LaunchTemplate", "aws:autoscaling/group:Group"]) {
        assert.ok(types.includes(t), `${t} registered`);
    }
    assert.equal(types.filter((t) => t === "aws:ec2/vpc:Vpc").length, 1, "the team's VPC only: the kit makes none");
    const group = resources.find((r) => r.type === "aws:autoscaling/group:Group")!;
    assert.deepEqual(group.inputs.vpcZoneIdentifiers, ["subnet-0f1e2d3c4b"], "the subnet Output reached the group");
    assert.equal(group.inputs.desiredCapacity, 2);
    assert.deepEqual(exports.nodeIps, ["10.20.0.10", "10.20.0.11"]);
    assert.equal(exports.gpusPerNode, 8);
    assert.equal((exports.ncclEnv as Record<string, string>).FI_PROVIDER, "efa");
});

test("JavaScript: require('rdmakit') and its fabric subpaths give the component classes, and ESM import() works", { timeout: 120_000 }, () => {
    const probe = `
        const lib = require("rdmakit");
        const pulumi = require("@pulumi/pulumi");
        const isComponent = (c) => typeof c === "function" && c.prototype instanceof pulumi.ComponentResource;
        // the root: the fabric-neutral components; each cloud fabric's component on its subpath
        const ok = isComponent(lib.RdmaCluster) && isComponent(lib.RoceCluster) && lib.AwsEfaCluster === undefined &&
            lib.AzureInfinibandCluster === undefined && isComponent(require("rdmakit/aws").AwsEfaCluster) && isComponent(require("rdmakit/roce").RoceCluster);
        const { rdmakitPolicies } = require("rdmakit/policies");
        const policies = rdmakitPolicies({ all: "advisory" }).map((p) => p.name);
        import("rdmakit").then((esm) => console.log(JSON.stringify({ ok, resolved: require.resolve("rdmakit"), same: esm.RdmaCluster === lib.RdmaCluster, policies })));`;
    const seen = JSON.parse(run(process.execPath, ["-e", probe], app).trim());
    assert.ok(seen.policies.length >= 30 && seen.policies.includes("aws-efa-imdsv2-required"), `rdmakit/policies: ${seen.policies.join(", ")}`);
    delete seen.policies;
    assert.deepEqual(seen, { ok: true, resolved: path.join(fs.realpathSync(app), "node_modules", "rdmakit", "dist", "components", "index.js"), same: true });
    // the JavaScript example (RoCE) runs in the test below, where no cloud SDK is installed
});

test("a bad spec from a JavaScript program is refused with the field, before anything is registered", { timeout: 60_000 }, () => {
    const bad = fs.readFileSync(path.join(ROOT, "examples", "javascript", "index.js"), "utf8").replace(`speedGbps: 400`, `speedGbps: "fast"`);
    fs.writeFileSync(path.join(app, "js-bad.js"), bad);
    const r = spawnSync(process.execPath, [path.join(app, "mock-run.js"), "js-bad.js"], { cwd: app, encoding: "utf8" });
    assert.notEqual(r.status, 0);
    assert.match(r.stderr, /cluster\.roce\.switches\[0\]\.speedGbps/);
});

/**
 * A program on the package root that tries what a team without cloud SDKs might: an RdmaCluster of each cloud fabric
 * (nothing provisioned), and a RoCE one with provisioning on but no key; exports what each refusal said.
 */
const REFUSALS_PROGRAM = `
const { RdmaCluster } = require("rdmakit");
const ssh = { allowedCidrs: ["203.0.113.0/24"], publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u t" };
const host = (i) => ({ name: "gpu0" + i, address: "10.0.0.1" + i, railNics: ["mlx5_0", "mlx5_1"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 } });
const specs = {
    "aws-efa": { name: "sdk", fabric: "aws-efa", nodes: 2, provision: false, ssh, aws: { region: "us-east-2", availabilityZone: "us-east-2b", instanceType: "p5.48xlarge" } },
    "azure-ib": { name: "sdk", fabric: "azure-ib", nodes: 2, provision: false, ssh, azure: { location: "eastus", vmSize: "Standard_ND96isr_H100_v5" } },
    "roce-no-key": { name: "lab", fabric: "roce", provision: true, ssh: { user: "ubuntu", allowedCidrs: ["10.0.0.0/8"] }, roce: { nicModel: "ConnectX-7", hosts: [host(1), host(2)],
        switches: [{ name: "leaf1", os: "sonic", managementAddress: "10.0.1.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHBsYWNlaG9sZGVyLWxlYWYxLXJlcGxhY2UtLS0tLS0t leaf1",
            hostPorts: ["Ethernet0", "Ethernet8", "Ethernet16", "Ethernet24"], speedGbps: 400, cableLengthM: 3 }] } },
};
for (const [k, spec] of Object.entries(specs)) {
    try { new RdmaCluster(k, { spec }); exports[k] = "accepted"; } catch (e) { exports[k] = e.message; }
}
`;

test("with neither cloud SDK installed: the root imports, the RoCE cluster runs and plans, a cloud fabric names its package", { timeout: 180_000 }, () => {
    // bare metal only: @pulumi/aws goes too (azure-native was never installed), for this test alone
    const awsDir = path.join(app, "node_modules", "@pulumi", "aws");
    const hidden = path.join(work, "aws-hidden");
    fs.renameSync(awsDir, hidden);
    try {
        // the root and the SDK-free subpaths load no cloud SDK module; rdmakit/aws itself names the package it needs
        const probe = JSON.parse(run(process.execPath, ["-e", `require("rdmakit"); require("rdmakit/roce"); require("rdmakit/catalog");
            const loaded = Object.keys(require.cache).filter((f) => /[\\/]@pulumi[\\/](aws|azure-native)[\\/]/.test(f));
            let direct = "loaded";
            try { require("rdmakit/aws"); } catch (e) { direct = e.message; }
            console.log(JSON.stringify({ loaded, direct }))`], app).trim());
        assert.deepEqual(probe.loaded, [], "no cloud SDK module loaded");
        assert.match(probe.direct, /^rdmakit: the aws-efa fabric needs the package @pulumi\/aws, which is not installed[^]*npm install @pulumi\/aws@"\^7/);

        fs.copyFileSync(path.join(ROOT, "examples", "javascript", "index.js"), path.join(app, "js-example.js"));
        const { resources, exports } = onMocks("js-example.js");
        assert.deepEqual(resources.map((r) => r.type), ["rdmakit:index:RdmaCluster", "rdmakit:index:RoceCluster"]);
        assert.deepEqual(exports.nodes, ["10.0.0.11", "10.0.0.12"]);
        assert.equal((exports.ncclEnv as Record<string, string>).NCCL_IB_HCA, "=mlx5_0:1,mlx5_1:1,mlx5_2:1,mlx5_3:1,mlx5_4:1,mlx5_5:1,mlx5_6:1,mlx5_7:1");

        // a cloud fabric without its SDK is refused before anything is registered, naming the package to install; a
        // program with provisioning on and no key is told the component argument and its own project's config
        fs.writeFileSync(path.join(app, "refusals.js"), REFUSALS_PROGRAM);
        const refused = onMocks("refusals.js");
        assert.deepEqual(refused.resources, [], "nothing registered");
        for (const [fabric, sdk] of [["aws-efa", "@pulumi/aws"], ["azure-ib", "@pulumi/azure-native"]] as const) {
            const want = sdk.replace("/", "\\/");
            assert.match(String(refused.exports[fabric]), new RegExp(`cluster\\.fabric: needs the package ${want}, which is not installed \\(got "${fabric}"\\); allowed: npm install ${want}@`));
        }
        assert.match(String(refused.exports["roce-no-key"]), /sshPrivateKey: is missing: the RdmaCluster argument Ansible reaches the nodes with; allowed: sshPrivateKey: new pulumi\.Config\(\)\.requireSecret\("sshPrivateKey"\) in the program, after pulumi config set --secret app:sshPrivateKey/);

        // the installed command plans the bundled RoCE example from the project's folder
        const out = path.join(work, "plan-out");
        const bin = path.join(app, "node_modules", "rdmakit", "bin", "rdmakit.cjs");
        const r = spawnSync(process.execPath, [bin, "plan", "--config", path.join(app, "node_modules", "rdmakit", "examples", "roce-h100.yaml"), "--out", out], { cwd: app, encoding: "utf8" });
        assert.equal(r.status, 0, `${r.stdout}\n${r.stderr}`);
        assert.match(r.stdout, /fabric\s+roce/);
        assert.ok(fs.existsSync(path.join(out, "plan.json")));
        assert.equal(spawnSync(process.execPath, [bin, "--help"], { cwd: app }).status, 0);
    } finally {
        fs.renameSync(hidden, awsDir);
    }
});
