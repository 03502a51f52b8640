/**
 * One session file's way to disk: full writes, appends, flushes, and the latched first failure. Appends run synchronously
 * while nothing is queued, so a killed process loses nothing it was told was appended; full writes go on one promise
 * chain, and appends made meanwhile queue behind them in call order.
 */
import path from "node:path";

import { GjcError } from "../errors.js";
import type { SessionStorageWriter } from "../storage/index.js";
import { announceSession } from "./continuation.js";
import { errorCodeOf, SessionManagerError } from "./errors.js";
import { indexWrittenFile, type AppendedKeys, type LineIndexAppender } from "./line-index.js";
import type { ResolvedOptions } from "./options.js";

function ignore(): void {}

/** Persistence of one session file; see the module comment. */
export class SessionPersistence {
  readonly path: string;
  readonly #options: ResolvedOptions;
  /** the session's cwd, for the breadcrumb written once the file exists */
  readonly #cwd: () => string | undefined;
  #writer: SessionStorageWriter | undefined;
  #chain: Promise<void> = Promise.resolve();
  #queued = 0;
  #error: SessionManagerError | undefined;
  #closed = false;
  /** The writer whose close failed before its descriptor was closed (`close_failed_retryable`): the next {@link close} tries it again. */
  #unclosed: SessionStorageWriter | undefined;
  #index: LineIndexAppender | undefined;

  /**
   * @param writer the file's writer when the caller already holds it (an opened file)
   * @param index the upkeep of the line index it was opened through: each append gets its row, a whole-file write restarts it, an append without keys ends it
   */
  constructor(options: ResolvedOptions, file: string, cwd: () => string | undefined, writer?: SessionStorageWriter, index?: LineIndexAppender) {
    this.#options = options;
    this.path = file;
    this.#cwd = cwd;
    this.#writer = writer;
    this.#index = index;
  }

  /** Whether this process holds the file's writer. */
  get hasWriter(): boolean {
    return this.#writer !== undefined;
  }

  /** @throws the latched {@link SessionManagerError} `persistence_failed` */
  check(): void {
    if (this.#error !== undefined) throw this.#error;
  }

  /**
   * Queues an atomic replacement of the whole file with `bytes`: a new file is published no-replace (never clobbering
   * one that appeared meanwhile), then its writer opened; an existing one is rewritten through its writer, under the lock.
   */
  writeAll(bytes: Buffer, options: { replaceExisting: boolean }): void {
    this.#dropIndex();
    this.#enqueue(async () => {
      // An upkeep started by a write queued before this one follows lines this one replaces.
      this.#dropIndex();
      if (this.#writer !== undefined) {
        await this.#writer.rewrite([bytes]);
        this.#indexWritten(this.#writer, bytes);
        return;
      }
      const { storage } = this.#options;
      storage.ensureDirSync(path.dirname(this.path));
      if (options.replaceExisting) {
        // The lock is taken before the replace and kept: a live writer elsewhere makes this
        // session_busy instead of losing its appends to a replaced file.
        this.#writer = storage.openWriter(this.path);
        await this.#writer.rewrite([bytes]);
      } else {
        await storage.writeText(this.path, bytes, { noReplace: true });
        this.#writer = storage.openWriter(this.path);
      }
      this.#published(bytes);
    });
  }

  /** {@link writeAll} of a file not opened yet, nothing queued, done before returning, for switches that promise a file on return. @throws the latched `persistence_failed` */
  writeAllNow(bytes: Buffer): void {
    this.check();
    this.#dropIndex();
    if (this.#writer !== undefined || this.#queued > 0) {
      throw this.fail(new SessionManagerError("persistence_failed", `${this.path} is already being written`, { path: this.path }));
    }
    try {
      const { storage } = this.#options;
      storage.ensureDirSync(path.dirname(this.path));
      storage.writeTextSync(this.path, bytes, { noReplace: true });
      this.#writer = storage.openWriter(this.path);
    } catch (error) {
      throw this.fail(error);
    }
    this.#published(bytes);
  }

  /** Appends one serialized record (no line feed); its `keys` go to the line index. */
  append(text: string, keys?: AppendedKeys): void {
    if (this.#error !== undefined) return;
    const writer = this.#writer;
    if (writer !== undefined && this.#queued === 0) {
      // Nothing queued: the writer has no rewrite pending, so the line is written now.
      let bytes: number;
      try {
        bytes = writer.writeLineSync(text);
      } catch (error) {
        this.fail(error);
        return;
      }
      this.#follow(text, bytes, keys);
      return;
    }
    this.#enqueue(async () => {
      if (this.#writer === undefined) throw new SessionManagerError("persistence_failed", `no writer for ${this.path}`, { path: this.path });
      // Each step awaits the rewrite it holds, so the writer has none pending here either.
      this.#follow(text, this.#writer.writeLineSync(text), keys);
    });
  }

  /** Gives the line index the row of a line just written (after it: a crash in between loses only the row). */
  #follow(text: string, bytes: number, keys: AppendedKeys | undefined): void {
    if (keys !== undefined) this.#index?.appended(text, bytes, keys);
    else this.#dropIndex();
  }

  /** Indexes the whole file just written as `bytes` through `writer` and keeps the index up from there (best effort). */
  #indexWritten(writer: SessionStorageWriter, bytes: Buffer): void {
    this.#index = indexWrittenFile(this.#options.storage, writer, this.path, bytes);
  }

  /** A new file now exists with `bytes` and this process holds its writer. */
  #published(bytes: Buffer): void {
    if (this.#writer !== undefined) this.#indexWritten(this.#writer, bytes);
    try {
      announceSession(this.#options, this.path, this.#cwd());
    } catch {
      // A breadcrumb is a convenience; it never costs the session.
    }
  }

  /** Waits for queued work, then syncs the file. No-op before the file exists. */
  async flush(): Promise<void> {
    this.check();
    await this.#chain;
    this.check();
    if (this.#writer === undefined) return;
    try {
      await this.#writer.flush();
    } catch (error) {
      throw this.fail(error);
    }
    // Rows go after their lines are synced and the name proved, so that proof covers them too.
    this.#index?.flush();
  }

  /**
   * Waits for queued work and releases the file; rethrows the latched failure after releasing. A writer whose close failed
   * before it closed its descriptor (`close_failed_retryable`) is kept, its failure thrown as it is and not latched: the
   * descriptor and its lock are still this process's, so the next call closes it again.
   */
  async close(): Promise<void> {
    if (!this.#closed) {
      this.#closed = true;
      await this.#chain;
      this.#unclosed = this.#detach();
    }
    const writer = this.#unclosed;
    if (writer !== undefined) {
      try {
        await writer.close();
        this.#unclosed = undefined;
      } catch (error) {
        if (writer.getCloseState() === "close_failed_retryable") throw error;
        this.#unclosed = undefined;
        this.fail(error);
      }
    }
    this.check();
  }

  /** Whether a {@link close} failed before the writer closed its descriptor, so calling it again retries that close. */
  get closeRetryable(): boolean {
    return this.#unclosed !== undefined;
  }

  /** Releases the file now when nothing is queued, for a synchronous hand-over to another manager of this process. @returns false, doing nothing, while queued work runs */
  closeNow(): boolean {
    if (this.#closed) return true;
    if (this.#queued > 0) return false;
    this.#closed = true;
    const writer = this.#detach();
    try {
      writer?.closeSync();
    } catch (error) {
      this.fail(error);
    }
    return true;
  }

  /** Closes the line index and hands over the writer to release. */
  #detach(): SessionStorageWriter | undefined {
    this.#index?.close();
    this.#index = undefined;
    const writer = this.#writer;
    this.#writer = undefined;
    return writer;
  }

  /** The line index can no longer follow the file (a full write, a queued append). */
  #dropIndex(): void {
    this.#index?.abandon();
    this.#index = undefined;
  }

  #enqueue(step: () => Promise<void>): void {
    this.#queued += 1;
    this.#chain = this.#chain
      .then(async () => {
        if (this.#error === undefined) await step();
      })
      .catch((error: unknown) => {
        this.fail(error);
      })
      .finally(() => {
        this.#queued -= 1;
      })
      .then(ignore, ignore);
  }

  /** Latches a failure (also one while preparing a write: serializing, blob put): keeps the first, logs it once with the file, and returns it. */
  fail(error: unknown): SessionManagerError {
    if (this.#error !== undefined) return this.#error;
    const latched =
      error instanceof SessionManagerError && error.code === "persistence_failed"
        ? error
        : new SessionManagerError("persistence_failed", `session persistence failed for ${this.path}${reasonOf(error)}`, { path: this.path, cause: error });
    this.#error = latched;
    this.#dropIndex();
    // The writer logs its own first failure; log only what it did not see.
    if (this.#writer === undefined || this.#writer.getError() !== error) {
      this.#options.logger.error("Session persistence error.", { path: this.path, code: errorCodeOf(error), cause: error });
    }
    return latched;
  }
}

/** A typed cause's own message after the latched error's, so what to do (a blob directory to move aside, say) reaches whoever sees only the latch. */
function reasonOf(error: unknown): string {
  return error instanceof GjcError ? `: ${error.message}` : "";
}
