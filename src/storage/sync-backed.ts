/**
 * The asynchronous half of the storage contract, written once: every storage here does its
 * work synchronously (a held descriptor, a verified directory, memory), so each promise-returning
 * method is its synchronous form settled. A storage states only the synchronous forms.
 */
import { checkByteCount, readAllText, readPrefixText } from "./bytes.js";
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
    return readAllText(this.openReaderSync(target));
  }

  /** {@inheritDoc SessionStorage.readTextPrefix} */
  async readTextPrefix(target: string, maxBytes: number): Promise<string> {
    checkByteCount(maxBytes, "maxBytes");
    return readPrefixText(this.openReaderSync(target), maxBytes);
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
