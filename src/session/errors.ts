/** The typed error of the session format layer. */
import { GjcError } from "../errors.js";

/**
 * Why the format layer refused: a header `version` not an integer in 1..5 (`invalid_version`) or newer than this
 * library writes (`version_too_new`, before any replay, so an older writer never rewrites the file); a broken id
 * predicate (`entry_id_exhausted`); input neither text nor bytes (`invalid_input`); a line past the longest string.
 */
export type SessionFormatErrorCode = "invalid_version" | "version_too_new" | "entry_id_exhausted" | "invalid_input" | "line_too_long" | "nesting_too_deep";

/** Thrown by the session format layer; branch on {@link SessionFormatError.code}. */
export class SessionFormatError extends GjcError<SessionFormatErrorCode> {}
