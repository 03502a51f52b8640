/** What the history store needs of SQLite, and the three bindings providing it (our types, so none of theirs reach the declarations). */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

import { pinnedVfsExtensionPath } from "../fs/index.js";
import { HistoryError } from "./errors.js";

/** Every SQLite binding the store runs on, in the order `GJC_SQLITE_DRIVER` documents them. */
export const SQLITE_DRIVER_NAMES = ["node:sqlite", "bun:sqlite", "better-sqlite3"] as const;

/** One of {@link SQLITE_DRIVER_NAMES}. */
export type SqliteDriverName = (typeof SQLITE_DRIVER_NAMES)[number];

/** The environment variable that forces one driver (one of {@link SQLITE_DRIVER_NAMES}). */
export const SQLITE_DRIVER_ENV = "GJC_SQLITE_DRIVER";

/** A value bound to or read from SQL. */
export type SqliteValue = string | number | bigint | null | Uint8Array;

type Row = Readonly<Record<string, SqliteValue>>;

/** A prepared statement; parameters bind to `?` in order, `R` is what the caller's SELECT yields. */
export interface SqliteStatement {
  /** Runs the statement; `changes` counts the rows it inserted, updated or deleted. */
  run(...params: SqliteValue[]): { readonly changes: number };
  all<R extends object = Row>(...params: SqliteValue[]): R[];
  /** The first row, or undefined when there is none. */
  get<R extends object = Row>(...params: SqliteValue[]): R | undefined;
}

/** An open connection. Failures are thrown as the binding's own error objects. */
export interface SqliteConnection {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  /** Closes the connection and finalizes its statements. */
  close(): void;
}

/** One SQLite binding, loaded. */
export interface SqliteDriver {
  readonly name: SqliteDriverName;
  /** Opens `file` read-write; with `mustExist`, a missing file is SQLITE_CANTOPEN, not created. */
  open(file: string, options: { readonly mustExist: boolean }): SqliteConnection;
  /**
   * Registers, once, the pinned VFS (native/sqlite/pinned_vfs.c) in this binding's own SQLite, or
   * throws `history_pin_unavailable`. It lets a path name a held directory descriptor
   * (`/proc/self/fd/<n>/<name>`, Linux), which the unix VFS would resolve back to a path and open
   * by name; it becomes the default VFS and leaves every other path as it was.
   */
  ensurePinnedVfs(): void;
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
      // SQLite already rolled back (it does on some errors, e.g. SQLITE_FULL); report the first error.
    }
    throw error;
  }
  return result;
}

/** Refuses a connection whose main database is not at the path given: anything else means another VFS reached the file by name. */
export function checkPinnedConnection(db: SqliteConnection, expected: string): void {
  const main = db
    .prepare("PRAGMA database_list")
    .all()
    .find((row) => row.name === "main");
  if (main?.file !== expected) throw pinUnavailable(`SQLite resolved ${expected} to ${String(main?.file)} instead of keeping it`);
}

function pinUnavailable(why: string, cause?: unknown): HistoryError {
  const message = `history: cannot open the database through its held directory: ${why}`;
  return new HistoryError("history_pin_unavailable", message, cause === undefined ? {} : { cause });
}

type Scratch = { loadExtension?(file: string): unknown; close(): unknown };

/** A driver whose extension loads through a throw-away connection made by `scratch` (what it registers stays for the process). */
function driver(name: SqliteDriverName, open: SqliteDriver["open"], scratch: () => Scratch): SqliteDriver {
  let pinned = false;
  const ensurePinnedVfs = (): void => {
    if (pinned) return;
    const extension = pinnedVfsExtensionPath();
    if (extension === undefined) throw pinUnavailable("the gjc_pinned_vfs SQLite extension was not built (npm run build:native)");
    try {
      const probe = scratch();
      try {
        probe.loadExtension?.(extension);
      } finally {
        probe.close();
      }
    } catch (error) {
      throw pinUnavailable(`loading ${extension} into ${name} failed: ${error instanceof Error ? error.message : String(error)}`, error);
    }
    pinned = true;
  };
  return { name, open, ensurePinnedVfs };
}

function builtin(id: string): { readonly [name: string]: unknown } | undefined {
  return process.getBuiltinModule?.(id) as { readonly [name: string]: unknown } | undefined;
}

type BunStatement = Omit<SqliteStatement, "get"> & { get<R extends object>(...params: SqliteValue[]): R | null; finalize(): void };
type BunDatabase = Omit<SqliteConnection, "prepare"> & { prepare(sql: string): BunStatement; loadExtension(file: string): void };

/**
 * bun:sqlite's `get` answers null for no row, and its `close` keeps the connection (files, locks,
 * WAL) open until unfinalized statements are collected, so every statement is finalized first.
 */
function wrapBun(db: BunDatabase): SqliteConnection {
  const statements = new Set<BunStatement>();
  return {
    exec: (sql) => db.exec(sql),
    prepare(sql) {
      const statement = db.prepare(sql);
      statements.add(statement);
      return {
        run: (...params) => statement.run(...params),
        all: (...params) => statement.all(...params),
        get: <R extends object>(...params: SqliteValue[]) => statement.get<R>(...params) ?? undefined,
      };
    },
    close() {
      for (const statement of statements) statement.finalize();
      statements.clear();
      db.close();
    },
  };
}

const LOADERS: Readonly<Record<SqliteDriverName, () => SqliteDriver>> = {
  // Node 22.13+: no "must exist" flag, but `file:` URIs with `mode=rw` (no create).
  "node:sqlite": () => {
    type Constructor = new (file: string, options?: { readonly allowExtension?: boolean }) => SqliteConnection & Scratch;
    const DatabaseSync = builtin("node:sqlite")?.DatabaseSync as Constructor | undefined;
    if (DatabaseSync === undefined) unavailable("this Node has no node:sqlite (unflagged from 22.13)");
    if (typeof DatabaseSync.prototype.loadExtension !== "function") unavailable("this Node's node:sqlite cannot load extensions (22.13+ can)");
    const open: SqliteDriver["open"] = (file, options) => new DatabaseSync(options.mustExist ? `${pathToFileURL(file).href}?mode=rw` : file);
    return driver("node:sqlite", open, () => new DatabaseSync(":memory:", { allowExtension: true }));
  },
  "bun:sqlite": () => {
    type Constructor = new (file: string, options?: { readonly readwrite?: boolean; readonly create?: boolean }) => BunDatabase;
    const Database = builtin("bun:sqlite")?.Database as Constructor | undefined;
    if (Database === undefined) unavailable("bun:sqlite exists only under Bun");
    const open: SqliteDriver["open"] = (file, options) => wrapBun(new Database(file, { readwrite: true, create: !options.mustExist }));
    return driver("bun:sqlite", open, () => new Database(":memory:"));
  },
  // 12.x, an optional peer dependency resolved from this package's location. Its native part
  // loads on the first connection, so a probe proves it fits this runtime's ABI.
  "better-sqlite3": () => {
    type Constructor = new (file: string, options?: { readonly fileMustExist?: boolean }) => SqliteConnection & Scratch;
    const Database = createRequire(import.meta.url)("better-sqlite3") as Constructor;
    new Database(":memory:").close();
    return driver(
      "better-sqlite3",
      (file, options) => new Database(file, { fileMustExist: options.mustExist }),
      () => new Database(":memory:"),
    );
  },
};

let chosen: SqliteDriver | undefined;

/**
 * The process's driver, chosen once (two SQLite libraries never see each other's POSIX locks): the
 * one `GJC_SQLITE_DRIVER` names; under Bun `bun:sqlite`; else `node:sqlite` where it loads without an
 * ExperimentalWarning (a library must not print to stderr), better-sqlite3 first elsewhere, then the other.
 */
export function sqliteDriver(): SqliteDriver {
  chosen ??= loadOrExplain(driverOrder());
  return chosen;
}

function driverOrder(): SqliteDriverName[] {
  const forced = process.env[SQLITE_DRIVER_ENV];
  if (forced !== undefined && forced !== "") {
    if (SQLITE_DRIVER_NAMES.includes(forced as SqliteDriverName)) return [forced as SqliteDriverName];
    return unavailable(`${SQLITE_DRIVER_ENV}=${JSON.stringify(forced)} names no driver (one of ${SQLITE_DRIVER_NAMES.join(", ")})`);
  }
  if (process.versions.bun !== undefined) return ["bun:sqlite"];
  return nodeSqliteIsQuiet(process.versions.node) ? ["node:sqlite", "better-sqlite3"] : ["better-sqlite3", "node:sqlite"];
}

/** True where `node:sqlite` loads without an ExperimentalWarning: a release candidate from 24.15 and 26 (25 not measured). */
export function nodeSqliteIsQuiet(nodeVersion: string): boolean {
  const [major = 0, minor = 0] = nodeVersion.split(".").map(Number);
  return major >= 26 || (major === 24 && minor >= 15);
}

/** The first of `names` that loads; otherwise one error saying why each did not. */
function loadOrExplain(names: readonly SqliteDriverName[]): SqliteDriver {
  const reasons: string[] = [];
  const causes: unknown[] = [];
  for (const name of names) {
    try {
      return LOADERS[name]();
    } catch (error) {
      reasons.push(`${name}: ${error instanceof Error ? error.message.replace(/^history: /, "") : String(error)}`);
      causes.push(error);
    }
  }
  const runtime = process.versions.bun === undefined ? `Node ${process.versions.node}` : `Bun ${process.versions.bun}`;
  return unavailable(
    // The advice first: the reasons can be long (a missing native binding lists every path tried), and a one-line error is cut.
    `no SQLite driver loads on ${runtime}: use Node 22.13+ or Bun, or install better-sqlite3@12 with its install script (\`npm rebuild better-sqlite3\` after an install with scripts off); ${reasons.join("; ")}`,
    causes.length === 1 ? causes[0] : causes,
  );
}

function unavailable(why: string, cause?: unknown): never {
  throw new HistoryError("history_sqlite_unavailable", `history: ${why}`, cause === undefined ? {} : { cause });
}
