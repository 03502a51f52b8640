/**
 * What a migration has written into staging, and making all of it durable before it is
 * published; reading managed files back for their hashes.
 */
import { createHash } from "node:crypto";

import type { FilesystemSyncOutcome, SecureDir, SecureFile } from "../fs/index.js";
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
    return await hashOpenFile(file, options.buffer ?? Buffer.allocUnsafe(CHUNK_BYTES), slice);
  } finally {
    file.close();
    // Thousands of small files in a row are one long run of synchronous reads otherwise.
    await slice.yieldIfDue();
  }
}

/** SHA-256 and size of everything in the open `file`, read from its start in chunks into `buffer`. */
export async function hashOpenFile(file: SecureFile, buffer: Buffer, slice: TimeSlice): Promise<{ size: number; sha256: string }> {
  const hash = createHash("sha256");
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
 * Staged bytes that start a flush of the file system while copying goes on: the disk then
 * writes earlier data while later data is still being copied, and the flush before
 * publication only waits for what is left.
 */
export const FLUSH_AHEAD_BYTES = 32 << 20;

/**
 * Everything one attempt staged: the files and the directories holding them (the ones it
 * opened are closed by {@link StagedSet.close}), and the flushes started while staging.
 *
 * `anchor` must be a directory on the staging file system that was opened before the first
 * staged write, so a file-system flush through it reports a writeback error on any staged
 * file (Linux records writeback errors per file system and reports to syncfs those that
 * happened since the descriptor was opened). Every flush through it consumes the errors it
 * reports, so a failed early flush fails the attempt as a failed last one would.
 */
export class StagedSet {
  readonly #anchor: SecureDir;
  readonly #files: { readonly dir: SecureDir; readonly name: string }[] = [];
  readonly #dirs: SecureDir[] = [];
  readonly #owned = new Set<SecureDir>();
  #unflushed = 0;
  #flushing: Promise<void> | undefined;
  #flushFailure: { readonly error: unknown } | undefined;
  /** The platform has no file-system flush: {@link StagedSet.makeDurable} fsyncs each entry. */
  #noFilesystemFlush = false;

  constructor(anchor: SecureDir) {
    this.#anchor = anchor;
  }

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
   * Counts `bytes` just staged. Once enough are unflushed and no flush is running, one is
   * started in the background (on the thread pool); its failure is kept for
   * {@link StagedSet.makeDurable}.
   */
  wrote(bytes: number): void {
    this.#unflushed += bytes;
    if (this.#flushing !== undefined || this.#noFilesystemFlush || this.#flushFailure !== undefined || this.#unflushed < FLUSH_AHEAD_BYTES) return;
    this.#unflushed = 0;
    this.#flushing = this.#anchor.syncFilesystemAsync().then(
      (outcome) => {
        if (outcome === "unsupported") this.#noFilesystemFlush = true;
        this.#flushing = undefined;
      },
      (error: unknown) => {
        this.#flushFailure = { error };
        this.#flushing = undefined;
      },
    );
  }

  /**
   * Makes every staged file's data and metadata and every staged directory entry durable;
   * resolves with how. Call it once everything is staged.
   *
   * One syncfs covers the data and metadata of every staged file and every directory entry
   * (the file system's journal commit and cache flush include them all), instead of an
   * fsync per file and per directory. Where that call is unsupported, each file and then
   * each directory is fsynced on its own descriptor.
   */
  async makeDurable(): Promise<FilesystemSyncOutcome> {
    await this.settle();
    if (this.#flushFailure !== undefined) throw this.#flushFailure.error;
    const outcome = await this.#anchor.syncFilesystemAsync();
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

  /** Waits for a flush started by {@link StagedSet.wrote} to finish; never rejects. */
  async settle(): Promise<void> {
    while (this.#flushing !== undefined) await this.#flushing;
  }

  /** Closes the directories this set opened. Idempotent. */
  close(): void {
    for (const dir of this.#owned) dir.close();
    this.#owned.clear();
  }
}
