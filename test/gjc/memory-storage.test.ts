/**
 * The `/gjc` face's `MemorySessionStorage`, as GJC's callers use it: files written at any absolute
 * path with their parents implied, synchronous reads and deletes, and the read-only resume calls
 * (`inspectSessionTailReadOnly`, `openExistingStrict`) reading through it instead of the disk.
 */
import { createHash } from "node:crypto";

import { describe, expect, it } from "vitest";

import { MemorySessionStorage, SessionManager, parseSessionEntries, type VerifiedSessionDeleteTarget } from "../../src/gjc/index.js";
import { isStorageError } from "../../src/storage/index.js";
import { deleteRefusalOf } from "../helpers/errors.js";

const SESSION_ID = "019f0000-3333-7000-aaaa-000000000001";
const header = JSON.stringify({ type: "session", version: 5, id: SESSION_ID, timestamp: "2026-07-18T13:22:00.198Z", cwd: "/work" });
const user = (id: string, parentId: string | null) =>
  JSON.stringify({
    type: "message",
    id,
    parentId,
    timestamp: "2026-07-18T13:22:05.000Z",
    message: { role: "user", content: [{ type: "text", text: "explain the failing build ".repeat(400) }], timestamp: 1 },
  });
const assistant = (id: string, parentId: string) =>
  JSON.stringify({
    type: "message",
    id,
    parentId,
    timestamp: "2026-07-18T13:22:06.000Z",
    message: {
      role: "assistant",
      content: [{ type: "text", text: "the linker ran out of memory" }],
      provider: "p",
      model: "m",
      timestamp: 2,
      usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
      stopReason: "stop",
    },
  });
const transcript = (...lines: string[]) => lines.map((line) => `${line}\n`).join("");

function code(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return isStorageError(error) ? error.code : String(error);
  }
  return undefined;
}

describe("MemorySessionStorage on the /gjc face", () => {
  it("writes at a path whose parents do not exist yet and reads it back synchronously", async () => {
    const storage = new MemorySessionStorage();
    const text = transcript(header, user("u1", null));
    storage.writeTextSync("/sessions/deep/a.jsonl", text);
    expect(storage.readTextSync("/sessions/deep/a.jsonl")).toBe(text);
    expect(Buffer.from(storage.readBytesSync("/sessions/deep/a.jsonl")).equals(Buffer.from(text))).toBe(true);
    expect(storage.statSync("/sessions/deep").isFile).toBe(false);
    await storage.writeText("/other/b.jsonl", "x\n");
    expect(storage.listFilesSync("/other")).toEqual(["b.jsonl"]);
  });

  it("reports stats in GJC's shape, the ones a strict inspection names, while the engine reads its own through the face", async () => {
    const storage = new MemorySessionStorage();
    storage.writeTextSync("/sessions/s.jsonl", transcript(header, user("u1", null), assistant("a1", "u1")));
    const stat = storage.statSync("/sessions/s.jsonl");
    expect(stat).toEqual({
      dev: 0n,
      ino: expect.any(BigInt),
      nlink: 1n,
      size: Buffer.byteLength(storage.readTextSync("/sessions/s.jsonl")),
      mtimeMs: stat.mtimeMs,
      mtimeNs: BigInt(stat.mtimeMs) * 1_000_000n,
      ctimeNs: BigInt(stat.mtimeMs) * 1_000_000n,
      mtime: new Date(stat.mtimeMs),
      isFile: true,
    });
    const inspection = await SessionManager.inspectSessionTailReadOnly("/sessions/s.jsonl", storage);
    if (inspection.kind === "error") throw new Error(`expected an identity, got ${inspection.reason}`);
    expect(inspection.identity).toMatchObject({ dev: stat.dev, ino: stat.ino, size: stat.size, mtimeMs: stat.mtimeMs, mtimeNs: stat.mtimeNs });
    expect(storage.readSnapshotSync("/sessions/s.jsonl").stat).toEqual(stat);
    const manager = await SessionManager.open("/sessions/s.jsonl", "/sessions", storage, undefined, undefined, {
      terminalId: null,
      agentDir: "/nonexistent-agent-dir",
    });
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "and the tests?" }], timestamp: 3 });
    await manager.close();
    expect(storage.statSync("/sessions/s.jsonl").size).toBeGreaterThan(stat.size);
  });

  it("lets a subclass's statSync speak for the file to the engine: a stat that keeps changing is unstable, a non-file unreadable", async () => {
    class Drifting extends MemorySessionStorage {
      drift = 0;
      override statSync(target: string) {
        const stat = super.statSync(target);
        return this.drift === 0 ? stat : { ...stat, mtimeMs: stat.mtimeMs + ++this.drift, mtimeNs: stat.mtimeNs + BigInt(this.drift) };
      }
    }
    class NotAFile extends MemorySessionStorage {
      override statSync(target: string) {
        return { ...super.statSync(target), isFile: false };
      }
    }
    const drifting = new Drifting();
    drifting.writeTextSync("/sessions/s.jsonl", transcript(header, user("u1", null)));
    const inspection = await SessionManager.inspectSessionTailReadOnly("/sessions/s.jsonl", drifting);
    if (inspection.kind === "error") throw new Error(`expected an identity, got ${inspection.reason}`);
    drifting.drift = 1;
    expect(await SessionManager.openExistingStrict(inspection.identity, "/sessions", drifting)).toEqual({ kind: "error", reason: "unstable" });
    const notAFile = new NotAFile();
    notAFile.writeTextSync("/sessions/s.jsonl", transcript(header, user("u1", null)));
    expect(await SessionManager.inspectSessionTailReadOnly("/sessions/s.jsonl", notAFile)).toEqual({ kind: "error", reason: "read-failed" });
  });

  it("opens a writer and renames into directories that do not exist yet", async () => {
    const storage = new MemorySessionStorage();
    const writer = storage.openWriter("/w/one/s.jsonl");
    await writer.writeLine(header);
    await writer.close();
    storage.renameSync("/w/one/s.jsonl", "/moved/two/s.jsonl");
    expect(storage.readTextSync("/moved/two/s.jsonl")).toBe(`${header}\n`);
    expect(storage.existsSync("/w/one/s.jsonl")).toBe(false);
  });

  it("keeps the engine's rules: one writer per file, no file used as a directory, unlinkSync removes", () => {
    const storage = new MemorySessionStorage();
    const writer = storage.openWriter("/s/a.jsonl");
    expect(code(() => storage.openWriter("/s/a.jsonl"))).toBe("session_busy");
    expect(code(() => storage.unlinkSync("/s/a.jsonl"))).toBe("session_busy");
    writer.closeSync();
    expect(code(() => storage.writeTextSync("/s/a.jsonl/inner.jsonl", "x"))).toBe("not_directory");
    storage.unlinkSync("/s/a.jsonl");
    expect(code(() => storage.readTextSync("/s/a.jsonl"))).toBe("not_found");
  });
});

describe("deleting sessions from a memory storage", () => {
  const seeded = () => {
    const storage = new MemorySessionStorage();
    storage.writeTextSync("/sessions/s.jsonl", transcript(header, user("u1", null), assistant("a1", "u1")));
    storage.writeTextSync("/sessions/s/0.bash.log", "build output ".repeat(10_000));
    storage.writeTextSync("/sessions/s/local/deep/notes.md", "notes");
    return storage;
  };
  const targetFor = (storage: MemorySessionStorage, transcriptPath = "/sessions/s.jsonl"): VerifiedSessionDeleteTarget => {
    const { stat, bytes } = storage.readSnapshotSync(transcriptPath);
    return {
      sessionsRoot: "/sessions",
      transcriptPath,
      sessionId: SESSION_ID,
      cwd: "/work",
      transcriptIdentity: {
        dev: stat.dev,
        ino: stat.ino,
        nlink: stat.nlink,
        size: stat.size,
        mtimeNs: stat.mtimeNs,
        sha256: createHash("sha256").update(bytes).digest("hex"),
      },
    };
  };

  it("a snapshot names the bytes read and the object they came from", () => {
    const storage = seeded();
    const first = storage.readSnapshotSync("/sessions/s.jsonl");
    expect(Buffer.from(first.bytes).toString("utf8")).toBe(storage.readTextSync("/sessions/s.jsonl"));
    expect(first.stat).toMatchObject({ dev: 0n, nlink: 1n, size: first.bytes.byteLength, isFile: true });
    storage.writeTextSync("/sessions/s.jsonl", storage.readTextSync("/sessions/s.jsonl"));
    expect(storage.readSnapshotSync("/sessions/s.jsonl").stat.ino).not.toBe(first.stat.ino);
  });

  it("the verified delete removes the transcript and its artifacts tree once every check passes", async () => {
    const storage = seeded();
    expect(await storage.deleteSessionVerified(targetFor(storage))).toEqual({ kind: "deleted" });
    expect(storage.existsSync("/sessions/s.jsonl")).toBe(false);
    expect(storage.existsSync("/sessions/s")).toBe(false);
    expect(storage.listFilesSync("/sessions", { kind: "directory" })).toEqual([]);
  });

  it("refuses, removing nothing: outside the root, another session or workspace, no session header, a changed transcript, artifacts that are a file or appeared later", async () => {
    const storage = seeded();
    const target = targetFor(storage);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, sessionsRoot: "/elsewhere" }))).toBe("containment");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, sessionId: "another" }))).toBe("identity");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, cwd: "/other" }))).toBe("cwd");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified({ ...target, artifactsAbsentAtAuthorization: true }))).toBe("artifacts");
    storage.writeTextSync("/sessions/t.jsonl", transcript(JSON.stringify({ type: "artifact", id: SESSION_ID, cwd: "/work" })));
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(targetFor(storage, "/sessions/t.jsonl")))).toBe("header");
    storage.writeTextSync("/sessions/u.jsonl", transcript(header));
    storage.writeTextSync("/sessions/u", "a file where the artifacts directory goes");
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(targetFor(storage, "/sessions/u.jsonl")))).toBe("artifacts");
    storage.writeTextSync("/sessions/s.jsonl", storage.readTextSync("/sessions/s.jsonl") + `${user("u2", "a1")}\n`);
    expect(await deleteRefusalOf(() => storage.deleteSessionVerified(target))).toBe("identity");
    expect(storage.existsSync("/sessions/s/local/deep/notes.md")).toBe(true);
    expect(storage.existsSync("/sessions/u")).toBe(true);
    expect(storage.listFilesSync("/sessions")).toEqual(["s.jsonl", "t.jsonl", "u", "u.jsonl"]);
  });

  it("deleteSessionWithArtifacts removes both, a missing one is fine, a held one is busy", async () => {
    const storage = seeded();
    const writer = storage.openWriter("/sessions/s.jsonl");
    await expect(storage.deleteSessionWithArtifacts("/sessions/s.jsonl")).rejects.toMatchObject({ code: "session_busy" });
    await writer.close();
    await storage.deleteSessionWithArtifacts("/sessions/s.jsonl");
    expect(storage.existsSync("/sessions/s.jsonl") || storage.existsSync("/sessions/s")).toBe(false);
    await storage.deleteSessionWithArtifacts("/sessions/s.jsonl");
  });
});

describe("read-only resume through a memory storage", () => {
  it("inspects through the storage it is given, naming the bytes it read", async () => {
    const storage = new MemorySessionStorage();
    storage.writeTextSync("/sessions/open.jsonl", transcript(header, user("u1", null)));
    storage.writeTextSync("/sessions/done.jsonl", transcript(header, user("u1", null), assistant("a1", "u1")));
    const open = await SessionManager.inspectSessionTailReadOnly("/sessions/open.jsonl", storage);
    expect(open.kind).toBe("resumable");
    if (open.kind === "error") throw new Error("expected an identity");
    const stat = storage.statSync("/sessions/open.jsonl");
    expect(open.identity).toMatchObject({ canonicalPath: "/sessions/open.jsonl", sessionId: SESSION_ID, size: stat.size, ino: BigInt(stat.ino) });
    expect(await SessionManager.inspectSessionTailReadOnly("/sessions/done.jsonl", storage)).toMatchObject({ kind: "terminal" });
    expect(await SessionManager.inspectSessionTailReadOnly("/sessions/none.jsonl", storage)).toEqual({ kind: "error", reason: "missing" });
    storage.writeTextSync("/sessions/bad.jsonl", `${header}\n{not json\n`);
    expect(await SessionManager.inspectSessionTailReadOnly("/sessions/bad.jsonl", storage)).toEqual({ kind: "error", reason: "malformed" });
  });

  it("opens exactly the inspected file, and refuses one rewritten since with the same bytes", async () => {
    const storage = new MemorySessionStorage();
    const text = transcript(header, user("u1", null), assistant("a1", "u1"), user("u2", "a1"));
    storage.writeTextSync("/sessions/s.jsonl", text);
    const inspection = await SessionManager.inspectSessionTailReadOnly("/sessions/s.jsonl", storage);
    if (inspection.kind === "error") throw new Error("expected an identity");
    const opened = await SessionManager.openExistingStrict(inspection.identity, "/sessions", storage, undefined, undefined, {
      terminalId: null,
      agentDir: "/nonexistent-agent-dir",
    });
    if (opened.kind !== "opened") throw new Error(`expected an open, got ${opened.reason}`);
    expect(opened.manager.getSessionId()).toBe(SESSION_ID);
    expect(opened.manager.getEntries().map((entry) => entry.id)).toEqual(["u1", "a1", "u2"]);
    await opened.manager.close();
    expect(storage.readTextSync("/sessions/s.jsonl")).toBe(text);

    storage.writeTextSync("/sessions/s.jsonl", text);
    expect(await SessionManager.openExistingStrict(inspection.identity, "/sessions", storage)).toEqual({ kind: "error", reason: "identity-mismatch" });
  });
});

describe("parseSessionEntries on the /gjc face", () => {
  it("names an unsupported future version the way GJC's callers match it", () => {
    const future = JSON.stringify({ type: "session", version: 6, id: SESSION_ID, timestamp: "2026-07-18T13:22:00.198Z", cwd: "/work" });
    expect(() => parseSessionEntries(transcript(future, user("u1", null)))).toThrow("Unsupported session version: 6");
  });
});
