/** Node health gate: parsers of the seven tools' outputs, the grade against the stack's hardware, the report. */
export * from "./types";
export { gradeNode, shortBdf, type NodeFiles } from "./grade";
export { healthExpectation, describeExpectation } from "./expect";
export { gradeHealthDir, healthExitCode, formatHealth, verdictWord } from "./report";
export { parseNvidiaSmiQ } from "./nvidia-smi";
export { parseNvlinkStatus } from "./nvlink";
export { parseDcgmText, parseDcgmJson } from "./dcgm";
export { parseLspci } from "./lspci";
export { parseRdmaDevices, functionKey } from "./rdma-devices";
export { parseIbstat, parseFiInfo } from "./ibstat";
export { parseDmesg } from "./dmesg";
