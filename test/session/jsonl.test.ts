import { describe, expect, it } from "vitest";
import { scanJsonl, serializeRecord } from "../../src/session/jsonl.js";
import { serializeSessionLines } from "../../src/session/load.js";
import { expectCode, header, jsonl, loaded, message, parseJsonl, type JsonlItem } from "./format-helpers.js";

const A = message("aaaa0001", null, "first");
const B = message("aaaa0002", "aaaa0001", "second");
const C = message("aaaa0003", "aaaa0002", "third");
const lineOf = (value: unknown): string => JSON.stringify(value);

function records(items: JsonlItem[]): unknown[] {
  return items.flatMap((item) => (item.kind === "record" ? [item.value] : []));
}
function invalid(items: JsonlItem[]): Array<{ line: number; text: string; reason: string }> {
  return items.flatMap((item) => (item.kind === "invalid" ? [{ line: item.line, text: item.text, reason: item.reason }] : []));
}

describe("clean JSONL", () => {
  it("parses one record per line with 1-based line numbers", () => {
    const { items, stats } = parseJsonl(jsonl(A, B, C));
    expect(items.map((item) => item.line)).toEqual([1, 2, 3]);
    expect(records(items)).toEqual([A, B, C]);
    expect(stats).toMatchObject({ lines: 3, blankLines: 0, salvagedLines: [], endsWithNewline: true });
  });

  it("gives the same result for text and bytes", () => {
    const text = `\uFEFF${jsonl(A, B)}garbage\n${lineOf(C)}`;
    expect(parseJsonl(Buffer.from(text, "utf8"))).toEqual(parseJsonl(text));
    expect(parseJsonl(new Uint8Array(Buffer.from(text, "utf8")))).toEqual(parseJsonl(text));
  });

  it("tolerates CRLF line ends and keeps the CR of an invalid line for the rewrite", () => {
    const text = `${lineOf(A)}\r\nnot json\r\n${lineOf(B)}\r\n`;
    const { items } = parseJsonl(text);
    expect(records(items)).toEqual([A, B]);
    expect(invalid(items)).toEqual([{ line: 2, text: "not json\r", reason: "unparseable" }]);
  });

  it("treats U+2028 and U+2029 as data, not line breaks", () => {
    const record = message("aaaa0001", null, "one\u2028two\u2029three");
    const text = serializeRecord(record);
    expect(text).toContain("\u2028");
    const { items, stats } = parseJsonl(text);
    expect(stats.lines).toBe(1);
    expect(records(items)).toEqual([record]);
  });

  it("skips a UTF-8 byte order mark before the first line; elsewhere it is kept as data", () => {
    const bytes = Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(jsonl(A, B))]);
    const clean = parseJsonl(bytes);
    expect(records(clean.items)).toEqual([A, B]);
    expect(clean.stats.salvagedLines).toEqual([]);
    const { items } = parseJsonl(`${lineOf(A)}\n\uFEFF${lineOf(B)}\n`);
    expect(records(items)).toEqual([A, B]);
    expect(invalid(items)).toEqual([{ line: 2, text: "\uFEFF", reason: "unparseable" }]);
  });

  it("counts empty and whitespace-only lines as blank and keeps nothing for them", () => {
    const { items, stats } = parseJsonl(`\n${lineOf(A)}\n\n   \n\t\r\n${lineOf(B)}\n`);
    expect(records(items)).toEqual([A, B]);
    expect(invalid(items)).toEqual([]);
    expect(stats.blankLines).toBe(4);
    expect(stats.lines).toBe(6);
  });

  it("keeps a complete final line that lacks its newline, and reports the missing newline", () => {
    const { items, stats } = parseJsonl(`${lineOf(A)}\n${lineOf(B)}`);
    expect(records(items)).toEqual([A, B]);
    expect(stats.endsWithNewline).toBe(false);
  });

  it("keeps a torn final line verbatim instead of dropping it", () => {
    const torn = lineOf(B).slice(0, 40);
    const { items, stats } = parseJsonl(`${lineOf(A)}\n${torn}`);
    expect(records(items)).toEqual([A]);
    expect(invalid(items)).toEqual([{ line: 2, text: torn, reason: "unparseable" }]);
    expect(stats.endsWithNewline).toBe(false);
  });

  it("keeps JSON that is not a record as a not_a_record line", () => {
    const { items } = parseJsonl(`[1,2]\n42\n{"no":"type"}\n"text"\n${lineOf(A)}\n`);
    expect(records(items)).toEqual([A]);
    expect(invalid(items).map((item) => [item.line, item.text, item.reason])).toEqual([
      [1, "[1,2]", "not_a_record"],
      [2, "42", "not_a_record"],
      [3, '{"no":"type"}', "not_a_record"],
      [4, '"text"', "not_a_record"],
    ]);
  });

  it("parses a 10 MB line", () => {
    const big = message("aaaa0001", null, "x".repeat(10 * 1024 * 1024));
    const { items } = parseJsonl(`${lineOf(big)}\n${lineOf(B)}\n`);
    expect(records(items)).toHaveLength(2);
    expect((records(items)[0] as typeof big).message).toEqual(big.message);
  });

  it("refuses input that is neither text nor bytes", () => {
    expectCode(() => scanJsonl(42 as unknown as string, { record() {}, invalid() {} }), "invalid_input");
  });
});

describe("salvage", () => {
  it("recovers a complete record glued behind a record torn inside a string", () => {
    const torn = lineOf(A).slice(0, lineOf(A).indexOf("first") + 3);
    const { items, stats } = parseJsonl(`${torn}${lineOf(B)}\n${lineOf(C)}\n`);
    expect(records(items)).toEqual([B, C]);
    expect(invalid(items)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
    expect(stats.salvagedLines).toEqual([1]);
  });

  it("recovers a record that a torn record swallowed at a value position", () => {
    const torn = '{"type":"message","id":"aaaa0009","parentId":';
    const { items } = parseJsonl(`${torn}${lineOf(B)}\n`);
    expect(records(items)).toEqual([B]);
    expect(invalid(items)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
  });

  it("does not turn the content blocks of a torn message into records", () => {
    const full = lineOf(A);
    const torn = full.slice(0, full.indexOf("}]") + 1); // cut right after the text block
    expect(torn.endsWith('"text":"first"}')).toBe(true);
    const alone = parseJsonl(`${torn}\n`).items;
    expect(records(alone)).toEqual([]);
    expect(invalid(alone)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
    const glued = parseJsonl(`${torn}${lineOf(B)}\n`).items;
    expect(records(glued)).toEqual([B]);
    expect(invalid(glued)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
  });

  it("does not let a torn record close early into the record glued behind it", () => {
    // `{"type":"` + `{"}":null,...}` reads as the valid object `{"type":"{"}` followed by junk.
    const glued = { "}": null, type: "message", id: "aaaa0005", parentId: null, timestamp: "" };
    const { items } = parseJsonl(`{"type":"${lineOf(glued)}\n`);
    expect(records(items)).toEqual([glued]);
    expect(invalid(items)).toEqual([{ line: 1, text: '{"type":"', reason: "unparseable" }]);
  });

  it("does not let a torn record close early on a `}{` in the glued record's strings", () => {
    // `{...,"parentId":"` + `{"}{":...}` reads as `{...,"parentId":"{"}` followed by `{":...`,
    // which passes the "followed by a record" test of the forward chain.
    const torn = '{"type":"message","id":"aaaa0009","parentId":"';
    const glued = { "}{": "", type: "message", id: "aaaa0005", parentId: null, timestamp: "" };
    const alone = parseJsonl(`${torn}${lineOf(glued)}\n`).items;
    expect(records(alone)).toEqual([glued]);
    expect(invalid(alone)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
    // The same behind a complete record, which keeps its place in the chain.
    const behind = parseJsonl(`${lineOf(A)}${torn}${lineOf(glued)}\n`).items;
    expect(records(behind)).toEqual([A, glued]);
    expect(invalid(behind)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
  });

  it("keeps a complete record whose strings hold `}{` when a torn one follows it", () => {
    const braces = { ...message("aaaa0006", null, '}{"type":"message","parentId":null}{'), "}{": "}{" };
    const torn = lineOf(B).slice(0, 40);
    const { items } = parseJsonl(`${lineOf(braces)}${torn}\n`);
    expect(records(items)).toEqual([braces]);
    expect(invalid(items)).toEqual([{ line: 1, text: torn, reason: "unparseable" }]);
  });

  it("splits records glued without a newline", () => {
    const { items, stats } = parseJsonl(`${lineOf(A)}${lineOf(B)} ${lineOf(C)}\n`);
    expect(records(items)).toEqual([A, B, C]);
    expect(invalid(items)).toEqual([]);
    expect(stats.salvagedLines).toEqual([1]);
  });

  it("recovers a record glued between two torn ones", () => {
    const tornA = lineOf(A).slice(0, 30);
    const tornC = lineOf(C).slice(0, 50);
    const { items } = parseJsonl(`${tornA}${lineOf(B)}${tornC}\n`);
    expect(records(items)).toEqual([B]);
    expect(invalid(items).map((item) => item.text)).toEqual([tornA, tornC]);
  });

  it("recovers records from both sides of a torn piece", () => {
    const torn = lineOf(B).slice(0, 45);
    const { items } = parseJsonl(`${lineOf(A)}${torn}${lineOf(C)}\n`);
    expect(records(items)).toEqual([A, C]);
    expect(invalid(items).map((item) => item.text)).toEqual([torn]);
  });

  it("treats NUL runs as padding", () => {
    const nul = "\u0000".repeat(64);
    const text = `${lineOf(A)}\n${nul}\n${nul}${lineOf(B)}${nul}${lineOf(C)}\n${lineOf(A).slice(0, 20)}${nul}\n`;
    const { items, stats } = parseJsonl(text);
    expect(records(items)).toEqual([A, B, C]);
    expect(invalid(items)).toEqual([{ line: 4, text: lineOf(A).slice(0, 20), reason: "unparseable" }]);
    expect(stats.blankLines).toBe(1);
  });

  it("keeps garbage around records verbatim", () => {
    const torn = lineOf(B).slice(0, 33);
    const { items } = parseJsonl(`garbage ${lineOf(A)}${torn}\n`);
    expect(records(items)).toEqual([A]);
    expect(invalid(items).map((item) => item.text)).toEqual(["garbage ", torn]);
  });

  it("stays linear on a 10 MB torn line full of brace pairs and recovers the record behind it", () => {
    const blocks = '{"type":"text","text":"}{"}'.repeat(400_000);
    const torn = `{"type":"message","id":"aaaa0009","parentId":null,"message":{"role":"user","content":[${blocks}`;
    expect(torn.length).toBeGreaterThan(10 * 1024 * 1024);
    const { items } = parseJsonl(`${torn}${lineOf(B)}\n`);
    expect(records(items)).toEqual([B]);
    expect(invalid(items)).toHaveLength(1);
    expect(invalid(items)[0]?.text.length).toBe(torn.length);
  });

  it("writes a non-UTF-8 invalid line back byte for byte", () => {
    const bad = Buffer.from([0x7b, 0x22, 0xff, 0xfe, 0x80, 0x22]); // {"<bad bytes>"
    const file = Buffer.concat([Buffer.from(jsonl(header(), A)), bad, Buffer.from("\n"), Buffer.from(jsonl(B))]);
    const session = loaded(file);
    expect(session.invalidLines).toHaveLength(1);
    expect(session.invalidLines[0]?.bytes).toEqual(bad);
    expect(session.stats.nonUtf8Lines).toEqual([3]);
    expect(serializeSessionLines(session.lines)).toEqual(file);
  });

  it("keeps a parseable record on a non-UTF-8 line and reports the line", () => {
    const record = Buffer.from(lineOf(message("aaaa0001", null, "AB")));
    const at = record.indexOf("AB");
    record[at] = 0xff;
    const { items, stats } = parseJsonl(Buffer.concat([record, Buffer.from("\n")]));
    expect(records(items)).toHaveLength(1);
    expect(stats.nonUtf8Lines).toEqual([1]);
  });
});

describe("round trip", () => {
  it("writes unknown types, unknown fields, invalid lines and duplicates back unchanged", () => {
    const future = { type: "configured_model_chain", id: "bbbb0001", parentId: "aaaa0001", role: "default", entries: [1, { deep: true }] };
    const extra = message("aaaa0002", "aaaa0001", "x", { evictedContent: { payloads: {} }, zFuture: [null] });
    const duplicate = message("aaaa0002", "aaaa0001", "duplicate id");
    const text = `${jsonl(header({ futureHeaderField: { a: 1 } }), A, future, extra)}not json at all\n${jsonl(duplicate)}`;
    const rewritten = serializeSessionLines(loaded(text).lines).toString("utf8");
    expect(rewritten).toBe(text);
  });
});
