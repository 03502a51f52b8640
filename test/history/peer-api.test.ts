/**
 * HistoryStorage in the peer's (GJC's) shape: one process-wide instance with its reset,
 * de-duplicated async opening, add returning a promise that settles with the save, the
 * peer's limit rule for getRecent and search, and entries with snake_case `created_at` and
 * an optional `cwd`.
 */
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { defaultHistoryDbPath, HistoryStorage, MAX_RESULT_LIMIT } from "../../src/history/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { historyError, rawDb } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let dbPath: string;
let otherPath: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-history-peer-");
  dbPath = path.join(tmp.path, "agent", "history.db");
  otherPath = path.join(tmp.path, "other", "history.db");
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

describe("the process-wide instance", () => {
  it("returns the same instance for the same path and refuses another path until reset", () => {
    const first = HistoryStorage.open(dbPath);
    expect(HistoryStorage.open(dbPath)).toBe(first);
    expect(HistoryStorage.open(path.join(tmp.path, "agent", ".", "history.db"))).toBe(first);
    expect(historyError(() => HistoryStorage.open(otherPath)).code).toBe("history_instance_conflict");
    HistoryStorage.resetInstance();
    expect(first.closed).toBe(true);
    const second = HistoryStorage.open(otherPath);
    expect(second).not.toBe(first);
    expect(second.path).toBe(otherPath);
    // Closing the instance also lets the next open start afresh.
    second.close();
    const third = HistoryStorage.open(dbPath);
    expect(third).not.toBe(first);
    HistoryStorage.resetInstance();
    HistoryStorage.resetInstance();
  });

  it("resetInstance writes what is queued before it closes", async () => {
    const store = HistoryStorage.open(dbPath);
    void store.add("queued");
    expect(store.pendingCount).toBe(1);
    HistoryStorage.resetInstance();
    const db = rawDb(dbPath);
    expect(db.prepare("SELECT prompt FROM history").all()).toEqual([{ prompt: "queued" }]);
    db.close();
  });

  it("opens <default agent dir>/history.db without a path", () => {
    const saved = process.env.GJC_CODING_AGENT_DIR;
    process.env.GJC_CODING_AGENT_DIR = path.join(tmp.path, "env-agent");
    try {
      expect(defaultHistoryDbPath()).toBe(path.join(tmp.path, "env-agent", "history.db"));
      expect(HistoryStorage.open().path).toBe(path.join(tmp.path, "env-agent", "history.db"));
    } finally {
      if (saved === undefined) delete process.env.GJC_CODING_AGENT_DIR;
      else process.env.GJC_CODING_AGENT_DIR = saved;
    }
  });

  it("openAsync shares one open between concurrent callers", async () => {
    const [a, b] = await Promise.all([HistoryStorage.openAsync(dbPath), HistoryStorage.openAsync(dbPath)]);
    expect(a).toBe(b);
    expect(await HistoryStorage.openAsync(dbPath)).toBe(a);
    HistoryStorage.resetInstance();
    const pending = HistoryStorage.openAsync(dbPath);
    await expect(HistoryStorage.openAsync(otherPath)).rejects.toMatchObject({ code: "history_instance_conflict" });
    expect((await pending).path).toBe(dbPath);
    await expect(HistoryStorage.openAsync("")).rejects.toMatchObject({ code: "history_invalid_argument" });
  });
});

describe("add, getRecent and search in the peer's shape", () => {
  it("add resolves once the prompt is committed, and at once for a skipped one", async () => {
    const store = HistoryStorage.open(dbPath);
    const db = rawDb(dbPath);
    await store.add("  committed when this resolves \n", "/w");
    expect(db.prepare("SELECT prompt, cwd FROM history").all()).toEqual([{ prompt: "committed when this resolves", cwd: "/w" }]);
    expect(store.pendingCount).toBe(0);
    await store.add("   ");
    await store.add("committed when this resolves", "/w");
    expect(db.prepare("SELECT count(*) AS n FROM history").get()).toEqual({ n: 1 });
    // Many adds in one tick are one batch, one transaction: all settle together.
    await Promise.all(Array.from({ length: 50 }, (_, i) => store.add(`batched ${i}`)));
    expect(db.prepare("SELECT count(*) AS n FROM history").get()).toEqual({ n: 51 });
    db.close();
  });

  it("returns entries with created_at in seconds and cwd only when one was given", async () => {
    const store = HistoryStorage.open(dbPath);
    const before = Math.floor(Date.now() / 1000);
    await store.add("no cwd");
    await store.add("with cwd", "/repo");
    const [withCwd, without] = store.getRecent(10);
    expect(withCwd).toEqual({ id: expect.any(Number), prompt: "with cwd", created_at: expect.any(Number), cwd: "/repo" });
    expect(without).toEqual({ id: expect.any(Number), prompt: "no cwd", created_at: expect.any(Number) });
    expect("cwd" in without!).toBe(false);
    expect(without!.created_at).toBeGreaterThanOrEqual(before);
    expect(without!.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
  });

  it("floors and clamps limit to 0..1000", async () => {
    const store = HistoryStorage.open(dbPath);
    for (let i = 0; i < 5; i++) void store.add(`prompt ${i}`);
    expect(store.getRecent(2.9).map((e) => e.prompt)).toEqual(["prompt 4", "prompt 3"]);
    expect(store.getRecent(0)).toEqual([]);
    expect(store.getRecent(-3)).toEqual([]);
    expect(store.getRecent(Number.POSITIVE_INFINITY)).toHaveLength(5);
    expect(store.search("prompt", 1.5).map((e) => e.prompt)).toEqual(["prompt 4"]);
    expect(store.search("prompt", -1)).toEqual([]);
    expect(store.search("prompt", 10 ** 9)).toHaveLength(5);
    expect(historyError(() => store.getRecent(Number.NaN)).code).toBe("history_invalid_argument");
  });

  it("caps at 1000 rows", () => {
    const store = HistoryStorage.open(dbPath);
    for (let i = 0; i < MAX_RESULT_LIMIT + 5; i++) void store.add(`row ${i}`);
    expect(store.getRecent(5000)).toHaveLength(MAX_RESULT_LIMIT);
    expect(store.search("row", 5000)).toHaveLength(MAX_RESULT_LIMIT);
  });

  it("search merges prefix matches, then substring matches, each row once, for one cwd", async () => {
    const store = HistoryStorage.open(dbPath);
    for (const [prompt, cwd] of [
      ["tokenizer rewrite", "/a"],
      ["retokenize the corpus", "/a"],
      ["tokenizer rewrite", "/b"],
      ["detokenizer and tokenizer", "/a"],
    ] as const) {
      await store.add(prompt, cwd);
    }
    // Prefix matches (newest first), then the substring-only one.
    expect(store.search("token", 10, "/a").map((e) => e.prompt)).toEqual(["detokenizer and tokenizer", "tokenizer rewrite", "retokenize the corpus"]);
    expect(store.search("token", 2, "/a").map((e) => e.prompt)).toEqual(["detokenizer and tokenizer", "tokenizer rewrite"]);
    expect(store.search("token", 10).map((e) => e.cwd)).toEqual(["/a", "/b", "/a", "/a"]);
  });
});
