/**
 * Child process of the migration tests: lists the workspace's sessions, opens the legacy
 * session at argv[4] for writing (migrating it), and prints the result as one JSON line.
 * argv: cwd agentDir ready|go file waitMs
 */
import { listSessionCandidates, openCandidateForWrite, resolveManagedScope } from "../../../src/index.js";

const [cwd, agentDir, signal, file, waitMs] = process.argv.slice(2) as [string, string, string, string, string];

async function main(): Promise<unknown> {
  // The legacy seat is an older tool's 0755 tree: the scope is described, and the sources are read by their own rules.
  const scope = resolveManagedScope({ cwd, agentDir, mode: "sources" });
  if (scope.kind !== "resolved") return scope;
  const listing = await listSessionCandidates(scope.scope);
  if (listing.kind !== "listed") return listing;
  // Once another process has migrated it, the source is hidden and its v2 copy is listed.
  const candidate = listing.candidates.find((c) => c.path === file || c.migratedFrom === file);
  if (candidate === undefined) return { kind: "error", code: "not_listed" };
  if (signal === "ready") process.stdout.write("ready\n");
  return openCandidateForWrite(scope.scope, candidate, { waitMs: Number(waitMs) });
}

main().then(
  (result) => process.stdout.write(`${JSON.stringify(result)}\n`),
  (error: unknown) => {
    process.stderr.write(String((error as Error)?.stack ?? error));
    process.exit(2);
  },
);
