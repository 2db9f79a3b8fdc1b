"""A Python program using rdmakit's RdmaCluster, run by the engine tests the way a Python Automation API user runs
one: pulumi.automation's select_stack with an inline program (the SDK serves it to the CLI over --client, so no
Python language host binary runs). The component comes from the SDK that `pulumi package gen-sdk --language python`
generated from the package's provider plugin (pulumi-resource-rdmakit), which the engine starts and Constructs.

    python inline.py '<json: {workDir, stack, verb, cli, keyFile?}>'

verb: up | preview | destroy. keyFile: a file whose text the program passes as ssh_private_key, as `open(key).read()`.
The CLI's output is passed through as it comes; the exit status is the CLI's.
"""

import json
import sys

import pulumi
from pulumi import automation as auto


def program(key_file: str | None) -> None:
    import pulumi_rdmakit as rdmakit

    config = pulumi.Config("rdmakit")
    # a key read from a file is a plain str: the SDK generated from the package's schema makes it a secret
    key = None
    if key_file:
        with open(key_file, encoding="utf-8") as f:
            key = f.read()
    cluster = rdmakit.RdmaCluster("cluster", spec=config.require_object("cluster"), ssh_private_key=key)
    pulumi.export("nodePrivateIps", cluster.node_private_ips)
    pulumi.export("ncclEnv", cluster.nccl_env)
    pulumi.export("fabric", cluster.fabric_kind)
    # the operating state as JSON text: the stack output the day-2 verbs read (rdmakit status/check/ssh/repair --stack)
    pulumi.export("rdmakitState", cluster.operating_state)


def main() -> int:
    req = json.loads(sys.argv[1])
    # For an inline program the work_dir argument is ignored; the option is the project folder (its Pulumi.yaml
    # and Pulumi.<stack>.yaml), else a new temporary one (pulumi.automation select_stack's docstring).
    opts = auto.LocalWorkspaceOptions(work_dir=req["workDir"], pulumi_command=auto.PulumiCommand(root=req["cli"]))
    stack = auto.select_stack(stack_name=req["stack"], project_name="consumer", program=lambda: program(req.get("keyFile")), opts=opts)

    def out(s: str) -> None:
        sys.stdout.write(s + "\n")
        sys.stdout.flush()

    try:
        if req["verb"] == "up":
            stack.up(on_output=out, color="never", expect_no_changes=req.get("expectNoChanges"))
        elif req["verb"] == "preview":
            stack.preview(on_output=out, color="never", expect_no_changes=req.get("expectNoChanges"))
        else:
            stack.destroy(on_output=out, color="never")
    except auto.CommandError as e:
        sys.stderr.write(str(e) + "\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
