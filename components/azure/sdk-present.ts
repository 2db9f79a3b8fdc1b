// Loaded before any @pulumi/azure-native module (first import of ./sdk): without the SDK, the error names the package
// to install.
import { assertSdk } from "../peer";

assertSdk("azure-ib", require.resolve);
