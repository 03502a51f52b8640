/**
 * The two writes on a listed candidate. Copy-retain migration of a legacy transcript (and its artifact directory) into
 * its workspace's v2 scope: the source is only read; everything is copied into staging names and made durable, the
 * source is checked again, then it is published without replacing anything and a committed receipt records which
 * source version became which v2 file. It all runs under a kernel-released lock keyed by the source's identity, so
 * concurrent openers serialise and a killed migrator leaves no lock behind. Retiring publishes a tombstone, so scans
 * never list or migrate that version again; it deletes nothing ("do not reinterpret this", not "this is gone").
 */
import { randomUUID } from "node:crypto";
import path from "node:path";

import { SecureFsError, unlessMissing, type SecureDir, type SecureLock } from "../fs/index.js";
import { INTERNAL_DIRECTORY, resolveManagedScope, SESSIONS_DIRECTORY, type ManagedScope } from "../scope/index.js";
import { openScopeDir, openSessionsRoot } from "./agent-root.js";
import { locateCandidate, ownerIdentity, readScopeTombstones, type SessionCandidate } from "./candidates.js";
import {
  copyFileInto,
  copyTree,
  DEFAULT_ARTIFACT_LIMITS,
  hashManagedFile,
  manifestOfManagedTree,
  sameManifest,
  snapshotArtifactTree,
  snapshotStillHolds,
  verifyMismatch,
  type ArtifactLimits,
  type ArtifactSnapshot,
} from "./copy.js";
import { MigrationError, writeFailure, type MigrationFailure } from "./errors.js";
import {
  encodeRecord,
  LOCKS_DIRECTORY,
  operationId,
  RECEIPTS_DIRECTORY,
  sourceLockName,
  TOMBSTONES_DIRECTORY,
  writeRecord,
  type ManifestEntry,
  type MigrationReceipt,
  type Tombstone,
} from "./receipts.js";
import { identifyTranscript, openDirByRules, openTranscript, readHeader, sameIdentity, sameStat } from "./session-file.js";
import { runLater, runNow, wait, type Steps } from "./waits.js";

/** The `session.directoryMigration` setting. */
export type DirectoryMigrationPolicy = "copy-retain" | "disabled";

/** Accepted values of {@link DirectoryMigrationPolicy}; the first is the default. */
export const DIRECTORY_MIGRATION_POLICIES: readonly DirectoryMigrationPolicy[] = ["copy-retain", "disabled"];

// How long an opener waits for another process's migration of the same source (ms).
const DEFAULT_MIGRATION_WAIT_MS = 5_000;

/** A progress report of a running migration. */
export interface MigrationProgress {
  readonly phase: "copying" | "verifying" | "publishing" | "done";
  readonly bytesDone: number;
  readonly bytesTotal: number;
  readonly filesDone: number;
  readonly filesTotal: number;
}

/** Options of {@link openCandidateForWrite}. */
export interface OpenForWriteOptions {
  /** `session.directoryMigration`; default `"copy-retain"`. */
  readonly directoryMigration?: DirectoryMigrationPolicy;
  /** Wait for a concurrent migration of the same source at most this long (default 5 s). */
  readonly waitMs?: number;
  /** Called with the totals first, then as the copy advances (at most every 4 MiB or 64 files) and at each phase. */
  readonly onProgress?: (progress: MigrationProgress) => void;
  /** Artifact budgets; default {@link DEFAULT_ARTIFACT_LIMITS}. */
  readonly limits?: Partial<ArtifactLimits>;
}

/** Outcome of {@link openCandidateForWrite}: the v2 transcript to open for writing, or why not. `migrated`: this call copied the source. */
export type OpenForWriteResult =
  { readonly kind: "opened"; readonly path: string; readonly provenance: "v2" | "legacy"; readonly migrated: boolean } | MigrationFailure;

/** Outcome of {@link retireCandidate}. */
export type RetireResult = { readonly kind: "retired"; readonly tombstone: string } | MigrationFailure;

const STAGING_PREFIX = ".gjc-migrate-";

/**
 * The v2 transcript to write for `candidate` (as `listSessionCandidates` listed it): a v2 candidate opens in place; a
 * legacy one is copied into the scope first (`copy-retain`) or refused (`legacy_migration_disabled`). The source must
 * still be the listed version (`source_changed` otherwise).
 */
export async function openCandidateForWrite(scope: ManagedScope, candidate: SessionCandidate, options: OpenForWriteOptions = {}): Promise<OpenForWriteResult> {
  try {
    return await runLater(openSteps(scope, candidate, options));
  } catch (error) {
    return writeFailure(error, "migration");
  }
}

/**
 * {@link openCandidateForWrite} for a synchronous caller (pi's factories): the same steps, each wait done on this thread.
 * A staging directory a killed attempt left (only an artifact copy makes one) is left to the next asynchronous run.
 */
export function openCandidateForWriteSync(scope: ManagedScope, candidate: SessionCandidate, options: OpenForWriteOptions = {}): OpenForWriteResult {
  try {
    return runNow(openSteps(scope, candidate, options));
  } catch (error) {
    return writeFailure(error, "migration");
  }
}

/** Publishes the tombstone of `candidate` (still the listed version, else `source_changed`) in its scope; retiring twice is no error. */
export async function retireCandidate(scope: ManagedScope, candidate: SessionCandidate): Promise<RetireResult> {
  try {
    const prepared = prepareScopeForWrite(scope);
    const root = openSessionsRoot(prepared, "write");
    try {
      // Read by name below the held root: from the scope directory (v2) or its legacy directory.
      const { directory, fileName } = locateCandidate(prepared, candidate);
      const rules = candidate.provenance === "v2" ? "managed" : "source";
      const source = openDirByRules(root, directory, rules);
      try {
        if (!sameIdentity(identifyTranscript(source, fileName, candidate.path, rules).identity, candidate.identity)) {
          throw new MigrationError("source_changed", "identity", "the session changed since it was listed");
        }
      } finally {
        source.close();
      }
      const tombstone: Tombstone = {
        schemaVersion: 2,
        state: "retired",
        scope: scope.identityDigest,
        targets: [
          { path: candidate.path, sessionId: candidate.sessionId, cwd: candidate.header.cwd, provenance: candidate.provenance, identity: candidate.identity },
        ],
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
    return writeFailure(error, "retiring");
  }
}

/** `scope` resolved again for write with the same sessions root, so writes land where the candidate was listed; `binding_conflict` when it moved. */
function prepareScopeForWrite(scope: ManagedScope): ManagedScope {
  const defaultRoot = path.join(scope.agentDir, SESSIONS_DIRECTORY) === scope.sessionsRoot;
  const prepared = resolveManagedScope({
    cwd: scope.canonicalCwd,
    agentDir: scope.agentDir,
    ...(defaultRoot ? {} : { sessionsRoot: scope.sessionsRoot }),
    mode: "write",
    former: scope.former,
  });
  if (prepared.kind === "error") throw new MigrationError(prepared.code, prepared.cause, prepared.message);
  if (prepared.scope.directoryPath !== scope.directoryPath)
    throw new MigrationError("binding_conflict", "scope_moved", "the workspace now resolves to another scope");
  return { ...prepared.scope, legacyLexicalCwd: scope.legacyLexicalCwd };
}

function* openSteps(scope: ManagedScope, candidate: SessionCandidate, options: OpenForWriteOptions): Steps<OpenForWriteResult> {
  const policy = options.directoryMigration ?? "copy-retain";
  if (!DIRECTORY_MIGRATION_POLICIES.includes(policy)) throw new MigrationError("invalid_request", "policy", "unknown session.directoryMigration value");
  if (typeof candidate !== "object" || candidate === null || typeof candidate.path !== "string") {
    throw new MigrationError("invalid_request", "candidate", "not a session candidate");
  }
  if (readScopeTombstones(scope).some((t) => t.targets.some((target) => sameIdentity(target.identity, candidate.identity)))) {
    throw new MigrationError("migration_retired", "tombstone", "this session was retired");
  }
  if (candidate.provenance === "v2") {
    locateCandidate(scope, candidate);
    return { kind: "opened", path: candidate.path, provenance: "v2", migrated: false };
  }
  if (policy === "disabled")
    throw new MigrationError("legacy_migration_disabled", "policy", "legacy sessions are read-only (session.directoryMigration is disabled)");
  // Checked before anything is prepared: a candidate from elsewhere writes nothing.
  const { directory, fileName } = locateCandidate(scope, candidate);
  if (!fileName.endsWith(".jsonl")) throw new MigrationError("invalid_request", "name", "the legacy file name cannot be used in a scope");
  const prepared = prepareScopeForWrite(scope);
  // Everything below is reached from this one handle by entry names.
  const root = openSessionsRoot(prepared, "write");
  const held: SecureDir[] = [];
  const hold = (dir: SecureDir): SecureDir => (held.push(dir), dir);
  let lock: SecureLock | undefined;
  try {
    const scopeDir = hold(openScopeDir(root, prepared));
    const legacyDir = hold(openDirByRules(root, directory, "source"));
    const internal = hold(scopeDir.openDir(INTERNAL_DIRECTORY, { create: true }));
    const [locks, receipts] = [LOCKS_DIRECTORY, RECEIPTS_DIRECTORY].map((name) => hold(internal.openDir(name, { create: true }))) as [SecureDir, SecureDir];
    internal.openDir(TOMBSTONES_DIRECTORY, { create: true }).close();
    const lockOptions = { waitMs: options.waitMs ?? DEFAULT_MIGRATION_WAIT_MS, purpose: "migration" };
    const lockName = sourceLockName(candidate.identity);
    try {
      lock = yield* wait({ now: () => locks.lockSync(lockName, lockOptions), later: () => locks.lock(lockName, lockOptions) });
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "lock_busy")
        throw new MigrationError("migration_busy", "lock_busy", "another process is migrating this session");
      throw error;
    }
    const limits: ArtifactLimits = { ...DEFAULT_ARTIFACT_LIMITS, ...options.limits };
    const artifacts = fileName.slice(0, -".jsonl".length);
    const job = { scope: prepared, scopeDir, receipts, legacyDir, fileName, artifacts, op: operationId(candidate.identity), candidate, limits };
    return yield* migrateLocked(job, options.onProgress);
  } finally {
    lock?.release();
    for (const dir of held.reverse()) dir.close();
    root.close();
  }
}

/** One migration under its lock: the held directories (`legacyDir` by the legacy-source rules) and what is copied. */
interface Job {
  readonly scope: ManagedScope;
  readonly scopeDir: SecureDir;
  readonly receipts: SecureDir;
  readonly legacyDir: SecureDir;
  /** The transcript's name, in `legacyDir` and in the scope, and its artifact directory's. */
  readonly fileName: string;
  readonly artifacts: string;
  /** The {@link operationId} of the source version. */
  readonly op: string;
  readonly candidate: SessionCandidate;
  readonly limits: ArtifactLimits;
}

/**
 * Copies the transcript and its artifact tree into staging and stages the receipt, makes it all durable, checks the
 * source again (a second snapshot), then publishes the artifacts and the transcript without replacing anything and
 * commits the receipt by a rename. A transcript already there (published by an attempt that died before its receipt,
 * or somebody else's) must hold the source's bytes and its artifacts the copy's manifest; then only the receipt is new.
 */
function* migrateLocked(job: Job, onProgress: OpenForWriteOptions["onProgress"]): Steps<OpenForWriteResult> {
  const { scope, scopeDir, receipts, legacyDir, fileName, artifacts, op, candidate, limits } = job;
  const source = candidate.identity;
  const destPath = path.join(scope.directoryPath, fileName);

  // Another opener may have finished while we waited for the lock.
  const committed = unlessMissing(() => receipts.openFile(`${op}.json`));
  committed?.close();
  if (committed !== undefined && entryType(scopeDir, fileName) === "file") return { kind: "opened", path: destPath, provenance: "legacy", migrated: false };
  // Picker consent: the exact listed version (inode and stat here; the bytes are proven by
  // the hash taken while copying), still owned by this workspace.
  const header = readHeader(legacyDir, fileName, "source");
  if (!statUnchanged(job) || header === undefined || header.id !== candidate.header.id || header.cwd !== candidate.header.cwd) {
    throw new MigrationError("source_changed", "identity", "the legacy session changed since it was listed");
  }
  const owner = ownerIdentity(scope, header.cwd);
  if (owner.kind === "error" || owner.identity.canonicalPath !== scope.canonicalCwd || owner.identity.platform !== scope.platform) {
    throw new MigrationError("not_a_candidate", "foreign", "the legacy session belongs to another workspace");
  }
  yield* removeRemnants(job);
  const sameId = `_${header.id}.jsonl`;
  // The file-name convention `<timestamp>_<sessionId>.jsonl` tells which v2 file holds a session.
  if (scopeDir.list().some((e) => e.name !== fileName && e.name.endsWith(sameId))) {
    throw new MigrationError("destination_conflict", "same_session_id", "another v2 file already holds this session id");
  }
  const existing = entryType(scopeDir, fileName);
  if (existing !== undefined && existing !== "file")
    throw new MigrationError("destination_conflict", existing, "the destination name is taken by something else");
  // Snapshotted first: an unsafe or too large tree is refused before anything is copied or compared.
  const snapshot = snapshotArtifactTree(legacyDir, artifacts, limits);
  const progress = progressReporter(onProgress, source.size + (snapshot?.totalBytes ?? 0), 1 + (snapshot?.files ?? 0));
  if (existing === "file" && asConflict(() => hashManagedFile(scopeDir, fileName)).sha256 !== source.sha256) {
    throw new MigrationError("destination_conflict", "different_content", "a different session file already exists at the destination");
  }

  const attempt = `${STAGING_PREFIX}${op.slice(0, 16)}-${randomUUID()}`;
  const [stagedTranscript, stagedArtifacts, stagedReceipt] = [".transcript", ".artifacts", ".receipt"].map((suffix) => attempt + suffix) as [
    string,
    string,
    string,
  ];
  // Every staging directory this attempt creates, synced with the scope and receipts directories.
  const opened: SecureDir[] = [];
  const onBytes = (bytes: number): void => progress.bytes(bytes);
  try {
    const { sha256 } = yield* copyFileInto(legacyDir, fileName, source, scopeDir, stagedTranscript, onBytes);
    progress.file();
    if (sha256 !== source.sha256) throw new MigrationError("source_changed", "content", "the legacy session changed during migration");
    let manifest: ManifestEntry[] = [];
    if (snapshot !== undefined) {
      const target = scopeDir.openDir(stagedArtifacts, { create: true, deferSync: true });
      opened.push(target);
      manifest = yield* copyTree(legacyDir, artifacts, snapshot, target, opened, onBytes, progress.file);
    }
    progress.phase("verifying");
    const receipt: MigrationReceipt = {
      schemaVersion: 2,
      state: "committed",
      policy: "copy-retain",
      attemptId: randomUUID(),
      scope: scope.identityDigest,
      source: { path: candidate.path, sessionId: header.id, header, identity: source, sha256: source.sha256 },
      destination: { path: destPath, sessionId: header.id, header, sha256: source.sha256 },
      artifactManifest: manifest,
    };
    yield* writeDurably(receipts, stagedReceipt, Buffer.from(encodeRecord(receipt), "utf8"));
    for (const dir of [scopeDir, receipts, ...opened]) yield* wait({ now: () => dir.sync(), later: () => dir.syncAsync() });
    if (!statUnchanged(job)) throw new MigrationError("source_changed", "changed_while_copying", "the legacy session changed during migration");
    if (!snapshotStillHolds(legacyDir, artifacts, snapshot, limits))
      throw new MigrationError("source_changed", "artifacts_changed", "the legacy artifacts changed during migration");
    progress.phase("publishing");
    if (existing === "file") {
      requireArtifactsMatch(job, snapshot, manifest);
    } else {
      if (snapshot !== undefined) {
        try {
          scopeDir.publishNoReplace(stagedArtifacts, artifacts);
        } catch (error) {
          if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
          requireArtifactsMatch(job, snapshot, manifest);
        }
      }
      try {
        scopeDir.publishNoReplace(stagedTranscript, fileName);
      } catch (error) {
        if (error instanceof SecureFsError && error.code === "already_exists")
          throw new MigrationError("destination_conflict", "appeared", "a session file appeared at the destination");
        throw error;
      }
    }
    try {
      receipts.publishNoReplace(stagedReceipt, `${op}.json`);
    } catch (error) {
      // A receipt of this source is there already (its copy had gone, so this attempt made a
      // new one): it names the same source and destination. Ours is removed below.
      if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
    }
  } finally {
    for (const dir of opened) dir.close();
    yield* removeRemnants(job);
  }
  progress.phase("done");
  return { kind: "opened", path: destPath, provenance: "legacy", migrated: true };
}

/** Writes `data` as the new owner-only file `name` of `dir`, fsyncs it and reads it back. */
function* writeDurably(dir: SecureDir, name: string, data: Buffer): Steps<void> {
  const file = dir.openFile(name, { write: true, create: "exclusive" });
  try {
    file.write(data, 0);
    yield* wait({ now: () => file.sync(), later: () => file.syncAsync() });
    if (!file.readAt(0, data.byteLength + 1).equals(data)) throw verifyMismatch();
  } finally {
    file.close();
  }
}

/** An artifact directory already at the destination must hold exactly the source's artifacts. */
function requireArtifactsMatch({ scopeDir, artifacts: name, limits }: Job, snapshot: ArtifactSnapshot | undefined, manifest: readonly ManifestEntry[]): void {
  const type = entryType(scopeDir, name);
  if (type === undefined) {
    if (snapshot === undefined) return;
    throw new MigrationError("destination_conflict", "artifacts_missing", "the destination lacks the session's artifacts");
  }
  if (type !== "directory" || snapshot === undefined) throw new MigrationError("destination_conflict", type, "the artifact destination is taken");
  const dir = asConflict(() => scopeDir.openDir(name));
  try {
    if (
      !sameManifest(
        asConflict(() => manifestOfManagedTree(dir, limits)),
        manifest,
      )
    ) {
      throw new MigrationError("destination_conflict", "different_artifacts", "different artifacts already exist at the destination");
    }
  } finally {
    dir.close();
  }
}

/** True when the legacy file, opened by name in the held legacy directory, is still the inode and version listed. */
function statUnchanged({ legacyDir, fileName, candidate }: Job): boolean {
  if (path.resolve(candidate.path) !== candidate.identity.canonicalPath) return false;
  try {
    const { file, stat } = openTranscript(legacyDir, fileName, "source");
    file.close();
    return sameStat(stat, candidate.identity);
  } catch (error) {
    if (error instanceof MigrationError) return false;
    throw error;
  }
}

/** `read` of something at the destination; an fs refusal there is `destination_conflict`. */
function asConflict<T>(read: () => T): T {
  try {
    return read();
  } catch (error) {
    if (error instanceof SecureFsError)
      throw new MigrationError("destination_conflict", error.code, `the destination is not a safe owner-only object (${error.code})`);
    throw error;
  }
}

function entryType(dir: SecureDir, name: string): string | undefined {
  return unlessMissing(() => dir.stat(name).type);
}

/**
 * Removes the staging entries of the job's operation left by an attempt that died; only under the source's lock, so no
 * live attempt owns them. A staging tree is removed by descriptor below the held scope directory (a link in it as a
 * link, never followed), within the artifact budgets plus the staging root itself.
 */
function* removeRemnants({ scopeDir, receipts, limits, op }: Job): Steps<void> {
  const prefix = `${STAGING_PREFIX}${op.slice(0, 16)}-`;
  const bounds = { maxDepth: limits.maxDepth + 1, maxEntries: limits.maxEntries + 1 };
  for (const entry of scopeDir.list()) {
    if (!entry.name.startsWith(prefix)) continue;
    // A tree is removed on the thread pool only; a synchronous run leaves it (its name is its dead attempt's alone).
    if (entry.type === "directory") yield* wait({ now: () => undefined, later: () => scopeDir.removeTreeAsync(entry.name, bounds) });
    else scopeDir.unlink(entry.name);
  }
  // Staged receipts: plain files, never read as receipts (their names start with a dot).
  for (const entry of receipts.list()) {
    if (entry.name.startsWith(prefix) && entry.type === "file") receipts.unlink(entry.name);
  }
}

/** Reports the totals at once, then at most every 4 MiB or 64 files, and at every phase change. */
function progressReporter(onProgress: OpenForWriteOptions["onProgress"], bytesTotal: number, filesTotal: number) {
  const now = { phase: "copying" as MigrationProgress["phase"], bytesDone: 0, bytesTotal, filesDone: 0, filesTotal };
  let last = { ...now };
  const emit = () => {
    last = { ...now };
    onProgress?.({ ...now });
  };
  emit();
  return {
    bytes(n: number): void {
      now.bytesDone += n;
      if (now.bytesDone - last.bytesDone >= 4 << 20) emit();
    },
    file(): void {
      now.filesDone += 1;
      if (now.filesDone - last.filesDone >= 64) emit();
    },
    phase(next: MigrationProgress["phase"]): void {
      now.phase = next;
      if (next === "done") [now.bytesDone, now.filesDone] = [bytesTotal, filesTotal];
      emit();
    },
  };
}
