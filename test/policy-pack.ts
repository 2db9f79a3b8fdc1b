/**
 * Drives a policy pack the way the Pulumi engine does, without the CLI (shared/research/pulumi-runtime.md §1.1–1.7,
 * §1.10): `node <the pack's own @pulumi/pulumi/cmd/run-policy-pack> <engine address> <abs pack dir>` with cwd = the
 * pack, the port from the first stdout line, then the pulumirpc.Analyzer service over gRPC: Handshake (may be
 * UNIMPLEMENTED), GetAnalyzerInfo, Configure (every policy at its level with its schema defaults, as the engine's
 * ReconcilePolicyPackConfig sends it), Analyze per resource and AnalyzeStack over all of them. Not a test file.
 */
import { spawn, type ChildProcess } from "node:child_process";
import * as grpc from "@grpc/grpc-js";
import * as rpc from "@pulumi/pulumi/proto/analyzer_grpc_pb";
import * as pb from "@pulumi/pulumi/proto/analyzer_pb";
import { Struct } from "google-protobuf/google/protobuf/struct_pb";
import { Empty } from "google-protobuf/google/protobuf/empty_pb";

/** A resource as the engine sends it: raw provider inputs (Check'ed), unknowns as sentinels, dependencies by URN. */
export interface EngineResource {
    type: string;
    name: string;
    urn: string;
    props: Record<string, unknown>;
    parent?: string;
    dependencies?: string[];
    propertyDependencies?: Record<string, string[]>;
}

export interface Diagnostic {
    policy: string;
    message: string;
    level: "advisory" | "mandatory" | "disabled" | "remediate";
    urn: string;
}

export interface PolicyInfoView {
    name: string;
    description: string;
    level: string;
    severity: number;
    url: string;
    remediation: string;
    type: number;
    schema?: { properties: Record<string, { default?: unknown; [k: string]: unknown }>; required: string[] };
}

const LEVEL = ["advisory", "mandatory", "disabled", "remediate"] as const;
const LEVEL_NUM: Record<string, pb.EnforcementLevel> = { advisory: 0, mandatory: 1, disabled: 2, remediate: 3 };

function call<Req, Res>(fn: (req: Req, cb: (err: grpc.ServiceError | null, res: Res) => void) => unknown, req: Req): Promise<Res> {
    return new Promise((resolve, reject) => fn(req, (err, res) => (err ? reject(err) : resolve(res))));
}

function options(): pb.AnalyzerResourceOptions {
    const o = new pb.AnalyzerResourceOptions();
    o.setCustomtimeouts(new pb.AnalyzerResourceOptions.CustomTimeouts());
    return o;
}

export class Pack {
    private constructor(readonly child: ChildProcess, readonly client: rpc.AnalyzerClient, readonly stderr: () => string, readonly info: { name: string; version: string; policies: PolicyInfoView[] }) {}

    /** Starts the pack in `dir` with the runner its own node_modules resolves; rejects with its stderr if no port comes. */
    static async start(dir: string, runner: string): Promise<Pack> {
        const child = spawn(process.execPath, [runner, "127.0.0.1:1", dir], { cwd: dir, stdio: ["ignore", "pipe", "pipe"] });
        let err = "";
        child.stderr!.on("data", (d) => (err += d));
        const port = await new Promise<number>((resolve, reject) => {
            let out = "";
            const timer = setTimeout(() => reject(new Error(`no port within 60 s; stderr: ${err}`)), 60_000);
            child.stdout!.on("data", (d) => {
                out += d;
                const line = out.split("\n");
                if (line.length > 1) {
                    clearTimeout(timer);
                    const n = Number(line[0].trim());
                    if (Number.isInteger(n) && n > 0 && n < 65536) resolve(n);
                    else reject(new Error(`first stdout line is not a port: ${JSON.stringify(line[0])}; stderr: ${err}`));
                }
            });
            child.on("exit", (code) => {
                clearTimeout(timer);
                reject(new Error(`the pack exited with ${code} before printing a port; stderr: ${err}`));
            });
        });
        const client = new rpc.AnalyzerClient(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
        const res = await call<Empty, pb.AnalyzerInfo>(client.getAnalyzerInfo.bind(client), new Empty());
        const policies = res.getPoliciesList().map((p): PolicyInfoView => {
            const s = p.getConfigschema();
            return {
                name: p.getName(), description: p.getDescription(), level: LEVEL[p.getEnforcementlevel()], severity: p.getSeverity(),
                url: p.getUrl(), remediation: p.getRemediationSteps(), type: p.getPolicyType(),
                schema: s ? { properties: (s.getProperties()?.toJavaScript() ?? {}) as NonNullable<PolicyInfoView["schema"]>["properties"], required: s.getRequiredList() } : undefined,
            };
        });
        const pack = new Pack(child, client, () => err, { name: res.getName(), version: res.getVersion(), policies });
        await pack.configure();
        return pack;
    }

    /** Handshake, as the engine sends it first; resolves to the gRPC status code (12 = UNIMPLEMENTED). */
    handshake(): Promise<number> {
        const req = new pb.AnalyzerHandshakeRequest();
        req.setEngineAddress("127.0.0.1:1");
        return new Promise((resolve) => this.client.handshake(req, (e) => resolve(e ? e.code : grpc.status.OK)));
    }

    /**
     * Configure as the engine sends it after reconciling: every policy with its level and its schema defaults,
     * overridden per policy by `overrides` (a level, or properties with an optional enforcementLevel).
     */
    async configure(overrides: Record<string, string | Record<string, unknown>> = {}): Promise<void> {
        const req = new pb.ConfigureAnalyzerRequest();
        for (const p of this.info.policies) {
            const o = overrides[p.name];
            const { enforcementLevel, ...props } = typeof o === "string" ? { enforcementLevel: o } : o ?? {};
            const defaults = Object.fromEntries(Object.entries(p.schema?.properties ?? {}).filter(([, v]) => v.default !== undefined).map(([k, v]) => [k, v.default]));
            const c = new pb.PolicyConfig();
            c.setEnforcementlevel(LEVEL_NUM[(enforcementLevel as string | undefined) ?? p.level]);
            c.setProperties(Struct.fromJavaScript({ ...defaults, ...props } as never));
            req.getPolicyconfigMap().set(p.name, c);
        }
        await call(this.client.configure.bind(this.client), req);
    }

    async analyze(r: EngineResource): Promise<{ diagnostics: Diagnostic[]; notApplicable: string[] }> {
        const req = new pb.AnalyzeRequest();
        req.setType(r.type);
        req.setName(r.name);
        req.setUrn(r.urn);
        req.setProperties(Struct.fromJavaScript(r.props as never));
        const o = options();
        if (r.parent) o.setParent(r.parent);
        req.setOptions(o);
        const res = await call<pb.AnalyzeRequest, pb.AnalyzeResponse>(this.client.analyze.bind(this.client), req);
        return { diagnostics: diagnostics(res), notApplicable: res.getNotApplicableList().map((n) => n.getPolicyName()) };
    }

    async analyzeStack(rs: EngineResource[]): Promise<{ diagnostics: Diagnostic[]; notApplicable: string[] }> {
        const req = new pb.AnalyzeStackRequest();
        for (const r of rs) {
            const a = new pb.AnalyzerResource();
            a.setType(r.type);
            a.setName(r.name);
            a.setUrn(r.urn);
            a.setProperties(Struct.fromJavaScript(r.props as never));
            const o = options();
            if (r.parent) {
                o.setParent(r.parent);
                a.setParent(r.parent);
            }
            a.setOptions(o);
            a.setDependenciesList(r.dependencies ?? []);
            for (const [k, urns] of Object.entries(r.propertyDependencies ?? {})) {
                if (urns.length === 0) continue; // the engine drops empty entries
                const d = new pb.AnalyzerPropertyDependencies();
                d.setUrnsList(urns);
                a.getPropertydependenciesMap().set(k, d);
            }
            req.addResources(a);
        }
        const res = await call<pb.AnalyzeStackRequest, pb.AnalyzeResponse>(this.client.analyzeStack.bind(this.client), req);
        return { diagnostics: diagnostics(res), notApplicable: res.getNotApplicableList().map((n) => n.getPolicyName()) };
    }

    /** Every diagnostic of a stack as the engine collects them: Analyze per resource, then one AnalyzeStack. */
    async preview(rs: EngineResource[]): Promise<{ diagnostics: Diagnostic[]; ran: Set<string> }> {
        const all: Diagnostic[] = [];
        const ran = new Set<string>();
        const resourcePolicies = this.info.policies.filter((p) => p.type === 1).map((p) => p.name);
        const stackPolicies = this.info.policies.filter((p) => p.type === 2).map((p) => p.name);
        for (const r of rs) {
            const a = await this.analyze(r);
            all.push(...a.diagnostics);
            for (const p of resourcePolicies) if (!a.notApplicable.includes(p)) ran.add(p);
        }
        const s = await this.analyzeStack(rs);
        all.push(...s.diagnostics);
        for (const p of stackPolicies) if (!s.notApplicable.includes(p)) ran.add(p);
        return { diagnostics: all, ran };
    }

    close(): void {
        if (this.child.exitCode !== null || this.child.killed) return;
        this.client.close();
        this.child.kill();
    }
}

function diagnostics(res: pb.AnalyzeResponse): Diagnostic[] {
    return res.getDiagnosticsList().map((d) => ({ policy: d.getPolicyname(), message: d.getMessage(), level: LEVEL[d.getEnforcementlevel()], urn: d.getUrn() }));
}
