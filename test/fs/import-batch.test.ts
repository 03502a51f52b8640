// The native import batch (SecureDir.importFilesAsync): many files of an unmanaged source
// directory copied owner-only in one thread-pool call, each only if it is still the exact
// version asked for; the first request that is neither copied nor deferred stops the batch.
// Also the create path it shares with openFile/openDir (walk.cc): a fresh object is checked
// first and repaired only when the umask or an inherited ACL made it deviate.
// Re-run as an unprivileged uid by test/fs/unprivileged.test.ts.
import fs from "node:fs";
import path from "node:path";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";

import { SecureDir, SecureFsError, type ImportedFile, type ImportRequest } from "../../src/index.js";
import { asyncCodeOf, codeOf } from "../helpers/errors.js";
import { BINDING_LOADER, buildTools, hasCommand, isRoot, run, runWithAddon, skipBecause, type ChildResult, type SkipContext, type Tools } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: ReturnType<typeof makeTempDir>;
let tools: Tools;
let n = 0;
const opened: SecureDir[] = [];

beforeAll(() => {
  tmp = makeTempDir("gjc-import-");
  tools = buildTools();
}, 120_000);
afterEach(() => {
  for (const dir of opened.splice(0)) if (!dir.closed) dir.close();
});
afterAll(() => tmp.remove());

/** A fresh unmanaged source directory (0755, as a peer tool leaves it); `fill` plants entries. */
function source(fill: (dir: string) => void): string {
  n += 1;
  const dir = path.join(tmp.path, `source-${n}`);
  fs.mkdirSync(dir, { mode: 0o755 });
  fs.chmodSync(dir, 0o755);
  fill(dir);
  return dir;
}

function plant(dir: string, name: string, content: string | Buffer, mode = 0o644): void {
  fs.writeFileSync(path.join(dir, name), content);
  fs.chmodSync(path.join(dir, name), mode);
}

/** A fresh owner-only destination, closed after the test. */
function destination(): SecureDir {
  n += 1;
  const dir = SecureDir.openRoot(path.join(tmp.path, `dest-${n}`), { create: true });
  opened.push(dir);
  return dir;
}

/** The identity importFilesAsync checks its source directory against. */
function idOf(dir: string): { dev: bigint; ino: bigint } {
  const st = fs.statSync(dir, { bigint: true });
  return { dev: st.dev, ino: st.ino };
}

/** The request for entry `name` as it is now (not following a link); `change` alters it. */
function request(dir: string, name: string, change: Partial<ImportRequest> = {}): ImportRequest {
  const st = fs.lstatSync(path.join(dir, name), { bigint: true });
  return { name, dev: st.dev, ino: st.ino, size: Number(st.size), mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs, ...change };
}

async function importAll(dest: SecureDir, dir: string, requests: readonly ImportRequest[], buffer = Buffer.alloc(1 << 20)): Promise<ImportedFile[]> {
  const result = await dest.importFilesAsync(dir, idOf(dir), requests, buffer);
  if (result === "unsupported") throw new Error("import batches are POSIX-only; this suite runs on Linux");
  return result;
}

/** A copy in `dest` is an owner-only single-link regular file of ours holding `bytes`. */
function expectOwnerOnlyCopy(dest: SecureDir, name: string, bytes: Buffer): void {
  const p = path.join(dest.path, name);
  const st = fs.lstatSync(p);
  expect(st.isFile(), name).toBe(true);
  expect(st.mode & 0o7777, name).toBe(0o600);
  expect(st.uid, name).toBe(process.geteuid?.());
  expect(st.nlink, name).toBe(1);
  expect(fs.readFileSync(p).equals(bytes), name).toBe(true);
  // openFile reads the ACL attributes too: it refuses a copy that kept any.
  const file = dest.openFile(name);
  expect(file.verify().accessAcl).toBe("absent");
  file.close();
}

const outcomes = (files: readonly ImportedFile[]) => files.map((f) => f.outcome);

describe("importFilesAsync: copies", () => {
  it("copies files of several sizes and modes into owner-only copies holding the source bytes", async () => {
    const contents: Record<string, Buffer> = {
      empty: Buffer.alloc(0),
      one: Buffer.from("1"),
      "session.jsonl": Buffer.from('{"type":"session"}\n'.repeat(40)),
      big: Buffer.from(Array.from({ length: 70_003 }, (_, i) => (i * 7) % 251)),
    };
    const modes: Record<string, number> = { empty: 0o600, one: 0o400, "session.jsonl": 0o644, big: 0o664 };
    const dir = source((d) => {
      for (const [name, bytes] of Object.entries(contents)) plant(d, name, bytes, modes[name]);
    });
    const dest = destination();
    const names = Object.keys(contents);
    const buffer = Buffer.alloc(1 << 20);
    const files = await importAll(dest, dir, names.map((name) => request(dir, name)), buffer);
    expect(outcomes(files)).toEqual(names.map(() => "copied"));
    let offset = 0;
    files.forEach((file, i) => {
      const bytes = contents[names[i] as string] as Buffer;
      expect(file.name).toBe(names[i]);
      expect(file.change).toBeUndefined();
      expect(file.error).toBeUndefined();
      expect(file.content?.equals(bytes), file.name).toBe(true);
      // A view of the caller's buffer, the copies back to back.
      expect(file.content?.buffer).toBe(buffer.buffer);
      expect(file.content?.byteOffset).toBe(buffer.byteOffset + offset);
      offset += bytes.length;
      expectOwnerOnlyCopy(dest, file.name, bytes);
    });
    expect(fs.readdirSync(dest.path).sort()).toEqual([...names].sort());
    // The source is read, never changed.
    for (const name of names) expect(fs.readFileSync(path.join(dir, name)).equals(contents[name] as Buffer)).toBe(true);
    expect(fs.statSync(path.join(dir, "one")).mode & 0o777).toBe(0o400);
  });

  it("an empty request list does nothing and resolves to no results", async () => {
    const dir = source(() => undefined);
    const dest = destination();
    expect(await importAll(dest, dir, [])).toEqual([]);
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("defers what does not fit in the rest of the buffer (size plus one byte), creating nothing for it, and goes on", async () => {
    const dir = source((d) => {
      plant(d, "hundred", Buffer.alloc(100, 0x61));
      plant(d, "too-big", Buffer.alloc(101, 0x62));
      plant(d, "empty", "");
      plant(d, "one", "x");
    });
    const dest = destination();
    // 101 bytes: "hundred" needs all of them; then an empty file still fits, one byte does not.
    const files = await importAll(dest, dir, ["too-big", "hundred", "empty", "one"].map((name) => request(dir, name)), Buffer.alloc(101));
    expect(outcomes(files)).toEqual(["deferred", "copied", "copied", "deferred"]);
    expect(files[0]?.content).toBeUndefined();
    expect(files[1]?.content?.equals(Buffer.alloc(100, 0x61))).toBe(true);
    expect(fs.readdirSync(dest.path).sort()).toEqual(["empty", "hundred"]);
    // With room the deferred ones copy too.
    const again = await importAll(dest, dir, ["too-big", "one"].map((name) => request(dir, name)), Buffer.alloc(103));
    expect(outcomes(again)).toEqual(["copied", "copied"]);
    expectOwnerOnlyCopy(dest, "too-big", Buffer.alloc(101, 0x62));
  });

  it("an unreadable source is unopenable (permission_denied) unless root reads it anyway", async () => {
    const dir = source((d) => plant(d, "locked", "secret", 0o000));
    const dest = destination();
    const [file] = await importAll(dest, dir, [request(dir, "locked")]);
    if (isRoot()) {
      expect(file?.outcome).toBe("copied");
      expectOwnerOnlyCopy(dest, "locked", Buffer.from("secret"));
    } else {
      expect([file?.outcome, file?.change, file?.error?.code, file?.error?.errnoName]).toEqual(["changed", "unopenable", "permission_denied", "EACCES"]);
      expect(fs.readdirSync(dest.path)).toEqual([]);
    }
  });
});

/** Imports ["first", `bad`, "later"] and checks the batch stopped at `bad` with nothing of it created. */
async function expectStopsAt(dir: string, bad: ImportRequest): Promise<ImportedFile> {
  const dest = destination();
  const files = await importAll(dest, dir, [request(dir, "first"), bad, request(dir, "later")]);
  expect(outcomes(files), bad.name).toEqual(["copied", files[1]?.outcome, "skipped"]);
  expect(files[2]?.content).toBeUndefined();
  expect(fs.readdirSync(dest.path), bad.name).toEqual(["first"]);
  return files[1] as ImportedFile;
}

function sourceWithNeighbours(fill: (dir: string) => void): string {
  return source((d) => {
    plant(d, "first", "first bytes");
    plant(d, "later", "later bytes");
    fill(d);
  });
}

describe("importFilesAsync: a source that is not the requested file stops the batch", () => {
  it("a link (to a file or dangling) is unopenable with ELOOP, never followed", async () => {
    const dir = sourceWithNeighbours((d) => {
      fs.symlinkSync("first", path.join(d, "link"));
      fs.symlinkSync("/nonexistent/target", path.join(d, "dangling"));
    });
    for (const name of ["link", "dangling"]) {
      const file = await expectStopsAt(dir, request(dir, name));
      expect([file.outcome, file.change, file.error?.code, file.error?.errnoName], name).toEqual(["changed", "unopenable", "symlink_refused", "ELOOP"]);
      expect(file.error).toBeInstanceOf(SecureFsError);
    }
  });

  it("a FIFO (no writer: an open that waited would hang) and a directory are not_regular", async () => {
    const dir = sourceWithNeighbours((d) => {
      expect(run("mkfifo", ["-m", "644", path.join(d, "pipe")]).status).toBe(0);
      fs.mkdirSync(path.join(d, "sub"));
    });
    for (const name of ["pipe", "sub"]) {
      const file = await expectStopsAt(dir, request(dir, name));
      expect([file.outcome, file.change, file.error], name).toEqual(["changed", "not_regular", undefined]);
    }
  });

  it("a hard-linked source is hardlink", async () => {
    const dir = sourceWithNeighbours((d) => {
      plant(d, "linked", "shared");
      fs.linkSync(path.join(d, "linked"), path.join(d, "other-name"));
    });
    // Requested as it is now (linking changed its ctime), so only the link count differs.
    const file = await expectStopsAt(dir, request(dir, "linked"));
    expect([file.outcome, file.change]).toEqual(["changed", "hardlink"]);
  });

  it("another version than requested (size, mtime, ctime, inode, device) is before_copy", async () => {
    const dir = sourceWithNeighbours((d) => plant(d, "f", "version one"));
    const now = request(dir, "f");
    const others: Partial<ImportRequest>[] = [
      { size: now.size + 1 },
      { size: now.size - 1 },
      { mtimeNs: now.mtimeNs + 1n },
      { ctimeNs: now.ctimeNs - 1n },
      { ino: now.ino + 1n },
      { dev: now.dev + 1n },
    ];
    for (const other of others) {
      const file = await expectStopsAt(dir, { ...now, ...other });
      expect([file.outcome, file.change], JSON.stringify(other, (_, v: unknown) => (typeof v === "bigint" ? String(v) : v))).toEqual(["changed", "before_copy"]);
    }
  });

  it("a file replaced under the same name since it was recorded is before_copy", async () => {
    const dir = sourceWithNeighbours((d) => plant(d, "f", "old"));
    const recorded = request(dir, "f");
    plant(dir, "f.new", "new");
    fs.renameSync(path.join(dir, "f.new"), path.join(dir, "f"));
    const file = await expectStopsAt(dir, recorded);
    expect([file.outcome, file.change]).toEqual(["changed", "before_copy"]);
  });

  it("a missing source is unopenable (not_found, ENOENT)", async () => {
    const dir = sourceWithNeighbours((d) => plant(d, "gone", "x"));
    const recorded = request(dir, "gone");
    fs.unlinkSync(path.join(dir, "gone"));
    const file = await expectStopsAt(dir, recorded);
    expect([file.outcome, file.change, file.error?.code, file.error?.errnoName]).toEqual(["changed", "unopenable", "not_found", "ENOENT"]);
  });
});

describe("importFilesAsync: a copy that cannot be made stops the batch", () => {
  it("a destination name that exists is failed (already_exists) and the existing file is untouched", async () => {
    const dir = sourceWithNeighbours((d) => plant(d, "taken", "from the source"));
    const dest = destination();
    dest.writeFileAtomic("taken", "already here");
    const before = fs.statSync(path.join(dest.path, "taken"), { bigint: true });
    const files = await importAll(dest, dir, ["first", "taken", "later"].map((name) => request(dir, name)));
    expect(outcomes(files)).toEqual(["copied", "failed", "skipped"]);
    expect([files[1]?.error?.code, files[1]?.error?.errnoName]).toEqual(["already_exists", "EEXIST"]);
    expect(files[1]?.content).toBeUndefined();
    expect(fs.readFileSync(path.join(dest.path, "taken"), "utf8")).toBe("already here");
    const after = fs.statSync(path.join(dest.path, "taken"), { bigint: true });
    expect([after.ino, after.mtimeNs, after.ctimeNs]).toEqual([before.ino, before.mtimeNs, before.ctimeNs]);
    expect(fs.readdirSync(dest.path).sort()).toEqual(["first", "taken"]);
  });

  it("a name that is not one safe entry name is failed (invalid_name) before anything is opened", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    const first = request(dir, "first");
    for (const name of ["../first", "a/b", ".", "..", ""]) {
      const files = await importAll(dest, dir, [{ ...first, name }, request(dir, "later")]);
      expect(outcomes(files), name).toEqual(["failed", "skipped"]);
      expect(files[0]?.error?.code, name).toBe("invalid_name");
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
    expect(fs.readdirSync(path.dirname(dir)).filter((e) => e === "first")).toEqual([]);
  });
});

describe("importFilesAsync: failures of the whole call reject with a typed error", () => {
  it("a source directory other than the one identified is identity_mismatch, and nothing is copied", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    const id = idOf(dir);
    const requests = [request(dir, "first")];
    for (const wrong of [{ ...id, ino: id.ino + 1n }, { ...id, dev: id.dev + 1n }, idOf(tmp.path)]) {
      expect(await asyncCodeOf(() => dest.importFilesAsync(dir, wrong, requests, Buffer.alloc(64)))).toBe("identity_mismatch");
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("a source path that is a link, a file or missing is refused without following it", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    const requests = [request(dir, "first")];
    const link = path.join(tmp.path, `link-to-${path.basename(dir)}`);
    fs.symlinkSync(dir, link);
    // The link's target has the right identity, so only the refusal to follow stops it; the
    // import names it as openRoot/openDir do.
    const cases: [string, string][] = [
      [link, "symlink_refused"],
      [path.join(dir, "first"), "not_directory"],
      [path.join(dir, "missing"), "not_found"],
    ];
    for (const [where, code] of cases) {
      expect(await asyncCodeOf(() => dest.importFilesAsync(where, idOf(dir), requests, Buffer.alloc(64))), where).toBe(code);
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("a relative source, a non-Buffer buffer, a bad size and fields of the wrong type are invalid_argument, not a TypeError", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    const ok = request(dir, "first");
    const id = idOf(dir);
    // What a caller using a plain (number) stat would pass.
    const plain = fs.lstatSync(path.join(dir, "first"));
    const asNumbers = { name: "first", dev: plain.dev, ino: plain.ino, size: plain.size, mtimeNs: plain.mtimeMs, ctimeNs: plain.ctimeMs };
    const buf = Buffer.alloc(64);
    const attempts: [string, unknown, unknown, unknown, unknown][] = [
      ["a relative source", path.relative(process.cwd(), dir), id, [ok], buf],
      ["a Uint8Array", dir, id, [ok], new Uint8Array(64)],
      ["a string buffer", dir, id, [ok], "buffer"],
      ["a negative size", dir, id, [{ ...ok, size: -1 }], buf],
      ["a fractional size", dir, id, [{ ...ok, size: 1.5 }], buf],
      ["an unsafe size", dir, id, [{ ...ok, size: Number.MAX_SAFE_INTEGER + 1 }], buf],
      ["numbers from a plain stat", dir, id, [asNumbers], buf],
      ["a numeric name", dir, id, [{ ...ok, name: 7 }], buf],
      ["no request object", dir, id, [undefined], buf],
      ["requests not an array", dir, id, "first", buf],
      ["a numeric identity", dir, { dev: Number(id.dev), ino: Number(id.ino) }, [ok], buf],
      ["no identity", dir, undefined, [ok], buf],
      ["a numeric source path", 7, id, [ok], buf],
    ];
    for (const [what, where, sourceId, requests, buffer] of attempts) {
      const call = () => dest.importFilesAsync(where as string, sourceId as typeof id, requests as ImportRequest[], buffer as Buffer);
      expect(await asyncCodeOf(call), what).toBe("invalid_argument");
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("the addon refuses malformed arguments at once, before any work is queued", () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = path.join(tmp.path, `raw-dest-${n}`);
    const { dev, ino } = idOf(dir);
    const codes = runWithAddon<string[]>(
      `const root = b.openRoot(${JSON.stringify(dest)}, true, false);
       const src = ${JSON.stringify(dir)};
       const id = BigUint64Array.of(${dev}n, ${ino}n);
       const one = new BigInt64Array(5);
       const buf = new Uint8Array(8);
       const file = b.openFile(root, "f", true, false, 1, false);
       const calls = [
         () => b.importFilesAsync(file, src, id, ["a"], one, buf),
         () => b.importFilesAsync(root, src, BigUint64Array.of(1n), ["a"], one, buf),
         () => b.importFilesAsync(root, src, new BigInt64Array(2), ["a"], one, buf),
         () => b.importFilesAsync(root, src, id, ["a", "b"], one, buf),
         () => b.importFilesAsync(root, src, id, ["a"], new Float64Array(5), buf),
         () => b.importFilesAsync(root, src, id, ["a"], one, new Uint16Array(4)),
         () => b.importFilesAsync(root, src, id, [7], one, buf),
         () => b.importFilesAsync(root, src, id, ["a"], BigInt64Array.of(0n, 0n, -1n, 0n, 0n), buf),
       ];
       const out = calls.map((call) => { const r = call(); return r instanceof Promise ? "queued" : r.code; });
       b.close(root);
       out.push(b.importFilesAsync(root, src, id, [], new BigInt64Array(0), buf).code);
       return out;`,
    );
    expect(codes).toEqual([...Array(8).fill("invalid_argument"), "closed"]);
  });

  it("a closed destination is closed", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    dest.close();
    expect(await asyncCodeOf(() => dest.importFilesAsync(dir, idOf(dir), [request(dir, "first")], Buffer.alloc(64)))).toBe("closed");
  });

  it("keeps the destination open until the batch settles when it is closed meanwhile", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = destination();
    const pending = dest.importFilesAsync(dir, idOf(dir), [request(dir, "first"), request(dir, "later")], Buffer.alloc(64));
    dest.close();
    const files = await pending;
    expect(files === "unsupported" ? files : outcomes(files)).toEqual(["copied", "copied"]);
    expect(fs.readFileSync(path.join(dest.path, "later"), "utf8")).toBe("later bytes");
    expect(codeOf(() => dest.stat())).toBe("closed");
  });
});

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
  const root = b.openRoot(dest, true, false);
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
  const { dev, ino } = idOf(dir);
  const requests = names.map((name) => {
    const r = request(dir, name);
    return { name, version: [r.dev, r.ino, r.size, r.mtimeNs, r.ctimeNs].map(String) };
  });
  return JSON.stringify({ dir, id: [String(dev), String(ino)], requests });
}

function runChildScript(body: string, env: NodeJS.ProcessEnv = {}): ChildResult {
  return run(process.execPath, ["-e", childScript(body)], { env: { ...process.env, ...env } });
}

describe("importFilesAsync: a corrupting write", () => {
  it("a copy that does not read back as written is mismatch and stops the batch (fault shim)", () => {
    const dir = source((d) => {
      plant(d, "a", "small one");
      plant(d, "corrupted", Buffer.alloc(777, 0x41));
      plant(d, "c", "after");
    });
    const dest = path.join(tmp.path, `shim-dest-${n}`);
    const log = path.join(tmp.path, `shim-${n}.log`);
    const child = runChildScript(`${IMPORTS}\nreturn imports(${JSON.stringify(dest)}, [${requestsJson(dir, ["a", "corrupted", "c"])}]);`, {
      LD_PRELOAD: tools.faultShim,
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
  n += 1;
  const prefix = path.join(tmp.path, `strace-${n}`, "t");
  fs.mkdirSync(path.dirname(prefix));
  const traced = "trace=open,openat,close,fchmod,fchmodat,chmod,fsetxattr,fremovexattr,setxattr,removexattr,newfstatat,statx,sync_file_range,fsync,fdatasync";
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
    const dir = source((d) => {
      plant(d, "one", "1");
      plant(d, "two", "22");
      fs.symlinkSync("one", path.join(d, "link"));
      expect(run("mkfifo", ["-m", "600", path.join(d, "pipe")]).status).toBe(0);
    });
    const dest = path.join(tmp.path, `traced-dest-${n}`);
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
});

describe("creating an owner-only object: checked first, repaired only when it deviates", () => {
  /** Child body creating a file, a directory and an import copy in `dest`, marking the sync part. */
  function creations(dest: string, dir: string): string {
    return `${IMPORTS}
      const root = b.openRoot(${JSON.stringify(dest)}, true, false);
      try { fs.statSync("/gjc-trace-begin"); } catch {}
      b.close(b.openFile(root, "created-file", true, false, 1, false));
      b.close(b.openDir(root, "created-dir", true, false));
      try { fs.statSync("/gjc-trace-end"); } catch {}
      b.close(root);
      return imports(${JSON.stringify(dest)}, [${requestsJson(dir, ["copied"])}]);`;
  }

  /** The repairing calls of the marked creations and of the import, under `umask`. */
  function repairsUnder(ctx: SkipContext, umask: number): { created: string[]; imported: string[]; dest: string } {
    const dir = source((d) => plant(d, "copied", "bytes"));
    const dest = path.join(tmp.path, `umask-dest-${n}`);
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
    const dir = source((d) => plant(d, "copied", "bytes"));
    const dest = path.join(tmp.path, `umask-modes-${n}`);
    const child = runChildScript(`process.umask(0o277);\n${creations(dest, dir)}`);
    expect(child.status, child.stderr).toBe(0);
    expect(JSON.parse(child.stdout)).toEqual([[0]]);
    const modes = ["", "created-file", "created-dir", "copied"].map((name) => fs.lstatSync(path.join(dest, name)).mode & 0o7777);
    expect(modes).toEqual([0o700, 0o600, 0o700, 0o600]);
    expect(fs.readFileSync(path.join(dest, "copied"), "utf8")).toBe("bytes");
  });

  it("a directory created in a set-group-ID parent (which passes the bit on) is repaired to exactly 0700", async (ctx) => {
    const dir = source((d) => plant(d, "copied", "bytes"));
    const root = destination();
    const held = root.openDir("setgid", { create: true });
    opened.push(held);
    fs.chmodSync(held.path, 0o2700);
    if ((fs.statSync(held.path).mode & 0o2000) === 0) skipBecause(ctx, "the kernel dropped the set-group-ID bit of this directory");
    fs.mkdirSync(path.join(held.path, "plain"), { mode: 0o700 });
    expect(fs.statSync(path.join(held.path, "plain")).mode & 0o7777).toBe(0o2700);
    const sub = held.openDir("created-dir", { create: true });
    opened.push(sub);
    expect(fs.statSync(sub.path).mode & 0o7777).toBe(0o700);
    expect(outcomes(await importAll(held, dir, [request(dir, "copied")]))).toEqual(["copied"]);
    expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
  });

  /** Sets a default ACL on `dir` with setfacl; skips when the tool or the file system cannot. */
  function setDefaultAcl(ctx: SkipContext, dir: string, spec: string): void {
    if (!hasCommand("setfacl")) skipBecause(ctx, "setfacl (Debian package acl) is not installed");
    const set = run("setfacl", ["-d", "-m", spec, dir]);
    if (set.status !== 0) skipBecause(ctx, `the file system under ${dir} does not store POSIX ACLs: ${set.stderr.trim()}`);
  }

  it("under a parent's default ACL, created files, directories and import copies come out without ACLs", async (ctx) => {
    const dir = source((d) => plant(d, "copied", "bytes"));
    const root = destination();
    const held = root.openDir("inheriting", { create: true });
    opened.push(held);
    // Set while held: the held handle goes on creating below it without re-checking it.
    setDefaultAcl(ctx, held.path, "u:65534:rwx,g::rwx,o::r");
    // Proof the ACL is inherited by a plain create.
    fs.writeFileSync(path.join(held.path, "plain"), "", { mode: 0o600 });
    expect(codeOf(() => held.openFile("plain"))).toBe("acl_present");
    expect(outcomes(await importAll(held, dir, [request(dir, "copied")]))).toEqual(["copied"]);
    held.openFile("created-file", { write: true, create: "exclusive" }).close();
    const sub = held.openDir("created-dir", { create: true });
    opened.push(sub);
    expect(sub.verify()).toEqual({ accessAcl: "absent", defaultAcl: "absent" });
    expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
    expectOwnerOnlyCopy(held, "created-file", Buffer.alloc(0));
    expect(fs.statSync(sub.path).mode & 0o7777).toBe(0o700);
    const getfacl = run("getfacl", ["-c", "-p", path.join(held.path, "copied"), path.join(held.path, "created-dir")]);
    if (getfacl.status === 0) expect(getfacl.stdout).not.toMatch(/^(user:\d|default:)/m);
  });

  it("a default ACL that takes the owner's write bit (the umask does not apply) is repaired to 0600", async (ctx) => {
    const dir = source((d) => plant(d, "copied", "bytes"));
    const root = destination();
    const held = root.openDir("read-only-default", { create: true });
    opened.push(held);
    setDefaultAcl(ctx, held.path, "u::r-x,g::---,o::---");
    fs.writeFileSync(path.join(held.path, "plain"), "");
    expect(fs.statSync(path.join(held.path, "plain")).mode & 0o777).toBe(0o400);
    expect(outcomes(await importAll(held, dir, [request(dir, "copied")]))).toEqual(["copied"]);
    expectOwnerOnlyCopy(held, "copied", Buffer.from("bytes"));
  });
});
