/**
 * What GJC 0.15's real app observed differently on the `/gjc` face than on its own store, pinned:
 * the lines it writes (key order included, as GJC's own appends lay them out) and the picker's rows.
 */
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
  ({ role: "assistant", content: [{ type: "text", text }], provider: "p", model: "m", timestamp: 2, usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 }, stopReason: "stop" }) as AgentMessage;

function linesOf(file: string): Record<string, unknown>[] {
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((line) => JSON.parse(line) as Record<string, unknown>);
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
    expect(Object.keys(byType("custom_message")[0]!)).toEqual(["type", "customType", "content", "display", "details", "attribution", "id", "parentId", "timestamp"]);
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
    expect(reopened.getEntries().filter((entry) => entry.type === "custom").map((entry) => Object.keys(entry))).toEqual([
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

    for (const rows of [
      await SessionManager.listForResumePickerReadOnly(workspace, sessionDir),
      await SessionManager.list(workspace, sessionDir),
    ]) {
      const byPath = new Map(rows.map((row) => [row.path, row]));
      expect(byPath.get(branched)).toMatchObject({ parentSessionPath: parent });
      expect(byPath.get(original)).not.toHaveProperty("parentSessionPath");
    }
    await manager.close();
  });
});
