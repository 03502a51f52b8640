/**
 * Closing a ManagedSessionStorage ends the storage's own operations, while every writer it
 * opened keeps working until it is closed, full rewrites included, wherever its file lies
 * (directly in the root, whose descriptor such a writer borrows, or in a subdirectory).
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { ManagedSessionStorage, SessionManager } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, recordingLogger } from "../manager/helpers.js";

let tmp: { path: string; remove(): void };
let root: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-managed-close-");
  root = path.join(tmp.path, "root");
});
afterEach(() => tmp.remove());

/** Descriptors of this process that point at `dir` itself. */
function descriptorsOn(dir: string): number {
  let count = 0;
  for (const fd of fs.readdirSync("/proc/self/fd")) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === dir) count += 1;
    } catch {
      // the descriptor readdir itself used, closed meanwhile
    }
  }
  return count;
}

describe("ManagedSessionStorage.close", () => {
  it("open writers keep appending and rewriting; the storage's own calls fail; the root descriptor goes with the last writer", async () => {
    const storage = ManagedSessionStorage.open(root, { create: true, logger: recordingLogger() });
    storage.ensureDirSync(path.join(root, "sub"));
    const top = storage.openWriter(path.join(root, "a.jsonl"));
    const nested = storage.openWriter(path.join(root, "sub", "b.jsonl"));
    await top.writeLine("one");
    storage.close();
    storage.close();

    await top.writeLine("two");
    await top.rewrite(["rewritten\n"]);
    await top.writeLine("three");
    await nested.rewrite(["nested\n"]);
    expect(() => storage.listFilesSync(root)).toThrow(expect.objectContaining({ code: "writer_closed" }));
    expect(() => storage.openWriter(path.join(root, "c.jsonl"))).toThrow(expect.objectContaining({ code: "writer_closed" }));
    expect(descriptorsOn(root)).toBeGreaterThan(0);

    await top.close();
    await nested.close();
    expect(fs.readFileSync(path.join(root, "a.jsonl"), "utf8")).toBe("rewritten\nthree\n");
    expect(fs.readFileSync(path.join(root, "sub", "b.jsonl"), "utf8")).toBe("nested\n");
    expect(descriptorsOn(root)).toBe(0);
  });

  it("a storage closed with no writer closes its root at once", () => {
    const storage = ManagedSessionStorage.open(root, { create: true });
    expect(descriptorsOn(root)).toBe(1);
    storage.close();
    expect(descriptorsOn(root)).toBe(0);
  });

  it("a session manager on a closed storage still migrates its v3 file by a full rewrite", async () => {
    fs.mkdirSync(root, { mode: 0o700 });
    const file = path.join(root, "2025-01-01T00-00-00-000Z_0190a0b0-3e82-7000-8000-000000000001.jsonl");
    fs.writeFileSync(
      file,
      `${JSON.stringify({ type: "session", version: 3, id: "0190a0b0-3e82-7000-8000-000000000001", timestamp: "2025-01-01T00:00:00.000Z", cwd: "/work" })}\n` +
        `${JSON.stringify({ type: "message", id: "a1", parentId: null, timestamp: "2025-01-01T00:00:01.000Z", message: assistant("before") })}\n`,
      { mode: 0o600 },
    );
    const storage = ManagedSessionStorage.open(root, { logger: recordingLogger() });
    const manager = await SessionManager.open(file, root, storage, undefined, undefined, { terminalId: null, logger: recordingLogger() });
    storage.close();
    manager.appendMessage(assistant("after"));
    await manager.flush();
    await manager.close();
    const lines = fs
      .readFileSync(file, "utf8")
      .trim()
      .split("\n")
      .map((line) => JSON.parse(line) as { version?: number; type: string });
    expect(lines[0]).toMatchObject({ type: "session", version: 5 });
    expect(lines).toHaveLength(3);
  });
});
