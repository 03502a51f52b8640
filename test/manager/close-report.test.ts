/**
 * close() says how many appended entries it leaves unwritten: a session with no assistant
 * message never starts its file (the peers' rule), and closing it must not drop those
 * entries in silence.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager, type SessionManagerOptions } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, recordingLogger, user } from "./helpers.js";

let tmp: { path: string; remove(): void };
let sessionDir: string;
let base: SessionManagerOptions;

beforeEach(() => {
  tmp = makeTempDir("gjc-close-report-");
  sessionDir = path.join(tmp.path, "sessions");
  base = { agentDir: path.join(tmp.path, "agent"), logger: recordingLogger(), terminalId: null };
});
afterEach(() => tmp.remove());

describe("close() reports unpersisted entries", () => {
  it("a session without an assistant message reports every appended entry, on every close", async () => {
    const manager = SessionManager.create("/work", sessionDir, undefined, base);
    manager.appendMessage(user("one"));
    manager.appendMessage({ role: "asistant", content: [{ type: "text", text: "typo'd role" }], timestamp: 2 } as never);
    expect(await manager.close()).toEqual({ unpersistedEntries: 2 });
    expect(await manager.close()).toEqual({ unpersistedEntries: 2 });
    expect(fs.existsSync(manager.getSessionFile()!)).toBe(false);
  });

  it("a written session reports none", async () => {
    const manager = SessionManager.create("/work", sessionDir, undefined, base);
    manager.appendMessage(user("one"));
    manager.appendMessage(assistant("two"));
    expect(await manager.close()).toEqual({ unpersistedEntries: 0 });
  });

  it("an opened file with no assistant message counts only what was appended after the open", async () => {
    fs.mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
    const file = path.join(sessionDir, "2025-01-01T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000001.jsonl");
    const onDisk =
      `${JSON.stringify({ type: "session", version: 3, id: "0190a0b0-3e82-7000-8000-000000000001", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/work" })}\n` +
      `${JSON.stringify({ type: "message", id: "a1", parentId: null, timestamp: "2025-01-01T00:00:01.000Z", message: user("kept") })}\n`;
    fs.writeFileSync(file, onDisk, { mode: 0o600 });
    const manager = await SessionManager.open(file, sessionDir, undefined, undefined, undefined, base);
    manager.appendMessage(user("not written"));
    expect(await manager.close()).toEqual({ unpersistedEntries: 1 });
    expect(fs.readFileSync(file, "utf8")).toBe(onDisk);
  });

  it("counts the unwritten entries of sessions it switched away from (newSession, setSessionFile)", async () => {
    const manager = SessionManager.create("/work", sessionDir, undefined, base);
    manager.appendMessage(user("left by newSession"));
    const first = manager.getSessionFile()!;
    await manager.newSession();
    manager.appendMessage(user("left by setSessionFile"));
    manager.appendMessage(user("also left"));
    await manager.setSessionFile(path.join(sessionDir, "2025-01-01T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000002.jsonl"));
    manager.appendMessage(user("written"));
    manager.appendMessage(assistant("so this one has a file"));
    expect(await manager.close()).toEqual({ unpersistedEntries: 3 });
    expect(fs.existsSync(first)).toBe(false);
  });

  it("an in-memory session never persists by design and reports none", async () => {
    const manager = SessionManager.inMemory("/work");
    manager.appendMessage(user("one"));
    expect(await manager.close()).toEqual({ unpersistedEntries: 0 });
  });
});
