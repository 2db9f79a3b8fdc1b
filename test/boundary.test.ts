// Every public component takes typed arguments through the same checks as the stack config: shell and newline
// payloads in any of them are refused with the field that holds them, before anything is registered.
import { before, beforeEach, describe, it } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parse as parseYaml } from "yaml";
import type { ClusterSpecInput } from "../components/types";
import { specInput } from "./fixtures/roce/helpers";

const ROOT = join(__dirname, "..");
const registered: string[] = [];
let m: {
    cluster: typeof import("../components/cluster");
    aws: typeof import("../components/aws/cluster");
    azure: typeof import("../components/azure/cluster");
    roce: typeof import("../components/roce/cluster");
    ansible: typeof import("../components/provision/ansible");
    validate: typeof import("../components/validate/component");
    inventory: typeof import("../components/provision/inventory");
    fromPlan: typeof import("../components/validate/fromPlan");
    plan: typeof import("../components/plan");
    spec: typeof import("../components/spec");
};

before(async () => {
    await pulumi.runtime.setMocks({
        newResource: (a) => { registered.push(a.type); return { id: `${a.name}-id`, state: a.inputs }; },
        call: (a) => a.inputs,
    }, "rdmakit", "boundary", false);
    m = {
        cluster: await import("../components/cluster"), aws: await import("../components/aws/cluster"),
        azure: await import("../components/azure/cluster"), roce: await import("../components/roce/cluster"),
        ansible: await import("../components/provision/ansible"), validate: await import("../components/validate/component"),
        inventory: await import("../components/provision/inventory"), fromPlan: await import("../components/validate/fromPlan"),
        plan: await import("../components/plan"), spec: await import("../components/spec"),
    };
});
beforeEach(() => { registered.length = 0; });

const INJECT = ["x$(touch /tmp/rdmakit-pwned)", "x`id`", "x;id", "x\nid", "{{ lookup('pipe', 'id') }}"];

function example(name: string): ClusterSpecInput {
    return parseYaml(readFileSync(join(ROOT, "examples", name), "utf8")).config["rdmakit:cluster"];
}

/** The property paths of the error `make` throws; fails when it throws nothing or registers anything. */
function refusedPaths(make: () => unknown, field: string | RegExp): string[] {
    let err: unknown;
    try { make(); } catch (e) { err = e; }
    assert.ok(err, `${field}: accepted`);
    assert.deepEqual(registered, [], `${field}: registered resources before refusing`);
    if (pulumi.InputPropertiesError.isInstance(err)) return err.errors.map((e) => e.propertyPath);
    if (err instanceof Error && "issues" in err) return (err as { issues: Array<{ path: string }> }).issues.map((i) => i.path);
    throw err;
}

function assertRefused(make: () => unknown, field: string | RegExp): void {
    const paths = refusedPaths(make, field);
    assert.ok(paths.some((p) => (typeof field === "string" ? p === field : field.test(p))), `no refusal names ${field}: ${paths.join(", ")}`);
}

describe("typed RoceSpec through RoceCluster and RdmaCluster", () => {
    for (const payload of INJECT) {
        it(`refuses ${JSON.stringify(payload)} in a switch name, a host name, an address, a user, a port and a NIC`, () => {
            const cases: Array<[string, (r: any) => void]> = [
                ["cluster.roce.switches[0].name", (r) => { r.switches[0].name = `leaf${payload}`; }],
                ["cluster.roce.hosts[1].name", (r) => { r.hosts[1].name = `gpu${payload}`; }],
                ["cluster.roce.hosts[0].address", (r) => { r.hosts[0].address = `10.0.0.1${payload}`; }],
                ["cluster.roce.switches[1].managementAddress", (r) => { r.switches[1].managementAddress = payload; }],
                ["cluster.roce.switches[2].sshUser", (r) => { r.switches[2].sshUser = payload; }],
                ["cluster.roce.hosts[0].sshUser", (r) => { r.hosts[0].sshUser = payload; }],
                ["cluster.roce.switches[0].hostPorts[0]", (r) => { r.switches[0].hostPorts[0] = `Ethernet0${payload}`; }],
                ["cluster.roce.hosts[0].railNics[0]", (r) => { r.hosts[0].railNics[0] = `mlx5_0${payload}`; }],
                ["cluster.roce.hosts[0].bootstrapNic", (r) => { r.hosts[0].bootstrapNic = payload; }],
            ];
            for (const [field, edit] of cases) {
                const roce = specInput();
                edit(roce);
                const spec: ClusterSpecInput = { name: "lab", fabric: "roce", ssh: { allowedCidrs: ["10.0.0.0/8"] }, roce };
                assertRefused(() => new m.roce.RoceCluster("lab", { spec }), field);
                assertRefused(() => new m.cluster.RdmaCluster("lab", { spec: { ...spec, provision: false } }), field);
            }
        });
    }
});

describe("typed specs through AwsEfaCluster, AzureInfinibandCluster and RdmaCluster", () => {
    it("refuses payloads in the name, the user, tags, instance type, AMI and ids, with the field", () => {
        for (const payload of INJECT) {
            const aws = (edit: (s: any) => void) => { const s: any = example("aws-p5.yaml"); edit(s); return s as ClusterSpecInput; };
            const azure = (edit: (s: any) => void) => { const s: any = example("azure-h100.yaml"); edit(s); return s as ClusterSpecInput; };
            for (const [field, spec] of [
                ["cluster.name", aws((s) => { s.name = `p5${payload}`; })],
                ["cluster.ssh.user", aws((s) => { s.ssh.user = payload; })],
                ["cluster.ssh.publicKey", aws((s) => { s.ssh.publicKey = `ssh-ed25519 AAAA ${payload}\nid`; })],
                [/^cluster\.tags/, aws((s) => { s.tags = { [`team${payload}`]: "x" }; })],
                ["cluster.aws.instanceType", aws((s) => { s.aws.instanceType = `p5.48xlarge${payload}`; })],
                ["cluster.aws.ami", aws((s) => { s.aws.ami = payload; })],
                ["cluster.aws.network.vpcId", aws((s) => { s.aws.network = { vpcId: `vpc-0abc${payload}` }; })],
            ] as const) {
                if (field === "cluster.ssh.publicKey" && !payload.includes("\n")) continue; // a comment may hold anything but a newline
                assertRefused(() => new m.aws.AwsEfaCluster("c", { spec }), field);
                assertRefused(() => new m.cluster.RdmaCluster("c", { spec: { ...spec, provision: false } }), field);
            }
            for (const [field, spec] of [
                ["cluster.azure.vmSize", azure((s) => { s.azure.vmSize = `Standard_ND96isr_H100_v5${payload}`; })],
                ["cluster.azure.location", azure((s) => { s.azure.location = payload; })],
                ["cluster.azure.resourceGroupName", azure((s) => { s.azure.resourceGroupName = `rg${payload}`; })],
            ] as const) {
                assertRefused(() => new m.azure.AzureInfinibandCluster("c", { spec }), field);
                assertRefused(() => new m.cluster.RdmaCluster("c", { spec: { ...spec, provision: false } }), field);
            }
        }
    });
});

describe("AnsiblePlaybook, ClusterValidation and renderInventory", () => {
    it("AnsiblePlaybook refuses a bad variable name, a file name that leaves its folder, a bad stack and a bad playbook", () => {
        const base = { inventory: "all: {}\n", sshPrivateKey: "k" };
        assertRefused(() => new m.ansible.AnsiblePlaybook("p", { ...base, extraVars: { "a$(id)": 1 } }), "extraVars.a$(id)");
        assertRefused(() => new m.ansible.AnsiblePlaybook("../../etc/x", base), "name");
        assertRefused(() => new m.ansible.AnsiblePlaybook("p", { ...base, stack: "dev;id" }), "stack");
        assertRefused(() => new m.ansible.AnsiblePlaybook("p", { ...base, playbook: "../site.yml" }), "playbook");
    });

    it("ClusterValidation refuses payloads in host names, the group, the tool folders and the NCCL environment", () => {
        const plan = m.plan.planCluster(m.spec.parseClusterSpec(example("aws-p5.yaml")));
        // a deep copy: the plan's lists are shared with the arguments built from it
        const args = () => structuredClone(m.fromPlan.validationArgsFromPlan(plan, "dev", { inventory: "all: {}\n", sshPrivateKey: "k" }));
        for (const payload of INJECT) {
            for (const [field, edit] of [
                ["hosts[1]", (a: any) => { a.hosts[1] = `node${payload}`; }],
                ["group", (a: any) => { a.group = `gpu${payload}`; }],
                ["nccltestsDir", (a: any) => { a.nccltestsDir = `/opt/nccl-tests${payload}`; }],
                ["mpiHome", (a: any) => { a.mpiHome = `/opt/amazon/openmpi${payload}`; }],
                ["ncclEnv.FI_PROVIDER", (a: any) => { a.ncclEnv = { ...a.ncclEnv, FI_PROVIDER: `efa${payload}` }; }],
                ["ncclEnv.BAD NAME", (a: any) => { a.ncclEnv = { ...a.ncclEnv, "BAD NAME": "1" }; }],
            ] as const) {
                const a = args();
                edit(a);
                // shell and Jinja characters in an NCCL value are quoted and marked unsafe (test/unsafe-vars.test.ts);
                // only a control character is refused there
                if (field === "ncclEnv.FI_PROVIDER" && !payload.includes("\n")) {
                    assert.ok(new m.validate.ClusterValidation("v", a));
                    registered.length = 0;
                    continue;
                }
                if (field === "ncclEnv.BAD NAME") {
                    // names are checked where the command line is built (commands.ts), before any resource
                    assert.throws(() => m.validate.validationVars(a, a.hosts, "/tmp/x"), /ncclEnv\.BAD NAME/);
                    continue;
                }
                assertRefused(() => new m.validate.ClusterValidation("v", a), field);
            }
        }
    });

    it("renderInventory refuses payloads in names, addresses, users, variable names and the key file", () => {
        for (const payload of INJECT) {
            for (const [field, args] of [
                ["hosts[0].name", { hosts: [{ name: `h${payload}`, address: "10.0.0.1", user: "root" }], vars: {} }],
                ["hosts[0].address", { hosts: [{ name: "h", address: `10.0.0.1${payload}`, user: "root" }], vars: {} }],
                ["hosts[0].user", { hosts: [{ name: "h", address: "10.0.0.1", user: payload }], vars: {} }],
                ["bastion.address", { hosts: [{ name: "h", address: "10.0.0.1", user: "root" }], bastion: { address: payload, user: "u" }, vars: {} }],
                [`vars.a${payload}`, { hosts: [{ name: "h", address: "10.0.0.1", user: "root" }], vars: { [`a${payload}`]: 1 } }],
                ["knownHostsFile", { hosts: [{ name: "h", address: "10.0.0.1", user: "root" }], vars: {}, knownHostsFile: `/tmp/k${payload}` }],
            ] as const) {
                assertRefused(() => m.inventory.renderInventory(args as any), field);
            }
        }
    });
});
