import fc from "fast-check";
import { describe, expect, it } from "vitest";

import { arePlainRecordLines, isPlainRecordLine } from "../../src/audit/record-scan.js";

// The audit skips the session loader for lines this check calls plain, so a wrong "true"
// would hide a finding. The oracle is JSON.parse itself.
function parsesAsRecord(text: string): boolean {
  try {
    const value: unknown = JSON.parse(text);
    return typeof value === "object" && value !== null && !Array.isArray(value) && typeof (value as { type?: unknown }).type === "string";
  } catch {
    return false;
  }
}

function plain(text: string): boolean {
  const bytes = Buffer.from(text, "utf8");
  return isPlainRecordLine(bytes, 0, bytes.length);
}

const records = fc.record(
  { type: fc.string(), payload: fc.jsonValue({ maxDepth: 4 }) },
  { requiredKeys: ["type"] },
).map((r) => JSON.stringify(r));

// Single-byte edits of valid records: the torn, glued and garbled lines a crash leaves.
const damaged = fc
  .tuple(records, fc.nat(), fc.integer({ min: 0, max: 255 }), fc.constantFrom("replace", "delete", "insert", "cut"))
  .map(([text, at, byte, how]) => {
    const bytes = Buffer.from(text, "utf8");
    const i = at % bytes.length;
    const ch = Buffer.from([byte]);
    if (how === "replace") return Buffer.concat([bytes.subarray(0, i), ch, bytes.subarray(i + 1)]);
    if (how === "delete") return Buffer.concat([bytes.subarray(0, i), bytes.subarray(i + 1)]);
    if (how === "insert") return Buffer.concat([bytes.subarray(0, i), ch, bytes.subarray(i)]);
    return bytes.subarray(0, i);
  });

describe("isPlainRecordLine", () => {
  it("never calls a line plain that JSON.parse does not read as a record", () => {
    fc.assert(
      fc.property(fc.oneof(records, fc.jsonValue().map((v) => JSON.stringify(v)), fc.string()), (text) => {
        if (plain(text)) expect(parsesAsRecord(text)).toBe(true);
      }),
      { numRuns: 3000 },
    );
  });

  it("never calls a damaged record plain unless it still parses as one", () => {
    fc.assert(
      fc.property(damaged, (bytes) => {
        if (isPlainRecordLine(bytes, 0, bytes.length)) expect(parsesAsRecord(bytes.toString("utf8"))).toBe(true);
      }),
      { numRuns: 5000 },
    );
  });

  it("reads only the given range of a larger buffer", () => {
    const buf = Buffer.from('{"type":"a"}\n{bad\n', "utf8");
    expect(isPlainRecordLine(buf, 0, 12)).toBe(true);
    expect(isPlainRecordLine(buf, 13, 17)).toBe(false);
    expect(isPlainRecordLine(buf, 0, 11)).toBe(false);
  });

  it("calls ordinary session records plain, and the last duplicate type key decides", () => {
    for (const text of [
      '{"type":"message","id":"a1b2c3d4","parentId":null,"message":{"role":"user","content":[{"type":"text","text":"hi \\u00e9 \\n"}],"timestamp":1}}',
      ' {"type":"custom","data":[1,-2.5e3,true,false,null,{}]} ',
      '{"type":5,"type":"label"}',
    ]) {
      expect(plain(text), text).toBe(true);
    }
    for (const text of ['{"type":"a","type":5}', '{"type":"a"', '[{"type":"a"}]', '{"type":"a"}{"type":"b"}', '{"type":"a\u0001"}', '{"Type":"a"}', '{}']) {
      expect(plain(text), text).toBe(false);
    }
  });
});

describe("arePlainRecordLines", () => {
  // Lines as a file holds them: records, damaged records (a byte may be a newline), blanks.
  const line = fc.oneof(records.map((t) => Buffer.from(t, "utf8")), damaged, fc.constantFrom(Buffer.alloc(0), Buffer.from("  "), Buffer.from("\r")));

  it("answers exactly what asking isPlainRecordLine line by line answers", () => {
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), fc.boolean(), (lines, trailing) => {
        const chunk = Buffer.concat(lines.flatMap((l, i) => (i < lines.length - 1 || trailing ? [l, Buffer.from("\n")] : [l])));
        let expected = true;
        for (let start = 0; start < chunk.length; ) {
          let stop = chunk.indexOf(0x0a, start);
          if (stop === -1) stop = chunk.length;
          if (stop > start && !isPlainRecordLine(chunk, start, stop)) expected = false;
          start = stop + 1;
        }
        expect(arePlainRecordLines(chunk, 0)).toBe(expected);
      }),
      { numRuns: 3000 },
    );
  });

  it("starts at the given offset and never lets a record run across a newline", () => {
    const chunk = Buffer.from('garbage\n{"type":"a"}\n\n{"type":"b"}', "utf8");
    expect(arePlainRecordLines(chunk, 0)).toBe(false);
    expect(arePlainRecordLines(chunk, 8)).toBe(true);
    expect(arePlainRecordLines(Buffer.from('{"type":\n"a"}', "utf8"), 0)).toBe(false);
    expect(arePlainRecordLines(Buffer.from('{"type":"a"}\n  \n', "utf8"), 0)).toBe(false);
  });
});
