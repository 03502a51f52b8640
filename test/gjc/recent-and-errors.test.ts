/**
 * GJC's recent-session rows (the welcome screen reads `name` and `timeAgo`) over real session
 * files, and the error classes and limits GJC's app matches on.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { GjcError, SessionManager as Engine } from "../../src/index.js";
import {
  getRecentSessions,
  ManagedScopeUnavailableError,
  resolveSessionContextBudgetBytes,
  SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT,
  SESSION_OVERSIZED_RECOVERY_MESSAGE,
  SessionAppendPersistenceError,
  SessionArtifactCapacityError,
  SessionContextTooLargeError,
  SessionMigrationBusyError,
  SessionNearLimitAppendError,
  SessionTranscriptOversizedError,
  RevisionCounterError,
  SessionManager,
  toSessionManagerCheckpointRevisionStrings,
} from "../../src/gjc/index.js";
import { timeAgo } from "../../src/gjc/recent.js";
import { assistant, user } from "../manager/helpers.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let dir: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-recent-");
  dir = path.join(tmp.path, "sessions");
});
afterEach(() => tmp.remove());

async function written(firstPrompt: string, title?: string): Promise<string> {
  const session = Engine.create(tmp.path, dir);
  session.appendMessage(user(firstPrompt));
  session.appendMessage(assistant("ok"));
  if (title !== undefined) await session.setSessionName(title, "user");
  await session.flush();
  const file = session.getSessionFile()!;
  await session.close();
  return file;
}

describe("getRecentSessions", () => {
  it("gives each row GJC's name (the first line of the title, else of the first prompt, uncut) and its age, newest first", async () => {
    const now = Date.now();
    const titled = await written("fix the parser", "Parser work");
    const long = `Error: the build failed ${"at a frame ".repeat(40)}\n${"    at another frame\n".repeat(60)}end`;
    const untitled = await written(long);
    const old = await written("an old question");
    fs.utimesSync(titled, new Date(now - 30_000), new Date(now - 30_000));
    fs.utimesSync(untitled, new Date(now - 3 * 3_600_000), new Date(now - 3 * 3_600_000));
    fs.utimesSync(old, new Date(now - 10 * 86_400_000), new Date(now - 10 * 86_400_000));

    const rows = await getRecentSessions(dir);
    expect(rows.map((r) => r.path)).toEqual([titled, untitled, old]);
    expect(rows.map((r) => r.name)).toEqual(["Parser work", `Error: the build failed ${"at a frame ".repeat(40)}`.trim(), "an old question"]);
    expect(rows.map((r) => r.timeAgo)).toEqual(["just now", "3h ago", new Date(now - 10 * 86_400_000).toLocaleDateString()]);
    expect(rows[1]!.fullName).toBe(rows[1]!.name);
    expect(rows[0]!.mtime).toBe(rows[0]!.modified.getTime());
    expect(rows[0]!.id).toMatch(/^[0-9a-f-]{36}$/);
    expect((await getRecentSessions(dir, 1)).map((r) => r.path)).toEqual([titled]);
  });

  it("counts minutes, hours and days as GJC does", () => {
    const now = Date.parse("2026-06-01T12:00:00Z");
    const ago = (ms: number) => timeAgo(new Date(now - ms), now);
    expect([ago(59_999), ago(60_000), ago(59 * 60_000), ago(3_600_000), ago(23 * 3_600_000), ago(86_400_000), ago(6 * 86_400_000)]).toEqual([
      "just now",
      "1m ago",
      "59m ago",
      "1h ago",
      "23h ago",
      "1d ago",
      "6d ago",
    ]);
  });
});

describe("GJC's error classes", () => {
  it("are GjcErrors with GJC's codes and fields", () => {
    const cause = new Error("ENOSPC: no space left on device");
    const append = new SessionAppendPersistenceError("current_append", "e1", cause);
    expect([append.code, append.phase, append.entryId, append.persistenceError, append.cause, append.message]).toEqual([
      "append_persistence_failed",
      "current_append",
      "e1",
      cause,
      cause,
      cause.message,
    ]);
    const near = new SessionNearLimitAppendError({ entryBytes: 10, liveBytes: 20, capBytes: 25, entryRetained: false });
    expect([near.code, near.entryBytes, near.liveBytes, near.capBytes, near.entryRetained]).toEqual(["near_limit_append", 10, 20, 25, false]);
    const large = new SessionContextTooLargeError(900);
    expect([large.code, large.measuredBytes, large.budgetBytes]).toEqual(["context_too_large", 900, SESSION_CONTEXT_MATERIALIZATION_BUDGET_BYTES_DEFAULT]);
    const oversized = new SessionTranscriptOversizedError(200 * 1024 * 1024);
    expect([oversized.code, oversized.size, oversized.message]).toEqual(["oversized", 200 * 1024 * 1024, SESSION_OVERSIZED_RECOVERY_MESSAGE]);
    expect(SESSION_OVERSIZED_RECOVERY_MESSAGE).toContain("gjc export <session-file>");
    expect(new SessionArtifactCapacityError("too many").code).toBe("artifact_capacity_exceeded");
    expect(new SessionMigrationBusyError().code).toBe("migration_busy");
    for (const error of [append, near, large, oversized]) {
      expect(error).toBeInstanceOf(GjcError);
      expect(error.name).toBe(error.constructor.name);
    }
  });

  it("take a context budget override only when it names 1 byte to 8 GiB in digits", () => {
    expect(resolveSessionContextBudgetBytes(undefined)).toBe(512 * 1024 * 1024);
    expect(resolveSessionContextBudgetBytes("1048576")).toBe(1_048_576);
    expect(resolveSessionContextBudgetBytes(String(8 * 1024 ** 3))).toBe(8 * 1024 ** 3);
    for (const bad of ["", "0", "-5", "1e9", "12 MiB", String(8 * 1024 ** 3 + 1), "9".repeat(30)]) {
      expect(resolveSessionContextBudgetBytes(bad), bad).toBe(512 * 1024 * 1024);
    }
  });
});

describe("toSessionManagerCheckpointRevisionStrings", () => {
  it("writes a manager's revision counters as decimal strings, and refuses a counter a checkpoint cannot hold", async () => {
    const manager = SessionManager.inMemory(tmp.path);
    manager.appendMessage(user("one"));
    manager.appendMessage(assistant("two"));
    const snapshot = manager.revisionSnapshot();
    const strings = toSessionManagerCheckpointRevisionStrings(snapshot);
    expect(strings).toEqual({
      entry: String(snapshot.entry),
      leaf: String(snapshot.leaf),
      headerExport: String(snapshot.headerExport),
      label: String(snapshot.label),
      replayMetadata: String(snapshot.replayMetadata),
    });
    expect(Object.values(strings).every((v) => /^(0|[1-9][0-9]*)$/.test(v))).toBe(true);
    for (const bad of [-1, 1.5, Number.MAX_SAFE_INTEGER + 2, Number.NaN]) {
      expect(() => toSessionManagerCheckpointRevisionStrings({ ...snapshot, label: bad })).toThrow(RevisionCounterError);
    }
    await manager.close();
  });
});

describe("a managed scope that cannot be prepared", () => {
  it("is reported without a path: a fixed message, the cause a classification, the scope code kept", () => {
    const agentDir = path.join(tmp.path, "agent");
    const elsewhere = path.join(tmp.path, "elsewhere");
    const workspace = path.join(tmp.path, "secret-project-name");
    fs.mkdirSync(agentDir, { mode: 0o700 });
    fs.mkdirSync(elsewhere, { mode: 0o700 });
    fs.mkdirSync(workspace, { mode: 0o700 });
    fs.symlinkSync(elsewhere, path.join(agentDir, "sessions"));
    for (const call of [() => SessionManager.managedDestination(workspace, agentDir), () => SessionManager.getDefaultSessionDir(workspace, agentDir)]) {
      let failure: unknown;
      try {
        call();
      } catch (error) {
        failure = error;
      }
      expect(failure).toBeInstanceOf(ManagedScopeUnavailableError);
      const error = failure as ManagedScopeUnavailableError;
      expect(error.code).toBe("managed_scope_unavailable");
      expect(error.message).toBe("Could not resolve managed session scope.");
      expect(error.cause).toEqual({ classification: "reparse_point" });
      expect(error.scopeCode).toBe("sessions_root_unavailable");
      expect(JSON.stringify({ message: error.message, cause: error.cause })).not.toContain(tmp.path);
    }
    expect(fs.readdirSync(elsewhere)).toEqual([]);
  });
});
