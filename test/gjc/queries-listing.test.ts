/**
 * Reads, revisions, memory accounting and the resume picker's listings on the `/gjc` face.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import { getSessionMessageEntryId, getSessionMessageObservationId } from "../../src/gjc/messages.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let agentDir: string;
let workspace: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-queries-");
  agentDir = path.join(tmp.path, "agent");
  workspace = path.join(tmp.path, "work");
  fs.mkdirSync(workspace, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = () => ({ terminalId: null, agentDir });
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

describe("reads and revisions", () => {
  it("moves each revision with what it counts, and reports what the session holds", async () => {
    const manager = SessionManager.create(workspace, path.join(tmp.path, "s"), undefined, options());
    fs.mkdirSync(path.join(tmp.path, "s"), { mode: 0o700 });
    expect(manager.hasHistoryEntries()).toBe(false);
    expect(manager.getLastModelChangeRole()).toBeUndefined();
    expect(manager.revisionSnapshot()).toEqual({ entry: 0, leaf: 0, headerExport: 0, label: 0, replayMetadata: 0 });

    const model = manager.appendModelChange("p/m", "smol");
    expect(manager.hasHistoryEntries()).toBe(true);
    expect(manager.getLastModelChangeRole()).toBe("smol");
    const question = manager.appendMessage(user("q ".repeat(500)));
    manager.appendMessage(assistant("a"));
    expect(manager.revisionSnapshot()).toEqual({ entry: 3, leaf: 3, headerExport: 0, label: 0, replayMetadata: 0 });
    manager.appendLabelChange(question, "the question");
    expect(manager.revisionSnapshot().label).toBe(1);
    await manager.setSessionName("A title", "user");
    expect(manager.revisionSnapshot().headerExport).toBe(1);
    manager.branch(model);
    expect(manager.revisionSnapshot()).toMatchObject({ entry: 4, leaf: 5 });
    expect(manager.getLastModelChangeRole()).toBe("smol");
    const entry = manager.getEntry(question)! as { message: AgentMessage };
    manager.applyEntryMessageUpdates([{ ...entry, message: user("pruned") } as never]);
    expect(manager.revisionSnapshot().replayMetadata).toBe(1);

    expect(manager.getActivePathEntriesCanonical("no-such-id")).toEqual([]);
    expect(manager.getActivePathEntriesCanonical().map((e) => e.id)).toEqual([model]);
    const visited: string[] = [];
    manager.visitEntriesForExport((e) => visited.push(e.id as string));
    expect(visited).toEqual(manager.getEntries().map((e) => e.id));
    expect(() => manager.evictCompactedContent("nope", model)).toThrow(expect.objectContaining({ code: "unknown_entry", message: "Entry nope not found" }));
    // An entry that is no compaction is refused as GJC refuses it.
    expect(() => manager.evictCompactedContent(question, model)).toThrow(
      expect.objectContaining({ code: "unknown_entry", message: `Compaction entry ${model} not found` }),
    );

    const held = manager.getEntries().reduce((sum, e) => sum + Buffer.byteLength(JSON.stringify(e)) + 1, 0);
    expect(manager.getSessionMemoryStats()).toMatchObject({
      hotResidentBytes: held,
      totalAccountedBytes: held,
      coldRetirementActive: false,
      allocatedCacheBytes: 0,
    });
    expect(() => manager.setSessionMemoryMode("bogus" as never)).toThrow(expect.objectContaining({ code: "invalid_options" }));
    manager.setSessionMemoryMode("off");
    expect(manager.getSessionMemoryMode()).toBe("off");
    expect(manager.getTranscriptFileBytes()).toBe(fs.statSync(manager.getSessionFile()!).size);
    await manager.close();
  });
});

describe("message identity on the manager", () => {
  it("links appended messages, context messages and copies to their entries", async () => {
    const manager = SessionManager.inMemory(workspace);
    const prompt = user("which entry am I?");
    const promptId = manager.appendMessage(prompt);
    expect(getSessionMessageEntryId(prompt)).toBe(promptId);
    const answerId = manager.appendMessage(assistant("this one"));
    const note = manager.appendCustomMessageEntry("note", "a note", true);
    const context = manager.buildSessionContext();
    expect(context.messages.map((m) => getSessionMessageEntryId(m))).toEqual([promptId, answerId, note]);
    expect(getSessionMessageObservationId(context.messages[2]!)).toBe(`session:${manager.getSessionId()}:entry:${note}`);
    const copy = manager.getEntry(answerId) as { message: AgentMessage };
    expect(getSessionMessageEntryId(copy.message)).toBe(answerId);
    expect(manager.getBranch().map((e) => (e.type === "message" ? getSessionMessageEntryId((e as { message: AgentMessage }).message) : e.id))).toEqual([
      promptId,
      answerId,
      note,
    ]);
    await manager.close();
  });
});

describe("the resume picker's listings", () => {
  /** A finished session file with `id` written at `file`, modified at `mtime` (seconds). */
  function writeSession(file: string, id: string, mtime: number): void {
    fs.mkdirSync(path.dirname(file), { recursive: true, mode: 0o700 });
    const header = { type: "session", version: 5, id, timestamp: "2026-07-18T13:22:00.000Z", cwd: workspace };
    const entry = { type: "message", id: "e1", parentId: null, timestamp: "2026-07-18T13:22:01.000Z", message: user(`hello from ${id}`) };
    fs.writeFileSync(file, `${JSON.stringify(header)}\n${JSON.stringify(entry)}\n`, { mode: 0o600 });
    fs.utimesSync(file, mtime, mtime);
  }

  it("lists the managed scope and the project's own transcripts, merged by id, newest first, writing nothing", async () => {
    const manager = SessionManager.create(workspace, SessionManager.managedDestination(workspace, agentDir), undefined, options());
    manager.appendMessage(user("managed"));
    manager.appendMessage(assistant("answer"));
    const managed = manager.getSessionFile()!;
    await manager.close();
    fs.utimesSync(managed, 1_700_000_000, 1_700_000_000);
    const gjc = path.join(workspace, ".gjc");
    const ids = {
      direct: "019f0000-0000-7000-8000-000000000001",
      agent: "019f0000-0000-7000-8000-000000000002",
      nested: "019f0000-0000-7000-8000-000000000003",
    };
    writeSession(path.join(gjc, "direct.jsonl"), ids.direct, 1_700_000_300);
    writeSession(path.join(gjc, "tools", "agent-session", "a.jsonl"), ids.agent, 1_700_000_200);
    writeSession(path.join(gjc, "sessions", "deep", "n.jsonl"), ids.nested, 1_700_000_100);
    writeSession(path.join(gjc, "elsewhere", "ignored.jsonl"), "019f0000-0000-7000-8000-000000000009", 1_700_000_400);
    writeSession(path.join(gjc, ".hidden.jsonl"), "019f0000-0000-7000-8000-00000000000a", 1_700_000_400);
    writeSession(path.join(gjc, "sessions", ".staging", "attempt.jsonl"), "019f0000-0000-7000-8000-00000000000b", 1_700_000_400);
    // The same session seen twice: the newer row wins.
    writeSession(path.join(gjc, "sessions", "copy.jsonl"), ids.direct, 1_700_000_050);
    const scopeDir = path.dirname(managed);
    const before = fs.readdirSync(scopeDir).sort();

    const rows = await SessionManager.listManagedForResumePickerReadOnly(workspace, agentDir);
    expect(rows.map((row) => row.path)).toEqual([
      path.join(gjc, "direct.jsonl"),
      path.join(gjc, "tools", "agent-session", "a.jsonl"),
      path.join(gjc, "sessions", "deep", "n.jsonl"),
      managed,
    ]);
    expect(fs.readdirSync(scopeDir).sort()).toEqual(before);

    const reopened = await SessionManager.open(managed, SessionManager.managedDestination(workspace, agentDir), undefined, undefined, undefined, options());
    expect((await reopened.listForResumePickerReadOnly()).map((row) => row.id)).toEqual(rows.map((row) => row.id));
    await reopened.close();
  });

  it("lists a session directory's sessions; anything unusable lists as empty", async () => {
    const dir = path.join(tmp.path, "explicit");
    writeSession(path.join(dir, "2026-07-18T13-22-00-000Z_x.jsonl"), "019f0000-0000-7000-8000-00000000000c", 1_700_000_000);
    expect((await SessionManager.listForResumePickerReadOnly(workspace, dir)).map((row) => row.id)).toEqual(["019f0000-0000-7000-8000-00000000000c"]);
    expect(await SessionManager.listForResumePickerReadOnly(workspace, path.join(tmp.path, "missing"))).toEqual([]);
    const explicit = await SessionManager.open(path.join(dir, "2026-07-18T13-22-00-000Z_x.jsonl"), undefined, undefined, undefined, undefined, options());
    expect((await explicit.listForResumePickerReadOnly()).map((row) => row.path)).toEqual([path.join(dir, "2026-07-18T13-22-00-000Z_x.jsonl")]);
    expect(explicit.isManagedDestination()).toBe(false);
    await explicit.close();
  });
});
