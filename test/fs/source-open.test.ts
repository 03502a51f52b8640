// Legacy-source opens (`{ source: true }`): what older tools wrote (0755 directories, 0644
// files) is read by descriptor; a link, hard link, special file, foreign owner or write
// access for others is refused with its code; and a copy can be given its source's times.
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { isRoot } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let legacy: string;

beforeEach(() => {
  tmp = makeTempDir();
  legacy = path.join(tmp.path, "legacy");
  fs.mkdirSync(path.join(legacy, "sub"), { recursive: true, mode: 0o755 });
  fs.chmodSync(legacy, 0o755);
  fs.chmodSync(path.join(legacy, "sub"), 0o755);
  fs.writeFileSync(path.join(legacy, "sub", "s.jsonl"), "hello\n", { mode: 0o644 });
});
afterEach(() => tmp.remove());

function codeOf(action: () => unknown): string {
  try {
    const opened = action() as { close(): void };
    opened.close();
    return "opened";
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
    return error.code;
  }
}

describe("opening legacy sources", () => {
  it("reads a 0644 file in 0755 directories by descriptor, which the owner-only open refuses", () => {
    const root = SecureDir.openRoot(legacy, { source: true });
    try {
      const file = root.openFile(["sub", "s.jsonl"], { source: true });
      try {
        expect(file.readAll({ maxBytes: 100 }).toString()).toBe("hello\n");
        expect(file.stat().mode).toBe(0o644);
      } finally {
        file.close();
      }
      expect(codeOf(() => root.openFile(["sub", "s.jsonl"]))).toBe("mode_mismatch");
      expect(codeOf(() => SecureDir.openRoot(legacy))).toBe("mode_mismatch");
    } finally {
      root.close();
    }
  });

  it("refuses links, hard links, FIFOs and what others may write, with their codes, without blocking", () => {
    const outside = path.join(tmp.path, "outside.jsonl");
    fs.writeFileSync(outside, "secret\n", { mode: 0o644 });
    fs.symlinkSync(outside, path.join(legacy, "link.jsonl"));
    fs.symlinkSync(path.join(tmp.path), path.join(legacy, "dirlink"));
    fs.linkSync(outside, path.join(legacy, "hard.jsonl"));
    execFileSync("mkfifo", [path.join(legacy, "fifo.jsonl")]);
    fs.writeFileSync(path.join(legacy, "wide.jsonl"), "x", { mode: 0o664 });
    fs.chmodSync(path.join(legacy, "wide.jsonl"), 0o664);
    fs.mkdirSync(path.join(legacy, "widedir"));
    fs.chmodSync(path.join(legacy, "widedir"), 0o775);
    const root = SecureDir.openRoot(legacy, { source: true });
    try {
      expect(codeOf(() => root.openFile("link.jsonl", { source: true }))).toBe("symlink_refused");
      expect(codeOf(() => root.openDir("dirlink", { source: true }))).toBe("symlink_refused");
      expect(codeOf(() => root.openFile("hard.jsonl", { source: true }))).toBe("hardlink_refused");
      expect(codeOf(() => root.openFile("fifo.jsonl", { source: true }))).toBe("not_regular_file");
      expect(codeOf(() => root.openFile("wide.jsonl", { source: true }))).toBe("mode_mismatch");
      expect(codeOf(() => root.openDir("widedir", { source: true }))).toBe("mode_mismatch");
      expect(codeOf(() => root.openDir("sub", { source: true, create: true }))).toBe("invalid_argument");
      expect(codeOf(() => root.openFile("sub", { source: true }))).toBe("not_regular_file");
    } finally {
      root.close();
    }
    expect(fs.readFileSync(outside, "utf8")).toBe("secret\n");
  });

  it.runIf(isRoot())("refuses a file or directory another user owns (uid 65534)", () => {
    fs.chownSync(path.join(legacy, "sub", "s.jsonl"), 65534, 65534);
    fs.mkdirSync(path.join(legacy, "theirs"), { mode: 0o755 });
    fs.chownSync(path.join(legacy, "theirs"), 65534, 65534);
    const root = SecureDir.openRoot(legacy, { source: true });
    try {
      expect(codeOf(() => root.openFile(["sub", "s.jsonl"], { source: true }))).toBe("owner_mismatch");
      expect(codeOf(() => root.openDir("theirs", { source: true }))).toBe("owner_mismatch");
    } finally {
      root.close();
    }
    fs.chownSync(legacy, 65534, 65534);
    expect(codeOf(() => SecureDir.openRoot(legacy, { source: true }))).toBe("owner_mismatch");
  });
});

describe("exact times", () => {
  it("stat reports nanosecond times, and setTimes gives a file exactly those", () => {
    const src = path.join(legacy, "sub", "s.jsonl");
    const old = new Date("2025-01-15T08:00:00.123Z");
    fs.utimesSync(src, old, old);
    const store = SecureDir.openRoot(path.join(tmp.path, "store"), { create: true });
    const root = SecureDir.openRoot(legacy, { source: true });
    try {
      const source = root.openFile(["sub", "s.jsonl"], { source: true });
      const st = source.stat();
      source.close();
      expect(st.mtimeNs).toBe(fs.statSync(src, { bigint: true }).mtimeNs.toString());
      const copy = store.openFile("copy", { write: true, create: "exclusive" });
      try {
        copy.setTimes(BigInt(st.atimeNs), BigInt(st.mtimeNs));
        expect(copy.stat().mtimeNs).toBe(st.mtimeNs);
        expect(copy.stat().atimeNs).toBe(st.atimeNs);
        expect(() => copy.setTimes(1 as unknown as bigint, 2n)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
        expect(() => copy.setTimes(2n ** 64n, 2n)).toThrow(expect.objectContaining({ code: "invalid_argument" }));
      } finally {
        copy.close();
      }
      expect(fs.statSync(path.join(store.path, "copy")).mtime.toISOString()).toBe(old.toISOString());
    } finally {
      root.close();
      store.close();
    }
  });
});
