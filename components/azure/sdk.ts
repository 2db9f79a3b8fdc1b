// The @pulumi/azure-native modules the kit uses, each loaded on its own (the package root would load every service).
// @pulumi/azure-native is an optional peer (components/peer.ts): ./sdk-present comes first and names the package when
// it is missing. Usage stays `compute.VirtualMachineScaleSet`, as with the module imports.
import "./sdk-present";
export * as authorization from "@pulumi/azure-native/authorization";
export * as compute from "@pulumi/azure-native/compute";
export * as network from "@pulumi/azure-native/network";
export * as resources from "@pulumi/azure-native/resources";
