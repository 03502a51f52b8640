import { describe, expect, it } from "vitest";
import { migrateSession, type HeaderRecord } from "../../src/session/migrate.js";
import type { JsonRecord } from "../../src/session/salvage.js";
import { isEntryId } from "./format-helpers.js";

const v1Header = (fields: Record<string, unknown> = {}): HeaderRecord => ({
  type: "session",
  id: "session-1",
  timestamp: "t",
  cwd: "/w",
  ...fields,
});
const v1Message = (text: string, role = "user"): JsonRecord => ({
  type: "message",
  timestamp: "t",
  message: { role, content: text },
});
const compaction = (firstKeptEntryIndex: unknown): JsonRecord => ({
  type: "compaction",
  timestamp: "t",
  summary: "s",
  firstKeptEntryIndex,
  tokensBefore: 1,
});

/** Ids e0000001, e0000002, ... so expectations can name them. */
function counterIds(): (has: (id: string) => boolean) => string {
  let next = 0;
  return (has) => {
    let id: string;
    do {
      next += 1;
      id = `e${next.toString(16).padStart(7, "0")}`;
    } while (has(id));
    return id;
  };
}

function deepFreeze<T>(value: T): T {
  if (typeof value === "object" && value !== null) {
    for (const inner of Object.values(value)) deepFreeze(inner);
    Object.freeze(value);
  }
  return value;
}

describe("v1 -> v2", () => {
  it("gives every entry a fresh id and a linear parent chain in file order", () => {
    const entries = [v1Message("a"), { type: "model_change", timestamp: "t", model: "p/m" }, v1Message("b")];
    const result = migrateSession(v1Header(), entries);
    const ids = result.entries.map((entry) => entry.id as string);
    expect(ids.every(isEntryId)).toBe(true);
    expect(new Set(ids).size).toBe(3);
    expect(result.entries.map((entry) => entry.parentId)).toEqual([null, ids[0], ids[1]]);
    expect(Object.keys(result.entries[0] as JsonRecord)).toEqual(["type", "timestamp", "message", "id", "parentId"]);
    expect(result.migratedFrom).toBe(1);
    expect(result.header.version).toBe(5);
  });

  it("replaces ids a v1 file happens to carry", () => {
    const result = migrateSession(v1Header(), [{ ...v1Message("a"), id: "old", parentId: "older" }], {
      newEntryId: counterIds(),
    });
    expect(result.entries[0]).toMatchObject({ id: "e0000001", parentId: null });
  });

  it("turns a firstKeptEntryIndex that names an entry into its id (index 0 is the header)", () => {
    const entries = [v1Message("a"), v1Message("b"), compaction(2), v1Message("c")];
    const result = migrateSession(v1Header(), entries, { newEntryId: counterIds() });
    expect(result.entries[2]).toMatchObject({ type: "compaction", firstKeptEntryId: "e0000002" });
    expect(result.entries[2]).not.toHaveProperty("firstKeptEntryIndex");
  });

  it("resolves an index that points forward", () => {
    const result = migrateSession(v1Header(), [compaction(2), v1Message("a")], { newEntryId: counterIds() });
    expect(result.entries[0]).toMatchObject({ firstKeptEntryId: "e0000002" });
  });

  it.each([
    ["past the end", 99],
    ["the header", 0],
    ["negative", -1],
    ["a fraction", 1.5],
  ])("leaves firstKeptEntryId unset when the index is %s, keeping the index", (_name, index) => {
    const result = migrateSession(v1Header(), [v1Message("a"), compaction(index)]);
    expect(result.entries[1]).not.toHaveProperty("firstKeptEntryId");
    expect(result.entries[1]).toMatchObject({ firstKeptEntryIndex: index });
  });

  it("leaves patch records out of the chain", () => {
    const patch = { type: "header_patch", patch: { title: "x" } };
    const result = migrateSession(v1Header(), [v1Message("a"), patch, v1Message("b")], { newEntryId: counterIds() });
    expect(result.entries[1]).toBe(patch);
    expect(result.entries[2]).toMatchObject({ id: "e0000002", parentId: "e0000001" });
  });
});

describe("v2 -> v3", () => {
  it("renames the hookMessage role to custom, in v1 and v2 files only", () => {
    const hook = { type: "message", id: "a", parentId: null, timestamp: "t", message: { role: "hookMessage", content: "x" } };
    for (const version of [undefined, 2]) {
      const result = migrateSession(v1Header({ version }), [hook]);
      expect((result.entries[0]?.message as { role: string }).role).toBe("custom");
    }
    const v3 = migrateSession(v1Header({ version: 3 }), [hook]);
    expect(v3.entries[0]).toBe(hook);
  });

  it("keeps v2 ids and parents", () => {
    const entry = { type: "message", id: "keep0001", parentId: null, timestamp: "t", message: { role: "user" } };
    const result = migrateSession(v1Header({ version: 2 }), [entry]);
    expect(result.entries[0]).toBe(entry);
    expect(result.migratedFrom).toBe(2);
  });
});

describe("v3 -> v5", () => {
  it.each([3, 4])("v%i only gets the new version stamp", (version) => {
    const entry = { type: "custom", customType: "c" };
    const head = v1Header({ version, title: "t" });
    const result = migrateSession(head, [entry]);
    expect(result.header).toEqual({ ...head, version: 5 });
    expect(result.entries[0]).toBe(entry);
  });

  it("a v5 session is returned as it is", () => {
    const head = v1Header({ version: 5 });
    const entries = [v1Message("a")];
    const result = migrateSession(head, entries);
    expect(result.header).toBe(head);
    expect(result.entries).toEqual(entries);
    expect(result.migratedFrom).toBeNull();
  });
});

describe("purity", () => {
  it("in place, it changes the given records and returns them", () => {
    const entries = [v1Message("a", "hookMessage"), compaction(1)];
    const result = migrateSession(v1Header(), entries, { inPlace: true, newEntryId: counterIds() });
    expect(result.entries[0]).toBe(entries[0]);
    expect(result.entries[1]).toBe(entries[1]);
    expect(entries[0]).toMatchObject({ id: "e0000001", parentId: null, message: { role: "custom" } });
    expect(entries[1]).toMatchObject({ firstKeptEntryId: "e0000001" });
    expect(entries[1]).not.toHaveProperty("firstKeptEntryIndex");
  });

  it("never writes to the caller's objects", () => {
    const head = deepFreeze(v1Header());
    const entries = deepFreeze([v1Message("a", "hookMessage"), compaction(1), v1Message("b")]);
    const before = JSON.stringify([head, entries]);
    const result = migrateSession(head, entries);
    expect(JSON.stringify([head, entries])).toBe(before);
    expect(result.entries).not.toBe(entries);
  });
});
