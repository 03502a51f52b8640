/**
 * A `history.db` changed under an open store: renamed aside and a copy restored in its place is detected
 * before the next write (`history_insecure`, `identity_mismatch`), and the restored file keeps its rows
 * (the old WAL is never replayed onto it); a link swapped in while the store opens is `history_insecure`,
 * never `history_readonly`. Across processes, the WAL at the name says whose frames it holds: an open or a
 * write that would read another file's frames as its own is refused, and a store whose file was moved never
 * empties into it the frames of the file now at the name.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { HistoryError, HistoryStorage } from "../../src/history/index.js";
import { buildTools, type Tools } from "../helpers/processes.js";
import { thrownBy } from "../helpers/errors.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { makeTempDir } from "../helpers/temp.js";
import { rawDb, serveChild } from "./helpers.js";

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
    return db
      .prepare("SELECT prompt FROM history ORDER BY id")
      .all<{ prompt: string }>()
      .map((row) => row.prompt);
  } finally {
    db.close();
  }
}

/** The bytes of a real history of its own (written by the store, then closed: no WAL) holding `prompt`. */
function backupHolding(prompt: string): Buffer {
  const backup = path.join(tmp.path, "backup", "history.db");
  const store = HistoryStorage.open(backup);
  void store.add(prompt, "/work/repo");
  store.close();
  return fs.readFileSync(backup);
}

type Answer = { ok?: true; code?: string; fsCode?: string; message?: string };

describe("a history.db replaced while a store of another process has it open", () => {
  it("renamed aside and a backup restored: an open here refuses the WAL holding the other file's frames, until that store empties them into its own file", async () => {
    const restored = backupHolding("restored prompt from last week");
    fs.mkdirSync(agent, { mode: 0o700 });
    HistoryStorage.open(dbPath).close();
    const writer = await serveChild(["serve", agent]);
    expect(await writer.request<Answer>({ add: ["explain the line index tiling", "profile the resume path"] })).toEqual({ ok: true });
    expect(fs.statSync(`${dbPath}-wal`).size).toBeGreaterThan(0);
    const aside = `${dbPath}.aside`;
    fs.renameSync(dbPath, aside);
    fs.writeFileSync(dbPath, restored, { mode: 0o600 });

    const error = thrownBy(() => HistoryStorage.open(dbPath));
    expect(error).toBeInstanceOf(HistoryError);
    expect(error).toMatchObject({ code: "history_insecure", fsCode: "identity_mismatch" });
    expect((error as HistoryError).message).toContain("history.db-wal holds changes written to another database file");
    expect(fs.readFileSync(dbPath).equals(restored)).toBe(true);

    // The other store's next write finds its file gone from the name, and empties its frames into that file.
    expect(await writer.request<Answer>({ add: ["a prompt typed after the restore"] })).toMatchObject({
      code: "history_insecure",
      fsCode: "identity_mismatch",
    });
    expect((await writer.stop()).code).toBe(0);
    expect(fs.readFileSync(dbPath).equals(restored)).toBe(true);
    expect(prompts(aside)).toEqual(["explain the line index tiling", "profile the resume path"]);
    const reopened = HistoryStorage.open(dbPath);
    expect(reopened.getRecent(10).map((e) => e.prompt)).toEqual(["restored prompt from last week"]);
  });

  it("another process opens the restored file and writes: the store whose file was moved leaves that WAL's frames alone", async () => {
    const restored = backupHolding("restored prompt from last week");
    const moved = HistoryStorage.open(dbPath);
    await moved.add("a prompt of the old file");
    await moved.add("a doomed prompt");
    const [doomed] = moved.search("doomed", 1);
    // A deletion empties the WAL, so the restored file opens elsewhere while this store is still open.
    expect(moved.delete(doomed!.id)).toBe(true);
    const aside = `${dbPath}.aside`;
    fs.renameSync(dbPath, aside);
    fs.writeFileSync(dbPath, restored, { mode: 0o600 });

    const other = await serveChild(["serve", agent]);
    expect(await other.request<Answer>({ add: ["written by the other process to the restored file"] })).toEqual({ ok: true });
    const error = thrownBy(() => moved.clear());
    expect(error).toMatchObject({ code: "history_insecure", fsCode: "identity_mismatch" });
    expect(moved.closed).toBe(true);
    expect(await other.request<Answer>({ add: ["and a second one"] })).toEqual({ ok: true });
    expect((await other.stop()).last).toEqual({ closed: true });

    expect(prompts(dbPath)).toEqual(["restored prompt from last week", "written by the other process to the restored file", "and a second one"]);
    expect(prompts(aside)).toEqual(["a prompt of the old file"]);
  });

  it("a write here meeting another file's frames in the WAL (a writer on a file renamed aside) is refused, and this connection never checkpoints them", async () => {
    const restored = backupHolding("restored prompt from last week");
    const store = HistoryStorage.open(dbPath);
    await store.add("a prompt of the old file");
    store.close();
    // What the store stamps into page 1 of the file it writes (application_id, offset 68 of the header).
    const oldStamp = fs.readFileSync(dbPath).readInt32BE(68);
    expect(oldStamp).not.toBe(0);
    const peer = await serveChild(["peer", dbPath]);
    const aside = `${dbPath}.aside`;
    fs.renameSync(dbPath, aside);
    fs.writeFileSync(dbPath, restored, { mode: 0o600 });

    const restoredStore = HistoryStorage.open(dbPath);
    // The writer on the old file commits (and exits, leaving its WAL) after this store looked at the WAL, as a race would.
    expect(await peer.request<Answer>({ stamp: oldStamp, prompt: "a row of the old file" })).toEqual({ ok: true });
    expect((await peer.stop()).code).toBe(0);
    const pending = restoredStore.add("a prompt for the restored file");
    const error = thrownBy(() => restoredStore.flush());
    expect(error).toMatchObject({ code: "history_insecure", fsCode: "identity_mismatch" });
    await expect(pending).rejects.toMatchObject({ code: "history_insecure" });
    expect(restoredStore.closed).toBe(true);

    // The WAL stays with the frames of the file renamed aside; the restored file is untouched, and opens refuse that WAL.
    expect(fs.readFileSync(dbPath).equals(restored)).toBe(true);
    expect(thrownBy(() => HistoryStorage.open(dbPath))).toMatchObject({ code: "history_insecure", fsCode: "identity_mismatch" });
  });
});

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

  it.skipIf(process.platform !== "linux")(
    "a link exchanged with history.db while stores open and write is history_insecure, never history_readonly",
    async () => {
      fs.mkdirSync(agent, { mode: 0o700 });
      HistoryStorage.open(dbPath).close();
      const outside = path.join(tmp.path, "outside.db");
      fs.copyFileSync(dbPath, outside);
      fs.chmodSync(outside, 0o600);
      fs.symlinkSync(outside, path.join(agent, "link"));
      const codes = new Map<string, number>();
      await raceUntilProven(
        {
          attacker: [tools.swapRace, agent, "history.db", "link"],
          minMs: RACE_MS,
          missing: () => (codes.size === 0 ? "an open or write the swap made fail" : undefined),
        },
        async (i) => {
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
        },
      );
      for (const key of codes.keys()) expect(key).toMatch(/^history_insecure\//);
      expect(prompts(outside)).toEqual([]);
    },
    RACE_TIMEOUT_MS,
  );
});
