// The scripts rdmakit ships to run on switches (components/scripts/): every shell script passes shellcheck, every
// Python program compiles and passes pyflakes, and each is the very text the pushes run, so a change to a file
// changes the push's inputs (the push runs again). Bound: one shellcheck and two python3 per file, under 20 s.
import { test } from "node:test";
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as path from "node:path";
import { shippedScripts, roceScript } from "../components/scripts";
import { pushCommandFor } from "../components/roce/push";
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

test("the pushes run the shipped files' text, so a changed file is a changed push", () => {
    const plan = planQos(spec());
    const byOs = Object.fromEntries(renderSwitchConfigs(plan).map((r) => [r.os, pushCommandFor(r, plan.switches.find((s) => s.name === r.switch)!, plan.mode === "lossless")]));
    // the files reach the switch inside (nested) single quotes, which leave a line without a quote as it is: every such
    // line of each file is in its push
    const uses: Record<string, string[]> = { nvue: ["nvue_verify.py", "nvue_autosave.py", "nvue_owned_paths.py"], sonic: ["sonic_patch.py", "sonic_deadman.sh"] };
    for (const [os, names] of Object.entries(uses)) {
        for (const f of names) {
            const lines = roceScript(f).split("\n").filter((l) => l.trim().length > 20 && !l.includes("'"));
            assert.ok(lines.length >= 3, f);
            for (const l of lines) assert.ok(byOs[os].create.includes(l), `${os} push lacks ${f}: ${l}`);
        }
    }
    // the package ships the folder
    const files = (JSON.parse(fs.readFileSync(path.join(ROOT, "package.json"), "utf8")) as { files: string[] }).files;
    assert.ok(files.includes("components/scripts/"), "package.json files lists components/scripts/");
});
