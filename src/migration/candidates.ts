/**
 * Listing the sessions of one workspace, read-only: its v2 scope plus the legacy directories that may hold its old
 * transcripts. A legacy file belongs to the workspace only when its header's cwd resolves to the same native identity.
 */
import fs from "node:fs";
import path from "node:path";

import { isValidEntryName, SecureFsError, type SecureDir } from "../fs/index.js";
import {
  discoveredLegacyDirectories,
  formerWorkspaceIdentity,
  legacyDirectoryNames,
  workspaceIdentity,
  type LegacyAnchors,
  type ManagedScope,
  type WorkspaceIdentityResult,
} from "../scope/index.js";
import { openScopeDir, openSessionsRoot } from "./agent-root.js";
import { MigrationError, type MigrationFailure } from "./errors.js";
import { isReceipt, isTombstone, readRecords, RECEIPTS_DIRECTORY, TOMBSTONES_DIRECTORY, type MigrationReceipt, type Tombstone } from "./receipts.js";
import { identifyTranscript, readHeader, refusalCause, sameIdentity, type FileIdentity, type HeaderFacts, type TranscriptRules } from "./session-file.js";

/** One session of the workspace: where it was found and its migration state. */
export interface SessionCandidate {
  readonly path: string;
  readonly provenance: "v2" | "legacy";
  readonly migrationState: "native_v2" | "legacy_unmigrated" | "migrated_v2";
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
 * Lists every session of `scope`'s workspace with its provenance and migration state; never writes. A legacy source
 * whose committed receipt's v2 copy is still there is hidden (the copy is `migrated_v2`), and so is a retired one.
 */
export async function listSessionCandidates(scope: ManagedScope, options: ListCandidatesOptions = {}): Promise<CandidateListing | MigrationFailure> {
  return listSessionCandidatesSync(scope, options);
}

/** {@link listSessionCandidates} for a synchronous caller (pi's factories). */
export function listSessionCandidatesSync(scope: ManagedScope, options: ListCandidatesOptions = {}): CandidateListing | MigrationFailure {
  const listing: CandidateListing = { kind: "listed", candidates: [], foreign: 0, invalid: [], scanErrors: [], legacyDirectories: [] };
  try {
    return withSessionsRoot(scope, listing, (root) => listBelow(root, scope, options, listing));
  } catch (error) {
    if (!(error instanceof MigrationError)) throw error;
    if (error.code !== "sessions_root_unavailable") return error.toFailure();
    // The root is refused: reported, nothing below it read.
    listing.scanErrors.push({ path: scope.sessionsRoot, code: error.detail });
    return listing;
  }
}

/** `use` of the sessions root of `scope`, opened for reading; `missing` when it does not exist yet. */
function withSessionsRoot<T>(scope: ManagedScope, missing: T, use: (root: SecureDir) => T): T {
  let root: SecureDir;
  try {
    root = openSessionsRoot(scope, "read");
  } catch (error) {
    if (error instanceof MigrationError && error.code === "sessions_root_unavailable" && error.detail === "not_found") return missing;
    throw error;
  }
  try {
    return use(root);
  } finally {
    root.close();
  }
}

function listBelow(root: SecureDir, scope: ManagedScope, options: ListCandidatesOptions, listing: CandidateListing): CandidateListing {
  const { invalid, scanErrors } = listing;
  const { receipts, tombstones } = scopeRecords(root, scope, true);
  const retired = tombstones.flatMap((t) => t.targets.map((target) => target.identity));
  const isRetired = (identity: FileIdentity) => retired.some((r) => sameIdentity(r, identity));
  // A read that fails or finds no usable header passes the file over, with the reason.
  const attempt = <T>(file: string, read: () => T | undefined): T | undefined => {
    try {
      const value = read();
      if (value === undefined) invalid.push({ path: file, code: "invalid_header" });
      return value;
    } catch (error) {
      if (!(error instanceof MigrationError)) throw error;
      invalid.push({ path: file, code: error.detail });
      return undefined;
    }
  };
  const inspect = (dir: SecureDir, name: string, file: string, rules: TranscriptRules) =>
    attempt(file, () => {
      const { header, identity } = identifyTranscript(dir, name, file, rules);
      return header === undefined ? undefined : { header, identity };
    });

  const v2: SessionCandidate[] = [];
  eachTranscript(root, scope.directoryName, scope.directoryPath, "managed", scanErrors, (dir, name, file) => {
    const inspected = inspect(dir, name, file, "managed");
    if (inspected === undefined || isRetired(inspected.identity)) return;
    const receipt = receipts.find((r) => r.destination.path === file && r.destination.sessionId === inspected.header.id);
    v2.push({
      path: file,
      provenance: "v2",
      migrationState: receipt === undefined ? "native_v2" : "migrated_v2",
      sessionId: inspected.header.id,
      ...inspected,
      ...(receipt === undefined ? {} : { migratedFrom: receipt.source.path }),
    });
  });
  listing.candidates.push(...v2);
  if (options.legacy === false) return listing;

  const known = legacyDirectoryNames(scope, anchorsWithCanonical(options.anchors));
  const owners = new Map<string, WorkspaceIdentityResult>();
  let foreign = 0;
  for (const name of new Set([
    ...known,
    ...discoveredLegacyDirectories(
      root.list().map((e) => e.name),
      known,
    ),
  ])) {
    listing.legacyDirectories.push(name);
    eachTranscript(root, name, path.join(scope.sessionsRoot, name), "source", scanErrors, (dir, fileName, file) => {
      const header = attempt(file, () => readHeader(dir, fileName, "source"));
      if (header === undefined) return;
      let owner = owners.get(header.cwd);
      if (owner === undefined) owners.set(header.cwd, (owner = ownerIdentity(scope, header.cwd)));
      if (owner.kind === "error") {
        invalid.push({ path: file, code: owner.code });
        return;
      }
      if (owner.identity.platform !== scope.platform || owner.identity.canonicalPath !== scope.canonicalCwd) {
        foreign += 1;
        return;
      }
      const inspected = inspect(dir, fileName, file, "source");
      if (inspected === undefined) return;
      if (inspected.header.id !== header.id || inspected.header.cwd !== header.cwd) {
        invalid.push({ path: file, code: "source_changed" });
        return;
      }
      if (isRetired(inspected.identity)) return;
      // Hidden while the v2 copy its receipt names is still there.
      const copied = (d: { path: string; sessionId: string }) => v2.some((c) => c.path === d.path && c.sessionId === d.sessionId);
      if (receipts.some((r) => sameIdentity(r.source.identity, inspected.identity) && copied(r.destination))) return;
      listing.candidates.push({
        path: file,
        provenance: "legacy",
        migrationState: "legacy_unmigrated",
        sessionId: inspected.header.id,
        ...inspected,
        legacyDirectory: name,
      });
    });
  }
  return { ...listing, foreign };
}

/** The workspace a session header's `cwd` names, as `scope` was resolved: by its native identity, or for a former workspace's scope by the path it had. */
export function ownerIdentity(scope: Pick<ManagedScope, "former">, cwd: string): WorkspaceIdentityResult {
  return scope.former ? formerWorkspaceIdentity(cwd) : workspaceIdentity(cwd);
}

/** The entry names of `candidate`'s directory (the scope's for v2, its legacy one otherwise) and file below the sessions root; `not_a_candidate` when it is not there. */
export function locateCandidate(scope: ManagedScope, candidate: SessionCandidate): { directory: string; fileName: string } {
  const directory = candidate.provenance === "v2" ? scope.directoryName : candidate.legacyDirectory;
  const fileName = path.basename(candidate.path);
  if (
    typeof directory !== "string" ||
    !isValidEntryName(directory) ||
    !isValidEntryName(fileName) ||
    candidate.path !== path.join(scope.sessionsRoot, directory, fileName)
  ) {
    throw new MigrationError("not_a_candidate", "outside_scope", "the candidate is not in this workspace's sessions root");
  }
  return { directory, fileName };
}

/** The tombstones of the scope, read only; none when the scope does not exist yet. */
export function readScopeTombstones(scope: ManagedScope): Tombstone[] {
  return withSessionsRoot(scope, [], (root) => scopeRecords(root, scope, false).tombstones);
}

/**
 * The scope's records below the held sessions root (none without a scope directory). Receipts only when asked: each
 * carries a whole artifact manifest, so an opener that read them all would make each migration slower than the last.
 */
function scopeRecords(root: SecureDir, scope: ManagedScope, withReceipts: boolean): { receipts: MigrationReceipt[]; tombstones: Tombstone[] } {
  let dir: SecureDir;
  try {
    dir = openScopeDir(root, scope);
  } catch (error) {
    if (error instanceof MigrationError && error.detail === "not_found") return { receipts: [], tombstones: [] };
    throw error;
  }
  try {
    const mine = <T extends MigrationReceipt | Tombstone>(records: T[]) => records.filter((r) => r.scope === scope.identityDigest);
    return {
      receipts: withReceipts ? mine(readRecords(dir, RECEIPTS_DIRECTORY, isReceipt)) : [],
      tombstones: mine(readRecords(dir, TOMBSTONES_DIRECTORY, isTombstone)),
    };
  } finally {
    dir.close();
  }
}

function anchorsWithCanonical(anchors: LegacyAnchors = {}): LegacyAnchors {
  const real = (p: string | undefined) => {
    try {
      return p === undefined ? undefined : fs.realpathSync.native(p);
    } catch {
      return undefined;
    }
  };
  return { ...anchors, canonicalHome: anchors.canonicalHome ?? real(anchors.home), canonicalTmp: anchors.canonicalTmp ?? real(anchors.tmp) };
}

/**
 * Runs `visit` on each `*.jsonl` file, in name order, of directory `name` of `root` (at `dirPath`), opened by `rules`:
 * the owner-only scope directory, or a legacy one by the legacy-source rules. A missing one holds nothing; a refused or
 * unlistable one goes to `scanErrors` (a link as `symlink`).
 */
function eachTranscript(
  root: SecureDir,
  name: string,
  dirPath: string,
  rules: TranscriptRules,
  scanErrors: PassedOver[],
  visit: (dir: SecureDir, fileName: string, file: string) => void,
): void {
  let dir: SecureDir;
  try {
    dir = root.openDir(name, rules === "source" ? { source: true } : {});
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    if (error.code !== "not_found") scanErrors.push({ path: dirPath, code: refusalCause(error) });
    return;
  }
  try {
    const names = dir
      .list()
      .map((entry) => entry.name)
      .filter((n) => n.endsWith(SUFFIX) && n.length > SUFFIX.length && !n.startsWith("."));
    for (const fileName of names.sort()) visit(dir, fileName, path.join(dirPath, fileName));
  } catch (error) {
    // A listing that fails (a name that is not UTF-8, an I/O error) fails this directory only.
    if (!(error instanceof SecureFsError)) throw error;
    scanErrors.push({ path: dirPath, code: refusalCause(error) });
  } finally {
    dir.close();
  }
}
