// Loaded before any @pulumi/aws module (first import of ./sdk): without the SDK, the error names the package to install.
import { assertSdk } from "../peer";

assertSdk("aws-efa", require.resolve);
