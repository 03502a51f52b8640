/**
 * Copy-retain migration of one legacy transcript (and its artifact directory) into the v2
 * scope of its workspace. The source is only ever read. Everything is copied into staging
 * names inside the scope (each file hashed as it is copied, fsynced and read back, then each
 * staging directory synced), then published without replacing anything, and a committed receipt records
 * which source version became which v2 file. All of it happens under a kernel-released lock
 * keyed by the source's identity, so concurrent openers serialise and a killed migrator
 * never leaves a lock behind.
 */
import { randomUUID } from "node:crypto";
import path from "node:path";

import { isValidEntryName, SecureFsError, type SecureDir, type SecureLock } from "../fs/index.js";
import { INTERNAL_DIRECTORY, resolveManagedScope, SESSIONS_DIRECTORY, workspaceIdentity, type ManagedScope } from "../scope/index.js";
import { openSessionsRoot } from "./agent-root.js";
import { readScopeTombstones, type SessionCandidate } from "./candidates.js";
import {
  copyArtifactTree,
  copyFileInto,
  DEFAULT_ARTIFACT_LIMITS,
  manifestOfManagedTree,
  manifestOfSource,
  sameManifest,
  snapshotArtifactTree,
  snapshotStillHolds,
  type ArtifactLimits,
  type ArtifactSnapshot,
} from "./copy.js";
import { MigrationError, type MigrationFailure } from "./errors.js";
import {
  encodeRecord,
  LOCKS_DIRECTORY,
  operationId,
  RECEIPTS_DIRECTORY,
  sourceLockName,
  TOMBSTONES_DIRECTORY,
  type ManifestEntry,
  type MigrationReceipt,
} from "./receipts.js";
import { openTranscript, readHeader, sameIdentity, sameStat, sourceRefusal, type FileIdentity } from "./session-file.js";
import { hashManagedFile, StagedSet, writeStagedFile } from "./staging.js";

/** The `session.directoryMigration` setting. */
export type DirectoryMigrationPolicy = "copy-retain" | "disabled";

/** Accepted values of {@link DirectoryMigrationPolicy}; the first is the default. */
export const DIRECTORY_MIGRATION_POLICIES: readonly DirectoryMigrationPolicy[] = ["copy-retain", "disabled"];

/** How long an opener waits for another process's migration of the same source (ms). */
export const DEFAULT_MIGRATION_WAIT_MS = 5_000;

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

/** Outcome of {@link openCandidateForWrite}: the v2 path to open for writing, or why not. */
export type OpenForWriteResult =
  | {
      readonly kind: "opened";
      /** The v2 transcript to open. */
      readonly path: string;
      readonly provenance: "v2" | "legacy";
      /** True when this call copied the source; false when it was v2 already or another process did. */
      readonly migrated: boolean;
    }
  | MigrationFailure;

const STAGING_PREFIX = ".gjc-migrate-";

/**
 * Returns the v2 transcript to write for `candidate` (as listed by `listSessionCandidates`):
 * a v2 candidate opens in place; a legacy one is copied into the scope first (policy
 * `copy-retain`) or refused with `legacy_migration_disabled`. The source must still be the
 * exact version that was listed (`source_changed` otherwise).
 */
export async function openCandidateForWrite(scope: ManagedScope, candidate: SessionCandidate, options: OpenForWriteOptions = {}): Promise<OpenForWriteResult> {
  try {
    return await openOrThrow(scope, candidate, options);
  } catch (error) {
    if (error instanceof MigrationError) return error.toFailure();
    if (error instanceof SecureFsError) {
      return { kind: "error", code: "durability_failed", cause: error.code, message: `migration failed (${error.code})` };
    }
    throw error;
  }
}

async function openOrThrow(scope: ManagedScope, candidate: SessionCandidate, options: OpenForWriteOptions): Promise<OpenForWriteResult> {
  const policy = options.directoryMigration ?? "copy-retain";
  if (!DIRECTORY_MIGRATION_POLICIES.includes(policy)) throw new MigrationError("invalid_request", "policy", "unknown session.directoryMigration value");
  if (typeof candidate !== "object" || candidate === null || typeof candidate.path !== "string") {
    throw new MigrationError("invalid_request", "candidate", "not a session candidate");
  }
  const tombstones = readScopeTombstones(scope);
  if (tombstones.some((t) => t.targets.some((target) => sameIdentity(target.identity, candidate.identity)))) {
    throw new MigrationError("migration_retired", "tombstone", "this session was retired");
  }
  if (candidate.provenance === "v2") {
    if (path.dirname(candidate.path) !== scope.directoryPath) throw new MigrationError("not_a_candidate", "outside_scope", "the v2 candidate is not in this scope");
    return { kind: "opened", path: candidate.path, provenance: "v2", migrated: false };
  }
  if (policy === "disabled") throw new MigrationError("legacy_migration_disabled", "policy", "legacy sessions are read-only (session.directoryMigration is disabled)");
  // Checked before anything is prepared: a candidate from elsewhere writes nothing.
  const source = legacySourceOf(scope, candidate);
  const prepared = prepareScope(scope);
  const limits: ArtifactLimits = { ...DEFAULT_ARTIFACT_LIMITS, ...options.limits };
  // Everything below is reached from this one handle by entry names.
  const root = openSessionsRoot(prepared, "write");
  let scopeDir: SecureDir | undefined;
  let legacyDir: SecureDir | undefined;
  let lock: SecureLock | undefined;
  try {
    scopeDir = openScopeDir(root, prepared);
    legacyDir = openLegacyDir(root, source.directory);
    const internal = scopeDir.openDir(INTERNAL_DIRECTORY, { create: true });
    const [locks, receipts] = [LOCKS_DIRECTORY, RECEIPTS_DIRECTORY].map((name) => internal.openDir(name, { create: true })) as [SecureDir, SecureDir];
    internal.openDir(TOMBSTONES_DIRECTORY, { create: true }).close();
    internal.close();
    try {
      lock = await locks.lock(sourceLockName(candidate.identity), { waitMs: options.waitMs ?? DEFAULT_MIGRATION_WAIT_MS, purpose: "migration" });
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "lock_busy") throw new MigrationError("migration_busy", "lock_busy", "another process is migrating this session");
      throw error;
    } finally {
      locks.close();
    }
    try {
      return await migrateLocked({ scope: prepared, scopeDir, receipts, legacyDir, fileName: source.fileName }, candidate, limits, options.onProgress);
    } finally {
      receipts.close();
    }
  } finally {
    lock?.release();
    legacyDir?.close();
    scopeDir?.close();
    root.close();
  }
}

/** Where a legacy candidate lies below the sessions root: its legacy directory and file names. */
function legacySourceOf(scope: ManagedScope, candidate: SessionCandidate): { directory: string; fileName: string } {
  const directory = candidate.legacyDirectory;
  const fileName = path.basename(candidate.path);
  const valid =
    typeof directory === "string" && isValidEntryName(directory) && isValidEntryName(fileName) &&
    candidate.path === path.join(scope.sessionsRoot, directory, fileName);
  if (!valid) throw new MigrationError("not_a_candidate", "outside_scope", "the legacy candidate is not in this workspace's sessions root");
  return { directory, fileName };
}

function openLegacyDir(root: SecureDir, name: string): SecureDir {
  try {
    return root.openDir(name, { source: true });
  } catch (error) {
    throw sourceRefusal(error);
  }
}

function prepareScope(scope: ManagedScope): ManagedScope {
  const defaultRoot = path.join(scope.agentDir, SESSIONS_DIRECTORY) === scope.sessionsRoot;
  const prepared = resolveManagedScope({
    cwd: scope.canonicalCwd,
    agentDir: scope.agentDir,
    ...(defaultRoot ? {} : { sessionsRoot: scope.sessionsRoot }),
    mode: "write",
  });
  if (prepared.kind === "error") throw new MigrationError(prepared.code, prepared.cause, prepared.message);
  if (prepared.scope.directoryPath !== scope.directoryPath) throw new MigrationError("binding_conflict", "scope_moved", "the workspace now resolves to another scope");
  return { ...prepared.scope, legacyLexicalCwd: scope.legacyLexicalCwd };
}

function openScopeDir(root: SecureDir, scope: ManagedScope): SecureDir {
  try {
    return root.openDir(scope.directoryName);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    throw new MigrationError("binding_invalid", error.code, `the scope directory is not safe (${error.code})`);
  }
}

/** The held directories one migration works in, and the legacy file's name in `legacyDir`. */
interface Held {
  readonly scope: ManagedScope;
  readonly scopeDir: SecureDir;
  readonly receipts: SecureDir;
  /** The legacy directory, opened by the legacy-source rules. */
  readonly legacyDir: SecureDir;
  readonly fileName: string;
}

async function migrateLocked(held: Held, candidate: SessionCandidate, limits: ArtifactLimits, onProgress: OpenForWriteOptions["onProgress"]): Promise<OpenForWriteResult> {
  const { scope, scopeDir, receipts, legacyDir, fileName } = held;
  const source = candidate.identity;
  const op = operationId(source);
  const destName = path.basename(candidate.path);
  if (!destName.endsWith(".jsonl") || !isValidEntryName(destName)) throw new MigrationError("invalid_request", "name", "the legacy file name cannot be used in a scope");
  const destPath = path.join(scope.directoryPath, destName);
  const artifactName = destName.slice(0, -".jsonl".length);

  // Another opener may have finished while we waited for the lock.
  if (committedReceiptFor(receipts, op) !== undefined && entryType(scopeDir, destName) === "file") {
    return { kind: "opened", path: destPath, provenance: "legacy", migrated: false };
  }
  // Picker consent: the exact listed version (inode and stat here; the bytes are proven by
  // the hash taken while copying), still owned by this workspace.
  const current = { header: readHeader(legacyDir, fileName, "source") };
  if (!statUnchanged(held, candidate.path, source) || current.header === undefined || current.header.id !== candidate.header.id || current.header.cwd !== candidate.header.cwd) {
    throw new MigrationError("source_changed", "identity", "the legacy session changed since it was listed");
  }
  const owner = workspaceIdentity(current.header.cwd);
  if (owner.kind === "error" || owner.identity.canonicalPath !== scope.canonicalCwd || owner.identity.platform !== scope.platform) {
    throw new MigrationError("not_a_candidate", "foreign", "the legacy session belongs to another workspace");
  }
  await removeRemnants(scopeDir, receipts, op, limits);
  refuseSameIdInOtherFile(scopeDir, destName, current.header.id);

  const artifactSource = fileName.slice(0, -".jsonl".length);
  // Published by an earlier attempt that died before its receipt, or somebody else's file.
  const existing = entryType(scopeDir, destName);
  if (existing !== undefined && existing !== "file") throw new MigrationError("destination_conflict", existing, "the destination name is taken by something else");
  // The tree is snapshotted first: an unsafe or too large one is refused before anything is
  // copied or compared.
  const snapshot = snapshotArtifactTree(legacyDir, artifactSource, limits);
  const progress = progressReporter(onProgress, source, snapshot);
  const header = current.header;
  const receiptOf = (manifest: ManifestEntry[]): MigrationReceipt => ({
    schemaVersion: 2,
    state: "committed",
    policy: "copy-retain",
    attemptId: randomUUID(),
    scope: scope.identityDigest,
    source: { path: candidate.path, sessionId: header.id, header, identity: source, sha256: source.sha256 },
    destination: { path: destPath, sessionId: header.id, header, sha256: source.sha256 },
    artifactManifest: manifest,
  });
  if (existing !== undefined) {
    const there = asConflict(() => hashManagedFile(scopeDir, destName));
    if (there.sha256 !== source.sha256) throw new MigrationError("destination_conflict", "different_content", "a different session file already exists at the destination");
    const manifest = snapshot === undefined ? [] : manifestOfSource(legacyDir, artifactSource, snapshot);
    requireArtifactsMatch(scopeDir, artifactName, snapshot, manifest, limits);
    progress.phase("publishing");
    try {
      await receipts.writeFileAtomicAsync(`${op}.json`, encodeRecord(receiptOf(manifest)), { noReplace: true });
    } catch (error) {
      if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
    }
  } else {
    await stageAndPublish({ held, sourcePath: candidate.path, source, artifactSource, snapshot, artifactName, destName, op, limits, progress, receiptOf });
  }
  progress.phase("done");
  return { kind: "opened", path: destPath, provenance: "legacy", migrated: true };
}

/** What {@link stageAndPublish} copies, publishes and records. */
interface StagingJob {
  readonly held: Held;
  /** The legacy transcript's path, as listed (a label: it is read through `held.legacyDir`). */
  readonly sourcePath: string;
  readonly source: FileIdentity;
  /** The artifact directory's name in `held.legacyDir`, and its snapshot (none: no artifacts). */
  readonly artifactSource: string;
  readonly snapshot: ArtifactSnapshot | undefined;
  readonly artifactName: string;
  readonly destName: string;
  readonly op: string;
  readonly limits: ArtifactLimits;
  readonly progress: ProgressReporter;
  /** The committed receipt of the copy whose artifact manifest is given. */
  readonly receiptOf: (manifest: ManifestEntry[]) => MigrationReceipt;
}

/**
 * Copies the transcript and its artifact tree into staging, makes the staging durable,
 * checks the source again, publishes both without replacing anything, then commits the
 * receipt. The receipt is staged durably with the copies, so committing it is a rename (and
 * a directory sync) after publication.
 */
async function stageAndPublish(job: StagingJob): Promise<void> {
  const { held, sourcePath, source, artifactSource, snapshot, artifactName, destName, op, limits, progress } = job;
  const { scopeDir, receipts, legacyDir, fileName } = held;
  const attempt = `${STAGING_PREFIX}${op.slice(0, 16)}-${randomUUID()}`;
  const stagedTranscript = `${attempt}.transcript`;
  const stagedArtifacts = `${attempt}.artifacts`;
  const stagedReceipt = `${attempt}.receipt`;
  const staged = new StagedSet();
  // The scope directory holds the staged transcript and the staging tree's root entry; the
  // receipts directory the staged receipt.
  staged.holdDir(scopeDir, { own: false });
  staged.holdDir(receipts, { own: false });
  const onBytes = (bytes: number): void => progress.bytes(bytes);
  try {
    const sha256 = await copyFileInto(legacyDir, fileName, source, scopeDir, stagedTranscript, onBytes);
    progress.file();
    if (sha256 !== source.sha256) throw new MigrationError("source_changed", "content", "the legacy session changed during migration");
    let manifest: ManifestEntry[] = [];
    if (snapshot !== undefined) {
      const staging = scopeDir.openDir(stagedArtifacts, { create: true, deferSync: true });
      staged.holdDir(staging, { own: true });
      manifest = await copyArtifactTree(legacyDir, artifactSource, snapshot, staging, staged, onBytes, progress.file);
    }
    progress.phase("verifying");
    // Every file was fsynced and read back as it was copied (copy.ts); the receipt is staged
    // the same way, the staged directories are synced, then the source is checked again.
    await writeStagedFile(receipts, stagedReceipt, Buffer.from(encodeRecord(job.receiptOf(manifest)), "utf8"));
    await staged.makeDurable();
    sourceStillUnchanged(held, sourcePath, source, artifactSource, snapshot, limits);
    progress.phase("publishing");
    if (snapshot !== undefined) {
      try {
        scopeDir.publishNoReplace(stagedArtifacts, artifactName);
      } catch (error) {
        if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
        requireArtifactsMatch(scopeDir, artifactName, snapshot, manifest, limits);
      }
    }
    try {
      scopeDir.publishNoReplace(stagedTranscript, destName);
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "already_exists") {
        throw new MigrationError("destination_conflict", "appeared", "a session file appeared at the destination");
      }
      throw error;
    }
    try {
      receipts.publishNoReplace(stagedReceipt, `${op}.json`);
    } catch (error) {
      // A receipt of this source is there already (its copy had gone, so this attempt made
      // a new one): it names the same source and destination. Ours is removed below.
      if (!(error instanceof SecureFsError) || error.code !== "already_exists") throw error;
    }
  } finally {
    staged.close();
    await removeRemnants(scopeDir, receipts, op, limits);
  }
}

/** Throws `source_changed` unless the transcript and the artifact tree still match what was copied. */
function sourceStillUnchanged(held: Held, sourcePath: string, source: FileIdentity, artifactSource: string, snapshot: ArtifactSnapshot | undefined, limits: ArtifactLimits): void {
  if (!statUnchanged(held, sourcePath, source)) {
    throw new MigrationError("source_changed", "changed_while_copying", "the legacy session changed during migration");
  }
  if (!snapshotStillHolds(held.legacyDir, artifactSource, snapshot, limits)) {
    throw new MigrationError("source_changed", "artifacts_changed", "the legacy artifacts changed during migration");
  }
}

/** An artifact directory already at the destination must hold exactly the source's artifacts. */
function requireArtifactsMatch(scopeDir: SecureDir, artifactName: string, snapshot: ArtifactSnapshot | undefined, manifest: readonly ManifestEntry[], limits: ArtifactLimits): void {
  const type = entryType(scopeDir, artifactName);
  if (type === undefined) {
    if (snapshot === undefined) return;
    throw new MigrationError("destination_conflict", "artifacts_missing", "the destination lacks the session's artifacts");
  }
  if (type !== "directory" || snapshot === undefined) throw new MigrationError("destination_conflict", type, "the artifact destination is taken");
  const dir = asConflict(() => scopeDir.openDir(artifactName));
  try {
    const there = asConflict(() => manifestOfManagedTree(dir, limits));
    if (!sameManifest(there, manifest)) throw new MigrationError("destination_conflict", "different_artifacts", "different artifacts already exist at the destination");
  } finally {
    dir.close();
  }
}

/**
 * True when the legacy file (listed as `file`) is still, opened by name in the held legacy
 * directory, the inode and version `identity` describes.
 */
function statUnchanged(held: Held, file: string, identity: FileIdentity): boolean {
  if (path.resolve(file) !== identity.canonicalPath) return false;
  try {
    const { file: opened, stat } = openTranscript(held.legacyDir, held.fileName, "source");
    opened.close();
    return sameStat(stat, identity);
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
    if (error instanceof SecureFsError) throw new MigrationError("destination_conflict", error.code, `the destination is not a safe owner-only object (${error.code})`);
    throw error;
  }
}

function committedReceiptFor(receipts: SecureDir, op: string): string | undefined {
  try {
    const file = receipts.openFile(`${op}.json`);
    file.close();
    return `${op}.json`;
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}

function entryType(dir: SecureDir, name: string): string | undefined {
  try {
    return dir.stat(name).type;
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw error;
  }
}

/** The file-name convention `<timestamp>_<sessionId>.jsonl` tells which v2 file holds a session. */
function refuseSameIdInOtherFile(scopeDir: SecureDir, destName: string, sessionId: string): void {
  const suffix = `_${sessionId}.jsonl`;
  for (const entry of scopeDir.list()) {
    if (entry.name !== destName && entry.name.endsWith(suffix)) {
      throw new MigrationError("destination_conflict", "same_session_id", "another v2 file already holds this session id");
    }
  }
}

/**
 * Removes staging entries of this operation left by an attempt that died. Only called under
 * the source's lock, so no live attempt owns them. A staging tree is removed by descriptor
 * below the held scope directory (a link in it is removed as a link, never followed), within
 * the artifact budgets plus the staging root itself.
 */
async function removeRemnants(scopeDir: SecureDir, receipts: SecureDir, op: string, limits: ArtifactLimits): Promise<void> {
  const prefix = `${STAGING_PREFIX}${op.slice(0, 16)}-`;
  for (const entry of scopeDir.list()) {
    if (!entry.name.startsWith(prefix)) continue;
    if (entry.type === "directory") await scopeDir.removeTreeAsync(entry.name, { maxDepth: limits.maxDepth + 1, maxEntries: limits.maxEntries + 1 });
    else scopeDir.unlink(entry.name);
  }
  // Staged receipts: plain files, never read as receipts (their names start with a dot).
  for (const entry of receipts.list()) {
    if (entry.name.startsWith(prefix) && entry.type === "file") receipts.unlink(entry.name);
  }
}

interface ProgressReporter {
  bytes(n: number): void;
  file(): void;
  phase(phase: MigrationProgress["phase"]): void;
}

/**
 * Reports the totals of the transcript `source` and the artifact tree `snapshot` at once,
 * then at most every 4 MiB or 64 files, and at every phase change.
 */
function progressReporter(onProgress: OpenForWriteOptions["onProgress"], source: FileIdentity, snapshot: ArtifactSnapshot | undefined): ProgressReporter {
  const bytesTotal = source.size + (snapshot?.totalBytes ?? 0);
  const filesTotal = 1 + (snapshot?.files ?? 0);
  let bytesDone = 0;
  let filesDone = 0;
  let phase: MigrationProgress["phase"] = "copying";
  let lastBytes = 0;
  let lastFiles = 0;
  const emit = () => {
    lastBytes = bytesDone;
    lastFiles = filesDone;
    onProgress?.({ phase, bytesDone, bytesTotal, filesDone, filesTotal });
  };
  emit();
  return {
    bytes(n) {
      bytesDone += n;
      if (bytesDone - lastBytes >= 4 << 20) emit();
    },
    file() {
      filesDone += 1;
      if (filesDone - lastFiles >= 64) emit();
    },
    phase(next) {
      phase = next;
      if (next === "done") {
        bytesDone = bytesTotal;
        filesDone = filesTotal;
      }
      emit();
    },
  };
}
