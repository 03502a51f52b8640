/**
 * The `/gjc` file storage's writer options on real files: a close adapter that fails before or
 * after closing the descriptor (retried, or never again), and a managed security context that
 * binds writers to one session directory as it stood when the context was made; and the manager's
 * strict close over such an adapter, which keeps a writer whose close was not dispatched for a retry.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import {
  FileSessionStorage,
  SessionManager,
  SessionStorageWriterRetryableCloseError,
  StorageError,
  createManagedSessionSecurityContext,
  type ManagedSessionSecurityContext,
} from "../../src/gjc/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };
let sessionDir: string;
let storage: FileSessionStorage;

beforeEach(() => {
  tmp = makeTempDir("gjc-writer-options-");
  sessionDir = path.join(tmp.path, "sessions", "--work--");
  fs.mkdirSync(sessionDir, { recursive: true, mode: 0o700 });
  storage = new FileSessionStorage();
});
afterEach(() => tmp.remove());

/** A real-shaped entry line: an assistant turn with a long tool output. */
function entryLine(n: number): string {
  const output = Array.from({ length: 400 }, (_, i) => `line ${i} of the build log for step ${n}`).join("\n");
  return JSON.stringify({
    type: "message",
    id: `e${n}`,
    parentId: n === 0 ? null : `e${n - 1}`,
    timestamp: "2026-12-07T10:00:00.000Z",
    message: { role: "toolResult", toolCallId: `t${n}`, toolName: "bash", content: [{ type: "text", text: output }], isError: false, timestamp: n },
  });
}

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (error) {
    return error instanceof StorageError ? error.code : `not a StorageError: ${String(error)}`;
  }
  return undefined;
}

describe("close adapter", () => {
  it("a close that failed before closing the descriptor keeps the file locked and closes on the next try", async () => {
    const file = path.join(sessionDir, "retry.jsonl");
    const attempts: number[] = [];
    const writer = storage.openWriter(file, {
      closeAdapter: {
        close(fd) {
          attempts.push(fd);
          if (attempts.length === 1) throw new SessionStorageWriterRetryableCloseError("not yet");
          fs.closeSync(fd);
        },
      },
    });
    writer.writeLineSync(entryLine(0));
    await expect(writer.close()).rejects.toMatchObject({ code: "close_not_dispatched", message: "not yet" });
    expect(writer.getCloseState()).toBe("close_failed_retryable");
    expect(writer.getCloseError()).toBeInstanceOf(SessionStorageWriterRetryableCloseError);
    expect(writer.getError()).toBeUndefined();
    // Still this writer's: no write goes through, and no second writer gets the file.
    await expect(writer.writeLine(entryLine(1))).rejects.toMatchObject({ code: "writer_closed" });
    expect(codeOf(() => storage.openWriter(file))).toBe("session_busy");

    await writer.close();
    expect(writer.getCloseState()).toBe("closed");
    expect(writer.getCloseError()).toBeUndefined();
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toBe(attempts[1]);
    await writer.close();
    expect(attempts).toHaveLength(2);
    expect(fs.readFileSync(file, "utf8")).toBe(entryLine(0) + "\n");
    const next = storage.openWriter(file);
    await next.close();
  });

  it("the synchronous close retries the same way", () => {
    const file = path.join(sessionDir, "retry-sync.jsonl");
    let refuse = true;
    const writer = storage.openWriter(file, {
      closeAdapter: {
        close(fd) {
          if (refuse) throw new SessionStorageWriterRetryableCloseError();
          fs.closeSync(fd);
        },
      },
    });
    writer.writeLineSync(entryLine(0));
    expect(codeOf(() => writer.closeSync())).toBe("close_not_dispatched");
    expect(writer.getCloseState()).toBe("close_failed_retryable");
    refuse = false;
    writer.closeSync();
    expect(writer.getCloseState()).toBe("closed");
  });

  it("a close that failed after closing the descriptor is never dispatched again and frees the file", async () => {
    const file = path.join(sessionDir, "dispatched.jsonl");
    let dispatched = 0;
    const writer = storage.openWriter(file, {
      closeAdapter: {
        close(fd) {
          dispatched += 1;
          fs.closeSync(fd);
          throw new Error("EIO after close");
        },
      },
    });
    writer.writeLineSync(entryLine(0));
    await expect(writer.close()).rejects.toMatchObject({ code: "write_failed" });
    expect(writer.getCloseState()).toBe("close_unknown");
    expect(writer.getCloseError()?.message).toContain("EIO after close");
    // The number may now name another file: a later close must not touch it.
    const unrelated = fs.openSync(path.join(tmp.path, "unrelated"), "w", 0o600);
    try {
      await expect(writer.close()).rejects.toMatchObject({ code: "write_failed" });
      expect(dispatched).toBe(1);
      // Often the very number the writer held; a second close would have closed it.
      expect(fs.writeSync(unrelated, "still open")).toBe(10);
    } finally {
      fs.closeSync(unrelated);
    }
    const next = storage.openWriter(file);
    await next.close();
  });
});

describe("managed security context", () => {
  function context(): ManagedSessionSecurityContext {
    return createManagedSessionSecurityContext({ agentDir: tmp.path, sessionsRoot: path.join(tmp.path, "sessions"), sessionDir });
  }

  it("opens writers for files directly in its session directory", async () => {
    const file = path.join(sessionDir, "s.jsonl");
    const writer = storage.openWriter(file, { securityContext: context() });
    for (let n = 0; n < 50; n++) writer.writeLineSync(entryLine(n));
    await writer.close();
    expect(fs.readFileSync(file, "utf8").split("\n")).toHaveLength(51);
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
  });

  it("refuses a file elsewhere, a context it did not make, and a replaced directory, creating nothing", () => {
    const made = context();
    const other = path.join(tmp.path, "sessions", "--other--");
    fs.mkdirSync(other, { mode: 0o700 });
    expect(codeOf(() => storage.openWriter(path.join(other, "s.jsonl"), { securityContext: made }))).toBe("outside_root");
    expect(codeOf(() => storage.openWriter(path.join(sessionDir, "nested", "s.jsonl"), { securityContext: made }))).toBe("outside_root");
    const forged = { ...made };
    expect(codeOf(() => storage.openWriter(path.join(sessionDir, "s.jsonl"), { securityContext: forged }))).toBe("invalid_argument");

    fs.renameSync(sessionDir, `${sessionDir}.moved`);
    fs.mkdirSync(sessionDir, { mode: 0o700 });
    let refusal: unknown;
    try {
      storage.openWriter(path.join(sessionDir, "s.jsonl"), { securityContext: made });
    } catch (error) {
      refusal = error;
    }
    expect(refusal).toMatchObject({ code: "unsafe_entry", detail: "identity_changed" });
    expect(fs.readdirSync(sessionDir)).toEqual([]);
    expect(fs.readdirSync(other)).toEqual([]);
  });

  it("a writer's sync fails once its file was moved away and replaced at its name; a rewrite's new file is its own", async () => {
    const file = path.join(sessionDir, "s.jsonl");
    const writer = storage.openWriter(file, { securityContext: context() });
    writer.writeLineSync(entryLine(0));
    await writer.flush();
    await writer.rewrite([`${entryLine(0)}\n${entryLine(1)}\n`]);
    await writer.writeLine(entryLine(2));
    await writer.flush();
    fs.renameSync(file, `${file}.moved`);
    fs.writeFileSync(file, "replacement\n", { mode: 0o600 });
    await expect(writer.fsync()).rejects.toMatchObject({ code: "unsafe_entry", detail: "identity_changed" });
    expect(fs.readFileSync(file, "utf8")).toBe("replacement\n");
    await writer.close().catch(() => undefined);

    // Unbound writers check their name as well: a file moved away is not the session at its name.
    const plainFile = path.join(sessionDir, "plain.jsonl");
    const plain = storage.openWriter(plainFile);
    plain.writeLineSync(entryLine(0));
    fs.renameSync(plainFile, `${plainFile}.moved`);
    await expect(plain.flush()).rejects.toMatchObject({ code: "unsafe_entry", detail: "identity_changed" });
    await expect(plain.close()).rejects.toMatchObject({ code: "unsafe_entry", detail: "identity_changed" });
    expect(fs.existsSync(plainFile)).toBe(false);
  });

  it("is only made for a real directory at or below the sessions root", () => {
    const sessionsRoot = path.join(tmp.path, "sessions");
    expect(codeOf(() => createManagedSessionSecurityContext({ agentDir: tmp.path, sessionsRoot, sessionDir: tmp.path }))).toBe("outside_root");
    expect(codeOf(() => createManagedSessionSecurityContext({ agentDir: tmp.path, sessionsRoot, sessionDir: path.join(sessionsRoot, "missing") }))).toBe(
      "not_found",
    );
    const link = path.join(sessionsRoot, "link");
    fs.symlinkSync(sessionDir, link);
    expect(codeOf(() => createManagedSessionSecurityContext({ agentDir: tmp.path, sessionsRoot, sessionDir: link }))).toBe("symlink_refused");
    const made = createManagedSessionSecurityContext({ agentDir: tmp.path, sessionsRoot, sessionDir: sessionsRoot });
    expect(Object.isFrozen(made)).toBe(true);
    expect(made).toMatchObject({ kind: "managed", profileAgentDir: tmp.path, sessionDir: sessionsRoot });
  });
});

describe("the manager's strict close over a close adapter", () => {
  /** File storage whose writers close through `adapter` (GJC's certainty-aware close). */
  class AdaptedStorage extends FileSessionStorage {
    constructor(private readonly adapter: { close(fd: number): void }) {
      super();
    }
    override openWriter(target: string, options: Parameters<FileSessionStorage["openWriter"]>[1] = {}) {
      return super.openWriter(target, { ...options, closeAdapter: this.adapter });
    }
  }

  it("reports close_failed_retryable with the file still held, then closes it on the next strict close", async () => {
    const attempts: number[] = [];
    let refuse = true;
    const adapted = new AdaptedStorage({
      close(fd) {
        attempts.push(fd);
        if (refuse) throw new SessionStorageWriterRetryableCloseError("the descriptor table is busy");
        fs.closeSync(fd);
      },
    });
    const session = SessionManager.create("/work/project", sessionDir, adapted, { terminalId: null, agentDir: path.join(tmp.path, "agent") });
    for (let n = 0; n < 3; n++) {
      session.appendMessage({ role: "user", content: `step ${n}: ${"explain the failing build ".repeat(50)}`, timestamp: n });
      session.appendMessage({
        role: "assistant",
        content: [{ type: "text", text: `answer ${n}` }],
        provider: "p",
        model: "m",
        timestamp: n,
        usage: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 },
        stopReason: "stop",
      } as never);
    }
    const file = session.getSessionFile()!;

    const first = await session.flushAndCloseStrict();
    expect(first.kind).toBe("close_failed_retryable");
    expect(first.kind === "close_failed_retryable" && first.error).toBeInstanceOf(SessionStorageWriterRetryableCloseError);
    // Not released: no other writer may take the file meanwhile.
    expect(codeOf(() => storage.openWriter(file))).toBe("session_busy");

    refuse = false;
    expect(await session.flushAndCloseStrict()).toEqual({ kind: "closed" });
    expect(attempts).toHaveLength(2);
    expect(attempts[0]).toBe(attempts[1]);
    expect(await session.closeStrict()).toEqual({ kind: "closed" });
    expect(attempts).toHaveLength(2);
    const lines = fs
      .readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { type: string });
    expect(lines.map((line) => line.type)).toEqual(["session", ...Array(6).fill("message")]);
    const next = storage.openWriter(file);
    await next.close();
  });
});
