/**
 * A history database written through one SQLite driver opens unchanged through every other:
 * real child processes, one per (runtime, driver), write a known history and read the one
 * another wrote. This process's runtime is always tried; more come from GJC_INTEROP_RUNTIMES
 * (executables separated by ":", e.g. a Node 24 and a Bun), each with every driver forced in
 * turn through GJC_SQLITE_DRIVER. Skipped when fewer than two drivers load. Also: a forced
 * driver that does not load is refused typed before anything is created.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { HISTORY_SCHEMA_VERSION } from "../../src/history/index.js";
import { SQLITE_DRIVER_NAMES } from "../../src/history/sqlite-driver.js";
import { makeTempDir } from "../helpers/temp.js";
import { childJson, runChild } from "./helpers.js";

const RUNTIMES_ENV = "GJC_INTEROP_RUNTIMES";
const runtimes = [process.execPath, ...(process.env[RUNTIMES_ENV] ?? "").split(path.delimiter).filter((entry) => entry !== "")];

/** One driver as some runtime loads it, and a history it wrote (never written to again). */
interface Writer {
  readonly runtime: string;
  readonly driver: string;
  readonly agent: string;
}

interface Seen {
  readonly driver: string;
  readonly recent: ReadonlyArray<{ prompt: string; cwd?: string }>;
  readonly prefix: string[];
  readonly infix: string[];
  readonly unicode: string[];
  readonly doomed: number;
  readonly integrity: string;
  readonly version: number;
}

let tmp: ReturnType<typeof makeTempDir>;
const writers = new Map<string, Writer>();

beforeAll(async () => {
  tmp = makeTempDir("gjc-history-interop-");
  let n = 0;
  for (const runtime of runtimes) {
    for (const driver of SQLITE_DRIVER_NAMES) {
      if (writers.has(driver)) continue;
      const agent = path.join(tmp.path, `written-${n++}`);
      const result = childJson<{ driver?: string; unavailable?: string }>(
        await runChild(["interop-write", agent], { runtime, env: { GJC_SQLITE_DRIVER: driver } }),
      );
      if (result.unavailable !== undefined) continue;
      expect(result.driver).toBe(driver);
      writers.set(driver, { runtime, driver, agent });
    }
  }
});
afterAll(() => tmp.remove());

describe("a history written by one SQLite driver", () => {
  it("opens unchanged through every other driver, which can search it, check it and write to it", async (ctx) => {
    if (writers.size < 2) ctx.skip(`only ${[...writers.keys()].join(", ")} loads here; set ${RUNTIMES_ENV} to add runtimes`);
    let pairs = 0;
    for (const from of writers.values()) {
      for (const to of writers.values()) {
        if (from === to) continue;
        const agent = path.join(tmp.path, `read-${pairs++}`);
        fs.cpSync(from.agent, agent, { recursive: true });
        const seen = childJson<Seen | { code: string; message: string }>(
          await runChild(["interop-check", agent], { runtime: to.runtime, env: { GJC_SQLITE_DRIVER: to.driver } }),
        );
        const pair = `written by ${from.driver}, read by ${to.driver}`;
        // A refusal is reported whole (its code and message), not as a view that lacks fields.
        if ("code" in seen) expect.fail(`${pair}: the reader was refused: ${seen.code}: ${seen.message}`);
        expect({ ...seen, recent: seen.recent.map((e) => [e.prompt, e.cwd ?? null]) }, pair).toEqual({
          driver: to.driver,
          recent: [
            ["Ünïcode prompt with 日本語テキスト", null],
            ["write the tokenizer tests", "/w/b"],
            ["refactor the parser module", "/w/a"],
          ],
          prefix: ["refactor the parser module"],
          infix: ["write the tokenizer tests"],
          unicode: ["Ünïcode prompt with 日本語テキスト"],
          doomed: 0,
          integrity: "ok",
          version: HISTORY_SCHEMA_VERSION,
        });
      }
    }
    expect(pairs).toBe(writers.size * (writers.size - 1));
  });
});

describe("a driver that cannot serve", () => {
  it("forced but absent, or unknown, is history_sqlite_unavailable and creates nothing", async () => {
    const absent = process.versions.bun === undefined ? "bun:sqlite" : "better-sqlite3";
    for (const forced of [absent, "sqlite3"]) {
      const agent = path.join(tmp.path, `refused-${forced.replace(/\W/g, "-")}`);
      fs.mkdirSync(agent, { mode: 0o700 });
      const result = childJson<{ code?: string }>(await runChild(["open", agent], { env: { GJC_SQLITE_DRIVER: forced } }));
      expect(result.code, forced).toBe("history_sqlite_unavailable");
      expect(fs.readdirSync(agent), forced).toEqual([]);
    }
  });
});
