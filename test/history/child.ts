/**
 * A separate process for the history tests (bundled by helpers.ts). Commands:
 *   add <agentDir> <tag> <count>   add `<tag> prompt <i>` count times, yielding now and then
 *   hold <dbPath>                  hold SQLite's write lock until stdin closes
 *   modes <agentDir>               open, add, flush; report the modes of the db and sidecars
 *   open <agentDir>                open and add one prompt; report the error code if any
 *   interop-write <agentDir>       write a known history with this process's SQLite driver
 *   interop-check <agentDir>       open that history and report what search, recent and SQLite's
 *                                  integrity checks see, then add one prompt
 *   serve <agentDir>               open the store, then per stdin line {"add": [prompts]} add them and
 *                                  flush, answering one JSON line each; close when stdin ends
 *   peer <dbPath>                  open the database raw (no store) and read it, then per stdin line
 *                                  {"stamp": n, "prompt": p} insert p in a transaction that sets
 *                                  application_id to n (what the store's writes do); close at stdin's end
 * Prints one JSON line (serve and peer: one per request, and first {"ready":true}). GJC_CHILD_UMASK,
 * when set, is applied before anything else.
 */
import fs from "node:fs";
import path from "node:path";
import { createInterface } from "node:readline";
import { setImmediate as yieldToLoop } from "node:timers/promises";

import { HISTORY_DB_NAME, HistoryError, HistoryStorage } from "../../src/history/index.js";
import { pragmaValue, sqliteDriver } from "../../src/history/sqlite-driver.js";

const [command, target, ...rest] = process.argv.slice(2);
if (process.env.GJC_CHILD_UMASK) process.umask(Number(process.env.GJC_CHILD_UMASK));

/** What interop-write stores, oldest first; the "doomed" one is deleted again. */
const INTEROP_PROMPTS: ReadonlyArray<readonly [string, string | undefined]> = [
  ["refactor the parser module", "/w/a"],
  ["a doomed prompt", undefined],
  ["write the tokenizer tests", "/w/b"],
  ["Ünïcode prompt with 日本語テキスト", undefined],
];

function report(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
}

function failure(error: unknown): { code: string; fsCode: string | null; message: string } {
  if (!(error instanceof HistoryError)) throw error;
  return { code: error.code, fsCode: error.fsCode ?? null, message: error.message };
}

/** Answers each stdin line with `answer(request)`, one JSON line each, after printing {"ready":true}. */
async function serveLines(answer: (request: Record<string, unknown>) => unknown): Promise<void> {
  report({ ready: true });
  for await (const line of createInterface({ input: process.stdin })) {
    if (line.trim() !== "") report(answer(JSON.parse(line) as Record<string, unknown>));
  }
}

function modes(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of fs.readdirSync(dir)) out[name] = (fs.lstatSync(path.join(dir, name)).mode & 0o7777).toString(8);
  return out;
}

async function main(): Promise<void> {
  if (target === undefined) throw new Error("missing target");
  switch (command) {
    case "add": {
      const [tag, count] = rest;
      const store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME), { busyTimeoutMs: 20_000 });
      for (let i = 0; i < Number(count); i++) {
        store.add(`${tag} prompt ${i}`);
        // Let background batches interleave with the other process's.
        if (i % 7 === 0) await yieldToLoop();
      }
      store.close();
      report({ ok: true });
      return;
    }
    case "hold": {
      const db = sqliteDriver().open(target, { mustExist: true });
      db.exec("BEGIN IMMEDIATE");
      report({ locked: true });
      await new Promise<void>((resolve) => {
        process.stdin.on("end", resolve);
        process.stdin.resume();
      });
      db.exec("ROLLBACK");
      db.close();
      return;
    }
    case "modes": {
      const store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME));
      store.add("a prompt written under an unusual umask");
      store.flush();
      const whileOpen = modes(target);
      store.close();
      report({ whileOpen, umask: process.umask() });
      return;
    }
    case "open": {
      try {
        const store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME), { createDir: false });
        store.add("hello");
        store.close();
        report({ ok: true });
      } catch (error) {
        if (!(error instanceof HistoryError)) throw error;
        report({ code: error.code, fsCode: error.fsCode ?? null, sqliteCode: error.sqliteCode ?? null });
      }
      return;
    }
    case "open-report": {
      // Like "open", and says which loose files were tightened.
      try {
        const store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME), { createDir: false });
        await store.add("hello");
        const tightened = store.tightened;
        store.close();
        report({ ok: true, tightened, modes: modes(target) });
      } catch (error) {
        if (!(error instanceof HistoryError)) throw error;
        report({ code: error.code, fsCode: error.fsCode ?? null });
      }
      return;
    }
    case "interop-write": {
      let store: HistoryStorage;
      try {
        store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME));
      } catch (error) {
        // A driver this runtime lacks (GJC_SQLITE_DRIVER forced it) is reported, not a crash.
        if (!(error instanceof HistoryError) || error.code !== "history_sqlite_unavailable") throw error;
        report({ unavailable: error.message });
        return;
      }
      for (const [prompt, cwd] of INTEROP_PROMPTS) await store.add(prompt, cwd);
      const [doomed] = store.search("doomed", 1);
      if (doomed === undefined || !store.delete(doomed.id)) throw new Error("the prompt to delete was not found");
      store.close();
      report({ driver: sqliteDriver().name });
      return;
    }
    case "interop-check": {
      const dbPath = path.join(target, HISTORY_DB_NAME);
      try {
        const store = HistoryStorage.open(dbPath, { createDir: false });
        const seen = {
          driver: sqliteDriver().name,
          recent: store.getRecent(10),
          prefix: store.search("pars", 10).map((e) => e.prompt),
          infix: store.search("kenize", 10).map((e) => e.prompt),
          unicode: store.search("本語", 10).map((e) => e.prompt),
          doomed: store.search("doomed", 10).length,
        };
        await store.add("added by the reader");
        store.close();
        const db = sqliteDriver().open(dbPath, { mustExist: true });
        for (const table of ["history_fts", "history_infix"]) db.exec(`INSERT INTO ${table}(${table}, rank) VALUES('integrity-check', 1)`);
        const integrity = pragmaValue(db, "integrity_check");
        const version = pragmaValue(db, "user_version");
        db.close();
        report({ ...seen, integrity, version });
      } catch (error) {
        if (!(error instanceof HistoryError)) throw error;
        report({ code: error.code, message: error.message });
      }
      return;
    }
    case "serve": {
      const store = HistoryStorage.open(path.join(target, HISTORY_DB_NAME), { createDir: false });
      await serveLines((request) => {
        try {
          for (const prompt of request.add as string[]) void store.add(prompt);
          store.flush();
          return { ok: true };
        } catch (error) {
          return failure(error);
        }
      });
      try {
        if (!store.closed) store.close();
        report({ closed: true });
      } catch (error) {
        report(failure(error));
      }
      return;
    }
    case "peer": {
      const db = sqliteDriver().open(target, { mustExist: true });
      db.prepare("SELECT count(*) AS n FROM history").get();
      await serveLines((request) => {
        db.exec("BEGIN IMMEDIATE");
        db.exec(`PRAGMA application_id = ${Number(request.stamp)}`);
        db.prepare("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, NULL)").run(String(request.prompt), Math.floor(Date.now() / 1000));
        db.exec("COMMIT");
        return { ok: true };
      });
      db.close();
      return;
    }
    default:
      throw new Error(`unknown command ${String(command)}`);
  }
}

await main();
