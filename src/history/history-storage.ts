/** HistoryStorage: the prompt-history database (`<agent>/history.db`), searched through FTS5. */
import path from "node:path";

import { checkCwd, checkDbPath, checkLimit, checkOptions, checkPositiveInteger, conflict, defaultHistoryDbPath, invalid } from "./arguments.js";
import { HistoryError, historyErrorFromSqlite, isBusyCode, isCorruptionCode, sqliteCodeOf } from "./errors.js";
import { HistoryFiles } from "./owner-only.js";
import {
  containsLikePattern,
  MAX_QUERY_LENGTH,
  MAX_QUERY_TOKENS,
  normalizePrompt,
  prefixMatchExpression,
  splitByInfixIndexability,
  tokenizeQuery,
} from "./query.js";
import { migrate, recreateSchema } from "./schema.js";
import {
  checkPinnedConnection,
  immediateTransaction,
  pragmaValue,
  sqliteDriver,
  type SqliteConnection,
  type SqliteStatement,
  type SqliteValue,
} from "./sqlite-driver.js";

/** One stored prompt, in the peer's shape (column names as in the table). */
export interface HistoryEntry {
  /** Row id; larger means stored later. */
  readonly id: number;
  /** The prompt as stored (trimmed; lone surrogates and NUL replaced by U+FFFD). */
  readonly prompt: string;
  /** Unix time in whole seconds when `add` was called. */
  readonly created_at: number;
  /** Working directory given to `add`; absent when none was given. */
  readonly cwd?: string;
}

/** A row as SQLite returns it, before an absent cwd is dropped. */
type HistoryRow = Omit<HistoryEntry, "cwd"> & { readonly cwd: string | null };

/** Options of {@link HistoryStorage.open}. */
export interface HistoryStorageOptions {
  /** How long a write waits for another connection's lock before `history_busy` (ms). Default 5000. */
  readonly busyTimeoutMs?: number;
  /** Create a missing agent directory (0700). Default true. */
  readonly createDir?: boolean;
  /** Longest prompt accepted, in UTF-16 code units. Default 1 MiB (1,048,576). */
  readonly maxPromptLength?: number;
  /** Most prompts kept waiting while the database keeps failing. Default 100,000. */
  readonly maxPending?: number;
  /** Told about failures of background saves (the prompts stay queued and are retried); else they surface only from `flush`/`close`. */
  readonly onError?: (error: HistoryError) => void;
}

// Most prompts one transaction saves (FTS5 writes an index segment per transaction, so smaller
// batches cost throughput); a queue this long within one tick (a bulk import) is saved at once.
const MAX_BATCH = 10_000;

interface Pending {
  readonly prompt: string;
  readonly cwd: string | null;
  readonly createdAt: number;
  /** Settles the promise `add` returned for this prompt. */
  readonly settle: { resolve(): void; reject(error: HistoryError): void } | undefined;
}

type Limits = Required<Pick<HistoryStorageOptions, "maxPromptLength" | "maxPending">>;

const ENTRY_COLUMNS = "h.id AS id, h.prompt AS prompt, h.created_at AS created_at, h.cwd AS cwd";

function toEntry(row: HistoryRow): HistoryEntry {
  const { id, prompt, created_at } = row;
  return row.cwd === null ? { id, prompt, created_at } : { id, prompt, created_at, cwd: row.cwd };
}

/**
 * The prompt-history store, one per process as in the peer. `add` only queues; batches are written
 * on `setImmediate`, so a turn never waits on disk. Every other method is synchronous and first
 * writes the queue, so it sees every prompt added before it. Failures are {@link HistoryError}s.
 */
export class HistoryStorage {
  static #instance: HistoryStorage | undefined;
  static #opening: { readonly path: string; readonly promise: Promise<HistoryStorage> } | undefined;

  readonly #db: SqliteConnection;
  readonly #files: HistoryFiles;
  readonly #limits: Limits;
  readonly #onError: HistoryStorageOptions["onError"];
  readonly #statements = new Map<string, SqliteStatement>();
  #pending: Pending[] = [];
  #scheduled: NodeJS.Immediate | undefined;
  /** Set while the last save failed; cleared by the next one that succeeds. */
  #failing = false;
  #closed = false;

  /** Absolute path of the database file. */
  readonly path: string;

  private constructor(db: SqliteConnection, files: HistoryFiles, limits: Limits, onError: HistoryStorageOptions["onError"]) {
    this.#db = db;
    this.#files = files;
    this.path = files.dbPath;
    this.#limits = limits;
    this.#onError = onError;
  }

  /**
   * The process-wide store, opened on the first call; later calls with the same path return it
   * (ignoring `options`), another path is `history_instance_conflict` until `resetInstance` or
   * `close`. Directory and files must be owner-only ({@link HistoryFiles.prepare}). A database
   * SQLite cannot read is renamed aside (`history_corrupt`); the next open starts empty.
   */
  static open(dbPath: string = defaultHistoryDbPath(), options: HistoryStorageOptions = {}): HistoryStorage {
    const target = checkDbPath(dbPath);
    checkOptions(options);
    const current = HistoryStorage.#instance;
    if (current !== undefined && !current.closed) {
      if (current.path !== target) throw conflict(current.path, target);
      return current;
    }
    const opened = HistoryStorage.#create(target, options);
    HistoryStorage.#instance = opened;
    return opened;
  }

  /** {@link HistoryStorage.open} for async callers; concurrent calls for one path share a promise. */
  static openAsync(dbPath: string = defaultHistoryDbPath(), options: HistoryStorageOptions = {}): Promise<HistoryStorage> {
    let target: string;
    try {
      target = checkDbPath(dbPath);
    } catch (error) {
      return Promise.reject(error);
    }
    const opening = HistoryStorage.#opening;
    if (opening !== undefined) {
      return opening.path === target ? opening.promise : Promise.reject(conflict(opening.path, target));
    }
    const promise = Promise.resolve().then(() => HistoryStorage.open(target, options));
    const entry = { path: target, promise };
    HistoryStorage.#opening = entry;
    const done = (): void => {
      if (HistoryStorage.#opening === entry) HistoryStorage.#opening = undefined;
    };
    promise.then(done, done);
    return promise;
  }

  /**
   * Closes the process-wide store (writing the queue first) and forgets it. It is forgotten even
   * when that write fails (an unwritable database must not pin the process): the store is shut
   * and the error thrown, saying the queue was lost. {@link HistoryStorage.close} keeps it instead.
   */
  static resetInstance(): void {
    const current = HistoryStorage.#instance;
    HistoryStorage.#instance = undefined;
    if (current === undefined || current.closed) return;
    try {
      current.close();
    } catch (error) {
      current.#shut();
      throw error;
    }
  }

  static #create(target: string, options: HistoryStorageOptions): HistoryStorage {
    const busyTimeoutMs = checkPositiveInteger(options.busyTimeoutMs, "busyTimeoutMs", 5000);
    const limits: Limits = {
      maxPromptLength: checkPositiveInteger(options.maxPromptLength, "maxPromptLength", 1024 * 1024),
      maxPending: checkPositiveInteger(options.maxPending, "maxPending", 100_000),
    };
    // Chosen first, so that a runtime without a usable SQLite creates no directory or file.
    const driver = sqliteDriver();
    const files = HistoryFiles.prepare(path.dirname(target), path.basename(target), { create: options.createDir ?? true });
    let db: SqliteConnection | undefined;
    let foreign: HistoryError | undefined;
    try {
      if (files.pinned) driver.ensurePinnedVfs();
      db = driver.open(files.sqlitePath, { mustExist: true });
      if (files.pinned) checkPinnedConnection(db, files.sqlitePath);
      // Another file's frames may have reached the WAL since prepare looked: this connection must never checkpoint them.
      foreign = files.foreignWal();
      if (foreign !== undefined) {
        abandoned.push({ db, files });
        throw foreign;
      }
      configure(db, busyTimeoutMs);
      migrate(db);
      files.opened();
      return new HistoryStorage(db, files, limits, options.onError);
    } catch (error) {
      if (error === foreign) throw error;
      throw closeAfterFailure(db, files, error, "opening the history database");
    }
  }

  /** Prompts queued and not yet written. */
  get pendingCount(): number {
    return this.#pending.length;
  }

  /** True once `close` finished (or corruption shut the store). */
  get closed(): boolean {
    return this.#closed;
  }

  /** Names (in the database's directory, database first) tightened to 0600 when this store opened. */
  get tightened(): readonly string[] {
    return this.#files.tightened;
  }

  /**
   * Queues `prompt` (trimmed; empty ignored) unless it repeats the previous one with the same cwd
   * (checked against the queue and, when written, the newest row, so two processes do not defeat
   * it). The promise settles when its batch commits or fails (the prompt then stays queued), and
   * never rejects unhandled (see `onError`); bad arguments or a full backlog throw at once.
   */
  add(prompt: string, cwd?: string): Promise<void> {
    this.#assertOpen();
    if (typeof prompt !== "string") throw invalid("prompt must be a string");
    const { maxPromptLength, maxPending } = this.#limits;
    if (prompt.length > maxPromptLength) {
      throw new HistoryError("history_prompt_too_large", `history: prompt of ${prompt.length} code units exceeds ${maxPromptLength}`);
    }
    const cwdText = checkCwd(cwd);
    const text = normalizePrompt(prompt);
    if (text === "") return Promise.resolve();
    const last = this.#pending.at(-1);
    if (last !== undefined && last.prompt === text && last.cwd === cwdText) return Promise.resolve();
    if (this.#pending.length >= maxPending) {
      throw new HistoryError("history_backlog_full", `history: ${this.#pending.length} prompts are already waiting to be saved`);
    }
    let settle: Pending["settle"];
    const saved = new Promise<void>((resolve, reject) => {
      settle = { resolve, reject };
    });
    saved.catch(() => undefined);
    this.#pending.push({ prompt: text, cwd: cwdText, createdAt: Math.floor(Date.now() / 1000), settle });
    // Only a bulk caller that never yields gets here; a failing database is left to the background
    // retries, so add() does not wait out the busy timeout again and again.
    if (this.#pending.length >= MAX_BATCH && !this.#failing) this.#saveReportingFailures();
    else this.#schedule();
    return saved;
  }

  /** Writes everything queued now. Throws the typed failure; the queue keeps what was not written. */
  flush(): void {
    this.#assertOpen();
    this.#cancelSchedule();
    while (this.#pending.length > 0) this.#saveBatch();
  }

  /**
   * Prompts where every query token starts a word (quoted FTS5 prefix terms: nothing in the query is
   * FTS syntax), then those holding every token anywhere, newest first, up to `limit` (clamped to 0..1000).
   */
  search(query: string, limit: number, cwd?: string): HistoryEntry[] {
    this.#assertOpen();
    if (typeof query !== "string") throw invalid("query must be a string");
    if (query.length > MAX_QUERY_LENGTH) throw invalid(`query longer than ${MAX_QUERY_LENGTH} code units`);
    const max = checkLimit(limit);
    const cwdText = checkCwd(cwd);
    const tokens = tokenizeQuery(query);
    if (tokens.length > MAX_QUERY_TOKENS) throw invalid(`query has more than ${MAX_QUERY_TOKENS} distinct words`);
    if (tokens.length === 0 || max === 0) return [];
    this.flush();
    return this.#run("searching history", () => {
      const fts = "history_fts f JOIN history h ON h.id = f.rowid";
      const found = this.#select(fts, "f.rowid", ["history_fts MATCH ?"], [prefixMatchExpression(tokens)], cwdText, max);
      if (found.length < max) {
        const seen = new Set(found.map((row) => row.id));
        for (const row of this.#infix(tokens, cwdText, max + found.length)) {
          if (found.length >= max) break;
          if (!seen.has(row.id)) found.push(row);
        }
      }
      return found.map(toEntry);
    });
  }

  /** The newest `limit` prompts (floored, clamped to 0..1000), optionally only those added with `cwd`. */
  getRecent(limit: number, cwd?: string): HistoryEntry[] {
    this.#assertOpen();
    const max = checkLimit(limit);
    const cwdText = checkCwd(cwd);
    if (max === 0) return [];
    this.flush();
    return this.#run("reading recent history", () => this.#select("history h", "h.id", [], [], cwdText, max).map(toEntry));
  }

  /** Removes one prompt from the table and both indexes (secure-delete: its tokens go at once); false if absent. */
  delete(id: number): boolean {
    this.#assertOpen();
    if (typeof id !== "number" || !Number.isSafeInteger(id) || id < 1) throw invalid("id must be a positive integer");
    this.flush();
    this.#checkIdentity();
    const remove = this.#statement("DELETE FROM history WHERE id = ?");
    const removed = this.#write("deleting a prompt", () => remove.run(id).changes) > 0;
    if (removed) this.#compact(false);
    return removed;
  }

  /** Removes every prompt (or those added with `cwd`) and returns how many; clearing all also vacuums. */
  clear(options: { readonly cwd?: string } = {}): number {
    this.#assertOpen();
    checkOptions(options);
    const cwd = checkCwd(options.cwd);
    this.flush();
    this.#checkIdentity();
    const removed = this.#write("clearing history", () => {
      if (cwd === null) return recreateSchema(this.#db);
      return this.#statement("DELETE FROM history WHERE cwd = ?").run(cwd).changes;
    });
    // Dropped tables invalidate every cached statement.
    if (cwd === null) this.#statements.clear();
    this.#compact(cwd === null);
    return removed;
  }

  /** Writes the queue, then closes; if that write fails it throws and the store stays open with its queue. */
  close(): void {
    if (this.#closed) return;
    this.flush();
    // SQLite keeps the WAL of a moved database at close; the file now at the name must not inherit it.
    if (this.#files.insecurity() !== undefined) this.#checkpointOwnFrames();
    this.#shut();
  }

  #assertOpen(): void {
    if (this.#closed) throw new HistoryError("history_closed", "history: the store is closed");
  }

  #schedule(): void {
    if (this.#scheduled !== undefined) return;
    this.#scheduled = setImmediate(() => {
      this.#scheduled = undefined;
      if (this.#closed || this.#pending.length === 0) return;
      this.#saveReportingFailures();
    });
  }

  /** One batch, failures reported to onError instead of thrown; reschedules the rest. */
  #saveReportingFailures(): void {
    try {
      this.#saveBatch();
    } catch (error) {
      this.#onError?.(historyErrorFromSqlite(error, "saving history"));
      return;
    }
    if (this.#pending.length > 0) this.#schedule();
  }

  #cancelSchedule(): void {
    if (this.#scheduled === undefined) return;
    clearImmediate(this.#scheduled);
    this.#scheduled = undefined;
  }

  /** Writes up to MAX_BATCH queued prompts in one IMMEDIATE transaction, then dequeues them. */
  #saveBatch(): void {
    this.#checkIdentity();
    const batch = this.#pending.slice(0, MAX_BATCH);
    const newest = this.#statement("SELECT prompt, cwd FROM history ORDER BY id DESC LIMIT 1");
    const insert = this.#statement("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, ?)");
    try {
      this.#write("saving history", () => {
        let last = newest.get<{ prompt: string; cwd: string | null }>();
        for (const entry of batch) {
          if (last !== undefined && last.prompt === entry.prompt && last.cwd === entry.cwd) continue;
          insert.run(entry.prompt, entry.createdAt, entry.cwd);
          last = entry;
        }
      });
    } catch (error) {
      this.#failing = true;
      const failure = historyErrorFromSqlite(error, "saving history");
      for (const entry of batch) entry.settle?.reject(failure);
      throw failure;
    }
    this.#failing = false;
    this.#pending.splice(0, batch.length);
    for (const entry of batch) entry.settle?.resolve();
  }

  /** Substring matches for the fallback pass, newest first. */
  #infix(tokens: readonly string[], cwd: string | null, limit: number): HistoryRow[] {
    const { indexed, scanned } = splitByInfixIndexability(tokens);
    // Indexed tokens go to the trigram table (LIKE is how FTS5 searches it with detail=none);
    // short ones are checked on the row, after the index narrowed the candidates.
    const conditions = [...indexed.map(() => "x.prompt LIKE ?"), ...scanned.map(() => "h.prompt LIKE ?")];
    const params = [...indexed, ...scanned].map(containsLikePattern);
    if (indexed.length === 0) return this.#select("history h", "h.id", conditions, params, cwd, limit);
    return this.#select("history_infix x JOIN history h ON h.id = x.rowid", "x.rowid", conditions, params, cwd, limit);
  }

  /** `SELECT` entry rows `FROM from WHERE conditions (AND the cwd's) ORDER BY order DESC LIMIT limit`. */
  #select(from: string, order: string, conditions: string[], params: SqliteValue[], cwd: string | null, limit: number): HistoryRow[] {
    if (cwd !== null) {
      conditions.push("h.cwd = ?");
      params.push(cwd);
    }
    const where = conditions.length === 0 ? "" : ` WHERE ${conditions.join(" AND ")}`;
    return this.#statement(`SELECT ${ENTRY_COLUMNS} FROM ${from}${where} ORDER BY ${order} DESC LIMIT ?`).all<HistoryRow>(...params, limit);
  }

  /** `sql`, prepared once per store (until `clear()` drops the tables). */
  #statement(sql: string): SqliteStatement {
    let statement = this.#statements.get(sql);
    if (statement === undefined) {
      statement = this.#run("preparing a query", () => this.#db.prepare(sql));
      this.#statements.set(sql, statement);
    }
    return statement;
  }

  /**
   * `fn` in one IMMEDIATE transaction that first stamps the file's identity into page 1, so the WAL's frames say which
   * file they belong to (wal-owner.ts). Page 1 as this connection reads it carries another stamp only on a file not yet
   * written by this store (a restored copy, a peer's) or when the WAL holds another file's frames; the WAL says which.
   * That WAL refuses the write and shuts the store without ever closing its connection (see `abandoned`).
   */
  #write<T>(doing: string, fn: () => T): T {
    return this.#run(doing, () =>
      immediateTransaction(this.#db, () => {
        if (pragmaValue(this.#db, "application_id") !== this.#files.stamp) {
          const foreign = this.#files.foreignWal();
          if (foreign !== undefined) {
            this.#db.exec("ROLLBACK");
            this.#refuse(foreign, { abandon: true });
          }
        }
        this.#db.exec(`PRAGMA application_id = ${this.#files.stamp}`);
        return fn();
      }),
    );
  }

  /** Runs SQLite work; failures become HistoryErrors, and corruption shuts the store first. */
  #run<T>(doing: string, fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (!isCorruptionCode(sqliteCodeOf(error))) throw this.#files.explain(historyErrorFromSqlite(error, doing));
      const dropped = this.#pending;
      this.#pending = [];
      this.#stop();
      const failure = closeAfterFailure(this.#db, this.#files, error, `${doing} (${dropped.length} queued prompts dropped)`);
      for (const entry of dropped) entry.settle?.reject(failure);
      throw failure;
    }
  }

  /**
   * Before every write: the name must still hold the database open here. If it was renamed aside or replaced (a
   * restored copy), the store empties its own frames into the file they belong to and shuts, so they are never
   * replayed onto the file now at the name; queued prompts are rejected with the error.
   */
  #checkIdentity(): void {
    const moved = this.#files.insecurity();
    if (moved === undefined) return;
    this.#checkpointOwnFrames();
    this.#refuse(moved, { abandon: false });
  }

  /**
   * Copies the WAL into the file this connection has and empties it, only while its newest frames are this file's:
   * another process may have opened the file now at the name and written to the WAL there since, and a checkpoint
   * here would copy that file's pages into this one and drop them from the WAL.
   */
  #checkpointOwnFrames(): void {
    try {
      if (this.#files.walIsOwn()) this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
    } catch {
      // Busy or failing: the close that follows still ends this connection; the identity error is the one to report.
    }
  }

  /** Shuts the store for `error` (abandoning the connection when asked), rejects the queue with it, and throws it. */
  #refuse(error: HistoryError, options: { readonly abandon: boolean }): never {
    const dropped = this.#pending;
    this.#pending = [];
    if (options.abandon) {
      this.#stop();
      abandoned.push({ db: this.#db, files: this.#files });
    } else {
      this.#shut();
    }
    for (const entry of dropped) entry.settle?.reject(error);
    throw error;
  }

  /** After a deletion: VACUUM if asked (no free page keeps an old prompt), then truncate the WAL; busy only postpones this. */
  #compact(vacuum: boolean): void {
    this.#run("compacting history", () => {
      try {
        if (vacuum) this.#db.exec("VACUUM");
        this.#db.exec("PRAGMA wal_checkpoint(TRUNCATE)");
      } catch (error) {
        if (!isBusyCode(sqliteCodeOf(error))) throw error;
      }
    });
  }

  /** Marks the store closed and forgets it as the process-wide instance; the caller closes the connection. */
  #stop(): void {
    this.#cancelSchedule();
    this.#statements.clear();
    this.#closed = true;
    if (HistoryStorage.#instance === this) HistoryStorage.#instance = undefined;
  }

  #shut(): void {
    this.#stop();
    try {
      this.#db.close();
    } finally {
      this.#files.close();
    }
  }
}

/**
 * Connections that have seen a WAL holding another database file's frames. Closing one would checkpoint those frames into
 * the file it has open (SQLite checkpoints at the last close of a database still at its name), so it stays open, unused,
 * for the life of the process, with the directory its paths go through; the WAL stays for its owner (or the user) to settle.
 */
const abandoned: Array<{ readonly db: SqliteConnection; readonly files: HistoryFiles }> = [];

/** WAL (readers never block the writer), NORMAL sync (a power cut may lose the last prompts, never the file), zeroed freed pages, no schema-driven SQL functions. */
function configure(db: SqliteConnection, busyTimeoutMs: number): void {
  db.exec(`PRAGMA busy_timeout = ${busyTimeoutMs}`);
  const mode = pragmaValue(db, "journal_mode = WAL");
  if (mode !== "wal") throw new HistoryError("history_readonly", `history: SQLite refused WAL mode (got ${String(mode)})`);
  db.exec("PRAGMA synchronous = NORMAL; PRAGMA secure_delete = ON; PRAGMA cell_size_check = ON; PRAGMA trusted_schema = OFF");
}

/** Closes `db` and `files` after `error`, returning its typed form; corrupt files are first moved aside. */
function closeAfterFailure(db: SqliteConnection | undefined, files: HistoryFiles, error: unknown, doing: string): HistoryError {
  try {
    db?.close();
  } catch {
    // A failed connection may fail to close too; the first error is the one to report.
  }
  const sqliteCode = sqliteCodeOf(error);
  let failure: HistoryError;
  // A file swapped under SQLite (a link where the database was) makes it fail to open: that is the swap's error, not a read-only disk.
  const swapped = error instanceof HistoryError ? undefined : files.insecurity();
  if (swapped !== undefined) {
    failure = swapped;
  } else if (sqliteCode === undefined || !isCorruptionCode(sqliteCode)) {
    failure = files.explain(historyErrorFromSqlite(error, doing));
  } else {
    const movedTo = files.moveAside();
    const message = `history: ${doing}: the database is damaged (${sqliteCode}); moved aside to ${movedTo.join(", ")}`;
    failure = new HistoryError("history_corrupt", message, { sqliteCode, movedTo, cause: error });
  }
  files.close();
  return failure;
}
