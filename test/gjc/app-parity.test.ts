/**
 * What GJC 0.15's real app observed differently on the `/gjc` face than on its own store, pinned:
 * the lines it writes (key order included, as GJC's own appends lay them out) and the picker's rows.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let sessionDir: string;
let workspace: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-app-parity-");
  sessionDir = path.join(tmp.path, "sessions");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(sessionDir, { mode: 0o700 });
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = { terminalId: null } as const;
const user = (text: string) => ({ role: "user", content: [{ type: "text", text }], timestamp: 1 }) as AgentMessage;
const assistant = (text: string) =>
  ({
    role: "assistant",
    content: [{ type: "text", text }],
    provider: "p",
    model: "m",
    timestamp: 2,
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    stopReason: "stop",
  }) as AgentMessage;

/** A held message entry, as the tests read it. */
const held = (entry: unknown) => entry as { message: { content: { text?: string; arguments?: unknown }[] }; evictedContent?: unknown };

function linesOf(file: string): Record<string, unknown>[] {
  return fs
    .readFileSync(file, "utf8")
    .split("\n")
    .filter(Boolean)
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("lines as GJC's app writes them", () => {
  it("custom and custom_message entries carry their own fields before id, parent and time; a compaction its short summary after the summary", async () => {
    const manager = SessionManager.create(workspace, sessionDir, undefined, options);
    const question = manager.appendMessage(user("explain the tokenizer ".repeat(200)));
    manager.appendMessage(assistant("it splits text"));
    manager.appendCustomEntry("claims-ledger", { claims: [{ id: "c1", text: "x" }] });
    manager.appendCustomEntry("no-data");
    manager.appendCustomMessageEntry("volatile-project-context", "<system-reminder>tree</system-reminder>", false, { source: "tree" }, "agent");
    manager.appendCompaction("what happened so far", "short", question, 1234, { readFiles: ["a.ts"] }, false, { kept: true });
    manager.appendCompaction("again, without a short summary", undefined, question, 99);
    await manager.flush();
    const byType = (type: string) => linesOf(manager.getSessionFile()!).filter((line) => line.type === type);

    expect(byType("custom").map((line) => Object.keys(line))).toEqual([
      ["type", "customType", "data", "id", "parentId", "timestamp"],
      ["type", "customType", "id", "parentId", "timestamp"],
    ]);
    expect(Object.keys(byType("custom_message")[0]!)).toEqual([
      "type",
      "customType",
      "content",
      "display",
      "details",
      "attribution",
      "id",
      "parentId",
      "timestamp",
    ]);
    expect(byType("compaction").map((line) => Object.keys(line))).toEqual([
      ["type", "id", "parentId", "timestamp", "summary", "shortSummary", "firstKeptEntryId", "tokensBefore", "details", "fromExtension", "preserveData"],
      ["type", "id", "parentId", "timestamp", "summary", "firstKeptEntryId", "tokensBefore"],
    ]);
    // Messages and the other types keep the base fields first, as GJC writes them.
    expect(Object.keys(byType("message")[0]!)).toEqual(["type", "id", "parentId", "timestamp", "message"]);
    const [custom] = byType("custom");
    expect(manager.getEntry(custom!.id as string)).toEqual(custom);
    await manager.close();

    const reopened = await SessionManager.open(manager.getSessionFile()!, undefined, undefined, undefined, undefined, options);
    expect(
      reopened
        .getEntries()
        .filter((entry) => entry.type === "custom")
        .map((entry) => Object.keys(entry)),
    ).toEqual([
      ["type", "customType", "data", "id", "parentId", "timestamp"],
      ["type", "customType", "id", "parentId", "timestamp"],
    ]);
    await reopened.close();
  });
});

describe("the resume picker's rows", () => {
  it("name the session a branch came from as parentSessionPath, as GJC's rows do", async () => {
    const manager = SessionManager.create(workspace, sessionDir, undefined, options);
    const question = manager.appendMessage(user("first question"));
    manager.appendMessage(assistant("first answer"));
    await manager.flush();
    const original = manager.getSessionFile()!;
    manager.createBranchedSession(question);
    manager.appendMessage(assistant("in the branch"));
    await manager.flush();
    const branched = manager.getSessionFile()!;
    expect(branched).not.toBe(original);
    const parent = linesOf(branched)[0]!.parentSession;
    expect(typeof parent).toBe("string");

    for (const rows of [await SessionManager.listForResumePickerReadOnly(workspace, sessionDir), await SessionManager.list(workspace, sessionDir)]) {
      const byPath = new Map(rows.map((row) => [row.path, row]));
      expect(byPath.get(branched)).toMatchObject({ parentSessionPath: parent });
      expect(byPath.get(original)).not.toHaveProperty("parentSessionPath");
    }
    await manager.close();
  });
});

/** A GJC-written transcript after its compaction evicted the history before the kept entries: placeholders in the lines, the payloads in the agent directory's blob store. */
function gjcEvictedSession(agentDir: string, dir: string, options: { dropBlob?: boolean; laterTurns?: number } = {}) {
  const blobs = path.join(agentDir, "blobs");
  fs.mkdirSync(blobs, { recursive: true, mode: 0o700 });
  const notice = "[Compacted history content evicted to durable cold storage]";
  const question = "explain how the tokenizer splits identifiers, with the edge cases: ".repeat(40);
  const args = { path: "src/tokenizer.ts", ranges: Array.from({ length: 60 }, (_, i) => ({ from: i * 10, to: i * 10 + 9 })) };
  const payload = (text: string, encoding: "utf8" | "json", drop = false) => {
    const bytes = Buffer.from(text, "utf8");
    const sha256 = createHash("sha256").update(bytes).digest("hex");
    if (!drop) fs.writeFileSync(path.join(blobs, sha256), bytes, { mode: 0o600 });
    return { kind: "cold_spill", ref: `blob:sha256:${sha256}`, encoding, originalChars: text.length, sha256, bytes: bytes.length };
  };
  const marker = (payloads: Record<string, unknown>) => ({
    evictedAt: 1796655013933,
    reason: "compacted_history",
    compactionEntryId: "c0mpact1",
    firstKeptEntryId: "k3pt0001",
    payloads,
  });
  const time = "2026-12-07T14:50:10.845Z";
  const lines = [
    { type: "session", version: 5, id: "01a250fb-d41d-77d4-b4c9-2af4ac578c76", timestamp: time, cwd: workspace },
    {
      type: "message",
      id: "u5er0001",
      parentId: null,
      timestamp: time,
      message: { role: "user", content: [{ type: "text", text: notice }], attribution: "user", timestamp: 1 },
      evictedContent: marker({ "message.content.0.text": payload(question, "utf8", options.dropBlob) }),
    },
    {
      type: "message",
      id: "a55t0001",
      parentId: "u5er0001",
      timestamp: time,
      message: {
        role: "assistant",
        content: [
          { type: "text", text: "reading it" },
          { type: "toolCall", id: "call_1", name: "read", arguments: { __gjcColdSpillArguments: true, refPath: "message.content.1.arguments", notice } },
        ],
        provider: "p",
        model: "m",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        stopReason: "toolUse",
        timestamp: 2,
      },
      evictedContent: marker({ "message.content.1.arguments": payload(JSON.stringify(args), "json") }),
    },
    {
      type: "message",
      id: "t00l0001",
      parentId: "a55t0001",
      timestamp: time,
      message: {
        role: "toolResult",
        toolCallId: "call_1",
        toolName: "read",
        content: [{ type: "text", text: "export function tokenize() {}" }],
        isError: false,
        timestamp: 3,
      },
    },
    {
      type: "message",
      id: "k3pt0001",
      parentId: "t00l0001",
      timestamp: time,
      message: { role: "user", content: [{ type: "text", text: "and now?" }], attribution: "user", timestamp: 4 },
    },
    {
      type: "compaction",
      id: "c0mpact1",
      parentId: "k3pt0001",
      timestamp: time,
      summary: "the tokenizer was read",
      firstKeptEntryId: "k3pt0001",
      tokensBefore: 4000,
    },
    {
      type: "message",
      id: "a55t0002",
      parentId: "c0mpact1",
      timestamp: time,
      message: {
        role: "assistant",
        content: [{ type: "text", text: "now it is compacted" }],
        provider: "p",
        model: "m",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        stopReason: "stop",
        timestamp: 5,
      },
    },
  ];
  for (let turn = 0, parentId = "a55t0002"; turn < (options.laterTurns ?? 0); turn++) {
    const id = `later${String(turn).padStart(6, "0")}`;
    const role = turn % 2 === 0 ? "user" : "assistant";
    const message =
      role === "user"
        ? { role, content: [{ type: "text", text: `follow-up ${turn}` }], timestamp: 10 + turn }
        : {
            role,
            content: [{ type: "text", text: `answer ${turn}` }],
            provider: "p",
            model: "m",
            usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
            stopReason: "stop",
            timestamp: 10 + turn,
          };
    lines.push({ type: "message", id, parentId, timestamp: time, message } as never);
    parentId = id;
  }
  const file = path.join(dir, "2026-12-07T14-50-10-845Z_01a250fb-d41d-77d4-b4c9-2af4ac578c76.jsonl");
  fs.writeFileSync(file, lines.map((line) => JSON.stringify(line)).join("\n") + "\n", { mode: 0o600 });
  return { file, question, args, notice };
}

describe("transcripts GJC's compaction evicted", () => {
  it("read back whole: the fidelity copy, the export and the context after navigating before the compaction hold the evicted payloads; the file is not touched", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const { file, question, args } = gjcEvictedSession(agentDir, sessionDir);
    const before = fs.readFileSync(file, "utf8");
    const manager = await SessionManager.open(file, undefined, undefined, undefined, undefined, { terminalId: null, agentDir });
    const restored = held(manager.getEntryForFidelity("u5er0001"));
    expect(restored.message.content[0]!.text).toBe(question);
    expect(restored).not.toHaveProperty("evictedContent");
    const call = held(manager.getEntry("a55t0001")).message.content[1]!;
    expect(call.arguments).toEqual(args);
    const exported: unknown[] = [];
    manager.visitEntriesForExport((entry) => exported.push(entry));
    expect(JSON.stringify(exported)).not.toContain("evicted to durable cold storage");
    expect(manager.getLoadReport().unresolvedBlobs).toEqual([]);

    manager.branch("t00l0001");
    const context = manager.buildSessionContext().messages as unknown as { role: string; content: { type: string; text?: string; arguments?: unknown }[] }[];
    expect(context.map((message) => message.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(context[0]!.content[0]!.text).toBe(question);
    expect(context[1]!.content[1]!.arguments).toEqual(args);
    await manager.close();
    expect(fs.readFileSync(file, "utf8")).toBe(before);
  });

  it("keep the placeholder and name the blob as unresolved when the evicted payload is gone", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const { file, notice } = gjcEvictedSession(agentDir, sessionDir, { dropBlob: true });
    const manager = await SessionManager.open(file, undefined, undefined, undefined, undefined, { terminalId: null, agentDir });
    const kept = held(manager.getEntryForFidelity("u5er0001"));
    expect(kept.message.content[0]!.text).toBe(notice);
    expect(kept).toHaveProperty("evictedContent.reason", "compacted_history");
    expect(manager.getLoadReport().unresolvedBlobs).toEqual([expect.objectContaining({ entryId: "u5er0001", reason: "missing" })]);
    // The other entry's payload is there and comes back.
    expect(held(manager.getEntry("a55t0001")).message.content[1]!.arguments).toHaveProperty("path", "src/tokenizer.ts");
    await manager.close();
  });

  it("read back whole through a managed scope's indexed open of a long session too", async () => {
    const agentDir = path.join(tmp.path, "agent");
    const destination = SessionManager.managedDestination(workspace, agentDir);
    const first = SessionManager.create(workspace, destination, undefined, options);
    first.appendMessage(user("make the scope"));
    await first.flush();
    const scopeDir = path.dirname(first.getSessionFile()!);
    await first.close();
    const { file, question, args } = gjcEvictedSession(agentDir, scopeDir, { laterTurns: 12_000 });
    for (let pass = 0; pass < 2; pass++) {
      // The first open builds the line index, the second reads through it.
      const manager = await SessionManager.open(file, destination, undefined, undefined, undefined, options);
      expect(manager.getLoadReport().lineIndex).toBe(pass === 0 ? "no usable index" : "used");
      expect(manager.getEntries()).toHaveLength(12_006);
      expect(held(manager.getEntryForFidelity("u5er0001")).message.content[0]!.text).toBe(question);
      manager.branch("t00l0001");
      const context = manager.buildSessionContext().messages as unknown as { content: { arguments?: unknown; text?: string }[] }[];
      expect(context[0]!.content[0]!.text).toBe(question);
      expect(context[1]!.content[1]!.arguments).toEqual(args);
      await manager.close();
    }
  });
});
