/**
 * Retiring a session on the user's explicit request: a tombstone is published so scans
 * never list or migrate that version again. Nothing is deleted here; a tombstone says "do not
 * reinterpret this", not "this is gone".
 */
import { SecureFsError, type SecureDir } from "../fs/index.js";
import { INTERNAL_DIRECTORY, type ManagedScope } from "../scope/index.js";
import { openSessionsRoot, prepareScopeForWrite } from "./agent-root.js";
import { locateCandidate, type SessionCandidate } from "./candidates.js";
import { MigrationError, type MigrationFailure } from "./errors.js";
import { operationId, TOMBSTONES_DIRECTORY, writeRecord, type Tombstone } from "./receipts.js";
import { identifyTranscript, openDirByRules, sameIdentity } from "./session-file.js";

/** Outcome of {@link retireCandidate}. */
export type RetireResult = { readonly kind: "retired"; readonly tombstone: string } | MigrationFailure;

/**
 * Publishes the tombstone of `candidate` (which must still be the listed version) in its
 * workspace's scope. Retiring twice is not an error.
 */
export async function retireCandidate(scope: ManagedScope, candidate: SessionCandidate): Promise<RetireResult> {
  try {
    const prepared = prepareScopeForWrite(scope);
    const root = openSessionsRoot(prepared, "write");
    try {
      requireListedVersion(root, prepared, candidate);
      const tombstone: Tombstone = {
        schemaVersion: 2,
        state: "retired",
        scope: scope.identityDigest,
        targets: [{ path: candidate.path, sessionId: candidate.sessionId, cwd: candidate.header.cwd, provenance: candidate.provenance, identity: candidate.identity }],
      };
      const name = `${operationId(candidate.identity)}.json`;
      const dir = root.openDir([prepared.directoryName, INTERNAL_DIRECTORY, TOMBSTONES_DIRECTORY], { create: true });
      try {
        await writeRecord(dir, name, tombstone);
      } finally {
        dir.close();
      }
      return { kind: "retired", tombstone: name };
    } finally {
      root.close();
    }
  } catch (error) {
    if (error instanceof MigrationError) return error.toFailure();
    if (error instanceof SecureFsError) return { kind: "error", code: "durability_failed", cause: error.code, message: `retiring failed (${error.code})` };
    throw error;
  }
}

/**
 * Throws `source_changed` unless `candidate` is still the listed version, read by name below
 * the held sessions root `root`: from the scope directory (v2) or its legacy directory.
 */
function requireListedVersion(root: SecureDir, scope: ManagedScope, candidate: SessionCandidate): void {
  const { directory, fileName } = locateCandidate(scope, candidate);
  const rules = candidate.provenance === "v2" ? "managed" : "source";
  const dir = openDirByRules(root, directory, rules);
  try {
    const current = identifyTranscript(dir, fileName, candidate.path, rules);
    if (!sameIdentity(current.identity, candidate.identity)) throw new MigrationError("source_changed", "identity", "the session changed since it was listed");
  } finally {
    dir.close();
  }
}
