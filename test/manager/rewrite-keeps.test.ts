/**
 * A rewrite never loses or shortens what it read: an entry line whose bytes are not valid UTF-8
 * is written back as those bytes, and a record longer than the persistence limit stays whole
 * (truncation is for entries being persisted), through managed and plain file storage alike,
 * including the migration rewrite of a v3 file.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { FileSessionStorage, loadSession, ManagedSessionStorage, SessionManager, type SessionStorage } from "../../src/index.js";
import { MAX_PERSIST_CHARS, PERSIST_TRUNCATION_NOTICE, serializeSessionLines } from "../../src/session/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, recordingLogger } from "./helpers.js";

let tmp: { path: string; remove(): void };
let root: string;

beforeEach(() => {
  tmp = makeTempDir("gjc-rewrite-keeps-");
  root = path.join(tmp.path, "root");
  fs.mkdirSync(root, { mode: 0o700 });
});
afterEach(() => tmp.remove());

const ID = "0190a0b0-3e82-7000-8000-000000000001";
const header = JSON.stringify({ type: "session", version: 3, id: ID, timestamp: "2025-01-01T00:00:00.000Z", cwd: "/work" });
const first = JSON.stringify({ type: "message", id: "a1", parentId: null, timestamp: "2025-01-01T00:00:01.000Z", message: assistant("hi") });
// "café" with a Latin-1 é and a stray 0xff: decoding gives U+FFFD twice.
const nonUtf8 = Buffer.concat([
  Buffer.from('{"type":"message","id":"b1","parentId":"a1","timestamp":"2025-01-01T00:00:02.000Z","message":{"role":"user","content":"caf'),
  Buffer.from([0xe9, 0xff]),
  Buffer.from('","timestamp":2}}'),
]);
const long = JSON.stringify({
  type: "message",
  id: "c1",
  parentId: "b1",
  timestamp: "2025-01-01T00:00:03.000Z",
  message: { role: "user", content: "x".repeat(MAX_PERSIST_CHARS + 100_000), timestamp: 3 },
});
const onDisk = Buffer.concat([Buffer.from(`${header}\n${first}\n`), nonUtf8, Buffer.from(`\n${long}\n`)]);

const storages: [string, () => SessionStorage][] = [
  ["managed storage", () => ManagedSessionStorage.open(root)],
  ["file storage", () => new FileSessionStorage(root)],
];

describe("a rewrite keeps what it read", () => {
  it.each(storages)("%s: the v3 migration rewrite keeps a non-UTF-8 line byte for byte and a long record whole", async (_label, open) => {
    const file = path.join(root, `2025-01-01T00-00-00-000Z_${ID}.jsonl`);
    fs.writeFileSync(file, onDisk, { mode: 0o600 });
    const storage = open();
    const manager = await SessionManager.open(file, root, storage, undefined, undefined, { terminalId: null, logger: recordingLogger() });
    manager.appendMessage({ role: "user", content: "y".repeat(MAX_PERSIST_CHARS + 10), timestamp: 4 });
    manager.appendMessage(assistant("after"));
    await manager.close();
    (storage as { close?: () => void }).close?.();

    const written = fs.readFileSync(file);
    const lines: Buffer[] = [];
    for (let start = 0; start < written.length;) {
      const end = written.indexOf(0x0a, start);
      lines.push(written.subarray(start, end));
      start = end + 1;
    }
    expect(JSON.parse(lines[0]!.toString())).toMatchObject({ type: "session", version: 5 });
    expect(lines[1]!.toString()).toBe(first);
    expect(lines[2]!.equals(nonUtf8)).toBe(true);
    expect(lines[3]!.toString()).toBe(long);
    // Truncation still applies to the entry being persisted now.
    expect(lines[4]!.toString()).toContain(PERSIST_TRUNCATION_NOTICE);
    expect(lines).toHaveLength(6);
  });

  it("loadSession + serializeSessionLines writes a non-UTF-8 entry line back as its bytes", () => {
    const loaded = loadSession(onDisk);
    if (loaded.kind !== "loaded") throw new Error(loaded.kind);
    const bytes = serializeSessionLines(loaded.lines);
    expect(bytes.includes(nonUtf8)).toBe(true);
    expect(bytes.includes(Buffer.from(long))).toBe(true);
  });

  it("a branched session copies a long record read from the file whole", async () => {
    const file = path.join(root, `2025-01-01T00-00-00-000Z_${ID}.jsonl`);
    fs.writeFileSync(file, onDisk, { mode: 0o600 });
    const manager = await SessionManager.open(file, root, undefined, undefined, undefined, { terminalId: null, logger: recordingLogger() });
    const branched = manager.createBranchedSession("c1")!;
    await manager.close();
    expect(fs.readFileSync(branched, "utf8").split("\n")).toContain(long);
  });
});
