/**
 * The errors GJC's app catches by class, with the fields it reads, as `GjcError`s: each keeps
 * GJC's `code` string (where GJC has one) so the app's `instanceof` and `code` checks, and ours,
 * both hold. The messages are ours; the constants carry the operator advice GJC prints.
 */
import { GjcError } from "../errors.js";

/** What to tell the operator about a transcript over the resume cap (`RESUME_TRANSCRIPT_MAX_BYTES`, 128 MiB). */
export const SESSION_OVERSIZED_RECOVERY_MESSAGE =
  "This session transcript is too large to resume safely. Export what it holds into a new session with `gjc export <session-file>`, or archive or remove the file once you are sure it is no longer needed.";

/** The default budget of one context materialisation (512 MiB). */
export const SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT = 512 * 1024 * 1024;

/** The largest budget `GJC_SESSION_CONTEXT_BUDGET_BYTES` may set (8 GiB). */
export const SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_MAX = 8 * 1024 * 1024 * 1024;

/**
 * The context budget an override asks for: decimal digits naming 1 byte to 8 GiB, else the
 * 512 MiB default (an unusable override is ignored, as GJC does, so a typo cannot lift the cap).
 */
export function resolveSessionContextBudgetBytes(override: string | undefined): number {
  if (override === undefined || !/^[0-9]+$/.test(override)) return SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT;
  const bytes = Number(override);
  const usable = Number.isSafeInteger(bytes) && bytes > 0 && bytes <= SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_MAX;
  return usable ? bytes : SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT;
}

/** The context budget of this process, read once from `GJC_SESSION_CONTEXT_BUDGET_BYTES`. */
export const SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES = resolveSessionContextBudgetBytes(process.env.GJC_SESSION_CONTEXT_BUDGET_BYTES);

/** Which append a {@link SessionAppendPersistenceError} reports: the failing one, or a later one refused because of it. */
export type SessionAppendPersistenceFailurePhase = "current_append" | "prior_failure";

/**
 * An append whose line could not be persisted. `phase` says whether this append failed or an
 * earlier failure is still latched; `persistenceError` (also the `cause`) is what failed.
 */
export class SessionAppendPersistenceError extends GjcError<"append_persistence_failed"> {
  /** `current_append`: this append's write failed; `prior_failure`: an earlier one did and is latched. */
  readonly phase: SessionAppendPersistenceFailurePhase;
  /**
   * The id of the entry the append made: it stays in memory (nothing in memory is dropped), only its line is not on disk.
   * `undefined` for `prior_failure`, where the append was refused before it made an entry.
   */
  readonly entryId: string | undefined;
  /** The underlying failure. */
  readonly persistenceError: Error;

  constructor(phase: SessionAppendPersistenceFailurePhase, entryId: string | undefined, persistenceError: Error) {
    super("append_persistence_failed", persistenceError.message, { cause: persistenceError });
    this.phase = phase;
    this.entryId = entryId;
    this.persistenceError = persistenceError;
  }
}

/** The sizes a {@link SessionNearLimitAppendError} reports. */
export interface NearLimitAppendDetails {
  /** Bytes of the refused entry's line. */
  entryBytes: number;
  /** Bytes of the live transcript. */
  liveBytes: number;
  /** The per-file cap. */
  capBytes: number;
  /** Whether memory kept the entry (it is then written by the next successful write). */
  entryRetained: boolean;
}

/** An append that would take the transcript past its per-file cap even after a full rewrite. */
export class SessionNearLimitAppendError extends GjcError<"near_limit_append"> {
  /** {@inheritDoc NearLimitAppendDetails.entryBytes} */
  readonly entryBytes: number;
  /** {@inheritDoc NearLimitAppendDetails.liveBytes} */
  readonly liveBytes: number;
  /** {@inheritDoc NearLimitAppendDetails.capBytes} */
  readonly capBytes: number;
  /** {@inheritDoc NearLimitAppendDetails.entryRetained} */
  readonly entryRetained: boolean;

  constructor(details: NearLimitAppendDetails) {
    const kept = details.entryRetained
      ? "The entry is kept in memory and is written by the next write that fits."
      : "The entry was not kept; send it again after compacting.";
    super(
      "near_limit_append",
      `near_limit_append: an entry of ${details.entryBytes} B on a ${details.liveBytes} B transcript would pass the ${details.capBytes} B limit of one session file. ${kept} Compact the session (/compact) or export it to a new one (gjc export <session-file>).`,
    );
    this.entryBytes = details.entryBytes;
    this.liveBytes = details.liveBytes;
    this.capBytes = details.capBytes;
    this.entryRetained = details.entryRetained;
  }
}

/** A context that would take more memory to build than the budget allows. */
export class SessionContextTooLargeError extends GjcError<"context_too_large"> {
  /** What the context measured, in bytes. */
  readonly measuredBytes: number;
  /** The budget it passed. */
  readonly budgetBytes: number;

  constructor(measuredBytes: number, budgetBytes: number = SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES, options?: { cause?: unknown }) {
    super(
      "context_too_large",
      `context_too_large: the session context measures ${measuredBytes} B, over its ${budgetBytes} B budget (GJC_SESSION_CONTEXT_BUDGET_BYTES); compact the session or export it to a new one.`,
      options,
    );
    this.measuredBytes = measuredBytes;
    this.budgetBytes = budgetBytes;
  }
}

/** A legacy session whose artifacts pass the migration limits (depth, count or bytes). */
export class SessionArtifactCapacityError extends GjcError<"artifact_capacity_exceeded"> {
  constructor(message: string) {
    super("artifact_capacity_exceeded", message);
  }
}

/** A transcript over the resume cap; its message is {@link SESSION_OVERSIZED_RECOVERY_MESSAGE}. */
export class SessionTranscriptOversizedError extends GjcError<"oversized"> {
  /** The transcript's size in bytes. */
  readonly size: number;

  constructor(size: number) {
    super("oversized", SESSION_OVERSIZED_RECOVERY_MESSAGE);
    this.size = size;
  }
}

/** Another process holds the managed migration lock: retry once it finished. */
export class SessionMigrationBusyError extends GjcError<"migration_busy"> {
  constructor() {
    super("migration_busy", "Another session migration is still running. Wait for it to finish, then retry.");
  }
}

/** Managed (default) session storage asked of a storage that is not a file storage. */
export class SessionManagedStorageError extends GjcError<"managed_storage_unsupported"> {
  constructor() {
    super("managed_storage_unsupported", "Managed session storage needs a FileSessionStorage; pass an explicit session directory to use another storage.");
  }
}

/** A legacy session that needs migrating while the migration policy is `disabled`. */
export class SessionMigrationPolicyError extends GjcError<"legacy_migration_disabled"> {
  constructor() {
    super("legacy_migration_disabled", "This session needs migrating and legacy session migration is disabled for this workspace.");
  }
}

/** {@link transferSessionMessageIdentity} over arrays that are not copies of each other, or a link asked of something that is no object. */
export class MessageIdentityError extends GjcError<"identity_transfer_mismatch" | "not_an_object"> {}
