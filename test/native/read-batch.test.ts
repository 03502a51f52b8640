// The directory batch (`readDirBatch`, through SecureDir.readBatch): entry types as the
// listing gives them, the same owner-only verdicts as openFile, whole reads into the
// caller's buffer within its bounds, and the syscalls behind it (links and FIFOs never
// opened, every descriptor close-on-exec and no-follow, none left open).
import fs from "node:fs";
import net from "node:net";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError } from "../../src/index.js";
import { type DirectoryBatch } from "../../src/fs/index.js";
import { aclHex, extendedAcl } from "../helpers/acl.js";
import { BINDING_LOADER, buildTools, hasCommand, isRoot, run, runWithAddon, skipBecause, type SkipContext, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { descriptorsOn, descriptorsUnder } from "../audit/descriptors.js";

const FOREIGN_UID = 65534;
let tmp: ReturnType<typeof makeTempDir>;
let tools: Tools;
let n = 0;

beforeAll(() => {
  tmp = makeTempDir("gjc-batch-");
  tools = buildTools();
}, 120_000);
afterAll(() => tmp.remove());

/** A fresh owner-only store directory; `fill` plants entries by path. */
function store(fill: (dir: string) => void): string {
  n += 1;
  const dir = path.join(tmp.path, `store-${n}`);
  SecureDir.openRoot(dir, { create: true }).close();
  fill(dir);
  return dir;
}

function file(dir: string, name: string, text: string | Buffer, mode = 0o600): string {
  const p = path.join(dir, name);
  fs.writeFileSync(p, text, { mode });
  fs.chmodSync(p, mode);
  return p;
}

function batchOf(dir: string, buffer = Buffer.alloc(1 << 16), maxFileBytes = 1 << 14): DirectoryBatch {
  const root = SecureDir.openRoot(dir);
  try {
    return root.readBatch({ maxFileBytes, buffer });
  } finally {
    root.close();
  }
}

function index(batch: DirectoryBatch, name: string): number {
  for (let i = 0; i < batch.length; i++) if (batch.name(i) === name) return i;
  throw new Error(`no entry ${name}`);
}

/** The code openFile throws for `name`, or "ok". */
function openCode(dir: string, name: string): string {
  const root = SecureDir.openRoot(dir);
  try {
    root.openFile(name).close();
    return "ok";
  } catch (error) {
    if (error instanceof SecureFsError) return error.code;
    throw error;
  } finally {
    root.close();
  }
}

describe("readBatch: entries and contents", () => {
  it("reports each entry's type as the listing does, and reads regular files whole", async () => {
    const socketDir = store(() => undefined);
    const server = net.createServer();
    await new Promise<void>((resolve) => server.listen(path.join(socketDir, "sock"), resolve));
    try {
      file(socketDir, "a.jsonl", '{"type":"session"}\n');
      file(socketDir, "empty", "");
      fs.mkdirSync(path.join(socketDir, "sub"), { mode: 0o700 });
      fs.symlinkSync("a.jsonl", path.join(socketDir, "link"));
      expect(run("mkfifo", ["-m", "600", path.join(socketDir, "pipe")]).status).toBe(0);
      const batch = batchOf(socketDir);
      const root = SecureDir.openRoot(socketDir);
      const listed = new Map(root.list().map((e) => [e.name, e.type]));
      root.close();
      expect(batch.length).toBe(listed.size);
      for (let i = 0; i < batch.length; i++) expect(batch.type(i), batch.name(i)).toBe(listed.get(batch.name(i)));
      const a = index(batch, "a.jsonl");
      expect(batch.outcome(a)).toBe("read");
      expect(batch.content(a)?.toString()).toBe('{"type":"session"}\n');
      expect(batch.stat(a)).toMatchObject({ type: "file", mode: 0o600, nlink: 1, size: 19 });
      expect(batch.stat(a)?.ino).toBe(String(fs.statSync(path.join(socketDir, "a.jsonl")).ino));
      expect(batch.outcome(index(batch, "empty"))).toBe("read");
      expect(batch.content(index(batch, "empty"))?.length).toBe(0);
      for (const [name, type] of [["sub", "directory"], ["link", "symlink"], ["pipe", "fifo"], ["sock", "socket"]] as const) {
        const i = index(batch, name);
        expect(batch.outcome(i), name).toBe("not_file");
        expect(batch.content(i), name).toBeUndefined();
        expect(batch.stat(i)?.type, name).toBe(type);
      }
    } finally {
      server.close();
    }
  });

  it("gives a file the verdict openFile gives it: mode, hard link, foreign owner", (ctx) => {
    const dir = store((d) => {
      file(d, "open", "x", 0o644);
      file(d, "ro", "x", 0o400);
      const linked = file(d, "linked", "x");
      fs.linkSync(linked, path.join(d, "second"));
      if (isRoot()) fs.chownSync(file(d, "foreign", "x"), FOREIGN_UID, FOREIGN_UID);
    });
    const batch = batchOf(dir);
    const names = ["open", "ro", "linked", "second", ...(isRoot() ? ["foreign"] : [])];
    for (const name of names) {
      const i = index(batch, name);
      expect(batch.outcome(i), name).toBe("refused");
      expect(batch.failure(i)?.code, name).toBe(openCode(dir, name));
      expect(batch.content(i)).toBeUndefined();
    }
    expect(batch.failure(index(batch, "open"))?.code).toBe("mode_mismatch");
    expect(batch.failure(index(batch, "second"))?.code).toBe("hardlink_refused");
    if (!isRoot()) skipBecause(ctx, "a foreign owner needs root to plant");
    expect(batch.failure(index(batch, "foreign"))?.code).toBe("owner_mismatch");
  });

  it("gives a stored ACL the verdict openFile gives it", (ctx) => {
    const dir = store((d) => file(d, "acl", "x"));
    const set = run(tools.setXattr, [path.join(dir, "acl"), "system.posix_acl_access", aclHex(extendedAcl(0, 6))]);
    if (set.status !== 0) skipBecause(ctx, "the temp filesystem cannot store POSIX ACLs");
    const batch = batchOf(dir);
    const i = index(batch, "acl");
    expect(batch.outcome(i)).toBe("refused");
    expect(batch.failure(i)?.code).toBe("acl_present");
    expect(openCode(dir, "acl")).toBe("acl_present");
  });

  it("gives an ACL read failure the verdict openFile gives it (injected EIO)", () => {
    const dir = store((d) => file(d, "f", "x"));
    // The root's own verify reads two ACL attributes; the fault hits the file's read.
    const env = { LD_PRELOAD: tools.faultShim, GJC_FAULT_XATTR_ERRNO: "5", GJC_FAULT_XATTR_SKIP: "2" };
    const codes = runWithAddon<[string, string]>(
      `const root = b.openRoot(${JSON.stringify(dir)});
       const r = b.readDirBatch(root, 1024, new Uint8Array(4096));
       const opened = b.openFile(root, "f");
       return [r.failures[0].code, opened.code];`,
      env,
    );
    // The second call sees no skipped reads left, so both are the injected failure.
    expect(codes).toEqual(["acl_io_error", "acl_io_error"]);
  });

  it("marks files over the bound too_large and files that do not fit deferred, reading neither", () => {
    const dir = store((d) => {
      file(d, "big", Buffer.alloc(3000, 0x61));
      file(d, "small", Buffer.alloc(100, 0x62));
    });
    const bounded = batchOf(dir, Buffer.alloc(1 << 16), 2999);
    expect(bounded.outcome(index(bounded, "big"))).toBe("too_large");
    expect(bounded.stat(index(bounded, "big"))?.size).toBe(3000);
    expect(bounded.outcome(index(bounded, "small"))).toBe("read");
    const exact = batchOf(dir, Buffer.alloc(1 << 16), 3000);
    expect(exact.content(index(exact, "big"))?.equals(Buffer.alloc(3000, 0x61))).toBe(true);
    // A file needs its size plus one byte of room (the byte that shows it did not grow).
    const tight = batchOf(dir, Buffer.alloc(100), 1 << 14);
    expect(tight.outcome(index(tight, "small"))).toBe("deferred");
    expect(tight.outcome(index(tight, "big"))).toBe("deferred");
    const roomy = batchOf(dir, Buffer.alloc(101), 1 << 14);
    expect(roomy.content(index(roomy, "small"))?.equals(Buffer.alloc(100, 0x62))).toBe(true);
    expect(roomy.outcome(index(roomy, "big"))).toBe("deferred");
  });

  it("refuses bad arguments and a closed directory with typed errors", () => {
    const dir = store((d) => file(d, "f", "x"));
    const root = SecureDir.openRoot(dir);
    const bad = [-1, 1.5, Number.NaN];
    for (const maxFileBytes of bad) {
      expect(() => root.readBatch({ maxFileBytes, buffer: Buffer.alloc(8) })).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    }
    root.close();
    expect(() => root.readBatch({ maxFileBytes: 8, buffer: Buffer.alloc(8) })).toThrow(expect.objectContaining({ code: "closed" }));
  });
});

describe("startReadBatch: the same batch on the thread pool", () => {
  it("returns what readBatch returns, once", () => {
    const dir = store((d) => {
      for (let i = 0; i < 20; i++) file(d, `f${i}`, `content ${i}`);
      file(d, "open", "x", 0o644);
      fs.mkdirSync(path.join(d, "sub"), { mode: 0o700 });
    });
    const root = SecureDir.openRoot(dir);
    try {
      const sync = root.readBatch({ maxFileBytes: 1 << 14, buffer: Buffer.alloc(1 << 16) });
      const pending = root.startReadBatch({ maxFileBytes: 1 << 14, buffer: Buffer.alloc(1 << 16) });
      const async = pending.finish();
      const view = (b: DirectoryBatch) =>
        Array.from({ length: b.length }, (_, i) => [b.name(i), b.type(i), b.outcome(i), b.content(i)?.toString(), b.failure(i)?.code, b.stat(i)?.ino]).sort();
      expect(view(async)).toEqual(view(sync));
      expect(() => pending.finish()).toThrow(expect.objectContaining({ code: "closed" }));
    } finally {
      root.close();
    }
  });

  it("keeps the directory open until the batch is done when it is closed meanwhile, and releases it then", () => {
    const dir = store((d) => file(d, "f", "kept"));
    const root = SecureDir.openRoot(dir);
    const pending = root.startReadBatch({ maxFileBytes: 64, buffer: Buffer.alloc(64) });
    root.close();
    expect(root.closed).toBe(true);
    // Still held by the batch (its listing may briefly hold a second descriptor of its own).
    expect(descriptorsOn(dir)).toBeGreaterThanOrEqual(1);
    const batch = pending.finish();
    expect(batch.content(index(batch, "f"))?.toString()).toBe("kept");
    // Released at once by finish(), not at some later turn of the event loop.
    expect(descriptorsUnder(dir)).toBe(0);
  });

  it("can be finished after the event loop has turned (the work completed first)", async () => {
    const dir = store((d) => file(d, "f", "later"));
    const held = () => descriptorsUnder(dir);
    const root = SecureDir.openRoot(dir);
    const pending = root.startReadBatch({ maxFileBytes: 64, buffer: Buffer.alloc(64) });
    root.close();
    // Pinned: its completion cannot run before the loop turns (the batch's listing may briefly
    // hold a second descriptor of the directory, and a file of it, while it runs).
    expect(descriptorsOn(dir)).toBeGreaterThanOrEqual(1);
    for (let i = 0; i < 50 && held() > 0; i++) await new Promise((resolve) => setTimeout(resolve, 10));
    // The completion on the loop released the pinned descriptor; finish still has the result.
    expect(held()).toBe(0);
    const batch = pending.finish();
    expect(batch.content(index(batch, "f"))?.toString()).toBe("later");
  });

  it("refuses a closed directory and a bad buffer at the start", () => {
    const dir = store((d) => file(d, "f", "x"));
    const root = SecureDir.openRoot(dir);
    expect(() => root.startReadBatch({ maxFileBytes: 8, buffer: "x" as unknown as Buffer })).toThrow(expect.objectContaining({ code: "invalid_argument" }));
    root.close();
    expect(() => root.startReadBatch({ maxFileBytes: 8, buffer: Buffer.alloc(8) })).toThrow(expect.objectContaining({ code: "closed" }));
  });
});

/** Runs one batch of `dir` in a child under strace; returns the openat/close lines it made. */
function traceBatch(ctx: SkipContext, dir: string): string[] {
  if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
  const script = `const b = require(${JSON.stringify(BINDING_LOADER)});
const fs = require("node:fs");
const root = b.openRoot(${JSON.stringify(dir)});
const before = fs.readdirSync("/proc/self/fd").length;
try { fs.statSync("/gjc-trace-begin"); } catch {}
const r = b.readDirBatch(root, 1 << 14, new Uint8Array(1 << 16));
try { fs.statSync("/gjc-trace-end"); } catch {}
if (r.failed) throw new Error(r.code);
if (fs.readdirSync("/proc/self/fd").length !== before) throw new Error("a descriptor was left open");`;
  const log = path.join(tmp.path, `strace-${n}.log`);
  const result = run("strace", ["-o", log, "-e", "trace=openat,open,close,statx,newfstatat,stat", process.execPath, "-e", script], { timeout: 30_000 });
  if (result.status !== 0 && /ptrace|PTRACE|Operation not permitted/.test(result.stderr)) {
    skipBecause(ctx, `strace cannot trace here: ${result.stderr.trim().split("\n")[0]}`);
  }
  expect(result.signal, "the batch blocked").toBeNull();
  expect(result.status, result.stderr).toBe(0);
  const lines = fs.readFileSync(log, "utf8").split("\n");
  const begin = lines.findIndex((l) => l.includes("/gjc-trace-begin"));
  const end = lines.findIndex((l) => l.includes("/gjc-trace-end"));
  expect(end).toBeGreaterThan(begin);
  return lines.slice(begin + 1, end).filter((l) => /^(openat|open|close)\(/.test(l));
}

describe("readBatch: syscalls", () => {
  it("never opens a link or a FIFO, opens every file no-follow, non-blocking and close-on-exec, and closes it", (ctx) => {
    const dir = store((d) => {
      file(d, "one", "1");
      file(d, "two", "2", 0o644);
      fs.symlinkSync("one", path.join(d, "link"));
      fs.symlinkSync("/nonexistent/target", path.join(d, "dangling"));
      expect(run("mkfifo", ["-m", "600", path.join(d, "pipe")]).status).toBe(0);
      fs.mkdirSync(path.join(d, "sub"), { mode: 0o700 });
    });
    const calls = traceBatch(ctx, dir);
    const opens = calls.filter((l) => l.startsWith("open"));
    for (const name of ["link", "dangling", "pipe", "sub"]) {
      expect(opens.filter((l) => l.includes(`"${name}"`)), name).toEqual([]);
    }
    for (const name of ["one", "two"]) {
      const line = opens.find((l) => l.includes(`"${name}"`));
      expect(line, name).toBeDefined();
      for (const flag of ["O_NOFOLLOW", "O_CLOEXEC", "O_NONBLOCK"]) expect(line, `${name} ${flag}`).toContain(flag);
    }
    // Every descriptor opened (the listing's too) is close-on-exec and closed within the call.
    for (const line of opens) expect(line).toContain("O_CLOEXEC");
    const fds = opens.map((l) => Number(l.slice(l.lastIndexOf("=") + 1)));
    const closed = calls.filter((l) => l.startsWith("close(")).map((l) => Number(l.slice(6, l.indexOf(")"))));
    for (const fd of fds) expect(closed, `fd ${fd}`).toContain(fd);
  });
});
