import { describe, expect, it } from "vitest";
import { serializeSessionLines } from "../../src/session/load.js";
import { replayPatches } from "../../src/session/patches.js";
import type { JsonRecord } from "../../src/session/salvage.js";
import type { SessionHeader } from "../../src/session/schemas.js";
import { asJson, header, jsonl, loaded, message } from "./format-helpers.js";

const A = message("aaaa0001", null, "first");
const B = message("aaaa0002", "aaaa0001", "second");
const label = { type: "label", id: "aaaa0003", parentId: "aaaa0002", timestamp: "t", targetId: "aaaa0001", label: "x" };
const titlePatch = (title: string, titleSource = "user") => ({ type: "header_patch", patch: { title, titleSource } });
const messagePatch = (entryId: string, text: string) => ({
  type: "entry_patch",
  entryId,
  patch: { message: { role: "assistant", content: [{ type: "text", text }] } },
});

describe("patch replay", () => {
  it("applies header patches in file order", () => {
    const session = loaded(jsonl(header({ version: 4 }), A, titlePatch("one", "auto"), titlePatch("two"), { type: "header_patch", patch: { cwd: "/moved" } }));
    expect(session.header).toMatchObject({ title: "two", titleSource: "user", cwd: "/moved", version: 5 });
    expect(session.patchReport).toEqual({ applied: 3, skipped: [] });
  });

  it("replaces only the message of the targeted message entry", () => {
    const session = loaded(jsonl(header(), A, B, messagePatch("aaaa0001", "sanitized")));
    expect(session.entries[0]).toEqual({ ...A, message: messagePatch("aaaa0001", "sanitized").patch.message });
    expect(session.entries[1]).toEqual(B);
    expect(session.entries).toHaveLength(2);
  });

  it.each([
    ["an extra key in the patch", { type: "header_patch", patch: { title: "t", color: 3 } }, "invalid_patch"],
    ["a title of the wrong type", { type: "header_patch", patch: { title: 5 } }, "invalid_patch"],
    ["an unknown titleSource", { type: "header_patch", patch: { titleSource: "robot" } }, "invalid_patch"],
    ["no patch object", { type: "header_patch" }, "invalid_patch"],
    ["an entry patch with more than message", { type: "entry_patch", entryId: "aaaa0001", patch: { message: { role: "user" }, id: "z" } }, "invalid_patch"],
    ["an entry patch without entryId", { type: "entry_patch", patch: { message: { role: "user" } } }, "invalid_patch"],
    ["an unknown target", messagePatch("ffffffff", "x"), "unknown_target"],
    ["a target that is not a message", messagePatch("aaaa0003", "x"), "target_not_message"],
  ])("skips and reports %s", (_name, patch, code) => {
    const session = loaded(jsonl(header(), A, B, label, patch));
    expect(session.patchReport).toEqual({ applied: 0, skipped: [{ line: 5, code, record: patch }] });
    expect(asJson(session.entries)).toEqual([A, B, label]);
    expect(session.header.title).toBeUndefined();
  });

  it("does not patch an entry that comes after the patch", () => {
    const session = loaded(jsonl(header(), messagePatch("aaaa0001", "early"), A));
    expect(session.patchReport.skipped).toMatchObject([{ line: 2, code: "unknown_target" }]);
    expect(session.entries[0]).toEqual(A);
  });

  it.each([1, 2, 3])("does not replay patches of a v%i file", (version) => {
    const session = loaded(jsonl(header({ version }), A, titlePatch("t")));
    expect(session.header.title).toBeUndefined();
    expect(session.patchReport.skipped).toMatchObject([{ line: 3, code: "version_below_4" }]);
  });

  it("keeps patch records and unpatched entries in the lines, so a rewrite replays to the same state", () => {
    const text = jsonl(header({ version: 4 }), A, titlePatch("t"), messagePatch("aaaa0001", "new"));
    const session = loaded(text);
    expect(session.lines.map((item) => item.kind)).toEqual(["header", "entry", "patch", "patch"]);
    expect(session.lines[1]?.kind === "entry" && session.lines[1].value).toEqual(A);
    const again = loaded(serializeSessionLines(session.lines));
    expect(asJson(again.header)).toEqual(asJson(session.header));
    expect(asJson(again.entries)).toEqual(asJson(session.entries));
    expect(again.patchReport.applied).toBe(2);
  });

  it("does not write to its inputs", () => {
    const head = Object.freeze({ ...header(), title: "old" }) as SessionHeader;
    const entry = Object.freeze({ ...A }) as JsonRecord;
    const patch = Object.freeze(messagePatch("aaaa0001", "new")) as JsonRecord;
    const result = replayPatches(
      head,
      [
        { kind: "entry", value: entry },
        { kind: "patch", value: patch, line: 3 },
        { kind: "patch", value: Object.freeze(titlePatch("new")) as JsonRecord, line: 4 },
      ],
      5,
    );
    expect(result.entries[0]).not.toBe(entry);
    expect(entry).toEqual(A);
    expect(head.title).toBe("old");
    expect(result.header.title).toBe("new");
  });
});
