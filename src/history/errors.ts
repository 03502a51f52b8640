import { GjcError } from "../errors.js";

/** Every reason the prompt-history store refuses or fails, each described in README's error table. */
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

type HistoryErrorDetails = Partial<Pick<HistoryError, "fsCode" | "sqliteCode" | "movedTo">> & { readonly cause?: unknown };

/** The error thrown by `HistoryStorage`. Branch on `code` (the other fields add detail); the message may name paths. */
export class HistoryError extends GjcError<HistoryErrorCode> {
  /** The owner-only check that failed (`symlink_refused`, `mode_mismatch`, ...), for `history_insecure`. */
  readonly fsCode: string | undefined;
  /** The SQLite extended result name (`SQLITE_BUSY`, `SQLITE_NOTADB`, ...) when SQLite raised the fault. */
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
export function isCorruptionCode(sqliteCode: string | undefined): boolean {
  return sqliteCode === "SQLITE_NOTADB" || sqliteCode?.startsWith("SQLITE_CORRUPT") === true;
}

/** True for `SQLITE_BUSY*` and `SQLITE_LOCKED*`: another connection holds the lock. */
export function isBusyCode(sqliteCode: string | undefined): boolean {
  return sqliteCode?.startsWith("SQLITE_BUSY") === true || sqliteCode?.startsWith("SQLITE_LOCKED") === true;
}

/** Whatever the SQLite driver threw, as a `HistoryError` (corruption too, without moving the files aside: only the store can). */
export function historyErrorFromSqlite(error: unknown, doing: string): HistoryError {
  if (error instanceof HistoryError) return error;
  const sqliteCode = sqliteCodeOf(error);
  const message = `history: ${doing} failed: ${error instanceof Error ? error.message : String(error)}`;
  let code: HistoryErrorCode = "history_io_error";
  // SQLite saw the database file moved or replaced under its open connection: a swap, not a read-only disk.
  if (sqliteCode === "SQLITE_READONLY_DBMOVED") {
    return new HistoryError("history_insecure", message, { fsCode: "identity_mismatch", sqliteCode, cause: error });
  }
  if (isBusyCode(sqliteCode)) code = "history_busy";
  // CANTOPEN: the database was verified as an existing owner-only file just before, so what
  // SQLite could not open is a write handle or a sidecar, as on a read-only filesystem.
  else if (/^SQLITE_(READONLY|CANTOPEN|PERM$)/.test(sqliteCode ?? "")) code = "history_readonly";
  else if (isCorruptionCode(sqliteCode)) code = "history_corrupt";
  return new HistoryError(code, message, sqliteCode === undefined ? { cause: error } : { sqliteCode, cause: error });
}

/** The `SQLITE_*` extended result name of a driver's error (in `code`, or as a number in node:sqlite's `errcode`). */
export function sqliteCodeOf(error: unknown): string | undefined {
  if (typeof error !== "object" || error === null) return undefined;
  const { code, errcode } = error as { code?: unknown; errcode?: unknown };
  if (typeof code === "string" && code.startsWith("SQLITE_")) return code;
  return typeof errcode === "number" ? sqliteResultName(errcode) : undefined;
}

// sqlite3.h primary result codes 1..28 in order, so node:sqlite errors carry the same names as the others.
const PRIMARY: readonly string[] = [
  "ERROR",
  "INTERNAL",
  "PERM",
  "ABORT",
  "BUSY",
  "LOCKED",
  "NOMEM",
  "READONLY",
  "INTERRUPT",
  "IOERR",
  "CORRUPT",
  "NOTFOUND",
  "FULL",
  "CANTOPEN",
  "PROTOCOL",
  "EMPTY",
  "SCHEMA",
  "TOOBIG",
  "CONSTRAINT",
  "MISMATCH",
  "MISUSE",
  "NOLFS",
  "AUTH",
  "FORMAT",
  "RANGE",
  "NOTADB",
  "NOTICE",
  "WARNING",
];

// Extended code = primary | (n << 8); entry n - 1 names suffix n ("" where none is defined).
const EXTENDED: Readonly<Record<string, readonly string[]>> = {
  ERROR: ["MISSING_COLLSEQ", "RETRY", "SNAPSHOT", "RESERVESIZE", "KEY", "UNABLE"],
  IOERR: [
    "READ",
    "SHORT_READ",
    "WRITE",
    "FSYNC",
    "DIR_FSYNC",
    "TRUNCATE",
    "FSTAT",
    "UNLOCK",
    "RDLOCK",
    "DELETE",
    "BLOCKED",
    "NOMEM",
    "ACCESS",
    "CHECKRESERVEDLOCK",
    "LOCK",
    "CLOSE",
    "DIR_CLOSE",
    "SHMOPEN",
    "SHMSIZE",
    "SHMLOCK",
    "SHMMAP",
    "SEEK",
    "DELETE_NOENT",
    "MMAP",
    "GETTEMPPATH",
    "CONVPATH",
    "VNODE",
    "AUTH",
    "BEGIN_ATOMIC",
    "COMMIT_ATOMIC",
    "ROLLBACK_ATOMIC",
    "DATA",
    "CORRUPTFS",
    "IN_PAGE",
    "BADKEY",
    "CODEC",
  ],
  LOCKED: ["SHAREDCACHE", "VTAB"],
  BUSY: ["RECOVERY", "SNAPSHOT", "TIMEOUT"],
  CANTOPEN: ["NOTEMPDIR", "ISDIR", "FULLPATH", "CONVPATH", "DIRTYWAL", "SYMLINK"],
  CORRUPT: ["VTAB", "SEQUENCE", "INDEX"],
  READONLY: ["RECOVERY", "CANTLOCK", "ROLLBACK", "DBMOVED", "CANTINIT", "DIRECTORY"],
  ABORT: ["", "ROLLBACK"],
  CONSTRAINT: ["CHECK", "COMMITHOOK", "FOREIGNKEY", "FUNCTION", "NOTNULL", "PRIMARYKEY", "TRIGGER", "UNIQUE", "VTAB", "ROWID", "PINNED", "DATATYPE"],
  NOTICE: ["RECOVER_WAL", "RECOVER_ROLLBACK", "RBU"],
  WARNING: ["AUTOINDEX"],
  AUTH: ["USER"],
};

/** The `SQLITE_*` name of an (extended) result code (267 → `SQLITE_CORRUPT_VTAB`, an unknown extension → its primary); undefined for no error. */
function sqliteResultName(code: number): string | undefined {
  const primary = Number.isInteger(code) && code > 0 ? PRIMARY[(code & 0xff) - 1] : undefined;
  if (primary === undefined) return undefined;
  const suffix = EXTENDED[primary]?.[(code >> 8) - 1];
  return suffix === undefined || suffix === "" ? `SQLITE_${primary}` : `SQLITE_${primary}_${suffix}`;
}
