/** The storage layer's one error family: every storage, writer and blob-store operation succeeds or throws a {@link StorageError}. */

import { GjcError } from "../errors.js";
import { SecureFsError, type SecureFsErrorCode } from "../fs/index.js";

const CODES = [
  "session_busy", // another writer (any process) holds the file's writer lock
  "symlink_refused", // a link sat where a directory or file was expected below the root
  "outside_root",
  "invalid_path", // relative, empty, NUL, or the root named as a file
  "invalid_argument", // a size or offset that is not a non-negative integer
  "not_found",
  "already_exists", // an exclusive create or no-replace publish found the name taken
  "not_directory",
  "not_regular_file",
  "permission_denied", // EACCES/EPERM
  "unsafe_entry", // failed the owner-only checks; `detail` holds the fs-layer code
  "read_failed",
  "write_failed", // writing, syncing or closing failed; a writer latches it
  "close_not_dispatched", // a close hook refused before closing the descriptor: the writer stays open, close again
  "writer_closed",
  "writer_busy", // a synchronous call while a queued rewrite must land first
  "reader_closed",
  "invalid_line", // a record containing a line feed would split in two
  "blob_corrupt", // a blob's bytes do not hash to its name
  "invalid_blob_ref",
] as const;

/** Why a storage operation failed. Stable across releases; documented in the README. */
export type StorageErrorCode = (typeof CODES)[number];

/** Every {@link StorageErrorCode}, for documentation checks and exhaustive handling. */
export const STORAGE_ERROR_CODES: readonly StorageErrorCode[] = CODES;

/** Optional context of a {@link StorageError}, kept on it field by field. */
interface StorageErrorDetails {
  path?: string;
  errno?: string;
  syscall?: string;
  detail?: string;
  cause?: unknown;
}

/** The error every storage operation throws. */
export class StorageError extends GjcError<StorageErrorCode> {
  /** The path the operation was about (in `message` too, never in `code`). */
  readonly path: string | undefined;
  /** Node-style errno name behind the failure, e.g. `"ENOSPC"`. */
  readonly errno: string | undefined;
  /** The system call or step that failed, e.g. `"fsync"`. */
  readonly syscall: string | undefined;
  /** A lower layer's code (e.g. the `SecureFsError` code behind `unsafe_entry`). */
  readonly detail: string | undefined;

  constructor(code: StorageErrorCode, message: string, details: StorageErrorDetails = {}) {
    super(code, message, details.cause === undefined ? undefined : { cause: details.cause });
    this.path = details.path;
    this.errno = details.errno;
    this.syscall = details.syscall;
    this.detail = details.detail;
  }
}

/** True for a {@link StorageError}, optionally with the given code. */
export function isStorageError(value: unknown, code?: StorageErrorCode): value is StorageError {
  return value instanceof StorageError && (code === undefined || value.code === code);
}

const PATH_PROBLEMS: Readonly<Partial<Record<StorageErrorCode, string>>> = {
  session_busy: "another writer holds",
  symlink_refused: "refusing a symbolic link at",
  not_found: "no such file or directory:",
  already_exists: "already exists:",
  not_directory: "not a directory:",
  not_regular_file: "not a regular file:",
  writer_closed: "the writer is closed for",
  reader_closed: "the reader is closed for",
};

/** A {@link StorageError} about one path, with a standard message for its code. */
export function pathError(code: StorageErrorCode, path: string, details: StorageErrorDetails = {}): StorageError {
  const problem = PATH_PROBLEMS[code] ?? code.replace(/_/g, " ") + ":";
  return new StorageError(code, `${problem} ${path}`, { ...details, path });
}

/** A file's device and inode as decimal strings. */
interface FileIdentity {
  readonly dev: string;
  readonly ino: string;
}

/**
 * Refuses a writer whose `target` no longer names the file it holds (`held`): `named` is what the name leads to now
 * (no link followed), `undefined` when nothing is there. The lines written since are in a file nobody opens by that
 * name, so the session must not be told they are kept.
 * @throws StorageError `unsafe_entry` (`detail`: `identity_changed`)
 */
export function requireStillNamed(target: string, held: FileIdentity, named: FileIdentity | undefined): void {
  if (named !== undefined && named.dev === held.dev && named.ino === held.ino) return;
  const what =
    named === undefined
      ? "was removed while this writer held it open: the lines written since are in a file that no longer has a name."
      : "now names another file (one renamed over it, or this one moved away) while this writer held it open: the lines written since are not in the file at that name.";
  throw new StorageError(
    "unsafe_entry",
    `${target} ${what} This writer writes nothing more and recreates or overwrites nothing: reopen the session at that ` +
      "name, or start a new one, to go on.",
    { path: target, detail: "identity_changed" },
  );
}

/**
 * Refuses a writer whose file, still at its name, no longer has the size this writer left it at: another program
 * truncated or wrote it in place (the lock keeps out every writer that takes it). Lines appended since may sit after bytes
 * this session never wrote, so the session must not be told they are kept.
 * @throws StorageError `unsafe_entry` (`detail`: `identity_changed`)
 */
export function requireSizeKept(target: string, size: number, expected: number): void {
  if (size === expected) return;
  throw new StorageError(
    "unsafe_entry",
    `${target} was changed in place while this writer held it open (${size} bytes where this writer left ${expected}). ` +
      "This writer writes nothing more and recreates or overwrites nothing: reopen the session at that name, or start a new one, to go on.",
    { path: target, detail: "identity_changed" },
  );
}

/** Which direction an OS error happened in; decides the fallback code. */
type IoDirection = "read" | "write";

const ERRNO_CODES: Readonly<Record<string, StorageErrorCode>> = {
  ENOENT: "not_found",
  EEXIST: "already_exists",
  // O_NOFOLLOW on a final symlink fails with ELOOP (EMLINK on some BSDs).
  ELOOP: "symlink_refused",
  EMLINK: "symlink_refused",
  ENOTDIR: "not_directory",
  EISDIR: "not_regular_file",
  ENXIO: "not_regular_file",
  EACCES: "permission_denied",
  EPERM: "permission_denied",
};

// Secure-fs codes with a storage twin; the rest of the owner-only family becomes
// `unsafe_entry` with the original code in `detail`.
const SECURE_FS_CODES: Readonly<Partial<Record<SecureFsErrorCode, StorageErrorCode>>> = {
  invalid_name: "invalid_path",
  invalid_argument: "invalid_argument",
  not_found: "not_found",
  already_exists: "already_exists",
  symlink_refused: "symlink_refused",
  not_directory: "not_directory",
  not_regular_file: "not_regular_file",
  permission_denied: "permission_denied",
  lock_busy: "session_busy",
  closed: "writer_closed",
};

const IO_FAILURES: ReadonlySet<SecureFsErrorCode> = new Set<SecureFsErrorCode>(["io_error", "too_large"]);

/** Whatever an fs call threw as a {@link StorageError} (passed through), by `SecureFsError` code or Node errno: no raw error escapes. */
export function toStorageError(error: unknown, direction: IoDirection, path: string, step?: string): StorageError {
  if (error instanceof StorageError) return error;
  const ioFailure = direction === "read" ? "read_failed" : "write_failed";
  if (error instanceof SecureFsError) {
    const code = SECURE_FS_CODES[error.code] ?? (IO_FAILURES.has(error.code) ? ioFailure : "unsafe_entry");
    return new StorageError(code, `${step ?? error.operation ?? direction} failed for ${path}: ${error.message}`, {
      path,
      errno: error.errnoName,
      syscall: step ?? error.syscall,
      detail: error.code,
      cause: error,
    });
  }
  const errno = stringField(error, "code");
  const syscall = step ?? stringField(error, "syscall");
  const known = errno !== undefined && /^E[A-Z0-9]+$/.test(errno) ? errno : undefined;
  const code = (known === undefined ? undefined : ERRNO_CODES[known]) ?? ioFailure;
  const reason = known ?? (error instanceof Error ? error.message : String(error));
  return new StorageError(code, `${syscall ?? direction} failed for ${path}: ${reason}`, { path, errno: known, syscall, cause: error });
}

/** Runs `step`, turning anything it throws into a StorageError about `where`. */
export function guardStorage<T>(direction: IoDirection, where: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw toStorageError(error, direction, where);
  }
}

function stringField(error: unknown, key: "code" | "syscall"): string | undefined {
  const value = typeof error === "object" && error !== null ? (error as Record<string, unknown>)[key] : undefined;
  return typeof value === "string" ? value : undefined;
}
