/** Public API of the validation folder: nccl-tests commands, parser, grader, slow-node finder, report, component. */
export * from "./types";
export { parseNcclLog, isNcclTestsLog, stripLauncherPrefix, busbwFactor, type ParseOptions } from "./parse";
export { scanTransport, evidenceOf } from "./transport";
export { gradeLog, failures, rowBusbw, largestPoint, wrongRows, nodesOf, formatBytes, formatGBps } from "./grade";
export {
    planPairRounds, planFollowUp, findSlowNodes, measure,
    type PairRound, type PairLog, type SlowNodeInput, type SlowNode, type SlowNodeReport, type Measured,
} from "./slow";
export { buildNcclCommands, shQuote, fillPairTemplate, PAIR_PLACEHOLDERS, type Fabric, type NcclCommandInput, type NcclCommands, type MpiCommand } from "./commands";
export { buildReport, formatText, renderChartSvg, classifyLogName, type LogKind, type ReportEntry, type ValidationReport } from "./report";
export { svgToPng } from "./png";
export { runNcclReport, registerNcclReport, expectationResolver, type NcclReportOptions, type NcclReportResult, type ExpectationSet } from "./cli";
export {
    ClusterValidation, validationVars, validateArgs, parseResultLine, VALIDATE_SCRIPT, RESULT_PREFIX, VALIDATE_LOG_NAME, SUMMARISER_NAME,
    renderHostfile, pairRuns, pairLogName, varsDigest,
    type ValidationVars, type ValidationHost, type PairRun, type ClusterValidationArgs, type ValidationRunArgs, type PreflightExpectation, type ValidationResult,
} from "./component";
export { validationArgsFromPlan, KIT_INVENTORY_GROUP, type ValidationSiteArgs, type ValidationRunOptions } from "./fromPlan";
