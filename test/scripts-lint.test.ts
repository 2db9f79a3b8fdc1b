// The scripts rdmakit ships (components/scripts/): every shell script passes shellcheck, every Python program compiles
// and passes pyflakes (the switch scripts in roce/ and the controller's ssh for Ansible in ssh/), and each switch script
// is a file some push runs and checks by digest, so a change to a file changes the push's inputs (the push runs again)
// and a copy that differs is refused (the ssh wrapper's own tests: test/capped-ssh.test.ts). Bound: one shellcheck and
// two python3 per file, four short pushes against a failing ssh, under 30 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import * as os from "node:os";
import { keepInput } from "../components/kept-input";
import { shippedScripts } from "../components/scripts";
import { PUSH_SCRIPTS, pushCommandFor, pushScriptsDigest } from "../components/roce/push";
import { planQos } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import { spec } from "./fixtures/roce/helpers";

const ROOT = path.join(__dirname, "..");
const run = (cmd: string, args: string[]) => spawnSync(cmd, args, { cwd: ROOT, encoding: "utf8", timeout: 60_000 });

/** A python3 that has pyflakes: the first on PATH, else Debian's (apt python3-pyflakes installs it for /usr/bin/python3). */
function pyflakesPython(): string | undefined {
    return ["python3", "/usr/bin/python3"].find((py) => run(py, ["-m", "pyflakes", "--version"]).status === 0);
}

test("every shipped script is linted: shellcheck, python3 compile + pyflakes", () => {
    const files = shippedScripts();
    assert.ok(files.some((f) => f.endsWith(".sh")) && files.some((f) => f.endsWith(".py")), files.join(", "));
    const py = pyflakesPython();
    assert.ok(py, "pyflakes is not installed (apt-get install python3-pyflakes, as .ci/run does)");
    for (const f of files) {
        if (f.endsWith(".sh")) {
            const r = run("shellcheck", ["-s", "bash", f]);
            assert.equal(r.status, 0, `${f}: shellcheck\n${r.stdout}${r.stderr}`);
        } else {
            // compile() rather than py_compile: nothing written beside the file
            const c = run("python3", ["-c", "import sys; compile(open(sys.argv[1]).read(), sys.argv[1], 'exec')", f]);
            assert.equal(c.status, 0, `${f}: does not compile\n${c.stderr}`);
            const l = run(py!, ["-m", "pyflakes", f]);
            assert.equal(l.status, 0, `${f}: pyflakes\n${l.stdout}${l.stderr}`);
        }
    }
});

test("a push runs the shipped files it was planned with: their digest is in its command, and a changed file is refused", () => {
    const plan = planQos(spec());
    // every shipped script is one a push runs (and checks), and every file a push runs is shipped
    const used = new Set(Object.values(PUSH_SCRIPTS).flat());
    for (const f of shippedScripts().filter((x) => x.startsWith("components/scripts/roce/"))) assert.ok(used.has(path.basename(f)), `${f} is shipped but no push runs it`);
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-scripts-"));
    const copy = path.join(tmp, "roce");
    fs.cpSync(path.join(ROOT, "components", "scripts", "roce"), copy, { recursive: true });
    const bin = path.join(tmp, "bin");
    fs.mkdirSync(bin);
    // an ssh that is never reached in a refused push, and fails when it is
    fs.writeFileSync(path.join(bin, "ssh"), `#!/bin/sh\necho reached >> ${tmp}/ssh-calls\nexit 255\n`, { mode: 0o755 });
    const runPush = (os: string) => {
        const r = renderSwitchConfigs(plan).find((x) => x.os === os)!;
        const config = keepInput(tmp, r.switch, "txt", r.text, true);
        const cmd = pushCommandFor(r, plan.switches.find((s) => s.name === r.switch)!, plan.mode === "lossless", { config, scriptsDir: copy });
        assert.ok(cmd.create.includes(`--scripts-sha256 ${pushScriptsDigest(r.os)}`), cmd.create);
        fs.rmSync(path.join(tmp, "ssh-calls"), { force: true });
        const p = spawnSync("bash", ["-c", cmd.create], { encoding: "utf8", timeout: 20_000, env: { PATH: `${bin}:${process.env.PATH}`, HOME: tmp } });
        return { status: p.status, stderr: p.stderr, reached: fs.existsSync(path.join(tmp, "ssh-calls")) };
    };
    for (const osName of ["nvue", "sonic", "eos"]) {
        // the files as shipped: the digest push.sh computes is the planned one, so it goes on to the switch
        const ok = runPush(osName);
        assert.ok(ok.reached && /ssh exit 255|ssh to the switch/.test(ok.stderr), `${osName}: ${ok.stderr}`);
        assert.doesNotMatch(ok.stderr, /not the planned ones/);
    }
    // one line changed in one file a push sends to the switch: that push stops before any ssh
    fs.appendFileSync(path.join(copy, "nvue_verify.py"), "# edited\n");
    const bad = runPush("nvue");
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /leaf-nvue: the push scripts in .* are not the planned ones/);
    assert.ok(!bad.reached, "no ssh was started");
    // the package ships the folder
    const files = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { files: string[] }).files;
    assert.ok(files.includes("components/scripts/"), "package.json files lists components/scripts/");
    fs.rmSync(tmp, { recursive: true, force: true });
});
