/**
 * The session manager's typed error. Lower layers keep their own class and code: a refused header version is a
 * `SessionFormatError`, a second writer a `StorageError` `session_busy`, an unknown branch target a `SessionTreeError`.
 */
import { GjcError } from "../errors.js";

/** Why the session manager refused an operation; README's error-code table says what each means (`persistence_failed` is latched). */
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

/** The `code` of a thrown value for a log line, `"unknown"` when it has none. */
export function errorCodeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null | undefined)?.code;
  return typeof code === "string" ? code : "unknown";
}
