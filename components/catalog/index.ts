/**
 * The hardware and software catalog as data (`import { AWS_INSTANCE_TYPES } from "rdmakit/catalog"`): instance
 * types, VM sizes, GPUs, NICs and software facts, each entry with its public source. Read-only facts, no resources.
 */
export * from "./types";
export * from "./aws";
export * from "./azure";
export * from "./gpus";
export * from "./nics";
export * from "./software";
export * from "./images";
