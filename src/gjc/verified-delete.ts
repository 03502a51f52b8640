/**
 * The identity-bound delete behind GJC's `deleteSessionVerified`, in two calls the caller
 * records between: first the session's artifacts directory, then its transcript. Each step
 * holds the sessions root and the transcript's directory by descriptor (no link followed),
 * proves the transcript is still the authorised one (inode, size, mtime, links, SHA-256, header
 * id and cwd), detaches the object under the caller's planned `.gjc-delete-*` name, checks the
 * detached object again and only then removes it; an object that turns out to be another is
 * put back. A refusal throws {@link SessionDeleteVerificationError} having changed nothing; a
 * removal that fails half-way returns `cleanup_pending` with what a retry needs.
 */
import path from "node:path";

import { GjcError } from "../errors.js";
import { SecureDir, SecureFsError } from "../fs/index.js";
import { MigrationError } from "../migration/errors.js";
import { identifyTranscript, type FileIdentity } from "../migration/session-file.js";
import { DEFAULT_ARTIFACT_LIMITS } from "../migration/copy.js";
import { removeLineIndex } from "../manager/line-index.js";
import { FileSessionStorage } from "../storage/index.js";

/** A transcript's (or artifacts directory's) identity as GJC pins it; `sha256` is `""` for a directory. */
export interface SessionStorageFileIdentity {
  /** Device and inode. */
  dev: bigint;
  ino: bigint;
  /** Link count, when recorded. */
  nlink?: bigint;
  /** Size in bytes. */
  size: number;
  /** Modification time in nanoseconds since the epoch. */
  mtimeNs: bigint;
  /** Lowercase hex SHA-256 of the bytes. */
  sha256: string;
}

/** What a verified delete may remove, as authorised; see {@link deleteSessionVerified}. */
export interface VerifiedSessionDeleteTarget {
  /** The sessions root; the transcript must lie below it. */
  sessionsRoot: string;
  /** The transcript, an absolute `*.jsonl` path below {@link sessionsRoot}. */
  transcriptPath: string;
  /** The header id it must have. */
  sessionId: string;
  /** The header cwd it must have. */
  cwd: string;
  /** The transcript version authorised for deletion. */
  transcriptIdentity: SessionStorageFileIdentity;
  /** The transcript directory's identity, when the caller pinned it. */
  transcriptParentIdentity?: { dev: bigint; ino: bigint };
  /** The artifacts directory's identity recorded by a failed first call, to accept it on a retry. */
  expectedArtifactsIdentity?: SessionStorageFileIdentity;
  /** Recorded: there was no artifacts directory when the delete was authorised (one appearing since is refused). */
  artifactsAbsentAtAuthorization?: true;
  /** The detached artifacts a failed first call left (from its `cleanup_pending`), removed on the retry. */
  detachedArtifactsPath?: string;
  /** The detached transcript a failed second call left, removed on the retry. */
  detachedTranscriptPath?: string;
  /** The name the artifacts directory is detached under: `.gjc-delete-*` in the transcript's directory, fresh per attempt. */
  plannedArtifactsPath?: string;
  /** The name the transcript is detached under: as {@link plannedArtifactsPath}, distinct from it. */
  plannedTranscriptPath?: string;
  /** Set once the caller recorded the first call's `artifacts_removed`: this call deletes the transcript. */
  artifactsRemoved?: true;
}

/** What a verified delete did. */
export type VerifiedSessionDeleteResult =
  | { kind: "artifacts_removed"; phase: "artifacts"; transcriptIdentity: SessionStorageFileIdentity }
  | { kind: "deleted" }
  | {
      kind: "cleanup_pending";
      phase: "artifacts";
      error: Error;
      /** The artifacts directory as detached. */
      artifactsIdentity: SessionStorageFileIdentity | undefined;
      /** Where the detached artifacts wait: pass it back as {@link VerifiedSessionDeleteTarget.detachedArtifactsPath}. */
      detachedArtifactsPath: string;
      transcriptIdentity: SessionStorageFileIdentity;
    }
  | {
      kind: "cleanup_pending";
      phase: "transcript";
      error: Error;
      transcriptIdentity: SessionStorageFileIdentity;
      /** Where the detached transcript waits: pass it back as {@link VerifiedSessionDeleteTarget.detachedTranscriptPath}. */
      detachedTranscriptPath?: string;
    };

/** Which check refused a verified delete. */
export type VerifiedDeleteFailureKind = "containment" | "symlink" | "stat" | "identity" | "header" | "cwd" | "artifacts";

/** A verified delete refused before removing anything; `kind` says which check. */
export class SessionDeleteVerificationError extends GjcError<"delete_verification_failed"> {
  /** Which check refused. */
  readonly kind: VerifiedDeleteFailureKind;

  constructor(kind: VerifiedDeleteFailureKind, message: string, options?: { cause?: unknown }) {
    super("delete_verification_failed", message, options);
    this.kind = kind;
  }
}

/** The prefix every planned quarantine name carries, so a leftover is recognisable as ours. */
export const DELETE_QUARANTINE_PREFIX = ".gjc-delete-";

/** See the module comment. */
export async function deleteSessionVerified(target: VerifiedSessionDeleteTarget): Promise<VerifiedSessionDeleteResult> {
  const { dirNames, name } = contained(target);
  const second = target.artifactsRemoved === true;
  const planned = plannedName(target, second ? target.plannedTranscriptPath : target.plannedArtifactsPath);
  const root = opened(() => SecureDir.openRoot(target.sessionsRoot));
  try {
    const dir = dirNames.length === 0 ? root : opened(() => root.openDir(dirNames));
    try {
      const parent = target.transcriptParentIdentity;
      if (parent !== undefined) {
        const here = dir.stat();
        if (BigInt(here.dev) !== parent.dev || BigInt(here.ino) !== parent.ino)
          throw new SessionDeleteVerificationError("identity", "the transcript's directory changed");
      }
      const identity = verifiedTranscript(dir, name, target);
      return second
        ? await removeTranscript(dir, name, planned, identity, target)
        : await removeArtifacts(dir, name.slice(0, -".jsonl".length), planned, identity, target);
    } finally {
      if (dir !== root) dir.close();
    }
  } finally {
    root.close();
  }
}

async function removeArtifacts(
  dir: SecureDir,
  stem: string,
  planned: string,
  transcriptIdentity: SessionStorageFileIdentity,
  target: VerifiedSessionDeleteTarget,
): Promise<VerifiedSessionDeleteResult> {
  if (target.detachedArtifactsPath !== undefined) {
    const leftover = plannedName(target, target.detachedArtifactsPath);
    try {
      await dir.removeTreeAsync(leftover, DELETE_TREE_LIMITS);
    } catch (error) {
      if (!isMissing(error))
        return {
          kind: "cleanup_pending",
          phase: "artifacts",
          error: asError(error),
          artifactsIdentity: undefined,
          detachedArtifactsPath: target.detachedArtifactsPath,
          transcriptIdentity,
        };
    }
  }
  const before = statOrUndefined(dir, stem);
  if (before === undefined) return { kind: "artifacts_removed", phase: "artifacts", transcriptIdentity };
  if (before.type === "symlink") throw new SessionDeleteVerificationError("symlink", "the artifacts entry is a symbolic link");
  if (before.type !== "directory") throw new SessionDeleteVerificationError("artifacts", "the artifacts entry is not a directory");
  if (target.artifactsAbsentAtAuthorization === true)
    throw new SessionDeleteVerificationError("artifacts", "an artifacts directory appeared after the delete was authorised");
  const expected = target.expectedArtifactsIdentity;
  if (expected !== undefined && (BigInt(before.dev) !== expected.dev || BigInt(before.ino) !== expected.ino)) {
    throw new SessionDeleteVerificationError("artifacts", "the artifacts directory is not the recorded one");
  }
  detach(dir, stem, planned, "artifacts");
  const after = statOrUndefined(dir, planned);
  if (after === undefined || after.dev !== before.dev || after.ino !== before.ino || after.type !== "directory") {
    putBack(dir, planned, stem);
    throw new SessionDeleteVerificationError("artifacts", "the artifacts directory changed while it was detached");
  }
  const artifactsIdentity = {
    dev: BigInt(after.dev),
    ino: BigInt(after.ino),
    nlink: BigInt(after.nlink),
    size: after.size,
    mtimeNs: BigInt(after.mtimeNs),
    sha256: "",
  };
  try {
    await dir.removeTreeAsync(planned, DELETE_TREE_LIMITS);
    dir.sync();
  } catch (error) {
    return {
      kind: "cleanup_pending",
      phase: "artifacts",
      error: asError(error),
      artifactsIdentity,
      detachedArtifactsPath: path.join(dir.path, planned),
      transcriptIdentity,
    };
  }
  return { kind: "artifacts_removed", phase: "artifacts", transcriptIdentity };
}

async function removeTranscript(
  dir: SecureDir,
  name: string,
  planned: string,
  transcriptIdentity: SessionStorageFileIdentity,
  target: VerifiedSessionDeleteTarget,
): Promise<VerifiedSessionDeleteResult> {
  if (statOrUndefined(dir, name.slice(0, -".jsonl".length)) !== undefined)
    throw new SessionDeleteVerificationError("artifacts", "the artifacts directory is back");
  detach(dir, name, planned, "stat");
  try {
    verifiedTranscript(dir, planned, target);
  } catch (error) {
    putBack(dir, planned, name);
    throw error;
  }
  try {
    dir.unlink(planned);
    dir.sync();
  } catch (error) {
    return { kind: "cleanup_pending", phase: "transcript", error: asError(error), transcriptIdentity, detachedTranscriptPath: path.join(dir.path, planned) };
  }
  // The line index is derived and disposable: it goes with its transcript, quietly.
  await removeLineIndex(new FileSessionStorage(target.sessionsRoot), path.resolve(target.transcriptPath));
  return { kind: "deleted" };
}

/** The transcript `name` of `dir`, proved to be the authorised version, as its identity. */
function verifiedTranscript(dir: SecureDir, name: string, target: VerifiedSessionDeleteTarget): SessionStorageFileIdentity {
  let read: { header: { id: string; cwd: string } | undefined; identity: FileIdentity };
  try {
    read = identifyTranscript(dir, name, target.transcriptPath, "managed");
  } catch (error) {
    throw new SessionDeleteVerificationError(transcriptRefusalKind(error), "the transcript could not be opened and read", { cause: error });
  }
  const { identity, header } = read;
  const found = {
    dev: BigInt(identity.dev),
    ino: BigInt(identity.ino),
    nlink: BigInt(identity.nlink),
    size: identity.size,
    mtimeNs: BigInt(identity.mtimeNs),
    sha256: identity.sha256,
  };
  checkAuthorisedTranscript(found, header, target);
  return found;
}

/**
 * The check a refused transcript read failed, as GJC names it: `symlink` for a link at its name, `identity` for a file with
 * more than one link (never the single-link version a delete authorises), else `stat`.
 */
function transcriptRefusalKind(error: unknown): VerifiedDeleteFailureKind {
  const detail = error instanceof MigrationError ? error.detail : error instanceof SecureFsError ? error.code : undefined;
  if (detail === "symlink" || detail === "symlink_refused") return "symlink";
  if (detail === "hardlink" || detail === "hardlink_refused") return "identity";
  return "stat";
}

/**
 * Refuses unless the transcript `found` (its identity, and its header: `undefined` when the first line is no session
 * header) is the single-link version `target` authorised: `identity` for another object or version or another
 * session id, `header` for no session header, `cwd` for another workspace.
 */
export function checkAuthorisedTranscript(
  found: Required<SessionStorageFileIdentity>,
  header: { id: string; cwd: string } | undefined,
  target: VerifiedSessionDeleteTarget,
): void {
  const expected = target.transcriptIdentity;
  const same =
    found.dev === expected.dev &&
    found.ino === expected.ino &&
    found.size === expected.size &&
    found.mtimeNs === expected.mtimeNs &&
    found.sha256 === expected.sha256 &&
    (expected.nlink === undefined || found.nlink === expected.nlink);
  if (!same || found.nlink !== 1n) throw new SessionDeleteVerificationError("identity", "the transcript is not the version authorised for deletion");
  if (header === undefined) throw new SessionDeleteVerificationError("header", "the transcript has no session header");
  if (header.id !== target.sessionId) throw new SessionDeleteVerificationError("identity", "the transcript's header names another session");
  if (header.cwd !== target.cwd) throw new SessionDeleteVerificationError("cwd", "the transcript's header names another workspace");
}

/** The transcript's directory (as names below the root) and file name; `containment` unless it is a `*.jsonl` below the root. */
export function contained(target: VerifiedSessionDeleteTarget): { dirNames: string[]; name: string } {
  const { sessionsRoot, transcriptPath } = target;
  if (typeof sessionsRoot !== "string" || typeof transcriptPath !== "string" || !path.isAbsolute(sessionsRoot) || !path.isAbsolute(transcriptPath)) {
    throw new SessionDeleteVerificationError("containment", "the sessions root and transcript must be absolute paths");
  }
  const relative = path.relative(path.resolve(sessionsRoot), path.resolve(transcriptPath));
  const names = relative.split(path.sep);
  if (relative === "" || path.isAbsolute(relative) || names.includes("..") || !relative.endsWith(".jsonl") || names.at(-1) === ".jsonl") {
    throw new SessionDeleteVerificationError("containment", "the transcript is not a session file below the sessions root");
  }
  return { dirNames: names.slice(0, -1), name: names.at(-1)! };
}

/** The entry name of a planned (or left) quarantine path: `.gjc-delete-*` beside the transcript, else `containment`. */
function plannedName(target: VerifiedSessionDeleteTarget, planned: string | undefined): string {
  const dir = path.dirname(path.resolve(target.transcriptPath));
  const name = planned === undefined ? "" : path.basename(planned);
  const distinct =
    target.plannedArtifactsPath === undefined ||
    target.plannedTranscriptPath === undefined ||
    path.resolve(target.plannedArtifactsPath) !== path.resolve(target.plannedTranscriptPath);
  if (planned === undefined || path.dirname(path.resolve(planned)) !== dir || !name.startsWith(DELETE_QUARANTINE_PREFIX) || !distinct) {
    throw new SessionDeleteVerificationError(
      "containment",
      `a quarantine name (${DELETE_QUARANTINE_PREFIX}*) beside the transcript is required, distinct per phase`,
    );
  }
  return name;
}

/** Removing a session's artifacts may take a deep tree: the migration copy's bounds, with room for their root. */
const DELETE_TREE_LIMITS = { maxDepth: DEFAULT_ARTIFACT_LIMITS.maxDepth + 1, maxEntries: DEFAULT_ARTIFACT_LIMITS.maxEntries + 1 };

function detach(dir: SecureDir, from: string, to: string, kind: VerifiedDeleteFailureKind): void {
  try {
    dir.publishNoReplace(from, to);
  } catch (error) {
    throw new SessionDeleteVerificationError(
      kind,
      isMissing(error) ? "the entry disappeared before it was detached" : "the entry could not be detached under its quarantine name",
      { cause: error },
    );
  }
}

function putBack(dir: SecureDir, from: string, to: string): void {
  try {
    dir.publishNoReplace(from, to);
  } catch {
    // The refusal thrown next is the news; the object waits under its quarantine name, never removed.
  }
}

function opened(open: () => SecureDir): SecureDir {
  try {
    return open();
  } catch (error) {
    const link = error instanceof SecureFsError && error.code === "symlink_refused";
    throw new SessionDeleteVerificationError(link ? "symlink" : "stat", "the sessions directory could not be opened", { cause: error });
  }
}

function statOrUndefined(dir: SecureDir, name: string): ReturnType<SecureDir["stat"]> | undefined {
  try {
    return dir.stat(name);
  } catch (error) {
    if (isMissing(error)) return undefined;
    throw new SessionDeleteVerificationError("stat", "an entry could not be examined", { cause: error });
  }
}

function isMissing(error: unknown): boolean {
  return error instanceof SecureFsError && error.code === "not_found";
}

function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
