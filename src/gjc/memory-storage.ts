/**
 * GJC's `MemorySessionStorage`: the main entry's map-backed storage with the two things GJC's
 * callers rely on. GJC's memory storage is a map from path to bytes with no directories, so a
 * file can be written at any absolute path and its parents are implied; here a write, a writer
 * or a rename creates the parents first, as `ensureDirSync` would. And GJC reads and deletes
 * through synchronous calls (`readTextSync`, `readBytesSync`, `unlinkSync`).
 * Everything else (one writer per file, files and directories never mixing, `noReplace`) keeps
 * the main entry's rules.
 */
import path from "node:path";

import { MemorySessionStorage as EngineMemoryStorage } from "../storage/index.js";
import { readWholeSync, type PositionalRead } from "../storage/bytes.js";
import type { ReplaceOptions, SessionStorageWriter, WriteChunk } from "../storage/index.js";

/** The main entry's {@link EngineMemoryStorage} with GJC's implied parent directories and synchronous reads; see the module comment. */
export class MemorySessionStorage extends EngineMemoryStorage {
  /** Writes `target` whole, creating its parent directories first. */
  override writeTextSync(target: string, data: WriteChunk, options: ReplaceOptions = {}): void {
    this.#parents(target);
    super.writeTextSync(target, data, options);
  }

  /** Opens the one writer of `target`, creating its parent directories first. */
  override openWriter(target: string): SessionStorageWriter {
    this.#parents(target);
    return super.openWriter(target);
  }

  /** Moves file `from` to `to`, creating the parent directories of `to` first. */
  override renameSync(from: string, to: string, options: ReplaceOptions = {}): void {
    this.#parents(to);
    super.renameSync(from, to, options);
  }

  /**
   * The whole of file `target` as bytes.
   * @throws StorageError `not_found`, `not_regular_file`, `not_directory`
   */
  readBytesSync(target: string): Uint8Array {
    const reader = this.openReaderSync(target);
    try {
      const read: PositionalRead = (buffer, offset, length, position) => reader.readSync(buffer.subarray(offset, offset + length), position);
      return readWholeSync(reader.stat.size, read);
    } finally {
      reader.close();
    }
  }

  /**
   * The whole of file `target` decoded as UTF-8.
   * @throws StorageError as {@link readBytesSync}
   */
  readTextSync(target: string): string {
    return Buffer.from(this.readBytesSync(target)).toString("utf8");
  }

  #parents(target: string): void {
    this.ensureDirSync(path.dirname(path.resolve(this.root, target)));
  }
}
