import { describe, expect, it } from "vitest";
import { validateSession } from "../../src/session/load.js";
import { header, jsonl, loaded, message } from "./format-helpers.js";

const A = message("aaaa0001", null, "first");

/** `line:code:path` of every violation, for compact expectations. */
function summary(input: string | Uint8Array): string[] {
  return validateSession(input).violations.map((v) => `${v.line}:${v.code}:${v.path.join(".")}`);
}

describe("strict validation", () => {
  it("a clean file has no violations", () => {
    expect(validateSession(jsonl(header(), A))).toEqual({ ok: true, violations: [] });
    expect(validateSession(null)).toEqual({ ok: true, violations: [] });
  });

  it("reports every violation with its line and path", () => {
    const text = [
      JSON.stringify(header({ cwd: undefined })),
      JSON.stringify(A),
      JSON.stringify({ type: "message", id: "aaaa0002", parentId: "aaaa0001", timestamp: "t" }),
      JSON.stringify({ type: "model_change", id: "aaaa0003", parentId: "aaaa0002", timestamp: "t", model: 5 }),
      JSON.stringify({ type: "hologram", id: "aaaa0004", parentId: "aaaa0003" }),
      JSON.stringify(message("aaaa0001", "aaaa0004", "dup")),
      "not json",
      "[1]",
      `${JSON.stringify(A).slice(0, 20)}${JSON.stringify(message("aaaa0005", "aaaa0001"))}`,
      JSON.stringify({ type: "header_patch", patch: { title: 1 } }),
      JSON.stringify({ type: "entry_patch", entryId: "nope", patch: { message: { role: "user" } } }),
      JSON.stringify({ type: "label", id: "aaaa0006", parentId: null, timestamp: "t", targetId: ["x"] }),
    ].join("\n");
    expect(summary(text)).toEqual([
      "1:invalid_header:cwd",
      "3:invalid_entry:message",
      "4:invalid_entry:model",
      "5:unknown_entry_type:type",
      "6:duplicate_entry_id:id",
      "7:unparseable_line:",
      "8:not_a_record:",
      "9:unparseable_line:",
      "9:salvaged_line:",
      "10:invalid_patch:patch.title",
      "11:unknown_target:",
      "12:missing_final_newline:",
      "12:invalid_entry:targetId",
    ]);
  });

  it("reports refused versions and headers instead of throwing", () => {
    expect(validateSession(jsonl(header({ version: 6 }), A)).violations).toMatchObject([{ code: "version_too_new", path: ["version"] }]);
    expect(validateSession(jsonl(header({ version: "5" }), A)).violations).toMatchObject([{ code: "invalid_version", path: ["version"] }]);
    expect(summary(jsonl(A))).toEqual(["1:invalid_header:"]);
    expect(summary(jsonl(header({ titleSource: "robot" })))).toEqual(["1:invalid_header:titleSource"]);
  });

  it("reports non-UTF-8 lines", () => {
    const bytes = Buffer.from(jsonl(header(), message("aaaa0001", null, "AB")));
    bytes[bytes.lastIndexOf("AB")] = 0xff;
    expect(summary(bytes)).toEqual(["2:non_utf8_line:"]);
  });

  it("strict loads carry the violations, lenient loads do not", () => {
    const text = jsonl(header(), { type: "hologram" });
    expect(loaded(text, { mode: "strict" }).violations).toHaveLength(1);
    expect(loaded(text).violations).toBeUndefined();
  });
});
