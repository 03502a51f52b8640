/**
 * GJC's blob-store classes on the `/gjc` entry: the checked install of the file store, the
 * resident cache (emptied when made, owner-only under a permissive umask, bounded buffer cache,
 * removed on dispose, refusing what it did not put there), and the in-memory store's bound.
 */
import crypto from "node:crypto";
import fs from "node:fs";
import path from "node:path";

import { afterEach, beforeEach, describe, expect, it } from "vitest";

import { BlobStore, EphemeralBlobStore, MemoryBlobStore, StorageError } from "../../src/gjc/index.js";
import { makeTempDir } from "../helpers/temp.js";

let tmp: { path: string; remove(): void };

beforeEach(() => {
  tmp = makeTempDir("gjc-blob-stores-");
});
afterEach(() => tmp.remove());

/** A screenshot-sized image: a PNG signature and `size` bytes that differ per seed. */
function screenshot(seed: number, size = 256 * 1024): Buffer {
  const body = Buffer.alloc(size).fill(crypto.createHash("sha512").update(String(seed)).digest());
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), body]);
}

const mode = (p: string): number => fs.statSync(p).mode & 0o777;

function withUmask<T>(mask: number, run: () => T): T {
  const previous = process.umask(mask);
  try {
    return run();
  } finally {
    process.umask(previous);
  }
}

describe("BlobStore.putImmutableSync", () => {
  it("installs a blob owner-only under a permissive umask and reports its size", () => {
    const dir = path.join(tmp.path, "blobs");
    const image = screenshot(1);
    const put = withUmask(0o002, () => new BlobStore(dir).putImmutableSync(image));
    expect(put.hash).toBe(crypto.createHash("sha256").update(image).digest("hex"));
    expect(put.ref).toBe(`blob:sha256:${put.hash}`);
    expect(put.bytes).toBe(image.byteLength);
    expect(fs.readFileSync(put.path).equals(image)).toBe(true);
    if (process.platform !== "win32") {
      expect(mode(dir)).toBe(0o700);
      expect(mode(put.path)).toBe(0o600);
    }
  });

  it("accepts an intact blob already there and refuses a damaged one without replacing it", () => {
    const dir = path.join(tmp.path, "blobs");
    const store = new BlobStore(dir);
    const image = screenshot(2);
    const first = store.putImmutableSync(image);
    expect(store.putImmutableSync(image)).toEqual(first);

    const damaged = Buffer.from(image);
    damaged[damaged.length - 1] = damaged.at(-1)! ^ 0xff;
    fs.writeFileSync(first.path, damaged);
    const fresh = new BlobStore(dir);
    expect(() => fresh.putImmutableSync(image)).toThrow(expect.objectContaining({ code: "blob_corrupt" }));
    expect(fs.readFileSync(first.path).equals(damaged)).toBe(true);
  });
});

describe("EphemeralBlobStore", () => {
  it("makes the cache directory and its missing parents owner-only under a permissive umask", () => {
    const cacheDir = path.join(tmp.path, "stem", "resident-cache", "inst-1");
    const { path: blobPath } = withUmask(0o002, () => new EphemeralBlobStore(cacheDir).putSync(screenshot(3)));
    if (process.platform !== "win32") {
      expect(mode(cacheDir)).toBe(0o700);
      expect(mode(path.dirname(cacheDir))).toBe(0o700);
      expect(mode(blobPath)).toBe(0o600);
    }
  });

  it("starts empty: blobs a previous run left are removed when the store is made", () => {
    const cacheDir = path.join(tmp.path, "resident-cache", "inst-1");
    const earlier = new EphemeralBlobStore(cacheDir).putSync(screenshot(4));
    const store = new EphemeralBlobStore(cacheDir);
    expect(fs.existsSync(earlier.path)).toBe(false);
    expect(store.getSync(earlier.hash)).toBeNull();
  });

  it("fixes the mode of a cache directory an older run left loose before emptying it", () => {
    const cacheDir = path.join(tmp.path, "resident-cache");
    fs.mkdirSync(cacheDir, { mode: 0o755 });
    fs.chmodSync(cacheDir, 0o755);
    fs.writeFileSync(path.join(cacheDir, "a".repeat(64)), "left over", { mode: 0o600 });
    new EphemeralBlobStore(cacheDir);
    expect(fs.readdirSync(cacheDir)).toEqual([]);
    if (process.platform !== "win32") expect(mode(cacheDir)).toBe(0o700);
  });

  it("refuses a cache directory holding something it never puts there, and leaves it alone", () => {
    const cacheDir = path.join(tmp.path, "resident-cache");
    fs.mkdirSync(path.join(cacheDir, "nested"), { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(tmp.path, "precious"), "not a blob");
    fs.symlinkSync(path.join(tmp.path, "precious"), path.join(cacheDir, "b".repeat(64)));
    let thrown: unknown;
    try {
      new EphemeralBlobStore(cacheDir);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(StorageError);
    expect((thrown as StorageError).code).toBe("unsafe_entry");
    expect(fs.readFileSync(path.join(tmp.path, "precious"), "utf8")).toBe("not a blob");
    expect(fs.existsSync(path.join(cacheDir, "nested"))).toBe(true);
  });

  it("serves recent blobs from a bounded memory cache, least recently used out first", () => {
    const cacheDir = path.join(tmp.path, "resident-cache");
    const store = new EphemeralBlobStore(cacheDir);
    // 40 tool outputs of 256 KiB: 10 MiB, past the 8 MiB cache.
    const puts = Array.from({ length: 40 }, (_, i) => store.putSync(screenshot(100 + i)));
    expect(store.cachedBytes).toBeLessThanOrEqual(8 * 1024 * 1024);
    expect(store.getBufferedSync(puts[0]!.hash)).toBeNull();
    expect(store.getBufferedSync(puts[39]!.hash)?.equals(screenshot(139))).toBe(true);
    // The oldest is still on disk: reading it brings it back into the cache.
    expect(store.getSync(puts[0]!.hash)?.equals(screenshot(100))).toBe(true);
    expect(store.getBufferedSync(puts[0]!.hash)?.equals(screenshot(100))).toBe(true);
    // A copy is returned: changing it changes nothing held.
    store.getBufferedSync(puts[39]!.hash)!.fill(0);
    expect(store.getSync(puts[39]!.hash)?.equals(screenshot(139))).toBe(true);
  });

  it("clear() empties the cache and the directory; dispose() removes the directory", async () => {
    const cacheDir = path.join(tmp.path, "resident-cache");
    const store = new EphemeralBlobStore(cacheDir);
    const put = store.putSync(screenshot(5));
    store.clear();
    expect(fs.readdirSync(cacheDir)).toEqual([]);
    expect(store.getSync(put.hash)).toBeNull();
    expect(store.cachedBytes).toBe(0);

    store.putSync(screenshot(6));
    await store.dispose();
    expect(fs.existsSync(cacheDir)).toBe(false);
    await expect(store.dispose()).resolves.toBeUndefined();
  });
});

describe("MemoryBlobStore", () => {
  it("round-trips blobs with memory paths and never creates a directory", async () => {
    const store = new MemoryBlobStore();
    const image = screenshot(7);
    const put = store.putSync(image);
    expect(put).toEqual({ hash: crypto.createHash("sha256").update(image).digest("hex"), path: `memory:${put.hash}`, ref: `blob:sha256:${put.hash}` });
    expect(store.dir).toBe(":memory:");
    expect((await store.get(put.hash))?.equals(image)).toBe(true);
    expect(await store.has(put.hash)).toBe(true);
    expect(store.putImmutableSync(image).bytes).toBe(image.byteLength);
    expect(fs.existsSync(path.resolve(":memory:"))).toBe(false);
  });

  it("as a cache keeps at most 4096 blobs, evicting the least recently used", () => {
    const store = new MemoryBlobStore();
    const hot = store.putSync(Buffer.from("hot")).hash;
    const cold = store.putSync(Buffer.from("cold")).hash;
    for (let i = 0; i < 4094; i++) store.putSync(Buffer.from(`tool output ${i}`));
    expect(store.size).toBe(4096);
    expect(store.getSync(hot)?.toString()).toBe("hot");
    store.putSync(Buffer.from("one more"));
    expect(store.size).toBe(4096);
    expect(store.getSync(cold)).toBeNull();
    expect(store.getSync(hot)?.toString()).toBe("hot");
  });

  it("as a cache keeps at most 64 MiB, but always the newest blob", () => {
    const store = new MemoryBlobStore();
    const big = Array.from({ length: 3 }, (_, i) => store.putSync(screenshot(200 + i, 30 * 1024 * 1024)));
    expect(store.bytes).toBeLessThanOrEqual(64 * 1024 * 1024);
    expect(store.getSync(big[0]!.hash)).toBeNull();
    expect(store.getSync(big[2]!.hash)).not.toBeNull();
    const huge = store.putSync(screenshot(300, 70 * 1024 * 1024));
    expect(store.size).toBe(1);
    expect(store.getSync(huge.hash)).not.toBeNull();
  });

  it("as the canonical store keeps every blob", () => {
    const store = new MemoryBlobStore({ ownership: "canonical" });
    const hashes = Array.from({ length: 4104 }, (_, i) => store.putSync(Buffer.from(`canonical ${i}`)).hash);
    expect(store.size).toBe(4104);
    expect(store.getSync(hashes[0]!)?.toString()).toBe("canonical 0");
  });
});
