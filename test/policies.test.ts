import { test, describe } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parse as parseYaml } from "yaml";
import { planArtifacts } from "../components/artifacts";
import type { OfflineResult } from "../components/offline";
import { planCluster } from "../components/plan";
import { parseClusterSpec } from "../components/spec";
import { RDMAKIT_POLICIES, rdmakitPolicies } from "../policies/rules";
import { evaluatePolicies, type PolicySubject, type PolicyVerdict } from "../policies/evaluate";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

/*
 * The policies with rdmakit's own program: each bundled example runs offline in a child process (the real index.ts
 * on the mock engine, with the dependency recording the stack policies need) and every policy of its fabric must run
 * and pass on what it registers; doctored copies of those resources must fail the right policy; `rdmakit plan` prints
 * the verdicts. Each policy's own violating and clean cases, over gRPC as Pulumi runs the pack, are in
 * policy-pack.test.ts. policies/index.ts is never imported (it starts a server).
 */

const ROOT = join(__dirname, "..");

function node(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
    return new Promise((resolve, reject) => {
        const p = spawn(process.execPath, [...TS_NODE_ARGS, ...args], { cwd: ROOT });
        let out = "";
        let err = "";
        p.stdout.on("data", (d) => (out += d));
        p.stderr.on("data", (d) => (err += d));
        p.on("error", reject);
        p.on("close", (code) => resolve({ code, out, err }));
    });
}

interface Recorded {
    stack: string;
    verdicts: PolicyVerdict[];
    resources: PolicySubject[];
}

const EXAMPLES = ["aws-p5", "azure-h100", "roce-h100"] as const;
type Example = (typeof EXAMPLES)[number];
const names = RDMAKIT_POLICIES.map((p) => p.name);
const APPLICABLE: Record<Example, string[]> = {
    "aws-p5": [...names.filter((n) => n.startsWith("aws-efa-")), "rdma-ssh-not-open-to-internet"],
    "azure-h100": [...names.filter((n) => n.startsWith("azure-ib-")), "rdma-ssh-not-open-to-internet"],
    "roce-h100": names.filter((n) => n.startsWith("roce-")),
};

// One child per example, started once and shared by the tests below.
const recorded: Record<Example, Promise<Recorded>> = Object.fromEntries(EXAMPLES.map((x) => [x, node(["policies/check.ts", `examples/${x}.yaml`, "--json"]).then((r) => {
    assert.equal(r.code, 0, `policies/check.ts ${x}: ${r.err}`);
    return JSON.parse(r.out) as Recorded;
})])) as Record<Example, Promise<Recorded>>;

const verdict = (vs: PolicyVerdict[], name: string) => {
    const v = vs.find((x) => x.policy === name);
    assert.ok(v, `no verdict for ${name}`);
    return v;
};
const messages = (vs: PolicyVerdict[], name: string) => verdict(vs, name).violations.map((x) => x.message);
const clone = <T>(x: T): T => JSON.parse(JSON.stringify(x));
const deepFreeze = <T>(x: T): T => {
    if (x !== null && typeof x === "object") { for (const v of Object.values(x)) deepFreeze(v); Object.freeze(x); }
    return x;
};

describe("the bundled examples pass every policy", () => {
    for (const x of EXAMPLES) {
        test(`${x}: the policies for its fabric pass and decide; the others do not apply`, async () => {
            const { verdicts, resources } = await recorded[x];
            assert.deepEqual(verdicts.map((v) => v.policy), names);
            assert.ok(resources.length > 5 && resources.every((r) => r.urn), "resources carry URNs from the recording");
            for (const v of verdicts) {
                if (APPLICABLE[x].includes(v.policy)) {
                    assert.equal(v.notApplicable, undefined, `${v.policy} should apply to ${x}`);
                    assert.deepEqual(v.violations, [], `${v.policy} on ${x}`);
                    assert.deepEqual(v.undecided, [], `${v.policy} on ${x} must be decided offline`);
                    assert.equal(v.ok, true);
                } else {
                    assert.ok(v.notApplicable, `${v.policy} should not apply to ${x}`);
                }
            }
            // the same verdicts when evaluated here from the recorded resources
            assert.deepEqual(evaluatePolicies(resources, { stack: x }), verdicts);
        });
    }
});

describe("rdmakit plan prints the policy verdicts", () => {
    for (const x of EXAMPLES) {
        test(`${x}: exit 0 and one line per policy of the fabric`, async () => {
            const out = mkdtempSync(join(tmpdir(), "rdmakit-policies-"));
            const r = await node(["bin/rdmakit.ts", "plan", "--config", `examples/${x}.yaml`, "--out", out]);
            assert.equal(r.code, 0, r.err + r.out);
            for (const name of APPLICABLE[x]) assert.match(r.out, new RegExp(`^ {2}(ok|warn) {1,3}${name}( |$)`, "m"));
            assert.doesNotMatch(r.out, /FAIL/);
            const doc = JSON.parse(readFileSync(join(out, "plan.json"), "utf8"));
            const names = doc.checks.map((c: { name: string }) => c.name);
            for (const name of APPLICABLE[x]) assert.ok(names.includes(name), `${name} in plan.json checks`);
            for (const p of RDMAKIT_POLICIES) if (!APPLICABLE[x].includes(p.name)) assert.ok(!names.includes(p.name), `${p.name} is for another fabric`);
        });
    }
});

// ---------------------------------------------------------------------------------------------------------------
// The real examples, doctored

const LT = "aws:ec2/launchTemplate:LaunchTemplate";
const ASG = "aws:autoscaling/group:Group";
const PG = "aws:ec2/placementGroup:PlacementGroup";
const VMSS = "azure-native:compute:VirtualMachineScaleSet";
const run = (rs: PolicySubject[]) => evaluatePolicies(rs, { stack: "t" });

test("the real AWS example, doctored: without the self egress rule the egress policy names the EFA group, the ingress one passes", async () => {
    const { resources } = await recorded["aws-p5"];
    const v = run(clone(resources).filter((r) => !r.name.endsWith("-efa-self-out")));
    assert.match(messages(v, "aws-efa-sg-self-egress")[0], /launch template cluster-aws-lt: EFA networkInterfaces\[1\] \(card 0, device 1\): security group cluster-aws-efa-sg has no all-protocol \(-1\) egress rule referencing itself/);
    assert.deepEqual(messages(v, "aws-efa-sg-self-ingress"), []);
});

test("the real AWS example, doctored: a template with one card missing and IMDSv1 fails two mandatory policies", async () => {
    const { resources } = await recorded["aws-p5"];
    const doctored = clone(resources);
    const lt = doctored.find((r) => r.type === LT)!.inputs as any;
    lt.networkInterfaces = lt.networkInterfaces.filter((n: any) => n.networkCardIndex !== 7);
    lt.metadataOptions.httpTokens = "optional";
    const v = run(doctored);
    assert.match(messages(v, "aws-efa-interface-every-card")[0], /launch template cluster-aws-lt \(p5\.48xlarge, 32 network cards, 32 EFA\): no EFA interface on card 7/);
    assert.match(messages(v, "aws-efa-imdsv2-required")[0], /metadataOptions\.httpTokens is "optional", not "required"/);
});

test("planArtifacts turns a mandatory violation into a failing mandatory check named after the policy", async () => {
    const { resources } = await recorded["azure-h100"];
    const spec = parseClusterSpec(parseYaml(readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8")).config["rdmakit:cluster"]);
    const base: OfflineResult = { stack: "azure-h100", spec, plan: planCluster(spec), resources, invokes: [], hasSecretKey: true };
    const good = planArtifacts(base).checks.filter((c) => c.name.startsWith("azure-ib-"));
    assert.deepEqual(good.map((c) => c.name), APPLICABLE["azure-h100"].filter((n) => n.startsWith("azure-ib-")));
    assert.ok(good.every((c) => c.ok));

    const doctored = clone(resources);
    const vmss = doctored.find((r) => r.type === VMSS)!;
    (vmss.inputs as any).singlePlacementGroup = false;
    const checks = planArtifacts({ ...base, resources: doctored }).checks;
    const c = checks.find((x) => x.name === "azure-ib-vmss-single-placement-group")!;
    assert.deepEqual({ ok: c.ok, mandatory: c.mandatory }, { ok: false, mandatory: true });
    assert.match(c.detail!, /VM scale set cluster-azure-vmss \(Standard_ND96isr_H100_v5\): singlePlacementGroup is false, must be true/);
    assert.ok(checks.some((x) => !x.ok && x.mandatory));

    // an advisory policy's violation is a warning, not a failure
    const aws = (await recorded["aws-p5"]).resources;
    const awsSpec = parseClusterSpec(parseYaml(readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8")).config["rdmakit:cluster"]);
    const noPg = clone(aws).filter((r) => r.type !== PG).map((r) => (r.type === ASG ? { ...r, inputs: { ...(r.inputs as object), placementGroup: undefined }, propertyDependencies: { ...r.propertyDependencies, placementGroup: [] } } : r));
    const pg = planArtifacts({ stack: "aws-p5", spec: awsSpec, plan: planCluster(awsSpec), resources: noPg, invokes: [], hasSecretKey: true }).checks.find((x) => x.name === "aws-efa-placement-cluster")!;
    assert.deepEqual({ ok: pg.ok, mandatory: pg.mandatory }, { ok: false, mandatory: false });
    assert.match(pg.detail!, /auto scaling group cluster-aws-nodes \(launch template cluster-aws-lt\) has no placement group/);
});

test("planArtifacts gives the partition policy the plan's partition limit (quotaRaised: 300)", async () => {
    const { resources } = await recorded["azure-h100"];
    const doc = parseYaml(readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8")).config["rdmakit:cluster"];
    const big = clone(resources);
    (big.find((r) => r.type === VMSS)!.inputs as any).sku.capacity = 250;
    const at = (cluster: unknown) => {
        const spec = parseClusterSpec(cluster);
        return planArtifacts({ stack: "azure-h100", spec, plan: planCluster(spec), resources: big, invokes: [], hasSecretKey: true }).checks.find((x) => x.name === "azure-ib-vmss-partition-capacity")!;
    };
    const defaultLimit = at(doc);
    assert.deepEqual({ ok: defaultLimit.ok, mandatory: defaultLimit.mandatory }, { ok: false, mandatory: true });
    assert.match(defaultLimit.detail!, /sku\.capacity 250 exceeds the partition limit 100/);
    assert.equal(at({ ...doc, azure: { ...doc.azure, quotaRaised: true } }).ok, true);
});

// ---------------------------------------------------------------------------------------------------------------
// Composition: a team's own pack

describe("rdmakitPolicies: the rules for a team's own pack", () => {
    test("levels: `all` first, then per policy; config values become the schema defaults the engine sends", () => {
        const ps = rdmakitPolicies({ all: "advisory", "aws-efa-sg-self-ingress": "mandatory", "azure-ib-vmss-partition-capacity": { partitionLimit: 300 }, "roce-qos-c1-dscp-lossless-queue": "disabled" });
        const by = (n: string) => ps.find((p) => p.name === n)!;
        assert.equal(ps.length, RDMAKIT_POLICIES.length);
        assert.equal(by("aws-efa-sg-self-ingress").enforcementLevel, "mandatory");
        assert.equal(by("aws-efa-imdsv2-required").enforcementLevel, "advisory");
        assert.equal(by("roce-qos-c1-dscp-lossless-queue").enforcementLevel, "disabled");
        assert.equal(by("azure-ib-vmss-partition-capacity").configSchema!.properties.partitionLimit.default, 300);
        // the original list is untouched
        assert.equal(RDMAKIT_POLICIES.find((p) => p.name === "azure-ib-vmss-partition-capacity")!.configSchema!.properties.partitionLimit.default, 100);
    });

    test("the composed policies decide with the team's values, also without a config from the engine", async () => {
        const { resources } = await recorded["azure-h100"];
        const big = clone(resources);
        (big.find((r) => r.type === VMSS)!.inputs as any).sku.capacity = 250;
        const v = (policies: ReturnType<typeof rdmakitPolicies>) => evaluatePolicies(big, { policies }).find((x) => x.policy === "azure-ib-vmss-partition-capacity")!;
        assert.equal(v(rdmakitPolicies()).violations.length, 1);
        assert.equal(v(rdmakitPolicies({ "azure-ib-vmss-partition-capacity": { partitionLimit: 300 } })).violations.length, 0);
        // a --policy-pack-config file still wins over the composed default
        assert.equal(evaluatePolicies(big, { policies: rdmakitPolicies({ "azure-ib-vmss-partition-capacity": { partitionLimit: 300 } }), config: { "azure-ib-vmss-partition-capacity": { partitionLimit: 200 } } }).find((x) => x.policy === "azure-ib-vmss-partition-capacity")!.violations.length, 1);
    });

    test("an unknown policy or config key is refused, naming what is allowed", () => {
        assert.throws(() => rdmakitPolicies({ "aws-efa-nope": "mandatory" }), /unknown policy "aws-efa-nope"; allowed: "all", aws-efa-interface-present/);
        assert.throws(() => rdmakitPolicies({ "azure-ib-vmss-partition-capacity": { limit: 3 } }), /policy azure-ib-vmss-partition-capacity has no config "limit"; allowed: vmSizes, partitionLimit/);
    });
});

test("at least 30 policies, each with a kebab-case <fabric>-<what>-<rule> name, description, level, severity, url and remediation", () => {
    assert.ok(names.length >= 30, `${names.length} policies`);
    assert.equal(new Set(names).size, names.length);
    for (const p of RDMAKIT_POLICIES) {
        assert.match(p.name, /^(aws-efa|azure-ib|roce|rdma)(-[a-z0-9]+){2,}$/, p.name);
        assert.ok(p.description.length > 20 && p.description.endsWith("."), p.name);
        assert.ok(p.enforcementLevel === "mandatory" || p.enforcementLevel === "advisory", p.name);
        assert.ok((p.remediationSteps ?? "").length > 20, p.name);
        assert.ok(p.severity && /^https:\/\//.test(p.url ?? ""), p.name);
        for (const k of Object.keys(p.configSchema?.properties ?? {})) assert.notEqual(k, "enforcementLevel");
    }
});

test("raw resources of any shape never make a policy fail with an error (the pack also runs on stacks it was not written for)", async () => {
    const odd: unknown[] = [null, "x", [null, 3]];
    const prefix: Record<Example, RegExp> = { "aws-p5": /^(aws-efa|rdma)-/, "azure-h100": /^(azure-ib|rdma)-/, "roce-h100": /^roce-/ };
    for (const x of EXAMPLES) {
        // frozen: the doctored sets below share every resource but one, so a policy that wrote to its inputs would throw
        const resources = deepFreeze(clone((await recorded[x]).resources));
        const targets = resources.filter((r) => /LaunchTemplate|autoscaling|SecurityGroup|VirtualMachineScaleSet|VirtualNetwork|Subnet|NetworkSecurityGroup|command:/.test(r.type));
        for (const r of targets) {
            for (const key of Object.keys((r.inputs ?? {}) as object)) {
                for (const v of odd) {
                    // only the doctored resource is new; the others are shared (policies read their inputs, never write them)
                    const doctored = resources.map((y) => (y.urn === r.urn ? { ...y, inputs: { ...(y.inputs as object), [key]: v } } : y));
                    const policies = RDMAKIT_POLICIES.filter((p) => prefix[x].test(p.name));
                    assert.doesNotThrow(() => evaluatePolicies(doctored, { policies }), `${x}: ${r.type} ${r.name}.${key} = ${JSON.stringify(v)}`);
                }
            }
        }
    }
});

test("a policy that reads an unknown value is undecided; one that fails names itself and keeps the failing line's stack", () => {
    const resources: PolicySubject[] = [{ type: "aws:ec2/subnet:Subnet", name: "s", custom: true, inputs: { cidrBlock: { __pulumiUnknown: true }, vpcId: "vpc-1" } }];
    const reads = { name: "reads-unknown", description: "reads an unknown", enforcementLevel: "mandatory" as const,
        validateResource: (args: { props: Record<string, unknown> }) => { void args.props.cidrBlock; } };
    const [undecided] = evaluatePolicies(resources, { policies: [reads] });
    assert.deepEqual(undecided.violations, []);
    assert.equal(undecided.ok, false, "undecided is not a pass");
    assert.match(undecided.undecided.join("\n"), /\.cidrBlock can't be known during preview/);
    // a rule with a bug: the error names the policy, and its cause carries a stack down to this file
    const broken = { name: "broken-rule", description: "a bug", enforcementLevel: "mandatory" as const,
        validateResource: (args: { props: Record<string, any> }) => { args.props.vpcId.nothing.here(); } };
    assert.throws(() => evaluatePolicies(resources, { policies: [broken] }), (e: Error) => {
        assert.match(e.message, /^policy broken-rule failed: .*Cannot read properties of undefined/);
        assert.match(String((e.cause as Error).stack), /policies\.test\.ts:\d+/);
        return true;
    });
    assert.equal(Error.stackTraceLimit, 10, "the evaluator leaves Node's stack trace limit as it found it");
});

// The policy reference (docs/policies.md) against the pack's exports: test/docs.test.ts.
