import { GjcError } from "../errors.js";
import { sqliteResultName } from "./sqlite-codes.js";

/**
 * Every reason the prompt-history store can refuse or fail. The union is closed: a new code
 * is a new release, and callers may switch over it exhaustively.
 *
 * - `history_invalid_argument`: a prompt, cwd, query, limit or id of the wrong type or range.
 * - `history_prompt_too_large`: a prompt longer than the store's `maxPromptLength`.
 * - `history_backlog_full`: too many prompts are waiting for a database that keeps failing.
 * - `history_insecure`: the agent directory, `history.db` or a sidecar failed an owner-only
 *   check (symlink, foreign owner, wrong mode, ACL, hard link); `fsCode` says which.
 * - `history_corrupt`: SQLite reported a damaged database; the files were renamed aside
 *   (`movedTo`) and nothing was deleted or truncated.
 * - `history_busy`: another connection held the write lock past the busy timeout.
 * - `history_readonly`: the database or its directory cannot be written.
 * - `history_version_too_new`: the file carries a schema newer than this library knows.
 * - `history_closed`: the store was closed (or shut itself after corruption).
 * - `history_pin_unavailable`: on Linux the database is opened through the held directory
 *   descriptor by a small SQLite extension; it was not built, could not be loaded, or was
 *   not in effect for the connection. Nothing is opened by path instead.
 * - `history_sqlite_unavailable`: no SQLite driver loads on this runtime (Node 20 without
 *   better-sqlite3, a better-sqlite3 built for another Node), or `GJC_SQLITE_DRIVER` names one
 *   that does not.
 * - `history_instance_conflict`: `open` named another database than the one this process
 *   already has open; `resetInstance()` first.
 * - `history_io_error`: any other SQLite or filesystem failure; `sqliteCode`/`errno` say more.
 */
export type HistoryErrorCode = (typeof HISTORY_ERROR_CODES)[number];

/** Every {@link HistoryErrorCode}, for exhaustive checks (and the README test). */
export const HISTORY_ERROR_CODES = [
  "history_invalid_argument",
  "history_prompt_too_large",
  "history_backlog_full",
  "history_insecure",
  "history_corrupt",
  "history_busy",
  "history_readonly",
  "history_version_too_new",
  "history_closed",
  "history_instance_conflict",
  "history_pin_unavailable",
  "history_sqlite_unavailable",
  "history_io_error",
] as const;

/** Extra facts some codes carry. None of them is needed to branch; `code` is enough. */
export interface HistoryErrorDetails {
  /** The owner-only check that failed (`symlink_refused`, `mode_mismatch`, ...). */
  readonly fsCode?: string;
  /** The SQLite extended result name, e.g. `SQLITE_BUSY` or `SQLITE_NOTADB`. */
  readonly sqliteCode?: string;
  /** Where a corrupt database and its sidecars were renamed to. */
  readonly movedTo?: readonly string[];
  readonly cause?: unknown;
}

/**
 * The error thrown by `HistoryStorage`. Branch on `code`; the message may name paths and
 * is meant for people.
 */
export class HistoryError extends GjcError<HistoryErrorCode> {
  /** Owner-only check that failed, for `history_insecure`. */
  readonly fsCode: string | undefined;
  /** SQLite extended result name when SQLite raised the fault. */
  readonly sqliteCode: string | undefined;
  /** Renamed-aside files for `history_corrupt` (database first, then sidecars). */
  readonly movedTo: readonly string[];

  constructor(code: HistoryErrorCode, message: string, details: HistoryErrorDetails = {}) {
    super(code, message, details.cause === undefined ? undefined : { cause: details.cause });
    this.fsCode = details.fsCode;
    this.sqliteCode = details.sqliteCode;
    this.movedTo = details.movedTo ?? [];
  }
}

/** SQLite result names that mean "the bytes on disk are not a sound database". */
export function isCorruptionCode(sqliteCode: string): boolean {
  return sqliteCode === "SQLITE_NOTADB" || sqliteCode.startsWith("SQLITE_CORRUPT");
}

/**
 * Turns whatever the SQLite driver threw into a `HistoryError`. Corruption is not mapped here:
 * it needs the files moved aside first, which only the store can do.
 */
export function historyErrorFromSqlite(error: unknown, doing: string): HistoryError {
  if (error instanceof HistoryError) return error;
  const sqliteCode = sqliteCodeOf(error);
  const detail = error instanceof Error ? error.message : String(error);
  const message = `history: ${doing} failed: ${detail}`;
  if (sqliteCode === undefined) return new HistoryError("history_io_error", message, { cause: error });
  if (sqliteCode.startsWith("SQLITE_BUSY") || sqliteCode.startsWith("SQLITE_LOCKED")) {
    return new HistoryError("history_busy", message, { sqliteCode, cause: error });
  }
  // CANTOPEN: the database was verified as an existing owner-only file just before SQLite
  // opened it, so what SQLite could not open is a write handle or a sidecar, as on a
  // read-only filesystem.
  if (sqliteCode.startsWith("SQLITE_READONLY") || sqliteCode.startsWith("SQLITE_CANTOPEN") || sqliteCode === "SQLITE_PERM") {
    return new HistoryError("history_readonly", message, { sqliteCode, cause: error });
  }
  if (isCorruptionCode(sqliteCode)) {
    return new HistoryError("history_corrupt", message, { sqliteCode, cause: error });
  }
  return new HistoryError("history_io_error", message, { sqliteCode, cause: error });
}

/**
 * The `SQLITE_*` extended result name of a driver's error, if it carries one: better-sqlite3
 * and bun:sqlite name it in `code`; node:sqlite's `code` is `ERR_SQLITE_ERROR` and the number
 * is in `errcode`.
 */
export function sqliteCodeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (typeof code === "string" && code.startsWith("SQLITE_")) return code;
  return typeof errcode === "number" ? sqliteResultName(errcode) : undefined;
}
