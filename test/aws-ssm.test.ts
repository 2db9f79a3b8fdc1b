// Session Manager as Ansible's SSH transport (access: ssm): the inventory's ProxyCommand, checked as text and then
// run by the real Ansible and OpenSSH against a stand-in `aws` on PATH that records how it was called (the AWS
// guide's `aws ssm start-session --target <instance> --document-name AWS-StartSSHSession --parameters portNumber=<port>`).
import { after, test } from "node:test";
import { spawnSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import assert from "node:assert/strict";
import { parseInventory } from "../components/provision/inventory-read";
import { renderInventory } from "../components/provision/inventory";
import { SpecError } from "../components/errors";

const scratch = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-ssm-"));
after(() => fs.rmSync(scratch, { recursive: true, force: true }));

const hosts = [
    { name: "node-0", address: "i-0a1b2c3d4e5f60718", user: "ubuntu" },
    { name: "node-1", address: "i-0f1e2d3c4b5a69788", user: "ubuntu" },
];

test("the inventory: instance ids as addresses, the Session Manager hop for every host, the region and profile", () => {
    const inv: any = parseInventory(renderInventory({ hosts, ssm: { region: "us-east-2", profile: "gpu-admin" }, vars: {} }));
    assert.equal(inv.all.hosts["node-1"].ansible_host, "i-0f1e2d3c4b5a69788");
    assert.equal(inv.all.vars.ansible_ssh_common_args, "-o ForwardAgent=no -o ClearAllForwardings=yes -o StrictHostKeyChecking=accept-new -o ProxyCommand=\"aws ssm start-session " +
        "--target %h --document-name AWS-StartSSHSession --parameters portNumber=%p --region us-east-2 --profile gpu-admin\"");
});

test("refused: an address that is not an instance id, a bastion as well, a region SSH cannot carry", () => {
    const issues = (f: () => unknown) => { try { f(); } catch (e) { return (e as SpecError).issues.map((i) => i.path); } return []; };
    assert.deepEqual(issues(() => renderInventory({ hosts: [{ ...hosts[0], address: "10.0.0.5" }], ssm: { region: "us-east-2" }, vars: {} })), ["hosts[0].address"]);
    assert.deepEqual(issues(() => renderInventory({ hosts, bastion: { address: "198.51.100.7", user: "ubuntu" }, ssm: { region: "us-east-2" }, vars: {} })), ["ssm"]);
    assert.deepEqual(issues(() => renderInventory({ hosts, ssm: { region: "us-east-2; rm -rf /" }, vars: {} })), ["ssm.region"]);
});

test("Ansible's ssh runs the hop as the AWS guide writes it, one session per host with its instance id and port",
    { skip: spawnSync("ansible", ["--version"]).status === 0 ? false : "ansible is not installed", timeout: 60_000 }, () => {
        const bin = path.join(scratch, "bin");
        fs.mkdirSync(bin);
        const calls = path.join(scratch, "calls");
        // records its arguments and closes the session at once: ssh then fails to connect, which is expected here
        fs.writeFileSync(path.join(bin, "aws"), `#!/bin/sh\nprintf '%s\\n' "$*" >> ${JSON.stringify(calls)}\nexit 1\n`, { mode: 0o755 });
        const invFile = path.join(scratch, "inventory.yml");
        fs.writeFileSync(invFile, renderInventory({ hosts, ssm: { region: "us-east-2" }, vars: {} }));
        const r = spawnSync("ansible", ["all", "-i", invFile, "-m", "ansible.builtin.ping", "-o"], {
            encoding: "utf8", timeout: 50_000,
            env: { ...process.env, PATH: `${bin}:${process.env.PATH}`, ANSIBLE_SSH_RETRIES: "0", ANSIBLE_TIMEOUT: "5", ANSIBLE_HOST_KEY_CHECKING: "False", HOME: scratch },
        });
        assert.notEqual(r.status, 0, "the stand-in session carries nothing");
        assert.match(r.stdout + r.stderr, /UNREACHABLE/);
        assert.deepEqual(fs.readFileSync(calls, "utf8").trim().split("\n").sort(), hosts.map((h) =>
            `ssm start-session --target ${h.address} --document-name AWS-StartSSHSession --parameters portNumber=22 --region us-east-2`).sort());
    });

test("a bastion in an existing VPC is refused with the way that works there: ssm needs no inbound SSH, but a way to SSM", async () => {
    const { checkAwsClusterInput } = await import("../components/aws/checks");
    const { planCluster } = await import("../components/plan");
    const { parseClusterSpec } = await import("../components/spec");
    const spec = parseClusterSpec({
        name: "train", fabric: "aws-efa", nodes: 2,
        ssh: { allowedCidrs: ["203.0.113.0/24"], publicKey: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIJzEsswbLnQW0KcE2KIJP0azERpyi762w0HUP4LhNB/u test" },
        aws: { region: "us-east-2", availabilityZone: "us-east-2b", instanceType: "p5.48xlarge", access: "bastion",
            network: { vpcId: "vpc-0abc1234", subnets: [{ id: "subnet-0def5678", availabilityZone: "us-east-2b" }] } },
    });
    const issue = checkAwsClusterInput(spec, planCluster(spec)).find((i) => i.path === "cluster.aws.access");
    assert.ok(issue);
    assert.doesNotMatch(issue.allowed!, /allowedCidrs/, "ssm takes no SSH from allowedCidrs");
    assert.match(issue.allowed!, /^ssm \(no inbound SSH: Ansible's SSH runs inside Session Manager sessions the nodes open outbound, so the subnet needs a 0\.0\.0\.0\/0 route through a NAT gateway, or interface endpoints for ssm, ssmmessages and ec2messages with private DNS in the VPC\)/);
    assert.doesNotMatch(issue.allowed!, /route to the internet/, "an internet gateway route is no way out for nodes without a public IP");
});
