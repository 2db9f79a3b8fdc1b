// `rdmakit repair` acting (components/day2/cli.ts runRepair, live.ts, run.ts): the confirmation rules, Ctrl-C, and the
// repair carried out through stub `aws` and `pulumi` commands on PATH that answer in the AWS CLI's response shapes
// (test/fixtures/aws/autoscaling-answers.ts: DescribeAutoScalingGroups; EC2 DescribeInstances' Reservations[]),
// fail as the CLI fails, or hang. ssh and the proof (rdmakit check) are recorded stubs. Bound: ~10 s (one stub
// hangs for 1 s before it is stopped).
import { after as cleanup, test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { operatingState, type StateInputs } from "../components/day2/state";
import { runRepair, type RepairDeps } from "../components/day2/cli";
import { cliJson } from "../components/day2/run";
import { scontrolLine } from "../components/day2/live";
import { GROUP, groupAnswer } from "./fixtures/aws/autoscaling-answers";

const ids = ["i-0aaa0000000000001", "i-0aaa0000000000002", "i-0aaa0000000000003", "i-0aaa0000000000004"];
const NEW = "i-0bbb0000000000009";

function stateWith(nodes: Array<[string, string]>, failing: string | undefined) {
    const i: StateInputs = {
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: {},
        nodes: nodes.map(([name, instanceId], k) => ({ name, address: `10.0.0.${10 + k}`, instanceId })),
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: GROUP },
        scheduler: { type: "slurm", drained: [] },
        validation: {
            pass: !failing, failedNodes: [],
            health: nodes.map(([name]) => (name === failing
                ? { node: name, verdict: "failing" as const, findings: [{ component: "ecc", message: "GPU 3 row remapping failed", persistence: "persistent" as const }] }
                : { node: name, verdict: "healthy" as const, findings: [] })),
        },
    };
    return operatingState(i);
}
const before = stateWith(ids.map((id, k) => [`gpu-${k}`, id]), "gpu-1");
// after pulumi up the group lists the new instance first by address: the names moved (item: stable names)
const after = stateWith([["gpu-0", NEW], ["gpu-1", ids[0]], ["gpu-2", ids[2]], ["gpu-3", ids[3]]], undefined);

/** A folder with stub `pulumi` and `aws` on PATH; `aws` runs `awsBody` (sh) after logging its arguments. */
function stubs(awsBody: string) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-repair-live-"));
    cleanup(() => fs.rmSync(dir, { recursive: true, force: true }));
    fs.writeFileSync(path.join(dir, "before.json"), JSON.stringify({ rdmakitState: before }));
    fs.writeFileSync(path.join(dir, "after.json"), JSON.stringify({ rdmakitState: after }));
    fs.writeFileSync(path.join(dir, "pending.json"), JSON.stringify(groupAnswer([[ids[0], "InService", "Healthy"], [ids[1], "Terminating", "Unhealthy"], [ids[2], "InService", "Healthy"], [ids[3], "InService", "Healthy"], [NEW, "Pending", "Healthy"]])));
    fs.writeFileSync(path.join(dir, "inservice.json"), JSON.stringify(groupAnswer([[ids[0], "InService", "Healthy"], [ids[2], "InService", "Healthy"], [ids[3], "InService", "Healthy"], [NEW, "InService", "Healthy"]])));
    fs.writeFileSync(path.join(dir, "instances.json"), JSON.stringify({ Reservations: [{ ReservationId: "r-0123456789abcdef0", OwnerId: "123456789012", Instances: [{ InstanceId: NEW, InstanceType: "p5.48xlarge", PrivateIpAddress: "10.0.0.9", State: { Code: 16, Name: "running" } }] }] }));
    fs.writeFileSync(path.join(dir, "pulumi"), [
        "#!/bin/sh", `d="${dir}"`, 'echo "pulumi $*" >> "$d/log"',
        'case "$1" in',
        '  stack) if [ -f "$d/up-done" ]; then cat "$d/after.json"; else cat "$d/before.json"; fi ;;',
        '  up) echo "Updating (prod)"; touch "$d/up-done" ;;',
        "esac", "",
    ].join("\n"), { mode: 0o755 });
    fs.writeFileSync(path.join(dir, "aws"), `#!/bin/sh\nd="${dir}"\necho "aws $*" >> "$d/log"\n${awsBody}\n`, { mode: 0o755 });
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
    const log = (): string[] => (fs.existsSync(path.join(dir, "log")) ? fs.readFileSync(path.join(dir, "log"), "utf8").trim().split("\n") : []);
    return { dir, env, log };
}

/** The AWS CLI as recorded: set-instance-health prints nothing, the group is Pending once, then InService. */
const AWS_OK = [
    'case "$2" in',
    "  set-instance-health) ;;",
    '  describe-auto-scaling-groups) if [ -f "$d/seen" ]; then cat "$d/inservice.json"; else touch "$d/seen"; cat "$d/pending.json"; fi ;;',
    '  describe-instances) cat "$d/instances.json" ;;',
    "esac",
].join("\n");

function recorded(dir: string, env: NodeJS.ProcessEnv, proof = { ok: true } as { ok: boolean; why?: string }) {
    const ssh: string[] = [];
    const checks: string[][] = [];
    const deps: RepairDeps = {
        cwd: dir, env, interactive: false,
        wait: { intervalMs: 1, timeoutMs: 2_000, sleep: async () => undefined },
        ssh: async (node, line) => { ssh.push(`${node}: ${line}`); return { ok: true }; },
        check: async (_stack, nodes) => { checks.push(nodes); return proof; },
    };
    return { deps, ssh, checks };
}

test("not from a terminal and without --yes: refused with 2, the plan printed, nothing touched", async () => {
    const s = stubs(AWS_OK);
    const { deps, ssh } = recorded(s.dir, s.env);
    const r = await runRepair({ stack: "prod" }, deps);
    assert.equal(r.code, 2);
    assert.match(r.stdout ?? "", /replace gpu-1: health failing/);
    assert.match(r.stderr ?? "", /no --yes: nothing was changed/);
    assert.deepEqual(s.log(), ["pulumi stack output --json --stack prod --non-interactive"], "only the state was read");
    assert.deepEqual(ssh, []);
});

test("at a terminal: only a typed 'yes' goes ahead", async () => {
    const s = stubs(AWS_OK);
    const { deps } = recorded(s.dir, s.env);
    const no = await runRepair({ stack: "prod" }, { ...deps, interactive: true, ask: async () => "y" });
    assert.equal(no.code, 2);
    assert.match(no.stderr ?? "", /not confirmed: nothing was changed/);
    assert.ok(!s.log().some((l) => l.startsWith("aws")));
    const yes = await runRepair({ stack: "prod" }, { ...deps, interactive: true, ask: async () => "yes" });
    assert.equal(yes.code, 0, yes.stderr);
});

test("--yes: drained, marked Unhealthy, the new instance provisioned by pulumi up, proven against the peer by instance, resumed: 0", async () => {
    const s = stubs(AWS_OK);
    const { deps, ssh, checks } = recorded(s.dir, s.env);
    const r = await runRepair({ stack: "prod", yes: true }, { ...deps, run: cliJson(10_000, s.env) });
    assert.equal(r.code, 0, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout ?? "", new RegExp(`gpu-1: replaced \\(${ids[1]} → ${NEW}\\), proven, resumed`));
    const log = s.log();
    assert.ok(log.includes(`aws autoscaling set-instance-health --instance-id ${ids[1]} --health-status Unhealthy --no-should-respect-grace-period --region us-east-2 --output json`), log.join("\n"));
    assert.ok(log.includes("pulumi up --stack prod --yes --skip-preview --non-interactive"));
    // the new instance is gpu-0 in the stack after pulumi up, the peer (i-...1, gpu-0 before) is gpu-1 now
    assert.deepEqual(checks, [["gpu-0", "gpu-1"]]);
    assert.deepEqual(ssh, [`gpu-0: ${scontrolLine("gpu-1", { drain: "rdmakit: health failing" })}`, `gpu-0: ${scontrolLine("gpu-0", "resume")}`]);
    assert.equal(scontrolLine("gpu-1", { drain: "it's bad" }), "sudo -n scontrol update NodeName=gpu-1 State=DRAIN Reason='it'\\''s bad'");
});

test("the replacement fails its proof: left drained, reported, exit 1", async () => {
    const s = stubs(AWS_OK);
    const { deps, ssh } = recorded(s.dir, s.env, { ok: false, why: "pair gpu-0+gpu-1 busbw 12.1 GB/s under 80.0" });
    const r = await runRepair({ stack: "prod", yes: true }, { ...deps, run: cliJson(10_000, s.env) });
    assert.equal(r.code, 1);
    assert.match(r.stdout ?? "", /failed its proof: pair gpu-0\+gpu-1 busbw 12\.1 GB\/s under 80\.0; left drained, not replaced again/);
    assert.ok(!ssh.some((l) => l.includes("RESUME")), "never resumed");
});

test("the AWS CLI refuses (no permission): not replaced, the reason names the call, no pulumi up: exit 1", async () => {
    const denied = 'if [ "$2" = set-instance-health ]; then echo "An error occurred (AccessDenied) when calling the SetInstanceHealth operation: User: arn:aws:sts::123456789012:assumed-role/oncall/x is not authorized to perform: autoscaling:SetInstanceHealth" >&2; exit 254; fi';
    const s = stubs(denied);
    const { deps } = recorded(s.dir, s.env);
    const r = await runRepair({ stack: "prod", yes: true }, { ...deps, run: cliJson(10_000, s.env) });
    assert.equal(r.code, 1);
    assert.match(r.stdout ?? "", /gpu-1: not replaced: aws autoscaling set-instance-health failed \(exit 254\): .*autoscaling:SetInstanceHealth/);
    assert.ok(!s.log().some((l) => l.startsWith("pulumi up")));
});

test("a hung AWS CLI call is stopped at its bound and reported: exit 1 within seconds", async () => {
    const s = stubs('if [ "$2" = describe-auto-scaling-groups ]; then exec sleep 30; fi');
    const { deps } = recorded(s.dir, s.env);
    const t0 = Date.now();
    const r = await runRepair({ stack: "prod", yes: true }, { ...deps, run: cliJson(1_000, s.env) });
    assert.ok(Date.now() - t0 < 8_000, `took ${Date.now() - t0} ms`);
    assert.equal(r.code, 1);
    assert.match(r.stdout ?? "", /gpu-1: not replaced: aws autoscaling describe-auto-scaling-groups: no answer within 1 s, stopped/);
});

test("usage: acting needs --stack; a replacement needs the key its proof uses; --dry-run changes nothing: 2, 2, 0", async () => {
    const s = stubs(AWS_OK);
    fs.mkdirSync(path.join(s.dir, "out"));
    fs.writeFileSync(path.join(s.dir, "out", "state.json"), JSON.stringify(before));
    const env = { ...s.env, RDMAKIT_SSH_PRIVATE_KEY: "" };
    assert.match((await runRepair({ out: "out", yes: true }, { cwd: s.dir, env })).stderr ?? "", /acting needs --stack NAME/);
    const nokey = await runRepair({ stack: "prod", yes: true }, { cwd: s.dir, env });
    assert.equal(nokey.code, 2);
    assert.match(nokey.stderr ?? "", /give --ssh-key FILE or set RDMAKIT_SSH_PRIVATE_KEY; nothing was changed/);
    assert.equal((await runRepair({ stack: "prod", waitMinutes: "0" }, { cwd: s.dir, env })).code, 2);
    const dry = await runRepair({ out: "out", dryRun: true }, { cwd: s.dir, env });
    assert.equal(dry.code, 0);
    assert.ok(!s.log().some((l) => l.startsWith("aws") || l.startsWith("pulumi up")));
});

test("Ctrl-C while a cloud call runs: the call is stopped, no later step starts, exit 130", async () => {
    const s = stubs('if [ "$2" = describe-auto-scaling-groups ]; then exec sleep 30; fi');
    const { deps } = recorded(s.dir, s.env);
    const t0 = Date.now();
    const pending = runRepair({ stack: "prod", yes: true }, { ...deps, run: cliJson(60_000, s.env) });
    // once the hanging call runs: the handlers, called as a real SIGINT calls them (with its name), without
    // signalling the test runner
    const poke = setInterval(() => {
        if (s.log().some((l) => l.includes("describe-auto-scaling-groups"))) { clearInterval(poke); process.emit("SIGINT", "SIGINT"); }
    }, 50);
    const r = await pending;
    assert.ok(Date.now() - t0 < 10_000, `took ${Date.now() - t0} ms`);
    assert.equal(r.code, 130, `${r.stdout}${r.stderr}`);
    assert.match(r.stdout ?? "", /gpu-1: not replaced: aws autoscaling describe-auto-scaling-groups: stopped by SIGINT/);
    assert.match(r.stderr ?? "", /stopped by SIGINT after the step under way/);
    assert.ok(!s.log().some((l) => l.startsWith("pulumi up")));
    assert.equal(process.listenerCount("SIGINT"), 0, "the handlers are gone after the run");
});
