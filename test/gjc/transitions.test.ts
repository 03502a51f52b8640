/**
 * Two-phase transitions on the `/gjc` face, one at a time: getters show the predecessor until
 * the synchronous commit; a prepared record is usable once; a failed handoff rolls back; a
 * commit that cannot write leaves the manager where it was; deletes stay inside the manager's
 * directory and never take the current session; close drops what is still prepared.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { MemorySessionStorage } from "../../src/gjc/memory-storage.js";
import { SessionManager } from "../../src/gjc/session-manager.js";
import type { AgentMessage } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { recordingLogger } from "../manager/helpers.js";

let tmp: { path: string; remove(): void };
let sessions: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-face-transitions-");
  sessions = path.join(tmp.path, "sessions");
  fs.mkdirSync(sessions, { mode: 0o700 });
});
afterEach(() => tmp.remove());

let logger: ReturnType<typeof recordingLogger>;
beforeEach(() => {
  logger = recordingLogger();
});
const options = () => ({ terminalId: null, logger });
const jsonl = () =>
  fs
    .readdirSync(sessions)
    .filter((name) => name.endsWith(".jsonl"))
    .sort();

async function answered(): Promise<SessionManager> {
  const manager = SessionManager.create(tmp.path, sessions, undefined, options());
  manager.appendModelChange("p/m");
  manager.appendMessage({ role: "user", content: [{ type: "text", text: "question ".repeat(100) }], timestamp: 1 } as AgentMessage);
  manager.appendMessage({
    role: "assistant",
    content: [{ type: "text", text: "answer" }],
    provider: "p",
    model: "m",
    timestamp: 2,
    usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
    stopReason: "stop",
  } as AgentMessage);
  await manager.flush();
  return manager;
}

describe("two-phase transitions", () => {
  it("keeps the predecessor visible until the commit, and a record is usable once", async () => {
    const manager = await answered();
    const id = manager.getSessionId();
    const revisions = manager.revisionSnapshot();
    const prepared = await manager.prepareNewSession();
    expect(prepared.sessionId).not.toBe(id);
    expect(prepared.artifactsDir).toBe(prepared.sessionFile!.replace(/\.jsonl$/, ""));
    expect(manager.getSessionId()).toBe(id);
    expect(manager.revisionSnapshot()).toEqual(revisions);
    manager.commitPreparedNewSession(prepared);
    expect(manager.getSessionId()).toBe(prepared.sessionId);
    expect(manager.getEntries()).toEqual([]);
    const after = manager.revisionSnapshot();
    for (const key of Object.keys(revisions) as (keyof typeof revisions)[]) expect(after[key]).toBeGreaterThan(revisions[key]);
    expect(() => manager.commitPreparedNewSession(prepared)).toThrow(expect.objectContaining({ code: "prepared_session_unavailable" }));
    expect(() => manager.appendPreparedModelChange(prepared, "p/m")).toThrow(expect.objectContaining({ code: "prepared_session_unavailable" }));
    // A new session is written from its first answer, as any other.
    expect(jsonl()).toHaveLength(1);
    await manager.close();
  });

  it("rolls a failed handoff back to the predecessor, which keeps its writer", async () => {
    const manager = await answered();
    const file = manager.getSessionFile()!;
    const snapshot = await manager.captureRollbackState();
    expect(snapshot).toMatchObject({ sessionId: manager.getSessionId(), sessionFile: file });
    const prepared = await manager.prepareNewSession({ parentSession: file });
    manager.appendPreparedThinkingLevelChange(prepared, "high");
    manager.appendPreparedServiceTierChange(prepared, null);
    await manager.discardPreparedNewSession(prepared);
    await manager.restoreRollbackState(snapshot);
    expect(manager.getSessionFile()).toBe(file);
    const id = manager.appendCustomEntry("after-rollback", { ok: true });
    await manager.flush();
    expect(fs.readFileSync(file, "utf8")).toContain(id);
    expect(jsonl()).toEqual([path.basename(file)]);
    await manager.close();
  });

  it("leaves the manager where it was when the commit cannot write the successor", async () => {
    const manager = await answered();
    const file = manager.getSessionFile()!;
    const branch = await manager.prepareBranchedSession(manager.getLeafId()!);
    // Something else took the successor's name meanwhile: the no-replace write refuses it.
    fs.writeFileSync(branch.sessionFile!, "someone else's\n", { mode: 0o600 });
    expect(() => manager.commitPreparedNewSession(branch)).toThrow(expect.objectContaining({ code: "persistence_failed" }));
    expect(logger.calls).toEqual([expect.objectContaining({ path: branch.sessionFile, code: "already_exists" })]);
    expect(manager.getSessionFile()).toBe(file);
    expect(fs.readFileSync(branch.sessionFile!, "utf8")).toBe("someone else's\n");
    await manager.discardPreparedNewSession(branch);
    expect(fs.readFileSync(branch.sessionFile!, "utf8")).toBe("someone else's\n");
    await manager.close();
  });

  it("deletes only sessions of its own directory, never the current one", async () => {
    const manager = await answered();
    const first = manager.getSessionFile()!;
    const fork = await manager.prepareFork();
    manager.commitPreparedNewSession(fork!);
    await manager.saveArtifact("fork output", "bash");
    await expect(manager.discardUncommittedSession(fork!.sessionFile!)).rejects.toMatchObject({ code: "active_session" });
    // Another spelling of the current file (through a linked directory) is still the current file.
    const alias = path.join(tmp.path, "alias");
    fs.symlinkSync(sessions, alias);
    await expect(manager.discardUncommittedSession(path.join(alias, path.basename(fork!.sessionFile!)))).rejects.toMatchObject({ code: "active_session" });
    const outside = path.join(tmp.path, "outside.jsonl");
    fs.writeFileSync(outside, "{}\n", { mode: 0o600 });
    await expect(manager.discardUncommittedSession(outside)).rejects.toMatchObject({ code: "session_not_contained" });
    // A name that only looks contained: a link inside the directory to a directory outside it.
    const elsewhere = path.join(tmp.path, "elsewhere");
    fs.mkdirSync(elsewhere, { mode: 0o700 });
    fs.writeFileSync(path.join(elsewhere, "victim.jsonl"), "{}\n", { mode: 0o600 });
    fs.symlinkSync(elsewhere, path.join(sessions, "escape"));
    await expect(manager.discardUncommittedSession(path.join(sessions, "escape", "victim.jsonl"))).rejects.toMatchObject({ code: "session_not_contained" });
    expect(fs.existsSync(path.join(elsewhere, "victim.jsonl"))).toBe(true);
    fs.unlinkSync(path.join(sessions, "escape"));
    expect(fs.existsSync(outside)).toBe(true);
    await manager.discardUncommittedSession(first);
    await manager.discardUncommittedSession(first);
    expect(jsonl()).toEqual([path.basename(fork!.sessionFile!)]);

    // Dropping the current session moves the manager to a new one first.
    await manager.dropSession(fork!.sessionFile!);
    expect(manager.getSessionFile()).not.toBe(fork!.sessionFile);
    expect(fs.existsSync(fork!.artifactsDir!)).toBe(false);
    expect(jsonl()).toEqual([]);
    await manager.close();
  });

  it("drops what is still prepared on close, and a fork is nothing in memory", async () => {
    const manager = await answered();
    const prepared = await manager.prepareNewSession();
    // Readiness work made the successor's artifacts directory (GJC's local:// root of an explicit destination).
    fs.mkdirSync(path.join(prepared.artifactsDir!, "local"), { recursive: true, mode: 0o700 });
    await manager.close();
    expect(fs.existsSync(prepared.artifactsDir!)).toBe(false);
    const memory = SessionManager.inMemory(tmp.path);
    expect(await memory.prepareFork()).toBeUndefined();
    const inMemory = await memory.prepareNewSession();
    expect(inMemory.sessionFile).toBeUndefined();
    expect(inMemory.artifactsDir).toBeNull();
    memory.commitPreparedNewSession(inMemory);
    expect(memory.getSessionId()).toBe(inMemory.sessionId);
    await memory.close();
  });

  it("promotes a staged default-model choice only while the session is as it was", async () => {
    const manager = await answered();
    const file = manager.getSessionFile()!;
    const size = fs.statSync(file).size;
    const stage = await manager.stageDefaultModelSelection("p/big", "high", { appendThinkingLevel: true });
    expect(fs.statSync(file).size).toBe(size);
    expect(manager.promoteDefaultModelSelection(stage)).toEqual({ kind: "promoted" });
    const tail = fs
      .readFileSync(file, "utf8")
      .trimEnd()
      .split("\n")
      .slice(-3)
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(tail).toMatchObject([
      { type: "model_change", model: "p/big", role: "temporary" },
      { type: "thinking_level_change", thinkingLevel: "high" },
      { type: "model_change", model: "p/big", role: "default" },
    ]);
    expect(manager.promoteDefaultModelSelection(stage)).toEqual({ kind: "not_promoted" });

    const stale = await manager.stageDefaultModelSelection("p/other", undefined);
    manager.appendCustomEntry("meanwhile", {});
    expect(manager.promoteDefaultModelSelection(stale)).toEqual({ kind: "not_promoted" });
    const discarded = await manager.stageDefaultModelSelection("p/other", undefined);
    await manager.discardDefaultModelSelectionStage(discarded);
    expect(manager.promoteDefaultModelSelection(discarded)).toEqual({ kind: "not_promoted" });
    expect(manager.getLastModelChangeRole()).toBe("default");
    await manager.close();
  });

  it("recovers from a failed write by reloading the file from disk", async () => {
    const manager = SessionManager.create(tmp.path, sessions, undefined, options());
    await manager.recoverPersistenceFailure();
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "never written" }], timestamp: 1 } as AgentMessage);
    const file = manager.getSessionFile()!;
    // Another writer's transcript appears under the session's name before its first write.
    const header = { type: "session", version: 5, id: "019f0000-3333-7000-aaaa-000000000001", timestamp: "2026-07-18T13:22:00.000Z", cwd: tmp.path };
    const answer = {
      role: "assistant",
      content: [{ type: "text", text: "theirs" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    };
    const entry = { type: "message", id: "c1", parentId: null, timestamp: "2026-07-18T13:22:01.000Z", message: answer };
    fs.writeFileSync(file, `${JSON.stringify(header)}\n${JSON.stringify(entry)}\n`, { mode: 0o600 });
    const lost = {
      role: "assistant",
      content: [{ type: "text", text: "lost" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    } as AgentMessage;
    expect(() => manager.appendMessage(lost)).toThrow(expect.objectContaining({ code: "append_persistence_failed", phase: "current_append" }));
    expect(() => manager.appendCustomEntry("refused", {})).toThrow(
      expect.objectContaining({
        code: "append_persistence_failed",
        phase: "prior_failure",
        persistenceError: expect.objectContaining({ code: "persistence_failed" }),
      }),
    );
    await manager.recoverPersistenceFailure();
    expect(manager.getSessionId()).toBe(header.id);
    expect(manager.getEntries().map((e) => e.id)).toEqual(["c1"]);
    const id = manager.appendCustomEntry("after-recovery", {});
    await manager.flush();
    expect(fs.readFileSync(file, "utf8")).toContain(id);
    await manager.close();
  });
});

describe("a prepared successor in a caller's storage", () => {
  it("ensurePreparedNewSessionOnDisk asks nothing of the filesystem, and the commit writes the successor into that storage", async () => {
    const storage = new MemorySessionStorage();
    const dir = "/sessions-in-memory-only";
    expect(fs.existsSync(dir)).toBe(false);
    const manager = SessionManager.create("/work/project", dir, storage, options());
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "plan the refactor ".repeat(200) }], timestamp: 1 } as AgentMessage);
    const prepared = await manager.prepareNewSession();
    manager.appendPreparedCustomMessageEntry(prepared, "handoff", "context carried over ".repeat(100), true);
    await manager.ensurePreparedNewSessionOnDisk(prepared);
    expect(storage.existsSync(prepared.sessionFile!)).toBe(false);

    manager.commitPreparedNewSession(prepared);
    await manager.flush();
    expect(manager.getSessionFile()).toBe(prepared.sessionFile);
    const lines = storage
      .readTextSync(prepared.sessionFile!)
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    expect(lines.map((line) => line.type)).toEqual(["session", "custom_message"]);
    expect(fs.existsSync(dir)).toBe(false);
    await manager.close();
  });
});
