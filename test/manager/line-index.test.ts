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

import { MemorySessionStorage, SessionManager, type FileEntry } from "../../src/index.js";
import { decodeLineIndexFrom, encodeLineIndex } from "../../src/manager/line-index.js";
import { kindOf, ROW_WORDS } from "../../src/session/index.js";
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
    lines.push(
      JSON.stringify({
        type: "message",
        id: id(i),
        parentId,
        timestamp: "t",
        message: { role, provider: "p", model: "m", content: [{ type: "text", text: `m${i}` }], timestamp: i },
      }),
    );
  }
  return lines;
}

/** `lines` as a session of their own: the first entry becomes a root. */
function rooted(lines: string[]): string[] {
  return [lines[0]!.replace(/"parentId":"[^"]*"/, '"parentId":null'), ...lines.slice(1)];
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
    // Past two whole batches of rows, and a part of a third left for the close to write.
    for (let i = 0; i < 2500; i++) manager.appendCustomEntry("x", { i });
    await manager.close();
    const index = indexOf();
    expect(index.complete).toBe(true);
    expect(index.table.size).toBe(2511);
    expect(index.table.end).toBe(fs.statSync(file).size);
    await expectFullParse();
  });

  it("reads every shape of line through its rows as a full parse does: short and long ASCII, other scripts, escapes, bytes that are not UTF-8", async () => {
    const lines = chain(0, 3000);
    const at = (i: number) => JSON.parse(lines[i]!) as { message: { content: Array<{ text: string }> } };
    const edit = (i: number, text: string) => {
      const record = at(i);
      record.message.content[0]!.text = text;
      lines[i] = JSON.stringify(record);
    };
    edit(700, "tool output line\n".repeat(12_000));
    edit(701, "résumé — 日本語のテキスト 🚀 ".repeat(50));
    edit(1500, "x".repeat(40_000));
    // An escape JSON.parse turns into letters a byte-level look would not see.
    lines[2000] = lines[2000]!.replace('"text":"m2000"', '"text":"\\u0062lob:sha256:' + "0".repeat(64) + '"');
    write(lines);
    // A byte that is not UTF-8 inside a string: the line is kept as its bytes, as a full load keeps it.
    const bytes = fs.readFileSync(file);
    const mark = bytes.indexOf('"text":"m2500"');
    bytes[mark + 9] = 0xff;
    fs.writeFileSync(file, bytes);
    await indexed();
    expect(await expectFullParse()).toBe("used");
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

  it("never reads a sidecar of a former layout (v1-v5), and removes it when the index is written", async () => {
    write(chain(0, 10));
    const former = ["v1", "v2", "v3", "v4", "v5"].map((version) => sidecarOf(file).replace(/\.v6$/, `.${version}`));
    fs.writeFileSync(former[0]!, "gjc-line-index 1\t0\t0\nB3\tabc\n", { mode: 0o600 });
    fs.writeFileSync(former[1]!, `gjc-line-index 2 ${os.endianness()}\t0\t0\nCAAAA\n`, { mode: 0o600 });
    fs.writeFileSync(former[2]!, `gjc-line-index 3 ${os.endianness()}\t0\t0\nCAAAA\n`, { mode: 0o600 });
    fs.writeFileSync(former[3]!, `gjc-line-index 4 ${os.endianness()}\t0\t0\nCAAAA\n`, { mode: 0o600 });
    fs.writeFileSync(former[4]!, Buffer.concat([Buffer.from("gjc-li5\n"), Buffer.alloc(24 + 20)]), { mode: 0o600 });
    expect(await expectFullParse()).toBe("no usable index");
    await indexed();
    // The former sidecars go in the background.
    for (let i = 0; i < 100 && former.some((name) => fs.existsSync(name)); i++) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(former.filter((name) => fs.existsSync(name))).toEqual([]);
    const { table } = indexOf();
    expect(table.size).toBe(11);
    expect(table.kind(10)).toBe(kindOf("message"));
    expect(table.parent(10)).toBe(9);
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
    fs.writeFileSync(replacement, [header, ...rooted(chain(100, 10))].join("\n") + "\n", { mode: 0o600 });
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

  it("never walks a parent row that names another entry, whatever row it names", async () => {
    const lines = chain(0, 10);
    // Entry 9 branches from entry 3: its parent row is not the row before.
    lines[9] = lines[9]!.replace(`"parentId":"${id(8)}"`, `"parentId":"${id(3)}"`);
    write(lines);
    await indexed();
    const stored = indexOf();
    const row9 = 10;
    expect(stored.table.parent(row9)).toBe(4);
    const { dev, ino } = stored;
    // The row before (an entry with another id), none, the header's row, rows past the table, the entry itself.
    for (const parent of [9, -1, 0, 11, 1000, row9]) {
      const table = decodeLineIndex(fs.readFileSync(sidecarOf(file)))!.table;
      table.words[row9 * ROW_WORDS + 1] = parent;
      fs.writeFileSync(sidecarOf(file), encodeLineIndex(dev, ino, table, table.size), { mode: 0o600 });
      const manager = await openReadOnly(file);
      const opened = snapshot(manager);
      expect((opened.branch as { id: string }[]).map((entry) => entry.id)).toEqual([0, 1, 2, 3, 9].map(id));
      expect(opened).toEqual(await fullParse(file));
      expect(manager.getLoadReport().lineIndex).toMatch(/^index ignored: /);
    }
  });

  it("is emptied by a writer whose read of an unread line finds it lying, so the next open reads every line", async () => {
    write(chain(0, 30, 25));
    await indexed();
    const { dev, ino, table } = indexOf();
    // Entry 2 lies behind the compaction: no resume reads it.
    table.words[3 * ROW_WORDS + 2] = table.words[3 * ROW_WORDS + 2]! ^ 1;
    fs.writeFileSync(sidecarOf(file), encodeLineIndex(dev, ino, table, table.size), { mode: 0o600 });
    const writer = await openWritable(file);
    expect(writer.getLoadReport().lineIndex).toBe("used");
    expect(await codeOfAsync(() => writer.getEntries())).toBe("session_changed");
    expect(fs.statSync(sidecarOf(file)).size).toBe(0);
    await writer.close();
    expect(await expectFullParse()).toBe("no usable index");
    await indexed();
    expect(await expectFullParse()).toBe("used");
  });

  it("is never written for a file whose entries repeat an id, and the report says why", async () => {
    const lines = [
      ...chain(0, 10),
      JSON.stringify({ type: "message", id: id(5), parentId: id(9), timestamp: "t", message: { role: "user", content: "again", timestamp: 99 } }),
    ];
    write(lines);
    await indexed();
    expect(await expectFullParse()).toBe("not indexed: two entries hold one id");
    expect(fs.existsSync(sidecarOf(file)) && indexOf().table.size > 0).toBe(false);
  });

  it("is refused whole, with a note, when a row was edited without its check word or comes from another file", async () => {
    write(chain(0, 40, 30));
    await indexed();
    const pristine = fs.readFileSync(sidecarOf(file));
    const rowAt = (row: number) => 32 + row * ROW_WORDS * 4;
    // A message's row given a state entry's kind, and a message's parent row moved: both behind the compaction, unread.
    const edits: [number, number, number][] = [
      [5, 4 * 4, kindOf("thinking_level_change")],
      [12, 4, 3],
    ];
    for (const [row, at, value] of edits) {
      const edited = Buffer.from(pristine);
      edited.writeInt32LE(value, rowAt(row) + at);
      fs.writeFileSync(sidecarOf(file), edited, { mode: 0o600 });
      expect(await expectFullParse()).toBe(`index ignored: row ${row} fails its check`);
    }
    // The same row of another session's index, at the same place, with this transcript's head.
    const other = path.join(tmp.path, "other.jsonl");
    fs.writeFileSync(other, [header, ...chain(0, 40, 30)].join("\n") + "\n", { mode: 0o600 });
    await indexed(other);
    const spliced = Buffer.from(pristine);
    fs.readFileSync(sidecarOf(other)).copy(spliced, rowAt(7), rowAt(7), rowAt(8));
    fs.writeFileSync(sidecarOf(file), spliced, { mode: 0o600 });
    expect(await expectFullParse()).toBe("index ignored: row 7 fails its check");
    // A writer's next open writes it whole again.
    await indexed();
    expect(await expectFullParse()).toBe("used");
  });

  it("opens through its rows a file whose distinct ids share a hash, and finds a compaction's kept entry past the other holder", async () => {
    // "k002298b" and "k00698b8" have one FNV-1a hash: the open reads both to tell them apart, and the walk back from the
    // compaction to its first kept entry passes the later one by reading it.
    const [early, late] = ["k002298b", "k00698b8"];
    const lines = chain(0, 30, 25).map((line) => line.replaceAll(`"${id(3)}"`, `"${early}"`).replaceAll(`"${id(20)}"`, `"${late}"`));
    lines[25] = lines[25]!.replace(`"firstKeptEntryId":"${id(23)}"`, `"firstKeptEntryId":"${early}"`);
    write(lines);
    await indexed();
    expect(await expectFullParse()).toBe("used");
    const manager = await openReadOnly(file);
    const messages = manager.buildSessionContext().messages;
    expect(messages[0]).toMatchObject({ role: "compactionSummary" });
    // Kept from entry 3 up to the compaction, then the four after it.
    expect(messages.length).toBe(1 + (25 - 3) + 4);
    expect(manager.getEntry(early)).toMatchObject({ id: early, parentId: id(2) });
    expect(manager.getEntry(late)).toMatchObject({ id: late, parentId: id(19) });
  });

  it("is never written for a file whose entry names a parent no entry before it holds, and the report says why", async () => {
    write(chain(5, 10));
    await indexed();
    expect(fs.existsSync(sidecarOf(file))).toBe(false);
    expect(await expectFullParse()).toBe("not indexed: an entry names a parent that no earlier entry holds");
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
    fs.writeFileSync(other, [header, ...rooted(chain(50, 3))].join("\n") + "\n", { mode: 0o600 });
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

  it("gives the context the state entries of the whole path, read before the compaction, after it and after the open", async () => {
    const state = (i: number, parentId: string, fields: Record<string, unknown>) => JSON.stringify({ id: id(i), parentId, timestamp: "t", ...fields });
    const lines = chain(0, 30, 20);
    // A model and a thinking level set long before the compaction, a tool selection after it, an entry of a type newer
    // than this library (kept as it is, never state) and an abandoned branch holding a state entry of its own.
    lines.splice(3, 0, state(900, id(2), { type: "model_change", model: "p/early" }));
    lines.splice(10, 0, state(901, id(8), { type: "thinking_level_change", thinkingLevel: "high" }));
    lines.push(state(902, id(25), { type: "thinking_level_change", thinkingLevel: "low" }));
    lines.push(state(903, id(29), { type: "mcp_tool_selection", selectedToolNames: ["read"] }));
    lines.push(state(904, id(903), { type: "from_the_future", payload: 1 }));
    write(lines.map((line) => line.replace(`"parentId":"${id(3)}"`, `"parentId":"${id(900)}"`).replace(`"parentId":"${id(9)}"`, `"parentId":"${id(901)}"`)));
    await indexed();
    const expected = await fullParse(file);
    expect((expected.context as { thinkingLevel: string }).thinkingLevel).toBe("high");
    const manager = await openWritable(file);
    expect(manager.getLoadReport().lineIndex).toBe("used");
    expect(snapshot(manager)).toEqual(expected);
    // Entries appended after the open are matched by their records, the rest still by their rows.
    manager.appendThinkingLevelChange("medium");
    manager.appendMessage({ role: "user", content: [{ type: "text", text: "after" }], timestamp: 99 });
    const context = manager.buildSessionContext();
    expect(context.thinkingLevel).toBe("medium");
    expect(context.models.default).toBe("p/early");
    expect(context.selectedMCPToolNames).toEqual(["read"]);
    await manager.close();
    expect(snapshot(await openReadOnly(file))).toEqual(await fullParse(file));
  });

  it("is read by a writer through the sidecar it keeps up, and only one it can trust", async () => {
    write(chain(0, 40, 30));
    await indexed();
    const sidecar = sidecarOf(file);
    const good = fs.readFileSync(sidecar);
    const reopened = async (): Promise<string | undefined> => {
      const manager = await openWritable(file);
      const note = manager.getLoadReport().lineIndex;
      expect(snapshot(manager)).toEqual(await fullParse(file));
      await manager.close();
      return note;
    };
    expect(await reopened()).toBe("used");
    // The rows the writer's open read stay where they were; only the open's own catch-up is appended.
    expect(fs.readFileSync(sidecar)).toEqual(good);

    // Each of these holds the right rows, but no writer may trust it: it reads none of them. A regular file at the name
    // is replaced by a fresh index; a link there is never followed, so no index is kept until it is gone.
    const spare = path.join(tmp.path, "spare");
    const untrusted: [string, () => void, boolean][] = [
      ["readable by others", () => fs.chmodSync(sidecar, 0o644), true],
      ["a second link", () => fs.linkSync(sidecar, spare), true],
      ["a symbolic link", () => (fs.renameSync(sidecar, spare), fs.symlinkSync(spare, sidecar)), false],
    ];
    for (const [what, spoil, replaced] of untrusted) {
      fs.rmSync(spare, { force: true });
      fs.rmSync(sidecar, { force: true });
      fs.writeFileSync(sidecar, good, { mode: 0o600 });
      spoil();
      expect(await reopened(), what).toBe("no usable index");
      const now = fs.lstatSync(sidecar);
      if (replaced) {
        expect(now.isFile() && now.nlink === 1 && (now.mode & 0o777) === 0o600, what).toBe(true);
        expect(indexOf().complete, what).toBe(true);
      } else expect(now.isSymbolicLink(), what).toBe(true);
      // What the spoiled name led to is left as it was.
      if (fs.existsSync(spare)) expect(fs.readFileSync(spare), what).toEqual(good);
    }
  });

  it("is decoded the same a few bytes at a time, and not at all from a file that reads longer than its size", async () => {
    write(chain(0, 300, 150));
    await indexed();
    const good = fs.readFileSync(sidecarOf(file));
    const whole = decodeLineIndex(good)!;
    expect(whole.complete).toBe(true);
    // Reads of 7 bytes split the head and each row across reads.
    const trickle = (bytes: Buffer) => (into: Buffer, position: number) =>
      bytes.copy(into, 0, position, Math.min(bytes.length, position + 7, position + into.length));
    const slow = decodeLineIndexFrom(trickle(good), good.length)!;
    expect(slow.complete).toBe(true);
    expect([...slow.table.offset.subarray(0, slow.table.size)]).toEqual([...whole.table.offset.subarray(0, whole.table.size)]);
    expect([...slow.table.words.subarray(0, slow.table.size * ROW_WORDS)]).toEqual([...whole.table.words.subarray(0, whole.table.size * ROW_WORDS)]);
    // A torn last row ends the index at the row before it.
    const cut = good.subarray(0, good.length - 5);
    const torn = decodeLineIndexFrom(trickle(cut), cut.length)!;
    expect(torn.complete).toBe(false);
    expect(torn.table.size).toBe(whole.table.size - 1);
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

  it("reads the entries a read-only open left unread from the file it opened, though a writer rewrote the name since, until it is closed", async () => {
    write(chain(0, 300, 250));
    await indexed();
    const atOpen = await fullParse(file);
    const fds = () => (process.platform === "linux" ? fs.readdirSync("/proc/self/fd").length : 0);
    const before = fds();
    const reader = await openReadOnly(file);
    expect(reader.getLoadReport().lineIndex).toBe("used");
    // Only the path from the compaction's kept entry on was read; the rest waits on the file the open holds.
    expect(reader.buildSessionContext().messages).toHaveLength(52);
    const writer = await openWritable(file);
    const early = writer.getEntries()[10]! as Extract<FileEntry, { type: "message" }>;
    writer.applyEntryMessageUpdates([{ ...early, message: { ...early.message, content: [{ type: "text", text: "pruned" }] } } as FileEntry]);
    await writer.rewriteEntries();
    await writer.close();
    expect(fs.readFileSync(file, "utf8")).toContain('"pruned"');
    expect(snapshot(reader)).toEqual(atOpen);
    if (process.platform === "linux") expect(fds()).toBe(before + 1);
    await reader.close();
    if (process.platform === "linux") expect(fds()).toBe(before);
  });

  // About 600 MB of disk and 2 GB of memory: opt in with GJC_HUGE_FILE_TESTS=1.
  it.runIf(process.env.GJC_HUGE_FILE_TESTS === "1")(
    "refuses a line too long for one string with line_too_long, indexed or not",
    async () => {
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
    },
    300_000,
  );

  // About 2.2 GB of disk and 8 GB of memory: opt in with GJC_HUGE_FILE_TESTS=1.
  it.runIf(process.env.GJC_HUGE_FILE_TESTS === "1")(
    "saves a session over 2^31 bytes: an older file's first save rewrites it whole, in pieces",
    async () => {
      const v3 = JSON.stringify({ type: "session", version: 3, id: "big", timestamp: "2026-01-01T00:00:00.000Z", cwd: "/w" });
      const fd = fs.openSync(file, "w", 0o600);
      fs.writeSync(fd, v3 + "\n");
      const pad = "x".repeat(64 << 10);
      let batch: string[] = [];
      for (let i = 0; i < 33_000; i++) {
        batch.push(
          JSON.stringify({
            type: "message",
            id: id(i),
            parentId: i === 0 ? null : id(i - 1),
            timestamp: "t",
            message: { role: i % 2 ? "assistant" : "user", provider: "p", model: "m", content: [{ type: "text", text: pad }], timestamp: i },
          }),
        );
        if (batch.length === 500) {
          fs.writeSync(fd, batch.join("\n") + "\n");
          batch = [];
        }
      }
      fs.writeSync(fd, batch.join("\n") + "\n");
      fs.closeSync(fd);
      expect(fs.statSync(file).size).toBeGreaterThan(2 ** 31);
      const manager = await openWritable(file);
      manager.appendMessage(assistant("saved"));
      await manager.close();
      const head = Buffer.alloc(200);
      const read = fs.openSync(file, "r");
      fs.readSync(read, head, 0, 200, 0);
      fs.closeSync(read);
      expect(JSON.parse(head.toString("utf8").split("\n")[0]!)).toMatchObject({ type: "session", version: 5 });
      expect(fs.statSync(file).size).toBeGreaterThan(2 ** 31);
    },
    1_200_000,
  );

  it("is invisible to listings", async () => {
    write(chain(0, 4));
    await indexed();
    const sessions = await SessionManager.list(tmp.path, tmp.path);
    expect(sessions.map((session) => session.path)).toEqual([file]);
  });
});
