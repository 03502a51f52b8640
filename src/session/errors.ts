/** The typed error of the session format layer. */
import { GjcError } from "../errors.js";

/**
 * Why the session format layer refused: a header `version` that is not an integer in 1..5
 * (`invalid_version`) or is newer than this library writes (`version_too_new`, refused before
 * any replay or migration so an older writer never rewrites the file); no free entry id, which
 * means the collision predicate is broken (`entry_id_exhausted`); input that is neither text
 * nor bytes (`invalid_input`); a line longer than the runtime's longest string (`line_too_long`).
 */
export type SessionFormatErrorCode = "invalid_version" | "version_too_new" | "entry_id_exhausted" | "invalid_input" | "line_too_long";

/** Thrown by the session format layer; branch on {@link SessionFormatError.code}. */
export class SessionFormatError extends GjcError<SessionFormatErrorCode> {}
