/*
 * One exit-status contract for every verb of the installed command (bin/rdmakit.cjs, as `npx rdmakit` runs it):
 * 0 ok, 1 a check failed, 2 bad input or unreadable; `--stack NAME` (Pulumi.NAME.yaml in the working directory) and
 * `--config FILE` wherever a verb reads a stack; `--version`. Verb by verb, each status it can give offline.
 * `check` and `fabric check` give 1 only against a live cluster or fabric (their own tests, validate-check and
 * roce-drift, cover it); here their bad input. Bound: about 25 child processes, ~60 s on 2 shared cores.
 */
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.join(__dirname, "..");
const BIN = path.join(ROOT, "bin", "rdmakit.cjs");
const ROCE = path.join(ROOT, "examples", "roce-h100.yaml");
const AWS = path.join(ROOT, "examples", "aws-p5.yaml");
const NCCL = path.join(ROOT, "test", "fixtures", "nccl");

function rdmakit(args: string[], cwd = ROOT) {
    const r = spawnSync(process.execPath, [BIN, ...args], { cwd, encoding: "utf8", timeout: 120_000 });
    return { code: r.status, out: r.stdout, err: r.stderr };
}

/** A scratch folder holding Pulumi.<name>.yaml files made from the examples. */
function stacks(files: Record<string, string>): string {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-cli-"));
    for (const [name, text] of Object.entries(files)) fs.writeFileSync(path.join(dir, `Pulumi.${name}.yaml`), text);
    return dir;
}

const roceText = fs.readFileSync(ROCE, "utf8");
const awsText = fs.readFileSync(AWS, "utf8");
// ECN starting at 40 MB: past the point where PFC pauses (rule C17), a valid spec whose QoS plan fails a check
const ecnLate = roceText.replace("ecn: { minBytes: 150000, maxBytes: 1500000", "ecn: { minBytes: 40000000, maxBytes: 41000000");
const dir = stacks({ prod: roceText, late: ecnLate, aws: awsText });

test("--version prints the package's version and exits 0", () => {
    const r = rdmakit(["--version"]);
    assert.equal(r.code, 0);
    assert.equal(r.out.trim(), JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")).version);
});

test("an unknown verb or flag is bad input: 2", () => {
    assert.equal(rdmakit(["no-such-verb"]).code, 2);
    assert.equal(rdmakit(["switch-config", "--no-such-flag"]).code, 2);
});

test("plan: 0 ok, 1 a QoS rule broken, 2 invalid input; --stack reads Pulumi.<name>.yaml; --json parses", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-cli-out-"));
    const ok = rdmakit(["plan", "--stack", "prod", "--out", out, "--json"], dir);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(JSON.parse(ok.out).stack, "prod");
    const late = rdmakit(["plan", "--stack", "late", "--out", out], dir);
    assert.equal(late.code, 1, late.err);
    assert.match(late.err, /FAIL the QoS plan breaks 4 consistency rule\(s\)/);
    assert.match(late.err, /\[C17\] spine:Ethernet0: ECN on spine:Ethernet0 starts at 40000000 B/);
    const missing = rdmakit(["plan", "--stack", "nope"], dir);
    assert.equal(missing.code, 2);
    assert.match(missing.err, /Pulumi\.nope\.yaml does not exist/);
});

test("plan: every problem of a spec at once, schema and cross-field together, and aws:region beside cluster.aws.region", () => {
    const bad = awsText.replace("nodes: 4", "nodes: 0").replace("instanceType: p5.48xlarge", "instanceType: p5en.48xlarg")
        .replace("      region: us-east-2", "      region: us-east-9").replace("aws:region: us-east-2", "aws:region: us-west-2");
    const d = stacks({ bad });
    const r = rdmakit(["plan", "--stack", "bad"], d);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /invalid cluster spec: 4 problems/);
    assert.match(r.err, /cluster\.nodes: is too small \(got 0\)/);
    assert.match(r.err, /cluster\.aws\.instanceType: is not an EFA-capable instance type the kit knows \(did you mean p5en\.48xlarge\?\)/);
    assert.match(r.err, /cluster\.aws\.availabilityZone: is not in region us-east-9/);
    assert.match(r.err, /aws:region: differs from cluster\.aws\.region \(us-east-9\)/);
});

test("switch-config: 0 rendered, 1 a QoS rule broken, 2 bad input (no stack, unknown switch, a cloud stack)", () => {
    const ok = rdmakit(["switch-config", "--stack", "prod", "--switch", "spine"], dir);
    assert.equal(ok.code, 0, ok.err);
    assert.equal(JSON.parse(ok.out).DSCP_TO_TC_MAP.RDMAKIT_ROCE["26"], "3");
    const late = rdmakit(["switch-config", "--stack", "late"], dir);
    assert.equal(late.code, 1);
    assert.match(late.err, /FAIL consistency: \[C17\]/);
    const nope = rdmakit(["switch-config", "--config", ROCE, "--switch", "nope"]);
    assert.equal(nope.code, 2);
    assert.match(nope.err, /--switch: no switch of that name .*allowed: leaf-sonic, leaf-nvue, spine/);
    const cloud = rdmakit(["switch-config", "--config", AWS]);
    assert.equal(cloud.code, 2);
    assert.match(cloud.err, /cluster\.fabric: switch-config renders switches for the roce fabric only/);
    assert.equal(rdmakit(["switch-config"]).code, 2);
    assert.equal(rdmakit(["switch-config", "--stack", "prod", "--config", ROCE], dir).code, 2);
    assert.equal(rdmakit(["switch-config", "--stack", "nope"], dir).code, 2);
});

test("nccl-report: 0 judged and passing, 1 failing or not judged, 2 not a log; --config grades as the stack's plan", () => {
    const sharp = path.join(NCCL, "nccl-tests-319-ib-hpcx-sharp-plugin-2x8.log");
    const moc = path.join(NCCL, "moc-roce-h100-2node-allreduce.log");
    assert.equal(rdmakit(["nccl-report", sharp, "--fabric", "ib", "--expect", "40"]).code, 0);
    assert.equal(rdmakit(["nccl-report", moc]).code, 1);
    assert.equal(rdmakit(["nccl-report", path.join(NCCL, "moc-roce-h100-2node-allreduce.source.md")]).code, 2);
    // the RoCE example's plan: 4 nodes x 8 GPUs on roce, so this 2-rank run fails the fabric proof, and says so
    const planned = rdmakit(["nccl-report", moc, "--stack", "prod", "--json"], dir);
    assert.equal(planned.code, 1);
    const j = JSON.parse(planned.out);
    assert.equal(j.pass, false);
    assert.equal(j.notJudged, undefined);
    assert.ok(j.failed.some((f: { check: string }) => f.check === "gpudirect"), JSON.stringify(j.failed));
    assert.equal(rdmakit(["nccl-report", moc, "--stack", "nope"], dir).code, 2);
});

test("health, check and fabric check read --stack from the stack's backend: a stack that cannot be read, or --stack beside --config, is bad input (2)", () => {
    // check reads its key first (any file: the stack is refused before the key is used)
    for (const verb of [["health", "--from", "."], ["check", "--ssh-key", ROCE], ["fabric", "check"]]) {
        const missing = rdmakit([...verb, "--stack", "nope"], dir);
        assert.equal(missing.code, 2, `${verb.join(" ")}: ${missing.err}`);
        assert.match(missing.err, /stack nope/, verb.join(" "));
        const both = rdmakit([...verb, "--stack", "prod", "--config", ROCE], dir);
        assert.equal(both.code, 2, verb.join(" "));
        assert.match(both.err, /--stack.*--config|--config.*--stack/, `${verb.join(" ")}: the message names both flags`);
    }
    const none = rdmakit(["fabric", "check"]);
    assert.equal(none.code, 2);
    assert.match(none.err, /--config: is required \(or --stack, or --spec-stdin\)/);
});

test("plan --program and plan --config give one verdict on one stack: 0, with the missing key as a warning", () => {
    const out = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-cli-out-"));
    const direct = rdmakit(["plan", "--config", AWS, "--out", out]);
    const program = rdmakit(["plan", "--program", path.join(ROOT, "index.ts"), "--config", AWS]);
    assert.equal(direct.code, 0, direct.err);
    assert.equal(program.code, 0, program.err);
    for (const r of [direct, program]) assert.match(r.out, /warn rdmakit:sshPrivateKey is not set/);
    // the program's RdmaCluster gets the same NCCL environment, thresholds and software table as the stack's plan
    assert.match(program.out, /the RdmaCluster's plan, from the stack's rdmakit:cluster/);
    for (const section of ["NCCL environment:", "validation (nccl-tests all_reduce_perf):", "component       image has"]) {
        const pick = (text: string) => text.slice(text.indexOf(section)).split("\n\n")[0];
        assert.ok(program.out.includes(section), section);
        assert.equal(pick(program.out), pick(direct.out), section);
    }
});

test("status, repair and scale: 0 no node fails, 1 one does; acting without a terminal and without --yes is refused (2), nothing touched", async () => {
    const { operatingState } = await import("../components/day2/state");
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-cli-day2-"));
    const nodes = [0, 1].map((i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId: `i-0${i}` }));
    const base = { stack: "prod", fabric: "aws-efa" as const, sshUser: "ubuntu", repair: "replace" as const, spec: {}, nodes, group: { cloud: "aws" as const, region: "us-east-2", autoScalingGroup: "g" } };
    const healthy = operatingState({ ...base, validation: { pass: true, health: nodes.map((n) => ({ node: n.name, verdict: "healthy" as const, findings: [] })) } });
    const failing = operatingState({ ...base, validation: { pass: false, health: nodes.map((n, i) => ({ node: n.name, verdict: i ? "failing" as const : "healthy" as const, findings: i ? [{ component: "ecc", message: "row remapping failed", persistence: "persistent" as const }] : [] })) } });
    for (const [name, s] of [["ok", healthy], ["bad", failing]] as const) {
        fs.mkdirSync(path.join(d, name));
        fs.writeFileSync(path.join(d, name, "state.json"), JSON.stringify(s));
    }
    // a pulumi that answers stack output with the failing state and logs anything else it is asked
    fs.writeFileSync(path.join(d, "pulumi"), `#!/bin/sh\ncase "$1" in stack) cat "${d}/bad/state.json" | sed 's/^/{"rdmakitState":/;$ s/$/}/' | tr -d '\\n' ;; *) echo "$*" >> "${d}/touched" ;; esac\n`, { mode: 0o755 });
    fs.writeFileSync(path.join(d, "aws"), `#!/bin/sh\necho "$*" >> "${d}/touched"\n`, { mode: 0o755 });
    const run = (args: string[]) => {
        const r = spawnSync(process.execPath, [BIN, ...args], { cwd: d, encoding: "utf8", timeout: 120_000, env: { ...process.env, PATH: `${d}:${process.env.PATH}`, RDMAKIT_SSH_PRIVATE_KEY: "k" } });
        return { code: r.status, out: r.stdout, err: r.stderr };
    };
    assert.equal(run(["status", "--out", "ok"]).code, 0);
    assert.equal(run(["status", "--out", "bad"]).code, 1);
    assert.equal(run(["repair", "--out", "bad", "--dry-run"]).code, 0);
    assert.equal(run(["repair", "--out", "ok"]).code, 2, "acting needs --stack");
    const refused = run(["repair", "--stack", "prod"]);
    assert.equal(refused.code, 2, refused.err);
    assert.match(refused.err, /no --yes: nothing was changed/);
    // scale: the plan 0; acting without a terminal and without --yes 2; a count that is not one, or none, 2
    assert.equal(run(["scale", "--out", "ok", "--nodes", "1", "--dry-run"]).code, 0);
    assert.equal(run(["scale", "--stack", "prod", "--nodes", "1"]).code, 2);
    assert.equal(run(["scale", "--out", "ok", "--nodes", "0", "--dry-run"]).code, 2);
    assert.equal(run(["scale", "--out", "ok", "--dry-run"]).code, 2);
    assert.ok(!fs.existsSync(path.join(d, "touched")), "no pulumi up, no aws call");
    fs.rmSync(d, { recursive: true, force: true });
});

test("fabric check --only repeats (a rollout stage's check writes 12 switches to a line): the names add up, an unknown one is refused by name (2)", () => {
    const r = rdmakit(["fabric", "check", "--config", ROCE, "--switches-only", "--only", "leaf-sonic,nope1", "--only", "leaf-nvue,nope2"]);
    assert.equal(r.code, 2, r.err);
    assert.match(r.err, /^--only: no switch named nope1, nope2 in the spec; allowed: /m);
});
