import { isSecretInput, mockHostKey } from "./fixtures/host-key-mock";
import { MOCK_AZURE_HEAD_IP, MOCK_HEAD_ID, MOCK_HEAD_IP, MOCK_MUNGE_KEY, clusterCall, clusterResource, commandStdout } from "./fixtures/cluster-answers";
import { topologyAnswer } from "./fixtures/aws/ec2-topology";
import { MUNGE_KEY_COMMAND } from "../components/slurm/munge-key";
import { before, beforeEach, test } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import * as pulumi from "@pulumi/pulumi";
import type * as ClusterModule from "../components/cluster";
import { NODE_LOCAL_RUN_SCRIPT, readAnsibleRunInput } from "../components/provision/ansible";
import { fanoutNodes } from "../components/provision/fanout";
import { armFetch, b2sSku, d8sv5Sku, h100Sku, usages, vmssNics } from "./fixtures/azure/arm-answers";
import { parseInventory } from "../components/provision/inventory-read";

/** Example files and inventories alike: an inventory's `!unsafe` strings read as their text, as Ansible reads them. */
const parseYaml = (text: string): any => parseInventory(text);

/*
 * RdmaCluster on Pulumi's mock engine, for each bundled example: the fabric component, then the Ansible run of
 * site.yml over an inventory built from the nodes the fabric reported, then validation after it.
 */

interface Registered { type: string; name: string; inputs: Record<string, any>; parent?: string }
let registered: Registered[] = [];
const NODE_IPS = ["10.0.0.21", "10.0.0.22", "10.0.0.23", "10.0.0.24"];
/** the instance ids EC2 lists for NODE_IPS (a test replaces one) */
let nodeIds = NODE_IPS.map((_, i) => `i-${i}`);

let mod: typeof ClusterModule;

before(async () => {
    // ARM's answers for the Azure example: the size offered, quota to spare, the scale set's four NICs
    globalThis.fetch = armFetch({
        skus: [h100Sku(), b2sSku(), d8sv5Sku()], usages: usages(0, 960),
        nics: (vmss) => vmssNics("demo", vmss, ["10.10.0.7", "10.10.0.4", "10.10.0.5", "10.10.0.6"]),
    }).impl;
    await pulumi.runtime.setMocks({
        newResource(args) {
            registered.push({ type: args.type, name: args.name, inputs: args.inputs });
            return clusterResource(args);
        },
        call: (args) => clusterCall(args, { ids: nodeIds, privateIps: NODE_IPS }),
    }, "rdmakit", "test", false);
    mod = await import("../components/cluster");
});

beforeEach(() => {
    registered = [];
});

function example(name: string): any {
    return parseYaml(readFileSync(join(__dirname, "..", "examples", name), "utf8")).config["rdmakit:cluster"];
}

function unwrap<T>(o: pulumi.Output<T>): Promise<T> {
    return new Promise((resolve) => o.apply(resolve));
}

async function settle() {
    await (pulumi.runtime as any).waitForRPCs?.();
    await new Promise((r) => setTimeout(r, 50));
}

const KEY = pulumi.secret("not-a-real-key");

function envOf(r: Registered): Record<string, any> {
    const env = r.inputs.environment;
    // the SSH key makes the whole environment a secret
    return env && env["4dabf18193072939515e22adb298388d"] ? env.value : env;
}

for (const [file, fabricType, count] of [
    ["aws-p5.yaml", "rdmakit:index:AwsEfaCluster", 4],
    ["azure-h100.yaml", "rdmakit:index:AzureInfinibandCluster", 4],
    ["roce-h100.yaml", "rdmakit:index:RoceCluster", 4],
] as const) {
    test(`${file}: fabric, then site.yml over the reported nodes, then validation`, async () => {
        const c = new mod.RdmaCluster("demo", { spec: example(file), sshPrivateKey: KEY });
        const ips = await unwrap(c.nodePrivateIps);
        await settle();
        assert.equal(ips.length, count);
        const types = registered.map((r) => r.type);
        assert.equal(types[0], "rdmakit:index:RdmaCluster");
        assert.ok(types.includes(fabricType), fabricType);
        const runs = registered.filter((r) => r.type === "command:local:Command" && r.name === "demo-software-run");
        assert.equal(runs.length, 1, "one Ansible run for all nodes");
        const env = envOf(runs[0]);
        assert.equal(env.RDMAKIT_PLAYBOOK, join("playbooks", "site.yml"));
        const inventory = parseYaml(readAnsibleRunInput(runs[0].inputs.stdin).inventory);
        // the GPU nodes, then the Slurm head node where the run has one (slurm_role controller: its own test below)
        const hosts = Object.fromEntries(Object.entries(inventory.all.hosts).filter(([, h]: [string, any]) => h.slurm_role !== "controller"));
        assert.deepEqual(Object.keys(hosts), c.plan.validation.hostNames);
        assert.deepEqual(Object.values(hosts).map((h: any) => h.ansible_host), ips);
        assert.equal(inventory.all.vars.rdmakit_fabric, c.plan.fabric);
        assert.equal(inventory.all.vars.rdmakit_gpu_count, 8);
        assert.deepEqual(inventory.all.vars.nccl_conf, c.plan.ncclEnv);
        // node-local, the default: the fan-out runs site.yml on each node from the bundle; its targets are the inventory's hosts
        assert.equal(env.RDMAKIT_RUN_SCRIPT, NODE_LOCAL_RUN_SCRIPT);
        assert.match(env.RDMAKIT_BUNDLE_DIGEST, /^[0-9a-f]{64}$/);
        // the targets are kept once beside the stack (a file named by its digest), not in the run's input
        const nodes = fanoutNodes(JSON.parse(readFileSync(env.RDMAKIT_NODES_FILE, "utf8")));
        assert.equal(createHash("sha256").update(readFileSync(env.RDMAKIT_NODES_FILE)).digest("hex"), env.RDMAKIT_NODES_HASH);
        assert.deepEqual(nodes.filter((n) => n.name in hosts).map((n) => [n.name, n.address]), c.plan.validation.hostNames.map((n, i) => [n, ips[i]]));
        const nccl = registered.find((r) => r.name === "demo-validation-nccl");
        assert.ok(nccl, "validation command registered");
        // the variables come on stdin (their size grows with the nodes), their digest in the environment
        const input = readAnsibleRunInput(nccl.inputs.stdin);
        const vars = JSON.parse(input.extraVars);
        assert.equal(envOf(nccl).RDMAKIT_VARS_HASH, createHash("sha256").update(input.extraVars).digest("hex"));
        // validation reaches the nodes with the inventory the software step used: the one copy the program keeps beside
        // the stack this deployment (named from the kit's root, where validation runs), by digest, and the same node list;
        // with Slurm the head node too, which validate.yml leaves out of every per-node play (nccl_validate_head) and
        // the fan-out out of its sessions
        assert.equal(input.inventory, undefined);
        const validated = parseYaml(readFileSync(envOf(nccl).RDMAKIT_INVENTORY_INPUT, "utf8"));
        const head = c.plan.scheduler.type === "slurm" ? c.plan.scheduler.controller.name : undefined;
        assert.deepEqual(Object.keys(validated.all.hosts), [...c.plan.validation.hostNames, ...(head ? [head] : [])]);
        for (const n of c.plan.validation.hostNames) assert.deepEqual(validated.all.hosts[n], hosts[n], n);
        assert.equal(vars.nccl_validate_head, head);
        assert.deepEqual(fanoutNodes(JSON.parse(readFileSync(envOf(nccl).RDMAKIT_NODES_FILE, "utf8"))).map((n) => n.name), c.plan.validation.hostNames);
        assert.equal(vars.nccl_validate_group, "all");
        assert.deepEqual(vars.nccl_validate_hosts, c.plan.validation.hostNames.map((name, i) => ({ name, address: ips[i] })));
        // the role writes the hostfile from them, one `<ip> slots=8` line per node
        assert.equal(vars.nccl_validate_gpus_per_node, 8);
        // a fallback to sockets must fail the run: the forced transport is in every nccl-tests command
        assert.match(vars.nccl_validate_all_fixed_cmd, new RegExp(`NCCL_NET=${c.plan.validation.forcedNet.NCCL_NET.split(" ")[0]}`));
    });
}

test("roce with scheduler.controller: the named controller is in the software run only, its host key pinned for it alone", async () => {
    const spec = example("roce-h100.yaml");
    const c = new mod.RdmaCluster("demo", { spec, sshPrivateKey: KEY });
    await unwrap(c.nodePrivateIps);
    await settle();
    const run = registered.find((r) => r.name === "demo-software-run")!;
    const inventory = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory);
    const ctl = spec.scheduler.controller;
    const head = inventory.all.hosts[ctl.name];
    assert.ok(head, "the controller is an inventory host");
    // the shape site.yml and the slurm role read (test/hosts/slurm.ts runs them on it): controller role, the head in the run
    assert.equal(head.slurm_role, "controller");
    assert.equal(head.ansible_host, ctl.address);
    assert.equal(head.ansible_user, ctl.sshUser);
    assert.equal(inventory.all.vars.slurm_head_in_inventory, true);
    assert.equal(inventory.all.vars.slurm_controller_address, ctl.address);
    assert.equal(inventory.all.vars.slurm_enabled, true);
    assert.match(inventory.all.vars.slurm_files["slurm.conf"], new RegExp(`^SlurmctldHost=${ctl.name}\\(${ctl.address.replace(/\./g, "\\.")}\\)$`, "m"));
    // GPU hosts keep the run's own rule (accept-new); the controller alone is checked against the spec's key
    const file = join("out", "test", "slurm-head.known_hosts");
    assert.match(inventory.all.vars.ansible_ssh_common_args, /StrictHostKeyChecking=accept-new/);
    assert.match(head.ansible_ssh_common_args, new RegExp(`StrictHostKeyChecking=yes -o UserKnownHostsFile=${file.replace(/\./g, "\\.")}`));
    assert.match(head.ansible_ssh_common_args, /ForwardAgent=no/);
    for (const name of c.plan.validation.hostNames) assert.equal(inventory.all.hosts[name].ansible_ssh_common_args, undefined, name);
    assert.equal(readFileSync(file, "utf8"), `${ctl.address} ${ctl.hostKey.split(" ").slice(0, 2).join(" ")}\n`);
    // node-local: the fan-out reaches the controller with its own arguments, the nodes with the group's
    const targets = fanoutNodes(JSON.parse(readFileSync(envOf(run).RDMAKIT_NODES_FILE, "utf8")));
    const t = targets.find((x) => x.name === ctl.name)!;
    assert.equal(t.sshArgs, head.ansible_ssh_common_args);
    assert.ok(targets.filter((x) => x.name !== ctl.name).every((x) => x.sshArgs === inventory.all.vars.ansible_ssh_common_args));
    assert.equal(parseYaml(t.inventory).all.hosts[ctl.name].slurm_role, "controller");
    // the operating state: rdmakit ssh / status reach the controller with the spec's key; it is no node of the state
    const st = await unwrap(c.state);
    // the same state as JSON text: the output a program in another language exports as rdmakitState
    assert.deepEqual(JSON.parse(await unwrap(c.operatingState)), st);
    assert.deepEqual(st.head, { name: ctl.name, address: ctl.address, user: ctl.sshUser, hostKey: ctl.hostKey.split(" ").slice(0, 2).join(" ") });
    assert.ok(!st.nodes.some((n) => n.name === ctl.name));
    // validation: the GPU nodes and the head node (srun and the gate run there), whose key file is named from the
    // kit's root; the per-node sessions are the GPU nodes' alone
    const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
    const vinv = parseYaml(readFileSync(envOf(nccl).RDMAKIT_INVENTORY_INPUT, "utf8")).all;
    assert.deepEqual(Object.keys(vinv.hosts), [...c.plan.validation.hostNames, ctl.name]);
    assert.match(vinv.hosts[ctl.name].ansible_ssh_common_args, new RegExp(`UserKnownHostsFile=${relative(join(__dirname, ".."), resolve(file)).replace(/\./g, "\\.")}`));
    const sessions = fanoutNodes(JSON.parse(readFileSync(envOf(nccl).RDMAKIT_NODES_FILE, "utf8")));
    assert.deepEqual(sessions.map((n) => n.name), c.plan.validation.hostNames);
    // scheduler none: no head node, no Slurm variables (today's behaviour)
    registered = [];
    const none = new mod.RdmaCluster("demo", { spec: { ...spec, scheduler: { type: "none" } }, sshPrivateKey: KEY });
    await unwrap(none.nodePrivateIps);
    await settle();
    const plain = parseYaml(readAnsibleRunInput(registered.find((r) => r.name === "demo-software-run")!.inputs.stdin).inventory);
    assert.deepEqual(Object.keys(plain.all.hosts), none.plan.validation.hostNames);
    assert.equal(plain.all.vars.slurm_head_in_inventory, undefined);
});

test("aws with Slurm: the head node the stack made is in the software run, slurm.conf at the private addresses, /home to the nodes", async () => {
    // the nodes as EC2 lists them, and their instance topology as the read at up prints it (the AWS CLI's shape)
    nodeIds = NODE_IPS.map((_, i) => `i-0bbb${String(i).padStart(13, "0")}`);
    commandStdout.set("demo-aws-ec2-topology", JSON.stringify(topologyAnswer(nodeIds.map((id, i) => ({ id, leaf: i < 2 ? "nn-3333333333example" : "nn-4444444444example" })))));
    let c: ClusterModule.RdmaCluster, ips: string[];
    try {
        c = new mod.RdmaCluster("demo", { spec: example("aws-p5.yaml"), sshPrivateKey: KEY });
        ips = await unwrap(c.nodePrivateIps);
        await settle();
    } finally {
        nodeIds = NODE_IPS.map((_, i) => `i-${i}`);
        commandStdout.clear();
    }
    // the read: after the capacity wait, asked for exactly the nodes' ids, in the stack's region
    const topo = registered.find((r) => r.name === "demo-aws-ec2-topology")!;
    assert.equal(envOf(topo).RDMAKIT_REGION, "us-east-2");
    assert.equal(envOf(topo).RDMAKIT_INSTANCE_IDS, NODE_IPS.map((_, i) => `i-0bbb${String(i).padStart(13, "0")}`).join(","));
    const run = registered.find((r) => r.name === "demo-software-run")!;
    const inventory = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory);
    const head = inventory.all.hosts["p5-demo-head"];
    assert.deepEqual([head.ansible_host, head.ansible_user, head.slurm_role, head.rdmakit_instance_id], [MOCK_HEAD_IP, "ubuntu", "controller", MOCK_HEAD_ID]);
    // reached like the nodes: the group's arguments (the bastion hop, the stack's pinned known_hosts)
    assert.equal(head.ansible_ssh_common_args, undefined);
    const v = inventory.all.vars;
    assert.deepEqual([v.slurm_enabled, v.slurm_head_in_inventory, v.slurm_controller_address, v.slurm_home_nfs], [true, true, MOCK_HEAD_IP, true]);
    assert.deepEqual(v.slurm_home_nfs_clients, ips);
    const conf: string = v.slurm_files["slurm.conf"];
    assert.match(conf, new RegExp(`^SlurmctldHost=p5-demo-head\\(${MOCK_HEAD_IP.replace(/\./g, "\\.")}\\)$`, "m"));
    // every node at its private address (no name lookups on the head node), in NodeName/NodeAddr lines
    const addrLines = conf.split("\n").filter((l) => l.startsWith("NodeName="));
    assert.ok(addrLines.length > 0 && addrLines.every((l) => / NodeAddr=\S+ /.test(l)), addrLines.join("\n"));
    for (const ip of ips) assert.ok(addrLines.some((l) => l.includes(ip) || l.includes(ip.replace(/\.\d+$/, "."))), ip);
    // topology.conf from that answer: the nodes under their leaves, the layers above, nothing unplaced
    const topology: string = v.slurm_files["topology.conf"];
    assert.deepEqual(c.plan.validation.hostNames, ["p5-demo-000", "p5-demo-001", "p5-demo-002", "p5-demo-003"]);
    assert.match(topology, /^SwitchName=nn-3333333333example Nodes=p5-demo-\[000-001\]$/m);
    assert.match(topology, /^SwitchName=nn-4444444444example Nodes=p5-demo-\[002-003\]$/m);
    assert.match(topology, /^SwitchName=nn-2222222222example Switches=nn-3333333333example,nn-4444444444example$/m);
    assert.doesNotMatch(topology, /ec2-unplaced|ec2-all/);
    // validation: the nodes and the head node (srun and the gate run there, validate.yml's nccl_validate_head)
    const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
    assert.deepEqual(Object.keys(parseYaml(readFileSync(envOf(nccl).RDMAKIT_INVENTORY_INPUT, "utf8")).all.hosts),
        [...c.plan.validation.hostNames, c.plan.scheduler.type === "slurm" ? c.plan.scheduler.controller.name : ""]);
    // the state output names no head-node secret (its user data is the instance's, a secret input there)
    const st = await unwrap(c.state);
    const state = JSON.stringify(st);
    assert.ok(!state.includes(mockHostKey("head").privateKey.split("\n")[1]));
    // the head node in the operating state, with its own pinned key, apart from the GPU nodes
    assert.deepEqual(st.head, { name: "p5-demo-head", address: MOCK_HEAD_IP, instanceId: MOCK_HEAD_ID, user: "ubuntu",
        hostKey: mockHostKey("head").publicKey.split(" ").slice(0, 2).join(" ") });
    assert.ok(!st.nodes.some((n) => n.name === "p5-demo-head"));
});

test("azure with Slurm: the head VM is in the software run at its private address, topology.conf flat", async () => {
    const c = new mod.RdmaCluster("demo", { spec: example("azure-h100.yaml"), sshPrivateKey: KEY });
    const ips = await unwrap(c.nodePrivateIps);
    await settle();
    const inventory = parseYaml(readAnsibleRunInput(registered.find((r) => r.name === "demo-software-run")!.inputs.stdin).inventory);
    const name = c.plan.scheduler.type === "slurm" ? c.plan.scheduler.controller.name : "";
    const head = inventory.all.hosts[name];
    assert.deepEqual([head.ansible_host, head.slurm_role], [MOCK_AZURE_HEAD_IP, "controller"]);
    assert.equal(head.ansible_ssh_common_args, undefined, "through the jump host, as the nodes");
    assert.deepEqual([inventory.all.vars.slurm_head_in_inventory, inventory.all.vars.slurm_controller_address], [true, MOCK_AZURE_HEAD_IP]);
    assert.deepEqual(inventory.all.vars.slurm_home_nfs_clients, ips);
    assert.match(inventory.all.vars.slurm_files["slurm.conf"], new RegExp(`^SlurmctldHost=${name}\\(10\\.10\\.0\\.250\\)$`, "m"));
    assert.match(inventory.all.vars.slurm_files["topology.conf"], /^# flat: /m);
});

test("Slurm on: one munge key command per cluster, its output a secret in the software run's environment only", async () => {
    for (const file of ["aws-p5.yaml", "azure-h100.yaml", "roce-h100.yaml"]) {
        registered = [];
        const c = new mod.RdmaCluster("demo", { spec: example(file), sshPrivateKey: KEY });
        await unwrap(c.nodePrivateIps);
        await settle();
        assert.equal(c.plan.scheduler.type, "slurm", file);
        const keys = registered.filter((r) => r.name === "demo-munge-key");
        assert.equal(keys.length, 1, file);
        assert.deepEqual([keys[0].type, keys[0].inputs.create, keys[0].inputs.logging], ["command:local:Command", MUNGE_KEY_COMMAND, "none"]);
        const run = registered.find((r) => r.name === "demo-software-run")!;
        assert.ok(isSecretInput(run.inputs.environment), "the run's environment is a secret");
        assert.equal(envOf(run).RDMAKIT_MUNGE_KEY, MOCK_MUNGE_KEY, file);
        // nowhere else: not on stdin (inventory, variables), not in validation's runs
        assert.ok(!JSON.stringify(run.inputs.stdin).includes(MOCK_MUNGE_KEY), file);
        for (const r of registered.filter((x) => x.name !== "demo-software-run" && x.name !== "demo-munge-key")) {
            assert.ok(!JSON.stringify(r.inputs).includes(MOCK_MUNGE_KEY), `${file}: ${r.name}`);
        }
    }
    // scheduler none: no key, no variable
    registered = [];
    const spec = { ...example("roce-h100.yaml"), scheduler: { type: "none" } };
    const c = new mod.RdmaCluster("demo", { spec, sshPrivateKey: KEY });
    await unwrap(c.nodePrivateIps);
    await settle();
    assert.equal(registered.filter((r) => r.name === "demo-munge-key").length, 0);
    assert.equal(envOf(registered.find((r) => r.name === "demo-software-run")!).RDMAKIT_MUNGE_KEY, undefined);
});

test("bare metal: each host carries its own QoS variables and NCCL environment", async () => {
    const c = new mod.RdmaCluster("demo", { spec: example("roce-h100.yaml"), sshPrivateKey: KEY });
    await unwrap(c.nodePrivateIps);
    await settle();
    const run = registered.find((r) => r.name === "demo-software-run")!;
    const hosts = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory).all.hosts;
    assert.equal(hosts.gpu01.ansible_host, "10.20.0.11");
    assert.equal(hosts.gpu01.roce_host_pfc_vector, "0,0,0,1,0,0,0,0");
    assert.equal(hosts.gpu01.roce_host_tos, 106);
    assert.equal(hosts.gpu01.nccl_conf.NCCL_IB_TC, "106");
    // switches are pushed by the RoCE component, one local command per switch (two leaves and the spine), staged
    assert.equal(registered.filter((r) => r.type === "command:local:Command" && r.name.endsWith("-qos")).length, 3);
    assert.equal(registered.filter((r) => r.type === "command:remote:Command").length, 0);
});

test("AWS: a node the group replaced at the same address changes the inventory: the software step runs on it alone after a clean run, validation again", async () => {
    async function up() {
        registered = [];
        const c = new mod.RdmaCluster("demo", { spec: example("aws-p5.yaml"), sshPrivateKey: KEY });
        const instances = await unwrap(c.nodeInstances);
        await settle();
        const run = registered.find((r) => r.name === "demo-software-run")!;
        const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
        return { instances, run: envOf(run).RDMAKIT_INVENTORY_HASH, env: envOf(run), triggers: nccl.inputs.triggers, stdin: run.inputs.stdin };
    }
    // what a clean run of the step leaves beside the stack (its summariser's record, the inventory file it ran with)
    const record = join("out", "test", "outcome-demo-software.json");
    const inventoryFile = join("out", "test", "inventory-demo-software.yml");
    rmSync(record, { force: true });
    rmSync(inventoryFile, { force: true });
    try {
        const first = await up();
        assert.equal(first.env.RDMAKIT_RETRY_NODES, undefined);
        assert.deepEqual(first.instances.map((n) => [n.address, n.instanceId]), NODE_IPS.map((ip, i) => [ip, `i-${i}`]));
        const hosts = parseYaml(readAnsibleRunInput(first.stdin).inventory).all.hosts;
        // the nodes, then the Slurm head node (its own instance)
        assert.deepEqual(Object.values(hosts).map((h: any) => h.rdmakit_instance_id), ["i-0", "i-1", "i-2", "i-3", MOCK_HEAD_ID]);
        assert.deepEqual((await up()).run, first.run, "the same nodes: nothing to run again");
        nodeIds = ["i-0", "i-1", "i-2", "i-9"];
        const replaced = await up();
        assert.equal(replaced.instances[3].instanceId, "i-9");
        assert.equal(replaced.instances[3].address, "10.0.0.24", "the replacement took the old address");
        assert.notEqual(replaced.run, first.run, "the software step's input changed");
        assert.notDeepEqual(replaced.triggers, first.triggers, "validation runs again");
        assert.equal(replaced.env.RDMAKIT_RETRY_NODES, undefined, "no clean run on record (another checkout): every node");
        // after a clean run of the first inventory, the step runs on the replaced node alone; the rest is unchanged
        const inv = readAnsibleRunInput(first.stdin).inventory;
        mkdirSync(join("out", "test"), { recursive: true });
        writeFileSync(inventoryFile, inv);
        writeFileSync(record, JSON.stringify({ inventory: first.run, vars: first.env.RDMAKIT_VARS_HASH, playbooks: first.env.RDMAKIT_PLAYBOOKS_HASH, attempt: 0, hosts: 5, limit: [], failed: [] }));
        const alone = await up();
        assert.equal(alone.run, replaced.run);
        const name = alone.instances[3].name;
        assert.deepEqual([alone.env.RDMAKIT_RETRY_NODES, alone.env.RDMAKIT_RETRY_ATTEMPT, alone.env.RDMAKIT_RETRY_HOSTS], [name, "1", "5"]);
        // a node that failed in that run: it is retried, and the replaced one with every other node (a full run)
        writeFileSync(record, JSON.stringify({ inventory: first.run, vars: first.env.RDMAKIT_VARS_HASH, playbooks: first.env.RDMAKIT_PLAYBOOKS_HASH, attempt: 0, hosts: 5, limit: [], failed: [alone.instances[0].name] }));
        assert.equal((await up()).env.RDMAKIT_RETRY_NODES, undefined);
    } finally {
        nodeIds = NODE_IPS.map((_, i) => `i-${i}`);
        rmSync(record, { force: true });
        rmSync(inventoryFile, { force: true });
    }
});

test("AWS access ssm: Ansible reaches each node by instance id through Session Manager; nccl-tests use the private IPs", async () => {
    const spec = example("aws-p5.yaml");
    spec.aws.access = "ssm";
    const c = new mod.RdmaCluster("demo", { spec, sshPrivateKey: KEY });
    await unwrap(c.nodeInstances);
    await settle();
    assert.deepEqual(registered.filter((r) => r.type === "aws:ec2/instance:Instance").map((r) => r.name), ["demo-aws-head"], "no bastion; the Slurm head node");
    const run = registered.find((r) => r.name === "demo-software-run")!;
    const inventory = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory);
    // the head node too, by its instance id, through the same Session Manager hop (no host-level arguments of its own)
    assert.deepEqual(Object.values(inventory.all.hosts).map((h: any) => h.ansible_host), ["i-0", "i-1", "i-2", "i-3", MOCK_HEAD_ID]);
    assert.equal(inventory.all.hosts["p5-demo-head"].ansible_ssh_common_args, undefined);
    // the stack's pinned host keys, by instance id (the name ssh checks through Session Manager)
    assert.equal(inventory.all.vars.ansible_ssh_common_args, "-o ForwardAgent=no -o ClearAllForwardings=yes -o StrictHostKeyChecking=yes -o UserKnownHostsFile=out/test/known_hosts " +
        "-o HostKeyAlgorithms=ssh-ed25519 -o ProxyCommand=\"aws ssm start-session --target %h --document-name AWS-StartSSHSession --parameters portNumber=%p --region us-east-2\"");
    const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
    const vars = JSON.parse(readAnsibleRunInput(nccl.inputs.stdin).extraVars);
    assert.deepEqual(vars.nccl_validate_hosts.map((h: any) => h.address), NODE_IPS, "mpirun between nodes over their private addresses");
    const node = mockHostKey("node").publicKey;
    const head = mockHostKey("head").publicKey;
    assert.equal(readFileSync(join("out", "test", "known_hosts"), "utf8"),
        [...["i-0", "i-1", "i-2", "i-3"].map((i) => `${i} ${node}\n`), `${MOCK_HEAD_ID} ${head}\n`].sort().join(""));
});

for (const [file, entry] of [["aws-p5.yaml", "bastion"], ["azure-h100.yaml", "jump"]] as const) {
    test(`${file}: the host keys the stack made are pinned before the first contact, and the private halves go nowhere else`, async () => {
        const c = new mod.RdmaCluster("demo", { spec: example(file), sshPrivateKey: KEY });
        const ips = await unwrap(c.nodePrivateIps);
        const entryIp = await unwrap(c.entryAddress);
        await settle();
        const node = mockHostKey("node"), way = mockHostKey(entry), head = mockHostKey("head");
        // the Slurm head node the stack made, with its own key (AWS: ./fixtures/cluster-answers.ts MOCK_HEAD_IP)
        const heads = [`${file.startsWith("aws") ? MOCK_HEAD_IP : MOCK_AZURE_HEAD_IP} ${head.publicKey}`];
        // out/<stack>/known_hosts: every node with the group's key, the bastion / jump host and the head node with their own, nothing else
        assert.equal(readFileSync(join("out", "test", "known_hosts"), "utf8"),
            [...ips.map((ip) => `${ip} ${node.publicKey}`), `${entryIp} ${way.publicKey}`, ...heads].sort().map((l) => `${l}\n`).join(""));
        // Ansible checks them (nodes and the jump hop alike), ed25519 only; validation's inventory the same
        const run = registered.find((r) => r.name === "demo-software-run")!;
        const args = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory).all.vars.ansible_ssh_common_args as string;
        assert.equal(args.match(/-o StrictHostKeyChecking=yes -o UserKnownHostsFile=out\/test\/known_hosts -o HostKeyAlgorithms=ssh-ed25519/g)?.length, 2, args);
        assert.doesNotMatch(args, /accept-new/);
        // mpirun's known_hosts on the launchers comes from the same node key
        const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
        assert.deepEqual(JSON.parse(readAnsibleRunInput(nccl.inputs.stdin).extraVars).nccl_validate_host_keys, [node.publicKey]);
        // the private halves: in the nodes' and the entry's user data only, as secrets; in no command's input
        const userData = registered.filter((r) => ["aws:ec2/launchTemplate:LaunchTemplate", "aws:ec2/instance:Instance",
            "azure-native:compute:VirtualMachineScaleSet", "azure-native:compute:VirtualMachine"].includes(r.type));
        assert.equal(userData.length, 2 + heads.length);
        for (const r of userData) {
            const secret = r.type.startsWith("aws:") ? r.inputs.userData : r.inputs[r.type.endsWith("ScaleSet") ? "virtualMachineProfile" : "osProfile"];
            assert.ok(isSecretInput(secret), `${r.type}: the user data is a secret`);
        }
        const commands = JSON.stringify(registered.filter((r) => r.type.startsWith("command:")).map((r) => r.inputs));
        for (const k of [node, way, head]) {
            const body = k.privateKey.split("\n")[1];
            assert.ok(!commands.includes(body), "a private host key in a command's input");
            assert.ok(!commands.includes(Buffer.from(k.privateKey).toString("base64").slice(0, 40)));
        }
    });
}

test("provision: false creates only the fabric", async () => {
    const spec = { ...example("aws-p5.yaml"), provision: false };
    const c = new mod.RdmaCluster("demo", { spec });
    await unwrap(c.nodePrivateIps);
    await settle();
    assert.equal(c.software, undefined);
    assert.ok(!registered.some((r) => r.type === "rdmakit:index:AnsiblePlaybook" || r.type === "rdmakit:index:ClusterValidation"));
});

function propertyErrors(f: () => unknown): Array<{ propertyPath: string; reason: string }> {
    try {
        f();
    } catch (e: any) {
        assert.ok(pulumi.InputPropertiesError.isInstance(e), `expected InputPropertiesError, got ${e}`);
        return e.errors;
    }
    assert.fail("accepted");
}

test("an invalid spec fails before any resource, with every field named", () => {
    const errors = propertyErrors(() => new mod.RdmaCluster("bad", {
        spec: { ...example("aws-p5.yaml"), nodes: 0, fabric: "efa" }, sshPrivateKey: KEY,
    }));
    assert.deepEqual(errors.map((e) => e.propertyPath).sort(), ["cluster.fabric", "cluster.nodes"]);
    assert.match(errors.find((e) => e.propertyPath === "cluster.fabric")!.reason, /aws-efa, azure-ib, roce/);
    assert.deepEqual(registered, []);
});

test("provisioning without the SSH key, or with a plain-text key, is refused before anything is created", () => {
    const missing = propertyErrors(() => new mod.RdmaCluster("nokey", { spec: example("aws-p5.yaml") }));
    assert.equal(missing[0].propertyPath, "rdmakit:sshPrivateKey");
    assert.match(missing[0].reason, /--secret/);
    const plain = propertyErrors(() => new mod.RdmaCluster("plain", {
        spec: example("aws-p5.yaml"), sshPrivateKey: "-----BEGIN OPENSSH PRIVATE KEY-----abc", sshPrivateKeyIsSecret: false,
    }));
    assert.equal(plain[0].propertyPath, "rdmakit:sshPrivateKey");
    assert.ok(!plain[0].reason.includes("BEGIN OPENSSH"), "the key is never echoed");
    assert.deepEqual(registered, []);
});

test("the missing key's advice fits who passes it: stack config for rdmakit's own program, the argument for a team's", () => {
    assert.equal(mod.missingKeyIssue("rdmakit").path, "rdmakit:sshPrivateKey");
    const team = mod.missingKeyIssue("gpu-team");
    assert.equal(team.path, "sshPrivateKey");
    assert.match(team.allowed!, /sshPrivateKey: new pulumi\.Config\(\)\.requireSecret\("sshPrivateKey"\) in the program, after pulumi config set --secret gpu-team:sshPrivateKey/);
    assert.doesNotMatch(team.allowed!, /rdmakit:sshPrivateKey/);
});

test("cluster.ansible: an excluded node is in neither step, forks and the tolerance reach both runs; a bad name is refused first", async () => {
    const base = example("aws-p5.yaml");
    const probe = new mod.RdmaCluster("probe", { spec: base, sshPrivateKey: KEY });
    const all = probe.plan.validation.hostNames;
    await settle();
    registered = [];
    const c = new mod.RdmaCluster("demo", { spec: { ...base, ansible: { exclude: [all[1]], maxFailPercentage: 10 } }, sshPrivateKey: KEY });
    const ips = await unwrap(c.nodePrivateIps);
    await settle();
    const run = registered.find((r) => r.name === "demo-software-run")!;
    assert.equal(envOf(run).ANSIBLE_FORKS, "3");
    assert.equal(envOf(run).RDMAKIT_MAX_FAIL_PERCENTAGE, "10");
    const hosts = parseYaml(readAnsibleRunInput(run.inputs.stdin).inventory).all.hosts;
    // the nodes left, then the Slurm head node (slurm.conf still names the excluded node: it stays drained)
    assert.deepEqual(Object.keys(hosts), [all[0], all[2], all[3], "p5-demo-head"]);
    assert.deepEqual(Object.values(hosts).map((h: any) => h.ansible_host), [ips[0], ips[2], ips[3], MOCK_HEAD_IP]);
    const nccl = registered.find((r) => r.name === "demo-validation-nccl")!;
    const vars = JSON.parse(readAnsibleRunInput(nccl.inputs.stdin).extraVars);
    assert.deepEqual(vars.nccl_validate_hosts, [0, 2, 3].map((i) => ({ name: all[i], address: ips[i] })));
    assert.equal(envOf(nccl).RDMAKIT_EXCLUDED, all[1]);
    assert.equal(envOf(nccl).ANSIBLE_FORKS, "3");
    assert.deepEqual(c.provisioning?.excludedNodes, [all[1]]);
    assert.deepEqual(await unwrap(c.provisioning!.failedNodes), []);

    registered = [];
    assert.throws(() => new mod.RdmaCluster("bad", { spec: { ...base, ansible: { exclude: ["gpu-nope"] } }, sshPrivateKey: KEY }),
        (e: Error) => /cluster\.ansible\.exclude\[0\]/.test(e.message) && /names no node of this cluster/.test(e.message));
    assert.deepEqual(registered, []);
});
