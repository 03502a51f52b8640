/**
 * The seam between the history store and a SQLite binding. The store needs little of SQLite:
 * open a file, run SQL, prepared statements returning plain rows, close, and loading the
 * pinned-VFS extension. Three bindings provide it (sqlite-drivers.ts, which also picks one).
 * The types here are ours, so no binding's types reach the published declarations.
 */

/** The SQLite bindings the history store can run on. */
export type SqliteDriverName = "node:sqlite" | "bun:sqlite" | "better-sqlite3";

/** Every {@link SqliteDriverName}, in the order `GJC_SQLITE_DRIVER` documents them. */
export const SQLITE_DRIVER_NAMES: readonly SqliteDriverName[] = ["node:sqlite", "bun:sqlite", "better-sqlite3"];

/** A value bound to or read from SQL. */
export type SqliteValue = string | number | bigint | null | Uint8Array;

/** One result row, by column name. */
export type SqliteRow = Readonly<Record<string, SqliteValue>>;

/**
 * A prepared statement; parameters bind to `?` in order. `Row` is the shape the caller's
 * SELECT produces (the driver does not check it).
 */
export interface SqliteStatement {
  /** Runs the statement; `changes` counts the rows it inserted, updated or deleted. */
  run(...params: SqliteValue[]): { readonly changes: number };
  /** Every row of the result. */
  all<Row extends object = SqliteRow>(...params: SqliteValue[]): Row[];
  /** The first row of the result, or undefined when there is none. */
  get<Row extends object = SqliteRow>(...params: SqliteValue[]): Row | undefined;
}

/** An open database connection. Failures are thrown as the binding's own error objects. */
export interface SqliteConnection {
  /** Runs one or more statements that return nothing of interest. */
  exec(sql: string): void;
  /** Compiles one statement. */
  prepare(sql: string): SqliteStatement;
  /** Closes the connection (and finalizes its statements). */
  close(): void;
}

/** Options of {@link SqliteDriver.open}. */
export interface SqliteOpenOptions {
  /** Fail with SQLITE_CANTOPEN instead of creating a missing file. */
  readonly mustExist: boolean;
}

/** One SQLite binding, loaded. */
export interface SqliteDriver {
  /** Which binding this is. */
  readonly name: SqliteDriverName;
  /** Opens `file` read-write. */
  open(file: string, options: SqliteOpenOptions): SqliteConnection;
  /**
   * Loads a SQLite extension into this binding's SQLite library, through a throw-away
   * connection (an extension that registers a VFS keeps it for the process). A binding that
   * cannot load extensions is not offered as a driver at all.
   */
  loadExtension(file: string): void;
}

/** First column of the first row of `PRAGMA <pragma>`, or undefined when it returns no row. */
export function pragmaValue(db: SqliteConnection, pragma: string): SqliteValue | undefined {
  const row = db.prepare(`PRAGMA ${pragma}`).get();
  return row === undefined ? undefined : Object.values(row)[0];
}

/**
 * Runs `fn` inside `BEGIN IMMEDIATE` (the write lock taken up front, so a reader never has to
 * upgrade and deadlock) and commits; on any failure rolls back and rethrows. Not nestable.
 */
export function immediateTransaction<T>(db: SqliteConnection, fn: () => T): T {
  db.exec("BEGIN IMMEDIATE");
  let result: T;
  try {
    result = fn();
    db.exec("COMMIT");
  } catch (error) {
    try {
      db.exec("ROLLBACK");
    } catch {
      // SQLite already rolled back (it does on some errors, e.g. SQLITE_FULL): nothing is
      // open any more, and the first error is the one to report.
    }
    throw error;
  }
  return result;
}
