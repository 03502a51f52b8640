/** The history database layout and its forward migrations, versioned by `PRAGMA user_version`. */
import { HistoryError } from "./errors.js";
import { immediateTransaction, pragmaValue, type SqliteConnection } from "./sqlite-driver.js";

/** The schema version this library writes. A file with a higher version is refused. */
export const HISTORY_SCHEMA_VERSION = 2;

/**
 * Two external-content FTS5 indexes: `history_fts` (the peer's, unicode61) for token prefixes, with
 * 1-3 character prefix indexes so a short prefix merges no doclists; `history_infix` (trigram,
 * `detail=none`: SQLite re-checks its LIKE matches) for substrings without a table scan.
 * `secure-delete` removes a deleted prompt's tokens at once, not at a later merge.
 * `created_at` defaults to now as the peer's does, because the peer's own writer inserts rows
 * without it into a file shared with this library; `strftime`, not `unixepoch()`, which older
 * SQLite builds lack.
 */
const SCHEMA = `
CREATE TABLE history (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  prompt TEXT NOT NULL,
  created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)),
  cwd TEXT
);
CREATE INDEX idx_history_created_at ON history(created_at DESC);
CREATE INDEX idx_history_cwd_created_at ON history(cwd, created_at DESC);
CREATE VIRTUAL TABLE history_fts USING fts5(prompt, content='history', content_rowid='id', prefix='1 2 3');
CREATE VIRTUAL TABLE history_infix USING fts5(
  prompt, content='history', content_rowid='id', tokenize='trigram', detail='none'
);
INSERT INTO history_fts(history_fts, rank) VALUES('secure-delete', 1);
INSERT INTO history_infix(history_infix, rank) VALUES('secure-delete', 1);
CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN
  INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
  INSERT INTO history_infix(rowid, prompt) VALUES (new.id, new.prompt);
END;
CREATE TRIGGER history_ad AFTER DELETE ON history BEGIN
  INSERT INTO history_fts(history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
  INSERT INTO history_infix(history_infix, rowid, prompt) VALUES ('delete', old.id, old.prompt);
END;
CREATE TRIGGER history_au AFTER UPDATE ON history BEGIN
  INSERT INTO history_fts(history_fts, rowid, prompt) VALUES ('delete', old.id, old.prompt);
  INSERT INTO history_infix(history_infix, rowid, prompt) VALUES ('delete', old.id, old.prompt);
  INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
  INSERT INTO history_infix(rowid, prompt) VALUES (new.id, new.prompt);
END;
`;

/** Drops every history object and creates the current layout afresh (how `clear()` empties everything); returns how many rows went. */
export function recreateSchema(db: SqliteConnection): number {
  const count = Number(db.prepare("SELECT count(*) AS n FROM history").get<{ n: number }>()?.n);
  dropAllButHistoryTable(db);
  db.exec("DROP TABLE IF EXISTS history");
  db.exec(SCHEMA);
  return count;
}

/** Drops every object but the `history` table (the FTS shadow tables go with their virtual tables). */
function dropAllButHistoryTable(db: SqliteConnection): void {
  const objects = db
    .prepare(
      "SELECT type, name FROM sqlite_master WHERE name <> 'history' AND name NOT LIKE 'sqlite_%' AND type IN ('trigger', 'index', 'view', 'table') AND (type <> 'table' OR sql LIKE 'CREATE VIRTUAL TABLE%')",
    )
    .all<{ type: string; name: string }>();
  // Triggers first: they would otherwise follow a renamed table and fire on the copy.
  for (const kind of ["trigger", "view", "table", "index"]) {
    for (const { type, name } of objects) if (type === kind) db.exec(`DROP ${kind.toUpperCase()} IF EXISTS "${name.replaceAll('"', '""')}"`);
  }
}

/**
 * Any earlier layout into the current one: version 0, an empty file or the peer's (no version, an FTS table kept by an
 * insert trigger only, so holding deleted rows, perhaps a `unixepoch()` default), or version 1 (no `created_at` default).
 * They hold the same columns, so one copy brings each forward: rows copied, indexes rebuilt.
 */
function rebuildInCurrentLayout(db: SqliteConnection): void {
  const hasHistory = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'history'").get() !== undefined;
  if (!hasHistory) {
    db.exec(SCHEMA);
    return;
  }
  const columns = new Set(
    db
      .prepare("SELECT name FROM pragma_table_info('history')")
      .all<{ name: string }>()
      .map((c) => c.name),
  );
  dropAllButHistoryTable(db);
  db.exec("ALTER TABLE history RENAME TO history_v0");
  db.exec(SCHEMA);
  const createdAt = columns.has("created_at") ? "COALESCE(CAST(created_at AS INTEGER), 0)" : "0";
  const cwd = columns.has("cwd") ? "CAST(cwd AS TEXT)" : "NULL";
  db.exec(
    `INSERT INTO history(id, prompt, created_at, cwd)
     SELECT id, CAST(prompt AS TEXT), ${createdAt}, ${cwd} FROM history_v0 WHERE prompt IS NOT NULL ORDER BY id`,
  );
  db.exec("DROP TABLE history_v0");
}

/**
 * Brings the database to {@link HISTORY_SCHEMA_VERSION}: the version is read without a write lock first (an
 * up-to-date file never waits on a writer), then again in the IMMEDIATE transaction (another process may have migrated).
 */
export function migrate(db: SqliteConnection): void {
  if (checkedVersion(db) === HISTORY_SCHEMA_VERSION) return;
  immediateTransaction(db, () => {
    if (checkedVersion(db) === HISTORY_SCHEMA_VERSION) return;
    rebuildInCurrentLayout(db);
    db.exec(`PRAGMA user_version = ${HISTORY_SCHEMA_VERSION}`);
  });
}

/** The file's schema version; `history_version_too_new` when newer than this library's. */
function checkedVersion(db: SqliteConnection): number {
  const version = Number(pragmaValue(db, "user_version"));
  if (version > HISTORY_SCHEMA_VERSION) {
    const message = `history: the database has schema version ${version}; this library knows up to ${HISTORY_SCHEMA_VERSION}`;
    throw new HistoryError("history_version_too_new", message);
  }
  return version;
}
