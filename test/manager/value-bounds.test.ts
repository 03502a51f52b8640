/**
 * Depth and size bounds at the door: a value no runtime could serialise and clone is refused by the
 * `append*` that brings it (typed, nothing latched, the session goes on), and one already on disk past
 * the bound loads as a flagged unknown entry: a typed error when handed out, written back as it was read.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, describe, expect, it } from "vitest";

import { MAX_ENTRY_BYTES, MAX_ENTRY_DEPTH, PersistSanitizeError, SessionFormatError, SessionManager, loadSession, validateSession } from "../../src/index.js";
import { MAX_PERSIST_CHARS } from "../../src/session/index.js";
import { thrownBy } from "../helpers/errors.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, readRecords, recordingLogger, user } from "./helpers.js";

const temps: { remove(): void }[] = [];
afterEach(() => temps.splice(0).forEach((t) => t.remove()));

function tempDir(): string {
  const temp = makeTempDir("gjc-bounds-");
  temps.push(temp);
  return temp.path;
}

/** `{ level: { level: ... { leaf } } }`, `levels` objects deep (the outer object is level 1). */
function nested(levels: number, leaf: unknown = "end"): Record<string, unknown> {
  const top: Record<string, unknown> = {};
  let at = top;
  for (let i = 1; i < levels; i++) {
    const next: Record<string, unknown> = {};
    at.level = next;
    at = next;
  }
  at.leaf = leaf;
  return top;
}

/** A tool result with real-looking output and `details` as given. */
function toolResult(details: unknown, text = "src/\n  index.ts\n  session/\n  manager/\n".repeat(200)) {
  return {
    role: "toolResult" as const,
    toolCallId: "call_1",
    toolName: "bash",
    content: [{ type: "text" as const, text }],
    details,
    isError: false,
    timestamp: 3,
  };
}

/** A session with a first exchange persisted; its manager and file. */
function started(dir: string, logger = recordingLogger()) {
  const manager = SessionManager.create(dir, dir, undefined, { logger, terminalId: null });
  manager.appendMessage(user("Run the build and show me the tree of src/."));
  manager.appendMessage(assistant("Running `npm run build`, then listing src/."));
  return { manager, file: manager.getSessionFile() as string, logger };
}

describe("append* refuses a value past the bounds", () => {
  it("a 6,000-deep tool result is refused with nesting_too_deep; the session goes on and persists the rest", async () => {
    const dir = tempDir();
    const { manager, file, logger } = started(dir);
    const error = thrownBy(() => manager.appendMessage(toolResult(nested(6_000))));
    expect(error).toBeInstanceOf(PersistSanitizeError);
    expect(error).toMatchObject({ code: "nesting_too_deep" });
    // Every append kind that carries caller data is checked the same way, before the tree changes.
    const leaf = manager.getLeafId();
    expect(thrownBy(() => manager.appendCustomEntry("plugin-state", nested(MAX_ENTRY_DEPTH + 1)))).toMatchObject({ code: "nesting_too_deep" });
    expect(thrownBy(() => manager.branchWithSummary(leaf, "summary of the branch", nested(10_000)))).toMatchObject({ code: "nesting_too_deep" });
    const cyclic: Record<string, unknown> = { name: "loop" };
    cyclic.self = cyclic;
    expect(thrownBy(() => manager.appendMessage(toolResult(cyclic)))).toMatchObject({ code: "nesting_too_deep" });
    expect(manager.getLeafId()).toBe(leaf);

    // Just inside the bound is accepted, persisted and handed out.
    const inside = manager.appendMessage(toolResult(nested(MAX_ENTRY_DEPTH - 4)));
    manager.appendMessage(user("Now run the tests."));
    manager.appendMessage(assistant("All 412 tests pass."));
    expect(manager.getEntries()).toHaveLength(5);
    await manager.close();
    expect(logger.calls).toEqual([]);
    expect(readRecords(file).filter((r) => r.type === "message")).toHaveLength(5);

    const reopened = await SessionManager.open(file, dir, undefined, undefined, undefined, { terminalId: null });
    expect(reopened.getEntry(inside)).toMatchObject({ type: "message" });
    expect(reopened.getEntries()).toHaveLength(5);
    await reopened.close();
  });

  it("a payload rewrite past the bound is refused and changes nothing", async () => {
    const dir = tempDir();
    const { manager, file } = started(dir);
    const id = manager.appendMessage(toolResult({ exitCode: 0 }));
    manager.appendMessage(assistant("Done."));
    const entry = manager.getEntry(id) as { message: Record<string, unknown> };
    expect(thrownBy(() => manager.applyEntryMessageUpdates([{ ...entry, message: { ...entry.message, details: nested(20_000) } } as never]))).toMatchObject({
      code: "nesting_too_deep",
    });
    expect(manager.getEntry(id)).toEqual(entry);
    manager.appendMessage(user("Thanks."));
    await manager.close();
    const messages = readRecords(file).filter((r) => r.type === "message") as { id: string; message: { details?: unknown } }[];
    expect(messages.map((r) => r.id)).toContain(id);
    expect(messages.find((r) => r.id === id)?.message.details).toEqual({ exitCode: 0 });
    expect(messages).toHaveLength(5);
  });

  it("a value whose JSON line would pass the size bound is refused with value_too_large without being serialised", async () => {
    const dir = tempDir();
    const { manager, file, logger } = started(dir);
    // One shared string many times: small in memory, far past the bound as a line (persistence keeps each string whole up to its cut).
    const chunk = "x".repeat(MAX_PERSIST_CHARS);
    const copies = Math.ceil(MAX_ENTRY_BYTES / MAX_PERSIST_CHARS) + 1;
    const error = thrownBy(() => manager.appendMessage(toolResult({ pages: new Array<string>(copies).fill(chunk) })));
    expect(error).toBeInstanceOf(PersistSanitizeError);
    expect(error).toMatchObject({ code: "value_too_large" });
    // A single huge string is cut by persistence, not refused.
    manager.appendMessage(toolResult({ exitCode: 0 }, "y".repeat(MAX_PERSIST_CHARS * 4)));
    manager.appendMessage(assistant("The output was long."));
    await manager.close();
    expect(logger.calls).toEqual([]);
    expect(readRecords(file).filter((r) => r.type === "message")).toHaveLength(4);
  });
});

describe("a stored value past the bound", () => {
  /** A session file whose third entry holds `details` nested `levels` deep, written as raw JSON text. */
  async function storedDeep(levels: number): Promise<{ dir: string; file: string; deepLine: string }> {
    const dir = tempDir();
    const { manager, file } = started(dir);
    const parentId = manager.getLeafId() as string;
    await manager.close();
    const details = '{"level":'.repeat(levels) + '"end"' + "}".repeat(levels);
    const deepLine =
      `{"type":"message","id":"deep0001","parentId":"${parentId}","timestamp":"2026-03-01T10:00:00.000Z",` +
      `"message":{"role":"toolResult","toolCallId":"call_9","toolName":"fetch","content":[{"type":"text","text":"page"}],"details":${details},"isError":false,"timestamp":3}}`;
    fs.appendFileSync(file, `${deepLine}\n`);
    return { dir, file, deepLine };
  }

  it("100,000 deep on disk: loads flagged, typed on access, context and appends go on, a rewrite keeps the line byte for byte", async () => {
    const { dir, file, deepLine } = await storedDeep(100_000);
    const text = fs.readFileSync(file, "utf8");
    expect(() => validateSession(text)).not.toThrow();
    const loaded = loadSession(text);
    expect(loaded.kind === "loaded" ? loaded.entries.at(-1) : loaded).toMatchObject({ id: "deep0001" });

    const manager = await SessionManager.open(file, dir, undefined, undefined, undefined, { terminalId: null });
    for (const access of [() => manager.getEntries(), () => manager.getEntry("deep0001"), () => manager.getLeafEntry(), () => manager.getBranch()]) {
      const error = thrownBy(access);
      expect(error).toBeInstanceOf(SessionFormatError);
      expect(error).toMatchObject({ code: "nesting_too_deep" });
    }
    expect(manager.buildSessionContext().messages).toHaveLength(2);
    // A rewrite of another entry writes the deep record back unchanged.
    const first = readRecords(file)[1] as { id: string; message: Record<string, unknown> };
    manager.applyEntryMessageUpdates([
      { ...first, message: { ...first.message, content: [{ type: "text", text: "Run the build, then list src/." }] } } as never,
    ]);
    manager.appendMessage(user("Continue from here."));
    await manager.close();
    const lines = fs.readFileSync(file, "utf8").split("\n");
    expect(lines).toContain(deepLine);
    expect(readRecords(file).at(-1)).toMatchObject({ type: "message", message: { role: "user" } });
  });
});
