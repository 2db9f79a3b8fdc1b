// A push to a switch that accepts the TCP connection and never answers (a hanging loopback listener), run as
// `pulumi up` runs it: its own ssh-agent (RUN_INTERPRETER) fed from a key socket (keysocket.ts), the real ssh. Then
// SIGTERM or SIGINT: the run stops at once, and nothing of the switch key is left on disk (no key file, no agent
// socket, no temporary folder); the key was never in a file, an argument or the run's environment. (issue 25 F3)
import { after, before, describe, it } from "node:test";
import assert from "node:assert/strict";
import { spawn, spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { serveKeyLocally } from "../components/provision/keysocket";
import { keepInput } from "../components/kept-input";
import { SSH_KEY_PRELUDE } from "../components/provision/ansible";
import { pushCommandFor } from "../components/roce/push";
import { planQos } from "../components/roce/qos";
import { renderSwitchConfigs } from "../components/roce/render";
import { spec } from "./fixtures/roce/helpers";

let server: net.Server;
let port = 0;
const sockets: net.Socket[] = [];
const closed = new Set<net.Socket>();
let key = "";

before(async () => {
    // accepts, reads what the client sends, never answers
    server = net.createServer((s) => { sockets.push(s); s.on("error", () => undefined); s.on("data", () => undefined); s.on("close", () => closed.add(s)); });
    await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
    port = (server.address() as net.AddressInfo).port;
    const d = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-keygen-"));
    spawnSync("ssh-keygen", ["-q", "-t", "ed25519", "-N", "", "-f", path.join(d, "k")]);
    key = fs.readFileSync(path.join(d, "k"), "utf8");
    fs.rmSync(d, { recursive: true, force: true });
});
after(() => { for (const s of sockets) s.destroy(); server.close(); });

for (const sig of ["SIGTERM", "SIGINT"] as const) {
    describe(`EOS push to a silent switch, then ${sig}`, () => {
        it("stops within seconds and leaves no key file, agent socket or temporary folder", { timeout: 60_000 }, async () => {
            const s = spec();
            Object.assign(s.switches[2], { managementAddress: "127.0.0.1", sshPort: port });
            const plan = planQos(s);
            const cfg = renderSwitchConfigs(plan).find((r) => r.switch === "leaf-eos")!;
            // as RoceCluster keeps them: the switch's text and, with the key served, the run-key prelude push.sh sources
            const kept = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-kept-"));
            const config = keepInput(kept, "leaf-eos", "eos.cfg", cfg.text, true);
            const keyPrelude = keepInput(kept, "run-key-prelude", "sh", SSH_KEY_PRELUDE.join("\n") + "\n", true);
            const cmd = pushCommandFor(cfg, plan.switches.find((x) => x.name === "leaf-eos")!, true, { config, keyPrelude });
            const tmp = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-sig-"));
            const served = serveKeyLocally(key);
            const before = sockets.length;
            const p = spawn(cmd.interpreter[0], [...cmd.interpreter.slice(1), cmd.create], {
                stdio: ["ignore", "pipe", "pipe"],
                env: { PATH: process.env.PATH, HOME: tmp, TMPDIR: tmp, ...served.env },
            });
            let err = "";
            p.stderr.on("data", (d: Buffer) => { err += d.toString(); });
            try {
                const end = Date.now() + 30_000;
                while (sockets.length === before) {
                    assert.ok(Date.now() < end, `ssh never connected: ${err}`);
                    await new Promise((r) => setTimeout(r, 100));
                }
                // the key was loaded into the run's agent before ssh started; it is in no file of the run
                const files = (dir: string): string[] => fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => e.isDirectory() ? files(path.join(dir, e.name)) : [path.join(dir, e.name)]);
                for (const f of files(tmp)) {
                    if (fs.statSync(f).isFile()) assert.ok(!fs.readFileSync(f, "utf8").includes("PRIVATE KEY"), `${f} holds the key`);
                }
                assert.ok(!fs.readFileSync(`/proc/${p.pid}/environ`, "utf8").includes("PRIVATE KEY"), "the key is not in the run's environment");
                const t0 = Date.now();
                p.kill(sig);
                const code = await new Promise<number | null>((r) => p.on("exit", (c) => r(c)));
                assert.ok(Date.now() - t0 < 5_000, "stopped at once");
                assert.equal(code, sig === "SIGTERM" ? 143 : 130, err);
                // the ssh it ran is gone too: the listener sees the connection close
                const conn = sockets[sockets.length - 1];
                for (let i = 0; i < 50 && !closed.has(conn); i++) await new Promise((r) => setTimeout(r, 100));
                assert.ok(closed.has(conn), "the ssh connection was closed");
                assert.deepEqual(fs.readdirSync(tmp), [], "nothing left: no key file, no agent socket, no temporary folder");
            } finally {
                p.kill("SIGKILL");
                served.close();
                fs.rmSync(tmp, { recursive: true, force: true });
                fs.rmSync(kept, { recursive: true, force: true });
            }
        });
    });
}
