/**
 * The migration run synchronously (pi's factories): the same steps as the asynchronous one, each wait done on the
 * thread, so the same copy, receipt and refusals; failures are values, never thrown.
 */
import fs from "node:fs";
import path from "node:path";

import { describe, expect, it } from "vitest";

import { listSessionCandidatesSync, openCandidateForWriteSync, RECEIPTS_DIRECTORY } from "../../src/migration/index.js";
import { INTERNAL_DIRECTORY } from "../../src/scope/index.js";
import { useSandboxes } from "../scope/helpers.js";
import { candidateAt, scopeOf, treeHashes, writeLegacySession } from "./fixtures.js";

const sandbox = useSandboxes();

describe("openCandidateForWriteSync", () => {
  it("copies transcript and artifacts with a committed receipt, the source byte-identical; a second call opens the copy", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd, { lines: 2_000, artifacts: { "1.bash.log": "a".repeat(300_000), "sub/2.read.log": "b" } });
    const source = treeHashes(path.dirname(file));
    const candidate = await candidateAt(scope, file);
    const phases: string[] = [];
    const result = openCandidateForWriteSync(scope, candidate, { onProgress: (p) => phases.push(p.phase) });
    expect(result).toMatchObject({ kind: "opened", provenance: "legacy", migrated: true });
    if (result.kind !== "opened") return;
    expect(fs.readFileSync(result.path)).toEqual(fs.readFileSync(file));
    expect(fs.readFileSync(path.join(result.path.slice(0, -".jsonl".length), "1.bash.log"), "utf8")).toBe("a".repeat(300_000));
    expect(phases.at(-1)).toBe("done");
    expect(
      fs.readdirSync(path.join(scopeOf(box.cwd, box.agentDir).directoryPath, INTERNAL_DIRECTORY, RECEIPTS_DIRECTORY)).filter((n) => n.endsWith(".json")),
    ).toHaveLength(1);
    expect(treeHashes(path.dirname(file))).toEqual(source);
    // The source is now hidden; listing it synchronously gives the copy, migrated from it.
    const listing = listSessionCandidatesSync(scope);
    expect(listing.kind === "listed" && listing.candidates.map((c) => [c.migrationState, c.migratedFrom])).toEqual([["migrated_v2", file]]);
    expect(openCandidateForWriteSync(scope, candidate)).toEqual({ kind: "opened", path: result.path, provenance: "legacy", migrated: false });
  });

  it("a source changed after listing is source_changed, returned not thrown, nothing published", async () => {
    const box = sandbox();
    const scope = scopeOf(box.cwd, box.agentDir);
    const file = writeLegacySession(scope.sessionsRoot, box.cwd);
    const candidate = await candidateAt(scope, file);
    fs.appendFileSync(file, "{}\n");
    expect(openCandidateForWriteSync(scope, candidate)).toMatchObject({ kind: "error", code: "source_changed" });
    expect(fs.readdirSync(scopeOf(box.cwd, box.agentDir).directoryPath).filter((n) => n.endsWith(".jsonl") || n.startsWith(".gjc-migrate-"))).toEqual([]);
  });
});
