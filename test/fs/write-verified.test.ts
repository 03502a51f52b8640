// SecureFile.writeVerifiedAsync: a positional write read back through the same descriptor
// on the thread pool. True only when exactly the written bytes come back and the file ends
// right after them; a write path that stores other bytes (the LD_PRELOAD shim inverts a
// byte in a real child, also in the last 256 KiB piece of a longer write) or a file longer
// than the range is false; on Linux a long range is written in 256 KiB pieces, each read
// back before the next, and its writeback is started after the write; bad arguments and
// unusable files are typed errors.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError, type SecureFile } from "../../src/index.js";
import { asyncCodeOf, codeOf } from "../helpers/errors.js";
import { buildTools, runWithAddon, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { traceThreads } from "../helpers/trace.js";
import { descriptorsUnder } from "../audit/descriptors.js";

const linux = process.platform === "linux";
let tmp: ReturnType<typeof makeTempDir>;
let store: string;
let root: SecureDir;
let n = 0;

beforeAll(() => {
  tmp = makeTempDir("gjc-verified-");
  store = path.join(tmp.path, "store");
  root = SecureDir.openRoot(store, { create: true });
});
afterAll(() => {
  root.close();
  tmp.remove();
});

/** A new owner-only file of the store, opened for writing; `content` is there first. */
function fresh(content?: Buffer): { file: SecureFile; path: string } {
  n += 1;
  const name = `f${n}`;
  if (content !== undefined) root.writeFileAtomic(name, content);
  const file = root.openFile(name, { write: true, ...(content === undefined ? { create: "exclusive" as const } : {}) });
  return { file, path: path.join(store, name) };
}

function pattern(length: number, seed: number): Buffer {
  const out = Buffer.alloc(length);
  for (let i = 0; i < length; i++) out[i] = (i * 131 + seed * 7 + (i >> 9)) & 0xff;
  return out;
}

describe("writeVerifiedAsync: verdicts", () => {
  it("true for a write at 0 and for chunks appended at later positions (past one read-back slice too)", async () => {
    const { file, path: p } = fresh();
    try {
      const chunks = [pattern(5, 1), pattern(200 * 1024 + 3, 2), pattern(64 * 1024, 3), pattern(1, 4)];
      let position = 0;
      for (const chunk of chunks) {
        expect(await file.writeVerifiedAsync(chunk, position), `at ${position}`).toBe(true);
        position += chunk.byteLength;
      }
      expect(fs.readFileSync(p).equals(Buffer.concat(chunks))).toBe(true);
    } finally {
      file.close();
    }
  });

  it("true for an empty write on an empty file and at the end of a file; false when the file goes on", async () => {
    const empty = fresh();
    try {
      expect(await empty.file.writeVerifiedAsync(Buffer.alloc(0), 0)).toBe(true);
    } finally {
      empty.file.close();
    }
    const full = fresh(Buffer.from("0123456789"));
    try {
      expect(await full.file.writeVerifiedAsync(new Uint8Array(0), 10)).toBe(true);
      expect(await full.file.writeVerifiedAsync(new Uint8Array(0), 0)).toBe(false);
      expect(await full.file.writeVerifiedAsync(new Uint8Array(0), 9)).toBe(false);
      expect(fs.readFileSync(full.path, "utf8")).toBe("0123456789");
    } finally {
      full.file.close();
    }
  });

  it("false when the file is longer than the written range, though the bytes were written", async () => {
    const { file, path: p } = fresh(Buffer.from("0123456789abcdef"));
    try {
      expect(await file.writeVerifiedAsync(Buffer.from("SHORT"), 0)).toBe(false);
      expect(fs.readFileSync(p, "utf8")).toBe("SHORT56789abcdef");
      expect(await file.writeVerifiedAsync(Buffer.from("long"), 8)).toBe(false);
      // A range that reaches the end of the file ends it.
      expect(await file.writeVerifiedAsync(Buffer.from("TAIL"), 12)).toBe(true);
      expect(fs.readFileSync(p, "utf8")).toBe("SHORT567long" + "TAIL");
    } finally {
      file.close();
    }
  });

  it("true for a write past the end (the gap reads as zeros, the file ends after the range)", async () => {
    const { file, path: p } = fresh();
    try {
      expect(await file.writeVerifiedAsync(Buffer.from("xy"), 10)).toBe(true);
      expect(fs.readFileSync(p)).toEqual(Buffer.concat([Buffer.alloc(10), Buffer.from("xy")]));
    } finally {
      file.close();
    }
  });

  it("a close() while the write runs takes effect when it is done", async () => {
    const { file, path: p } = fresh();
    const data = pattern(300 * 1024, 9);
    const pending = file.writeVerifiedAsync(data, 0);
    file.close();
    expect(file.closed).toBe(true);
    expect(await pending).toBe(true);
    expect(fs.readFileSync(p).equals(data)).toBe(true);
    expect(descriptorsUnder(p)).toBe(0);
  });
});

describe.runIf(linux)("writeVerifiedAsync: a write path that stores other bytes (fault shim)", () => {
  let tools: Tools;
  beforeAll(() => {
    tools = buildTools();
  }, 120_000);

  it("false when the stored bytes differ (first byte inverted), true for the writes the shim lets through", () => {
    const { file, path: p } = fresh();
    file.close();
    // The child's addon writes on the thread pool; the verdicts come back through a file.
    const out = path.join(tmp.path, `verdicts-${n}.json`);
    runWithAddon(
      `const f = b.openFile(b.openRoot(${JSON.stringify(store)}), ${JSON.stringify(path.basename(p))}, { write: true });
       if (f.failed) throw new Error(f.code);
       const first = Buffer.alloc(4096, 0x41);
       const second = Buffer.alloc(100, 0x42);
       (async () => {
         const clean = await b.writeVerifiedAsync(f, second, 0, second.length, 0);
         const flipped = await b.writeVerifiedAsync(f, first, 0, first.length, 100);
         require("node:fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify([clean, flipped]));
       })();`,
      { LD_PRELOAD: tools.faultShim, GJC_FAULT_PWRITE_FLIP: "4096" },
    );
    expect(JSON.parse(fs.readFileSync(out, "utf8"))).toEqual(["verified", "mismatch"]);
    const stored = fs.readFileSync(p);
    expect(stored.length).toBe(4196);
    expect(stored[100]).toBe(0xbe);
    expect(stored.subarray(101).equals(Buffer.alloc(4095, 0x41))).toBe(true);
  });

  it("false when only the last 256 KiB piece of a larger write is stored wrong", () => {
    const { file, path: p } = fresh();
    file.close();
    const out = path.join(tmp.path, `verdicts-${n}.json`);
    const piece = 256 * 1024;
    runWithAddon(
      `const f = b.openFile(b.openRoot(${JSON.stringify(store)}), ${JSON.stringify(path.basename(p))}, { write: true });
       if (f.failed) throw new Error(f.code);
       const data = Buffer.alloc(${2 * piece + 1000}, 0x43);
       b.writeVerifiedAsync(f, data, 0, data.length, 0).then((r) => require("node:fs").writeFileSync(${JSON.stringify(out)}, JSON.stringify(r)));`,
      { LD_PRELOAD: tools.faultShim, GJC_FAULT_PWRITE_FLIP: "1000" },
    );
    expect(JSON.parse(fs.readFileSync(out, "utf8"))).toBe("mismatch");
    const stored = fs.readFileSync(p);
    expect(stored.length).toBe(2 * piece + 1000);
    expect(stored.subarray(0, 2 * piece).equals(Buffer.alloc(2 * piece, 0x43))).toBe(true);
    expect(stored[2 * piece]).toBe(0xbc);
  });
});

describe("writeVerifiedAsync: refusals", () => {
  it("a file opened read-only -> io_error (EBADF from the write), as write() gives", async () => {
    const { file: writer } = fresh(Buffer.from("kept"));
    writer.close();
    const file = root.openFile(`f${n}`);
    try {
      const error = await file.writeVerifiedAsync(Buffer.from("new"), 0).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(SecureFsError);
      expect(error).toMatchObject({ code: "io_error", errnoName: "EBADF", syscall: "pwrite" });
      expect(() => file.write("new", 0)).toThrow(expect.objectContaining({ code: "io_error", errnoName: "EBADF" }));
      expect(fs.readFileSync(path.join(store, `f${n}`), "utf8")).toBe("kept");
    } finally {
      file.close();
    }
  });

  it("a closed file -> closed", async () => {
    const { file } = fresh();
    file.close();
    expect(await asyncCodeOf(() => file.writeVerifiedAsync(Buffer.from("x"), 0))).toBe("closed");
  });

  it("positions and data that are not valid arguments -> invalid_argument, nothing written", async () => {
    const { file, path: p } = fresh();
    try {
      for (const position of [-1, 1.5, Number.NaN, 2 ** 53]) {
        expect(await asyncCodeOf(() => file.writeVerifiedAsync(Buffer.from("x"), position)), `position ${position}`).toBe("invalid_argument");
      }
      for (const data of ["text", new Uint16Array(2), new DataView(new ArrayBuffer(2)), null]) {
        expect(await asyncCodeOf(() => file.writeVerifiedAsync(data as unknown as Uint8Array, 0)), String(data)).toBe("invalid_argument");
      }
      // The plain write refuses what is neither a string nor bytes the same way.
      for (const data of [null, undefined, 42]) {
        expect(codeOf(() => file.write(data as unknown as Uint8Array, 0)), String(data)).toBe("invalid_argument");
      }
      expect(fs.statSync(p).size).toBe(0);
    } finally {
      file.close();
    }
  });

  it("a range outside the buffer is refused by the addon before any work starts", () => {
    const { file, path: p } = fresh();
    file.close();
    const codes = runWithAddon<string[]>(
      `const f = b.openFile(b.openRoot(${JSON.stringify(store)}), ${JSON.stringify(path.basename(p))}, { write: true });
       const data = new Uint8Array(8);
       return [[0, 9], [9, 0], [4, 5], [8, 1], [-1, 2], [0, 1.5]].map(([offset, length]) => {
         const r = b.writeVerifiedAsync(f, data, offset, length, 0);
         return r instanceof Promise ? "started" : r.code;
       });`,
    );
    expect(codes).toEqual(Array(6).fill("invalid_argument"));
    expect(fs.statSync(p).size).toBe(0);
  });
});

describe.runIf(linux)("writeVerifiedAsync: syscalls (Linux)", () => {
  it("writes, reads the range back with one byte more, then starts writeback of exactly that range", (ctx) => {
    const { file, path: p } = fresh();
    file.close();
    const calls = traceThreads(
      ctx,
      tmp.path,
      ["pwrite64", "pread64", "sync_file_range", "fsync", "fdatasync"],
      `const f = b.openFile(b.openRoot(${JSON.stringify(store)}), ${JSON.stringify(path.basename(p))}, { write: true });
const data = Buffer.alloc(1000, 0x61);
const empty = new Uint8Array(0);
begin();
b.writeVerifiedAsync(f, data, 0, 1000, 24).then((r) => {
  if (r !== "verified") throw new Error(String(r.code ?? r));
  return b.writeVerifiedAsync(f, empty, 0, 0, 1024);
}).then((r) => {
  end();
  if (r !== "verified") throw new Error(String(r.code ?? r));
});`,
    );
    expect(calls.map((c) => c.name)).toEqual(["pwrite64", "pread64", "sync_file_range", "pread64"]);
    const [write, readBack, writeback, emptyRead] = calls;
    expect(write?.line).toMatch(/, 1000, 24\) = 1000$/);
    expect(readBack?.line).toMatch(/, 1001, 24\) = 1000$/);
    expect(writeback?.line).toMatch(/^sync_file_range\(\d+, 24, 1000, SYNC_FILE_RANGE_WRITE\) = 0$/);
    // The empty write writes nothing, starts no writeback, and only shows the file ends there.
    expect(emptyRead?.line).toMatch(/, 1, 1024\) = 0$/);
  });

  it("writes a long range in 256 KiB pieces, each read back (64 KiB slices) before the next, then one writeback request", (ctx) => {
    const { file, path: p } = fresh();
    file.close();
    const piece = 256 * 1024;
    const length = 2 * piece + 70_000;
    const calls = traceThreads(
      ctx,
      tmp.path,
      ["pwrite64", "pread64", "sync_file_range"],
      `const f = b.openFile(b.openRoot(${JSON.stringify(store)}), ${JSON.stringify(path.basename(p))}, { write: true });
const data = Buffer.alloc(${length}, 0x62);
begin();
b.writeVerifiedAsync(f, data, 0, ${length}, 0).then((r) => {
  end();
  if (r !== "verified") throw new Error(String(r.code ?? r));
});`,
    );
    const pieceReads = ["pread64", "pread64", "pread64", "pread64"];
    expect(calls.map((c) => c.name)).toEqual(["pwrite64", ...pieceReads, "pwrite64", ...pieceReads, "pwrite64", "pread64", "pread64", "sync_file_range"]);
    const writes = calls.filter((c) => c.name === "pwrite64").map((c) => c.line.match(/, (\d+), (\d+)\) = \d+$/)?.slice(1));
    expect(writes).toEqual([[String(piece), "0"], [String(piece), String(piece)], ["70000", String(2 * piece)]]);
    // The last read asks for one byte more than was written.
    expect(calls.at(-2)?.line).toMatch(new RegExp(`, ${70_000 - 65_536 + 1}, ${length - (70_000 - 65_536)}\\) = ${70_000 - 65_536}$`));
    expect(calls.at(-1)?.line).toMatch(new RegExp(`^sync_file_range\\(\\d+, 0, ${length}, SYNC_FILE_RANGE_WRITE\\) = 0$`));
  });
});
