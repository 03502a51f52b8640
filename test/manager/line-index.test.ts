/**
 * The line index is never trusted blindly: each way it can disagree with its transcript
 * (missing, grown, shrunk, replaced, a line changed in place, damaged, torn, foreign, a link,
 * loose permissions) ends in a load equal to a full parse with a note in the load report, and
 * the next writer's open writes it again to match. A read-only open never writes it.
 */
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { MemorySessionStorage, SessionManager } from "../../src/index.js";
import { decodeLineIndexFrom, encodeLineIndex } from "../../src/manager/line-index.js";
import { UNKNOWN_ROW } from "../../src/session/index.js";
import { makeTempDir } from "../helpers/temp.js";
import { assistant, codeOfAsync, FIXTURES } from "./helpers.js";
import { decodeLineIndex, fullParse, openReadOnly, openWritable, sidecarOf, snapshot } from "./line-index-helpers.js";

let tmp: { path: string; remove(): void };
let file: string;
beforeEach(() => {
  tmp = makeTempDir("gjc-line-index-");
  file = path.join(tmp.path, "s.jsonl");
});
afterEach(() => tmp.remove());

const header = JSON.stringify({ type: "session", version: 5, id: "sess", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" });
const id = (i: number) => `e${String(i).padStart(4, "0")}`;

/** A chain of `count` messages from `first`, with a compaction at `compactAt` (keeping the last two before it). */
function chain(first: number, count: number, compactAt = -1): string[] {
  const lines: string[] = [];
  for (let i = first; i < first + count; i++) {
    const parentId = i === 0 ? null : id(i - 1);
    if (i === compactAt) {
      lines.push(JSON.stringify({ type: "compaction", id: id(i), parentId, timestamp: "t", summary: "s", firstKeptEntryId: id(i - 2), tokensBefore: 5 }));
      continue;
    }
    const role = i % 2 === 0 ? "user" : "assistant";
    lines.push(JSON.stringify({ type: "message", id: id(i), parentId, timestamp: "t", message: { role, provider: "p", model: "m", content: [{ type: "text", text: `m${i}` }], timestamp: i } }));
  }
  return lines;
}

function write(lines: string[]): void {
  fs.writeFileSync(file, [header, ...lines].join("\n") + "\n", { mode: 0o600 });
}

function indexOf(target = file) {
  return decodeLineIndex(fs.readFileSync(sidecarOf(target)))!;
}

/** Opens `file` read-only, checks it equals a full parse, and returns the load report's note on the index. */
async function expectFullParse(): Promise<string | undefined> {
  const manager = await openReadOnly(file);
  expect(snapshot(manager)).toEqual(await fullParse(file));
  return manager.getLoadReport().lineIndex;
}

/** Lets a writer open and close `target`, which writes (or catches up) its index. */
async function indexed(target = file): Promise<void> {
  await (await openWritable(target)).close();
}

describe("line index", () => {
  it("is written by a writer's open only, owner-only, and names the transcript it covers", async () => {
    write(chain(0, 20, 12));
    expect(await expectFullParse()).toBe("no usable index");
    expect(fs.existsSync(sidecarOf(file))).toBe(false);
    await indexed();
    expect(await expectFullParse()).toBe("used");
    const stat = fs.lstatSync(sidecarOf(file));
    expect(stat.mode & 0o777).toBe(0o600);
    const index = indexOf();
    expect(index.ino).toBe(String(fs.statSync(file).ino));
    expect(index.table.size).toBe(21);
    expect(index.table.end).toBe(fs.statSync(file).size);
  });

  it("covers a prefix of a grown transcript, read-only opens read the rest, and the next writer catches it up", async () => {
    write(chain(0, 10));
    await indexed();
    fs.appendFileSync(file, chain(10, 5).join("\n") + "\n");
    expect(await expectFullParse()).toBe("used");
    expect(indexOf().table.size).toBe(11);
    await indexed();
    expect(indexOf().table.size).toBe(16);
    expect(await expectFullParse()).toBe("used");
  });

  it("is never written by a read-only open, even when stale, so a writer's appends never follow a reader's shorter index", async () => {
    write(chain(0, 10));
    await indexed();
    const written = fs.readFileSync(sidecarOf(file));
    const writer = await openWritable(file);
    for (let i = 0; i < 70; i++) writer.appendCustomEntry("x", { i });
    // Readers beside the writer: each equals a full parse of the file as it is, and none touches the index.
    const before = fs.readFileSync(sidecarOf(file));
    expect(await expectFullParse()).toBe("used");
    expect(fs.readFileSync(sidecarOf(file))).toEqual(before);
    for (let i = 0; i < 70; i++) writer.appendCustomEntry("y", { i });
    await writer.close();
    expect(fs.readFileSync(sidecarOf(file)).subarray(0, written.length)).toEqual(written);
    expect(indexOf().table.size).toBe(151);
    expect(await expectFullParse()).toBe("used");
  });

  it("is kept up by the manager's own appends, batch by batch, without a sync", async () => {
    write(chain(0, 10));
    const manager = await openWritable(file);
    for (let i = 0; i < 100; i++) manager.appendCustomEntry("x", { i });
    await manager.close();
    const index = indexOf();
    expect(index.complete).toBe(true);
    expect(index.table.size).toBe(111);
    expect(index.table.end).toBe(fs.statSync(file).size);
    await expectFullParse();
  });

  it("appends with the manager's clock on a session opened through its index", async () => {
    write(chain(0, 4));
    await indexed();
    const now = () => new Date("2030-05-05T00:00:00.000Z");
    const manager = await SessionManager.open(file, tmp.path, undefined, undefined, undefined, { terminalId: null, logger: { error() {} }, now });
    const appended = manager.appendCustomEntry("x");
    expect(manager.getEntry(appended)).toMatchObject({ timestamp: "2030-05-05T00:00:00.000Z" });
    await manager.close();
  });

  it("leaves an older file to the full load (migrated as before), and indexes it once rewritten as v5", async () => {
    fs.copyFileSync(path.join(FIXTURES, "gajae-code__session-v4.jsonl"), file);
    fs.chmodSync(file, 0o600);
    await expectFullParse();
    expect(fs.existsSync(sidecarOf(file))).toBe(false);
    const manager = await openWritable(file);
    expect(manager.getLoadReport().migratedFrom).toBe(4);
    manager.appendMessage(assistant("after the migration"));
    await manager.close();
    await expectFullParse();
    expect(fs.existsSync(sidecarOf(file))).toBe(true);
    await expectFullParse();
  });

  it("never reads a sidecar of a former layout (v1-v3), and removes it when the index is written", async () => {
    write(chain(0, 10));
    const v1 = sidecarOf(file).replace(/\.v4$/, ".v1");
    const v2 = sidecarOf(file).replace(/\.v4$/, ".v2");
    const v3 = sidecarOf(file).replace(/\.v4$/, ".v3");
    fs.writeFileSync(v1, "gjc-line-index 1\t0\t0\nB3\tabc\n", { mode: 0o600 });
    fs.writeFileSync(v2, `gjc-line-index 2 ${os.endianness()}\t0\t0\nCAAAA\n`, { mode: 0o600 });
    fs.writeFileSync(v3, `gjc-line-index 3 ${os.endianness()}\t0\t0\nCAAAA\n`, { mode: 0o600 });
    expect(await expectFullParse()).toBe("no usable index");
    await indexed();
    // The former sidecars go in the background.
    for (let i = 0; i < 100 && [v1, v2, v3].some((former) => fs.existsSync(former)); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect([v1, v2, v3].filter((former) => fs.existsSync(former))).toEqual([]);
    expect(indexOf().table.size).toBe(11);
    expect(indexOf().table.idAt(10)).toBe(id(9));
    expect(indexOf().table.parentIdAt(10)).toBe(id(8));
  });

  it("keeps only the rows of lines a shrunk transcript still holds, and is rewritten by the next writer", async () => {
    write(chain(0, 10));
    await indexed();
    const shorter = [header, ...chain(0, 4)].join("\n") + "\n";
    const fd = fs.openSync(file, "r+");
    fs.ftruncateSync(fd, 0);
    fs.writeSync(fd, shorter, 0);
    fs.closeSync(fd);
    // The first lines are the same bytes, checked as they are read: the rows past the end are dropped.
    expect(await expectFullParse()).toBe("used");
    await indexed();
    expect(indexOf().table.size).toBe(5);
    expect(await expectFullParse()).toBe("used");
  });

  it("is ignored when the transcript was replaced, and rebuilt by the next writer", async () => {
    write(chain(0, 10));
    await indexed();
    const replacement = path.join(tmp.path, "new");
    fs.writeFileSync(replacement, [header, ...chain(100, 10)].join("\n") + "\n", { mode: 0o600 });
    fs.renameSync(replacement, file);
    expect(await expectFullParse()).toBe("index ignored: it names another file");
    await indexed();
    expect(indexOf().ino).toBe(String(fs.statSync(file).ino));
  });

  it("is ignored when a line no longer holds the id it names (changed in place, same size)", async () => {
    write(chain(0, 10));
    await indexed();
    const bytes = fs.readFileSync(file, "utf8").replace(`"id":"${id(9)}"`, `"id":"x${id(9).slice(1)}"`);
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, bytes, 0);
    fs.closeSync(fd);
    const opened = snapshot(await openReadOnly(file));
    expect(opened.leaf).toBe(`x${id(9).slice(1)}`);
    expect(opened).toEqual(await fullParse(file));
  });

  it("walks the stored parent rows only where they name the parent's entry, and hashes every id otherwise", async () => {
    const lines = chain(0, 10);
    // Entry 9 branches from entry 3: its parent row is not the row before.
    lines[9] = lines[9]!.replace(`"parentId":"${id(8)}"`, `"parentId":"${id(3)}"`);
    write(lines);
    await indexed();
    const stored = indexOf();
    const row9 = 10;
    expect(stored.table.parentRow[row9]).toBe(4);
    expect(stored.table.repeats[row9]).toBe(0);
    const { dev, ino } = stored;
    for (const [parentRow, repeats] of [
      [9, 0], // the row before, whose entry holds another id
      [-1, 0], // unresolved
      [UNKNOWN_ROW, 0],
      [0, 0], // the header's row
      [4, 1], // right parent, but the id said to repeat
    ] as const) {
      const table = decodeLineIndex(fs.readFileSync(sidecarOf(file)))!.table;
      table.parentRow[row9] = parentRow;
      table.repeats[row9] = repeats;
      fs.writeFileSync(sidecarOf(file), encodeLineIndex(dev, ino, table, table.size), { mode: 0o600 });
      const opened = snapshot(await openReadOnly(file));
      expect((opened.branch as { id: string }[]).map((entry) => entry.id)).toEqual([0, 1, 2, 3, 9].map(id));
      expect(opened).toEqual(await fullParse(file));
    }
  });

  it("is ignored when damaged, torn or foreign, or as a link or with loose permissions, and rebuilt by the next writer", async () => {
    write(chain(0, 10));
    await indexed();
    const sidecar = sidecarOf(file);
    const good = fs.readFileSync(sidecar);

    fs.writeFileSync(sidecar, Buffer.concat([good.subarray(0, 60), Buffer.from("garbage\n"), good.subarray(60)]));
    await expectFullParse();
    await indexed();
    expect(indexOf().complete).toBe(true);

    fs.writeFileSync(sidecar, good.subarray(0, good.length - 7));
    await expectFullParse();
    await indexed();
    expect(indexOf().complete).toBe(true);
    expect(indexOf().table.size).toBe(11);

    const other = path.join(tmp.path, "other.jsonl");
    fs.writeFileSync(other, [header, ...chain(50, 3)].join("\n") + "\n", { mode: 0o600 });
    await indexed(other);
    fs.copyFileSync(sidecarOf(other), sidecar);
    expect(await expectFullParse()).toBe("index ignored: it names another file");
    await indexed();
    expect(indexOf().ino).toBe(String(fs.statSync(file).ino));

    fs.writeFileSync(sidecar, "gjc-line-index 1\t0\t0\nB3\tabc\n");
    expect(await expectFullParse()).toBe("no usable index");

    const target = path.join(tmp.path, "target");
    fs.writeFileSync(target, good, { mode: 0o600 });
    fs.rmSync(sidecar);
    fs.symlinkSync(target, sidecar);
    fs.appendFileSync(file, chain(10, 2).join("\n") + "\n");
    await expectFullParse();
    expect(fs.readFileSync(target)).toEqual(good);

    fs.rmSync(sidecar);
    fs.writeFileSync(sidecar, Buffer.concat([good.subarray(0, 20), Buffer.from("9999")]), { mode: 0o644 });
    fs.chmodSync(sidecar, 0o644);
    await expectFullParse();
  });

  it("is decoded the same a few bytes at a time, and not at all from a file that reads longer than its size", async () => {
    write(chain(0, 300, 150));
    await indexed();
    const good = fs.readFileSync(sidecarOf(file));
    const whole = decodeLineIndex(good)!;
    expect(whole.complete).toBe(true);
    // Reads of 7 bytes split the header and each batch across many reads.
    const trickle = (bytes: Buffer) => (into: Buffer, position: number) => bytes.copy(into, 0, position, Math.min(bytes.length, position + 7, position + into.length));
    const slow = decodeLineIndexFrom(trickle(good), good.length)!;
    expect(slow.complete).toBe(true);
    expect([...slow.table.offset.subarray(0, slow.table.size)]).toEqual([...whole.table.offset.subarray(0, whole.table.size)]);
    expect(Array.from({ length: slow.table.size }, (_, row) => slow.table.idAt(row))).toEqual(Array.from({ length: whole.table.size }, (_, row) => whole.table.idAt(row)));
    // A torn last batch ends the index at the batch before it.
    const cut = good.subarray(0, good.length - 5);
    const torn = decodeLineIndexFrom(trickle(cut), cut.length)!;
    expect(torn.complete).toBe(false);
    expect(torn.table.size).toBeLessThan(whole.table.size);
    // Bytes past the size the stat gave: the file is still being written.
    expect(decodeLineIndexFrom(trickle(good), good.length - 100)).toBeUndefined();
  });

  it("reads entries off the resumed path on demand, and a file changed in place since then is a typed error", async () => {
    write(chain(0, 30, 25));
    await indexed();
    const manager = await openReadOnly(file);
    const context = manager.buildSessionContext();
    expect(context.messages[0]).toMatchObject({ role: "compactionSummary" });
    expect(context.messages).toHaveLength(7);
    const text = fs.readFileSync(file, "utf8").replace(`"id":"${id(3)}"`, `"id":"y${id(3).slice(1)}"`);
    const fd = fs.openSync(file, "r+");
    fs.writeSync(fd, text, 0);
    fs.closeSync(fd);
    expect(await codeOfAsync(() => manager.getEntries())).toBe("session_changed");
  });

  // About 600 MB of disk and 2 GB of memory: opt in with GJC_HUGE_FILE_TESTS=1.
  it.runIf(process.env.GJC_HUGE_FILE_TESTS === "1")("refuses a line too long for one string with line_too_long, indexed or not", async () => {
    write(chain(0, 2));
    const fd = fs.openSync(file, "a");
    fs.writeSync(fd, `{"type":"message","id":"huge","parentId":"${id(1)}","timestamp":"t","message":{"role":"user","content":"`);
    const block = Buffer.alloc(64 << 20, 0x61);
    for (let i = 0; i < 9; i++) fs.writeSync(fd, block);
    fs.writeSync(fd, `","timestamp":1}}\n`);
    fs.closeSync(fd);
    expect(await codeOfAsync(() => openReadOnly(file))).toBe("line_too_long");
    const storage = new MemorySessionStorage({ root: tmp.path });
    storage.writeTextSync(file, fs.readFileSync(file));
    expect(await codeOfAsync(() => openReadOnly(file, storage))).toBe("line_too_long");
  }, 300_000);

  it("is invisible to listings", async () => {
    write(chain(0, 4));
    await indexed();
    const sessions = await SessionManager.list(tmp.path, tmp.path);
    expect(sessions.map((session) => session.path)).toEqual([file]);
  });
});
