/**
 * The indexed resume gives exactly what a full parse gives: for random session files with
 * branches, compactions, labels, patches, duplicate ids, foreign key orders, blank and invalid
 * lines of every kind, opened when the index is missing (read-only opens then write nothing),
 * written by a writer, grown by an external append, and kept up by the manager's own appends.
 * A sidecar whose rows lie (every field of a row, a flipped flag, dropped, swapped and zeroed rows,
 * truncation, rows of an older state or another file, with the transcript's identity) is either caught by the
 * open, which then reads every line and says so, or by the first read of a line it misdescribes,
 * as a typed error: never a different history, and a rewrite never loses a line.
 *
 * GJC_LINE_INDEX_RUNS sets the number of random sessions (default 40).
 */
import fs from "node:fs";
import path from "node:path";

import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { isUnknownEntry, SessionManagerError } from "../../src/index.js";
import zlib from "node:zlib";

import { encodeLineIndex } from "../../src/manager/line-index.js";
import { F_CONT, LineTable, ROW_WORDS, scanLines } from "../../src/session/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, user } from "./helpers.js";
import { decodeLineIndex, fullParse, lineSpecs, openReadOnly, openWritable, SessionWriter, sidecarOf, snapshot, storedLinks } from "./line-index-helpers.js";

const RUNS = Number(process.env.GJC_LINE_INDEX_RUNS ?? 40);

let tmp: { path: string; remove(): void };
beforeAll(() => {
  tmp = makeTempDir("gjc-line-index-");
});
afterAll(() => tmp?.remove());

let counter = 0;

/** The rows of a table as plain values: where each line is, then its five stored words. */
function rowsOf(table: LineTable): unknown[] {
  return Array.from({ length: table.size }, (_, row) => [
    table.lineOf(row),
    table.offset[row],
    ...table.words.subarray(row * ROW_WORDS, (row + 1) * ROW_WORDS),
  ]);
}

function scanned(bytes: Buffer): LineTable {
  const table = new LineTable();
  scanLines(bytes, { offset: 0, line: 1 }, table, true);
  return table;
}

/** Writes a session file of random lines and lets a writer open and close it, which writes its index. */
async function indexedSession(bom: boolean, specs: Parameters<SessionWriter["render"]>[0]): Promise<{ file: string; writer: SessionWriter }> {
  const file = path.join(tmp.path, `s${counter++}.jsonl`);
  const writer = new SessionWriter();
  fs.writeFileSync(file, Buffer.concat([writer.header(bom), writer.render(specs)]), { mode: 0o600 });
  await (await openWritable(file)).close();
  return { file, writer };
}

describe("line table scan", () => {
  it("gives rows that tile the file, which the index decodes as they were written", () => {
    fc.assert(
      fc.property(fc.boolean(), lineSpecs, (bom, specs) => {
        const writer = new SessionWriter();
        const bytes = Buffer.concat([writer.header(bom), writer.render(specs)]);
        const table = scanned(bytes);
        const decoded = decodeLineIndex(encodeLineIndex("1", "2", table, table.size))!;
        expect(decoded.complete).toBe(true);
        expect(rowsOf(decoded.table)).toEqual(rowsOf(table));
        // Every byte is some row's: each line starts right after the one before, holds the bytes its checksum names,
        // and ends at a line feed or the file's end; pieces of one cut line share it.
        let end = bom ? 3 : 0;
        for (let row = 0; row < table.size; row++) {
          const offset = table.offset[row]!;
          const length = table.length(row);
          if ((table.flags(row) & F_CONT) !== 0) expect(offset).toBe(table.offset[row - 1]);
          else expect(offset).toBe(end);
          expect(zlib.crc32(bytes.subarray(offset, offset + length)) | 0).toBe(table.crc(row));
          if (offset + length < bytes.length) expect(bytes[offset + length]).toBe(0x0a);
          end = offset + length + 1;
        }
        expect(Math.min(end, bytes.length)).toBe(bytes.length);
      }),
      { numRuns: RUNS * 5 },
    );
  });
});

describe("indexed resume", () => {
  it("equals a full parse on random sessions; only a writer writes the index", async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), lineSpecs, lineSpecs, fc.nat(5), async (bom, first, external, own) => {
        const file = path.join(tmp.path, `s${counter++}.jsonl`);
        const writer = new SessionWriter();
        fs.writeFileSync(file, Buffer.concat([writer.header(bom), writer.render(first)]), { mode: 0o600 });

        // Missing index: a read-only open reads the file and writes nothing.
        expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
        expect(fs.existsSync(sidecarOf(file))).toBe(false);

        // Grown by another writer: the rows cover a prefix, the rest is read.
        fs.appendFileSync(file, writer.render(external));
        expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));

        // Own appends (a file ending in a torn line is repaired by the writer first).
        const manager = await openWritable(file);
        for (let i = 0; i < own; i++) {
          if (i % 2 === 0) manager.appendMessage(user(`own ${i}`));
          else manager.appendMessage(assistant(`own ${i}`));
        }
        const leaf = manager.getLeafId();
        if (leaf !== null && own > 2) manager.appendLabelChange(leaf, "mine");
        // A branch from an entry the open read from the index, and one from an own append.
        const opened = manager.getEntries().filter((entry) => typeof entry.id === "string");
        if (opened.length > 1 && own > 0) {
          manager.branch(opened[Math.floor(opened.length / 2)]!.id as string);
          manager.appendMessage(user("branched"));
          manager.branch(opened[opened.length - 1]!.id as string);
          manager.appendMessage(assistant("branched again"));
        }
        await manager.close();
        const resumed = await openReadOnly(file);
        expect(snapshot(resumed)).toEqual(await fullParse(file));
        if (fs.existsSync(sidecarOf(file))) {
          // The parent rows the index holds for appended and caught-up rows are those a full hash resolves.
          const { stored, scanned } = storedLinks(file);
          expect(stored).toEqual(scanned);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("never believes rows that lie: the open falls back with a note, or a read of the line is a typed error", async () => {
    const outcomes = { used: 0, fellBack: 0, typed: 0 };
    // A row's words: length, parent row, checksum, id hash, kind | flags << 8.
    const FIELDS = { length: 0, parent: 1, crc: 2, idHash: 3, kind: 4 } as const;
    const mutation = fc.oneof(
      fc.record({
        kind: fc.constant("field" as const),
        row: fc.nat(),
        field: fc.constantFrom(...(Object.keys(FIELDS) as (keyof typeof FIELDS)[])),
        delta: fc.constantFrom(-2, -1, 1, 2, 7),
      }),
      fc.record({ kind: fc.constant("flag" as const), row: fc.nat(), bit: fc.nat(5) }),
      fc.record({ kind: fc.constant("drop" as const), row: fc.nat() }),
      fc.record({ kind: fc.constant("swap" as const), row: fc.nat() }),
      fc.record({ kind: fc.constant("zero" as const), row: fc.nat() }),
      fc.record({ kind: fc.constant("truncate" as const), rows: fc.nat() }),
      fc.record({ kind: fc.constant("older" as const) }),
      fc.record({ kind: fc.constant("foreign" as const) }),
    );
    await fc.assert(
      fc.asyncProperty(fc.boolean(), lineSpecs, lineSpecs, mutation, async (bom, first, more, change) => {
        const { file, writer } = await indexedSession(bom, first);
        if (!fs.existsSync(sidecarOf(file))) return;
        const older = fs.readFileSync(sidecarOf(file));
        fs.appendFileSync(file, writer.render(more));
        await (await openWritable(file)).close();
        const decoded = decodeLineIndex(fs.readFileSync(sidecarOf(file)))!;
        const { table } = decoded;
        const [dev, ino] = [decoded.dev, decoded.ino];
        const word = (row: number, k: number) => row * ROW_WORDS + k;
        let forged: Buffer;
        if (change.kind === "older") forged = Buffer.concat([encodeLineIndex(dev, ino, new LineTable(), 0), older.subarray(32)]);
        else if (change.kind === "foreign") {
          const other = await indexedSession(!bom, [...more, ...first]);
          if (!fs.existsSync(sidecarOf(other.file))) return;
          const foreign = decodeLineIndex(fs.readFileSync(sidecarOf(other.file)))!;
          forged = encodeLineIndex(dev, ino, foreign.table, foreign.table.size);
        } else if (change.kind === "truncate") forged = encodeLineIndex(dev, ino, table, change.rows % (table.size + 1));
        else if (table.size === 0) return;
        else {
          const row = change.row % table.size;
          const words = table.words;
          if (change.kind === "field") words[word(row, FIELDS[change.field])] = words[word(row, FIELDS[change.field])]! + change.delta;
          else if (change.kind === "flag") words[word(row, 4)] = words[word(row, 4)]! ^ (1 << (8 + change.bit));
          else if (change.kind === "zero") words.fill(0, word(row, 0), word(row + 1, 0));
          else if (change.kind === "swap" && row + 1 < table.size) {
            const next = words.slice(word(row + 1, 0), word(row + 2, 0));
            words.copyWithin(word(row + 1, 0), word(row, 0), word(row + 1, 0));
            words.set(next, word(row, 0));
          } else if (change.kind === "drop") {
            // Later rows move up one, and parent rows past the dropped one follow them.
            words.copyWithin(word(row, 0), word(row + 1, 0), word(table.size, 0));
            table.truncate(table.size - 1);
            for (let i = 0; i < table.size; i++) if (words[word(i, 1)]! > row) words[word(i, 1)] = words[word(i, 1)]! - 1;
          }
          forged = encodeLineIndex(dev, ino, table, table.size);
        }
        fs.writeFileSync(sidecarOf(file), forged);
        const truth = await fullParse(file);

        const reader = await openReadOnly(file);
        try {
          expect(snapshot(reader)).toEqual(truth);
          outcomes[reader.getLoadReport().lineIndex === "used" ? "used" : "fellBack"] += 1;
        } catch (error) {
          // A lie about a line the open did not read shows when the line is read: typed, never a different answer.
          if (!(error instanceof SessionManagerError) || error.code !== "session_changed") throw error;
          outcomes.typed += 1;
        }

        // A rewrite through a writer that opened the lying index writes back every line of the file.
        const before = fs.readFileSync(file);
        const rewriting = await openWritable(file);
        let rewritten = true;
        try {
          rewriting.appendMessage(user("after the forged index"));
          const target = rewriting
            .getEntries()
            .find(
              (entry) =>
                entry.type === "message" &&
                !isUnknownEntry(entry) &&
                typeof (entry as { message?: unknown }).message === "object" &&
                rewriting.getEntry(entry.id as string) === entry,
            );
          if (target !== undefined) rewriting.applyEntryMessageUpdates([{ ...target, message: user("rewritten") } as typeof target]);
          await rewriting.rewriteEntries();
        } catch (error) {
          if (!(error instanceof SessionManagerError) || (error.code !== "session_changed" && error.code !== "persistence_failed")) throw error;
          rewritten = false;
        }
        await rewriting.close().catch(() => {});
        const after = (await fullParse(file)) as { entries: { id?: unknown }[] };
        const ids = (truth as { entries: { id?: unknown }[] }).entries.map((entry) => entry.id);
        // Whatever happened, every record of the file before is still there.
        for (const id of ids) expect(after.entries.some((entry) => entry.id === id)).toBe(true);
        if (!rewritten) expect(fs.readFileSync(file).subarray(0, before.length).equals(before)).toBe(true);
      }),
      { numRuns: RUNS },
    );
    // The forgeries reached the open: most are caught there, and the check above ran on each.
    expect(outcomes.fellBack).toBeGreaterThan(RUNS / 10);
    expect(outcomes.used + outcomes.fellBack + outcomes.typed).toBeGreaterThan(RUNS / 3);
  });
});
