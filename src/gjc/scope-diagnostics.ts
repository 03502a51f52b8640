/**
 * A managed scope that cannot be prepared, as GJC's startup reports it: a fixed message with no
 * path in it, and a cause that only classifies the failure. A startup error travels to logs and
 * crash reports, where the workspace or agent paths must not leak; the store's own `ScopeError`
 * is path-free already, and its code survives on the new error as `scopeCode`.
 */
import { GjcError } from "../errors.js";
import { ScopeError, type ScopeErrorCode } from "../scope/index.js";

/** GJC's name for a refusal the store spells differently; any other cause token is kept as it is. */
const GJC_CLASSIFICATIONS: Readonly<Record<string, string>> = { symlink_refused: "reparse_point" };

/** The classification a redacted scope failure carries as its `cause`. */
export interface ScopeFailureClassification {
  /** The path-free cause of the failure (`reparse_point` for a link where a directory must be, an errno name, ...). */
  classification: string;
}

/** A managed scope that could not be resolved or prepared; see the module comment. */
export class ManagedScopeUnavailableError extends GjcError<"managed_scope_unavailable"> {
  /** The store's scope code (`sessions_root_unavailable`, `binding_invalid`, ...). */
  readonly scopeCode: ScopeErrorCode;

  constructor(failure: ScopeError) {
    const classification = GJC_CLASSIFICATIONS[failure.detail] ?? failure.detail;
    const cause: ScopeFailureClassification = { classification };
    super("managed_scope_unavailable", "Could not resolve managed session scope.", { cause });
    this.scopeCode = failure.code;
  }
}

/** Runs `resolve`, a managed scope's resolution, with a {@link ScopeError} turned into a {@link ManagedScopeUnavailableError}. */
export function withRedactedScopeFailure<T>(resolve: () => T): T {
  try {
    return resolve();
  } catch (error) {
    if (error instanceof ScopeError) throw new ManagedScopeUnavailableError(error);
    throw error;
  }
}
