// The syscall sequence behind the durability and hot-path promises, recorded with strace on
// a child's main thread (the thread addon calls run on): an append is one write(2) with no
// re-verification; an atomic write syncs the file before publishing it and the directory after.
import fs from "node:fs";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

import { SecureDir } from "../../src/index.js";
import { BINDING_LOADER, hasCommand, run, skipBecause, type SkipContext } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let store: string;
beforeAll(() => {
  tmp = makeTempDir();
  store = path.join(tmp.path, "store");
  const root = SecureDir.openRoot(store, { create: true });
  root.openFile("log.jsonl", { write: true, create: "exclusive" }).close();
  root.close();
});
afterAll(() => tmp.remove());

/**
 * Runs `setup` then `traced` in a child under strace and returns the syscall lines made by
 * `traced` only (between two marker stat calls).
 */
function traceCalls(ctx: SkipContext, setup: string, traced: string): string[] {
  if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
  const script = `const b = require(${JSON.stringify(BINDING_LOADER)});
const fs = require("node:fs");
const root = b.openRoot(${JSON.stringify(store)});
${setup}
try { fs.statSync("/gjc-trace-begin"); } catch {}
${traced}
try { fs.statSync("/gjc-trace-end"); } catch {}`;
  const log = path.join(tmp.path, `strace-${Date.now()}.log`);
  const traceSet = "trace=openat,mkdirat,write,pwrite64,fsync,fdatasync,renameat,renameat2,linkat,fstat,newfstatat,statx,fgetxattr,fchmod,fremovexattr,fcntl";
  const result = run("strace", ["-o", log, "-e", traceSet, process.execPath, "-e", script]);
  if (result.status !== 0 && /ptrace|PTRACE|Operation not permitted/.test(result.stderr)) {
    skipBecause(ctx, `strace cannot trace here: ${result.stderr.trim().split("\n")[0]}`);
  }
  expect(result.status, result.stderr).toBe(0);
  const lines = fs.readFileSync(log, "utf8").split("\n");
  const begin = lines.findIndex((l) => l.includes("/gjc-trace-begin"));
  const end = lines.findIndex((l) => l.includes("/gjc-trace-end"));
  expect(begin).toBeGreaterThanOrEqual(0);
  expect(end).toBeGreaterThan(begin);
  return lines.slice(begin + 1, end).filter((l) => /^[a-z0-9_]+\(/.test(l));
}

// glibc implements fstat as newfstatat(fd, "", ..., AT_EMPTY_PATH); count that as fstat.
const callName = (line: string) =>
  line.startsWith("newfstatat(") && line.includes("AT_EMPTY_PATH") ? "fstat" : line.slice(0, line.indexOf("("));

describe("syscalls of the hot and durable paths", () => {
  it("an append is exactly one write(2), with no stat or ACL read", (ctx) => {
    const calls = traceCalls(ctx, `const f = b.openFile(root, "log.jsonl", { append: true });`, `b.append(f, '{"type":"message"}\\n');`);
    expect(calls.map(callName)).toEqual(["write"]);
    expect(calls[0]).toContain('{\\"type\\":\\"message\\"}\\n');
  });

  it("a verify of a held descriptor is one fstat and one ACL read", (ctx) => {
    const calls = traceCalls(ctx, `const f = b.openFile(root, "log.jsonl");`, `b.verify(f);`);
    expect(calls.map(callName)).toEqual(["fstat", "fgetxattr"]);
  });

  it("an exclusive create that is owner-only as created is one openat, one fstat and one ACL read: no chmod, no ACL removal", (ctx) => {
    const calls = traceCalls(ctx, "", `b.openFile(root, "created-${Date.now()}", { write: true, create: "exclusive" });`);
    expect(calls.map(callName)).toEqual(["openat", "fstat", "fgetxattr"]);
    expect(calls[0]).toContain("O_CREAT|O_EXCL");
    expect(calls[0]).toContain("O_NOFOLLOW");
    expect(calls[0]).toContain("O_CLOEXEC");
  });

  it("a created directory syncs its parent once, and not at all with deferSync", (ctx) => {
    const synced = traceCalls(ctx, "", `b.openDir(root, "dir-synced-${Date.now()}", { create: true });`).map(callName);
    expect(synced.filter((c) => c === "fsync")).toHaveLength(1);
    expect(synced.indexOf("fsync")).toBeGreaterThan(synced.indexOf("mkdirat"));
    const deferred = traceCalls(ctx, "", `b.openDir(root, "dir-deferred-${Date.now()}", { create: true, deferSync: true });`).map(callName);
    expect(deferred).toContain("mkdirat");
    expect(deferred).not.toContain("fsync");
    expect(deferred).not.toContain("fchmod");
  });

  it("writeFileAtomic: file fsync before the publish, directory fsync after", (ctx) => {
    for (const noReplace of [false, true]) {
      const calls = traceCalls(ctx, "", `b.writeFileAtomic(root, "state-${noReplace}", "x", { noReplace: ${noReplace} });`).map(callName);
      const publish = calls.indexOf(noReplace ? "renameat2" : "renameat");
      expect(publish, calls.join(" ")).toBeGreaterThan(0);
      expect(calls.slice(0, publish)).toContain("pwrite64");
      expect(calls.lastIndexOf("fsync", publish)).toBeGreaterThan(calls.indexOf("pwrite64"));
      expect(calls.indexOf("fsync", publish)).toBeGreaterThan(publish);
      expect(calls).not.toContain("linkat");
    }
  });
});
