/**
 * A session file this process writes whole (created, rewritten, branched into a new file, a
 * header-only file taken over) gets its line index from the bytes it wrote, and the index is
 * kept up by the appends that follow: the next open uses it as it is (nothing republished)
 * and loads what a full parse loads.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SessionManager } from "../../src/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, user } from "./helpers.js";
import { decodeLineIndex, fullParse, openReadOnly, openWritable, sidecarOf, snapshot, storedLinks } from "./line-index-helpers.js";

const quiet = { error() {} };

let tmp: { path: string; remove(): void };
beforeEach(() => {
  tmp = makeTempDir("gjc-line-index-written-");
  fs.chmodSync(tmp.path, 0o700);
});
afterEach(() => tmp.remove());

function create(): SessionManager {
  return SessionManager.create(tmp.path, tmp.path, undefined, { terminalId: null, logger: quiet });
}

function converse(manager: SessionManager, count: number, from = 0): void {
  for (let i = from; i < from + count; i++) manager.appendMessage(i % 2 === 0 ? user(`u${i}`) : assistant(`a${i}`));
}

/**
 * Checks that `file`'s index is complete, covers every line of the file with the parent rows
 * a full hash resolves, and that an open uses it as it is and equals a full parse.
 */
async function expectIndexed(file: string): Promise<void> {
  const bytes = fs.readFileSync(file);
  const index = decodeLineIndex(fs.readFileSync(sidecarOf(file)))!;
  expect(index.complete).toBe(true);
  expect(index.ino).toBe(String(fs.statSync(file).ino));
  expect(index.table.end).toBe(bytes.length);
  expect(index.table.size).toBe(
    bytes
      .toString("utf8")
      .split("\n")
      .filter((line) => line.length > 0).length,
  );
  const { stored, scanned } = storedLinks(file);
  expect(stored).toEqual(scanned);
  // An open that had to rebuild or catch up would publish a new sidecar (a new inode).
  const before = fs.statSync(sidecarOf(file));
  expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
  const after = fs.statSync(sidecarOf(file));
  expect([after.ino, after.size, after.mtimeMs]).toEqual([before.ino, before.size, before.mtimeMs]);
}

describe("line index of a file written whole", () => {
  it("is built by a created session's first write and kept up by its appends", async () => {
    const manager = create();
    converse(manager, 300);
    await manager.flush();
    const file = manager.getSessionFile()!;
    expect(fs.existsSync(sidecarOf(file))).toBe(true);
    await manager.close();
    await expectIndexed(file);

    const reopened = await openWritable(file);
    converse(reopened, 50, 300);
    await reopened.close();
    await expectIndexed(file);
  });

  it("follows a rewrite of the file and the appends after it", async () => {
    const manager = create();
    converse(manager, 20);
    await manager.flush();
    const file = manager.getSessionFile()!;
    const first = fs.statSync(sidecarOf(file)).ino;
    await manager.rewriteEntries();
    converse(manager, 10, 20);
    manager.appendLabelChange(manager.getLeafId()!, "kept");
    await manager.close();
    expect(fs.statSync(sidecarOf(file)).ino).not.toBe(first);
    await expectIndexed(file);
  });

  it("is built for a branched session's new file", async () => {
    const manager = create();
    converse(manager, 12);
    const from = manager.getEntries()[5]!.id as string;
    const branched = manager.createBranchedSession(from)!;
    converse(manager, 6, 12);
    await manager.close();
    await expectIndexed(branched);
  });

  it("is built when a header-only file gets its first conversation", async () => {
    const file = path.join(tmp.path, "s.jsonl");
    const header = { type: "session", version: 5, id: "sess", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" };
    fs.writeFileSync(file, `${JSON.stringify(header)}\n`, { mode: 0o600 });
    const manager = await openWritable(file);
    converse(manager, 40);
    await manager.close();
    await expectIndexed(file);
  });

  it("is not written where the directory is not owner-only", async () => {
    fs.chmodSync(tmp.path, 0o755);
    const manager = create();
    converse(manager, 10);
    await manager.close();
    expect(fs.existsSync(sidecarOf(manager.getSessionFile()!))).toBe(false);
  });
});
