import { describe, expect, it } from "vitest";
import { SessionFormatError } from "../../src/session/errors.js";
import { checkHeaderVersion, loadSession, serializeSessionLines } from "../../src/session/load.js";
import { isUnknownEntry, UNKNOWN_ENTRY, type FileEntry } from "../../src/session/schemas.js";
import { asJson, expectCode, header, jsonl, loaded, message } from "./format-helpers.js";

const A = message("aaaa0001", null, "first");
const B = message("aaaa0002", "aaaa0001", "second");
const reasonOf = (entry: FileEntry | undefined): unknown => (entry === undefined ? undefined : (entry as { [UNKNOWN_ENTRY]?: unknown })[UNKNOWN_ENTRY]);

describe("missing and empty files", () => {
  it.each([
    ["missing (null)", null],
    ["missing (undefined)", undefined],
    ["zero bytes", Buffer.alloc(0)],
    ["empty text", ""],
    ["blank lines", "\n \n\t\r\n"],
    ["NUL padding", "\u0000\u0000\u0000\n\u0000"],
  ])("%s loads as empty", (_name, input) => {
    expect(loadSession(input)).toEqual({ kind: "empty" });
  });
});

describe("header rules", () => {
  it("a file with only invalid lines has an invalid header, not an empty one", () => {
    expect(loadSession("not json\n")).toEqual({ kind: "invalid_header", reason: "no_record", line: null, issues: [] });
  });

  it("a first record that is not a session header is refused with its line", () => {
    expect(loadSession(`\n${jsonl(A, header())}`)).toMatchObject({
      kind: "invalid_header",
      reason: "not_a_session_header",
      line: 2,
    });
  });

  it.each([
    ["no id", { id: undefined }],
    ["a numeric id", { id: 7 }],
    ["a null id", { id: null }],
  ])("a header with %s is refused", (_name, fields) => {
    expect(loadSession(jsonl(header(fields), A))).toMatchObject({ kind: "invalid_header", reason: "missing_id", line: 1 });
  });

  it("a header with a field of the wrong type is refused with the field's path", () => {
    const result = loadSession(jsonl(header({ cwd: 5 }), A));
    expect(result).toMatchObject({ kind: "invalid_header", reason: "malformed_header", line: 1 });
    expect(result.kind === "invalid_header" && result.issues.map((issue) => issue.path)).toEqual([["cwd"]]);
  });

  it("invalid lines before the header are kept, and written back before it", () => {
    const text = `garbage\n${jsonl(header(), A)}`;
    const session = loaded(text);
    expect(session.entries).toHaveLength(1);
    expect(session.invalidLines).toEqual([{ line: 1, text: "garbage", reason: "unparseable" }]);
    expect(serializeSessionLines(session.lines).toString()).toBe(text);
  });

  it("accepts a header with only type and id, as v1", () => {
    const session = loaded(jsonl({ type: "session", id: "x" }, { type: "custom", customType: "c", timestamp: "t" }));
    expect(session.onDiskVersion).toBe(1);
    expect(session.migratedFrom).toBe(1);
    expect(session.entries[0]).toMatchObject({ parentId: null });
  });
});

describe("version checks", () => {
  it.each([
    ["6", 6, "version_too_new"],
    ["1000", 1000, "version_too_new"],
    ['"5"', "5", "invalid_version"],
    ["4.5", 4.5, "invalid_version"],
    ["-1", -1, "invalid_version"],
    ["0", 0, "invalid_version"],
    ["null", null, "invalid_version"],
    ["true", true, "invalid_version"],
  ])("version %s is refused with %s", (_name, version, code) => {
    expectCode(() => loadSession(jsonl(header({ version }), A)), code as string);
    expectCode(() => checkHeaderVersion({ type: "session", version }), code as string);
  });

  it("refuses a too-new version before looking at anything after the header", () => {
    const text = `${jsonl(header({ version: 6 }), { type: "header_patch", patch: { title: "t" } })}garbage\n`;
    let caught: unknown;
    try {
      loadSession(text);
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(SessionFormatError);
    expect((caught as SessionFormatError).code).toBe("version_too_new");
  });

  it("a version overflowing to Infinity is invalid", () => {
    expectCode(() => loadSession('{"type":"session","id":"x","version":1e400}\n'), "invalid_version");
  });

  it.each([1, 2, 3, 4, 5])("version %i loads", (version) => {
    const session = loaded(jsonl(header({ version }), A));
    expect(session.onDiskVersion).toBe(version);
    expect(session.header.version).toBe(5);
    expect(session.migratedFrom).toBe(version === 5 ? null : version);
  });
});

describe("entry typing", () => {
  it("types well-formed known entries and keeps the rest as unknown entries", () => {
    const future = { type: "quantum_checkpoint", id: "bbbb0001", parentId: "aaaa0001", role: "default" };
    const broken = { type: "label", id: "bbbb0002", parentId: "bbbb0001", timestamp: "t" };
    const session = loaded(jsonl(header(), A, future, broken, B));
    expect(session.entries.map((entry) => isUnknownEntry(entry))).toEqual([false, true, true, false]);
    expect(session.entries.map(reasonOf)).toEqual([undefined, "unknown_type", "invalid_fields", undefined]);
    expect(session.unknownEntries).toBe(2);
    // The marker is a symbol, so it is never written.
    expect(JSON.stringify(session.entries[1])).toBe(JSON.stringify(future));
  });

  it.each(["valueOf", "__proto__", "constructor", "toString"])("an entry of type %s is an unknown type, not a prototype lookup", (type) => {
    const session = loaded(`${jsonl(header())}{"type":${JSON.stringify(type)},"id":"aaaa0001","parentId":null}\n`);
    expect(session.entries.map(reasonOf)).toEqual(["unknown_type"]);
    expect(loaded(serializeSessionLines(session.lines)).entries).toHaveLength(1);
  });

  it("keeps unknown fields of known entries in place", () => {
    const extra = message("aaaa0001", null, "x", { evictedContent: { reason: "compacted_history" } });
    const session = loaded(jsonl(header(), extra));
    expect(isUnknownEntry(session.entries[0] as FileEntry)).toBe(false);
    expect(session.entries[0]).toEqual(extra);
  });

  it("keeps entries with duplicate ids, both of them", () => {
    const twin = message("aaaa0001", null, "twin");
    const session = loaded(jsonl(header(), A, twin));
    expect(session.entries).toHaveLength(2);
    expect(asJson(session.entries)).toEqual([A, twin]);
  });

  it("keeps salvaged records in the order they appear", () => {
    const torn = JSON.stringify(A).slice(0, 25);
    const session = loaded(`${jsonl(header())}${torn}${JSON.stringify(B)}\n`);
    expect(asJson(session.entries)).toEqual([B]);
    expect(session.lines.map((item) => item.kind)).toEqual(["header", "invalid", "entry"]);
    expect(session.stats.salvagedLines).toEqual([2]);
  });

  it("a migrated v1 file, once rewritten, keeps its ids on the next load", () => {
    const session = loaded(jsonl(header({ version: 1 }), { type: "message", timestamp: "t", message: { role: "user" } }));
    const again = loaded(serializeSessionLines(session.lines));
    expect(again.entries[0]?.id).toBe(session.entries[0]?.id);
  });
});
