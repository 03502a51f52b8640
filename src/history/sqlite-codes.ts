/**
 * SQLite result-code names (sqlite3.h, "Result Codes" and "Extended Result Codes"). node:sqlite
 * reports only the number (`errcode`); better-sqlite3 and bun:sqlite report the name. Naming
 * the number here gives every driver the same `sqliteCode` in our errors.
 */

const PRIMARY: Readonly<Record<number, string>> = {
  1: "ERROR", 2: "INTERNAL", 3: "PERM", 4: "ABORT", 5: "BUSY", 6: "LOCKED", 7: "NOMEM",
  8: "READONLY", 9: "INTERRUPT", 10: "IOERR", 11: "CORRUPT", 12: "NOTFOUND", 13: "FULL",
  14: "CANTOPEN", 15: "PROTOCOL", 16: "EMPTY", 17: "SCHEMA", 18: "TOOBIG", 19: "CONSTRAINT",
  20: "MISMATCH", 21: "MISUSE", 22: "NOLFS", 23: "AUTH", 24: "FORMAT", 25: "RANGE",
  26: "NOTADB", 27: "NOTICE", 28: "WARNING",
};

// Extended code = primary | (n << 8); entry n - 1 names suffix n ("" where none is defined).
const EXTENDED: Readonly<Record<string, readonly string[]>> = {
  ERROR: ["MISSING_COLLSEQ", "RETRY", "SNAPSHOT", "RESERVESIZE", "KEY", "UNABLE"],
  IOERR: [
    "READ", "SHORT_READ", "WRITE", "FSYNC", "DIR_FSYNC", "TRUNCATE", "FSTAT", "UNLOCK", "RDLOCK",
    "DELETE", "BLOCKED", "NOMEM", "ACCESS", "CHECKRESERVEDLOCK", "LOCK", "CLOSE", "DIR_CLOSE",
    "SHMOPEN", "SHMSIZE", "SHMLOCK", "SHMMAP", "SEEK", "DELETE_NOENT", "MMAP", "GETTEMPPATH",
    "CONVPATH", "VNODE", "AUTH", "BEGIN_ATOMIC", "COMMIT_ATOMIC", "ROLLBACK_ATOMIC", "DATA",
    "CORRUPTFS", "IN_PAGE", "BADKEY", "CODEC",
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

/**
 * The `SQLITE_*` name of an (extended) result code, e.g. 5 → `SQLITE_BUSY`, 267 →
 * `SQLITE_CORRUPT_VTAB`. An extended code SQLite may add later falls back to its primary
 * name, which is what the error mapping branches on; undefined for a number that is no error.
 */
export function sqliteResultName(code: number): string | undefined {
  if (!Number.isInteger(code) || code <= 0) return undefined;
  const primary = PRIMARY[code & 0xff];
  if (primary === undefined) return undefined;
  const suffix = EXTENDED[primary]?.[(code >> 8) - 1];
  return suffix === undefined || suffix === "" ? `SQLITE_${primary}` : `SQLITE_${primary}_${suffix}`;
}
