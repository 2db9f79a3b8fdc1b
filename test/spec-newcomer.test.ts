// Bad input as a newcomer types it into a stack file: each class of mistake, read the way `rdmakit plan --config`
// reads the file (components/offline.ts parseStackYaml), and the exact lines the user sees. Then the same spec given to
// the program (index.ts, as `pulumi up` hands it the config) and to RdmaCluster (what Construct runs): refused with
// the same lines before any resource is registered. Constructed inputs: the bundled examples with one mistake each.
import { before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import { parseStackYaml, readStackFile } from "../components/offline";
import { parseClusterSpec } from "../components/spec";
import { SpecError, formatIssue } from "../components/errors";
import { providerRegionIssues } from "../components/checks";
import { suggest as suggestions } from "../components/spec-messages";
import type * as ClusterModule from "../components/cluster";

const ROOT = join(__dirname, "..");
const EXAMPLE = {
    aws: readFileSync(join(ROOT, "examples", "aws-p5.yaml"), "utf8"),
    azure: readFileSync(join(ROOT, "examples", "azure-h100.yaml"), "utf8"),
    roce: readFileSync(join(ROOT, "examples", "roce-h100.yaml"), "utf8"),
};

/** The example's text with `from` replaced by `to` (which must occur). */
function edited(base: keyof typeof EXAMPLE, from: string | RegExp, to: string): string {
    const text = EXAMPLE[base];
    assert.ok(typeof from === "string" ? text.includes(from) : from.test(text), `the example holds ${String(from)}`);
    return text.replace(from, to);
}

function clusterOf(text: string): unknown {
    return (parseStackYaml(text) as { config: Record<string, unknown> }).config["rdmakit:cluster"];
}

/** The lines `rdmakit plan` prints for a stack file's cluster (without the file name before them). */
function lines(text: string): string[] {
    try {
        parseClusterSpec(clusterOf(text));
    } catch (e) {
        assert.ok(e instanceof SpecError, String(e));
        return e.issues.map(formatIssue);
    }
    return assert.fail("accepted");
}

const AWS_KEYS = "allowed: name, fabric, nodes, ssh, provision, repair, software, validation, ansible, tags, aws, azure, roce, scheduler";

test("a typo'd key beside the field it meant is one line on the typo, naming the missing field", () => {
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodeCount: 4")), [
        `cluster.nodeCount: is not a known field (did you mean nodes? cluster.nodes is missing) (got 4); ${AWS_KEYS}`,
    ]);
    assert.deepEqual(lines(edited("aws", "availabilityZone: us-east-2b", "availability_zone: us-east-2b")).map((l) => l.split("; allowed")[0]), [
        "cluster.aws.availability_zone: is not a known field (did you mean availabilityZone? cluster.aws.availabilityZone is missing) (got \"us-east-2b\")",
    ]);
    assert.deepEqual(lines(edited("roce", "        realMemory: 2063205", "        memory: 2063205")), [
        "cluster.scheduler.node.memory: is not a known field (did you mean realMemory? cluster.scheduler.node.realMemory is missing) (got 2063205); allowed: cpus, sockets, coresPerSocket, threadsPerCore, realMemory",
    ]);
    // an optional field: nothing is missing, the suggestion alone
    assert.deepEqual(lines(edited("roce", "          sshUser: ubuntu\n          # RDMA", "          sshuser: ubuntu\n          # RDMA")), [
        "cluster.roce.hosts[0].sshuser: is not a known field (did you mean sshUser?) (got \"ubuntu\"); allowed: name, address, sshUser, railNics, railNetdevs, railPorts, bootstrapNic, gpu, gidIndex",
    ]);
    // no guess for a short name that is no near miss of any (pfc is not a typo of ecn)
    assert.deepEqual(lines(edited("roce", "        mode: lossless\n", "        mode: lossless\n        pfc: true\n")), [
        "cluster.roce.qos.pfc: is not a known field (got true); allowed: mode, roceDscp, rocePriority, cnpDscp, cnpPriority, ecn, mtu, switchMtu, gidIndex",
    ]);
});

test("an enum value's near miss gets a did-you-mean; a missing one is 'is missing'", () => {
    assert.deepEqual(lines(edited("roce", "      type: slurm", "      type: Slurm")), [
        "cluster.scheduler.type: is not one of the allowed values (did you mean slurm?) (got \"Slurm\"); allowed: none, slurm",
    ]);
    assert.deepEqual(lines(edited("roce", "    fabric: roce", "    fabric: roceV2")), [
        "cluster.fabric: is not one of the allowed values (did you mean roce?) (got \"roceV2\"); allowed: aws-efa, azure-ib, roce",
    ]);
    assert.deepEqual(lines(edited("roce", "        mode: lossless\n", "        mode: lossles\n")), [
        "cluster.roce.qos.mode: is not one of the allowed values (did you mean lossless?) (got \"lossles\"); allowed: lossless, lossy",
    ]);
    assert.deepEqual(lines(edited("aws", "    fabric: aws-efa\n", "")), ["cluster.fabric: is missing; allowed: aws-efa, azure-ib, roce"]);
});

test("a value of the wrong type is said as the YAML most likely was, with the field's own bounds", () => {
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes: \"4\"")), [
        "cluster.nodes: must be a number, not text: write 4 without quotes (got \"4\"); allowed: an integer from 1 to 65531",
    ]);
    assert.deepEqual(lines(edited("roce", "speedGbps: 400\n", "speedGbps: 400G\n")), [
        "cluster.roce.switches[0].speedGbps: must be a plain number, without a unit or quotes (got \"400G\"); allowed: a number > 0",
    ]);
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes:")), [
        "cluster.nodes: is empty (nothing after the colon, which YAML reads as null) (got null); allowed: an integer from 1 to 65531",
    ]);
    // YAML 1.2 reads 12.10 as the number 12.1
    assert.deepEqual(lines(edited("aws", "    tags:", "    software: { cudaVersion: 12.10 }\n    tags:")), [
        "cluster.software.cudaVersion: must be text: YAML read it as the number 12.1; put the value in quotes (got 12.1); allowed: a CUDA major.minor such as 13.0",
    ]);
    assert.deepEqual(lines(edited("aws", "      team: ml-platform", "      cost-center: 1234")), [
        "cluster.tags.cost-center: must be text: YAML read it as the number 1234; put the value in quotes (got 1234); allowed: text",
    ]);
    assert.deepEqual(lines(edited("aws", "      allowedCidrs:\n        - 203.0.113.0/24", "      allowedCidrs: 203.0.113.0/24")), [
        "cluster.ssh.allowedCidrs: must be a list: [203.0.113.0/24], or one '- ' line per entry (got \"203.0.113.0/24\"); allowed: a list",
    ]);
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes: 1_000")), [
        "cluster.nodes: must be a number: write 1000, without the _ (YAML 1.2 reads 1_000 as text) (got \"1_000\"); allowed: an integer from 1 to 65531",
    ]);
});

test("no, off, yes and on are text in YAML 1.2 (and in pulumi up's Go yaml.v3): told as such, with the boolean to write", () => {
    assert.deepEqual(lines(edited("aws", "    tags:", "    provision: no\n    tags:")), [
        "cluster.provision: must be true or false: YAML reads no as text; write false (got \"no\"); allowed: true or false",
    ]);
    assert.deepEqual(lines(edited("aws", "    tags:", "    software:\n      openKernelModules: off\n    tags:")), [
        "cluster.software.openKernelModules: must be true or false: YAML reads off as text; write false (got \"off\"); allowed: true or false",
    ]);
    assert.deepEqual(lines(edited("aws", "    tags:", "    validation: { enabled: \"false\" }\n    tags:")), [
        "cluster.validation.enabled: must be true or false, not text: write false without quotes (got \"false\"); allowed: true or false",
    ]);
});

test("out of range: .nan, .inf, a fraction typed as a percentage, and a count no subnet holds (refused at once, not planned)", () => {
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes: .nan")), [
        "cluster.nodes: must be a number, not NaN (YAML .nan) (got NaN); allowed: an integer from 1 to 65531",
    ]);
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes: .inf")), [
        "cluster.nodes: must be a finite number (got Infinity); allowed: an integer from 1 to 65531",
    ]);
    assert.deepEqual(lines(edited("aws", "    tags:", "    validation: { minFraction: 80 }\n    tags:")), [
        "cluster.validation.minFraction: is too large (a fraction: 0.8 for 80 %) (got 80); allowed: <= 1",
    ]);
    // before the bound the plan named a billion nodes and ran out of heap
    const started = Date.now();
    assert.deepEqual(lines(edited("aws", "    nodes: 4", "    nodes: 1e9")), [
        "cluster.nodes: is more than one subnet holds (EFA does not cross subnets; a /16, AWS's largest, has 65531 usable addresses) (got 1000000000); allowed: <= 65531",
    ]);
    assert.ok(Date.now() - started < 5_000);
    // the bound is AWS's subnet; Azure's own limit is one scale set, and bare metal's node count is its host list
    assert.deepEqual(lines(edited("azure", "    nodes: 4", "    nodes: 1e9")), [
        "cluster.nodes: exceeds the 100 VMs one scale set (one InfiniBand partition) holds; Azure support can raise it to 300 (then set cluster.azure.quotaRaised: true) (got 1000000000); allowed: 1..100",
    ]);
    assert.deepEqual(lines(edited("azure", "    nodes: 4", "    nodes: \"4\"")), [
        "cluster.nodes: must be a number, not text: write 4 without quotes (got \"4\"); allowed: an integer from 1 to 100",
    ]);
    assert.deepEqual(lines(edited("roce", "    fabric: roce\n", "    fabric: roce\n    nodes: 1e9\n")), [
        "cluster.nodes: disagrees with the 4 hosts in cluster.roce.hosts (got 1000000000); allowed: 4, or leave it out",
    ]);
    // one line for one value: a huge maxBytes is not also "not a power of two", nor bounded by JavaScript's safe integer
    assert.deepEqual(lines(edited("aws", "    tags:", "    validation: { maxBytes: 1e20 }\n    tags:")), [
        "cluster.validation.maxBytes: is too large (got 100000000000000000000); allowed: an integer >= 1048576",
    ]);
});

test("a repeated entry is refused at the repeat, naming the first", () => {
    assert.deepEqual(lines(edited("aws", "        - 203.0.113.0/24", "        - 203.0.113.0/24\n        - 203.0.113.0/24")), [
        "cluster.ssh.allowedCidrs[1]: repeats entry [0]; list each once (got \"203.0.113.0/24\")",
    ]);
    assert.deepEqual(lines(edited("aws", "    tags:", "    software: { replace: [nccl, driver, nccl] }\n    tags:")), [
        "cluster.software.replace[2]: repeats entry [0]; list each once (got \"nccl\")",
    ]);
    assert.deepEqual(lines(edited("aws", "    tags:", "    validation: { health: { require: [xid, xid] } }\n    tags:")), [
        "cluster.validation.health.require[1]: repeats entry [0]; list each once (got \"xid\")",
    ]);
});

test("a switch name no switch has is one line however many rail ports name it", () => {
    assert.deepEqual(lines(edited("roce", "        - name: leaf-nvue", "        - name: leaf-nvu")), [
        "cluster.roce.hosts[0].railPorts[4]: no switch of that name in cluster.roce.switches (and 15 more rail ports name leaf-nvue) (did you mean leaf-nvu?) (got \"leaf-nvue:swp1\"); allowed: leaf-sonic, leaf-nvu",
    ]);
});

test("an uplink's peer switch typo'd: the closest switch name offered", () => {
    assert.deepEqual(lines(edited("roce", /peer: spine\b/, "peer: spine1")).map((l) => l.split(" (got")[0]), [
        "cluster.roce.switches[0].uplinks[0].peer: no switch of that name in cluster.roce.switches (did you mean spine?)",
    ]);
});

test("YAML merge keys are applied as pulumi up's reader applies them; anchors alone read as written", () => {
    const merged = edited("aws", "config:", "x-office: &office\n  allowedCidrs: [203.0.113.0/24]\n  user: admin\nconfig:")
        .replace("    ssh:\n      # 203.0.113.0/24 is a documentation range (RFC 5737): replace it with your office or VPN range.\n      allowedCidrs:\n        - 203.0.113.0/24\n",
            "    ssh:\n      <<: *office\n      user: ubuntu\n");
    assert.ok(merged.includes("<<: *office"));
    const spec = parseClusterSpec(clusterOf(merged));
    assert.deepEqual(spec.ssh.allowedCidrs, ["203.0.113.0/24"]);
    assert.equal(spec.ssh.user, "ubuntu", "the mapping's own key wins over the merged one");
    // a quoted "<<" is a key like any other (yaml.v3 merges a plain << only): refused as an unknown field
    const quoted = edited("aws", "    ssh:\n", "    ssh:\n      \"<<\": {user: admin}\n");
    assert.deepEqual(lines(quoted).map((l) => l.split(" (got")[0]), ["cluster.ssh.<<: is not a known field"]);
    // a merge of something that is not a mapping: the file cannot be read, as the Pulumi CLI cannot read it
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-merge-"));
    const file = join(dir, "Pulumi.scalar.yaml");
    writeFileSync(file, edited("aws", "    ssh:\n", "    ssh:\n      <<: office\n"));
    assert.throws(() => readStackFile(file), (e: Error) => e instanceof SpecError &&
        /cannot be read as a Pulumi stack settings file: Merge sources must be maps or map aliases/.test(e.message));
});

test("a merge key at the config level is applied too (Pulumi decodes config: with yaml.v3): the cluster and aws:region from it", () => {
    const dir = mkdtempSync(join(tmpdir(), "rdmakit-merge-"));
    const file = join(dir, "Pulumi.merged.yaml");
    // the example's config moved under an anchor, merged into an otherwise empty config:
    writeFileSync(file, EXAMPLE.aws.replace("config:\n", "x-common: &common\n").replace(/\n*$/, "\nconfig:\n  <<: *common\n"));
    const read = readStackFile(file);
    assert.equal(read.awsRegion, "us-east-2");
    assert.equal(parseClusterSpec(read.cluster).nodes, 4);
});

test("a text field's own words as what is allowed: a named grammar reads as the thing it names; an empty name is empty", () => {
    assert.deepEqual(lines(edited("roce", "        - name: gpu01\n", "        - name: [gpu01]\n")), [
        "cluster.roce.hosts[0].name: must be text (got [\"gpu01\"]); allowed: a host name: lower-case letters, digits and '-', 1-63 characters, starting and ending with a letter or digit",
    ]);
    assert.deepEqual(lines(edited("roce", "hostPorts: [Ethernet0, ", "hostPorts: [\"\", ")), [
        "cluster.roce.switches[0].hostPorts[0]: is empty (got \"\"); allowed: a port name (not empty)",
    ]);
});

test("a did-you-mean never offers another machine, node or switch: a name whose numbers or family differ is no typo of it", () => {
    const instanceType = (t: string) => lines(edited("aws", "instanceType: p5.48xlarge", `instanceType: ${t}`))[0].split(" (got")[0];
    // P5 (H100) is not G5 (A10G); Trainium is not P5
    assert.equal(instanceType("p5.24xlarge"), "cluster.aws.instanceType: is not an EFA-capable instance type the kit knows");
    assert.equal(instanceType("trn2.48xlarge"), "cluster.aws.instanceType: is not an EFA-capable instance type the kit knows");
    assert.equal(instanceType("p5.48xl"), "cluster.aws.instanceType: is not an EFA-capable instance type the kit knows (did you mean p5.48xlarge?)");
    const vmSize = (t: string) => lines(edited("azure", "vmSize: Standard_ND96isr_H100_v5", `vmSize: ${t}`)).find((l) => l.startsWith("cluster.azure.vmSize"))?.split(" (got")[0];
    assert.equal(vmSize("Standard_ND96isr_H100_v6"), "cluster.azure.vmSize: is not an InfiniBand size the kit knows");
    assert.equal(vmSize("Standard_NC96ads_A100_v4"), "cluster.azure.vmSize: is not an InfiniBand size the kit knows");
    assert.equal(vmSize("Standard_ND96isr_H100_5"), "cluster.azure.vmSize: is not an InfiniBand size the kit knows (did you mean Standard_ND96isr_H100_v5?)");
    // a name with a number where the known name has none is still offered it (spine2: spine), as for a padded number
    assert.deepEqual(lines(edited("roce", /peer: spine\b/, "peer: spine2")).map((l) => l.split(" (got")[0]), [
        "cluster.roce.switches[0].uplinks[0].peer: no switch of that name in cluster.roce.switches (did you mean spine?)",
    ]);
    assert.deepEqual(suggestions("gpu10", ["gpu01", "gpu02"]), "");
    assert.deepEqual(suggestions("p5-demo-010", ["p5-demo-000", "p5-demo-001"]), "");
    assert.deepEqual(suggestions("p5-demo-3", ["p5-demo-000", "p5-demo-003"]), " (did you mean p5-demo-003?)");
    assert.deepEqual(suggestions("leaf3", ["leaf1", "spine1"]), "");
    assert.deepEqual(suggestions("spine1", ["spine", "leaf1"]), " (did you mean spine?)");
    assert.deepEqual(suggestions("p5e", ["p5.48xlarge", "p5e.48xlarge"]), " (did you mean p5e.48xlarge?)");
});

test("a field of an enclosing mapping written one level too deep is told where it goes, not offered the missing field beside it", () => {
    // tags under aws, with aws.region left out: before, "cluster.aws.tags: is not a known field (did you mean region? …)"
    const text = edited("aws", "      region: us-east-2\n", "      tags: { team: ml }\n");
    assert.deepEqual(lines(text).map((l) => l.split("; allowed")[0]), [
        "cluster.aws.region: is missing",
        "cluster.aws.tags: is a field of cluster (cluster.tags), not of cluster.aws (got {\"team\":\"ml\"})",
    ]);
    // a sibling section's word keeps its did-you-mean (Azure's location in the AWS section: region)
    assert.deepEqual(lines(edited("aws", "      region: us-east-2\n", "      location: us-east-2\n")).map((l) => l.split(" (got")[0]), [
        "cluster.aws.location: is not a known field (did you mean region? cluster.aws.region is missing)",
    ]);
});

test("aws:region is not compared with a cluster.aws.region the spec refuses (nor offered as the fix)", () => {
    const text = edited("aws", "      region: us-east-2", "      region: US-EAST-2");
    assert.deepEqual(providerRegionIssues(clusterOf(text), "us-east-2"), []);
    assert.deepEqual(lines(text), ["cluster.aws.region: must be an AWS region such as us-east-1 (got \"US-EAST-2\")"]);
});

test("every problem at once, one line each", () => {
    const text = edited("aws", "    nodes: 4", "    nodeCount: 4\n    repair: Drain\n    provision: off")
        .replace("instanceType: p5.48xlarge", "instanceType: p5.48xl");
    assert.deepEqual(lines(text).map((l) => l.split(" (got")[0]), [
        "cluster.provision: must be true or false: YAML reads off as text; write false",
        "cluster.repair: is not one of the allowed values (did you mean drain?)",
        "cluster.nodeCount: is not a known field (did you mean nodes? cluster.nodes is missing)",
        "cluster.aws.instanceType: is not an EFA-capable instance type the kit knows (did you mean p5.48xlarge?)",
    ]);
});

// --- the same refusal from the program and from the component (what Construct runs)

interface Registered { type: string; name: string }
let registered: Registered[] = [];
let cluster: typeof ClusterModule;

before(async () => {
    await pulumi.runtime.setMocks({
        newResource(args) {
            registered.push({ type: args.type, name: args.name });
            return { id: `${args.name}-id`, state: args.inputs };
        },
        call: (args) => args.inputs,
    }, "rdmakit", "newcomer", false);
    cluster = await import("../components/cluster");
});

beforeEach(() => {
    registered = [];
});

const NEWCOMER_MISTAKES = [
    edited("aws", "    nodes: 4", "    nodeCount: 4"),
    edited("roce", "      type: slurm", "      type: Slurm"),
    edited("aws", "    tags:", "    provision: no\n    tags:"),
    edited("roce", "        - name: leaf-nvue", "        - name: leaf-nvu"),
];

test("RdmaCluster (Construct's path): the same lines as the engine's property errors, nothing registered", () => {
    for (const text of NEWCOMER_MISTAKES) {
        const want = lines(text);
        let err: unknown;
        try {
            new cluster.RdmaCluster("newcomer", { spec: clusterOf(text) as never, sshPrivateKey: pulumi.secret("not-a-key") });
        } catch (e) {
            err = e;
        }
        assert.ok(err instanceof pulumi.InputPropertiesError, String(err));
        assert.deepEqual(err.errors?.map((e) => e.reason), want);
        assert.deepEqual(registered, []);
    }
});

test("an excluded node name the cluster does not have: the closest node name offered, nothing registered", () => {
    let err: unknown;
    try {
        new cluster.RdmaCluster("newcomer", { spec: clusterOf(edited("aws", "    tags:", "    ansible: { exclude: [p5-demo-3] }\n    tags:")) as never, sshPrivateKey: pulumi.secret("not-a-key") });
    } catch (e) {
        err = e;
    }
    assert.ok(err instanceof pulumi.InputPropertiesError, String(err));
    assert.deepEqual(err.errors?.map((e) => e.reason), [
        "cluster.ansible.exclude[0]: names no node of this cluster (did you mean p5-demo-003?) (got \"p5-demo-3\"); allowed: node names: p5-demo-000, p5-demo-001, p5-demo-002, ...",
    ]);
    assert.deepEqual(registered, []);
});

test("the program (index.ts, the config as pulumi up hands it over: JSON text): the same lines, nothing registered", () => {
    for (const text of NEWCOMER_MISTAKES) {
        pulumi.runtime.setAllConfig({ "rdmakit:cluster": JSON.stringify(clusterOf(text)), "rdmakit:sshPrivateKey": "not-a-key" }, ["rdmakit:sshPrivateKey"]);
        const program = require.resolve("../index");
        delete require.cache[program];
        let err: unknown;
        try {
            // eslint-disable-next-line @typescript-eslint/no-require-imports -- the program runs at load, once per config
            require(program);
        } catch (e) {
            err = e;
        }
        assert.ok(err instanceof Error, String(err));
        for (const line of lines(text)) assert.ok(err.message.includes(line), `${line}\nnot in\n${err.message}`);
        assert.deepEqual(registered, []);
    }
});
