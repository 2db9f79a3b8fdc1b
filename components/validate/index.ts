/** Public API of the validation folder: nccl-tests commands, parser, grader, slow-node finder, report, component. */
export * from "./logs";
export { registerNcclReport } from "./cli";
export { type Fabric } from "./commands";
export {
    ClusterValidation, validationVars, validateArgs, parseResultLine, VALIDATE_SCRIPT, RESULT_PREFIX, VALIDATE_LOG_NAME, SUMMARISER_NAME,
    renderHostfile, pairRuns, pairLogName, varsDigest, fabricReportArgs,
    type ValidationVars, type ValidationHost, type PairRun, type ClusterValidationArgs, type ValidationRunArgs, type PreflightExpectation, type ValidationResult,
} from "./component";
export { proveFabric, checkRequirement, fabricOfPlan, FABRICS, type FabricName, type FabricRequirement } from "./fabric";
export { validationArgsFromPlan, KIT_INVENTORY_GROUP, type ValidationSiteArgs, type ValidationRunOptions } from "./fromPlan";
