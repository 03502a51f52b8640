/** The one append-only writer of every storage: a storage gives its {@link LineSink}; ordering, latching, tail repair, group commit live here. */

import { StorageError, isStorageError, toStorageError } from "./errors.js";
import type {
  LineSink,
  SessionFileReader,
  SessionStorageWriter,
  SidecarFile,
  SidecarOpenOptions,
  StorageLogger,
  WriteChunk,
  WriterCloseState,
} from "./types.js";

const LINE_FEED = 0x0a;
const SETTLED: Promise<void> = Promise.resolve();

function ignore(): void {}

/** `line` without the one line feed that may already end it (GJC's writers hand lines terminated). */
function withoutTerminator(line: string): string {
  return line.endsWith("\n") ? line.slice(0, -1) : line;
}

/** Marks `promise` handled: a fire-and-forget write never crashes the process; awaiting callers still see it. */
function handled<T>(promise: Promise<T>): Promise<T> {
  promise.catch(ignore);
  return promise;
}

function rejected(error: StorageError): Promise<never> {
  return handled(Promise.reject(error));
}

/** Logs to `console.error`: the default logger. */
export const consoleStorageLogger: StorageLogger = {
  error(message, details) {
    console.error(message, details);
  },
};

/**
 * The {@link SessionStorageWriter} of every storage. An append is one synchronous write of
 * `line + "\n"`, its cost only the line's. Before the first append (and the first after a
 * rewrite) the last byte is read once: after a crash tore a record, a line feed is prepended so
 * the new record does not glue onto the fragment. Rewrites and closes run in order on a promise
 * chain; appends and flushes behind a queued rewrite wait for it. The first failure is latched
 * and logged once.
 */
export class NdjsonFileWriter implements SessionStorageWriter {
  readonly #sink: LineSink;
  readonly #logger: StorageLogger;
  #error: StorageError | undefined;
  #closing: Promise<void> | undefined;
  /** Set by the first close: from then on nothing is written, even while a failed close waits to be retried. */
  #closeRequested = false;
  #closeState: WriterCloseState = "open";
  #closeError: StorageError | undefined;
  #tailChecked = false;
  #chain: Promise<void> = SETTLED;
  /** A queued sync not yet started, which later flushes share. */
  #queuedSync: Promise<void> | undefined;
  /** While a rewrite is queued, appends queue behind it to keep call order. */
  #pendingRewrites = 0;
  /**
   * Whether bytes may not be synced yet: appended since the last sync (a rewrite publishes synced bytes), or, before the
   * first sync, whatever the file held when it was opened (another process may have written it without one).
   */
  #unsynced = true;
  /** Whether the name was proved to lead to the file since the last append or rewrite. */
  #proved = false;

  constructor(sink: LineSink, logger: StorageLogger = consoleStorageLogger) {
    this.#sink = sink;
    this.#logger = logger;
  }

  /** {@inheritDoc SessionStorageWriter.path} */
  get path(): string {
    return this.#sink.path;
  }

  /** {@inheritDoc SessionStorageWriter.writeLine} */
  writeLine(line: string): Promise<void> {
    const body = withoutTerminator(line);
    if (body.indexOf("\n") !== -1 && this.#refusal() === undefined) return rejected(this.#invalidLine("contains a line feed"));
    return this.#writeChecked(body);
  }

  /** Appends a line already known to hold no line feed. */
  #writeChecked(line: string): Promise<void> {
    const refusal = this.#refusal();
    if (refusal !== undefined) return rejected(refusal);
    if (this.#pendingRewrites > 0) return this.#enqueue("write", async () => void this.#append(line));
    try {
      this.#append(line);
      return SETTLED;
    } catch (error) {
      return rejected(this.#latch(error, "write"));
    }
  }

  /** {@inheritDoc SessionStorageWriter.writeLineSync} */
  writeLineSync(line: string): number {
    const refusal = this.#refusal();
    if (refusal !== undefined) throw refusal;
    const body = withoutTerminator(line);
    if (body.indexOf("\n") !== -1) throw this.#invalidLine("contains a line feed");
    if (this.#pendingRewrites > 0) throw this.#busyError();
    try {
      return this.#append(body);
    } catch (error) {
      throw this.#latch(error, "write");
    }
  }

  /** {@inheritDoc SessionStorageWriter.write} */
  write(record: unknown): Promise<void> {
    let line: string | undefined;
    try {
      line = JSON.stringify(record);
    } catch (error) {
      return rejected(this.#invalidLine("cannot be encoded as JSON", error));
    }
    if (line === undefined) return rejected(this.#invalidLine("has no JSON form"));
    // JSON text never holds a raw line feed, so the record needs no scan.
    return this.#writeChecked(line);
  }

  /** {@inheritDoc SessionStorageWriter.flush} */
  flush(): Promise<void> {
    const refusal = this.#refusal();
    if (refusal !== undefined) return rejected(refusal);
    if (this.#pendingRewrites === 0) {
      // Synced on this thread: a worker round trip costs more than a fast disk's sync.
      try {
        this.#syncNamed();
        return SETTLED;
      } catch (error) {
        return rejected(this.#latch(error, "fsync"));
      }
    }
    // Behind a pending rewrite: everything written so far is already in the kernel, so one
    // queued sync covers every flush requested before it starts (group commit).
    if (this.#queuedSync !== undefined) return this.#queuedSync;
    const sync = this.#enqueue("fsync", async () => {
      this.#queuedSync = undefined;
      this.#syncNamed();
    });
    this.#queuedSync = sync;
    // If an earlier step failed, the sync never starts; do not hand it out again.
    sync.catch(() => {
      if (this.#queuedSync === sync) this.#queuedSync = undefined;
    });
    return sync;
  }

  /** {@inheritDoc SessionStorageWriter.fsync} */
  fsync(): Promise<void> {
    return this.flush();
  }

  /** {@inheritDoc SessionStorageWriter.rewrite} */
  rewrite(chunks: Iterable<WriteChunk>): Promise<void> {
    const refusal = this.#refusal();
    if (refusal !== undefined) return rejected(refusal);
    this.#pendingRewrites++;
    return this.#enqueue("rewrite", async () => {
      try {
        // A file gone from its name is not published again, nor one standing there now replaced.
        this.#sink.checkNamedSync?.();
        await this.#sink.replace(chunks);
        // Published synced; the name is proved again at the next flush or close.
        this.#unsynced = false;
        this.#proved = false;
      } finally {
        this.#pendingRewrites--;
      }
      // The new content may end without a line feed; check again before the next append.
      this.#tailChecked = false;
    });
  }

  /** {@inheritDoc SessionStorageWriter.close} */
  close(): Promise<void> {
    if (this.#closing === undefined) {
      this.#closeRequested = true;
      const closing = handled(
        this.#chain.then(() => {
          this.#checkNamedBeforeClose();
          this.#closeSink();
          if (this.#error !== undefined) throw this.#error;
        }),
      );
      this.#closing = closing;
      // A close that never reached the descriptor leaves the next close() free to try again.
      closing.catch(() => {
        if (this.#closeState === "close_failed_retryable" && this.#closing === closing) this.#closing = undefined;
      });
    }
    return this.#closing;
  }

  /** {@inheritDoc SessionStorageWriter.getCloseState} */
  getCloseState(): WriterCloseState {
    return this.#closeState;
  }

  /** {@inheritDoc SessionStorageWriter.getCloseError} */
  getCloseError(): StorageError | undefined {
    return this.#closeState === "close_failed_retryable" || this.#closeState === "close_unknown" ? this.#closeError : undefined;
  }

  /**
   * Syncs, then proves the path still names the file synced: the durability promise is about the session's file. With
   * nothing appended since the last such sync there is nothing to sync, but the name is proved again.
   */
  #syncNamed(): void {
    if (this.#unsynced) this.#sink.syncSync();
    this.#unsynced = false;
    this.#sink.checkNamedSync?.();
    this.#proved = true;
  }

  /**
   * At close, latches a lost name (lines since the last sync are in no file anyone opens), so the close reports it. Once a
   * sync proved the name with nothing written after it, the close has nothing new to report.
   */
  #checkNamedBeforeClose(): void {
    if (this.#error !== undefined || this.#closeState !== "open" || this.#proved) return;
    try {
      this.#sink.checkNamedSync?.();
    } catch (error) {
      this.#latch(error, "close");
    }
  }

  /** One close attempt of the sink, moving {@link getCloseState} on; throws what failed. */
  #closeSink(): void {
    try {
      this.#sink.closeSync();
      this.#closeState = "closed";
    } catch (error) {
      if (isStorageError(error, "close_not_dispatched")) {
        this.#closeState = "close_failed_retryable";
        this.#closeError = error;
        throw error;
      }
      this.#closeState = "close_unknown";
      this.#closeError = this.#latch(error, "close");
      throw this.#closeError;
    }
  }

  /** {@inheritDoc SessionStorageWriter.openSidecar} */
  openSidecar(name: string, options: SidecarOpenOptions = {}): SidecarFile | undefined {
    const refusal = this.#refusal();
    if (refusal !== undefined) throw refusal;
    return this.#sink.openSidecar?.(name, options);
  }

  /** {@inheritDoc SessionStorageWriter.openReaderSync} */
  openReaderSync(): SessionFileReader | undefined {
    const refusal = this.#refusal();
    if (refusal !== undefined) throw refusal;
    return this.#sink.openReaderSync?.();
  }

  /** {@inheritDoc SessionStorageWriter.closeSync} */
  closeSync(): void {
    if (this.#closing === undefined) {
      if (this.#pendingRewrites > 0 || this.#queuedSync !== undefined) throw this.#busyError();
      this.#closeRequested = true;
      try {
        this.#checkNamedBeforeClose();
        this.#closeSink();
        // A later close() reports what this one did.
        this.#closing = this.#error === undefined ? SETTLED : rejected(this.#error);
      } catch (error) {
        if (this.#closeState === "close_failed_retryable") throw error;
        this.#closing = rejected(this.#closeError as StorageError);
      }
    }
    if (this.#error !== undefined) throw this.#error;
  }

  /** {@inheritDoc SessionStorageWriter.getError} */
  getError(): StorageError | undefined {
    return this.#error;
  }

  /** Writes `line` and its line feed (after a repairing one, once, when needed); returns the line's byte count. */
  #append(line: string): number {
    let data = line + "\n";
    let repair = 0;
    if (!this.#tailChecked) {
      const last = this.#sink.lastByteSync();
      if (last !== undefined && last !== LINE_FEED) [data, repair] = ["\n" + data, 1];
      this.#tailChecked = true;
    }
    this.#unsynced = true;
    this.#proved = false;
    const written = this.#sink.appendSync(data);
    return typeof written === "number" ? written - 1 - repair : Buffer.byteLength(line, "utf8");
  }

  #invalidLine(problem: string, cause?: unknown): StorageError {
    return new StorageError("invalid_line", `a record for ${this.path} ${problem}`, { path: this.path, cause });
  }

  #busyError(): StorageError {
    return new StorageError("writer_busy", `a rewrite of ${this.path} is still pending`, { path: this.path });
  }

  #refusal(): StorageError | undefined {
    if (this.#error !== undefined) return this.#error;
    if (this.#closeRequested) {
      return new StorageError("writer_closed", `the writer of ${this.path} is closed`, { path: this.path });
    }
    return undefined;
  }

  #enqueue(step: string, operation: () => Promise<void>): Promise<void> {
    const run = this.#chain.then(async () => {
      if (this.#error !== undefined) throw this.#error;
      try {
        await operation();
      } catch (error) {
        throw this.#latch(error, step);
      }
    });
    this.#chain = run.then(ignore, ignore);
    return handled(run);
  }

  /** Keeps the first failure, logs it once, and returns it for every later caller. */
  #latch(error: unknown, step: string): StorageError {
    if (this.#error !== undefined) return this.#error;
    const latched = toStorageError(error, "write", this.path, step);
    this.#error = latched;
    this.#logger.error("Session persistence error.", {
      path: this.path,
      code: latched.code,
      ...(latched.errno === undefined ? {} : { errno: latched.errno }),
      cause: error,
    });
    return latched;
  }
}
