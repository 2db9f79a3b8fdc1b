/**
 * Which health findings are transient (gone after a reset or a reboot) and which persistent (the hardware): the
 * repair policy replaces a node only on persistent ones. The classification belongs to the health gate (issue 33);
 * until it is merged, this seam knows only what the grader's components say by themselves, and everything else is
 * "unknown", which the policy never replaces on (a failing node is drained or reported instead).
 */
import type { Classify } from "./repair";

/**
 * `clocks`: the grader's clock findings are throttle reasons (thermal, power), a condition of the moment, not of the
 * part (nvidia-smi -q "Clocks Event Reasons"; components/health/nvidia-smi.ts). Everything else: unknown.
 */
export const classifyFinding: Classify = (f) => (f.component === "clocks" ? "transient" : "unknown");
