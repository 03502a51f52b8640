// The native import batch (SecureDir.importFilesAsync) seen from outside the process: a
// write path that corrupts a copy (LD_PRELOAD fault shim), the syscalls each import makes
// (strace: no-follow, non-blocking, close-on-exec opens, every descriptor closed, no sync
// per file), and the create path it shares with openFile/openDir (walk.cc): a fresh object
// is checked first and repaired only when the umask, a set-group-ID parent or an inherited
// ACL made it deviate.
// Re-run as an unprivileged uid by test/fs/unprivileged.test.ts.
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import type { SecureDir } from "../../src/index.js";
import { codeOf } from "../helpers/errors.js";
import { BINDING_LOADER, hasCommand, run, skipBecause, type ChildResult, type SkipContext } from "../helpers/processes.js";
import { outcomes, useImportFixture } from "./import-fixture.js";

const fx = useImportFixture();

/** A child script: `b` is the addon; `body` is async, and what it returns comes back as JSON. */
function childScript(body: string): string {
  return `const b = require(${JSON.stringify(BINDING_LOADER)});
const fs = require("node:fs");
(async () => { ${body} })().then(
  (out) => process.stdout.write(JSON.stringify(out === undefined ? null : out)),
  (error) => { console.error(error); process.exit(1); });`;
}

/**
 * Child source of `imports(dest, batches)`: opens (creating) the owner-only `dest` and runs
 * one import per batch of requests (serialised by {@link requestsJson}), resolving to the
 * raw outcome numbers of each batch (binding.d.cts: 0 copied, 2 changed, 4 mismatch, 5 skipped).
 */
const IMPORTS = `async function imports(dest, batches) {
  const root = b.openRoot(dest, { create: true });
  const out = [];
  for (const { dir, id, requests } of batches) {
    const versions = BigInt64Array.from(requests.flatMap((r) => r.version.map(BigInt)));
    const r = await b.importFilesAsync(root, dir, BigUint64Array.from(id.map(BigInt)), requests.map((q) => q.name), versions, new Uint8Array(1 << 16));
    if (r.failed) throw new Error(r.code);
    out.push(Array.from(r.info).filter((_, k) => k % 4 === 0));
  }
  b.close(root);
  return out;
}`;

function requestsJson(dir: string, names: readonly string[]): string {
  const { dev, ino } = fx.idOf(dir);
  const requests = names.map((name) => {
    const r = fx.request(dir, name);
    return { name, version: [r.dev, r.ino, r.size, r.mtimeNs, r.ctimeNs].map(String) };
  });
  return JSON.stringify({ dir, id: [String(dev), String(ino)], requests });
}

function runChildScript(body: string, env: NodeJS.ProcessEnv = {}): ChildResult {
  return run(process.execPath, ["-e", childScript(body)], { env: { ...process.env, ...env } });
}

describe("importFilesAsync: a corrupting write", () => {
  it("a copy that does not read back as written is mismatch and stops the batch (fault shim)", () => {
    const dir = fx.source((d) => {
      fx.plant(d, "a", "small one");
      fx.plant(d, "corrupted", Buffer.alloc(777, 0x41));
      fx.plant(d, "c", "after");
    });
    const dest = path.join(fx.tmp, `shim-dest-${fx.unique()}`);
    const log = path.join(fx.tmp, `shim-${fx.unique()}.log`);
    const child = runChildScript(`${IMPORTS}\nreturn imports(${JSON.stringify(dest)}, [${requestsJson(dir, ["a", "corrupted", "c"])}]);`, {
      LD_PRELOAD: fx.tools.faultShim,
      GJC_FAULT_PWRITE_FLIP: "777",
      GJC_FAULT_LOG: log,
    });
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([[0, 4, 5]]);
    expect(fs.readFileSync(log, "utf8").trim().split("\n")).toEqual(["pwrite:flipped"]);
    expect(fs.readFileSync(path.join(dest, "a"), "utf8")).toBe("small one");
    // The corrupted copy is removed again, and nothing after it was made.
    expect(fs.readdirSync(dest)).toEqual(["a"]);
  });
});

/**
 * Runs `body` in a child under `strace -ff` (one log per thread, so the thread-pool work is
 * not interleaved with the main thread) and returns each thread's syscall lines.
 */
function traceChild(ctx: SkipContext, body: string, umask: number): string[][] {
  if (!hasCommand("strace")) skipBecause(ctx, "strace is not installed");
  const prefix = path.join(fx.tmp, `strace-${fx.unique()}`, "t");
  fs.mkdirSync(path.dirname(prefix));
  const traced = "trace=open,openat,close,fchmod,fchmodat,chmod,fsetxattr,fremovexattr,setxattr,removexattr,fgetxattr,geteuid,fstat,newfstatat,statx,sync_file_range,fsync,fdatasync";
  const script = childScript(`process.umask(${umask});\n${body}`);
  const result = run("strace", ["-ff", "-o", prefix, "-e", traced, process.execPath, "-e", script]);
  if (result.status !== 0 && /ptrace|PTRACE|Operation not permitted/.test(result.stderr)) {
    skipBecause(ctx, `strace cannot trace here: ${result.stderr.trim().split("\n")[0]}`);
  }
  expect(result.signal, "the child blocked").toBeNull();
  expect(result.status, result.stderr).toBe(0);
  const logs = fs.readdirSync(path.dirname(prefix)).map((f) => fs.readFileSync(path.join(path.dirname(prefix), f), "utf8"));
  return logs.map((log) => log.split("\n").filter((l) => /^[a-z0-9_]+\(/.test(l)));
}

/** The calls of each import: from the open of `dir` to the close of that descriptor, on its thread. */
function importSegments(threads: readonly string[][], dir: string): string[][] {
  const segments: string[][] = [];
  for (const lines of threads) {
    lines.forEach((line, i) => {
      // glibc's open(2) is the openat syscall relative to the working directory.
      if (!line.startsWith(`openat(AT_FDCWD, "${dir}",`)) return;
      const fd = resultOf(line);
      const end = lines.findIndex((l, k) => k > i && new RegExp(`^close\\(${fd}\\)\\s+= 0$`).test(l));
      expect(end, line).toBeGreaterThan(i);
      segments.push(lines.slice(i, end + 1));
    });
  }
  return segments;
}

const resultOf = (line: string) => Number(line.slice(line.lastIndexOf("=") + 1).trim().split(" ")[0]);
const REPAIRS = /^(fchmod|fchmodat|chmod|fsetxattr|fremovexattr|setxattr|removexattr)\(/;

describe("importFilesAsync: syscalls", () => {
  it("opens sources no-follow, non-blocking and close-on-exec, never follows a link or waits on a FIFO, and closes every descriptor", (ctx) => {
    const dir = fx.source((d) => {
      fx.plant(d, "one", "1");
      fx.plant(d, "two", "22");
      fs.symlinkSync("one", path.join(d, "link"));
      expect(run("mkfifo", ["-m", "600", path.join(d, "pipe")]).status).toBe(0);
    });
    const dest = path.join(fx.tmp, `traced-dest-${fx.unique()}`);
    const batches = [["one", "two"], ["link"], ["pipe"]].map((names) => requestsJson(dir, names));
    const threads = traceChild(
      ctx,
      `${IMPORTS}
       const before = fs.readdirSync("/proc/self/fd").length;
       const out = await imports(${JSON.stringify(dest)}, [${batches.join(",")}]);
       if (fs.readdirSync("/proc/self/fd").length !== before) throw new Error("a descriptor was left open");
       return out;`,
      0o077,
    );
    const segments = importSegments(threads, dir);
    expect(segments.length).toBe(3);
    for (const segment of segments) {
      const dirFd = resultOf(segment[0] as string);
      for (const flag of ["O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC"]) expect(segment[0]).toContain(flag);
      const opens = segment.filter((l) => l.startsWith("openat("));
      const sources = opens.filter((l) => l.startsWith(`openat(${dirFd}, `));
      expect(sources.length).toBeGreaterThan(0);
      for (const line of sources) {
        for (const flag of ["O_RDONLY", "O_NOFOLLOW", "O_NONBLOCK", "O_CLOEXEC"]) expect(line, flag).toContain(flag);
      }
      // Creates in the destination: exclusive and close-on-exec.
      for (const line of opens.filter((l) => l.includes("O_CREAT"))) {
        for (const flag of ["O_EXCL", "O_NOFOLLOW", "O_CLOEXEC"]) expect(line, flag).toContain(flag);
      }
      const fds = opens.map(resultOf).filter((fd) => fd >= 0);
      const closed = segment.filter((l) => l.startsWith("close(")).map((l) => Number(l.slice(6, l.indexOf(")"))));
      for (const fd of fds) expect(closed, `fd ${fd}`).toContain(fd);
    }
    // The batches may run on different pool threads, so find each by what it opens.
    const opening = (name: string) => segments.find((segment) => segment.some((l) => l.includes(`, "${name}", O_RDONLY`))) ?? [];
    const [copy, link, pipe] = [opening("one"), opening("link"), opening("pipe")];
    expect(copy.filter((l) => l.includes("O_CREAT")).length).toBe(2);
    // Small copies are left to the caller's one flush: no writeback request or sync per file.
    expect(segments.flat().filter((l) => /^(sync_file_range|fsync|fdatasync)\(/.test(l))).toEqual([]);
    // The link's open fails on the link itself, and nothing opens its target in its place.
    expect(link.slice(1).filter((l) => l.startsWith("openat(")).map((l) => [l.includes('"link"'), l.includes("ELOOP")])).toEqual([[true, true]]);
    // The FIFO is opened once, non-blocking (an open that waited for a writer never returns).
    const pipeOpens = pipe.slice(1).filter((l) => l.startsWith("openat("));
    expect(pipeOpens.length).toBe(1);
    expect(pipeOpens[0]).toContain('"pipe"');
    expect(resultOf(pipeOpens[0] as string)).toBeGreaterThanOrEqual(0);
    expect(fs.readdirSync(dest).sort()).toEqual(["one", "two"]);
  });

  it("looks at the destination's ACL and the effective uid once per batch, and stats each source and copy once", (ctx) => {
    const names = ["a", "b", "c", "d"];
    const dir = fx.source((d) => names.forEach((name) => fx.plant(d, name, name.repeat(3))));
    const dest = path.join(fx.tmp, `counted-dest-${fx.unique()}`);
    const threads = traceChild(ctx, `${IMPORTS}\nreturn imports(${JSON.stringify(dest)}, [${requestsJson(dir, ["a"])}, ${requestsJson(dir, names.slice(1))}]);`, 0o077);
    const segments = importSegments(threads, dir);
    expect(segments.length).toBe(2);
    const count = (segment: readonly string[], call: RegExp) => segment.filter((l) => call.test(l)).length;
    const [one, three] = segments.sort((x, y) => count(x, /O_CREAT/) - count(y, /O_CREAT/)) as [string[], string[]];
    expect([count(one, /O_CREAT/), count(three, /O_CREAT/)]).toEqual([1, 3]);
    for (const call of [/^fgetxattr\(/, /^geteuid\(/]) {
      expect(count(one, call), String(call)).toBeGreaterThan(0);
      expect(count(three, call), String(call)).toBe(count(one, call));
    }
    // Two more files, two stats each: the source when opened and the copy when created.
    const stats = /^(newfstatat|fstat|statx)\(/;
    expect(count(three, stats) - count(one, stats)).toBe(4);
    expect(fs.readdirSync(dest).sort()).toEqual(names);
  });
});

describe("creating an owner-only object: checked first, repaired only when it deviates", () => {
  /** Directory `name`, created in a fresh destination and held open until the test ends. */
  function heldDir(name: string): SecureDir {
    const held = fx.destination().openDir(name, { create: true });
    fx.hold(held);
    return held;
  }

  /** Child body creating a file, a directory and an import copy in `dest`, marking the sync part. */
  function creations(dest: string, dir: string): string {
    return `${IMPORTS}
      const root = b.openRoot(${JSON.stringify(dest)}, { create: true });
      try { fs.statSync("/gjc-trace-begin"); } catch {}
      b.close(b.openFile(root, "created-file", { write: true, create: "exclusive" }));
      b.close(b.openDir(root, "created-dir", { create: true }));
      try { fs.statSync("/gjc-trace-end"); } catch {}
      b.close(root);
      return imports(${JSON.stringify(dest)}, [${requestsJson(dir, ["copied"])}]);`;
  }

  /** The repairing calls of the marked creations and of the import, under `umask`. */
  function repairsUnder(ctx: SkipContext, umask: number): { created: string[]; imported: string[]; dest: string } {
    const dir = fx.source((d) => fx.plant(d, "copied", "bytes"));
    const dest = path.join(fx.tmp, `umask-dest-${fx.unique()}`);
    const threads = traceChild(ctx, creations(dest, dir), umask);
    const main = threads.find((lines) => lines.some((l) => l.includes("/gjc-trace-begin"))) as string[];
    const begin = main.findIndex((l) => l.includes("/gjc-trace-begin"));
    const end = main.findIndex((l) => l.includes("/gjc-trace-end"));
    expect(end).toBeGreaterThan(begin);
    const created = main.slice(begin + 1, end);
    expect(created.filter((l) => l.includes("O_CREAT")).length).toBe(1);
    const segments = importSegments(threads, dir);
    expect(segments.length).toBe(1);
    return { created: created.filter((l) => REPAIRS.test(l)), imported: (segments[0] as string[]).filter((l) => REPAIRS.test(l)), dest };
  }

  it("under umask 077 nothing is chmodded or stripped; under 277 the file and directory are fixed with fchmod", (ctx) => {
    const quiet = repairsUnder(ctx, 0o077);
    expect(quiet.created).toEqual([]);
    expect(quiet.imported).toEqual([]);
    // The same trace sees the repair when there is one to make.
    const strict = repairsUnder(ctx, 0o277);
    expect(strict.created.filter((l) => l.startsWith("fchmod(")).map((l) => l.slice(l.indexOf(",") + 2, l.indexOf(")")))).toEqual(["0600", "0700"]);
    expect(strict.imported.filter((l) => l.startsWith("fchmod(")).length).toBe(1);
  });

  it("under umask 277 a created file, directory and import copy still end up exactly 0600 / 0700", () => {
    const dir = fx.source((d) => fx.plant(d, "copied", "bytes"));
    const dest = path.join(fx.tmp, `umask-modes-${fx.unique()}`);
    const child = runChildScript(`process.umask(0o277);\n${creations(dest, dir)}`);
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([[0]]);
    const modes = ["", "created-file", "created-dir", "copied"].map((name) => fs.lstatSync(path.join(dest, name)).mode & 0o7777);
    expect(modes).toEqual([0o700, 0o600, 0o700, 0o600]);
    expect(fs.readFileSync(path.join(dest, "copied"), "utf8")).toBe("bytes");
  });

  it("a directory created in a set-group-ID parent (which passes the bit on) is repaired to exactly 0700", async (ctx) => {
    const dir = fx.source((d) => fx.plant(d, "copied", "bytes"));
    const held = heldDir("setgid");
    fs.chmodSync(held.path, 0o2700);
    if ((fs.statSync(held.path).mode & 0o2000) === 0) skipBecause(ctx, "the kernel dropped the set-group-ID bit of this directory");
    fs.mkdirSync(path.join(held.path, "plain"), { mode: 0o700 });
    expect(fs.statSync(path.join(held.path, "plain")).mode & 0o7777).toBe(0o2700);
    const sub = held.openDir("created-dir", { create: true });
    fx.hold(sub);
    expect(fs.statSync(sub.path).mode & 0o7777).toBe(0o700);
    expect(outcomes(await fx.importAll(held, dir, [fx.request(dir, "copied")]))).toEqual(["copied"]);
    fx.expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
  });

  /** Sets a default ACL on `dir` with setfacl; skips when the tool or the file system cannot. */
  function setDefaultAcl(ctx: SkipContext, dir: string, spec: string): void {
    if (!hasCommand("setfacl")) skipBecause(ctx, "setfacl (Debian package acl) is not installed");
    const set = run("setfacl", ["-d", "-m", spec, dir]);
    if (set.status !== 0) skipBecause(ctx, `the file system under ${dir} does not store POSIX ACLs: ${set.stderr.trim()}`);
  }

  it("under a parent's default ACL, created files, directories and import copies come out without ACLs", async (ctx) => {
    const dir = fx.source((d) => fx.plant(d, "copied", "bytes"));
    const held = heldDir("inheriting");
    // Set while held: the held handle goes on creating below it without re-checking it.
    setDefaultAcl(ctx, held.path, "u:65534:rwx,g::rwx,o::r");
    // Proof the ACL is inherited by a plain create.
    fs.writeFileSync(path.join(held.path, "plain"), "", { mode: 0o600 });
    expect(codeOf(() => held.openFile("plain"))).toBe("acl_present");
    expect(outcomes(await fx.importAll(held, dir, [fx.request(dir, "copied")]))).toEqual(["copied"]);
    held.openFile("created-file", { write: true, create: "exclusive" }).close();
    const sub = held.openDir("created-dir", { create: true });
    fx.hold(sub);
    expect(sub.verify()).toEqual({ accessAcl: "absent", defaultAcl: "absent" });
    fx.expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
    fx.expectOwnerOnlyCopy(held, "created-file", Buffer.alloc(0));
    expect(fs.statSync(sub.path).mode & 0o7777).toBe(0o700);
    const getfacl = run("getfacl", ["-c", "-p", path.join(held.path, "copied"), path.join(held.path, "created-dir")]);
    if (getfacl.status === 0) expect(getfacl.stdout).not.toMatch(/^(user:\d|default:)/m);
  });

  it("a default ACL that takes the owner's write bit (the umask does not apply) is repaired to 0600", async (ctx) => {
    const dir = fx.source((d) => fx.plant(d, "copied", "bytes"));
    const held = heldDir("read-only-default");
    setDefaultAcl(ctx, held.path, "u::r-x,g::---,o::---");
    fs.writeFileSync(path.join(held.path, "plain"), "");
    expect(fs.statSync(path.join(held.path, "plain")).mode & 0o777).toBe(0o400);
    expect(outcomes(await fx.importAll(held, dir, [fx.request(dir, "copied")]))).toEqual(["copied"]);
    fx.expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
  });
});
