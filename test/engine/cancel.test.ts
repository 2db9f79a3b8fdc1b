// A `pulumi up` of the project's program interrupted by the user (SIGINT, then SIGTERM, as Ctrl-C twice and a kill
// would), through the real CLI and Node.js language host: afterwards no process holds the SSH private key in its
// environment or command line, no file outside the stack's encrypted config holds it, and the next `pulumi up`
// completes the stack. The interruption lands while the program runs (the language host hands the program its
// config, decrypted secrets included, in PULUMI_CONFIG); the software step cannot be reached here, since the
// command provider cannot be built (test/engine/pins.sh). RDMAKIT_SKIP_ENGINE_TESTS=1 skips it.
import { test } from "node:test";
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { Engine, engineBins, keyNeedles, SKIP } from "./harness";

/** Processes whose environment or command line contains any of `needles`: "<pid> <comm> (environ|cmdline)". */
function processesHolding(needles: string[]): string[] {
    const found: string[] = [];
    for (const pid of fs.readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
        for (const what of ["environ", "cmdline"]) {
            let text: string;
            try { text = fs.readFileSync(`/proc/${pid}/${what}`, "latin1"); } catch { continue; }
            if (needles.some((n) => text.includes(n))) {
                let comm = "?";
                try { comm = fs.readFileSync(`/proc/${pid}/comm`, "utf8").trim(); } catch { /* gone */ }
                found.push(`${pid} ${comm} (${what})`);
            }
        }
    }
    return found;
}

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

/** Whether process `pid` is `ancestor` or runs under it (parent links from /proc/<pid>/stat). */
function descendsFrom(pid: number, ancestor: number): boolean {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
        if (p === ancestor) return true;
        try {
            const stat = fs.readFileSync(`/proc/${p}/stat`, "utf8");
            p = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
        } catch { return false; }
    }
    return false;
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

    const up = eng.start(stack, ["up", "--yes", "--skip-preview"]);
    let output = "";
    up.stdout!.on("data", (d) => { output += d; });
    up.stderr!.on("data", (d) => { output += d; });
    const exited = new Promise<number | null>((r) => up.on("close", (code) => r(code)));

    // Interrupt while the program runs: once the program process holds its config (the scan sees the key there,
    // which also shows that the scan finds a key where there is one).
    const seen = await waitFor(() => processesHolding(body).length > 0, 60_000);
    assert.ok(seen, `the program never started (or the scan cannot see its environment):\n${output}`);
    const holders = processesHolding(body);
    // the holder is this run's program (a child of the language host under this pulumi), no other process
    assert.ok(holders.every((h) => descendsFrom(Number(h.split(" ")[0]), up.pid!)), `not this run's processes: ${holders.join(", ")}`);
    up.kill("SIGINT");
    await new Promise((r) => setTimeout(r, 1500));
    const termed = up.exitCode === null;
    if (termed) up.kill("SIGTERM");
    let timer: NodeJS.Timeout | undefined;
    const code = await Promise.race([exited, new Promise<"hung">((r) => { timer = setTimeout(() => r("hung"), 60_000); })]);
    clearTimeout(timer);
    assert.notEqual(code, "hung", `pulumi up did not stop after SIGINT and SIGTERM:\n${output}`);
    assert.notEqual(code, 0, `an interrupted pulumi up must not report success:\n${output}`);
    t.diagnostic(`held the key during the run: ${holders.join(", ")}; pulumi up exited ${code} after SIGINT${termed ? " and SIGTERM" : " alone"}`);
    t.diagnostic(output.trim().split("\n").slice(-6).join(" | "));

    await t.test("no process keeps the key in its environment or command line", async () => {
        const gone = await waitFor(() => processesHolding(body).length === 0, 15_000);
        assert.ok(gone, `still holding the key after the interrupt: ${processesHolding(body).join(", ")} (held it during the run: ${holders.join(", ")})`);
    });

    await t.test("no file written since the run began holds the key", () => {
        const skip = new Set([keyFile]);
        const files = filesHolding(os.tmpdir(), body, started, skip); // the backend and PULUMI_HOME are in there too
        assert.deepEqual(files, []);
    });

    await t.test("the next pulumi up completes the stack", async () => {
        let r = await eng.onStack(stack, ["up", "--yes", "--skip-preview"]);
        if (r.code !== 0 && /currently locked/.test(r.stdout + r.stderr)) {
            // What the CLI tells a user when an interrupted update left its lock.
            const cancel = await eng.pulumi(["cancel", "--yes", "--stack", stack]);
            assert.equal(cancel.code, 0, cancel.stdout + cancel.stderr);
            r = await eng.onStack(stack, ["up", "--yes", "--skip-preview"]);
            t.diagnostic("recovered through pulumi cancel");
        }
        if (r.code !== 0 && /pending operations?/.test(r.stdout + r.stderr)) {
            // What the CLI tells a user after an interrupted update (pending creates are cleared by refresh).
            const refresh = await eng.onStack(stack, ["refresh", "--yes", "--clear-pending-creates", "--skip-preview"]);
            assert.equal(refresh.code, 0, refresh.stdout + refresh.stderr);
            r = await eng.onStack(stack, ["up", "--yes", "--skip-preview"]);
            t.diagnostic("recovered through pulumi refresh --clear-pending-creates");
        }
        assert.equal(r.code, 0, r.stdout + r.stderr);
        const state = JSON.parse(fs.readFileSync(eng.stateFile(stack), "utf8")).checkpoint.latest;
        assert.deepEqual(state.resources.map((s: { type: string }) => s.type), ["pulumi:pulumi:Stack", "rdmakit:index:RdmaCluster", "rdmakit:index:RoceCluster"]);
        assert.deepEqual(state.pending_operations ?? [], []);
        const again = await eng.onStack(stack, ["preview", "--expect-no-changes"]);
        assert.equal(again.code, 0, again.stdout + again.stderr);
    });
});
