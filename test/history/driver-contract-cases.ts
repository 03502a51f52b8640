/**
 * The history store's contract, written once and run on whichever SQLite driver this process
 * chose: under vitest on Node (driver-contract.test.ts) and as a plain script under Bun
 * (driver-contract-run.ts). Only node:assert and real files, so both runners can host it.
 * Every case gets a fresh owner-only directory and must leave no store open.
 */
import assert from "node:assert/strict";
import { spawnSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { sqliteCodeOf } from "../../src/history/errors.js";
import { HISTORY_SCHEMA_VERSION, HistoryStorage, type HistoryError, type HistoryErrorCode } from "../../src/history/index.js";
import { HistoryFiles } from "../../src/history/owner-only.js";
import { checkPinnedConnection, nodeSqliteIsQuiet, pragmaValue, SQLITE_DRIVER_ENV, sqliteDriver } from "../../src/history/sqlite-driver.js";
import { historyError } from "./history-error.js";

/** One contract case: `dir` is a fresh 0700 directory that the runner removes afterwards. */
export interface ContractCase {
  readonly name: string;
  run(dir: string): void | Promise<void>;
}

/**
 * Whether this Node's `node:sqlite` exists and prints an ExperimentalWarning when loaded,
 * measured in a fresh process (the warning is printed once per process).
 */
function measureNodeSqlite(): { readonly exists: boolean; readonly warns: boolean } {
  const probe = spawnSync(process.execPath, ["-e", "process.stdout.write(String(process.getBuiltinModule?.('node:sqlite') !== undefined))"], {
    encoding: "utf8",
  });
  assert.equal(probe.status, 0, probe.stderr);
  return { exists: probe.stdout === "true", warns: probe.stderr.includes("ExperimentalWarning") };
}

function expectCode(fn: () => unknown, code: HistoryErrorCode): HistoryError {
  const error = historyError(fn);
  assert.equal(error.code, code, error.message);
  return error;
}

const texts = (entries: ReadonlyArray<{ prompt: string }>): string[] => entries.map((e) => e.prompt);

/** What this process's open descriptors lead to below `dir`. */
function descriptorsOf(dir: string): string[] {
  const held: string[] = [];
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    try {
      const target = fs.readlinkSync(`/proc/self/fd/${fd}`);
      if (target.startsWith(dir + path.sep)) held.push(target);
    } catch {
      // The listing's own descriptor, closed by now.
    }
  }
  return held;
}

function dbIn(dir: string): string {
  return path.join(dir, "agent", "history.db");
}

/** The cases, in the order they run. */
export const CONTRACT_CASES: readonly ContractCase[] = [
  {
    name: "the runtime's driver is the documented choice, node:sqlite only where it loads without a warning",
    run() {
      const chosen = sqliteDriver().name;
      const forced = process.env[SQLITE_DRIVER_ENV];
      if (forced) return assert.equal(chosen, forced);
      if (process.versions.bun !== undefined) return assert.equal(chosen, "bun:sqlite");
      const nodeSqlite = measureNodeSqlite();
      if (!nodeSqlite.exists) return assert.equal(chosen, "better-sqlite3");
      assert.equal(nodeSqliteIsQuiet(process.versions.node), !nodeSqlite.warns, "the version rule matches what this Node prints");
      if (!nodeSqlite.warns) assert.equal(chosen, "node:sqlite");
    },
  },
  {
    name: "prefix, trigram infix and short-token search, cwd filter, dedup and recent",
    async run(dir) {
      const store = HistoryStorage.open(dbIn(dir));
      await store.add("refactor the parser module", "/w/a");
      await store.add("refactor the parser module", "/w/a");
      await store.add("write the tokenizer tests", "/w/b");
      await store.add("Ünïcode prompt with ß and 日本語テキスト");
      store.add("fix CI on main");
      assert.deepEqual(texts(store.getRecent(10)), [
        "fix CI on main",
        "Ünïcode prompt with ß and 日本語テキスト",
        "write the tokenizer tests",
        "refactor the parser module",
      ]);
      assert.deepEqual(texts(store.search("pars", 10)), ["refactor the parser module"]);
      assert.deepEqual(texts(store.search("kenize", 10)), ["write the tokenizer tests"]);
      assert.deepEqual(texts(store.search("本語", 10)), ["Ünïcode prompt with ß and 日本語テキスト"]);
      assert.deepEqual(texts(store.search("ci", 10)), ["fix CI on main"]);
      assert.deepEqual(texts(store.search("the", 10, "/w/b")), ["write the tokenizer tests"]);
      assert.deepEqual(texts(store.search('tests" * ("', 10)), ["write the tokenizer tests"]);
      assert.deepEqual(
        store.getRecent(10, "/w/a").map((e) => e.cwd),
        ["/w/a"],
      );
      store.close();
    },
  },
  {
    name: "delete and clear take a prompt out of both indexes, which stay consistent",
    async run(dir) {
      const store = HistoryStorage.open(dbIn(dir));
      for (const prompt of ["alpha one", "beta two", "gamma three"]) await store.add(prompt, prompt.startsWith("g") ? "/g" : undefined);
      const [beta] = store.search("beta", 1);
      assert.ok(beta !== undefined);
      assert.equal(store.delete(beta.id), true);
      assert.equal(store.delete(beta.id), false);
      assert.deepEqual(store.search("eta", 10), [], "the trigram index forgot the deleted prompt");
      assert.equal(store.clear({ cwd: "/g" }), 1);
      store.close();
      const db = sqliteDriver().open(dbIn(dir), { mustExist: true });
      for (const table of ["history_fts", "history_infix"]) db.exec(`INSERT INTO ${table}(${table}, rank) VALUES('integrity-check', 1)`);
      assert.deepEqual(texts(db.prepare("SELECT prompt FROM history").all<{ prompt: string }>()), ["alpha one"]);
      db.close();
      const again = HistoryStorage.open(dbIn(dir));
      assert.equal(again.clear(), 1);
      assert.deepEqual(again.getRecent(10), []);
      again.close();
    },
  },
  {
    name: "NUL and lone surrogates are stored as U+FFFD, the same text on every driver",
    async run(dir) {
      const store = HistoryStorage.open(dbIn(dir));
      await store.add("high \uD800 alone\0end");
      await store.add("pair \uD83D\uDE00 kept");
      assert.deepEqual(texts(store.getRecent(5)), ["pair \uD83D\uDE00 kept", "high \uFFFD alone\uFFFDend"]);
      assert.deepEqual(texts(store.search("alone \uD800", 5)), ["high \uFFFD alone\uFFFDend"]);
      store.close();
      const db = sqliteDriver().open(dbIn(dir), { mustExist: true });
      const bytes = db
        .prepare("SELECT hex(prompt) AS hex FROM history ORDER BY id")
        .all<{ hex: string }>()
        .map((row) => row.hex);
      db.close();
      assert.deepEqual(bytes, [
        Buffer.from("high \uFFFD alone\uFFFDend").toString("hex").toUpperCase(),
        Buffer.from("pair \uD83D\uDE00 kept").toString("hex").toUpperCase(),
      ]);
    },
  },
  {
    name: "a database name with URI metacharacters and non-ASCII opens as that very file",
    async run(dir) {
      const name = "hist ?mode=ro#%41 日記.db";
      const dbPath = path.join(dir, "agent", name);
      const store = HistoryStorage.open(dbPath);
      await store.add("kept under an odd name");
      store.close();
      assert.deepEqual(fs.readdirSync(path.join(dir, "agent")), [name]);
      const again = HistoryStorage.open(dbPath, { createDir: false });
      assert.deepEqual(texts(again.getRecent(5)), ["kept under an odd name"]);
      again.close();
    },
  },
  {
    name: "the file carries the same schema: version, WAL, both FTS5 tables and their tokenizers",
    run(dir) {
      HistoryStorage.open(dbIn(dir)).close();
      const db = sqliteDriver().open(dbIn(dir), { mustExist: true });
      try {
        assert.equal(Number(pragmaValue(db, "user_version")), HISTORY_SCHEMA_VERSION);
        assert.equal(pragmaValue(db, "journal_mode"), "wal");
        const sql = db
          .prepare("SELECT name, sql FROM sqlite_master WHERE name IN ('history_fts', 'history_infix') ORDER BY name")
          .all<{ name: string; sql: string }>();
        assert.deepEqual(
          sql.map((row) => row.name),
          ["history_fts", "history_infix"],
        );
        assert.match(sql[1]!.sql, /tokenize='trigram'/);
      } finally {
        db.close();
      }
    },
  },
  {
    name: "SQLite's failures carry the same names and our codes on every driver",
    run(dir) {
      const db = sqliteDriver().open(path.join(dir, "probe.db"), { mustExist: false });
      try {
        db.exec("CREATE TABLE t(id INTEGER PRIMARY KEY)");
        db.exec("INSERT INTO t VALUES (1)");
        const duplicate = (): void => void db.prepare("INSERT INTO t VALUES (1)").run();
        assert.throws(duplicate, (error) => sqliteCodeOf(error) === "SQLITE_CONSTRAINT_PRIMARYKEY");
        assert.throws(
          () => db.exec("SELECT * FROM missing"),
          (error) => sqliteCodeOf(error) === "SQLITE_ERROR",
        );
      } finally {
        db.close();
      }
      assert.throws(
        () => sqliteDriver().open(path.join(dir, "absent.db"), { mustExist: true }),
        (error) => sqliteCodeOf(error) === "SQLITE_CANTOPEN",
      );
      assert.equal(fs.existsSync(path.join(dir, "absent.db")), false, "mustExist created nothing");
    },
  },
  {
    name: "a garbage file is history_corrupt (SQLITE_NOTADB) and moved aside",
    run(dir) {
      fs.mkdirSync(path.join(dir, "agent"), { mode: 0o700 });
      fs.writeFileSync(dbIn(dir), Buffer.alloc(8192, 0x41), { mode: 0o600 });
      const error = expectCode(() => HistoryStorage.open(dbIn(dir)), "history_corrupt");
      assert.equal(error.sqliteCode, "SQLITE_NOTADB");
      assert.equal(error.movedTo.length, 1);
      assert.equal(fs.readFileSync(error.movedTo[0]!).length, 8192);
      HistoryStorage.open(dbIn(dir)).close();
    },
  },
  {
    name: "a newer schema is history_version_too_new and left untouched",
    run(dir) {
      HistoryStorage.open(dbIn(dir)).close();
      const db = sqliteDriver().open(dbIn(dir), { mustExist: true });
      db.exec(`PRAGMA user_version = ${HISTORY_SCHEMA_VERSION + 1}`);
      db.close();
      expectCode(() => HistoryStorage.open(dbIn(dir)), "history_version_too_new");
    },
  },
  {
    name: "another connection's write lock past the timeout is history_busy, the queue kept",
    async run(dir) {
      const store = HistoryStorage.open(dbIn(dir), { busyTimeoutMs: 50 });
      await store.add("first");
      const holder = sqliteDriver().open(dbIn(dir), { mustExist: true });
      holder.exec("BEGIN IMMEDIATE");
      store.add("second");
      const error = expectCode(() => store.flush(), "history_busy");
      assert.match(error.sqliteCode ?? "", /^SQLITE_BUSY/);
      assert.equal(store.pendingCount, 1);
      holder.exec("ROLLBACK");
      holder.close();
      store.flush();
      assert.deepEqual(texts(store.getRecent(5)), ["second", "first"]);
      store.close();
    },
  },
  {
    name: "(Linux) close lets go of the database and its sidecars: no descriptor of them stays open",
    async run(dir) {
      if (process.platform !== "linux") return;
      const store = HistoryStorage.open(dbIn(dir));
      await store.add("a prompt");
      assert.deepEqual(texts(store.search("prompt", 5)), ["a prompt"]);
      assert.ok(descriptorsOf(dir).length > 0, "the open store holds the database");
      store.close();
      assert.deepEqual(descriptorsOf(dir), []);
    },
  },
  {
    name: "(Linux) SQLite opens through the held directory: a swapped path redirects nothing",
    run(dir) {
      if (process.platform !== "linux") return;
      const agent = path.join(dir, "agent");
      const outside = path.join(dir, "outside");
      fs.mkdirSync(agent, { mode: 0o700 });
      fs.mkdirSync(outside, { mode: 0o700 });
      const files = HistoryFiles.prepare(agent, "history.db", { create: false });
      const moved = path.join(dir, "agent-moved");
      fs.renameSync(agent, moved);
      fs.symlinkSync(outside, agent);
      try {
        const driver = sqliteDriver();
        driver.ensurePinnedVfs();
        const db = driver.open(files.sqlitePath, { mustExist: true });
        checkPinnedConnection(db, files.sqlitePath);
        assert.equal(pragmaValue(db, "journal_mode = WAL"), "wal");
        db.exec("CREATE TABLE t(x); INSERT INTO t VALUES ('kept in the held directory')");
        files.opened();
        db.close();
      } finally {
        files.close();
      }
      assert.deepEqual(fs.readdirSync(outside), []);
      assert.deepEqual(fs.readdirSync(moved), ["history.db"]);
    },
  },
];
