/**
 * The asynchronous half of the storage contract, written once: every storage here works
 * synchronously (held descriptors, verified directories, memory), so each promise method is
 * its synchronous form settled.
 */
import { checkByteCount, decodeUtf8Prefix, readWholeSync } from "./bytes.js";
import type { ReplaceOptions, SessionFileReader, SessionStorage, WriteChunk } from "./types.js";

/** Base of the three storages: {@link SessionStorage}'s promise methods over its synchronous ones. */
export abstract class SyncBackedStorage implements Pick<SessionStorage, "exists" | "readText" | "readTextPrefix" | "writeText" | "rename"> {
  abstract existsSync(target: string): boolean;
  abstract openReaderSync(target: string): SessionFileReader;
  abstract writeTextSync(target: string, data: WriteChunk, options?: ReplaceOptions): void;
  abstract renameSync(from: string, to: string, options?: ReplaceOptions): void;

  /** {@inheritDoc SessionStorage.exists} */
  async exists(target: string): Promise<boolean> {
    return this.existsSync(target);
  }

  /** {@inheritDoc SessionStorage.readText} */
  async readText(target: string): Promise<string> {
    const reader = this.openReaderSync(target);
    try {
      return readWholeSync(reader.stat.size, (buffer, offset, length, position) => reader.readSync(buffer.subarray(offset, offset + length), position)).toString("utf8");
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
