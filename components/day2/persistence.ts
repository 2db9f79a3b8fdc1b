/**
 * Which health findings may replace a node: the health gate decides (components/health/types.ts Persistence, set by
 * its grader per finding: "persistent" when the node's current state shows it, "transient" for an event in the
 * kernel log's window or a one-snapshot reading). The state carries that word per finding; a finding without one
 * (a state written before the gate said it) is "unknown", which the repair policy never replaces on.
 */
import type { Classify } from "./repair";

export const classifyFinding: Classify = (f) => f.persistence ?? "unknown";
