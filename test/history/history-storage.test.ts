import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { HistoryStorage, MAX_QUERY_LENGTH, MAX_RESULT_LIMIT } from "../../src/history/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { historyCode, rawDb } from "./helpers.js";

let tmp: ReturnType<typeof makeTempDir>;
let agent: string;
let dbPath: string;
let store: HistoryStorage;

beforeEach(() => {
  tmp = makeTempDir("gjc-history-");
  agent = path.join(tmp.path, "agent");
  dbPath = path.join(agent, "history.db");
  store = HistoryStorage.open(dbPath);
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

const prompts = (entries: ReadonlyArray<{ prompt: string }>): string[] => entries.map((e) => e.prompt);

describe("add", () => {
  it("queues without writing, then saves on setImmediate", async () => {
    store.add("refactor the parser");
    expect(store.pendingCount).toBe(1);
    const db = rawDb(store.path);
    expect(db.prepare("SELECT count(*) AS n FROM history").get()).toEqual({ n: 0 });
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setImmediate(resolve));
    expect(store.pendingCount).toBe(0);
    expect(db.prepare("SELECT prompt, cwd FROM history").all()).toEqual([{ prompt: "refactor the parser", cwd: null }]);
    db.close();
  });

  it("trims, ignores empty prompts, and skips consecutive duplicates only", () => {
    store.add("  fix the build \n");
    store.add("   ");
    store.add("");
    store.add("fix the build");
    store.add("fix the build", "/work/a");
    store.add("run the tests", "/work/a");
    store.add("fix the build");
    store.flush();
    store.add("fix the build");
    expect(prompts(store.getRecent(100))).toEqual(["fix the build", "run the tests", "fix the build", "fix the build"]);
    expect(store.getRecent(100).map((e) => e.cwd)).toEqual([undefined, "/work/a", "/work/a", undefined]);
  });

  it("checks dedup against the newest stored row, also across reopen", () => {
    store.add("same again");
    store.close();
    store = HistoryStorage.open(dbPath);
    store.add("same again");
    expect(store.getRecent(100)).toHaveLength(1);
  });

  it("stores created_at in whole seconds and keeps everything across close and reopen", () => {
    const before = Math.floor(Date.now() / 1000);
    store.add("one");
    store.add("two", "/p");
    store.close();
    store = HistoryStorage.open(dbPath);
    const [two, one] = store.getRecent(100);
    expect(two).toMatchObject({ prompt: "two", cwd: "/p" });
    expect(one?.prompt).toBe("one");
    expect(one!.created_at).toBeGreaterThanOrEqual(before);
    expect(one!.created_at).toBeLessThanOrEqual(Math.floor(Date.now() / 1000));
    expect(two!.id).toBeGreaterThan(one!.id);
  });

  it("refuses bad arguments with typed codes", () => {
    expect(historyCode(() => store.add(42 as unknown as string))).toBe("history_invalid_argument");
    expect(historyCode(() => store.add("x", ""))).toBe("history_invalid_argument");
    expect(historyCode(() => store.add("x", "/a\0b"))).toBe("history_invalid_argument");
    expect(historyCode(() => store.add("x", 7 as unknown as string))).toBe("history_invalid_argument");
    expect(historyCode(() => HistoryStorage.open(""))).toBe("history_invalid_argument");
    // Options are read when the instance is created, so only after a reset.
    HistoryStorage.resetInstance();
    expect(historyCode(() => HistoryStorage.open(dbPath, { busyTimeoutMs: -1 }))).toBe("history_invalid_argument");
    expect(store.pendingCount).toBe(0);
  });

  it("refuses prompts over maxPromptLength and a backlog over maxPending", () => {
    store.close();
    store = HistoryStorage.open(dbPath, { maxPromptLength: 10, maxPending: 2 });
    expect(historyCode(() => store.add("x".repeat(11)))).toBe("history_prompt_too_large");
    store.add("x".repeat(10));
    store.add("second");
    expect(historyCode(() => store.add("third"))).toBe("history_backlog_full");
    store.flush();
    store.add("third");
    expect(prompts(store.getRecent(100))).toEqual(["third", "second", "x".repeat(10)]);
  });

  it("throws history_closed after close, and close is idempotent", () => {
    store.add("kept");
    store.close();
    store.close();
    expect(historyCode(() => store.add("late"))).toBe("history_closed");
    expect(historyCode(() => store.search("kept", 100))).toBe("history_closed");
    expect(historyCode(() => store.flush())).toBe("history_closed");
    const again = HistoryStorage.open(dbPath);
    expect(prompts(again.getRecent(100))).toEqual(["kept"]);
    again.close();
  });
});

describe("search", () => {
  beforeEach(() => {
    for (const [prompt, cwd] of [
      ["deploy the staging server", "/srv"],
      ["write unit tests for the tokenizer", "/lib"],
      ["deployment checklist review", "/srv"],
      ["explain the tokenization bug", "/lib"],
      ["redeploy after the hotfix", "/srv"],
    ] as const) {
      store.add(prompt, cwd);
    }
  });

  it("matches tokens as prefixes, newest first", () => {
    expect(prompts(store.search("deploy", 100))).toEqual([
      "deployment checklist review",
      "deploy the staging server",
      // Substring pass, after every prefix match:
      "redeploy after the hotfix",
    ]);
    expect(prompts(store.search("token", 100))).toEqual(["explain the tokenization bug", "write unit tests for the tokenizer"]);
  });

  it("ANDs the tokens, in any order and case", () => {
    expect(prompts(store.search("TESTS tok", 100))).toEqual(["write unit tests for the tokenizer"]);
    expect(prompts(store.search("serv deplo", 100))).toEqual(["deploy the staging server"]);
    expect(store.search("deploy tokenizer", 100)).toEqual([]);
  });

  it("falls back to substrings (infix) only after the prefix matches, short tokens included", () => {
    expect(prompts(store.search("ploy", 100))).toEqual(["redeploy after the hotfix", "deployment checklist review", "deploy the staging server"]);
    expect(prompts(store.search("kliS", 100))).toEqual(["deployment checklist review"]);
    // Two-letter tokens cannot use the trigram index and are checked on the rows instead.
    expect(prompts(store.search("ix ot", 100))).toEqual(["redeploy after the hotfix"]);
    expect(prompts(store.search("okeniz xpl", 100))).toEqual(["explain the tokenization bug"]);
  });

  it("honours limit, and fills it from the substring pass without duplicates", () => {
    expect(prompts(store.search("deploy", 1))).toEqual(["deployment checklist review"]);
    expect(prompts(store.search("deploy", 2))).toEqual(["deployment checklist review", "deploy the staging server"]);
    expect(store.search("e", MAX_RESULT_LIMIT * 5)).toHaveLength(5);
  });

  it("filters by cwd in both passes and in getRecent", () => {
    expect(prompts(store.search("deploy", 100, "/lib"))).toEqual([]);
    expect(prompts(store.search("ploy", 100, "/srv"))).toHaveLength(3);
    expect(prompts(store.search("t", 100, "/lib"))).toEqual(["explain the tokenization bug", "write unit tests for the tokenizer"]);
    expect(prompts(store.getRecent(2, "/srv"))).toEqual(["redeploy after the hotfix", "deployment checklist review"]);
    expect(store.getRecent(10, "/nowhere")).toEqual([]);
  });

  it("sees prompts that are still queued", () => {
    store.flush();
    store.add("brand new idea");
    expect(store.pendingCount).toBe(1);
    expect(prompts(store.search("brand", 100))).toEqual(["brand new idea"]);
    expect(store.pendingCount).toBe(0);
  });

  it("treats a query without letters or digits as matching nothing", () => {
    expect(store.search("", 100)).toEqual([]);
    expect(store.search('  *** () "" ', 100)).toEqual([]);
  });

  it("refuses bad queries and limits with typed codes", () => {
    expect(historyCode(() => store.search(5 as unknown as string, 100))).toBe("history_invalid_argument");
    expect(historyCode(() => store.search("x".repeat(MAX_QUERY_LENGTH + 1), 100))).toBe("history_invalid_argument");
    expect(historyCode(() => store.search(Array.from({ length: 40 }, (_, i) => `w${i}`).join(" "), 100))).toBe("history_invalid_argument");
    for (const limit of [Number.NaN, "3" as unknown as number, undefined as unknown as number]) {
      expect(historyCode(() => store.search("deploy", limit))).toBe("history_invalid_argument");
      expect(historyCode(() => store.getRecent(limit))).toBe("history_invalid_argument");
    }
    expect(historyCode(() => store.search("deploy", 100, ""))).toBe("history_invalid_argument");
    expect(historyCode(() => store.search("deploy", 100, 7 as unknown as string))).toBe("history_invalid_argument");
    expect(historyCode(() => store.clear(null as unknown as object))).toBe("history_invalid_argument");
    expect(historyCode(() => HistoryStorage.open(dbPath, null as unknown as object))).toBe("history_invalid_argument");
  });
});

describe("hostile and unusual text", () => {
  it("never lets FTS5 syntax in a query or prompt raise an error or act as an operator", () => {
    const nasty = [
      'say "hello" to NEAR(me you, 3)',
      "a OR b AND NOT c",
      "prompt:column filter ^start",
      "star* (paren) {brace} -minus +plus :colon",
      'unbalanced " quote',
      "'single' \\back\\slash% under_score",
    ];
    for (const prompt of nasty) store.add(prompt);
    expect(prompts(store.search("NEAR(me", 100))).toEqual(['say "hello" to NEAR(me you, 3)']);
    // "OR" is a word here, not an operator; "score" follows in the substring pass.
    expect(prompts(store.search("OR", 100))).toEqual(["a OR b AND NOT c", "'single' \\back\\slash% under_score"]);
    expect(prompts(store.search("NOT c", 100))).toEqual(["a OR b AND NOT c"]);
    expect(prompts(store.search("prompt:column", 100))).toEqual(["prompt:column filter ^start"]);
    expect(prompts(store.search("star* -minus", 100))).toEqual(["star* (paren) {brace} -minus +plus :colon"]);
    expect(prompts(store.search('" quote', 100))).toEqual(['unbalanced " quote']);
    expect(prompts(store.search("under_score %", 100))).toEqual(["'single' \\back\\slash% under_score"]);
    for (const query of ['"', '""', "*", "AND", "NEAR(", "^", "a:b", "(", "'"]) {
      expect(() => store.search(query, 100)).not.toThrow();
    }
  });

  it("replaces NUL and lone surrogates with U+FFFD so stored text equals what search returns", () => {
    store.add("before\0after");
    store.add("high \uD800 alone");
    store.add("low \uDC00 alone and a pair \uD83D\uDE00 kept");
    const recent = prompts(store.getRecent(100));
    expect(recent).toEqual(["low \uFFFD alone and a pair \uD83D\uDE00 kept", "high \uFFFD alone", "before\uFFFDafter"]);
    expect(prompts(store.search("after", 100))).toEqual(["before\uFFFDafter"]);
    expect(prompts(store.search("alone \uD800", 100))).toEqual(["low \uFFFD alone and a pair \uD83D\uDE00 kept", "high \uFFFD alone"]);
    expect(prompts(store.search("fter\0", 100))).toEqual(["before\uFFFDafter"]);
    // Dedup compares the stored form: the same bad input twice is one row.
    store.add("high \uD800 alone");
    store.add("high \uD800 alone");
    expect(store.getRecent(100)).toHaveLength(4);
    // On disk: valid UTF-8 without NUL (a raw lone surrogate would be stored as ED A0 80).
    const db = rawDb(store.path);
    // node:sqlite and bun:sqlite return a BLOB as a plain Uint8Array, better-sqlite3 as a Buffer.
    const stored = db
      .prepare("SELECT CAST(prompt AS BLOB) AS bytes FROM history")
      .all<{ bytes: Uint8Array }>()
      .map((r) => Buffer.from(r.bytes));
    db.close();
    expect(stored).toHaveLength(4);
    for (const bytes of stored) {
      expect(Buffer.from(bytes.toString("utf8"), "utf8").equals(bytes)).toBe(true);
      expect(bytes.includes(0)).toBe(false);
    }
  });

  it("stores and finds a 1 MB prompt", () => {
    const big = `${"lorem ipsum dolor sit amet ".repeat(38_000)}needleword`.slice(0, 1_000_000);
    const withTail = `${big.slice(0, 999_000)} uniquetail`;
    store.add(withTail);
    store.add("small");
    expect(prompts(store.search("uniquetail", 100))).toEqual([withTail]);
    expect(prompts(store.search("iquetai", 100))).toEqual([withTail]);
    expect(store.getRecent(100)[1]?.prompt.length).toBe(withTail.length);
  });

  it("folds case and diacritics for prefix terms and matches non-Latin scripts", () => {
    store.add("Élan vital résumé");
    store.add("東京 タワー 見学");
    store.add("Ünïcödé tëst");
    expect(prompts(store.search("elan", 100))).toEqual(["Élan vital résumé"]);
    expect(prompts(store.search("RESUM", 100))).toEqual(["Élan vital résumé"]);
    expect(prompts(store.search("東京", 100))).toEqual(["東京 タワー 見学"]);
    expect(prompts(store.search("unicode", 100))).toEqual(["Ünïcödé tëst"]);
  });
});

describe("delete and clear", () => {
  beforeEach(() => {
    store.add("alpha one", "/a");
    store.add("alpha two", "/b");
    store.add("beta three", "/a");
  });

  it("delete removes one prompt from the table and both indexes", () => {
    const [beta] = store.search("beta", 100);
    expect(store.delete(beta!.id)).toBe(true);
    expect(store.delete(beta!.id)).toBe(false);
    expect(store.search("beta", 100)).toEqual([]);
    expect(store.search("eta thr", 100)).toEqual([]);
    expect(prompts(store.search("alpha", 100))).toEqual(["alpha two", "alpha one"]);
    expect(historyCode(() => store.delete(0))).toBe("history_invalid_argument");
    expect(historyCode(() => store.delete(1.5))).toBe("history_invalid_argument");
  });

  it("leaves no copy of a deleted prompt's words in the database file", () => {
    const secret = "zqxsecretword";
    for (let i = 0; i < 50; i++) store.add(`ordinary prompt ${i} about nothing`);
    store.add(`my token is ${secret} keep it safe`);
    for (let i = 50; i < 100; i++) store.add(`ordinary prompt ${i} about nothing`);
    const [entry] = store.search(secret, 100);
    expect(store.delete(entry!.id)).toBe(true);
    store.close();
    const bytes = fs.readFileSync(path.join(agent, "history.db"));
    expect(bytes.includes(Buffer.from("ordinary prompt 99"))).toBe(true);
    expect(bytes.includes(Buffer.from(secret))).toBe(false);
    expect(bytes.includes(Buffer.from("keep it safe"))).toBe(false);
  });

  it("a deleted prompt may be added again right away", () => {
    const [beta] = store.search("beta", 100);
    store.delete(beta!.id);
    store.add("beta three", "/a");
    expect(prompts(store.search("beta", 100))).toEqual(["beta three"]);
  });

  it("clear by cwd removes only that cwd; clear without one removes everything", () => {
    expect(store.clear({ cwd: "/a" })).toBe(2);
    expect(prompts(store.getRecent(100))).toEqual(["alpha two"]);
    expect(store.search("beta", 100)).toEqual([]);
    store.add("gamma four");
    expect(store.clear()).toBe(2);
    expect(store.getRecent(100)).toEqual([]);
    expect(store.search("alpha", 100)).toEqual([]);
    store.add("after clear");
    expect(prompts(store.search("after", 100))).toEqual(["after clear"]);
  });
});
