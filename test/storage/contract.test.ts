/**
 * The SessionStorage contract, run against every implementation: what passes here holds
 * for memory, an explicit directory and a managed owner-only root alike.
 */
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import type { SessionStorage } from "../../src/index.js";
import { STORAGE_KINDS, asyncCodeOf, codeOf, makeStorage, recordingLogger, type StorageFixture } from "./storages.js";

describe.each(STORAGE_KINDS)("SessionStorage contract: %s", (kind) => {
  let fixture: StorageFixture;
  let storage: SessionStorage;
  let root: string;
  let logger: ReturnType<typeof recordingLogger>;
  const at = (...names: string[]) => path.join(root, ...names);
  /** The whole file's bytes, read through a reader (the contract's one byte-level read). */
  const bytesAt = (file: string): Buffer => {
    const reader = storage.openReaderSync(file);
    try {
      const bytes = Buffer.alloc(reader.stat.size);
      return bytes.subarray(0, reader.readSync(bytes, 0));
    } finally {
      reader.close();
    }
  };

  beforeEach(() => {
    logger = recordingLogger();
    fixture = makeStorage(kind, logger);
    storage = fixture.storage;
    root = fixture.root;
  });
  afterEach(() => fixture.cleanup());

  describe("paths", () => {
    it("refuses relative paths, NUL bytes and paths outside the root", async () => {
      expect(codeOf(() => storage.existsSync("relative/file"))).toBe("invalid_path");
      expect(codeOf(() => storage.existsSync(at("a\0b")))).toBe("invalid_path");
      expect(codeOf(() => storage.existsSync(path.dirname(root)))).toBe("outside_root");
      expect(codeOf(() => storage.existsSync(at("..", "sibling")))).toBe("outside_root");
      expect(await asyncCodeOf(() => storage.writeText(`${root}-other/f`, "x"))).toBe("outside_root");
    });

    it("refuses the root itself as a file", async () => {
      expect(await asyncCodeOf(() => storage.readText(root))).toBe("invalid_path");
      expect(codeOf(() => storage.openWriter(root))).toBe("invalid_path");
    });

    it("resolves . and .. segments that stay below the root", async () => {
      storage.ensureDirSync(at("a"));
      await storage.writeText(at("a", ".", "..", "a", "f.txt"), "ok");
      expect(await storage.readText(at("a", "f.txt"))).toBe("ok");
    });
  });

  describe("directories", () => {
    it("creates nested directories and reports them", () => {
      storage.ensureDirSync(at("x", "y", "z"));
      storage.ensureDirSync(at("x", "y", "z"));
      expect(storage.existsSync(at("x", "y", "z"))).toBe(true);
      expect(storage.statSync(at("x", "y")).kind).toBe("directory");
      expect(storage.listFilesSync(at("x"), { kind: "directory" })).toEqual(["y"]);
      expect(storage.listFilesSync(at("x"))).toEqual([]);
    });

    it("refuses a file where a directory is expected", async () => {
      await storage.writeText(at("plain"), "x");
      expect(codeOf(() => storage.ensureDirSync(at("plain", "sub")))).toBe("not_directory");
      expect(codeOf(() => storage.listFilesSync(at("plain")))).toBe("not_directory");
      expect(await asyncCodeOf(() => storage.writeText(at("plain", "f"), "x"))).toBe("not_directory");
    });

    it("lists regular files and directories sorted, without hidden names", async () => {
      storage.ensureDirSync(at("d", "sub"));
      await storage.writeText(at("d", "b.jsonl"), "b");
      await storage.writeText(at("d", "a.jsonl"), "a");
      await storage.writeText(at("d", ".hidden.tmp"), "h");
      expect(storage.listFilesSync(at("d"))).toEqual(["a.jsonl", "b.jsonl"]);
      expect(storage.listFilesSync(at("d"), { kind: "directory" })).toEqual(["sub"]);
      expect(storage.listFilesSync(at("d"), { kind: "file" })).toEqual(["a.jsonl", "b.jsonl"]);
      expect(codeOf(() => storage.listFilesSync(at("missing")))).toBe("not_found");
    });
  });

  describe("whole-file reads and writes", () => {
    it("round-trips text and bytes and reports metadata", async () => {
      await storage.writeText(at("t.txt"), "héllo\n");
      expect(await storage.readText(at("t.txt"))).toBe("héllo\n");
      expect(bytesAt(at("t.txt")).equals(Buffer.from("héllo\n"))).toBe(true);
      const stat = storage.statSync(at("t.txt"));
      expect(stat.kind).toBe("file");
      expect(stat.size).toBe(Buffer.byteLength("héllo\n"));
      expect(stat.dev).toMatch(/^\d+$/);
      expect(stat.ino).toMatch(/^\d+$/);
      expect(storage.existsSync(at("t.txt"))).toBe(true);
      expect(await storage.exists(at("t.txt"))).toBe(true);
      expect(await storage.exists(at("nope.txt"))).toBe(false);
      expect(storage.existsSync(at("no-dir", "nope.txt"))).toBe(false);
    });

    it("reads whole files of every size around the read buffer's bounds exactly", async () => {
      for (const size of [0, 1, 4095, 4096, 4097, 65535, 65536, 65537, 200_003]) {
        const data = Buffer.alloc(size);
        // Printable ASCII: the text read must give back every byte.
        for (let i = 0; i < size; i++) data[i] = 32 + ((i * 31 + size) % 95);
        await storage.writeText(at(`s${size}.txt`), data);
        expect(await storage.readText(at(`s${size}.txt`))).toBe(data.toString("latin1"));
      }
    });

    it("reads what a writer appended after the file was opened", async () => {
      const writer = await storage.openWriter(at("live.jsonl"));
      await writer.writeLine("a".repeat(70_000));
      const before = await storage.readText(at("live.jsonl"));
      await writer.writeLine("b");
      expect(before.length).toBe(70_001);
      expect((await storage.readText(at("live.jsonl"))).length).toBe(70_003);
      await writer.close();
    });

    it("writes bytes as given and replaces previous content", () => {
      storage.writeTextSync(at("b.bin"), new Uint8Array([0, 255, 10]));
      storage.writeTextSync(at("b.bin"), new Uint8Array([1, 2]));
      expect([...bytesAt(at("b.bin"))]).toEqual([1, 2]);
    });

    it("refuses to replace with noReplace and keeps the old content", async () => {
      await storage.writeText(at("once"), "first");
      expect(await asyncCodeOf(() => storage.writeText(at("once"), "second", { noReplace: true }))).toBe("already_exists");
      expect(codeOf(() => storage.writeTextSync(at("once"), "second", { noReplace: true }))).toBe("already_exists");
      expect(await storage.readText(at("once"))).toBe("first");
      await storage.writeText(at("fresh"), "new", { noReplace: true });
      expect(await storage.readText(at("fresh"))).toBe("new");
    });

    it("stats a batch of entries of one directory, each failure in its own slot", async () => {
      storage.ensureDirSync(at("batch", "sub"));
      await storage.writeText(at("batch", "a.txt"), "abc");
      const [file, missing, dir, escape] = storage.statEntriesSync(at("batch"), ["a.txt", "gone", "sub", ".."]);
      expect(file).toEqual(storage.statSync(at("batch", "a.txt")));
      expect(file).toMatchObject({ kind: "file", size: 3 });
      expect(missing).toMatchObject({ code: "not_found" });
      expect(dir).toMatchObject({ kind: "directory" });
      expect(escape).toMatchObject({ code: "invalid_path" });
      expect(storage.statEntriesSync(at("batch"), [])).toEqual([]);
      expect(codeOf(() => storage.statEntriesSync(at("no-such-dir"), ["a.txt"]))).toBe("not_found");
    });

    it("reports missing files, missing parents and directories with typed codes", async () => {
      expect(await asyncCodeOf(() => storage.readText(at("missing")))).toBe("not_found");
      expect(codeOf(() => storage.statSync(at("missing")))).toBe("not_found");
      expect(await asyncCodeOf(() => storage.writeText(at("no-dir", "f"), "x"))).toBe("not_found");
      storage.ensureDirSync(at("dir"));
      expect(await asyncCodeOf(() => storage.readText(at("dir")))).toBe("not_regular_file");
      expect(await asyncCodeOf(() => storage.writeText(at("dir"), "x"))).toBe("not_regular_file");
    });

    it("reads a bounded prefix without splitting a character", async () => {
      await storage.writeText(at("p.txt"), "ab€cd");
      expect(await storage.readTextPrefix(at("p.txt"), 3)).toBe("ab");
      expect(await storage.readTextPrefix(at("p.txt"), 4)).toBe("ab");
      expect(await storage.readTextPrefix(at("p.txt"), 5)).toBe("ab€");
      expect(await storage.readTextPrefix(at("p.txt"), 4096)).toBe("ab€cd");
    });

    it("refuses sizes and offsets that are not non-negative integers", async () => {
      await storage.writeText(at("n.txt"), "0123456789");
      expect(await asyncCodeOf(() => storage.readTextPrefix(at("n.txt"), -1))).toBe("invalid_argument");
      expect(await asyncCodeOf(() => storage.readTextPrefix(at("n.txt"), Number.NaN))).toBe("invalid_argument");
      expect(await asyncCodeOf(() => storage.readTextPrefix(at("n.txt"), 1.5))).toBe("invalid_argument");
      // A bound far beyond the file reads the file, without allocating the bound.
      expect(await storage.readTextPrefix(at("n.txt"), 2 ** 40)).toBe("0123456789");
    });

    it("rewrites through a writer from many chunks of text and bytes", async () => {
      await storage.writeText(at("r.jsonl"), "old\n");
      const lines = Array.from({ length: 5000 }, (_, i) => `{"n":${i}}\n`);
      const writer = storage.openWriter(at("r.jsonl"));
      await writer.rewrite([...lines, Buffer.from("tail\n")]);
      await writer.close();
      expect(await storage.readText(at("r.jsonl"))).toBe(lines.join("") + "tail\n");
    });
  });

  describe("readers", () => {
    it("report the file's identity and read any range from one open", async () => {
      await storage.writeText(at("r.txt"), "0123456789");
      const reader = storage.openReaderSync(at("r.txt"));
      try {
        expect(reader.path).toBe(at("r.txt"));
        const stat = storage.statSync(at("r.txt"));
        expect(reader.stat).toEqual(stat);
        const four = Buffer.alloc(4);
        expect(reader.readSync(four, 0)).toBe(4);
        expect(four.toString()).toBe("0123");
        expect(reader.readSync(four, 8)).toBe(2);
        expect(four.subarray(0, 2).toString()).toBe("89");
        expect(reader.readSync(four, 10)).toBe(0);
        expect(reader.readSync(four, 500)).toBe(0);
        expect(codeOf(() => reader.readSync(four, -1))).toBe("invalid_argument");
      } finally {
        reader.close();
      }
      reader.close();
      expect(codeOf(() => reader.readSync(Buffer.alloc(1), 0))).toBe("reader_closed");
    });

    it("see appends to the object they opened, not a replacement published at its name", async () => {
      const writer = await storage.openWriter(at("live.jsonl"));
      await writer.writeLine("one");
      const reader = storage.openReaderSync(at("live.jsonl"));
      await writer.writeLine("two");
      const all = Buffer.alloc(16);
      expect(all.subarray(0, reader.readSync(all, 0)).toString()).toBe("one\ntwo\n");
      await writer.rewrite(["new\n"]);
      expect(all.subarray(0, reader.readSync(all, 0)).toString()).toBe("one\ntwo\n");
      reader.close();
      await writer.close();
    });

    it("of a writer read the file it holds, not what its name holds, and end with a rewrite or close", async () => {
      const writer = storage.openWriter(at("held.jsonl"));
      await writer.writeLine("one");
      const reader = writer.openReaderSync?.();
      if (kind === "memory") {
        // No descriptor to lend: readers open by name.
        expect(reader).toBeUndefined();
        await writer.close();
        return;
      }
      if (reader === undefined) throw new Error(`the ${kind} writer lends no reader`);
      expect(reader.stat).toEqual(storage.statSync(at("held.jsonl")));
      // Another program renames a file over the name: the writer's reader still reads the writer's file.
      fs.writeFileSync(at(".other"), "other\n", { mode: 0o600 });
      fs.renameSync(at(".other"), at("held.jsonl"));
      writer.writeLineSync("two");
      const all = Buffer.alloc(32);
      expect(all.subarray(0, reader.readSync(all, 0)).toString()).toBe("one\ntwo\n");
      // Closing the reader leaves the writer's file open.
      reader.close();
      expect(writer.writeLineSync("three")).toBe(5);
      expect(codeOf(() => writer.closeSync())).toBe("unsafe_entry");

      const second = storage.openWriter(at("again.jsonl"));
      await second.writeLine("old");
      const before = second.openReaderSync!()!;
      await second.rewrite(["new\n"]);
      // The file it lent is gone with the rewrite; a descriptor number may name another file by now.
      expect(codeOf(() => before.readSync(Buffer.alloc(8), 0))).toBe("reader_closed");
      const after = second.openReaderSync!()!;
      expect(all.subarray(0, after.readSync(all, 0)).toString()).toBe("new\n");
      await second.close();
      expect(codeOf(() => after.readSync(Buffer.alloc(8), 0))).toBe("reader_closed");
      expect(codeOf(() => second.openReaderSync!())).toBe("writer_closed");
    });

    it("refuse missing files, directories and paths outside the root with typed codes", async () => {
      storage.ensureDirSync(at("dir"));
      expect(codeOf(() => storage.openReaderSync(at("missing")))).toBe("not_found");
      expect(codeOf(() => storage.openReaderSync(at("dir")))).toBe("not_regular_file");
      expect(codeOf(() => storage.openReaderSync(path.dirname(root)))).toBe("outside_root");
    });
  });

  describe("rename and unlink", () => {
    it("renames within and across directories", async () => {
      storage.ensureDirSync(at("one"));
      storage.ensureDirSync(at("two"));
      await storage.writeText(at("one", "s.jsonl"), "data");
      await storage.rename(at("one", "s.jsonl"), at("one", "t.jsonl"));
      await storage.rename(at("one", "t.jsonl"), at("two", "u.jsonl"));
      expect(storage.listFilesSync(at("one"))).toEqual([]);
      expect(await storage.readText(at("two", "u.jsonl"))).toBe("data");
    });

    it("replaces a target unless noReplace is set", async () => {
      await storage.writeText(at("a"), "A");
      await storage.writeText(at("b"), "B");
      expect(await asyncCodeOf(() => storage.rename(at("a"), at("b"), { noReplace: true }))).toBe("already_exists");
      expect(await storage.readText(at("a"))).toBe("A");
      await storage.rename(at("a"), at("b"));
      expect(await storage.readText(at("b"))).toBe("A");
      expect(storage.existsSync(at("a"))).toBe(false);
      expect(await asyncCodeOf(() => storage.rename(at("a"), at("c")))).toBe("not_found");
    });

    it("unlinks files only", async () => {
      await storage.writeText(at("gone"), "x");
      await storage.unlink(at("gone"));
      expect(storage.existsSync(at("gone"))).toBe(false);
      expect(await asyncCodeOf(() => storage.unlink(at("gone")))).toBe("not_found");
      storage.ensureDirSync(at("dir"));
      expect(await asyncCodeOf(() => storage.unlink(at("dir")))).toBe("not_regular_file");
    });
  });

  describe("writers", () => {
    it("appends lines and records, and flush makes them readable", async () => {
      const writer = await storage.openWriter(at("s.jsonl"));
      expect(writer.path).toBe(at("s.jsonl"));
      await writer.writeLine('{"a":1}');
      await writer.write({ b: 2 });
      await writer.flush();
      await writer.fsync();
      expect(await storage.readText(at("s.jsonl"))).toBe('{"a":1}\n{"b":2}\n');
      expect(writer.getError()).toBeUndefined();
      await writer.close();
    });

    it("writes every character as UTF-8, line separators included", async () => {
      const writer = await storage.openWriter(at("utf8.jsonl"));
      const record = { text: "héllo € 𝄞 \u2028 \u2029 " + "ü".repeat(5000), lone: "\ud800" };
      await writer.write(record);
      await writer.writeLine("ascii");
      await writer.close();
      const [first, second] = (await storage.readText(at("utf8.jsonl"))).split("\n");
      expect(JSON.parse(first as string)).toEqual(record);
      expect(second).toBe("ascii");
    });

    it("creates a missing file and appends to an existing one", async () => {
      await storage.writeText(at("e.jsonl"), "1\n");
      const writer = await storage.openWriter(at("e.jsonl"));
      await writer.writeLine("2");
      await writer.close();
      expect(await storage.readText(at("e.jsonl"))).toBe("1\n2\n");
      expect(codeOf(() => storage.openWriter(at("no-dir", "x.jsonl")))).toBe("not_found");
    });

    it("repairs a torn final record before the first append", async () => {
      await storage.writeText(at("torn.jsonl"), '{"ok":1}\n{"tor');
      const writer = await storage.openWriter(at("torn.jsonl"));
      // The count is the line's own, not the repairing line feed written before it.
      expect(writer.writeLineSync('{"next":2}')).toBe(10);
      await writer.writeLine('{"next":3}');
      await writer.close();
      expect(await storage.readText(at("torn.jsonl"))).toBe('{"ok":1}\n{"tor\n{"next":2}\n{"next":3}\n');
    });

    it("adds no line feed to an empty file or one that ends cleanly", async () => {
      const empty = await storage.openWriter(at("empty.jsonl"));
      await empty.writeLine("a");
      await empty.close();
      await storage.writeText(at("clean.jsonl"), "a\n");
      const clean = await storage.openWriter(at("clean.jsonl"));
      await clean.writeLine("b");
      await clean.close();
      expect(await storage.readText(at("empty.jsonl"))).toBe("a\n");
      expect(await storage.readText(at("clean.jsonl"))).toBe("a\nb\n");
    });

    it("refuses lines that would split, values JSON cannot hold, and use after close", async () => {
      const writer = await storage.openWriter(at("v.jsonl"));
      expect(await asyncCodeOf(() => writer.writeLine("a\nb"))).toBe("invalid_line");
      expect(await asyncCodeOf(() => writer.write(undefined))).toBe("invalid_line");
      expect(await asyncCodeOf(() => writer.write({ big: 1n }))).toBe("invalid_line");
      expect(writer.getError()).toBeUndefined();
      await writer.writeLine("fine");
      await writer.close();
      await writer.close();
      expect(await asyncCodeOf(() => writer.writeLine("late"))).toBe("writer_closed");
      expect(await asyncCodeOf(() => writer.flush())).toBe("writer_closed");
      expect(await storage.readText(at("v.jsonl"))).toBe("fine\n");
    });

    it("keeps one writer per file: a second one is session_busy until the first closes", async () => {
      const first = await storage.openWriter(at("w.jsonl"));
      expect(codeOf(() => storage.openWriter(at("w.jsonl")))).toBe("session_busy");
      const other = await storage.openWriter(at("other.jsonl"));
      await other.close();
      // Readers are never blocked by a writer.
      await first.writeLine("x");
      expect(await storage.readText(at("w.jsonl"))).toBe("x\n");
      await first.close();
      const second = await storage.openWriter(at("w.jsonl"));
      await second.writeLine("y");
      await second.close();
      expect(await storage.readText(at("w.jsonl"))).toBe("x\ny\n");
    });

    // Memory storage has no other process to change a file behind the storage's back.
    it.skipIf(kind === "memory")(
      "a writer whose file another program removed or renamed over refuses its sync, rewrite, sidecar rows and close, latched",
      async () => {
        for (const change of ["removed", "replaced"] as const) {
          const file = at(`${change}.jsonl`);
          const writer = storage.openWriter(file);
          const sidecar = writer.openSidecar?.(`.${change}.rows`);
          await writer.writeLine("kept");
          await writer.flush();
          sidecar?.appendSync(Buffer.from("row\n"));
          const replacement = `another program's ${change} file\n`;
          if (change === "removed") fs.unlinkSync(file);
          else {
            fs.writeFileSync(`${file}.tmp`, replacement, { mode: 0o600 });
            fs.renameSync(`${file}.tmp`, file);
          }
          // Appends do not look; the sync that would promise them durable does.
          await writer.writeLine("orphaned");
          expect(() => sidecar?.appendSync(Buffer.from("orphaned row\n"))).toThrow(
            expect.objectContaining({ code: "unsafe_entry", detail: "identity_changed" }),
          );
          const refusal = await writer.flush().catch((error: unknown) => error);
          expect(refusal).toMatchObject({ code: "unsafe_entry", detail: "identity_changed", path: file });
          await expect(writer.rewrite(["whole\n"])).rejects.toBe(refusal);
          await expect(writer.writeLine("later")).rejects.toBe(refusal);
          await expect(writer.close()).rejects.toBe(refusal);
          if (change === "removed") expect(fs.existsSync(file)).toBe(false);
          else expect(fs.readFileSync(file, "utf8")).toBe(replacement);
          if (sidecar !== undefined) expect(fs.readFileSync(at(`.${change}.rows`), "utf8")).toBe("row\n");
        }
        expect(logger.calls.map((entry) => entry.code)).toEqual(["unsafe_entry", "unsafe_entry"]);
      },
    );

    it.skipIf(kind === "memory")(
      "a writer whose file another program truncated and rewrote in place refuses its sync, later writes and close, latched",
      async () => {
        const file = at("in-place.jsonl");
        const writer = storage.openWriter(file);
        await writer.writeLine(JSON.stringify({ type: "session", id: "mine", cwd: "/w" }));
        await writer.writeLine(JSON.stringify({ type: "message", text: "a long answer ".repeat(200) }));
        await writer.flush();
        await writer.rewrite([`${JSON.stringify({ type: "session", id: "mine", cwd: "/w" })}\n`]);
        await writer.writeLine(JSON.stringify({ type: "message", text: "after the rewrite" }));
        await writer.flush();
        // Same inode, same mode, same name: only the bytes changed, as `>` in a shell or an editor saving in place does.
        const theirs = `${JSON.stringify({ type: "session", id: "theirs", cwd: "/w" })}\n`;
        fs.writeFileSync(file, theirs);
        await writer.writeLine("appended after their bytes");
        const refusal = await writer.flush().catch((error: unknown) => error);
        expect(refusal).toMatchObject({ code: "unsafe_entry", detail: "identity_changed", path: file });
        await expect(writer.writeLine("later")).rejects.toBe(refusal);
        await expect(writer.rewrite(["whole\n"])).rejects.toBe(refusal);
        await expect(writer.close()).rejects.toBe(refusal);
        expect(fs.readFileSync(file, "utf8").startsWith(theirs)).toBe(true);
        expect(logger.calls.map((entry) => entry.code)).toEqual(["unsafe_entry"]);
      },
    );

    it.skipIf(kind === "memory")("a rewrite refuses, publishing nothing, once the file's name names another", async () => {
      const file = at("rewritten.jsonl");
      const writer = storage.openWriter(file);
      await writer.writeLine("mine");
      fs.writeFileSync(`${file}.tmp`, "theirs\n", { mode: 0o600 });
      fs.renameSync(`${file}.tmp`, file);
      await expect(writer.rewrite(["whole\n"])).rejects.toMatchObject({ code: "unsafe_entry", detail: "identity_changed" });
      await writer.close().catch(() => undefined);
      expect(fs.readFileSync(file, "utf8")).toBe("theirs\n");
    });

    it("refuses rename and unlink under a live writer", async () => {
      const writer = await storage.openWriter(at("live.jsonl"));
      await writer.writeLine("x");
      expect(await asyncCodeOf(() => storage.rename(at("live.jsonl"), at("moved.jsonl")))).toBe("session_busy");
      expect(codeOf(() => storage.renameSync(at("live.jsonl"), at("moved.jsonl")))).toBe("session_busy");
      expect(await asyncCodeOf(() => storage.unlink(at("live.jsonl")))).toBe("session_busy");
      await writer.close();
      await storage.rename(at("live.jsonl"), at("moved.jsonl"));
      expect(await storage.readText(at("moved.jsonl"))).toBe("x\n");
      await storage.unlink(at("moved.jsonl"));
      expect(storage.existsSync(at("moved.jsonl"))).toBe(false);
    });

    it("rewrites its own file atomically and keeps appending in call order", async () => {
      const writer = await storage.openWriter(at("rw.jsonl"));
      await writer.writeLine("old-1");
      const rewritten = writer.rewrite(["new-1\n", Buffer.from("new-2")]);
      // Issued before the rewrite finished: must land after the new content.
      const appended = writer.writeLine("after");
      await rewritten;
      await appended;
      await writer.flush();
      expect(await storage.readText(at("rw.jsonl"))).toBe("new-1\nnew-2\nafter\n");
      // Still the only writer after the rewrite.
      expect(codeOf(() => storage.openWriter(at("rw.jsonl")))).toBe("session_busy");
      await writer.close();
    });

    it("shares one sync among concurrent flushes and resolves all of them", async () => {
      const writer = await storage.openWriter(at("g.jsonl"));
      const flushes: Promise<void>[] = [];
      for (let i = 0; i < 10; i++) {
        await writer.writeLine(String(i));
        flushes.push(writer.flush());
      }
      await Promise.all(flushes);
      await writer.close();
      expect((await storage.readText(at("g.jsonl"))).split("\n").length).toBe(11);
      expect(logger.calls).toEqual([]);
    });

    it("changes the cache key (size, mtime) when a file grows", async () => {
      const writer = await storage.openWriter(at("k.jsonl"));
      await writer.writeLine("a");
      const before = storage.statSync(at("k.jsonl"));
      await new Promise((resolve) => setTimeout(resolve, 5));
      await writer.writeLine("b");
      await writer.close();
      const after = storage.statSync(at("k.jsonl"));
      expect([after.dev, after.ino]).toEqual([before.dev, before.ino]);
      expect(after.size).toBe(before.size + 2);
      expect(after.mtimeMs).toBeGreaterThanOrEqual(before.mtimeMs);
    });
  });

  describe("synchronous calls", () => {
    it("open a writer, append lines, read and rename without awaiting", () => {
      storage.ensureDirSync(at("s"));
      const writer = storage.openWriter(at("s", "a.jsonl"));
      // Each returns the line's UTF-8 byte count, without its line feed.
      expect(writer.writeLineSync('{"n":1}')).toBe(7);
      expect(writer.writeLineSync('{"n":"é€😀"}')).toBe(Buffer.byteLength('{"n":"é€😀"}'));
      expect(codeOf(() => writer.writeLineSync("x\ny"))).toBe("invalid_line");
      expect(bytesAt(at("s", "a.jsonl")).toString()).toBe('{"n":1}\n{"n":"é€😀"}\n');
      expect(codeOf(() => storage.openWriter(at("s", "a.jsonl")))).toBe("session_busy");
      expect(codeOf(() => storage.renameSync(at("s", "a.jsonl"), at("s", "b.jsonl")))).toBe("session_busy");
      return writer.close().then(() => {
        expect(codeOf(() => writer.writeLineSync("z"))).toBe("writer_closed");
        storage.writeTextSync(at("s", "taken.jsonl"), "t");
        expect(codeOf(() => storage.renameSync(at("s", "a.jsonl"), at("s", "taken.jsonl"), { noReplace: true }))).toBe("already_exists");
        storage.renameSync(at("s", "a.jsonl"), at("s", "b.jsonl"), { noReplace: true });
        expect(storage.existsSync(at("s", "a.jsonl"))).toBe(false);
        expect(bytesAt(at("s", "b.jsonl")).toString()).toBe('{"n":1}\n{"n":"é€😀"}\n');
      });
    });

    it("refuses a synchronous append while a rewrite is queued, then appends after it", async () => {
      const writer = storage.openWriter(at("q.jsonl"));
      writer.writeLineSync("old");
      const rewrite = writer.rewrite(["new\n"]);
      expect(codeOf(() => writer.writeLineSync("late"))).toBe("writer_busy");
      expect(codeOf(() => writer.closeSync())).toBe("writer_busy");
      await rewrite;
      writer.writeLineSync("after");
      writer.closeSync();
      writer.closeSync();
      expect(codeOf(() => storage.openWriter(at("q.jsonl")).closeSync())).toBeUndefined();
      await writer.close();
      expect(await storage.readText(at("q.jsonl"))).toBe("new\nafter\n");
      expect(logger.calls).toEqual([]);
    });
  });
});
