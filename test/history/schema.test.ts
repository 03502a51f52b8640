import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HISTORY_SCHEMA_VERSION, HistoryStorage } from "../../src/history/index.js";
import { pragmaValue, type SqliteConnection } from "../../src/history/sqlite-driver.js";
import { makeTempDir } from "../helpers/temp.js";
import { ftsIntegrityCheck, historyError, rawDb } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-history-schema-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

/** Rowids each index returns for `term`, via the index only (no fallback, no join). */
function indexRows(db: SqliteConnection, term: string): { prefix: number[]; infix: number[] } {
  const ids = (sql: string, arg: string) => (db.prepare(sql).all(arg) as Array<{ rowid: number }>).map((r) => r.rowid);
  return {
    prefix: ids("SELECT rowid FROM history_fts WHERE history_fts MATCH ? ORDER BY rowid", `"${term}"*`),
    infix: ids("SELECT rowid FROM history_infix WHERE prompt LIKE ? ORDER BY rowid", `%${term}%`),
  };
}

describe("FTS indexes stay in step with the table", () => {
  it("after deletes and clears: integrity-check passes and every query equals a rebuilt index", () => {
    const store = HistoryStorage.open(dbPath);
    const words = ["apple", "banana", "cherry", "damson", "elder", "fig", "grape"];
    for (let i = 0; i < 300; i++) {
      store.add(`${words[i % 7]} ${words[(i * 3) % 7]}fruit batch${i % 11} item${i}`, `/cwd${i % 3}`);
    }
    store.flush();
    for (const entry of store.search("banana", 1000)) if (entry.id % 2 === 0) store.delete(entry.id);
    for (let id = 1; id <= 300; id += 5) store.delete(id);
    expect(store.clear({ cwd: "/cwd1" })).toBeGreaterThan(0);
    store.close();

    const db = rawDb(dbPath);
    ftsIntegrityCheck(db, "history_fts");
    ftsIntegrityCheck(db, "history_infix");
    const terms = ["apple", "banana", "bananafruit", "batch1", "item2", "cherry", "anana", "rape", "tem29"];
    const before = terms.map((term) => indexRows(db, term));
    // The table says which rows must match; the indexes must agree with it exactly.
    for (const [i, term] of terms.entries()) {
      const expectedInfix = (db.prepare("SELECT id FROM history WHERE prompt LIKE ? ORDER BY id").all(`%${term}%`) as Array<{ id: number }>).map((r) => r.id);
      expect(before[i]!.infix).toEqual(expectedInfix);
    }
    db.exec("INSERT INTO history_fts(history_fts) VALUES('rebuild'); INSERT INTO history_infix(history_infix) VALUES('rebuild');");
    expect(terms.map((term) => indexRows(db, term))).toEqual(before);
    expect(before.find((r) => r.prefix.length > 0)).toBeDefined();
    db.close();
  });

  it("an index that misses a row is detected by the same check (the check can fail)", () => {
    const store = HistoryStorage.open(dbPath);
    store.add("visible prompt");
    store.close();
    const db = rawDb(dbPath);
    // Bypass the triggers' partner: remove the row's index entry only.
    db.prepare("INSERT INTO history_fts(history_fts, rowid, prompt) VALUES('delete', 1, 'visible prompt')").run();
    expect(() => ftsIntegrityCheck(db, "history_fts")).toThrow(/malformed|corrupt/i);
    db.close();
  });
});

describe("schema versions", () => {
  it("stamps a new database with the current version, WAL and the expected objects", () => {
    HistoryStorage.open(dbPath).close();
    const db = rawDb(dbPath);
    expect(pragmaValue(db, "user_version")).toBe(HISTORY_SCHEMA_VERSION);
    expect(pragmaValue(db, "journal_mode")).toBe("wal");
    const names = (
      db.prepare("SELECT name FROM sqlite_master WHERE name NOT LIKE 'history\\_%\\_%' ESCAPE '\\' ORDER BY name").all() as Array<{ name: string }>
    ).map((r) => r.name);
    expect(names).toEqual([
      "history",
      "history_ad",
      "history_ai",
      "history_au",
      "history_fts",
      "history_infix",
      "idx_history_created_at",
      "idx_history_cwd_created_at",
      "sqlite_sequence",
    ]);
    db.close();
  });

  it("migrates a peer database (insert-only FTS trigger, no version) keeping every row", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    fs.writeFileSync(dbPath, "", { mode: 0o600 });
    const peer = rawDb(dbPath);
    peer.exec(`
      CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL,
        created_at INTEGER NOT NULL DEFAULT (CAST(strftime('%s','now') AS INTEGER)), cwd TEXT);
      CREATE INDEX idx_history_created_at ON history(created_at DESC);
      CREATE INDEX idx_history_cwd_created_at ON history(cwd, created_at DESC);
      CREATE VIRTUAL TABLE history_fts USING fts5(prompt, content='history', content_rowid='id');
      CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN
        INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt);
      END;
      INSERT INTO history(prompt, created_at, cwd) VALUES ('legacy first', 1700000000, '/old');
      INSERT INTO history(prompt, created_at, cwd) VALUES ('legacy removed later', 1700000001, NULL);
      INSERT INTO history(prompt, created_at, cwd) VALUES ('legacy third', 1700000002, '/old');
      DELETE FROM history WHERE id = 2;
    `);
    peer.close();

    const store = HistoryStorage.open(dbPath);
    expect(store.getRecent(100).map((e) => [e.id, e.prompt, e.created_at, e.cwd])).toEqual([
      [3, "legacy third", 1700000002, "/old"],
      [1, "legacy first", 1700000000, "/old"],
    ]);
    // The peer's stale index entry for the deleted row is gone after the rebuild.
    expect(store.search("removed", 100)).toEqual([]);
    expect(store.search("legacy", 100).map((e) => e.id)).toEqual([3, 1]);
    store.add("new after migration");
    expect(store.getRecent(1)[0]!.id).toBe(4);
    store.close();
    const db = rawDb(dbPath);
    expect(pragmaValue(db, "user_version")).toBe(HISTORY_SCHEMA_VERSION);
    ftsIntegrityCheck(db, "history_fts");
    ftsIntegrityCheck(db, "history_infix");
    db.close();
  });

  it("brings a version 1 file (no created_at default) forward, after which the peer's own insert works", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    fs.writeFileSync(dbPath, "", { mode: 0o600 });
    const old = rawDb(dbPath);
    // Version 1 of this library: the same table with no default for created_at.
    old.exec(`
      CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL, created_at INTEGER NOT NULL, cwd TEXT);
      CREATE VIRTUAL TABLE history_fts USING fts5(prompt, content='history', content_rowid='id', prefix='1 2 3');
      CREATE TRIGGER history_ai AFTER INSERT ON history BEGIN INSERT INTO history_fts(rowid, prompt) VALUES (new.id, new.prompt); END;
      PRAGMA user_version = 1;
    `);
    const insert = old.prepare("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, ?)");
    old.exec("BEGIN");
    for (let i = 0; i < 2000; i++) insert.run(`refactor the parser step ${i} ${"with context ".repeat(20)}`, 1_700_000_000 + i, `/work/${i % 5}`);
    old.exec("COMMIT");
    old.close();

    const store = HistoryStorage.open(dbPath);
    expect(store.getRecent(1)[0]).toMatchObject({ id: 2000, created_at: 1_700_001_999, cwd: "/work/4" });
    expect(store.search("step 1999", 10).map((e) => e.id)).toEqual([2000]);
    store.close();
    const db = rawDb(dbPath);
    expect(pragmaValue(db, "user_version")).toBe(HISTORY_SCHEMA_VERSION);
    const before = Math.floor(Date.now() / 1000);
    // GJC's own writer leaves created_at to the column's default.
    db.prepare("INSERT INTO history (prompt, cwd) VALUES (?, ?)").run("from the peer's writer", "/peer");
    const row = db.prepare("SELECT created_at FROM history WHERE prompt = ?").get("from the peer's writer") as { created_at: number };
    expect(row.created_at).toBeGreaterThanOrEqual(before);
    expect(row.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    const table = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'history'").get() as { sql: string }).sql;
    expect(table).toContain("strftime('%s','now')");
    ftsIntegrityCheck(db, "history_fts");
    ftsIntegrityCheck(db, "history_infix");
    db.close();
  });

  it("drops a peer's unixepoch() default in the migration", () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    fs.writeFileSync(dbPath, "", { mode: 0o600 });
    const peer = rawDb(dbPath);
    peer.exec(`
      CREATE TABLE history (id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL, created_at INTEGER NOT NULL DEFAULT (unixepoch()), cwd TEXT);
      INSERT INTO history(prompt, created_at, cwd) VALUES ('legacy prompt', 1700000000, '/tmp/legacy');
    `);
    peer.close();
    const store = HistoryStorage.open(dbPath);
    store.add("new prompt", "/tmp/new");
    expect(store.getRecent(10).map((e) => e.prompt)).toEqual(["new prompt", "legacy prompt"]);
    store.close();
    const db = rawDb(dbPath);
    const table = (db.prepare("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'history'").get() as { sql: string }).sql;
    expect(table).not.toContain("unixepoch(");
    db.close();
  });

  it("refuses a database from a newer version and leaves it untouched", () => {
    HistoryStorage.open(dbPath).close();
    const db = rawDb(dbPath);
    db.exec(`PRAGMA user_version = ${HISTORY_SCHEMA_VERSION + 1}`);
    db.close();
    const bytes = fs.readFileSync(dbPath);
    expect(historyError(() => HistoryStorage.open(dbPath)).code).toBe("history_version_too_new");
    expect(fs.readFileSync(dbPath).equals(bytes)).toBe(true);
  });
});
