/**
 * The component package's provider: what runs when the engine starts rdmakit as a plugin for a Python, Go, .NET,
 * Java or YAML program (components/plugin.ts is its entry). It is Pulumi's ComponentProvider, whose schema comes
 * from the analyzer reading components/ (@pulumi/pulumi/provider/experimental), with the one thing that analyzer
 * cannot say (3.248.0: its property definitions carry no secret flag): the inputs that hold key material are
 * marked `secret` in the schema it serves, and Construct refuses a plain value for one of them.
 *
 * `secret: true` on a property is the schema's own flag (pulumi/pulumi pkg/codegen/schema/schema.go PropertySpec
 * `Secret`, "specifies if the property is secret"); the SDK generators wrap such a resource input in a secret
 * whatever the program passes (pkg/codegen/python/gen.go v3.248.0: `pulumi.Output.secret(<arg>)`), so the engine
 * stores it encrypted in the component's inputs. A program that builds the request itself (a hand-written remote
 * component, an SDK generated before the flag) can still send a plain key: Construct is where that is stopped,
 * before any resource is registered, so the key never reaches the state in plain text.
 */
import * as pulumi from "@pulumi/pulumi";
import { main as serveGrpc } from "@pulumi/pulumi/provider";
import { ComponentProvider, getPulumiComponents } from "@pulumi/pulumi/provider/experimental";
import { PACKAGE_ROOT } from "./assets";
import { RDMA_CLUSTER_SECRET_INPUTS, RDMA_CLUSTER_TOKEN } from "./cluster";
import { SpecError, toInputPropertiesError, type SpecIssue } from "./errors";
import * as offered from "./package-components";
import { ROCE_CLUSTER_SECRET_INPUTS, ROCE_CLUSTER_TOKEN } from "./roce/cluster";

/** The package's name: the first part of every component token (rdmakit:index:…), package.json `name`. */
export const PACKAGE_NAME = "rdmakit";

/** Per component token, the inputs that hold key material (each declared beside its component's args). */
export const SECRET_INPUTS: Readonly<Record<string, readonly string[]>> = {
    [RDMA_CLUSTER_TOKEN]: RDMA_CLUSTER_SECRET_INPUTS,
    [ROCE_CLUSTER_TOKEN]: ROCE_CLUSTER_SECRET_INPUTS,
};

interface SchemaShape { resources?: Record<string, { inputProperties?: Record<string, Record<string, unknown>> }> }

/**
 * The analyzer's schema (JSON text) with `secret: true` on every input SECRET_INPUTS names. A name the schema lacks
 * is an error, so a renamed argument can never quietly lose its flag.
 */
export function markSecretInputs(schemaJson: string, secrets: Readonly<Record<string, readonly string[]>> = SECRET_INPUTS): string {
    const schema = JSON.parse(schemaJson) as SchemaShape;
    for (const [token, names] of Object.entries(secrets)) {
        const inputs = schema.resources?.[token]?.inputProperties;
        for (const name of names) {
            if (!inputs?.[name]) throw new Error(`rdmakit provider: ${token} has no input ${name} in the analyzer's schema; SECRET_INPUTS names it`);
            inputs[name] = { ...inputs[name], secret: true };
        }
    }
    return JSON.stringify(schema);
}

/**
 * The secret inputs of a Construct request that came as plain values. Construct's inputs are deserialized by the
 * provider server (@pulumi/pulumi provider/server.js deserializeInputs): a secret arrives as an Output whose
 * secret flag is set; a plain value arrives as itself, or as an Output that is not secret when it has dependencies.
 */
export async function plainSecretInputs(type: string, inputs: pulumi.Inputs, secrets: Readonly<Record<string, readonly string[]>> = SECRET_INPUTS): Promise<string[]> {
    const plain: string[] = [];
    for (const name of secrets[type] ?? []) {
        const value = inputs[name];
        if (value === undefined || value === null) continue;
        if (pulumi.Output.isInstance(value) && (await pulumi.isSecret(value))) continue;
        plain.push(name);
    }
    return plain;
}

/** Pulumi's ComponentProvider with the secret inputs marked in the schema and enforced in Construct. */
export class RdmakitProvider extends ComponentProvider {
    private marked?: string;

    constructor() {
        super({ components: getPulumiComponents(offered), dirname: PACKAGE_ROOT, name: PACKAGE_NAME });
    }

    override async getSchema(): Promise<string> {
        this.marked ??= markSecretInputs(await super.getSchema());
        return this.marked;
    }

    override async construct(name: string, type: string, inputs: pulumi.Inputs, options: pulumi.ComponentResourceOptions): Promise<pulumi.provider.ConstructResult> {
        const plain = await plainSecretInputs(type, inputs);
        if (plain.length > 0) {
            const issues: SpecIssue[] = plain.map((p) => ({
                path: p, value: "(hidden)",
                message: "is a plain value: the engine would keep it in the stack's state in plain text",
                allowed: "a secret (Python: pulumi.Output.secret(key) or config.require_secret; an SDK generated from this package's schema marks it secret itself)",
            }));
            throw toInputPropertiesError(new SpecError(issues, `${type.split(":").pop()} ${name}: key material must be a secret`));
        }
        return super.construct(name, type, inputs, options);
    }
}

/** Serves the provider over gRPC as a plugin does: prints its port, argv is the engine's address. */
export function serveProvider(args: string[] = process.argv.slice(2)): Promise<void> {
    return serveGrpc(new RdmakitProvider(), args);
}
