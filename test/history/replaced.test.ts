/**
 * A `history.db` changed under an open store: renamed aside and a copy restored in its place is detected
 * before the next write (`history_insecure`, `identity_mismatch`), and the restored file keeps its rows
 * (the old WAL is never replayed onto it); a link swapped in while the store opens is `history_insecure`,
 * never `history_readonly`.
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { HistoryError, HistoryStorage } from "../../src/history/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { thrownBy } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";
import { rawDb } from "./helpers.js";

const RACE_MS = Number(process.env.GJC_RACE_MS ?? 2_000);

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir("gjc-history-replaced-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

function prompts(file: string): string[] {
  const db = rawDb(file);
  try {
    return db.prepare("SELECT prompt FROM history ORDER BY id").all<{ prompt: string }>().map((row) => row.prompt);
  } finally {
    db.close();
  }
}

describe("a history.db replaced while the store is open", () => {
  it("renamed aside and a copy restored: the next write is refused, the restored rows survive, the old WAL goes to its own file", async () => {
    const store = HistoryStorage.open(dbPath);
    await store.add("refactor the session loader to stream lines", "/work/repo");
    await store.add("why does the audit report a stale staging file", "/work/repo");
    store.flush();
    // The user restores a backup: the live file is moved aside and a checkpointed copy put back at the name.
    const aside = `${dbPath}.aside`;
    fs.renameSync(dbPath, aside);
    const backup = rawDb(path.join(tmp.path, "backup.db"), { create: true });
    backup.exec("CREATE TABLE history(id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL, created_at INTEGER NOT NULL, cwd TEXT);");
    backup.prepare("INSERT INTO history(prompt, created_at, cwd) VALUES (?, ?, ?)").run("restored prompt from last week", 1_700_000_000, "/work/repo");
    backup.close();
    fs.copyFileSync(path.join(tmp.path, "backup.db"), dbPath);
    fs.chmodSync(dbPath, 0o600);

    const pending = store.add("a prompt typed after the restore", "/work/repo");
    const error = thrownBy(() => store.flush());
    expect(error).toBeInstanceOf(HistoryError);
    expect(error).toMatchObject({ code: "history_insecure", fsCode: "identity_mismatch" });
    await expect(pending).rejects.toMatchObject({ code: "history_insecure" });
    expect(store.closed).toBe(true);

    // Nothing of the old connection reached the restored file, and its WAL was checkpointed into the file it belongs to.
    const wal = `${dbPath}-wal`;
    expect(fs.existsSync(wal) ? fs.statSync(wal).size : 0).toBe(0);
    expect(prompts(dbPath)).toEqual(["restored prompt from last week"]);
    expect(prompts(aside)).toEqual(["refactor the session loader to stream lines", "why does the audit report a stale staging file"]);
    const reopened = HistoryStorage.open(dbPath);
    expect(reopened.getRecent(10).map((e) => e.prompt)).toEqual(["restored prompt from last week"]);
  });

  it("renamed aside and back (the same file): writes go on", async () => {
    const store = HistoryStorage.open(dbPath);
    await store.add("first prompt");
    fs.renameSync(dbPath, `${dbPath}.aside`);
    fs.renameSync(`${dbPath}.aside`, dbPath);
    await store.add("second prompt");
    expect(store.getRecent(5).map((e) => e.prompt)).toEqual(["second prompt", "first prompt"]);
  });

  it.skipIf(process.platform !== "linux")("a link exchanged with history.db while stores open and write is history_insecure, never history_readonly", async () => {
    fs.mkdirSync(agent, { mode: 0o700 });
    HistoryStorage.open(dbPath).close();
    const outside = path.join(tmp.path, "outside.db");
    fs.copyFileSync(dbPath, outside);
    fs.chmodSync(outside, 0o600);
    fs.symlinkSync(outside, path.join(agent, "link"));
    const swapper = spawn(tools.swapRace, [agent, "history.db", "link", String(RACE_MS)], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number>((resolve) => swapper.on("exit", (code) => resolve(code ?? -1)));
    const codes = new Map<string, number>();
    const deadline = Date.now() + RACE_MS;
    await new Promise((resolve) => setTimeout(resolve, 20));
    for (let i = 0; Date.now() < deadline; i++) {
      try {
        const store = HistoryStorage.open(dbPath);
        await store.add(`prompt ${i}`);
        store.flush();
        HistoryStorage.resetInstance();
      } catch (error) {
        if (!(error instanceof HistoryError)) throw error;
        const key = `${error.code}/${error.fsCode ?? error.sqliteCode ?? "-"}`;
        codes.set(key, (codes.get(key) ?? 0) + 1);
        try {
          HistoryStorage.resetInstance();
        } catch {
          // The store's own close failed the same way; it is forgotten all the same.
        }
      }
    }
    expect(await exited).toBe(0);
    expect(codes.size).toBeGreaterThan(0);
    for (const key of codes.keys()) expect(key).toMatch(/^history_insecure\//);
    expect(prompts(outside)).toEqual([]);
  }, RACE_MS + 30_000);
});
