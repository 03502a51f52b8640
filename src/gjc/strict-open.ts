/**
 * Strict, read-only inspection of one transcript for resume selection: it writes nothing and takes
 * no lock, so a v1-v4 file (or any other) is never changed by being looked at. The bytes are read
 * and stat'ed through one descriptor opened without following a link, and stat'ed again after, so
 * what was judged is exactly what the identity names; a strict open later reopens only a file
 * whose identity (stat tuple plus SHA-256 of the bytes) is still the same.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { loadSession, buildSessionContext, type SessionContext } from "../session/index.js";
import { FileSessionStorage, isStorageError, type SessionStorage, type StorageStat } from "../storage/index.js";
import type { SessionMemoryMode } from "../manager/destination.js";
import { SessionTranscriptOversizedError } from "./errors.js";
import { gjcStatOf } from "./storage-types.js";

/** The resume cap: a transcript above it is `oversized` (GJC's managed per-file cap). */
export const RESUME_TRANSCRIPT_MAX_BYTES = 128 * 1024 * 1024;

/** The cap of an open whose memory mode pages the transcript instead of holding it whole (`enabled`, `auto`): 2 GiB + 1 MiB. */
export const BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES = 2 * 1024 * 1024 * 1024 + 1024 * 1024;

/**
 * Refuses to open `filePath` when its size alone puts it over the cap of `mode` (nothing of it is read, nothing is created),
 * as GJC's `open` and `forkFrom` do. A file that cannot be stat'ed passes: the open itself reports it.
 * @throws SessionTranscriptOversizedError
 */
export function assertTranscriptAdmitted(filePath: string, storage: SessionStorage | undefined, mode: SessionMemoryMode | undefined): void {
  let size: number;
  try {
    size = storage === undefined ? fs.statSync(path.resolve(filePath)).size : storage.statSync(path.resolve(filePath)).size;
  } catch {
    return;
  }
  const cap = mode === "enabled" || mode === "auto" ? BOUNDED_RESUME_TRANSCRIPT_MAX_BYTES : RESUME_TRANSCRIPT_MAX_BYTES;
  if (size > cap) throw new SessionTranscriptOversizedError(size);
}

/** Exactly which bytes of which file were inspected. Two identities are the same when every field is (`ctimeNs` only when both have it). */
export interface ResumeSessionIdentity {
  canonicalPath: string;
  sessionId: string;
  dev: bigint;
  ino: bigint;
  nlink?: bigint;
  size: number;
  mtimeMs: number;
  mtimeNs: bigint;
  ctimeNs?: bigint;
  /** hex SHA-256 of the exact bytes read */
  sha256: string;
}

/** Why a transcript cannot be resumed as it is. */
export type ResumeTailErrorReason = "missing" | "malformed" | "unstable" | "read-failed" | "legacy_migration_disabled" | "oversized" | "context_too_large";

/** A failed inspection. */
export interface ResumeTailError {
  kind: "error";
  reason: ResumeTailErrorReason;
  size?: number;
}

/** `resumable`: the context ends on something other than an assistant message (an interrupted turn); `terminal`: it does not. */
export type ResumeTailInspection = { kind: "resumable" | "terminal"; identity: ResumeSessionIdentity } | ResumeTailError;

/** A successful inspection with what it read, for a strict open to reuse. */
export interface InspectedTranscript {
  kind: "resumable" | "terminal";
  identity: ResumeSessionIdentity;
  context: SessionContext;
  /** the header's working directory (its last patch applied), when it names one */
  cwd: string | undefined;
}

/** The path with its directory canonicalised and its last component kept (never followed). */
export function canonicalPathOf(filePath: string): string {
  const absolute = path.resolve(filePath);
  return path.join(canonicalDirectoryOf(path.dirname(absolute)), path.basename(absolute));
}

/** The directory `dir` with every link resolved, or as given (absolute) when it cannot be resolved. */
export function canonicalDirectoryOf(dir: string): string {
  const absolute = path.resolve(dir);
  try {
    return fs.realpathSync(absolute);
  } catch {
    return absolute;
  }
}

function sameStat(a: fs.BigIntStats, b: fs.BigIntStats): boolean {
  return a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeNs === b.mtimeNs && a.ctimeNs === b.ctimeNs && a.nlink === b.nlink;
}

/** Reads the regular file `file` whole through one no-follow descriptor, stat'ed before, after, and by path. */
function readStable(file: string): { bytes: Buffer; stat: fs.BigIntStats } | ResumeTailError {
  let before: fs.BigIntStats;
  try {
    before = fs.lstatSync(file, { bigint: true });
  } catch (error) {
    return { kind: "error", reason: (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "read-failed" };
  }
  if (!before.isFile()) return { kind: "error", reason: "read-failed" };
  if (before.size > BigInt(RESUME_TRANSCRIPT_MAX_BYTES)) return { kind: "error", reason: "oversized", size: Number(before.size) };
  const { O_RDONLY, O_NOFOLLOW, O_NONBLOCK } = fs.constants;
  let fd: number;
  try {
    fd = fs.openSync(file, O_RDONLY | (O_NOFOLLOW ?? 0) | (O_NONBLOCK ?? 0));
  } catch (error) {
    return { kind: "error", reason: (error as NodeJS.ErrnoException).code === "ENOENT" ? "missing" : "read-failed" };
  }
  try {
    const opened = fs.fstatSync(fd, { bigint: true });
    if (!opened.isFile() || !sameStat(before, opened)) return { kind: "error", reason: "unstable" };
    const size = Number(opened.size);
    const bytes = Buffer.alloc(size);
    let at = 0;
    while (at < size) {
      const read = fs.readSync(fd, bytes, at, size - at, at);
      if (read === 0) return { kind: "error", reason: "unstable" };
      at += read;
    }
    // A byte past the stat'ed size means the file grew while it was read.
    if (fs.readSync(fd, Buffer.alloc(1), 0, 1, size) !== 0) return { kind: "error", reason: "unstable" };
    const after = fs.fstatSync(fd, { bigint: true });
    const byPath = fs.lstatSync(file, { bigint: true });
    if (!sameStat(opened, after) || !sameStat(opened, byPath)) return { kind: "error", reason: "unstable" };
    return { bytes, stat: opened };
  } catch {
    return { kind: "error", reason: "read-failed" };
  } finally {
    fs.closeSync(fd);
  }
}

/** A storage stat as the fields of a file's stat that an identity keeps, as the face's storages report them in GJC's shape. */
function storageStatFields(stat: StorageStat): { dev: bigint; ino: bigint; size: bigint; mtimeMs: number; mtimeNs: bigint; ctimeNs?: bigint } {
  const gjc = gjcStatOf(stat);
  return {
    dev: gjc.dev,
    ino: gjc.ino,
    size: BigInt(gjc.size),
    mtimeMs: gjc.mtimeMs,
    mtimeNs: gjc.mtimeNs,
    ...(stat.ctimeMs === undefined ? {} : { ctimeNs: gjc.ctimeNs }),
  };
}

function sameStorageStat(a: StorageStat, b: StorageStat): boolean {
  return a.kind === b.kind && a.dev === b.dev && a.ino === b.ino && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ctimeMs === b.ctimeMs;
}

/**
 * {@link readStable} through a storage that is not the file system (GJC hands its memory storage to the read-only resume
 * calls): stat'ed by name, read whole through one reader whose own stat must agree, stat'ed by name again after.
 */
function readStableFrom(storage: SessionStorage, file: string): { bytes: Buffer; stat: ReturnType<typeof storageStatFields> } | ResumeTailError {
  let before: StorageStat;
  try {
    before = storage.statSync(file);
  } catch (error) {
    return { kind: "error", reason: isStorageError(error, "not_found") ? "missing" : "read-failed" };
  }
  if (before.kind !== "file") return { kind: "error", reason: "read-failed" };
  if (before.size > RESUME_TRANSCRIPT_MAX_BYTES) return { kind: "error", reason: "oversized", size: before.size };
  try {
    const reader = storage.openReaderSync(file);
    try {
      if (!sameStorageStat(before, reader.stat)) return { kind: "error", reason: "unstable" };
      const bytes = Buffer.alloc(before.size);
      let at = 0;
      while (at < bytes.length) {
        const read = reader.readSync(bytes.subarray(at), at);
        if (read === 0) return { kind: "error", reason: "unstable" };
        at += read;
      }
      if (reader.readSync(Buffer.alloc(1), bytes.length) !== 0) return { kind: "error", reason: "unstable" };
      if (!sameStorageStat(before, storage.statSync(file))) return { kind: "error", reason: "unstable" };
      return { bytes, stat: storageStatFields(before) };
    } finally {
      reader.close();
    }
  } catch (error) {
    return { kind: "error", reason: isStorageError(error, "not_found") ? "missing" : "read-failed" };
  }
}

/** Whether `role` ends a turn: an assistant message does, anything else leaves it open. */
function endsTurn(context: SessionContext): boolean {
  const last = context.messages[context.messages.length - 1] as { role?: unknown } | undefined;
  return last === undefined || last.role === "assistant";
}

/**
 * Inspects `filePath` strictly: valid UTF-8, every non-empty line a JSON record, a session header with an id, no
 * violation of the entry schema after an in-memory migration to v5. Writes nothing, takes no lock.
 */
export function inspectTranscript(filePath: string, storage?: SessionStorage): InspectedTranscript | ResumeTailError {
  const onDisk = storage === undefined || storage instanceof FileSessionStorage;
  const canonicalPath = onDisk ? canonicalPathOf(filePath) : path.resolve(filePath);
  const read = onDisk ? readStable(canonicalPath) : readStableFrom(storage, canonicalPath);
  if ("kind" in read) return read;
  const { bytes, stat } = read;
  let loaded: ReturnType<typeof loadSession>;
  try {
    new TextDecoder("utf-8", { fatal: true }).decode(bytes);
    loaded = loadSession(bytes, { mode: "strict" });
  } catch {
    return { kind: "error", reason: "malformed" };
  }
  if (loaded.kind !== "loaded" || loaded.invalidLines.length > 0 || (loaded.violations?.length ?? 0) > 0 || loaded.unknownEntries > 0) {
    return { kind: "error", reason: "malformed" };
  }
  const identity: ResumeSessionIdentity = {
    canonicalPath,
    sessionId: loaded.header.id,
    dev: stat.dev,
    ino: stat.ino,
    ...("nlink" in stat ? { nlink: stat.nlink } : {}),
    size: Number(stat.size),
    mtimeMs: Number(stat.mtimeMs),
    mtimeNs: stat.mtimeNs,
    ...(stat.ctimeNs === undefined ? {} : { ctimeNs: stat.ctimeNs }),
    sha256: createHash("sha256").update(bytes).digest("hex"),
  };
  const context = buildSessionContext(loaded.entries);
  const cwd = typeof loaded.header.cwd === "string" && loaded.header.cwd.length > 0 ? loaded.header.cwd : undefined;
  return { kind: endsTurn(context) ? "terminal" : "resumable", identity, context, cwd };
}

/** Whether two identities name the same bytes of the same file. */
export function sameIdentity(a: ResumeSessionIdentity, b: ResumeSessionIdentity): boolean {
  return (
    a.canonicalPath === b.canonicalPath &&
    a.sessionId === b.sessionId &&
    a.dev === b.dev &&
    a.ino === b.ino &&
    a.nlink === b.nlink &&
    a.size === b.size &&
    a.mtimeMs === b.mtimeMs &&
    a.mtimeNs === b.mtimeNs &&
    (a.ctimeNs === undefined || b.ctimeNs === undefined || a.ctimeNs === b.ctimeNs) &&
    a.sha256 === b.sha256
  );
}
