// The native import batch (SecureDir.importFilesAsync): many files of an unmanaged source
// directory copied owner-only in one thread-pool call, each only if it is still the exact
// version asked for; the first request that is neither copied nor deferred stops the batch.
// The cases that need a child process (fault shim, strace) and the create path shared with
// openFile/openDir are in import-batch-processes.test.ts.
// Re-run as an unprivileged uid by test/fs/unprivileged.test.ts.
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";

import { SecureFsError } from "../../src/index.js";
import { type ImportedFile, type ImportRequest } from "../../src/fs/index.js";
import { asyncCodeOf, codeOf } from "../helpers/errors.js";
import { isRoot, run, runWithAddon } from "../helpers/processes.js";
import { outcomes, useImportFixture } from "./import-fixture.js";

const fx = useImportFixture();

describe("importFilesAsync: copies", () => {
  it("copies files of several sizes and modes into owner-only copies holding the source bytes, with their SHA-256", async () => {
    const contents: Record<string, Buffer> = {
      empty: Buffer.alloc(0),
      one: Buffer.from("1"),
      "session.jsonl": Buffer.from('{"type":"session"}\n'.repeat(40)),
      big: Buffer.from(Array.from({ length: 70_003 }, (_, i) => (i * 7) % 251)),
    };
    const modes: Record<string, number> = { empty: 0o600, one: 0o400, "session.jsonl": 0o644, big: 0o664 };
    const dir = fx.source((d) => {
      for (const [name, bytes] of Object.entries(contents)) fx.plant(d, name, bytes, modes[name]);
    });
    const dest = fx.destination();
    const names = Object.keys(contents);
    const buffer = Buffer.alloc(1 << 20);
    const files = await fx.importAll(dest, dir, names.map((name) => fx.request(dir, name)), buffer);
    expect(outcomes(files)).toEqual(names.map(() => "copied"));
    let offset = 0;
    files.forEach((file, i) => {
      const bytes = contents[names[i] as string] as Buffer;
      expect(file.name).toBe(names[i]);
      expect(file.change).toBeUndefined();
      expect(file.error).toBeUndefined();
      expect(file.content?.equals(bytes), file.name).toBe(true);
      expect(file.sha256, file.name).toBe(createHash("sha256").update(bytes).digest("hex"));
      // A view of the caller's buffer, the copies back to back.
      expect(file.content?.buffer).toBe(buffer.buffer);
      expect(file.content?.byteOffset).toBe(buffer.byteOffset + offset);
      offset += bytes.length;
      fx.expectOwnerOnlyCopy(dest, file.name, bytes);
    });
    expect(fs.readdirSync(dest.path).sort()).toEqual([...names].sort());
    // The source is read, never changed.
    for (const name of names) expect(fs.readFileSync(path.join(dir, name)).equals(contents[name] as Buffer)).toBe(true);
    expect(fs.statSync(path.join(dir, "one")).mode & 0o777).toBe(0o400);
  });

  it("an empty request list does nothing and resolves to no results", async () => {
    const dir = fx.source(() => undefined);
    const dest = fx.destination();
    expect(await fx.importAll(dest, dir, [])).toEqual([]);
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("defers what does not fit in the rest of the buffer (size plus one byte), creating nothing for it, and goes on", async () => {
    const dir = fx.source((d) => {
      fx.plant(d, "hundred", Buffer.alloc(100, 0x61));
      fx.plant(d, "too-big", Buffer.alloc(101, 0x62));
      fx.plant(d, "empty", "");
      fx.plant(d, "one", "x");
    });
    const dest = fx.destination();
    // 101 bytes: "hundred" needs all of them; then an empty file still fits, one byte does not.
    const files = await fx.importAll(dest, dir, ["too-big", "hundred", "empty", "one"].map((name) => fx.request(dir, name)), Buffer.alloc(101));
    expect(outcomes(files)).toEqual(["deferred", "copied", "copied", "deferred"]);
    expect(files[0]?.content).toBeUndefined();
    expect(files[1]?.content?.equals(Buffer.alloc(100, 0x61))).toBe(true);
    expect(fs.readdirSync(dest.path).sort()).toEqual(["empty", "hundred"]);
    // With room the deferred ones copy too.
    const again = await fx.importAll(dest, dir, ["too-big", "one"].map((name) => fx.request(dir, name)), Buffer.alloc(103));
    expect(outcomes(again)).toEqual(["copied", "copied"]);
    fx.expectOwnerOnlyCopy(dest, "too-big", Buffer.alloc(101, 0x62));
  });

  it("an unreadable source is unopenable (permission_denied) unless root reads it anyway", async () => {
    const dir = fx.source((d) => fx.plant(d, "locked", "secret", 0o000));
    const dest = fx.destination();
    const [file] = await fx.importAll(dest, dir, [fx.request(dir, "locked")]);
    if (isRoot()) {
      expect(file?.outcome).toBe("copied");
      fx.expectOwnerOnlyCopy(dest, "locked", Buffer.from("secret"));
    } else {
      expect([file?.outcome, file?.change, file?.error?.code, file?.error?.errnoName]).toEqual(["changed", "unopenable", "permission_denied", "EACCES"]);
      expect(fs.readdirSync(dest.path)).toEqual([]);
    }
  });
});

/** Imports ["first", `bad`, "later"] and checks the batch stopped at `bad` with nothing of it created. */
async function expectStopsAt(dir: string, bad: ImportRequest): Promise<ImportedFile> {
  const dest = fx.destination();
  const files = await fx.importAll(dest, dir, [fx.request(dir, "first"), bad, fx.request(dir, "later")]);
  expect(outcomes(files), bad.name).toEqual(["copied", files[1]?.outcome, "skipped"]);
  expect(files[2]?.content).toBeUndefined();
  expect(fs.readdirSync(dest.path), bad.name).toEqual(["first"]);
  return files[1] as ImportedFile;
}

function sourceWithNeighbours(fill: (dir: string) => void): string {
  return fx.source((d) => {
    fx.plant(d, "first", "first bytes");
    fx.plant(d, "later", "later bytes");
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
      const file = await expectStopsAt(dir, fx.request(dir, name));
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
      const file = await expectStopsAt(dir, fx.request(dir, name));
      expect([file.outcome, file.change, file.error], name).toEqual(["changed", "not_regular", undefined]);
    }
  });

  it("a hard-linked source is hardlink", async () => {
    const dir = sourceWithNeighbours((d) => {
      fx.plant(d, "linked", "shared");
      fs.linkSync(path.join(d, "linked"), path.join(d, "other-name"));
    });
    // Requested as it is now (linking changed its ctime), so only the link count differs.
    const file = await expectStopsAt(dir, fx.request(dir, "linked"));
    expect([file.outcome, file.change]).toEqual(["changed", "hardlink"]);
  });

  it("another version than requested (size, mtime, ctime, inode, device) is before_copy", async () => {
    const dir = sourceWithNeighbours((d) => fx.plant(d, "f", "version one"));
    const now = fx.request(dir, "f");
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
    const dir = sourceWithNeighbours((d) => fx.plant(d, "f", "old"));
    const recorded = fx.request(dir, "f");
    fx.plant(dir, "f.new", "new");
    fs.renameSync(path.join(dir, "f.new"), path.join(dir, "f"));
    const file = await expectStopsAt(dir, recorded);
    expect([file.outcome, file.change]).toEqual(["changed", "before_copy"]);
  });

  it("a missing source is unopenable (not_found, ENOENT)", async () => {
    const dir = sourceWithNeighbours((d) => fx.plant(d, "gone", "x"));
    const recorded = fx.request(dir, "gone");
    fs.unlinkSync(path.join(dir, "gone"));
    const file = await expectStopsAt(dir, recorded);
    expect([file.outcome, file.change, file.error?.code, file.error?.errnoName]).toEqual(["changed", "unopenable", "not_found", "ENOENT"]);
  });
});

describe("importFilesAsync: a copy that cannot be made stops the batch", () => {
  it("a destination name that exists is failed (already_exists) and the existing file is untouched", async () => {
    const dir = sourceWithNeighbours((d) => fx.plant(d, "taken", "from the source"));
    const dest = fx.destination();
    dest.writeFileAtomic("taken", "already here");
    const before = fs.statSync(path.join(dest.path, "taken"), { bigint: true });
    const files = await fx.importAll(dest, dir, ["first", "taken", "later"].map((name) => fx.request(dir, name)));
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
    const dest = fx.destination();
    const first = fx.request(dir, "first");
    for (const name of ["../first", "a/b", ".", "..", ""]) {
      const files = await fx.importAll(dest, dir, [{ ...first, name }, fx.request(dir, "later")]);
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
    const dest = fx.destination();
    const id = fx.idOf(dir);
    const requests = [fx.request(dir, "first")];
    for (const wrong of [{ ...id, ino: id.ino + 1n }, { ...id, dev: id.dev + 1n }, fx.idOf(fx.tmp)]) {
      expect(await asyncCodeOf(() => dest.importFilesAsync(dir, wrong, requests, Buffer.alloc(64)))).toBe("identity_mismatch");
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("a source path that is a link, a file or missing is refused without following it", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = fx.destination();
    const requests = [fx.request(dir, "first")];
    const link = path.join(fx.tmp, `link-to-${path.basename(dir)}`);
    fs.symlinkSync(dir, link);
    // The link's target has the right identity, so only the refusal to follow stops it; the
    // import names it as openRoot/openDir do.
    const cases: [string, string][] = [
      [link, "symlink_refused"],
      [path.join(dir, "first"), "not_directory"],
      [path.join(dir, "missing"), "not_found"],
    ];
    for (const [where, code] of cases) {
      expect(await asyncCodeOf(() => dest.importFilesAsync(where, fx.idOf(dir), requests, Buffer.alloc(64))), where).toBe(code);
    }
    expect(fs.readdirSync(dest.path)).toEqual([]);
  });

  it("a relative source, a non-Buffer buffer, a bad size and fields of the wrong type are invalid_argument, not a TypeError", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = fx.destination();
    const ok = fx.request(dir, "first");
    const id = fx.idOf(dir);
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
    const dest = path.join(fx.tmp, `raw-dest-${fx.unique()}`);
    const { dev, ino } = fx.idOf(dir);
    const codes = runWithAddon<string[]>(
      `const root = b.openRoot(${JSON.stringify(dest)}, { create: true });
       const src = ${JSON.stringify(dir)};
       const id = BigUint64Array.of(${dev}n, ${ino}n);
       const one = new BigInt64Array(5);
       const buf = new Uint8Array(8);
       const file = b.openFile(root, "f", { write: true, create: "exclusive" });
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
    const dest = fx.destination();
    dest.close();
    expect(await asyncCodeOf(() => dest.importFilesAsync(dir, fx.idOf(dir), [fx.request(dir, "first")], Buffer.alloc(64)))).toBe("closed");
  });

  it("keeps the destination open until the batch settles when it is closed meanwhile", async () => {
    const dir = sourceWithNeighbours(() => undefined);
    const dest = fx.destination();
    const pending = dest.importFilesAsync(dir, fx.idOf(dir), [fx.request(dir, "first"), fx.request(dir, "later")], Buffer.alloc(64));
    dest.close();
    const files = await pending;
    expect(files === "unsupported" ? files : outcomes(files)).toEqual(["copied", "copied"]);
    expect(fs.readFileSync(path.join(dest.path, "later"), "utf8")).toBe("later bytes");
    expect(codeOf(() => dest.stat())).toBe("closed");
  });
});
