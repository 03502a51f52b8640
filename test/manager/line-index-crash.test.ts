/**
 * SIGKILL at random points of appends, index batch writes and index rebuilds (real processes):
 * after every kill each flushed entry loads, and the indexed load equals a full parse of the
 * file. The default run is short; GJC_INDEX_CRASH_KILLS sets the number of kills (for
 * example 500).
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { makeTempDir } from "../helpers/temp.js";
import { runUntilRandomKill, type BundledChild } from "../storage/child-bundle.js";
import { bundleManagerChild } from "./child.js";
import { fullParse, openReadOnly, snapshot } from "./line-index-helpers.js";

const KILLS = Number(process.env.GJC_INDEX_CRASH_KILLS ?? 12);
const SLOTS = 2;
const MAX_KILL_DELAY_MS = 60;
/** Entries written before the first run, so that a rebuild takes long enough to be killed in. */
const SEED_ENTRIES = 2_000;
/** Runs on one file before it starts over. */
const FRESH_EVERY = 40;

let child: BundledChild;
let tmp: { path: string; remove(): void };
beforeAll(async () => {
  child = await bundleManagerChild("index-crash");
  tmp = makeTempDir("gjc-index-crash-");
});
afterAll(() => {
  child?.remove();
  tmp?.remove();
});

function seed(file: string): void {
  const lines = [JSON.stringify({ type: "session", version: 5, id: "crash", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/c" })];
  let parentId: string | null = null;
  for (let i = 0; i < SEED_ENTRIES; i++) {
    const id = `s${i}`;
    lines.push(
      JSON.stringify({
        type: "message",
        id,
        parentId,
        timestamp: "t",
        message: { role: i % 2 ? "assistant" : "user", provider: "p", model: "m", content: [{ type: "text", text: "seed ".repeat(40) }], timestamp: i },
      }),
    );
    parentId = id;
  }
  fs.writeFileSync(file, lines.join("\n") + "\n", { mode: 0o600 });
}

async function slot(file: string, kills: number): Promise<void> {
  seed(file);
  let acked = -1;
  let next = 0;
  for (let run = 0; run < kills; run++) {
    // A fresh file now and then keeps the check after each kill (two full loads) bounded in a long run.
    if (run > 0 && run % FRESH_EVERY === 0) {
      seed(file);
      acked = -1;
      next = 0;
    }
    const mode = run % 3 === 2 ? "rebuild" : "append";
    const damage = String(Math.floor(Math.random() * 4) === 0 ? 0 : Math.floor(Math.random() * 400_000));
    let last: number | undefined;
    await runUntilRandomKill(child, [mode, file, String(next), damage], MAX_KILL_DELAY_MS, (line) => (last = Number(line)));
    if (last !== undefined) acked = last;
    // The tree of a chain thousands deep is too deep for a recursive comparison: everything else is compared.
    const { tree: _tree, ...indexed } = snapshot(await openReadOnly(file));
    const { tree: _fullTree, ...full } = await fullParse(file);
    expect(indexed).toEqual(full);
    const values = (indexed.entries as { type: string; message?: { role?: string; n?: number } }[])
      .filter((entry) => entry.type === "message" && entry.message?.role === "user" && entry.message.n !== undefined)
      .map((entry) => entry.message!.n!);
    expect(values).toEqual(values.map((_, i) => i));
    expect(values.length - 1).toBeGreaterThanOrEqual(acked);
    next = values.length;
  }
}

describe("SIGKILL during appends, index writes and rebuilds", () => {
  it(`loses no flushed entry and loads what a full parse loads, across ${KILLS} kills`, async () => {
    const files = Array.from({ length: SLOTS }, (_, i) => path.join(tmp.path, `crash-${i}.jsonl`));
    await Promise.all(files.map((file) => slot(file, Math.ceil(KILLS / SLOTS))));
  }, 1_800_000);
});
