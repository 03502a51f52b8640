/**
 * The three SQLite bindings behind {@link SqliteDriver}, and the choice of one per process.
 * Each binding is reached only here and only when the first history database opens; the
 * shapes declared below are the few members used, so none of their type packages is needed.
 */
import { createRequire } from "node:module";
import { pathToFileURL } from "node:url";

import { HistoryError } from "./errors.js";
import type { SqliteConnection, SqliteDriver, SqliteDriverName, SqliteStatement, SqliteValue } from "./sqlite-driver.js";
import { SQLITE_DRIVER_NAMES } from "./sqlite-driver.js";

/** The members of node:sqlite's DatabaseSync and StatementSync used here. */
interface NodeDatabase {
  exec(sql: string): void;
  prepare(sql: string): SqliteStatement;
  close(): void;
  loadExtension?(file: string): void;
}
type NodeDatabaseConstructor = new (file: string, options?: { readonly allowExtension?: boolean }) => NodeDatabase;

/** The members of better-sqlite3's Database used here (its statements fit SqliteStatement). */
interface BetterDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): SqliteStatement;
  close(): unknown;
  loadExtension(file: string): unknown;
}
type BetterDatabaseConstructor = new (file: string, options?: { readonly fileMustExist?: boolean }) => BetterDatabase;

/** The members of bun:sqlite's Database and Statement used here. */
interface BunStatement {
  finalize(): void;
  run(...params: SqliteValue[]): { readonly changes: number };
  all<Row>(...params: SqliteValue[]): Row[];
  get<Row>(...params: SqliteValue[]): Row | null;
}
interface BunDatabase {
  exec(sql: string): unknown;
  prepare(sql: string): BunStatement;
  close(): void;
  loadExtension(file: string): void;
}
type BunDatabaseConstructor = new (file: string, options?: { readonly readwrite?: boolean; readonly create?: boolean }) => BunDatabase;

/** Loads `file` on a throw-away connection; what the extension registers stays for the process. */
function loadThrough(probe: { loadExtension?(file: string): unknown; close(): unknown }, file: string): void {
  try {
    probe.loadExtension?.(file);
  } finally {
    probe.close();
  }
}

function builtin(id: string): { readonly [name: string]: unknown } | undefined {
  return process.getBuiltinModule?.(id) as { readonly [name: string]: unknown } | undefined;
}

/**
 * `node:sqlite` (Node 22.13+ unflagged). It has no "must exist" flag, but opens `file:` URIs,
 * where `mode=rw` means read-write without create.
 */
function nodeSqliteDriver(): SqliteDriver {
  const DatabaseSync = builtin("node:sqlite")?.DatabaseSync as NodeDatabaseConstructor | undefined;
  if (DatabaseSync === undefined) unavailable("this Node has no node:sqlite (unflagged from 22.13)");
  if (typeof DatabaseSync.prototype.loadExtension !== "function") {
    unavailable("this Node's node:sqlite cannot load extensions (22.13+ can)");
  }
  return {
    name: "node:sqlite",
    open(file, options): SqliteConnection {
      return new DatabaseSync(options.mustExist ? `${pathToFileURL(file).href}?mode=rw` : file);
    },
    loadExtension: (file) => loadThrough(new DatabaseSync(":memory:", { allowExtension: true }), file),
  };
}

/**
 * `bun:sqlite`, under Bun. Its `get` answers null for no row, normalised here. Its `close`
 * keeps a connection whose statements are not finalized open until they are collected (its
 * files, locks and WAL with it), so the connection finalizes every statement it made first.
 */
function bunSqliteDriver(): SqliteDriver {
  const Database = builtin("bun:sqlite")?.Database as BunDatabaseConstructor | undefined;
  if (Database === undefined) unavailable("bun:sqlite exists only under Bun");
  const wrap = (db: BunDatabase): SqliteConnection => {
    const statements = new Set<BunStatement>();
    return {
      exec: (sql) => void db.exec(sql),
      prepare(sql) {
        const statement = db.prepare(sql);
        statements.add(statement);
        return {
          run: (...params) => statement.run(...params),
          all: <Row>(...params: SqliteValue[]) => statement.all<Row>(...params),
          get: <Row>(...params: SqliteValue[]) => statement.get<Row>(...params) ?? undefined,
        };
      },
      close() {
        for (const statement of statements) statement.finalize();
        statements.clear();
        db.close();
      },
    };
  };
  return {
    name: "bun:sqlite",
    open: (file, options) => wrap(new Database(file, { readwrite: true, create: !options.mustExist })),
    loadExtension: (file) => loadThrough(new Database(":memory:"), file),
  };
}

/**
 * better-sqlite3 12.x, an optional peer dependency, resolved from this package's own location.
 * Its native part loads on the first connection, so a probe connection proves it fits this
 * runtime's ABI before the driver is chosen.
 */
function betterSqlite3Driver(): SqliteDriver {
  const Database = createRequire(import.meta.url)("better-sqlite3") as BetterDatabaseConstructor;
  new Database(":memory:").close();
  const wrap = (db: BetterDatabase): SqliteConnection => ({
    exec: (sql) => void db.exec(sql),
    prepare: (sql) => db.prepare(sql),
    close: () => void db.close(),
  });
  return {
    name: "better-sqlite3",
    open: (file, options) => wrap(new Database(file, { fileMustExist: options.mustExist })),
    loadExtension: (file) => loadThrough(new Database(":memory:"), file),
  };
}

/** The environment variable that forces one driver (one of {@link SQLITE_DRIVER_NAMES}). */
export const SQLITE_DRIVER_ENV = "GJC_SQLITE_DRIVER";

let chosen: SqliteDriver | undefined;

/**
 * The driver of this process, loaded on the first call and kept: two SQLite libraries in one
 * process must never hold the same database, since neither sees the other's POSIX locks.
 *
 * - `GJC_SQLITE_DRIVER` set: that driver or `history_sqlite_unavailable`, never another.
 * - Bun: `bun:sqlite`.
 * - Node whose `node:sqlite` is stable enough to load without an ExperimentalWarning (24.15+,
 *   26+): `node:sqlite`, else better-sqlite3.
 * - Older Node (20, 22, early 24): better-sqlite3 when it is installed and loads, so a
 *   library does not print a warning into its user's stderr; else `node:sqlite` (22.13+).
 */
export function sqliteDriver(): SqliteDriver {
  chosen ??= chooseDriver();
  return chosen;
}

function chooseDriver(): SqliteDriver {
  const forced = process.env[SQLITE_DRIVER_ENV];
  if (forced !== undefined && forced !== "") {
    if (!SQLITE_DRIVER_NAMES.includes(forced as SqliteDriverName)) {
      return unavailable(`${SQLITE_DRIVER_ENV}=${JSON.stringify(forced)} names no driver (one of ${SQLITE_DRIVER_NAMES.join(", ")})`);
    }
    return loadOrExplain([forced as SqliteDriverName]);
  }
  if (process.versions.bun !== undefined) return loadOrExplain(["bun:sqlite"]);
  return loadOrExplain(nodeSqliteIsQuiet(process.versions.node) ? ["node:sqlite", "better-sqlite3"] : ["better-sqlite3", "node:sqlite"]);
}

/**
 * True on Node versions whose `node:sqlite` loads without an ExperimentalWarning: the module
 * became a release candidate in 24.15 (and 26); 25 is treated as warning (not measured).
 */
export function nodeSqliteIsQuiet(nodeVersion: string): boolean {
  const [major = 0, minor = 0] = nodeVersion.split(".").map(Number);
  return major >= 26 || (major === 24 && minor >= 15);
}

const LOADERS: Readonly<Record<SqliteDriverName, () => SqliteDriver>> = {
  "node:sqlite": nodeSqliteDriver,
  "bun:sqlite": bunSqliteDriver,
  "better-sqlite3": betterSqlite3Driver,
};

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
    `no SQLite driver loads on ${runtime} (${reasons.join("; ")}); use Node 22.13+ or Bun, or install better-sqlite3@12`,
    causes.length === 1 ? causes[0] : causes,
  );
}

function unavailable(why: string, cause?: unknown): never {
  throw new HistoryError("history_sqlite_unavailable", `history: ${why}`, cause === undefined ? {} : { cause });
}

