/** What the contract derives, written once: `existsSync` from `statSync`, and each promise method as its synchronous form settled. */
import { checkByteCount, decodeUtf8Prefix, readWholeSync, type PositionalRead } from "./bytes.js";
import { isStorageError } from "./errors.js";
import type { ReplaceOptions, SessionFileReader, SessionStorage, StorageStat, WriteChunk } from "./types.js";

/** Base of the three storages: {@link SessionStorage}'s derived methods over its primitive ones. */
export abstract class SyncBackedStorage implements Pick<SessionStorage, "existsSync" | "exists" | "readText" | "readTextPrefix" | "writeText" | "rename"> {
  abstract statSync(target: string): StorageStat;
  abstract openReaderSync(target: string): SessionFileReader;
  abstract writeTextSync(target: string, data: WriteChunk, options?: ReplaceOptions): void;
  abstract renameSync(from: string, to: string, options?: ReplaceOptions): void;

  /** {@inheritDoc SessionStorage.existsSync} */
  existsSync(target: string): boolean {
    try {
      this.statSync(target);
      return true;
    } catch (error) {
      if (isStorageError(error, "not_found")) return false;
      throw error;
    }
  }

  /** {@inheritDoc SessionStorage.exists} */
  async exists(target: string): Promise<boolean> {
    return this.existsSync(target);
  }

  /** {@inheritDoc SessionStorage.readText} */
  async readText(target: string): Promise<string> {
    const reader = this.openReaderSync(target);
    try {
      const read: PositionalRead = (buffer, offset, length, position) => reader.readSync(buffer.subarray(offset, offset + length), position);
      return readWholeSync(reader.stat.size, read).toString("utf8");
    } finally {
      reader.close();
    }
  }

  /** {@inheritDoc SessionStorage.readTextPrefix} */
  async readTextPrefix(target: string, maxBytes: number): Promise<string> {
    checkByteCount(maxBytes, "maxBytes");
    const reader = this.openReaderSync(target);
    try {
      const buffer = Buffer.allocUnsafe(Math.min(maxBytes, reader.stat.size));
      return decodeUtf8Prefix(buffer.subarray(0, reader.readSync(buffer, 0)));
    } finally {
      reader.close();
    }
  }

  /** {@inheritDoc SessionStorage.writeText} */
  async writeText(target: string, data: WriteChunk, options: ReplaceOptions = {}): Promise<void> {
    this.writeTextSync(target, data, options);
  }

  /** {@inheritDoc SessionStorage.rename} */
  async rename(from: string, to: string, options: ReplaceOptions = {}): Promise<void> {
    this.renameSync(from, to, options);
  }
}
