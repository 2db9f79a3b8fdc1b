// Downloads that have no user-supplied checksum, run for real on this machine (connection local, everything under a
// temp directory): the efa role's GPG check of the installer tarball against a key fingerprint, and the nccl_tests
// role's git checkout of a release tag verified against a pinned commit. Both are driven through the roles' own task
// files (include_role tasks_from), with a locally made key, signature and repository standing in for AWS's and
// NVIDIA's, served over HTTP / file:// so the real modules (get_url, gpgv, git) do the work.
import { test } from "node:test";
import assert from "node:assert/strict";
import { ChildProcess, spawn, spawnSync } from "node:child_process";
import { createHash } from "node:crypto";
import * as fs from "node:fs";
import * as net from "node:net";
import { freePort } from "./fixtures/ports";
import * as os from "node:os";
import * as path from "node:path";

const ROOT = path.resolve(__dirname, "..");
const env = { ...process.env, ANSIBLE_CONFIG: path.join(ROOT, "playbooks", "ansible.cfg"), ANSIBLE_NOCOLOR: "1" };

function sh(cmd: string, args: string[], opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): string {
    const r = spawnSync(cmd, args, { encoding: "utf8", ...opts });
    assert.equal(r.status, 0, `${cmd} ${args.join(" ")}: ${r.stderr}`);
    return r.stdout;
}

/** Runs one task file of a role against localhost; returns rc and output. */
function runRole(dir: string, role: string, tasksFrom: string, vars: Record<string, unknown>) {
    const pb = path.join(dir, `play-${role}-${tasksFrom}.yml`);
    fs.writeFileSync(pb, [
        "- name: Run one task file of the role",
        "  hosts: localhost",
        "  gather_facts: false",
        "  tasks:",
        `    - name: Include ${role} ${tasksFrom}`,
        "      ansible.builtin.include_role:",
        `        name: ${role}`,
        `        tasks_from: ${tasksFrom}`,
        "",
    ].join("\n"));
    const r = spawnSync("ansible-playbook", ["-i", "localhost,", "-c", "local", "-e", JSON.stringify(vars), pb],
        { cwd: ROOT, env, encoding: "utf8" });
    const recap = /localhost\s+: ok=(\d+)\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)/.exec(r.stdout);
    return { rc: r.status, out: r.stdout + r.stderr, changed: Number(recap?.[2] ?? -1), failed: Number(recap?.[3] ?? -1) };
}

test("efa: installer verified by GPG signature without a checksum, or by the checksum", { timeout: 300_000 }, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-efa-"));
    let http: ChildProcess | undefined;
    t.after(() => { http?.kill("SIGTERM"); fs.rmSync(dir, { recursive: true, force: true }); });

    // A signing key and a signed tarball laid out like efa-installer.amazonaws.com.
    const gnupg = path.join(dir, "gnupg");
    fs.mkdirSync(gnupg, { mode: 0o700 });
    const genv = { ...process.env, GNUPGHOME: gnupg };
    sh("gpg", ["--batch", "--passphrase", "", "--quick-gen-key", "rdmakit test <test@example.invalid>", "rsa2048", "sign", "never"], { env: genv });
    const fpr = /^fpr:+([0-9A-F]{40}):/m.exec(sh("gpg", ["--batch", "--with-colons", "--fingerprint"], { env: genv }))![1];
    const www = path.join(dir, "www");
    fs.mkdirSync(www);
    const tarball = path.join(www, "aws-efa-installer-9.9.9.tar.gz");
    sh("tar", ["-czf", tarball, "-C", ROOT, "playbooks/ansible.cfg"]);
    sh("gpg", ["--batch", "--detach-sign", "--output", `${tarball}.sig`, tarball], { env: genv });
    fs.writeFileSync(path.join(www, "aws-efa-installer.key"), sh("gpg", ["--batch", "--armor", "--export", fpr], { env: genv }));
    const port = await freePort();
    http = spawn("python3", ["-m", "http.server", "--bind", "127.0.0.1", String(port), "--directory", www], { stdio: "ignore" });
    for (let i = 0; i < 50 && !(await new Promise<boolean>((r) => { const s = net.connect(port, "127.0.0.1", () => { s.end(); r(true); }); s.on("error", () => r(false)); })); i++) {
        await new Promise((r) => setTimeout(r, 100));
    }
    const base = { efa_installer_version: "9.9.9", efa_installer_base_url: `http://127.0.0.1:${port}`, efa_installer_sha256: "" };
    const work = (name: string) => path.join(dir, name);

    await t.test("a good signature by the pinned key passes and keeps the tarball", () => {
        const r = runRole(dir, "efa", "download", { ...base, efa_work_dir: work("ok"), efa_installer_gpg_fingerprint: fpr });
        assert.equal(r.rc, 0, r.out);
        // unpacked per version: <work>/<version>/
        assert.ok(fs.existsSync(path.join(work("ok"), "9.9.9", "aws-efa-installer-9.9.9.tar.gz")));
    });

    await t.test("a signature by another key (AWS's published fingerprint here) fails and removes the tarball", () => {
        const r = runRole(dir, "efa", "download", { ...base, efa_work_dir: work("foreign") });
        assert.notEqual(r.rc, 0);
        assert.match(r.out, /found no good signature by the key 4E9091BCBB97A96B26B15E59A05480B1DD2D3CCC/);
        assert.ok(!fs.existsSync(path.join(work("foreign"), "9.9.9", "aws-efa-installer-9.9.9.tar.gz")), "unverified tarball left behind");
    });

    await t.test("a tampered tarball fails (BADSIG)", () => {
        const good = fs.readFileSync(tarball);
        fs.writeFileSync(tarball, Buffer.concat([good, Buffer.from("tampered")]));
        try {
            const r = runRole(dir, "efa", "download", { ...base, efa_work_dir: work("tampered"), efa_installer_gpg_fingerprint: fpr });
            assert.notEqual(r.rc, 0);
            assert.match(r.out, /BADSIG/);
        } finally {
            fs.writeFileSync(tarball, good);
        }
    });

    await t.test("with a checksum the tarball is checked by it and no signature is fetched", () => {
        const sha = createHash("sha256").update(fs.readFileSync(tarball)).digest("hex");
        const ok = runRole(dir, "efa", "download", { ...base, efa_work_dir: work("sha"), efa_installer_sha256: sha });
        assert.equal(ok.rc, 0, ok.out);
        assert.ok(fs.existsSync(path.join(work("sha"), "9.9.9", "aws-efa-installer-9.9.9.tar.gz")));
        assert.ok(!fs.existsSync(path.join(work("sha"), "9.9.9", "aws-efa-installer-9.9.9.tar.gz.sig")));
        const bad = runRole(dir, "efa", "download", { ...base, efa_work_dir: work("badsha"), efa_installer_sha256: "0".repeat(64) });
        assert.notEqual(bad.rc, 0);
        assert.match(bad.out, /did not match|checksum mismatch/i);
    });

    await t.test("a malformed checksum stops the role at its first task, naming the spec field", () => {
        const r = runRole(dir, "efa", "main", { ...base, efa_work_dir: work("early"), efa_installer_sha256: "abc" });
        assert.notEqual(r.rc, 0);
        assert.match(r.out, /TASK \[efa : Check how the installer will be verified\][\s\S]*cluster\.software\.efaInstallerSha256/);
        assert.ok(!fs.existsSync(work("early")));
    });
});

test("nccl_tests: release tag checked out with git and its commit verified", { timeout: 300_000 }, async (t) => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-nccltests-"));
    t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
    const repo = path.join(dir, "nccl-tests");
    fs.mkdirSync(repo);
    const genv = { ...process.env, GIT_AUTHOR_NAME: "t", GIT_AUTHOR_EMAIL: "t@example.invalid", GIT_COMMITTER_NAME: "t", GIT_COMMITTER_EMAIL: "t@example.invalid" };
    sh("git", ["init", "-q", "-b", "master", repo]);
    fs.writeFileSync(path.join(repo, "Makefile"), "all:\n");
    sh("git", ["-C", repo, "add", "Makefile"], { env: genv });
    sh("git", ["-C", repo, "commit", "-q", "-m", "release"], { env: genv });
    sh("git", ["-C", repo, "tag", "-a", "v9.9.9", "-m", "v9.9.9"], { env: genv });
    const commit = sh("git", ["-C", repo, "rev-parse", "HEAD"]).trim();
    const base = { nccl_tests_version: "9.9.9", nccl_tests_git_url: `file://${repo}`, nccl_tests_sha256: "" };

    await t.test("the pinned commit passes; a second run changes nothing", () => {
        const vars = { ...base, nccl_tests_install_dir: path.join(dir, "ok"), nccl_tests_commit: commit };
        const first = runRole(dir, "nccl_tests", "source", vars);
        assert.equal(first.rc, 0, first.out);
        assert.equal(first.changed, 1, first.out);
        assert.equal(sh("git", ["-C", path.join(dir, "ok-9.9.9"), "rev-parse", "HEAD"]).trim(), commit);
        const second = runRole(dir, "nccl_tests", "source", vars);
        assert.equal(second.rc, 0, second.out);
        assert.equal(second.changed, 0, second.out);
    });

    await t.test("a tag on another commit fails, naming both commits", () => {
        const r = runRole(dir, "nccl_tests", "source", { ...base, nccl_tests_install_dir: path.join(dir, "moved"), nccl_tests_commit: "a0b82b2260cf5152b9f8c061bbf7eaf0ba096432" });
        assert.notEqual(r.rc, 0);
        assert.ok(r.out.includes(`tag v9.9.9 of file://${repo} points to commit ${commit}, not the pinned a0b82b2260cf5152b9f8c061bbf7eaf0ba096432`), r.out);
    });

    await t.test("a release with neither checksum nor pinned commit stops at the role's first task", () => {
        const r = runRole(dir, "nccl_tests", "main", { ...base, nccl_tests_install_dir: path.join(dir, "early") });
        assert.notEqual(r.rc, 0);
        assert.match(r.out, /TASK \[nccl_tests : Check that the nccl-tests source can be verified\][\s\S]*cluster\.software\.ncclTestsSha256/);
        assert.match(r.out, /pinned releases: 2\.19\.6/);
        assert.ok(!fs.existsSync(path.join(dir, "early-9.9.9")));
    });
});
