/**
 * The typed error of the `/gjc` face's manager where GJC's app would see a plain `Error`: the
 * message keeps GJC's wording where the app or its users match on it, the `code` is ours and stable.
 */
import { GjcError } from "../errors.js";

/** Why the `/gjc` face refused an operation; README's error-code table says what each means. */
export type GjcFaceErrorCode =
  | "cwd_identity_changed"
  | "prepared_session_unavailable"
  | "prepared_session_changed"
  | "session_not_contained"
  | "staged_session_unavailable"
  | "active_session"
  | "artifacts_unavailable";

/** Thrown by the `/gjc` face's manager; branch on {@link GjcFaceError.code}. */
export class GjcFaceError extends GjcError<GjcFaceErrorCode> {}
