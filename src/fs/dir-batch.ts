/**
 * DirectoryBatch: one directory listed and its regular files examined in a single addon
 * call (see {@link SecureDir.readBatch}). The result stays in the flat arrays the addon
 * returned and the contents in the caller's buffer; accessors read one entry at a time, so
 * a walk allocates per entry only what it asks for.
 */
import path from "node:path";

import { native, type NativeBatchJob, type NativeDirBatch, type NativeEntryType } from "../native/index.js";
import { unwrap } from "./call.js";
import { errorFromFailure, type SecureFsError } from "./errors.js";
import type { SecureStat } from "./types.js";

/**
 * What the batch did with an entry: `not_file` (not a regular file by its directory entry:
 * only stat'ed), `read` (passed the owner-only open; {@link DirectoryBatch.content} holds it
 * whole), `too_large` (passed, but bigger than the bound or growing: not read), `deferred`
 * (passed, but did not fit in the rest of the buffer: not read), `refused`
 * ({@link DirectoryBatch.failure} says why).
 */
export type BatchOutcome = "not_file" | "read" | "too_large" | "deferred" | "refused";

/** Bounds of {@link SecureDir.readBatch}. */
export interface ReadBatchOptions {
  /** Files holding more than this are `too_large` and not read. */
  readonly maxFileBytes: number;
  /**
   * Where the contents go, back to back (a file needs its size plus one byte of room). The
   * batch's content views point into it: they are valid until the buffer is used again.
   */
  readonly buffer: Buffer;
}

// The addon's layout (src/native/binding.d.cts `NativeDirBatch`).
const FIELDS = 11;
const TYPE = 0;
const OUTCOME = 1;
const STAT_TYPE = 2;
const MODE = 3;
const UID = 4;
const NLINK = 5;
const SIZE = 6;
const MTIME = 7;
const CTIME = 8;
const OFFSET = 9;
const LENGTH = 10;
const TYPES: readonly NativeEntryType[] = ["file", "directory", "symlink", "fifo", "socket", "char_device", "block_device", "unknown"];
const OUTCOMES: readonly BatchOutcome[] = ["not_file", "read", "too_large", "deferred", "refused"];
const READ = 1;
const REFUSED = 4;

/** The entries of one directory with what the owner-only batch found for each. */
export class DirectoryBatch {
  readonly #batch: NativeDirBatch;
  readonly #buffer: Buffer;
  readonly #dirPath: string;
  // Entry index -> index into `failures`, only for refused entries.
  readonly #failureOf = new Map<number, number>();
  /** The number of entries (without `.` and `..`). */
  readonly length: number;

  /** @internal Made by {@link SecureDir.readBatch}. */
  constructor(batch: NativeDirBatch, buffer: Buffer, dirPath: string) {
    this.#batch = batch;
    this.#buffer = buffer;
    this.#dirPath = dirPath;
    this.length = batch.names.length;
    for (let i = 0, k = 0; i < this.length; i++) {
      if (batch.info[i * FIELDS + OUTCOME] === REFUSED) this.#failureOf.set(i, k++);
    }
  }

  /** The entry's name. */
  name(i: number): string {
    return this.#batch.names[i] as string;
  }

  /** The type its directory entry gives (what {@link SecureDir.list} reports). */
  type(i: number): NativeEntryType {
    return TYPES[this.#number(i, TYPE)] ?? "unknown";
  }

  /** What the batch did with the entry. */
  outcome(i: number): BatchOutcome {
    return OUTCOMES[this.#number(i, OUTCOME)] as BatchOutcome;
  }

  /**
   * The entry's metadata: of the open handle for a file that passed the owner-only open,
   * else the no-follow stat of its name; `undefined` when not even that succeeded.
   */
  stat(i: number): SecureStat | undefined {
    const type = this.#number(i, STAT_TYPE);
    if (type < 0) return undefined;
    const ids = this.#batch.ids;
    return {
      type: TYPES[type] ?? "unknown",
      dev: String(ids[i * 2]),
      ino: String(ids[i * 2 + 1]),
      size: this.#number(i, SIZE),
      nlink: this.#number(i, NLINK),
      mode: this.#number(i, MODE),
      uid: this.#number(i, UID),
      mtimeMs: this.#number(i, MTIME),
      ctimeMs: this.#number(i, CTIME),
    };
  }

  /** The whole content of a `read` entry (a view into the caller's buffer), else `undefined`. */
  content(i: number): Buffer | undefined {
    if (this.#number(i, OUTCOME) !== READ) return undefined;
    const offset = this.#number(i, OFFSET);
    return this.#buffer.subarray(offset, offset + this.#number(i, LENGTH));
  }

  /** Why a `refused` entry was refused, as the error the ordinary open would throw; else `undefined`. */
  failure(i: number): SecureFsError | undefined {
    const k = this.#failureOf.get(i);
    if (k === undefined) return undefined;
    return errorFromFailure(this.#batch.failures[k] as NativeDirBatch["failures"][number], "readBatch", path.join(this.#dirPath, this.name(i)));
  }

  #number(i: number, field: number): number {
    return this.#batch.info[i * FIELDS + field] as number;
  }
}

/**
 * A directory batch running on the thread pool while the caller does other work (see
 * {@link SecureDir.startReadBatch}). Its buffer must not be touched until it is finished.
 */
export class PendingBatch {
  readonly #job: NativeBatchJob;
  readonly #buffer: Buffer;
  readonly #dirPath: string;

  /** @internal Made by {@link SecureDir.startReadBatch}. */
  constructor(job: NativeBatchJob, buffer: Buffer, dirPath: string) {
    this.#job = job;
    this.#buffer = buffer;
    this.#dirPath = dirPath;
  }

  /**
   * Waits for the batch (blocking, if it is still running) and returns it. Throws what
   * {@link SecureDir.readBatch} would have; `closed` when already finished once.
   */
  finish(): DirectoryBatch {
    return new DirectoryBatch(unwrap(native.readDirBatchFinish(this.#job), "readBatch", this.#dirPath), this.#buffer, this.#dirPath);
  }
}

