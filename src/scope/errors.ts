/** Codes of managed-scope resolution, and the error carrying them for callers preferring exceptions. */
import { GjcError } from "../errors.js";

/** Every scope resolution code, in README order. Stable. */
export const SCOPE_ERROR_CODES = [
  "cwd_missing",
  "cwd_not_directory",
  "identity_unavailable",
  "network_unsupported",
  "sessions_root_unavailable",
  "binding_conflict",
  "binding_invalid",
  "migration_busy",
  "invalid_request",
  "durability_failed",
] as const;

/** The closed union of scope resolution codes. */
export type ScopeErrorCode = (typeof SCOPE_ERROR_CODES)[number];

/** A failed resolution as a value: the code, a path-free cause token, and a message for people. */
export interface ScopeFailure {
  readonly kind: "error";
  readonly code: ScopeErrorCode;
  /** Path-free detail: an errno name (`EACCES`), a fs-layer code (`symlink_refused`), ... */
  readonly cause: string;
  readonly message: string;
}

/** A scope resolution that failed, thrown by the `*OrThrow` helpers and the session manager. */
export class ScopeError extends GjcError<ScopeErrorCode> {
  /** Path-free detail of the failure (the result's {@link ScopeFailure.cause}). */
  readonly detail: string;

  constructor(failure: Pick<ScopeFailure, "code" | "cause" | "message">) {
    super(failure.code, failure.message);
    this.detail = failure.cause;
  }
}

/** Builds a {@link ScopeFailure}. */
export function scopeFailure(code: ScopeErrorCode, cause: string, message: string): ScopeFailure {
  return { kind: "error", code, cause, message };
}
