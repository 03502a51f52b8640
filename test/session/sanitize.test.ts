import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  MAX_PERSIST_CHARS,
  MAX_SANITIZE_DEPTH,
  PERSIST_TRUNCATION_NOTICE,
  PersistSanitizeError,
  sanitizeForPersistence,
  truncateForPersistence,
} from "../../src/session/sanitize.js";

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}

const big = "x".repeat(MAX_PERSIST_CHARS + 10);

describe("truncateForPersistence", () => {
  it("leaves strings at the limit alone", () => {
    const atLimit = "y".repeat(MAX_PERSIST_CHARS);
    expect(truncateForPersistence(atLimit)).toBe(atLimit);
  });

  it("cuts long strings to the limit and ends them with the notice", () => {
    const out = truncateForPersistence(big);
    expect(out.length).toBeLessThanOrEqual(MAX_PERSIST_CHARS);
    expect(out.endsWith(`\n\n${PERSIST_TRUNCATION_NOTICE}`)).toBe(true);
    expect(big.startsWith(out.slice(0, out.length - PERSIST_TRUNCATION_NOTICE.length - 2))).toBe(true);
    // Idempotent: a truncated string is within the limit and is not cut again.
    expect(truncateForPersistence(out)).toBe(out);
  });

  it("never splits a surrogate pair, wherever the cut falls", () => {
    const keep = MAX_PERSIST_CHARS - PERSIST_TRUNCATION_NOTICE.length - 2;
    for (const shift of [0, 1]) {
      // Emoji (two code units each) positioned so that the cut lands on a pair boundary in one
      // case and between the halves of a pair in the other.
      const text = "a".repeat(keep - 1 - shift) + "\u{1F600}".repeat(20) + "b".repeat(600_000);
      const out = truncateForPersistence(text);
      expect(LONE_SURROGATE.test(out)).toBe(false);
      expect(out.length).toBeLessThanOrEqual(MAX_PERSIST_CHARS);
    }
  });
});

describe("sanitizeForPersistence", () => {
  it("returns the very same object when nothing needs to change", () => {
    const entry = deepFreeze({
      type: "message",
      id: "abcd0001",
      parentId: null,
      message: { role: "assistant", content: [{ type: "text", text: "hi" }], usage: { input: 1 } },
    });
    expect(sanitizeForPersistence(entry)).toBe(entry);
  });

  it("copies only the path to a change and never mutates the input", () => {
    const untouched = { type: "text", text: "short" };
    const entry = deepFreeze({
      type: "message",
      meta: { a: 1 },
      message: { role: "toolResult", content: [untouched, { type: "text", text: big }] },
    });
    const before = structuredClone(entry);
    const out = sanitizeForPersistence(entry);
    expect(entry).toEqual(before);
    expect(out).not.toBe(entry);
    expect(out.meta).toBe(entry.meta);
    expect(out.message.content[0]).toBe(untouched);
    const text = (out.message.content[1] as { text: string }).text;
    expect(text.endsWith(PERSIST_TRUNCATION_NOTICE)).toBe(true);
    expect(Object.keys(out)).toEqual(Object.keys(entry));
  });

  it("empties oversized signatures instead of cutting them", () => {
    const block = deepFreeze({
      type: "thinking",
      thinking: "short",
      thinkingSignature: big,
      thoughtSignature: big,
      textSignature: big,
      otherSignature: big,
    });
    const out = sanitizeForPersistence(block);
    expect(out.thinkingSignature).toBe("");
    expect(out.thoughtSignature).toBe("");
    expect(out.textSignature).toBe("");
    expect(out.otherSignature.endsWith(PERSIST_TRUNCATION_NOTICE)).toBe(true);
    const small = { thinkingSignature: "sig" };
    expect(sanitizeForPersistence(small)).toBe(small);
  });

  it("removes transient streaming fields at any depth, keeping the order of the rest", () => {
    const entry = deepFreeze({
      a: 1,
      partialJson: "{",
      b: [{ c: 2, jsonlEvents: ["e"], d: 3 }],
      e: 4,
    });
    const out = sanitizeForPersistence(entry);
    expect(out).toEqual({ a: 1, b: [{ c: 2, d: 3 }], e: 4 });
    expect(Object.keys(out)).toEqual(["a", "b", "e"]);
    expect(Object.keys(out.b[0]!)).toEqual(["c", "d"]);
  });

  it("recomputes lineCount when content was truncated", () => {
    const content = "line\n".repeat(150_000);
    const out = sanitizeForPersistence(deepFreeze({ content, lineCount: 150_001, path: "f" }));
    expect(out.content.length).toBeLessThanOrEqual(MAX_PERSIST_CHARS);
    expect(out.lineCount).toBe(out.content.split("\n").length);
    expect(out.lineCount).toBeLessThan(150_001);
  });

  it("keeps lineCount when only something other than content changed", () => {
    const out = sanitizeForPersistence({ content: "a\nb", lineCount: 7, partialJson: "x" });
    expect(out).toEqual({ content: "a\nb", lineCount: 7 });
  });

  it("keeps an own __proto__ property as data", () => {
    const entry = JSON.parse('{"__proto__":{"x":1},"partialJson":"p","y":2}') as object;
    const out = sanitizeForPersistence(entry);
    expect(Object.getPrototypeOf(out)).toBe(Object.prototype);
    expect(JSON.stringify(out)).toBe('{"__proto__":{"x":1},"y":2}');
  });

  it("does not descend into class instances", () => {
    const bytes = Buffer.from("abc");
    const entry = { bytes, when: new Date(0) };
    expect(sanitizeForPersistence(entry)).toBe(entry);
  });

  it("walks nesting far deeper than the call stack allows", () => {
    const depth = 50_000;
    const deep = JSON.parse(`${"[".repeat(depth)}{"partialJson":1}${"]".repeat(depth)}`) as unknown;
    let node = sanitizeForPersistence(deep);
    for (let i = 0; i < depth; i++) node = (node as unknown[])[0];
    expect(node).toEqual({});
  });

  it("rejects a cyclic value with a typed error instead of running forever", () => {
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    expect(MAX_SANITIZE_DEPTH).toBeGreaterThan(10_000);
    const attempt = (): unknown => sanitizeForPersistence(cyclic);
    expect(attempt).toThrow(PersistSanitizeError);
    try {
      attempt();
    } catch (error) {
      expect((error as PersistSanitizeError).code).toBe("nesting_too_deep");
    }
  });

  it("passes scalars through and truncates a bare long string", () => {
    expect(sanitizeForPersistence(3)).toBe(3);
    expect(sanitizeForPersistence(null)).toBe(null);
    expect(sanitizeForPersistence(big).length).toBeLessThanOrEqual(MAX_PERSIST_CHARS);
  });

  it("agrees with a naive copying model and never mutates (property)", () => {
    // A few shared oversized strings keep generation cheap while still exercising truncation.
    const huge = fc.constantFrom(big, "z".repeat(MAX_PERSIST_CHARS + 1), "\u{1F600}".repeat(260_000));
    const key = fc.constantFrom("content", "lineCount", "partialJson", "jsonlEvents", "thinkingSignature", "text", "k");
    const { tree } = fc.letrec((tie) => ({
      tree: fc.oneof(
        { depthSize: "small", withCrossShrink: true },
        fc.oneof(fc.string(), fc.integer(), fc.boolean(), fc.constant(null), huge),
        fc.array(tie("tree"), { maxLength: 4 }),
        fc.dictionary(key, tie("tree"), { maxKeys: 5 }),
      ),
    }));
    fc.assert(
      fc.property(tree, (value) => {
        const snapshot = JSON.stringify(value);
        const out = sanitizeForPersistence(value);
        expect(JSON.stringify(value)).toBe(snapshot);
        expect(out).toEqual(naiveSanitize(value, undefined));
        expect(sanitizeForPersistence(out)).toBe(out);
      }),
      { numRuns: 300 },
    );
  });
});

/** Reference model: recursive, copies everything, no laziness. */
function naiveSanitize(value: unknown, key: string | undefined): unknown {
  if (typeof value === "string") {
    if (value.length <= MAX_PERSIST_CHARS) return value;
    return key !== undefined && key.endsWith("Signature") && key !== "otherSignature" ? "" : truncateForPersistence(value);
  }
  if (Array.isArray(value)) return value.map((item) => naiveSanitize(item, undefined));
  if (typeof value !== "object" || value === null) return value;
  const source = value as Record<string, unknown>;
  const out: Record<string, unknown> = {};
  let contentChanged = false;
  for (const [k, v] of Object.entries(source)) {
    if (k === "partialJson" || k === "jsonlEvents") continue;
    out[k] = naiveSanitize(v, k);
    if (k === "content" && out[k] !== v) contentChanged = true;
  }
  if (contentChanged && typeof out.content === "string" && typeof out.lineCount === "number") {
    out.lineCount = out.content.split("\n").length;
  }
  return out;
}
