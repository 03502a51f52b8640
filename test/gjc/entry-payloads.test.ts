/**
 * Free-form payloads appended through the `/gjc` face read live exactly as they read back from
 * the file (no `undefined` keys that the JSON line drops), and a custom message's `details` lose
 * GJC's in-flight bookkeeping fields before they are kept or written.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/gjc/session-manager.js";
import { asPersisted, persistedDetails } from "../../src/gjc/entry-payloads.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-entry-payloads-");
  dir = path.join(tmp.path, "sessions");
  fs.mkdirSync(dir, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const options = { terminalId: null, agentDir: "/nonexistent-agent-dir-for-tests" } as const;
const user = { role: "user", content: [{ type: "text", text: "refactor the parser ".repeat(500) }], timestamp: 1 } as AgentMessage;
const assistant = {
  role: "assistant",
  content: [{ type: "text", text: "done" }],
  provider: "p",
  model: "m",
  timestamp: 2,
  usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
  stopReason: "stop",
} as unknown as AgentMessage;

function hasUndefined(value: unknown): boolean {
  if (Array.isArray(value)) return value.some((element) => element === undefined || hasUndefined(element));
  if (typeof value !== "object" || value === null) return false;
  return Object.values(value).some((field) => field === undefined || hasUndefined(field));
}

describe("payloads appended through the face", () => {
  it("read live as they read back after a reopen", async () => {
    const manager = SessionManager.create(tmp.path, dir, undefined, options);
    manager.appendMessage(user);
    manager.appendMessage(assistant);
    manager.appendModeChange("goal", { goal: { id: "goal-1", objective: "finish", status: "complete", tokensUsed: undefined } });
    const messageId = manager.appendCustomMessageEntry(
      "ask.prompt",
      "Choose an option",
      false,
      {
        customInput: undefined,
        selectedOptions: ["Done", undefined],
        nested: { question: undefined, retained: true },
        __pendingDisplayTag: "cmd-1-0",
        ownedCompletions: ["c1"],
        __other: 1,
      },
      "agent",
    );
    manager.appendCustomEntry("goal-completed", { objective: "finish", tokensUsed: undefined, log: "x".repeat(64 * 1024) });
    const live = manager.getEntries();
    expect(live.some(hasUndefined)).toBe(false);
    expect(live.find((entry) => entry.id === messageId)).toMatchObject({
      details: { selectedOptions: ["Done", null], nested: { retained: true }, __other: 1 },
    });
    const details = (live.find((entry) => entry.id === messageId) as { details: Record<string, unknown> }).details;
    expect(Object.keys(details).sort()).toEqual(["__other", "nested", "selectedOptions"]);
    const file = manager.getSessionFile()!;
    await manager.close();

    const reopened = await SessionManager.open(file, dir, undefined, undefined, undefined, options);
    expect(reopened.getEntries()).toEqual(live);
    await reopened.close();
    expect(fs.readFileSync(file, "utf8")).not.toContain("__pendingDisplayTag");
  });

  it("strips the bookkeeping fields from a prepared successor's custom message too", async () => {
    const manager = SessionManager.create(tmp.path, dir, undefined, options);
    manager.appendMessage(user);
    manager.appendMessage(assistant);
    const prepared = await manager.prepareNewSession();
    const id = manager.appendPreparedCustomMessageEntry(prepared, "skill", "body", true, { name: "foo", __pendingDisplayTag: "cmd-2-0" }, "user");
    manager.commitPreparedNewSession(prepared);
    expect(manager.getEntry(id)).toMatchObject({ details: { name: "foo" } });
    expect(Object.hasOwn((manager.getEntry(id) as { details: object }).details, "__pendingDisplayTag")).toBe(false);
    await manager.close();
  });
});

describe("asPersisted and persistedDetails", () => {
  it("return a payload with nothing to change as itself, and never touch the caller's object", () => {
    const clean = { a: 1, b: [1, { c: "x" }], d: null };
    expect(asPersisted(clean)).toBe(clean);
    expect(persistedDetails(clean)).toBe(clean);
    const dirty = { a: undefined, b: { c: undefined, d: 2 }, __pendingDisplayTag: "t" };
    expect(persistedDetails(dirty)).toEqual({ b: { d: 2 } });
    expect(dirty).toEqual({ a: undefined, b: { c: undefined, d: 2 }, __pendingDisplayTag: "t" });
    const when = new Date(0);
    expect(asPersisted({ when }).when).toBe(when);
    expect(persistedDetails("text")).toBe("text");
  });
});
