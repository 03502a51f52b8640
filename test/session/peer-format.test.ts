/**
 * The GJC-shaped module functions: parseSessionEntries, migrateSessionEntries,
 * getLatestCompactionEntry, and buildSessionContext's leaf rules as GJC states them.
 */
import { describe, expect, it } from "vitest";
import { buildSessionContext } from "../../src/session/context.js";
import { getLatestCompactionEntry, migrateSessionEntries, parseSessionEntries, type SessionFileEntry } from "../../src/session/load.js";
import { CURRENT_SESSION_VERSION, type FileEntry, isUnknownEntry } from "../../src/session/schemas.js";
import { expectCode, header, isEntryId, jsonl, message } from "./format-helpers.js";

const A = message("aaaa0001", null, "first");
const B = message("aaaa0002", "aaaa0001", "second");

function v1(role: string, text: string): Record<string, unknown> {
  return { type: "message", timestamp: "2026-01-01T00:00:01.000Z", message: { role, content: text } };
}

describe("parseSessionEntries", () => {
  it("returns the header first, then the entries, typed; bad lines are skipped", () => {
    const records = parseSessionEntries(`${jsonl(header(), A)}not json\n[1]\n${jsonl(B, { type: "future_kind", id: "x" })}`);
    expect(records.map((record) => record.type)).toEqual(["session", "message", "message", "future_kind"]);
    expect(records.slice(1).map((record) => isUnknownEntry(record as FileEntry))).toEqual([false, false, true]);
    expect(CURRENT_SESSION_VERSION).toBe(5);
  });

  it("refuses a version above 5 or not an integer with a typed error", () => {
    expectCode(() => parseSessionEntries(jsonl(header({ version: 6 }), A)), "version_too_new");
    expectCode(() => parseSessionEntries(jsonl(header({ version: 4.5 }), A)), "invalid_version");
    expectCode(() => parseSessionEntries(jsonl(header({ version: "5" }), A)), "invalid_version");
  });

  it("replays v4+ patches; patch records never appear in the result", () => {
    const content = jsonl(
      header({ version: 4, title: "old" }),
      A,
      { type: "header_patch", patch: { title: "new", titleSource: "user" } },
      { type: "entry_patch", entryId: "aaaa0001", patch: { message: { role: "user", content: "edited" } } },
      { type: "entry_patch", entryId: "nope", patch: { message: { role: "user" } } },
    );
    const records = parseSessionEntries(content);
    expect(records).toHaveLength(2);
    expect(records[0]).toMatchObject({ type: "session", version: 4, title: "new", titleSource: "user" });
    expect((records[1] as { message: unknown }).message).toEqual({ role: "user", content: "edited" });
  });

  it("a patch ahead of the header is a forward patch: dropped, and the header still found", () => {
    const content = jsonl(
      { type: "header_patch", patch: { title: "forward" } },
      { type: "entry_patch", entryId: "aaaa0001", patch: { message: { role: "user", content: "forward" } } },
      header({ version: 5, title: "base" }),
      A,
      { type: "header_patch", patch: { title: "last" } },
    );
    const records = parseSessionEntries(content);
    expect(records.map((record) => record.type)).toEqual(["session", "message"]);
    expect(isUnknownEntry(records[0] as FileEntry)).toBe(false);
    expect(records[0]).toMatchObject({ title: "last" });
    expect((records[1] as { message: { content: unknown } }).message.content).not.toBe("forward");
  });

  it("below v4 patches are not replayed and still left out", () => {
    const content = jsonl(header({ version: 3, title: "kept" }), A, { type: "header_patch", patch: { title: "ignored" } });
    const records = parseSessionEntries(content);
    expect(records.map((record) => record.type)).toEqual(["session", "message"]);
    expect(records[0]).toMatchObject({ title: "kept" });
  });

  it("checks no header and migrates nothing", () => {
    expect(parseSessionEntries(jsonl(A, { type: "header_patch", patch: { title: "t" } })).map((r) => r.type)).toEqual(["message"]);
    const records = parseSessionEntries(jsonl({ type: "session", id: "s" }, v1("user", "hi")));
    expect(records[0]).not.toHaveProperty("version");
    expect(records[1]).not.toHaveProperty("id");
    expect(isUnknownEntry(records[1] as FileEntry)).toBe(true);
    expect(parseSessionEntries("")).toEqual([]);
  });
});

describe("migrateSessionEntries", () => {
  it("migrates a v1 list in place: ids, a parent chain, hookMessage renamed, entries typed, header at 5", () => {
    const records = parseSessionEntries(jsonl({ type: "session", id: "s", cwd: "/w" }, v1("user", "hi"), v1("hookMessage", "hook")));
    const headerObject = records[0];
    migrateSessionEntries(records);
    expect(records[0]).toBe(headerObject);
    expect(records[0]).toMatchObject({ type: "session", version: 5 });
    const [first, second] = records.slice(1) as FileEntry[];
    expect(isEntryId(first!.id as string)).toBe(true);
    expect(first!.parentId).toBeNull();
    expect(second!.parentId).toBe(first!.id);
    expect((second as { message: { role: string } }).message.role).toBe("custom");
    expect(records.slice(1).every((record) => !isUnknownEntry(record as FileEntry))).toBe(true);
  });

  it("v1 compaction indexes become ids", () => {
    const records = parseSessionEntries(
      jsonl({ type: "session", id: "s" }, v1("user", "a"), v1("assistant", "b"), {
        type: "compaction",
        timestamp: "t",
        summary: "s",
        firstKeptEntryIndex: 2,
        tokensBefore: 9,
      }),
    );
    migrateSessionEntries(records);
    expect(records[3]).toMatchObject({ type: "compaction", firstKeptEntryId: records[2]!.id });
    expect(isUnknownEntry(records[3] as FileEntry)).toBe(false);
  });

  it("is a no-op at version 5", () => {
    const records = parseSessionEntries(jsonl(header(), A, B));
    const before = JSON.stringify(records);
    const objects = [...records];
    migrateSessionEntries(records);
    expect(JSON.stringify(records)).toBe(before);
    records.forEach((record, i) => expect(record).toBe(objects[i]));
  });
});

describe("getLatestCompactionEntry", () => {
  it("is the last typed compaction, or null", () => {
    const compaction = (id: string, summary: string) => ({
      type: "compaction",
      id,
      parentId: "aaaa0001",
      timestamp: "t",
      summary,
      firstKeptEntryId: "aaaa0001",
      tokensBefore: 1,
    });
    const records: SessionFileEntry[] = parseSessionEntries(
      jsonl(header(), A, compaction("c1", "one"), compaction("c2", "two"), { ...compaction("c3", "bad"), tokensBefore: "x" }, B),
    );
    expect(getLatestCompactionEntry(records)?.summary).toBe("two");
    expect(getLatestCompactionEntry(parseSessionEntries(jsonl(header(), A)))).toBeNull();
  });
});

describe("buildSessionContext leaf rules (GJC)", () => {
  const entries = parseSessionEntries(jsonl(header(), A, B)).slice(1) as FileEntry[];
  const texts = (leaf?: string | null) => buildSessionContext(entries, leaf).messages.map((m) => (m.content as { text: string }[])[0]!.text);

  it("null is empty, undefined or unknown is the last entry, a known id is that entry", () => {
    expect(texts(null)).toEqual([]);
    expect(texts()).toEqual(["first", "second"]);
    expect(texts("no-such-id")).toEqual(["first", "second"]);
    expect(texts("aaaa0001")).toEqual(["first"]);
  });
});
