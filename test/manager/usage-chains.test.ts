/**
 * The GJC manager's usage totals (every entry of the file, kept up on load and append),
 * configured model chains, clearModelRole and the context_clear root, through the public entry
 * on real files.
 */
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, readRecords, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let dir: string;
let extras: SessionManagerOptions;
beforeEach(() => {
  tmp = makeTempDir("gjc-usage-");
  dir = path.join(tmp.path, "sessions");
  extras = { terminalId: null, logger: recordingLogger() };
});
afterEach(() => tmp.remove());

type Usage = ReturnType<typeof usage>;

function answered(text: string, usage: Usage) {
  return { ...assistant(text), usage };
}

const usage = (input: number, output: number, cost: number, extra: { premiumRequests?: number } = {}) => ({
  input,
  output,
  cacheRead: 1,
  cacheWrite: 2,
  cost: { total: cost },
  ...extra,
});

describe("getUsageStatistics", () => {
  it("totals every branch of the file, after appends and again after a reopen", async () => {
    const manager = SessionManager.create("/w", dir, undefined, extras);
    expect(manager.getUsageStatistics()).toEqual({ input: 0, output: 0, cacheRead: 0, cacheWrite: 0, premiumRequests: 0, cost: 0 });
    const q = manager.appendMessage(user("q"));
    manager.appendMessage(answered("a1", usage(10, 20, 0.5, { premiumRequests: 1 })));
    manager.branch(q);
    manager.appendMessage(answered("a2", usage(5, 7, 0.25)));
    // A sub-agent's usage arrives in the task tool's result.
    manager.appendMessage({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "task",
      content: [{ type: "text", text: "done" }],
      details: { usage: usage(100, 1, 1) },
      isError: false,
      timestamp: 3,
    });
    // Not counted: a negative count, and a tool result of another tool.
    manager.appendMessage(answered("bad", usage(-1, 1, 1)));
    manager.appendMessage({
      role: "toolResult",
      toolCallId: "c2",
      toolName: "bash",
      content: [{ type: "text", text: "x" }],
      details: { usage: usage(1000, 1000, 1000) },
      isError: false,
      timestamp: 4,
    });
    const expected = { input: 115, output: 28, cacheRead: 3, cacheWrite: 6, premiumRequests: 1, cost: 1.75 };
    expect(manager.getUsageStatistics()).toEqual(expected);
    // a1 is off the current branch, and still counted: the totals are the file's.
    expect(manager.getBranch().map((e) => e.id)).not.toContain(manager.getChildren(q)[0]!.id);
    const snapshot = manager.getUsageStatistics();
    manager.appendMessage(answered("a3", usage(1, 1, 0)));
    expect(snapshot).toEqual(expected);
    expect(manager.getUsageStatistics().input).toBe(116);
    const file = manager.getSessionFile()!;
    await manager.close();

    const reopened = await SessionManager.open(file, dir, undefined, undefined, undefined, extras);
    expect(reopened.getUsageStatistics()).toEqual({ ...expected, input: 116, output: 29, cacheRead: 4, cacheWrite: 8 });
    // A switch to another session starts its own totals.
    await reopened.newSession();
    expect(reopened.getUsageStatistics().input).toBe(0);
    await reopened.setSessionFile(file);
    expect(reopened.getUsageStatistics().input).toBe(116);
    await reopened.close();
  });

  it("is zero for an in-memory session and counts what it appends", () => {
    const memory = SessionManager.inMemory("/w");
    expect(memory.getUsageStatistics().input).toBe(0);
    memory.appendMessage(answered("a", usage(3, 4, 0.1)));
    expect(memory.getUsageStatistics()).toMatchObject({ input: 3, output: 4, cost: 0.1 });
  });

  it("a branched session counts the copied path only", async () => {
    const manager = SessionManager.create("/w", dir, undefined, extras);
    const q = manager.appendMessage(user("q"));
    const a1 = manager.appendMessage(answered("a1", usage(10, 1, 0)));
    manager.branch(q);
    manager.appendMessage(answered("a2", usage(20, 1, 0)));
    manager.createBranchedSession(a1);
    expect(manager.getUsageStatistics().input).toBe(10);
    await manager.close();
  });
});

describe("configured model chains, cleared roles, context clear", () => {
  it("appendConfiguredModelChain feeds the context; runtime fields are not written; cleared removes", async () => {
    const manager = SessionManager.create("/w", dir, undefined, extras);
    manager.appendMessage(user("q"));
    const chain = { role: "default", entries: ["a/one", "b/two"], origin: "settings", identity: "cfg-1", activeIndex: 1 };
    const id = manager.appendConfiguredModelChain(chain);
    manager.appendConfiguredModelChain({ role: "smol", entries: ["c/three"], origin: "subagent", explicitHead: true });
    manager.appendMessage(assistant("a"));
    expect(manager.getEntry(id)).toMatchObject({ type: "configured_model_chain", role: "default", entries: ["a/one", "b/two"], identity: "cfg-1" });
    expect(manager.getEntry(id)).not.toHaveProperty("activeIndex");
    expect(manager.buildSessionContext().configuredModelChains).toEqual({
      default: { role: "default", entries: ["a/one", "b/two"], origin: "settings", identity: "cfg-1" },
      smol: { role: "smol", entries: ["c/three"], origin: "subagent", explicitHead: true },
    });
    manager.appendConfiguredModelChain({ role: "smol", entries: [], origin: "subagent", cleared: true });
    expect(Object.keys(manager.buildSessionContext().configuredModelChains)).toEqual(["default"]);
    const file = manager.getSessionFile()!;
    await manager.close();
    const reopened = await SessionManager.open(file, dir, undefined, undefined, undefined, extras);
    expect(Object.keys(reopened.buildSessionContext().configuredModelChains)).toEqual(["default"]);
    await reopened.close();
  });

  it("clearModelRole removes a role written by appendModelChange", () => {
    const manager = SessionManager.inMemory("/w");
    manager.appendModelChange("a/one");
    manager.appendModelChange("b/two", "smol");
    expect(manager.buildSessionContext().models).toMatchObject({ default: "a/one", smol: "b/two" });
    const cleared = manager.clearModelRole("smol");
    expect(manager.getEntry(cleared)).toMatchObject({ type: "model_change", model: "", role: "smol", cleared: true });
    expect(manager.buildSessionContext().models).not.toHaveProperty("smol");
  });

  it("appendContextClearEntry is a root written as one line; the old path stays reachable", async () => {
    const manager = SessionManager.create("/w", dir, undefined, extras);
    const q = manager.appendMessage(user("q"));
    manager.appendMessage(assistant("a"));
    const clear = manager.appendContextClearEntry();
    expect(manager.getLeafId()).toBe(clear);
    expect(manager.getEntry(clear)).toEqual({ type: "custom", customType: "context_clear", id: clear, parentId: null, timestamp: expect.any(String) });
    expect(manager.buildSessionContext().messages).toEqual([]);
    expect(manager.getTree().map((node) => node.entry.id)).toEqual([q, clear]);
    manager.branch(q);
    expect(manager.buildSessionContext().messages).toHaveLength(1);
    await manager.close();
    const records = readRecords(manager.getSessionFile()!);
    expect(records.at(-1)).toMatchObject({ id: clear, parentId: null, customType: "context_clear" });
  });
});
