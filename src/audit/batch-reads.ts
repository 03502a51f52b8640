/**
 * How the audit walk reads directories in batches: the buffers the contents land in, and
 * the read-ahead that lets the addon read the next directory on the thread pool while the
 * content checks work through this one.
 */
import { SecureFsError, type DirectoryBatch, type PendingBatch, type SecureDir } from "../fs/index.js";

/**
 * Files up to this size come back whole from the directory batch. One byte under the
 * content checks' read chunk, so a batch-read file is exactly what one chunked read returns
 * and both paths see the same bytes in the same pieces.
 */
export const BATCH_MAX_FILE_BYTES = 256 * 1024 - 1;
const BATCH_FIRST_BYTES = 1024 * 1024;
const BATCH_MAX_BYTES = 32 * 1024 * 1024;
// A batch given no room reads no file: each is then opened one by one.
const NO_ROOM = Buffer.alloc(0);

/**
 * Content buffers by depth. A buffer is in use from the start of its directory's batch until
 * the walk of that directory returns (its files' content views must stay valid while the
 * walk descends into subdirectories), so a depth holds at most two: the directory being
 * walked and the next one being read ahead. A directory that left files deferred makes the
 * next buffers of its depth bigger (up to a bound).
 */
export class BatchBuffers {
  readonly #free: Buffer[][] = [];
  readonly #size: number[] = [];
  readonly #enabled: boolean;

  /** Without `enabled`, every buffer has no room: every file is read one by one. */
  constructor(enabled: boolean) {
    this.#enabled = enabled;
  }

  get enabled(): boolean {
    return this.#enabled;
  }

  take(depth: number): Buffer {
    if (!this.#enabled) return NO_ROOM;
    return this.#free[depth]?.pop() ?? Buffer.allocUnsafe(this.#size[depth] ?? BATCH_FIRST_BYTES);
  }

  give(depth: number, buffer: Buffer, deferred: boolean): void {
    if (!this.#enabled) return;
    const size = this.#size[depth] ?? BATCH_FIRST_BYTES;
    if (deferred) this.#size[depth] = Math.min(Math.max(size, buffer.length * 4), BATCH_MAX_BYTES);
    if (buffer.length >= (this.#size[depth] ?? size)) (this.#free[depth] ??= []).push(buffer);
  }
}

/** A directory opened ahead of its turn, with its batch running on the thread pool. */
export interface ReadAhead {
  /** Its index in the parent's batch. */
  readonly index: number;
  readonly dir: SecureDir;
  readonly pending: PendingBatch;
  readonly buffer: Buffer;
}

/**
 * Opens directory entry `index` of `parent` quietly (nothing recorded: a refusal is left to
 * the walk, which opens it again in its turn and reports it) and starts its batch. Returns
 * `undefined` when it cannot be opened or started.
 */
export function readAhead(parent: SecureDir, batch: DirectoryBatch, index: number, depth: number, buffers: BatchBuffers): ReadAhead | undefined {
  let dir: SecureDir;
  try {
    dir = parent.openDir(batch.name(index));
  } catch (error) {
    if (error instanceof SecureFsError) return undefined;
    throw error;
  }
  const buffer = buffers.take(depth);
  try {
    return { index, dir, buffer, pending: dir.startReadBatch({ maxFileBytes: BATCH_MAX_FILE_BYTES, buffer }) };
  } catch (error) {
    dir.close();
    buffers.give(depth, buffer, false);
    if (error instanceof SecureFsError) return undefined;
    throw error;
  }
}

/** Waits for a read-ahead nobody will walk, and lets go of it. */
export function dropReadAhead(ahead: ReadAhead, depth: number, buffers: BatchBuffers): void {
  try {
    ahead.pending.finish();
  } catch (error) {
    if (!(error instanceof SecureFsError)) throw error;
  } finally {
    ahead.dir.close();
    buffers.give(depth, ahead.buffer, false);
  }
}

/** Reads `dir` in one batch now, with a buffer of `depth`. */
export function readNow(dir: SecureDir, depth: number, buffers: BatchBuffers): { batch: DirectoryBatch; buffer: Buffer } {
  const buffer = buffers.take(depth);
  try {
    const maxFileBytes = buffers.enabled ? BATCH_MAX_FILE_BYTES : 0;
    return { batch: dir.readBatch({ maxFileBytes, buffer }), buffer };
  } catch (error) {
    buffers.give(depth, buffer, false);
    throw error;
  }
}
