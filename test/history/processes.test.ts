import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HistoryError, HistoryStorage } from "../../src/history/index.js";
import { pragmaValue } from "../../src/history/sqlite-driver.js";
import { makeTempDir } from "../helpers/temp.js";
import { hasCommand } from "../helpers/processes.js";
import { childJson, childProgram, historyError, rawDb, runChild, shmLockHolder, startChild } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;

beforeEach(async () => {
  await childProgram();
  tmp = makeTempDir("gjc-history-proc-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

describe("HistoryStorage across processes", () => {
  it("loses no prompt when two processes add at the same time", async () => {
    const count = 400;
    // Create the database first so both children race on adds, not on creation.
    HistoryStorage.open(dbPath).close();
    const [a, b] = await Promise.all([
      runChild(["add", agent, "alpha", String(count)]).then(childJson),
      runChild(["add", agent, "beta", String(count)]).then(childJson),
    ]);
    expect(a).toEqual({ ok: true });
    expect(b).toEqual({ ok: true });
    const db = rawDb(path.join(agent, "history.db"));
    const prompts = (db.prepare("SELECT prompt FROM history").all() as Array<{ prompt: string }>).map((r) => r.prompt);
    db.close();
    expect(prompts).toHaveLength(2 * count);
    for (const tag of ["alpha", "beta"]) {
      const mine = prompts.filter((p) => p.startsWith(`${tag} `));
      // Each process's prompts are stored in the order it added them.
      expect(mine).toEqual(Array.from({ length: count }, (_, i) => `${tag} prompt ${i}`));
    }
  });

  it.skipIf(!hasCommand("python3"))("a second open in the same process keeps the first connection's SQLite locks", async () => {
    // Closing any descriptor of a file drops the process's POSIX locks on it. A second open
    // that verified history.db or -shm through its own descriptor would strip the first
    // connection's locks, and the next process to open would reset the WAL index under it.
    const first = HistoryStorage.open(dbPath, { busyTimeoutMs: 20_000 });
    first.add("first connection warm-up");
    first.flush();
    const shm = path.join(agent, "history.db-shm");
    expect(shmLockHolder(shm)).toBe(process.pid);
    // The same path gives the same instance; another name for the same file is refused
    // before anything of it is opened.
    expect(HistoryStorage.open(dbPath)).toBe(first);
    const alias = path.join(tmp.path, "alias");
    fs.symlinkSync(agent, alias);
    expect(historyError(() => HistoryStorage.open(path.join(alias, "history.db"))).code).toBe("history_instance_conflict");
    first.add("from the second caller");
    first.flush();
    expect(shmLockHolder(shm)).toBe(process.pid);
    // And a writer in another process meanwhile loses nothing.
    const count = 200;
    const child = runChild(["add", agent, "child", String(count)]).then(childJson);
    for (let i = 0; i < count; i++) {
      first.add(`parent prompt ${i}`);
      if (i % 5 === 0) await new Promise((resolve) => setTimeout(resolve, 1));
    }
    expect(await child).toEqual({ ok: true });
    first.close();
    const db = rawDb(path.join(agent, "history.db"));
    expect(db.prepare("SELECT count(*) AS n FROM history").get()).toEqual({ n: 2 * count + 2 });
    expect(pragmaValue(db, "integrity_check")).toBe("ok");
    db.close();
  });

  it("reports history_busy when another process holds the write lock past the timeout, and keeps the queue", async () => {
    const store = HistoryStorage.open(dbPath, { busyTimeoutMs: 150 });
    store.add("first");
    store.flush();
    const holder = await startChild(["hold", store.path], '"locked":true');
    try {
      store.add("second");
      const started = Date.now();
      const error = historyError(() => store.flush());
      expect(Date.now() - started).toBeGreaterThanOrEqual(140);
      expect(error.code).toBe("history_busy");
      expect(error.sqliteCode).toMatch(/^SQLITE_BUSY/);
      expect(store.pendingCount).toBe(1);
      // Reads still work while another process writes (WAL), but they flush first, so they
      // report the same busy error instead of silently hiding the queued prompt.
      expect(historyError(() => store.getRecent(100)).code).toBe("history_busy");
    } finally {
      expect(await holder.stop()).toBe(0);
    }
    store.flush();
    expect(store.getRecent(100).map((e) => e.prompt)).toEqual(["second", "first"]);
    store.close();
  });

  it("reports background save failures through onError and retries them on close", async () => {
    const seen: HistoryError[] = [];
    const store = HistoryStorage.open(dbPath, { busyTimeoutMs: 50, onError: (error) => seen.push(error) });
    store.add("warm up");
    store.flush();
    const holder = await startChild(["hold", store.path], '"locked":true');
    const saved = store.add("queued while locked");
    // The promise of add reports the failed save too; the prompt stays queued for a retry.
    await expect(saved).rejects.toMatchObject({ code: "history_busy" });
    await waitFor(() => seen.length > 0);
    expect(seen[0]?.code).toBe("history_busy");
    expect(store.pendingCount).toBe(1);
    expect(await holder.stop()).toBe(0);
    store.close();
    const reopened = HistoryStorage.open(dbPath);
    expect(reopened.getRecent(100).map((e) => e.prompt)).toEqual(["queued while locked", "warm up"]);
    reopened.close();
  });
});

describe("resetInstance when the final write fails", () => {
  it("forgets the instance all the same and throws that write's typed error", async () => {
    const store = HistoryStorage.open(dbPath, { busyTimeoutMs: 50, onError: () => undefined });
    store.add("warm up");
    store.flush();
    const holder = await startChild(["hold", store.path], '"locked":true');
    const saved = store.add("queued while locked");
    await expect(saved).rejects.toMatchObject({ code: "history_busy" });
    expect(historyError(() => HistoryStorage.resetInstance()).code).toBe("history_busy");
    expect(store.closed).toBe(true);
    expect(await holder.stop()).toBe(0);
    // Another database can be opened now: the failed one no longer pins the process.
    const other = HistoryStorage.open(path.join(path.dirname(dbPath), "other.db"));
    expect(other.getRecent(10)).toEqual([]);
    HistoryStorage.resetInstance();
  });
});

async function waitFor(condition: () => boolean, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
