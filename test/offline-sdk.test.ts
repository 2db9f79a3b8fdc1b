// What `rdmakit plan` changes in the Pulumi SDK while the program runs on the mock engine (components/offline.ts):
// the promise tags of the SDK's leak report (runtime/debuggable.js) are left off, and everything the report counts
// stays. The program here is a constructed one that calls the SDK's promise function directly.
import { test } from "node:test";
import assert from "node:assert/strict";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { runProgramOffline } from "../components/offline";

const root = path.join(__dirname, "..");
// the SDK's internal modules, as offline.ts reads them (assigned to below, which an import binding cannot be)
/* eslint-disable @typescript-eslint/no-require-imports */
const debuggable = require("@pulumi/pulumi/runtime/debuggable") as { debugPromiseLeaks: boolean; debuggablePromise: (p: Promise<unknown>, ctx: string) => Promise<unknown> };
const state = require("@pulumi/pulumi/runtime/state") as { getStore: () => { leakCandidates: Set<Promise<unknown>> } };
const { RegisterResourceResponse } = require("@pulumi/pulumi/proto/resource_pb") as { RegisterResourceResponse: new () => { setUrn: (u: string) => void } };
/* eslint-enable @typescript-eslint/no-require-imports */

interface Seen { during: unknown; responseText: string; first: Promise<unknown>; second: Promise<unknown>; settled: Promise<unknown>; rejected: Promise<unknown>; err?: unknown; primitive?: unknown }

/** Runs a program that hands the SDK's promise function four promises and records what it saw in globalThis. */
async function runProgram(): Promise<Seen> {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rdmakit-offline-sdk-"));
    const program = path.join(dir, "index.js");
    fs.writeFileSync(program, [
        `const dbg = require(${JSON.stringify(require.resolve("@pulumi/pulumi/runtime/debuggable"))});`,
        "const seen = globalThis.offlineSdkSeen = { during: dbg.debuggablePromise };",
        `const { RegisterResourceResponse } = require(${JSON.stringify(require.resolve("@pulumi/pulumi/proto/resource_pb"))});`,
        "const response = new RegisterResourceResponse(); response.setUrn('urn:pulumi:s::p::t::n');",
        "seen.responseText = `${response}`;",
        "seen.first = new Promise(() => {}); dbg.debuggablePromise(seen.first, 'first');",
        "seen.second = new Promise(() => {}); dbg.debuggablePromise(seen.second, 'second');",
        "seen.settled = Promise.resolve(1); dbg.debuggablePromise(seen.settled, 'settled');",
        "seen.rejected = Promise.reject(new Error('boom'));",
        "dbg.debuggablePromise(seen.rejected, 'rejected').catch((e) => { seen.err = e; });",
        "dbg.debuggablePromise(Promise.reject('a text'), 'primitive').catch((e) => { seen.primitive = e; });",
    ].join("\n"));
    await runProgramOffline(path.join(root, "examples", "roce-h100.yaml"), "offline-sdk", program);
    return (globalThis as unknown as { offlineSdkSeen: Seen }).offlineSdkSeen;
}

test("offline, the SDK's promises go untagged and are still counted for its leak report; its function is put back after", { timeout: 120_000 }, async () => {
    const original = debuggable.debuggablePromise;
    const seen = await runProgram();
    const leaks = state.getStore().leakCandidates;
    try {
        assert.notEqual(seen.during, original, "replaced while the program runs");
        assert.equal(debuggable.debuggablePromise, original, "put back after");
        // a registration response is not written out as text while the program runs (only a debug line, dropped, has it)
        assert.equal(seen.responseText, "RegisterResourceResponse");
        const after = new RegisterResourceResponse();
        after.setUrn("urn:pulumi:s::p::t::n");
        assert.match(`${after}`, /urn:pulumi:s::p::t::n/, "the message's own text after");
        // the first promise goes through the SDK's own function (it schedules the report at exit): tagged
        assert.equal((seen.first as unknown as { _debugCtx?: string })._debugCtx, "first");
        assert.equal((seen.second as unknown as { _debugCtx?: string })._debugCtx, undefined, "the others untagged");
        assert.ok(leaks.has(seen.first) && leaks.has(seen.second), "unsettled promises are leak candidates");
        assert.ok(!leaks.has(seen.settled) && !leaks.has(seen.rejected), "settled ones are not");
        assert.equal((seen.err as { promise?: unknown }).promise, seen.rejected, "a rejection's error names its promise");
        // the SDK sets it in strict mode: a text cannot take a property, so the rejection becomes a TypeError
        assert.ok(seen.primitive instanceof TypeError, String(seen.primitive));
    } finally {
        // the hanging promises would otherwise fail this test process at exit (the report)
        leaks.delete(seen.first);
        leaks.delete(seen.second);
    }
});

test("with PULUMI_DEBUG_PROMISE_LEAKS the report shows every promise's tags, so offline leaves them on", { timeout: 120_000 }, async () => {
    const before = debuggable.debugPromiseLeaks;
    debuggable.debugPromiseLeaks = true;
    const original = debuggable.debuggablePromise;
    let seen: Seen | undefined;
    try {
        seen = await runProgram();
        assert.equal(seen.during, original);
        assert.equal((seen.second as unknown as { _debugCtx?: string })._debugCtx, "second");
    } finally {
        debuggable.debugPromiseLeaks = before;
        if (seen) for (const p of [seen.first, seen.second]) state.getStore().leakCandidates.delete(p);
    }
});
