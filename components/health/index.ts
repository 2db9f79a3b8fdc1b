/** Node health gate: parsers of the six tools' outputs, the grade against the stack's hardware, the report. */
export * from "./types";
export { gradeNode, shortBdf, type NodeFiles } from "./grade";
export { healthExpectation, describeExpectation } from "./expect";
export { gradeHealthDir, healthExitCode, formatHealth, verdictWord } from "./report";
export { parseNvidiaSmiQ } from "./nvidia-smi";
export { parseNvlinkStatus } from "./nvlink";
export { parseDcgmText, parseDcgmJson } from "./dcgm";
export { parseLspci } from "./lspci";
export { parseIbstat, parseFiInfo } from "./ibstat";
export { parseDmesg } from "./dmesg";
