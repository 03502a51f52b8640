import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { JsonlScanner, serializeRecord } from "../../src/session/jsonl.js";
import { loadSession, SessionLoader, serializeSessionLines } from "../../src/session/load.js";
import { migrateSession, type HeaderRecord } from "../../src/session/migrate.js";
import type { JsonRecord } from "../../src/session/salvage.js";
import { SESSION_ENTRY_TYPES } from "../../src/session/schemas.js";
import { asJson, header, loaded, parseJsonl, type JsonlItem } from "./format-helpers.js";

/** Strings that stress the line format: separators, quotes, braces, NUL, BOM, surrogates. */
const nastyText = fc.oneof(
  fc.string(),
  fc.string({ unit: "binary" }),
  fc
    .array(fc.constantFrom("\n", "\r\n", "\u2028", "\u2029", "\u0000", "{", "}", "}{", '"', "\\", "\uFEFF", "\ud800", "é", "x"), {
      maxLength: 12,
    })
    .map((parts) => parts.join("")),
);
const hexId = fc.string({ unit: fc.constantFrom(..."0123456789abcdef"), minLength: 8, maxLength: 8 });
const payload = fc.dictionary(fc.string({ maxLength: 8 }), fc.oneof(nastyText, fc.jsonValue({ maxDepth: 3 })), { maxKeys: 4 });
/** A tree entry of a known or an unknown type, with arbitrary extra fields. */
const entry = fc
  .record({
    type: fc.oneof(fc.constantFrom(...SESSION_ENTRY_TYPES), fc.string({ minLength: 1, maxLength: 12 })),
    id: hexId,
    parentId: fc.option(hexId, { nil: null }),
    timestamp: nastyText,
    extra: payload,
  })
  .filter(({ type }) => type !== "header_patch" && type !== "entry_patch" && type !== "session")
  .map(({ type, id, parentId, timestamp, extra }): JsonRecord => ({ ...extra, type, id, parentId, timestamp }));

describe("properties of the session format", () => {
  it("serialize -> parse round-trips any record sequence", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 12 }), (records) => {
        const text = records.map(serializeRecord).join("");
        for (const input of [text, Buffer.from(text, "utf8")]) {
          const { items, stats } = parseJsonl(input);
          expect(items.every((item) => item.kind === "record")).toBe(true);
          expect(items.map((item) => item.line)).toEqual(records.map((_, i) => i + 1));
          expect(items.map((item) => (item.kind === "record" ? item.value : undefined))).toEqual(asJson(records));
          expect(stats.lines).toBe(records.length);
        }
      }),
      { numRuns: 200 },
    );
  });

  it("load -> rewrite of a v5 session is byte for byte the original", () => {
    fc.assert(
      fc.property(fc.array(entry, { maxLength: 10 }), (entries) => {
        const text = [header(), ...entries].map(serializeRecord).join("");
        const session = loaded(text);
        expect(serializeSessionLines(session.lines).toString("utf8")).toBe(text);
        expect(asJson(session.entries)).toEqual(asJson(entries));
      }),
      { numRuns: 200 },
    );
  });

  it("migrating twice equals migrating once, and the input is left alone", () => {
    const legacyEntry = fc.oneof(
      fc.record({
        type: fc.constant("message"),
        timestamp: fc.string(),
        message: fc.record({ role: fc.constantFrom("user", "assistant", "hookMessage", "custom") }),
      }),
      fc.record({
        type: fc.constant("compaction"),
        timestamp: fc.string(),
        summary: fc.string(),
        tokensBefore: fc.nat(),
        firstKeptEntryIndex: fc.oneof(fc.integer({ min: -2, max: 14 }), fc.double({ noNaN: true })),
      }),
      fc.record({ type: fc.constantFrom("custom", "future_type", "header_patch"), id: fc.option(hexId, { nil: undefined }) }),
    );
    fc.assert(
      fc.property(fc.option(fc.integer({ min: 1, max: 5 }), { nil: undefined }), fc.array(legacyEntry, { maxLength: 12 }), (version, entries) => {
        const head: HeaderRecord = { type: "session", id: "s", ...(version === undefined ? {} : { version }) };
        const before = JSON.stringify([head, entries]);
        const once = migrateSession(head, entries as JsonRecord[]);
        const twice = migrateSession(once.header, once.entries);
        expect(twice.header).toEqual(once.header);
        expect(twice.entries).toEqual(once.entries);
        expect(twice.migratedFrom).toBeNull();
        expect(JSON.stringify([head, entries])).toBe(before);
      }),
      { numRuns: 300 },
    );
  });

  /** How one line of a file gets damaged. */
  type Corruption =
    | { kind: "byte"; at: number; byte: number }
    | { kind: "tear"; at: number; keepNewline: boolean }
    | { kind: "nul"; at: number; count: number }
    | { kind: "cut"; at: number; length: number };
  const corruption: fc.Arbitrary<Corruption> = fc.oneof(
    fc.record({ kind: fc.constant("byte" as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
    fc.record({ kind: fc.constant("tear" as const), at: fc.nat(), keepNewline: fc.boolean() }),
    fc.record({ kind: fc.constant("nul" as const), at: fc.nat(), count: fc.integer({ min: 1, max: 40 }) }),
    fc.record({ kind: fc.constant("cut" as const), at: fc.nat(), length: fc.integer({ min: 1, max: 30 }) }),
  );

  function damage(line: Buffer, how: Corruption): Buffer {
    // `line` ends with its newline; a tear may remove it and glue the next line on.
    const body = line.subarray(0, line.length - 1);
    const at = how.at % Math.max(1, body.length);
    switch (how.kind) {
      case "byte":
        return Buffer.concat([body.subarray(0, at), Buffer.from([how.byte]), body.subarray(at + 1), Buffer.from("\n")]);
      case "tear":
        return Buffer.concat([body.subarray(0, at), Buffer.from(how.keepNewline ? "\n" : "")]);
      case "nul":
        return Buffer.concat([body.subarray(0, at), Buffer.alloc(how.count), body.subarray(at), Buffer.from("\n")]);
      case "cut":
        return Buffer.concat([body.subarray(0, at), body.subarray(at + how.length), Buffer.from("\n")]);
    }
  }

  /** True when `wanted` occurs in `found` in order. */
  function isSubsequence(wanted: unknown[], found: unknown[]): boolean {
    let next = 0;
    for (const value of found) {
      if (next < wanted.length && JSON.stringify(value) === JSON.stringify(wanted[next])) next += 1;
    }
    return next === wanted.length;
  }

  it("damage to one line never costs another line its entry", () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 2, maxLength: 10 }), fc.nat(), corruption, (entries, pick, how) => {
        const lines: Buffer[] = [header(), ...entries].map((record) => Buffer.from(serializeRecord(record), "utf8"));
        const victim = 1 + (pick % entries.length);
        lines[victim] = damage(lines[victim] as Buffer, how);
        const result = loadSession(Buffer.concat(lines));
        expect(result.kind).toBe("loaded");
        if (result.kind !== "loaded") return;
        const survivors = entries.filter((_, i) => i + 1 !== victim);
        expect(isSubsequence(asJson(survivors) as unknown[], asJson(result.entries) as unknown[])).toBe(true);
      }),
      { numRuns: 1000 },
    );
  });

  it("scanning in chunks gives the result of scanning at once, wherever the chunks split", () => {
    const damagedFile = fc
      .tuple(fc.array(entry, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 6 }), fc.boolean(), fc.boolean())
      .map(([entries, cuts, bom, tear]) => {
        let bytes = Buffer.from([header(), ...entries].map(serializeRecord).join(""), "utf8");
        if (tear && bytes.length > 2) bytes = Buffer.concat([bytes.subarray(0, bytes.length >> 1), bytes.subarray((bytes.length >> 1) + 3)]);
        if (bom) bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]);
        const points = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
        return { bytes, points };
      });
    fc.assert(
      fc.property(damagedFile, ({ bytes, points }) => {
        const chunks: Buffer[] = [];
        let from = 0;
        for (const point of [...points, bytes.length]) {
          // Each chunk in a buffer the "reader" overwrites afterwards, as a read loop would.
          const chunk = Buffer.from(bytes.subarray(from, point));
          chunks.push(chunk);
          from = point;
        }
        const items: JsonlItem[] = [];
        const scanner = new JsonlScanner({
          record: (value, line) => items.push({ kind: "record", line, value }),
          invalid: (invalid) => items.push({ kind: "invalid", ...invalid }),
        });
        const loader = new SessionLoader();
        for (const chunk of chunks) {
          scanner.write(chunk);
          loader.write(chunk);
          chunk.fill(0x41);
        }
        expect({ items, stats: scanner.end() }).toEqual(parseJsonl(bytes));
        const whole = loadSession(bytes);
        const chunked = loader.end();
        expect(chunked.kind).toBe(whole.kind);
        if (whole.kind === "loaded" && chunked.kind === "loaded") {
          expect(asJson(chunked.entries)).toEqual(asJson(whole.entries));
          expect(serializeSessionLines(chunked.lines)).toEqual(serializeSessionLines(whole.lines));
          expect(chunked.stats).toEqual(whole.stats);
        }
      }),
      { numRuns: 300 },
    );
  });
});
