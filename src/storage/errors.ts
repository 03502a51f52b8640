/**
 * Typed failures of the storage layer. Every operation in `storage/` either succeeds or
 * throws a {@link StorageError} whose `code` is one of {@link StorageErrorCode}; callers
 * branch on the code, never on the message.
 */

import { GjcError } from "../errors.js";
import { SecureFsError, type SecureFsErrorCode } from "../fs/index.js";

/**
 * Why a storage operation failed. Stable across releases; documented in the README.
 */
export type StorageErrorCode =
  /** Another writer (this process or another) holds the file's writer lock. */
  | "session_busy"
  /** A symbolic link sat where a directory or file was expected below the storage root. */
  | "symlink_refused"
  /** The path is not below the storage root. */
  | "outside_root"
  /** The path is malformed: relative, empty, contains NUL, or names the root as a file. */
  | "invalid_path"
  /** A size or offset argument is not a non-negative integer. */
  | "invalid_argument"
  /** The file or directory does not exist. */
  | "not_found"
  /** An exclusive create or no-replace publish found the name taken. */
  | "already_exists"
  /** A non-directory sat where a directory was expected. */
  | "not_directory"
  /** A directory, FIFO, socket or device sat where a regular file was expected. */
  | "not_regular_file"
  /** The operating system refused the operation (EACCES/EPERM). */
  | "permission_denied"
  /** A managed object failed the owner-only checks; `detail` holds the fs-layer code. */
  | "unsafe_entry"
  /** Reading failed for an I/O reason (errno/syscall say which). */
  | "read_failed"
  /** Writing, syncing or closing failed; a writer latches this and rethrows it. */
  | "write_failed"
  /** The writer was closed before this operation. */
  | "writer_closed"
  /** A synchronous write was asked for while a queued rewrite must land first. */
  | "writer_busy"
  /** The reader was closed before this read. */
  | "reader_closed"
  /** A line handed to a writer contains a line break and would split into two records. */
  | "invalid_line"
  /** A blob's bytes do not hash to the digest it is stored under. */
  | "blob_corrupt"
  /** A string is not a `blob:sha256:<64 lowercase hex>` reference or digest. */
  | "invalid_blob_ref";

/** Every {@link StorageErrorCode}, for documentation checks and exhaustive handling. */
export const STORAGE_ERROR_CODES: readonly StorageErrorCode[] = [
  "session_busy",
  "symlink_refused",
  "outside_root",
  "invalid_path",
  "invalid_argument",
  "not_found",
  "already_exists",
  "not_directory",
  "not_regular_file",
  "permission_denied",
  "unsafe_entry",
  "read_failed",
  "write_failed",
  "writer_closed",
  "writer_busy",
  "reader_closed",
  "invalid_line",
  "blob_corrupt",
  "invalid_blob_ref",
];

/** Optional context carried by a {@link StorageError}. */
export interface StorageErrorDetails {
  /** The path the operation was about (only here and in `message`, never in `code`). */
  path?: string;
  /** Node-style errno name behind the failure, e.g. `"ENOSPC"`. */
  errno?: string;
  /** The system call or step that failed, e.g. `"write"`, `"fsync"`, `"rename"`. */
  syscall?: string;
  /** A lower layer's code (e.g. a `SecureFsError` code behind `unsafe_entry`). */
  detail?: string;
  cause?: unknown;
}

/** The error every storage operation throws. */
export class StorageError extends GjcError<StorageErrorCode> {
  /** The path the operation was about, when there is one. */
  readonly path: string | undefined;
  /** Node-style errno name, when an OS error is behind the failure. */
  readonly errno: string | undefined;
  /** The system call or step that failed. */
  readonly syscall: string | undefined;
  /** A lower layer's code, when one is behind the failure. */
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

/** Which direction an OS error happened in; decides the fallback code. */
export type IoDirection = "read" | "write";

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

// Secure-fs codes that mean the same thing here; the rest of the owner-only family
// becomes `unsafe_entry` with the original code in `detail`.
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

/**
 * Turns whatever an fs call threw into a {@link StorageError}. A `StorageError` passes
 * through unchanged; a `SecureFsError` maps by code; a Node system error maps by errno;
 * anything else becomes a read/write failure so that no raw error escapes the layer.
 */
export function toStorageError(
  error: unknown,
  direction: IoDirection,
  path: string,
  step?: string,
): StorageError {
  if (error instanceof StorageError) return error;
  if (error instanceof SecureFsError) {
    const code =
      SECURE_FS_CODES[error.code] ??
      (IO_FAILURES.has(error.code) ? (direction === "read" ? "read_failed" : "write_failed") : "unsafe_entry");
    return new StorageError(code, `${step ?? error.operation ?? direction} failed for ${path}: ${error.message}`, {
      path,
      errno: error.errnoName,
      syscall: step ?? error.syscall,
      detail: error.code,
      cause: error,
    });
  }
  const errno = errnoOf(error);
  const syscall = step ?? syscallOf(error);
  const mapped = errno === undefined ? undefined : ERRNO_CODES[errno];
  const code = mapped ?? (direction === "read" ? "read_failed" : "write_failed");
  const reason = errno ?? (error instanceof Error ? error.message : String(error));
  return new StorageError(code, `${syscall ?? direction} failed for ${path}: ${reason}`, {
    path,
    errno,
    syscall,
    cause: error,
  });
}

/** Runs `step`, turning anything it throws into a StorageError about `where`. */
export function guardStorage<T>(direction: IoDirection, where: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw toStorageError(error, direction, where);
  }
}

function errnoOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === "string" && /^E[A-Z0-9]+$/.test(code) ? code : undefined;
}

function syscallOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const syscall = (error as { syscall?: unknown }).syscall;
  return typeof syscall === "string" ? syscall : undefined;
}
