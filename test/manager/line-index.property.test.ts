/**
 * The indexed resume gives exactly what a full parse gives: for random session files with
 * branches, compactions, labels, patches, duplicate ids, foreign key orders and invalid lines
 * of every kind, opened when the index is missing (built by the byte scan), present, grown by
 * an external append (caught up), and kept up by the manager's own appends (chained and
 * branched), whose stored parent rows must be what hashing every id resolves.
 *
 * GJC_LINE_INDEX_RUNS sets the number of random sessions (default 40).
 */
import fs from "node:fs";
import path from "node:path";

import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { LineTable, scanLines } from "../../src/session/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, user } from "./helpers.js";
import { fullParse, lineSpecs, openReadOnly, openWritable, SessionWriter, sidecarOf, snapshot, storedLinks } from "./line-index-helpers.js";

const RUNS = Number(process.env.GJC_LINE_INDEX_RUNS ?? 40);

let tmp: { path: string; remove(): void };
beforeAll(() => {
  tmp = makeTempDir("gjc-line-index-");
});
afterAll(() => tmp?.remove());

let counter = 0;

/** The rows of `bytes` scanned fast or strictly (every line through the full loader's step), as plain values. */
function rows(bytes: Buffer, strict: boolean): unknown[] {
  const table = new LineTable();
  scanLines(bytes, { offset: 0, line: 1 }, table, true, strict);
  return Array.from({ length: table.size }, (_, row) => [
    table.line[row],
    table.offset[row],
    table.length[row],
    table.piece[row],
    table.typeAt(row),
    table.idAt(row),
    table.parentIdAt(row),
  ]);
}

describe("line table scan", () => {
  it("reads every line as the full loader's own step does", () => {
    fc.assert(
      fc.property(fc.boolean(), lineSpecs, (bom, specs) => {
        const writer = new SessionWriter();
        const bytes = Buffer.concat([writer.header(bom), writer.render(specs)]);
        expect(rows(bytes, false)).toEqual(rows(bytes, true));
      }),
      { numRuns: RUNS * 5 },
    );
  });
});

describe("indexed resume", () => {
  it("equals a full parse on random sessions, before and after external and own appends", async () => {
    await fc.assert(
      fc.asyncProperty(fc.boolean(), lineSpecs, lineSpecs, fc.nat(5), async (bom, first, external, own) => {
        const file = path.join(tmp.path, `s${counter++}.jsonl`);
        const writer = new SessionWriter();
        fs.writeFileSync(file, Buffer.concat([writer.header(bom), writer.render(first)]), { mode: 0o600 });

        // Missing index: built by the scan, then used.
        expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
        expect(fs.existsSync(sidecarOf(file))).toBe(true);
        expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));

        // Grown by another writer: caught up from the covered size.
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
        expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
        // The parent rows the index holds for appended and caught-up rows are those a full hash resolves.
        const { stored, hashed } = storedLinks(file);
        expect(stored).toEqual(hashed);
      }),
      { numRuns: RUNS },
    );
  });
});
