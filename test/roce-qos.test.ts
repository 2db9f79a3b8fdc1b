import { describe, it } from "node:test";
import assert from "node:assert/strict";
import { SpecError } from "../components/errors";
import { classLayout, ncclHcaList, pfcVector, planQos, tosFor } from "../components/roce/qos";
import { NON_DEFAULT_LOSSY, spec } from "./fixtures/roce/helpers";
import { parseClusterSpec } from "../components/spec";
import { scaledStack } from "../bench/scale";

describe("planQos", () => {
    it("ToS byte: DSCP << 2 | ECT(0); 106 for DSCP 26, 98 for 24, 194 for 48", () => {
        assert.equal(tosFor(26), 106);
        assert.equal(tosFor(24), 98);
        assert.equal(tosFor(48), 194);
    });
    it("PFC vector and NCCL HCA list", () => {
        assert.equal(pfcVector([3]), "0,0,0,1,0,0,0,0");
        assert.equal(pfcVector([]), "0,0,0,0,0,0,0,0");
        assert.equal(ncclHcaList(["mlx5_0", "mlx5_1:2"]), "=mlx5_0:1,mlx5_1:2");
    });
    it("default plan: NCCL env, host vars, switch layout", () => {
        const p = planQos(spec());
        assert.deepEqual(p.ncclEnv, { NCCL_IB_TC: "106", NCCL_IB_HCA: "=mlx5_0:1,mlx5_1:1", NCCL_SOCKET_IFNAME: "=eno1", NCCL_IB_GID_INDEX: "3" });
        const v = p.hosts[1].vars;
        assert.deepEqual(v.roce_host_interfaces, ["ens1f0np0", "ens2f0np0"]);
        assert.deepEqual(v.roce_host_rdma_devices, ["mlx5_0", "mlx5_1"]);
        assert.equal(v.roce_host_dscp, 26);
        assert.equal(v.roce_host_priority, 3);
        assert.equal(v.roce_host_pfc, true);
        assert.equal(v.roce_host_pfc_vector, "0,0,0,1,0,0,0,0");
        assert.equal(v.roce_host_cc_prio_mask, 8);
        assert.equal(v.roce_host_tos, 106);
        assert.equal(v.roce_host_lossy_tuning, false);
        assert.equal(v.roce_host_cable_length_m, 8); // 7.5 m in the spec, whole metres for mlnx_qos
        const sonic = p.switches.find((s) => s.os === "sonic")!;
        assert.deepEqual([sonic.mtu, sonic.sshUser, sonic.sshPort], [9216, "admin", 22]);
        assert.equal(p.switches.find((s) => s.os === "eos")!.mtu, 9214);
        assert.equal(p.switches.find((s) => s.os === "nvue")!.sshUser, "cumulus");
    });
    it("DSCP 24 / priority 4 lossy: no PFC anywhere, lossy NIC tuning, ToS 98", () => {
        const p = planQos(spec(NON_DEFAULT_LOSSY));
        assert.deepEqual(p.pfc.priorities, []);
        assert.equal(p.tos, 98);
        assert.equal(p.hosts[0].vars.roce_host_pfc, false);
        assert.equal(p.hosts[0].vars.roce_host_pfc_vector, "0,0,0,0,0,0,0,0");
        assert.equal(p.hosts[0].vars.roce_host_lossy_tuning, true);
        assert.equal(p.hosts[0].vars.roce_host_ecn, true);
        assert.equal(p.hosts[0].vars.roce_host_cc_prio_mask, 16);
        assert.equal(p.ncclEnv.NCCL_IB_TC, "98");
    });
    it("class layout: NVUE keeps RoCE on TC 3; SONiC/EOS use TC = queue = PG = priority", () => {
        assert.deepEqual(classLayout("nvue", 4, 6).roce, { priority: 4, trafficClass: 3, queue: 3, priorityGroup: 3 });
        assert.deepEqual(classLayout("sonic", 4, 6).roce, { priority: 4, trafficClass: 4, queue: 4, priorityGroup: 4 });
        assert.deepEqual(classLayout("eos", 3, 5).cnp, { priority: 5, trafficClass: 5, queue: 5, priorityGroup: 5 });
    });
    it("per-host GID index and rail lists: the common env keeps only what all hosts share", () => {
        const s = spec();
        s.hosts[1].gidIndex = 5;
        s.hosts[1].railNics = ["mlx5_2", "mlx5_3"];
        const p = planQos(s);
        assert.deepEqual(p.ncclEnv, { NCCL_IB_TC: "106", NCCL_SOCKET_IFNAME: "=eno1" });
        assert.equal(p.hosts[1].ncclEnv.NCCL_IB_GID_INDEX, "5");
        assert.equal(p.hosts[1].ncclEnv.NCCL_IB_HCA, "=mlx5_2:1,mlx5_3:1");
        assert.equal(p.hosts[1].vars.roce_host_gid_index, 5);
        assert.equal(p.hosts[0].vars.roce_host_gid_index, 3);
    });
    it("hosts alike in rails, bootstrap NIC and GID index share their rail lists and NCCL environment; others do not", () => {
        const [a, b] = planQos(spec()).hosts;
        assert.equal(b.ncclEnv, a.ncclEnv);
        assert.equal(b.railNics, a.railNics);
        assert.equal(b.vars.roce_host_interfaces, a.vars.roce_host_interfaces);
        assert.equal(b.railNetdevs, a.vars.roce_host_interfaces);
        const s = spec();
        s.hosts[1].gidIndex = 5;
        const [c, d] = planQos(s).hosts;
        assert.notEqual(d.ncclEnv, c.ncclEnv);
        assert.deepEqual([c.ncclEnv.NCCL_IB_GID_INDEX, d.ncclEnv.NCCL_IB_GID_INDEX], ["3", "5"]);
        assert.deepEqual(d.railNics, c.railNics);
    });
    it("refuses an inconsistent spec with every field path", () => {
        const s = spec();
        s.qos.cnpPriority = 3;
        assert.throws(() => planQos(s), (e: unknown) => e instanceof SpecError && e.issues.some((i) => i.path === "cluster.roce.qos.cnpPriority"));
    });
});

describe("planQos after a spec parse", () => {
    it("plans the section the parse found clean without checking it again, and checks a copy changed since", () => {
        const cluster = (scaledStack("roce-h100.yaml", 8) as { config: Record<string, unknown> }).config["rdmakit:cluster"];
        const roce = parseClusterSpec(cluster).roce!;
        assert.equal(planQos(roce).hosts.length, 8);
        // the parsed section with CNPs on the RoCE priority: another text, so checked (rule of checkRoceSpec)
        const changed = structuredClone(roce);
        changed.qos.cnpPriority = changed.qos.rocePriority;
        assert.throws(() => planQos(changed), (e: unknown) => e instanceof SpecError && e.issues.some((i) => i.path === "cluster.roce.qos.cnpPriority"));
    });
});
