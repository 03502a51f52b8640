import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { serializeSessionLines } from "../../src/session/load.js";
import { isUnknownEntry, UNKNOWN_ENTRY } from "../../src/session/schemas.js";
import { validateSession } from "../../src/session/load.js";
import { asJson, isEntryId, loaded } from "./format-helpers.js";

const dir = new URL("../fixtures/peer-sessions/", import.meta.url);
const read = (name: string): Buffer => readFileSync(new URL(name, dir));

const GAJAE_V4 = "gajae-code__session-v4.jsonl";
const LARGE_HEAD20 = "pi-mono__large-session__v1-head20.jsonl";
const BEFORE_COMPACTION = "pi-mono__before-compaction__v1-compaction-excerpt.jsonl";
const INLINE_IMAGE = "pi-mono__compact-root__v1-inline-image-excerpt.jsonl";

describe("peer session fixtures", () => {
  it("gajae v4: four entries, the id-less custom tail kept as an unknown entry", () => {
    const session = loaded(read(GAJAE_V4));
    expect(session.onDiskVersion).toBe(4);
    expect(session.migratedFrom).toBe(4);
    expect(session.header.version).toBe(5);
    expect(session.header.title).toBe("Fixture Session");
    expect(session.header.titleSource).toBe("auto");
    expect(session.entries.map((entry) => entry.type)).toEqual(["model_change", "thinking_level_change", "message", "custom"]);
    const tail = session.entries[3];
    expect(tail !== undefined && isUnknownEntry(tail)).toBe(true);
    expect(tail?.[UNKNOWN_ENTRY as never]).toBe("invalid_fields");
    expect(tail?.id).toBeUndefined();
    expect(session.entries.slice(0, 3).every((entry) => !isUnknownEntry(entry))).toBe(true);
    expect(session.invalidLines).toEqual([]);
    expect(session.unknownEntries).toBe(1);
  });

  it("gajae v4: a rewrite changes only the header version", () => {
    const original = read(GAJAE_V4).toString("utf8");
    const rewritten = serializeSessionLines(loaded(read(GAJAE_V4)).lines).toString("utf8");
    expect(rewritten).toBe(original.replace('"version":4', '"version":5'));
  });

  it("large-session head20: 19 entries with fresh ids on a linear chain", () => {
    const session = loaded(read(LARGE_HEAD20));
    expect(session.migratedFrom).toBe(1);
    expect(session.entries).toHaveLength(19);
    const ids = session.entries.map((entry) => entry.id as string);
    expect(ids.every(isEntryId)).toBe(true);
    expect(new Set(ids).size).toBe(19);
    expect(session.entries.map((entry) => entry.parentId)).toEqual([null, ...ids.slice(0, -1)]);
    // The header's v1 fields survive migration.
    expect(session.header).toMatchObject({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    // A pi model_change ({provider, modelId}, no model, no role) is a typed entry, fields as read.
    const modelChange = session.entries.find((entry) => entry.type === "model_change");
    expect(modelChange !== undefined && isUnknownEntry(modelChange)).toBe(false);
    expect(modelChange).toMatchObject({ provider: "anthropic", modelId: "claude-sonnet-4-5" });
    expect(modelChange).not.toHaveProperty("model");
  });

  it("before-compaction excerpt: 5 entries, the dangling index leaves firstKeptEntryId unset", () => {
    const session = loaded(read(BEFORE_COMPACTION));
    expect(session.entries).toHaveLength(5);
    const compaction = session.entries[0];
    expect(compaction?.type).toBe("compaction");
    expect(compaction !== undefined && isUnknownEntry(compaction)).toBe(false);
    expect(compaction).not.toHaveProperty("firstKeptEntryId");
    expect(compaction).toMatchObject({ firstKeptEntryIndex: 293, tokensBefore: 175004 });
    expect(session.header).toHaveProperty("branchedFrom");
  });

  it("inline-image excerpt: 1 entry, the image data untouched", () => {
    const text = read(INLINE_IMAGE).toString("utf8");
    const session = loaded(text);
    expect(session.entries).toHaveLength(1);
    const original = JSON.parse(text.split("\n")[1] as string);
    const entry = session.entries[0] as { message: unknown };
    expect(entry.message).toEqual(original.message);
  });

  it.each([GAJAE_V4, LARGE_HEAD20, BEFORE_COMPACTION, INLINE_IMAGE])("%s: a rewrite reloads to the same state without migrating again", (name) => {
    const first = loaded(read(name));
    const second = loaded(serializeSessionLines(first.lines));
    expect(second.migratedFrom).toBeNull();
    expect(asJson(second.header)).toEqual(asJson(first.header));
    expect(asJson(second.entries)).toEqual(asJson(first.entries));
    expect(second.lines).toHaveLength(first.lines.length);
  });

  it("strict validation of the v1 head20 accepts pi's model_change shape", () => {
    expect(validateSession(read(LARGE_HEAD20))).toEqual({ ok: true, violations: [] });
  });
});
