/**
 * GJC's blob-store classes over the main entry's {@link EngineBlobStore}: the same store with
 * GJC's checked install (`putImmutableSync`), a per-process resident cache that starts empty and
 * is removed when disposed ({@link EphemeralBlobStore}), and a bounded in-memory store for
 * sessions that never touch the disk ({@link MemoryBlobStore}). The file stores keep the
 * engine's rules: owner-only directory and files, reached by descriptor, whatever the umask.
 */
import path from "node:path";

import { SecureDir, SecureFsError } from "../fs/index.js";
import { BLOB_REF_PREFIX, sha256Hex } from "../session/index.js";
import { BlobStore as EngineBlobStore, StorageError, type BlobPutResult } from "../storage/index.js";
import { toStorageError } from "../storage/errors.js";

/** What {@link BlobStore.putImmutableSync} returns: the put's result and the blob's size. */
export interface CheckedBlobPutResult extends BlobPutResult {
  /** Size of the stored blob in bytes. */
  bytes: number;
}

/** The main entry's blob store with GJC's checked install. */
export class BlobStore extends EngineBlobStore {
  /**
   * Installs `data` durably (file and directory synced on return), like {@link EngineBlobStore.putSync},
   * except that a blob already there under the hash is verified and never replaced: a damaged
   * one is `blob_corrupt`, so a caller that only references blobs after this returns never
   * points a transcript at bytes it did not check.
   * @throws StorageError `blob_corrupt`, or as {@link EngineBlobStore.putSync}
   */
  putImmutableSync(data: Uint8Array): CheckedBlobPutResult {
    const hash = sha256Hex(data);
    if (this.getCheckedSync(hash) === null) this.putSync(data);
    return { hash, path: path.join(this.dir, hash), ref: BLOB_REF_PREFIX + hash, bytes: data.byteLength };
  }
}

/** How much an {@link EphemeralBlobStore} keeps in memory besides its directory. */
const RESIDENT_BUFFER_CACHE_MAX_BYTES = 8 * 1024 * 1024;
const CANONICAL_NAME = /^[0-9a-f]{64}$/;

/**
 * A blob store for one process's resident cache (GJC keeps externalized session text there
 * while a session is open): the directory is emptied (or made, with its missing parents, all
 * 0700) when the store is constructed, recent blobs stay in a bounded in-memory cache
 * (least recently used out first), and {@link EphemeralBlobStore.dispose} removes the directory.
 * Entries are removed by descriptor; anything in the directory that is not a blob file
 * (a subdirectory, a link) is refused, never followed.
 */
export class EphemeralBlobStore extends BlobStore {
  readonly #cache = new Map<string, Buffer>();
  #cachedBytes = 0;

  /**
   * @param dir the cache directory; emptied, or created owner-only with its missing parents
   * @throws StorageError `unsafe_entry` when the directory holds something other than blob files, or the fs failure
   */
  constructor(dir: string) {
    super(dir);
    const parent = openStoreRoot(path.dirname(this.dir), true);
    try {
      const held = guardBlobDir(this.dir, () => openOrCreateRepaired(parent, path.basename(this.dir)));
      try {
        emptyBlobDir(held, this.dir);
      } finally {
        held.close();
      }
    } finally {
      parent.close();
    }
  }

  /** {@link EngineBlobStore.put}, keeping the bytes in the in-memory cache. */
  override async put(data: Uint8Array): Promise<BlobPutResult> {
    const result = await super.put(data);
    this.#remember(result.hash, data);
    return result;
  }

  /** {@link EngineBlobStore.putSync}, keeping the bytes in the in-memory cache. */
  override putSync(data: Uint8Array): BlobPutResult {
    const result = super.putSync(data);
    this.#remember(result.hash, data);
    return result;
  }

  /** The blob's bytes from the in-memory cache when there (they hashed to `hash` when cached), else from the directory. */
  override getSync(hash: string): Buffer | null {
    const cached = this.getBufferedSync(hash);
    if (cached !== null) return cached;
    const bytes = super.getSync(hash);
    if (bytes !== null && sha256Hex(bytes) === hash) this.#remember(hash, bytes);
    return bytes;
  }

  /** The cached bytes of blob `hash` (a copy), or `null` when not cached; never touches the directory. */
  getBufferedSync(hash: string): Buffer | null {
    const cached = this.#cache.get(hash);
    if (cached === undefined) return null;
    this.#cache.delete(hash);
    this.#cache.set(hash, cached);
    return Buffer.from(cached);
  }

  /** Bytes held by the in-memory cache (at most 8 MiB). */
  get cachedBytes(): number {
    return this.#cachedBytes;
  }

  /** Empties the cache and the directory (which stays, owner-only). @throws StorageError as the constructor */
  clear(): void {
    this.#forget();
    const held = guardBlobDir(this.dir, () => SecureDir.openRoot(this.dir));
    try {
      emptyBlobDir(held, this.dir);
    } finally {
      held.close();
    }
  }

  /**
   * Empties the cache and removes the directory. The blobs go before this returns; the empty
   * directory is removed by the returned promise. A directory already gone is fine.
   */
  async dispose(): Promise<void> {
    this.#forget();
    this.close();
    const parent = openStoreRoot(path.dirname(this.dir), false);
    if (parent === undefined) return;
    try {
      const name = path.basename(this.dir);
      let held: SecureDir;
      try {
        held = parent.openDir(name);
      } catch (error) {
        if (error instanceof SecureFsError && error.code === "not_found") return;
        throw toStorageError(error, "write", this.dir);
      }
      try {
        emptyBlobDir(held, this.dir);
      } finally {
        held.close();
      }
      await guardBlobDirAsync(this.dir, () => parent.removeTreeAsync(name, { maxDepth: 1, maxEntries: 1 }));
      parent.sync();
    } finally {
      parent.close();
    }
  }

  #remember(hash: string, data: Uint8Array): void {
    const previous = this.#cache.get(hash);
    if (previous !== undefined) {
      this.#cache.delete(hash);
      this.#cachedBytes -= previous.byteLength;
    }
    if (data.byteLength > RESIDENT_BUFFER_CACHE_MAX_BYTES) return;
    this.#cache.set(hash, Buffer.from(data));
    this.#cachedBytes += data.byteLength;
    for (const [oldest, bytes] of this.#cache) {
      if (this.#cachedBytes <= RESIDENT_BUFFER_CACHE_MAX_BYTES) break;
      this.#cache.delete(oldest);
      this.#cachedBytes -= bytes.byteLength;
    }
  }

  #forget(): void {
    this.#cache.clear();
    this.#cachedBytes = 0;
  }
}

/** Options of {@link MemoryBlobStore}. */
export interface MemoryBlobStoreOptions {
  /**
   * `"cache"` (default): bounded, least recently used out first. `"canonical"`: the store is
   * the only copy of its session's blobs, so nothing is ever evicted.
   */
  readonly ownership?: "cache" | "canonical";
}

const MEMORY_MAX_BYTES = 64 * 1024 * 1024;
const MEMORY_MAX_COUNT = 4096;

/**
 * Blobs held in memory only, for sessions that are never persisted. As a cache it keeps at
 * most 4096 blobs and 64 MiB (the least recently put or read goes first, the newest always
 * stays); with `ownership: "canonical"` it keeps everything. Reads return copies.
 */
export class MemoryBlobStore extends BlobStore {
  /** Always `":memory:"`: there is no directory. */
  override readonly dir: string = ":memory:";
  readonly #blobs = new Map<string, Buffer>();
  readonly #canonical: boolean;
  #bytes = 0;

  constructor(options: MemoryBlobStoreOptions = {}) {
    super(":memory:");
    this.#canonical = options.ownership === "canonical";
  }

  /** Number of blobs held. */
  get size(): number {
    return this.#blobs.size;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Stores a copy of `data`; `path` of the result is `memory:<hash>`. */
  override async put(data: Uint8Array): Promise<BlobPutResult> {
    return this.putSync(data);
  }

  /** Synchronous {@link MemoryBlobStore.put}. */
  override putSync(data: Uint8Array): BlobPutResult {
    const hash = sha256Hex(data);
    this.#store(hash, Buffer.from(data));
    return { hash, path: `memory:${hash}`, ref: BLOB_REF_PREFIX + hash };
  }

  /** {@link MemoryBlobStore.putSync} with the size: bytes in memory were hashed as they came in, so there is nothing else to check. */
  override putImmutableSync(data: Uint8Array): CheckedBlobPutResult {
    return { ...this.putSync(data), bytes: data.byteLength };
  }

  /** A copy of blob `hash`, or `null`; a cache counts the read as a use. */
  override async get(hash: string): Promise<Buffer | null> {
    return this.getSync(hash);
  }

  /** Synchronous {@link MemoryBlobStore.get}. */
  override getSync(hash: string): Buffer | null {
    const data = this.#blobs.get(hash);
    if (data === undefined) return null;
    if (!this.#canonical) {
      this.#blobs.delete(hash);
      this.#blobs.set(hash, data);
    }
    return Buffer.from(data);
  }

  /** {@link MemoryBlobStore.getSync}, the bytes hashed again: `blob_corrupt` when they no longer match. */
  override async getChecked(hash: string): Promise<Buffer | null> {
    return this.getCheckedSync(hash);
  }

  /** Synchronous {@link MemoryBlobStore.getChecked}. */
  override getCheckedSync(hash: string): Buffer | null {
    const data = this.getSync(hash);
    if (data !== null && sha256Hex(data) !== hash) throw new StorageError("blob_corrupt", `blob ${hash} does not match its digest`, { path: `memory:${hash}` });
    return data;
  }

  /** Whether blob `hash` is held (not counted as a use). */
  override async has(hash: string): Promise<boolean> {
    return this.#blobs.has(hash);
  }

  #store(hash: string, data: Buffer): void {
    const previous = this.#blobs.get(hash);
    if (previous !== undefined) {
      this.#blobs.delete(hash);
      this.#bytes -= previous.byteLength;
    }
    this.#blobs.set(hash, data);
    this.#bytes += data.byteLength;
    if (this.#canonical) return;
    for (const [oldest, bytes] of this.#blobs) {
      if ((this.#bytes <= MEMORY_MAX_BYTES && this.#blobs.size <= MEMORY_MAX_COUNT) || this.#blobs.size === 1) break;
      this.#blobs.delete(oldest);
      this.#bytes -= bytes.byteLength;
    }
  }
}

/** Unlinks every blob file in `held`; anything else there is refused. */
function emptyBlobDir(held: SecureDir, dir: string): void {
  const entries = guardBlobDir(dir, () => held.list());
  for (const { name, type } of entries) {
    if (type !== "file" || !(CANONICAL_NAME.test(name) || name.startsWith("."))) {
      throw new StorageError("unsafe_entry", `the resident blob cache ${dir} holds ${name}, which is not a blob file; it was left alone`, {
        path: path.join(dir, name),
      });
    }
    guardBlobDir(dir, () => held.unlink(name));
  }
  if (entries.length > 0) guardBlobDir(dir, () => held.sync());
}

/** Directory `name` of `parent`: made 0700, or when there, its mode fixed (it is about to be emptied anyway). */
function openOrCreateRepaired(parent: SecureDir, name: string): SecureDir {
  try {
    return parent.openDir(name, { repair: true });
  } catch (error) {
    if (error instanceof SecureFsError && error.code === "not_found") return parent.openDir(name, { create: true });
    throw error;
  }
}

function openStoreRoot(dir: string, create: true): SecureDir;
function openStoreRoot(dir: string, create: false): SecureDir | undefined;
function openStoreRoot(dir: string, create: boolean): SecureDir | undefined {
  try {
    return SecureDir.openRoot(dir, { create });
  } catch (error) {
    if (!create && error instanceof SecureFsError && error.code === "not_found") return undefined;
    throw toStorageError(error, "write", dir);
  }
}

function guardBlobDir<T>(dir: string, step: () => T): T {
  try {
    return step();
  } catch (error) {
    throw toStorageError(error, "write", dir);
  }
}

async function guardBlobDirAsync(dir: string, step: () => Promise<void>): Promise<void> {
  try {
    await step();
  } catch (error) {
    throw toStorageError(error, "write", dir);
  }
}
