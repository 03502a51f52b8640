/**
 * What a migration has written into staging, and making all of it durable before it is
 * published; reading managed files back for their hashes.
 */
import { createHash } from "node:crypto";

import type { FilesystemSyncOutcome, SecureDir } from "../fs/index.js";
import { TimeSlice } from "./time-slice.js";

/** Bytes read per call when copying or hashing. */
export const CHUNK_BYTES = 1 << 20;

/**
 * SHA-256 of the owner-only file `name` in `dir`, read back in chunks into `buffer`
 * (default: a fresh one of {@link CHUNK_BYTES}), giving the event loop a turn whenever
 * `slice` (default: one for this call) is used up.
 */
export async function hashManagedFile(
  dir: SecureDir,
  name: string,
  options: { readonly buffer?: Buffer; readonly slice?: TimeSlice } = {},
): Promise<{ size: number; sha256: string }> {
  const slice = options.slice ?? new TimeSlice();
  const file = dir.openFile(name);
  try {
    const hash = createHash("sha256");
    const buffer = options.buffer ?? Buffer.allocUnsafe(CHUNK_BYTES);
    let position = 0;
    for (;;) {
      const n = file.read(buffer, { position });
      hash.update(buffer.subarray(0, n));
      position += n;
      // A short read of a regular file is its end (a small file takes one read).
      if (n < buffer.byteLength) break;
      await slice.yieldIfDue();
    }
    return { size: position, sha256: hash.digest("hex") };
  } finally {
    file.close();
    // Thousands of small files in a row are one long run of synchronous reads otherwise.
    await slice.yieldIfDue();
  }
}

/** fsyncs in flight at once in the fallback: they overlap on the thread pool. */
const SYNC_CONCURRENCY = 8;

/** Runs `work` over `items` with at most `limit` in flight; the first failure wins. */
export async function pool<T>(items: readonly T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  let failure: unknown;
  const lane = async () => {
    while (failure === undefined && next < items.length) {
      const item = items[next++] as T;
      try {
        await work(item);
      } catch (error) {
        failure ??= error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  if (failure !== undefined) throw failure;
}

/**
 * Everything one attempt staged: the files and the directories holding them (the ones it
 * opened are closed by {@link StagedSet.close}).
 */
export class StagedSet {
  readonly #files: { readonly dir: SecureDir; readonly name: string }[] = [];
  readonly #dirs: SecureDir[] = [];
  readonly #owned = new Set<SecureDir>();

  /** Records a directory entries were staged in; with `own`, {@link StagedSet.close} closes it. */
  holdDir(dir: SecureDir, options: { readonly own: boolean }): void {
    this.#dirs.push(dir);
    if (options.own) this.#owned.add(dir);
  }

  /** Records file `name`, copied (and read back) into the held directory `dir`. */
  addFile(dir: SecureDir, name: string): void {
    this.#files.push({ dir, name });
  }

  /**
   * Makes every staged file's data and metadata and every staged directory entry durable;
   * resolves with how. `anchor` must be a directory on the staging file system that was
   * opened before the first staged write, so the file-system flush through it reports a
   * writeback error on any staged file (Linux records writeback errors per file system and
   * reports to syncfs those that happened since the descriptor was opened).
   *
   * One syncfs covers the data and metadata of every staged file and every directory entry
   * (the file system's journal commit and cache flush include them all), instead of an
   * fsync per file and per directory. Where that call is unsupported, each file and then
   * each directory is fsynced on its own descriptor, as before.
   */
  async makeDurable(anchor: SecureDir): Promise<FilesystemSyncOutcome> {
    const outcome = await anchor.syncFilesystemAsync();
    if (outcome === "unsupported") {
      await pool(this.#files, SYNC_CONCURRENCY, async (staged) => {
        const file = staged.dir.openFile(staged.name);
        try {
          await file.syncAsync();
        } finally {
          file.close();
        }
      });
      await pool(this.#dirs, SYNC_CONCURRENCY, (dir) => dir.syncAsync());
    }
    return outcome;
  }

  /** Closes the directories this set opened. Idempotent. */
  close(): void {
    for (const dir of this.#owned) dir.close();
    this.#owned.clear();
  }
}
