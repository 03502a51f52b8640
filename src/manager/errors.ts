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
 * - `invalid_title`: a session name that is empty after sanitizing.
 * - `invalid_rewrite`: a `rewriteEntries` transform changed an entry's `id` or `parentId`, or
 *   returned something that is not an entry object.
 * - `tool_classifier_required`: non-empty `toolNames` were given without `classifyTool`, so
 *   the manager cannot tell which selection domain they belong to.
 * - `invalid_options`: an option is missing or malformed (for example a relative `sessionDir`).
 */
export type SessionManagerErrorCode =
  | "persistence_failed"
  | "read_only"
  | "closed"
  | "invalid_header"
  | "invalid_title"
  | "invalid_rewrite"
  | "tool_classifier_required"
  | "invalid_options";

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
