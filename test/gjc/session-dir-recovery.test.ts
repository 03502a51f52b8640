/**
 * The `/gjc` entry's session-directory helpers on real directories: syncing after a move, and
 * putting back the transcript backups GJC's own rewrite leaves behind when it dies mid-way.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  FileSessionStorage,
  MemorySessionStorage,
  SessionManager,
  StorageError,
  recoverOrphanedBackups,
  syncSessionMoveDirectory,
} from "../../src/gjc/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let sessions: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-dir-recovery-");
  sessions = path.join(tmp.path, "sessions");
  fs.mkdirSync(sessions, { mode: 0o700 });
});
afterEach(() => tmp.remove());

/** A transcript as GJC writes it: header, a long prompt, a tool call with a big output, the answer. */
function transcript(id: string, cwd: string): string {
  const prompt = `Refactor the parser so errors carry line numbers. ${"Context from the design review. ".repeat(200)}`;
  const output = Array.from({ length: 2000 }, (_, i) => `src/parser/${i}.ts:${i + 1}: token ${i}`).join("\n");
  const lines = [
    { type: "session", version: 3, id, timestamp: "2026-11-30T10:00:00.000Z", cwd },
    { type: "message", id: "a1", parentId: null, timestamp: "2026-11-30T10:00:01.000Z", message: { role: "user", content: prompt, timestamp: 1 } },
    {
      type: "message",
      id: "a2",
      parentId: "a1",
      timestamp: "2026-11-30T10:00:02.000Z",
      message: { role: "toolResult", toolCallId: "t1", toolName: "grep", content: [{ type: "text", text: output }], isError: false, timestamp: 2 },
    },
    {
      type: "message",
      id: "a3",
      parentId: "a2",
      timestamp: "2026-11-30T10:00:03.000Z",
      message: {
        role: "assistant",
        content: [{ type: "text", text: "Done." }],
        api: "anthropic-messages",
        provider: "anthropic",
        model: "claude-sonnet-4-5",
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0, totalTokens: 2, cost: { input: 0, output: 0, cacheRead: 0, cacheWrite: 0, total: 0 } },
        stopReason: "stop",
        timestamp: 3,
      },
    },
  ];
  return lines.map((line) => JSON.stringify(line)).join("\n") + "\n";
}

function writeOwnerOnly(file: string, text: string, mtimeSeconds?: number): void {
  fs.writeFileSync(file, text, { mode: 0o600 });
  if (mtimeSeconds !== undefined) fs.utimesSync(file, mtimeSeconds, mtimeSeconds);
}

describe("syncSessionMoveDirectory", () => {
  it("syncs a real directory, and opens nothing on Windows", async () => {
    await expect(syncSessionMoveDirectory(sessions)).resolves.toBeUndefined();
    const calls: string[] = [];
    const opener = async (dir: string) => {
      calls.push(`open ${dir}`);
      return { sync: async () => void calls.push("sync"), close: async () => void calls.push("close") };
    };
    await syncSessionMoveDirectory(sessions, "win32", opener);
    expect(calls).toEqual([]);
    await syncSessionMoveDirectory(sessions, "linux", opener);
    expect(calls).toEqual([`open ${sessions}`, "sync", "close"]);
  });

  it("closes the handle when the sync fails, and refuses a link or a missing directory", async () => {
    const calls: string[] = [];
    const failing = async () => ({
      sync: async () => {
        throw new Error("EIO");
      },
      close: async () => void calls.push("close"),
    });
    await expect(syncSessionMoveDirectory(sessions, "linux", failing)).rejects.toThrow("EIO");
    expect(calls).toEqual(["close"]);
    if (process.platform === "win32") return;
    fs.symlinkSync(sessions, path.join(tmp.path, "alias"));
    await expect(syncSessionMoveDirectory(path.join(tmp.path, "alias"))).rejects.toBeInstanceOf(StorageError);
    await expect(syncSessionMoveDirectory(path.join(tmp.path, "missing"))).rejects.toMatchObject({ code: "not_found" });
  });
});

describe("recoverOrphanedBackups", () => {
  it("puts back the newest backup of a missing transcript, which then resumes", async () => {
    const primary = path.join(sessions, "2026-11-30T10-00-00-000Z_0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl");
    writeOwnerOnly(`${primary}.1732960000000.bak`, transcript("old", tmp.path), 1_700_000_000);
    writeOwnerOnly(`${primary}.1732960500000.bak`, transcript("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", tmp.path), 1_700_000_500);

    const outcomes = await recoverOrphanedBackups(sessions);
    expect(outcomes).toEqual([{ sessionFile: primary, backupPath: `${primary}.1732960500000.bak` }]);
    expect(fs.existsSync(`${primary}.1732960500000.bak`)).toBe(false);
    expect(fs.existsSync(`${primary}.1732960000000.bak`)).toBe(true);
    if (process.platform !== "win32") expect(fs.statSync(primary).mode & 0o777).toBe(0o600);

    const resumed = await SessionManager.open(primary, sessions);
    expect(resumed.getSessionId()).toBe("0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b");
    expect(resumed.buildSessionContext().messages.map((m) => m.role)).toEqual(["user", "toolResult", "assistant"]);
    await resumed.close();
  });

  it("leaves every backup of a transcript that exists, and names that are not backups", async () => {
    const primary = path.join(sessions, "live.jsonl");
    writeOwnerOnly(primary, transcript("live", tmp.path));
    writeOwnerOnly(`${primary}.17.bak`, transcript("stale", tmp.path));
    writeOwnerOnly(path.join(sessions, "notes.txt.17.bak"), "not a transcript");
    writeOwnerOnly(path.join(sessions, "other.jsonl.bak"), "no serial");

    expect(await recoverOrphanedBackups(sessions)).toEqual([]);
    expect(fs.readFileSync(primary, "utf8")).toContain('"id":"live"');
    expect(fs.readdirSync(sessions).sort()).toEqual(["live.jsonl", "live.jsonl.17.bak", "notes.txt.17.bak", "other.jsonl.bak"]);
  });

  it("breaks an mtime tie by the larger serial, in a memory storage too", async () => {
    const storage = new MemorySessionStorage();
    const dir = "/sessions/project";
    storage.writeTextSync(`${dir}/s.jsonl.100.bak`, transcript("older", "/work"));
    storage.writeTextSync(`${dir}/s.jsonl.200.bak`, transcript("newer", "/work"));
    const at = storage.statSync(`${dir}/s.jsonl.100.bak`).mtimeMs;
    if (storage.statSync(`${dir}/s.jsonl.200.bak`).mtimeMs !== at) return;
    await recoverOrphanedBackups(dir, storage);
    expect(await storage.readText(`${dir}/s.jsonl`)).toContain('"id":"newer"');
  });

  it("reports a backup it could not put back and keeps it; an unlistable directory recovers nothing", async () => {
    const primary = path.join(sessions, "s.jsonl");
    writeOwnerOnly(`${primary}.5.bak`, transcript("s", tmp.path));
    const storage = new FileSessionStorage(sessions);
    // A process still writing the backup holds its writer lock: the rename must wait its turn.
    const holder = storage.openWriter(`${primary}.5.bak`);
    const [outcome] = await recoverOrphanedBackups(sessions, storage);
    await holder.close();
    expect(outcome?.sessionFile).toBe(primary);
    expect(outcome?.error).toBeInstanceOf(StorageError);
    expect(outcome?.error?.code).toBe("session_busy");
    expect(fs.existsSync(`${primary}.5.bak`)).toBe(true);
    expect(fs.existsSync(primary)).toBe(false);
    expect(await recoverOrphanedBackups(path.join(tmp.path, "missing"))).toEqual([]);
  });
});
