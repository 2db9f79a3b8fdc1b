import { execFile } from "child_process";
import { redactSecrets } from "../errors";

/**
 * Runs the AWS CLI where pulumi up runs, as the capacity wait will run it (the stack's aws:profile, the process's
 * environment), and reads its `--output json` answer. Resolves to the parsed JSON or why there is none; never
 * rejects. The AWS CLI v2 pages through a list call itself and prints one document (no NextToken unless asked for
 * fewer items). source: https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-pagination.html
 */
export function runAwsCliJson(args: string[], profile: string | undefined, run: typeof execFile = execFile): Promise<{ json: unknown } | { error: string }> {
    return new Promise((resolve) => {
        run("aws", [...args, "--output", "json"],
            // an account's whole instance list can be megabytes; the default 1 MiB would cut it off
            { env: { ...process.env, ...(profile ? { AWS_PROFILE: profile } : {}) }, timeout: 60_000, encoding: "utf8", maxBuffer: 256 * 1024 * 1024 },
            (err, stdout, stderr) => {
                if (err) {
                    const why = (err as NodeJS.ErrnoException).code === "ENOENT" ? "the aws command is not installed" : String(stderr || err.message).trim().split("\n").pop();
                    resolve({ error: redactSecrets(why ?? "no answer") });
                    return;
                }
                try {
                    resolve({ json: JSON.parse(String(stdout)) });
                } catch {
                    resolve({ error: "its answer was not JSON" });
                }
            });
    });
}
