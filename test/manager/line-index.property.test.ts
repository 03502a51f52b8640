/**
 * The indexed resume gives exactly what a full parse gives: for random session files with
 * branches, compactions, labels, patches, duplicate ids, foreign key orders, blank and invalid
 * lines of every kind, opened when the index is missing (read-only opens then write nothing),
 * written by a writer, grown by an external append, and kept up by the manager's own appends.
 * A sidecar whose rows lie (every field of a row, dropped and spliced rows, truncation, rows of
 * an older state or another file, all with their checksums recomputed) is either caught by the
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
import { encodeLineIndex } from "../../src/manager/line-index.js";
import { LineTable, scanLines } from "../../src/session/index.js";
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

/** The rows of a table as plain values. */
function rowsOf(table: LineTable): unknown[] {
  return Array.from({ length: table.size }, (_, row) => [
    table.line[row],
    table.offset[row],
    table.length[row],
    table.piece[row],
    table.crc[row],
    table.typeAt(row),
    table.idAt(row),
    table.parentIdAt(row),
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
        // The bytes between rows are the blank lines the gaps count (and line 1's byte order mark).
        for (const gap of decoded.gaps) {
          const text = bytes.subarray(gap.from === 0 && bom ? 3 : gap.from, gap.to).toString("latin1");
          expect(text.split("\n").length - 1).toBe(gap.lines);
          expect(/^[ \t\r\0\n]*$/.test(text)).toBe(true);
        }
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
          const { stored, hashed } = storedLinks(file);
          expect(stored).toEqual(hashed);
        }
      }),
      { numRuns: RUNS },
    );
  });

  it("never believes rows that lie: the open falls back with a note, or a read of the line is a typed error", async () => {
    const FIELDS = ["line", "offset", "length", "piece", "crc", "typeCode", "idLength", "parentLength", "parentRow", "repeats"] as const;
    const mutation = fc.oneof(
      fc.record({ kind: fc.constant("field" as const), row: fc.nat(), field: fc.constantFrom(...FIELDS), delta: fc.constantFrom(-2, -1, 1, 2, 7) }),
      fc.record({ kind: fc.constant("drop" as const), row: fc.nat() }),
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
        let forged: Buffer;
        if (change.kind === "older") forged = Buffer.concat([Buffer.from(`${older.toString("latin1").split("\n")[0]!.replace(/\t.*$/, "")}\t${dev}\t${ino}\n`), older.subarray(older.indexOf(0x0a) + 1)]);
        else if (change.kind === "foreign") {
          const other = await indexedSession(!bom, [...more, ...first]);
          const foreign = decodeLineIndex(fs.readFileSync(sidecarOf(other.file)))!;
          forged = encodeLineIndex(dev, ino, foreign.table, foreign.table.size);
        } else if (change.kind === "truncate") forged = encodeLineIndex(dev, ino, table, change.rows % (table.size + 1));
        else if (table.size === 0) return;
        else if (change.kind === "drop") {
          const row = change.row % table.size;
          const kept = new LineTable();
          for (let i = 0; i < table.size; i++) {
            if (i === row) continue;
            kept.push(table.line[i]!, table.offset[i]!, table.length[i]!, table.piece[i]!, table.crc[i]!, table.typeAt(i), table.idAt(i), table.parentIdAt(i));
            kept.parentRow[kept.size - 1] = table.parentRow[i]! > row ? table.parentRow[i]! - 1 : table.parentRow[i]!;
            kept.repeats[kept.size - 1] = table.repeats[i]!;
          }
          forged = encodeLineIndex(dev, ino, kept, kept.size);
        } else {
          const row = change.row % table.size;
          const column = table[change.field];
          column[row] = column[row]! + change.delta;
          if (change.field === "typeCode" && (column[row]! < -1 || column[row]! >= table.types.length)) column[row] = table.typeCodeOf("label");
          forged = encodeLineIndex(dev, ino, table, table.size);
        }
        fs.writeFileSync(sidecarOf(file), forged);
        const truth = await fullParse(file);

        const reader = await openReadOnly(file);
        try {
          expect(snapshot(reader)).toEqual(truth);
        } catch (error) {
          // A lie about a line the open did not read shows when the line is read: typed, never a different answer.
          if (!(error instanceof SessionManagerError) || error.code !== "session_changed") throw error;
        }

        // A rewrite through a writer that opened the lying index writes back every line of the file.
        const before = fs.readFileSync(file);
        const rewriting = await openWritable(file);
        let rewritten = true;
        try {
          rewriting.appendMessage(user("after the forged index"));
          const target = rewriting.getEntries().find((entry) => entry.type === "message" && !isUnknownEntry(entry) && typeof (entry as { message?: unknown }).message === "object" && rewriting.getEntry(entry.id as string) === entry);
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
  });
});
