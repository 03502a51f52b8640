/**
 * The agent directory's path exchanged with a link to an outside directory in a tight
 * renameat2(RENAME_EXCHANGE) loop while this process opens the history, adds, searches and
 * closes: every failure is typed, nothing outside is created, changed or removed, and the
 * outside database (planted with its own prompt) is never read. GJC_RACE_MS sets how long
 * (default 2 s).
 */
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";

import { HistoryError, HistoryStorage } from "../../src/history/index.js";
import { buildTools, hasCommand, isRoot, type Tools } from "../helpers/processes.js";
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

/** Opens, adds, searches and closes until `ms` passed; tallies typed failures by code. */
async function workDuring(ms: number, dbPath: string): Promise<{ ok: number; planted: number; codes: Map<string, number> }> {
  const codes = new Map<string, number>();
  let ok = 0;
  let planted = 0;
  const deadline = Date.now() + ms;
  await new Promise((resolve) => setTimeout(resolve, 20));
  for (let i = 0; Date.now() < deadline; i++) {
    try {
      const store = HistoryStorage.open(dbPath);
      await store.add(`prompt ${i}`);
      planted += store.search("plantedoutside", 5).length + store.getRecent(50).filter((e) => e.prompt === "plantedoutside").length;
      HistoryStorage.resetInstance();
      ok += 1;
    } catch (error) {
      if (!(error instanceof HistoryError)) throw error;
      const key = `${error.code}/${error.fsCode ?? error.sqliteCode ?? "-"}`;
      codes.set(key, (codes.get(key) ?? 0) + 1);
      HistoryStorage.resetInstance();
    }
  }
  return { ok, planted, codes };
}

function expectContained(result: { ok: number; planted: number; codes: Map<string, number> }, before: string[]): void {
  expect(result.planted).toBe(0);
  expect(snapshot(outside)).toEqual(before);
  expect(result.ok).toBeGreaterThan(0);
  for (const key of result.codes.keys()) expect(key).toMatch(/^history_insecure\/(symlink_refused|not_directory|owner_mismatch|identity_mismatch|not_found)$/);
}

/** An agent dir whose parent another user owns is refused on every attempt, before any open below it. */
function expectRefusedChain(result: { ok: number; planted: number; codes: Map<string, number> }, before: string[]): void {
  expect(result.planted).toBe(0);
  expect(snapshot(outside)).toEqual(before);
  expect(result.ok).toBe(0);
  expect(result.codes.get("history_insecure/insecure_ancestor") ?? 0).toBeGreaterThan(0);
  for (const key of result.codes.keys()) expect(key).toMatch(/^history_insecure\/(insecure_ancestor|symlink_refused|not_directory)$/);
}

describe.skipIf(process.platform !== "linux")("history under a swap loop of the agent directory", () => {
  it("redirects nothing and fails only with typed codes", async () => {
    const before = snapshot(outside);
    const swapper = spawn(tools.swapRace, [parent, "agent", "link", String(RACE_MS)], { stdio: ["ignore", "pipe", "pipe"] });
    const exited = new Promise<number>((resolve) => swapper.on("exit", (code) => resolve(code ?? -1)));
    const result = await workDuring(RACE_MS, path.join(parent, "agent", "history.db"));
    expect(await exited).toBe(0);
    expectContained(result, before);
  }, RACE_MS + 30_000);

  it.skipIf(!isRoot() || !hasCommand("setpriv"))("from a parent owned by uid 65534, who runs the swap loop: the chain is refused and nothing reaches their tree", async () => {
    // The victim is root; the parent, the link and the outside tree belong to the attacker.
    fs.chmodSync(tmp.path, 0o755);
    for (const dir of [parent, outside]) fs.chownSync(dir, NOBODY, NOBODY);
    fs.chmodSync(parent, 0o755);
    fs.lchownSync(path.join(parent, "link"), NOBODY, NOBODY);
    fs.chownSync(path.join(outside, "history.db"), NOBODY, NOBODY);
    const before = snapshot(outside);
    const swapper = spawn("setpriv", [`--reuid=${NOBODY}`, `--regid=${NOBODY}`, "--clear-groups", tools.swapRace, parent, "agent", "link", String(RACE_MS)], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stderr = "";
    swapper.stderr.on("data", (d: Buffer) => (stderr += d.toString()));
    const exited = new Promise<number>((resolve) => swapper.on("exit", (code) => resolve(code ?? -1)));
    const result = await workDuring(RACE_MS, path.join(parent, "agent", "history.db"));
    expect(await exited, stderr).toBe(0);
    expectRefusedChain(result, before);
  }, RACE_MS + 30_000);
});
