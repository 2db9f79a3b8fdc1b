/** The validation folder without its component: nccl-tests commands, parser, grader, slow-node finder, report. */
export * from "./types";
export { parseNcclLog, isNcclTestsLog, stripLauncherPrefix, busbwFactor, type ParseOptions } from "./parse";
export { scanTransport, evidenceOf } from "./transport";
export { gradeLog, failures, rowBusbw, largestPoint, wrongRows, nodesOf, formatBytes, formatGBps } from "./grade";
export {
    planPairRounds, planFollowUp, findSlowNodes, measure,
    type PairRound, type PairLog, type SlowNodeInput, type SlowNode, type SlowNodeReport, type Measured,
} from "./slow";
export { buildNcclCommands, shQuote, fillPairTemplate, PAIR_PLACEHOLDERS, type NcclCommandInput, type NcclCommands, type MpiCommand } from "./commands";
export { buildReport, formatText, renderChartSvg, classifyLogName, type LogKind, type ReportEntry, type ValidationReport } from "./report";
export { svgToPng } from "./png";
export { runNcclReport, expectationResolver, type NcclReportOptions, type NcclReportResult, type ExpectationSet } from "./cli";
