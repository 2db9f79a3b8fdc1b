// The written-out spec types (components/spec-types.ts, what the package's declarations show) against the zod
// schema that parses the spec: `npm run typecheck` fails on this file when either side gains, loses or retypes a
// field. The runtime test only makes node:test count the file; the checks are the type assertions.
import { test } from "node:test";
import assert from "node:assert/strict";
import type { z } from "zod";
import type { clusterSchema } from "../components/spec";
import type { roceSpecSchema } from "../components/roce/spec";
import type { ClusterSpec, RoceSpec } from "../components/spec-types";
import type { ClusterSpecInput, SchedulerSpecInput } from "../components/types";

/** true when each type is assignable to the other */
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

type Parsed = z.output<typeof clusterSchema>;
// nodes and scheduler get their fabric-dependent defaults after the schema (parseClusterSpec, slurm/spec.ts)
const parsedAgrees: Same<Parsed, Omit<ClusterSpec, "nodes" | "scheduler"> & { nodes?: number; scheduler?: SchedulerSpecInput }> = true;
const roceAgrees: Same<z.output<typeof roceSpecSchema>, RoceSpec> = true;
const inputAgrees: Same<z.input<typeof clusterSchema>, ClusterSpecInput> = true;

test("the written-out spec types and the zod schema agree (checked by tsc)", () => {
    assert.deepEqual([parsedAgrees, roceAgrees, inputAgrees], [true, true, true]);
});
