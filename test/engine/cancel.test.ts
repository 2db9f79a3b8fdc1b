// A `pulumi up` of the project's program interrupted by the user (SIGINT, then SIGTERM, to the process group, as
// Ctrl-C twice and a kill would), through the real CLI and the Automation API (the program runs inline, in the
// Automation API process, which hands it its config over gRPC): no process holds the SSH private key in its
// environment or command line, during the run or after it, no file outside the stack's encrypted config holds it,
// and the next `pulumi up` completes the stack. The interruption lands while the program runs; the software step
// cannot be reached here, since the command provider cannot be built (test/engine/pins.sh).
// RDMAKIT_SKIP_ENGINE_TESTS=1 skips it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Engine, engineBins, keyNeedles, processesHolding, SKIP } from "./harness";

/** Regular files under `dir` changed since `since` (ms) whose text contains any of `needles`. */
function filesHolding(dir: string, needles: string[], since: number, skip: Set<string>): string[] {
    const out: string[] = [];
    const walk = (d: string, depth: number) => {
        let entries: fs.Dirent[];
        try { entries = fs.readdirSync(d, { withFileTypes: true }); } catch { return; }
        for (const e of entries) {
            const p = path.join(d, e.name);
            if (skip.has(p)) continue;
            if (e.isDirectory() && depth < 6) walk(p, depth + 1);
            else if (e.isFile()) {
                try {
                    const st = fs.statSync(p);
                    if (st.mtimeMs < since || st.size > 4 << 20) continue;
                    const text = fs.readFileSync(p, "latin1");
                    if (needles.some((n) => text.includes(n))) out.push(p);
                } catch { /* vanished or unreadable */ }
            }
        }
    };
    walk(dir, 0);
    return out;
}

const waitFor = async (cond: () => boolean, ms: number) => {
    for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 100))) if (cond()) return true;
    return cond();
};

test("an interrupted pulumi up leaves no key behind and the next pulumi up recovers", { skip: SKIP ? "RDMAKIT_SKIP_ENGINE_TESTS=1" : false, timeout: 6 * 60_000 }, async (t) => {
    const eng = new Engine(engineBins());
    t.after(() => eng.remove());
    const started = Date.now();
    const stack = `engine-cancel-${process.pid}`;
    const cluster = {
        name: "roce-cancel", fabric: "roce", provision: false, ssh: { allowedCidrs: ["203.0.113.0/24"] },
        roce: {
            nicModel: "ConnectX-7",
            hosts: [1, 2].map((i) => ({ name: `gpu0${i}`, address: `10.20.0.1${i}`, sshUser: "ubuntu", railNics: ["mlx5_0"], bootstrapNic: "eno1", gpu: { model: "H100", count: 8 } })),
            switches: [{ name: "leaf-sonic", os: "sonic", managementAddress: "10.20.1.1", hostKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u", hostPorts: ["Ethernet0", "Ethernet8"], speedGbps: 400, cableLengthM: 5 }],
        },
    };
    const keyFile = path.join(eng.tmp, "id_ed25519");
    execFileSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-C", "rdmakit-cancel", "-f", keyFile]);
    const body = keyNeedles(fs.readFileSync(keyFile, "utf8"));
    await eng.initStack(stack, cluster);
    await eng.setSecret(stack, "sshPrivateKey", fs.readFileSync(keyFile, "utf8"));

    // The scan finds a key where there is one: a process holding it in its environment is seen.
    const planted = spawn("sleep", ["60"], { env: { ...process.env, PLANTED: body[1] }, stdio: "ignore" });
    try {
        assert.ok(await waitFor(() => processesHolding(body).some((h) => h.startsWith(`${planted.pid} `)), 10_000), "the scan does not see a process environment");
    } finally { planted.kill("SIGKILL"); }

    // The program holds after registering its resources (inline.ts holdMs): a 2-host program finishes in a third of a
    // second, before a signal sent on its first line would arrive.
    const up = eng.startProgram(stack, "up", {}, { holdMs: 60_000 });
    let output = "";
    up.stdout!.on("data", (d) => { output += d; });
    up.stderr!.on("data", (d) => { output += d; });
    const exited = new Promise<number | null>((r) => up.on("close", (code) => r(code)));

    // Interrupt while the program runs: the inline program says when it has registered its resources (inline.ts); by
    // then the CLI has decrypted the stack's config and sent it to the program.
    const running = await waitFor(() => output.includes("rdmakit-inline: program registered"), 90_000);
    assert.ok(running, `the program never started:\n${output}`);
    await new Promise((r) => setTimeout(r, 300));
    const holders = processesHolding(body);
    assert.deepEqual(holders, [], "a process holds the key in its environment or command line while the program runs");
    process.kill(-up.pid!, "SIGINT");
    await new Promise((r) => setTimeout(r, 1500));
    const termed = up.exitCode === null;
    if (termed) process.kill(-up.pid!, "SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<"hung">((r) => { timer = setTimeout(() => r("hung"), 60_000); })]);
    clearTimeout(timer);
    assert.notEqual(code, "hung", `pulumi up did not stop after SIGINT and SIGTERM:\n${output}`);
    assert.notEqual(code, 0, `an interrupted pulumi up must not report success:\n${output}`);
    t.diagnostic(`pulumi up exited ${code} after SIGINT${termed ? " and SIGTERM" : " alone"}`);
    t.diagnostic(output.trim().split("\n").slice(-6).join(" | "));

    await t.test("no process keeps the key in its environment or command line", async () => {
        const gone = await waitFor(() => processesHolding(body).length === 0, 15_000);
        assert.ok(gone, `still holding the key after the interrupt: ${processesHolding(body).join(", ")}`);
    });

    await t.test("no file written since the run began holds the key", () => {
        const skip = new Set([keyFile]);
        const files = filesHolding(os.tmpdir(), body, started, skip); // the backend and PULUMI_HOME are in there too
        assert.deepEqual(files, []);
    });

    await t.test("the next pulumi up completes the stack", async () => {
        let r = await eng.onStack(stack, "up");
        if (r.code !== 0 && /currently locked/.test(r.stdout + r.stderr)) {
            // What the CLI tells a user when an interrupted update left its lock.
            const cancel = await eng.pulumi(["cancel", "--yes", "--stack", stack]);
            assert.equal(cancel.code, 0, cancel.stdout + cancel.stderr);
            r = await eng.onStack(stack, "up");
            t.diagnostic("recovered through pulumi cancel");
        }
        if (r.code !== 0 && /pending operations?/.test(r.stdout + r.stderr)) {
            // What the CLI tells a user after an interrupted update (pending creates are cleared by refresh).
            const refresh = await eng.onStack(stack, "refresh", { clearPendingCreates: true });
            assert.equal(refresh.code, 0, refresh.stdout + refresh.stderr);
            r = await eng.onStack(stack, "up");
            t.diagnostic("recovered through pulumi refresh --clear-pending-creates");
        }
        assert.equal(r.code, 0, r.stdout + r.stderr);
        const state = JSON.parse(fs.readFileSync(eng.stateFile(stack), "utf8")).checkpoint.latest;
        assert.deepEqual(state.resources.map((s: { type: string }) => s.type), ["pulumi:pulumi:Stack", "rdmakit:index:RdmaCluster", "rdmakit:index:RoceCluster"]);
        assert.deepEqual(state.pending_operations ?? [], []);
        const again = await eng.onStack(stack, "preview", { expectNoChanges: true });
        assert.equal(again.code, 0, again.stdout + again.stderr);
    });
});
