/**
 * What the engine knows and the mock engine's `newResource` does not pass on: each resource's URN, parent,
 * dependencies and propertyDependencies. The stack policies need them to follow a preview-unknown id (a security
 * group rule's `securityGroupId`, an Auto Scaling group's `launchTemplate.id`) back to the resource it came from.
 *
 * The mock monitor receives them in every RegisterResourceRequest (@pulumi/pulumi runtime/resource.ts fills
 * propertyDependencies for each input that holds an Output) and drops them. {@link withDependencies} wraps the mock
 * monitor's registerResource for the duration of one offline run, reads those fields from the request, and hands the
 * request on unchanged. The wrapper is removed when the run ends, also on failure.
 */
import { MockMonitor } from "@pulumi/pulumi/runtime/mocks";
import type { RecordedResource } from "./offline";

interface Registration {
    urn: string;
    parent?: string;
    dependencies: string[];
    propertyDependencies: Record<string, string[]>;
}

/** The protobuf request's getters the wrapper reads (@pulumi/pulumi proto/resource_pb.d.ts RegisterResourceRequest). */
interface RegisterRequest {
    getType(): string;
    getName(): string;
    getParent(): string;
    getDependenciesList(): string[];
    getPropertydependenciesMap(): { forEach(f: (value: { getUrnsList(): string[] }, key: string) => void): void };
}

const key = (type: string, name: string) => `${type}::${name}`;

/**
 * Runs `run` (an offline program run, e.g. `() => runProgramOffline(...)`) and adds URN, parent, dependencies and
 * propertyDependencies to each recorded resource. A type/name pair registered twice (possible under different parents)
 * is left without them rather than given the wrong ones.
 */
export async function withDependencies<T extends { resources: RecordedResource[] }>(run: () => Promise<T>, monitor: { prototype: object } = MockMonitor): Promise<T> {
    const seen = new Map<string, Registration | "ambiguous">();
    // `monitor`: the MockMonitor of the @pulumi/pulumi copy the program uses (a team's program has its own)
    const proto = monitor.prototype as unknown as {
        registerResource(this: MockMonitor, req: RegisterRequest, cb: unknown): Promise<void>;
    };
    const original = proto.registerResource;
    proto.registerResource = function (this: MockMonitor, req: RegisterRequest, cb: unknown) {
        const parent = req.getParent() || undefined;
        const propertyDependencies: Record<string, string[]> = {};
        req.getPropertydependenciesMap().forEach((v, k) => {
            propertyDependencies[k] = v.getUrnsList();
        });
        // the same URN the mock monitor gives the resource (private newUrn: parent type $ type)
        const urn = (this as unknown as { newUrn(p: string, t: string, n: string): string }).newUrn(req.getParent(), req.getType(), req.getName());
        const k = key(req.getType(), req.getName());
        seen.set(k, seen.has(k) ? "ambiguous" : { urn, parent, dependencies: req.getDependenciesList(), propertyDependencies });
        return original.call(this, req, cb);
    };
    try {
        const result = await run();
        const resources = result.resources.map((r): RecordedResource => {
            const reg = seen.get(key(r.type, r.name));
            return reg === undefined || reg === "ambiguous" ? r : { ...r, ...reg };
        });
        return { ...result, resources };
    } finally {
        proto.registerResource = original;
    }
}
