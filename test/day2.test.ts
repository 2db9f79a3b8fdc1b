// Day 2 without a cloud: the operating state (no secret, bounded per node, refused when malformed), the repair
// decision, `rdmakit ssh`'s hops and its temporary known_hosts, `rdmakit status`. Bound: ~5 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { cleanText, MAX_FINDINGS, MAX_STATE_TEXT, type OperatingState, type StateInputs, operatingState, parseOperatingState, StateError } from "../components/day2/state";
import { decideRepairs, formatDecision, type Classify } from "../components/day2/repair";
import { runSsh, sshArgs, stackKnownHosts } from "../components/day2/ssh";
import { readState } from "../components/day2/read";
import { formatStatus } from "../components/day2/status";
import { ed25519HostKey } from "../components/provision/knownhosts";
import { TS_NODE_ARGS } from "./fixtures/ts-node-args";

const nodeKey = ed25519HostKey("rdmakit-node", Buffer.alloc(32, 7));
const bastionKey = ed25519HostKey("rdmakit-bastion", Buffer.alloc(32, 9));

function inputs(over: Partial<StateInputs> = {}): StateInputs {
    return {
        stack: "prod", fabric: "aws-efa", sshUser: "ubuntu", repair: "replace", spec: { name: "p5" },
        nodes: [0, 1, 2, 3].map((i) => ({ name: `gpu-${i}`, address: `10.0.0.${10 + i}`, instanceId: `i-0${i}` })),
        group: { cloud: "aws", region: "us-east-2", autoScalingGroup: "p5-nodes" },
        entry: { kind: "bastion", address: "198.51.100.7", user: "ubuntu", hostKey: bastionKey.publicKey },
        nodeHostKey: nodeKey.publicKey,
        validation: {
            pass: false, at: "2026-12-05T01:00:00.000Z", busbwGBps: 100, failedNodes: ["gpu-2"], slowNodes: [],
            health: [
                { node: "gpu-0", verdict: "healthy", findings: [] },
                { node: "gpu-1", verdict: "failing", findings: [{ component: "ecc", message: "GPU 3 has 2 retired pages pending", evidence: "Pending Page Blacklist : Yes" }] },
                { node: "gpu-2", verdict: "healthy", findings: [] },
                { node: "gpu-3", verdict: "failing", findings: [{ component: "clocks", message: "GPU 0 clocks are held down", evidence: "HW Power Brake Slowdown : Active" }] },
            ],
        },
        ...over,
    };
}
/** The health issue's classification stands in here as: ecc, xid, gpu persistent; clocks transient. */
const classify: Classify = (f) => (["ecc", "xid", "gpu"].includes(f.component) ? "persistent" : f.component === "clocks" ? "transient" : "unknown");

test("the state holds nothing secret: a key in a node's line is hidden, host keys are public lines without comments", () => {
    const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n-----END OPENSSH PRIVATE KEY-----";
    const i = inputs();
    i.validation!.health![1].findings[0].evidence = `dmesg says ${pem}`;
    const s = operatingState(i);
    const text = JSON.stringify(s);
    assert.doesNotMatch(text, /PRIVATE KEY|b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ/);
    assert.match(s.nodes[1].health!.findings[0].evidence!, /redacted/);
    assert.equal(s.nodeHostKey, nodeKey.publicKey.split(" ").slice(0, 2).join(" "));
    assert.ok(!text.includes(nodeKey.privateKey.split("\n")[2]));
    assert.throws(() => operatingState(inputs({ nodeHostKey: nodeKey.privateKey })), /not an SSH public key line/);
});

test("the state is small per node: at most 4 findings of 160 characters, under 2 KB a node at 1,000 nodes", () => {
    const long = "x".repeat(5000) + "\u001b[31m";
    const nodes = Array.from({ length: 1000 }, (_, k) => ({ name: `gpu-${k}`, address: `10.1.${k >> 8}.${k & 255}`, instanceId: `i-0123456789abcdef${k}` }));
    const s = operatingState(inputs({
        nodes, excluded: [], softwareFailed: nodes.map((n) => ({ name: n.name, task: long })),
        validation: { pass: false, health: nodes.map((n) => ({ node: n.name, verdict: "failing" as const, findings: Array(9).fill({ component: "xid", message: long, evidence: long }) })) },
        scheduler: { type: "slurm", drained: nodes.map((n) => ({ node: n.name, reason: long })) },
    }));
    assert.equal(s.nodes[0].health!.findings.length, MAX_FINDINGS);
    assert.ok(!JSON.stringify(s).includes("\u001b"), "control characters dropped");
    const perNode = Buffer.byteLength(JSON.stringify(s.nodes)) / 1000;
    assert.ok(perNode < 2048, `${perNode} bytes a node`);
});

test("a malformed or newer state is refused, naming the field", () => {
    const good = operatingState(inputs());
    assert.throws(() => parseOperatingState({ ...good, version: 2 }, "stack prod"), /version is 2; this rdmakit reads version 1/);
    assert.throws(() => parseOperatingState(undefined, "stack prod"), /no rdmakitState output .* run pulumi up once/);
    const bad = structuredClone(good) as OperatingState;
    bad.nodes[2].address = "10.0.0.1 -oProxyCommand=sh";
    assert.throws(() => parseOperatingState(bad, "stack prod"), (e: Error) => e instanceof StateError && /nodes\[2\]\.address/.test(e.message));
    assert.equal(parseOperatingState(JSON.parse(JSON.stringify(good)), "x").nodes.length, 4);
});

test("a state exported as JSON text (a Python program's RdmaCluster.operating_state) reads as the object; other text is refused by name", () => {
    const good = operatingState(inputs());
    assert.deepEqual(parseOperatingState(JSON.stringify(good), "stack prod"), parseOperatingState(good, "stack prod"));
    assert.throws(() => parseOperatingState("{\"version\": 1, ", "stack prod"), (e: Error) => e instanceof StateError && /stack prod: rdmakitState is text that is not JSON/.test(e.message));
    assert.throws(() => parseOperatingState("x".repeat(MAX_STATE_TEXT + 1), "stack prod"), new RegExp(`rdmakitState is \\d+ characters of text, over the ${MAX_STATE_TEXT}`));
    // the text's content is checked as the object's is
    const bad = structuredClone(good) as OperatingState;
    bad.nodes[1].name = "gpu 1; rm -rf /";
    assert.throws(() => parseOperatingState(JSON.stringify(bad), "stack prod"), /nodes\[1\]\.name/);
    assert.throws(() => parseOperatingState(JSON.stringify("just a string"), "stack prod"), /no rdmakitState output/);
});

test("repair: a persistent finding is replaced, a transient one is not, nccl-tests alone is drained, cap and history hold", () => {
    const slurm = { type: "slurm" as const, drained: [] };
    const s = operatingState(inputs({ scheduler: slurm }));
    const d = decideRepairs(s, { policy: "replace", cap: 1, classify, history: [] });
    assert.deepEqual(d.actions.map((a) => [a.kind, a.node]), [["replace", "gpu-1"], ["drain", "gpu-2"], ["drain", "gpu-3"]]);
    assert.deepEqual(d.actions[0], { kind: "replace", node: "gpu-1", instanceId: "i-01", drainFirst: true, reason: "health failing", evidence: ["ecc: GPU 3 has 2 retired pages pending [Pending Page Blacklist : Yes]"] });
    // transient without a scheduler: reported, never replaced
    const noSched = decideRepairs(operatingState(inputs()), { policy: "replace", cap: 5, classify, history: [] });
    const gpu3 = noSched.actions.find((a) => a.node === "gpu-3")!;
    assert.equal(gpu3.kind, "report");
    assert.match((gpu3 as { why: string }).why, /transient finding/);
    // a node replaced before that fails again is reported, not replaced again
    const again = decideRepairs(s, { policy: "replace", cap: 5, classify, history: [{ node: "gpu-1", at: "2026-12-04T10:00:00Z", fromInstance: "i-09" }] });
    assert.deepEqual(again.actions[0], { kind: "report", node: "gpu-1", reason: "health failing", evidence: again.actions[0].evidence, why: "failed again after its replacement at 2026-12-04T10:00:00Z: not replaced in a loop" });
    // the cap: two persistent failures, one replacement, the other drained as over the cap
    const two = inputs({ scheduler: slurm });
    two.validation!.health![0] = { node: "gpu-0", verdict: "failing", findings: [{ component: "xid", message: "Xid 79" }] };
    const capped = decideRepairs(operatingState(two), { policy: "replace", cap: 1, classify, history: [] });
    assert.deepEqual(capped.actions.filter((a) => a.kind === "replace").map((a) => a.node), ["gpu-0"]);
    assert.deepEqual(capped.actions.find((a) => a.node === "gpu-1")!.kind, "drain");
    assert.match(formatDecision(capped, operatingState(two)), /mark i-00 Unhealthy in Auto Scaling group p5-nodes \(autoscaling:SetInstanceHealth\)/);
    // an unknown finding (no classification) is never replaced
    const unknown = decideRepairs(s, { policy: "replace", cap: 5, classify: () => "unknown", history: [] });
    assert.ok(unknown.actions.every((a) => a.kind !== "replace"));
});

test("repair on bare metal: drained with the reason and evidence where a scheduler can, reported where none can", () => {
    const bare = inputs({ fabric: "roce", group: undefined, entry: undefined, nodeHostKey: undefined, scheduler: { type: "slurm", drained: [] } });
    const d = decideRepairs(operatingState(bare), { policy: "replace", cap: 5, classify, history: [] });
    assert.deepEqual(d.actions[0], { kind: "drain", node: "gpu-1", reason: "health failing", evidence: ["ecc: GPU 3 has 2 retired pages pending [Pending Page Blacklist : Yes]"] });
    const none = decideRepairs(operatingState({ ...bare, scheduler: undefined }), { policy: "drain", cap: 5, classify, history: [] });
    assert.match((none.actions[0] as { why: string }).why, /no scheduler to drain it in/);
    assert.equal(decideRepairs(operatingState(bare), { policy: "report", cap: 5, classify, history: [] }).actions.every((a) => a.kind === "report"), true);
});

test("rdmakit ssh: the bastion hop and the node checked against the stack's keys, no agent forwarding", () => {
    const s = operatingState(inputs());
    const kh = stackKnownHosts(s)!;
    assert.equal(kh.split("\n").filter(Boolean).length, 5);
    assert.match(kh, /^198\.51\.100\.7 ssh-ed25519 /m);
    const args = sshArgs(s, "gpu-2", "/tmp/kh", ["nvidia-smi", "-L"]);
    assert.deepEqual(args.slice(0, 10), ["-o", "StrictHostKeyChecking=yes", "-o", "UserKnownHostsFile=/tmp/kh", "-o", "GlobalKnownHostsFile=/dev/null", "-o", "HostKeyAlgorithms=ssh-ed25519", "-o", "ForwardAgent=no"]);
    assert.equal(args[11], "ProxyCommand=ssh -o StrictHostKeyChecking=yes -o UserKnownHostsFile=/tmp/kh -o GlobalKnownHostsFile=/dev/null -o HostKeyAlgorithms=ssh-ed25519 -o ForwardAgent=no -W %h:%p ubuntu@198.51.100.7");
    assert.deepEqual(args.slice(12), ["ubuntu@10.0.0.12", "--", "nvidia-smi", "-L"]);
    const ssm = operatingState(inputs({ entry: { kind: "ssm", region: "us-east-2" } }));
    assert.deepEqual(sshArgs(ssm, "gpu-0", "/tmp/kh", []).slice(-2),
        ["ProxyCommand=aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters portNumber=%p --region us-east-2", "ubuntu@i-00"]);
    assert.match(stackKnownHosts(ssm)!, /^i-00 ssh-ed25519 /m);
    assert.throws(() => sshArgs(s, "gpu-9", "/tmp/kh", []), /no node "gpu-9" in the stack; it has gpu-0, gpu-1, gpu-2, gpu-3/);
});

test("rdmakit ssh runs ssh with a temporary known_hosts and removes it after", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-ssh-"));
    const log = path.join(dir, "log");
    fs.writeFileSync(path.join(dir, "ssh"), `#!/bin/sh\nfor a in "$@"; do printf '%s\\n' "$a"; done > "${log}"\nkf=$(sed -n 's/^UserKnownHostsFile=//p' "${log}" | head -1)\ncat "$kf" > "${log}.kh"\nexit 3\n`, { mode: 0o755 });
    const code = await runSsh(operatingState(inputs()), "gpu-1", ["true"], { ...process.env, PATH: `${dir}:${process.env.PATH}` });
    assert.equal(code, 3, "ssh's exit status");
    const args = fs.readFileSync(log, "utf8").split("\n");
    const kf = args.find((a) => a.startsWith("UserKnownHostsFile="))!.slice("UserKnownHostsFile=".length);
    assert.ok(!fs.existsSync(kf), "the known_hosts is gone");
    assert.match(fs.readFileSync(`${log}.kh`, "utf8"), /^10\.0\.0\.11 ssh-ed25519 /m);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("readState: through `pulumi stack output --json --stack`, a failing CLI named; --out reads state.json", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-read-"));
    const s = operatingState(inputs());
    fs.writeFileSync(path.join(dir, "outputs.json"), JSON.stringify({ rdmakitState: s, fabric: "aws-efa" }));
    fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\necho "$@" > "${dir}/args"\n[ "$5" = prod ] || { echo "error: no stack named '$5' found" >&2; exit 255; }\ncat "${dir}/outputs.json"\n`, { mode: 0o755 });
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
    const got = readState({ stack: "prod" }, dir, env);
    assert.deepEqual(got.state, s);
    assert.equal(fs.readFileSync(path.join(dir, "args"), "utf8").trim(), "stack output --json --stack prod --non-interactive");
    assert.throws(() => readState({ stack: "dev" }, dir, env), /pulumi stack output --stack dev failed \(exit 255\): error: no stack named 'dev' found\. Log in/);
    assert.throws(() => readState({ stack: "a;b" }, dir, env), /not a stack name/);
    fs.mkdirSync(path.join(dir, "out"));
    fs.writeFileSync(path.join(dir, "out", "state.json"), JSON.stringify(s));
    assert.equal(readState({ out: "out" }, dir, env).from, path.join(dir, "out", "state.json"));
    assert.throws(() => readState({ out: "nowhere" }, dir, env), /--out: cannot read .*nowhere\/state\.json \(ENOENT\)/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("rdmakit status: nodes, verdicts and their age, drained nodes, what a repair would do", () => {
    const s = operatingState(inputs({ scheduler: { type: "slurm", drained: [{ node: "gpu-2", reason: "rdmakit: nccl-tests FAIL" }] } }));
    const d = decideRepairs(s, { policy: "replace", cap: 1, classify, history: [] });
    const text = formatStatus(s, "stack prod", d, new Date("2026-12-05T04:30:00Z"));
    assert.match(text, /^last validation: FAIL, 3h 30m ago, all-node busbw 100 GB\/s$/m);
    assert.match(text, /^scheduler: slurm, 1 drained$/m);
    assert.match(text, /^gpu-1\s+10\.0\.0\.11\s+i-01\s+FAILING\s+ok$/m);
    assert.match(text, /^gpu-2\s+10\.0\.0\.12\s+i-02\s+healthy\s+FAIL\s+drained: rdmakit: nccl-tests FAIL$/m);
    assert.match(text, /^ {2}replace gpu-1: health failing; drain, mark i-01 Unhealthy/m);
    assert.match(text, /^ {2}report {2}gpu-2: its own nccl-tests run failed/m);
});

test("rdmakit status --out: exit 1 when a node fails on evidence, 2 with no state", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-cli-"));
    fs.writeFileSync(path.join(dir, "state.json"), JSON.stringify(operatingState(inputs())));
    const cli = (...a: string[]) => spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(__dirname, "..", "bin", "rdmakit.ts"), ...a], { encoding: "utf8", cwd: path.join(__dirname, "..") });
    const r = cli("status", "--out", dir);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stdout, /^stack prod \(aws-efa\)/);
    const dry = cli("repair", "--out", dir, "--dry-run");
    assert.equal(dry.status, 0, dry.stderr);
    assert.match(dry.stdout, /^repair \(replace, at most 1 replacement\(s\) per run\):/);
    const none = cli("status", "--out", path.join(dir, "nowhere"));
    assert.equal(none.status, 2);
    assert.match(none.stderr, /rdmakit status: --out: cannot read/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("rdmakit health --stack: the nodes graded against the spec the stack deployed, with no stack file here", async () => {
    const { runHealth } = await import("../components/health/cli");
    const { parse } = await import("yaml");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-health-"));
    const spec = (parse(fs.readFileSync(path.join(__dirname, "..", "examples", "aws-p5.yaml"), "utf8")) as { config: Record<string, unknown> }).config["rdmakit:cluster"];
    fs.writeFileSync(path.join(dir, "outputs.json"), JSON.stringify({ rdmakitState: operatingState(inputs({ spec })) }));
    fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\ncat "${dir}/outputs.json"\n`, { mode: 0o755 });
    const node = path.join(dir, "captures", "gpu-0");
    fs.mkdirSync(node, { recursive: true });
    fs.copyFileSync(path.join(__dirname, "fixtures", "health", "captures", "nvidia-smi-q.h100-565.57.01.txt"), path.join(node, "nvidia-smi-q.txt"));
    const r = runHealth({ stack: "prod", from: "captures" }, dir, { ...process.env, PATH: `${dir}:${process.env.PATH}` });
    assert.match(r.stdout, /graded against .*p5\.48xlarge/, r.stderr);
    assert.match(runHealth({ stack: "prod", config: "x", from: "captures" }, dir).stderr, /give --config FILE .* or --stack NAME/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("rdmakit fabric check --stack: the deployed spec from the stack; a cloud stack is refused naming the fabric", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-day2-fabric-"));
    fs.writeFileSync(path.join(dir, "outputs.json"), JSON.stringify({ rdmakitState: operatingState(inputs({ spec: { name: "p5", fabric: "aws-efa" } })) }));
    fs.writeFileSync(path.join(dir, "pulumi"), `#!/bin/sh\n[ "$5" = prod ] || { echo "error: no stack named '$5' found" >&2; exit 255; }\ncat "${dir}/outputs.json"\n`, { mode: 0o755 });
    const env = { ...process.env, PATH: `${dir}:${process.env.PATH}` };
    const cli = (...a: string[]) => spawnSync(process.execPath, [...TS_NODE_ARGS, path.join(__dirname, "..", "bin", "rdmakit.ts"), ...a], { encoding: "utf8", cwd: path.join(__dirname, ".."), env });
    const aws = cli("fabric", "check", "--stack", "prod", "--switches-only");
    assert.equal(aws.status, 2, aws.stderr);
    assert.match(aws.stderr, /stack prod: 1 problem\(s\)\n {2}- cluster\.fabric.*roce fabric only/);
    const none = cli("fabric", "check", "--stack", "dev", "--switches-only");
    assert.equal(none.status, 2);
    assert.match(none.stderr, /pulumi stack output --stack dev failed \(exit 255\)/);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("the repair follows the health gate's persistence per finding, carried through the state; none is unknown, never replaced", async () => {
    const { classifyFinding } = await import("../components/day2/persistence");
    const i = inputs({ scheduler: { type: "slurm", drained: [] } });
    i.validation!.health![1].findings[0] = { ...i.validation!.health![1].findings[0], persistence: "persistent" } as never;
    i.validation!.health![3].findings[0] = { ...i.validation!.health![3].findings[0], persistence: "transient" } as never;
    const s = operatingState(i);
    assert.equal(s.nodes[1].health!.findings[0].persistence, "persistent");
    const d = decideRepairs(s, { policy: "replace", cap: 5, classify: classifyFinding, history: [] });
    assert.deepEqual(d.actions.map((a) => [a.node, a.kind]), [["gpu-1", "replace"], ["gpu-2", "drain"], ["gpu-3", "drain"]]);
    delete s.nodes[1].health!.findings[0].persistence;
    assert.equal(decideRepairs(s, { policy: "replace", cap: 5, classify: classifyFinding, history: [] }).actions[0].kind, "drain");
});

test("the Slurm head node in the state: rdmakit ssh reaches it as its own user with its own pinned key, status shows it, no repair takes it", () => {
    const headKey = ed25519HostKey("rdmakit-head", Buffer.alloc(32, 5));
    const head = { name: "p5-head", address: "10.0.0.5", instanceId: "i-0head", user: "ubuntu", hostKey: `${headKey.publicKey} a comment` };
    const slurm = { type: "slurm" as const, drained: [] };
    const s = operatingState(inputs({ scheduler: slurm, head }));
    // stored as the public key line alone, and the state reads back
    assert.deepEqual(s.head, { ...head, hostKey: headKey.publicKey.split(" ").slice(0, 2).join(" ") });
    assert.deepEqual(parseOperatingState(JSON.parse(JSON.stringify(s)), "x").head, s.head);
    // through the bastion, checked against the head node's own key (the nodes keep the group's)
    const kh = stackKnownHosts(s, "p5-head")!;
    assert.match(kh, new RegExp(`^10\\.0\\.0\\.5 ${headKey.publicKey.split(" ").slice(0, 2).join(" ").replace(/[+/]/g, "\\$&")}$`, "m"));
    assert.match(kh, /^10\.0\.0\.12 ssh-ed25519 /m);
    const args = sshArgs(s, "p5-head", "/tmp/kh", ["sinfo"]);
    assert.match(args[11], /^ProxyCommand=ssh .* -W %h:%p ubuntu@198\.51\.100\.7$/);
    assert.deepEqual(args.slice(12), ["ubuntu@10.0.0.5", "--", "sinfo"]);
    // through Session Manager: its instance id, in the known_hosts too
    const ssm = operatingState(inputs({ scheduler: slurm, head, entry: { kind: "ssm", region: "us-east-2" } }));
    assert.equal(sshArgs(ssm, "p5-head", "/tmp/kh", []).at(-1), "ubuntu@i-0head");
    assert.match(stackKnownHosts(ssm)!, /^i-0head ssh-ed25519 /m);
    // bare metal: no node key in the stack, but the controller's key from the spec pins a session to the head node
    const bare = operatingState(inputs({ fabric: "roce", group: undefined, entry: undefined, nodeHostKey: undefined, scheduler: slurm,
        head: { name: "head01", address: "10.20.0.5", user: "admin", hostKey: headKey.publicKey } }));
    assert.equal(stackKnownHosts(bare, "gpu-0"), undefined);
    assert.match(stackKnownHosts(bare, "head01")!, /^10\.20\.0\.5 ssh-ed25519 /);
    assert.equal(stackKnownHosts(bare, "head01")!.trim().split("\n").length, 1);
    assert.deepEqual(sshArgs(bare, "head01", "/tmp/kh", []).at(-1), "admin@10.20.0.5");
    assert.throws(() => sshArgs(bare, "head02", "/tmp/kh", []), /no node "head02" in the stack; it has gpu-0, gpu-1, gpu-2, gpu-3 and the Slurm head node head01/);
    // status names it; it is not a node row, so no health, nccl-tests or repair decision takes it
    const d = decideRepairs(s, { policy: "replace", cap: 5, classify, history: [] });
    assert.ok(d.actions.every((a) => a.node !== "p5-head"));
    const text = formatStatus(s, "stack prod", d, new Date("2026-12-05T04:30:00Z"));
    assert.match(text, /^scheduler: slurm, 0 drained; head node p5-head at 10\.0\.0\.5 \(i-0head\), ubuntu, host key pinned \(not a GPU node: never validated or repaired; rdmakit ssh --stack prod p5-head\)$/m);
    assert.doesNotMatch(text, /^p5-head\s/m);
    // a head entry that is not one ssh word, or that takes a node's name, is refused
    const bad = structuredClone(s) as OperatingState;
    bad.head!.address = "10.0.0.5 -oProxyCommand=sh";
    assert.throws(() => parseOperatingState(bad, "stack prod"), /rdmakitState\.head is not a name, address and user/);
    const clash = structuredClone(s) as OperatingState;
    clash.head!.name = "gpu-1";
    assert.throws(() => parseOperatingState(clash, "stack prod"), /rdmakitState\.head\.name "gpu-1" is also a node's name/);
    assert.throws(() => operatingState(inputs({ head: { ...head, hostKey: headKey.privateKey } })), /not an SSH public key line/);
});

// Found by the trust audit (w10): the state read back (state.json, or a stack output changed after pulumi up wrote it)
// was printed as it was, and `rdmakit status` spread one argument per node into push/Math.max.
test("a state read back is cleaned again: a node's 5 MB finding with terminal escapes prints clipped and plain", () => {
    const esc = "\u001b]52;c;ZXZpbA==\u0007\u001b[2J";
    const s = JSON.parse(JSON.stringify(operatingState(inputs())));
    s.stack = `prod${esc}`;
    s.nodes[1].health.findings = Array(50).fill({ component: `ecc${esc}`, message: "m".repeat(5_000_000) + esc, evidence: `e${esc}` });
    s.nodes[2].drained = { reason: "r".repeat(5_000_000) + esc };
    s.nodes[3].softwareFailed = esc;
    const st = parseOperatingState(s, "state.json");
    const text = formatStatus(st, "state.json", decideRepairs(st, { policy: "report", cap: 1, classify, history: [] }), new Date("2026-12-05T09:00:00.000Z"));
    assert.ok(!text.includes("\u001b") && !text.includes("\u0007"), "a control character printed");
    assert.equal(st.nodes[1].health!.findings.length, MAX_FINDINGS);
    assert.ok(text.length < 10_000, `${text.length} characters`); // was 15 MB
    assert.throws(() => parseOperatingState({ ...s, nodes: [{ ...s.nodes[0], health: { verdict: "fine", findings: [] } }] }, "state.json"),
        /state.json: rdmakitState node gpu-0: health is not a verdict \(healthy, failing, incomplete, unreadable\) with a list of findings/);
});

test("rdmakit status prints 200k nodes (was: Maximum call stack size exceeded)", () => {
    const s = operatingState(inputs({ nodes: Array.from({ length: 200_000 }, (_, k) => ({ name: `gpu-${k}`, address: `10.${k >> 16}.${(k >> 8) & 255}.${k & 255}` })), validation: undefined }));
    const text = formatStatus(s, "stack prod", decideRepairs(s, { policy: "report", cap: 1, classify, history: [] }), new Date("2026-12-05T09:00:00.000Z"));
    assert.match(text, /^gpu-199999 +10\.3\.13\.63 /m);
});

// Found by the w11 audit: cleanText ran its control-character and key-redaction passes over the whole of every text a
// node's findings carried before clipping to 160 characters: 2,000 nodes' findings of 100 KB texts took 35 s of CPU.
test("day-2 state: a node's long texts cost what is kept of them, not what was sent; key material at their head is still hidden", () => {
    const long = "\u001b[2J" + "E ".repeat(500_000);
    const i = inputs({ nodes: Array.from({ length: 500 }, (_, k) => ({ name: `gpu-${k}`, address: `10.0.${k >> 8}.${k & 255}`, instanceId: `i-0${k}` })) });
    i.validation!.health = i.nodes.map((n) => ({ node: n.name, verdict: "failing" as const, findings: Array.from({ length: 4 }, () => ({ component: "xid", message: long, evidence: long })) }));
    const t0 = process.cpuUsage();
    const s = operatingState(i);
    const c = process.cpuUsage(t0);
    assert.ok((c.user + c.system) / 1000 < 3000, `${(c.user + c.system) / 1000} ms`);
    // the escape's ESC blanked (and trimmed), its printable rest kept; clipped to MAX_TEXT (160) with the ellipsis
    assert.equal(s.nodes[0].health!.findings[0].message, `[2J${"E ".repeat(78)}…`);
    const pem = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtzc2gtZW\n";
    assert.equal(cleanText(`dmesg: ${pem}${"A".repeat(1_000_000)}`), "dmesg: [redacted: looks like key material]");
});
