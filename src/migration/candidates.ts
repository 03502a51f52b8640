/**
 * Listing the sessions of one workspace: its v2 scope plus the legacy directories that may
 * hold its old transcripts. A legacy file belongs to the workspace only when its header's
 * cwd resolves to the same native identity; directory names decide nothing. Read-only.
 */
import fs from "node:fs";
import path from "node:path";

import { SecureFsError, type SecureDir } from "../fs/index.js";
import {
  discoveredLegacyDirectories,
  legacyDirectoryNames,
  workspaceIdentity,
  type LegacyAnchors,
  type ManagedScope,
  type WorkspaceIdentityResult,
} from "../scope/index.js";
import { isMissingRoot, openSessionsRoot } from "./agent-root.js";
import { MigrationError, type MigrationFailure } from "./errors.js";
import {
  isReceipt,
  isTombstone,
  readRecords,
  RECEIPTS_DIRECTORY,
  TOMBSTONES_DIRECTORY,
  type MigrationReceipt,
  type Tombstone,
} from "./receipts.js";
import { identifyTranscript, readHeader, refusalCause, sameIdentity, type FileIdentity, type HeaderFacts, type TranscriptRules } from "./session-file.js";

/** Where a candidate was found. */
export type CandidateProvenance = "v2" | "legacy";

/** Migration state of a listed candidate. */
export type MigrationState = "native_v2" | "legacy_unmigrated" | "migrated_v2";

/** One session of the workspace. */
export interface SessionCandidate {
  readonly path: string;
  readonly provenance: CandidateProvenance;
  readonly migrationState: MigrationState;
  readonly sessionId: string;
  readonly header: HeaderFacts;
  /** The exact version that was listed: pass the candidate back to migrate it. */
  readonly identity: FileIdentity;
  /** For a legacy candidate, the legacy directory's name. */
  readonly legacyDirectory?: string;
  /** For a `migrated_v2` copy, the legacy source it was copied from. */
  readonly migratedFrom?: string;
}

/** A file or directory passed over, with a path-free reason. */
export interface PassedOver {
  readonly path: string;
  readonly code: string;
}

/** The candidates of a workspace, and what was left out. */
export interface CandidateListing {
  readonly kind: "listed";
  /** v2 candidates first, then legacy ones, each by path. */
  readonly candidates: SessionCandidate[];
  /** Legacy files whose header names another workspace (not read further). */
  readonly foreign: number;
  /** Files that could not be inspected: bad header, unresolvable cwd, changed while read, ... */
  readonly invalid: PassedOver[];
  /** Directories that could not be scanned (links, non-directories, unreadable). */
  readonly scanErrors: PassedOver[];
  /** Legacy directories that were examined (existing or not). */
  readonly legacyDirectories: string[];
}

/** Options of {@link listSessionCandidates}. */
export interface ListCandidatesOptions {
  /** Include legacy directories (default true). */
  readonly legacy?: boolean;
  /** Home and temp anchors of the legacy names (tests, other users' layouts). */
  readonly anchors?: LegacyAnchors;
}

const SUFFIX = ".jsonl";

/**
 * Lists every session of `scope`'s workspace with its provenance and migration state.
 * Never writes. A legacy source with a committed receipt whose v2 copy is still there is
 * hidden (the copy is listed as `migrated_v2`); a retired (tombstoned) one is hidden too.
 */
export async function listSessionCandidates(scope: ManagedScope, options: ListCandidatesOptions = {}): Promise<CandidateListing | MigrationFailure> {
  try {
    return listOrThrow(scope, options);
  } catch (error) {
    if (error instanceof MigrationError) return error.toFailure();
    throw error;
  }
}

function listOrThrow(scope: ManagedScope, options: ListCandidatesOptions): CandidateListing {
  const invalid: PassedOver[] = [];
  const scanErrors: PassedOver[] = [];
  let root: SecureDir;
  try {
    root = openSessionsRoot(scope, "read");
  } catch (error) {
    if (!(error instanceof MigrationError)) throw error;
    // Nothing is there yet, or the root is refused (reported, nothing below it read).
    if (!isMissingRoot(error)) scanErrors.push({ path: scope.sessionsRoot, code: error.detail });
    return { kind: "listed", candidates: [], foreign: 0, invalid, scanErrors, legacyDirectories: [] };
  }
  try {
    return listBelow(root, scope, options, invalid, scanErrors);
  } finally {
    root.close();
  }
}

function listBelow(root: SecureDir, scope: ManagedScope, options: ListCandidatesOptions, invalid: PassedOver[], scanErrors: PassedOver[]): CandidateListing {
  const { receipts, tombstones } = scopeDirBelow(root, scope, { receipts: [], tombstones: [] }, (dir) => recordsOf(dir, scope));
  const retired = tombstones.flatMap((t) => t.targets.map((target) => target.identity));
  const isRetired = (identity: FileIdentity) => retired.some((r) => sameIdentity(r, identity));

  const v2: SessionCandidate[] = [];
  withDir(root, scope.directoryName, scope.directoryPath, "managed", scanErrors, (dir) => {
    for (const name of transcriptNames(dir)) {
      const file = path.join(scope.directoryPath, name);
      const inspected = inspect(dir, name, file, "managed", invalid);
      if (inspected === undefined || isRetired(inspected.identity)) continue;
      const receipt = receipts.find((r) => r.destination.path === file && r.destination.sessionId === inspected.header.id);
      v2.push({
        path: file,
        provenance: "v2",
        migrationState: receipt === undefined ? "native_v2" : "migrated_v2",
        sessionId: inspected.header.id,
        header: inspected.header,
        identity: inspected.identity,
        ...(receipt === undefined ? {} : { migratedFrom: receipt.source.path }),
      });
    }
  });

  const legacy: SessionCandidate[] = [];
  let foreign = 0;
  const legacyDirectories: string[] = [];
  if (options.legacy !== false) {
    const known = legacyDirectoryNames(scope, anchorsWithCanonical(options.anchors));
    const names = [...new Set([...known, ...discoveredLegacyDirectories(root.list().map((e) => e.name), known)])];
    const owners = new Map<string, WorkspaceIdentityResult>();
    for (const name of names) {
      legacyDirectories.push(name);
      const dirPath = path.join(scope.sessionsRoot, name);
      withDir(root, name, dirPath, "source", scanErrors, (dir) => {
        for (const fileName of transcriptNames(dir)) {
          const file = path.join(dirPath, fileName);
          const header = headerOrReport(dir, fileName, file, invalid);
          if (header === undefined) continue;
          let owner = owners.get(header.cwd);
          if (owner === undefined) {
            owner = workspaceIdentity(header.cwd);
            owners.set(header.cwd, owner);
          }
          if (owner.kind === "error") {
            invalid.push({ path: file, code: owner.code });
            continue;
          }
          if (owner.identity.platform !== scope.platform || owner.identity.canonicalPath !== scope.canonicalCwd) {
            foreign += 1;
            continue;
          }
          const inspected = inspect(dir, fileName, file, "source", invalid);
          if (inspected === undefined) continue;
          if (inspected.header.id !== header.id || inspected.header.cwd !== header.cwd) {
            invalid.push({ path: file, code: "source_changed" });
            continue;
          }
          if (isRetired(inspected.identity)) continue;
          const migrated = receipts.some(
            (r) => sameIdentity(r.source.identity, inspected.identity) && v2.some((c) => c.path === r.destination.path && c.sessionId === r.destination.sessionId),
          );
          if (migrated) continue;
          legacy.push({
            path: file,
            provenance: "legacy",
            migrationState: "legacy_unmigrated",
            sessionId: inspected.header.id,
            header: inspected.header,
            identity: inspected.identity,
            legacyDirectory: name,
          });
        }
      });
    }
  }
  return { kind: "listed", candidates: [...v2, ...legacy], foreign, invalid, scanErrors, legacyDirectories };
}

/**
 * Only the tombstones of the scope: what an opener must check, without parsing every
 * receipt (each carries a whole artifact manifest, so reading them all would make each
 * migration slower than the last).
 */
export function readTombstones(scopeDir: SecureDir, scope: ManagedScope): Tombstone[] {
  return readRecords(scopeDir, TOMBSTONES_DIRECTORY, isTombstone).filter((t) => t.scope === scope.identityDigest);
}

/** {@link readTombstones} of the scope, read only; none when the scope does not exist yet. */
export function readScopeTombstones(scope: ManagedScope): Tombstone[] {
  return withScopeDir(scope, [], (dir) => readTombstones(dir, scope));
}

function recordsOf(dir: SecureDir, scope: ManagedScope): { receipts: MigrationReceipt[]; tombstones: Tombstone[] } {
  return {
    receipts: readRecords(dir, RECEIPTS_DIRECTORY, isReceipt).filter((r) => r.scope === scope.identityDigest),
    tombstones: readTombstones(dir, scope),
  };
}

/** `read` on the held scope directory, or `none` when the sessions root or scope does not exist yet. */
function withScopeDir<T>(scope: ManagedScope, none: T, read: (dir: SecureDir) => T): T {
  let root: SecureDir;
  try {
    root = openSessionsRoot(scope, "read");
  } catch (error) {
    if (isMissingRoot(error)) return none;
    throw error;
  }
  try {
    return scopeDirBelow(root, scope, none, read);
  } finally {
    root.close();
  }
}

/** `read` on the scope directory below the held sessions root `root`, or `none` when it does not exist yet. */
function scopeDirBelow<T>(root: SecureDir, scope: ManagedScope, none: T, read: (dir: SecureDir) => T): T {
  let dir: SecureDir;
  try {
    dir = root.openDir(scope.directoryName);
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return none;
    throw scopeDirFailure(error);
  }
  try {
    return read(dir);
  } finally {
    dir.close();
  }
}

function scopeDirFailure(error: unknown): MigrationError {
  if (!(error instanceof SecureFsError)) throw error;
  return new MigrationError("binding_invalid", error.code, `the scope directory is not safe (${error.code})`);
}

function anchorsWithCanonical(anchors: LegacyAnchors = {}): LegacyAnchors {
  const real = (p: string | undefined) => {
    if (p === undefined) return undefined;
    try {
      return fs.realpathSync.native(p);
    } catch {
      return undefined;
    }
  };
  const home = anchors.home;
  const tmp = anchors.tmp;
  return {
    ...anchors,
    ...(anchors.canonicalHome === undefined && home !== undefined ? { canonicalHome: real(home) } : {}),
    ...(anchors.canonicalTmp === undefined && tmp !== undefined ? { canonicalTmp: real(tmp) } : {}),
  } as LegacyAnchors;
}

/**
 * Runs `read` on directory `name` of `root`, opened by `rules` (the owner-only scope
 * directory, or a legacy directory by the legacy-source rules). A missing one holds
 * nothing; a refused or unlistable one is reported in `scanErrors` (a link as `symlink`).
 */
function withDir(root: SecureDir, name: string, dirPath: string, rules: TranscriptRules, scanErrors: PassedOver[], read: (dir: SecureDir) => void): void {
  let dir: SecureDir;
  try {
    dir = rules === "source" ? root.openDir(name, { source: true }) : root.openDir(name);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code !== "not_found") scanErrors.push({ path: dirPath, code: refusalCause(error) });
    return;
  }
  try {
    read(dir);
  } catch (error) {
    // A listing that fails (a name that is not UTF-8, an I/O error) fails this directory only.
    if (!(error instanceof SecureFsError)) throw error;
    scanErrors.push({ path: dirPath, code: refusalCause(error) });
  } finally {
    dir.close();
  }
}

/** The `*.jsonl` names directly in `dir`, sorted. */
function transcriptNames(dir: SecureDir): string[] {
  return dir
    .list()
    .map((entry) => entry.name)
    .filter((name) => name.endsWith(SUFFIX) && name.length > SUFFIX.length && !name.startsWith("."))
    .sort();
}

function headerOrReport(dir: SecureDir, name: string, file: string, invalid: PassedOver[]): HeaderFacts | undefined {
  try {
    const header = readHeader(dir, name, "source");
    if (header === undefined) invalid.push({ path: file, code: "invalid_header" });
    return header;
  } catch (error) {
    if (!(error instanceof MigrationError)) throw error;
    invalid.push({ path: file, code: error.detail });
    return undefined;
  }
}

function inspect(dir: SecureDir, name: string, file: string, rules: TranscriptRules, invalid: PassedOver[]): { header: HeaderFacts; identity: FileIdentity } | undefined {
  try {
    const { header, identity } = identifyTranscript(dir, name, file, rules);
    if (header === undefined) {
      invalid.push({ path: file, code: "invalid_header" });
      return undefined;
    }
    return { header, identity };
  } catch (error) {
    if (!(error instanceof MigrationError)) throw error;
    invalid.push({ path: file, code: error.detail });
    return undefined;
  }
}
