/**
 * GJC's `FileSessionStorage` and its retirement functions: the main entry's file storage
 * (owner-only, no link below its root) with the calls GJC's app makes beyond the storage
 * contract: a descriptor snapshot, deleting a session with its artifacts, the verified delete
 * (./verified-delete.ts), and the disk GC's dry run and retirement built on it.
 */
import { createHash, randomUUID } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import {
  FileSessionStorage as EngineFileStorage,
  StorageError,
  isStorageError,
  type FileSessionStorageOptions,
  type SessionStorageWriter,
  type StorageStat,
} from "../storage/index.js";
import { toStorageError } from "../storage/errors.js";
import { DEFAULT_ARTIFACT_LIMITS } from "../migration/copy.js";
import { removeLineIndex } from "../manager/line-index.js";
import {
  DELETE_QUARANTINE_PREFIX,
  SessionDeleteVerificationError,
  deleteSessionVerified,
  type SessionStorageFileIdentity,
  type VerifiedSessionDeleteResult,
  type VerifiedSessionDeleteTarget,
} from "./verified-delete.js";
import { engineWriterOptions, type SessionStorageWriterOpenOptions } from "./writer-options.js";
import { listingOrNone, matchingPaths } from "./strict-inventory.js";

import { GJC_STAT_SHAPE, type SessionStorageSnapshot, type SessionStorageStat } from "./storage-types.js";
import { engineStorage } from "./storage-view.js";

export type { SessionStorageSnapshot, SessionStorageStat } from "./storage-types.js";

const OPEN_SNAPSHOT = fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK;
const ARTIFACT_TREE_LIMITS = { maxDepth: DEFAULT_ARTIFACT_LIMITS.maxDepth + 1, maxEntries: DEFAULT_ARTIFACT_LIMITS.maxEntries + 1 };

/** The main entry's file storage as this class's base: everything but `statSync`, which answers GJC's way here. */
interface EngineFileBase extends Omit<EngineFileStorage, "statSync" | "openWriter" | "listFilesSync"> {
  openWriter(target: string, options?: Parameters<EngineFileStorage["openWriter"]>[1]): SessionStorageWriter;
  listFilesSync(dir: string, options?: { kind?: "file" | "directory" }): string[];
}
const EngineFileBase: new (root?: string, options?: FileSessionStorageOptions) => EngineFileBase = EngineFileStorage;
const engineStat = EngineFileStorage.prototype.statSync;

/**
 * The main entry's {@link EngineFileStorage} with GJC's extra calls and stat shape; `new FileSessionStorage()` roots it at
 * the file system root, as GJC constructs it. The engine reads it through `engineStorage` (./storage-view.ts).
 */
export class FileSessionStorage extends EngineFileBase {
  /** Stats in GJC's shape: the engine reads this storage through its view. */
  get [GJC_STAT_SHAPE](): true {
    return true;
  }

  /**
   * The metadata of `target` in GJC's shape (nanosecond times, the link count), checked by this storage's rules (no
   * link at `target` or above it) first.
   * @throws StorageError `not_found`, `symlink_refused`, `read_failed` (replaced between the check and the stat), ...
   */
  statSync(target: string): SessionStorageStat {
    const checked = this.#engineStat(target);
    const absolute = path.resolve(this.root, target);
    let stat: fs.BigIntStats;
    try {
      stat = fs.lstatSync(absolute, { bigint: true });
    } catch (error) {
      throw toStorageError(error, "read", absolute, "lstat");
    }
    if (stat.dev.toString() !== checked.dev || stat.ino.toString() !== checked.ino)
      throw new StorageError("read_failed", `${absolute} was replaced while it was stat'ed`);
    return gjcStat(stat);
  }

  #engineStat(target: string): StorageStat {
    return engineStat.call(this as unknown as EngineFileStorage, target);
  }
  /**
   * Opens the one writer of `target` (see the main entry's), its descriptor closed through
   * `options.closeAdapter` when given, and bound to `options.securityContext`'s session directory.
   * @throws StorageError as the main entry's, and as {@link engineWriterOptions} for the context
   */
  override openWriter(target: string, options: SessionStorageWriterOpenOptions = {}): SessionStorageWriter {
    return super.openWriter(target, engineWriterOptions(target, options));
  }

  /**
   * The bytes of regular file `filePath` and its metadata, both through one descriptor (no link
   * followed, a FIFO never waited on), the path checked by this storage's rules first.
   * @throws StorageError `not_found`, `symlink_refused`, `not_regular_file`, `read_failed`, ...
   */
  readSnapshotSync(filePath: string): SessionStorageSnapshot {
    const named = this.#engineStat(filePath);
    let fd: number;
    try {
      fd = fs.openSync(filePath, OPEN_SNAPSHOT);
    } catch (error) {
      throw new StorageError((error as NodeJS.ErrnoException).code === "ELOOP" ? "symlink_refused" : "read_failed", `cannot open ${filePath} for reading`, {
        cause: error,
      });
    }
    try {
      const stat = fs.fstatSync(fd, { bigint: true });
      if (!stat.isFile()) throw new StorageError("not_regular_file", `${filePath} is not a regular file`);
      if (String(stat.dev) !== named.dev || String(stat.ino) !== named.ino)
        throw new StorageError("read_failed", `${filePath} was replaced while it was opened`);
      return { bytes: fs.readFileSync(fd), stat: gjcStat(stat) };
    } finally {
      fs.closeSync(fd);
    }
  }

  /**
   * Deletes session `sessionPath` of an explicit directory: the transcript (a missing one is
   * fine; a live writer's gets `session_busy`), the sidecars derived from it (our line index,
   * GJC's memory spill files `<file>.spill.*`), then its artifacts directory (`<file minus .jsonl>/`) by descriptor.
   * @throws StorageError from the unlink; SecureFsError when the artifacts directory cannot be removed
   */
  async deleteSessionWithArtifacts(sessionPath: string): Promise<void> {
    try {
      await this.unlink(sessionPath);
    } catch (error) {
      if (!isStorageError(error, "not_found")) throw error;
    }
    await removeLineIndex(engineStorage(this), sessionPath);
    const name = path.basename(sessionPath);
    let dir: SecureDir;
    try {
      dir = SecureDir.openRoot(path.dirname(sessionPath));
    } catch (error) {
      if (error instanceof SecureFsError && error.code === "not_found") return;
      throw error;
    }
    try {
      for (const entry of dir.list()) {
        if (entry.type === "file" && entry.name.startsWith(`${name}.spill.`)) dir.unlink(entry.name);
      }
      if (name.endsWith(".jsonl")) {
        try {
          await dir.removeTreeAsync(name.slice(0, -".jsonl".length), ARTIFACT_TREE_LIMITS);
        } catch (error) {
          if (!(error instanceof SecureFsError && error.code === "not_found")) throw error;
        }
      }
      dir.sync();
    } finally {
      dir.close();
    }
  }

  /**
   * The main entry's listing (sorted names), or, given a glob `pattern` as GJC's callers pass, the matching paths as
   * {@link listFilesStrictSync} finds them, a missing directory listing nothing.
   */
  override listFilesSync(dir: string, options?: { kind?: "file" | "directory" } | string): string[] {
    if (typeof options !== "string") return super.listFilesSync(dir, options);
    return listingOrNone(() => this.listFilesStrictSync(dir, options));
  }

  /**
   * The paths of the regular files of `dir` whose names match `pattern` (`*`, `?`; hidden names never), sorted: GJC's strict
   * scan, which throws what the listing meets (`not_found` for a missing directory) instead of answering `[]`.
   * @throws StorageError as the main entry's `listFilesSync`
   */
  listFilesStrictSync(dir: string, pattern: string): string[] {
    return matchingPaths(path.resolve(dir), this.listFilesSync(dir), pattern);
  }

  /** The identity-bound two-phase delete; see {@link deleteSessionVerified}. */
  async deleteSessionVerified(target: VerifiedSessionDeleteTarget): Promise<VerifiedSessionDeleteResult> {
    return deleteSessionVerified(target);
  }
}

/** A retirement's plan: the verified-delete target, or why the transcript is kept. */
type RetirementPlan = { kind: "retirable"; target: VerifiedSessionDeleteTarget; artifactsPresent: boolean } | { kind: "kept"; reason: string };

/** What {@link retireSessionTranscript} did. */
export type SessionRetirementOutcome = { kind: "retired" } | { kind: "kept"; reason: string } | { kind: "cleanup_pending"; reason: string };

/**
 * Whether the disk GC could retire `transcriptPath` (below `sessionsRoot`), changing nothing:
 * `kept` with `transcript_unreadable: <code>`, `transcript_header_unusable` (no string `id` and
 * `cwd` in the header) or `transcript_not_single_link`.
 */
export function probeSessionRetirement(
  storage: FileSessionStorage,
  sessionsRoot: string,
  transcriptPath: string,
): { kind: "retirable" } | { kind: "kept"; reason: string } {
  const plan = planRetirement(storage, sessionsRoot, transcriptPath);
  return plan.kind === "retirable" ? { kind: "retirable" } : plan;
}

/**
 * Retires `transcriptPath` through {@link deleteSessionVerified}: its artifacts, then the
 * transcript, both bound to the version read now. Refusals never throw: they are `kept`, or
 * `cleanup_pending` once the artifacts are already gone (a transcript without its artifacts).
 */
export async function retireSessionTranscript(storage: FileSessionStorage, sessionsRoot: string, transcriptPath: string): Promise<SessionRetirementOutcome> {
  const plan = planRetirement(storage, sessionsRoot, transcriptPath);
  if (plan.kind === "kept") return plan;
  let artifactsGone = false;
  try {
    const first = await storage.deleteSessionVerified(plan.target);
    if (first.kind === "deleted") return { kind: "retired" };
    if (first.kind === "cleanup_pending") return { kind: "cleanup_pending", reason: `cleanup_pending_${first.phase}: ${first.error.message}` };
    artifactsGone = plan.artifactsPresent;
    const second = await storage.deleteSessionVerified({ ...plan.target, artifactsRemoved: true });
    if (second.kind === "deleted") return { kind: "retired" };
    if (second.kind === "cleanup_pending") return { kind: "cleanup_pending", reason: `cleanup_pending_${second.phase}: ${second.error.message}` };
    return incomplete(artifactsGone, "transcript_not_deleted");
  } catch (error) {
    const kind = error instanceof SessionDeleteVerificationError ? error.kind : "error";
    return incomplete(artifactsGone, `verified_delete_rejected(${kind}): ${error instanceof Error ? error.message : String(error)}`);
  }
}

function incomplete(artifactsGone: boolean, reason: string): SessionRetirementOutcome {
  return artifactsGone ? { kind: "cleanup_pending", reason } : { kind: "kept", reason };
}

function planRetirement(storage: FileSessionStorage, sessionsRoot: string, transcriptPath: string): RetirementPlan {
  let snapshot: SessionStorageSnapshot;
  try {
    snapshot = storage.readSnapshotSync(transcriptPath);
  } catch (error) {
    return { kind: "kept", reason: `transcript_unreadable: ${error instanceof StorageError ? error.code : "read_failed"}` };
  }
  const header = headerOf(snapshot.bytes);
  if (header === undefined) return { kind: "kept", reason: "transcript_header_unusable" };
  if (snapshot.stat.nlink !== 1n) return { kind: "kept", reason: "transcript_not_single_link" };
  const { stat } = snapshot;
  const transcriptIdentity: SessionStorageFileIdentity = {
    dev: stat.dev,
    ino: stat.ino,
    nlink: stat.nlink,
    size: stat.size,
    mtimeNs: stat.mtimeNs,
    sha256: createHash("sha256").update(snapshot.bytes).digest("hex"),
  };
  const dir = path.dirname(transcriptPath);
  const attempt = `${DELETE_QUARANTINE_PREFIX}gc-${randomUUID()}`;
  let artifactsPresent: boolean;
  try {
    artifactsPresent = storage.existsSync(transcriptPath.replace(/\.jsonl$/, ""));
  } catch (error) {
    return { kind: "kept", reason: `transcript_unreadable: ${error instanceof StorageError ? error.code : "read_failed"}` };
  }
  const target: VerifiedSessionDeleteTarget = {
    sessionsRoot,
    transcriptPath,
    sessionId: header.id,
    cwd: header.cwd,
    transcriptIdentity,
    plannedArtifactsPath: path.join(dir, `${attempt}-artifacts`),
    plannedTranscriptPath: path.join(dir, `${attempt}-transcript`),
    ...(artifactsPresent ? {} : { artifactsAbsentAtAuthorization: true as const }),
  };
  return { kind: "retirable", target, artifactsPresent };
}

/** The header's id and cwd when the first line is a JSON object carrying both as strings. */
function headerOf(bytes: Uint8Array): { id: string; cwd: string } | undefined {
  const end = bytes.indexOf(0x0a);
  try {
    const header: unknown = JSON.parse(Buffer.from(bytes.buffer, bytes.byteOffset, end === -1 ? bytes.byteLength : end).toString("utf8"));
    if (typeof header !== "object" || header === null) return undefined;
    const { id, cwd } = header as Record<string, unknown>;
    return typeof id === "string" && typeof cwd === "string" ? { id, cwd } : undefined;
  } catch {
    return undefined;
  }
}

function gjcStat(stat: fs.BigIntStats): SessionStorageStat {
  return {
    dev: stat.dev,
    ino: stat.ino,
    nlink: stat.nlink,
    size: Number(stat.size),
    mtimeMs: Number(stat.mtimeMs),
    mtimeNs: stat.mtimeNs,
    ctimeNs: stat.ctimeNs,
    mtime: new Date(Number(stat.mtimeMs)),
    isFile: stat.isFile(),
  };
}
