/**
 * The typed error of the session manager. Failures that belong to a lower layer keep that
 * layer's class and code: a refused header version is a `SessionFormatError`
 * (`version_too_new` / `invalid_version`), a second writer is a `StorageError`
 * (`session_busy`), an unknown branch target is a `SessionTreeError` (`unknown_entry`).
 */
import { GjcError } from "../errors.js";

/**
 * Why the session manager refused an operation.
 *
 * - `persistence_failed`: an earlier write, sync, rewrite or blob put failed. The first
 *   failure is latched: every later persisting operation throws this same error (its `cause`
 *   is the storage error), and nothing that was appended in memory is discarded.
 * - `read_only`: a mutating call on a manager opened with `readOnly: true`.
 * - `closed`: any call after {@link SessionManager.close}.
 * - `invalid_header`: a read-only open found a non-empty file without a usable header (a
 *   writable open moves such a file aside instead; see the README).
 * - `invalid_rewrite`: `applyEntryMessageUpdates` / `applyCustomMessageEntryUpdates` was given
 *   something that is not a `message` / `custom_message` entry of this session (unknown id,
 *   another entry type, or a malformed payload).
 * - `invalid_session_id`: `newSession({ id })` with an id that is neither a UUIDv7 nor 1-128
 *   characters from `[A-Za-z0-9._-]`.
 * - `untrusted_destination`: a destination object that `managedDestination` /
 *   `explicitDestination` did not issue.
 * - `managed_storage_unsupported`: a storage other than file storage where the managed scope
 *   is used (no destination, or a managed one).
 * - `tool_classifier_required`: non-empty `toolNames` were given without `classifyTool`, so
 *   the manager cannot tell which selection domain they belong to.
 * - `invalid_options`: an argument or option is missing or malformed (a relative session
 *   directory, an unknown `migrationPolicy` or `sessionMemoryMode`).
 * - `session_changed`: an entry of an open session was read from its file later (sessions open
 *   through their line index read entries off the resumed path on demand) and the file no
 *   longer holds it: it was replaced or changed in place by someone else since the open.
 */
export type SessionManagerErrorCode =
  | "persistence_failed"
  | "read_only"
  | "closed"
  | "invalid_header"
  | "invalid_rewrite"
  | "invalid_session_id"
  | "untrusted_destination"
  | "managed_storage_unsupported"
  | "tool_classifier_required"
  | "invalid_options"
  | "session_changed";

/** Thrown by the session manager; branch on {@link SessionManagerError.code}. */
export class SessionManagerError extends GjcError<SessionManagerErrorCode> {
  /** The session file the failure is about, when there is one. */
  readonly path: string | undefined;

  constructor(code: SessionManagerErrorCode, message: string, options: { path?: string; cause?: unknown } = {}) {
    super(code, message, options.cause === undefined ? undefined : { cause: options.cause });
    this.path = options.path;
  }
}

/** True for a {@link SessionManagerError}, optionally with the given code. */
export function isSessionManagerError(value: unknown, code?: SessionManagerErrorCode): value is SessionManagerError {
  return value instanceof SessionManagerError && (code === undefined || value.code === code);
}
