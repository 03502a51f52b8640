/**
 * How a manager's session reaches its file (the manager decides when): the deferred first
 * write, one line per append after it, full rewrites while one is owed, and the synchronous
 * whole-file write of a switch that promises a file on return.
 */
import type { BlobSink } from "../session/index.js";
import { persistedLineText, serializeManagedLines, type ManagedLine } from "./lines.js";
import type { SessionState } from "./session-state.js";

/** A line just added to a session's memory that may need persisting. */
export type PersistableLine = Extract<ManagedLine, { kind: "entry" | "patch" }>;

/** Writes one manager's sessions; see the module comment. */
export class StateWriter {
  readonly #blobSink: () => BlobSink | undefined;
  #droppedInertPatches = 0;
  #writeThrough = false;
  /** Lines appended to a session whose persistence has not started, per session state. */
  readonly #deferred = new WeakMap<SessionState, number>();

  /** @param blobSink where large images go before a line referring to them is written */
  constructor(blobSink: () => BlobSink | undefined) {
    this.#blobSink = blobSink;
  }

  /** Pre-v4 patch records left out of full rewrites so far. */
  get droppedInertPatches(): number {
    return this.#droppedInertPatches;
  }

  /** Counts patch records a move's publish left out. */
  addDroppedInertPatches(count: number): void {
    this.#droppedInertPatches += count;
  }

  /**
   * From now on a first write is done (durable, no-replace) before the append that triggers it
   * returns, for callers that never await and expect the file once an assistant message is in.
   */
  enableWriteThrough(): void {
    this.#writeThrough = true;
  }

  /** Persists a line just added to `state`'s memory, or defers it. */
  persistLine(state: SessionState, line: PersistableLine): void {
    const { persistence } = state;
    if (persistence === undefined) return;
    if (!state.active) {
      if (state.hasAssistant) this.start(state);
      else this.#deferred.set(state, this.deferredLines(state) + 1);
      return;
    }
    if (state.fullWritePending) {
      this.writeAll(state);
      return;
    }
    try {
      persistence.append(persistedLineText(line, this.#blobSink()), line.kind === "entry" ? line.entry : line.record);
    } catch (error) {
      persistence.fail(error);
    }
  }

  /** Lines of `state` waiting for its first write (no assistant message yet): what a close leaves unwritten. */
  deferredLines(state: SessionState): number {
    return this.#deferred.get(state) ?? 0;
  }

  /** Starts persisting `state`: its whole content is written (see {@link enableWriteThrough}). */
  start(state: SessionState): void {
    state.active = true;
    this.#deferred.delete(state);
    const persistence = state.persistence;
    if (this.#writeThrough && persistence !== undefined && !persistence.hasWriter && !state.fileExists) {
      try {
        this.writeNow(state);
      } catch {
        // Latched by the persistence: the next persisting call throws it; memory keeps the entry.
      }
      return;
    }
    if (this.#writeThrough && persistence !== undefined && persistence.hasWriter && !state.report.loaded) {
      this.#appendAll(state);
      return;
    }
    this.writeAll(state);
  }

  /**
   * A fresh session over a held file of blank lines: nothing needs replacing (blank lines
   * before a header read as nothing), so each line is appended and reaches the kernel now.
   */
  #appendAll(state: SessionState): void {
    const persistence = state.persistence!;
    try {
      const text = this.#serializeAll(state).toString("utf8");
      for (const line of text.split("\n")) if (line.length > 0) persistence.append(line);
      markWritten(state);
    } catch (error) {
      persistence.fail(error);
    }
  }

  /** Queues an atomic write of the whole session; applied patches are folded from now on. */
  writeAll(state: SessionState): void {
    const persistence = state.persistence;
    if (persistence === undefined) return;
    try {
      const bytes = this.#serializeAll(state);
      persistence.writeAll(bytes, { replaceExisting: state.fileExists });
      markWritten(state);
    } catch (error) {
      persistence.fail(error);
    }
  }

  /** Writes the whole session to its new file before returning. @throws the latched `persistence_failed` */
  writeNow(state: SessionState): void {
    const persistence = state.persistence!;
    let bytes: Buffer;
    try {
      bytes = this.#serializeAll(state);
    } catch (error) {
      persistence.fail(error);
      throw persistence.error;
    }
    persistence.writeAllNow(bytes);
    state.active = true;
    markWritten(state);
  }

  #serializeAll(state: SessionState): Buffer {
    const serialized = serializeManagedLines(state.header, state.lines, this.#blobSink());
    this.#droppedInertPatches += serialized.droppedInertPatches;
    return serialized.bytes;
  }
}

/** After a whole-file write: applied patches live on in the header and entries. */
export function markWritten(state: SessionState): void {
  state.lines = state.lines.filter((line) => line.kind !== "patch" || line.state === "skipped");
  state.fullWritePending = false;
  state.fileExists = true;
}

/**
 * Sessions a manager left by a synchronous switch, finished in the background: `flush()` and
 * `close()` wait for them (and see their failure); a switch back to one waits for its release.
 */
export class Retirements {
  readonly #closing: Promise<void>[] = [];
  readonly #files = new Set<string>();

  /** Starts finishing `state`'s file, without losing its failure. */
  retire(state: SessionState): void {
    if (state.persistence === undefined) return;
    const closing = state.persistence.close();
    const file = state.persistence.path;
    this.#files.add(file);
    closing.catch(ignore).finally(() => this.#files.delete(file));
    this.#closing.push(closing);
  }

  /** Whether `file` is still being finished. */
  has(file: string): boolean {
    return this.#files.has(file);
  }

  /** Waits for every session retired so far; rethrows the first failure. */
  async settled(): Promise<void> {
    for (const closing of this.#closing) await closing;
  }
}

function ignore(): void {}
