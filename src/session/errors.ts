/**
 * The typed error of the session format layer.
 */
import { GjcError } from "../errors.js";

/**
 * Why the session format layer refused to go on.
 *
 * - `invalid_version`: the header `version` is present but not an integer in 1..5.
 * - `version_too_new`: the header `version` is an integer above the version this library
 *   writes; such a file is refused before any patch replay or migration so it is never
 *   rewritten by an older writer.
 * - `entry_id_exhausted`: no free entry id was found (the collision predicate rejected every
 *   draw, which means it is broken rather than the id space full).
 * - `invalid_input`: the value handed to a parser is neither a string nor bytes.
 */
export type SessionFormatErrorCode =
  | "invalid_version"
  | "version_too_new"
  | "entry_id_exhausted"
  | "invalid_input"
  | "line_too_long";

/** Thrown by the session format layer; branch on {@link SessionFormatError.code}. */
export class SessionFormatError extends GjcError<SessionFormatErrorCode> {}
