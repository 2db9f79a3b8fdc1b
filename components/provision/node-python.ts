/**
 * The Ansible the nodes run in node-local mode (cluster.ansible.mode: node-local): ansible-core and its pure-Python
 * dependencies, pinned here (one place) by file name and SHA-256 as PyPI publishes them. The controller fetches them
 * once into a cache with pip (the registry's own client: proxies and mirrors set for pip apply), checks every digest,
 * and unpacks them into the bundle (bundle.ts); a node never reaches PyPI, a distro Ansible or the internet, and its
 * own Python is not changed (the bundle runs it with `-I -S`: no site-packages, no user site, no PYTHON* variables).
 *
 * Two sets, because no one ansible-core runs as a controller on every supported image's Python: RHEL 9 has 3.9,
 * Ubuntu 22.04 3.10, Debian 12 3.11, Ubuntu 24.04 3.12. ansible-core 2.15 supports controller Python 3.9-3.11,
 * 2.16 and 2.17 support 3.10-3.12. source: https://docs.ansible.com/ansible/latest/reference_appendices/release_and_maintenance.html
 * (ansible-core support matrix; also gist sivel/3fc22827e48e60c077a6db058ed6bee2).
 * Dependencies: ansible-core's requirements.txt (jinja2 >= 3.0.0, PyYAML >= 5.1, cryptography, packaging,
 * resolvelib >= 0.5.3 < 1.1.0; 2.15 also importlib_resources >= 5.0 < 5.1 below Python 3.10). cryptography (a
 * compiled wheel) is left out: ansible-core imports it only for Vault (lib/ansible/parsing/vault/__init__.py,
 * HAS_CRYPTOGRAPHY), which the kit does not use. PyYAML and MarkupSafe publish no pure wheel: their Python files
 * are taken from the CPython 3.11 manylinux wheel and the compiled extension left out; both fall back to their
 * pure-Python code without it (PyYAML lib/yaml/__init__.py `from .cyaml import *` under try; MarkupSafe
 * src/markupsafe/__init__.py `_speedups` else `_native`), so the files suit any CPU and any Python 3.9+.
 * The three collection modules the roles use outside ansible.builtin (ansible.posix.sysctl 1.5.4,
 * community.general.dnf_versionlock and modprobe 7.5.2) come from the `ansible` 8.7.0 community wheel; each imports
 * only ansible.module_utils.
 * Digests: the sha256 pip checked for each file (pip download, 2026-12-01), as PyPI lists them.
 */
import { createHash } from "node:crypto";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";

/** One file from PyPI and what of it goes into which set. */
export interface PythonArtifact {
    /** the requirement pip fetches it by */
    requirement: string;
    file: string;
    sha256: string;
    /** the sets (NODE_ANSIBLE_SETS ids) whose site folder gets its files; [] for a collection source */
    sets: string[];
    /** for a collection source: the paths inside the wheel that go into the bundle's collections folder */
    only?: string[];
}

/** An ansible-core set and the node Pythons it runs on (inclusive). */
export interface NodeAnsibleSet {
    id: string;
    ansibleCore: string;
    python: { min: [number, number]; max: [number, number] };
}

export const NODE_ANSIBLE_SETS: NodeAnsibleSet[] = [
    { id: "core2.15", ansibleCore: "2.15.13", python: { min: [3, 9], max: [3, 11] } },
    { id: "core2.17", ansibleCore: "2.17.14", python: { min: [3, 12], max: [3, 12] } },
];

const byVersion = (a: [number, number], b: [number, number]) => a[0] - b[0] || a[1] - b[1];
/** The oldest and newest node Python (major, minor) some set runs on: what node-local mode needs of a node. */
export const NODE_PYTHON_MIN = NODE_ANSIBLE_SETS.map((s) => s.python.min).sort(byVersion)[0];
export const NODE_PYTHON_MAX = NODE_ANSIBLE_SETS.map((s) => s.python.max).sort(byVersion).slice(-1)[0];
/** The same, in words, as README and the node's failure say it ("3.9-3.12"). */
export const NODE_PYTHON_RANGE = `${NODE_PYTHON_MIN.join(".")}-${NODE_PYTHON_MAX.join(".")}`;

const BOTH = ["core2.15", "core2.17"];
const MANYLINUX = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64.whl";

export const NODE_PYTHON_ARTIFACTS: PythonArtifact[] = [
    { requirement: "ansible-core==2.15.13", file: "ansible_core-2.15.13-py3-none-any.whl", sha256: "e7f50bbb61beae792f5ecb86eff82149d3948d078361d70aedb01d76bc483c30", sets: ["core2.15"] },
    { requirement: "ansible-core==2.17.14", file: "ansible_core-2.17.14-py3-none-any.whl", sha256: "34a49582a57c2f2af17ede2cefd3b3602a2d55d22089f3928570d52030cafa35", sets: ["core2.17"] },
    { requirement: "jinja2==3.1.6", file: "jinja2-3.1.6-py3-none-any.whl", sha256: "85ece4451f492d0c13c5dd7c13a64681a86afae63a5f347908daf103ce6d2f67", sets: BOTH },
    { requirement: "markupsafe==3.0.2", file: `MarkupSafe-3.0.2-${MANYLINUX}`, sha256: "a123e330ef0853c6e822384873bef7507557d8e4a082961e1defa947aa59ba84", sets: BOTH },
    { requirement: "pyyaml==6.0.2", file: `PyYAML-6.0.2-${MANYLINUX}`, sha256: "3ad2a3decf9aaba3d29c8f537ac4b243e36bef957511b4766cb0057d32b0be85", sets: BOTH },
    { requirement: "packaging==24.2", file: "packaging-24.2-py3-none-any.whl", sha256: "09abb1bccd265c01f4a3aa3f7a7db064b36514d2cba19a2f694fe6150451a759", sets: BOTH },
    { requirement: "resolvelib==1.0.1", file: "resolvelib-1.0.1-py2.py3-none-any.whl", sha256: "d2da45d1a8dfee81bdd591647783e340ef3bcb104b54c383f70d422ef5cc7dbf", sets: BOTH },
    { requirement: "importlib-resources==5.0.7", file: "importlib_resources-5.0.7-py3-none-any.whl", sha256: "2238159eb743bd85304a16e0536048b3e991c531d1cd51c4a834d1ccf2829057", sets: ["core2.15"] },
    {
        requirement: "ansible==8.7.0", file: "ansible-8.7.0-py3-none-any.whl", sha256: "fa7d3bc2dfdb0ab031df645814ff86b15cb5ec041bfbee4041f795abfa5646ca", sets: [],
        only: [
            "ansible_collections/ansible/posix/MANIFEST.json",
            "ansible_collections/ansible/posix/plugins/modules/sysctl.py",
            "ansible_collections/community/general/MANIFEST.json",
            "ansible_collections/community/general/plugins/modules/dnf_versionlock.py",
            "ansible_collections/community/general/plugins/modules/modprobe.py",
        ],
    },
];

/** Where the controller keeps the files: `$RDMAKIT_PYTHON_CACHE`, else `~/.cache/rdmakit/python`. */
export function pythonCacheDir(env: NodeJS.ProcessEnv = process.env): string {
    return env.RDMAKIT_PYTHON_CACHE || path.join(env.XDG_CACHE_HOME || path.join(os.homedir(), ".cache"), "rdmakit", "python");
}

function fileDigest(file: string): string | undefined {
    try {
        return createHash("sha256").update(fs.readFileSync(file)).digest("hex");
    } catch {
        return undefined;
    }
}

/** The artifacts missing from `dir` or whose digest differs from the pin. */
export function missingArtifacts(dir: string, artifacts = NODE_PYTHON_ARTIFACTS): PythonArtifact[] {
    return artifacts.filter((a) => fileDigest(path.join(dir, a.file)) !== a.sha256);
}

/** pip's requirements file for the artifacts, every one with its hash (pip then refuses any other file). */
export function requirementsText(artifacts = NODE_PYTHON_ARTIFACTS): string {
    return artifacts.map((a) => `${a.requirement} --hash=sha256:${a.sha256}\n`).join("");
}

/** The artifacts in batches where no project (the requirement's name) appears twice, in order. Pure. */
export function distinctProjectBatches(artifacts: PythonArtifact[]): PythonArtifact[][] {
    const batches: PythonArtifact[][] = [];
    for (const a of artifacts) {
        const name = a.requirement.split("==")[0].toLowerCase();
        const free = batches.find((b) => !b.some((x) => x.requirement.split("==")[0].toLowerCase() === name));
        if (free) free.push(a); else batches.push([a]);
    }
    return batches;
}

/**
 * Makes sure every pinned file is in `dir` with its digest: fetches the missing ones with `python3 -m pip download`
 * (no dependencies, wheels only, the CPython 3.11 manylinux wheels for the two that have no pure one), then checks
 * them all again. Throws with the list of files to place there by hand when pip cannot fetch them (an air-gapped
 * controller: copy them from a machine that can, `pip download -r` with the same file).
 */
export function ensurePythonArtifacts(dir = pythonCacheDir()): string {
    let missing = missingArtifacts(dir);
    if (missing.length === 0) return dir;
    fs.mkdirSync(dir, { recursive: true });
    // pip resolves one requirements file as one set, so two versions of one project (the two ansible-core pins)
    // conflict even with --no-deps: one pip call per batch in which every project appears once
    let pip: ReturnType<typeof spawnSync> | undefined;
    for (const batch of distinctProjectBatches(missing)) {
        const req = path.join(dir, `requirements-${process.pid}.txt`);
        fs.writeFileSync(req, requirementsText(batch));
        pip = spawnSync("python3", ["-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:", "--platform", "manylinux2014_x86_64",
            "--python-version", "3.11", "--implementation", "cp", "--require-hashes", "-r", req, "-d", dir], { encoding: "utf8", timeout: 600_000 });
        fs.rmSync(req, { force: true });
        if (pip.error || pip.status !== 0) break;
    }
    missing = missingArtifacts(dir);
    if (missing.length > 0) {
        const why = !pip ? "pip was not run" : pip.error ? `python3 -m pip could not start (${(pip.error as NodeJS.ErrnoException).code})`
            : `pip download exited ${pip.status}: ${String(pip.stderr || "").trim().split("\n").slice(-3).join(" | ")}`;
        throw new Error(`rdmakit: the nodes' Ansible (node-local mode) needs these files in ${dir} and ${why}:\n` +
            missing.map((a) => `  ${a.file}  sha256 ${a.sha256}`).join("\n") +
            "\n  fetch them where PyPI is reachable (pip download --no-deps with the versions above) and copy them there, " +
            "or set cluster.ansible.mode: controller");
    }
    return dir;
}

/** SHA-256 over the pins (what goes into the bundle's digest). */
export function artifactsDigest(artifacts = NODE_PYTHON_ARTIFACTS): string {
    return createHash("sha256").update(JSON.stringify({ artifacts, sets: NODE_ANSIBLE_SETS })).digest("hex");
}
