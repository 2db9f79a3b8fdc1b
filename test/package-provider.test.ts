// The component package as the engine drives it for Python, Go and .NET programs: `@pulumi/pulumi/cmd/run-plugin`
// started in the package folder (what pulumi-language-nodejs RunPlugin runs for PulumiPlugin.yaml), its port read
// from stdout, then GetSchema and Construct over gRPC. Construct's children register with a resource monitor this
// test serves over gRPC (the engine's role), so the whole path — proto inputs, secrets, the compiled dist/ code —
// is the real one. Needs dist/ (npm test builds it first).
import { after, before, test } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as grpc from "@grpc/grpc-js";
import { parse as parseYaml } from "yaml";

/* eslint-disable @typescript-eslint/no-require-imports */
const providerRpc = require("@pulumi/pulumi/proto/provider_grpc_pb");
const providerPb = require("@pulumi/pulumi/proto/provider_pb");
const resourceRpc = require("@pulumi/pulumi/proto/resource_grpc_pb");
const resourcePb = require("@pulumi/pulumi/proto/resource_pb");
const engineRpc = require("@pulumi/pulumi/proto/engine_grpc_pb");
const enginePb = require("@pulumi/pulumi/proto/engine_pb");
const { Struct } = require("google-protobuf/google/protobuf/struct_pb");
const { Empty } = require("google-protobuf/google/protobuf/empty_pb");
/* eslint-enable @typescript-eslint/no-require-imports */

const ROOT = path.resolve(__dirname, "..");
const SECRET_SIG = "4dabf18193072939515e22adb298388d"; // pulumi/pulumi:sdk/nodejs/runtime/rpc.ts specialSigKey
const SECRET_VALUE = "1b47061264138c4ac30d75fd1eb44270"; // specialSecretSig
const KEY = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ-construct-test\n-----END OPENSSH PRIVATE KEY-----\n";

interface Registered { type: string; name: string; parent: string; custom: boolean; inputs: Record<string, unknown> }
const registered: Registered[] = [];
const logs: string[] = [];
let server: grpc.Server;
let monitorAddr = "";
let plugin: ChildProcess;
let client: any;
let stderr = "";

/** The engine's side: a resource monitor and engine service that record what the component registers. */
function serveEngine(): Promise<string> {
    server = new grpc.Server();
    const urnOf = (parent: string, type: string, name: string) => {
        const qualified = parent ? `${parent.split("::")[2].split("$").pop()}$${type}` : type;
        return `urn:pulumi:dev::consumer::${qualified}::${name}`;
    };
    server.addService(resourceRpc.ResourceMonitorService, {
        supportsFeature: (call: any, cb: any) => cb(null, new resourcePb.SupportsFeatureResponse().setHassupport(true)),
        registerResource: (call: any, cb: any) => {
            const req = call.request;
            const inputs = req.getObject()?.toJavaScript() ?? {};
            registered.push({ type: req.getType(), name: req.getName(), parent: req.getParent(), custom: req.getCustom(), inputs });
            const resp = new resourcePb.RegisterResourceResponse();
            resp.setUrn(urnOf(req.getParent(), req.getType(), req.getName()));
            resp.setId(req.getCustom() ? `${req.getName()}-id` : "");
            resp.setObject(Struct.fromJavaScript(inputs));
            cb(null, resp);
        },
        registerResourceOutputs: (_call: any, cb: any) => cb(null, new Empty()),
        registerPackage: (_call: any, cb: any) => cb(null, new resourcePb.RegisterPackageResponse().setRef("pkg-ref")),
        invoke: (call: any, cb: any) => cb(new Error(`no invoke expected on bare metal: ${call.request.getTok()}`)),
    });
    server.addService(engineRpc.EngineService, {
        log: (call: any, cb: any) => { logs.push(call.request.getMessage()); cb(null, new Empty()); },
        getRootResource: (_call: any, cb: any) => cb(null, new enginePb.GetRootResourceResponse().setUrn("")),
        setRootResource: (_call: any, cb: any) => cb(null, new enginePb.SetRootResourceResponse()),
    });
    return new Promise((resolve, reject) => server.bindAsync("127.0.0.1:0", grpc.ServerCredentials.createInsecure(), (err, port) => {
        if (err) reject(err);
        else resolve(`127.0.0.1:${port}`);
    }));
}

before(async () => {
    assert.ok(fs.existsSync(path.join(ROOT, "dist", "components", "index.js")), "dist/ is missing: run `npm run build` (npm test does)");
    monitorAddr = await serveEngine();
    const runPlugin = require.resolve("@pulumi/pulumi/cmd/run-plugin", { paths: [ROOT] });
    plugin = spawn(process.execPath, [runPlugin, ROOT, monitorAddr], { cwd: ROOT, stdio: ["ignore", "pipe", "pipe"] });
    plugin.stderr!.on("data", (d) => (stderr += d));
    let timer: NodeJS.Timeout | undefined;
    const port = await new Promise<number>((resolve, reject) => {
        let out = "";
        plugin.stdout!.on("data", (d) => {
            out += d;
            const line = out.split("\n")[0];
            if (out.includes("\n")) resolve(Number(line.trim()));
        });
        plugin.once("exit", (code) => reject(new Error(`run-plugin exited ${code} before printing a port:\n${stderr}`)));
        timer = setTimeout(() => reject(new Error(`no port from run-plugin after 90 s:\n${stderr}`)), 90_000);
    }).finally(() => clearTimeout(timer));
    assert.ok(port > 0 && port < 65536, `a port on the first line, got ${port}`);
    client = new providerRpc.ResourceProviderClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
});

after(() => {
    plugin?.kill("SIGKILL");
    client?.close();
    server?.forceShutdown();
});

const rpc = (method: string, req: unknown): Promise<any> => new Promise((resolve, reject) =>
    client[method](req, (err: Error | null, resp: unknown) => (err ? reject(err) : resolve(resp))));

test("GetSchema over gRPC: the four components with typed inputs, the package version", { timeout: 120_000 }, async () => {
    const resp = await rpc("getSchema", new providerPb.GetSchemaRequest());
    const schema = JSON.parse(resp.getSchema());
    assert.equal(schema.name, "rdmakit");
    assert.equal(schema.version, JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version);
    assert.deepEqual(Object.keys(schema.resources).sort(), ["AwsEfaCluster", "AzureInfinibandCluster", "RdmaCluster", "RoceCluster"].map((c) => `rdmakit:index:${c}`));
    assert.equal(schema.resources["rdmakit:index:RdmaCluster"].inputProperties.spec.$ref, "#/types/rdmakit:index:ClusterSpecInput");
    assert.equal(schema.types["rdmakit:index:Fabric"].enum.length, 3);
    const info = await rpc("getPluginInfo", new Empty());
    assert.equal(info.getVersion(), schema.version);
});

test("GetSchema over gRPC: every input that holds key material is secret, so each generated SDK wraps it", { timeout: 120_000 }, async () => {
    const schema = JSON.parse((await rpc("getSchema", new providerPb.GetSchemaRequest())).getSchema());
    const inputs = (c: string) => schema.resources[`rdmakit:index:${c}`].inputProperties;
    assert.equal(inputs("RdmaCluster").sshPrivateKey.secret, true, "RdmaCluster.sshPrivateKey");
    assert.equal(inputs("RdmaCluster").switchSshPrivateKey.secret, true, "RdmaCluster.switchSshPrivateKey");
    assert.equal(inputs("RoceCluster").sshPrivateKey.secret, true, "RoceCluster.sshPrivateKey");
    // no other string input, at any depth, is named like a private key, password, token or munge key and left plain
    const keyLike = /private.?key|password|passphrase|secret|token|munge|credential/i;
    const plain: string[] = [];
    const scan = (props: Record<string, { type?: string; secret?: boolean }> | undefined, where: string) => {
        for (const [k, p] of Object.entries(props ?? {})) if (keyLike.test(k) && p.type === "string" && p.secret !== true) plain.push(`${where}.${k}`);
    };
    for (const [token, r] of Object.entries<any>(schema.resources)) { scan(r.inputProperties, token); scan(r.properties, token); }
    for (const [token, t] of Object.entries<any>(schema.types)) scan(t.properties, token);
    assert.deepEqual(plain, []);
    // nothing else was marked: the spec and the plain flags stay as the analyzer typed them
    assert.equal(inputs("RdmaCluster").spec.secret, undefined);
    assert.equal(inputs("RdmaCluster").sshPrivateKeyIsSecret.secret, undefined);
});

/** A ConstructRequest as the engine sends it for `RdmaCluster(name, spec=…, ssh_private_key=secret)`. */
function constructRequest(name: string, inputs: Record<string, unknown>, dryRun: boolean, type = "rdmakit:index:RdmaCluster", dependencies: Record<string, string[]> = {}): unknown {
    const req = new providerPb.ConstructRequest();
    for (const [k, urns] of Object.entries(dependencies)) {
        req.getInputdependenciesMap().set(k, new providerPb.ConstructRequest.PropertyDependencies().setUrnsList(urns));
    }
    req.setProject("consumer");
    req.setStack("dev");
    req.setOrganization("organization");
    req.setDryrun(dryRun);
    req.setParallel(4);
    req.setMonitorendpoint(monitorAddr);
    req.setType(type);
    req.setName(name);
    req.setParent("urn:pulumi:dev::consumer::pulumi:pulumi:Stack::consumer-dev");
    req.setInputs(Struct.fromJavaScript(inputs));
    req.setAcceptsOutputValues(true);
    return req;
}

test("Construct over gRPC: an RdmaCluster from plain inputs registers its children on the engine's monitor", { timeout: 120_000 }, async () => {
    const spec = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    const resp = await rpc("construct", constructRequest("py-lab", {
        spec,
        sshPrivateKey: { [SECRET_SIG]: SECRET_VALUE, value: KEY },
    }, true));
    assert.match(resp.getUrn(), /rdmakit:index:RdmaCluster::py-lab$/);
    const state = resp.getState().toJavaScript();
    assert.equal(state.fabricKind, "roce");
    assert.equal(state.nodeCount, spec.roce.hosts.length);
    assert.deepEqual(state.nodePrivateIps, spec.roce.hosts.map((h: { address: string }) => h.address));
    assert.ok(Object.keys(state.ncclEnv).includes("NCCL_IB_HCA"));

    const mine = registered.filter((r) => r.name.startsWith("py-lab"));
    assert.equal(mine.find((r) => r.type === "rdmakit:index:RdmaCluster")?.custom, false);
    const roce = mine.find((r) => r.type === "rdmakit:index:RoceCluster");
    assert.ok(roce, "the fabric component");
    assert.match(roce.parent, /RdmaCluster::py-lab$/);
    const pushes = mine.filter((r) => r.type.startsWith("command:") && r.name.endsWith("-qos"));
    assert.equal(pushes.length, spec.roce.switches.length, "one push per switch");
    assert.ok(mine.some((r) => r.type === "rdmakit:index:AnsiblePlaybook"), "the software step");
    // the key travelled as a secret and is in no child's inputs but as one (the runs fetch it from the program's key
    // socket, components/provision/keysocket.ts, so no command carries it at all)
    const everything = JSON.stringify(registered) + JSON.stringify(state) + logs.join("\n");
    assert.ok(!everything.replace(/"4dabf18193072939515e22adb298388d":"1b47061264138c4ac30d75fd1eb44270","value":"[^"]*"/g, "").includes("construct-test"), "the key only ever as a secret");
    assert.ok(!JSON.stringify(state).includes("construct-test"), "no key in the component's outputs");
    for (const r of mine) {
        for (const [k, v] of Object.entries(r.inputs)) {
            if (JSON.stringify(v).includes("construct-test")) assert.ok(JSON.stringify(v).includes(SECRET_SIG), `${r.name}.${k} holds the key only as a secret`);
        }
    }
});

test("Construct over gRPC: a bad spec comes back as the engine's property errors, naming the field", { timeout: 60_000 }, async () => {
    const spec = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    spec.roce.switches[0].speedGbps = "fast";
    const before = registered.length;
    const err = await rpc("construct", constructRequest("py-bad", { spec, sshPrivateKey: { [SECRET_SIG]: SECRET_VALUE, value: KEY } }, true))
        .then(() => undefined, (e: Error) => e);
    assert.ok(err, "construct failed");
    assert.match(String(err.message), /cluster\.roce\.switches\[0\]\.speedGbps/);
    assert.ok(!String(err.message).includes("construct-test"), "the key is not echoed");
    assert.equal(registered.slice(before).filter((r) => r.name.startsWith("py-bad")).length, 0, "nothing registered");
    // a newcomer's typo'd key: one property error on the typo, naming the field it meant (test/spec-newcomer.test.ts)
    const typo = { ...spec, roce: { ...spec.roce, switches: spec.roce.switches.map((s: Record<string, unknown>) => ({ ...s })) } };
    typo.roce.switches[0].speedGbps = 400;
    typo.schedular = typo.scheduler;
    delete typo.scheduler;
    const typoErr = await rpc("construct", constructRequest("py-typo", { spec: typo, sshPrivateKey: { [SECRET_SIG]: SECRET_VALUE, value: KEY } }, true))
        .then(() => undefined, (e: Error) => e);
    assert.ok(typoErr, "construct failed");
    assert.match(String(typoErr.message), /cluster\.schedular: is not a known field \(did you mean scheduler\?\)/);
    assert.equal(registered.slice(before).filter((r) => r.name.startsWith("py-typo")).length, 0, "nothing registered");
});

test("Construct over gRPC: a plain (non-secret) key is refused, naming the property, before anything is registered", { timeout: 60_000 }, async () => {
    const spec = parseYaml(fs.readFileSync(path.join(ROOT, "examples", "roce-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    const secret = { [SECRET_SIG]: SECRET_VALUE, value: KEY };
    const before = registered.length;
    const refused = async (name: string, inputs: Record<string, unknown>, type?: string, deps?: Record<string, string[]>) => {
        const err = await rpc("construct", constructRequest(name, { spec, ...inputs }, true, type, deps)).then(() => undefined, (e: Error) => e);
        assert.ok(err, `${name}: construct failed`);
        assert.ok(!String(err.message).includes("construct-test"), "the key is not echoed");
        return String(err.message);
    };
    // what `open(key).read()` sends from a program whose SDK does not wrap it
    assert.match(await refused("plain-node-key", { sshPrivateKey: KEY }), /sshPrivateKey: is a plain value/);
    const both = await refused("plain-both", { sshPrivateKey: KEY, switchSshPrivateKey: KEY });
    assert.match(both, /sshPrivateKey: is a plain value/);
    assert.match(both, /switchSshPrivateKey: is a plain value/);
    // only the switch key plain: the node key's secret does not cover it
    const sw = await refused("plain-switch", { sshPrivateKey: secret, switchSshPrivateKey: KEY });
    assert.match(sw, /switchSshPrivateKey: is a plain value/);
    assert.doesNotMatch(sw, /(^|[^h])sshPrivateKey: is a plain value/);
    // a plain value that depends on another resource arrives as an Output, not secret: refused the same
    assert.match(await refused("plain-output", { sshPrivateKey: KEY }, undefined, { sshPrivateKey: ["urn:pulumi:dev::consumer::tls:index/privateKey:PrivateKey::k"] }), /sshPrivateKey: is a plain value/);
    // the fabric component on its own
    assert.match(await refused("plain-roce", { sshPrivateKey: KEY }, "rdmakit:index:RoceCluster"), /RoceCluster plain-roce: key material must be a secret[\s\S]*sshPrivateKey: is a plain value/);
    assert.equal(registered.slice(before).filter((r) => r.name.startsWith("plain-")).length, 0, "nothing registered");
});
