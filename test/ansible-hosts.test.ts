// site.yml for real on nspawn test hosts (test/hosts/testhost.sh): two plain Debian hosts of a RoCE cluster
// (test/hosts/site-plain.ts: install, changed=0, failure, partial failure and retry) and a DLAMI-like and an
// ubuntu-hpc-like host (test/hosts/site-images.ts: the image's stack reused and untouched, a reboot, changed=0), and
// Slurm on a head node and two nodes (test/hosts/slurm.ts).
// Both scenarios boot their hosts and run at once in this one test process: they spend much of their time waiting
// (boots, a reboot, SSH, the package mirror), and as one file they hold one of `npm test`'s two test slots instead
// of both, so the other slot keeps the CPUs busy with the rest of the suite meanwhile.
// They are CPU-bound in the hosts (Ansible and dpkg in seven containers): with three test files at once beside them
// the scenarios took twice as long, so `npm test` runs two. Bound: 25 min (about 15 min on a quiet 2-core machine
// with the Slurm scenario's replaced host).
// Needs root, debootstrap, systemd-nspawn and ansible-playbook; fails without them unless RDMAKIT_SKIP_HOST_TESTS=1.
import { test } from "node:test";
import assert from "node:assert/strict";
import { imageHostsScenario } from "./hosts/site-images";
import { missingTools, plainHostsScenario } from "./hosts/site-plain";
import { slurmHostsScenario } from "./hosts/slurm";

const SKIP = process.env.RDMAKIT_SKIP_HOST_TESTS === "1";

test("site.yml on nspawn test hosts", { skip: SKIP ? "RDMAKIT_SKIP_HOST_TESTS=1" : false, timeout: 25 * 60_000, concurrency: 3 }, async (t) => {
    const missing = missingTools();
    assert.deepEqual(missing, [], `the host tests need: ${missing.join(", ")} (set RDMAKIT_SKIP_HOST_TESTS=1 to skip them)`);
    await Promise.all([
        t.test("site.yml on two nspawn hosts: succeeds, then changes nothing", plainHostsScenario),
        t.test("site.yml on DLAMI-like and ubuntu-hpc-like hosts reuses the image's stack, survives a reboot, then changes nothing", imageHostsScenario),
        t.test("Slurm on a head node and two nodes, installed by the role through the node-local path", slurmHostsScenario),
    ]);
});
