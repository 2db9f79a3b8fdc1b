/** The scheduler section `rdmakit plan` prints: controller, partition, node line, topology summary. */
import type { SchedulerPlan } from "../plan/scheduler";

export function formatSchedulerSection(s: SchedulerPlan): string[] {
    if (s.type === "none") return ["scheduler: none (scheduler.type none; on roce name cluster.scheduler.controller to run Slurm)"];
    const c = s.controller;
    const where = c.address ? `${c.name} at ${c.address}` : `${c.name}, ${c.instanceType ?? c.vmSize ?? "a head node"} (planned)`;
    const n = s.node;
    const hw = `${n.cpus} CPUs${n.threadsPerCore ? ` (${n.threadsPerCore} threads/core)` : ""}, RealMemory ${n.realMemoryMiB} MiB`;
    const t = s.topology;
    const topo = t.kind === "tree"
        ? `tree, ${t.switches.filter((w) => w.nodes).length} leaf switch(es), ${t.switches.filter((w) => !w.nodes).length} above (${t.source})${t.warnings.map((w) => `; warning: ${w}`).join("")}`
        : t.kind === "flat" ? `flat: ${t.why}` : `tree ${t.note}`;
    return [
        "scheduler: slurm",
        `  controller: ${where}; slurmctld ${s.slurmctldPort}, slurmd ${s.slurmdPort}, srun ${s.srunPortRange[0]}-${s.srunPortRange[1]}`,
        `  partition:  ${s.partition}, ${s.nodeNames.length} nodes, each joining after it passed validation; /home over NFS: ${s.homeNfs ? "yes" : "no"}`,
        `  node line:  ${hw}, gpu:${n.gpus} (${n.gpuFiles}); MpiDefault=${s.mpiDefault}`,
        `  topology:   ${topo}`,
        `  job env:    ${Object.keys(s.jobEnv).join(" ")} (what validation ran with)`,
        // the fabric component creates the cloud head node; bare metal names it (components/provision/head.ts)
        `  installed by pulumi up: the software run adds ${c.address ? "this host" : "the head node it creates"} as the controller and runs the slurm role on it and the nodes`,
    ];
}
