/**
 * The agent directory's path exchanged with a link to an outside directory in a tight
 * renameat2(RENAME_EXCHANGE) loop while this process opens the history, adds, searches and
 * closes: every failure is typed, nothing outside is created, changed or removed, and the
 * outside database (planted with its own prompt) is never read. GJC_RACE_MS sets the least
 * time a race runs (default 2 s); it goes on until the attacker has done its minimum of swaps
 * and the outcomes asserted on were seen (test/helpers/swap-attack.ts).
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { HistoryError, HistoryStorage } from "../../src/history/index.js";
import { buildTools, hasCommand, isRoot, type Tools } from "../helpers/processes.js";
import { RACE_TIMEOUT_MS, raceUntilProven } from "../helpers/swap-attack.js";
import { makeTempDir } from "../helpers/temp.js";
import { rawDb } from "./helpers.js";

const RACE_MS = Number(process.env.GJC_RACE_MS ?? 2_000);
const NOBODY = 65534;

let tools: Tools;
let tmp: ReturnType<typeof makeTempDir>;
let parent: string;
let outside: string;

beforeAll(() => {
  tools = buildTools();
});
beforeEach(() => {
  tmp = makeTempDir("gjc-history-race-");
  parent = path.join(tmp.path, "parent");
  fs.mkdirSync(path.join(parent, "agent"), { recursive: true, mode: 0o700 });
  outside = path.join(tmp.path, "outside");
  fs.mkdirSync(outside, { mode: 0o700 });
  const planted = rawDb(path.join(outside, "history.db"), { create: true });
  planted.exec(
    "CREATE TABLE history(id INTEGER PRIMARY KEY AUTOINCREMENT, prompt TEXT NOT NULL, created_at INTEGER NOT NULL, cwd TEXT);" +
      "INSERT INTO history(prompt, created_at) VALUES ('plantedoutside', 1)",
  );
  planted.close();
  fs.chmodSync(path.join(outside, "history.db"), 0o600);
  fs.symlinkSync(outside, path.join(parent, "link"));
});
afterEach(() => {
  HistoryStorage.resetInstance();
  tmp.remove();
});

function snapshot(dir: string): string[] {
  return fs
    .readdirSync(dir)
    .sort()
    .map((name) => {
      const st = fs.lstatSync(path.join(dir, name));
      return `${name} ${st.ino} ${st.size} ${st.mtimeMs} ${st.mode}`;
    });
}

type Result = { ok: number; planted: number; codes: Map<string, number> };

/**
 * Opens, adds, searches and closes while `attacker` swaps, until the race is proven (`missing` says what it still
 * lacks); tallies typed failures by code.
 */
async function workDuring(attacker: readonly string[], dbPath: string, missing: (result: Result) => string | undefined): Promise<Result> {
  const result: Result = { ok: 0, planted: 0, codes: new Map() };
  await raceUntilProven({ attacker, minMs: RACE_MS, missing: () => missing(result) }, async (i) => {
    try {
      const store = HistoryStorage.open(dbPath);
      await store.add(`prompt ${i}`);
      result.planted += store.search("plantedoutside", 5).length + store.getRecent(50).filter((e) => e.prompt === "plantedoutside").length;
      HistoryStorage.resetInstance();
      result.ok += 1;
    } catch (error) {
      if (!(error instanceof HistoryError)) throw error;
      const key = `${error.code}/${error.fsCode ?? error.sqliteCode ?? "-"}`;
      result.codes.set(key, (result.codes.get(key) ?? 0) + 1);
      HistoryStorage.resetInstance();
    }
  });
  return result;
}

function expectContained(result: Result, before: string[]): void {
  expect(result.planted).toBe(0);
  expect(snapshot(outside)).toEqual(before);
  expect(result.ok).toBeGreaterThan(0);
  for (const key of result.codes.keys()) expect(key).toMatch(/^history_insecure\/(symlink_refused|not_directory|owner_mismatch|identity_mismatch|not_found)$/);
}

/** An agent dir whose parent another user owns is refused on every attempt, before any open below it. */
function expectRefusedChain(result: Result, before: string[]): void {
  expect(result.planted).toBe(0);
  expect(snapshot(outside)).toEqual(before);
  expect(result.ok).toBe(0);
  expect(result.codes.get("history_insecure/insecure_ancestor") ?? 0).toBeGreaterThan(0);
  for (const key of result.codes.keys()) expect(key).toMatch(/^history_insecure\/(insecure_ancestor|symlink_refused|not_directory)$/);
}

describe.skipIf(process.platform !== "linux")("history under a swap loop of the agent directory", () => {
  it(
    "redirects nothing and fails only with typed codes",
    async () => {
      const before = snapshot(outside);
      const result = await workDuring([tools.swapRace, parent, "agent", "link"], path.join(parent, "agent", "history.db"), (r) =>
        r.ok === 0 ? "an open that succeeded" : r.codes.size === 0 ? "an open the swap made fail" : undefined,
      );
      expectContained(result, before);
    },
    RACE_TIMEOUT_MS,
  );

  it.skipIf(!isRoot() || !hasCommand("setpriv"))(
    "from a parent owned by uid 65534, who runs the swap loop: the chain is refused and nothing reaches their tree",
    async () => {
      // The victim is root; the parent, the link and the outside tree belong to the attacker.
      fs.chmodSync(tmp.path, 0o755);
      for (const dir of [parent, outside]) fs.chownSync(dir, NOBODY, NOBODY);
      fs.chmodSync(parent, 0o755);
      fs.lchownSync(path.join(parent, "link"), NOBODY, NOBODY);
      fs.chownSync(path.join(outside, "history.db"), NOBODY, NOBODY);
      const before = snapshot(outside);
      const attacker = ["setpriv", `--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", tools.swapRace, parent, "agent", "link"];
      const result = await workDuring(attacker, path.join(parent, "agent", "history.db"), (r) =>
        r.codes.has("history_insecure/insecure_ancestor") ? undefined : "a refusal naming the insecure ancestor",
      );
      expectRefusedChain(result, before);
    },
    RACE_TIMEOUT_MS,
  );
});
