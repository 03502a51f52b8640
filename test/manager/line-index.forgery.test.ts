/**
 * Sidecar rows edited the way a hand, a careless tool or a stale copy edits them (each word of a
 * row changed, flags flipped, parent rows moved, rows dropped or swapped), without recomputing
 * anything, over real-shaped sessions: every resume through the edited index must equal the full
 * parse of the file, or fall back with a note, or fail typed. None may differ silently.
 */
import fs from "node:fs";
import path from "node:path";

import { afterAll, beforeAll, expect, it } from "vitest";

import { MemorySessionStorage, SessionManagerError } from "../../src/index.js";
import { KIND_END, ROW_WORDS } from "../../src/session/index.js";
import { corpusShapes, writeCorpus } from "../helpers/session-corpus.js";
import { makeTempDir } from "../helpers/temp.js";
import { decodeLineIndex, openReadOnly, openWritable, sidecarOf } from "./line-index-helpers.js";

let tmp: { path: string; remove(): void };
beforeAll(() => {
  tmp = makeTempDir("gjc-line-index-forgery-");
});
afterAll(() => tmp?.remove());

const HEAD = 32;

/** What a resume gives: the context and the leaf. */
async function resumed(file: string, storage?: MemorySessionStorage): Promise<{ answer: string; note: string | undefined }> {
  const manager = await openReadOnly(file, storage);
  return { answer: JSON.stringify([manager.buildSessionContext(), manager.getLeafId()]), note: manager.getLoadReport().lineIndex };
}

/** The edits of row `row` (of `rows`): each a function of the row words. */
function editsOf(row: number, rows: number): [string, (words: Int32Array) => Int32Array][] {
  const at = row * ROW_WORDS;
  const edits: [string, (words: Int32Array) => Int32Array][] = [];
  for (let kind = 4; kind < KIND_END; kind++) edits.push(["kind", (w) => ((w[at + 4] = (w[at + 4]! & ~0xff) | kind), w)]);
  for (let bit = 0; bit < 6; bit++) edits.push(["flag", (w) => ((w[at + 4] = w[at + 4]! ^ (1 << (8 + bit))), w)]);
  for (const parent of new Set([0, 1, row - 2, row >> 1])) if (parent >= 0 && parent < row) edits.push(["parent", (w) => ((w[at + 1] = parent), w)]);
  edits.push(["length", (w) => ((w[at] = w[at]! + 1), w)]);
  edits.push(["crc", (w) => ((w[at + 2] = w[at + 2]! ^ 1), w)]);
  edits.push(["id hash", (w) => ((w[at + 3] = w[at + 3]! ^ 1), w)]);
  edits.push(["drop", (w) => Int32Array.from([...w.subarray(0, at), ...w.subarray(at + ROW_WORDS)])]);
  if (row + 1 < rows) edits.push(["swap", (w) => (w.set([...w.subarray(at + ROW_WORDS, at + 2 * ROW_WORDS), ...w.subarray(at, at + ROW_WORDS)], at), w)]);
  return edits;
}

it("believes no edited row: every resume equals the full parse, falls back with a note, or fails typed", async () => {
  const shapes = corpusShapes("/w").filter((shape) => (shape.version ?? 5) === 5 && (shape.entries ?? 60) <= 600);
  const outcomes = { used: 0, fellBack: 0, typed: 0, silent: [] as string[] };
  for (const session of writeCorpus(tmp.path, shapes)) {
    await (await openWritable(session.path)).close();
    const pristine = fs.readFileSync(sidecarOf(session.path));
    const rows = decodeLineIndex(pristine)!.table.size;
    const memory = new MemorySessionStorage({ root: path.dirname(session.path) });
    memory.writeTextSync(session.path, fs.readFileSync(session.path));
    const truth = (await resumed(session.path, memory)).answer;
    for (let row = 1; row < rows; row += Math.max(1, Math.floor(rows / 25))) {
      for (const [name, edit] of editsOf(row, rows)) {
        const words = edit(new Int32Array(pristine.buffer.slice(pristine.byteOffset + HEAD, pristine.byteOffset + HEAD + rows * ROW_WORDS * 4)));
        fs.writeFileSync(sidecarOf(session.path), Buffer.concat([pristine.subarray(0, HEAD), Buffer.from(words.buffer, words.byteOffset, words.byteLength)]), {
          mode: 0o600,
        });
        try {
          const { answer, note } = await resumed(session.path);
          if (answer !== truth) outcomes.silent.push(`${session.name} row ${row}: ${name} (${note})`);
          else outcomes[note === "used" ? "used" : "fellBack"] += 1;
        } catch (error) {
          if (!(error instanceof SessionManagerError) || error.code !== "session_changed") throw error;
          outcomes.typed += 1;
        }
      }
    }
  }
  expect(outcomes.silent).toEqual([]);
  // The edits reached the open: most refused by their check words, the few that change nothing (a kind set to its own) used.
  expect(outcomes.fellBack).toBeGreaterThan(500);
}, 600_000);
