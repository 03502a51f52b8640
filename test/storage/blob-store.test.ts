/**
 * BlobStore in the peer's shape: content addressing, durability before the reference is
 * written, checked reads, corruption detection and repair, the strict hash and reference
 * grammar, owner-only files reached through the held directory descriptor, and a round trip
 * of the inline-image peer fixture.
 */
import { createHash } from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore, SecureDir, isBlobRef, parseBlobRef } from "../../src/index.js";
import { externalizeImageBlobs, resolveBlobRefs } from "../../src/session/index.js";
import { isRoot, run } from "../helpers/processes.js";
import { makeTempDir } from "../helpers/temp.js";
import { asyncCodeOf, codeOf } from "./storages.js";

const fixtureFile = path.resolve(import.meta.dirname, "..", "fixtures", "peer-sessions", "pi-mono__compact-root__v1-inline-image-excerpt.jsonl");

const sha256 = (bytes: Uint8Array) => createHash("sha256").update(bytes).digest("hex");
const modeOf = (p: string) => fs.lstatSync(p).mode & 0o7777;

let tmp: ReturnType<typeof makeTempDir>;
let dir: string;
let blobs: BlobStore;

beforeEach(() => {
  tmp = makeTempDir("gjc-blobs-");
  dir = path.join(tmp.path, "agent", "blobs");
  fs.mkdirSync(path.dirname(dir), { mode: 0o700 });
  blobs = new BlobStore(dir);
});
afterEach(() => {
  blobs.close();
  tmp.remove();
});

describe("BlobStore", () => {
  it("stores content under its SHA-256, owner-only, and returns hash, path and ref", async () => {
    const bytes = Buffer.from("an image, say");
    expect(fs.existsSync(dir)).toBe(false);
    const put = await blobs.put(bytes);
    const hash = sha256(bytes);
    expect(put).toEqual({ hash, path: path.join(dir, hash), ref: `blob:sha256:${hash}` });
    // Durable and visible when put resolves: the referencing line may be written next.
    expect(fs.readFileSync(put.path).equals(bytes)).toBe(true);
    expect(modeOf(dir)).toBe(0o700);
    expect(modeOf(put.path)).toBe(0o600);
    expect((await blobs.get(hash))?.equals(bytes)).toBe(true);
    expect(blobs.getSync(hash)?.equals(bytes)).toBe(true);
    expect((await blobs.getChecked(hash))?.equals(bytes)).toBe(true);
    expect(await blobs.has(hash)).toBe(true);
    expect(fs.readdirSync(dir)).toEqual([hash]);
    expect(blobs.putSync(Buffer.from("second"))).toMatchObject({ hash: sha256(Buffer.from("second")) });
  });

  it("never rewrites an intact blob", async () => {
    const bytes = Buffer.from([1, 2, 3]);
    const first = blobs.putSync(bytes);
    const before = fs.statSync(first.path);
    await blobs.put(bytes);
    blobs.putSync(bytes);
    const after = fs.statSync(first.path);
    expect([after.ino, after.mtimeMs]).toEqual([before.ino, before.mtimeMs]);
  });

  it("detects corruption on a checked read and repairs it on the next put of the same content", async () => {
    const bytes = Buffer.from("original content");
    const { hash, path: file } = await blobs.put(bytes);
    fs.writeFileSync(file, "tampered content");
    expect(await asyncCodeOf(() => blobs.getChecked(hash))).toBe("blob_corrupt");
    expect(codeOf(() => blobs.getCheckedSync(hash))).toBe("blob_corrupt");
    // The unchecked read returns what is stored, as the peer's does.
    expect((await blobs.get(hash))?.toString()).toBe("tampered content");
    await blobs.put(bytes);
    expect((await blobs.getChecked(hash))?.equals(bytes)).toBe(true);
    fs.writeFileSync(file, "tampered again");
    blobs.putSync(bytes);
    expect(blobs.getCheckedSync(hash)?.equals(bytes)).toBe(true);
  });

  it("reports a missing blob (or a missing directory) as null / false, creating nothing", async () => {
    const hash = sha256(Buffer.from("never stored"));
    expect(await blobs.get(hash)).toBeNull();
    expect(await blobs.getChecked(hash)).toBeNull();
    expect(await blobs.has(hash)).toBe(false);
    expect(fs.existsSync(dir)).toBe(false);
    await blobs.put(Buffer.from("something else"));
    expect(blobs.getSync(hash)).toBeNull();
  });

  it("accepts only 64 lowercase hex digits as a hash, and only the strict reference grammar", async () => {
    const hex = sha256(Buffer.from("x"));
    for (const bad of [hex.toUpperCase(), hex.slice(1), `${hex}0`, ` ${hex}`, `blob:sha256:${hex}`, "../../../../etc/passwd", "g".repeat(64), 7]) {
      expect(codeOf(() => blobs.getSync(bad as string))).toBe("invalid_blob_ref");
      expect(await asyncCodeOf(() => blobs.has(bad as string))).toBe("invalid_blob_ref");
    }
    expect(parseBlobRef(`blob:sha256:${hex}`)).toBe(hex);
    expect(isBlobRef(`blob:sha256:${hex}`)).toBe(true);
    for (const bad of [`blob:sha256:${hex.toUpperCase()}`, `blob:sha1:${hex}`, hex, ` blob:sha256:${hex}`, null, 3]) {
      expect(parseBlobRef(bad)).toBeNull();
      expect(isBlobRef(bad)).toBe(false);
    }
    expect(codeOf(() => new BlobStore(""))).toBe("invalid_argument");
  });

  it("round-trips the inline-image peer fixture through externalize and resolve", async () => {
    const entries = fs
      .readFileSync(fixtureFile, "utf8")
      .split("\n")
      .filter((line) => line !== "")
      .map((line) => JSON.parse(line) as unknown);
    const pending: Buffer[] = [];
    const externalized = entries.map((entry) => externalizeImageBlobs(entry, (bytes) => pending.push(bytes)));
    expect(pending.length).toBeGreaterThan(0);
    for (const bytes of pending) await blobs.put(bytes);
    const lines = externalized.map((entry) => JSON.stringify(entry));
    expect(lines.join("\n")).toMatch(/"data":"blob:sha256:[0-9a-f]{64}"/);
    const resolved = resolveBlobRefs(
      lines.map((line) => JSON.parse(line) as unknown),
      blobs.lookup(),
    );
    expect(resolved.unresolved).toEqual([]);
    expect(resolved.entries).toEqual(entries);
  });

  it("lets the session layer tell a missing blob from a corrupt one", async () => {
    const entry = {
      type: "message",
      id: "abcd1234",
      message: { role: "user", content: [{ type: "image", data: Buffer.alloc(2048, 7).toString("base64") }] },
    };
    const pending: Buffer[] = [];
    const externalized = externalizeImageBlobs(entry, (bytes) => pending.push(bytes));
    const { hash, path: file } = await blobs.put(pending[0] as Buffer);
    fs.writeFileSync(file, "not the image");
    expect(resolveBlobRefs([externalized], blobs.lookup()).unresolved).toEqual([{ entryId: "abcd1234", sha256: hash, reason: "digest_mismatch" }]);
    const other = new BlobStore(path.join(tmp.path, "empty-blobs"));
    expect(resolveBlobRefs([externalized], other.lookup()).unresolved).toEqual([{ entryId: "abcd1234", sha256: hash, reason: "missing" }]);
  });
});

describe("BlobStore on disk: links, owners and swaps", () => {
  it("refuses a symlinked blob directory and a planted link, hard link or FIFO as a blob, typed", async () => {
    const outside = path.join(tmp.path, "outside");
    fs.mkdirSync(outside, { mode: 0o700 });
    fs.symlinkSync(outside, dir);
    expect(await asyncCodeOf(() => blobs.put(Buffer.from("x")))).toBe("symlink_refused");
    expect(codeOf(() => blobs.getSync(sha256(Buffer.from("x"))))).toBe("symlink_refused");
    expect(fs.readdirSync(outside)).toEqual([]);
    fs.unlinkSync(dir);

    const good = blobs.putSync(Buffer.from("good"));
    const secret = path.join(outside, "secret");
    fs.writeFileSync(secret, "secret", { mode: 0o600 });
    const linked = sha256(Buffer.from("secret"));
    fs.symlinkSync(secret, path.join(dir, linked));
    expect(codeOf(() => blobs.getSync(linked))).toBe("symlink_refused");
    fs.unlinkSync(path.join(dir, linked));
    fs.linkSync(secret, path.join(dir, linked));
    expect(codeOf(() => blobs.getSync(linked))).toBe("unsafe_entry");
    // A put of that content does not write through the second link either.
    expect(codeOf(() => blobs.putSync(Buffer.from("secret")))).toBe("unsafe_entry");
    expect(fs.readFileSync(secret, "utf8")).toBe("secret");
    fs.unlinkSync(path.join(dir, linked));
    const fifo = sha256(Buffer.from("fifo"));
    expect(run("mkfifo", ["-m", "600", path.join(dir, fifo)]).status).toBe(0);
    expect(codeOf(() => blobs.getSync(fifo))).toBe("not_regular_file");
    fs.chmodSync(good.path, 0o644);
    expect(codeOf(() => blobs.getSync(good.hash))).toBe("unsafe_entry");
  });

  it("keeps using the held directory when its path is swapped for a link to an outside directory", async () => {
    const first = await blobs.put(Buffer.from("first"));
    const outside = path.join(tmp.path, "outside");
    fs.mkdirSync(outside, { mode: 0o700 });
    const moved = path.join(tmp.path, "agent", "moved-blobs");
    fs.renameSync(dir, moved);
    fs.symlinkSync(outside, dir);
    const second = await blobs.put(Buffer.from("second"));
    blobs.putSync(Buffer.from("third"));
    expect(blobs.getSync(first.hash)?.toString()).toBe("first");
    expect(fs.readdirSync(outside)).toEqual([]);
    expect(fs.readdirSync(moved).sort()).toEqual([first.hash, second.hash, sha256(Buffer.from("third"))].sort());
    // A new store on the path refuses the link.
    const fresh = new BlobStore(dir);
    expect(codeOf(() => fresh.getSync(first.hash))).toBe("symlink_refused");
  });

  it("opens below an already-held directory with inDirectory, never by path", async () => {
    const agent = SecureDir.openRoot(path.dirname(dir));
    try {
      const store = BlobStore.inDirectory(agent);
      const put = store.putSync(Buffer.from("pinned"));
      expect(put.path).toBe(path.join(dir, put.hash));
      expect(fs.readFileSync(put.path, "utf8")).toBe("pinned");
      expect(modeOf(dir)).toBe(0o700);
      store.close();
      // The agent dir path now leads elsewhere; the held parent still reaches the real one.
      const real = path.join(tmp.path, "real-agent");
      fs.renameSync(path.dirname(dir), real);
      fs.mkdirSync(path.dirname(dir), { mode: 0o700 });
      const again = BlobStore.inDirectory(agent);
      expect(again.getSync(put.hash)?.toString()).toBe("pinned");
      again.close();
    } finally {
      agent.close();
    }
  });

  it.skipIf(!isRoot())("refuses a blob directory or a blob owned by another user", async () => {
    const { hash, path: file } = blobs.putSync(Buffer.from("mine"));
    blobs.close();
    fs.chownSync(file, 65534, 65534);
    expect(codeOf(() => new BlobStore(dir).getSync(hash))).toBe("unsafe_entry");
    fs.chownSync(file, 0, 0);
    fs.chownSync(dir, 65534, 65534);
    const store = new BlobStore(dir);
    expect(await asyncCodeOf(() => store.put(Buffer.from("into theirs")))).toBe("unsafe_entry");
    expect(fs.readdirSync(dir)).toEqual([hash]);
  });
});
