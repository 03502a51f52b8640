/**
 * Listing the sessions of one workspace: its v2 scope plus the legacy directories that may
 * hold its old transcripts. A legacy file belongs to the workspace only when its header's
 * cwd resolves to the same native identity; directory names decide nothing. Read-only.
 */
import fs from "node:fs";
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import {
  discoveredLegacyDirectories,
  legacyDirectoryNames,
  workspaceIdentity,
  type LegacyAnchors,
  type ManagedScope,
  type WorkspaceIdentityResult,
} from "../scope/index.js";
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
import { identifyTranscript, readHeader, sameIdentity, type FileIdentity, type HeaderFacts } from "./session-file.js";

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
    return await listOrThrow(scope, options);
  } catch (error) {
    if (error instanceof MigrationError) return error.toFailure();
    throw error;
  }
}

async function listOrThrow(scope: ManagedScope, options: ListCandidatesOptions): Promise<CandidateListing> {
  const invalid: PassedOver[] = [];
  const scanErrors: PassedOver[] = [];
  const { receipts, tombstones } = readProtocolRecords(scope);
  const retired = tombstones.flatMap((t) => t.targets.map((target) => target.identity));
  const isRetired = (identity: FileIdentity) => retired.some((r) => sameIdentity(r, identity));

  const v2: SessionCandidate[] = [];
  for (const file of transcriptsIn(scope.directoryPath, scanErrors)) {
    const inspected = await inspect(file, invalid);
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

  const legacy: SessionCandidate[] = [];
  let foreign = 0;
  const legacyDirectories: string[] = [];
  if (options.legacy !== false) {
    const known = legacyDirectoryNames(scope, anchorsWithCanonical(options.anchors));
    const rootEntries = directoryNames(scope.sessionsRoot, scanErrors);
    const names = [...known, ...discoveredLegacyDirectories(rootEntries, known)];
    const owners = new Map<string, WorkspaceIdentityResult>();
    const seen = new Set<string>();
    for (const name of names) {
      const dir = path.join(scope.sessionsRoot, name);
      legacyDirectories.push(name);
      for (const file of transcriptsIn(dir, scanErrors)) {
        if (seen.has(file)) continue;
        seen.add(file);
        const header = await headerOrReport(file, invalid);
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
        const inspected = await inspect(file, invalid);
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
    }
  }
  return { kind: "listed", candidates: [...v2, ...legacy], foreign, invalid, scanErrors, legacyDirectories };
}

/** Receipts and tombstones of the scope; none when the scope does not exist yet. */
export function readProtocolRecords(scope: ManagedScope): { receipts: MigrationReceipt[]; tombstones: Tombstone[] } {
  return withScopeDir(scope, { receipts: [], tombstones: [] }, (dir) => ({
    receipts: readRecords(dir, RECEIPTS_DIRECTORY, isReceipt).records.filter((r) => r.scope === scope.identityDigest),
    tombstones: readRecords(dir, TOMBSTONES_DIRECTORY, isTombstone).records.filter((t) => t.scope === scope.identityDigest),
  }));
}

/**
 * Only the tombstones of the scope: what an opener must check, without parsing every
 * receipt (each carries a whole artifact manifest, so reading them all would make each
 * migration slower than the last).
 */
export function readTombstones(scope: ManagedScope): Tombstone[] {
  return withScopeDir(scope, [], (dir) => readRecords(dir, TOMBSTONES_DIRECTORY, isTombstone).records.filter((t) => t.scope === scope.identityDigest));
}

/** `read` on the held scope directory, or `none` when the scope does not exist yet. */
function withScopeDir<T>(scope: ManagedScope, none: T, read: (dir: SecureDir) => T): T {
  if (!fs.existsSync(scope.directoryPath)) return none;
  let dir: SecureDir;
  try {
    dir = SecureDir.openRoot(scope.directoryPath);
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    throw new MigrationError("binding_invalid", error.code, `the scope directory is not safe (${error.code})`);
  }
  try {
    return read(dir);
  } finally {
    dir.close();
  }
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

/** Names directly in `dir`; a missing directory has none; a link or non-directory is reported. */
function directoryNames(dir: string, scanErrors: PassedOver[]): string[] {
  let st: fs.Stats;
  try {
    st = fs.lstatSync(dir);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    if (code !== "ENOENT") scanErrors.push({ path: dir, code: code ?? "io_error" });
    return [];
  }
  if (st.isSymbolicLink() || !st.isDirectory()) {
    scanErrors.push({ path: dir, code: st.isSymbolicLink() ? "symlink" : "not_directory" });
    return [];
  }
  try {
    return fs.readdirSync(dir);
  } catch (error) {
    scanErrors.push({ path: dir, code: (error as NodeJS.ErrnoException).code ?? "io_error" });
    return [];
  }
}

/** The `*.jsonl` regular files directly in `dir`, sorted; links among them are reported. */
function transcriptsIn(dir: string, scanErrors: PassedOver[]): string[] {
  const files: string[] = [];
  for (const name of directoryNames(dir, scanErrors)) {
    if (!name.endsWith(SUFFIX) || name.length === SUFFIX.length || name.startsWith(".")) continue;
    files.push(path.join(dir, name));
  }
  return files.sort();
}

async function headerOrReport(file: string, invalid: PassedOver[]): Promise<HeaderFacts | undefined> {
  try {
    const header = await readHeader(file);
    if (header === undefined) invalid.push({ path: file, code: "invalid_header" });
    return header;
  } catch (error) {
    if (!(error instanceof MigrationError)) throw error;
    invalid.push({ path: file, code: error.detail });
    return undefined;
  }
}

async function inspect(file: string, invalid: PassedOver[]): Promise<{ header: HeaderFacts; identity: FileIdentity } | undefined> {
  try {
    const { header, identity } = await identifyTranscript(file);
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
