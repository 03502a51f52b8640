// The output sanitizer over every code point: what can act on or hide from a terminal comes out as visible text,
// everything else unchanged, and the JSON form parses back to the original.
import { describe, expect, it } from "vitest";

import { jsonText, printable } from "../../src/cli/printable.js";

/** Every code point (lone surrogates included), as one string. */
function allCodePoints(): string {
  const parts: string[] = [];
  for (let code = 0; code <= 0x10ffff; code += 0x1000) {
    const chunk: number[] = [];
    for (let c = code; c < Math.min(code + 0x1000, 0x110000); c++) chunk.push(c);
    parts.push(chunk.map((c) => (c >= 0xd800 && c <= 0xdfff ? String.fromCharCode(c) : String.fromCodePoint(c))).join(""));
  }
  return parts.join("");
}

const UNSAFE = /[\p{Cc}\p{Cf}\p{Zl}\p{Zp}\p{Cs}]/u;

describe("printable", () => {
  it("shows controls as \\xNN and format characters as <U+XXXX>", () => {
    expect(printable("a\u001b[2Jb\u0007c\u009b31m\u009d0;t\u009c\u007f\t\n\r")).toBe("a\\x1b[2Jb\\x07c\\x9b31m\\x9d0;t\\x9c\\x7f\\x09\\x0a\\x0d");
    expect(printable("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c")).toBe(
      "<U+202A><U+202B><U+202C><U+202D><U+202E><U+2066><U+2067><U+2068><U+2069><U+200E><U+200F><U+061C>",
    );
    expect(printable("\u200b\u200c\u200d\u2060\ufeff\u00ad\u2028\u2029\u3164\u{e0041}\ud800")).toBe(
      "<U+200B><U+200C><U+200D><U+2060><U+FEFF><U+00AD><U+2028><U+2029><U+3164><U+E0041><U+D800>",
    );
  });

  it("leaves text, paths and emoji alone", () => {
    const text = "/home/ana/projets/école — naïve 😀 日本語 ✓ C:\\Users\\ana 100% [x] ~";
    expect(printable(text)).toBe(text);
  });

  it("lets no unsafe code point through, out of all 1,114,112", () => {
    const all = allCodePoints();
    expect(UNSAFE.test(printable(all))).toBe(false);
  });
});

describe("jsonText", () => {
  it("escapes C1, format characters and separators as \\uXXXX and parses back to every code point", () => {
    const all = allCodePoints();
    const text = jsonText({ all, nested: [all.slice(0, 0x300)] });
    // The only raw control left is the layout's own newline.
    expect(UNSAFE.test(text.replace(/\n/g, ""))).toBe(false);
    expect(text).toContain("\\u009b");
    expect(text).toContain("\\u202e");
    expect(text).toContain("\\udb40\\udc41"); // a tag character, as its surrogate pair
    expect(JSON.parse(text)).toEqual({ all, nested: [all.slice(0, 0x300)] });
  });
});
