/**
 * A separate process for the history tests (bundled by helpers.ts). Commands:
 *   add <agentDir> <tag> <count>   add `<tag> prompt <i>` count times, yielding now and then
 *   hold <dbPath>                  hold SQLite's write lock until stdin closes
 *   modes <agentDir>               open, add, flush; report the modes of the db and sidecars
 *   open <agentDir>                open and add one prompt; report the error code if any
 * Prints one JSON line. GJC_CHILD_UMASK, when set, is applied before anything else.
 */
import fs from "node:fs";
import path from "node:path";
import { setImmediate as yieldToLoop } from "node:timers/promises";

import { HISTORY_DB_NAME, HistoryError, HistoryStorage } from "../../src/history/index.js";
import { sqliteDriver } from "../../src/history/sqlite-drivers.js";

const [command, target, ...rest] = process.argv.slice(2);
if (process.env.GJC_CHILD_UMASK) process.umask(Number(process.env.GJC_CHILD_UMASK));

function report(value: unknown): void {
  process.stdout.write(`${JSON.stringify(value)}\n`);
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
    default:
      throw new Error(`unknown command ${String(command)}`);
  }
}

await main();
