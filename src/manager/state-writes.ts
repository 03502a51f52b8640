/**
 * How a manager's sessions reach their files (the manager decides when): the deferred first write, one line per append
 * after it, full rewrites while one is owed, the synchronous whole-file write of a switch that promises a file on return,
 * a managed session's move, and the background finish of sessions a synchronous switch left.
 */
import path from "node:path";

import type { BlobSink, SessionHeader } from "../session/index.js";
import { managedSessionTarget } from "../scope/session-defaults.js";
import { isStorageError } from "../storage/index.js";
import { errorCodeOf } from "./errors.js";
import { removeLineIndex } from "./line-index.js";
import { persistedLineText, serializeManagedLines, type ManagedLine } from "./lines.js";
import type { ResolvedOptions } from "./options.js";
import { SessionPersistence } from "./persistence.js";
import type { SessionState } from "./session-state.js";

function ignore(): void {}

/** A line just added to a session's memory that may need persisting. */
export type PersistableLine = Extract<ManagedLine, { kind: "entry" | "patch" }>;

/** Writes one manager's sessions; see the module comment. */
export class StateWriter {
  readonly #blobSink: () => BlobSink | undefined;
  #droppedInertPatches = 0;
  #writeThrough = false;
  /** The closes of sessions left by a synchronous switch, and their files while they run. */
  readonly #retiring: Promise<void>[] = [];
  readonly #retiringFiles = new Set<string>();

  /** @param blobSink where large images go before a line referring to them is written */
  constructor(blobSink: () => BlobSink | undefined) {
    this.#blobSink = blobSink;
  }

  /** Pre-v4 patch records left out of full rewrites so far. */
  get droppedInertPatches(): number {
    return this.#droppedInertPatches;
  }

  /** From now on a first write is done (durable, no-replace) before the append that triggers it returns, for callers that never await. */
  enableWriteThrough(): void {
    this.#writeThrough = true;
  }

  /** Persists a line just added to `state`'s memory, or defers it; nothing for a session that never persists. */
  persistLine(state: SessionState, line: PersistableLine): void {
    const { persistence } = state;
    if (persistence === undefined) return;
    if (!state.active) {
      if (state.hasAssistant) this.start(state);
      else state.unwritten += 1;
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

  /** Starts persisting `state`: its whole content is written (see {@link enableWriteThrough}). */
  start(state: SessionState): void {
    state.active = true;
    state.unwritten = 0;
    const persistence = state.persistence;
    if (this.#writeThrough && persistence !== undefined && !persistence.hasWriter && !state.fileExists) {
      try {
        this.writeNow(state);
      } catch {
        // Latched by the persistence: the next persisting call throws it; memory keeps the entry.
      }
      return;
    }
    // A fresh session over a held file of blank lines replaces nothing (blank lines before a
    // header read as nothing), so each line is appended and reaches the kernel now.
    this.writeAll(state, this.#writeThrough && persistence !== undefined && persistence.hasWriter && !state.report.loaded);
  }

  /** Queues an atomic write of the whole session (`asAppends`: appends each line now); applied patches are folded from now on. */
  writeAll(state: SessionState, asAppends = false): void {
    const persistence = state.persistence;
    if (persistence === undefined) return;
    try {
      const bytes = this.#serializeAll(state, state.header);
      if (!asAppends) persistence.writeAll(bytes, { replaceExisting: state.fileExists });
      else for (const line of bytes.toString("utf8").split("\n")) if (line.length > 0) persistence.append(line);
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
      bytes = this.#serializeAll(state, state.header);
    } catch (error) {
      throw persistence.fail(error);
    }
    persistence.writeAllNow(bytes);
    state.active = true;
    markWritten(state);
  }

  /**
   * Moves `state` (managed, persisting) in place to the managed scope of `header.cwd`, with `header`: the old file is
   * flushed, the whole session published in the new scope (durable, no-replace) with its writer, and only then the old
   * file removed, so a crash leaves the old file, the new one, or both. @returns the options of the new scope
   * @throws ScopeError for an unusable cwd; SessionManagerError `persistence_failed`
   */
  async move(state: SessionState, options: ResolvedOptions, header: SessionHeader): Promise<ResolvedOptions> {
    const scope = managedSessionTarget(header.cwd ?? process.cwd(), options.agentDir);
    const moved: ResolvedOptions = { ...options, sessionDir: scope.sessionDir, storage: scope.storage };
    const file = path.join(scope.sessionDir, path.basename(state.file!));
    const next = new SessionPersistence(moved, file, () => state.header.cwd);
    const old = state.persistence!;
    const oldFile = state.file!;
    const onDisk = state.active || state.fileExists;
    /** the old name no longer names the file this session wrote: nothing at it is ours to remove */
    let oldNameLost = false;
    if (onDisk) {
      try {
        await old.flush();
      } catch (error) {
        // Removed or replaced under the writer: the session in memory is whole, so the move writes it at its new place.
        if (!nameLost(error)) throw error;
        oldNameLost = true;
      }
      next.writeAllNow(this.#serializeAll(state, header));
      markWritten(state);
      state.active = true;
    }
    state.header = header;
    state.file = file;
    state.persistence = next;
    await old.close().catch(ignore);
    if (!onDisk || oldNameLost) return moved;
    try {
      await options.storage.unlink(oldFile);
      await removeLineIndex(options.storage, oldFile);
    } catch (error) {
      // The session is whole at its new place; a second copy left behind loses nothing.
      options.logger.error("Session move left the previous file in place.", { path: oldFile, code: errorCodeOf(error), cause: error });
    }
    return moved;
  }

  /** Starts finishing `state`'s file in the background (a synchronous switch left it), without losing its failure. */
  retire(state: SessionState): void {
    if (state.persistence === undefined) return;
    const closing = state.persistence.close();
    const file = state.persistence.path;
    this.#retiringFiles.add(file);
    closing.catch(ignore).finally(() => this.#retiringFiles.delete(file));
    this.#retiring.push(closing);
  }

  /** Whether `file` is still being finished. */
  isRetiring(file: string): boolean {
    return this.#retiringFiles.has(file);
  }

  /** Waits for every session retired so far; rethrows the first failure. */
  async retired(): Promise<void> {
    for (const closing of this.#retiring) await closing;
  }

  #serializeAll(state: SessionState, header: SessionHeader): Buffer {
    const serialized = serializeManagedLines(header, state.lines, this.#blobSink());
    this.#droppedInertPatches += serialized.droppedInertPatches;
    return serialized.bytes;
  }
}

/** Whether `error` (or a cause of it) says a writer's file no longer has its name ({@link requireStillNamed}). */
function nameLost(error: unknown): boolean {
  for (let at: unknown = error, depth = 0; at instanceof Error && depth < 4; at = at.cause, depth++) {
    if (isStorageError(at, "unsafe_entry") && at.detail === "identity_changed") return true;
  }
  return false;
}

/** After a whole-file write: applied patches live on in the header and entries. */
function markWritten(state: SessionState): void {
  state.lines = state.lines.filter((line) => line.kind !== "patch" || line.state === "skipped");
  state.fullWritePending = false;
  state.migrationOnly = false;
  state.fileExists = true;
}
